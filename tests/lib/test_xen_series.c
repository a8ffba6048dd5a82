/*
 * test_xen_series.c - the xen backend's pure use of the Xen series'
 * interface (libvmbuild/xen/xen_series.c): Xen's counter array taken into
 * struct hv_counters, every counter to its own field, "other" unshadows
 * what is left of all of them; and the scrub rate the tools compute from
 * Xen's counts and times (Xen no longer returns a rate).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "xen/xen_series.h"

/* Each of Xen's counters lands in a field of its own. */
static void
test_counters_fields(void **state)
{
	uint64_t c[VMB_XEN_MM_STAT_NR];
	struct hv_counters h;
	const uint64_t *w = &h.tlb_flushes_issued[0];
	size_t nwords = (sizeof(h) - offsetof(struct hv_counters,
	    tlb_flushes_issued)) / sizeof(uint64_t), i, j, seen;
	unsigned k;

	(void)state;
	for (k = 0; k < VMB_XEN_MM_STAT_NR; k++) {
		if (k == VMB_XEN_MM_STAT_unshadow_all)
			continue;	/* "other" is derived, below */
		memset(c, 0, sizeof(c));
		c[k] = 1000 + k;
		assert_int_equal(xen_series_counters(c, VMB_XEN_MM_STAT_NR, &h),
		    0);
		assert_int_equal(h.version, HV_ABI_VERSION);
		for (i = 0, seen = 0, j = 0; i < nwords; i++)
			if (w[i] != 0) {
				seen++;
				j = i;
			}
		assert_int_equal(seen, 1);
		assert_int_equal(w[j], 1000 + k);
	}
	/* Xen never flushes at free time: that cause stays 0. */
	assert_int_equal(h.tlb_flushes_issued[HV_FLUSH_CAUSE_FREE], 0);
}

static void
test_counters_values(void **state)
{
	uint64_t c[VMB_XEN_MM_STAT_NR + 2];
	struct hv_counters h;

	(void)state;
	memset(c, 0, sizeof(c));
	c[VMB_XEN_MM_STAT_tlb_flush_populate] = 7;
	c[VMB_XEN_MM_STAT_tlb_filtered_other] = 5;
	c[VMB_XEN_MM_STAT_populate_pages_1g] = 262144;
	c[VMB_XEN_MM_STAT_populate_pages_offnode] = 512;
	c[VMB_XEN_MM_STAT_scrub_idle] = 99;
	c[VMB_XEN_MM_STAT_unshadow_write_flood] = 3;
	c[VMB_XEN_MM_STAT_unshadow_early] = 4;
	c[VMB_XEN_MM_STAT_unshadow_all] = 10;
	c[VMB_XEN_MM_STAT_domains_destroyed] = 2;
	/* A newer Xen with more counters: those it adds are not ours. */
	assert_int_equal(xen_series_counters(c, VMB_XEN_MM_STAT_NR + 2, &h), 0);
	assert_int_equal(h.tlb_flushes_issued[HV_FLUSH_CAUSE_POPULATE], 7);
	assert_int_equal(h.tlb_flushes_filtered[HV_FLUSH_CAUSE_OTHER], 5);
	assert_int_equal(h.populate_pages[HV_ORDER_CLASS_1G], 262144);
	assert_int_equal(h.populate_pages_fallback, 512);
	assert_int_equal(h.scrub_pages_background, 99);
	assert_int_equal(h.unshadow[HV_UNSHADOW_WRITE_FLOOD], 3);
	assert_int_equal(h.unshadow[HV_UNSHADOW_EARLY], 4);
	assert_int_equal(h.unshadow[HV_UNSHADOW_OTHER], 3);
	assert_int_equal(h.domains_destroyed, 2);
	/* A Xen with fewer counters than the series defines. */
	assert_int_equal(xen_series_counters(c, VMB_XEN_MM_STAT_NR - 1, &h),
	    -EPROTO);
}

/* The rate over a window of at least 250 ms, from counts and times. */
static void
test_scrub_rate(void **state)
{
	struct xen_scrub_rate r;
	const uint64_t ms = 1000000;

	(void)state;
	memset(&r, 0, sizeof(r));
	/* The first sample knows no rate. */
	assert_int_equal(xen_series_scrub_rate(&r, 1000 * ms, 5000), 0);
	/* Too close: no new window, the last rate (none yet). */
	assert_int_equal(xen_series_scrub_rate(&r, 1100 * ms, 9000), 0);
	/* 500 ms after the first: 10000 pages -> 20000 pages/s. */
	assert_int_equal(xen_series_scrub_rate(&r, 1500 * ms, 15000), 20000);
	/* Close again: the rate stays. */
	assert_int_equal(xen_series_scrub_rate(&r, 1600 * ms, 15100), 20000);
	/* Scrubbing stopped: 0 over the next window. */
	assert_int_equal(xen_series_scrub_rate(&r, 2000 * ms, 15000), 0);
	/* A count that went down (another boot): start again. */
	assert_int_equal(xen_series_scrub_rate(&r, 3000 * ms, 10), 0);
	assert_int_equal(xen_series_scrub_rate(&r, 4000 * ms, 1010), 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_fields),
		cmocka_unit_test(test_counters_values),
		cmocka_unit_test(test_scrub_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
