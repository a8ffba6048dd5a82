/*
 * guest.c - the guest description: one key/value setter, one validator
 * and one JSON form.
 *
 * Both front ends go through here: config.c feeds it the keys of an
 * xl.cfg file, the daemon the members of a JSON guest description.  So a
 * value is checked the same way whichever way it came, and every error
 * names where it came from (file or "request", line, key).  The way out
 * is vmb_guest_format_json(), for vmb-config-check's golden tests and
 * the daemon's records and vm.info alike.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmb_internal.h"

#define VMB_MEMORY_MAX_MIB	(16ull << 20)	/* 16 TiB, far above any host here */
#define VMB_VCPUS_MAX		256		/* struct vmb_vnode's bitmap */
#define VMB_STRING_MAX		4096		/* paths and command lines */

struct key_desc {
	const char *name;
	enum vmb_key key;
	int	(*set)(struct vmb_guest *g, const struct key_desc *k,
		    const struct vmb_value *v, const char *where,
		    struct vmb_diags *diags);
};

/* ------------------------------------------------------------------ */
/* Small helpers shared with other files.                              */

int
vmb__parse_ranges(const char *s, uint64_t *bits, unsigned nbits)
{
	const char *p = s;

	if (!*p)
		return -EINVAL;
	for (;;) {
		char *end;
		unsigned long a, b;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		a = strtoul(p, &end, 10);
		p = end;
		b = a;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			b = strtoul(p, &end, 10);
			p = end;
		}
		if (b < a)
			return -EINVAL;
		if (b >= nbits)
			return -ERANGE;
		for (unsigned long i = a; i <= b; i++)
			bits[i / 64] |= 1ull << (i % 64);
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
}

/* ------------------------------------------------------------------ */
/* Value access.                                                       */

static const char *
value_type_name(const struct vmb_value *v)
{
	switch (v->type) {
	case VMB_VALUE_STRING:	return "a string";
	case VMB_VALUE_INT:	return "a number";
	case VMB_VALUE_LIST:	return "a list";
	}
	return "?";
}

/* A string value (xl.cfg quotes it); numbers and lists are errors. */
static int
get_string(const struct key_desc *k, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags, const char **ret)
{
	if (v->type != VMB_VALUE_STRING || !v->u.s)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a string, got %s", value_type_name(v));
	if (strlen(v->u.s) >= VMB_STRING_MAX)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "value too long (at most %d characters)",
		    VMB_STRING_MAX - 1);
	*ret = v->u.s;
	return 0;
}

/*
 * An integer in [min, max].  A string holding only digits is accepted,
 * as xl accepts memory="512".
 */
static int
get_int(const struct key_desc *k, const struct vmb_value *v, long long min,
    long long max, const char *where, struct vmb_diags *diags,
    long long *ret)
{
	long long x;

	if (v->type == VMB_VALUE_INT) {
		x = v->u.i;
	} else if (v->type == VMB_VALUE_STRING && v->u.s) {
		char *end;

		errno = 0;
		x = strtoll(v->u.s, &end, 10);
		if (!*v->u.s || *end || errno)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "expected an integer, got \"%.64s\"",
			    v->u.s);
	} else {
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected an integer, got %s", value_type_name(v));
	}
	if (x < min || x > max)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%lld is out of range (%lld..%lld)", x, min, max);
	*ret = x;
	return 0;
}

static int
replace_string(char **dst, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Setters, one per kind of key.                                       */

static int
set_name(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!*s || strlen(s) >= VMB_NAME_LEN)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "must be 1 to %d characters", VMB_NAME_LEN - 1);
	/* Names reach file names, logs and tables: keep them plain. */
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "invalid character '%c' (letters, "
			    "digits, '-', '_' and '.' only)", *p);
	if (s[0] == '-' || s[0] == '.')
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "must not start with '%c'", s[0]);
	snprintf(g->name, sizeof(g->name), "%s", s);
	return 0;
}

static int
set_type(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!strcmp(s, "pvh")) {
		g->type = VMB_GUEST_PVH;
		return 0;
	}
	if (!strcmp(s, "hvm") || !strcmp(s, "pv"))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "type \"%s\" is not supported by vmbuild (only \"pvh\")",
		    s);
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
	    "unknown type \"%.32s\" (expected \"pvh\")", s);
}

static int
set_mib(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = get_int(k, v, 1, (long long)VMB_MEMORY_MAX_MIB, where, diags,
	    &x);

	if (rc)
		return rc;
	if (k->key == VMB_KEY_MEMORY)
		g->memory_bytes = (uint64_t)x * VMB_MIB;
	else
		g->maxmem_bytes = (uint64_t)x * VMB_MIB;
	return 0;
}

static int
set_vcpus(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = get_int(k, v, 1, VMB_VCPUS_MAX, where, diags, &x);

	if (rc)
		return rc;
	if (k->key == VMB_KEY_VCPUS)
		g->vcpus = (uint32_t)x;
	else
		g->maxvcpus = (uint32_t)x;
	return 0;
}

static int
set_path(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!*s)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "empty path");
	return replace_string(k->key == VMB_KEY_KERNEL ? &g->kernel :
	    &g->ramdisk, s);
}

static int
set_cmdline(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	/* xl: cmdline wins over extra whichever comes first. */
	if (k->key == VMB_KEY_EXTRA && (g->keys_set & (1u << VMB_KEY_CMDLINE)))
		return vmb__diag_add(diags, VMB_WARNING, where, v->line,
		    k->name, "ignored: cmdline is set");
	if (k->key == VMB_KEY_CMDLINE && (g->keys_set & (1u << VMB_KEY_EXTRA)))
		vmb__diag_add(diags, VMB_WARNING, where,
		    g->key_line[VMB_KEY_EXTRA], "extra",
		    "ignored: cmdline is set");
	return replace_string(&g->cmdline, s);
}

/*
 * cpus: "all", a host CPU list ("0-3,8"), or "nodes:0-1" / "node:1".
 * Only the node form restricts memory placement; a CPU list is kept for
 * placement to translate with the host's topology.
 */
static int
set_cpus(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s, *list = NULL;
	uint64_t bits[VMB_MAX_NODES / 64] = { 0 };
	uint64_t cpubits[4096 / 64] = { 0 };
	int rc;

	if (v->type == VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "per-vCPU lists are not supported; use a string such as "
		    "\"nodes:0-1\" or \"0-3\"");
	rc = get_string(k, v, where, diags, &s);
	if (rc)
		return rc;
	if (!strncmp(s, "nodes:", 6))
		list = s + 6;
	else if (!strncmp(s, "node:", 5))
		list = s + 5;
	if (list) {
		rc = vmb__parse_ranges(list, bits, VMB_MAX_NODES);
		if (rc == -ERANGE)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "node number out of range in \"%s\" "
			    "(at most %d)", s, VMB_MAX_NODES - 1);
		if (rc)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "bad node list \"%.64s\" (expected e.g. "
			    "\"nodes:0-1,3\")", s);
	} else if (strcmp(s, "all") != 0) {
		rc = vmb__parse_ranges(s, cpubits, 4096);
		if (rc)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "bad CPU list \"%.64s\" (expected \"all\", "
			    "\"0-3,5\" or \"nodes:0-1\")", s);
	}
	rc = replace_string(&g->cpus, s);
	if (rc)
		return rc;
	g->node_mask = bits[0];
	return 0;
}

static int
set_hap(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = get_int(k, v, 0, 1, where, diags, &x);

	if (rc)
		return rc;
	g->hap = x != 0;
	return 0;
}

static int
set_uuid(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (vmb_uuid_from_str(s, g->uuid))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "bad UUID \"%.40s\" (expected "
		    "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s);
	return 0;
}

/* One "key=value" item of a vnode list. */
static int
vnode_item(struct vmb_vnode *vn, unsigned idx, const char *item,
    uint32_t *seen, uint32_t nr_vnodes, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *eq = strchr(item, '=');
	const char *val;
	char *end;
	size_t klen;

	if (!eq)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "vnode %u: \"%.40s\" is not key=value", idx, item);
	klen = (size_t)(eq - item);
	val = eq + 1;
	if (klen == 5 && !strncmp(item, "pnode", 5)) {
		unsigned long n;

		errno = 0;
		n = strtoul(val, &end, 10);
		if (!*val || *end || errno || n >= VMB_MAX_NODES)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad pnode \"%.20s\"", idx, val);
		vn->pnode = (uint32_t)n;
		*seen |= 1;
	} else if (klen == 4 && !strncmp(item, "size", 4)) {
		unsigned long long n;

		errno = 0;
		n = strtoull(val, &end, 10);
		if (!*val || *end || errno || n == 0 || n > VMB_MEMORY_MAX_MIB)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad size \"%.20s\" (MiB)", idx,
			    val);
		vn->size_bytes = n * VMB_MIB;
		*seen |= 2;
	} else if (klen == 5 && !strncmp(item, "vcpus", 5)) {
		memset(vn->vcpus, 0, sizeof(vn->vcpus));
		if (vmb__parse_ranges(val, vn->vcpus, VMB_VCPUS_MAX))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad vcpus \"%.40s\"", idx, val);
		*seen |= 4;
	} else if (klen == 10 && !strncmp(item, "vdistances", 10)) {
		uint32_t n = 0;

		/* Checked, not used: hvsim and the loader have no SLIT. */
		for (const char *p = val; ; ) {
			unsigned long d;

			errno = 0;
			d = strtoul(p, &end, 10);
			if (end == p || errno || d > 255)
				return vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %u: bad "
				    "vdistances \"%.40s\"", idx, val);
			n++;
			if (*end == '\0')
				break;
			if (*end != ',')
				return vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %u: bad "
				    "vdistances \"%.40s\"", idx, val);
			p = end + 1;
		}
		if (n != nr_vnodes)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: %u vdistances for %u vnodes",
			    idx, n, nr_vnodes);
	} else {
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "vnode %u: unknown item \"%.*s\" (pnode, size, vcpus, "
		    "vdistances)", idx, (int)(klen > 32 ? 32 : klen), item);
	}
	return 0;
}

/*
 * vnuma = [ [ "pnode=0", "size=512", "vcpus=0-1", "vdistances=10,20" ],
 *           [ "pnode=1", "size=512", "vcpus=2-3", "vdistances=20,10" ] ]
 */
static int
set_vnuma(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	struct vmb_vnode vn[VMB_MAX_VNODES];
	int rc = 0;

	if (v->type != VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a list of vnode lists, got %s",
		    value_type_name(v));
	if (v->u.list.n == 0 || v->u.list.n > VMB_MAX_VNODES)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%zu vnodes (1 to %d allowed)", v->u.list.n,
		    VMB_MAX_VNODES);
	memset(vn, 0, sizeof(vn));
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct vmb_value *node = &v->u.list.v[i];
		uint32_t seen = 0;
		int r = 0;

		if (node->type != VMB_VALUE_LIST) {
			rc = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %zu: expected a list of "
			    "\"key=value\" strings, got %s", i,
			    value_type_name(node));
			continue;
		}
		for (size_t j = 0; j < node->u.list.n; j++) {
			const struct vmb_value *it = &node->u.list.v[j];

			if (it->type != VMB_VALUE_STRING) {
				r = vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %zu: item %zu is "
				    "%s, expected \"key=value\"", i, j,
				    value_type_name(it));
				continue;
			}
			if (vnode_item(&vn[i], (unsigned)i, it->u.s, &seen,
			    (uint32_t)v->u.list.n, k, v, where, diags))
				r = -EINVAL;
		}
		if (!r && (seen & 7) != 7)
			r = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %zu: needs pnode, size and vcpus",
			    i);
		if (r)
			rc = r;
	}
	if (rc)
		return rc;
	memcpy(g->vnodes, vn, sizeof(vn));
	g->nr_vnodes = (uint32_t)v->u.list.n;
	return 0;
}

static const struct key_desc keys[] = {
	{ "name",	VMB_KEY_NAME,		set_name },
	{ "type",	VMB_KEY_TYPE,		set_type },
	{ "memory",	VMB_KEY_MEMORY,		set_mib },
	{ "maxmem",	VMB_KEY_MAXMEM,		set_mib },
	{ "vcpus",	VMB_KEY_VCPUS,		set_vcpus },
	{ "maxvcpus",	VMB_KEY_MAXVCPUS,	set_vcpus },
	{ "kernel",	VMB_KEY_KERNEL,		set_path },
	{ "ramdisk",	VMB_KEY_RAMDISK,	set_path },
	{ "cmdline",	VMB_KEY_CMDLINE,	set_cmdline },
	{ "extra",	VMB_KEY_EXTRA,		set_cmdline },
	{ "cpus",	VMB_KEY_CPUS,		set_cpus },
	{ "vnuma",	VMB_KEY_VNUMA,		set_vnuma },
	{ "hap",	VMB_KEY_HAP,		set_hap },
	{ "uuid",	VMB_KEY_UUID,		set_uuid },
};

/*
 * Keys xl knows that vmbuild does not act on: accepted with a warning, so
 * that an existing xl.cfg still parses, but never silently.
 */
static const char *const xl_ignored[] = {
	"builder", "on_poweroff", "on_reboot", "on_crash", "on_watchdog",
	"on_soft_reset", "disk", "vif", "serial", "vfb", "vkb", "vga",
	"videoram", "boot", "pci", "localtime", "acpi", "apic", "pae",
	"viridian", "usb", "usbdevice", "usbctrl", "sdl", "vnc", "vnclisten",
	"vncpasswd", "root", "bootloader", "bootloader_args", "cpu_weight",
	"cpu_cap", "cpus_soft", "shadow_memory", "nestedhvm", "seclabel",
	"pool", "channel", "p9", "tee", "max_grant_frames",
	"max_maptrack_frames", "device_model_version", "device_model_override",
	"xen_platform_pci", "stdvga", "timer_mode", "tsc_mode", "hpet",
	"nomigrate", "driver_domain", "device_tree", "firmware",
	"acpi_firmware", "smbios_firmware", "vtpm", "vdispl", "vsnd",
	"dtdev", "irqs", "iomem", "ioports", "rdm", "e820_host",
	"claim_mode", "autoballoon", "console",
};

static size_t
edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[32], cur[32];

	if (la >= 31 || lb >= 31)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t c = prev[j - 1] + (a[i - 1] != b[j - 1]);

			if (prev[j] + 1 < c)
				c = prev[j] + 1;
			if (cur[j - 1] + 1 < c)
				c = cur[j - 1] + 1;
			cur[j] = c;
		}
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[lb];
}

int
vmb_guest_set(struct vmb_guest *guest, const char *key,
    const struct vmb_value *value, const char *where, struct vmb_diags *diags)
{
	const char *best = NULL;
	size_t bestd = 3;
	int rc;

	if (!guest || !key || !value)
		return -EINVAL;
	if (!where)
		where = "request";
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(key, keys[i].name) != 0)
			continue;
		rc = keys[i].set(guest, &keys[i], value, where, diags);
		if (rc == 0) {
			guest->keys_set |= 1u << keys[i].key;
			guest->key_line[keys[i].key] = value->line;
		}
		return rc;
	}
	for (size_t i = 0; i < sizeof(xl_ignored) / sizeof(xl_ignored[0]); i++)
		if (!strcmp(key, xl_ignored[i]))
			return vmb__diag_add(diags, VMB_WARNING, where,
			    value->line, key, "xl key not used by vmbuild, "
			    "ignored");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t d = edit_distance(key, keys[i].name);

		if (d < bestd) {
			bestd = d;
			best = keys[i].name;
		}
	}
	if (best)
		return vmb__diag_add(diags, VMB_ERROR, where, value->line, key,
		    "unknown key (did you mean \"%s\"?)", best);
	return vmb__diag_add(diags, VMB_ERROR, where, value->line, key,
	    "unknown key");
}

/* ------------------------------------------------------------------ */
/* Lifecycle.                                                          */

int
vmb_guest_new(struct vmb_guest **ret_guest)
{
	struct vmb_guest *g;

	if (!ret_guest)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->type = VMB_GUEST_PVH;
	g->hap = true;
	*ret_guest = g;
	return 0;
}

void
vmb_guest_free(struct vmb_guest *g)
{
	if (!g)
		return;
	free(g->kernel);
	free(g->ramdisk);
	free(g->cmdline);
	free(g->cpus);
	free(g->source);
	free(g);
}

static int
dup_or_null(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int
vmb_guest_copy(const struct vmb_guest *src, struct vmb_guest **ret_guest)
{
	struct vmb_guest *g;
	int rc;

	if (!src || !ret_guest)
		return -EINVAL;
	g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	*g = *src;
	g->kernel = g->ramdisk = g->cmdline = g->cpus = g->source = NULL;
	if ((rc = dup_or_null(src->kernel, &g->kernel)) ||
	    (rc = dup_or_null(src->ramdisk, &g->ramdisk)) ||
	    (rc = dup_or_null(src->cmdline, &g->cmdline)) ||
	    (rc = dup_or_null(src->cpus, &g->cpus)) ||
	    (rc = dup_or_null(src->source, &g->source)))
		goto fail;
	*ret_guest = g;
	return 0;
fail:
	vmb_guest_free(g);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Validation of the whole description.                                */

static int
line_of(const struct vmb_guest *g, enum vmb_key k)
{
	return g->key_line[k];
}

/*
 * Make `path` absolute against basedir; with VMB_CHECK_FILES resolve it
 * (symbolic links too) and check that it can be read, else only join
 * the strings and look at nothing.
 */
static int
resolve_path(char **path, const char *basedir, const char *key, int line,
    const char *where, unsigned flags, struct vmb_diags *diags)
{
	char *joined = NULL, *real = NULL;
	int rc;

	if ((*path)[0] != '/' && basedir && *basedir) {
		if (asprintf(&joined, "%s/%s", basedir, *path) < 0)
			return -ENOMEM;
	}
	if (!(flags & VMB_CHECK_FILES)) {
		if (joined) {
			free(*path);
			*path = joined;
		}
		return 0;
	}
	real = realpath(joined ? joined : *path, NULL);
	if (!real || access(real, R_OK) != 0) {
		rc = vmb__diag_add(diags, VMB_ERROR, where, line, key,
		    "cannot read \"%s\": %s", *path, strerror(errno));
		goto out;
	}
	free(*path);
	*path = real;
	real = NULL;
	rc = 0;
out:
	free(real);
	free(joined);
	return rc;
}

int
vmb_guest_validate(struct vmb_guest *g, const char *basedir,
    const char *where, struct vmb_diags *diags)
{
	return vmb_guest_check(g, basedir, where, VMB_CHECK_FILES, diags);
}

int
vmb_guest_check(struct vmb_guest *g, const char *basedir, const char *where,
    unsigned flags, struct vmb_diags *diags)
{
	int errors = 0;

	if (!g)
		return -EINVAL;
	if (!where)
		where = g->source ? g->source : "request";
#define ERR(key, ...) do { \
	vmb__diag_add(diags, VMB_ERROR, where, line_of(g, key), \
	    keys[key].name, __VA_ARGS__); errors++; } while (0)

	if (!(g->keys_set & (1u << VMB_KEY_NAME)))
		ERR(VMB_KEY_NAME, "missing (every guest needs a name)");
	if (!(g->keys_set & (1u << VMB_KEY_MEMORY)))
		ERR(VMB_KEY_MEMORY, "missing (guest memory in MiB)");
	if (!g->kernel)
		ERR(VMB_KEY_KERNEL, "missing (path of the guest kernel)");
	if (!(g->keys_set & (1u << VMB_KEY_VCPUS)))
		g->vcpus = 1;
	if (!(g->keys_set & (1u << VMB_KEY_MAXVCPUS)))
		g->maxvcpus = g->vcpus;
	if (!(g->keys_set & (1u << VMB_KEY_MAXMEM)))
		g->maxmem_bytes = g->memory_bytes;
	if (g->memory_bytes > g->maxmem_bytes)
		ERR(VMB_KEY_MAXMEM, "memory (%llu MiB) is larger than maxmem "
		    "(%llu MiB)", (unsigned long long)(g->memory_bytes / VMB_MIB),
		    (unsigned long long)(g->maxmem_bytes / VMB_MIB));
	if (g->vcpus > g->maxvcpus)
		ERR(VMB_KEY_MAXVCPUS, "vcpus (%u) is larger than maxvcpus (%u)",
		    g->vcpus, g->maxvcpus);
	if (g->nr_vnodes) {
		uint64_t sum = 0, cover[4] = { 0 };
		bool overlap = false;

		for (uint32_t i = 0; i < g->nr_vnodes; i++) {
			sum += g->vnodes[i].size_bytes;
			for (int w = 0; w < 4; w++) {
				if (cover[w] & g->vnodes[i].vcpus[w])
					overlap = true;
				cover[w] |= g->vnodes[i].vcpus[w];
			}
		}
		if (sum != g->memory_bytes)
			ERR(VMB_KEY_VNUMA, "vnode sizes add up to %llu MiB, "
			    "memory is %llu MiB",
			    (unsigned long long)(sum / VMB_MIB),
			    (unsigned long long)(g->memory_bytes / VMB_MIB));
		if (overlap)
			ERR(VMB_KEY_VNUMA, "a vCPU is in more than one vnode");
		for (uint32_t c = 0; c < VMB_VCPUS_MAX; c++) {
			bool in = cover[c / 64] & (1ull << (c % 64));

			if (c < g->vcpus && !in) {
				ERR(VMB_KEY_VNUMA, "vCPU %u is in no vnode", c);
				break;
			}
			if (c >= g->vcpus && in) {
				ERR(VMB_KEY_VNUMA, "vnode vCPU %u, but the guest "
				    "has %u vcpus", c, g->vcpus);
				break;
			}
		}
		if (g->node_mask) {
			for (uint32_t i = 0; i < g->nr_vnodes; i++)
				if (!(g->node_mask >> g->vnodes[i].pnode & 1)) {
					ERR(VMB_KEY_VNUMA, "vnode %u is on node "
					    "%u, which cpus=\"%s\" excludes", i,
					    g->vnodes[i].pnode, g->cpus);
					break;
				}
		}
	}
	if (g->kernel && resolve_path(&g->kernel, basedir,
	    keys[VMB_KEY_KERNEL].name, line_of(g, VMB_KEY_KERNEL), where,
	    flags, diags))
		errors++;
	if (g->ramdisk && resolve_path(&g->ramdisk, basedir,
	    keys[VMB_KEY_RAMDISK].name, line_of(g, VMB_KEY_RAMDISK), where,
	    flags, diags))
		errors++;
#undef ERR
	return errors ? -EINVAL : 0;
}

/* ------------------------------------------------------------------ */
/* JSON output.                                                        */

const char *
vmb_guest_type_name(enum vmb_guest_type type)
{
	switch (type) {
	case VMB_GUEST_PVH:	return "pvh";
	case VMB_GUEST_HVM:	return "hvm";
	case VMB_GUEST_PV:	return "pv";
	}
	return "unknown";
}

static void
json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
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

/* A bitmap as a range list, "0-3,5". */
static void
ranges_str(FILE *f, const uint64_t *bits, unsigned nbits)
{
	bool first = true;

	fputc('"', f);
	for (unsigned i = 0; i < nbits; i++) {
		unsigned j = i;

		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		while (j + 1 < nbits && (bits[(j + 1) / 64] >> ((j + 1) % 64) & 1))
			j++;
		fprintf(f, "%s%u", first ? "" : ",", i);
		if (j > i)
			fprintf(f, "-%u", j);
		first = false;
		i = j;
	}
	fputc('"', f);
}

int
vmb_guest_format_json(const struct vmb_guest *g, char **ret_json)
{
	char *buf = NULL, uuid[VMB_UUID_STRLEN];
	size_t len = 0;
	FILE *f;

	if (!g || !ret_json)
		return -EINVAL;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs("{\n  \"name\": ", f);
	json_str(f, g->name);
	fprintf(f, ",\n  \"type\": \"%s\"", vmb_guest_type_name(g->type));
	fprintf(f, ",\n  \"memory_bytes\": %llu",
	    (unsigned long long)g->memory_bytes);
	fprintf(f, ",\n  \"maxmem_bytes\": %llu",
	    (unsigned long long)g->maxmem_bytes);
	fprintf(f, ",\n  \"vcpus\": %u,\n  \"maxvcpus\": %u", g->vcpus,
	    g->maxvcpus);
	fprintf(f, ",\n  \"hap\": %s", g->hap ? "true" : "false");
	fputs(",\n  \"kernel\": ", f);
	json_str(f, g->kernel);
	fputs(",\n  \"ramdisk\": ", f);
	json_str(f, g->ramdisk);
	fputs(",\n  \"cmdline\": ", f);
	json_str(f, g->cmdline);
	fputs(",\n  \"cpus\": ", f);
	json_str(f, g->cpus);
	fputs(",\n  \"nodes\": [", f);
	for (unsigned n = 0, first = 1; n < 64; n++)
		if (g->node_mask >> n & 1) {
			fprintf(f, "%s%u", first ? "" : ", ", n);
			first = 0;
		}
	fputs("],\n  \"vnuma\": [", f);
	for (uint32_t i = 0; i < g->nr_vnodes; i++) {
		fprintf(f, "%s\n    {\"pnode\": %u, \"size_bytes\": %llu, "
		    "\"vcpus\": ", i ? "," : "", g->vnodes[i].pnode,
		    (unsigned long long)g->vnodes[i].size_bytes);
		ranges_str(f, g->vnodes[i].vcpus, VMB_VCPUS_MAX);
		fputc('}', f);
	}
	fputs(g->nr_vnodes ? "\n  ]" : "]", f);
	fputs(",\n  \"uuid\": ", f);
	if (vmb_uuid_is_null(g->uuid)) {
		fputs("null", f);
	} else {
		vmb_uuid_to_str(g->uuid, uuid);
		json_str(f, uuid);
	}
	fputs("\n}\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret_json = buf;
	return 0;
}
