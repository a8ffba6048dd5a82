/*
 * test_imgcache.c - the cache of unpacked kernels (imgcache.c) as the
 * loader uses it, with bzImages made around build/guest/hello.elf (and
 * variants of it that differ in one byte), written with a modification
 * time in the past: unpacked once, then found by the file's identity,
 * by path or by descriptor, with the same bytes; a file rewritten in
 * place to the same size and the same modification time is unpacked
 * again, never served stale; the byte bound gives up the least recently
 * used; bound 0 turns the cache off; a file whose times are too recent
 * (racily clean) or in the future is not kept; a plain ELF is not kept;
 * four threads at once, their entries evicted while in use, get the
 * right bytes.  The racy window is set to 0 where a test needs a file
 * kept at once: a file's change time cannot be set back.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmb_internal.h"
#include "hellopath.h"
#include "bzfixture.h"

#define NVAR		3		/* kernels differing in one byte */
#define OLD_SEC		1000000000	/* 2001-09-09: long ago */
#define BIG		(64ull << 20)
#define THREADS		4
#define ROUNDS		40

static uint8_t *var[NVAR];
static size_t elf_len;
static size_t file_size;		/* every bzImage padded to this */
static char paths[NVAR][32];

static int
setup(void **state)
{
	FILE *f = fopen(hello_elf_path(), "rb");
	struct vmb__elf e;

	(void)state;
	if (!f)
		return -1;
	var[0] = malloc(1 << 20);
	elf_len = fread(var[0], 1, 1 << 20, f);
	fclose(f);
	if (elf_len == 0 || vmb__elf_parse(var[0], elf_len, &e) != 0)
		return -1;
	/* One byte of code changed: still the same PVH kernel to parse. */
	for (int v = 1; v < NVAR; v++) {
		var[v] = malloc(elf_len);
		memcpy(var[v], var[0], elf_len);
		var[v][e.segs[0].offset + 16] ^= (uint8_t)v;
		if (vmb__elf_parse(var[v], elf_len, &e) != 0)
			return -1;
	}
	/* xz of an ELF is never much larger than the ELF. */
	file_size = BZ_PAYLOAD_AT + elf_len + 8192;
	for (int v = 0; v < NVAR; v++) {
		int fd;

		snprintf(paths[v], sizeof(paths[v]), "/tmp/vmb-imgc-XXXXXX");
		fd = mkstemp(paths[v]);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (int v = 0; v < NVAR; v++) {
		free(var[v]);
		if (paths[v][0])
			unlink(paths[v]);
	}
	return 0;
}

/*
 * Kernel variant `v` as a bzImage at `path`, written in place (same
 * inode), file_size bytes whatever it compresses to, modified at `sec`.
 */
static void
write_bz(const char *path, int v, time_t sec)
{
	struct timespec times[2] = { { sec, 0 }, { sec, 0 } };
	size_t len;
	uint8_t *bz = bz_make(var[v], elf_len, &len);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_true(len <= file_size);
	assert_int_equal(write(fd, bz, len), (ssize_t)len);
	assert_int_equal(ftruncate(fd, (off_t)file_size), 0);
	close(fd);
	free(bz);
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
}

/* The kernel at `path`, by path or by a descriptor opened here. */
static struct vmb__image *
open_k(struct vmb__imgcache *c, const char *path, bool by_fd)
{
	struct vmb__image *img = NULL;
	struct vmb_guest g;
	char why[256] = "";
	int fd = by_fd ? open(path, O_RDONLY | O_CLOEXEC) : -1;

	memset(&g, 0, sizeof(g));
	g.kernel = (char *)path;
	assert_int_equal(vmb__image_open_cache(c, &g, fd, -1, &img, why,
	    sizeof(why)), 0);
	if (fd >= 0)
		close(fd);
	return img;
}

/* Is img's kernel variant v, byte for byte? */
static bool
is_var(const struct vmb__image *img, int v)
{
	size_t len;
	const uint8_t *k = vmb__image_kernel(img, &len);

	return len == elf_len && memcmp(k, var[v], len) == 0;
}

static struct vmb_image_cache_stats
stats(struct vmb__imgcache *c)
{
	struct vmb_image_cache_stats st;

	vmb__imgcache_stats(c, &st);
	return st;
}

static struct vmb__imgcache *
cache_new(uint64_t max, uint64_t racy_ns)
{
	struct vmb__imgcache *c = NULL;

	assert_int_equal(vmb__imgcache_new(max, &c), 0);
	vmb__imgcache_set_racy_ns(c, racy_ns);
	return c;
}

/* A miss, then hits by path and by descriptor, sharing one entry. */
static void
test_miss_then_hit(void **state)
{
	struct vmb__imgcache *c = cache_new(BIG, 0);
	struct vmb__image *a, *b, *img = NULL;
	struct vmb_guest g;
	int fd;

	(void)state;
	write_bz(paths[0], 0, OLD_SEC);
	a = open_k(c, paths[0], false);
	assert_false(vmb__image_cached(a));
	assert_true(is_var(a, 0));
	assert_int_equal(stats(c).misses, 1);
	assert_int_equal(stats(c).hits, 0);
	assert_int_equal(stats(c).entries, 1);
	assert_int_equal(stats(c).bytes, elf_len);
	b = open_k(c, paths[0], true);
	assert_true(vmb__image_cached(b));
	assert_true(is_var(b, 0));
	assert_int_equal(stats(c).hits, 1);
	assert_int_equal(vmb__image_entry(b), vmb__image_entry(a));
	/* The descriptor is what is read and looked for, not the path. */
	write_bz(paths[1], 1, OLD_SEC);
	fd = open(paths[1], O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	memset(&g, 0, sizeof(g));
	g.kernel = paths[0];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(vmb__image_open_cache(c, &g, fd, -1, &img,
		    NULL, 0), 0);
		assert_true(is_var(img, 1));
		assert_int_equal(vmb__image_cached(img), i == 1);
		vmb__image_free(img);
	}
	close(fd);
	/* A descriptor that cannot read gets nothing, cached or not. */
	fd = open(paths[1], O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vmb__image_open_cache(c, &g, fd, -1, &img, NULL, 0),
	    -EBADF);
	close(fd);
	/* The entry outlives the image that put it there. */
	vmb__image_free(a);
	assert_true(is_var(b, 0));
	/* Only a file that opens is looked for: gone, it is not found. */
	unlink(paths[0]);
	assert_int_equal(vmb__image_open_cache(c, &g, -1, -1, &img, NULL, 0),
	    -ENOENT);
	assert_int_equal(stats(c).hits, 2);
	/* ... and outlives the cache. */
	vmb__imgcache_free(c);
	assert_true(is_var(b, 0));
	vmb__image_free(b);
}

/*
 * Rewritten in place: same inode, same size, the same modification
 * time set again; only the change time tells.  The new kernel is
 * unpacked, not the old one served.
 */
static void
test_rewrite_same_size(void **state)
{
	struct vmb__imgcache *c = cache_new(BIG, 0);
	struct vmb__image *img;
	struct stat st0, st;

	(void)state;
	write_bz(paths[0], 0, OLD_SEC);
	vmb__image_free(open_k(c, paths[0], false));
	img = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(img));
	vmb__image_free(img);
	assert_int_equal(stat(paths[0], &st0), 0);
	/* Until the change time moves on (a tick: milliseconds). */
	for (int i = 0; i < 400; i++) {
		struct timespec ms = { 0, 5000000 };

		write_bz(paths[0], 1, OLD_SEC);
		assert_int_equal(stat(paths[0], &st), 0);
		if (st.st_ctim.tv_sec != st0.st_ctim.tv_sec ||
		    st.st_ctim.tv_nsec != st0.st_ctim.tv_nsec)
			break;
		nanosleep(&ms, NULL);
	}
	assert_int_equal(st.st_ino, st0.st_ino);
	assert_int_equal(st.st_size, st0.st_size);
	assert_int_equal(st.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	img = open_k(c, paths[0], true);
	assert_true(is_var(img, 1));
	assert_false(vmb__image_cached(img));
	vmb__image_free(img);
	img = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(img));
	assert_true(is_var(img, 1));
	vmb__image_free(img);
	vmb__imgcache_free(c);
}

/* Room for two: the least recently used goes; one too big stays out. */
static void
test_evict_lru(void **state)
{
	struct vmb__imgcache *c = cache_new(2 * elf_len + elf_len / 2, 0);
	struct vmb__image *img[NVAR], *x;

	(void)state;
	for (int v = 0; v < NVAR; v++)
		write_bz(paths[v], v, OLD_SEC);
	img[0] = open_k(c, paths[0], false);
	img[1] = open_k(c, paths[1], false);
	assert_int_equal(stats(c).entries, 2);
	/* 0 used again: 1 is now the least recently used. */
	x = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(x));
	vmb__image_free(x);
	img[2] = open_k(c, paths[2], false);
	assert_false(vmb__image_cached(img[2]));
	assert_int_equal(stats(c).entries, 2);
	assert_int_equal(stats(c).bytes, 2 * elf_len);
	x = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(x) && is_var(x, 0));
	vmb__image_free(x);
	x = open_k(c, paths[1], false);
	assert_false(vmb__image_cached(x));
	assert_true(is_var(x, 1));
	vmb__image_free(x);
	/* Evicted while in use: the images keep their kernels. */
	for (int v = 0; v < NVAR; v++)
		assert_true(is_var(img[v], v));
	/* A bound below one kernel: all go, and none is kept. */
	vmb__imgcache_set_max(c, elf_len - 1);
	assert_int_equal(stats(c).entries, 0);
	assert_int_equal(stats(c).bytes, 0);
	x = open_k(c, paths[0], false);
	vmb__image_free(x);
	x = open_k(c, paths[0], false);
	assert_false(vmb__image_cached(x));
	vmb__image_free(x);
	assert_int_equal(stats(c).entries, 0);
	for (int v = 0; v < NVAR; v++)
		vmb__image_free(img[v]);
	vmb__imgcache_free(c);
}

/* Bound 0: off, what was held let go, nothing counted; on again. */
static void
test_off(void **state)
{
	struct vmb__imgcache *c = cache_new(BIG, 0);
	struct vmb_image_cache_stats st;
	struct vmb__image *img;

	(void)state;
	write_bz(paths[0], 0, OLD_SEC);
	vmb__image_free(open_k(c, paths[0], false));
	img = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(img));
	vmb__imgcache_set_max(c, 0);
	st = stats(c);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.max_bytes, 0);
	assert_true(is_var(img, 0));
	vmb__image_free(img);
	for (int i = 0; i < 2; i++) {
		img = open_k(c, paths[0], i == 1);
		assert_false(vmb__image_cached(img));
		assert_true(is_var(img, 0));
		vmb__image_free(img);
	}
	assert_int_equal(stats(c).hits, st.hits);
	assert_int_equal(stats(c).misses, st.misses);
	vmb__imgcache_set_max(c, BIG);
	vmb__image_free(open_k(c, paths[0], false));
	img = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(img));
	vmb__image_free(img);
	vmb__imgcache_free(c);
	/* No cache at all: the loader as before. */
	img = open_k(NULL, paths[0], false);
	assert_false(vmb__image_cached(img));
	assert_true(is_var(img, 0));
	vmb__image_free(img);
}

/*
 * Racily clean: the change time is now (utimensat sets it), so with
 * the default window the file is unpacked every time; with none it is
 * kept.  A modification time in the future is never trusted.
 */
static void
test_racy(void **state)
{
	struct vmb__imgcache *c = cache_new(BIG, VMB_IMGCACHE_RACY_NS);
	struct vmb__image *img;

	(void)state;
	write_bz(paths[0], 0, OLD_SEC);
	for (int i = 0; i < 2; i++) {
		img = open_k(c, paths[0], false);
		assert_false(vmb__image_cached(img));
		assert_true(is_var(img, 0));
		vmb__image_free(img);
	}
	assert_int_equal(stats(c).entries, 0);
	assert_int_equal(stats(c).misses, 2);
	vmb__imgcache_set_racy_ns(c, 0);
	write_bz(paths[1], 1, time(NULL) + 3600);
	for (int i = 0; i < 2; i++) {
		img = open_k(c, paths[1], false);
		assert_false(vmb__image_cached(img));
		vmb__image_free(img);
	}
	assert_int_equal(stats(c).entries, 0);
	vmb__image_free(open_k(c, paths[0], false));
	img = open_k(c, paths[0], false);
	assert_true(vmb__image_cached(img));
	vmb__image_free(img);
	vmb__imgcache_free(c);
}

/* A plain ELF costs only its read: not kept, not counted. */
static void
test_plain_elf(void **state)
{
	struct vmb__imgcache *c = cache_new(BIG, 0);
	struct timespec times[2] = { { OLD_SEC, 0 }, { OLD_SEC, 0 } };
	struct vmb__image *img;
	int fd = open(paths[2], O_WRONLY | O_TRUNC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, var[2], elf_len), (ssize_t)elf_len);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, paths[2], times, 0), 0);
	for (int i = 0; i < 2; i++) {
		img = open_k(c, paths[2], false);
		assert_false(vmb__image_cached(img));
		assert_true(is_var(img, 2));
		vmb__image_free(img);
	}
	assert_int_equal(stats(c).entries, 0);
	assert_int_equal(stats(c).misses, 0);
	assert_int_equal(stats(c).hits, 0);
	vmb__imgcache_free(c);
}

struct worker {
	pthread_t tid;
	int	id;
	struct vmb__imgcache *c;
	atomic_int *bad;
};

/*
 * Two kernels in turn, where the cache holds one: entries are evicted
 * while other threads still load from them.  Each image is kept until
 * after the next open.  No cmocka assertion here (not thread-safe).
 */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct vmb__image *prev = NULL;
	int prev_v = 0;

	for (int i = 0; i < ROUNDS; i++) {
		int v = (i + w->id) % 2;
		struct vmb__image *img = NULL;
		struct vmb_guest g;

		memset(&g, 0, sizeof(g));
		g.kernel = paths[v];
		if (vmb__image_open_cache(w->c, &g, -1, -1, &img, NULL, 0) ||
		    !is_var(img, v))
			atomic_fetch_add(w->bad, 1);
		if (prev && !is_var(prev, prev_v))
			atomic_fetch_add(w->bad, 1);
		vmb__image_free(prev);
		prev = img;
		prev_v = v;
	}
	vmb__image_free(prev);
	return NULL;
}

/* THREADS workers on a cache of `max` bytes; its stats after. */
static struct vmb_image_cache_stats
run_threads(uint64_t max)
{
	struct vmb__imgcache *c = cache_new(max, 0);
	struct worker w[THREADS];
	struct vmb_image_cache_stats st;
	atomic_int bad = 0;

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .id = i, .c = c, .bad = &bad };
		assert_int_equal(pthread_create(&w[i].tid, NULL, worker_main,
		    &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(w[i].tid, NULL);
	st = stats(c);
	vmb__imgcache_free(c);
	print_message("# %llu bytes: %llu hits, %llu misses\n",
	    (unsigned long long)max, (unsigned long long)st.hits,
	    (unsigned long long)st.misses);
	assert_int_equal(atomic_load(&bad), 0);
	assert_int_equal(st.hits + st.misses, THREADS * ROUNDS);
	return st;
}

/*
 * Room for one of the two kernels (each open evicts the other's entry
 * while images still use it), then for both (builds that miss at once
 * unpack side by side; the rest hit).
 */
static void
test_threads(void **state)
{
	struct vmb_image_cache_stats st;

	(void)state;
	write_bz(paths[0], 0, OLD_SEC);
	write_bz(paths[1], 1, OLD_SEC);
	st = run_threads(elf_len + elf_len / 2);
	assert_true(st.entries <= 1 && st.bytes <= elf_len);
	st = run_threads(BIG);
	assert_int_equal(st.entries, 2);
	assert_true(st.hits >= THREADS * ROUNDS - 2 * THREADS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_miss_then_hit),
		cmocka_unit_test(test_rewrite_same_size),
		cmocka_unit_test(test_evict_lru),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_racy),
		cmocka_unit_test(test_plain_elf),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests_name("imgcache", tests, setup,
	    teardown);
}
