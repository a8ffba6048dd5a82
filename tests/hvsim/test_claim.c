/*
 * test_claim.c - claims under concurrent allocations (hypervisor/sim/
 * domain.c, populate.c).
 *
 * A claim is a guarantee: a domain that has claimed N pages can populate
 * N pages whatever other domains do at the same time.  Here unclaimed
 * domains populate until the heap is empty, free, and start again, in
 * several threads, while a claimed domain populates its claim one extent
 * at a time.  Were the check and the allocation separate steps, two
 * unclaimed allocations could both pass the check against the same last
 * free pages, and the claimed domain would get -ENOMEM.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <cmocka.h>

#include "../../hypervisor/sim/hvsim.h"

#define HAMMERS		6	/* more threads than CPUs: preempted anywhere */
#define ROUNDS		300
#define CLAIM_EXTENTS	24	/* 2 MiB extents the claimed domain takes */

struct hammer {
	struct hv *hv;
	pthread_t thread;
	unsigned seed;
	uint64_t enomem;	/* unclaimed populates refused */
	int bad;		/* an unexpected error (no cmocka in threads) */
};

static bool stop;		/* atomic */

static struct hv *
host(void)
{
	struct hv_config cfg;
	struct hv *hv = NULL;

	hv_config_defaults(&cfg);
	cfg.nodes = 2;
	cfg.cpus_per_node = 2;
	cfg.threads_per_core = 1;
	cfg.mem_per_node = 32u << 20;	/* 16 extents of 2 MiB per node */
	cfg.backing = HV_BACKING_PHANTOM;
	cfg.scrub_workers = 0;
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
	    .max_vcpus = 1, .max_pages = 1 << 20 };
	hv_domid_t id;

	return dom_create(hv, &cr, &id) == 0 ? id : HV_DOMID_INVALID;
}

static int
populate_one(struct hv *hv, hv_domid_t id, uint64_t gfn, uint16_t node)
{
	struct hv_extent e = { .gfn = gfn, .order = HV_ORDER_2M, .node = node };
	struct hv_populate p = { .domid = id, .nr_extents = 1 };
	struct hv_populate_reply rep;

	return populate(hv, &p, &e, &rep);
}

/* An unclaimed domain that takes whatever it can, frees, and retries. */
static void *
hammer_main(void *arg)
{
	struct hammer *h = arg;
	hv_domid_t id = create(h->hv);
	uint64_t gfn = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int rc = populate_one(h->hv, id, gfn,
		    rand_r(&h->seed) % 3 == 0 ? (uint16_t)HV_NODE_ANY :
		    (uint16_t)(rand_r(&h->seed) % 2));

		if (rc == 0) {
			gfn += 1u << HV_ORDER_2M;
			continue;
		}
		if (rc != -ENOMEM) {
			h->bad = rc;
			break;
		}
		h->enomem++;
		/* Full: give some back now and then so others race for it. */
		if (rand_r(&h->seed) % 4 == 0) {
			dom_destroy(h->hv, id);
			id = create(h->hv);
			gfn = 0;
		}
		sched_yield();
	}
	if (dom_destroy(h->hv, id) < 0 && !h->bad)
		h->bad = -ESRCH;
	return NULL;
}

static void
test_claim_holds_under_load(void **state)
{
	struct hv *hv = host();
	struct hammer h[HAMMERS];
	uint64_t total = hv->heap.total_pages, free_now, enomem = 0;
	uint32_t round, i, k, failed = 0;

	(void)state;
	for (round = 0; round < ROUNDS; round++) {
		hv_domid_t c = create(hv);
		struct hv_domain_info info;
		uint32_t nr = 0;

		/* The claim is made while the heap is all free ... */
		assert_int_equal(dom_set(hv, HV_OP_CLAIM, c,
		    (uint64_t)CLAIM_EXTENTS << HV_ORDER_2M), 0);
		__atomic_store_n(&stop, false, __ATOMIC_RELEASE);
		for (i = 0; i < HAMMERS; i++) {
			h[i] = (struct hammer){ .hv = hv,
			    .seed = round * HAMMERS + i + 1 };
			assert_int_equal(pthread_create(&h[i].thread, NULL,
			    hammer_main, &h[i]), 0);
		}
		/* ... and must hold while the others fill it up. */
		for (k = 0; k < CLAIM_EXTENTS; k++) {
			int rc = populate_one(hv, c,
			    (uint64_t)k << HV_ORDER_2M, HV_NODE_ANY);

			if (rc < 0) {
				print_message("# round %u: claimed extent %u: "
				    "%d\n", round, k, rc);
				failed++;
				break;
			}
			sched_yield();
		}
		__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
		for (i = 0; i < HAMMERS; i++) {
			pthread_join(h[i].thread, NULL);
			enomem += h[i].enomem;
			assert_int_equal(h[i].bad, 0);
		}
		assert_int_equal(dom_list(hv, &(struct hv_domain_list){
		    .first_domid = c, .max = 1 }, &info, &nr, &k), 0);
		assert_int_equal(info.outstanding_pages, 0);
		assert_int_equal(dom_destroy(hv, c), 0);
		/* Quiet again: every reservation has been settled. */
		for (i = 0, free_now = 0; i < hv->heap.nr_nodes; i++) {
			free_now += heap_free_pages(&hv->heap, i);
			assert_int_equal(heap_check(&hv->heap, i), 0);
		}
		assert_int_equal(free_now, total);
		assert_int_equal(hv->avail, total);
		assert_int_equal(dom_outstanding_total(hv), 0);
	}
	print_message("# %u rounds, %llu unclaimed populates refused\n",
	    ROUNDS, (unsigned long long)enomem);
	/* The hammers did reach the claimed memory's edge. */
	assert_true(enomem > 0);
	assert_int_equal(failed, 0);
	hv_fini(hv);
}

/* Reservations in flight and claims add up: no claim beyond what is free. */
static void
test_claim_accounting(void **state)
{
	struct hv *hv = host();
	uint64_t total = hv->heap.total_pages;
	hv_domid_t a = create(hv), b = create(hv);
	uint32_t k;

	(void)state;
	assert_int_equal(dom_set(hv, HV_OP_CLAIM, a, total - 1024), 0);
	/* b may take the 1024 unclaimed pages and no more. */
	assert_int_equal(populate_one(hv, b, 0, HV_NODE_ANY), 0);
	assert_int_equal(populate_one(hv, b, 512, HV_NODE_ANY), 0);
	assert_int_equal(populate_one(hv, b, 1024, HV_NODE_ANY), -ENOMEM);
	assert_int_equal(dom_set(hv, HV_OP_CLAIM, b, 1024 + 512), -ENOMEM);
	/* a gets all of its claim. */
	for (k = 0; k < (total - 1024) >> HV_ORDER_2M; k++)
		assert_int_equal(populate_one(hv, a,
		    (uint64_t)k << HV_ORDER_2M, HV_NODE_ANY), 0);
	assert_int_equal(dom_outstanding_total(hv), 0);
	assert_int_equal(hv->avail, 0);
	/* Freed memory is available again, for claims too. */
	assert_int_equal(dom_destroy(hv, b), 0);
	assert_int_equal(hv->avail, 1024);
	b = create(hv);
	assert_int_equal(dom_set(hv, HV_OP_CLAIM, b, 1024 + 512), -ENOMEM);
	assert_int_equal(dom_set(hv, HV_OP_CLAIM, b, 1024), 0);
	assert_int_equal(dom_destroy(hv, a), 0);
	assert_int_equal(hv->avail, total);
	assert_int_equal(dom_destroy(hv, b), 0);
	assert_int_equal(dom_outstanding_total(hv), 0);
	hv_fini(hv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim_accounting),
		cmocka_unit_test(test_claim_holds_under_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
