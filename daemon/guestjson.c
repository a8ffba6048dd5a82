/*
 * guestjson.c - struct vmb_guest <-> JSON (see guestjson.h): the
 * writer walks libvmbuild's key table (vmb_key_desc), the reader takes
 * each member back into its field.  Records written by earlier
 * vmbuildds (libvmbuild wrote the JSON then) have the same shape, and
 * are read here too (tests/daemon/fixtures).  vm.create's object of
 * xl.cfg keys goes through libvmbuild's setters (guestjson_keys).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestjson.h"
#include "json.h"

/* Lists nest this deep at most (vnuma: the vnode, its vdistances). */
#define GUEST_MAX_DEPTH	8

/* ------------------------------------------------------------------ */
/* Writing                                                             */

/* A bitmap as a range list, "0-3,5". */
static void
gen_ranges(yajl_gen g, const uint64_t *bits, unsigned nbits)
{
	char buf[VMB_MAX_VCPUS * 4 + 1];
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < nbits; i++) {
		unsigned j = i;

		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		while (j + 1 < nbits && (bits[(j + 1) / 64] >> ((j + 1) % 64) & 1))
			j++;
		len += (size_t)snprintf(buf + len, sizeof(buf) - len,
		    j > i ? "%s%u-%u" : "%s%u", len ? "," : "", i, j);
		i = j;
	}
	jg_str(g, buf);
}

void
guestjson_gen_disk(yajl_gen g, const struct vmb_disk *d)
{
	yajl_gen_map_open(g);
	jg_kv_str(g, "vdev", d->vdev);
	jg_kv_u64(g, "devid", d->devid);
	jg_kv_str(g, "target", d->target);
	jg_kv_str(g, "format", vmb_disk_format_name(d->format));
	jg_kv_str(g, "access", d->readonly ? "ro" : "rw");
	jg_kv_str(g, "devtype", d->cdrom ? "cdrom" : "disk");
	jg_kv_str(g, "script", d->script ? d->script : "block");
	jg_kv_bool(g, "discard", d->discard);
	jg_kv_bool(g, "trusted", d->trusted);
	jg_kv_bool(g, "direct_io_safe", d->direct_io_safe);
	yajl_gen_map_close(g);
}

void
guestjson_gen_nic(yajl_gen g, const uint8_t uuid[16], const struct vmb_nic *n)
{
	uint8_t mac[6];
	char s[18];

	yajl_gen_map_open(g);
	jg_kv_u64(g, "devid", n->devid);
	if (n->mac_set || (uuid && !vmb_uuid_is_null(uuid))) {
		vmb_nic_mac(uuid, n, mac);
		snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
		    mac[1], mac[2], mac[3], mac[4], mac[5]);
		jg_kv_str(g, "mac", s);
	} else {
		jg_kv_null(g, "mac");
	}
	jg_kv_str(g, "bridge", n->bridge);
	jg_kv_str(g, "vifname", n->vifname[0] ? n->vifname : NULL);
	jg_kv_str(g, "ip", n->ip);
	jg_kv_str(g, "script", n->script ? n->script : "vif-bridge");
	jg_kv_str(g, "gatewaydev", n->gatewaydev);
	if (n->mtu)
		jg_kv_u64(g, "mtu", n->mtu);
	else
		jg_kv_null(g, "mtu");
	jg_key(g, "rate");
	if (n->rate_bytes) {
		yajl_gen_map_open(g);
		jg_kv_u64(g, "bytes", n->rate_bytes);
		jg_kv_u64(g, "interval_us", n->rate_usecs);
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	jg_kv_bool(g, "trusted", n->trusted);
	/* An HVM guest's emulated NIC (only there: PVH forms unchanged). */
	if (n->model[0])
		jg_kv_str(g, "model", n->model);
	yajl_gen_map_close(g);
}

/* "nodes" (those cpus= allows) and "vnuma", the vnodes of vnuma=. */
static void
gen_vnuma(yajl_gen g, const struct vmb_guest *guest)
{
	jg_key(g, "nodes");
	yajl_gen_array_open(g);
	for (unsigned n = 0; n < 64; n++)
		if (guest->node_mask >> n & 1)
			jg_u64(g, n);
	yajl_gen_array_close(g);
	jg_key(g, "vnuma");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < guest->nr_vnodes; i++) {
		const struct vmb_vnode *vn = &guest->vnodes[i];

		yajl_gen_map_open(g);
		jg_kv_u64(g, "pnode", vn->pnode);
		jg_kv_u64(g, "size_bytes", vn->size_bytes);
		jg_key(g, "vcpus");
		gen_ranges(g, vn->vcpus, VMB_MAX_VCPUS);
		jg_key(g, "vdistances");
		yajl_gen_array_open(g);
		for (uint32_t j = 0; j < guest->nr_vnodes; j++)
			jg_u64(g, vn->distances[j]);
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

/* The unsigned number in a field of `size` bytes. */
static uint64_t
field_number(const void *p, size_t size)
{
	uint8_t u8;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

/* Key k's member, as its FORM says. */
static void
gen_key(yajl_gen g, const struct vmb_guest *guest, enum vmb_key key)
{
	const struct vmb_key_desc *k = vmb_key_desc(key);
	const void *p = vmb_guest_field_const(guest, key);
	char uuid[VMB_UUID_STRLEN];
	enum vmb_guest_type type;
	enum vmb_action action;

	if (k->form == VMB_FORM_VNUMA) {
		gen_vnuma(g, guest);
		return;
	}
	/* As its record had it: no lists (guestjson.h). */
	if ((k->form == VMB_FORM_DISKS && (guest->flags &
	    GUESTJSON_NO_DISKS)) || (k->form == VMB_FORM_VIFS &&
	    (guest->flags & GUESTJSON_NO_VIFS)))
		return;
	jg_key(g, k->member);
	switch (k->form) {
	case VMB_FORM_STRING:
		jg_str(g, k->owned ? *(char *const *)p : p);
		break;
	case VMB_FORM_NUMBER:
		jg_u64(g, field_number(p, k->size));
		break;
	case VMB_FORM_BOOL:
		yajl_gen_bool(g, *(const bool *)p);
		break;
	case VMB_FORM_TYPE:
		memcpy(&type, p, sizeof(type));
		jg_str(g, vmb_guest_type_name(type));
		break;
	case VMB_FORM_ACTION:
		memcpy(&action, p, sizeof(action));
		jg_str(g, vmb_action_name(action));
		break;
	case VMB_FORM_UUID:
		if (vmb_uuid_is_null(p)) {
			yajl_gen_null(g);
			break;
		}
		vmb_uuid_to_str(p, uuid);
		jg_str(g, uuid);
		break;
	case VMB_FORM_DISKS:
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < guest->nr_disks; i++)
			guestjson_gen_disk(g, &guest->disks[i]);
		yajl_gen_array_close(g);
		break;
	case VMB_FORM_VIFS:
		yajl_gen_array_open(g);
		for (uint32_t i = 0; i < guest->nr_nics; i++)
			guestjson_gen_nic(g, guest->uuid, &guest->nics[i]);
		yajl_gen_array_close(g);
		break;
	case VMB_FORM_VNUMA:
		break;
	}
}

void
guestjson_gen(yajl_gen g, const struct vmb_guest *guest)
{
	if (guest == NULL) {
		yajl_gen_null(g);
		return;
	}
	yajl_gen_map_open(g);
	/* An HVM guest's keys only for an HVM guest: a PVH one has none. */
	for (int k = 0; k < VMB_KEY_MAX; k++)
		if (vmb_key_desc(k)->member != NULL && (k < VMB_KEY_HVM_FIRST ||
		    guest->type == VMB_GUEST_HVM))
			gen_key(g, guest, k);
	yajl_gen_map_close(g);
}

char *
guestjson_text(const struct vmb_guest *guest)
{
	yajl_gen g = jg_new();

	if (g == NULL)
		return NULL;
	guestjson_gen(g, guest);
	return jg_finish(g);
}

/* ------------------------------------------------------------------ */
/* The pretty form                                                     */

static void
print_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A value on one line: {"k": v, ...}, [a, b]. */
static void
print_inline(FILE *f, yajl_val v)
{
	if (YAJL_IS_STRING(v)) {
		print_str(f, v->u.string);
	} else if (YAJL_IS_NUMBER(v)) {
		fputs(v->u.number.r, f);
	} else if (YAJL_IS_OBJECT(v)) {
		fputc('{', f);
		for (size_t i = 0; i < v->u.object.len; i++) {
			fputs(i ? ", " : "", f);
			print_str(f, v->u.object.keys[i]);
			fputs(": ", f);
			print_inline(f, v->u.object.values[i]);
		}
		fputc('}', f);
	} else if (YAJL_IS_ARRAY(v)) {
		fputc('[', f);
		for (size_t i = 0; i < v->u.array.len; i++) {
			fputs(i ? ", " : "", f);
			print_inline(f, v->u.array.values[i]);
		}
		fputc(']', f);
	} else {
		fputs(YAJL_IS_TRUE(v) ? "true" : YAJL_IS_FALSE(v) ? "false" :
		    "null", f);
	}
}

int
guestjson_print(FILE *f, const struct vmb_guest *guest)
{
	char *text = guestjson_text(guest);
	yajl_val root = text ? jv_parse(text, strlen(text), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;

	free(text);
	if (!YAJL_IS_OBJECT(root)) {
		yajl_tree_free(root);
		return -ENOMEM;
	}
	/* A member a line; a list of objects (devices, vnodes) one a line. */
	for (size_t i = 0; i < root->u.object.len; i++) {
		yajl_val v = root->u.object.values[i];

		fprintf(f, "%s\n  ", i ? "," : "{");
		print_str(f, root->u.object.keys[i]);
		fputs(": ", f);
		if (!YAJL_IS_ARRAY(v) || !v->u.array.len ||
		    !YAJL_IS_OBJECT(v->u.array.values[0])) {
			print_inline(f, v);
			continue;
		}
		fputc('[', f);
		for (size_t j = 0; j < v->u.array.len; j++) {
			fprintf(f, "%s\n    ", j ? "," : "");
			print_inline(f, v->u.array.values[j]);
		}
		fputs("\n  ]", f);
	}
	fputs("\n}\n", f);
	yajl_tree_free(root);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

static const char *
str_member(yajl_val v, const char *key)
{
	yajl_val m = jv_get(v, key);

	return YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/*
 * Member `key` as a string shorter than `max` bytes into *ret
 * (strdup'd when dup, else copied into the `max` bytes at ret): 0, or
 * -EINVAL (-ENOMEM) with *bad = key.  null gives nothing when nullable;
 * "" is refused unless `empty`.
 */
static int
get_str(yajl_val e, const char *key, bool nullable, bool empty, size_t max,
    void *ret, bool dup, const char **bad)
{
	yajl_val v = jv_get(e, key);

	*bad = key;
	if (v != NULL && YAJL_IS_NULL(v) && nullable)
		return 0;
	if (!YAJL_IS_STRING(v) || (!empty && !v->u.string[0]) ||
	    strlen(v->u.string) >= max)
		return -EINVAL;
	if (!dup) {
		snprintf(ret, max, "%s", v->u.string);
		return 0;
	}
	*(char **)ret = strdup(v->u.string);
	return *(char **)ret != NULL ? 0 : -ENOMEM;
}

/* Member `key` as a boolean: 0, or -EINVAL with *bad = key. */
static int
get_bool(yajl_val e, const char *key, bool *ret, const char **bad)
{
	yajl_val v = jv_get(e, key);

	*bad = key;
	if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
		return -EINVAL;
	*ret = YAJL_IS_TRUE(v);
	return 0;
}

/* Member `key` as an integer from lo to hi; null is 0 when nullable. */
static int
get_int(yajl_val e, const char *key, bool nullable, long long lo,
    long long hi, long long *ret, const char **bad)
{
	yajl_val v = jv_get(e, key);

	*bad = key;
	*ret = 0;
	if (v != NULL && YAJL_IS_NULL(v) && nullable)
		return 0;
	if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < lo ||
	    YAJL_GET_INTEGER(v) > hi)
		return -EINVAL;
	*ret = YAJL_GET_INTEGER(v);
	return 0;
}

/* One member of "disks" back into a disk. */
static int
disk_read(yajl_val e, void *dev, const char **bad)
{
	struct vmb_disk *d = dev;
	const char *access = str_member(e, "access");
	const char *type = str_member(e, "devtype");
	long long devid;
	uint32_t vbd;
	int rc;

	if ((rc = get_str(e, "vdev", false, false, sizeof(d->vdev), d->vdev,
	    false, bad)) < 0 || (rc = get_int(e, "devid", false, 0,
	    UINT32_MAX, &devid, bad)) < 0)
		return rc;
	/* The vbd number is the vdev's, as the parser computed it. */
	if (vmb_vdev_number(d->vdev, &vbd) < 0 || vbd != devid)
		return -EINVAL;
	d->devid = vbd;
	if ((rc = get_str(e, "target", false, false, SIZE_MAX, &d->target,
	    true, bad)) < 0 || (rc = get_str(e, "script", false, false,
	    SIZE_MAX, &d->script, true, bad)) < 0 ||
	    (rc = get_bool(e, "discard", &d->discard, bad)) < 0 ||
	    (rc = get_bool(e, "trusted", &d->trusted, bad)) < 0 ||
	    (rc = get_bool(e, "direct_io_safe", &d->direct_io_safe, bad)) < 0)
		return rc;
	*bad = "format";
	if (vmb_disk_format_parse(str_member(e, "format"), &d->format) < 0)
		return -EINVAL;
	*bad = "access";
	if (access == NULL || (strcmp(access, "ro") && strcmp(access, "rw")))
		return -EINVAL;
	d->readonly = access[1] == 'o';
	*bad = "devtype";
	if (type == NULL || (strcmp(type, "disk") && strcmp(type, "cdrom")))
		return -EINVAL;
	d->cdrom = type[0] == 'c';
	return 0;
}

/* One member of "vifs" back into a vif. */
static int
nic_read(yajl_val e, void *dev, const char **bad)
{
	struct vmb_nic *n = dev;
	yajl_val rate = jv_get(e, "rate");
	const char *mac = str_member(e, "mac");
	long long devid, mtu, bytes, us;
	int rc;

	if ((rc = get_int(e, "devid", false, 0, 65535, &devid, bad)) < 0 ||
	    (rc = get_int(e, "mtu", true, 68, 65535, &mtu, bad)) < 0 ||
	    (rc = get_str(e, "bridge", false, false, sizeof(n->bridge),
	    n->bridge, false, bad)) < 0 ||
	    (rc = get_str(e, "vifname", true, false, sizeof(n->vifname),
	    n->vifname, false, bad)) < 0 ||
	    (rc = get_str(e, "ip", true, false, SIZE_MAX, &n->ip, true,
	    bad)) < 0 ||
	    (rc = get_str(e, "script", false, false, SIZE_MAX, &n->script,
	    true, bad)) < 0 ||
	    (rc = get_str(e, "gatewaydev", true, false, SIZE_MAX,
	    &n->gatewaydev, true, bad)) < 0 ||
	    (rc = get_bool(e, "trusted", &n->trusted, bad)) < 0 ||
	    (jv_get(e, "model") != NULL && (rc = get_str(e, "model", true,
	    false, sizeof(n->model), n->model, false, bad)) < 0))
		return rc;
	n->devid = (uint32_t)devid;
	n->mtu = (uint32_t)mtu;
	/* The MAC it has (mac= or derived from the uuid): the same again. */
	*bad = "mac";
	if (mac != NULL && vmb_mac_parse(mac, n->mac) < 0)
		return -EINVAL;
	n->mac_set = mac != NULL;
	if (rate == NULL || YAJL_IS_NULL(rate))
		return 0;
	if ((rc = get_int(rate, "bytes", false, 1, INT64_MAX, &bytes,
	    bad)) < 0 || (rc = get_int(rate, "interval_us", false, 1,
	    UINT32_MAX, &us, bad)) < 0)
		return rc;
	n->rate_bytes = (uint64_t)bytes;
	n->rate_usecs = (uint32_t)us;
	return 0;
}

/* One vnode of "vnuma" (of nr in all). */
static int
vnode_read(yajl_val e, struct vmb_vnode *vn, uint32_t nr, const char **bad)
{
	yajl_val dist = jv_get(e, "vdistances");
	long long v;
	int rc;

	if ((rc = get_int(e, "pnode", false, 0, 63, &v, bad)) < 0)
		return rc;
	vn->pnode = (uint32_t)v;
	if ((rc = get_int(e, "size_bytes", false, 1, INT64_MAX, &v, bad)) < 0)
		return rc;
	vn->size_bytes = (uint64_t)v;
	*bad = "vcpus";
	if (vmb_ranges_parse(str_member(e, "vcpus"), vn->vcpus,
	    VMB_MAX_VCPUS) < 0)
		return -EINVAL;
	*bad = "vdistances";
	if (!YAJL_IS_ARRAY(dist) || dist->u.array.len != nr)
		return -EINVAL;
	for (uint32_t i = 0; i < nr; i++) {
		yajl_val d = dist->u.array.values[i];

		if (!YAJL_IS_INTEGER(d) || YAJL_GET_INTEGER(d) < 0 ||
		    YAJL_GET_INTEGER(d) > 255)
			return -EINVAL;
		vn->distances[i] = (uint8_t)YAJL_GET_INTEGER(d);
	}
	return 0;
}

/*
 * A list member into the guest (disks, vifs: taken over; vnuma: into
 * its vnodes).  0, or a negative errno with why.
 */
static int
read_list(struct vmb_guest *g, enum vmb_key_form form, const char *member,
    yajl_val list, char *why, size_t why_len)
{
	size_t max = form == VMB_FORM_DISKS ? VMB_MAX_DISKS :
	    form == VMB_FORM_VIFS ? VMB_MAX_NICS : VMB_MAX_VNODES;
	size_t size = form == VMB_FORM_DISKS ? sizeof(struct vmb_disk) :
	    sizeof(struct vmb_nic);
	const char *bad = "";
	char *devs = NULL;
	size_t i, n;
	int rc = 0;

	if (!YAJL_IS_ARRAY(list) || list->u.array.len > max) {
		snprintf(why, why_len, "config.%s: not a list of at most %zu",
		    member, max);
		return -EINVAL;
	}
	n = list->u.array.len;
	if (form != VMB_FORM_VNUMA && (devs = calloc(n + 1, size)) == NULL)
		rc = -ENOMEM;
	for (i = 0; i < n && rc == 0; i++) {
		yajl_val e = list->u.array.values[i];

		rc = form == VMB_FORM_DISKS ? disk_read(e, devs + i * size,
		    &bad) : form == VMB_FORM_VIFS ? nic_read(e, devs + i * size,
		    &bad) : vnode_read(e, &g->vnodes[i], (uint32_t)n, &bad);
	}
	/* Taken over whole or in part: vmb_guest_free() frees it. */
	if (form == VMB_FORM_DISKS)
		vmb_guest_take_disks(g, (struct vmb_disk *)devs, (uint32_t)i);
	else if (form == VMB_FORM_VIFS)
		vmb_guest_take_nics(g, (struct vmb_nic *)devs, (uint32_t)i);
	else
		g->nr_vnodes = (uint32_t)n;
	if (rc < 0)
		snprintf(why, why_len, "config.%s[%zu].%s: %s", member,
		    i ? i - 1 : 0, bad, rc == -ENOMEM ? "out of memory" :
		    "missing or invalid");
	return rc;
}

/* "nodes": the node numbers into node_mask. */
static int
read_nodes(struct vmb_guest *g, yajl_val list)
{
	g->node_mask = 0;
	for (size_t i = 0; YAJL_IS_ARRAY(list) && i < list->u.array.len; i++) {
		yajl_val v = list->u.array.values[i];

		if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0 ||
		    YAJL_GET_INTEGER(v) > 63)
			return -EINVAL;
		g->node_mask |= 1ull << YAJL_GET_INTEGER(v);
	}
	return list == NULL || YAJL_IS_ARRAY(list) ? 0 : -EINVAL;
}

/* A scalar member v into key k's field; -EINVAL if it is no such value. */
static int
read_scalar(struct vmb_guest *g, enum vmb_key key, yajl_val v)
{
	const struct vmb_key_desc *k = vmb_key_desc(key);
	void *p = vmb_guest_field(g, key);
	uint64_t n;

	switch (k->form) {
	case VMB_FORM_STRING:
		if (k->owned && YAJL_IS_NULL(v))
			return 0;
		if (!YAJL_IS_STRING(v))
			return -EINVAL;
		if (!k->owned)
			return snprintf(p, k->size, "%s", v->u.string) <
			    (int)k->size ? 0 : -EINVAL;
		free(*(char **)p);
		return (*(char **)p = strdup(v->u.string)) ? 0 : -ENOMEM;
	case VMB_FORM_NUMBER:
		if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
			return -EINVAL;
		n = (uint64_t)YAJL_GET_INTEGER(v);
		if (k->size == 1 && n <= UINT8_MAX)
			*(uint8_t *)p = (uint8_t)n;
		else if (k->size == 4 && n <= UINT32_MAX)
			*(uint32_t *)p = (uint32_t)n;
		else if (k->size == 8)
			*(uint64_t *)p = n;
		else
			return -EINVAL;
		return 0;
	case VMB_FORM_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			return -EINVAL;
		*(bool *)p = YAJL_IS_TRUE(v);
		return 0;
	case VMB_FORM_TYPE:
		return vmb_guest_type_parse(YAJL_IS_STRING(v) ? v->u.string :
		    NULL, p);
	case VMB_FORM_ACTION:
		return YAJL_IS_STRING(v) ? vmb_action_parse(v->u.string, p) :
		    -EINVAL;
	case VMB_FORM_UUID:
		if (YAJL_IS_NULL(v)) {
			memset(p, 0, 16);
			return 0;
		}
		return YAJL_IS_STRING(v) ? vmb_uuid_from_str(v->u.string, p) :
		    -EINVAL;
	default:
		return -EINVAL;
	}
}

int
guestjson_read(yajl_val obj, struct vmb_guest **ret, char *why,
    size_t why_len)
{
	struct vmb_guest *g = NULL;
	int rc;

	if (!YAJL_IS_OBJECT(obj)) {
		snprintf(why, why_len, "config: not an object");
		return -EINVAL;
	}
	if ((rc = vmb_guest_new(&g)) < 0) {
		snprintf(why, why_len, "out of memory");
		return rc;
	}
	for (int key = 0; key < VMB_KEY_MAX && rc == 0; key++) {
		const struct vmb_key_desc *k = vmb_key_desc(key);
		yajl_val v = k->member ? jv_get(obj, k->member) : NULL;

		if (v == NULL)
			continue;
		g->keys_set |= 1ull << key;
		if (k->form == VMB_FORM_DISKS || k->form == VMB_FORM_VIFS ||
		    k->form == VMB_FORM_VNUMA) {
			rc = read_list(g, k->form, k->member, v, why, why_len);
			if (rc == 0 && k->form == VMB_FORM_VNUMA && (rc =
			    read_nodes(g, jv_get(obj, "nodes"))) < 0)
				snprintf(why, why_len, "config.nodes: not a "
				    "list of node numbers");
		} else if ((rc = read_scalar(g, key, v)) < 0) {
			snprintf(why, why_len, "config.%s: %s", k->member,
			    rc == -ENOMEM ? "out of memory" : "invalid");
		}
	}
	if (!(g->keys_set & (1ull << VMB_KEY_DISK)))
		g->flags |= GUESTJSON_NO_DISKS;
	if (!(g->keys_set & (1ull << VMB_KEY_VIF)))
		g->flags |= GUESTJSON_NO_VIFS;
	if (rc < 0)
		vmb_guest_free(g);
	else
		*ret = g;
	return rc;
}

int
guestjson_parse(const char *text, struct vmb_guest **ret, char *why,
    size_t why_len)
{
	yajl_val root = text ? jv_parse(text, strlen(text), GUEST_MAX_DEPTH,
	    NULL, 0) : NULL;
	int rc;

	if (root == NULL) {
		snprintf(why, why_len, "config: not JSON");
		return -EINVAL;
	}
	rc = guestjson_read(root, ret, why, why_len);
	yajl_tree_free(root);
	return rc;
}

/* ------------------------------------------------------------------ */
/* vm.create's params.guest: an object of xl.cfg keys                  */

/*
 * A JSON value of such an object as a libvmbuild value, at list depth
 * `depth` (1 for a key's value); lists are malloc'd (value_done frees
 * them).  -EINVAL with *why set for a value no xl.cfg key takes.
 */
static int
value_from_json(yajl_val v, struct vmb_value *out, const char **why,
    int depth)
{
	memset(out, 0, sizeof(*out));
	if (depth > GUEST_MAX_DEPTH) {
		*why = "lists nested too deeply";
		return -EINVAL;
	}
	switch (v->type) {
	case yajl_t_string:
		out->type = VMB_VALUE_STRING;
		out->u.s = v->u.string;
		return 0;
	case yajl_t_number:
		if (!YAJL_IS_INTEGER(v)) {
			*why = "numbers must be integers";
			return -EINVAL;
		}
		out->type = VMB_VALUE_INT;
		out->u.i = YAJL_GET_INTEGER(v);
		return 0;
	case yajl_t_true:
	case yajl_t_false:
		out->type = VMB_VALUE_INT;
		out->u.i = YAJL_IS_TRUE(v);
		return 0;
	case yajl_t_array: {
		struct vmb_value *items;
		size_t n = v->u.array.len;

		items = calloc(n + 1, sizeof(*items));
		if (items == NULL) {
			*why = "out of memory";
			return -ENOMEM;
		}
		out->type = VMB_VALUE_LIST;
		out->u.list.v = items;
		out->u.list.n = 0;
		for (size_t i = 0; i < n; i++) {
			int rc = value_from_json(v->u.array.values[i],
			    &items[i], why, depth + 1);

			/* Count the failed item too: it may hold a partly
			 * built list that value_done() must free. */
			out->u.list.n++;
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	default:
		*why = "values must be strings, integers, booleans or lists";
		return -EINVAL;
	}
}

static void
value_done(struct vmb_value *v)
{
	if (v->type != VMB_VALUE_LIST)
		return;
	for (size_t i = 0; i < v->u.list.n; i++)
		value_done((struct vmb_value *)&v->u.list.v[i]);
	free((void *)v->u.list.v);
}

int
guestjson_keys(struct vmb_guest *guest, yajl_val obj, const char *where,
    struct vmb_diags *diags, const char **ret_key, const char **ret_why)
{
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *key = obj->u.object.keys[i], *why = NULL;
		/* A scalar type, so that value_done() is a no-op when
		 * value_from_json() fails before setting it. */
		struct vmb_value val = { .type = VMB_VALUE_STRING };
		int rc;

		rc = value_from_json(obj->u.object.values[i], &val, &why, 1);
		if (rc == 0)
			(void)vmb_guest_set(guest, key, &val, where, diags);
		value_done(&val);
		if (rc < 0) {
			*ret_key = key;
			*ret_why = why;
			return rc;
		}
	}
	return 0;
}
