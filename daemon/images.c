/*
 * images.c - descriptors and image directories (see images.h).
 *
 * A path under an image directory is opened relative to the directory's
 * descriptor with openat2(RESOLVE_BENEATH): no "..", absolute symbolic
 * link or mount point takes it out of the directory.  It is first opened
 * O_PATH, which opens nothing (a FIFO does not block, a device node is
 * not opened, with whatever that would do), and only a regular file is
 * then opened for reading, through /proc/self/fd.  Kernels without
 * openat2 (before 5.6) get a walk that refuses symbolic links.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "control.h"
#include "images.h"
#include "json.h"
#include "log.h"
#include "peer.h"
#include "proto.h"

#define IMAGES_MAX_DIRS	16

static const char *const image_keys[2] = { "kernel", "ramdisk" };

static struct {
	struct {
		char	*path;		/* as given, without trailing '/' */
		char	*real;		/* resolved, if different */
		int	fd;		/* O_PATH | O_DIRECTORY */
	} dirs[IMAGES_MAX_DIRS];
	unsigned n;
} I;

int
images_add_dir(const char *path)
{
	size_t len = strlen(path);
	char *p, *real;
	int fd;

	if (path[0] != '/') {
		fprintf(stderr, "vmbuildd: --image-dir %s: an absolute path is "
		    "needed\n", path);
		return -1;
	}
	if (I.n == IMAGES_MAX_DIRS) {
		fprintf(stderr, "vmbuildd: --image-dir: at most %d "
		    "directories\n", IMAGES_MAX_DIRS);
		return -1;
	}
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "vmbuildd: --image-dir %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	while (len > 1 && path[len - 1] == '/')
		len--;
	p = strndup(path, len);
	real = realpath(path, NULL);
	if (p == NULL) {
		close(fd);
		free(real);
		return -1;
	}
	if (real != NULL && !strcmp(real, p)) {
		free(real);
		real = NULL;
	}
	I.dirs[I.n].path = p;
	I.dirs[I.n].real = real;
	I.dirs[I.n].fd = fd;
	I.n++;
	return 0;
}

void
images_free(void)
{
	for (unsigned i = 0; i < I.n; i++) {
		free(I.dirs[i].path);
		free(I.dirs[i].real);
		close(I.dirs[i].fd);
	}
	I.n = 0;
}

unsigned
images_ndirs(void)
{
	return I.n;
}

void
image_req_init(struct image_req *req)
{
	for (int i = 0; i < 2; i++) {
		req->fd[i] = -1;
		req->dir[i] = -1;
		req->rel[i] = NULL;
		req->dev[i] = 0;
		req->ino[i] = 0;
	}
	req->as = NULL;
}

void
image_req_done(struct image_req *req)
{
	for (int i = 0; i < 2; i++) {
		if (req->fd[i] >= 0)
			close(req->fd[i]);
		free(req->rel[i]);
	}
	image_req_init(req);
}

/* The part of `path` below `dir`, or NULL when it is not below it. */
static const char *
below(const char *path, const char *dir)
{
	size_t len;

	if (dir == NULL)
		return NULL;
	len = strlen(dir);
	if (len == 1)		/* "/" */
		return path[1] ? path + 1 : NULL;
	if (strncmp(path, dir, len) != 0 || path[len] != '/' || !path[len + 1])
		return NULL;
	return path + len + 1;
}

/*
 * params.fds.KEY: a descriptor the request carried, checked; the file
 * it is (req->dev, req->ino) is what a restart by path must find.
 */
static int
take_fd(struct call *call, yajl_val fds, int i, struct image_req *req)
{
	int *ret_fd = &req->fd[i];
	yajl_val v = jv_get(fds, image_keys[i]);
	struct stat st;
	long long idx;
	int fd, fl;

	*ret_fd = -1;
	if (v == NULL || YAJL_IS_NULL(v))
		return 0;
	if (!YAJL_IS_INTEGER(v) || (idx = YAJL_GET_INTEGER(v)) < 0 ||
	    idx >= RPC_MAX_FDS)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s "
		    "must be the index of a descriptor sent with the request "
		    "(0 to %d)", image_keys[i], RPC_MAX_FDS - 1);
	fd = call_take_fd(call, (size_t)idx);
	if (fd < 0)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s: "
		    "no descriptor %lld came with the request (%zu did)",
		    image_keys[i], idx, call->nfds);
	*ret_fd = fd;
	if (fstat(fd, &st) < 0)
		return call_error(call, E_IMAGE, errno, "params.fds.%s: %s",
		    image_keys[i], strerror(errno));
	if (!S_ISREG(st.st_mode))
		return call_error(call, E_IMAGE, 0, "params.fds.%s: not a "
		    "regular file", image_keys[i]);
	req->dev[i] = st.st_dev;
	req->ino[i] = st.st_ino;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return call_error(call, E_IMAGE, 0, "params.fds.%s: not open "
		    "for reading", image_keys[i]);
	return 0;
}

/*
 * The image directory `path` lies in, for image i of req: 0, -ENOENT
 * when it lies in none, or -ENOMEM.
 */
static int
place_in_dir(const char *path, int i, struct image_req *req)
{
	for (unsigned d = 0; path[0] == '/' && d < I.n; d++) {
		const char *rel = below(path, I.dirs[d].path);

		if (rel == NULL)
			rel = below(path, I.dirs[d].real);
		if (rel == NULL)
			continue;
		req->dir[i] = (int)d;
		req->rel[i] = strdup(rel);
		return req->rel[i] == NULL ? -ENOMEM : 0;
	}
	return -ENOENT;
}

/* Where the guest's path of image i is to come from, or a data.files entry. */
static int
place_path(struct call *call, const char *path, int i, struct image_req *req,
    bool *ret_refused)
{
	int rc = place_in_dir(path, i, req);
	struct stat st;
	char why[512];

	if (rc == -ENOMEM)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	/*
	 * The daemon reads as root: a client other than root gets only a
	 * file it could read itself (a root-only file of the directory is
	 * not its), and images_open checks it opens that very file.
	 */
	if (rc == 0 && call->conn->uid != 0) {
		rc = peer_may_use(call->conn, path, false, &st, why,
		    sizeof(why));
		if (rc < 0)
			return call_error(call, E_IMAGE, -rc, "%s %s: %s (the "
			    "daemon loads from an image directory only what "
			    "its client may read)", image_keys[i], path, why);
		req->dev[i] = st.st_dev;
		req->ino[i] = st.st_ino;
	}
	if (rc == 0)
		return 0;
	*ret_refused = true;
	if (call_error_file(call, image_keys[i], path) < 0)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	return 0;
}

int
images_prepare(struct call *call, const struct vmb_guest *g,
    struct image_req *req)
{
	const char *paths[2] = { g->kernel, g->ramdisk };
	const char *first = NULL;
	yajl_val fds = NULL;
	bool refused = false;

	if (param_object(call, P_FDS, false, &fds) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		if (take_fd(call, fds, i, req) < 0)
			return -1;
		if (req->fd[i] >= 0 && paths[i] == NULL)
			return call_error(call, RPC_INVALID_PARAMS, 0,
			    "params.fds.%s: the guest has no %s",
			    image_keys[i], image_keys[i]);
		if (req->fd[i] >= 0 || paths[i] == NULL)
			continue;
		if (place_path(call, paths[i], i, req, &refused) < 0)
			return -1;
		if (refused && first == NULL)
			first = image_keys[i];
	}
	if (!refused)
		return 0;
	return call_error(call, E_IMAGE_FD, 0, "%s %s: vmbuildd opens no file "
	    "a client names outside its image directories (%s): pass it as "
	    "a descriptor (params.fds; vmctl does)", first,
	    paths[strcmp(first, "kernel") ? 1 : 0], I.n ? "--image-dir" :
	    "none configured");
}

bool
images_in_dir(const char *path)
{
	for (unsigned d = 0; path[0] == '/' && d < I.n; d++)
		if (below(path, I.dirs[d].path) != NULL ||
		    below(path, I.dirs[d].real) != NULL)
			return true;
	return false;
}

int
images_restart(const struct vmb_guest *g, const int kept[2],
    const struct source_owner *owner, struct image_req *req, char *why,
    size_t why_len)
{
	const char *paths[2] = { g->kernel, g->ramdisk };

	/* Root's rights only for what root created (source.h). */
	if (!owner->by_root) {
		req->as = &owner->cred;
		for (int i = 0; i < 2; i++) {
			req->dev[i] = owner->dev[i];
			req->ino[i] = owner->ino[i];
		}
	}

	for (int i = 0; i < 2; i++) {
		int rc;

		if (paths[i] == NULL)
			continue;
		if (kept[i] >= 0) {
			req->fd[i] = fcntl(kept[i], F_DUPFD_CLOEXEC, 3);
			if (req->fd[i] < 0) {
				rc = -errno;
				snprintf(why, why_len, "%s %s: %s",
				    image_keys[i], paths[i], strerror(-rc));
				return rc;
			}
			continue;
		}
		rc = place_in_dir(paths[i], i, req);
		if (rc == -ENOENT)
			snprintf(why, why_len, "%s %s: outside the image "
			    "directories (%s), and this vmbuildd does not hold "
			    "the descriptor it came as (it started after the "
			    "VM was created)", image_keys[i], paths[i],
			    I.n ? "--image-dir" : "none configured");
		else if (rc < 0)
			snprintf(why, why_len, "out of memory");
		if (rc < 0)
			return rc == -ENOENT ? -EPERM : rc;
	}
	return 0;
}

/*
 * openat2() below dirfd, or, where the kernel lacks it, a walk that
 * takes no symbolic link and no "..".
 */
static int
open_beneath(int dirfd, const char *rel)
{
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	char buf[PATH_MAX], *save = NULL, *comp, *next;
	int fd, cur, err = ENOENT;

	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd < 0 ? -errno : fd;
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	cur = dirfd;
	for (comp = strtok_r(buf, "/", &save); comp != NULL; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "..")) {
			err = EXDEV;
			break;
		}
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC |
		    (next ? O_DIRECTORY : 0));
		err = errno;
		if (cur != dirfd)
			close(cur);
		cur = dirfd;
		if (fd < 0)
			break;
		if (next == NULL)
			return fd;
		cur = fd;
	}
	if (cur != dirfd)
		close(cur);
	/* A symbolic link where a directory should be. */
	return err == ENOTDIR ? -ELOOP : -err;
}

/* A regular file, opened for reading from an O_PATH descriptor. */
static int
reopen_regular(int pfd, char *why, size_t why_len, const char *what,
    const char *path)
{
	struct stat st, st2;
	char proc[64];
	int fd;

	if (fstat(pfd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, why_len, "%s %s: a symbolic link (the daemon "
		    "does not follow one)", what, path);
		return -ELOOP;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_len, "%s %s: not a regular file", what, path);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, why_len, "%s %s: %s", what, path,
		    strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st2) < 0 || st2.st_ino != st.st_ino ||
	    st2.st_dev != st.st_dev) {
		close(fd);
		snprintf(why, why_len, "%s %s: changed while opened", what,
		    path);
		return -EAGAIN;
	}
	return fd;
}

/* Is fd the file (dev, ino)? */
static bool
same_file(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* Who a restart opens for, in messages: "uid N" or "nobody". */
static void
as_whom(const struct peer_cred *as, char *buf, size_t len)
{
	if (as->others_only)
		snprintf(buf, len, "anyone (the VM's record names no creator)");
	else
		snprintf(buf, len, "uid %u", (unsigned)as->uid);
}

/*
 * The file opened for req->as is one it may read: by its mode (the
 * function vm.create judges a client's paths with, on the file opened,
 * not on the path), and the path leads to it through directories it
 * may enter (every one from "/", as at vm.create).  0, or -EACCES.
 */
static int
check_as(const struct image_req *req, int fd, const char *what,
    const char *path, char *why, size_t why_len)
{
	struct stat st, pst;
	char who[64], err[300];

	as_whom(req->as, who, sizeof(who));
	if (fstat(fd, &st) < 0 || !peer_cred_may(req->as, &st, false)) {
		snprintf(why, why_len, "%s %s: %s may not read it", what, path,
		    who);
		return -EACCES;
	}
	if (peer_cred_may_use(req->as, path, false, &pst, err,
	    sizeof(err)) < 0) {
		snprintf(why, why_len, "%s %s: %s", what, path, err);
		return -EACCES;
	}
	if (pst.st_dev != st.st_dev || pst.st_ino != st.st_ino) {
		snprintf(why, why_len, "%s %s: changed while opened", what,
		    path);
		return -EAGAIN;
	}
	return 0;
}

/*
 * Image i of the guest, from its image directory: with root's rights,
 * or with req->as's (a restart of a VM no root client created: the
 * kernel judges every directory of the walk and the file itself as
 * its creator, and check_as() again by the mode bits).  The file or
 * a negative errno with why.
 */
static int
open_one(const struct image_req *req, int i, const char *path, char *why,
    size_t why_len)
{
	struct peer_saved saved;
	char who[64];
	int pfd, fd, rc;

	if (req->as != NULL && (rc = peer_enter(req->as, &saved, why,
	    why_len)) < 0)
		return rc;
	pfd = open_beneath(I.dirs[req->dir[i]].fd, req->rel[i]);
	fd = pfd;
	if (pfd >= 0) {
		fd = reopen_regular(pfd, why, why_len, image_keys[i], path);
		close(pfd);
	}
	if (req->as != NULL)
		peer_leave(&saved);
	if (pfd < 0) {
		snprintf(who, sizeof(who), "root");
		if (req->as != NULL)
			as_whom(req->as, who, sizeof(who));
		snprintf(why, why_len, "%s %s: %s (opened as %s)",
		    image_keys[i], path, pfd == -EXDEV ? "leads out of the "
		    "image directory" : pfd == -ELOOP ? "through a symbolic "
		    "link the daemon does not follow" : pfd == -ENOENT ? "no "
		    "such file in the image directory" : strerror(-pfd), who);
		return pfd;
	}
	if ((fd == -EACCES || fd == -EPERM) && req->as != NULL) {
		as_whom(req->as, who, sizeof(who));
		snprintf(why, why_len, "%s %s: %s may not read it (a restart "
		    "opens the images of a VM no root client created with "
		    "its creator's rights)", image_keys[i], path, who);
	}
	if (fd >= 0 && req->as != NULL &&
	    (rc = check_as(req, fd, image_keys[i], path, why, why_len)) < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

int
images_open(struct image_req *req, const struct vmb_guest *g, char *why,
    size_t why_len)
{
	const char *paths[2] = { g->kernel, g->ramdisk };

	for (int i = 0; i < 2; i++) {
		int fd;

		if (req->dir[i] < 0 || req->fd[i] >= 0)
			continue;
		fd = open_one(req, i, paths[i], why, why_len);
		if (fd < 0)
			return fd;
		req->fd[i] = fd;
		if (req->ino[i] && !same_file(fd, req->dev[i], req->ino[i])) {
			if (req->as != NULL)
				snprintf(why, why_len, "%s %s: not the file "
				    "the VM was created from (replaced since; "
				    "a restart of a VM root did not create "
				    "loads only the very file its creator was "
				    "found to be able to read)", image_keys[i],
				    paths[i]);
			else
				snprintf(why, why_len, "%s %s: not the file "
				    "its client was found to be able to read "
				    "(changed since)", image_keys[i], paths[i]);
			return -EAGAIN;
		}
	}
	return 0;
}
