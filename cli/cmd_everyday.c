/*
 * cmd_everyday.c - the everyday commands xl has: sched, rename, uptime,
 * dmesg, and cancel (of a task).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmctl.h"

/*
 * One call: `method` with params filled by fill(g, arg) (may be NULL),
 * reported as `what` on failure.  *ret_res is the result.
 */
static int
one_call(struct vmctl *ctl, const char *method, const char *what,
    void (*fill)(yajl_gen g, void *arg), void *arg, yajl_val *ret_res)
{
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_gen g;
	int rc;

	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	g = vmc_request(c, method);
	if (g && fill)
		fill(g, arg);
	rc = vmc_call(c, g, ret_res, &err);
	rc = rc != 0 ? vmc_report(ctl, what, rc, &err) : VMCTL_EXIT_OK;
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

/* A number for an option, in [min, max]: -1 after a usage error. */
static long long
opt_number(const struct vmctl_cmd *cmd, const char *opt, const char *arg,
    long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (!*arg || *end || errno || v < min || v > max) {
		vmctl_usage_error(cmd, "%s: '%s' is not a number in %lld..%lld",
		    opt, arg, min, max);
		return -1;
	}
	return v;
}

/* ------------------------------------------------------------------ */

struct sched_args {
	const char *vm;
	long long weight, cap;	/* -1: not given */
};

static void
fill_sched(yajl_gen g, void *arg)
{
	const struct sched_args *a = arg;

	gen_vm_ref(g, a->vm);
	if (a->weight >= 0)
		jg_kv_u64(g, P_WEIGHT, (uint64_t)a->weight);
	if (a->cap >= 0)
		jg_kv_u64(g, P_CAP, (uint64_t)a->cap);
}

int
cmd_sched(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ "weight", required_argument, NULL, 'w' },
		{ "cap", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	struct sched_args a = { NULL, -1, -1 };
	yajl_val res = NULL;
	char what[128];
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jhw:c:", opts, NULL)) != -1) {
		if (ch == 'w' && (a.weight = opt_number(cmd, "--weight", optarg,
		    1, 65535)) < 0)
			return VMCTL_EXIT_USAGE;
		else if (ch == 'c' && (a.cap = opt_number(cmd, "--cap", optarg,
		    0, 100LL * 4096)) < 0)
			return VMCTL_EXIT_USAGE;
		else if (ch != 'w' && ch != 'c' &&
		    (rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	a.vm = argv[optind];
	snprintf(what, sizeof(what), "sched %s", a.vm);
	rc = one_call(ctl, a.weight < 0 && a.cap < 0 ? M_VM_SCHED_GET :
	    M_VM_SCHED_SET, what, fill_sched, &a, &res);
	if (rc == VMCTL_EXIT_OK && ctl->json) {
		jprint(res, false);
	} else if (rc == VMCTL_EXIT_OK) {
		char id[32], w[32], c[32];

		/* As xl sched-credit2 lists a domain. */
		printf("%-20s %5s %6s %4s  %s\n", "Name", "ID", "Weight", "Cap",
		    "Scheduler");
		printf("%-20s %5s %6s %4s  %s\n", jstr(res, "vm"),
		    jtext(res, "id", id, sizeof(id)),
		    jtext(res, "weight", w, sizeof(w)),
		    jtext(res, "cap", c, sizeof(c)), jstr(res, "scheduler"));
	}
	yajl_tree_free(res);
	return rc;
}

/* ------------------------------------------------------------------ */

static void
fill_rename(yajl_gen g, void *arg)
{
	char **names = arg;

	gen_vm_ref(g, names[0]);
	jg_kv_str(g, P_NAME_NEW, names[1]);
}

int
cmd_rename(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	yajl_val res = NULL;
	char what[160];
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 2)) >= 0)
		return rc;
	if (!argv[optind][0] || !argv[optind + 1][0])
		return vmctl_usage_error(cmd, "empty VM name");
	snprintf(what, sizeof(what), "rename %s", argv[optind]);
	rc = one_call(ctl, M_VM_RENAME, what, fill_rename, &argv[optind],
	    &res);
	if (rc == VMCTL_EXIT_OK && ctl->json)
		jprint(res, false);
	else if (rc == VMCTL_EXIT_OK)
		printf("renamed %s to %s\n", argv[optind], jstr(res, "vm"));
	yajl_tree_free(res);
	return rc;
}

/* ------------------------------------------------------------------ */

/* xl uptime's form: "N days, H:MM:SS" or "H:MM:SS". */
static const char *
fmt_uptime(double secs, char *buf, size_t len)
{
	unsigned long long s = (unsigned long long)secs;
	unsigned long long d = s / 86400;

	if (d > 0)
		snprintf(buf, len, "%llu day%s, %2llu:%02llu:%02llu", d,
		    d == 1 ? "" : "s", s / 3600 % 24, s / 60 % 60, s % 60);
	else
		snprintf(buf, len, "%2llu:%02llu:%02llu", s / 3600, s / 60 % 60,
		    s % 60);
	return buf;
}

static void
fill_vm(yajl_gen g, void *arg)
{
	if (arg != NULL)
		gen_vm_ref(g, arg);
}

int
cmd_uptime(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *const hdr[] = { "Name", "ID", "Uptime" };
	yajl_val res = NULL, vms;
	struct table *t;
	char *vm = NULL;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if (argc - optind > 1)
		return vmctl_usage_error(cmd, "at most one VM");
	if (argc - optind == 1)
		vm = argv[optind];
	rc = one_call(ctl, M_VM_UPTIME, "uptime", fill_vm, vm, &res);
	if (rc != VMCTL_EXIT_OK || ctl->json) {
		if (rc == VMCTL_EXIT_OK)
			jprint(res, false);
		yajl_tree_free(res);
		return rc;
	}
	vms = jget(res, "vms");
	t = table_new(3, hdr);
	table_right(t, 1);
	for (size_t i = 0; YAJL_IS_ARRAY(vms) && i < vms->u.array.len; i++) {
		yajl_val x = vms->u.array.values[i];
		char id[32], up[64];
		double s;

		table_add(t, jstr(x, "name"), jtext(x, "id", id, sizeof(id)),
		    jnum(x, "uptime_seconds", &s) ? fmt_uptime(s, up,
		    sizeof(up)) : "unknown");
	}
	table_print(t, stdout, NULL);
	table_free(t);
	yajl_tree_free(res);
	return rc;
}

/* ------------------------------------------------------------------ */

static void
fill_clear(yajl_gen g, void *arg)
{
	jg_kv_bool(g, P_CLEAR, *(bool *)arg);
}

int
cmd_dmesg(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ "clear", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	yajl_val res = NULL;
	bool clear = false;
	const char *text;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jhc", opts, NULL)) != -1) {
		if (ch == 'c')
			clear = true;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	rc = one_call(ctl, M_HOST_DMESG, "dmesg", fill_clear, &clear, &res);
	if (rc == VMCTL_EXIT_OK && ctl->json) {
		jprint(res, false);
	} else if (rc == VMCTL_EXIT_OK && (text = jstr(res, "text")) != NULL) {
		fputs(text, stdout);
		if (*text && text[strlen(text) - 1] != '\n')
			putchar('\n');
	}
	yajl_tree_free(res);
	return rc;
}

/* ------------------------------------------------------------------ */

static void
fill_task(yajl_gen g, void *arg)
{
	jg_kv_u64(g, P_TASK, *(uint64_t *)arg);
}

int
cmd_cancel(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	yajl_val res = NULL;
	char what[64];
	long long id;
	uint64_t task;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	if ((id = opt_number(cmd, "TASK", argv[optind], 1, LLONG_MAX)) < 0)
		return VMCTL_EXIT_USAGE;
	task = (uint64_t)id;
	snprintf(what, sizeof(what), "cancel %llu", (unsigned long long)task);
	rc = one_call(ctl, M_TASK_CANCEL, what, fill_task, &task, &res);
	if (rc == VMCTL_EXIT_OK && ctl->json)
		jprint(res, false);
	else if (rc == VMCTL_EXIT_OK)
		printf("task %llu: cancel requested (%s); it undoes what it "
		    "did, see vmctl tasks\n", (unsigned long long)task,
		    jstr(res, "vm") ? jstr(res, "vm") : "-");
	yajl_tree_free(res);
	return rc;
}
