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

struct conn;

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
