/*
 * main.c - vmbuildd: options, the event loop, signals, systemd.
 *
 * vmbuildd builds and manages domains for clients of its control socket
 * (JSON-RPC 2.0, daemon/proto.h).  One libevent loop serves every
 * client; builds and hypervisor calls run on worker threads (worker.c).
 *
 * Start-up order: options, the state directory's lock (one daemon per
 * state directory), hypervisor, reconciliation, socket, then READY=1 for systemd (or, without
 * --foreground, the parent process exits 0): a client that sees the
 * daemon ready sees every domain that exists.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "build.h"
#include "control.h"
#include "cpukeep.h"
#include "dm.h"
#include "events.h"
#include "images.h"
#include "lifecycle.h"
#include "log.h"
#include "methods.h"
#include "metrics.h"
#include "migrate.h"
#include "notify.h"
#include "proto.h"
#include "reap.h"
#include "reconcile.h"
#include "rpc.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

/* Short hypervisor calls in flight at once; builds have their own. */
#define POOL_THREADS	4
/*
 * After SIGTERM, running builds are cancelled and undo themselves, which
 * takes a moment (a hypervisor call that does not answer is abandoned
 * within hvclient's grace).  Should a thread still be stuck after this
 * long (a file system that does not answer), the daemon exits anyway:
 * the builds' records make the next start undo them.
 */
#define STOP_GRACE_SEC	30
/* Seconds between looks at whether freed memory can go back. */
#define TRIM_INTERVAL_SEC	2
/*
 * malloc's arenas (its default: 8 per CPU).  Build, worker and console
 * threads come and go, each taking an arena; what one keeps after a
 * burst is fragments a trim cannot give back, and with many arenas it
 * varied from 12 to 21 MiB after the same load (tests/daemon/load.py,
 * 500 clients, on 2 CPUs beside a QEMU).  With 2: 9.8 to 11.7 MiB, at
 * the same request rate: the threads allocate little on hot paths (a
 * populate worker none).  MALLOC_ARENA_MAX in the environment wins.
 */
#define ARENA_MAX	2

struct vmbuildd vmbd;

static struct {
	const char	*socket;
	const char	*ro_socket;	/* NULL: derived from socket */
	const char	*group;
	const char	*metrics;
	unsigned	max_metrics;
	unsigned	metrics_timeout;	/* s */
	unsigned	max_ro_conns, max_user_conns, idle_timeout;
	unsigned	hv_timeout;	/* s */
	unsigned	hotplug_timeout;	/* s; 0: libvmbuild's default */
	bool		after_hotplug;	/* xl's order: unpause after them */
	bool		scripts;	/* Xen's scripts for every device */
	bool		restore_engine;	/* --xen-restore=engine (default) */
	enum cpukeep_mode keep_cpu;	/* --keep-cpu (default auto) */
	unsigned	image_cache;		/* MiB of unpacked kernels; 0: off */
	size_t		max_output;
	double		stop_mono;	/* when SIGTERM came */
	bool		foreground;
	int		verbose;
	enum log_target	log_target;
	uint32_t	scrub_wait_ms;
	/* HVM guests: the device model and firmware (NULL: Debian's). */
	const char	*device_model, *hvmloader, *seabios, *ovmf;
	int		ready_fd;	/* daemonizing: tell the parent */
	struct event	*ev_sig[4];
	struct event	*ev_watchdog;
	struct event	*ev_trim;	/* give freed heap back when quiet */
	uint64_t	trim_seen;	/* requests at the last trim */
	uint64_t	tick_seen;	/* requests at the last look */
	struct event	*ev_stop;	/* polls for the end of shutdown */
	uint64_t	watchdog_usec;
} M = { .ready_fd = -1, .restore_engine = true };

/* vmbd_status_changed()'s hook: tell systemd what we are doing. */
static void
status_send(void)
{
	/* A no-op without systemd ($NOTIFY_SOCKET unset). */
	notify_status("STATUS=%u VMs, %u builds running, %u clients%s",
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
"  --ro-socket PATH|none  read-only socket for anyone (default: beside\n"
"                         the control socket, NAME-ro.sock)\n"
"  --group NAME           group that may change things besides root\n"
"                         (default vmbuild)\n"
"  --image-dir DIR        kernels and ramdisks a client may name by path\n"
"                         (repeatable); others must come as descriptors\n"
"  --state-dir DIR        state directory (default %s)\n"
"  --device-model PATH    HVM guests' device model (default\n"
"                         " DM_DEFAULT_PATH ")\n"
"  --dm-user auto|required|USER  whom the device model runs as (-runas):\n"
"                         auto as libxl (xen-qemuuser-range-base + domid,\n"
"                         else xen-qemuuser-shared, else root with a\n"
"                         warning); required refuses root (default auto)\n"
"  --hvmloader PATH, --seabios PATH, --ovmf PATH\n"
"                         HVM guests' firmware (default Debian's)\n"
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
"  --max-connections N    clients of the control socket at once\n"
"                         (default %d)\n"
"  --max-ro-connections N  clients of the read-only socket (default %d)\n"
"  --max-user-connections N  clients of one uid on both, root excepted\n"
"                         (default %d)\n"
"  --max-tasks N          builds running at once (default %d)\n"
"  --max-output BYTES     replies and events queued for all clients;\n"
"                         over it the biggest client is dropped\n"
"                         (default %u)\n"
"  --max-metrics-connections N  HTTP clients at once (default %d)\n"
"  --metrics-request-timeout S  close an HTTP client whose request is\n"
"                         not complete S s after it connected or had\n"
"                         its last reply (default %d)\n"
"  --request-timeout S    close a connection whose request is not\n"
"                         complete S s after its first byte (default %d)\n"
"  --idle-timeout S       close a connection that does nothing for S s\n"
"                         (subscribers excepted; default %d)\n"
"  --hypervisor-timeout S  fail a hypervisor call after S s (default %d;\n"
"                         0: wait for ever)\n"
"  --restart-backoff S    longest wait before a VM's restart (on_*=\n"
"                         restart): 0, 1, 2, 4 s... up to S (default %d;\n"
"                         0: none); 10 restarts within an hour at most\n"
"  --hotplug-timeout S    how long a device's hotplug script may take\n"
"                         (default 40, libxl's; the backend's InitWait\n"
"                         is waited for a quarter of it)\n"
"  --hotplug-scripts      run Xen's block and vif-bridge scripts for\n"
"                         devices that name no script= (default:\n"
"                         vmbuildd does what they do, without forks)\n"
"  --unpause-after-hotplug  start a PVH guest only once its hotplug\n"
"                         scripts have ended, as xl does (default: once\n"
"                         its devices are in xenstore; vm.create returns\n"
"                         when the scripts have ended either way)\n"
"  --xen-restore libxenguest|engine  who reads a Xen restore's (and an\n"
"                         incoming migration's) libxc stream: vmbuild's\n"
"                         own reader into memory the populate engine\n"
"                         built (default), or libxenguest, which populates\n"
"                         the guest as the stream comes\n"
"  --image-cache MIB      keep kernels unpacked from bzImages, at most\n"
"                         MIB of them (default %d; 0: off)\n"
"  --keep-cpu auto|never|always  all of the daemon's threads on one CPU\n"
"                         for a build: auto (default) where the CPUs'\n"
"                         steal in the seconds before it was a third or\n"
"                         more of their wanted time (on Xen: dom0's vCPUs\n"
"                         waiting behind guests')\n"
"  -v, --verbose          debug messages\n"
"  -h, --help             this text\n"
"  -V, --version          print the version\n"
"\n"
"Signals: SIGTERM/SIGINT cancel running builds and stop; SIGHUP re-reads\n"
"group vmbuild and refreshes the domain list.\n",
	    VMBUILD_DEFAULT_SOCKET, VMBUILD_DEFAULT_STATE,
	    VMBUILD_DEFAULT_METRICS, VMBUILD_MAX_REQUEST,
	    VMBUILD_MAX_CONNECTIONS, VMBUILD_MAX_RO_CONNECTIONS,
	    VMBUILD_MAX_USER_CONNECTIONS, VMBUILD_MAX_TASKS, VMBUILD_MAX_OUTPUT,
	    VMBUILD_MAX_METRICS_CONNECTIONS, VMBUILD_METRICS_REQUEST_TIMEOUT,
	    VMBUILD_REQUEST_TIMEOUT, VMBUILD_IDLE_TIMEOUT,
	    VMBUILD_HYPERVISOR_TIMEOUT, VMBUILD_RESTART_BACKOFF,
	    (int)(VMB_IMAGE_CACHE_DEFAULT >> 20));
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

enum { O_MAXREQ = 256, O_MAXCONN, O_MAXTASKS, O_POPULATE, O_METRICS,
    O_REQTIMEOUT, O_LOGTARGET, O_SCRUBWAIT, O_ROSOCK, O_GROUP, O_IMAGEDIR,
    O_MAXOUT, O_MAXMETRICS, O_HVTIMEOUT, O_HPTIMEOUT, O_MAXROCONN,
    O_MAXUSERCONN, O_IDLETIMEOUT, O_METRICSTIMEOUT, O_RESTARTBACKOFF,
    O_DM, O_HVMLOADER, O_SEABIOS, O_OVMF, O_DM_USER, O_AFTERHOTPLUG,
    O_IMAGECACHE, O_HPSCRIPTS, O_XENRESTORE, O_KEEPCPU };

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
	{ "ro-socket",	     required_argument,	NULL, O_ROSOCK },
	{ "group",	     required_argument,	NULL, O_GROUP },
	{ "image-dir",	     required_argument,	NULL, O_IMAGEDIR },
	{ "device-model",    required_argument,	NULL, O_DM },
	{ "dm-user",	     required_argument,	NULL, O_DM_USER },
	{ "hvmloader",	     required_argument,	NULL, O_HVMLOADER },
	{ "seabios",	     required_argument,	NULL, O_SEABIOS },
	{ "ovmf",	     required_argument,	NULL, O_OVMF },
	{ "max-output",	     required_argument,	NULL, O_MAXOUT },
	{ "max-metrics-connections", required_argument, NULL, O_MAXMETRICS },
	{ "hypervisor-timeout", required_argument, NULL, O_HVTIMEOUT },
	{ "hotplug-timeout", required_argument, NULL, O_HPTIMEOUT },
	{ "unpause-after-hotplug", no_argument,	NULL, O_AFTERHOTPLUG },
	{ "hotplug-scripts", no_argument,	NULL, O_HPSCRIPTS },
	{ "xen-restore",     required_argument,	NULL, O_XENRESTORE },
	{ "image-cache",     required_argument,	NULL, O_IMAGECACHE },
	{ "keep-cpu",	     required_argument,	NULL, O_KEEPCPU },
	{ "max-ro-connections", required_argument, NULL, O_MAXROCONN },
	{ "max-user-connections", required_argument, NULL, O_MAXUSERCONN },
	{ "idle-timeout",    required_argument,	NULL, O_IDLETIMEOUT },
	{ "metrics-request-timeout", required_argument, NULL, O_METRICSTIMEOUT },
	{ "restart-backoff", required_argument, NULL, O_RESTARTBACKOFF },
	{ "verbose",	     no_argument,	NULL, 'v' },
	{ "help",	     no_argument,	NULL, 'h' },
	{ "version",	     no_argument,	NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

/*
 * The options that take a count: their bounds, and where the value goes
 * (times `scale`).  One line per option, so that a new limit is one line
 * here and one in longopts.
 */
static const struct count_option {
	int			 id;
	const char		*name;
	unsigned long long	 min, max, scale;
	unsigned		*u;	/* one of u, z is the destination */
	size_t			*z;
} count_options[] = {
	{ O_SCRUBWAIT,	 "--scrub-wait", 0, 3600, 1000, &M.scrub_wait_ms, NULL },
	{ O_MAXREQ,	 "--max-request", 64, 1ull << 30, 1, NULL,
	    &vmbd.max_request },
	{ O_MAXCONN,	 "--max-connections", 1, 65536, 1,
	    &vmbd.max_connections, NULL },
	{ O_REQTIMEOUT,	 "--request-timeout", 1, 3600, 1,
	    &vmbd.request_timeout, NULL },
	{ O_MAXTASKS,	 "--max-tasks", 1, 4096, 1, &vmbd.max_tasks, NULL },
	{ O_MAXOUT,	 "--max-output", 1 << 20, 1ull << 34, 1, NULL,
	    &M.max_output },
	{ O_MAXMETRICS,	 "--max-metrics-connections", 1, 65536, 1,
	    &M.max_metrics, NULL },
	{ O_HVTIMEOUT,	 "--hypervisor-timeout", 0, 86400, 1, &M.hv_timeout,
	    NULL },
	{ O_HPTIMEOUT,	 "--hotplug-timeout", 4, 3600, 1, &M.hotplug_timeout,
	    NULL },
	{ O_IMAGECACHE,	 "--image-cache", 0, 65536, 1, &M.image_cache, NULL },
	{ O_RESTARTBACKOFF, "--restart-backoff", 0, 3600, 1,
	    &vmbd.restart_backoff, NULL },
	{ O_MAXROCONN,	 "--max-ro-connections", 1, 65536, 1, &M.max_ro_conns,
	    NULL },
	{ O_MAXUSERCONN, "--max-user-connections", 1, 65536, 1,
	    &M.max_user_conns, NULL },
	{ O_IDLETIMEOUT, "--idle-timeout", 1, 86400, 1, &M.idle_timeout, NULL },
	{ O_METRICSTIMEOUT, "--metrics-request-timeout", 1, 3600, 1,
	    &M.metrics_timeout, NULL },
};

/* A count option: 0 and stored, 1 if `c` is not one, -1 if refused. */
static int
parse_count_option(int c, const char *arg)
{
	unsigned long long v;

	for (size_t i = 0; i < sizeof(count_options) /
	    sizeof(count_options[0]); i++) {
		const struct count_option *o = &count_options[i];

		if (o->id != c)
			continue;
		if (parse_count(o->name, arg, o->min, o->max, &v) < 0)
			return -1;
		if (o->u != NULL)
			*o->u = (unsigned)(v * o->scale);
		else
			*o->z = (size_t)(v * o->scale);
		return 0;
	}
	return 1;
}

/* The options that are not counts; 0, or an exit code. */
static int
parse_option(int c, const char *arg)
{
	switch (c) {
	case 'H':
		vmbd.hypervisor = arg;
		break;
	case 's':
		M.socket = arg;
		break;
	case 'd':
		vmbd.state_dir = arg;
		break;
	case O_METRICS:
		if (strcmp(arg, "none") != 0 && strrchr(arg, ':') == NULL) {
			fprintf(stderr, "vmbuildd: --metrics: expected "
			    "ADDR:PORT, got \"%s\"\n", arg);
			return 2;
		}
		M.metrics = arg;
		break;
	case 'f':
		M.foreground = true;
		break;
	case O_AFTERHOTPLUG:
		M.after_hotplug = true;
		break;
	case O_HPSCRIPTS:
		M.scripts = true;
		break;
	case O_XENRESTORE:
		if (strcmp(arg, "libxenguest") == 0)
			M.restore_engine = false;
		else if (strcmp(arg, "engine") == 0)
			M.restore_engine = true;
		else {
			fprintf(stderr, "vmbuildd: --xen-restore: expected "
			    "libxenguest or engine, got \"%s\"\n", arg);
			return 2;
		}
		break;
	case O_KEEPCPU:
		if (cpukeep_mode_parse(arg, &M.keep_cpu) < 0) {
			fprintf(stderr, "vmbuildd: --keep-cpu: expected auto, "
			    "never or always, got \"%s\"\n", arg);
			return 2;
		}
		break;
	case O_LOGTARGET:
		if (log_target_parse(arg, &M.log_target) < 0) {
			fprintf(stderr, "vmbuildd: --log-target: expected auto, "
			    "journal, syslog or stderr, got \"%s\"\n", arg);
			return 2;
		}
		break;
	case O_POPULATE:
		if (vmb_populate_strategy_parse(arg, &vmbd.strategy) < 0) {
			fprintf(stderr, "vmbuildd: --populate: expected engine "
			    "or libxl, got \"%s\"\n", arg);
			return 2;
		}
		break;
	case O_ROSOCK:
		M.ro_socket = arg;
		break;
	case O_DM_USER:
		if (dm_set_user(arg) < 0)
			return 2;
		break;
	case O_DM:
	case O_HVMLOADER:
	case O_SEABIOS:
	case O_OVMF:
		if (arg[0] != '/') {
			fprintf(stderr, "vmbuildd: --%s: expected an absolute "
			    "path, got \"%s\"\n", c == O_DM ? "device-model" :
			    c == O_HVMLOADER ? "hvmloader" : c == O_SEABIOS ?
			    "seabios" : "ovmf", arg);
			return 2;
		}
		*(c == O_DM ? &M.device_model : c == O_HVMLOADER ?
		    &M.hvmloader : c == O_SEABIOS ? &M.seabios : &M.ovmf) = arg;
		break;
	case O_GROUP:
		M.group = arg;
		break;
	case O_IMAGEDIR:
		if (images_add_dir(arg) < 0)
			return 2;
		break;
	case 'v':
		M.verbose++;
		break;
	case 'h':
		usage(stdout);
		exit(0);
	case 'V':
		printf("vmbuildd (vmbuild) %s, protocol %d\n", VMB_VERSION,
		    VMBUILD_PROTO_VERSION);
		exit(0);
	default:
		usage(stderr);
		return 2;
	}
	return 0;
}

static int
parse_options(int argc, char **argv)
{
	int c, rc;

	vmbd.hypervisor = "auto";
	vmbd.state_dir = VMBUILD_DEFAULT_STATE;
	vmbd.strategy = VMB_POPULATE_ENGINE;
	vmbd.max_request = VMBUILD_MAX_REQUEST;
	vmbd.max_connections = VMBUILD_MAX_CONNECTIONS;
	vmbd.max_tasks = VMBUILD_MAX_TASKS;
	vmbd.request_timeout = VMBUILD_REQUEST_TIMEOUT;
	vmbd.restart_backoff = VMBUILD_RESTART_BACKOFF;
	M.socket = VMBUILD_DEFAULT_SOCKET;
	M.max_metrics = VMBUILD_MAX_METRICS_CONNECTIONS;
	M.metrics_timeout = VMBUILD_METRICS_REQUEST_TIMEOUT;
	M.max_ro_conns = VMBUILD_MAX_RO_CONNECTIONS;
	M.max_user_conns = VMBUILD_MAX_USER_CONNECTIONS;
	M.idle_timeout = VMBUILD_IDLE_TIMEOUT;
	M.hv_timeout = VMBUILD_HYPERVISOR_TIMEOUT;
	M.image_cache = VMB_IMAGE_CACHE_DEFAULT >> 20;
	M.max_output = VMBUILD_MAX_OUTPUT;
	while ((c = getopt_long(argc, argv, "H:s:d:fvhV", longopts, NULL))
	    != -1) {
		rc = parse_count_option(c, optarg);
		if (rc < 0)
			return 2;
		if (rc > 0 && (rc = parse_option(c, optarg)) != 0)
			return rc;
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
	if (now_mono() - M.stop_mono > STOP_GRACE_SEC) {
		log_errx("%u jobs still running %d s after the stop signal; "
		    "exiting anyway (the records of their builds make the next "
		    "start undo them)", worker_pending(), STOP_GRACE_SEC);
		notify_close();
		exit(1);
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
		M.stop_mono = now_mono();
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

/*
 * malloc keeps what a burst of clients freed (in the loop's heap and the
 * worker threads' arenas) for reuse; a daemon that runs for months
 * should not hold its peak for ever.  After a quiet spell with no build
 * running, the freed memory goes back to the kernel (malloc_trim).
 */
static void
trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { TRIM_INTERVAL_SEC, 0 };
	uint64_t seen = rpc_requests();

	(void)fd;
	(void)what;
	(void)arg;
	/* Quiet: no request since the last look, some since the last trim. */
	if (seen == M.tick_seen && seen != M.trim_seen &&
	    task_running() == 0 && worker_pending() == 0) {
		malloc_trim(0);
		M.trim_seen = seen;
	}
	M.tick_seen = seen;
	evtimer_add(M.ev_trim, &tv);
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

/* libevent's own warnings (evhttp's among them), rate-limited. */
static void
libevent_log(int severity, const char *msg)
{
	static struct log_rate rate;
	unsigned held;

	if (severity < EVENT_LOG_WARN) {
		log_debug("libevent: %s", msg);
		return;
	}
	if (log_rate_ok(&rate, 10, &held))
		log_warnx("libevent: %s%s", msg, held ? " (and earlier "
		    "messages not logged)" : "");
}

/*
 * Descriptors: raise the soft limit to the hard one (libevent uses
 * epoll, not select), and say so if the limits of the options do not
 * fit in it.
 */
static void
raise_nofile(void)
{
	struct rlimit rl;
	rlim_t want;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Clients, HTTP clients, build images and some for the rest. */
	want = ((rlim_t)vmbd.max_connections + M.max_ro_conns) *
	    (CONTROL_MAX_FDS + 1) + M.max_metrics +
	    (rlim_t)vmbd.max_tasks * 4 + 256;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
		log_warnx("only %llu descriptors (RLIMIT_NOFILE) for up to "
		    "%llu at the limits given (LimitNOFILE= in the unit); "
		    "beyond, accepts pause and retry", (unsigned long long)
		    rl.rlim_cur, (unsigned long long)want);
}

/* The read-only socket's default: NAME-ro.sock beside NAME.sock. */
static const char *
ro_socket_path(void)
{
	static char buf[4096];
	size_t len = strlen(M.socket);

	if (M.ro_socket != NULL)
		return strcmp(M.ro_socket, "none") ? M.ro_socket : NULL;
	if (len > 5 && !strcmp(M.socket + len - 5, ".sock"))
		snprintf(buf, sizeof(buf), "%.*s-ro.sock", (int)(len - 5),
		    M.socket);
	else
		snprintf(buf, sizeof(buf), "%s-ro", M.socket);
	return buf;
}

/*
 * The metrics endpoint, before the control socket: a --metrics that
 * cannot be bound stops the start before a socket exists.  The default
 * address may be taken by another daemon on this host: then run without
 * metrics.  An address asked for must work.
 */
static void
start_metrics(void)
{
	const char *addr = M.metrics ? M.metrics : VMBUILD_DEFAULT_METRICS;
	int rc;

	if (strcmp(addr, "none") == 0)
		return;
	rc = metrics_init(vmbd.base, addr, M.max_metrics, M.metrics_timeout);
	if (rc < 0 && M.metrics != NULL)
		fatalx("--metrics %s: %s", addr, strerror(-rc));
	if (rc < 0)
		log_warnx("metrics endpoint %s: %s; running without", addr,
		    strerror(-rc));
}

/* The hypervisor's context, with the options that shape its calls. */
static void
open_hypervisor(void)
{
	int rc = vmb_ctx_open(vmbd.hypervisor, &vmbd.ctx), readers;
	char restore[64] = "";

	if (rc < 0)
		fatalx("cannot open hypervisor \"%s\": %s", vmbd.hypervisor,
		    strerror(-rc));
	vmb_ctx_set_timeout(vmbd.ctx, M.hv_timeout * 1000);
	if (M.hotplug_timeout)
		vmb_ctx_set_hotplug_timeout(vmbd.ctx, M.hotplug_timeout * 1000);
	vmb_ctx_set_builtin_hotplug(vmbd.ctx, !M.scripts);
	vmb_ctx_set_image_cache(vmbd.ctx, (uint64_t)M.image_cache << 20);
	if (M.restore_engine && vmb_native_stream(vmbd.ctx) &&
	    (rc = vmb_ctx_set_native_restore(vmbd.ctx,
	    VMB_NATIVE_RESTORE_ENGINE)) < 0)
		fatalx("--xen-restore engine: %s", strerror(-rc));
	/* Said now, not at the first restore that would fail on it. */
	if ((readers = vmb_restore_readers()) < 0)
		fatalx("VMBUILD_RESTORE_READERS=\"%s\": not a number of "
		    "reader threads from 0 to 16",
		    getenv("VMBUILD_RESTORE_READERS"));
	if (M.verbose)
		vmb_ctx_set_log(vmbd.ctx, ctx_log, NULL);
	if (vmb_native_stream(vmbd.ctx) &&
	    !vmb_native_restore_populates(vmbd.ctx))
		snprintf(restore, sizeof(restore), ", Xen restore engine (%d "
		    "reader thread%s)", readers, readers == 1 ? "" : "s");
	else if (vmb_native_stream(vmbd.ctx))
		snprintf(restore, sizeof(restore), ", Xen restore libxenguest");
	log_info("vmbuildd %s: hypervisor %s (%s), populate %s%s", VMB_VERSION,
	    vmb_ctx_hypervisor(vmbd.ctx), vmb_ctx_backend(vmbd.ctx),
	    vmb_populate_strategy_name(vmbd.strategy), restore);
}

/*
 * The loop's base, its time precise: libevent's coarse clock (a tick
 * of several milliseconds) would make its time, cached once per round,
 * the same for several rounds; metrics.c tells rounds apart by it.
 */
static struct event_base *
new_base(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base;

	if (cfg == NULL)
		return NULL;
	(void)event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base;
}

int
main(int argc, char **argv)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	int rc;

	if (getenv("MALLOC_ARENA_MAX") == NULL)
		(void)mallopt(M_ARENA_MAX, ARENA_MAX);
	rc = parse_options(argc, argv);
	if (rc != 0)
		return rc;
	log_init(M.verbose, M.log_target);
	notify_init();
	vmbd_status_hook(status_send);
	event_set_log_callback(libevent_log);
	/* A client gone mid-reply must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (!M.foreground)
		daemonize();
	vmbd.started_at = now_real();
	raise_nofile();
	/* Locked before the hypervisor or a record is touched (state.c). */
	if (state_init(vmbd.state_dir) < 0)
		return 1;

	open_hypervisor();
	dm_init(M.device_model, vmbd.state_dir);
	build_init(&(struct build_config){ .ctx = vmbd.ctx,
	    .strategy = vmbd.strategy, .max_tasks = vmbd.max_tasks,
	    .scrub_wait_ms = M.scrub_wait_ms,
	    .unpause_after_hotplug = M.after_hotplug, .hvmloader = M.hvmloader,
	    .seabios = M.seabios, .ovmf = M.ovmf,
	    .status_changed = vmbd_status_changed,
	    .restarted = lifecycle_restarted });
	lifecycle_open();
	/*
	 * The registry's subscribers, in this order: reap.c lets a VM that
	 * goes go before lifecycle.c does.
	 */
	if (vm_hook_add(reap_vm_hook, NULL) < 0 ||
	    vm_hook_add(lifecycle_vm_hook, NULL) < 0 ||
	    vm_hook_add(events_vm_hook, NULL) < 0)
		fatalx("cannot subscribe to the registry");
	if (vm_reconcile() < 0)
		return 1;
	rpc_set_methods(methods_find);

	vmbd.base = new_base();
	if (vmbd.base == NULL)
		fatalx("event_base_new failed");
	if (worker_init(vmbd.base, POOL_THREADS) < 0)
		fatalx("cannot start worker threads");
	start_metrics();
	if (control_listen(&(struct control_opts){ .path = M.socket,
	    .ro_path = ro_socket_path(), .group = M.group,
	    .max_request = vmbd.max_request,
	    .max_connections = vmbd.max_connections,
	    .max_ro_connections = M.max_ro_conns,
	    .max_uid_connections = M.max_user_conns,
	    .request_timeout = vmbd.request_timeout,
	    .idle_timeout = M.idle_timeout, .max_output = M.max_output }) < 0)
		fatalx("cannot listen on %s", M.socket);
	/* A fatal exit from here on leaves no socket file behind. */
	atexit(control_unlink);
	if (task_init(vmbd.base) < 0 || events_init(vmbd.base) < 0 ||
	    vm_init(vmbd.base) < 0)
		fatalx("cannot set up the event loop");
	rc = cpukeep_init(vmbd.base, M.keep_cpu,
	    (vmb_ctx_caps(vmbd.ctx) & VMB_CAP_CALLER_CPU) != 0);
	if (rc == -ENODATA)
		log_info("--keep-cpu auto: this kernel reports no steal time; "
		    "builds are not kept on one CPU");
	else if (rc < 0)
		fatalx("cannot set up the event loop");
	/* Device models taken back at reconciliation: watched now. */
	dm_adopted_supervise();
	reap_start_pending();
	migrate_resolve_pending();
	if (lifecycle_start(vmbd.base) < 0 || control_start(vmbd.base) < 0)
		fatalx("cannot set up the event loop");
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		M.ev_sig[i] = evsignal_new(vmbd.base, sigs[i], signal_cb, NULL);
		if (M.ev_sig[i] == NULL || event_add(M.ev_sig[i], NULL) < 0)
			fatalx("cannot catch signal %d", sigs[i]);
	}
	M.ev_stop = evtimer_new(vmbd.base, stop_poll_cb, NULL);
	M.ev_trim = evtimer_new(vmbd.base, trim_cb, NULL);
	if (M.ev_stop == NULL || M.ev_trim == NULL)
		fatalx("cannot set up the event loop");
	trim_cb(-1, 0, NULL);
	if (sd_watchdog_enabled(0, &M.watchdog_usec) > 0 &&
	    M.watchdog_usec > 0) {
		M.ev_watchdog = evtimer_new(vmbd.base, watchdog_cb, NULL);
		watchdog_cb(-1, 0, NULL);
	}

	notify_status_start(vmbd.base);
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
	event_free(M.ev_trim);
	event_free(M.ev_stop);
	metrics_stop();
	lifecycle_stop();
	events_stop();
	task_stop();
	vm_stop();
	cpukeep_stop();
	notify_close();		/* its timer is of the loop */
	event_base_free(vmbd.base);
	vmb_ctx_free(vmbd.ctx);
	images_free();
	log_notice("stopped");
	return 0;
}
