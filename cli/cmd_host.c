/*
 * cmd_host.c - the host commands: host, scrub (and scrub --wait), stats.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

#define SCRUB_POLL_MS	500
/* scrub --wait gives up when dirty memory has not shrunk for this long. */
#define SCRUB_STALL_S	120

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Parse a number of seconds for an option; -1 if not valid. */
static double
parse_secs(const char *s, double max)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !(d >= 0) || d > max)
		return -1;
	return d;
}

/* Sleep, but return early (true) on a signal. */
static bool
nap(double secs)
{
	struct timespec ts = { (time_t)secs,
		(long)((secs - (double)(time_t)secs) * 1e9) };

	while (nanosleep(&ts, &ts) < 0)
		if (errno != EINTR || vmctl_interrupted)
			return true;
	return vmctl_interrupted != 0;
}

/* Call a method without params on a fresh connection. */
static int
call0(struct vmctl *ctl, const char *what, const char *method,
    yajl_val *ret_res)
{
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	int rc;

	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	rc = vmc_call0(c, method, ret_res, &err);
	if (rc != 0)
		rc = vmc_report(ctl, what, rc, &err);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

static int
no_operands(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	return vmctl_operands(cmd, argc, argv, 0);
}

/* ------------------------------------------------------------------ */

/* "0-3,8" style for a list of CPU numbers, or the count of a list. */
static const char *
cpus_text(yajl_val v, char *buf, size_t len)
{
	size_t i, off = 0;
	double a, b, prev;

	if (YAJL_IS_NUMBER(v))
		return jtext(v, NULL, buf, len);
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len)
		return "-";
	buf[0] = '\0';
	for (i = 0; i < v->u.array.len && off + 16 < len;) {
		if (!jnum(v->u.array.values[i], NULL, &a))
			return "?";
		prev = a;
		for (i++; i < v->u.array.len &&
		    jnum(v->u.array.values[i], NULL, &b) && b == prev + 1; i++)
			prev = b;
		if (prev == a)
			off += (size_t)snprintf(buf + off, len - off, "%s%.0f",
			    off ? "," : "", a);
		else
			off += (size_t)snprintf(buf + off, len - off,
			    "%s%.0f-%.0f", off ? "," : "", a, prev);
	}
	return buf;
}

/*
 * The CPU topology, one row per CPU; a large host gets the counts only
 * (its per-node CPU ranges are in the node table already).
 */
static void
host_cpus(yajl_val cpus)
{
	static const char *const hdr[] = { "CPU", "NODE", "SOCKET", "CORE",
		"THREAD" };
	char a[16], b[16], c[16], d[16], e[16];
	struct table *t;
	yajl_val x;
	size_t i;

	if (!YAJL_IS_ARRAY(cpus) || cpus->u.array.len == 0)
		return;
	if (cpus->u.array.len > 64) {
		printf("\n%zu CPUs (vmctl --json host lists each)\n",
		    cpus->u.array.len);
		return;
	}
	t = table_new(5, hdr);
	for (i = 0; i < 5; i++)
		table_right(t, (int)i);
	for (i = 0; i < cpus->u.array.len; i++) {
		x = cpus->u.array.values[i];
		table_add(t, jtext(x, "cpu", a, sizeof(a)),
		    jtext(x, "node", b, sizeof(b)),
		    jtext(x, "socket", c, sizeof(c)),
		    jtext(x, "core", d, sizeof(d)),
		    jtext(x, "thread", e, sizeof(e)));
	}
	printf("\n");
	table_print(t, stdout, NULL);
	table_free(t);
}

/*
 * State records the daemon moved aside at start (they could never be
 * loaded): for the operator to look at, mend or remove.  Control
 * characters in them are shown as '?'.
 */
static void
put_plain(const char *s)
{
	for (const char *p = s ? s : "?"; *p; p++)
		putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
}

static void
host_quarantined(yajl_val q)
{

	if (!YAJL_IS_ARRAY(q) || q->u.array.len == 0)
		return;
	printf("\n%zu state record%s quarantined (in the state directory):\n",
	    q->u.array.len, q->u.array.len == 1 ? "" : "s");
	for (size_t i = 0; i < q->u.array.len; i++) {
		printf("  ");
		put_plain(jstr(q->u.array.values[i], "file"));
		printf(": ");
		put_plain(jstr(q->u.array.values[i], "reason"));
		printf("\n");
	}
}

int
cmd_host(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const char *const hdr[] = { "NODE", "CPUS", "TOTAL", "FREE",
		"USED" };
	yajl_val res = NULL, hello = NULL, nodes, n, x;
	char a[16], b[128], t1[32], t2[32], t3[32];
	uint64_t total, freeb;
	struct table *t = NULL;
	size_t i, w;
	int rc;

	if ((rc = no_operands(ctl, cmd, argc, argv)) >= 0)
		return rc;
	if ((rc = call0(ctl, "host", M_HOST_INFO, &res)) != VMCTL_EXIT_OK)
		goto out;
	if (ctl->json) {
		jprint(res, false);
		goto out;
	}
	/* The scalars first (CPUs, threads per core, totals...). */
	w = 11;
	for (i = 0; YAJL_IS_OBJECT(res) && i < res->u.object.len; i++)
		if (strlen(res->u.object.keys[i]) > w)
			w = strlen(res->u.object.keys[i]);
	/* The server's identity is a nicety: do without it on error. */
	if (call0(ctl, "host", M_SERVER_HELLO, &hello) == VMCTL_EXIT_OK) {
		const char *v = jstr(hello, "version");

		printf("%-*s vmbuildd %s\n", (int)w + 1, "daemon:",
		    v ? v : "?");
	}
	for (i = 0; YAJL_IS_OBJECT(res) && i < res->u.object.len; i++) {
		x = res->u.object.values[i];
		if (YAJL_IS_OBJECT(x) || YAJL_IS_ARRAY(x))
			continue;
		fmt_kv(res->u.object.keys[i], x, (int)w);
	}
	nodes = jget(res, "nodes");
	if (YAJL_IS_ARRAY(nodes)) {
		t = table_new(5, hdr);
		for (i = 1; i < 5; i++)
			table_right(t, (int)i);
		for (i = 0; i < nodes->u.array.len; i++) {
			n = nodes->u.array.values[i];
			x = jget(n, "cpus");
			if (!x)
				x = jget(n, "nr_cpus");
			total = freeb = 0;
			ju64(n, "total_bytes", &total);
			ju64(n, "free_bytes", &freeb);
			table_add(t, jtext(n, "node", a, sizeof(a)),
			    cpus_text(x, b, sizeof(b)),
			    fmt_size(total, t1, sizeof(t1)),
			    fmt_size(freeb, t2, sizeof(t2)),
			    fmt_size(total > freeb ? total - freeb : 0, t3,
			    sizeof(t3)));
		}
		printf("\n");
		table_print(t, stdout, NULL);
	}
	host_cpus(jget(res, "cpus"));
	host_quarantined(jget(res, "quarantined"));
out:
	table_free(t);
	yajl_tree_free(hello);
	yajl_tree_free(res);
	return rc;
}

/* ------------------------------------------------------------------ */

static const char *const scrub_keys[] = {
	"node", "total_bytes", "free_bytes", "dirty_bytes",
	"scrubbed_bytes_total", "scrub_rate_bytes_per_second",
	"boot_scrub_done",
};

static void
scrub_json(yajl_val nodes)
{
	yajl_gen g = jgen_new(false);
	size_t i, k;

	yajl_gen_map_open(g);
	jg_str(g, "nodes");
	yajl_gen_array_open(g);
	for (i = 0; i < nodes->u.array.len; i++) {
		yajl_gen_map_open(g);
		for (k = 0; k < sizeof(scrub_keys) / sizeof(*scrub_keys); k++)
			jg_kv_tree(g, scrub_keys[k],
			    jget(nodes->u.array.values[i], scrub_keys[k]));
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	jgen_print(g);
}

static const char *
opt_size(yajl_val n, const char *key, char *buf, size_t len)
{
	uint64_t v;

	return ju64(n, key, &v) ? fmt_size(v, buf, len) : "-";
}

static void
scrub_table(yajl_val nodes)
{
	static const char *const hdr[] = { "NODE", "TOTAL", "FREE", "DIRTY",
		"CLEAN", "CLEAN 1G", "SCRUBBED", "RATE", "BOOT SCRUB" };
	char a[16], b[32], c[32], d[32], e[16], f[32], g[32], h[32];
	uint64_t freeb, dirty, rate;
	struct table *t = table_new(9, hdr);
	bool boot;
	yajl_val n;
	size_t i;

	for (i = 1; i < 8; i++)
		table_right(t, (int)i);
	for (i = 0; i < nodes->u.array.len; i++) {
		n = nodes->u.array.values[i];
		if (ju64(n, "free_bytes", &freeb) &&
		    ju64(n, "dirty_bytes", &dirty))
			fmt_pct((double)(freeb - (dirty < freeb ? dirty : freeb)),
			    (double)freeb, e, sizeof(e));
		else
			snprintf(e, sizeof(e), "-");
		table_add(t, jtext(n, "node", a, sizeof(a)),
		    opt_size(n, "total_bytes", b, sizeof(b)),
		    opt_size(n, "free_bytes", c, sizeof(c)),
		    opt_size(n, "dirty_bytes", d, sizeof(d)), e,
		    opt_size(n, "clean_1g_bytes", h, sizeof(h)),
		    opt_size(n, "scrubbed_bytes_total", f, sizeof(f)),
		    ju64(n, "scrub_rate_bytes_per_second", &rate) ?
		    fmt_rate((double)rate, g, sizeof(g)) : "-",
		    !jbool(n, "boot_scrub_done", &boot) ? "unavailable" :
		    boot ? "done" : "running");
	}
	table_print(t, stdout, NULL);
	table_free(t);
}

/* Sum of dirty bytes; false when a node does not report it. */
static bool
dirty_sum(yajl_val nodes, uint64_t *ret)
{
	uint64_t sum = 0, d;
	size_t i;

	for (i = 0; i < nodes->u.array.len; i++) {
		if (!ju64(nodes->u.array.values[i], "dirty_bytes", &d))
			return false;
		sum += d;
	}
	*ret = sum;
	return true;
}

/*
 * Node of dirty memory that no background scrubber serves (workers 0, as
 * with hvsim --scrub-workers 0): that memory is scrubbed only when an
 * allocation takes it, so waiting for it would never end.  -1 if none.
 */
static long
dirty_unserved(yajl_val nodes)
{
	uint64_t d, w, node;
	size_t i;

	for (i = 0; i < nodes->u.array.len; i++) {
		yajl_val n = nodes->u.array.values[i];

		if (ju64(n, "dirty_bytes", &d) && d > 0 &&
		    ju64(n, "workers", &w) && w == 0 &&
		    ju64(n, "node", &node))
			return (long)node;
	}
	return -1;
}

static int
scrub_fetch(struct vmctl *ctl, struct vmc_client *c, yajl_val *ret_res,
    yajl_val *ret_nodes)
{
	struct vmc_error err = { 0 };
	int rc;

	rc = vmc_call0(c, M_HOST_SCRUB, ret_res, &err);
	if (rc != 0) {
		rc = vmc_report(ctl, "scrub", rc, &err);
		vmc_error_done(&err);
		return rc;
	}
	*ret_nodes = jget(*ret_res, "nodes");
	if (!YAJL_IS_ARRAY(*ret_nodes)) {
		vmctl_warnx("scrub: the daemon's reply has no \"nodes\" list");
		return VMCTL_EXIT_UNREACHABLE;
	}
	return VMCTL_EXIT_OK;
}

int
cmd_scrub(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "wait", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct progress *bar = NULL;
	yajl_val res = NULL, nodes = NULL;
	uint64_t dirty, most = 0, least;
	double timeout = 0, start, last_drop;
	bool wait = false;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "wjh", opts, NULL)) != -1) {
		if (ch == 'w') {
			wait = true;
		} else if (ch == 't') {
			timeout = parse_secs(optarg, 1e7);
			if (timeout < 0)
				return vmctl_usage_error(cmd,
				    "--timeout wants seconds, not '%s'", optarg);
		} else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0) {
			return rc;
		}
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	if ((rc = scrub_fetch(ctl, c, &res, &nodes)) != VMCTL_EXIT_OK)
		goto out;
	if (wait) {
		if (!dirty_sum(nodes, &dirty)) {
			vmctl_warnx("scrub --wait: the hypervisor does not "
			    "report dirty memory per node (code %d)",
			    E_UNAVAILABLE);
			rc = VMCTL_EXIT_ERROR;
			goto out;
		}
		vmctl_catch_signals();
		if (!ctl->json)
			bar = progress_new(isatty(STDERR_FILENO));
		start = last_drop = now_s();
		least = dirty;
		while (dirty > 0) {
			long idle = dirty_unserved(nodes);

			if (idle >= 0) {
				progress_end(bar);
				vmctl_warnx("scrub --wait: node %ld has dirty "
				    "memory and no scrub workers; it is "
				    "scrubbed only when allocated", idle);
				rc = VMCTL_EXIT_ERROR;
				goto out;
			}
			if (dirty > most)
				most = dirty;
			if (dirty < least) {
				least = dirty;
				last_drop = now_s();
			}
			if (now_s() - last_drop > SCRUB_STALL_S) {
				progress_end(bar);
				vmctl_warnx("scrub --wait: dirty memory has not "
				    "shrunk for %d s; is the scrubber running?",
				    SCRUB_STALL_S);
				rc = VMCTL_EXIT_ERROR;
				goto out;
			}
			progress_update(bar, "scrub", most - dirty, most,
			    "bytes");
			if (timeout > 0 && now_s() - start > timeout) {
				progress_end(bar);
				vmctl_warnx("scrub --wait: %.0f s passed and "
				    "memory is still dirty", timeout);
				rc = VMCTL_EXIT_ERROR;
				goto out;
			}
			if (nap(SCRUB_POLL_MS / 1000.0)) {
				progress_end(bar);
				vmctl_warnx("scrub --wait: interrupted");
				rc = 130;
				goto out;
			}
			yajl_tree_free(res);
			res = NULL;
			if ((rc = scrub_fetch(ctl, c, &res, &nodes)) !=
			    VMCTL_EXIT_OK)
				goto out;
			if (!dirty_sum(nodes, &dirty)) {
				rc = VMCTL_EXIT_UNREACHABLE;
				goto out;
			}
		}
		if (most)
			progress_update(bar, "scrub", most, most, "bytes");
		progress_end(bar);
	}
	if (ctl->json)
		scrub_json(nodes);
	else
		scrub_table(nodes);
	rc = VMCTL_EXIT_OK;
out:
	progress_free(bar);
	yajl_tree_free(res);
	vmc_close(c);
	return rc;
}

/* ------------------------------------------------------------------ */

/*
 * `vmctl stats` shows host.counters as the daemon sends it: its groups
 * and counters, in its order (libvmbuild's counters.def), so a counter
 * added there needs nothing here.
 */
#define NR_GROUPS(v)	(YAJL_IS_OBJECT(v) ? (v)->u.object.len : 0)
#define GROUP(v, i)	((v)->u.object.keys[i])

/* b - a per second, recursively over matching numeric leaves. */
static void
gen_rates(yajl_gen g, yajl_val a, yajl_val b, double dt)
{
	double x, y;
	size_t i;

	if (YAJL_IS_OBJECT(b)) {
		yajl_gen_map_open(g);
		for (i = 0; i < b->u.object.len; i++) {
			jg_str(g, b->u.object.keys[i]);
			gen_rates(g, jget(a, b->u.object.keys[i]),
			    b->u.object.values[i], dt);
		}
		yajl_gen_map_close(g);
	} else if (jnum(a, NULL, &x) && jnum(b, NULL, &y) && dt > 0) {
		yajl_gen_double(g, (y - x) / dt);
	} else {
		yajl_gen_null(g);
	}
}

/* One row per numeric leaf: GROUP, COUNTER (dotted path), VALUE, RATE. */
static void
stats_rows(struct table *t, const char *group, const char *prefix,
    yajl_val a, yajl_val b, double dt)
{
	char name[128], val[64], rate[32];
	double x, y;
	size_t i;

	for (i = 0; YAJL_IS_OBJECT(b) && i < b->u.object.len; i++) {
		yajl_val bv = b->u.object.values[i];
		yajl_val av = jget(a, b->u.object.keys[i]);

		snprintf(name, sizeof(name), "%s%s%s", prefix,
		    prefix[0] ? "." : "", b->u.object.keys[i]);
		if (YAJL_IS_OBJECT(bv)) {
			stats_rows(t, group, name, av, bv, dt);
			continue;
		}
		jtext(bv, NULL, val, sizeof(val));
		if (YAJL_IS_NULL(bv) || !bv)
			snprintf(val, sizeof(val), "unavailable");
		if (jnum(bv, NULL, &y) && strstr(name, "bytes") &&
		    !strstr(name, "per_second"))
			fmt_size((uint64_t)y, val, sizeof(val));
		rate[0] = '\0';
		if (dt > 0 && jnum(av, NULL, &x) && jnum(bv, NULL, &y) &&
		    !strstr(name, "per_second")) {
			if (strstr(name, "bytes"))
				fmt_rate((y - x) / dt, rate, sizeof(rate));
			else
				fmt_count_rate((y - x) / dt, rate,
				    sizeof(rate));
		}
		table_add(t, group, name, val, rate);
		group = "";
	}
}

int
cmd_stats(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "interval", required_argument, NULL, 'i' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *const hdr[] = { "GROUP", "COUNTER", "VALUE",
		"RATE" };
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val first = NULL, second = NULL, x;
	double interval = 1, t0 = 0, dt = 0;
	bool explicit_interval = false;
	struct table *t = NULL;
	yajl_gen g;
	size_t i;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "i:jh", opts, NULL)) != -1) {
		if (ch == 'i') {
			interval = parse_secs(optarg, 3600);
			if (interval < 0)
				return vmctl_usage_error(cmd,
				    "--interval wants seconds, not '%s'",
				    optarg);
			explicit_interval = true;
		} else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0) {
			return rc;
		}
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	/* --json alone takes one sample: scripts want the counters now. */
	if (ctl->json && !explicit_interval)
		interval = 0;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	rc = vmc_call0(c, M_HOST_COUNTERS, &first, &err);
	if (rc != 0) {
		rc = vmc_report(ctl, "stats", rc, &err);
		goto out;
	}
	t0 = now_s();
	if (interval > 0) {
		vmctl_catch_signals();
		if (nap(interval)) {
			rc = 130;
			goto out;
		}
		rc = vmc_call0(c, M_HOST_COUNTERS, &second, &err);
		if (rc != 0) {
			rc = vmc_report(ctl, "stats", rc, &err);
			goto out;
		}
		dt = now_s() - t0;
	} else {
		second = first;
		first = NULL;
	}
	if (ctl->json) {
		g = jgen_new(false);
		yajl_gen_map_open(g);
		for (i = 0; i < NR_GROUPS(second); i++)
			jg_kv_tree(g, GROUP(second, i),
			    second->u.object.values[i]);
		if (dt > 0) {
			jg_str(g, "interval_seconds");
			yajl_gen_double(g, dt);
			jg_str(g, "rates");
			yajl_gen_map_open(g);
			for (i = 0; i < NR_GROUPS(second); i++) {
				jg_str(g, GROUP(second, i));
				gen_rates(g, jget(first, GROUP(second, i)),
				    second->u.object.values[i], dt);
			}
			yajl_gen_map_close(g);
		}
		yajl_gen_map_close(g);
		jgen_print(g);
		rc = VMCTL_EXIT_OK;
		goto out;
	}
	t = table_new(4, hdr);
	table_right(t, 2);
	table_right(t, 3);
	for (i = 0; i < NR_GROUPS(second); i++) {
		x = second->u.object.values[i];
		if (!YAJL_IS_OBJECT(x)) {
			table_add(t, GROUP(second, i), "-", "unavailable", "");
			continue;
		}
		stats_rows(t, GROUP(second, i), "",
		    jget(first, GROUP(second, i)), x, dt);
	}
	table_print(t, stdout, NULL);
	if (dt > 0)
		printf("(rates over %.1f s)\n", dt);
	rc = VMCTL_EXIT_OK;
out:
	table_free(t);
	yajl_tree_free(first);
	yajl_tree_free(second);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}
