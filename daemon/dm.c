/*
 * dm.c - the device model (QEMU for Xen) of each HVM guest, started and
 * supervised as libxl's qemu-xen is (libxl_dm.c).
 *
 * The build starts it once the domain is populated, loaded and its
 * devices are up (vmb_build_opts.dm_start), with the arguments libxl
 * gives qemu-xen: -xen-domid, -machine xenfv, QMP on a private socket
 * in the state directory, -no-shutdown, -nodefaults, the card, serial
 * port, boot order and display the guest's keys ask for; and waits
 * until it answers on QMP.  Before the first unpause the build asks it
 * again (dm_check): one that died meanwhile fails the build, whose undo
 * stops and reaps it (dm_stop_now) with everything else.
 *
 * Once the guest is built the loop watches the process (a pidfd, in the
 * event loop: no SIGCHLD handler, which would reap the hotplug scripts
 * the Xen backend waits for).  A device model that dies is reaped there
 * and its domain shut down as crashed, so that on_crash applies as for
 * a guest that crashed by itself.  A destroy stops it first
 * (dm_stop_domid, on the destroying worker): QMP quit, SIGKILL after
 * DM_STOP_MS, and waits until it has exited; the loop reaps it.  A
 * device model being stopped is not a crash.
 *
 * The registry is shared by the loop and the workers (a mutex); each
 * entry is counted (the registry's reference, a stopping worker's), and
 * freed by whoever drops the last.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cpukeep.h"
#include "dm.h"
#include "json.h"
#include "log.h"
#include "vmbuildd.h"
#include "worker.h"

extern char **environ;

#define DM_START_MS	60000	/* libxl's LIBXL_DEVICE_MODEL_START_TIMEOUT */
#define DM_CMD_MS	10000	/* one QMP command */
#define DM_STOP_MS	10000	/* quit, then SIGKILL */
#define DM_MAX_ARGS	256	/* 4 disks and 32 NICs at 4 each, and the rest */
#define DM_KERNEL_FD	3	/* the kernel and ramdisk in the device model */
#define DM_RAMDISK_FD	4

struct dm {
	pid_t	pid;
	unsigned long long start_time;	/* /proc/PID/stat's starttime */
	bool	adopted;	/* a previous vmbuildd's: not our child */
	int	pidfd;		/* readable once the process has exited */
	pthread_mutex_t qmp_lock;	/* one QMP exchange at a time */
	int	qmp;		/* connected QMP socket, or -1 */
	uint32_t domid;
	char	name[VMB_NAME_LEN];
	char	sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char	vnc[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char	tty[VMB_DM_TTY_LEN];	/* serial port 0's pty, or "" */
	struct event *ev;	/* loop only */
	bool	stopping;	/* a stop was asked: its exit is no crash */
	int	refs;		/* under D.lock */
	struct dm *next;	/* the registry's */
};

static struct {
	const char	*path;
	const char	*state_dir;
	pthread_mutex_t	lock;
	struct dm	*list;
	struct dm	*adopted;	/* taken back, until the loop runs */
	const char	*user;		/* --dm-user: "auto", "required", a name */
} D = { DM_DEFAULT_PATH, ".", PTHREAD_MUTEX_INITIALIZER, NULL, NULL,
    "auto" };

void
dm_init(const char *path, const char *state_dir)
{
	if (path != NULL)
		D.path = path;
	D.state_dir = state_dir;
}

const char *
dm_path(void)
{
	return D.path;
}

int
dm_set_user(const char *user)
{
	struct passwd pw, *res = NULL;
	char buf[2048];

	if (strcmp(user, "auto") != 0 && strcmp(user, "required") != 0 &&
	    (getpwnam_r(user, &pw, buf, sizeof(buf), &res) != 0 ||
	    res == NULL || res->pw_uid == 0)) {
		fprintf(stderr, "vmbuildd: --dm-user: %s \"%s\" (expected "
		    "auto, required or a user other than root)\n", res ?
		    "root is no restriction:" : "no such user", user);
		return -EINVAL;
	}
	D.user = user;
	return 0;
}

/*
 * Whom the device model of `domid` runs as, as libxl 4.17 chooses
 * (libxl__domain_get_device_model_uid with dm_restrict): into runas
 * ("" for root: no -runas), or -EPERM with why.
 */
static int
dm_runas(uint32_t domid, char *runas, size_t len, char *why,
    size_t why_len)
{
	struct passwd pw, *base = NULL, *clash = NULL;
	char buf[2048], buf2[2048];
	uid_t uid;

	runas[0] = '\0';
	if (strcmp(D.user, "auto") != 0 && strcmp(D.user, "required") != 0) {
		snprintf(runas, len, "%s", D.user);
		return 0;
	}
	/* A uid per domain: nothing another device model may signal. */
	if (getpwnam_r(DM_USER_RANGE_BASE, &pw, buf, sizeof(buf), &base) ==
	    0 && base != NULL) {
		uid = base->pw_uid + domid;
		if (getpwuid_r(uid, &pw, buf2, sizeof(buf2), &clash) == 0 &&
		    clash != NULL) {
			snprintf(why, why_len, "the device model of domain %u "
			    "would run as uid %u (%s + %u), but that is user "
			    "%s", domid, (unsigned)uid, DM_USER_RANGE_BASE,
			    domid, clash->pw_name);
			return -EPERM;
		}
		snprintf(runas, len, "%u:%u", (unsigned)uid,
		    (unsigned)base->pw_gid);
		return 0;
	}
	if (getpwnam_r(DM_USER_SHARED, &pw, buf, sizeof(buf), &base) == 0 &&
	    base != NULL) {
		snprintf(runas, len, "%s", DM_USER_SHARED);
		return 0;
	}
	if (strcmp(D.user, "required") == 0) {
		snprintf(why, why_len, "no user %s or %s to run the device "
		    "model of domain %u as, and --dm-user required refuses "
		    "root (create one, as Xen's packaging suggests)",
		    DM_USER_SHARED, DM_USER_RANGE_BASE, domid);
		return -EPERM;
	}
	return 0;
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Has the process exited (its pidfd readable) within `ms`? */
static bool
exited_within(const struct dm *dm, int ms)
{
	struct pollfd p = { .fd = dm->pidfd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

/*
 * /proc/PID/stat's state (field 3) and starttime (field 22, clock ticks
 * since boot): 0, or a negative errno (-ENOENT: no such process).
 */
static int
proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[32], buf[1024], *p, *save = NULL, *tok;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* The command (field 2) may hold anything: count after its ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -EIO;
	for (field = 3, tok = strtok_r(p + 1, " ", &save); tok != NULL;
	    field++, tok = strtok_r(NULL, " ", &save)) {
		if (field == 3)
			*state = tok[0];
		if (field == 22) {
			*start = strtoull(tok, NULL, 10);
			return 0;
		}
	}
	return -EIO;
}

static struct dm *
dm_new(uint32_t domid, const char *name)
{
	struct dm *dm = calloc(1, sizeof(*dm));

	if (dm == NULL)
		return NULL;
	dm->pid = -1;
	dm->pidfd = dm->qmp = -1;
	pthread_mutex_init(&dm->qmp_lock, NULL);
	dm->domid = domid;
	snprintf(dm->name, sizeof(dm->name), "%s", name);
	return dm;
}

/* Reap it: ours only (one a previous vmbuildd started is init's). */
static void
dm_reap(struct dm *dm, int *status)
{
	if (!dm->adopted)
		(void)waitpid(dm->pid, status, 0);
}

static void
dm_free(struct dm *dm)
{
	if (dm == NULL)
		return;
	pthread_mutex_destroy(&dm->qmp_lock);
	if (dm->qmp >= 0)
		close(dm->qmp);
	if (dm->pidfd >= 0)
		close(dm->pidfd);
	(void)unlink(dm->sock);
	if (dm->vnc[0])
		(void)unlink(dm->vnc);
	free(dm);
}

/* ------------------------------------------------------------------ */
/* QMP, line by line (each message is one JSON object and CRLF).      */

static int
qmp_send(struct dm *dm, const char *cmd)
{
	size_t len = strlen(cmd), off = 0;

	while (off < len) {
		ssize_t w = send(dm->qmp, cmd + off, len - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EPIPE;
		off += (size_t)w;
	}
	return 0;
}

/*
 * The next reply ("return" or "error"), skipping the greeting's and
 * events' lines unless `greeting`: 0 for a return (or the greeting),
 * -EPROTO for an error, -EPIPE when the socket closed, -ETIMEDOUT.
 */
static int
qmp_reply_text(struct dm *dm, bool greeting, int ms, char *out,
    size_t out_len)
{
	char buf[8192];
	size_t n = 0;
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		struct pollfd p = { .fd = dm->qmp, .events = POLLIN };
		uint64_t now = now_ms();
		char *nl;
		ssize_t r;

		if (now >= end)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(end - now)) <= 0)
			continue;
		r = recv(dm->qmp, buf + n, sizeof(buf) - 1 - n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EPIPE;
		n += (size_t)r;
		buf[n] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			if (greeting && strstr(buf, "\"QMP\""))
				return 0;
			if (!greeting && strstr(buf, "\"return\"")) {
				if (out != NULL)
					snprintf(out, out_len, "%s", buf);
				return 0;
			}
			if (!greeting && strstr(buf, "\"error\""))
				return -EPROTO;
			n -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, n + 1);
		}
		if (n == sizeof(buf) - 1)
			return -EPROTO;		/* a line too long */
	}
}

static int
qmp_reply(struct dm *dm, bool greeting, int ms)
{
	return qmp_reply_text(dm, greeting, ms, NULL, 0);
}

static int
qmp_command(struct dm *dm, const char *name)
{
	char cmd[128];
	int rc;

	snprintf(cmd, sizeof(cmd), "{\"execute\":\"%s\"}\r\n", name);
	rc = qmp_send(dm, cmd);
	return rc ? rc : qmp_reply(dm, false, DM_CMD_MS);
}

/*
 * Connect to QMP as the device model opens it, capabilities negotiated;
 * a device model that exits first says so.
 */
static int
qmp_connect(struct dm *dm, char *why, size_t why_len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t end = now_ms() + DM_START_MS;
	int rc;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dm->sock);
	for (;;) {
		if (exited_within(dm, 0)) {
			snprintf(why, why_len, "the device model %s exited "
			    "before it answered on QMP (its log: %s.log)",
			    D.path, dm->sock);
			return -ECHILD;
		}
		dm->qmp = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (dm->qmp < 0)
			return -errno;
		if (connect(dm->qmp, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(dm->qmp);
		dm->qmp = -1;
		if (now_ms() >= end) {
			snprintf(why, why_len, "the device model did not open "
			    "QMP on %s within %d s", dm->sock,
			    DM_START_MS / 1000);
			return -ETIMEDOUT;
		}
		/* Not there yet: wait for it, or for the process to end. */
		(void)exited_within(dm, 20);
	}
	rc = qmp_reply(dm, true, DM_CMD_MS);
	if (rc == 0)
		rc = qmp_command(dm, "qmp_capabilities");
	if (rc)
		snprintf(why, why_len, "the device model's QMP failed: %s",
		    strerror(-rc));
	return rc;
}

/*
 * A device model a previous vmbuildd started: QMP again (its socket
 * takes a new client once the old one is gone), at most one try.
 * Under qmp_lock.
 */
static int
qmp_reattach(struct dm *dm)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int rc;

	if (dm->qmp >= 0)
		return 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", dm->sock);
	dm->qmp = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (dm->qmp < 0)
		return -errno;
	rc = connect(dm->qmp, (struct sockaddr *)&sa, sizeof(sa)) < 0 ?
	    -errno : qmp_reply(dm, true, DM_CMD_MS);
	if (rc == 0)
		rc = qmp_command(dm, "qmp_capabilities");
	if (rc) {
		close(dm->qmp);
		dm->qmp = -1;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Starting.                                                           */

/* The device model's command line, built up (argf). */
struct dm_argv {
	char	*v[DM_MAX_ARGS];
	int	n;
	bool	failed;		/* out of memory, or of room */
};

static void __attribute__((format(printf, 2, 3)))
argf(struct dm_argv *a, const char *fmt, ...)
{
	va_list ap;

	if (a->failed || a->n == DM_MAX_ARGS - 1) {
		a->failed = true;
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&a->v[a->n], fmt, ap) < 0) {
		a->v[a->n] = NULL;
		a->failed = true;
	} else {
		a->n++;
	}
	va_end(ap);
}

/*
 * The disks qemu-xen emulates, as libxl 4.17 gives them
 * (libxl__build_device_model_args_new): the first four IDE units
 * (hda-hdd, xvda-xvdd; keys_hvm.c and devspec.c refuse the rest), a
 * disk as -drive if=ide, a CD-ROM as an ide-cd device of its own drive.
 * With hdtype = "ahci" a disk is an ide-hd on a port of one AHCI
 * controller instead (hd[a-f], xvd[a-f]: far fewer exits per sector
 * than IDE's port I/O for a firmware reading the disk), CD-ROMs
 * staying IDE units.  The image is the raw file or block device, or a
 * qcow2 file (format=qcow2), by the absolute path the check resolved.
 */
static void
dm_args_disks(struct dm_argv *a, const struct vmb_guest *g)
{
	bool ahci = !strcmp(g->hvm.hdtype, "ahci");

	if (ahci) {
		argf(a, "-device");
		argf(a, "ahci,id=ahci0");
	}
	for (uint32_t i = 0; i < g->nr_disks; i++) {
		const struct vmb_disk *d = &g->disks[i];
		const char *fmt = d->format == VMB_DISK_QCOW2 ? "qcow2" :
		    "raw";
		int unit = vmb_disk_ide_index(d);
		int port = ahci ? vmb_disk_ahci_index(d) : -1;

		if (port >= 0) {
			argf(a, "-drive");
			argf(a, "file=%s,if=none,id=ahcidisk-%d,format=%s,"
			    "cache=writeback", d->target, port, fmt);
			argf(a, "-device");
			argf(a, "ide-hd,bus=ahci0.%d,unit=0,drive=ahcidisk-%d",
			    port, port);
			continue;
		}
		if (unit < 0 || (ahci && !d->cdrom))
			continue;	/* its PV backend's only */
		argf(a, "-drive");
		if (!d->cdrom) {
			argf(a, "file=%s,if=ide,index=%d,media=disk,format=%s,"
			    "cache=writeback", d->target, unit, fmt);
			continue;
		}
		if (d->target != NULL && d->format != VMB_DISK_EMPTY)
			argf(a, "if=none,readonly=on,id=ide-%u,file=%s,"
			    "format=%s", d->devid, d->target, fmt);
		else
			argf(a, "if=none,readonly=on,id=ide-%u", d->devid);
		argf(a, "-device");
		argf(a, "ide-cd,id=ide-%u,drive=ide-%u,bus=ide.%d,unit=%d",
		    d->devid, d->devid, unit / 2, unit % 2);
	}
}

/*
 * The emulated NICs (model; "" for a vif only): a tap device named as
 * libxl names it (vifDOMID.DEVID-emu), which Xen's vif script bridges;
 * QEMU runs no script of its own (script=no, as libxl on Linux).
 */
static void
dm_args_nics(struct dm_argv *a, const struct vmb_guest *g, uint32_t domid)
{
	uint8_t m[6];

	for (uint32_t i = 0; i < g->nr_nics; i++) {
		const struct vmb_nic *n = &g->nics[i];

		if (n->model[0] == '\0')
			continue;
		vmb_nic_mac(g->uuid, n, m);
		argf(a, "-device");
		argf(a, "%s,id=nic%u,netdev=net%u,mac=%02x:%02x:%02x:%02x:%02x:"
		    "%02x", n->model, n->devid, n->devid, m[0], m[1], m[2],
		    m[3], m[4], m[5]);
		argf(a, "-netdev");
		argf(a, "type=tap,id=net%u,ifname=vif%u.%u-emu,br=%s,"
		    "script=no,downscript=no", n->devid, domid, n->devid,
		    n->bridge);
	}
}

/*
 * The arguments libxl gives qemu-xen for an HVM guest
 * (libxl__build_device_model_args_new), as far as vmbuild's keys go.
 * A kernel (direct kernel boot) is the descriptor vmbuildd opened with
 * the client's rights, at fd 3 (its ramdisk at 4) in the device model
 * (dm_spawn), named by /dev/fd/N.
 */
static int
dm_args(const struct vmb_guest *g, const struct dm *dm, const int img[2],
    const char *runas, struct dm_argv *a)
{
	uint32_t vram = vmb_hvm_videoram_mib(g);
	uint64_t mem = g->memory_bytes >> 20;

	argf(a, "%s", D.path);
	argf(a, "-xen-domid"); argf(a, "%u", dm->domid);
	argf(a, "-chardev");
	argf(a, "socket,id=libxl-cmd,path=%s,server=on,wait=off", dm->sock);
	argf(a, "-mon"); argf(a, "chardev=libxl-cmd,mode=control");
	argf(a, "-no-shutdown"); argf(a, "-nodefaults");
	argf(a, "-no-user-config");
	/* QEMU drops root once its sockets and files are open. */
	if (runas[0]) {
		argf(a, "-runas"); argf(a, "%s", runas);
	}
	argf(a, "-name"); argf(a, "%s", g->name);
	/* VNC on a local socket of the state directory, or none. */
	argf(a, "-vnc");
	if (dm->vnc[0])
		argf(a, "unix:%s", dm->vnc);
	else
		argf(a, "none");
	argf(a, "-display"); argf(a, "none");
	if (img[0] >= 0) {
		argf(a, "-kernel"); argf(a, "/dev/fd/%d", DM_KERNEL_FD);
	}
	if (img[0] >= 0 && img[1] >= 0) {
		argf(a, "-initrd"); argf(a, "/dev/fd/%d", DM_RAMDISK_FD);
	}
	if (img[0] >= 0 && g->cmdline != NULL) {
		argf(a, "-append"); argf(a, "%s", g->cmdline);
	}
	if (!strcmp(g->hvm.serial, "pty")) {
		argf(a, "-serial"); argf(a, "pty");
	}
	if (vram) {
		argf(a, "-device");
		argf(a, "%s,vgamem_mb=%u", !strcmp(g->hvm.vga, "stdvga") ?
		    "VGA" : "cirrus-vga", vram);
	}
	argf(a, "-boot"); argf(a, "order=%s", g->hvm.boot);
	if (!g->hvm.acpi)
		argf(a, "-no-acpi");
	argf(a, "-smp"); argf(a, "%u,maxcpus=%u", g->vcpus, g->maxvcpus);
	dm_args_nics(a, g, dm->domid);
	argf(a, "-machine"); argf(a, "xenfv");
	/*
	 * The guest's RAM less the VRAM, which QEMU populates itself: the
	 * build's layout (layout.c carves it out of memory=, as libxl).
	 */
	argf(a, "-m");
	argf(a, "%llu", (unsigned long long)(mem > vram ? mem - vram : mem));
	dm_args_disks(a, g);
	a->v[a->n] = NULL;
	return a->failed ? -ENOMEM : 0;
}

/* Start the process: stdin /dev/null, its output to SOCK.log. */
static int
dm_spawn(struct dm *dm, char **argv, const int img[2])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char log[sizeof(dm->sock) + 8], state;
	int rc;

	snprintf(log, sizeof(log), "%s.log", dm->sock);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT |
	    O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	/* The images (above 4: build.c), inherited where dm_args names them. */
	if (img[0] >= 0)
		posix_spawn_file_actions_adddup2(&fa, img[0], DM_KERNEL_FD);
	if (img[0] >= 0 && img[1] >= 0)
		posix_spawn_file_actions_adddup2(&fa, img[1], DM_RAMDISK_FD);
	/* Its own session: a signal to the daemon's group is not its. */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
	/* A device model outlives the build: not on its one CPU. */
	cpukeep_spawn_begin();
	rc = -posix_spawn(&dm->pid, argv[0], &fa, &attr, argv, environ);
	cpukeep_spawn_end();
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc)
		return rc;
	/* Its start time tells it from a later process of the same pid. */
	dm->pidfd = (int)syscall(SYS_pidfd_open, dm->pid, 0);
	rc = dm->pidfd < 0 ? -errno : proc_stat(dm->pid, &state,
	    &dm->start_time);
	if (rc) {
		kill(dm->pid, SIGKILL);
		(void)waitpid(dm->pid, NULL, 0);
	}
	return rc;
}

static int serial_path(struct dm *dm, char *path, size_t len);

int
dm_start(const struct vmb_guest *g, uint32_t domid, const int img[2],
    struct dm **ret, char *why, size_t why_len)
{
	struct dm_argv *a = calloc(1, sizeof(*a));
	struct dm *dm = dm_new(domid, g->name);
	char runas[64];
	int rc;

	if (dm == NULL || a == NULL) {
		free(a);
		dm_free(dm);
		return -ENOMEM;
	}
	snprintf(dm->sock, sizeof(dm->sock), "%s/dm-%u.qmp", D.state_dir,
	    domid);
	if (g->hvm.vnc)
		snprintf(dm->vnc, sizeof(dm->vnc), "%s/vnc-%u.sock",
		    D.state_dir, domid);
	(void)unlink(dm->sock);
	rc = dm_runas(domid, runas, sizeof(runas), why, why_len);
	if (rc < 0)
		goto out;
	if (!runas[0])
		log_vm(LOG_WARNING, g->name, domid, 0, "%s: device model runs "
		    "as root: no user %s or %s (vmbuildd --dm-user required "
		    "refuses this)", g->name, DM_USER_SHARED,
		    DM_USER_RANGE_BASE);
	rc = dm_args(g, dm, img, runas, a);
	if (rc < 0) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	rc = dm_spawn(dm, a->v, img);
	if (rc) {
		snprintf(why, why_len, "cannot start the device model %s: %s",
		    D.path, strerror(-rc));
		goto out;
	}
	rc = qmp_connect(dm, why, why_len);
	if (rc)
		goto out;
	/*
	 * Its serial port's pty, asked once as libxl does: the build writes
	 * it where xl console looks (serial/0/tty).  A device model that
	 * cannot say fails its start, as under libxl.
	 */
	if (!strcmp(g->hvm.serial, "pty") &&
	    (rc = serial_path(dm, dm->tty, sizeof(dm->tty))) != 0) {
		snprintf(why, why_len, "the device model does not tell its "
		    "serial port's pty (QMP query-chardev): %s",
		    strerror(-rc));
		goto out;
	}
	log_vm(LOG_INFO, g->name, domid, 0, "%s: device model %s started "
	    "(pid %d, QMP %s%s%s)", g->name, D.path, (int)dm->pid, dm->sock,
	    dm->tty[0] ? ", serial " : "", dm->tty);
	*ret = dm;
	dm = NULL;
out:
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a);
	if (dm != NULL && dm->pid > 0)
		dm_stop_now(dm);
	else
		dm_free(dm);
	return rc;
}

int
dm_check(struct dm *dm, char *why, size_t why_len)
{
	int rc;

	pthread_mutex_lock(&dm->qmp_lock);
	rc = exited_within(dm, 0) ? -ECHILD : qmp_command(dm, "query-status");
	pthread_mutex_unlock(&dm->qmp_lock);

	if (rc)
		snprintf(why, why_len, "the device model (pid %d) died during "
		    "the build", (int)dm->pid);
	return rc;
}

/* Ask it to quit; kill it if it has not exited within DM_STOP_MS. */
static void
dm_quit(struct dm *dm)
{
	pthread_mutex_lock(&dm->qmp_lock);
	if (dm->adopted && !exited_within(dm, 0))
		(void)qmp_reattach(dm);
	if (dm->qmp >= 0)
		(void)qmp_send(dm, "{\"execute\":\"quit\"}\r\n");
	pthread_mutex_unlock(&dm->qmp_lock);
	if (!exited_within(dm, DM_STOP_MS)) {
		log_vm(LOG_WARNING, dm->name, dm->domid, 0, "%s: device model "
		    "(pid %d) did not quit within %d s: killed", dm->name,
		    (int)dm->pid, DM_STOP_MS / 1000);
		(void)kill(dm->pid, SIGKILL);
		(void)exited_within(dm, -1);
	}
}

void
dm_stop_now(struct dm *dm)
{
	if (dm == NULL)
		return;
	dm_quit(dm);
	dm_reap(dm, NULL);
	dm_free(dm);
}

/* ------------------------------------------------------------------ */
/* Supervision.                                                        */

static void
dm_unref(struct dm *dm)
{
	bool last;

	pthread_mutex_lock(&D.lock);
	last = --dm->refs == 0;
	pthread_mutex_unlock(&D.lock);
	if (last)
		dm_free(dm);
}

struct crash_job {
	struct job	job;
	uint32_t	domid;
	char		name[VMB_NAME_LEN];
	int		rc;
};

static void
crash_run(struct job *job)
{
	struct crash_job *cj = (struct crash_job *)job;

	cj->rc = vmb_domain_shutdown(vmbd.ctx, cj->domid, VMB_SHUTDOWN_CRASH);
}

static void
crash_done(struct job *job)
{
	struct crash_job *cj = (struct crash_job *)job;

	if (cj->rc < 0 && cj->rc != -ESRCH)
		log_vm(LOG_ERR, cj->name, cj->domid, 0, "%s: cannot crash "
		    "domain %u after its device model died: %s", cj->name,
		    cj->domid, strerror(-cj->rc));
	free(cj);
}

/* The loop: the process exited; reap it and, unless stopped, crash. */
static void
dm_exited(evutil_socket_t fd, short what, void *arg)
{
	struct dm *dm = arg, **pp;
	struct crash_job *cj;
	bool stopping;
	int status = 0;

	(void)fd;
	(void)what;
	dm_reap(dm, &status);
	event_free(dm->ev);
	dm->ev = NULL;
	pthread_mutex_lock(&D.lock);
	for (pp = &D.list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == dm) {
			*pp = dm->next;
			break;
		}
	stopping = dm->stopping;
	pthread_mutex_unlock(&D.lock);
	if (!stopping && dm->adopted) {
		/* Not our child: how it ended is its parent's to know. */
		log_vm(LOG_ERR, dm->name, dm->domid, 0, "%s: device model "
		    "(pid %d) died: the guest is crashed", dm->name,
		    (int)dm->pid);
	} else if (!stopping) {
		log_vm(LOG_ERR, dm->name, dm->domid, 0, "%s: device model "
		    "(pid %d) died (%s %d): the guest is crashed", dm->name,
		    (int)dm->pid, WIFSIGNALED(status) ? "signal" : "exit",
		    WIFSIGNALED(status) ? WTERMSIG(status) :
		    WEXITSTATUS(status));
	}
	if (!stopping) {
		cj = calloc(1, sizeof(*cj));
		if (cj != NULL) {
			cj->domid = dm->domid;
			snprintf(cj->name, sizeof(cj->name), "%s", dm->name);
			cj->job.run = crash_run;
			cj->job.done = crash_done;
			worker_submit(&cj->job);
		}
	}
	dm_unref(dm);
}

void
dm_supervise(struct dm *dm)
{
	dm->ev = event_new(vmbd.base, dm->pidfd, EV_READ, dm_exited, dm);
	dm->refs = 1;
	pthread_mutex_lock(&D.lock);
	dm->next = D.list;
	D.list = dm;
	pthread_mutex_unlock(&D.lock);
	if (dm->ev == NULL || event_add(dm->ev, NULL) < 0) {
		/* Unwatched, it would never be reaped: stop it now. */
		log_vm(LOG_ERR, dm->name, dm->domid, 0, "%s: cannot watch its "
		    "device model: stopped", dm->name);
		pthread_mutex_lock(&D.lock);
		D.list = dm->next;
		pthread_mutex_unlock(&D.lock);
		if (dm->ev != NULL)
			event_free(dm->ev);
		dm->ev = NULL;
		dm_stop_now(dm);
	}
}

void
dm_stop_domid(uint32_t domid)
{
	struct dm *dm;

	pthread_mutex_lock(&D.lock);
	for (dm = D.list; dm != NULL && dm->domid != domid; dm = dm->next)
		;
	if (dm != NULL && !dm->stopping) {
		dm->stopping = true;
		dm->refs++;
	} else {
		dm = NULL;
	}
	pthread_mutex_unlock(&D.lock);
	if (dm == NULL)
		return;
	dm_quit(dm);
	dm_unref(dm);
}

void
dm_info(const struct dm *dm, struct vmb_dm_info *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->pid = (int)dm->pid;
	snprintf(ret->serial_tty, sizeof(ret->serial_tty), "%s", dm->tty);
}

int
dm_info_domid(uint32_t domid, struct vmb_dm_info *ret)
{
	int rc = -ESRCH;

	pthread_mutex_lock(&D.lock);
	for (struct dm *dm = D.list; dm != NULL; dm = dm->next)
		if (dm->domid == domid) {
			dm_info(dm, ret);
			rc = 0;
		}
	pthread_mutex_unlock(&D.lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Across a restart of the daemon.                                     */

void
dm_record(const struct dm *dm, struct state_dm *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (dm == NULL)
		return;
	ret->pid = (int)dm->pid;
	ret->start_time = dm->start_time;
	snprintf(ret->qmp, sizeof(ret->qmp), "%s", dm->sock);
	snprintf(ret->serial_tty, sizeof(ret->serial_tty), "%s", dm->tty);
}

void
dm_record_domid(uint32_t domid, struct state_dm *ret)
{
	struct dm *dm;

	pthread_mutex_lock(&D.lock);
	for (dm = D.list; dm != NULL && dm->domid != domid; dm = dm->next)
		;
	dm_record(dm != NULL && !dm->stopping ? dm : NULL, ret);
	pthread_mutex_unlock(&D.lock);
}

/*
 * The recorded process, if it still runs: a pidfd to it, or -ESRCH.
 * The pidfd is opened first: if the pid then has the recorded start
 * time, the pidfd is that process's (a pid is not used again while its
 * process lives).
 */
static int
recorded_pidfd(const struct state_dm *rec)
{
	unsigned long long start;
	char state;
	int pidfd = (int)syscall(SYS_pidfd_open, rec->pid, 0);

	if (pidfd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	if (proc_stat(rec->pid, &state, &start) < 0 ||
	    start != rec->start_time || state == 'Z' || state == 'X') {
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

int
dm_adopt(const struct state_dm *rec, uint32_t domid, const char *name)
{
	struct dm *dm;
	int pidfd = recorded_pidfd(rec);

	if (pidfd < 0)
		return pidfd;
	dm = dm_new(domid, name);
	if (dm == NULL) {
		close(pidfd);
		return -ENOMEM;
	}
	dm->pid = rec->pid;
	dm->pidfd = pidfd;
	dm->start_time = rec->start_time;
	dm->adopted = true;
	snprintf(dm->sock, sizeof(dm->sock), "%s", rec->qmp);
	snprintf(dm->tty, sizeof(dm->tty), "%s", rec->serial_tty);
	/* Where dm_start puts it, if it had one (removed at the end). */
	snprintf(dm->vnc, sizeof(dm->vnc), "%s/vnc-%u.sock", D.state_dir,
	    domid);
	dm->next = D.adopted;
	D.adopted = dm;
	log_vm(LOG_NOTICE, name, domid, 0, "%s: device model (pid %d, QMP %s) "
	    "taken back", name, (int)dm->pid, dm->sock);
	return 0;
}

void
dm_adopted_supervise(void)
{
	while (D.adopted != NULL) {
		struct dm *dm = D.adopted;

		D.adopted = dm->next;
		dm->next = NULL;
		dm_supervise(dm);
	}
}

void
dm_kill_recorded(const struct state_dm *rec, uint32_t domid,
    const char *name)
{
	int pidfd = recorded_pidfd(rec);

	if (pidfd < 0)
		return;
	log_vm(LOG_NOTICE, name, domid, 0, "%s: stopping the device model "
	    "(pid %d) of its interrupted build", name, rec->pid);
	(void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	close(pidfd);
	(void)unlink(rec->qmp);
}

/* ------------------------------------------------------------------ */
/* The serial console (vm.console of an HVM guest).                    */

#define PTS_MAJOR_FIRST	136	/* Unix98 pty slaves */
#define PTS_MAJOR_LAST	143

/* The domain's device model, counted (dm_unref), or NULL. */
static struct dm *
dm_get(uint32_t domid)
{
	struct dm *dm;

	pthread_mutex_lock(&D.lock);
	for (dm = D.list; dm != NULL && dm->domid != domid; dm = dm->next)
		;
	if (dm != NULL && !dm->stopping)
		dm->refs++;
	else
		dm = NULL;
	pthread_mutex_unlock(&D.lock);
	return dm;
}

/*
 * The pty of serial port 0, as QMP's query-chardev tells it (libxl
 * asks the same for xl console): "pty:/dev/pts/N".  0 with the path,
 * -ENOENT when the device model has none (serial = "none").
 */
static int
serial_path(struct dm *dm, char *path, size_t len)
{
	char line[8192];
	yajl_val root, ret;
	int rc;

	pthread_mutex_lock(&dm->qmp_lock);
	rc = dm->adopted ? qmp_reattach(dm) : 0;
	if (rc == 0)
		rc = qmp_send(dm, "{\"execute\":\"query-chardev\"}\r\n");
	if (rc == 0)
		rc = qmp_reply_text(dm, false, DM_CMD_MS, line, sizeof(line));
	pthread_mutex_unlock(&dm->qmp_lock);
	if (rc)
		return rc;
	root = jv_parse(line, strlen(line), JSON_MAX_DEPTH, NULL, 0);
	ret = jv_get(root, "return");
	rc = YAJL_IS_ARRAY(ret) ? -ENOENT : -EPROTO;
	for (size_t i = 0; rc == -ENOENT && i < ret->u.array.len; i++) {
		yajl_val c = ret->u.array.values[i];
		yajl_val label = jv_get(c, "label"), file = jv_get(c,
		    "filename");

		if (YAJL_IS_STRING(label) && !strcmp(label->u.string,
		    "serial0") && YAJL_IS_STRING(file) &&
		    !strncmp(file->u.string, "pty:", 4)) {
			snprintf(path, len, "%s", file->u.string + 4);
			rc = 0;
		}
	}
	yajl_tree_free(root);
	return rc;
}

/*
 * Open it only if it is a pty slave under /dev/pts, the one looked at:
 * the daemon hands the descriptor to a client (as xen_life.c does for
 * xenconsoled's pty).
 */
static int
open_pty(const char *path, int *ret_fd)
{
	struct stat st, fst;
	int fd;

	if (strncmp(path, "/dev/pts/", 9) != 0 || path[9] == '\0' ||
	    strspn(path + 9, "0123456789") != strlen(path + 9))
		return -EPERM;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) < PTS_MAJOR_FIRST ||
	    major(st.st_rdev) > PTS_MAJOR_LAST)
		return -EPERM;
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &fst) < 0 || fst.st_rdev != st.st_rdev || !isatty(fd)) {
		close(fd);
		return -EPERM;
	}
	*ret_fd = fd;
	return 0;
}

int
dm_console_open(uint32_t domid, int *ret_fd, char *tty, size_t tty_len)
{
	struct dm *dm = dm_get(domid);
	int rc;

	if (dm == NULL)
		return -ESRCH;
	rc = serial_path(dm, tty, tty_len);
	dm_unref(dm);
	return rc ? rc : open_pty(tty, ret_fd);
}
