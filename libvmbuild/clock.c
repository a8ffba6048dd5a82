/*
 * clock.c - the one clock libvmbuild measures phases with.
 */
#include <time.h>

#include "vmb_internal.h"

uint64_t
vmb__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
