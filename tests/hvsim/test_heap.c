/*
 * test_heap.c - unit tests of hvsim's buddy heap (hypervisor/sim/heap.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../hypervisor/sim/hvsim.h"

#define NODES	2
#define PAGES	8192u		/* 32 MiB per node: one order-13 block */

static struct hvmem phantom = { .backing = HV_BACKING_PHANTOM };

static void
init(struct heap *h, uint64_t pages, bool dirty)
{
	assert_int_equal(heap_init(h, NULL, &phantom, NODES, pages, dirty), 0);
}

static void
test_init_counts(void **state)
{
	struct heap h;

	(void)state;
	init(&h, PAGES, false);
	assert_int_equal(heap_free_pages(&h, 0), PAGES);
	assert_int_equal(heap_dirty_pages(&h, 1), 0);
	assert_int_equal(h.nodes[1].first_mfn, PAGES);
	assert_int_equal(h.nodes[0].list[0][13], 0);
	assert_int_equal(heap_check(&h, 0), 0);
	heap_fini(&h);
	/* A node that is not a power of two: maximal aligned blocks. */
	init(&h, 3 * 512 + (1u << 18), true);
	assert_int_equal(heap_dirty_pages(&h, 0), 3 * 512 + (1u << 18));
	assert_int_equal(heap_check(&h, 0), 0);
	assert_int_equal(h.nodes[0].list[1][18], 0);
	assert_int_equal(h.nodes[0].list[1][10], 1u << 18);
	assert_int_equal(h.nodes[0].list[1][9], (1u << 18) + 1024);
	heap_fini(&h);
}

static void
test_alloc_free_merge(void **state)
{
	struct heap h;
	struct hblock a, b;
	uint64_t inl = 0;

	(void)state;
	init(&h, PAGES, false);
	assert_int_equal(heap_alloc(&h, 1, 0, false, &a, &inl), 0);
	assert_int_equal(a.mfn, PAGES);		/* lowest page of node 1 */
	assert_int_equal(heap_alloc(&h, 1, 0, false, &b, &inl), 0);
	assert_int_equal(b.mfn, PAGES + 1);	/* its buddy */
	assert_int_equal(heap_free_pages(&h, 1), PAGES - 2);
	assert_int_equal(heap_check(&h, 1), 0);
	heap_free(&h, &a);
	heap_free(&h, &b);
	assert_int_equal(heap_check(&h, 1), 0);
	/* Everything merged back into one block. */
	assert_int_equal(h.nodes[1].list[0][13], 0);
	assert_int_equal(heap_free_pages(&h, 1), PAGES);
	assert_null(h.nodes[1].chunks[0].sub);
	assert_int_equal(inl, 0);
	heap_fini(&h);
}

static void
test_enomem(void **state)
{
	struct heap h;
	struct hblock a, b;

	(void)state;
	init(&h, PAGES, false);
	assert_int_equal(heap_alloc(&h, 0, 14, false, &a, NULL), -ENOMEM);
	assert_int_equal(heap_alloc(&h, 0, 13, false, &a, NULL), 0);
	assert_int_equal(heap_alloc(&h, 0, 0, false, &b, NULL), -ENOMEM);
	assert_int_equal(heap_alloc(&h, 2, 0, false, &b, NULL), -EINVAL);
	assert_int_equal(heap_free_pages(&h, 0), 0);
	heap_free(&h, &a);
	assert_int_equal(heap_free_pages(&h, 0), PAGES);
	assert_int_equal(heap_check(&h, 0), 0);
	heap_fini(&h);
}

/*
 * Buddies of different kinds do not merge; an allocation that needs the
 * merged block scrubs the dirty halves inline, after which they merge.
 */
static void
test_mixed_kinds(void **state)
{
	struct heap h;
	struct hblock b[512], big;
	uint64_t inl = 0;
	int i;

	(void)state;
	init(&h, 512, false);
	for (i = 0; i < 512; i++)
		assert_int_equal(heap_alloc(&h, 0, 0, false, &b[i], NULL), 0);
	for (i = 0; i < 512; i++) {
		b[i].kind = i % 2 ? PG_CLEAN : PG_DIRTY;
		b[i].need_flush = true;
		b[i].tlbflush_ts = (uint64_t)i;
		heap_free(&h, &b[i]);
	}
	assert_int_equal(heap_check(&h, 0), 0);
	assert_int_equal(heap_dirty_pages(&h, 0), 256);
	assert_int_equal(heap_alloc(&h, 0, 9, false, &big, &inl), 0);
	assert_int_equal(inl, 256);
	assert_int_equal(big.mfn, 0);
	assert_true(big.need_flush);
	assert_int_equal(big.tlbflush_ts, 511);	/* the newest of the merged */
	assert_int_equal(heap_dirty_pages(&h, 0), 0);
	assert_int_equal(heap_free_pages(&h, 0), 0);
	heap_free(&h, &big);
	assert_int_equal(heap_check(&h, 0), 0);
	heap_fini(&h);
}

struct held {
	struct hblock b;
};

static void
test_random(void **state)
{
	struct heap h;
	static const uint8_t orders[] = { 0, 0, 0, 1, 3, 5, 9, 9, 10, 12 };
	struct held *held = calloc(20000, sizeof(*held));
	uint8_t *owned = calloc(NODES * PAGES, 1);
	uint64_t used[NODES] = { 0 }, p;
	uint32_t nheld = 0, op, n;
	struct hblock b;
	struct scrub_job job;

	(void)state;
	assert_non_null(held);
	srandom(12345);
	init(&h, PAGES, true);
	for (op = 0; op < 20000; op++) {
		if (nheld == 0 || random() % 100 < 55) {
			uint32_t node = (uint32_t)random() % NODES;
			uint32_t order = orders[random() % sizeof(orders)];

			if (heap_alloc(&h, node, order, true, &b, NULL) < 0) {
				/* Only when the node really has no room. */
				continue;
			}
			assert_int_equal(b.node, node);
			assert_int_equal(b.mfn & ((1u << order) - 1), 0);
			for (p = b.mfn; p < b.mfn + (1u << order); p++) {
				assert_int_equal(owned[p], 0);	/* not twice */
				owned[p] = 1;
			}
			used[node] += 1u << order;
			held[nheld++].b = b;
		} else {
			uint32_t i = (uint32_t)random() % nheld;

			b = held[i].b;
			held[i] = held[--nheld];
			for (p = b.mfn; p < b.mfn + (1u << b.order); p++)
				owned[p] = 0;
			used[b.node] -= 1u << b.order;
			b.kind = random() % 2 ? PG_DIRTY : PG_CLEAN;
			b.need_flush = random() % 2;
			heap_free(&h, &b);
		}
		if (op % 500 == 0)
			for (n = 0; n < NODES; n++) {
				assert_int_equal(heap_check(&h, n), 0);
				assert_int_equal(heap_free_pages(&h, n),
				    PAGES - used[n]);
			}
	}
	while (nheld > 0) {
		b = held[--nheld].b;
		b.kind = PG_DIRTY;
		heap_free(&h, &b);
	}
	/* Scrub what is dirty; the nodes must merge back completely. */
	for (n = 0; n < NODES; n++) {
		while (heap_take_dirty(&h, n, SCRUB_ORDER, &job) == 0) {
			job.done = 1ull << job.b.order;
			heap_put_scrubbed(&h, &job);
		}
		assert_int_equal(heap_check(&h, n), 0);
		assert_int_equal(heap_free_pages(&h, n), PAGES);
		assert_int_equal(heap_dirty_pages(&h, n), 0);
		assert_true(h.nodes[n].boot_done);
		assert_int_equal(h.nodes[n].list[0][13], 0);
	}
	free(held);
	free(owned);
	heap_fini(&h);
}

/*
 * Random create / populate / destroy sequences through the domain layer:
 * after each step the host's free pages equal total minus what the live
 * domains hold, exactly, and the heap's invariants hold.
 */
static void
test_domains_random(void **state)
{
	struct hv_config cfg;
	struct hv *hv = NULL;
	struct hv_domain_create cr = { .max_vcpus = 1, .max_pages = 1 << 20 };
	struct {
		struct hv_populate p;
		struct hv_extent e[64];
	} req;
	struct hv_populate_reply rep;
	hv_domid_t live[16];
	uint64_t held[16], gfn[16], total, free_now, sum;
	uint32_t nlive = 0, i, k, n, step;

	(void)state;
	hv_config_defaults(&cfg);
	cfg.nodes = 3;
	cfg.mem_per_node = 64u << 20;
	cfg.backing = HV_BACKING_PHANTOM;
	/* No workers: boot scrubbed at init, freed pages stay dirty. */
	cfg.scrub_workers = 0;
	cfg.boot_scrub = true;
	cfg.switch_hz = 0;
	cfg.preempt_pages = 700;	/* force preemption */
	assert_int_equal(hv_init(&hv, &cfg), 0);
	total = hv->heap.total_pages;
	srandom(777);
	for (step = 0; step < 400; step++) {
		uint32_t r = (uint32_t)random() % 10;

		if (nlive < 16 && (nlive == 0 || r < 4)) {
			assert_int_equal(dom_create(hv, &cr, &live[nlive]), 0);
			held[nlive] = gfn[nlive] = 0;
			nlive++;
		} else if (r < 8) {
			i = (uint32_t)random() % nlive;
			n = 1 + (uint32_t)random() % 64;
			memset(&req, 0, sizeof(req));
			req.p.domid = live[i];
			req.p.flags = HV_POPF_ALLOW_DIRTY |
			    (random() % 2 ? HV_POPF_EXACT_NODE : 0);
			req.p.nr_extents = n;
			for (k = 0; k < n; k++) {
				uint8_t o = (uint8_t)(random() % 3 ? 0 : 9);

				gfn[i] = (gfn[i] + (1u << o) - 1) & ~((1ull << o) - 1);
				req.e[k] = (struct hv_extent){ .gfn = gfn[i],
				    .order = o, .node = (uint16_t)(random() % 4 == 3 ?
				    HV_NODE_ANY : random() % 3) };
				gfn[i] += 1u << o;
			}
			while (req.p.start < n) {
				int rc = populate(hv, &req.p, req.e, &rep);

				for (k = req.p.start; k < rep.next; k++)
					held[i] += 1u << req.e[k].order;
				if (rc < 0) {
					assert_int_equal(rc, -ENOMEM);
					break;
				}
				req.p.start = rep.next;
			}
		} else {
			i = (uint32_t)random() % nlive;
			assert_int_equal(dom_destroy(hv, live[i]), 0);
			live[i] = live[nlive - 1];
			held[i] = held[nlive - 1];
			gfn[i] = gfn[nlive - 1];
			nlive--;
		}
		free_now = sum = 0;
		for (k = 0; k < cfg.nodes; k++) {
			free_now += heap_free_pages(&hv->heap, k);
			assert_int_equal(heap_check(&hv->heap, k), 0);
		}
		for (k = 0; k < nlive; k++)
			sum += held[k];
		assert_int_equal(free_now, total - sum);
	}
	assert_true(hv->ctr.populate_preemptions > 0);
	while (nlive > 0)
		assert_int_equal(dom_destroy(hv, live[--nlive]), 0);
	for (k = 0, free_now = 0; k < cfg.nodes; k++)
		free_now += heap_free_pages(&hv->heap, k);
	assert_int_equal(free_now, total);
	hv_fini(hv);
}

/*
 * An allocation that needs pages a background scrub holds calls that
 * scrub back and waits only for the hand-over: the scrubber gives the
 * block back with its scrubbed part clean, and the allocation scrubs the
 * rest inline.  The test plays the scrubber, so the split is exact.
 */
#define AB_PAGES	16384u		/* 64 MiB, one order-14 block */
#define AB_DONE		512u		/* what the scrubber got done */

struct ab_alloc {
	struct heap *h;
	struct hblock b;
	uint64_t inl;
	int rc;
};

static void *
ab_alloc_main(void *arg)
{
	struct ab_alloc *a = arg;

	a->rc = heap_alloc(a->h, 0, 14, true, &a->b, &a->inl);
	return NULL;
}

static void
test_scrub_abort(void **state)
{
	struct hvmem mem;
	struct heap h;
	struct hblock b;
	struct scrub_job job, job2;
	struct ab_alloc a = { .h = &h };
	pthread_t t;
	uint32_t i;
	uint64_t pg;

	(void)state;
	assert_int_equal(mem_init(&mem, HV_BACKING_REAL, AB_PAGES * 4096ull),
	    0);
	assert_int_equal(heap_init(&h, NULL, &mem, 1, AB_PAGES, false), 0);
	h.nodes[0].workers = 1;		/* as if a worker served the node */
	/* A dead domain's memory: written all over, freed dirty. */
	assert_int_equal(heap_alloc(&h, 0, 14, true, &b, NULL), 0);
	for (pg = 0; pg < AB_PAGES; pg++)
		memset(mem_page(&mem, pg), 0xa5, HV_PAGE_SIZE);
	b.kind = PG_DIRTY;
	b.need_flush = true;
	b.tlbflush_ts = 7;
	heap_free(&h, &b);
	assert_int_equal(heap_dirty_pages(&h, 0), AB_PAGES);
	/* Only dirty pages: without allow_dirty a served node says no. */
	assert_int_equal(heap_alloc(&h, 0, 0, false, &b, NULL), -ENOMEM);

	/* The scrubber takes the first 16 MiB. */
	memset(&job, 0, sizeof(job));
	assert_int_equal(heap_take_dirty(&h, 0, 12, &job), 0);
	assert_int_equal(job.b.mfn, 0);
	assert_int_equal(job.b.order, 12);
	assert_false(heap_scrub_aborted(&job));

	/* The whole node is wanted: that includes the scrubber's block. */
	assert_int_equal(pthread_create(&t, NULL, ab_alloc_main, &a), 0);
	for (i = 0; i < 200000 && !heap_scrub_aborted(&job); i++)
		usleep(100);
	assert_true(heap_scrub_aborted(&job));
	/* While an allocation waits, the scrubber takes nothing new. */
	assert_int_equal(heap_take_dirty(&h, 0, 12, &job2), -EAGAIN);
	mem_zero(&mem, job.b.mfn, AB_DONE);
	job.done = AB_DONE;
	heap_put_scrubbed(&h, &job);
	assert_int_equal(pthread_join(t, NULL), 0);

	assert_int_equal(a.rc, 0);
	assert_int_equal(a.b.mfn, 0);
	assert_int_equal(a.b.order, 14);
	assert_int_equal(a.b.kind, PG_CLEAN);
	assert_true(a.b.need_flush);
	assert_int_equal(a.b.tlbflush_ts, 7);
	/* Each page scrubbed once: by the scrubber or inline, not both. */
	assert_int_equal(a.inl, AB_PAGES - AB_DONE);
	assert_int_equal(h.nodes[0].scrubbed_total, AB_PAGES);
	assert_true(mem_is_zero(&mem, 0, AB_PAGES));
	assert_int_equal(heap_free_pages(&h, 0), 0);
	assert_int_equal(heap_dirty_pages(&h, 0), 0);
	assert_int_equal(h.nodes[0].scrubbing_pages, 0);
	assert_null(h.nodes[0].jobs);
	a.b.kind = PG_CLEAN;
	heap_free(&h, &a.b);
	assert_int_equal(heap_check(&h, 0), 0);
	assert_int_equal(h.nodes[0].list[0][14], 0);
	heap_fini(&h);
	mem_fini(&mem);
}

/*
 * A scrub given back part done: the scrubbed part is clean, the rest
 * still dirty with its kind, and both parts merge with their own kind.
 */
static void
test_scrub_partial(void **state)
{
	struct heap h;
	struct scrub_job job;

	(void)state;
	assert_int_equal(heap_init(&h, NULL, &phantom, 1, AB_PAGES, true), 0);
	memset(&job, 0, sizeof(job));
	assert_int_equal(heap_take_dirty(&h, 0, 12, &job), 0);
	assert_int_equal(job.b.kind, PG_BOOT);
	job.done = 3 * 512;	/* 6 MiB: an order-10 and an order-9 block */
	heap_put_scrubbed(&h, &job);
	assert_int_equal(heap_check(&h, 0), 0);
	assert_int_equal(heap_dirty_pages(&h, 0), AB_PAGES - 3 * 512);
	assert_int_equal(h.nodes[0].boot_dirty_pages, AB_PAGES - 3 * 512);
	assert_false(h.nodes[0].boot_done);
	assert_int_equal(h.nodes[0].list[0][10], 0);
	assert_int_equal(h.nodes[0].list[0][9], 1024);
	assert_int_equal(h.nodes[0].list[1][9], 1536);
	assert_int_equal(heap_free_pages(&h, 0), AB_PAGES);
	heap_fini(&h);
}

/*
 * Clean 1 GiB blocks are counted apart from clean pages: 2 MiB left dirty
 * in the only 1 GiB block leave 1022 MiB clean there and no clean 1 GiB
 * block, until they are scrubbed and the halves merge again.
 */
static void
test_clean_1g_blocks(void **state)
{
	const uint64_t g = 1ull << HV_ORDER_1G;
	struct scrub_job job;
	struct hblock b;
	struct heap h;
	uint64_t inl = 0;

	(void)state;
	/* 1 GiB and an order-16 (256 MiB) block. */
	assert_int_equal(heap_init(&h, NULL, &phantom, 1, g + (1u << 16),
	    false), 0);
	assert_int_equal(h.nodes[0].clean_top_blocks, 1);
	/* A 2 MiB extent comes from the smaller block. */
	assert_int_equal(heap_alloc(&h, 0, 9, false, &b, &inl), 0);
	assert_int_equal(b.mfn, g);
	assert_int_equal(h.nodes[0].clean_top_blocks, 1);
	heap_free(&h, &b);
	/* A 1 GiB extent takes the block; given back dirty, it is none. */
	assert_int_equal(heap_alloc(&h, 0, HV_ORDER_1G, false, &b, &inl), 0);
	assert_int_equal(h.nodes[0].clean_top_blocks, 0);
	b.kind = PG_DIRTY;
	heap_free(&h, &b);
	assert_int_equal(h.nodes[0].clean_top_blocks, 0);
	assert_int_equal(heap_check(&h, 0), 0);
	/* All but the last 2 MiB step scrubbed: still no clean 1 GiB. */
	memset(&job, 0, sizeof(job));
	assert_int_equal(heap_take_dirty(&h, 0, HV_ORDER_1G, &job), 0);
	assert_int_equal(job.b.order, HV_ORDER_1G);
	job.done = g - 512;
	heap_put_scrubbed(&h, &job);
	assert_int_equal(heap_dirty_pages(&h, 0), 512);
	assert_int_equal(h.nodes[0].clean_top_blocks, 0);
	assert_int_equal(heap_check(&h, 0), 0);
	/* The last step: one clean 1 GiB block again. */
	assert_int_equal(heap_take_dirty(&h, 0, HV_ORDER_1G, &job), 0);
	assert_int_equal(job.b.order, 9);
	job.done = 512;
	heap_put_scrubbed(&h, &job);
	assert_int_equal(h.nodes[0].clean_top_blocks, 1);
	assert_int_equal(heap_check(&h, 0), 0);
	assert_int_equal(inl, 0);
	heap_fini(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_counts),
		cmocka_unit_test(test_alloc_free_merge),
		cmocka_unit_test(test_enomem),
		cmocka_unit_test(test_mixed_kinds),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_domains_random),
		cmocka_unit_test(test_scrub_abort),
		cmocka_unit_test(test_scrub_partial),
		cmocka_unit_test(test_clean_1g_blocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
