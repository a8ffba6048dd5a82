/*
 * clock.c - the daemon's clocks (vmbuildd.h), in seconds: wall time for
 * what clients see, monotonic time for durations.
 */
#include <time.h>

#include "vmbuildd.h"

double
now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
