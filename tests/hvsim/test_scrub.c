/*
 * test_scrub.c - unit tests of the scrubber (hypervisor/sim/scrub.c):
 * worker placement, dirty real pages ending clean, and populates that
 * must take dirty pages while the workers are at them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../hypervisor/sim/hvsim.h"

static void
check_plan(uint32_t nodes, uint32_t cpn, uint32_t tpc, int32_t want,
    uint32_t expect)
{
	struct topo t;
	struct scrub_worker *w = NULL;
	uint32_t nr = 0, i, j;

	assert_int_equal(topo_init(&t, nodes, cpn, tpc), 0);
	assert_int_equal(scrub_plan(&t, want, &w, &nr), 0);
	assert_int_equal(nr, expect);
	for (i = 0; i < nr; i++) {
		/* The first thread of a core on the worker's own node. */
		assert_int_equal(t.cpus[w[i].cpu].thread, 0);
		assert_int_equal(t.cpus[w[i].cpu].core, w[i].core);
		assert_int_equal(t.cpus[w[i].cpu].node, w[i].node);
		for (j = 0; j < i; j++)
			assert_int_not_equal(w[i].core, w[j].core);
	}
	free(w);
	topo_fini(&t);
}

static void
test_placement(void **state)
{
	(void)state;
	check_plan(2, 8, 2, -1, 8);	/* 8 cores, not 16 threads */
	check_plan(8, 16, 2, -1, 64);
	check_plan(2, 8, 2, 3, 3);
	check_plan(2, 8, 2, 100, 8);	/* never two siblings */
	check_plan(2, 8, 2, 0, 0);
	check_plan(1, 4, 1, -1, 4);
	check_plan(2, 8, 4, -1, 4);
}

static void
test_placement_spread(void **state)
{
	struct topo t;
	struct scrub_worker *w = NULL;
	uint32_t nr = 0;

	(void)state;
	assert_int_equal(topo_init(&t, 4, 8, 2), 0);
	assert_int_equal(scrub_plan(&t, 4, &w, &nr), 0);
	/* Four workers on four nodes: each node gets one. */
	assert_int_equal(w[0].node, 0);
	assert_int_equal(w[1].node, 1);
	assert_int_equal(w[2].node, 2);
	assert_int_equal(w[3].node, 3);
	free(w);
	topo_fini(&t);
}

static int
wait_clean(struct hv *hv)
{
	uint32_t n, i;

	for (i = 0; i < 6000; i++) {
		uint64_t d = 0;

		for (n = 0; n < hv->heap.nr_nodes; n++)
			d += heap_dirty_pages(&hv->heap, n);
		if (d == 0)
			return 0;
		usleep(10000);
	}
	return -1;
}

static void
test_dirty_ends_clean(void **state)
{
	struct hv_config cfg;
	struct hv *hv = NULL;
	struct hv_domain_create cr = { .max_vcpus = 1, .max_pages = 1 << 20 };
	struct {
		struct hv_populate p;
		struct hv_extent e[4];
	} req;
	struct hv_populate_reply rep;
	struct hv_scrub_node sn;
	hv_domid_t id;
	uint64_t total, m;
	int i;

	(void)state;
	hv_config_defaults(&cfg);
	cfg.nodes = 2;
	cfg.cpus_per_node = 4;
	cfg.threads_per_core = 2;
	cfg.mem_per_node = 8u << 20;
	cfg.backing = HV_BACKING_REAL;
	cfg.switch_hz = 0;
	assert_int_equal(hv_init(&hv, &cfg), 0);
	assert_int_equal(hv->nr_workers, 4);
	total = hv->heap.total_pages;
	assert_int_equal(wait_clean(hv), 0);
	assert_int_equal(ATOMIC_LOAD(&hv->ctr.scrub_pages_boot), total);
	scrub_node_progress(hv, 1, &sn);
	assert_int_equal(sn.workers, 2);
	assert_int_equal(sn.boot_scrub_done, 1);
	assert_int_equal(sn.total_pages, total / 2);

	/* A domain that fills most of the host writes all over its memory. */
	assert_int_equal(dom_create(hv, &cr, &id), 0);
	memset(&req, 0, sizeof(req));
	req.p.domid = id;
	req.p.nr_extents = 4;
	for (i = 0; i < 4; i++)
		req.e[i] = (struct hv_extent){ .gfn = i * 512ull, .order = 9,
		    .node = (uint16_t)(i % 2) };
	assert_int_equal(populate(hv, &req.p, req.e, &rep), 0);
	assert_int_equal(rep.next, 4);
	for (m = 0; m < total; m++)
		memset(mem_page(&hv->mem, m), 0x5a, HV_PAGE_SIZE);
	assert_false(mem_is_zero(&hv->mem, 0, total));
	assert_int_equal(dom_destroy(hv, id), 0);
	assert_int_equal(wait_clean(hv), 0);
	/* The domain's pages are scrubbed by the background workers. */
	assert_int_equal(ATOMIC_LOAD(&hv->ctr.scrub_pages_background),
	    4 * 512);
	for (i = 0; i < 4; i++) {
		uint64_t mfn = (i % 2) * (total / 2) + (i / 2) * 512ull;

		assert_true(mem_is_zero(&hv->mem, mfn, 512));
	}
	for (m = 0; m < 2; m++)
		assert_int_equal(heap_check(&hv->heap, (uint32_t)m), 0);
	hv_fini(hv);
}

#define PD_EXT	32		/* 2 MiB extents: the whole 64 MiB node */

/* Populate the whole node into a new domain; its id. */
static hv_domid_t
pd_fill(struct hv *hv, uint32_t flags, struct hv_populate_reply *rep)
{
	struct hv_domain_create cr = { .max_vcpus = 1, .max_pages = 1 << 20 };
	struct {
		struct hv_populate p;
		struct hv_extent e[PD_EXT];
	} req;
	hv_domid_t id;
	int i;

	assert_int_equal(dom_create(hv, &cr, &id), 0);
	memset(&req, 0, sizeof(req));
	req.p.domid = id;
	req.p.flags = flags;
	req.p.nr_extents = PD_EXT;
	for (i = 0; i < PD_EXT; i++)
		req.e[i] = (struct hv_extent){ .gfn = i * 512ull, .order = 9,
		    .node = 0 };
	assert_int_equal(populate(hv, &req.p, req.e, rep), 0);
	assert_int_equal(rep->next, PD_EXT);
	return id;
}

/*
 * A populate right after a destroy, of all the node's memory, must take
 * the dead domain's dirty pages while the background workers are at
 * them.  It completes, with or without HV_POPF_ALLOW_DIRTY, the pages it
 * gets are zero, and every dirty page is scrubbed exactly once, inline
 * or in the background, as the counters say.  With no worker at all,
 * every page is scrubbed inline.
 */
static void
check_populate_dirty(int32_t workers)
{
	static const uint32_t flags[] = {
		HV_POPF_EXACT_NODE | HV_POPF_ALLOW_DIRTY, 0,
		HV_POPF_ALLOW_DIRTY,
	};
	struct hv_config cfg;
	struct hv *hv = NULL;
	struct hv_populate_reply rep;
	hv_domid_t id;
	uint64_t total, m, inl0, bg0, inl, bg;
	uint32_t f;

	hv_config_defaults(&cfg);
	cfg.nodes = 1;
	cfg.cpus_per_node = 2;
	cfg.threads_per_core = 1;
	cfg.mem_per_node = 64u << 20;
	cfg.backing = HV_BACKING_REAL;
	cfg.switch_hz = 0;
	cfg.boot_scrub = false;
	cfg.scrub_workers = workers;
	assert_int_equal(hv_init(&hv, &cfg), 0);
	assert_int_equal(hv->nr_workers, workers < 0 ? 2 : (uint32_t)workers);
	total = hv->heap.total_pages;
	id = pd_fill(hv, HV_POPF_EXACT_NODE, &rep);
	for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		/* The domain writes all over its memory, then dies. */
		for (m = 0; m < total; m++)
			memset(mem_page(&hv->mem, m), 0x5a, HV_PAGE_SIZE);
		inl0 = ATOMIC_LOAD(&hv->ctr.scrub_pages_inline);
		bg0 = ATOMIC_LOAD(&hv->ctr.scrub_pages_background);
		assert_int_equal(dom_destroy(hv, id), 0);
		id = pd_fill(hv, flags[f], &rep);
		inl = ATOMIC_LOAD(&hv->ctr.scrub_pages_inline) - inl0;
		bg = ATOMIC_LOAD(&hv->ctr.scrub_pages_background) - bg0;
		print_message("# flags %u, %d workers: %llu pages inline, "
		    "%llu in the background\n", flags[f], workers,
		    (unsigned long long)inl, (unsigned long long)bg);
		assert_int_equal(rep.stats.pages_scrubbed_inline, inl);
		assert_int_equal(inl + bg, total);
		if (workers == 0)
			assert_int_equal(inl, total);
		assert_true(mem_is_zero(&hv->mem, 0, total));
		assert_int_equal(heap_free_pages(&hv->heap, 0), 0);
		assert_int_equal(heap_dirty_pages(&hv->heap, 0), 0);
		assert_int_equal(heap_check(&hv->heap, 0), 0);
	}
	assert_int_equal(ATOMIC_LOAD(&hv->ctr.scrub_pages_boot), 0);
	assert_int_equal(dom_destroy(hv, id), 0);
	hv_fini(hv);
}

static void
test_populate_dirty(void **state)
{
	(void)state;
	check_populate_dirty(-1);
	check_populate_dirty(0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_placement_spread),
		cmocka_unit_test(test_dirty_ends_clean),
		cmocka_unit_test(test_populate_dirty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
