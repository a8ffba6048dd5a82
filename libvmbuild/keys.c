/*
 * keys.c - the keys of keys.def: the parser's table, one setter per
 * kind of key, and vmb_guest_set(), the one way a value gets into a
 * guest description.
 *
 * Both front ends go through here: config.c feeds it the keys of an
 * xl.cfg file, the daemon the members of a JSON guest description.  So a
 * value is checked the same way whichever way it came, and every error
 * names where it came from (file or "request", line, key).  The list
 * keys (vnuma, disk, vif) are read in keys_list.c, the xl keys vmbuild
 * does not implement in unsupported.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

#define VMB_STRING_MAX		4096		/* paths and command lines */

/* ------------------------------------------------------------------ */
/* Value access.                                                       */

const char *
vmb__value_type_name(const struct vmb_value *v)
{
	switch (v->type) {
	case VMB_VALUE_STRING:	return "a string";
	case VMB_VALUE_INT:	return "a number";
	case VMB_VALUE_LIST:	return "a list";
	}
	return "?";
}

/* A string value (xl.cfg quotes it); numbers and lists are errors. */
int
vmb__get_string(const struct vmb__key *k, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags, const char **ret)
{
	if (v->type != VMB_VALUE_STRING || !v->u.s)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a string, got %s", vmb__value_type_name(v));
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
int
vmb__get_int(const struct vmb__key *k, const struct vmb_value *v, long long min,
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
		    "expected an integer, got %s", vmb__value_type_name(v));
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

/*
 * The one check of a guest's name: the configuration's "name" and the
 * state records the daemon loads use it.
 */
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
set_name(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	char why[80];
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (vmb_name_check(s, why, sizeof(why)) < 0)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%s", why);
	snprintf(g->name, sizeof(g->name), "%s", s);
	return 0;
}

static int
set_type(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!strcmp(s, "pvh") || !strcmp(s, "hvm")) {
		g->type = !strcmp(s, "hvm") ? VMB_GUEST_HVM : VMB_GUEST_PVH;
		return 0;
	}
	if (!strcmp(s, "pv"))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "type \"pv\" is not supported by vmbuild (\"pvh\" or "
		    "\"hvm\")");
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
	    "unknown type \"%.32s\" (expected \"pvh\" or \"hvm\")", s);
}

static int
set_mib(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = vmb__get_int(k, v, 1, (long long)VMB_MEMORY_MAX_MIB, where, diags,
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
set_vcpus(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = vmb__get_int(k, v, 1, VMB_MAX_VCPUS, where, diags, &x);

	if (rc)
		return rc;
	if (k->key == VMB_KEY_VCPUS)
		g->vcpus = (uint32_t)x;
	else
		g->maxvcpus = (uint32_t)x;
	return 0;
}

/*
 * max_event_channels: the guest's highest event channel port (Xen's
 * max_evtchn_port, as libxl passes it), from the two the toolstack
 * takes itself (xenstore, console) to the FIFO ABI's limit.
 */
static int
set_evtchn(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = vmb__get_int(k, v, VMB_MIN_EVENT_CHANNELS, VMB_MAX_EVENT_CHANNELS,
	    where, diags, &x);

	if (rc)
		return rc;
	g->max_event_channels = (uint32_t)x;
	return 0;
}

/*
 * max_grant_frames, max_maptrack_frames: Xen checks them against its
 * own limits (gnttab_max_frames=, gnttab_max_maptrack_frames=) when the
 * domain is created; here only that they are a sane count.
 */
static int
set_frames(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = vmb__get_int(k, v, 1, VMB_MAX_GRANT_FRAMES, where, diags, &x);

	if (rc)
		return rc;
	if (k->key == VMB_KEY_MAX_GRANT_FRAMES)
		g->max_grant_frames = (uint32_t)x;
	else
		g->max_maptrack_frames = (uint32_t)x;
	return 0;
}

/*
 * cpu_weight (1..65535) and cap (percent of one CPU, 0: none): the
 * scheduler's, as xl takes them; cap's bound by the vCPUs is checked
 * with the whole guest (vmb_guest_check).
 */
static int
set_sched(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	bool weight = k->key == VMB_KEY_CPU_WEIGHT;
	long long x;
	int rc = vmb__get_int(k, v, weight ? 1 : 0, weight ? VMB_SCHED_WEIGHT_MAX :
	    100ll * VMB_MAX_VCPUS, where, diags, &x);

	if (rc)
		return rc;
	if (weight)
		g->cpu_weight = (uint32_t)x;
	else
		g->cap = (uint32_t)x;
	return 0;
}

static int
set_path(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!*s)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "empty path");
	if (k->key == VMB_KEY_KERNEL && g->grub_line)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "bootloader = \"grub\" (line %d) is the kernel already: "
		    "give one of them", g->grub_line);
	return replace_string(k->key == VMB_KEY_KERNEL ? &g->kernel :
	    &g->ramdisk, s);
}

static int
set_cmdline(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	/* xl: cmdline wins over extra whichever comes first. */
	if (k->key == VMB_KEY_EXTRA && (g->keys_set & (1ull << VMB_KEY_CMDLINE)))
		return vmb__diag_add(diags, VMB_WARNING, where, v->line,
		    k->name, "ignored: cmdline is set");
	if (k->key == VMB_KEY_CMDLINE && (g->keys_set & (1ull << VMB_KEY_EXTRA)))
		vmb__diag_add(diags, VMB_WARNING, where,
		    g->key_line[VMB_KEY_EXTRA], "extra",
		    "ignored: cmdline is set");
	return replace_string(&g->cmdline, s);
}

/* root: kept apart; vmb_guest_check composes the command line as xl. */
static int
set_root(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!*s)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "empty (leave root out for no root=)");
	return replace_string(&g->root, s);
}

/*
 * cpus, cpus_soft: xl's CPU list syntax (vmb__cpus_parse), checked here,
 * resolved against the host at build time.  When cpus= names nodes only
 * ("nodes:0-1", "node:1"), node_mask keeps them: placement then spreads
 * memory over those nodes.  Per-vCPU lists are refused.
 */
static int
set_cpus(struct vmb_guest *g, const struct vmb__key *k,
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
	rc = vmb__get_string(k, v, where, diags, &s);
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
set_hap(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	long long x;
	int rc = vmb__get_int(k, v, 0, 1, where, diags, &x);

	if (rc)
		return rc;
	g->hap = x != 0;
	return 0;
}

static int
set_uuid(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

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
set_mode(struct vmb_guest *g, const struct vmb__key *k,
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
set_action(struct vmb_guest *g, const struct vmb__key *k,
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
	int rc = vmb__get_string(k, v, where, diags, &s);

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

/*
 * The table of keys.def, indexed by enum vmb_key.  A field that is a
 * char * (not an array) is a string the guest owns: guest.c copies and
 * frees it.
 */
#define FIELD_OWNED(field) _Generic(&((struct vmb_guest *)0)->field, \
	char **: true, default: false)
const struct vmb__key vmb__keys[VMB_KEY_MAX] = {
#define VMB_KEY(id, xl, field, kind_, unit_, def_, daemon_, set_, json_, \
    form_, man_) \
	[VMB_KEY_##id] = { .name = xl, .key = VMB_KEY_##id, \
	    .kind = VMB__KIND_##kind_, .unit = unit_, .def = def_, \
	    .daemon = daemon_, .set = set_, .json = json_, \
	    .form = VMB_FORM_##form_, .man = man_, \
	    .offset = offsetof(struct vmb_guest, field), \
	    .size = sizeof(((struct vmb_guest *)0)->field), \
	    .owned = FIELD_OWNED(field) },
#include "keys.def"
#undef VMB_KEY
};
#undef FIELD_OWNED

/* keys_set has a bit per key. */
_Static_assert(VMB_KEY_MAX <= 64, "guest->keys_set holds 64 keys");

/*
 * A new guest's values of the keys with a default: each through its
 * setter, as if written in xl.cfg, but not marked as set.
 */
int
vmb__keys_default(struct vmb_guest *g)
{
	for (size_t i = 0; i < VMB_KEY_MAX; i++) {
		const struct vmb__key *k = &vmb__keys[i];
		struct vmb_value v = { .type = VMB_VALUE_STRING };
		int rc;

		if (!k->def)
			continue;
		v.u.s = k->def;
		rc = k->set(g, k, &v, "keys.def", NULL);
		if (rc)
			return rc;
	}
	return 0;
}

int
vmb_guest_set(struct vmb_guest *guest, const char *key,
    const struct vmb_value *value, const char *where, struct vmb_diags *diags)
{
	const struct vmb__unsupported *u;
	const char *best = NULL;
	size_t bestd = 3;
	int rc;

	if (!guest || !key || !value)
		return -EINVAL;
	if (!where)
		where = "request";
	for (size_t i = 0; i < VMB_KEY_MAX; i++) {
		const struct vmb__key *k = &vmb__keys[i];

		if (strcmp(key, k->name) != 0)
			continue;
		rc = k->set(guest, k, value, where, diags);
		guest->keys_given |= 1ull << k->key;
		guest->key_line[k->key] = value->line;
		if (rc == 0) {
			guest->keys_set |= 1ull << k->key;
			guest->key_line[k->key] = value->line;
		}
		return rc;
	}
	if ((u = vmb__unsupported_find(key)) != NULL)
		return vmb__unsupported_set(guest, u, value, where, diags);
	for (size_t i = 0; i < VMB_KEY_MAX; i++) {
		size_t d = vmb_edit_distance(key, vmb__keys[i].name);

		if (d < bestd) {
			bestd = d;
			best = vmb__keys[i].name;
		}
	}
	if (best) {
		/*
		 * A misspelt key is its intended one given badly: one
		 * mistake, one error, not also "memory: missing".
		 */
		for (size_t i = 0; i < VMB_KEY_MAX; i++)
			if (vmb__keys[i].name == best &&
			    !(guest->keys_given & (1ull << i))) {
				guest->keys_given |= 1ull << i;
				guest->key_line[i] = value->line;
			}
		return vmb__diag_add(diags, VMB_ERROR, where, value->line, key,
		    "unknown key (did you mean \"%s\"?)", best);
	}
	return vmb__diag_add(diags, VMB_ERROR, where, value->line, key,
	    "unknown key");
}

/* The public view of the table (vmbuild.h), for the daemon's JSON. */
const struct vmb_key_desc *
vmb_key_desc(enum vmb_key key)
{
	static const struct vmb_key_desc desc[VMB_KEY_MAX] = {
#define VMB_KEY(id, xl_, field, kind_, unit_, def_, daemon_, set_, json_, \
    form_, man_) \
	[VMB_KEY_##id] = { .xl = xl_, .member = json_, \
	    .form = VMB_FORM_##form_, \
	    .offset = offsetof(struct vmb_guest, field), \
	    .size = sizeof(((struct vmb_guest *)0)->field), \
	    .owned = _Generic(&((struct vmb_guest *)0)->field, \
	    char **: true, default: false) },
#include "keys.def"
#undef VMB_KEY
	};

	return (unsigned)key < VMB_KEY_MAX ? &desc[key] : NULL;
}

void *
vmb_guest_field(struct vmb_guest *g, enum vmb_key key)
{
	return (unsigned)key < VMB_KEY_MAX ?
	    (char *)g + vmb__keys[key].offset : NULL;
}

const void *
vmb_guest_field_const(const struct vmb_guest *g, enum vmb_key key)
{
	return (unsigned)key < VMB_KEY_MAX ?
	    (const char *)g + vmb__keys[key].offset : NULL;
}
