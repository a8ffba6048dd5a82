/*
 * cmd_watch.c - views that follow the daemon over time: top, events,
 * and the task list.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sum of the numeric leaves under v (a counter, or one split by cause). */
static bool
sum_leaves(yajl_val v, double *ret)
{
	bool any = false;
	double d, sum = 0;
	size_t i;

	if (jnum(v, NULL, &d)) {
		*ret = d;
		return true;
	}
	for (i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++)
		if (sum_leaves(v->u.object.values[i], &d)) {
			sum += d;
			any = true;
		}
	if (any)
		*ret = sum;
	return any;
}

/* ------------------------------------------------------------------ */

struct top_sample {
	double	t;
	bool	have_flush, have_filtered, have_unshadow;
	double	flushes, filtered, unshadow;
};

static void
top_sample_take(yajl_val counters, struct top_sample *s)
{
	s->t = now_s();
	s->have_flush = sum_leaves(jpath(counters, "tlb_flushes", "issued",
	    NULL), &s->flushes);
	s->have_filtered = sum_leaves(jpath(counters, "tlb_flushes",
	    "filtered", NULL), &s->filtered);
	s->have_unshadow = sum_leaves(jget(counters, "unshadow"),
	    &s->unshadow);
}

static const char *
rate_text(bool ha, double a, bool hb, double b, double dt, char *buf,
    size_t len)
{
	if (!ha || !hb)
		return "unavailable";
	if (dt <= 0)
		return "-";
	return fmt_count_rate((b - a) / dt, buf, len);
}

/* One screen (or one snapshot) of top, written to `out`. */
static void
top_render(FILE *out, yajl_val vms, yajl_val nodes,
    const struct top_sample *a, const struct top_sample *b)
{
	static const char *const vh[] = { "ID", "NAME", "STATE", "MEMORY",
		"VCPUS", "NODES" };
	static const char *const nh[] = { "NODE", "TOTAL", "FREE", "DIRTY",
		"SCRUB RATE" };
	char c1[32], c2[32], c3[32], c4[32], c5[128], r1[32], r2[32], r3[32];
	double dt = b->t - a->t;
	struct table *t;
	yajl_val x, ns;
	uint64_t u;
	size_t i, j, off;
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	fprintf(out, "vmctl top  %02d:%02d:%02d   TLB flushes %s, filtered "
	    "%s   unshadows %s\n\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
	    rate_text(a->have_flush, a->flushes, b->have_flush, b->flushes,
	    dt, r1, sizeof(r1)),
	    rate_text(a->have_filtered, a->filtered, b->have_filtered,
	    b->filtered, dt, r2, sizeof(r2)),
	    rate_text(a->have_unshadow, a->unshadow, b->have_unshadow,
	    b->unshadow, dt, r3, sizeof(r3)));

	t = table_new(5, nh);
	for (i = 1; i < 5; i++)
		table_right(t, (int)i);
	for (i = 0; YAJL_IS_ARRAY(nodes) && i < nodes->u.array.len; i++) {
		x = nodes->u.array.values[i];
		table_add(t, jtext(x, "node", c1, sizeof(c1)),
		    ju64(x, "total_bytes", &u) ? fmt_size(u, c2, sizeof(c2)) :
		    "-",
		    ju64(x, "free_bytes", &u) ? fmt_size(u, c3, sizeof(c3)) :
		    "-",
		    ju64(x, "dirty_bytes", &u) ? fmt_size(u, c4, sizeof(c4)) :
		    "-",
		    ju64(x, "scrub_rate_bytes_per_second", &u) ?
		    fmt_rate((double)u, c5, sizeof(c5)) : "-");
	}
	table_print(t, out, NULL);
	table_free(t);
	fprintf(out, "\n");

	t = table_new(6, vh);
	table_right(t, 0);
	table_right(t, 3);
	table_right(t, 4);
	for (i = 0; YAJL_IS_ARRAY(vms) && i < vms->u.array.len; i++) {
		x = vms->u.array.values[i];
		ns = jget(x, "nodes");
		c5[0] = '\0';
		for (j = 0, off = 0; YAJL_IS_ARRAY(ns) && j < ns->u.array.len &&
		    off + 12 < sizeof(c5); j++) {
			yajl_val n = ns->u.array.values[j];

			off += (size_t)snprintf(c5 + off, sizeof(c5) - off,
			    "%s%s", j ? "," : "", jtext(YAJL_IS_OBJECT(n) ?
			    jget(n, "node") : n, NULL, r1, sizeof(r1)));
		}
		table_add(t, jtext(x, "id", c1, sizeof(c1)),
		    jstr(x, "name"), jstr(x, "state"),
		    ju64(x, "memory_bytes", &u) ? fmt_size(u, c2, sizeof(c2)) :
		    "-", jtext(x, "vcpus", c3, sizeof(c3)), c5[0] ? c5 : "-");
	}
	table_print(t, out, NULL);
	table_free(t);
}

static void
top_json(yajl_val vms, yajl_val nodes, const struct top_sample *a,
    const struct top_sample *b)
{
	double dt = b->t - a->t;
	yajl_gen g = jgen_new(false);

	yajl_gen_map_open(g);
	jg_kv_i64(g, "time", (long long)time(NULL));
	jg_kv_tree(g, "vms", vms);
	jg_kv_tree(g, "nodes", nodes);
	jg_str(g, "rates");
	yajl_gen_map_open(g);
	jg_str(g, "tlb_flushes_issued_per_second");
	if (a->have_flush && b->have_flush && dt > 0)
		yajl_gen_double(g, (b->flushes - a->flushes) / dt);
	else
		yajl_gen_null(g);
	jg_str(g, "tlb_flushes_filtered_per_second");
	if (a->have_filtered && b->have_filtered && dt > 0)
		yajl_gen_double(g, (b->filtered - a->filtered) / dt);
	else
		yajl_gen_null(g);
	jg_str(g, "unshadow_per_second");
	if (a->have_unshadow && b->have_unshadow && dt > 0)
		yajl_gen_double(g, (b->unshadow - a->unshadow) / dt);
	else
		yajl_gen_null(g);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	jgen_print(g);
}

static struct termios saved_tio;
static bool tio_saved;

static void
tty_restore(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		tio_saved = false;
	}
	fputs("\033[?25h", stdout);	/* cursor back */
	fflush(stdout);
}

/* Keys without Enter and without echo, so that 'q' quits at once. */
static void
tty_raw(void)
{
	struct termios tio;

	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return;
	tio_saved = true;
	tio = saved_tio;
	tio.c_lflag &= (tcflag_t)~(ICANON | ECHO);
	tio.c_cc[VMIN] = 0;
	tio.c_cc[VTIME] = 0;
	tcsetattr(STDIN_FILENO, TCSANOW, &tio);
}

/* Wait `secs` for a key; true when the user asked to quit. */
static bool
top_wait(double secs, bool keys)
{
	double end = now_s() + secs, left;
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char ch;
	int r;

	while (!vmctl_interrupted && (left = end - now_s()) > 0) {
		if (!keys) {
			struct timespec ts = { (time_t)left,
				(long)((left - (double)(time_t)left) * 1e9) };

			nanosleep(&ts, NULL);
			continue;
		}
		r = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (r > 0) {
			if (read(STDIN_FILENO, &ch, 1) == 1 &&
			    (ch == 'q' || ch == 'Q' || ch == 3))
				return true;
			if (r > 0 && (pfd.revents & (POLLHUP | POLLERR)))
				keys = false;
		}
	}
	return vmctl_interrupted != 0;
}

static int
top_fetch(struct vmctl *ctl, struct vmc_client *c, const char *method,
    yajl_val *ret)
{
	struct vmc_error err = { 0 };
	int rc = vmc_call0(c, method, ret, &err);

	if (rc != 0)
		rc = vmc_report(ctl, "top", rc, &err);
	vmc_error_done(&err);
	return rc;
}

int
cmd_top(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "iterations", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct top_sample prev = { 0 }, cur = { 0 };
	yajl_val vl = NULL, sc = NULL, co = NULL;
	long iterations = -1, n;
	double delay = 1;
	bool live, keys;
	char *end, *frame = NULL;
	size_t framelen = 0;
	FILE *mem;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "n:d:jh", opts, NULL)) != -1) {
		if (ch == 'n') {
			errno = 0;
			iterations = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || iterations < 1)
				return vmctl_usage_error(cmd,
				    "--iterations wants a count >= 1, not '%s'",
				    optarg);
		} else if (ch == 'd') {
			errno = 0;
			delay = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(delay >= 0.1) ||
			    delay > 3600)
				return vmctl_usage_error(cmd,
				    "--delay wants seconds in [0.1, 3600], not "
				    "'%s'", optarg);
		} else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0) {
			return rc;
		}
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	live = !ctl->json && isatty(STDOUT_FILENO);
	keys = live && isatty(STDIN_FILENO);
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	vmctl_catch_signals();
	if (keys)
		tty_raw();
	if (live)
		fputs("\033[?25l", stdout);	/* no cursor flicker */
	/*
	 * Snapshots (not a terminal) start with a counter sample one delay
	 * old, so that even the first one shows rates.
	 */
	if (!live) {
		if ((rc = top_fetch(ctl, c, M_HOST_COUNTERS, &co)))
			goto out;
		top_sample_take(co, &cur);
		if (top_wait(delay, false))
			goto out;
	}
	for (n = 0; iterations < 0 || n < iterations; n++) {
		yajl_tree_free(vl);
		yajl_tree_free(sc);
		yajl_tree_free(co);
		vl = sc = co = NULL;
		if ((rc = top_fetch(ctl, c, M_VM_LIST, &vl)) ||
		    (rc = top_fetch(ctl, c, M_HOST_SCRUB, &sc)) ||
		    (rc = top_fetch(ctl, c, M_HOST_COUNTERS, &co)))
			goto out;
		prev = cur;
		top_sample_take(co, &cur);
		if (n == 0 && live)
			prev = cur;
		if (ctl->json) {
			top_json(jget(vl, "vms"), jget(sc, "nodes"), &prev,
			    &cur);
		} else {
			mem = open_memstream(&frame, &framelen);
			if (!mem) {
				rc = VMCTL_EXIT_ERROR;
				goto out;
			}
			if (live)
				fputs("\033[H\033[J", mem);
			else if (n)
				fputs("\n", mem);
			top_render(mem, jget(vl, "vms"), jget(sc, "nodes"),
			    &prev, &cur);
			if (live)
				fputs("\n(q or Ctrl-C quits)\n", mem);
			fclose(mem);
			fwrite(frame, 1, framelen, stdout);
			fflush(stdout);
			free(frame);
			frame = NULL;
		}
		if (iterations >= 0 && n + 1 >= iterations)
			break;
		if (top_wait(delay, keys))
			break;
	}
	rc = VMCTL_EXIT_OK;
out:
	if (live || keys)
		tty_restore();
	yajl_tree_free(vl);
	yajl_tree_free(sc);
	yajl_tree_free(co);
	vmc_close(c);
	return rc;
}

/* ------------------------------------------------------------------ */

/* "a=1 b.c=2": the scalars of a notification's params on one line. */
static void
print_flat(yajl_val v, const char *prefix)
{
	char key[128], buf[256];
	size_t i;

	if (YAJL_IS_OBJECT(v)) {
		for (i = 0; i < v->u.object.len; i++) {
			snprintf(key, sizeof(key), "%s%s%s", prefix,
			    prefix[0] ? "." : "", v->u.object.keys[i]);
			print_flat(v->u.object.values[i], key);
		}
		return;
	}
	if (YAJL_IS_ARRAY(v)) {
		/* e.g. scrub.progress: nodes=[{node=0 dirty_bytes=...} ...] */
		printf(" %s=[", prefix);
		for (i = 0; i < v->u.array.len; i++) {
			yajl_val x = v->u.array.values[i];
			size_t k;

			if (!YAJL_IS_OBJECT(x)) {
				printf("%s%s", i ? " " : "",
				    jtext(x, NULL, buf, sizeof(buf)));
				continue;
			}
			printf("%s{", i ? " " : "");
			for (k = 0; k < x->u.object.len; k++)
				printf("%s%s=%s", k ? " " : "",
				    x->u.object.keys[k],
				    jtext(x->u.object.values[k], NULL, buf,
				    sizeof(buf)));
			printf("}");
		}
		printf("]");
		return;
	}
	if (YAJL_IS_STRING(v) && strpbrk(v->u.string, " \t\""))
		printf(" %s=\"%s\"", prefix, v->u.string);
	else
		printf(" %s=%s", prefix, jtext(v, NULL, buf, sizeof(buf)));
}

int
cmd_events(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val res = NULL, msg = NULL;
	struct timespec ts;
	struct tm tm;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	/* No P_EVENTS: every event. */
	rc = vmc_call0(c, M_EVENTS_SUBSCRIBE, &res, &err);
	if (rc != 0) {
		rc = vmc_report(ctl, "events", rc, &err);
		goto out;
	}
	vmctl_catch_signals();
	for (;;) {
		yajl_tree_free(msg);
		msg = NULL;
		/* Waiting for ever is the point; a dead daemon is EOF. */
		rc = vmc_next_event(c, -1, &msg);
		if (rc == -EINTR) {
			rc = VMCTL_EXIT_OK;
			break;
		}
		if (rc < 0) {
			rc = vmc_report(ctl, "events", rc, &err);
			break;
		}
		if (ctl->json) {
			jprint(msg, false);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		printf("%02d:%02d:%02d.%03ld %s", tm.tm_hour, tm.tm_min,
		    tm.tm_sec, ts.tv_nsec / 1000000,
		    jstr(msg, "method") ? jstr(msg, "method") : "?");
		print_flat(jget(msg, "params"), "");
		printf("\n");
		fflush(stdout);
	}
out:
	yajl_tree_free(msg);
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

/* ------------------------------------------------------------------ */

int
cmd_tasks(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *const hdr[] = { "ID", "KIND", "STATE", "PHASE",
		"PROGRESS", "DONE", "TOTAL", "VM" };
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	char a[32], b[16], d[32], e[32], f[128];
	struct table *t = NULL;
	yajl_val res = NULL, tasks, x, p;
	uint64_t done = 0, total = 0;
	const char *unit;
	size_t i;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	rc = vmc_call0(c, M_TASK_LIST, &res, &err);
	if (rc != 0) {
		rc = vmc_report(ctl, "tasks", rc, &err);
		goto out;
	}
	if (ctl->json) {
		jprint(res, false);
		goto out;
	}
	tasks = YAJL_IS_ARRAY(res) ? res : jget(res, "tasks");
	t = table_new(8, hdr);
	table_right(t, 0);
	table_right(t, 4);
	table_right(t, 5);
	table_right(t, 6);
	for (i = 0; YAJL_IS_ARRAY(tasks) && i < tasks->u.array.len; i++) {
		x = tasks->u.array.values[i];
		p = jget(x, "progress");
		done = total = 0;
		ju64(p, "done", &done);
		ju64(p, "total", &total);
		unit = jstr(p, "unit");
		if (!unit || !strcmp(unit, "bytes")) {
			fmt_size(done, d, sizeof(d));
			fmt_size(total, e, sizeof(e));
		} else {
			snprintf(d, sizeof(d), "%llu", (unsigned long long)done);
			snprintf(e, sizeof(e), "%llu %s",
			    (unsigned long long)total, unit);
		}
		if (jstr(x, "vm"))
			snprintf(f, sizeof(f), "%s", jstr(x, "vm"));
		else if (jstr(x, "name"))
			snprintf(f, sizeof(f), "%s", jstr(x, "name"));
		else
			jtext(jget(x, "vm"), "name", f, sizeof(f));
		table_add(t, jtext(x, "id", a, sizeof(a)), jstr(x, "kind"),
		    jstr(x, "state"), jstr(p, "phase"),
		    fmt_pct((double)done, (double)total, b, sizeof(b)), d, e,
		    f);
	}
	table_print(t, stdout, NULL);
out:
	table_free(t);
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}
