/*
 * fake_xs.c - the in-memory xenstore of fake_xs.h.
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

xs_transaction_t __wrap_xs_transaction_start(struct xs_handle *h);
bool __wrap_xs_transaction_end(struct xs_handle *h, xs_transaction_t t,
    bool abort);
bool __wrap_xs_write(struct xs_handle *h, xs_transaction_t t,
    const char *path, const void *data, unsigned int len);
bool __wrap_xs_mkdir(struct xs_handle *h, xs_transaction_t t,
    const char *path);
bool __wrap_xs_set_permissions(struct xs_handle *h, xs_transaction_t t,
    const char *path, struct xs_permissions *perms, unsigned int num);
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

void
fake_xs_reset(void)
{
	if (fake_xs.pipe[0] > 0) {
		close(fake_xs.pipe[0]);
		close(fake_xs.pipe[1]);
	}
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

/* Create path and its missing parents (inheriting perms), as xenstored. */
static struct fake_node *
create(const char *path)
{
	char parent[256];
	struct fake_node *n = fake_xs_lookup(path), *p = NULL;
	char *slash;

	if (n)
		return n;
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		p = create(parent);
	}
	assert_true(fake_xs.nr < FAKE_XS_NODES);
	n = &fake_xs.n[fake_xs.nr++];
	memset(n, 0, sizeof(*n));
	snprintf(n->path, sizeof(n->path), "%s", path);
	if (p) {
		memcpy(n->perms, p->perms, sizeof(n->perms));
		n->nperms = p->nperms;
	} else {
		n->perms[0] = (struct xs_permissions){ 0, XS_PERM_NONE };
		n->nperms = 1;
	}
	changed(path);
	return n;
}

void
fake_xs_set(const char *path, const char *value)
{
	struct fake_node *n = create(path);

	snprintf(n->value, sizeof(n->value), "%s", value);
	changed(path);
}

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
		char dir[256], p[600], *slash;
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

xs_transaction_t
__wrap_xs_transaction_start(struct xs_handle *h)
{
	(void)h;
	return 1;
}

bool
__wrap_xs_transaction_end(struct xs_handle *h, xs_transaction_t t,
    bool abort)
{
	(void)h; (void)t; (void)abort;
	backends_step();
	return true;
}

bool
__wrap_xs_write(struct xs_handle *h, xs_transaction_t t, const char *path,
    const void *data, unsigned int len)
{
	struct fake_node *n = create(path);

	(void)h; (void)t;
	assert_true(len < sizeof(n->value));
	memcpy(n->value, data, len);
	n->value[len] = '\0';
	changed(path);
	return true;
}

bool
__wrap_xs_mkdir(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	(void)h; (void)t;
	create(path);
	return true;
}

bool
__wrap_xs_set_permissions(struct xs_handle *h, xs_transaction_t t,
    const char *path, struct xs_permissions *perms, unsigned int num)
{
	struct fake_node *n = fake_xs_lookup(path);

	(void)h; (void)t;
	if (!n) {
		errno = ENOENT;
		return false;
	}
	assert_true(num <= 4);
	memcpy(n->perms, perms, num * sizeof(*perms));
	n->nperms = num;
	return true;
}

bool
__wrap_xs_rm(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	size_t len = strlen(path);
	bool found = false;

	(void)h; (void)t;
	for (unsigned i = 0; i < fake_xs.nr; ) {
		const char *p = fake_xs.n[i].path;

		if (!strncmp(p, path, len) && (p[len] == '\0' || p[len] == '/')) {
			fake_xs.n[i] = fake_xs.n[--fake_xs.nr];
			found = true;
		} else {
			i++;
		}
	}
	if (!found)
		errno = ENOENT;
	else
		changed(path);
	return found;
}

void *
__wrap_xs_read(struct xs_handle *h, xs_transaction_t t, const char *path,
    unsigned int *len)
{
	struct fake_node *n;
	size_t l = strlen(path);

	(void)t;
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
	n = fake_xs_lookup(path);
	if (!n) {
		errno = ENOENT;
		return NULL;
	}
	if (len)
		*len = (unsigned)strlen(n->value);
	return strdup(n->value);
}

char **
__wrap_xs_directory(struct xs_handle *h, xs_transaction_t t, const char *path,
    unsigned int *num)
{
	size_t len = strlen(path);
	char **v = calloc(FAKE_XS_NODES + 1, sizeof(*v));
	unsigned n = 0;

	(void)h; (void)t;
	assert_non_null(v);
	if (!fake_xs_lookup(path)) {
		free(v);
		errno = ENOENT;
		return NULL;
	}
	for (unsigned i = 0; i < fake_xs.nr; i++) {
		const char *p = fake_xs.n[i].path;

		/* Immediate children only. */
		if (!strncmp(p, path, len) && p[len] == '/' &&
		    !strchr(p + len + 1, '/'))
			v[n++] = strdup(p + len + 1);
	}
	/* One block, as libxenstore's: the caller frees only the vector. */
	{
		size_t bytes = (n + 1) * sizeof(char *), off;
		char **blk;

		for (unsigned i = 0; i < n; i++)
			bytes += strlen(v[i]) + 1;
		blk = malloc(bytes);
		assert_non_null(blk);
		off = (n + 1) * sizeof(char *);
		for (unsigned i = 0; i < n; i++) {
			blk[i] = (char *)blk + off;
			strcpy(blk[i], v[i]);
			off += strlen(v[i]) + 1;
			free(v[i]);
		}
		blk[n] = NULL;
		free(v);
		*num = n;
		return blk;
	}
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
