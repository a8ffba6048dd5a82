/*
 * main.c - vmbuildd: options, the event loop, signals, systemd.
 *
 * vmbuildd builds and manages domains for clients of its control socket
 * (JSON-RPC 2.0, daemon/proto.h).  One libevent loop serves every
 * client; builds and hypervisor calls run on worker threads (worker.c).
 *
 * Start-up order: options, hypervisor, state directory and
 * reconciliation, socket, then READY=1 for systemd (or, without
 * --foreground, the parent process exits 0): a client that sees the
 * daemon ready sees every domain that exists.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "build.h"
#include "control.h"
#include "events.h"
#include "lifecycle.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "proto.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

/* Short hypervisor calls in flight at once; builds have their own. */
#define POOL_THREADS	4

struct vmbuildd vmbd;

static struct {
	const char	*socket;
	const char	*metrics;
	bool		foreground;
	int		verbose;
	enum log_target	log_target;
	uint32_t	scrub_wait_ms;
	int		ready_fd;	/* daemonizing: tell the parent */
	struct event	*ev_sig[4];
	struct event	*ev_watchdog;
	struct event	*ev_stop;	/* polls for the end of shutdown */
	uint64_t	watchdog_usec;
} M = { .ready_fd = -1 };

double
now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void
vmbd_status_changed(void)
{
	/* A no-op without systemd ($NOTIFY_SOCKET unset). */
	notify(false, "STATUS=%u VMs, %u builds running, %u clients%s",
	    vm_count(), task_running(), control_connections(),
	    vmbd.stopping ? ", stopping" : "");
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: vmbuildd [options]\n"
"\n"
"Builds and manages Xen domains for clients of its control socket.\n"
"\n"
"  --hypervisor sim:PATH|xen|auto  hypervisor backend (default auto)\n"
"  --socket PATH          control socket (default %s)\n"
"  --state-dir DIR        state directory (default %s)\n"
"  --populate engine|libxl  populate strategy (default engine)\n"
"  --scrub-wait SECONDS   when the nodes a VM is placed on are short of\n"
"                         scrubbed memory, wait up to SECONDS for the\n"
"                         background scrubber rather than have the\n"
"                         populate scrub inline (default 0: no wait)\n"
"  --metrics ADDR:PORT|none  Prometheus endpoint, GET /metrics\n"
"                         (default %s; none: no endpoint)\n"
"  --foreground           stay in the foreground (systemd, tests)\n"
"  --log-target auto|journal|syslog|stderr\n"
"                         where messages go (default auto: the journal\n"
"                         when stderr is connected to it, syslog once\n"
"                         daemonised without --foreground, else stderr)\n"
"  --max-request BYTES    largest request line (default %d)\n"
"  --max-connections N    clients at once (default %d)\n"
"  --max-tasks N          builds running at once (default %d)\n"
"  --request-timeout S    close a connection whose partial request\n"
"                         gets no more bytes for S s (default %d)\n"
"  -v, --verbose          debug messages\n"
"  -h, --help             this text\n"
"  -V, --version          print the version\n"
"\n"
"Signals: SIGTERM/SIGINT cancel running builds and stop; SIGHUP re-reads\n"
"group vmbuild and refreshes the domain list.\n",
	    VMBUILD_DEFAULT_SOCKET, VMBUILD_DEFAULT_STATE,
	    VMBUILD_DEFAULT_METRICS, VMBUILD_MAX_REQUEST,
	    VMBUILD_MAX_CONNECTIONS, VMBUILD_MAX_TASKS, VMBUILD_REQUEST_TIMEOUT);
}

static int
parse_count(const char *opt, const char *arg, unsigned long long min,
    unsigned long long max, unsigned long long *ret)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || arg[0] == '-' ||
	    v < min || v > max) {
		fprintf(stderr, "vmbuildd: %s: expected an integer from %llu "
		    "to %llu, got \"%s\"\n", opt, min, max, arg);
		return -1;
	}
	*ret = v;
	return 0;
}

static int
parse_options(int argc, char **argv)
{
	enum { O_MAXREQ = 256, O_MAXCONN, O_MAXTASKS, O_POPULATE, O_METRICS,
	    O_REQTIMEOUT, O_LOGTARGET, O_SCRUBWAIT };
	static const struct option longopts[] = {
		{ "hypervisor",	     required_argument,	NULL, 'H' },
		{ "socket",	     required_argument,	NULL, 's' },
		{ "state-dir",	     required_argument,	NULL, 'd' },
		{ "metrics",	     required_argument,	NULL, O_METRICS },
		{ "foreground",	     no_argument,	NULL, 'f' },
		{ "log-target",	     required_argument,	NULL, O_LOGTARGET },
		{ "populate",	     required_argument,	NULL, O_POPULATE },
		{ "scrub-wait",	     required_argument,	NULL, O_SCRUBWAIT },
		{ "max-request",     required_argument,	NULL, O_MAXREQ },
		{ "max-connections", required_argument,	NULL, O_MAXCONN },
		{ "request-timeout", required_argument,	NULL, O_REQTIMEOUT },
		{ "max-tasks",	     required_argument,	NULL, O_MAXTASKS },
		{ "verbose",	     no_argument,	NULL, 'v' },
		{ "help",	     no_argument,	NULL, 'h' },
		{ "version",	     no_argument,	NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	unsigned long long v;
	int c;

	vmbd.hypervisor = "auto";
	vmbd.state_dir = VMBUILD_DEFAULT_STATE;
	vmbd.strategy = VMB_POPULATE_ENGINE;
	vmbd.max_request = VMBUILD_MAX_REQUEST;
	vmbd.max_connections = VMBUILD_MAX_CONNECTIONS;
	vmbd.max_tasks = VMBUILD_MAX_TASKS;
	vmbd.request_timeout = VMBUILD_REQUEST_TIMEOUT;
	M.socket = VMBUILD_DEFAULT_SOCKET;
	while ((c = getopt_long(argc, argv, "H:s:d:fvhV", longopts, NULL))
	    != -1) {
		switch (c) {
		case 'H':
			vmbd.hypervisor = optarg;
			break;
		case 's':
			M.socket = optarg;
			break;
		case 'd':
			vmbd.state_dir = optarg;
			break;
		case O_METRICS:
			if (strcmp(optarg, "none") != 0 &&
			    strrchr(optarg, ':') == NULL) {
				fprintf(stderr, "vmbuildd: --metrics: expected "
				    "ADDR:PORT, got \"%s\"\n", optarg);
				return 2;
			}
			M.metrics = optarg;
			break;
		case 'f':
			M.foreground = true;
			break;
		case O_LOGTARGET:
			if (log_target_parse(optarg, &M.log_target) < 0) {
				fprintf(stderr, "vmbuildd: --log-target: "
				    "expected auto, journal, syslog or stderr, "
				    "got \"%s\"\n", optarg);
				return 2;
			}
			break;
		case O_POPULATE:
			if (vmb_populate_strategy_parse(optarg,
			    &vmbd.strategy) < 0) {
				fprintf(stderr, "vmbuildd: --populate: expected "
				    "engine or libxl, got \"%s\"\n", optarg);
				return 2;
			}
			break;
		case O_SCRUBWAIT:
			if (parse_count("--scrub-wait", optarg, 0, 3600,
			    &v) < 0)
				return 2;
			M.scrub_wait_ms = (uint32_t)v * 1000;
			break;
		case O_MAXREQ:
			if (parse_count("--max-request", optarg, 64,
			    1ull << 30, &v) < 0)
				return 2;
			vmbd.max_request = v;
			break;
		case O_MAXCONN:
			if (parse_count("--max-connections", optarg, 1, 65536,
			    &v) < 0)
				return 2;
			vmbd.max_connections = v;
			break;
		case O_REQTIMEOUT:
			if (parse_count("--request-timeout", optarg, 1, 3600,
			    &v) < 0)
				return 2;
			vmbd.request_timeout = v;
			break;
		case O_MAXTASKS:
			if (parse_count("--max-tasks", optarg, 1, 4096, &v) < 0)
				return 2;
			vmbd.max_tasks = v;
			break;
		case 'v':
			M.verbose++;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("vmbuildd (vmbuild) %s, protocol %d\n",
			    VMB_VERSION, VMBUILD_PROTO_VERSION);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmbuildd: unexpected argument \"%s\"\n",
		    argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

/*
 * Without --foreground, as daemon(7) describes: fork, and let the parent
 * exit only when the daemon is ready (exit 0) or has failed (exit 1), so
 * that whoever started us knows which; in the child, a new session and a
 * second fork, so that the daemon is no session leader and can never get
 * a controlling terminal back; the working directory /, stdin and stdout
 * /dev/null.  Messages stay on stderr until the daemon is ready (the
 * parent, and the terminal it holds, wait for that, and start-up errors
 * belong there); then log_detach() points stderr at /dev/null too and
 * sends messages to syslog.
 */
static void
daemonize(void)
{
	int fds[2], status;
	pid_t pid;
	char c;

	if (pipe(fds) < 0)
		fatal("pipe");
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) == 1)
			_exit(0);
		/* The first child exits at once; the daemon failed. */
		waitpid(pid, &status, 0);
		_exit(1);
	}
	close(fds[0]);
	if (setsid() < 0)
		fatal("setsid");
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid > 0)
		_exit(0);
	M.ready_fd = fds[1];
	if (chdir("/") < 0)
		fatal("chdir /");
	if (freopen("/dev/null", "r", stdin) == NULL ||
	    freopen("/dev/null", "w", stdout) == NULL)
		fatal("/dev/null");
}

static void
ctx_log(void *user, const char *msg)
{
	(void)user;
	log_debug("libvmbuild: %s", msg);
}

static void
stop_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { 0, 50000 };

	(void)fd;
	(void)what;
	(void)arg;
	/* Builds undo themselves after cancel; wait for every job. */
	if (worker_pending() == 0) {
		event_base_loopbreak(vmbd.base);
		return;
	}
	evtimer_add(M.ev_stop, &tv);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	switch (sig) {
	case SIGHUP:
		log_info("SIGHUP: re-reading group vmbuild, refreshing domains");
		control_reload_group();
		vm_refresh_kick();
		break;
	case SIGTERM:
	case SIGINT:
		if (vmbd.stopping) {
			log_notice("second signal: exiting now");
			exit(1);
		}
		log_notice("%s: stopping (cancelling %u running builds)",
		    strsignal(sig), task_running());
		vmbd.stopping = true;
		build_stop();
		notify(false, "STOPPING=1");
		control_stop();
		task_cancel_all();
		stop_poll_cb(-1, 0, NULL);
		break;
	default:
		break;
	}
}

static void
watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { M.watchdog_usec / 2000000,
	    (M.watchdog_usec / 2) % 1000000 };

	(void)fd;
	(void)what;
	(void)arg;
	/* The loop is alive if this runs: that is what systemd asks. */
	notify(false, "WATCHDOG=1");
	evtimer_add(M.ev_watchdog, &tv);
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct control_opts copts;
	int rc;

	rc = parse_options(argc, argv);
	if (rc != 0)
		return rc;
	log_init(M.verbose, M.log_target);
	notify_init();
	/* A client gone mid-reply must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (!M.foreground)
		daemonize();
	vmbd.started_at = now_real();

	rc = vmb_ctx_open(vmbd.hypervisor, &vmbd.ctx);
	if (rc < 0)
		fatalx("cannot open hypervisor \"%s\": %s", vmbd.hypervisor,
		    strerror(-rc));
	if (M.verbose)
		vmb_ctx_set_log(vmbd.ctx, ctx_log, NULL);
	log_info("vmbuildd %s: hypervisor %s (%s), populate %s", VMB_VERSION,
	    vmb_ctx_hypervisor(vmbd.ctx), vmb_ctx_backend(vmbd.ctx),
	    vmb_populate_strategy_name(vmbd.strategy));
	build_init(&(struct build_config){ .ctx = vmbd.ctx,
	    .strategy = vmbd.strategy, .max_tasks = vmbd.max_tasks,
	    .scrub_wait_ms = M.scrub_wait_ms,
	    .status_changed = vmbd_status_changed });
	if (state_init(vmbd.state_dir) < 0)
		return 1;
	lifecycle_open();
	if (vm_reconcile() < 0)
		return 1;

	copts.path = M.socket;
	copts.max_request = vmbd.max_request;
	copts.max_connections = vmbd.max_connections;
	copts.request_timeout = vmbd.request_timeout;
	if (control_listen(&copts) < 0)
		fatalx("cannot listen on %s", M.socket);

	vmbd.base = event_base_new();
	if (vmbd.base == NULL)
		fatalx("event_base_new failed");
	if (worker_init(vmbd.base, POOL_THREADS) < 0)
		fatalx("cannot start worker threads");
	if (task_init(vmbd.base) < 0 || events_init(vmbd.base) < 0 ||
	    vm_init(vmbd.base) < 0 || lifecycle_start(vmbd.base) < 0 ||
	    control_start(vmbd.base) < 0)
		fatalx("cannot set up the event loop");
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		M.ev_sig[i] = evsignal_new(vmbd.base, sigs[i], signal_cb, NULL);
		if (M.ev_sig[i] == NULL || event_add(M.ev_sig[i], NULL) < 0)
			fatalx("cannot catch signal %d", sigs[i]);
	}
	/*
	 * The default address may be taken by another daemon on this host:
	 * then run without metrics.  An address asked for must work.
	 */
	if (M.metrics == NULL ||
	    strcmp(M.metrics, "none") != 0) {
		const char *addr = M.metrics ? M.metrics :
		    VMBUILD_DEFAULT_METRICS;

		rc = metrics_init(vmbd.base, addr);
		if (rc < 0 && M.metrics != NULL)
			fatalx("--metrics %s: %s", addr, strerror(-rc));
		if (rc < 0)
			log_warnx("metrics endpoint %s: %s; running without",
			    addr, strerror(-rc));
	}
	M.ev_stop = evtimer_new(vmbd.base, stop_poll_cb, NULL);
	if (sd_watchdog_enabled(0, &M.watchdog_usec) > 0 &&
	    M.watchdog_usec > 0) {
		M.ev_watchdog = evtimer_new(vmbd.base, watchdog_cb, NULL);
		watchdog_cb(-1, 0, NULL);
	}

	/* One message, so that systemd shows a status from the start. */
	notify(true, "READY=1\nSTATUS=ready: %u VMs, listening", vm_count());
	log_notice("ready: %u VMs, socket %s", vm_count(),
	    control_socket_activated() ? "from systemd" : M.socket);
	if (M.ready_fd >= 0) {
		(void)!write(M.ready_fd, "1", 1);
		close(M.ready_fd);
		M.ready_fd = -1;
		log_detach();
	}

	event_base_dispatch(vmbd.base);

	if (!vmbd.stopping)
		control_stop();
	worker_shutdown();
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		event_free(M.ev_sig[i]);
	if (M.ev_watchdog != NULL)
		event_free(M.ev_watchdog);
	event_free(M.ev_stop);
	metrics_stop();
	lifecycle_stop();
	events_stop();
	task_stop();
	vm_stop();
	event_base_free(vmbd.base);
	vmb_ctx_free(vmbd.ctx);
	notify_close();
	log_notice("stopped");
	return 0;
}
