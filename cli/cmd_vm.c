/*
 * cmd_vm.c - the VM commands: create, list, info, destroy, pause, unpause.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

/* The config is sent in one request line; leave room for the rest. */
#define CONFIG_MAX	(VMBUILD_MAX_REQUEST - 64 * 1024)
/* With no event for this long, ask for the task's state. */
#define FOLLOW_POLL_MS	1000
/*
 * The daemon answers vm.destroy when the domain and its devices are
 * gone: on Xen each backend followed to Closed (10 s) and its hotplug
 * script run with "remove" (40 s, as libxl bounds them), then the
 * domain's own teardown, each hypervisor call within the daemon's
 * --hypervisor-timeout.  A guest with a few devices on a loaded host
 * takes more than the default 30 s; vmctl waits at least this long,
 * as for disk-attach (cmd_dev.c), rather than give up on a destroy
 * that is still under way.
 */
#define DESTROY_DAEMON_S	300

/* Add P_VM: a domain id when VM is all digits, else a name. */
void
gen_vm_ref(yajl_gen g, const char *vm)
{
	const char *p = vm;
	char *end;
	long long id;

	while (*p >= '0' && *p <= '9')
		p++;
	jg_str(g, P_VM);
	if (*vm && !*p && p - vm < 10) {
		id = strtoll(vm, &end, 10);
		yajl_gen_integer(g, id);
	} else {
		jg_str(g, vm);
	}
}

/* Read a whole (small) file into a NUL-terminated buffer. */
int
vmctl_read_file(const char *path, char **ret_text, size_t *ret_len)
{
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0;
	FILE *f;
	size_t r;
	int rc;

	f = fopen(path, "r");
	if (!f)
		return -errno;
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		r = fread(buf + len, 1, cap - len - 1, f);
		len += r;
		if (len > CONFIG_MAX) {
			rc = -EFBIG;
			goto out;
		}
		if (r == 0) {
			if (ferror(f)) {
				rc = -EIO;
				goto out;
			}
			break;
		}
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		rc = -EINVAL;	/* binary, not an xl.cfg file */
		goto out;
	}
	*ret_text = buf;
	*ret_len = len;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

/*
 * Open a kernel or ramdisk the daemon asked for (E_IMAGE_FD), with the
 * user's rights, as OpenBSD's vmctl does: the daemon opens no file a
 * client names.  Symbolic links are resolved here (the user may follow
 * them), the result is opened without blocking and must be a regular
 * file.  A descriptor, or -errno.
 */
static int
open_image(const char *path)
{
	char real[PATH_MAX];
	struct stat st;
	int fd;

	if (!realpath(path, real))
		return -errno;
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW |
	    O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/*
 * The files data.files of an E_IMAGE_FD error lists, opened: fds[i] for
 * keys[i].  An exit code: VMCTL_EXIT_OK, or a usage error after saying
 * which file cannot be read.
 */
int
vmctl_open_images(const char *cfg, yajl_val files, int *fds, const char **keys,
    size_t *ret_n, char why[2][VMCTL_WHY_LEN])
{
	size_t n = 0;

	for (size_t i = 0; YAJL_IS_ARRAY(files) && i < files->u.array.len;
	    i++) {
		yajl_val f = files->u.array.values[i];
		const char *key = jstr(f, "key"), *path = jstr(f, "path");
		int fd;

		/* Our own strings: err.data is freed before the resend. */
		if (key && !strcmp(key, "kernel"))
			key = "kernel";
		else if (key && !strcmp(key, "ramdisk"))
			key = "ramdisk";
		else
			continue;
		if (!path || n == 2)
			continue;
		fd = open_image(path);
		if (fd < 0 && why != NULL) {
			/* check: said with the other errors, not alone. */
			snprintf(why[strcmp(key, "kernel") ? 1 : 0],
			    VMCTL_WHY_LEN, "cannot open %s: %s", path,
			    fd == -EINVAL ? "not a regular file" :
			    strerror(-fd));
			continue;
		}
		if (fd < 0) {
			vmctl_warnx("create: %s: %s %s: %s", cfg, key, path,
			    fd == -EINVAL ? "not a regular file" :
			    strerror(-fd));
			while (n > 0)
				close(fds[--n]);
			return VMCTL_EXIT_USAGE;
		}
		keys[n] = key;
		fds[n++] = fd;
	}
	*ret_n = n;
	return VMCTL_EXIT_OK;
}

/* vm.create for the config; with descriptors, params.fds names them. */
static int
send_create(struct vmc_client *c, const char *text, const char *path,
    bool paused, bool ignore, const int *fds, const char **keys, size_t nfds,
    yajl_val *ret_res, struct vmc_error *err)
{
	yajl_gen g = vmc_request(c, M_VM_CREATE);

	if (g) {
		jg_kv_str(g, P_CONFIG, text);
		jg_kv_str(g, P_CONFIG_PATH, path);
		jg_kv_bool(g, P_WAIT, false);
		if (paused)
			jg_kv_bool(g, P_PAUSED, true);
		if (ignore)
			jg_kv_bool(g, P_IGNORE_UNSUPPORTED, true);
		vmc_gen_fds(g, keys, nfds);
	}
	return vmc_call_fds(c, g, fds, nfds, ret_res, err);
}

/* The task id a task object or a notification's params is about. */
static bool
task_id_of(yajl_val v, long long *ret)
{
	yajl_val t = jget(v, "task");
	double d;

	if (YAJL_IS_OBJECT(t))
		v = t, t = jget(v, "id");
	if (!t)
		t = jget(v, "id");
	if (!jnum(t, NULL, &d))
		return false;
	*ret = (long long)d;
	return true;
}

/* A task object inside a notification or reply, or the value itself. */
static yajl_val
task_obj(yajl_val v)
{
	yajl_val t = jget(v, "task");

	return YAJL_IS_OBJECT(t) ? t : v;
}

static const char *nodes_text(yajl_val nodes, char *buf, size_t len);

/* A VM's state for the list: "paused (in doubt)" while its migration is. */
static const char *
state_text(yajl_val vm, char *buf, size_t len)
{
	const char *ip[] = { "in_doubt", NULL };
	yajl_val m = jget(vm, "migration");
	const char *st = jstr(vm, "state");

	if (!YAJL_IS_OBJECT(m) || !YAJL_IS_TRUE(yajl_tree_get(m, ip,
	    yajl_t_true)))
		return st;
	snprintf(buf, len, "%s (in doubt)", st ? st : "-");
	return buf;
}

/*
 * The phase with the work running beside it (progress.alongside):
 * "populate+images+devices".  The phase alone when nothing is.
 */
static const char *
with_alongside(const char *phase, yajl_val alongside, char *buf, size_t len)
{
	size_t n;

	if (!YAJL_IS_ARRAY(alongside) || alongside->u.array.len == 0)
		return phase;
	n = (size_t)snprintf(buf, len, "%s", phase);
	for (size_t i = 0; i < alongside->u.array.len && n < len; i++)
		if (YAJL_IS_STRING(alongside->u.array.values[i]))
			n += (size_t)snprintf(buf + n, len - n, "+%s",
			    YAJL_GET_STRING(alongside->u.array.values[i]));
	return buf;
}

/*
 * A task's progress as the daemon measured it: bytes, the populate's
 * rate, and the dirty memory that holds the build up (progress.scrub):
 * waiting for the background scrubber, or scrubbed inline.
 */
static void
show_progress(struct progress *bar, yajl_val task)
{
	struct progress_info in = { 0 };
	yajl_val p = jget(task, "progress"), s;
	const char *mode;
	char note[256], explain[256], dirty[32], rate[48], rb[32], nb[96];
	char nodes[112], label[64];
	uint64_t d = 0, r = 0;

	if (!p)
		p = task;
	in.phase = jstr(p, "phase");
	if (!in.phase)
		in.phase = jstr(task, "phase");
	if (!in.phase)
		in.phase = "build";
	in.phase = with_alongside(in.phase, jget(p, "alongside"), label,
	    sizeof(label));
	ju64(p, "done", &in.done);
	ju64(p, "total", &in.total);
	in.bar = in.total > 0;
	/* Work of no known size (a restore reading a pipe): how much. */
	note[0] = '\0';
	if (!in.bar && in.done > 0) {
		fmt_size(in.done, nb, sizeof(nb));
		snprintf(note, sizeof(note), "%s so far", nb);
		in.note = note;
	}
	in.unit = jstr(p, "unit");
	in.have_rate = jnum(p, "rate_bytes_per_second", &in.rate);
	s = jget(p, "scrub");
	mode = jstr(s, "mode");
	if (mode && ju64(s, "dirty_bytes", &d)) {
		snprintf(nodes, sizeof(nodes), "node%s %s",
		    YAJL_IS_ARRAY(jget(s, "nodes")) &&
		    jget(s, "nodes")->u.array.len == 1 ? "" : "s",
		    nodes_text(jget(s, "nodes"), nb, sizeof(nb)));
		rate[0] = '\0';
		if (ju64(s, "rate_bytes_per_second", &r) && r > 0)
			snprintf(rate, sizeof(rate), ", scrubbing %s",
			    fmt_rate((double)r, rb, sizeof(rb)));
		fmt_size(d, dirty, sizeof(dirty));
		if (!strcmp(mode, "wait")) {
			/* Nothing is populated yet: no bar, say why. */
			in.bar = false;
			snprintf(note, sizeof(note), "waiting for the scrubber: "
			    "%s dirty on %s%s", dirty, nodes, rate);
		} else {
			snprintf(explain, sizeof(explain), "%s: scrubbing "
			    "inline (%s had free memory not yet scrubbed)",
			    in.phase, nodes);
			in.explain = explain;
			/* Which nodes: in the line above. */
			if (d > 0)
				snprintf(note, sizeof(note), "%s dirty", dirty);
			else
				snprintf(note, sizeof(note), "scrubbing inline");
		}
		in.note = note;
	}
	progress_show(bar, &in);
}

/* Print the id and name of the VM a finished create task made. */
static void
print_created(struct vmctl *ctl, yajl_val task, double secs)
{
	yajl_val r = jget(task, "result");
	char id[32], name[128];

	if (ctl->json) {
		/* {"id","name","seconds","task":{...}}: the VM first. */
		yajl_gen g = jgen_new(false);

		yajl_gen_map_open(g);
		jg_kv_tree(g, "id", jget(task, "domid"));
		jg_kv_tree(g, "name", jget(task, "vm"));
		jg_str(g, "seconds");
		yajl_gen_double(g, secs);
		jg_kv_tree(g, "task", task);
		yajl_gen_map_close(g);
		jgen_print(g);
		return;
	}
	/* A task names its VM by "domid" and "vm"; a VM object by id, name. */
	if (YAJL_IS_OBJECT(jget(r, "vm")))
		r = jget(r, "vm");
	if (YAJL_IS_OBJECT(r)) {
		jtext(r, "id", id, sizeof(id));
		jtext(r, "name", name, sizeof(name));
	} else {
		jtext(task, "domid", id, sizeof(id));
		jtext(task, jstr(task, "vm") ? "vm" : "name", name,
		    sizeof(name));
	}
	printf("created VM %s (%s) in %.2f s\n", id, name, secs);
}

static int
task_failed(struct vmctl *ctl, yajl_val task, long long tid, const char *what)
{
	struct vmc_error err = { 0 };
	const char *state = jstr(task, "state");
	yajl_val e = jget(task, "error");
	double code = 0;
	int rc;

	if (ctl->json)
		jprint(task, false);
	if (YAJL_IS_OBJECT(e)) {
		jnum(e, "code", &code);
		err.code = (long long)code;
		snprintf(err.message, sizeof(err.message), "%s",
		    jstr(e, "message") ? jstr(e, "message") : state);
		err.data = jget(e, "data");
	} else {
		err.code = state && !strcmp(state, "cancelled") ? E_CANCELLED :
		    0;
		snprintf(err.message, sizeof(err.message), "task %lld %s",
		    tid, state ? state : "failed");
	}
	rc = vmc_report(ctl, what, VMC_RPC_ERROR, &err);
	return rc;
}

/*
 * Follow task `tid` to its end: events drive the display, and task.get
 * is asked whenever no event came for a while, so a missed or absent
 * event cannot leave us waiting.
 */
int
vmctl_follow_task(struct vmctl *ctl, struct vmc_client *c, long long tid,
    const char *what, vmctl_task_done_fn *done)
{
	struct timespec t0, t1;
	struct vmc_error err = { 0 };
	struct progress *bar;
	yajl_val msg = NULL, task = NULL, params;
	const char *method, *state;
	long long id;
	bool poll_now = true;
	yajl_gen g;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	bar = progress_new(!ctl->json && isatty(STDERR_FILENO));
	if (ctl->json)
		progress_free(bar), bar = NULL;
	vmctl_catch_signals();
	for (;;) {
		if (poll_now) {
			g = vmc_request(c, M_TASK_GET);
			if (g)
				jg_kv_i64(g, P_TASK, tid);
			yajl_tree_free(task);
			task = NULL;
			rc = vmc_call(c, g, &task, &err);
			if (rc != 0) {
				progress_end(bar);
				rc = vmc_report(ctl, M_TASK_GET, rc, &err);
				goto out;
			}
			poll_now = false;
			state = jstr(task_obj(task), "state");
			if (state && strcmp(state, "running") &&
			    strcmp(state, "queued") && strcmp(state, "pending"))
				break;
			show_progress(bar, task_obj(task));
		}
		yajl_tree_free(msg);
		msg = NULL;
		rc = vmc_next_event(c, FOLLOW_POLL_MS, &msg);
		if (rc == -ETIMEDOUT) {
			poll_now = true;
			continue;
		}
		if (rc == -EINTR) {
			progress_end(bar);
			vmctl_warnx("interrupted: task %lld goes on in the "
			    "daemon (see vmctl tasks)", tid);
			rc = 130;
			goto out;
		}
		if (rc < 0) {
			progress_end(bar);
			rc = vmc_report(ctl, what, rc, &err);
			goto out;
		}
		method = jstr(msg, "method");
		params = jget(msg, "params");
		if (!method || !task_id_of(params, &id) || id != tid)
			continue;
		if (!strcmp(method, E_TASK_PROGRESS))
			show_progress(bar, task_obj(params));
		else if (!strcmp(method, E_TASK_DONE))
			poll_now = true;	/* the final state, with result */
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!strcmp(state, "done")) {
		show_progress(bar, task_obj(task));
		progress_end(bar);
		done(ctl, task_obj(task), (t1.tv_sec - t0.tv_sec) +
		    (t1.tv_nsec - t0.tv_nsec) / 1e9);
		rc = VMCTL_EXIT_OK;
	} else {
		progress_end(bar);
		rc = task_failed(ctl, task_obj(task), tid, what);
	}
out:
	progress_free(bar);
	yajl_tree_free(msg);
	yajl_tree_free(task);
	vmc_error_done(&err);
	return rc;
}

int
cmd_create(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "no-wait", no_argument, NULL, 'n' },
		{ "paused", no_argument, NULL, 'p' },
		{ "ignore-unsupported", no_argument, NULL, 'i' },
		{ "console", no_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'd' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	char *text = NULL, abspath[PATH_MAX];
	bool wait = true, paused = false, ignore = false, console = false;
	bool dry = false;
	yajl_val res = NULL, warnings;
	const char *path;
	char *name = NULL;
	size_t len;
	double tid;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jhc", opts, NULL)) != -1) {
		if (ch == 'n')
			wait = false;
		else if (ch == 'p')
			paused = true;
		else if (ch == 'i')
			ignore = true;
		else if (ch == 'c')
			console = true;
		else if (ch == 'd')
			dry = true;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	if (console && !wait)
		return vmctl_usage_error(cmd, "--console attaches once the VM "
		    "is built: not with --no-wait");
	if (dry && (console || paused || !wait))
		return vmctl_usage_error(cmd, "--dry-run creates nothing: not "
		    "with --console, --paused or --no-wait");
	path = argv[optind];
	if (dry)
		return vmctl_check_config(ctl, path, ignore);
	rc = vmctl_read_file(path, &text, &len);
	if (rc < 0) {
		vmctl_warnx("create: %s: %s", path, rc == -EFBIG ?
		    "too large for a config file" : rc == -EINVAL ?
		    "not a text file" : strerror(-rc));
		/* A file we cannot read is a usage error, not the daemon's. */
		rc = VMCTL_EXIT_USAGE;
		goto out;
	}
	if (!realpath(path, abspath))
		snprintf(abspath, sizeof(abspath), "%s", path);
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	/* Subscribe first, so that no progress event is missed. */
	if (wait && (rc = vmctl_subscribe_tasks(ctl, c, "create")) !=
	    VMCTL_EXIT_OK)
		goto out;
	rc = send_create(c, text, abspath, paused, ignore, NULL, NULL, 0, &res,
	    &err);
	if (rc == VMC_RPC_ERROR && err.code == E_IMAGE_FD) {
		/*
		 * The daemon opens no file outside its image directories:
		 * it names what we are to pass, and we send the request
		 * again with those files open.
		 */
		const char *keys[2];
		int fds[2];
		size_t nfds = 0;

		rc = vmctl_open_images(abspath, jget(err.data, "files"), fds, keys,
		    &nfds, NULL);
		if (rc != VMCTL_EXIT_OK)
			goto out;
		vmc_error_done(&err);
		rc = send_create(c, text, abspath, paused, ignore, fds, keys,
		    nfds, &res, &err);
		while (nfds > 0)
			close(fds[--nfds]);
	}
	if (rc != 0) {
		rc = vmc_report(ctl, "create", rc, &err);
		goto out;
	}
	/* What the daemon ignored, as "file:line: key: warning: ...". */
	warnings = jget(res, "warnings");
	for (size_t i = 0; YAJL_IS_ARRAY(warnings) &&
	    i < warnings->u.array.len; i++)
		if (jstr(warnings->u.array.values[i], NULL))
			fprintf(stderr, "%s\n",
			    jstr(warnings->u.array.values[i], NULL));
	if (!jnum(res, P_TASK, &tid)) {
		/* A daemon that built synchronously: show what it says. */
		if (ctl->json)
			jprint(res, false);
		else
			print_created(ctl, res, 0);
		rc = VMCTL_EXIT_OK;
		goto out;
	}
	if (!wait) {
		if (ctl->json)
			jprint(res, false);
		else
			printf("task %lld\n", (long long)tid);
		rc = VMCTL_EXIT_OK;
		goto out;
	}
	if (console && jstr(res, "vm"))
		name = strdup(jstr(res, "vm"));
	rc = vmctl_follow_task(ctl, c, (long long)tid, "create",
	    print_created);
	/* As xl create -c: the console of the VM just built. */
	if (rc == VMCTL_EXIT_OK && name) {
		vmc_close(c);
		c = NULL;
		rc = vmctl_console_attach(ctl, name);
	}
out:
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	free(text);
	free(name);
	return rc;
}

/* ------------------------------------------------------------------ */

/* "0,1" from a nodes array of numbers or of {"node":N,...} objects. */
static const char *
nodes_text(yajl_val nodes, char *buf, size_t len)
{
	char one[32];
	size_t i, off = 0;
	yajl_val n;

	buf[0] = '\0';
	if (!YAJL_IS_ARRAY(nodes) || nodes->u.array.len == 0)
		return "-";
	for (i = 0; i < nodes->u.array.len && off + 1 < len; i++) {
		n = nodes->u.array.values[i];
		if (YAJL_IS_OBJECT(n))
			jtext(n, "node", one, sizeof(one));
		else
			jtext(n, NULL, one, sizeof(one));
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
		    i ? "," : "", one);
	}
	return buf;
}

int
cmd_list(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	static const char *const hdr[] = { "ID", "NAME", "STATE", "TYPE",
		"MEMORY", "VCPUS", "NODES" };
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	char id[32], mem[32], vcpus[16], nodes[256], state[64];
	struct table *t = NULL;
	yajl_val res = NULL, vms, vm, dom0;
	uint64_t bytes;
	yajl_gen g;
	size_t i;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	rc = vmc_call0(c, M_VM_LIST, &res, &err);
	if (rc != 0) {
		rc = vmc_report(ctl, "list", rc, &err);
		goto out;
	}
	vms = jget(res, "vms");
	if (!YAJL_IS_ARRAY(vms)) {
		vmctl_warnx("list: the daemon's reply has no \"vms\" list");
		rc = VMCTL_EXIT_UNREACHABLE;
		goto out;
	}
	/* The control domain: a row as `xl list` has it, never a VM. */
	dom0 = jget(res, "control_domain");
	if (!YAJL_IS_OBJECT(dom0))
		dom0 = NULL;
	if (ctl->json) {
		/* Exactly the documented shape, whatever else the daemon adds. */
		g = jgen_new(false);
		yajl_gen_map_open(g);
		jg_str(g, "vms");
		yajl_gen_array_open(g);
		for (i = 0; i < vms->u.array.len; i++) {
			vm = vms->u.array.values[i];
			yajl_gen_map_open(g);
			jg_kv_tree(g, "id", jget(vm, "id"));
			jg_kv_tree(g, "name", jget(vm, "name"));
			jg_kv_tree(g, "state", jget(vm, "state"));
			jg_kv_tree(g, "type", jget(vm, "type"));
			jg_kv_tree(g, "memory_bytes", jget(vm, "memory_bytes"));
			jg_kv_tree(g, "vcpus", jget(vm, "vcpus"));
			jg_kv_tree(g, "nodes", jget(vm, "nodes"));
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		if (dom0) {
			jg_str(g, "control_domain");
			yajl_gen_map_open(g);
			jg_kv_tree(g, "id", jget(dom0, "id"));
			jg_kv_tree(g, "name", jget(dom0, "name"));
			jg_kv_tree(g, "state", jget(dom0, "state"));
			jg_kv_tree(g, "memory_bytes",
			    jget(dom0, "memory_bytes"));
			jg_kv_tree(g, "vcpus", jget(dom0, "vcpus"));
			yajl_gen_map_close(g);
		}
		yajl_gen_map_close(g);
		jgen_print(g);
		rc = VMCTL_EXIT_OK;
		goto out;
	}
	t = table_new(7, hdr);
	table_right(t, 0);
	table_right(t, 4);
	table_right(t, 5);
	if (dom0)
		table_add(t, jtext(dom0, "id", id, sizeof(id)),
		    jstr(dom0, "name"), jstr(dom0, "state"), "-",
		    ju64(dom0, "memory_bytes", &bytes) ?
		    fmt_size(bytes, mem, sizeof(mem)) : "-",
		    jtext(dom0, "vcpus", vcpus, sizeof(vcpus)), "-");
	for (i = 0; i < vms->u.array.len; i++) {
		vm = vms->u.array.values[i];
		table_add(t, jtext(vm, "id", id, sizeof(id)),
		    jstr(vm, "name"), state_text(vm, state, sizeof(state)),
		    jstr(vm, "type") ? jstr(vm, "type") : "-",
		    ju64(vm, "memory_bytes", &bytes) ?
		    fmt_size(bytes, mem, sizeof(mem)) : "-",
		    jtext(vm, "vcpus", vcpus, sizeof(vcpus)),
		    nodes_text(jget(vm, "nodes"), nodes, sizeof(nodes)));
	}
	table_print(t, stdout, NULL);
	rc = VMCTL_EXIT_OK;
out:
	table_free(t);
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

/* ------------------------------------------------------------------ */

/* One VM method with P_VM: info, destroy, pause, unpause. */
static int
vm_call(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, const char *method, yajl_val *ret_res)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_gen g;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	if (!argv[optind][0])
		return vmctl_usage_error(cmd, "empty VM name");
	if (!strcmp(method, M_VM_DESTROY) &&
	    ctl->timeout_ms < DESTROY_DAEMON_S * 1000)
		ctl->timeout_ms = DESTROY_DAEMON_S * 1000;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, method);
	if (g)
		gen_vm_ref(g, argv[optind]);
	rc = vmc_call(c, g, ret_res, &err);
	if (rc != 0) {
		char what[128];

		snprintf(what, sizeof(what), "%s %s", cmd->name, argv[optind]);
		rc = vmc_report(ctl, what, rc, &err);
		goto out;
	}
	rc = VMCTL_EXIT_OK;
out:
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

/*
 * The daemon sends null for populate counts the hypervisor does not
 * report (stock Xen: scrubbing, flushes); say so rather than "-".
 */
static void
mark_unavailable(yajl_val vm)
{
	yajl_val pop = jget(jget(vm, "build"), "populate");
	char *text;

	if (!YAJL_IS_OBJECT(pop))
		return;
	for (size_t i = 0; i < pop->u.object.len; i++) {
		yajl_val v = pop->u.object.values[i];

		if (!YAJL_IS_NULL(v) || !(text = strdup("unavailable")))
			continue;
		/* yajl_tree_free() frees a string node's text. */
		v->type = yajl_t_string;
		v->u.string = text;
	}
}

int
cmd_info(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	yajl_val res = NULL, vm;
	int rc;

	rc = vm_call(ctl, cmd, argc, argv, M_VM_INFO, &res);
	if (rc != VMCTL_EXIT_OK || !res)
		goto out;
	if (ctl->json) {
		jprint(res, false);
		goto out;
	}
	vm = jget(res, "vm");
	if (!YAJL_IS_OBJECT(vm))
		vm = res;
	mark_unavailable(vm);
	/* Everything the daemon says, humanised by the units keys name. */
	fmt_tree(vm, 0);
out:
	yajl_tree_free(res);
	return rc;
}

static int
vm_action(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, const char *method, const char *done)
{
	yajl_val res = NULL;
	int rc;

	rc = vm_call(ctl, cmd, argc, argv, method, &res);
	if (rc == VMCTL_EXIT_OK && res) {
		if (ctl->json)
			jprint(res, false);
		else
			printf("%s %s\n", done, argv[optind]);
	}
	yajl_tree_free(res);
	return rc;
}

int
cmd_destroy(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return vm_action(ctl, cmd, argc, argv, M_VM_DESTROY, "destroyed");
}

int
cmd_pause(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return vm_action(ctl, cmd, argc, argv, M_VM_PAUSE, "paused");
}

int
cmd_unpause(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return vm_action(ctl, cmd, argc, argv, M_VM_UNPAUSE, "unpaused");
}
