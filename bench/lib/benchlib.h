/*
 * benchlib.h - helpers shared by the benchmark programs (bench/).
 *
 * Benchmarks compare vmbuild with a baseline measured in the same run,
 * interleaved, because these machines are shared and noisy; these are
 * the pieces every program needs for that: a clock, and this machine's
 * own zeroing limit (non-temporal stores into memory mapped the way
 * hvsim maps its own, huge pages, faulted in before timing).
 */
#ifndef BENCHLIB_H
#define BENCHLIB_H

#include <stddef.h>
#include <stdint.h>

double bl_now(void);			/* CLOCK_MONOTONIC, seconds */
void bl_sleep_ms(long ms);

/*
 * An anonymous buffer of `bytes` in transparent huge pages, every page
 * faulted in (so that timings measure stores, not faults).  NULL on
 * failure.  *ret_huge says whether huge pages were granted.
 */
void *bl_buffer(size_t bytes, int *ret_huge);
void bl_buffer_free(void *p, size_t bytes);

/*
 * Zero `total` bytes with non-temporal stores by `threads` threads (1..64)
 * going over `buf` (of `bytes`) as many times as needed, each thread its
 * own part; wall seconds.
 */
double bl_ntzero(void *buf, size_t bytes, uint64_t total, int threads);

/* The machine's state, for the results: load average and available memory. */
double bl_loadavg(void);
uint64_t bl_mem_available(void);

#endif /* BENCHLIB_H */
