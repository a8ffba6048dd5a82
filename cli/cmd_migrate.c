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

/*
 * Start `CMD HOST vmctl migrate-receive [--socket S]` with its stdin
 * and stdout on pipes: *send writes to it, *recv reads from it.
 */
static int
spawn_receiver(const char *cmd, const char *host, const char *remote_sock,
    int *send, int *recv, pid_t *ret_pid)
{
	char qhost[512], qsock[1100] = "", rune[2048];
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	pid_t pid;

	if (!sh_quote(qhost, sizeof(qhost), host) || (remote_sock &&
	    !sh_quote(qsock, sizeof(qsock), remote_sock)) ||
	    snprintf(rune, sizeof(rune), "exec %s %s vmctl migrate-receive%s%s",
	    cmd, qhost, remote_sock ? " --socket " : "", qsock) >=
	    (int)sizeof(rune)) {
		vmctl_warnx("migrate: the ssh command line is too long");
		return -1;
	}
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

/* vm.migrate_send with the two pipes; the task followed. */
static int
send_task(struct vmctl *ctl, struct vmc_client *c, const char *vm,
    bool live, long long rounds, int fds[2])
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
	else
		rc = vmctl_follow_task(ctl, c, (long long)tid, "migrate",
		    print_migrated);
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
	int ch, rc, fds[2] = { -1, -1 };
	long long rounds = 0;
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
	if (spawn_receiver(ssh, argv[optind + 1], remote, &fds[0], &fds[1],
	    &pid) < 0) {
		rc = VMCTL_EXIT_ERROR;
		goto out;
	}
	rc = send_task(ctl, c, argv[optind], live, rounds, fds);
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

int
cmd_migrate_receive(struct vmctl *ctl, const struct vmctl_cmd *cmd,
    int argc, char **argv)
{
	static const struct option opts[] = {
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	int ch, rc, fds[2] = { 0, -1 };
	double tid;
	yajl_gen g;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1)
		if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	if ((rc = vmctl_operands(cmd, argc, argv, 0)) >= 0)
		return rc;
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
