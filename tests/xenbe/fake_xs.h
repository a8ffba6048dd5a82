/*
 * fake_xs.h - a small in-memory xenstore for the xen backend's tests:
 * libxenstore's calls are replaced at link time (-Wl,--wrap, build.mk)
 * by the ones of fake_xs.c.  Nodes with values and permissions
 * (parents made as xenstored makes them), directories, transactions
 * (committed as they go: the backend aborts only before writing),
 * watches on a handle of their own (xs_open) with a pipe for
 * xs_fileno, and, standing in for dom0's kernel, backend drivers that
 * move their state the way blkback and netback do, as far as the test
 * lets them (fake_xs.backend).
 */
#ifndef FAKE_XS_H
#define FAKE_XS_H

#include <stdbool.h>

#include <xenstore.h>

#define FAKE_XS_NODES	1024
#define FAKE_XS_VALUE	512

struct fake_node {
	char	path[256];
	char	value[FAKE_XS_VALUE];
	struct xs_permissions perms[4];
	unsigned nperms;
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
	unsigned introduced, released;
	enum fake_backend backend;
	unsigned watches;	/* registered now */
	int	pipe[2];	/* readable: a watch fired */
};

extern struct fake_xs fake_xs;

/* Empty store, no watches, FAKE_BE_NORMAL. */
void fake_xs_reset(void);
/* The node at path, or NULL; its value, or NULL. */
struct fake_node *fake_xs_lookup(const char *path);
const char *fake_xs_val(const char *path);
/* Nodes whose path starts with prefix. */
unsigned fake_xs_count(const char *prefix);
/* A write outside any backend code (a test's setup). */
void fake_xs_set(const char *path, const char *value);

#endif /* FAKE_XS_H */
