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

/* One "[^]N[-M]" or "[^]node[s]:N[-M]" item of a CPU list. */
static int
cpus_item(const char *p, size_t len, struct vmb__cpus_item *it)
{
	char buf[64];
	uint64_t bits[VMB_MAX_CPUS / 64] = { 0 };
	unsigned lo = 0, hi = 0;
	int rc;

	memset(it, 0, sizeof(*it));
	if (len && *p == '^') {
		it->neg = true;
		p++;
		len--;
	}
	if (len >= 6 && !strncmp(p, "nodes:", 6)) {
		it->node = true;
		p += 6;
		len -= 6;
	} else if (len >= 5 && !strncmp(p, "node:", 5)) {
		it->node = true;
		p += 5;
		len -= 5;
	} else if (len == 3 && !strncmp(p, "all", 3)) {
		it->all = true;
		return 0;
	}
	if (len == 0 || len >= sizeof(buf) || memchr(p, ',', len))
		return -EINVAL;
	memcpy(buf, p, len);
	buf[len] = '\0';
	rc = vmb__parse_ranges(buf, bits, it->node ? VMB_MAX_NODES :
	    VMB_MAX_CPUS);
	if (rc)
		return rc;
	/* One range per item: the lowest and highest bit set. */
	while (!(bits[lo / 64] >> (lo % 64) & 1))
		lo++;
	for (hi = lo; hi + 1 < VMB_MAX_CPUS &&
	    (bits[(hi + 1) / 64] >> ((hi + 1) % 64) & 1); hi++)
		;
	it->lo = lo;
	it->hi = hi;
	return 0;
}

int
vmb__cpus_parse(const char *s, struct vmb__cpus_item *items, size_t cap)
{
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; ; ) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct vmb__cpus_item it;
		int rc = cpus_item(p, len, &it);

		if (rc)
			return rc;
		if (n == cap)
			return -E2BIG;
		items[n++] = it;
		if (!end)
			break;
		p = end + 1;
	}
	return (int)n;
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

int
vmb_name_check(const char *s, char *why, size_t len)
{
	if (!*s || strlen(s) >= VMB_NAME_LEN) {
		snprintf(why, len, "must be 1 to %d characters",
		    VMB_NAME_LEN - 1);
		return -EINVAL;
	}
	/* Names reach file names, logs and tables: keep them plain. */
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (isalnum(c) || strchr("-_.", c))
			continue;
		/* A control character shown as such would break a log line. */
		if (isprint(c))
			snprintf(why, len, "invalid character '%c' (letters, "
			    "digits, '-', '_' and '.' only)", c);
		else
			snprintf(why, len, "invalid character 0x%02x (letters, "
			    "digits, '-', '_' and '.' only)", c);
		return -EINVAL;
	}
	if (s[0] == '-' || s[0] == '.') {
		snprintf(why, len, "must not start with '%c'", s[0]);
		return -EINVAL;
	}
	return 0;
}

static int
set_name(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	char why[80];
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (vmb_name_check(s, why, sizeof(why)) < 0)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%s", why);
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
	int rc = get_int(k, v, 1, VMB_MAX_VCPUS, where, diags, &x);

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
 * cpus, cpus_soft: xl's CPU list syntax (vmb__cpus_parse), checked here,
 * resolved against the host at build time.  When cpus= names nodes only
 * ("nodes:0-1", "node:1"), node_mask keeps them: placement then spreads
 * memory over those nodes.  Per-vCPU lists are refused.
 */
static int
set_cpus(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	struct vmb__cpus_item it[VMB_CPUS_ITEMS_MAX];
	uint64_t nodes = 0;
	const char *s;
	int n, rc;

	if (v->type == VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "per-vCPU lists are not supported; use a string such as "
		    "\"nodes:0-1\" or \"0-3,^2\" (the same for every vCPU)");
	rc = get_string(k, v, where, diags, &s);
	if (rc)
		return rc;
	n = vmb__cpus_parse(s, it, VMB_CPUS_ITEMS_MAX);
	if (n == -ERANGE)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "number out of range in \"%.64s\" (nodes up to %d, CPUs "
		    "up to %d)", s, VMB_MAX_NODES - 1, VMB_MAX_CPUS - 1);
	if (n < 0)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "bad CPU list \"%.64s\" (expected e.g. \"all\", "
		    "\"0-3,^2\" or \"nodes:0-1\")", s);
	for (int i = 0; i < n; i++) {
		if (!it[i].node || it[i].neg) {
			nodes = 0;
			break;
		}
		for (unsigned x = it[i].lo; x <= it[i].hi; x++)
			nodes |= 1ull << x;
	}
	rc = replace_string(k->key == VMB_KEY_CPUS ? &g->cpus : &g->cpus_soft,
	    s);
	if (rc)
		return rc;
	if (k->key == VMB_KEY_CPUS)
		g->node_mask = nodes;
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

/* A name from `names`, or its index written as a number, as xl takes. */
static int
set_mode(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	static const char *const tsc[] = { "default", "always_emulate",
	    "native" };
	static const char *const timer[] = { "delay_for_missed_ticks",
	    "no_delay_for_missed_ticks", "no_missed_ticks_pending",
	    "one_missed_tick_pending" };
	bool is_tsc = k->key == VMB_KEY_TSC_MODE;
	const char *const *names = is_tsc ? tsc : timer;
	long long n = is_tsc ? 3 : 4, x = -1;

	if (v->type == VMB_VALUE_INT) {
		x = v->u.i;
	} else if (v->type == VMB_VALUE_STRING && v->u.s) {
		for (long long i = 0; i < n; i++)
			if (!strcmp(v->u.s, names[i]))
				x = i;
		if (is_tsc && !strcmp(v->u.s, "native_paravirt"))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "native_paravirt was removed from Xen "
			    "(4.12)");
	}
	if (x < 0 || x >= n)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected %s, or 0 to %lld", is_tsc ? "default, "
		    "always_emulate, native" : "delay_for_missed_ticks, "
		    "no_delay_for_missed_ticks, no_missed_ticks_pending, "
		    "one_missed_tick_pending", n - 1);
	if (is_tsc)
		g->tsc_mode = (enum vmb_tsc_mode)x;
	else
		g->timer_mode = (enum vmb_timer_mode)x;
	return 0;
}

/*
 * The actions of on_poweroff & co.: the three vmbuild carries out, in
 * enum vmb_action order, and those xl has that it refuses by name.
 */
static const char *const action_names[] = {
	[VMB_ACTION_DESTROY] = "destroy",
	[VMB_ACTION_RESTART] = "restart",
	[VMB_ACTION_PRESERVE] = "preserve",
};
static const char *const xl_actions[] = {
	"rename-restart", "coredump-destroy", "coredump-restart", "soft-reset",
};

const char *
vmb_action_name(enum vmb_action action)
{
	if ((unsigned)action >= sizeof(action_names) / sizeof(action_names[0]))
		return "unknown";
	return action_names[action];
}

int
vmb_action_parse(const char *name, enum vmb_action *ret_action)
{
	if (!name || !ret_action)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(action_names) / sizeof(action_names[0]);
	    i++)
		if (!strcmp(name, action_names[i])) {
			*ret_action = (enum vmb_action)i;
			return 0;
		}
	return -EINVAL;
}

/* on_poweroff, on_reboot, on_crash, on_watchdog, on_soft_reset. */
static int
set_action(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	static const enum vmb_shutdown_reason reason[] = {
		[VMB_KEY_ON_POWEROFF - VMB_KEY_ON_POWEROFF] =
		    VMB_SHUTDOWN_POWEROFF,
		[VMB_KEY_ON_REBOOT - VMB_KEY_ON_POWEROFF] = VMB_SHUTDOWN_REBOOT,
		[VMB_KEY_ON_CRASH - VMB_KEY_ON_POWEROFF] = VMB_SHUTDOWN_CRASH,
		[VMB_KEY_ON_WATCHDOG - VMB_KEY_ON_POWEROFF] =
		    VMB_SHUTDOWN_WATCHDOG,
		[VMB_KEY_ON_SOFT_RESET - VMB_KEY_ON_POWEROFF] =
		    VMB_SHUTDOWN_SOFT_RESET,
	};
	enum vmb_action a;
	const char *s;
	int rc = get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (vmb_action_parse(s, &a) == 0) {
		g->on[reason[k->key - VMB_KEY_ON_POWEROFF]] = a;
		return 0;
	}
	for (size_t i = 0; i < sizeof(xl_actions) / sizeof(xl_actions[0]); i++)
		if (!strcmp(s, xl_actions[i]))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "\"%s\" is not supported by vmbuild "
			    "(destroy, restart or preserve)", s);
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
	    "unknown action \"%.32s\" (destroy, restart or preserve)", s);
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
		if (vmb__parse_ranges(val, vn->vcpus, VMB_MAX_VCPUS))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad vcpus \"%.40s\"", idx, val);
		*seen |= 4;
	} else if (klen == 10 && !strncmp(item, "vdistances", 10)) {
		uint32_t n = 0;

		/* The guest's SLIT: 10..254 (255 is "unreachable"). */
		for (const char *p = val; ; ) {
			unsigned long d;

			errno = 0;
			d = strtoul(p, &end, 10);
			if (end == p || errno || d < 10 || d > 254 ||
			    n >= VMB_MAX_VNODES)
				return vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %u: bad "
				    "vdistances \"%.40s\" (10 to 254 each, one "
				    "per vnode)", idx, val);
			vn->distances[n++] = (uint8_t)d;
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

/* A device list key (disk=, vif=): its items, how one is read and kept. */
struct dev_list {
	const char	*what;		/* "disk", "vif" */
	size_t		size;		/* of one device */
	size_t		max;
	int		(*parse)(const struct vmb_guest *g, const char *spec,
			    uint32_t index, const char *where, int line,
			    void *dev, struct vmb_diags *diags);
	void		(*done)(void *dev);
	void		(*take)(struct vmb_guest *g, void *devs, uint32_t n);
};

static int
disk_parse(const struct vmb_guest *g, const char *spec, uint32_t index,
    const char *where, int line, void *dev, struct vmb_diags *diags)
{
	(void)g;
	(void)index;
	return vmb_disk_parse(spec, where, line, dev, diags);
}

/* Each vif's devid is its index unless devid= says. */
static int
nic_parse(const struct vmb_guest *g, const char *spec, uint32_t index,
    const char *where, int line, void *dev, struct vmb_diags *diags)
{
	return vmb_nic_parse(spec, index, g->flags, where, line, dev, diags);
}

static void
disk_done(void *dev)
{
	vmb_disk_done(dev);
}

static void
nic_done(void *dev)
{
	vmb_nic_done(dev);
}

void
vmb_guest_take_disks(struct vmb_guest *g, struct vmb_disk *disks, uint32_t n)
{
	for (uint32_t i = 0; i < g->nr_disks; i++)
		vmb_disk_done(&g->disks[i]);
	free(g->disks);
	g->disks = disks;
	g->nr_disks = n;
}

void
vmb_guest_take_nics(struct vmb_guest *g, struct vmb_nic *nics, uint32_t n)
{
	for (uint32_t i = 0; i < g->nr_nics; i++)
		vmb_nic_done(&g->nics[i]);
	free(g->nics);
	g->nics = nics;
	g->nr_nics = n;
}

static void
disks_take(struct vmb_guest *g, void *devs, uint32_t n)
{
	vmb_guest_take_disks(g, devs, n);
}

static void
nics_take(struct vmb_guest *g, void *devs, uint32_t n)
{
	vmb_guest_take_nics(g, devs, n);
}

static const struct dev_list disk_list = {
	"disk", sizeof(struct vmb_disk), VMB_MAX_DISKS, disk_parse, disk_done,
	disks_take
};
static const struct dev_list nic_list = {
	"vif", sizeof(struct vmb_nic), VMB_MAX_NICS, nic_parse, nic_done,
	nics_take
};

/*
 * Every item of a device list key parsed, in the order written, in
 * place of the guest's devices of that kind; every bad item is
 * reported.  0, or the error, the guest unchanged.
 */
static int
set_dev_list(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags,
    const struct dev_list *dl)
{
	char *devs;
	size_t n = 0;
	int rc = 0;

	if (v->type != VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a list of %s specifications, got %s", dl->what,
		    value_type_name(v));
	if (v->u.list.n > dl->max)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%zu %ss (at most %zu)", v->u.list.n, dl->what, dl->max);
	devs = calloc(v->u.list.n + 1, dl->size);
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct vmb_value *it = &v->u.list.v[i];
		int r;

		if (it->type != VMB_VALUE_STRING) {
			rc = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "item %zu is %s, expected a %s "
			    "specification string", i, value_type_name(it),
			    dl->what);
			continue;
		}
		r = dl->parse(g, it->u.s, (uint32_t)i, where, it->line ?
		    it->line : v->line, devs + n * dl->size, diags);
		if (r == 0)
			n++;
		else
			rc = r;
	}
	if (rc) {
		while (n > 0)
			dl->done(devs + --n * dl->size);
		free(devs);
		return rc;
	}
	dl->take(g, devs, (uint32_t)n);
	return 0;
}

/* Every disk= item: xl's syntax (devspec.c); checked in validation. */
static int
set_disks(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	return set_dev_list(g, k, v, where, diags, &disk_list);
}

/* Every vif= item; each one's devid is its index unless devid= says. */
static int
set_vifs(struct vmb_guest *g, const struct key_desc *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	return set_dev_list(g, k, v, where, diags, &nic_list);
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
	{ "cpus_soft",	VMB_KEY_CPUS_SOFT,	set_cpus },
	{ "tsc_mode",	VMB_KEY_TSC_MODE,	set_mode },
	{ "timer_mode",	VMB_KEY_TIMER_MODE,	set_mode },
	{ "disk",	VMB_KEY_DISK,		set_disks },
	{ "vif",	VMB_KEY_VIF,		set_vifs },
	{ "on_poweroff", VMB_KEY_ON_POWEROFF,	set_action },
	{ "on_reboot",	VMB_KEY_ON_REBOOT,	set_action },
	{ "on_crash",	VMB_KEY_ON_CRASH,	set_action },
	{ "on_watchdog", VMB_KEY_ON_WATCHDOG,	set_action },
	{ "on_soft_reset", VMB_KEY_ON_SOFT_RESET, set_action },
};

/*
 * Keys xl knows that vmbuild does not implement: refused, "not
 * supported" (a warning under VMB_CONFIG_IGNORE_UNSUPPORTED).  Where
 * one value is what vmbuild does anyway (`same`: xl's value written as
 * a string, an integer's in decimal), that value is accepted: it is
 * honoured, not dropped.  `why` is for vmbuild.cfg(5) and the message.
 */
static const struct xl_unsupported {
	const char *key;
	const char *same;	/* the value vmbuild honours, or NULL */
	const char *why;
} xl_unsupported[] = {
	{ "acpi",		"1",	"PVH guests always get ACPI tables" },
	{ "nomigrate",		"0",	"vmbuild's CPUID policy is libxl's "
	    "for a migratable guest" },
	{ "pool",		"Pool-0", "guests run in Xen's default "
	    "cpupool" },
	{ "driver_domain",	"0",	"vmbuild builds no driver domains" },
	{ "claim_mode",		"1",	"vmbuild always claims memory first" },
	{ "autoballoon",	"0",	"vmbuild never balloons dom0 down" },
	{ "builder",		NULL,	"use type=\"pvh\"" },
	{ "serial",		NULL,	"a PVH guest has no emulated UART; "
	    "its console is the PV console" },
	{ "vfb",		NULL,	"needs a device model" },
	{ "vkb",		NULL,	"needs a device model" },
	{ "vga",		NULL,	"HVM only" },
	{ "videoram",		NULL,	"HVM only" },
	{ "stdvga",		NULL,	"HVM only" },
	{ "boot",		NULL,	"HVM only" },
	{ "localtime",		NULL,	"HVM only" },
	{ "apic",		NULL,	"HVM only" },
	{ "pae",		NULL,	"HVM only" },
	{ "hpet",		NULL,	"HVM only" },
	{ "viridian",		NULL,	"HVM only" },
	{ "nestedhvm",		NULL,	NULL },
	{ "xen_platform_pci",	NULL,	"HVM only" },
	{ "usb",		NULL,	"needs a device model" },
	{ "usbdevice",		NULL,	"needs a device model" },
	{ "usbctrl",		NULL,	NULL },
	{ "usbdev",		NULL,	NULL },
	{ "sdl",		NULL,	"needs a device model" },
	{ "vnc",		NULL,	"needs a device model" },
	{ "vnclisten",		NULL,	"needs a device model" },
	{ "vncpasswd",		NULL,	"needs a device model" },
	{ "vncdisplay",		NULL,	"needs a device model" },
	{ "vncunused",		NULL,	"needs a device model" },
	{ "keymap",		NULL,	"needs a device model" },
	{ "soundhw",		NULL,	"needs a device model" },
	{ "spice",		NULL,	"needs a device model" },
	{ "device_model_version", NULL,	"vmbuild runs no device model" },
	{ "device_model_override", NULL, "vmbuild runs no device model" },
	{ "device_model_args",	NULL,	"vmbuild runs no device model" },
	{ "pci",		NULL,	"no PCI passthrough" },
	{ "dtdev",		NULL,	"no device passthrough" },
	{ "irqs",		NULL,	"no device passthrough" },
	{ "iomem",		NULL,	"no device passthrough" },
	{ "ioports",		NULL,	"no device passthrough" },
	{ "rdm",		NULL,	"no device passthrough" },
	{ "e820_host",		NULL,	"no device passthrough" },
	{ "root",		NULL,	"write root= in cmdline" },
	{ "bootloader",		NULL,	"give the kernel itself" },
	{ "bootloader_args",	NULL,	"give the kernel itself" },
	{ "cpu_weight",		NULL,	NULL },
	{ "cpu_cap",		NULL,	NULL },
	{ "shadow_memory",	NULL,	"vmbuild sizes the paging pool" },
	{ "seclabel",		NULL,	"no XSM labels" },
	{ "channel",		NULL,	NULL },
	{ "p9",			NULL,	NULL },
	{ "tee",		NULL,	NULL },
	{ "max_grant_frames",	NULL,	"Xen's default is used" },
	{ "max_maptrack_frames", NULL,	"Xen's default is used" },
	{ "device_tree",	NULL,	"Arm only" },
	{ "firmware",		NULL,	"the kernel is loaded directly" },
	{ "acpi_firmware",	NULL,	NULL },
	{ "smbios_firmware",	NULL,	NULL },
	{ "vtpm",		NULL,	NULL },
	{ "vdispl",		NULL,	NULL },
	{ "vsnd",		NULL,	NULL },
	{ "vscsi",		NULL,	NULL },
	{ "console",		NULL,	NULL },
};

/* Is `v` the value vmbuild honours for this key anyway? */
static bool
unsupported_same(const struct xl_unsupported *u, const struct vmb_value *v)
{
	char num[24];

	if (!u->same)
		return false;
	if (v->type == VMB_VALUE_STRING)
		return !strcmp(v->u.s, u->same) ||
		    (!strcmp(u->same, "0") && !strcmp(v->u.s, "off"));
	if (v->type == VMB_VALUE_INT) {
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return !strcmp(num, u->same);
	}
	return false;
}

/* An xl key vmbuild does not implement: refused, or ignored on request. */
static int
set_unsupported(struct vmb_guest *g, const struct xl_unsupported *u,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	char why[160] = "";

	if (unsupported_same(u, v))
		return 0;
	if (u->same)
		snprintf(why, sizeof(why), " (only %s: %s)", u->same, u->why);
	else if (u->why)
		snprintf(why, sizeof(why), " (%s)", u->why);
	if (g->flags & VMB_CONFIG_IGNORE_UNSUPPORTED)
		return vmb__diag_add(diags, VMB_WARNING, where, v->line, u->key,
		    "not supported, ignored%s", why);
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, u->key,
	    "not supported%s", why);
}

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
	for (size_t i = 0; i < sizeof(xl_unsupported) /
	    sizeof(xl_unsupported[0]); i++)
		if (!strcmp(key, xl_unsupported[i].key))
			return set_unsupported(guest, &xl_unsupported[i],
			    value, where, diags);
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
	g->timer_mode = VMB_TIMER_NO_DELAY_FOR_MISSED_TICKS;	/* libxl's */
	/*
	 * xl's defaults, but for a soft reset: xl's soft-reset (the domain
	 * starts again in the memory it has) is not done here, so a soft
	 * reset is taken for a reboot unless on_soft_reset says otherwise.
	 */
	for (int r = 0; r < VMB_SHUTDOWN_NR; r++)
		g->on[r] = VMB_ACTION_DESTROY;
	g->on[VMB_SHUTDOWN_REBOOT] = VMB_ACTION_RESTART;
	g->on[VMB_SHUTDOWN_SOFT_RESET] = VMB_ACTION_RESTART;
	g->on[VMB_SHUTDOWN_SUSPEND] = VMB_ACTION_PRESERVE;
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
	free(g->cpus_soft);
	free(g->source);
	vmb_guest_take_disks(g, NULL, 0);
	vmb_guest_take_nics(g, NULL, 0);
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

/* Deep copies of src's disks and nics into g (which has none). */
static int
copy_devices(const struct vmb_guest *src, struct vmb_guest *g)
{
	int rc;

	if (src->nr_disks) {
		g->disks = calloc(src->nr_disks, sizeof(*g->disks));
		if (!g->disks)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < src->nr_disks; i++) {
		struct vmb_disk *d = &g->disks[i];

		*d = src->disks[i];
		d->target = d->script = d->spec = NULL;
		g->nr_disks = i + 1;
		if ((rc = dup_or_null(src->disks[i].target, &d->target)) ||
		    (rc = dup_or_null(src->disks[i].script, &d->script)) ||
		    (rc = dup_or_null(src->disks[i].spec, &d->spec)))
			return rc;
	}
	if (src->nr_nics) {
		g->nics = calloc(src->nr_nics, sizeof(*g->nics));
		if (!g->nics)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < src->nr_nics; i++) {
		struct vmb_nic *n = &g->nics[i];

		*n = src->nics[i];
		n->ip = n->script = n->gatewaydev = n->spec = NULL;
		g->nr_nics = i + 1;
		if ((rc = dup_or_null(src->nics[i].ip, &n->ip)) ||
		    (rc = dup_or_null(src->nics[i].script, &n->script)) ||
		    (rc = dup_or_null(src->nics[i].gatewaydev,
		    &n->gatewaydev)) ||
		    (rc = dup_or_null(src->nics[i].spec, &n->spec)))
			return rc;
	}
	return 0;
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
	g->cpus_soft = NULL;
	g->disks = NULL;
	g->nics = NULL;
	g->nr_disks = g->nr_nics = 0;
	if ((rc = dup_or_null(src->kernel, &g->kernel)) ||
	    (rc = dup_or_null(src->ramdisk, &g->ramdisk)) ||
	    (rc = dup_or_null(src->cmdline, &g->cmdline)) ||
	    (rc = dup_or_null(src->cpus, &g->cpus)) ||
	    (rc = dup_or_null(src->cpus_soft, &g->cpus_soft)) ||
	    (rc = dup_or_null(src->source, &g->source)) ||
	    (rc = copy_devices(src, g)))
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

/*
 * The devices as a whole: each disk servable (vmb_disk_check), no vbd
 * or vif devid twice, no MAC twice.  Returns the number of errors.
 */
static int
validate_devices(struct vmb_guest *g, const char *basedir,
    const char *where, struct vmb_diags *diags)
{
	int line, errors = 0;

	for (uint32_t i = 0; i < g->nr_disks; i++) {
		struct vmb_disk *d = &g->disks[i];

		if (vmb_disk_check(d, basedir, where, diags) != 0) {
			errors++;
			continue;
		}
		for (uint32_t j = 0; j < i; j++)
			if (g->disks[j].devid == d->devid) {
				vmb__diag_add(diags, VMB_ERROR, where, d->line,
				    "disk", "vdev %s is the vbd of %s (%u), "
				    "given before", d->vdev, g->disks[j].vdev,
				    d->devid);
				errors++;
				break;
			}
	}
	for (uint32_t i = 0; i < g->nr_nics; i++) {
		const struct vmb_nic *n = &g->nics[i];

		line = n->line;
		for (uint32_t j = 0; j < i; j++) {
			const struct vmb_nic *o = &g->nics[j];

			if (o->devid == n->devid) {
				vmb__diag_add(diags, VMB_ERROR, where, line,
				    "vif", "devid %u given twice", n->devid);
				errors++;
				break;
			}
			if (n->mac_set && o->mac_set &&
			    !memcmp(n->mac, o->mac, 6)) {
				vmb__diag_add(diags, VMB_ERROR, where, line,
				    "vif", "mac %02x:%02x:%02x:%02x:%02x:%02x "
				    "given twice", n->mac[0], n->mac[1],
				    n->mac[2], n->mac[3], n->mac[4], n->mac[5]);
				errors++;
				break;
			}
		}
	}
	return errors;
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
	else if (g->memory_bytes < g->maxmem_bytes)
		ERR(VMB_KEY_MAXMEM, "maxmem (%llu MiB) above memory (%llu MiB) "
		    "makes xl populate the guest on demand, which vmbuild does "
		    "not do; leave maxmem out or set it to memory",
		    (unsigned long long)(g->maxmem_bytes / VMB_MIB),
		    (unsigned long long)(g->memory_bytes / VMB_MIB));
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
		/* As libxl__vnuma_config_check: local is the nearest. */
		for (uint32_t i = 0; i < g->nr_vnodes; i++)
			for (uint32_t j = 0; j < g->nr_vnodes; j++)
				if (g->vnodes[i].distances[j] <
				    g->vnodes[i].distances[i]) {
					ERR(VMB_KEY_VNUMA, "vnode %u: distance "
					    "to vnode %u (%u) is smaller than "
					    "its local distance (%u)", i, j,
					    g->vnodes[i].distances[j],
					    g->vnodes[i].distances[i]);
					i = j = g->nr_vnodes;
				}
		for (uint32_t c = 0; c < VMB_MAX_VCPUS; c++) {
			bool in = cover[c / 64] & (1ull << (c % 64));

			/* As xl: the vnodes hold every vCPU up to maxvcpus. */
			if (c < g->maxvcpus && !in) {
				ERR(VMB_KEY_VNUMA, "vCPU %u is in no vnode", c);
				break;
			}
			if (c >= g->maxvcpus && in) {
				ERR(VMB_KEY_VNUMA, "vnode vCPU %u, but the guest "
				    "has %u vcpus", c, g->maxvcpus);
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
	errors += validate_devices(g, basedir, where, diags);
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

/* s as a JSON string, or null; devspec.c writes devices with it. */
void
vmb__json_str(FILE *f, const char *s)
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

/* "disks" and "vifs", each device in its one JSON form (devspec.c). */
static int
format_devices(FILE *f, const struct vmb_guest *g)
{
	char *one;
	int rc;

	fputs(",\n  \"disks\": [", f);
	for (uint32_t i = 0; i < g->nr_disks; i++) {
		if ((rc = vmb_disk_format_json(&g->disks[i], &one)) != 0)
			return rc;
		fprintf(f, "%s\n    %s", i ? "," : "", one);
		free(one);
	}
	fputs(g->nr_disks ? "\n  ]" : "]", f);
	fputs(",\n  \"vifs\": [", f);
	for (uint32_t i = 0; i < g->nr_nics; i++) {
		if ((rc = vmb_nic_format_json(g->uuid, &g->nics[i], &one)) != 0)
			return rc;
		fprintf(f, "%s\n    %s", i ? "," : "", one);
		free(one);
	}
	fputs(g->nr_nics ? "\n  ]" : "]", f);
	return 0;
}

int
vmb_guest_format_json(const struct vmb_guest *g, char **ret_json)
{
	char *buf = NULL, uuid[VMB_UUID_STRLEN];
	size_t len = 0;
	FILE *f;
	int rc;

	if (!g || !ret_json)
		return -EINVAL;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fputs("{\n  \"name\": ", f);
	vmb__json_str(f, g->name);
	fprintf(f, ",\n  \"type\": \"%s\"", vmb_guest_type_name(g->type));
	fprintf(f, ",\n  \"memory_bytes\": %llu",
	    (unsigned long long)g->memory_bytes);
	fprintf(f, ",\n  \"maxmem_bytes\": %llu",
	    (unsigned long long)g->maxmem_bytes);
	fprintf(f, ",\n  \"vcpus\": %u,\n  \"maxvcpus\": %u", g->vcpus,
	    g->maxvcpus);
	fprintf(f, ",\n  \"hap\": %s", g->hap ? "true" : "false");
	fputs(",\n  \"kernel\": ", f);
	vmb__json_str(f, g->kernel);
	fputs(",\n  \"ramdisk\": ", f);
	vmb__json_str(f, g->ramdisk);
	fputs(",\n  \"cmdline\": ", f);
	vmb__json_str(f, g->cmdline);
	fputs(",\n  \"cpus\": ", f);
	vmb__json_str(f, g->cpus);
	fputs(",\n  \"cpus_soft\": ", f);
	vmb__json_str(f, g->cpus_soft);
	fprintf(f, ",\n  \"tsc_mode\": %d,\n  \"timer_mode\": %d",
	    (int)g->tsc_mode, (int)g->timer_mode);
	fprintf(f, ",\n  \"on_poweroff\": \"%s\",\n  \"on_reboot\": \"%s\","
	    "\n  \"on_crash\": \"%s\",\n  \"on_watchdog\": \"%s\","
	    "\n  \"on_soft_reset\": \"%s\"",
	    vmb_action_name(g->on[VMB_SHUTDOWN_POWEROFF]),
	    vmb_action_name(g->on[VMB_SHUTDOWN_REBOOT]),
	    vmb_action_name(g->on[VMB_SHUTDOWN_CRASH]),
	    vmb_action_name(g->on[VMB_SHUTDOWN_WATCHDOG]),
	    vmb_action_name(g->on[VMB_SHUTDOWN_SOFT_RESET]));
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
		ranges_str(f, g->vnodes[i].vcpus, VMB_MAX_VCPUS);
		fputs(", \"vdistances\": [", f);
		for (uint32_t j = 0; j < g->nr_vnodes; j++)
			fprintf(f, "%s%u", j ? ", " : "",
			    g->vnodes[i].distances[j]);
		fputs("]}", f);
	}
	fputs(g->nr_vnodes ? "\n  ]" : "]", f);
	fputs(",\n  \"uuid\": ", f);
	if (vmb_uuid_is_null(g->uuid)) {
		fputs("null", f);
	} else {
		vmb_uuid_to_str(g->uuid, uuid);
		vmb__json_str(f, uuid);
	}
	rc = format_devices(f, g);
	fputs("\n}\n", f);
	if (fclose(f) != 0 || rc) {
		free(buf);
		return rc ? rc : -ENOMEM;
	}
	*ret_json = buf;
	return 0;
}
