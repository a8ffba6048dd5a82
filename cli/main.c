/*
 * main.c - vmctl: global options, dispatch through the command table,
 * help and usage errors, signals.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"
#include "vmctl.h"

#define DEFAULT_TIMEOUT_S	30

volatile int vmctl_interrupted;
static const char *progname = "vmctl";

void
vmctl_warnx(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
vmctl_cmd_help(const struct vmctl_cmd *cmd, bool to_stderr)
{
	FILE *out = to_stderr ? stderr : stdout;
	const char *p, *nl;
	bool first = true;
	int pass;

	fprintf(out, "usage: %s [GLOBAL OPTIONS] %s [--json]%s%s\n\n%s\n",
	    progname, cmd->name, cmd->usage[0] ? " " : "", cmd->usage,
	    cmd->summary);
	/* Lines of `help` that start with two spaces are options. */
	fprintf(out, "\nOptions:\n");
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1)
			fprintf(out, "  --help          this help\n");
		for (p = cmd->help; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			if (!nl)
				nl = p + strlen(p);
			if ((pass == 0) == !strncmp(p, "  ", 2)) {
				if (pass == 1 && first)
					fputc('\n', out);
				if (pass == 1)
					first = false;
				fprintf(out, "%.*s\n", (int)(nl - p), p);
			}
			if (!*nl)
				break;
		}
	}
}

int
vmctl_usage_error(const struct vmctl_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	if (cmd)
		fprintf(stderr, "%s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		fprintf(stderr, "usage: %s %s%s%s (see %s %s --help)\n",
		    progname, cmd->name, cmd->usage[0] ? " " : "", cmd->usage,
		    progname, cmd->name);
	else
		fprintf(stderr, "see %s --help\n", progname);
	return VMCTL_EXIT_USAGE;
}

int
vmctl_opt_common(struct vmctl *ctl, const struct vmctl_cmd *cmd, int c)
{
	switch (c) {
	case 'j':
		ctl->json = true;
		return -1;
	case 'h':
		vmctl_cmd_help(cmd, false);
		return VMCTL_EXIT_OK;
	default:
		/* getopt has said what was wrong. */
		fprintf(stderr, "usage: %s %s%s%s (see %s %s --help)\n",
		    progname, cmd->name, cmd->usage[0] ? " " : "", cmd->usage,
		    progname, cmd->name);
		return VMCTL_EXIT_USAGE;
	}
}

int
vmctl_operands(const struct vmctl_cmd *cmd, int argc, char **argv, int n)
{
	if (argc - optind < n)
		return vmctl_usage_error(cmd, "missing argument");
	if (argc - optind > n)
		return vmctl_usage_error(cmd, "unexpected argument '%s'",
		    argv[optind + n]);
	return -1;
}

static void
on_signal(int sig)
{
	(void)sig;
	vmctl_interrupted = 1;
}

/*
 * Long-running views (create, scrub --wait, top, events) stop cleanly on
 * SIGINT/SIGTERM: no SA_RESTART, so a blocked poll() returns EINTR.
 */
void
vmctl_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* "unknown command 'lsit'; did you mean 'list'?" */
static int
unknown_command(const struct vmctl_cmd *cmd, const char *name)
{
	const char *near = vmctl_cmd_nearest(name);

	if (near)
		return vmctl_usage_error(cmd, "unknown command '%s'; did you "
		    "mean '%s'?", name, near);
	return vmctl_usage_error(cmd, "unknown command '%s'", name);
}

int
cmd_help(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	const struct vmctl_cmd *c;

	(void)ctl;
	if (argc > 2)
		return vmctl_usage_error(cmd, "too many arguments");
	if (argc == 2 && strcmp(argv[1], "--help") != 0) {
		if (!(c = vmctl_cmd_find(argv[1])))
			return unknown_command(cmd, argv[1]);
		vmctl_cmd_help(c, false);
		return VMCTL_EXIT_OK;
	}
	vmctl_usage_all(stdout, progname);
	return VMCTL_EXIT_OK;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmctl ctl = { 0 };
	const struct vmctl_cmd *cmd;
	const char *env;
	char *end;
	double t;
	int c;

	progname = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	ctl.prog = progname;
	ctl.timeout_ms = DEFAULT_TIMEOUT_S * 1000;
	env = getenv(VMBUILD_SOCKET_ENV);
	ctl.socket = env && env[0] ? env : VMBUILD_DEFAULT_SOCKET;

	/* '+': stop at the command; its options are its own. */
	while ((c = getopt_long(argc, argv, "+s:jt:hV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			ctl.socket = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 't':
			errno = 0;
			t = strtod(optarg, &end);
			if (errno || *end || end == optarg || t <= 0 ||
			    t > 86400)
				return vmctl_usage_error(NULL,
				    "--timeout wants seconds in (0, 86400], "
				    "not '%s'", optarg);
			ctl.timeout_ms = (int)(t * 1000);
			if (ctl.timeout_ms < 1)
				ctl.timeout_ms = 1;
			break;
		case 'h':
			vmctl_usage_all(stdout, progname);
			return VMCTL_EXIT_OK;
		case 'V':
			printf("vmctl (vmbuild) %s, protocol %d\n",
			    VMBUILD_VERSION, VMBUILD_PROTO_VERSION);
			return VMCTL_EXIT_OK;
		default:
			fprintf(stderr, "see %s --help\n", progname);
			return VMCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return vmctl_usage_error(NULL, "missing command");
	if (!ctl.socket[0])
		return vmctl_usage_error(NULL, "empty socket path");
	cmd = vmctl_cmd_find(argv[optind]);
	if (!cmd)
		return unknown_command(NULL, argv[optind]);
	argc -= optind;
	argv += optind;
	optind = 0;	/* GNU getopt: start over for the command */
	return cmd->handler(&ctl, cmd, argc, argv);
}
