/*
 * benchlib.c - see benchlib.h.
 */
#include <emmintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "benchlib.h"

#define ALIGN_2M	(2ul << 20)
#define MAX_THREADS	64

double
bl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
bl_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

void *
bl_buffer(size_t bytes, int *ret_huge)
{
	uint8_t *p, *a;
	int huge;

	p = mmap(NULL, bytes + ALIGN_2M, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + ALIGN_2M - 1) & ~(ALIGN_2M - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	munmap(a + bytes, ALIGN_2M - (size_t)(a - p));
	huge = madvise(a, bytes, MADV_HUGEPAGE) == 0;
	memset(a, 0, bytes);	/* fault everything in */
	if (ret_huge)
		*ret_huge = huge;
	return a;
}

void
bl_buffer_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

struct ntjob {
	uint8_t *base;
	size_t len;		/* this thread's part of the buffer */
	uint64_t todo;		/* bytes to zero in all */
};

static void *
nt_main(void *arg)
{
	struct ntjob *j = arg;
	__m128i z = _mm_setzero_si128();

	while (j->todo > 0) {
		size_t n = j->todo < j->len ? (size_t)j->todo : j->len, k;
		__m128i *q = (__m128i *)j->base;

		for (k = 0; k < n / 64; k++, q += 4) {
			_mm_stream_si128(q, z);
			_mm_stream_si128(q + 1, z);
			_mm_stream_si128(q + 2, z);
			_mm_stream_si128(q + 3, z);
		}
		j->todo -= n;
	}
	_mm_sfence();
	return NULL;
}

double
bl_ntzero(void *buf, size_t bytes, uint64_t total, int threads)
{
	pthread_t th[MAX_THREADS];
	struct ntjob job[MAX_THREADS];
	int started[MAX_THREADS] = { 0 };
	size_t part;
	double t0;
	int i;

	if (threads < 1)
		threads = 1;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	part = bytes / (size_t)threads & ~(size_t)4095;
	t0 = bl_now();
	for (i = 0; i < threads; i++) {
		job[i] = (struct ntjob){ (uint8_t *)buf + (size_t)i * part,
		    part, total / (uint64_t)threads };
		/* This thread is the last worker. */
		if (i < threads - 1)
			started[i] = pthread_create(&th[i], NULL, nt_main,
			    &job[i]) == 0;
		if (!started[i])
			nt_main(&job[i]);
	}
	for (i = 0; i < threads - 1; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	return bl_now() - t0;
}

double
bl_loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

uint64_t
bl_mem_available(void)
{
	char line[128];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	fclose(f);
	return (uint64_t)kib << 10;
}
