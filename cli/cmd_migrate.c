/*
 * cmd_migrate.c - vmctl migrate and vmctl migrate-receive.
 *
 * As xl migrate does: the sender runs `ssh HOST vmctl migrate-receive`
 * (--ssh-command replaces ssh; run by /bin/sh, so it may carry
 * options) and the stream flows over that child's stdin and stdout.
 * vmctl passes both pipes to its daemon (vm.migrate_send) and follows
 * the task; on HOST, vmctl migrate-receive passes its own stdin and
 * stdout to its daemon (vm.restore, incoming).  Nothing listens on the
 * network: the connection is ssh's.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

#define CHILD_WAIT_S	60	/* for the ssh child to go, once done */
#define QUERY_WAIT_S	300	/* for a receiver's build to end */

/* `s` single-quoted for /bin/sh into buf; false when it does not fit. */
static bool
sh_quote(char *buf, size_t cap, const char *s)
{
	size_t n = 0;

	if (cap < 3)
		return false;
	buf[n++] = '\'';
	for (; *s != '\0'; s++) {
		const char *piece = *s == '\'' ? "'\\''" : NULL;
		size_t len = piece ? strlen(piece) : 1;

		if (n + len + 2 > cap)
			return false;
		if (piece)
			memcpy(buf + n, piece, len);
		else
			buf[n] = *s;
		n += len;
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return true;
}

/* `exec CMD HOST vmctl [--socket S] migrate-receive EXTRA` into rune. */
static int
receiver_rune(char *rune, size_t cap, const char *cmd, const char *host,
    const char *remote_sock, const char *extra)
{
	char qhost[512], qsock[1100] = "";

	if (!sh_quote(qhost, sizeof(qhost), host) || (remote_sock &&
	    !sh_quote(qsock, sizeof(qsock), remote_sock)) ||
	    snprintf(rune, cap, "exec %s %s vmctl%s%s migrate-receive%s",
	    cmd, qhost, remote_sock ? " --socket " : "", qsock, extra) >=
	    (int)cap) {
		vmctl_warnx("migrate: the ssh command line is too long");
		return -1;
	}
	return 0;
}

/*
 * Start `CMD HOST vmctl [--socket S] migrate-receive EXTRA` with its
 * stdin and stdout on pipes: *send writes to it, *recv reads from it.
 */
static int
spawn_receiver(const char *cmd, const char *host, const char *remote_sock,
    const char *extra, int *send, int *recv, pid_t *ret_pid)
{
	char rune[2048];
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	pid_t pid;

	if (receiver_rune(rune, sizeof(rune), cmd, host, remote_sock,
	    extra) < 0)
		return -1;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		vmctl_warnx("migrate: pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		vmctl_warnx("migrate: fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", rune, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*send = in[1];
	*recv = out[0];
	*ret_pid = pid;
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return -1;
}

/* The ssh child, once the daemon is done with it: bounded, then killed. */
static void
reap_receiver(pid_t pid)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	for (int i = 0; i < CHILD_WAIT_S * 20; i++) {
		pid_t w = waitpid(pid, NULL, WNOHANG);

		if (w == pid || (w < 0 && errno != EINTR))
			return;
		nanosleep(&ts, NULL);
	}
	vmctl_warnx("migrate: the ssh command did not exit; killing it");
	kill(pid, SIGTERM);
	(void)waitpid(pid, NULL, 0);
}

static void
print_migrated(struct vmctl *ctl, yajl_val task, double secs)
{
	const char *mp[] = { "migration", NULL };
	yajl_val m = yajl_tree_get(task, mp, yajl_t_object);
	double down = 0, total = 0, pages = 0, rounds = 0;
	char name[128];

	if (ctl->json) {
		jprint(task, false);
		return;
	}
	jtext(task, "vm", name, sizeof(name));
	if (m != NULL) {
		jnum(m, "downtime_ms", &down);
		jnum(m, "total_s", &total);
		jnum(m, "pages", &pages);
		jnum(m, "rounds", &rounds);
	}
	printf("migrated VM %s in %.2f s\n", name, secs);
	printf("vmbuild-migrate: downtime_ms=%.0f total_s=%.2f pages=%.0f "
	    "rounds=%.0f\n", down, total, pages, rounds);
}

/*
 * Our vm.migrate_send task `tid`, if it failed with the outcome unknown
 * (E_MIGRATE_DOUBT): its VM's name and uuid.  Asked by its id: another
 * migration started since (a second vmctl migrate) is not ours.
 */
static bool
in_doubt(struct vmc_client *c, long long tid, char *name, size_t nlen,
    char *uuid, size_t ulen)
{
	struct vmc_error err = { 0 };
	yajl_val res = NULL, t;
	const char *ep[] = { "error", NULL };
	double code = 0;
	yajl_gen g;

	if (tid <= 0)
		return false;
	g = vmc_request(c, M_TASK_GET);
	if (g)
		jg_kv_i64(g, P_TASK, tid);
	if (vmc_call(c, g, &res, &err) == 0) {
		t = jget(res, "task");
		t = YAJL_IS_OBJECT(t) ? t : res;
		if (jnum(yajl_tree_get(t, ep, yajl_t_object), "code", &code) &&
		    code == E_MIGRATE_DOUBT) {
			jtext(t, "vm", name, nlen);
			jtext(t, "uuid", uuid, ulen);
		}
	}
	vmc_error_done(&err);
	yajl_tree_free(res);
	return code == E_MIGRATE_DOUBT;
}

/* A call naming vm, answered when done: 0 or the exit code. */
static int
vm_call(struct vmctl *ctl, struct vmc_client *c, const char *method,
    const char *vm)
{
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	yajl_gen g;
	int rc;

	g = vmc_request(c, method);
	if (g) {
		jg_kv_str(g, P_VM, vm);
		jg_kv_bool(g, P_WAIT, true);
	}
	rc = vmc_call(c, g, &res, &err);
	rc = rc == 0 ? VMCTL_EXIT_OK : vmc_report(ctl, "migrate", rc, &err);
	vmc_error_done(&err);
	yajl_tree_free(res);
	return rc;
}

/*
 * The receiver's answer was lost after the whole stream went: ask it
 * (migrate-receive --query, over a new connection) whether it runs
 * the guest, then destroy the guest here or unpause it.
 */
static int
resolve(struct vmctl *ctl, struct vmc_client *c, long long tid,
    const char *ssh, const char *host, const char *remote, int rc)
{
	char name[128] = "", uuid[64] = "", extra[300], line[200] = "";
	int in = -1, out = -1;
	pid_t pid = -1;
	FILE *f;

	if (!in_doubt(c, tid, name, sizeof(name), uuid, sizeof(uuid)))
		return rc;
	snprintf(extra, sizeof(extra), " --query %s", name);
	if (spawn_receiver(ssh, host, remote, extra, &in, &out, &pid) < 0)
		return rc;
	close(in);
	f = fdopen(out, "r");
	if (f == NULL || fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	if (f != NULL)
		fclose(f);
	else
		close(out);
	reap_receiver(pid);
	if (!strncmp(line, "present ", 8) && !strncmp(line + 8, uuid,
	    strlen(uuid)) && strlen(uuid) > 0) {
		vmctl_warnx("migrate: %s answered that it runs %s: it is "
		    "destroyed here", host, name);
		return vm_call(ctl, c, M_VM_DESTROY, name);
	}
	if (!strncmp(line, "absent", 6)) {
		vmctl_warnx("migrate: %s does not have %s: it is unpaused "
		    "here", host, name);
		(void)vm_call(ctl, c, M_VM_UNPAUSE, name);
		return rc;
	}
	vmctl_warnx("migrate: %s could not be asked about %s: it stays "
	    "paused here; if %s does not run it, vmctl unpause %s", host,
	    name, host, name);
	return rc;
}

/*
 * vm.migrate_send with the two pipes, and the target: its host and the
 * command that reaches its vmctl migrate-receive (`rune`), which the
 * daemon keeps to ask it should it die mid-migration.  The task
 * (*ret_tid) followed.
 */
static int
send_task(struct vmctl *ctl, struct vmc_client *c, const char *vm,
    bool live, long long rounds, int fds[2], const char *host,
    const char *rune, long long *ret_tid)
{
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	double tid;
	yajl_gen g;
	int rc;

	g = vmc_request(c, M_VM_MIGRATE_SEND);
	if (g) {
		gen_vm_ref(g, vm);
		jg_kv_bool(g, P_LIVE, live);
		jg_str(g, P_TARGET);
		yajl_gen_map_open(g);
		jg_kv_str(g, "host", host);
		jg_kv_str(g, "command", rune);
		yajl_gen_map_close(g);
		if (rounds > 0)
			jg_kv_i64(g, P_MAX_ROUNDS, rounds);
		jg_str(g, P_FDS);
		yajl_gen_map_open(g);
		jg_kv_i64(g, "send", 0);
		jg_kv_i64(g, "recv", 1);
		yajl_gen_map_close(g);
	}
	rc = vmc_call_fds(c, g, fds, 2, &res, &err);
	/* The daemon has them: our copies would keep the pipes open. */
	close(fds[0]);
	close(fds[1]);
	fds[0] = fds[1] = -1;
	if (rc != 0)
		rc = vmc_report(ctl, "migrate", rc, &err);
	else if (!jnum(res, P_TASK, &tid))
		rc = vmc_report(ctl, "migrate", -EPROTO, &err);
	else {
		*ret_tid = (long long)tid;
		rc = vmctl_follow_task(ctl, c, (long long)tid, "migrate",
		    print_migrated);
	}
	vmc_error_done(&err);
	yajl_tree_free(res);
	return rc;
}

int
cmd_migrate(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "live", no_argument, NULL, 'l' },
		{ "ssh-command", required_argument, NULL, 's' },
		{ "remote-socket", required_argument, NULL, 'r' },
		{ "max-rounds", required_argument, NULL, 'm' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	const char *ssh = "ssh", *remote = NULL;
	struct vmc_client *c = NULL;
	char rune[2048];
	int ch, rc, fds[2] = { -1, -1 };
	long long rounds = 0, tid = 0;
	bool live = false;
	pid_t pid = -1;
	char *end;

	while ((ch = getopt_long(argc, argv, "jhls:r:m:", opts, NULL)) != -1) {
		if (ch == 'l')
			live = true;
		else if (ch == 's')
			ssh = optarg;
		else if (ch == 'r')
			remote = optarg;
		else if (ch == 'm' && ((rounds = strtoll(optarg, &end, 10)) < 1 ||
		    *end != '\0'))
			return vmctl_usage_error(cmd, "--max-rounds: \"%s\" is "
			    "not a positive number", optarg);
		else if (ch != 'm' && (rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 2)) >= 0)
		return rc;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	if ((rc = vmctl_subscribe_tasks(ctl, c, "migrate")) != VMCTL_EXIT_OK)
		goto out;
	if (receiver_rune(rune, sizeof(rune), ssh, argv[optind + 1], remote,
	    "") < 0 || spawn_receiver(ssh, argv[optind + 1], remote, "",
	    &fds[0], &fds[1], &pid) < 0) {
		rc = VMCTL_EXIT_ERROR;
		goto out;
	}
	rc = send_task(ctl, c, argv[optind], live, rounds, fds,
	    argv[optind + 1], rune, &tid);
	if (rc != VMCTL_EXIT_OK && pid > 0) {
		reap_receiver(pid);
		pid = -1;
		rc = resolve(ctl, c, tid, ssh, argv[optind + 1], remote, rc);
	}
out:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (pid > 0)
		reap_receiver(pid);
	vmc_close(c);
	return rc;
}

static void
print_received(struct vmctl *ctl, yajl_val task, double secs)
{
	char name[128];

	(void)ctl;
	jtext(task, "vm", name, sizeof(name));
	/* stdout is the stream: what we say goes to stderr. */
	fprintf(stderr, "vmctl migrate-receive: VM %s received in %.2f s\n",
	    name, secs);
}

/*
 * --query NAME: once no build of it is under way, is the guest here?
 * "present UUID" or "absent" on stdout (what vmctl migrate reads).
 */
static int
query(struct vmctl *ctl, const char *name)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	struct vmc_client *c = NULL;
	char u[64] = "", state[32] = "building";
	bool absent = false;
	int rc;

	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		return rc;
	for (int i = 0; i < QUERY_WAIT_S * 10; i++) {
		struct vmc_error err = { 0 };
		yajl_val res = NULL;
		yajl_gen g = vmc_request(c, M_VM_INFO);

		if (g)
			jg_kv_str(g, P_VM, name);
		rc = vmc_call(c, g, &res, &err);
		if (rc == 0 && (!jtext(res, "uuid", u, sizeof(u)) ||
		    !jtext(res, "state", state, sizeof(state))))
			rc = -EPROTO;
		absent = rc == VMC_RPC_ERROR && err.code == E_NO_SUCH_VM;
		vmc_error_done(&err);
		yajl_tree_free(res);
		if (absent || rc != 0 || strcmp(state, "building") != 0)
			break;
		nanosleep(&ts, NULL);
	}
	vmc_close(c);
	if (absent || (rc == 0 && strcmp(state, "building") != 0)) {
		printf(absent ? "absent\n" : "present %s\n", u);
		return VMCTL_EXIT_OK;
	}
	vmctl_warnx("migrate-receive: cannot tell whether %s is here", name);
	return VMCTL_EXIT_ERROR;
}

int
cmd_migrate_receive(struct vmctl *ctl, const struct vmctl_cmd *cmd,
    int argc, char **argv)
{
	static const struct option opts[] = {
		{ "query", required_argument, NULL, 'q' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	int ch, rc, fds[2] = { 0, -1 };
	const char *qname = NULL;
	double tid;
	yajl_gen g;

	while ((ch = getopt_long(argc, argv, "jhq:", opts, NULL)) != -1) {
		if (ch == 'q')
			qname = optarg;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
	if (qname != NULL)
		return query(ctl, qname);
	/* The answers go on our stdout; anything we print, on stderr. */
	fds[1] = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (fds[1] < 0 || dup2(2, 1) < 0) {
		vmctl_warnx("migrate-receive: stdout: %s", strerror(errno));
		return VMCTL_EXIT_ERROR;
	}
	ctl->json = false;
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	if ((rc = vmctl_subscribe_tasks(ctl, c, "migrate-receive")) !=
	    VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, M_VM_RESTORE);
	if (g) {
		jg_kv_bool(g, P_INCOMING, true);
		jg_str(g, P_FDS);
		yajl_gen_map_open(g);
		jg_kv_i64(g, "file", 0);
		jg_kv_i64(g, "reply", 1);
		yajl_gen_map_close(g);
	}
	rc = vmc_call_fds(c, g, fds, 2, &res, &err);
	close(fds[1]);
	fds[1] = -1;
	if (rc != 0)
		rc = vmc_report(ctl, "migrate-receive", rc, &err);
	else if (!jnum(res, P_TASK, &tid))
		rc = vmc_report(ctl, "migrate-receive", -EPROTO, &err);
	else
		rc = vmctl_follow_task(ctl, c, (long long)tid,
		    "migrate-receive", print_received);
out:
	if (fds[1] >= 0)
		close(fds[1]);
	vmc_error_done(&err);
	yajl_tree_free(res);
	vmc_close(c);
	return rc;
}
