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

#include "control.h"
#include "peer.h"

/* Does uid (primary gid, supplementary groups) have `want` (4 r, 2 w, 1 x) on st? */
static bool
peer_bits(const struct stat *st, uid_t uid, const gid_t *groups, int ngroups,
    unsigned want)
{
	unsigned mode = st->st_mode;
	bool in_group = false;

	if (st->st_uid == uid)
		return ((mode >> 6) & want) == want;
	for (int i = 0; i < ngroups; i++)
		if (groups[i] == st->st_gid)
			in_group = true;
	if (in_group)
		return ((mode >> 3) & want) == want;
	return (mode & want) == want;
}

int
peer_may_use(const struct conn *c, const char *path, bool write,
    struct stat *ret_st, char *why, size_t why_len)
{
	gid_t groups[NGROUPS_MAX + 1];
	socklen_t len = sizeof(groups) - sizeof(gid_t);
	int ngroups = 1;
	struct stat st;
	char *p, *slash;

	if (c->uid == 0) {
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
	/*
	 * The groups the peer's process has (SO_PEERGROUPS), as the socket
	 * saw them: no NSS lookup on the loop.
	 */
	groups[0] = c->gid;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, groups + 1, &len) == 0)
		ngroups += (int)(len / sizeof(gid_t));
	if (path[0] != '/' || !(p = strdup(path)))
		return -EINVAL;
	/* Every directory on the way must let the client through. */
	for (slash = strchr(p + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (stat(p, &st) != 0 || !peer_bits(&st, c->uid, groups,
		    ngroups, 1)) {
			snprintf(why, why_len, "uid %u may not enter %s",
			    (unsigned)c->uid, p);
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
	if (!peer_bits(&st, c->uid, groups, ngroups, write ? 6 : 4)) {
		snprintf(why, why_len, "uid %u may not %s %s", (unsigned)c->uid,
		    write ? "read and write" : "read", path);
		return -EACCES;
	}
	if (ret_st)
		*ret_st = st;
	return 0;
}
