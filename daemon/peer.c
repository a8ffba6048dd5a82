/*
 * peer.c - what the client on a connection may open itself (see peer.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "control.h"
#include "peer.h"

/* Does `cr` have `want` (4 r, 2 w, 1 x) on st? */
static bool
peer_bits(const struct stat *st, const struct peer_cred *cr, unsigned want)
{
	unsigned mode = st->st_mode;
	bool in_group = cr->gid == st->st_gid;

	if (cr->others_only)
		return (mode & want) == want;
	if (st->st_uid == cr->uid)
		return ((mode >> 6) & want) == want;
	for (size_t i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == st->st_gid)
			in_group = true;
	if (in_group)
		return ((mode >> 3) & want) == want;
	return (mode & want) == want;
}

bool
peer_cred_may(const struct peer_cred *cr, const struct stat *st, bool write)
{
	return peer_bits(st, cr, write ? 6 : 4);
}

int
peer_cred_of(const struct conn *c, struct peer_cred *out)
{
	socklen_t len = 0;
	gid_t *gids;

	memset(out, 0, sizeof(*out));
	out->uid = c->uid;
	out->gid = c->gid;
	/*
	 * The groups the peer's process has (SO_PEERGROUPS), as the socket
	 * saw them: no NSS lookup on the loop.  Asked with no room, the
	 * kernel says how much is needed (ERANGE), or that there are none;
	 * when it cannot say, only the primary group counts.
	 */
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, NULL, &len) == 0 ||
	    errno != ERANGE)
		return 0;
	if ((gids = malloc(len)) == NULL)
		return -ENOMEM;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, gids, &len) < 0) {
		free(gids);
		return 0;
	}
	out->groups = gids;
	out->ngroups = len / sizeof(gid_t);
	return 0;
}

void
peer_cred_done(struct peer_cred *cr)
{
	free(cr->groups);
	cr->groups = NULL;
	cr->ngroups = 0;
}

int
peer_cred_may_use(const struct peer_cred *cr, const char *path, bool write,
    struct stat *ret_st, char *why, size_t why_len)
{
	struct stat st;
	char *p, *slash;

	if (cr->uid == 0 && !cr->others_only) {
		/* Root may use anything there is; say so if there is none. */
		if (stat(path, &st) != 0) {
			int e = errno;

			snprintf(why, why_len, "%s: %s", path, strerror(e));
			return -e;
		}
		if (ret_st)
			*ret_st = st;
		return 0;
	}
	if (path[0] != '/' || !(p = strdup(path)))
		return -EINVAL;
	/* Every directory on the way must let the client through. */
	for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (stat(p, &st) != 0 || !peer_bits(&st, cr, 1)) {
			snprintf(why, why_len, "uid %u may not enter %s",
			    (unsigned)cr->uid, p);
			free(p);
			return -EACCES;
		}
		*slash = '/';
	}
	free(p);
	if (stat(path, &st) != 0) {
		int e = errno;

		snprintf(why, why_len, "%s: %s", path, strerror(e));
		return -e;
	}
	if (!peer_bits(&st, cr, write ? 6 : 4)) {
		snprintf(why, why_len, "uid %u may not %s %s", (unsigned)cr->uid,
		    write ? "read and write" : "read", path);
		return -EACCES;
	}
	if (ret_st)
		*ret_st = st;
	return 0;
}

int
peer_may_use(const struct conn *c, const char *path, bool write,
    struct stat *ret_st, char *why, size_t why_len)
{
	struct peer_cred cr;
	int rc;

	if ((rc = peer_cred_of(c, &cr)) < 0) {
		snprintf(why, why_len, "out of memory");
		return rc;
	}
	rc = peer_cred_may_use(&cr, path, write, ret_st, why, why_len);
	peer_cred_done(&cr);
	return rc;
}

/*
 * The raw system calls, not glibc's wrappers: glibc makes setgroups()
 * act on every thread of the process (POSIX's rule), and these must
 * change the calling thread only.
 */
static uid_t
thread_setfsuid(uid_t uid)
{
	return (uid_t)syscall(SYS_setfsuid, uid);
}

static gid_t
thread_setfsgid(gid_t gid)
{
	return (gid_t)syscall(SYS_setfsgid, gid);
}

static int
thread_setgroups(size_t n, const gid_t *groups)
{
	return syscall(SYS_setgroups, n, groups) == 0 ? 0 : -errno;
}

int
peer_enter(const struct peer_cred *cr, struct peer_saved *saved, char *why,
    size_t why_len)
{
	uid_t uid = cr->others_only ? PEER_NOBODY : cr->uid;
	gid_t gid = cr->others_only ? PEER_NOBODY : cr->gid;
	int rc, n;

	memset(saved, 0, sizeof(*saved));
	if (geteuid() != 0) {
		if (uid == geteuid() && !cr->others_only)
			return 0;
		snprintf(why, why_len, "this vmbuildd runs as uid %u and "
		    "cannot open files with uid %u's rights", (unsigned)geteuid(),
		    (unsigned)uid);
		return -EPERM;
	}
	n = getgroups(0, NULL);
	saved->groups = n > 0 ? calloc((size_t)n, sizeof(gid_t)) : NULL;
	if (n < 0 || (n > 0 && (saved->groups == NULL ||
	    (n = getgroups(n, saved->groups)) < 0))) {
		free(saved->groups);
		saved->groups = NULL;
		snprintf(why, why_len, "cannot read the daemon's groups");
		return -ENOMEM;
	}
	saved->ngroups = n;
	saved->fsuid = thread_setfsuid((uid_t)-1);
	saved->fsgid = thread_setfsgid((gid_t)-1);
	saved->switched = true;
	rc = thread_setgroups(cr->others_only ? 0 : cr->ngroups, cr->groups);
	thread_setfsgid(gid);
	thread_setfsuid(uid);
	/* Each returns the id it leaves: see that both were taken. */
	if (rc == 0 && (thread_setfsgid((gid_t)-1) != gid ||
	    thread_setfsuid((uid_t)-1) != uid))
		rc = -EPERM;
	if (rc < 0) {
		peer_leave(saved);
		snprintf(why, why_len, "cannot take uid %u's rights to files: "
		    "%s", (unsigned)uid, strerror(-rc));
	}
	return rc;
}

void
peer_leave(struct peer_saved *saved)
{
	if (saved->switched) {
		thread_setfsuid(saved->fsuid);
		thread_setfsgid(saved->fsgid);
		/*
		 * A worker thread that kept a client's rights would open
		 * the next job's files with them, or worse, let a later
		 * job think it is root: never go on so.
		 */
		if (thread_setgroups((size_t)saved->ngroups,
		    saved->groups) < 0 ||
		    thread_setfsuid((uid_t)-1) != saved->fsuid ||
		    thread_setfsgid((gid_t)-1) != saved->fsgid)
			abort();
	}
	free(saved->groups);
	memset(saved, 0, sizeof(*saved));
}
