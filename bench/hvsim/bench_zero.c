/*
 * bench_zero.c - the cost per GiB of the ways hvsim could zero its
 * memory on this machine (the measurements behind hypervisor/sim/memory.c).
 *
 *   bench_zero [THREADS]
 *
 * A memfd (what hvsim used, to pass guest memory to loaders): for each way
 * of zeroing memory never touched - pwritev of the zero page through the
 * descriptor, or MADV_POPULATE_WRITE then non-temporal stores through a
 * shared mapping - it then zeroes the same memory again through a fresh
 * mapping (the memfd has the pages, the mapping does not) both ways, and
 * finally with NT stores through a mapping that has the pages mapped in.
 * With 2 threads, pwritev again with one memfd per thread (the inode lock
 * is per memfd).  Then what hvsim does now: anonymous memory in
 * transparent huge pages, NT stores on first touch and again.  THREADS
 * threads (1 or 2) each zero 1 GiB of their own at the same time, as
 * populates on two nodes do.  Prints wall seconds per line; compare lines
 * of one run only (the first touch of memory a VM's host backs lazily
 * costs the host too).
 */
#include <emmintrin.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

#define PER_THREAD	(1ull << 30)
#define STEP		(2ull << 20)
#define MAX_THREADS	2

enum way { WAY_PWRITEV, WAY_POPULATE_NT, WAY_NT };

static const char *const way_name[] = { "pwritev", "populate+nt", "nt" };
static const char zero_page[4096] __attribute__((aligned(4096)));

struct job {
	int fd;		/* < 0: the job's own descriptor, fds[thread] */
	uint8_t *base;
	uint64_t off;
	enum way way;
	int rc;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
ntzero(void *p, size_t len)
{
	__m128i z = _mm_setzero_si128(), *q = p;
	size_t i;

	for (i = 0; i < len / 64; i++, q += 4) {
		_mm_stream_si128(q, z);
		_mm_stream_si128(q + 1, z);
		_mm_stream_si128(q + 2, z);
		_mm_stream_si128(q + 3, z);
	}
	_mm_sfence();
}

static int
zero_fd(int fd, uint64_t off, uint64_t len)
{
	struct iovec iov[STEP / 4096];
	size_t i;

	for (i = 0; i < STEP / 4096; i++)
		iov[i] = (struct iovec){ (void *)zero_page, 4096 };
	while (len > 0) {
		ssize_t w = pwritev(fd, iov, (int)(STEP / 4096), (off_t)off);

		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

static void *
job_run(void *arg)
{
	struct job *j = arg;
	uint64_t o;

	for (o = j->off; o < j->off + PER_THREAD && j->rc == 0; o += STEP) {
		switch (j->way) {
		case WAY_PWRITEV:
			j->rc = zero_fd(j->fd, o, STEP);
			break;
		case WAY_POPULATE_NT:
			if (madvise(j->base + o, STEP, MADV_POPULATE_WRITE) < 0)
				j->rc = -errno;
			/* fall through */
		case WAY_NT:
			ntzero(j->base + o, STEP);
			break;
		}
	}
	return NULL;
}

/*
 * Zero THREADS GiB one way, a GiB per thread at once; wall seconds.  With
 * `fds`, thread i writes to its own descriptor fds[i] at offset 0.
 */
static double
run(int fd, const int *fds, uint8_t *base, enum way way, int threads)
{
	struct job j[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	double t0 = now_s();
	int i;

	for (i = 0; i < threads; i++) {
		j[i] = (struct job){ fds ? fds[i] : fd, base,
		    fds ? 0 : (uint64_t)i * PER_THREAD, way, 0 };
		if (pthread_create(&th[i], NULL, job_run, &j[i]) != 0) {
			fprintf(stderr, "bench_zero: pthread_create failed\n");
			exit(1);
		}
	}
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < threads; i++)
		if (j[i].rc < 0) {
			fprintf(stderr, "bench_zero: %s: %s\n", way_name[way],
			    strerror(-j[i].rc));
			exit(1);
		}
	return now_s() - t0;
}

static uint8_t *
map(int fd, size_t len)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED) {
		perror("bench_zero: mmap");
		exit(1);
	}
	return p;
}

int
main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	size_t len;
	enum way first, again;

	if (argc > 2 || threads < 1 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: bench_zero [1|2]\n");
		return 2;
	}
	len = (size_t)threads * PER_THREAD;
	for (first = WAY_PWRITEV; first <= WAY_POPULATE_NT; first++) {
		int fd = memfd_create("bench-zero", MFD_CLOEXEC);
		uint8_t *base;

		if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
			perror("bench_zero: memfd");
			return 1;
		}
		base = map(fd, len);
		printf("threads=%d gib=%d never_touched %s: %.3f s\n", threads,
		    threads, way_name[first], run(fd, NULL, base, first,
		    threads));
		for (again = WAY_PWRITEV; again <= WAY_POPULATE_NT; again++) {
			/* A fresh mapping: the pages are in the memfd only. */
			munmap(base, len);
			base = map(fd, len);
			printf("threads=%d gib=%d touched_not_mapped %s: "
			    "%.3f s\n", threads, threads, way_name[again],
			    run(fd, NULL, base, again, threads));
		}
		printf("threads=%d gib=%d mapped nt: %.3f s\n", threads,
		    threads, run(fd, NULL, base, WAY_NT, threads));
		munmap(base, len);
		close(fd);
	}
	if (threads > 1) {
		int fds[MAX_THREADS];

		for (int i = 0; i < threads; i++) {
			fds[i] = memfd_create("bench-zero", MFD_CLOEXEC);
			if (fds[i] < 0 || ftruncate(fds[i], PER_THREAD) < 0) {
				perror("bench_zero: memfd");
				return 1;
			}
		}
		printf("threads=%d gib=%d never_touched pwritev, a memfd per "
		    "thread: %.3f s\n", threads, threads,
		    run(-1, fds, NULL, WAY_PWRITEV, threads));
		printf("threads=%d gib=%d touched pwritev, a memfd per thread: "
		    "%.3f s\n", threads, threads,
		    run(-1, fds, NULL, WAY_PWRITEV, threads));
		for (int i = 0; i < threads; i++)
			close(fds[i]);
	}
	/* hvsim now: its own anonymous memory, huge pages. */
	{
		uint8_t *p = mmap(NULL, len + STEP, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		uint8_t *base;

		if (p == MAP_FAILED) {
			perror("bench_zero: mmap");
			return 1;
		}
		base = (uint8_t *)(((uintptr_t)p + STEP - 1) & ~(STEP - 1));
		printf("threads=%d gib=%d anonymous memory, huge pages %s\n",
		    threads, threads, madvise(base, len, MADV_HUGEPAGE) == 0 ?
		    "asked for" : "refused");
		printf("threads=%d gib=%d never_touched anonymous nt: %.3f s\n",
		    threads, threads, run(-1, NULL, base, WAY_NT, threads));
		printf("threads=%d gib=%d mapped anonymous nt: %.3f s\n",
		    threads, threads, run(-1, NULL, base, WAY_NT, threads));
		munmap(p, len + STEP);
	}
	return 0;
}
