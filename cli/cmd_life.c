/*
 * cmd_life.c - the lifecycle commands: shutdown, reboot (the guest is
 * asked, as xl shutdown and xl reboot ask it) and console (attached as
 * xl console attaches: a raw terminal, Ctrl-] detaches).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "vmctl.h"

#define ESCAPE_CHAR	0x1d	/* Ctrl-], as xl console */
/* Slack for the reply after the guest's time is up (force, a restart). */
#define SHUTDOWN_SLACK_S	60
#define RESTART_SLACK_S		600

static const char *
verb(const char *reason)
{
	static const struct { const char *reason, *verb; } v[] = {
		{ "poweroff", "powered off" }, { "reboot", "rebooted" },
		{ "suspend", "suspended" }, { "crash", "crashed" },
		{ "watchdog", "was stopped by its watchdog" },
		{ "soft_reset", "asked for a soft reset" },
	};

	for (size_t i = 0; reason && i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(v[i].reason, reason))
			return v[i].verb;
	return "shut down";
}

/* What became of the VM, as a sentence. */
static void
print_outcome(yajl_val r)
{
	const char *state = jstr(r, "state"), *reason = jstr(r, "reason");
	const char *action = jstr(r, "action");
	char vm[128], id[32], nid[32];
	double secs = 0;
	bool forced = false;

	jtext(r, "vm", vm, sizeof(vm));
	jtext(r, "id", id, sizeof(id));
	jtext(r, "new_id", nid, sizeof(nid));
	jnum(r, "seconds", &secs);
	jbool(r, "forced", &forced);
	if (state && !strcmp(state, "requested")) {
		printf("%s of %s (domain %s) requested\n", jstr(r, "request"),
		    vm, id);
		return;
	}
	if (!reason) {
		printf("%s (domain %s) was %s after %.1f s\n", vm, id,
		    state ? state : "gone", secs);
		return;
	}
	printf("%s (domain %s) %s%s after %.1f s; ", vm, id, verb(reason),
	    forced ? " (shut down from the hypervisor)" : "", secs);
	if (!action)
		printf("left to its toolstack\n");
	else if (!strcmp(action, "destroy"))
		printf("on_%s: destroyed\n", reason);
	else if (!strcmp(action, "restart"))
		printf("on_%s: restarted as domain %s\n", reason, nid);
	else
		printf("on_%s: %s, left %s\n", reason, action,
		    state ? state : "shut down");
}

static int
shutdown_cmd(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv, const char *method)
{
	static const struct option opts[] = {
		{ "wait", no_argument, NULL, 'w' },
		{ "timeout", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	bool wait = false, force = false;
	long timeout = -1, slack;
	yajl_val res = NULL;
	char *end, what[128];
	yajl_gen g;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (ch == 'w')
			wait = true;
		else if (ch == 'f')
			force = true;
		else if (ch == 't') {
			errno = 0;
			timeout = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || timeout < 1 ||
			    timeout > 3600)
				return vmctl_usage_error(cmd, "--timeout: 1 to "
				    "3600 seconds, not \"%s\"", optarg);
		} else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	if (timeout > 0 && !wait && !force)
		return vmctl_usage_error(cmd, "--timeout goes with --wait or "
		    "--force");
	/* The answer comes when it is done: wait that long for it. */
	if (wait || force) {
		slack = (long)(timeout > 0 ? timeout : 60) + SHUTDOWN_SLACK_S;
		if (!strcmp(method, M_VM_REBOOT))
			slack += RESTART_SLACK_S;
		if (slack * 1000 > ctl->timeout_ms)
			ctl->timeout_ms = (int)(slack * 1000);
	}
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, method);
	if (g) {
		gen_vm_ref(g, argv[optind]);
		if (wait)
			jg_kv_bool(g, P_WAIT, true);
		if (force)
			jg_kv_bool(g, P_FORCE, true);
		if (timeout > 0)
			jg_kv_i64(g, P_TIMEOUT, timeout);
	}
	rc = vmc_call(c, g, &res, &err);
	if (rc != 0) {
		snprintf(what, sizeof(what), "%s %s", cmd->name, argv[optind]);
		rc = vmc_report(ctl, what, rc, &err);
		goto out;
	}
	if (ctl->json)
		jprint(res, false);
	else
		print_outcome(res);
	rc = VMCTL_EXIT_OK;
out:
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

int
cmd_shutdown(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return shutdown_cmd(ctl, cmd, argc, argv, M_VM_SHUTDOWN);
}

int
cmd_reboot(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	return shutdown_cmd(ctl, cmd, argc, argv, M_VM_REBOOT);
}

/* ------------------------------------------------------------------ */
/* The console.                                                        */

static struct termios saved_term;
static bool term_raw;

static void
restore_term(void)
{
	if (term_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_term);
	term_raw = false;
}

static void
raw_term(int fd, struct termios *saved)
{
	struct termios t;

	if (tcgetattr(fd, &t) < 0)
		return;
	if (saved)
		*saved = t;
	cfmakeraw(&t);
	tcsetattr(fd, TCSANOW, &t);
}

static bool
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/*
 * Copy the terminal to the pty and back until Ctrl-] (on a terminal),
 * the end of stdin, or the console closing (the domain went).  0, or 1
 * when writing failed.
 */
static int
relay(int pty, bool interactive)
{
	char buf[4096];
	ssize_t n;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = STDIN_FILENO, .events = POLLIN },
			{ .fd = pty, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR && !vmctl_interrupted)
				continue;
			return 0;
		}
		if (p[1].revents) {
			n = read(pty, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				restore_term();
				vmctl_warnx("the console closed (the domain is "
				    "gone, or xenconsoled let it go)");
				return 0;
			}
			if (!write_all(STDOUT_FILENO, buf, (size_t)n))
				return 1;
		}
		if (p[0].revents) {
			char *esc;

			n = read(STDIN_FILENO, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0)
				return 0;	/* end of input: detach */
			esc = interactive ? memchr(buf, ESCAPE_CHAR, n) : NULL;
			if (esc)
				n = esc - buf;
			if (!write_all(pty, buf, (size_t)n))
				return 1;
			if (esc)
				return 0;
		}
	}
}

static void
on_signal(int sig)
{
	restore_term();
	signal(sig, SIG_DFL);
	raise(sig);
}

int
vmctl_console_attach(struct vmctl *ctl, const char *vm)
{
	struct vmc_client *c = NULL;
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	bool interactive;
	char what[128], id[32];
	int fd = -1, rc;

	snprintf(what, sizeof(what), "console %s", vm);
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	{
		yajl_gen g = vmc_request(c, M_VM_CONSOLE);

		if (g)
			gen_vm_ref(g, vm);
		rc = vmc_call(c, g, &res, &err);
	}
	if (rc != 0) {
		rc = vmc_report(ctl, what, rc, &err);
		goto out;
	}
	fd = vmc_take_fd(c);
	if (fd < 0) {
		vmctl_warnx("%s: the daemon sent no descriptor with its reply",
		    what);
		rc = VMCTL_EXIT_ERROR;
		goto out;
	}
	interactive = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	jtext(res, "id", id, sizeof(id));
	if (interactive) {
		fprintf(stderr, "Connected to the console of %s (domain %s, "
		    "%s); Ctrl-] detaches.\r\n", vm, id, jstr(res, "tty"));
		raw_term(fd, NULL);
		raw_term(STDIN_FILENO, &saved_term);
		term_raw = true;
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
	}
	/* The connection stays open: the daemon lets one client attach. */
	rc = relay(fd, interactive) ? VMCTL_EXIT_ERROR : VMCTL_EXIT_OK;
	restore_term();
	if (interactive)
		fputc('\n', stderr);
out:
	if (fd >= 0)
		close(fd);
	yajl_tree_free(res);
	vmc_error_done(&err);
	vmc_close(c);
	return rc;
}

int
cmd_console(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
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
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	if (!argv[optind][0])
		return vmctl_usage_error(cmd, "empty VM name");
	return vmctl_console_attach(ctl, argv[optind]);
}
