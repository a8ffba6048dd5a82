/*
 * test_shadow.c - unit tests of the unshadow heuristic and the synthetic
 * shadow workload (hypervisor/sim/shadow.c).
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

static void
test_write_flood(void **state)
{
	struct sh_track t = { 0 };

	(void)state;
	assert_int_equal(sh_heuristic(&t, 7, 1, 3), -1);
	assert_int_equal(sh_heuristic(&t, 7, 2, 3), -1);
	assert_int_equal(sh_heuristic(&t, 7, 3, 3), HV_UNSHADOW_WRITE_FLOOD);
	/* The count starts over after an unshadow. */
	assert_int_equal(sh_heuristic(&t, 7, 4, 3), -1);
	/* Alternating pages never flood. */
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < 100; i++)
		assert_int_equal(sh_heuristic(&t, i % 2, 5, 3), -1);
	/* A higher threshold waits longer. */
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < 4; i++)
		assert_int_equal(sh_heuristic(&t, 3, 9, 5), -1);
	assert_int_equal(sh_heuristic(&t, 3, 9, 5), HV_UNSHADOW_WRITE_FLOOD);
	/* Threshold 1: every emulated write unshadows. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(sh_heuristic(&t, 3, 9, 1), HV_UNSHADOW_WRITE_FLOOD);
}

static void
test_early_zero(void **state)
{
	struct sh_track t = { 0 };

	(void)state;
	/* Xen's early unshadow: the 2nd consecutive zero write. */
	assert_int_equal(sh_heuristic(&t, 4, 0, 3), -1);
	assert_int_equal(sh_heuristic(&t, 4, 0, 3), HV_UNSHADOW_EARLY);
	/* Zero, non-zero, zero is not consecutive zeros... */
	memset(&t, 0, sizeof(t));
	assert_int_equal(sh_heuristic(&t, 4, 0, 10), -1);
	assert_int_equal(sh_heuristic(&t, 4, 1, 10), -1);
	assert_int_equal(sh_heuristic(&t, 4, 0, 10), -1);
	assert_int_equal(sh_heuristic(&t, 4, 0, 10), HV_UNSHADOW_EARLY);
	/* ...and zeros on different pages are not either. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(sh_heuristic(&t, 1, 0, 10), -1);
	assert_int_equal(sh_heuristic(&t, 2, 0, 10), -1);
	assert_int_equal(sh_heuristic(&t, 1, 0, 10), -1);
}

static struct hv *
fake_hv(uint32_t threshold)
{
	struct hv *hv = calloc(1, sizeof(*hv));

	hv->cfg.shadow_threshold = threshold;
	return hv;
}

static void
test_workloads(void **state)
{
	struct hv_shadow_workload_reply r3, rbig, r;
	struct hv *hv3 = fake_hv(3), *hvbig = fake_hv(1000000);
	struct shadow *a = shadow_new(1), *b = shadow_new(1);

	(void)state;
	/* iperf (post 004): page tables turned buffers. */
	assert_int_equal(shadow_run(hv3, a, HV_SHADOW_IPERF, 3000, &r3), 0);
	assert_int_equal(shadow_run(hvbig, b, HV_SHADOW_IPERF, 3000, &rbig), 0);
	assert_int_equal(r3.emulated_writes, 3000);
	assert_int_equal(rbig.emulated_writes, 3000);
	/* With the heuristic: 3 emulated writes per buffer, then unshadow. */
	assert_int_equal(r3.unshadow[HV_UNSHADOW_WRITE_FLOOD], 1000);
	assert_int_equal(rbig.unshadow[HV_UNSHADOW_WRITE_FLOOD], 0);
	assert_int_equal(hv3->ctr.emulated_pt_writes, 3000);
	assert_int_equal(hv3->ctr.unshadow[HV_UNSHADOW_WRITE_FLOOD], 1000);

	/* Process exit: early unshadow, never write flooding. */
	assert_int_equal(shadow_run(hv3, a, HV_SHADOW_FORK_EXIT, 1000, &r), 0);
	assert_int_equal(r.unshadow[HV_UNSHADOW_EARLY], 500);
	assert_int_equal(r.unshadow[HV_UNSHADOW_WRITE_FLOOD], 0);

	/* Scattered updates: tables mostly stay tables. */
	assert_int_equal(shadow_run(hv3, a, HV_SHADOW_PT_UPDATE, 10000, &r), 0);
	assert_int_equal(r.emulated_writes, 10000);
	assert_true(r.unshadow[HV_UNSHADOW_WRITE_FLOOD] < 100);
	assert_true(r.shadow_faults >= r.emulated_writes);

	assert_int_equal(shadow_run(hv3, a, 99, 10, &r), -EINVAL);
	shadow_free(hv3, a);
	shadow_free(hvbig, b);
	/* Teardown unshadows what was still shadowed. */
	assert_true(hv3->ctr.unshadow[HV_UNSHADOW_OTHER] > 0);
	free(hv3);
	free(hvbig);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_flood),
		cmocka_unit_test(test_early_zero),
		cmocka_unit_test(test_workloads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
