/*
 * clock.c - the clocks of hvsim: monotonic for durations and rates,
 * real time for the boot time it reports.  Every part reads these; none
 * of them depends on hv.c for it.
 */
#include <time.h>

#include "hvsim.h"

uint64_t
hv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t
hv_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
