/*
 * test_popconc.c - populates of one domain that run at the same time
 * (hypervisor/sim/populate.c, domain.c).
 *
 * A populate holds the domain lock only to reserve its extent's gfns and
 * to record pages it has already allocated and scrubbed, so calls of one
 * domain overlap: one thread per node, as vmbuild's engine does, and
 * threads racing for the same gfns.  A destroy may come while a call has
 * pages in hand that the domain does not own yet.  Whatever the
 * interleaving, the counts must come out exact: every gfn populated once,
 * every page either the domain's or free, dirty memory scrubbed and
 * counted once, claims and the host's available count back to where they
 * started.  Counts only, never times.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <cmocka.h>

#include "../../hypervisor/sim/hvsim.h"

#define NODE_MIB	32u
#define RACE_ROUNDS	400

struct worker {
	struct hv *hv;
	pthread_t thread;
	hv_domid_t domid;
	uint16_t node;
	uint64_t gfn0, nr_4k, nr_2m;	/* its gfns: 4 KiB then 2 MiB extents */
	uint64_t pages, inline_pages, eexist, esrch;
	int bad;			/* unexpected status (no cmocka here) */
	atomic_bool *go;
};

static struct hv *
host(uint32_t backing)
{
	struct hv_config cfg;
	struct hv *hv = NULL;

	hv_config_defaults(&cfg);
	cfg.nodes = 2;
	cfg.cpus_per_node = 2;
	cfg.threads_per_core = 1;
	cfg.mem_per_node = (uint64_t)NODE_MIB << 20;
	cfg.backing = backing;
	cfg.scrub_workers = 0;	/* every dirty page is scrubbed inline */
	cfg.boot_scrub = false;
	cfg.switch_hz = 0;
	cfg.shadow_bg_writes = 0;
	assert_int_equal(hv_init(&hv, &cfg), 0);
	return hv;
}

static hv_domid_t
create(struct hv *hv)
{
	struct hv_domain_create cr = { .flags = HV_DOMF_HVM | HV_DOMF_HAP,
	    .max_vcpus = 2, .max_pages = 1 << 20 };
	hv_domid_t id = HV_DOMID_INVALID;

	assert_int_equal(dom_create(hv, &cr, &id), 0);
	return id;
}

static int
pop1(struct worker *w, uint64_t gfn, uint32_t order)
{
	struct hv_extent e = { .gfn = gfn, .order = order, .node = w->node };
	struct hv_populate p = { .domid = w->domid, .nr_extents = 1,
	    .flags = HV_POPF_EXACT_NODE };
	struct hv_populate_reply rep;
	int rc = populate(w->hv, &p, &e, &rep);

	w->inline_pages += rep.stats.pages_scrubbed_inline;
	if (rc == 0)
		w->pages += rep.stats.pages_done;
	return rc;
}

/* Populate its gfns one extent a call; -EEXIST/-ESRCH are counted. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t k, gfn = w->gfn0;
	int rc;

	while (!atomic_load(w->go))
		sched_yield();
	for (k = 0; k < w->nr_4k + w->nr_2m && !w->bad; k++) {
		uint32_t order = k < w->nr_4k ? 0 : HV_ORDER_2M;

		if (order && gfn % 512)
			gfn = (gfn | 511) + 1;
		rc = pop1(w, gfn, order);
		gfn += 1ull << order;
		if (rc == -EEXIST)
			w->eexist++;
		else if (rc == -ESRCH)
			w->esrch++;
		else if (rc < 0)
			w->bad = rc;
	}
	return NULL;
}

static uint64_t
free_total(struct hv *hv)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < hv->heap.nr_nodes; i++) {
		assert_int_equal(heap_check(&hv->heap, i), 0);
		v += heap_free_pages(&hv->heap, i);
	}
	return v;
}

static uint64_t
dirty_total(struct hv *hv)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < hv->heap.nr_nodes; i++)
		v += heap_dirty_pages(&hv->heap, i);
	return v;
}

static void
info_of(struct hv *hv, hv_domid_t id, struct hv_domain_info *info)
{
	uint32_t nr = 0, more = 0;

	assert_int_equal(dom_list(hv, &(struct hv_domain_list){
	    .first_domid = id, .max = 1 }, info, &nr, &more), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(info->domid, id);
}

/* Fill the host with a domain of garbage and destroy it: all dirty. */
static void
make_dirty(struct hv *hv)
{
	struct worker w = { .hv = hv, .domid = create(hv) };
	uint64_t per_node = (uint64_t)NODE_MIB << 8, k, g = 0;
	uint16_t n;

	for (n = 0; n < 2; n++) {
		w.node = n;
		for (k = 0; k < per_node >> HV_ORDER_2M; k++, g += 512) {
			uint64_t mfn;

			assert_int_equal(pop1(&w, g, HV_ORDER_2M), 0);
			if (hv->mem.backing == HV_BACKING_REAL) {
				assert_int_equal(dom_map(hv, w.domid, g, 1,
				    &mfn), 0);
				memset(mem_page(&hv->mem, mfn), 0xa5,
				    2u << 20);
			}
		}
	}
	assert_int_equal(dom_destroy(hv, w.domid), 0);
	assert_int_equal(dirty_total(hv), hv->heap.total_pages);
}

/*
 * Two threads, one per node, populate one domain (4 KiB extents first,
 * so that small dirty blocks split and merge, then 2 MiB ones) while a
 * third and fourth race them for the very same gfns.  Each gfn ends up
 * populated once: the losers get -EEXIST, never a second mapping.
 */
static void
test_two_nodes_one_domain(void **state)
{
	struct hv *hv = host(HV_BACKING_REAL);
	struct worker w[4];
	struct hv_domain_info info;
	uint64_t total = hv->heap.total_pages, pages = 0, inl = 0, k;
	uint64_t scrubbed0 = hv->ctr.scrub_pages_inline, eexist = 0;
	atomic_bool go = false;
	hv_domid_t id;
	uint32_t i;

	(void)state;
	make_dirty(hv);
	scrubbed0 = hv->ctr.scrub_pages_inline;
	id = create(hv);
	for (i = 0; i < 4; i++) {
		/* Node i % 2's gfn range; threads 2, 3 double 0, 1. */
		w[i] = (struct worker){ .hv = hv, .domid = id,
		    .node = (uint16_t)(i % 2),
		    .gfn0 = (uint64_t)(i % 2) << 20, .nr_4k = 600,
		    .nr_2m = 10, .go = &go };
		assert_int_equal(pthread_create(&w[i].thread, NULL,
		    worker_main, &w[i]), 0);
	}
	atomic_store(&go, true);
	for (i = 0; i < 4; i++) {
		pthread_join(w[i].thread, NULL);
		assert_int_equal(w[i].bad, 0);
		assert_int_equal(w[i].esrch, 0);
		pages += w[i].pages;
		inl += w[i].inline_pages;
		eexist += w[i].eexist;
	}
	/* Each range once: 600 4 KiB + 10 2 MiB extents per node. */
	assert_int_equal(eexist, 2 * (600 + 10));
	assert_int_equal(pages, 2 * (600 + 10 * 512));
	info_of(hv, id, &info);
	assert_int_equal(info.tot_pages, pages);
	assert_int_equal(info.node_pages[0], pages / 2);
	assert_int_equal(info.node_pages[1], pages / 2);
	assert_int_equal(free_total(hv), total - pages);
	assert_int_equal(hv->avail, total - pages);
	/* Scrubbed inline, once each: what left the dirty count. */
	assert_int_equal(inl, hv->ctr.scrub_pages_inline - scrubbed0);
	assert_int_equal(inl, total - dirty_total(hv));
	/* Each node's pages are its own and were zeroed. */
	for (i = 0; i < 2; i++)
		for (k = 0; k < 600 + 10 * 512; k++) {
			uint64_t mfn, gfn = ((uint64_t)i << 20) +
			    (k < 600 ? k : 1024 + (k - 600));

			assert_int_equal(dom_map(hv, id, gfn, 1, &mfn), 0);
			assert_int_equal(heap_node_of(&hv->heap, mfn), i);
			if (k % 61 == 0 || k == 600 + 10 * 512 - 1)
				assert_true(mem_is_zero(&hv->mem, mfn, 1));
		}
	assert_int_equal(dom_destroy(hv, id), 0);
	assert_int_equal(free_total(hv), total);
	assert_int_equal(hv->avail, total);
	hv_fini(hv);
}

/*
 * A destroy that comes while populates (one per node, with a claim)
 * have pages in hand.  The calls fail with -ESRCH or finish first; either
 * way every page ends up free, each dirty page is counted once as
 * scrubbed or still dirty, and neither the claim nor the available count
 * leaks.
 */
static void
test_destroy_races_populate(void **state)
{
	struct hv *hv = host(HV_BACKING_PHANTOM);
	uint64_t total = hv->heap.total_pages, esrch = 0, done = 0;
	unsigned seed = 7;
	uint32_t round, i, spin;

	(void)state;
	for (round = 0; round < RACE_ROUNDS; round++) {
		atomic_bool go = false;
		struct worker w[2];
		uint64_t dirty0, scrubbed0, inl = 0, owned = 0;
		hv_domid_t id;

		if (round % 50 == 0)
			make_dirty(hv);
		dirty0 = dirty_total(hv);
		scrubbed0 = hv->ctr.scrub_pages_inline;
		id = create(hv);
		assert_int_equal(dom_set(hv, HV_OP_CLAIM, id, 4096), 0);
		for (i = 0; i < 2; i++) {
			w[i] = (struct worker){ .hv = hv, .domid = id,
			    .node = (uint16_t)i, .gfn0 = (uint64_t)i << 20,
			    .nr_4k = 200, .nr_2m = 4, .go = &go };
			assert_int_equal(pthread_create(&w[i].thread, NULL,
			    worker_main, &w[i]), 0);
		}
		atomic_store(&go, true);
		for (spin = rand_r(&seed) % 400; spin > 0; spin--)
			sched_yield();
		assert_int_equal(dom_destroy(hv, id), 0);
		for (i = 0; i < 2; i++) {
			pthread_join(w[i].thread, NULL);
			assert_int_equal(w[i].bad, 0);
			assert_int_equal(w[i].eexist, 0);
			esrch += w[i].esrch;
			inl += w[i].inline_pages;
			owned += w[i].pages;
		}
		done += owned;
		assert_int_equal(free_total(hv), total);
		assert_int_equal(hv->avail, total);
		assert_int_equal(dom_outstanding_total(hv), 0);
		assert_int_equal(inl, hv->ctr.scrub_pages_inline - scrubbed0);
		/*
		 * Pages scrubbed inline left the dirty count once (those a
		 * call held when the destroy came went back clean); the
		 * pages the domain owned came back dirty.
		 */
		assert_int_equal(dirty_total(hv), dirty0 - inl + owned);
	}
	print_message("# %u rounds: %llu pages populated, %llu calls "
	    "refused by a destroy\n", RACE_ROUNDS, (unsigned long long)done,
	    (unsigned long long)esrch);
	/* The destroy did land in the middle of populates. */
	assert_true(esrch > 0);
	hv_fini(hv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_nodes_one_domain),
		cmocka_unit_test(test_destroy_races_populate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
