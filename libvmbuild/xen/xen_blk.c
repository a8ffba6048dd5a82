/*
 * xen_blk.c - what Xen's block hotplug script (/etc/xen/scripts/block
 * add, 4.17) does for a disk whose config names no script, done in the
 * daemon: the same lock, the same checks, the same xenstore keys, no
 * fork.  The script is a shell program of some 30 forks (xenstore-read,
 * stat, losetup, flock...): 6.3 s of a 4.5 GiB guest's 7.1 s create in
 * the TCG lab, and on any host it holds the "block" lock for its whole
 * run, so that parallel creates queue on it.  `script=block` (or any
 * script) in the disk's spec runs the script, as before.
 *
 *   1. the lock: /var/run/xen-hotplug/block, taken as locking.sh does
 *      (flock, then the descriptor's file must still be the path's:
 *      a releaser removes it), so that a script and vmbuildd, or two
 *      daemons, never interleave;
 *   2. the backend must still be in InitWait (a removal racing us);
 *   3. a file: canonical path; to be written, its mode must have a
 *      write bit; shared (see sharing()) only as the script allows;
 *      a block device: checked for sharing the same way;
 *   4. a file gets a free loop device (LOOP_CTL_GET_FREE, configured
 *      with LOOP_CONFIGURE, read-only for a read-only disk);
 *   5. node (files), physical-device (major:minor in hex, as stat %t:%T),
 *      physical-device-path and hotplug-status "connected", in one
 *      transaction: blkback watches physical-device.
 * The removal is left to the script's remove (`losetup -d` of node)
 * and xen_dev.c's release_loop, so that a domain built here is torn
 * down the same by xl.  Where this differs from the script: the sharing
 * check compares domains by their vm path only (the script also maps
 * stub domains to their targets; vmbuild makes none).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/loop.h>

#include "vmb_internal.h"
#include "xen_priv.h"

#define LOCK_DIR	"/var/run/xen-hotplug"
#define LOCK_DIR_ENV	"VMBUILD_XEN_LOCK_DIR"	/* tests */
#define VBD_BASE	"/local/domain/0/backend/vbd"
#define MAX_SHARED	16	/* loop devices of one file we look at */

/* One read on the shared handle; NULL when absent. */
static char *
get(struct xen_be *be, const char *path)
{
	unsigned len;
	char *v;

	pthread_mutex_lock(&be->xs_lock);
	v = xs_read(be->xsh, XBT_NULL, path, &len);
	pthread_mutex_unlock(&be->xs_lock);
	return v;
}

static char **
list(struct xen_be *be, const char *path, unsigned *n)
{
	char **v;

	pthread_mutex_lock(&be->xs_lock);
	v = xs_directory(be->xsh, XBT_NULL, path, n);
	pthread_mutex_unlock(&be->xs_lock);
	return v;
}

/* locking.sh's claim_lock: -1 after saying why. */
static int
lock_take(char *path, size_t len, char *why, size_t why_len)
{
	const char *dir = getenv(LOCK_DIR_ENV) ? getenv(LOCK_DIR_ENV) :
	    LOCK_DIR;
	struct stat a, b;
	int fd;

	(void)mkdir(dir, 0755);
	snprintf(path, len, "%s/block", dir);
	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0644);
		if (fd < 0 || flock(fd, LOCK_EX) != 0) {
			vmb__why(why, why_len, "cannot take the lock %s: %s",
			    path, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		/* Still the path's file: not one a releaser removed. */
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
}

/* locking.sh's release_lock: the file goes, then the descriptor. */
static void
lock_release(const char *path, int fd)
{
	(void)unlink(path);
	close(fd);
}

/*
 * The loop devices bound to the file (dev, ino), as `losetup -j`:
 * their device numbers into rdev[], how many (at most MAX_SHARED).
 */
static size_t
loops_of(dev_t dev, ino_t ino, dev_t *rdev)
{
	DIR *d = opendir("/sys/block");
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL && n < MAX_SHARED) {
		struct loop_info64 li;
		char node[PATH_MAX];
		struct stat st;
		int fd;

		if (strncmp(e->d_name, "loop", 4) != 0)
			continue;
		snprintf(node, sizeof(node), "/dev/%s", e->d_name);
		fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (ioctl(fd, LOOP_GET_STATUS64, &li) == 0 &&
		    li.lo_device == (uint64_t)dev && li.lo_inode ==
		    (uint64_t)ino && fstat(fd, &st) == 0)
			rdev[n++] = st.st_rdev;
		close(fd);
	}
	closedir(d);
	return n;
}

static bool
in(dev_t x, const dev_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* Mounted in dom0 (read-write, unless `any`)? */
static bool
mounted(const dev_t *rdev, size_t n, bool any)
{
	FILE *f = fopen("/proc/mounts", "re");
	char src[PATH_MAX], opts[1024];
	bool hit = false;

	if (!f)
		return false;
	while (!hit && fscanf(f, "%4095s %*s %*s %1023s %*d %*d", src,
	    opts) == 2) {
		struct stat st;

		if (!any && (!strcmp(opts, "ro") || !strncmp(opts, "ro,", 3)))
			continue;
		if (src[0] == '/' && stat(src, &st) == 0 &&
		    S_ISBLK(st.st_mode) && in(st.st_rdev, rdev, n))
			hit = true;
	}
	fclose(f);
	return hit;
}

/*
 * The script's check_sharing: may the device(s) rdev[] be given to
 * `domid` with `mode` ('w' or 'r')?  Not when dom0 has one mounted
 * (read-write, for 'r'), nor when another VM's vbd has it (written, for
 * 'r').  0, or -EBUSY with the reason in why.
 */
static int
sharing(struct xen_be *be, uint32_t domid, const dev_t *rdev, size_t n,
    char mode, const char *what, char *why, size_t why_len)
{
	char path[XS_PATH_MAX], *myvm, **doms;
	unsigned nd = 0;
	int rc = 0;

	if (n == 0)
		return 0;
	if (mounted(rdev, n, mode == 'w')) {
		vmb__why(why, why_len, "%s is mounted %sin dom0, and so cannot "
		    "be attached %s", what, mode == 'w' ? "" : "read-write ",
		    mode == 'w' ? "read-write" : "read-only");
		return -EBUSY;
	}
	snprintf(path, sizeof(path), "/local/domain/%u/vm", domid);
	myvm = get(be, path);
	doms = list(be, VBD_BASE, &nd);
	for (unsigned i = 0; doms && i < nd && !rc; i++) {
		char **devs, *vm;
		unsigned nv = 0;

		snprintf(path, sizeof(path), "/local/domain/%s/vm", doms[i]);
		vm = get(be, path);
		/* The same VM may use it twice (the script's same_vm). */
		if (vm && myvm && !strcmp(vm, myvm)) {
			free(vm);
			continue;
		}
		free(vm);
		snprintf(path, sizeof(path), VBD_BASE "/%s", doms[i]);
		devs = list(be, path, &nv);
		for (unsigned k = 0; devs && k < nv && !rc; k++) {
			unsigned ma, mi;
			char *pd, *m;

			snprintf(path, sizeof(path), VBD_BASE "/%s/%s/"
			    "physical-device", doms[i], devs[k]);
			pd = get(be, path);
			snprintf(path, sizeof(path), VBD_BASE "/%s/%s/mode",
			    doms[i], devs[k]);
			m = get(be, path);
			if (pd && sscanf(pd, "%x:%x", &ma, &mi) == 2 &&
			    in(makedev(ma, mi), rdev, n) &&
			    (mode == 'w' || (m && strchr(m, 'w')))) {
				vmb__why(why, why_len, "%s is attached %sto "
				    "domain %s, and so cannot be attached %s",
				    what, mode == 'w' ? "" : "read-write ",
				    doms[i], mode == 'w' ? "read-write" :
				    "read-only");
				rc = -EBUSY;
			}
			free(pd);
			free(m);
		}
		free(devs);
	}
	free(doms);
	free(myvm);
	return rc;
}

/* A free loop device bound to `ffd`: its descriptor, or -errno. */
static int
loop_bind(int ffd, const char *file, bool ro, char *node, size_t len)
{
	int ctl, lfd = -ENODEV;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	/* Another may take the free one first (EBUSY): the next. */
	for (int tries = 0; tries < 16; tries++) {
		struct loop_config cfg;
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);

		if (n < 0) {
			lfd = -errno;
			break;
		}
		snprintf(node, len, "/dev/loop%d", n);
		lfd = open(node, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
		if (lfd < 0) {
			lfd = -errno;
			break;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (uint32_t)ffd;
		cfg.info.lo_flags = ro ? LO_FLAGS_READ_ONLY : 0;
		/* What losetup -a shows; cut at 63 bytes, as losetup's. */
		memcpy(cfg.info.lo_file_name, file, strnlen(file,
		    LO_NAME_SIZE - 1));
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
			break;
		close(lfd);
		lfd = -errno;
		if (lfd != -EBUSY)
			break;
	}
	close(ctl);
	return lfd;
}

struct dev_keys {
	const char *be;
	const char *node;		/* NULL: a block device */
	char	mm[32], path[PATH_MAX];
};

static void
fill_keys(struct xs_tx *tx, const void *arg)
{
	const struct dev_keys *k = arg;

	if (k->node)
		xen_xs_tx_write(tx, k->be, "node", k->node, NULL, 0);
	xen_xs_tx_write(tx, k->be, "physical-device", k->mm, NULL, 0);
	xen_xs_tx_write(tx, k->be, "physical-device-path", k->path, NULL, 0);
	xen_xs_tx_write(tx, k->be, "hotplug-status", "connected", NULL, 0);
}

int
xen_blk_attach(struct xen_be *be, uint32_t domid, const char *bepath,
    const struct vmb_disk *disk, const char *name, char *why, size_t why_len)
{
	struct dev_keys keys = { .be = bepath };
	char lockpath[PATH_MAX], real[PATH_MAX], node[64], path[XS_PATH_MAX];
	char mode = disk->readonly ? 'r' : 'w', *state, w[256] = "";
	dev_t rdev[MAX_SHARED];
	int lock, ffd = -1, lfd = -1, rc;
	struct stat st;
	size_t n;

	if (!realpath(disk->target, real)) {
		rc = -errno;
		vmb__why(why, why_len, "%s: %s: %s", name, disk->target,
		    strerror(-rc));
		return rc;
	}
	lock = lock_take(lockpath, sizeof(lockpath), w, sizeof(w));
	if (lock < 0) {
		vmb__why(why, why_len, "%s: %s", name, w);
		return -EIO;
	}
	snprintf(path, sizeof(path), "%s/state", bepath);
	state = get(be, path);
	if (!state || strcmp(state, "2") != 0) {
		vmb__why(why, why_len, "%s: the backend left InitWait (state "
		    "%s) while the disk was attached", name, state ? state :
		    "gone");
		free(state);
		rc = -EPIPE;
		goto out;
	}
	free(state);
	ffd = open(real, (mode == 'w' ? O_RDWR : O_RDONLY) | O_CLOEXEC |
	    O_NONBLOCK | O_NOCTTY);
	if (ffd < 0 || fstat(ffd, &st) != 0) {
		rc = -errno;
		vmb__why(why, why_len, "%s: %s: %s", name, real, strerror(-rc));
		goto out;
	}
	if (S_ISBLK(st.st_mode)) {
		rdev[0] = st.st_rdev;
		rc = sharing(be, domid, rdev, 1, mode, real, w, sizeof(w));
		snprintf(keys.path, sizeof(keys.path), "%s", real);
	} else if (S_ISREG(st.st_mode)) {
		if (mode == 'w' && !(st.st_mode & (S_IWUSR | S_IWGRP |
		    S_IWOTH))) {
			vmb__why(why, why_len, "%s: file %s is read-only, and "
			    "so vmbuild will not attach it read-write", name,
			    real);
			rc = -EROFS;
			goto out;
		}
		n = loops_of(st.st_dev, st.st_ino, rdev);
		rc = sharing(be, domid, rdev, n, mode, real, w, sizeof(w));
		if (rc == 0) {
			lfd = loop_bind(ffd, real, mode == 'r', node,
			    sizeof(node));
			if (lfd < 0) {
				rc = lfd;
				vmb__why(why, why_len, "%s: no loop device for "
				    "%s: %s", name, real, strerror(-rc));
				goto out;
			}
			if (fstat(lfd, &st) != 0) {
				rc = -errno;
				goto unbind;
			}
			keys.node = node;
			snprintf(keys.path, sizeof(keys.path), "%s", node);
		}
	} else {
		vmb__why(why, why_len, "%s: %s is neither a file nor a block "
		    "device", name, real);
		rc = -EINVAL;
		goto out;
	}
	if (rc) {
		vmb__why(why, why_len, "%s: %s", name, w);
		goto out;
	}
	snprintf(keys.mm, sizeof(keys.mm), "%x:%x", major(st.st_rdev),
	    minor(st.st_rdev));
	rc = xen_xs_transaction(be, domid, fill_keys, &keys);
	if (rc == 0)
		goto out;
	vmb__why(why, why_len, "%s: cannot write physical-device: %s", name,
	    strerror(-rc));
unbind:
	if (lfd >= 0)
		(void)ioctl(lfd, LOOP_CLR_FD, 0);
out:
	if (lfd >= 0)
		close(lfd);
	if (ffd >= 0)
		close(ffd);
	lock_release(lockpath, lock);
	return rc;
}
