/*
 * fake_xs.c - the in-memory xenstore of fake_xs.h.
 *
 * A transaction works on the live store, as the backend's calls come:
 * what it reads and writes is noted with the change count it saw, and a
 * snapshot taken at its start, plus a journal of what others did
 * meanwhile, lets its end undo it (abort, or a conflict) without undoing
 * theirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_xs.h"

struct fake_xs fake_xs;

static struct {
	char	path[256];
	char	token[32];
} watch[16];

/* The handle xs_open gives: distinct from the backend's shared one. */
static int private_handle;

/* Something others did during a transaction, to do again after undoing it. */
enum jop_kind { J_WRITE, J_RM, J_PERMS };
struct jop {
	enum jop_kind kind;
	unsigned domid;
	char	*path;
	char	*value;
	size_t	len;
	struct xs_permissions perms[FAKE_XS_PERMS];
	unsigned nperms;
};

/* A node the transaction read or wrote, and the change count it saw. */
struct acc {
	char	path[256];
	uint64_t gen;		/* 0: absent */
};

static struct {
	bool	on;
	xs_transaction_t id;
	struct fake_node *snap;
	unsigned snap_nr;
	struct acc *acc;
	unsigned nacc;
	struct jop *j;
	unsigned nj;
} tx;

static bool own;	/* the change being made is the transaction's */
static bool meddling;	/* in fake_xs.meddle */

xs_transaction_t __wrap_xs_transaction_start(struct xs_handle *h);
bool __wrap_xs_transaction_end(struct xs_handle *h, xs_transaction_t t,
    bool abort);
bool __wrap_xs_write(struct xs_handle *h, xs_transaction_t t,
    const char *path, const void *data, unsigned int len);
bool __wrap_xs_mkdir(struct xs_handle *h, xs_transaction_t t,
    const char *path);
bool __wrap_xs_set_permissions(struct xs_handle *h, xs_transaction_t t,
    const char *path, struct xs_permissions *perms, unsigned int num);
struct xs_permissions *__wrap_xs_get_permissions(struct xs_handle *h,
    xs_transaction_t t, const char *path, unsigned int *num);
bool __wrap_xs_rm(struct xs_handle *h, xs_transaction_t t, const char *path);
void *__wrap_xs_read(struct xs_handle *h, xs_transaction_t t,
    const char *path, unsigned int *len);
char **__wrap_xs_directory(struct xs_handle *h, xs_transaction_t t,
    const char *path, unsigned int *num);
bool __wrap_xs_introduce_domain(struct xs_handle *h, unsigned int domid,
    unsigned long mfn, unsigned int eventchn);
bool __wrap_xs_release_domain(struct xs_handle *h, unsigned int domid);
struct xs_handle *__wrap_xs_open(unsigned long flags);
void __wrap_xs_close(struct xs_handle *h);
bool __wrap_xs_watch(struct xs_handle *h, const char *path,
    const char *token);
bool __wrap_xs_unwatch(struct xs_handle *h, const char *path,
    const char *token);
int __wrap_xs_fileno(struct xs_handle *h);
char **__wrap_xs_check_watch(struct xs_handle *h);

static void
tx_clear(void)
{
	for (unsigned i = 0; i < tx.nj; i++) {
		free(tx.j[i].path);
		free(tx.j[i].value);
	}
	free(tx.j);
	free(tx.acc);
	free(tx.snap);
	memset(&tx, 0, sizeof(tx));
}

void
fake_xs_reset(void)
{
	if (fake_xs.pipe[0] > 0) {
		close(fake_xs.pipe[0]);
		close(fake_xs.pipe[1]);
	}
	tx_clear();
	own = meddling = false;
	memset(&fake_xs, 0, sizeof(fake_xs));
	memset(watch, 0, sizeof(watch));
	assert_int_equal(pipe2(fake_xs.pipe, O_NONBLOCK | O_CLOEXEC), 0);
}

struct fake_node *
fake_xs_lookup(const char *path)
{
	for (unsigned i = 0; i < fake_xs.nr; i++)
		if (!strcmp(fake_xs.n[i].path, path))
			return &fake_xs.n[i];
	return NULL;
}

const char *
fake_xs_val(const char *path)
{
	struct fake_node *n = fake_xs_lookup(path);

	return n ? n->value : NULL;
}

unsigned
fake_xs_count(const char *prefix)
{
	unsigned c = 0;

	for (unsigned i = 0; i < fake_xs.nr; i++)
		c += !strncmp(fake_xs.n[i].path, prefix, strlen(prefix));
	return c;
}

/* ------------------------------------------------------------------ */
/* Permissions, as xenstored's perm_for_conn.                          */

static unsigned
perm_of(unsigned domid, const struct fake_node *n)
{
	const unsigned all = XS_PERM_READ | XS_PERM_WRITE | XS_PERM_OWNER;

	if (domid == 0 || n->perms[0].id == domid)
		return all;
	for (unsigned i = 1; i < n->nperms; i++)
		if (n->perms[i].id == domid)
			return n->perms[i].perms & all;
	return n->perms[0].perms & all;
}

/* The node at path, else its nearest parent there is (a creation's). */
static struct fake_node *
nearest(const char *path)
{
	char p[256];
	struct fake_node *n;
	char *slash;

	snprintf(p, sizeof(p), "%s", path);
	while ((n = fake_xs_lookup(p)) == NULL) {
		slash = strrchr(p, '/');
		if (slash == NULL || slash == p)
			return NULL;
		*slash = '\0';
	}
	return n;
}

bool
fake_xs_may_write(unsigned domid, const char *path)
{
	struct fake_node *n = nearest(path);

	return n != NULL && (perm_of(domid, n) & XS_PERM_WRITE);
}

/*
 * Does the guest control what is read at path: may it write the node,
 * or create it, or remove one of its parents (and the node with it) and
 * make it again?
 */
static bool
guest_controls(const char *path)
{
	char p[256];
	char *slash;

	if (fake_xs.guest == 0)
		return false;
	snprintf(p, sizeof(p), "%s", path);
	for (;;) {
		struct fake_node *n = fake_xs_lookup(p);

		if (n != NULL && (perm_of(fake_xs.guest, n) & XS_PERM_WRITE))
			return true;
		slash = strrchr(p, '/');
		if (slash == NULL || slash == p)
			return false;
		*slash = '\0';
	}
}

static void
taint(const char *path)
{
	if (!guest_controls(path) || fake_xs_was_tainted(path) ||
	    fake_xs.ntainted == FAKE_XS_TAINTED)
		return;
	snprintf(fake_xs.tainted[fake_xs.ntainted++], 256, "%s", path);
}

bool
fake_xs_was_tainted(const char *path)
{
	for (unsigned i = 0; i < fake_xs.ntainted; i++)
		if (!strcmp(fake_xs.tainted[i], path))
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Changes, and what a transaction saw.                                */

static void
acc_note(const char *path, uint64_t gen)
{
	for (unsigned i = 0; i < tx.nacc; i++)
		if (!strcmp(tx.acc[i].path, path)) {
			tx.acc[i].gen = gen;
			return;
		}
	tx.acc = realloc(tx.acc, (tx.nacc + 1) * sizeof(*tx.acc));
	assert_non_null(tx.acc);
	snprintf(tx.acc[tx.nacc].path, sizeof(tx.acc[0].path), "%s", path);
	tx.acc[tx.nacc++].gen = gen;
}

/* The transaction t (not XBT_NULL) read path: note what it saw. */
static void
seen(xs_transaction_t t, const char *path)
{
	struct fake_node *n;

	if (t == XBT_NULL)
		return;
	assert_true(tx.on && t == tx.id);
	n = fake_xs_lookup(path);
	acc_note(path, n ? n->gen : 0);
}

static void
bump(struct fake_node *n)
{
	n->gen = ++fake_xs.gen;
	if (own)
		acc_note(n->path, n->gen);
}

/* A change at path: fire the watches on it or above it. */
static void
changed(const char *path)
{
	for (unsigned i = 0; i < 16; i++) {
		size_t l = strlen(watch[i].path);

		if (l && !strncmp(path, watch[i].path, l) &&
		    (path[l] == '\0' || path[l] == '/'))
			(void)!write(fake_xs.pipe[1], "w", 1);
	}
}

static void
bump_parent(const char *path)
{
	char p[256];
	char *slash;
	struct fake_node *n;

	snprintf(p, sizeof(p), "%s", path);
	slash = strrchr(p, '/');
	if (slash == NULL || slash == p)
		return;
	*slash = '\0';
	if ((n = fake_xs_lookup(p)) != NULL)
		bump(n);
}

/*
 * Create path and its missing parents (inheriting perms), as xenstored:
 * an unprivileged domain owns what it creates.
 */
static struct fake_node *
create(const char *path, unsigned domid)
{
	char parent[256];
	struct fake_node *n = fake_xs_lookup(path), *p = NULL;
	char *slash;

	if (n)
		return n;
	assert_true(strlen(path) < sizeof(n->path));
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		p = create(parent, domid);
	}
	assert_true(fake_xs.nr < FAKE_XS_NODES);
	n = &fake_xs.n[fake_xs.nr++];
	memset(n, 0, sizeof(*n));
	snprintf(n->path, sizeof(n->path), "%s", path);
	if (p) {
		memcpy(n->perms, p->perms, sizeof(n->perms));
		n->nperms = p->nperms;
		bump(p);
	} else {
		n->perms[0] = (struct xs_permissions){ 0, XS_PERM_NONE };
		n->nperms = 1;
	}
	if (domid != 0)
		n->perms[0].id = domid;
	bump(n);
	changed(path);
	return n;
}

static void
node_write(unsigned domid, const char *path, const void *data, size_t len)
{
	struct fake_node *n = create(path, domid);

	assert_true(len <= FAKE_XS_PAYLOAD);
	memcpy(n->value, data, len);
	n->value[len] = '\0';
	n->len = (unsigned)len;
	bump(n);
	changed(path);
}

static bool
node_rm(const char *path)
{
	size_t len = strlen(path);
	bool found = false;

	for (unsigned i = 0; i < fake_xs.nr; ) {
		const char *p = fake_xs.n[i].path;

		if (!strncmp(p, path, len) && (p[len] == '\0' || p[len] == '/')) {
			if (own)
				acc_note(p, 0);
			fake_xs.n[i] = fake_xs.n[--fake_xs.nr];
			found = true;
		} else {
			i++;
		}
	}
	if (found) {
		bump_parent(path);
		changed(path);
	}
	return found;
}

static void
node_perms(struct fake_node *n, const struct xs_permissions *p, unsigned num)
{
	assert_true(num >= 1 && num <= FAKE_XS_PERMS);
	memcpy(n->perms, p, num * sizeof(*p));
	n->nperms = num;
	bump(n);
	changed(n->path);
}

/* Others' change during a transaction: journalled, to redo after undo. */
static void
journal(enum jop_kind kind, unsigned domid, const char *path,
    const void *value, size_t len, const struct xs_permissions *p,
    unsigned np)
{
	struct jop *j;

	if (!tx.on || own)
		return;
	tx.j = realloc(tx.j, (tx.nj + 1) * sizeof(*tx.j));
	assert_non_null(tx.j);
	j = &tx.j[tx.nj++];
	memset(j, 0, sizeof(*j));
	j->kind = kind;
	j->domid = domid;
	j->path = strdup(path);
	if (value != NULL) {
		j->value = malloc(len + 1);
		assert_non_null(j->value);
		memcpy(j->value, value, len);
		j->len = len;
	}
	if (p != NULL) {
		memcpy(j->perms, p, np * sizeof(*p));
		j->nperms = np;
	}
}

/* Undo the transaction's changes, then redo the others' (as they can). */
static void
rollback(void)
{
	memcpy(fake_xs.n, tx.snap, tx.snap_nr * sizeof(*tx.snap));
	fake_xs.nr = tx.snap_nr;
	tx.on = false;
	for (unsigned i = 0; i < tx.nj; i++) {
		struct jop *j = &tx.j[i];
		struct fake_node *n;

		if (j->kind == J_WRITE)
			(void)fake_xs_guest_write(j->domid, j->path, j->value,
			    j->len);
		else if (j->kind == J_RM)
			(void)fake_xs_guest_rm(j->domid, j->path);
		else if ((n = fake_xs_lookup(j->path)) != NULL)
			node_perms(n, j->perms, j->nperms);
	}
}

/* ------------------------------------------------------------------ */
/* What a test does: as dom0, or as a guest.                           */

void
fake_xs_set(const char *path, const char *value)
{
	journal(J_WRITE, 0, path, value, strlen(value), NULL, 0);
	node_write(0, path, value, strlen(value));
}

void
fake_xs_set_perms(const char *path, const struct xs_permissions *p,
    unsigned n)
{
	struct fake_node *node = fake_xs_lookup(path);

	assert_non_null(node);
	journal(J_PERMS, 0, path, NULL, 0, p, n);
	node_perms(node, p, n);
}

int
fake_xs_guest_write(unsigned domid, const char *path, const char *value,
    size_t len)
{
	struct fake_node *n = fake_xs_lookup(path);

	if (len > FAKE_XS_PAYLOAD)
		return -E2BIG;
	if (strlen(path) >= sizeof(n->path))
		return -EINVAL;
	if (n != NULL ? !(perm_of(domid, n) & XS_PERM_WRITE) :
	    !fake_xs_may_write(domid, path))
		return -EACCES;
	journal(J_WRITE, domid, path, value, len, NULL, 0);
	node_write(domid, path, value, len);
	return 0;
}

int
fake_xs_guest_rm(unsigned domid, const char *path)
{
	struct fake_node *n = fake_xs_lookup(path);

	if (n == NULL)
		return -ENOENT;
	if (!(perm_of(domid, n) & XS_PERM_WRITE))
		return -EACCES;
	journal(J_RM, domid, path, NULL, 0, NULL, 0);
	(void)node_rm(path);
	return 0;
}

/*
 * The fake backend drivers (dom0's kernel) change states as dom0: in
 * set_state, never in a transaction of the backend's.
 */
static void
set_state(const char *dir, const char *state)
{
	char p[300];

	snprintf(p, sizeof(p), "%s/state", dir);
	if (fake_xs_val(p) && strcmp(fake_xs_val(p), state) != 0)
		fake_xs_set(p, state);
}

/*
 * dom0's backend drivers: a new device (state 1, online) goes to
 * InitWait; a device asked to close (state 5, or its frontend gone)
 * goes to Closed, as blkback and netback do.
 */
static void
backends_step(void)
{
	for (unsigned i = 0; i < fake_xs.nr; i++) {
		char dir[256], p[FAKE_XS_VALUE + 16], *slash;
		const char *fe, *online;
		struct fake_node *n = &fake_xs.n[i];

		if (strncmp(n->path, "/local/domain/0/backend/", 24) ||
		    !(slash = strrchr(n->path, '/')) || strcmp(slash, "/state"))
			continue;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - n->path),
		    n->path);
		snprintf(p, sizeof(p), "%s/online", dir);
		online = fake_xs_val(p);
		snprintf(p, sizeof(p), "%s/frontend", dir);
		fe = fake_xs_val(p);
		snprintf(p, sizeof(p), "%s/state", fe ? fe : "/nowhere");
		if (!strcmp(n->value, "1") && online && !strcmp(online, "1") &&
		    fake_xs.backend != FAKE_BE_DEAD)
			set_state(dir, "2");
		else if ((!strcmp(n->value, "5") || !fake_xs_val(p)) &&
		    strcmp(n->value, "6") && fake_xs.backend != FAKE_BE_STUCK &&
		    online && !strcmp(online, "0"))
			set_state(dir, "6");
	}
}

static bool
under(const char *path, const char *root)
{
	size_t l = strlen(root);

	return !strncmp(path, root, l) && (path[l] == '\0' || path[l] == '/');
}

void
fake_xs_assert_perms(const char *const *roots, size_t nroots,
    const struct fake_perm_rule *rules, size_t nrules)
{
	unsigned checked = 0;

	for (unsigned i = 0; i < fake_xs.nr; i++) {
		const struct fake_node *n = &fake_xs.n[i];
		const struct fake_perm_rule *best = NULL;
		bool in = false, same;

		for (size_t r = 0; r < nroots; r++)
			in = in || under(n->path, roots[r]);
		if (!in)
			continue;
		for (size_t r = 0; r < nrules; r++) {
			const struct fake_perm_rule *u = &rules[r];

			if ((strcmp(n->path, u->path) == 0 ||
			    (u->subtree && under(n->path, u->path))) &&
			    (best == NULL || strlen(u->path) > strlen(best->path)))
				best = u;
		}
		if (best == NULL)
			print_error("%s: no rule says its permissions\n",
			    n->path);
		assert_non_null(best);
		same = n->nperms == best->nperms;
		for (unsigned k = 0; same && k < n->nperms; k++)
			same = n->perms[k].id == best->perms[k].id &&
			    n->perms[k].perms == best->perms[k].perms;
		if (!same)
			print_error("%s: %u perms, the first (%u, %#x); libxl's "
			    "(rule %s): %u, (%u, %#x)\n", n->path, n->nperms,
			    n->perms[0].id, n->perms[0].perms, best->path,
			    best->nperms, best->perms[0].id,
			    best->perms[0].perms);
		assert_true(same);
		checked++;
	}
	assert_true(checked > 0);
}

/* ------------------------------------------------------------------ */
/* libxenstore, as the backend (dom0) calls it.                        */

/* Before a call of the backend's: in its transaction t, or none. */
static void
op_begin(xs_transaction_t t)
{
	if (t != XBT_NULL)
		assert_true(tx.on && t == tx.id);
	own = t != XBT_NULL;
}

/* After it: the guest may act (never from inside its own acts). */
static void
op_end(const char *op, const char *path)
{
	own = false;
	if (fake_xs.meddle != NULL && !meddling) {
		meddling = true;
		fake_xs.meddle(op, path);
		meddling = false;
	}
}

xs_transaction_t
__wrap_xs_transaction_start(struct xs_handle *h)
{
	static xs_transaction_t next = 1;

	(void)h;
	assert_false(tx.on);	/* one at a time: be->xs_lock */
	tx_clear();
	tx.snap = malloc((fake_xs.nr + 1) * sizeof(*tx.snap));
	assert_non_null(tx.snap);
	memcpy(tx.snap, fake_xs.n, fake_xs.nr * sizeof(*tx.snap));
	tx.snap_nr = fake_xs.nr;
	tx.on = true;
	tx.id = next++;
	return tx.id;
}

bool
__wrap_xs_transaction_end(struct xs_handle *h, xs_transaction_t t,
    bool abort)
{
	bool conflict = false;

	(void)h;
	assert_true(tx.on && t == tx.id);
	for (unsigned i = 0; i < tx.nacc && !abort && !conflict; i++) {
		struct fake_node *n = fake_xs_lookup(tx.acc[i].path);

		conflict = (n ? n->gen : 0) != tx.acc[i].gen;
	}
	if (abort || conflict)
		rollback();
	tx.on = false;
	tx_clear();
	backends_step();
	if (conflict) {
		fake_xs.conflicts++;
		errno = EAGAIN;
		return false;
	}
	fake_xs.commits += !abort;
	return true;
}

bool
__wrap_xs_write(struct xs_handle *h, xs_transaction_t t, const char *path,
    const void *data, unsigned int len)
{
	(void)h;
	if (len > FAKE_XS_PAYLOAD) {
		errno = E2BIG;
		return false;
	}
	op_begin(t);
	journal(J_WRITE, 0, path, data, len, NULL, 0);
	node_write(0, path, data, len);
	op_end("write", path);
	return true;
}

bool
__wrap_xs_mkdir(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	(void)h;
	op_begin(t);
	if (fake_xs_lookup(path) == NULL) {
		journal(J_WRITE, 0, path, "", 0, NULL, 0);
		create(path, 0);
	}
	op_end("mkdir", path);
	return true;
}

bool
__wrap_xs_set_permissions(struct xs_handle *h, xs_transaction_t t,
    const char *path, struct xs_permissions *perms, unsigned int num)
{
	struct fake_node *n = fake_xs_lookup(path);

	(void)h;
	if (!n) {
		errno = ENOENT;
		return false;
	}
	op_begin(t);
	journal(J_PERMS, 0, path, NULL, 0, perms, num);
	node_perms(n, perms, num);
	op_end("set_permissions", path);
	return true;
}

struct xs_permissions *
__wrap_xs_get_permissions(struct xs_handle *h, xs_transaction_t t,
    const char *path, unsigned int *num)
{
	struct fake_node *n = fake_xs_lookup(path);
	struct xs_permissions *p = NULL;

	(void)h;
	op_begin(t);
	seen(t, path);
	if (n != NULL) {
		p = malloc(n->nperms * sizeof(*p));
		assert_non_null(p);
		memcpy(p, n->perms, n->nperms * sizeof(*p));
		*num = n->nperms;
	}
	op_end("get_permissions", path);
	if (p == NULL)
		errno = ENOENT;
	return p;
}

/*
 * As xenstored: the node and all under it go; a node that is not there
 * is no error if its parent is.
 */
bool
__wrap_xs_rm(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	bool ok;

	(void)h;
	op_begin(t);
	seen(t, path);
	journal(J_RM, 0, path, NULL, 0, NULL, 0);
	ok = node_rm(path);
	if (!ok) {
		char parent[256], *slash;

		snprintf(parent, sizeof(parent), "%s", path);
		slash = strrchr(parent, '/');
		if (slash && slash != parent)
			*slash = '\0';
		ok = fake_xs_lookup(parent) != NULL;
	}
	op_end("rm", path);
	if (!ok)
		errno = ENOENT;
	return ok;
}

void *
__wrap_xs_read(struct xs_handle *h, xs_transaction_t t, const char *path,
    unsigned int *len)
{
	struct fake_node *n;
	size_t l = strlen(path);
	char *v = NULL;

	/*
	 * A waiter (on its own handle) reading a frontend's state: with
	 * FAKE_BE_CONNECT the guest connects, and so does the backend.
	 */
	if (h == (struct xs_handle *)&private_handle &&
	    fake_xs.backend == FAKE_BE_CONNECT && l > 6 &&
	    !strcmp(path + l - 6, "/state") && strstr(path, "/device/")) {
		char dir[256], p[300];
		const char *be;

		snprintf(dir, sizeof(dir), "%.*s", (int)(l - 6), path);
		snprintf(p, sizeof(p), "%s/backend", dir);
		be = fake_xs_val(p);
		if (be && fake_xs_val(path)) {
			set_state(dir, "4");
			set_state(be, "4");
		}
	}
	op_begin(t);
	seen(t, path);
	taint(path);
	n = fake_xs_lookup(path);
	if (n != NULL) {
		v = malloc(n->len + 1);
		assert_non_null(v);
		memcpy(v, n->value, n->len + 1);
		if (len)
			*len = n->len;
	}
	op_end("read", path);
	if (v == NULL)
		errno = ENOENT;
	return v;
}

/* Its immediate children, in one block as libxenstore's: NULL if none. */
static char **
children(const char *path, unsigned *num)
{
	size_t len = strlen(path), bytes = sizeof(char *), off;
	unsigned n = 0, k = 0;
	char **blk;

	for (unsigned i = 0; i < fake_xs.nr; i++) {
		const char *p = fake_xs.n[i].path;

		if (!strncmp(p, path, len) && p[len] == '/' &&
		    !strchr(p + len + 1, '/')) {
			bytes += sizeof(char *) + strlen(p + len + 1) + 1;
			n++;
		}
	}
	blk = malloc(bytes);
	assert_non_null(blk);
	off = (n + 1) * sizeof(char *);
	for (unsigned i = 0; i < fake_xs.nr; i++) {
		const char *p = fake_xs.n[i].path;

		if (!strncmp(p, path, len) && p[len] == '/' &&
		    !strchr(p + len + 1, '/')) {
			blk[k] = (char *)blk + off;
			strcpy(blk[k], p + len + 1);
			off += strlen(blk[k++]) + 1;
		}
	}
	blk[n] = NULL;
	*num = n;
	return blk;
}

char **
__wrap_xs_directory(struct xs_handle *h, xs_transaction_t t, const char *path,
    unsigned int *num)
{
	char **v = NULL;

	(void)h;
	op_begin(t);
	seen(t, path);
	taint(path);
	if (fake_xs_lookup(path) != NULL)
		v = children(path, num);
	op_end("directory", path);
	if (v == NULL)
		errno = ENOENT;
	return v;
}

bool
__wrap_xs_introduce_domain(struct xs_handle *h, unsigned int domid,
    unsigned long mfn, unsigned int eventchn)
{
	(void)h; (void)domid; (void)mfn; (void)eventchn;
	fake_xs.introduced++;
	return true;
}

bool
__wrap_xs_release_domain(struct xs_handle *h, unsigned int domid)
{
	(void)h; (void)domid;
	fake_xs.released++;
	return true;
}

struct xs_handle *
__wrap_xs_open(unsigned long flags)
{
	(void)flags;
	return (struct xs_handle *)&private_handle;
}

void
__wrap_xs_close(struct xs_handle *h)
{
	assert_ptr_equal(h, &private_handle);
	assert_int_equal(fake_xs.watches, 0);	/* every watch undone */
}

bool
__wrap_xs_watch(struct xs_handle *h, const char *path, const char *token)
{
	assert_ptr_equal(h, &private_handle);
	for (unsigned i = 0; i < 16; i++)
		if (!watch[i].path[0]) {
			snprintf(watch[i].path, sizeof(watch[i].path), "%s",
			    path);
			snprintf(watch[i].token, sizeof(watch[i].token), "%s",
			    token);
			fake_xs.watches++;
			/* xenstored fires a new watch once at once. */
			(void)!write(fake_xs.pipe[1], "w", 1);
			return true;
		}
	errno = ENOSPC;
	return false;
}

bool
__wrap_xs_unwatch(struct xs_handle *h, const char *path, const char *token)
{
	assert_ptr_equal(h, &private_handle);
	for (unsigned i = 0; i < 16; i++)
		if (!strcmp(watch[i].path, path) &&
		    !strcmp(watch[i].token, token)) {
			memset(&watch[i], 0, sizeof(watch[i]));
			fake_xs.watches--;
			return true;
		}
	errno = ENOENT;
	return false;
}

int
__wrap_xs_fileno(struct xs_handle *h)
{
	assert_ptr_equal(h, &private_handle);
	return fake_xs.pipe[0];
}

char **
__wrap_xs_check_watch(struct xs_handle *h)
{
	char c, **v;

	assert_ptr_equal(h, &private_handle);
	if (read(fake_xs.pipe[0], &c, 1) != 1) {
		errno = EAGAIN;
		return NULL;
	}
	/* Which watch does not matter to the backend: it reads again. */
	v = malloc(3 * sizeof(char *) + 2);
	assert_non_null(v);
	v[0] = v[1] = (char *)(v + 3);
	v[0][0] = '\0';
	v[2] = NULL;
	return v;
}
