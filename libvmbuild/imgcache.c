/*
 * imgcache.c - kernels unpacked from bzImages, kept for the next build
 * from the same file.
 *
 * Unpacking Debian's xz bzImage took 8.5 s of a PVH create on the TCG
 * lab, nearly all of the build's images branch, on every create; a host
 * builds many guests from one kernel file, and vmbuildd lives long.  So
 * the context keeps the ELF each bzImage unpacked to (loader.c asks
 * before it reads the file, and offers what it unpacked).  Plain ELF
 * kernels are not kept: reading them is all they cost.
 *
 * The key is the file's identity as fstat of the descriptor the kernel
 * is read from gives it: device, inode, size, modification and change
 * times.  The loader asks only once it holds that descriptor (the
 * caller's, opened with the caller's rights, or the guest's path opened
 * as every image is), so the cache never gives anyone a kernel from a
 * file they could not open.  A file written in place gets new times
 * (the change time cannot be set back by anyone), one replaced by a
 * rename another inode.
 *
 * Racily clean files: file times are coarse (the kernel's clock tick),
 * so a file written twice within one tick, to the same size, keeps its
 * key, and what was unpacked after the first write would be served for
 * the second.  As git does with the index's "racily clean" entries, a
 * file whose modification or change time is less than racy_ns (2 s,
 * ample for a tick and for a file server's clock a little ahead of
 * ours) before the moment the loader began to read it is not kept: any
 * later write gives it a time past that moment, which is a new key.
 * Such a file is unpacked at each build until it is 2 s old.  A file
 * changed while it was read has a time after the read began too, so
 * what was read under its old key (torn, maybe) is never asked for.
 *
 * Entries are shared, not copied out: each is reference counted, the
 * cache holding one reference and each image that uses it one (a copy
 * of 50 MiB would cost a build some 10 ms and the memory twice).  An
 * entry given up (least recently used first when a new one needs room,
 * or the cache turned off) lives on until the last image lets it go;
 * the bound counts what the cache holds.  The entries are few (the
 * bound holds a handful of distribution kernels), so they are one list,
 * most recently used first, searched in order.
 *
 * One mutex guards the list, the bytes and the counts; it is never held
 * while a kernel is unpacked (the loader unpacks between get and put),
 * nor while an entry given up is freed.  Two builds that miss the same
 * file at once both unpack it; the second to offer it finds the first's
 * entry and keeps its own copy for its own build.  Making it wait for
 * the first instead would tie one build to another's progress, and to
 * its cancel or failure; missing together is rare and costs only time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

#define NS_PER_S	1000000000ull

/* What names the file a kernel was unpacked from (see above). */
struct key {
	dev_t	dev;
	ino_t	ino;
	off_t	size;
	struct timespec mtim, ctim;
};

struct vmb__imgent {
	atomic_uint refs;
	uint8_t	*data;			/* read-only once made */
	size_t	len;
	struct key key;
	/* The cache's, under its lock. */
	struct vmb__imgent *prev, *next;	/* most recently used first */
};

struct vmb__imgcache {
	pthread_mutex_t lock;
	struct vmb__imgent *head, *tail;
	uint64_t bytes, entries;
	uint64_t max_bytes;
	uint64_t racy_ns;
	uint64_t hits, misses;
};

static void
key_of(const struct stat *st, struct key *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = st->st_dev;
	k->ino = st->st_ino;
	k->size = st->st_size;
	k->mtim = st->st_mtim;
	k->ctim = st->st_ctim;
}

static bool
key_eq(const struct key *a, const struct key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtim.tv_sec == b->mtim.tv_sec &&
	    a->mtim.tv_nsec == b->mtim.tv_nsec &&
	    a->ctim.tv_sec == b->ctim.tv_sec &&
	    a->ctim.tv_nsec == b->ctim.tv_nsec;
}

/* Is `ts` less than `window` before `read_ns` (or after it)? */
static bool
recent(const struct timespec *ts, uint64_t read_ns, uint64_t window)
{
	uint64_t t;

	if (ts->tv_sec < 0)
		return false;		/* before 1970: old */
	if ((uint64_t)ts->tv_sec >= UINT64_MAX / NS_PER_S - 1)
		return true;		/* past 2554: after anything */
	t = (uint64_t)ts->tv_sec * NS_PER_S + (uint64_t)ts->tv_nsec;
	return t > read_ns || read_ns - t < window;
}

int
vmb__imgcache_new(uint64_t max_bytes, struct vmb__imgcache **ret)
{
	struct vmb__imgcache *c;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->max_bytes = max_bytes;
	c->racy_ns = VMB_IMGCACHE_RACY_NS;
	*ret = c;
	return 0;
}

/* Under the lock: take `e` off the list. */
static void
unlink_entry(struct vmb__imgcache *c, struct vmb__imgent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	c->bytes -= e->len;
	c->entries--;
	e->prev = e->next = NULL;
}

/* Under the lock: `e` (not on the list) first. */
static void
push(struct vmb__imgcache *c, struct vmb__imgent *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	else
		c->tail = e;
	c->head = e;
	c->bytes += e->len;
	c->entries++;
}

/* Under the lock: `e` off the list, onto `*gone` (let go unlocked). */
static void
drop(struct vmb__imgcache *c, struct vmb__imgent *e, struct vmb__imgent **gone)
{
	unlink_entry(c, e);
	e->next = *gone;
	*gone = e;
}

/* Under the lock: the least recently used go until `bytes` fit. */
static void
shrink(struct vmb__imgcache *c, uint64_t bytes, struct vmb__imgent **gone)
{
	while (c->tail && c->bytes > bytes)
		drop(c, c->tail, gone);
}

/* The cache's references to what drop() took off, let go unlocked. */
static void
release(struct vmb__imgent *gone)
{
	while (gone) {
		struct vmb__imgent *next = gone->next;

		vmb__imgent_unref(gone);
		gone = next;
	}
}

void
vmb__imgcache_free(struct vmb__imgcache *c)
{
	struct vmb__imgent *gone = NULL;

	if (!c)
		return;
	shrink(c, 0, &gone);
	release(gone);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void
vmb__imgcache_set_max(struct vmb__imgcache *c, uint64_t max_bytes)
{
	struct vmb__imgent *gone = NULL;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->max_bytes = max_bytes;
	shrink(c, max_bytes, &gone);
	pthread_mutex_unlock(&c->lock);
	release(gone);
}

void
vmb__imgcache_set_racy_ns(struct vmb__imgcache *c, uint64_t ns)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->racy_ns = ns;
	pthread_mutex_unlock(&c->lock);
}

void
vmb__imgcache_stats(struct vmb__imgcache *c,
    struct vmb_image_cache_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	ret->hits = c->hits;
	ret->misses = c->misses;
	ret->bytes = c->bytes;
	ret->entries = c->entries;
	ret->max_bytes = c->max_bytes;
	pthread_mutex_unlock(&c->lock);
}

/* Under the lock: the entry of `k`, or NULL. */
static struct vmb__imgent *
find(struct vmb__imgcache *c, const struct key *k)
{
	for (struct vmb__imgent *e = c->head; e; e = e->next)
		if (key_eq(&e->key, k))
			return e;
	return NULL;
}

struct vmb__imgent *
vmb__imgcache_get(struct vmb__imgcache *c, const struct stat *st)
{
	struct vmb__imgent *e = NULL;
	struct key k;

	if (!c || !st)
		return NULL;
	key_of(st, &k);
	pthread_mutex_lock(&c->lock);
	if (c->max_bytes)
		e = find(c, &k);
	if (e) {
		/* The list's reference keeps it while we take ours. */
		atomic_fetch_add(&e->refs, 1);
		unlink_entry(c, e);
		push(c, e);		/* the most recently used */
		c->hits++;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

struct vmb__imgent *
vmb__imgcache_put(struct vmb__imgcache *c, const struct stat *st,
    uint64_t read_ns, uint8_t *data, size_t len)
{
	struct vmb__imgent *e, *gone = NULL;
	bool keep;

	if (!c || !st || !data)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	atomic_init(&e->refs, 2);		/* the caller's, the cache's */
	e->data = data;
	e->len = len;
	key_of(st, &e->key);
	pthread_mutex_lock(&c->lock);
	if (c->max_bytes)
		c->misses++;
	keep = c->max_bytes && len <= c->max_bytes &&
	    !recent(&st->st_mtim, read_ns, c->racy_ns) &&
	    !recent(&st->st_ctim, read_ns, c->racy_ns) &&
	    !find(c, &e->key);
	if (keep) {
		shrink(c, c->max_bytes - len, &gone);
		push(c, e);
	}
	pthread_mutex_unlock(&c->lock);
	release(gone);
	if (!keep) {
		free(e);		/* not data: the caller's still */
		return NULL;
	}
	return e;
}

const uint8_t *
vmb__imgent_data(const struct vmb__imgent *e, size_t *ret_len)
{
	*ret_len = e->len;
	return e->data;
}

void
vmb__imgent_unref(struct vmb__imgent *e)
{
	if (e && atomic_fetch_sub(&e->refs, 1) == 1) {
		free(e->data);
		free(e);
	}
}
