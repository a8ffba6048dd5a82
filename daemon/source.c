/*
 * source.c - what a VM is built from, kept to build it again (see
 * source.h).
 */
#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "source.h"

/* Lists in a guest description nest this deep at most (vnuma: 3). */
#define GUEST_MAX_DEPTH	8

int
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

void
value_done(struct vmb_value *v)
{
	if (v->type != VMB_VALUE_LIST)
		return;
	for (size_t i = 0; i < v->u.list.n; i++)
		value_done((struct vmb_value *)&v->u.list.v[i]);
	free((void *)v->u.list.v);
}

int
source_guest_keys(struct vmb_guest *guest, yajl_val obj, const char *where,
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

char *
source_json(const char *config, yajl_val guest, const char *config_path,
    bool ignore_unsupported, bool by_root)
{
	yajl_gen g = jg_new();

	if (g == NULL)
		return NULL;
	yajl_gen_map_open(g);
	if (config != NULL)
		jg_kv_str(g, "config", config);
	else {
		jg_key(g, "guest");
		jg_tree(g, guest);
	}
	if (config_path != NULL)
		jg_kv_str(g, "config_path", config_path);
	if (ignore_unsupported)
		jg_kv_bool(g, "ignore_unsupported", true);
	if (by_root)
		jg_kv_bool(g, "by_root", true);
	yajl_gen_map_close(g);
	return jg_finish(g);
}

static const char *
str_member(yajl_val v, const char *key)
{
	yajl_val m = jv_get(v, key);

	return YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* ------------------------------------------------------------------ */
/* The devices the VM has now                                          */

static const char *const disk_formats[] = {
	[VMB_DISK_RAW] = "raw", [VMB_DISK_QCOW] = "qcow",
	[VMB_DISK_QCOW2] = "qcow2", [VMB_DISK_VHD] = "vhd",
	[VMB_DISK_QED] = "qed", [VMB_DISK_EMPTY] = "empty",
};

/*
 * Member `key` of a device as a string shorter than `max` bytes into
 * *ret (strdup'd when dup, else copied into the `max` bytes at ret):
 * 0, or -EINVAL (-ENOMEM) with *bad = key.  null is allowed (and gives
 * nothing) when `nullable`.
 */
static int
dev_str(yajl_val e, const char *key, bool nullable, size_t max, void *ret,
    bool dup, const char **bad)
{
	yajl_val v = jv_get(e, key);

	*bad = key;
	if (v != NULL && YAJL_IS_NULL(v) && nullable)
		return 0;
	if (!YAJL_IS_STRING(v) || !v->u.string[0] ||
	    strlen(v->u.string) >= max)
		return -EINVAL;
	if (!dup) {
		snprintf(ret, max, "%s", v->u.string);
		return 0;
	}
	*(char **)ret = strdup(v->u.string);
	return *(char **)ret != NULL ? 0 : -ENOMEM;
}

/* Member `key` of a device as a boolean: 0, or -EINVAL with *bad = key. */
static int
dev_bool(yajl_val e, const char *key, bool *ret, const char **bad)
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
dev_int(yajl_val e, const char *key, bool nullable, long long lo,
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

/* One member of config.disks (vmb_disk_format_json's) back into a disk. */
static int
disk_from_json(yajl_val e, void *dev, const char **bad)
{
	struct vmb_disk *d = dev;
	const char *fmt = str_member(e, "format");
	const char *access = str_member(e, "access");
	const char *type = str_member(e, "devtype");
	long long devid;
	uint32_t vbd;
	size_t f;
	int rc;

	if ((rc = dev_str(e, "vdev", false, sizeof(d->vdev), d->vdev, false,
	    bad)) < 0 || (rc = dev_int(e, "devid", false, 0, UINT32_MAX,
	    &devid, bad)) < 0)
		return rc;
	/* The vbd number is the vdev's, as the attach computed it. */
	if (vmb_vdev_number(d->vdev, &vbd) < 0 || vbd != devid)
		return -EINVAL;
	d->devid = vbd;
	if ((rc = dev_str(e, "target", false, SIZE_MAX, &d->target, true,
	    bad)) < 0 || (rc = dev_str(e, "script", false, SIZE_MAX,
	    &d->script, true, bad)) < 0 ||
	    (rc = dev_bool(e, "discard", &d->discard, bad)) < 0 ||
	    (rc = dev_bool(e, "trusted", &d->trusted, bad)) < 0 ||
	    (rc = dev_bool(e, "direct_io_safe", &d->direct_io_safe, bad)) < 0)
		return rc;
	for (f = 0; fmt != NULL && f < sizeof(disk_formats) /
	    sizeof(disk_formats[0]); f++)
		if (!strcmp(fmt, disk_formats[f]))
			break;
	*bad = "format";
	if (fmt == NULL || f == sizeof(disk_formats) / sizeof(disk_formats[0]))
		return -EINVAL;
	d->format = (enum vmb_disk_format)f;
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

/* "00:16:3e:12:34:56" into mac; -EINVAL if it is not one. */
static int
mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char end;

	if (strlen(s) != 17 || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0],
	    &b[1], &b[2], &b[3], &b[4], &b[5], &end) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* One member of config.vifs (vmb_nic_format_json's) back into a vif. */
static int
nic_from_json(yajl_val e, void *dev, const char **bad)
{
	struct vmb_nic *n = dev;
	yajl_val rate = jv_get(e, "rate");
	const char *mac = str_member(e, "mac");
	long long devid, mtu, bytes, us;
	int rc;

	if ((rc = dev_int(e, "devid", false, 0, 65535, &devid, bad)) < 0 ||
	    (rc = dev_int(e, "mtu", true, 68, 65535, &mtu, bad)) < 0 ||
	    (rc = dev_str(e, "bridge", false, sizeof(n->bridge), n->bridge,
	    false, bad)) < 0 ||
	    (rc = dev_str(e, "vifname", true, sizeof(n->vifname), n->vifname,
	    false, bad)) < 0 ||
	    (rc = dev_str(e, "ip", true, SIZE_MAX, &n->ip, true, bad)) < 0 ||
	    (rc = dev_str(e, "script", false, SIZE_MAX, &n->script, true,
	    bad)) < 0 ||
	    (rc = dev_str(e, "gatewaydev", true, SIZE_MAX, &n->gatewaydev,
	    true, bad)) < 0 ||
	    (rc = dev_bool(e, "trusted", &n->trusted, bad)) < 0)
		return rc;
	n->devid = (uint32_t)devid;
	n->mtu = (uint32_t)mtu;
	/* The MAC it has (mac= or derived from the uuid): the same again. */
	*bad = "mac";
	if (mac != NULL && mac_parse(mac, n->mac) < 0)
		return -EINVAL;
	n->mac_set = mac != NULL;
	if (rate == NULL || YAJL_IS_NULL(rate))
		return 0;
	if ((rc = dev_int(rate, "bytes", false, 1, INT64_MAX, &bytes,
	    bad)) < 0 || (rc = dev_int(rate, "interval_us", false, 1,
	    UINT32_MAX, &us, bad)) < 0)
		return rc;
	n->rate_bytes = (uint64_t)bytes;
	n->rate_usecs = (uint32_t)us;
	return 0;
}

static const struct dev_kind {
	const char	*member;	/* of the VM's configuration */
	size_t		max;
	size_t		size;
	int		(*from_json)(yajl_val e, void *dev, const char **bad);
} dev_kinds[2] = {
	{ "disks", VMB_MAX_DISKS, sizeof(struct vmb_disk), disk_from_json },
	{ "vifs", VMB_MAX_NICS, sizeof(struct vmb_nic), nic_from_json },
};

/* Free what a device of that kind holds. */
static void
dev_done(const struct dev_kind *k, void *dev)
{
	if (k == &dev_kinds[0])
		vmb_disk_done(dev);
	else
		vmb_nic_done(dev);
}

/*
 * config.disks or config.vifs as an array of devices in *ret (*ret_n
 * of them): 1, or 0 when the configuration has no such member (a
 * record of a vmbuildd before hot-plug: the description's devices
 * stand), or a negative errno with `why`.
 */
static int
dev_list(yajl_val config, const struct dev_kind *k, void **ret,
    size_t *ret_n, char *why, size_t why_len)
{
	yajl_val list = jv_get(config, k->member);
	const char *bad = "";
	char *devs;
	size_t i;
	int rc = 0;

	if (list == NULL)
		return 0;
	if (!YAJL_IS_ARRAY(list) || list->u.array.len > k->max) {
		snprintf(why, why_len, "its configuration's %s: not a list of "
		    "at most %zu devices", k->member, k->max);
		return -EINVAL;
	}
	if ((devs = calloc(list->u.array.len + 1, k->size)) == NULL) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < list->u.array.len && rc == 0; i++)
		rc = k->from_json(list->u.array.values[i], devs + i * k->size,
		    &bad);
	if (rc < 0) {
		snprintf(why, why_len, "its configuration's %s[%zu].%s: %s",
		    k->member, i - 1, bad, rc == -ENOMEM ? "out of memory" :
		    "missing or invalid");
		while (i > 0)
			dev_done(k, devs + --i * k->size);
		free(devs);
		return rc;
	}
	*ret = devs;
	*ret_n = list->u.array.len;
	return 1;
}

/*
 * The devices the VM has now (its configuration's disks and vifs, as
 * vm.info shows them and hot-plug keeps them) in place of those of the
 * description it was created from: xl keeps a domain's devices across
 * a reboot, so does a restart.
 */
static int
devices_now(struct vmb_guest *g, yajl_val config, char *why, size_t why_len)
{
	void *v;
	size_t n;
	int rc;

	if ((rc = dev_list(config, &dev_kinds[0], &v, &n, why, why_len)) > 0)
		vmb_guest_take_disks(g, v, (uint32_t)n);
	if (rc >= 0 && (rc = dev_list(config, &dev_kinds[1], &v, &n, why,
	    why_len)) > 0)
		vmb_guest_take_nics(g, v, (uint32_t)n);
	return rc < 0 ? rc : 0;
}

bool
source_by_root(const char *json)
{
	yajl_val root = json ? jv_parse(json, strlen(json), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	bool yes = YAJL_IS_TRUE(jv_get(root, "by_root"));

	yajl_tree_free(root);
	return yes;
}

/*
 * A hotplug script by path in a guest that no root client created:
 * -EPERM with why (source_parse).
 */
static int
scripts_by_path(const struct vmb_guest *g, char *why, size_t why_len)
{
	for (uint32_t i = 0; i < g->nr_disks; i++)
		if (g->disks[i].script && g->disks[i].script[0] == '/') {
			snprintf(why, why_len, "disk %s: script \"%.64s\" is a "
			    "path, and no root client created the VM: not run",
			    g->disks[i].vdev, g->disks[i].script);
			return -EPERM;
		}
	for (uint32_t i = 0; i < g->nr_nics; i++)
		if (g->nics[i].script && g->nics[i].script[0] == '/') {
			snprintf(why, why_len, "vif %u: script \"%.64s\" is a "
			    "path, and no root client created the VM: not run",
			    g->nics[i].devid, g->nics[i].script);
			return -EPERM;
		}
	return 0;
}

static void
first_error(const struct vmb_diags *diags, char *why, size_t len)
{
	for (size_t i = 0; i < diags->n; i++)
		if (diags->v[i].severity == VMB_ERROR) {
			vmb_diag_format(&diags->v[i], why, len);
			return;
		}
	snprintf(why, len, "invalid description");
}

int
source_parse(const char *json, const char *config_json,
    struct vmb_guest **ret_guest, char *why, size_t why_len)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *guest = NULL;
	const char *text, *path, *where, *key = NULL, *what = NULL;
	char *dir = NULL, *basedir = NULL;
	yajl_val root, obj, config = NULL;
	unsigned flags = 0;
	int rc;

	root = json != NULL ? jv_parse(json, strlen(json), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	if (root == NULL) {
		snprintf(why, why_len, "no recorded description");
		return -ENOENT;
	}
	if (config_json != NULL && (config = jv_parse(config_json,
	    strlen(config_json), JSON_MAX_DEPTH, NULL, 0)) == NULL) {
		rc = -EINVAL;
		snprintf(why, why_len, "its recorded configuration is not "
		    "JSON");
		goto out;
	}
	text = str_member(root, "config");
	path = str_member(root, "config_path");
	obj = jv_get(root, "guest");
	if (YAJL_IS_TRUE(jv_get(root, "ignore_unsupported")))
		flags = VMB_CONFIG_IGNORE_UNSUPPORTED;
	if (path != NULL && path[0] == '/' && (dir = strdup(path)) != NULL)
		basedir = dirname(dir);
	where = text != NULL && path != NULL ? path : "request";
	/* The keys first: the whole is checked once the devices are in. */
	if (text != NULL) {
		rc = vmb_config_parse(text, strlen(text), where, basedir,
		    flags | VMB_CONFIG_NO_CHECK, &guest, &diags);
	} else if (YAJL_IS_OBJECT(obj)) {
		rc = vmb_guest_new(&guest);
		if (rc == 0)
			guest->flags = flags;
		if (rc == 0)
			rc = source_guest_keys(guest, obj, where, &diags,
			    &key, &what);
	} else {
		rc = -EINVAL;
		snprintf(why, why_len, "the recorded description is neither "
		    "xl.cfg text nor a guest object");
		goto out;
	}
	if (rc == 0 && diags.nr_errors > 0)
		rc = -EINVAL;
	if (rc == 0 && config != NULL &&
	    (rc = devices_now(guest, config, why, why_len)) < 0)
		goto out;
	if (rc == 0 && !YAJL_IS_TRUE(jv_get(root, "by_root")) &&
	    (rc = scripts_by_path(guest, why, why_len)) < 0)
		goto out;
	/* As vm.create: no file is looked at (images.c opens). */
	if (rc == 0)
		rc = vmb_guest_check(guest, basedir, where, 0, &diags);
	if (rc == 0 && diags.nr_errors > 0)
		rc = -EINVAL;
	if (rc < 0 && key != NULL)
		snprintf(why, why_len, "guest.%s: %s", key, what);
	else if (rc < 0 && diags.nr_errors > 0)
		first_error(&diags, why, why_len);
	else if (rc < 0)
		snprintf(why, why_len, "%s", strerror(-rc));
out:
	if (rc == 0)
		*ret_guest = guest;
	else
		vmb_guest_free(guest);
	vmb_diags_done(&diags);
	yajl_tree_free(config);
	yajl_tree_free(root);
	free(dir);
	return rc;
}
