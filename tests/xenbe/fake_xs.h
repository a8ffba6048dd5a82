/*
 * fake_xs.h - a small in-memory xenstore for the xen backend's tests:
 * libxenstore's calls are replaced at link time (-Wl,--wrap, build.mk)
 * by the ones of fake_xs.c.  Nodes with values and permissions
 * (parents made as xenstored makes them), directories, transactions,
 * watches on a handle of their own (xs_open) with a pipe for
 * xs_fileno, and, standing in for dom0's kernel, backend drivers that
 * move their state the way blkback and netback do, as far as the test
 * lets them (fake_xs.backend).
 *
 * As xenstored (tools/xenstored/core.c) does it:
 *   - permissions: the owner (perms[0].id) may do anything, another
 *     domain what its ACL entry says or else perms[0].perms; dom0 is
 *     privileged (every wrapped call is dom0's, the backend's).  A node
 *     an unprivileged domain creates is its own, the parent's ACL
 *     otherwise; removing a node takes write on it (its whole subtree
 *     goes); a value is at most XENSTORE_PAYLOAD_MAX bytes;
 *   - transactions: a node read, listed or written in one is checked at
 *     its end, and if anyone else changed it meanwhile (a guest, a test's
 *     write), the end fails with EAGAIN and what the transaction wrote is
 *     undone (the others' changes stay); an abort undoes it too.
 *
 * A test plays a guest with fake_xs_guest_write/_rm (its permissions
 * enforced) and can act between the backend's calls (fake_xs.meddle):
 * conflicts, garbage states, watch storms.  Every read the backend
 * makes of a node a guest controls (fake_xs.guest may write it or one
 * of its parents, so may replace it) is noted in fake_xs.tainted.
 */
#ifndef FAKE_XS_H
#define FAKE_XS_H

#include <stdbool.h>
#include <stdint.h>

#include <xenstore.h>

#define FAKE_XS_NODES	1024
#define FAKE_XS_PAYLOAD	4096	/* xenstored's XENSTORE_PAYLOAD_MAX */
#define FAKE_XS_VALUE	(FAKE_XS_PAYLOAD + 1)
#define FAKE_XS_PERMS	8
#define FAKE_XS_TAINTED	64

struct fake_node {
	char	path[256];
	char	value[FAKE_XS_VALUE];
	unsigned len;
	struct xs_permissions perms[FAKE_XS_PERMS];
	unsigned nperms;
	uint64_t gen;		/* changed last at this count */
};

/* What the fake backend drivers do. */
enum fake_backend {
	FAKE_BE_NORMAL = 0,	/* InitWait on a new device, Closed on close */
	FAKE_BE_CONNECT,	/* and both ends Connected when waited for */
	FAKE_BE_DEAD,		/* no driver: a new device stays Initialising */
	FAKE_BE_STUCK,		/* a closing device never reaches Closed */
};

struct fake_xs {
	struct fake_node n[FAKE_XS_NODES];
	unsigned nr;
	uint64_t gen;		/* changes so far */
	unsigned introduced, released;
	enum fake_backend backend;
	unsigned watches;	/* registered now */
	int	pipe[2];	/* readable: a watch fired */
	/* Transactions: ended, of which lost to a conflict (EAGAIN). */
	unsigned commits, conflicts;
	/*
	 * Called after each call of the backend (op: "read", "write", ...),
	 * never from inside itself: a guest acting meanwhile.
	 */
	void	(*meddle)(const char *op, const char *path);
	/* The guest whose hold on nodes fake_xs.tainted follows (0: none). */
	unsigned guest;
	char	tainted[FAKE_XS_TAINTED][256];
	unsigned ntainted;
};

extern struct fake_xs fake_xs;

/* Empty store, no watches, FAKE_BE_NORMAL, no meddling, no guest. */
void fake_xs_reset(void);
/* The node at path, or NULL; its value, or NULL. */
struct fake_node *fake_xs_lookup(const char *path);
const char *fake_xs_val(const char *path);
/* Nodes whose path starts with prefix. */
unsigned fake_xs_count(const char *prefix);
/* A write outside any backend code (a test's setup), as dom0. */
void fake_xs_set(const char *path, const char *value);
/* Set a node's permissions outside any backend code. */
void fake_xs_set_perms(const char *path, const struct xs_permissions *p,
    unsigned n);
/*
 * What domain `domid` may do, as xenstored checks it: write `len` bytes
 * at path (0 or -EACCES, -E2BIG), remove path (-ENOENT, -EACCES).
 */
int fake_xs_guest_write(unsigned domid, const char *path, const char *value,
    size_t len);
int fake_xs_guest_rm(unsigned domid, const char *path);
/* May domain `domid` write the node at path (a creation: its parent)? */
bool fake_xs_may_write(unsigned domid, const char *path);
/* Was path among the guest-controlled nodes the backend read? */
bool fake_xs_was_tainted(const char *path);

/*
 * The permissions a node must have: at path, or (subtree) under it too;
 * the longest rule that matches a node is its.
 */
struct fake_perm_rule {
	const char *path;
	bool	subtree;
	unsigned nperms;
	struct xs_permissions perms[2];
};
/*
 * Every node at or under one of roots has the permissions its rule
 * says, and has a rule (a node no rule covers fails, named).
 */
void fake_xs_assert_perms(const char *const *roots, size_t nroots,
    const struct fake_perm_rule *rules, size_t nrules);

#endif /* FAKE_XS_H */
