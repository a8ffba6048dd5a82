/*
 * peer.h - the rights of a control connection's client to files: the
 * daemon (root) opens for it only what it could open itself (hot-plug,
 * devices.c; a build's kernel and ramdisk by path, images.c).
 */
#ifndef VMBUILDD_PEER_H
#define VMBUILDD_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct conn;

/*
 * Whose rights a file is judged (and opened) by: a client's as the
 * socket saw it at connect (SO_PEERCRED, SO_PEERGROUPS), or recorded
 * with a VM as its creator's (source.h), for its restarts.
 */
struct peer_cred {
	uid_t	uid;
	gid_t	gid;
	gid_t	*groups;	/* supplementary (malloc'd); NULL if none */
	size_t	ngroups;
	/*
	 * Nobody's in particular (a VM an older vmbuildd recorded without
	 * its creator): only a file's and its directories' bits for
	 * "others" count, whatever the owner; uid and gid are nobody's.
	 */
	bool	others_only;
};

/* The uid and gid files are opened as for others_only (nobody's). */
#define PEER_NOBODY	65534

/* The client's credentials on `c`: 0, or -ENOMEM. */
int peer_cred_of(const struct conn *c, struct peer_cred *out);
void peer_cred_done(struct peer_cred *cr);
/* May `cr` read (and write, when `write`) the file of `st`, by its mode? */
bool peer_cred_may(const struct peer_cred *cr, const struct stat *st,
    bool write);
/*
 * peer_may_use() for the credentials `cr` rather than a connection's
 * (uid 0 counts as root unless others_only).
 */
int peer_cred_may_use(const struct peer_cred *cr, const char *path,
    bool write, struct stat *ret_st, char *why, size_t why_len);

/*
 * The calling thread takes `cr`'s rights to files (fsuid, fsgid and
 * supplementary groups are per thread in Linux: the other threads keep
 * root's), so that the kernel's own checks (mode bits, ACLs, every
 * directory of the walk) decide what it may open; peer_leave() gives
 * root's back.  A daemon that is not root cannot take another uid's: it
 * goes on with its own when they are cr's (it has no more rights than
 * its client), else -EPERM with why.
 */
struct peer_saved {
	uid_t	fsuid;
	gid_t	fsgid;
	gid_t	*groups;
	int	ngroups;
	bool	switched;
};
int peer_enter(const struct peer_cred *cr, struct peer_saved *saved,
    char *why, size_t why_len);
void peer_leave(struct peer_saved *saved);

/*
 * May the client on `c` open `path` (for writing too when `write`)?
 * The daemon is root: it attaches only images its client could open
 * itself, judged by the mode bits of every directory on the way and of
 * the file for the peer's uid and groups (its primary group and
 * SO_PEERGROUPS; ACLs are not consulted).  For root, only that it exists.
 * 0 (and what stat(2) says of it in *ret_st unless NULL), or
 * -EACCES/-errno with why.
 */
int peer_may_use(const struct conn *c, const char *path, bool write,
    struct stat *ret_st, char *why, size_t why_len);

#endif /* VMBUILDD_PEER_H */
