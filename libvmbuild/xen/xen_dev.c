/*
 * xen_dev.c - PV disks (vbd) and networks (vif) served by dom0's
 * blkback and netback, set up and torn down as libxl 4.17 does it
 * (libxl_device.c, libxl_disk.c, libxl_nic.c; read side by side).
 *
 * Add, for one device of domain D with number N:
 *   1. one transaction writes, as libxl__device_generic_add:
 *        /local/domain/0/backend/KIND/D/N    owned by dom0, D reads
 *        /local/domain/D/device/KIND/N       owned by D, dom0 reads
 *        /libxl/D/device/KIND/N              frontend, backend, and a
 *                                            copy of the backend keys
 *      both ends in state 1 (Initialising), the backend "online";
 *   2. the backend driver, seeing its directory, goes to InitWait (2):
 *      followed through a watch, 10 s at most;
 *   3. the hotplug script: block (a file gets a loop device; it writes
 *      physical-device) or vif-bridge (the vif joins its bridge; it
 *      writes hotplug-status, which netback waits for), 40 s at most;
 *      a disk or vif that names no script is set up by xen_blk.c or
 *      xen_vif.c instead, as the script would, without its forks;
 *   4. on a running guest (hot-plug), both ends followed to Connected
 *      (4) when the caller gives a timeout: libxl stops after step 3.
 * Any failure takes it all back (below) and says which device and why.
 *
 * Remove (and take back): unless forced, the backend is asked to close
 * (online 0, state 5) and followed to Closed (6), 10 s at most; then,
 * or at once when forced, the frontend goes, which makes the backend
 * let go of the guest.  The hotplug script then runs with remove or
 * offline (the block script detaches the loop device), and the entries
 * go, with the directories they leave empty.  Where vmbuild differs
 * from libxl, on purpose: the script also runs when the backend did
 * not close in time (libxl skips it and leaks the loop device), and a
 * loop device the script left bound is detached here.
 *
 * Waiting uses a watch on a handle of its own (the shared one is
 * serialised by be->xs_lock, and watch events on it would go to
 * whichever thread read next).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/loop.h>
#include <sys/syscall.h>

#include "vmb_internal.h"
#include "xen_priv.h"

#define BACKEND_DOMID		0	/* dom0 serves every device */
#define SCRIPT_DIR		"/etc/xen/scripts"
#define SCRIPT_DIR_ENV		"VMBUILD_XEN_SCRIPT_DIR"	/* tests */

/* XenbusState (xen/include/public/io/xenbus.h). */
enum { XB_UNKNOWN = 0, XB_INITIALISING = 1, XB_INITWAIT = 2,
	XB_INITIALISED = 3, XB_CONNECTED = 4, XB_CLOSING = 5, XB_CLOSED = 6,
	XB_RECONFIGURED = 8 };

/* One device's paths and names. */
struct dev {
	enum vmb_device_kind kind;
	uint32_t domid, devid;
	const char *xkind;		/* "vbd", "vif" */
	char	fe[XS_PATH_MAX];	/* /local/domain/D/device/KIND/N */
	char	be[XS_PATH_MAX];	/* /local/domain/0/backend/KIND/D/N */
	char	lx[XS_PATH_MAX];	/* /libxl/D/device/KIND/N */
	char	name[80];		/* "disk xvdb (vbd 51728)", "vif 0" */
	char	vif[VMB_IFNAME_LEN];	/* netback's name: vifD.N */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
dev_init(struct dev *d, uint32_t domid, enum vmb_device_kind kind,
    uint32_t devid, const char *vdev)
{
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->domid = domid;
	d->devid = devid;
	d->xkind = kind == VMB_DEVICE_DISK ? "vbd" : "vif";
	snprintf(d->fe, sizeof(d->fe), "/local/domain/%u/device/%s/%u", domid,
	    d->xkind, devid);
	snprintf(d->be, sizeof(d->be), "/local/domain/%u/backend/%s/%u/%u",
	    BACKEND_DOMID, d->xkind, domid, devid);
	snprintf(d->lx, sizeof(d->lx), "/libxl/%u/device/%s/%u", domid,
	    d->xkind, devid);
	snprintf(d->vif, sizeof(d->vif), "vif%u.%u", domid, devid);
	if (kind == VMB_DEVICE_DISK && vdev && *vdev)
		snprintf(d->name, sizeof(d->name), "disk %s (vbd %u)", vdev,
		    devid);
	else if (kind == VMB_DEVICE_DISK)
		snprintf(d->name, sizeof(d->name), "disk vbd %u", devid);
	else
		snprintf(d->name, sizeof(d->name), "vif %u (%s)", devid,
		    d->vif);
}

/*
 * The script to run: the script directory (SCRIPT_DIR, or the absolute
 * directory in SCRIPT_DIR_ENV of this process's environment, which only
 * whoever started it sets) and the name, or an absolute path as it is
 * (vmbuildd takes one from a root client only).  A name with a '/' or
 * that is "." or ".." is refused here again, whoever checked it before:
 * what runs is always inside the directory.  -EINVAL, or -ENOMEM.
 */
static int
script_path(const char *script, const char *dflt, char **ret)
{
	const char *dir = getenv(SCRIPT_DIR_ENV);

	*ret = NULL;
	if (!script || !*script)
		script = dflt;
	if (script[0] == '/')
		return (*ret = strdup(script)) ? 0 : -ENOMEM;
	if (strchr(script, '/') || !strcmp(script, ".") ||
	    !strcmp(script, ".."))
		return -EINVAL;
	if (!dir || dir[0] != '/')
		dir = SCRIPT_DIR;
	if (asprintf(ret, "%s/%s", dir, script) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* One read on the shared handle; NULL when absent. */
static char *
xs_get(struct xen_be *be, const char *base, const char *rel)
{
	char path[XS_PATH_MAX];
	unsigned len;
	char *v;

	if (snprintf(path, sizeof(path), "%s/%s", base, rel) >=
	    (int)sizeof(path))
		return NULL;
	pthread_mutex_lock(&be->xs_lock);
	v = xs_read(be->xsh, XBT_NULL, path, &len);
	pthread_mutex_unlock(&be->xs_lock);
	return v;
}

/* ------------------------------------------------------------------ */
/* Entries                                                             */

struct add_arg {
	const struct dev *d;
	const struct vmb_dev *v;
	const char *script;
};

static void
tx_set(struct xs_tx *tx, const char *base, const char *rel, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

/* base/rel = printf(fmt), with the parent's permissions. */
static void
tx_set(struct xs_tx *tx, const char *base, const char *rel, const char *fmt,
    ...)
{
	char value[XS_PATH_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(value)) {
		if (tx->err == 0)
			tx->err = -EOVERFLOW;
		return;
	}
	xen_xs_tx_write(tx, base, rel, value, NULL, 0);
}

/*
 * The backend's keys (libxl's "bents"): under the backend directory,
 * and copied under /libxl/D/device, where nothing updates them (libxl's
 * own record of the device, which xl's block-list reads).
 */
static void
fill_backend_keys(struct xs_tx *tx, const char *dir, const struct add_arg *a)
{
	const struct vmb_disk *k = a->v->disk;
	const struct vmb_nic *n = a->v->nic;
	const uint8_t *m = a->v->mac;

	if (k) {
		tx_set(tx, dir, "params", "%s", k->target);
		tx_set(tx, dir, "script", "%s", a->script);
	}
	tx_set(tx, dir, "frontend-id", "%u", a->d->domid);
	tx_set(tx, dir, "online", "1");
	tx_set(tx, dir, "state", "%d", XB_INITIALISING);
	if (k) {
		tx_set(tx, dir, "removable", "0");
		tx_set(tx, dir, "bootable", "1");
		tx_set(tx, dir, "dev", "%s", k->vdev);
		tx_set(tx, dir, "type", "phy");
		tx_set(tx, dir, "mode", "%s", k->readonly ? "r" : "w");
		tx_set(tx, dir, "device-type", "disk");
		if (k->direct_io_safe)
			tx_set(tx, dir, "direct-io-safe", "1");
		tx_set(tx, dir, "discard-enable", "%d", k->discard ? 1 : 0);
		tx_set(tx, dir, "specification", "xen");
		return;
	}
	tx_set(tx, dir, "script", "%s", a->script);
	if (n->vifname[0])
		tx_set(tx, dir, "vifname", "%s", n->vifname);
	tx_set(tx, dir, "mac", "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1],
	    m[2], m[3], m[4], m[5]);
	if (n->ip)
		tx_set(tx, dir, "ip", "%s", n->ip);
	if (n->gatewaydev)
		tx_set(tx, dir, "gatewaydev", "%s", n->gatewaydev);
	if (n->rate_bytes)
		tx_set(tx, dir, "rate", "%" PRIu64 ",%u", n->rate_bytes,
		    n->rate_usecs);
	/* 1500 is libxl's default, which it does not write. */
	if (n->mtu && n->mtu != 1500)
		tx_set(tx, dir, "mtu", "%u", n->mtu);
	tx_set(tx, dir, "bridge", "%s", n->bridge);
	tx_set(tx, dir, "handle", "%u", a->d->devid);
	tx_set(tx, dir, "type", "vif");
	/* netback waits for the script's "connected" before connecting. */
	tx_set(tx, dir, "hotplug-status", "%s", "");
}

static void
fill_add(struct xs_tx *tx, const void *varg)
{
	const struct add_arg *a = varg;
	const struct dev *d = a->d;
	const struct vmb_disk *k = a->v->disk;
	const struct vmb_nic *n = a->v->nic;
	const uint8_t *m = a->v->mac;
	/* The frontend: the guest owns it, dom0 reads; the backend: mirror. */
	struct xs_permissions fe_perms[2] = {
		{ .id = d->domid, .perms = XS_PERM_NONE },
		{ .id = BACKEND_DOMID, .perms = XS_PERM_READ } };
	struct xs_permissions be_perms[2] = {
		{ .id = BACKEND_DOMID, .perms = XS_PERM_NONE },
		{ .id = d->domid, .perms = XS_PERM_READ } };
	unsigned len;
	char *v;

	v = xs_read(tx->h, tx->t, d->lx, &len);
	if (v != NULL) {
		free(v);
		tx->err = -EEXIST;
		return;
	}
	xen_xs_tx_write(tx, d->lx, "frontend", d->fe, NULL, 0);
	xen_xs_tx_write(tx, d->lx, "backend", d->be, NULL, 0);

	/* Leftovers of a device with this number go first. */
	if (!xs_rm(tx->h, tx->t, d->fe) && errno != ENOENT && !tx->err)
		tx->err = -(errno > 0 ? errno : EIO);
	xen_xs_tx_write(tx, d->fe, "", NULL, fe_perms, 2);
	xen_xs_tx_write(tx, d->fe, "backend", d->be, fe_perms, 2);
	xen_xs_tx_write(tx, d->fe, "backend-id", "0", fe_perms, 2);
	xen_xs_tx_write(tx, d->fe, "state", "1", fe_perms, 2);
	if (k) {
		tx_set(tx, d->fe, "virtual-device", "%u", d->devid);
		tx_set(tx, d->fe, "device-type", "disk");
		tx_set(tx, d->fe, "trusted", "%d", k->trusted ? 1 : 0);
	} else {
		char mtu[16], mac[24];
		/* Read-only for the guest, as libxl's ro_fents. */
		struct xs_permissions ro[2] = {
			{ .id = BACKEND_DOMID, .perms = XS_PERM_NONE },
			{ .id = d->domid, .perms = XS_PERM_READ } };

		tx_set(tx, d->fe, "handle", "%u", d->devid);
		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
		    m[0], m[1], m[2], m[3], m[4], m[5]);
		xen_xs_tx_write(tx, d->fe, "mac", mac, fe_perms, 2);
		tx_set(tx, d->fe, "trusted", "%d", n->trusted ? 1 : 0);
		snprintf(mtu, sizeof(mtu), "%u", n->mtu ? n->mtu : 1500);
		xen_xs_tx_write(tx, d->fe, "mtu", mtu, ro, 2);
	}

	if (!xs_rm(tx->h, tx->t, d->be) && errno != ENOENT && !tx->err)
		tx->err = -(errno > 0 ? errno : EIO);
	xen_xs_tx_write(tx, d->be, "", NULL, be_perms, 2);
	xen_xs_tx_write(tx, d->be, "frontend", d->fe, NULL, 0);
	fill_backend_keys(tx, d->be, a);
	fill_backend_keys(tx, d->lx, a);
}

/*
 * Remove `path`, then each parent left empty (no value, no children),
 * as libxl__xs_path_cleanup, but never `stop` or above it.
 */
static void
tx_rm_cleanup(struct xs_tx *tx, const char *path, const char *stop)
{
	char p[XS_PATH_MAX];
	char *slash, *val, **kids;
	unsigned len, n;

	snprintf(p, sizeof(p), "%s", path);
	if (!xs_rm(tx->h, tx->t, p)) {
		if (errno != ENOENT && tx->err == 0)
			tx->err = -(errno > 0 ? errno : EIO);
		return;
	}
	while ((slash = strrchr(p, '/')) != NULL) {
		*slash = '\0';
		if (strlen(p) <= strlen(stop) || strncmp(p, stop, strlen(stop)))
			break;
		val = xs_read(tx->h, tx->t, p, &len);
		if (!val)
			break;
		free(val);
		if (len != 0)
			break;
		kids = xs_directory(tx->h, tx->t, p, &n);
		free(kids);
		if (!kids || n != 0)
			break;
		if (!xs_rm(tx->h, tx->t, p))
			break;
	}
}

static void
fill_remove(struct xs_tx *tx, const void *varg)
{
	const struct dev *d = varg;
	char stop[XS_PATH_MAX];

	snprintf(stop, sizeof(stop), "/local/domain/%u/backend",
	    BACKEND_DOMID);
	tx_rm_cleanup(tx, d->be, stop);
	snprintf(stop, sizeof(stop), "/local/domain/%u/device", d->domid);
	tx_rm_cleanup(tx, d->fe, stop);
	snprintf(stop, sizeof(stop), "/libxl/%u/device", d->domid);
	tx_rm_cleanup(tx, d->lx, stop);
}

struct close_arg {
	const struct dev *d;
	bool	force;		/* take the frontend away from the guest */
};

/* Ask the backend to close: online 0, state Closing (unless Closed). */
static void
fill_close(struct xs_tx *tx, const void *varg)
{
	const struct close_arg *a = varg;
	char path[XS_PATH_MAX + 8], *state;
	unsigned len;

	if (a->force && !xs_rm(tx->h, tx->t, a->d->fe) && errno != ENOENT &&
	    tx->err == 0)
		tx->err = -(errno > 0 ? errno : EIO);
	snprintf(path, sizeof(path), "%s/state", a->d->be);
	state = xs_read(tx->h, tx->t, path, &len);
	if (state == NULL)
		return;		/* no backend left: only the rest to remove */
	xen_xs_tx_write(tx, a->d->be, "online", "0", NULL, 0);
	if (atoi(state) != XB_CLOSED)
		tx_set(tx, a->d->be, "state", "%d", XB_CLOSING);
	free(state);
}

/* ------------------------------------------------------------------ */
/* States                                                              */

enum wait_for { W_INITWAIT, W_CONNECTED, W_CLOSED };

static int
read_state(struct xs_handle *h, const char *dir)
{
	char path[XS_PATH_MAX + 8], *v, *end;
	unsigned len;
	long s;

	snprintf(path, sizeof(path), "%s/state", dir);
	v = xs_read(h, XBT_NULL, path, &len);
	if (!v)
		return -1;
	/*
	 * A frontend's state is the guest's to write: anything but a
	 * XenbusState (0 to 8) is Unknown, never a number that a cast to
	 * int would turn into one ("4294967300" is not Connected).
	 */
	errno = 0;
	s = strtol(v, &end, 10);
	if (end == v || *end || errno != 0 || s < XB_UNKNOWN ||
	    s > XB_RECONFIGURED)
		s = XB_UNKNOWN;
	free(v);
	return (int)s;
}

/*
 * Is the wait over: 1 reached, 0 not yet, -EPIPE gone the wrong way
 * (a backend that closes while it should come up).
 */
static int
wait_done(enum wait_for w, int bs, int fs)
{
	switch (w) {
	case W_INITWAIT:
		if (bs >= XB_INITWAIT && bs <= XB_CONNECTED)
			return 1;
		return bs >= XB_CLOSING ? -EPIPE : 0;
	case W_CONNECTED:
		if (bs == XB_CONNECTED && fs == XB_CONNECTED)
			return 1;
		return bs >= XB_CLOSING || fs >= XB_CLOSING ? -EPIPE : 0;
	case W_CLOSED:
		return bs < 0 || bs == XB_CLOSED;
	}
	return 0;
}

/*
 * Follow the backend's state (and the frontend's, for W_CONNECTED)
 * through watches until `w` or timeout_ms: 0, -ETIMEDOUT or -EPIPE,
 * with the last states seen (-1: absent).
 */
static int
wait_states(const struct dev *d, enum wait_for w, uint32_t timeout_ms,
    int *ret_bs, int *ret_fs)
{
	uint64_t deadline = now_ms() + timeout_ms;
	char bpath[XS_PATH_MAX + 8], fpath[XS_PATH_MAX + 8];
	struct xs_handle *h;
	int rc, bs = -1, fs = -1;

	h = xs_open(0);
	if (!h)
		return -(errno > 0 ? errno : ECONNREFUSED);
	snprintf(bpath, sizeof(bpath), "%s/state", d->be);
	snprintf(fpath, sizeof(fpath), "%s/state", d->fe);
	if (!xs_watch(h, bpath, "b") ||
	    (w == W_CONNECTED && !xs_watch(h, fpath, "f"))) {
		rc = -(errno > 0 ? errno : EIO);
		goto out;
	}
	for (;;) {
		struct pollfd p = { .fd = xs_fileno(h), .events = POLLIN };
		uint64_t now;
		char **ev;

		bs = read_state(h, d->be);
		if (w == W_CONNECTED)
			fs = read_state(h, d->fe);
		rc = wait_done(w, bs, fs);
		if (rc != 0) {
			rc = rc > 0 ? 0 : rc;
			break;
		}
		now = now_ms();
		if (now >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		if (p.fd < 0 || poll(&p, 1, (int)(deadline - now)) < 0) {
			rc = -(errno > 0 ? errno : EIO);
			break;
		}
		/* Drain the events: the states are read again anyway. */
		while ((ev = xs_check_watch(h)) != NULL)
			free(ev);
	}
	(void)xs_unwatch(h, bpath, "b");
	if (w == W_CONNECTED)
		(void)xs_unwatch(h, fpath, "f");
out:
	xs_close(h);
	*ret_bs = bs;
	*ret_fs = fs;
	return rc;
}

/*
 * Linux's netback switches the backend to InitWait and then creates
 * the vifD.N network device (netback_probe), and vif-bridge online
 * fails on a device that is not there yet.  Wait for it, at most
 * timeout_ms; past that the script runs anyway and says what is missing.
 * "There" is what the script's `ip link set dev vifD.N` needs: the name
 * resolves (if_nametoindex, as ip does).  /sys/class/net/vifD.N is not
 * enough: register_netdevice() adds it before it lists the device by
 * name, and an `ip` run in between finds no such device.
 */
static void
wait_netdev(const struct dev *d, uint32_t timeout_ms)
{
	uint64_t deadline = now_ms() + timeout_ms;

	while (if_nametoindex(d->vif) == 0 && now_ms() < deadline) {
		struct timespec ts = { 0, 20 * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* Hotplug scripts                                                     */

/*
 * Run the device's script (as its backend names it) with `action`;
 * 0 when it exited 0, else -EIO with why: the script, how it ended,
 * its hotplug-error, the end of its output.
 */
static int
run_script(struct xen_be *be, const struct dev *d, const char *action,
    uint32_t timeout_ms, char *why, size_t why_len)
{
	struct xen_hotplug hp = { .action = action, .kind = d->xkind,
	    .domid = d->domid, .devid = d->devid };
	char out[512], *script, *gw = NULL, *err = NULL, *nl;
	int status = 0, rc;

	script = xs_get(be, d->be, "script");
	if (!script) {
		vmb__why(why, why_len, "%s: no hotplug script in %s/script",
		    d->name, d->be);
		return -ENOENT;
	}
	hp.script = script;
	if (d->kind == VMB_DEVICE_NIC) {
		gw = xs_get(be, d->be, "gatewaydev");
		hp.vif = d->vif;
		hp.netdev = gw;
	}
	rc = xen_hotplug_run(&hp, timeout_ms, &status, out, sizeof(out));
	if (rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		goto out;
	err = xs_get(be, d->be, "hotplug-error");
	/* The last line of its output, when it left no hotplug-error. */
	while ((nl = strrchr(out, '\n')) != NULL && nl[1] == '\0')
		*nl = '\0';
	nl = strrchr(out, '\n');
	if (rc == -ETIMEDOUT)
		vmb__why(why, why_len, "%s: hotplug script %s %s did not "
		    "finish in %.1f s; killed", d->name, script, action,
		    timeout_ms / 1000.0);
	else if (rc)
		vmb__why(why, why_len, "%s: cannot run hotplug script %s: %s",
		    d->name, script, strerror(-rc));
	else
		vmb__why(why, why_len, "%s: hotplug script %s %s %s %d%s%s",
		    d->name, script, action, WIFEXITED(status) ?
		    "exited with status" : "killed by signal",
		    WIFEXITED(status) ? WEXITSTATUS(status) :
		    WTERMSIG(status), err || out[0] ? ": " : "",
		    err ? err : nl ? nl + 1 : out);
	rc = rc ? rc : -EIO;
out:
	free(err);
	free(gw);
	free(script);
	return rc;
}

/*
 * A loop device the block script left bound (it looks the file up by
 * the params it reads, and skips a file that is gone): detached here,
 * so that a destroyed guest never keeps one.
 */
static void
release_loop(const char *node)
{
	char sys[96];
	const char *base;
	int fd;

	if (!node || strncmp(node, "/dev/loop", 9) != 0)
		return;
	base = node + 5;
	snprintf(sys, sizeof(sys), "/sys/block/%s/loop/backing_file", base);
	if (access(sys, F_OK) != 0)
		return;		/* released */
	fd = open(node, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* EBUSY while blkback still holds it: then it clears on close. */
	if (ioctl(fd, LOOP_CLR_FD, 0) != 0 && errno == EBUSY) {
		struct loop_info64 li;

		if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
			li.lo_flags |= LO_FLAGS_AUTOCLEAR;
			(void)ioctl(fd, LOOP_SET_STATUS64, &li);
		}
	}
	close(fd);
}

/* ------------------------------------------------------------------ */
/* Teardown and the ops                                                */

/*
 * Take the device down: close (asked, then forced), the script, the
 * loop device, the entries.  `script` false: the add script never ran.
 * Returns -ETIMEDOUT when even the forced close timed out, else the
 * remove script's result (0 when none ran); the entries go regardless.
 */
static int
teardown(struct xen_be *be, const struct dev *d, bool force, bool script,
    uint32_t close_ms, char *why, size_t why_len)
{
	struct close_arg ca = { .d = d, .force = force };
	int bs, fs, rc, rc_script = 0, rc_close = 0;
	char *node = NULL;

	rc = xen_xs_transaction(be, d->domid, fill_close, &ca);
	if (rc == 0)
		rc = wait_states(d, W_CLOSED, close_ms, &bs, &fs);
	if (rc != 0 && !force) {
		/* The guest kept it (in use): take it, as libxl's force. */
		ca.force = true;
		rc = xen_xs_transaction(be, d->domid, fill_close, &ca);
		if (rc == 0)
			rc = wait_states(d, W_CLOSED, close_ms, &bs, &fs);
	}
	if (rc != 0) {
		rc_close = rc;
		vmb__why(why, why_len, "%s: the backend did not close in %.1f "
		    "s (state %d)", d->name, close_ms / 1000.0, bs);
	}
	if (d->kind == VMB_DEVICE_DISK)
		node = xs_get(be, d->be, "node");
	if (script)
		rc_script = run_script(be, d, d->kind == VMB_DEVICE_DISK ?
		    "remove" : "offline", VMB_DEV_HOTPLUG_MS,
		    rc_close ? NULL : why, rc_close ? 0 : why_len);
	release_loop(node);
	free(node);
	(void)xen_xs_transaction(be, d->domid, fill_remove, d);
	return rc_close ? rc_close : rc_script;
}

/*
 * Does this process have capability `cap` in its effective set?  The
 * hotplug scripts inherit it: block's losetup needs CAP_SYS_ADMIN,
 * vif-bridge's bridge CAP_NET_ADMIN.  Under vmbuildd.service's default
 * sandbox (no capabilities) they would fail half-way; say why up front.
 */
static bool
have_cap(unsigned cap)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d) != 0)
		return true;	/* cannot tell: let the script say */
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

/* The time since *t into *into (if any), and *t to now. */
static void
lap(uint64_t *t, uint64_t *into)
{
	uint64_t now = vmb__now_ns();

	if (into)
		*into += now - *t;
	*t = now;
}

int
xen_device_add(void *priv, uint32_t domid, const struct vmb_dev *v,
    char *why, size_t why_len)
{
	struct xen_be *be = priv;
	struct add_arg a = { .v = v };
	struct dev d;
	char *script = NULL, *hs = NULL;
	bool ran = false;
	uint64_t t;
	int rc, bs, fs;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED ||
	    (v->kind == VMB_DEVICE_DISK ? !v->disk || !v->disk->target :
	    !v->nic))
		return -EINVAL;
	dev_init(&d, domid, v->kind, v->devid, v->disk ? v->disk->vdev : NULL);
	a.d = &d;
	/* Only for Xen's own scripts: another one may need neither. */
	if (!have_cap(v->disk ? CAP_SYS_ADMIN : CAP_NET_ADMIN) &&
	    !(v->disk ? v->disk->script : v->nic->script)) {
		vmb__why(why, why_len, "%s: the %s hotplug script needs %s, "
		    "which this process lacks (vmbuildd.service: install the "
		    "vmbuildd-devices.conf drop-in, vmbuildd(8) SYSTEMD)",
		    d.name, v->disk ? "block" : "vif-bridge", v->disk ?
		    "CAP_SYS_ADMIN (losetup)" : "CAP_NET_ADMIN (the bridge)");
		return -EPERM;
	}
	rc = script_path(v->disk ? v->disk->script : v->nic->script,
	    v->disk ? "block" : "vif-bridge", &script);
	if (rc == -EINVAL)
		vmb__why(why, why_len, "%s: hotplug script \"%.64s\" is neither "
		    "a name in the script directory nor an absolute path",
		    d.name, v->disk ? v->disk->script : v->nic->script);
	if (rc)
		return rc;
	a.script = script;
	t = vmb__now_ns();
	rc = xen_xs_transaction(be, domid, fill_add, &a);
	lap(&t, v->times ? &v->times->entries_ns : NULL);
	if (rc == -EEXIST) {
		vmb__why(why, why_len, "%s: the domain has one already",
		    d.name);
		goto out;
	}
	if (rc) {
		vmb__why(why, why_len, "%s: cannot write its xenstore "
		    "entries: %s", d.name, strerror(-rc));
		goto out;
	}
	if (v->entered)
		v->entered(v->entered_arg);
	rc = wait_states(&d, W_INITWAIT, v->initwait_ms, &bs, &fs);
	if (rc) {
		vmb__why(why, why_len, "%s: the backend did not reach "
		    "InitWait in %.1f s (state %d): is %s loaded in dom0?",
		    d.name, v->initwait_ms / 1000.0, bs, v->disk ?
		    "xen-blkback" : "xen-netback");
		goto undo;
	}
	if (v->kind == VMB_DEVICE_NIC)
		wait_netdev(&d, v->initwait_ms);
	/* netback's interface too: part of the backend's coming up. */
	lap(&t, v->times ? &v->times->initwait_ns : NULL);
	ran = true;
	rc = -EAGAIN;		/* the script, unless done here */
	if (v->disk && !v->disk->script && !v->hotplug_scripts)
		rc = xen_blk_attach(be, domid, d.be, v->disk, d.name, why,
		    why_len);
	else if (v->nic && !v->nic->script && !v->hotplug_scripts)
		rc = xen_vif_online(be, domid, d.be, d.fe, v->nic, d.vif,
		    d.name, why, why_len);
	if (rc == -EAGAIN)
		rc = run_script(be, &d, v->disk ? "add" : "online",
		    v->hotplug_ms, why, why_len);
	lap(&t, v->times ? &v->times->script_ns : NULL);
	if (rc)
		goto undo;
	hs = xs_get(be, d.be, "hotplug-status");
	if (hs && (!strcmp(hs, "error") || !strcmp(hs, "busy"))) {
		char *err = xs_get(be, d.be, "hotplug-error");

		vmb__why(why, why_len, "%s: hotplug script %s says %s%s%s",
		    d.name, script, hs, err ? ": " : "", err ? err : "");
		free(err);
		rc = -EIO;
		goto undo;
	}
	if (v->connect_ms) {
		rc = wait_states(&d, W_CONNECTED, v->connect_ms, &bs, &fs);
		lap(&t, v->times ? &v->times->connect_ns : NULL);
		if (rc) {
			vmb__why(why, why_len, "%s: not connected %s (backend "
			    "state %d, frontend state %d)%s", d.name,
			    rc == -EPIPE ? "(closed meanwhile)" : "in time",
			    bs, fs, fs <= XB_INITIALISING ? ": does the guest "
			    "run its PV drivers?" : "");
			goto undo;
		}
	}
	goto out;
undo:
	(void)teardown(be, &d, true, ran, v->close_ms ? v->close_ms :
	    VMB_DEV_CLOSE_MS, NULL, 0);
out:
	free(hs);
	free(script);
	return rc;
}

int
xen_device_remove(void *priv, uint32_t domid, enum vmb_device_kind kind,
    uint32_t devid, bool force, uint32_t close_ms, char *why, size_t why_len)
{
	struct xen_be *be = priv;
	char *backend, *vdev = NULL;
	struct dev d;
	int rc;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	dev_init(&d, domid, kind, devid, NULL);
	backend = xs_get(be, d.lx, "backend");
	if (!backend) {
		vmb__why(why, why_len, "%s: the domain has none", d.name);
		return -ENOENT;
	}
	/* Only a backend of the layout written above. */
	if (strcmp(backend, d.be) != 0) {
		vmb__why(why, why_len, "%s: its backend %s is not dom0's",
		    d.name, backend);
		free(backend);
		return -EOPNOTSUPP;
	}
	free(backend);
	if (kind == VMB_DEVICE_DISK && (vdev = xs_get(be, d.be, "dev")))
		dev_init(&d, domid, kind, devid, vdev);
	free(vdev);
	rc = teardown(be, &d, force, true, close_ms, why, why_len);
	return rc == -ETIMEDOUT ? 0 : rc;
}

struct destroy_one {
	struct dev d;
	bool	closing;
};

void
xen_devices_destroy(struct xen_be *be, uint32_t domid)
{
	static const struct { const char *xkind; enum vmb_device_kind kind; }
	    kinds[] = { { "vbd", VMB_DEVICE_DISK }, { "vif", VMB_DEVICE_NIC } };
	struct destroy_one *all = NULL;
	size_t nr = 0;
	char path[XS_PATH_MAX];

	/* Every device first asked to close, forced, then each finished. */
	for (size_t k = 0; k < 2; k++) {
		char **ids;
		unsigned n;

		snprintf(path, sizeof(path), "/libxl/%u/device/%s", domid,
		    kinds[k].xkind);
		pthread_mutex_lock(&be->xs_lock);
		ids = xs_directory(be->xsh, XBT_NULL, path, &n);
		pthread_mutex_unlock(&be->xs_lock);
		for (unsigned i = 0; ids && i < n; i++) {
			struct destroy_one *grown;
			struct close_arg ca;
			char *end;
			unsigned long id = strtoul(ids[i], &end, 10);

			if (end == ids[i] || *end || id > UINT32_MAX)
				continue;
			grown = realloc(all, (nr + 1) * sizeof(*all));
			if (!grown)
				break;
			all = grown;
			dev_init(&all[nr].d, domid, kinds[k].kind,
			    (uint32_t)id, NULL);
			ca.d = &all[nr].d;
			ca.force = true;
			all[nr].closing = xen_xs_transaction(be, domid,
			    fill_close, &ca) == 0;
			nr++;
		}
		free(ids);
	}
	for (size_t i = 0; i < nr; i++)
		(void)teardown(be, &all[i].d, true, true, all[i].closing ?
		    VMB_DEV_CLOSE_MS : 0, NULL, 0);
	free(all);
}
