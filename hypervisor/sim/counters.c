/*
 * counters.c - hypercall 3: the host-wide counters.
 *
 * Every part bumps its counters in hv->ctr with relaxed atomic adds
 * (CTR_ADD); they are statistics, monotonic and 64-bit, so no ordering
 * between them is promised.  A snapshot reads each one atomically.
 */
#include <stddef.h>
#include <string.h>

#include "hvsim.h"

_Static_assert(sizeof(struct hv_counters) % sizeof(uint64_t) == 0 &&
    offsetof(struct hv_counters, tlb_flushes_issued) == sizeof(uint64_t),
    "hv_counters is version + pad, then 64-bit counters");

void
counters_snapshot(struct hv *hv, struct hv_counters *out)
{
	const uint64_t *src = (const uint64_t *)&hv->ctr;
	uint64_t *dst = (uint64_t *)out;
	size_t i;

	/* The layout is all 64-bit words after version + pad. */
	for (i = 1; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = ATOMIC_LOAD(&src[i]);
	out->version = HV_ABI_VERSION;
	out->pad = 0;
}
