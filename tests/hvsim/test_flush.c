/*
 * test_flush.c - unit tests of the TLB-flush clocks and filter
 * (hypervisor/sim/flush.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../hypervisor/sim/hvsim.h"

#define CPUS	8

static uint32_t
filter(struct flushctl *f, uint64_t ts, struct cpumask *m)
{
	memset(m, 0, sizeof(*m));
	return flush_filter(f, ts, m);
}

static void
test_filter(void **state)
{
	struct hv *hv = calloc(1, sizeof(*hv));
	struct flushctl *f = &hv->flush;
	struct cpumask m, half;
	uint64_t freed_before, freed_after;
	uint32_t i;

	(void)state;
	assert_int_equal(flush_init(f, hv, CPUS, 0), 0);

	/* A page freed now: no CPU has flushed since, all may hold it. */
	freed_before = flush_now(f);
	assert_int_equal(filter(f, freed_before, &m), CPUS);

	/* CPUs 0-3 flush: the page no longer needs them. */
	memset(&half, 0, sizeof(half));
	half.w[0] = 0x0f;
	flush_cpus(f, &half, HV_FLUSH_CAUSE_OTHER);
	assert_int_equal(filter(f, freed_before, &m), 4);
	assert_int_equal(m.w[0], 0xf0);
	for (i = 0; i < 4; i++)
		assert_true(f->cpu_time[i] > freed_before);
	for (i = 4; i < CPUS; i++)
		assert_true(f->cpu_time[i] <= freed_before);

	/* A page freed after that flush needs every CPU again. */
	freed_after = flush_now(f);
	assert_int_equal(filter(f, freed_after, &m), CPUS);

	/* Once all have flushed, neither page needs anyone. */
	memset(&m, 0xff, sizeof(m.w[0]));
	flush_cpus(f, &m, HV_FLUSH_CAUSE_POPULATE);
	assert_int_equal(filter(f, freed_after, &m), 0);
	assert_int_equal(filter(f, freed_before, &m), 0);

	assert_int_equal(hv->ctr.tlb_filter_evaluations, 5);
	assert_int_equal(hv->ctr.tlb_flushes_issued[HV_FLUSH_CAUSE_OTHER], 1);
	assert_int_equal(hv->ctr.tlb_flushes_issued[HV_FLUSH_CAUSE_POPULATE], 1);
	/* Every CPU acknowledged: 4 + 8 interrupted. */
	assert_int_equal(hv->ctr.tlb_flush_cpu_ipis, 4 + CPUS);

	/* An empty mask is no flush at all. */
	memset(&m, 0, sizeof(m));
	flush_cpus(f, &m, HV_FLUSH_CAUSE_POPULATE);
	assert_int_equal(hv->ctr.tlb_flushes_issued[HV_FLUSH_CAUSE_POPULATE], 1);
	flush_fini(f);
	free(hv);
}

/* Many CPUs, many flushes: every flush waits for all its acks. */
static void
test_many_cpus(void **state)
{
	struct hv *hv = calloc(1, sizeof(*hv));
	struct flushctl *f = &hv->flush;
	struct cpumask m;
	uint32_t i, n = 256;
	int k;

	(void)state;
	assert_int_equal(flush_init(f, hv, n, 0), 0);
	for (k = 0; k < 50; k++) {
		uint64_t ts = flush_now(f);

		assert_int_equal(filter(f, ts, &m), n);
		flush_cpus(f, &m, HV_FLUSH_CAUSE_POPULATE);
		for (i = 0; i < n; i++)
			assert_true(f->cpu_time[i] > ts);
	}
	assert_int_equal(hv->ctr.tlb_flush_cpu_ipis, 50ull * n);
	assert_int_equal(cpumask_weight(&m, n), n);
	flush_fini(f);
	free(hv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_many_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
