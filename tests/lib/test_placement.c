/*
 * test_placement.c - vmb__place() against made-up hosts, scrub tables
 * and domains (no hypervisor needed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmb_internal.h"

#define MIB	VMB_MIB
#define GIB	VMB_GIB

struct fixture {
	struct vmb_host host;
	struct vmb_cpu cpus[64];
	struct vmb_scrub scrub;
	struct vmb_domain doms[8];
	size_t	nr_doms;
	struct vmb_guest guest;
};

/* A host of `n` nodes, 4 CPUs each, free memory free_mib[i] MiB. */
static void
host_init(struct fixture *f, uint32_t n, const uint64_t *free_mib)
{
	memset(f, 0, sizeof(*f));
	f->host.nr_nodes = n;
	f->host.nr_cpus = n * 4;
	f->host.cpus = f->cpus;
	for (uint32_t i = 0; i < n; i++) {
		f->host.nodes[i].node = i;
		f->host.nodes[i].nr_cpus = 4;
		f->host.nodes[i].total_bytes = 4 * GIB;
		f->host.nodes[i].free_bytes = free_mib[i] * MIB;
		f->host.free_bytes += free_mib[i] * MIB;
		for (uint32_t c = 0; c < 4; c++)
			f->cpus[i * 4 + c] = (struct vmb_cpu){ .cpu = i * 4 + c,
			    .node = i, .core = i * 4 + c };
		f->scrub.nodes[i].node = i;
		f->scrub.nodes[i].free_bytes = free_mib[i] * MIB;
	}
	f->scrub.nr_nodes = n;
	f->scrub.have = VMB_SCRUB_HAVE_DIRTY;
	strcpy(f->guest.name, "t");
	f->guest.vcpus = 2;
	f->guest.hap = true;
}

static void
guest_mib(struct fixture *f, uint64_t mib)
{
	f->guest.memory_bytes = f->guest.maxmem_bytes = mib * MIB;
}

static uint64_t
placed_total(const struct vmb_placement *p)
{
	uint64_t t = 0;

	for (uint32_t i = 0; i < p->nr_nodes; i++)
		t += p->node_bytes[i];
	return t;
}

static void
test_prefers_clean_node(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 2048, 1024 };

	(void)state;
	host_init(&f, 2, free_mib);
	f.scrub.nodes[0].dirty_bytes = 1800 * MIB;	/* 248 MiB clean */
	guest_mib(&f, 512);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 1);
	assert_int_equal(p.node_bytes[0], 512 * MIB);
	assert_non_null(strstr(p.reason, "node 1"));
	assert_non_null(strstr(p.reason, "clean"));

	/* Without scrub data, node 0 has the most memory and wins ties. */
	assert_int_equal(vmb__place(&f.host, NULL, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 0);
}

/*
 * Host and scrub progress are read one after the other: memory freed
 * dirty in between shows in one free count only, and is not clean.
 */
static void
test_clean_two_reads(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 1536, 1024 };

	(void)state;
	host_init(&f, 2, free_mib);
	/* Scrub progress read first; then 512 MiB freed (dirty) on node 0. */
	f.scrub.nodes[0].free_bytes = 1024 * MIB;
	assert_int_equal(vmb__clean_bytes(&f.host, &f.scrub, 0), 1024 * MIB);
	f.scrub.nodes[0].dirty_bytes = 256 * MIB;
	assert_int_equal(vmb__clean_bytes(&f.host, &f.scrub, 0), 768 * MIB);
	/* The other way round: the scrubber saw the freed memory dirty. */
	f.scrub.nodes[1].free_bytes = 1536 * MIB;
	f.scrub.nodes[1].dirty_bytes = 512 * MIB;
	assert_int_equal(vmb__clean_bytes(&f.host, &f.scrub, 1), 512 * MIB);
	/* Placement sees the same. */
	guest_mib(&f, 1100);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_non_null(strstr(p.reason, "node 0: 588 MiB (768 MiB clean"));
	assert_non_null(strstr(p.reason, "node 1: 512 MiB (512 MiB clean"));
	/* Without dirty counts, the host's free memory is clean. */
	f.scrub.have = 0;
	assert_int_equal(vmb__clean_bytes(&f.host, &f.scrub, 0), 1536 * MIB);
	assert_int_equal(vmb__clean_bytes(&f.host, NULL, 1), 1024 * MIB);
}

static void
test_prefers_fewer_nodes(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 512, 700, 512 };

	(void)state;
	host_init(&f, 3, free_mib);
	guest_mib(&f, 600);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 1);
}

static void
test_clean_pair_beats_dirty_single(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 400, 400, 1024 };

	(void)state;
	host_init(&f, 3, free_mib);
	f.scrub.nodes[2].dirty_bytes = 1024 * MIB;	/* all dirty */
	guest_mib(&f, 700);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(p.nodes[0], 0);
	assert_int_equal(p.nodes[1], 1);
	assert_int_equal(placed_total(&p), 700 * MIB);
	assert_true(p.node_bytes[0] <= 400 * MIB);
	assert_true(p.node_bytes[1] <= 400 * MIB);

	/* Only when clean memory nowhere suffices does dirty count. */
	f.scrub.nodes[0].dirty_bytes = 300 * MIB;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 2);
	assert_non_null(strstr(p.reason, "scrubbed inline"));
}

static void
test_less_loaded_cpus(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 1024, 1024 };

	(void)state;
	host_init(&f, 2, free_mib);
	f.doms[0].domid = 1;
	f.doms[0].vcpus = 4;
	f.doms[0].nr_nodes = 2;
	f.doms[0].node_bytes[0] = 256 * MIB;
	f.nr_doms = 1;
	guest_mib(&f, 256);
	assert_int_equal(vmb__place(&f.host, &f.scrub, f.doms, f.nr_doms,
	    &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 1);
	assert_non_null(strstr(p.reason, "load"));
}

static void
test_explicit_nodes_spread(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 2048, 2048, 2048 };

	(void)state;
	host_init(&f, 3, free_mib);
	guest_mib(&f, 512);
	f.guest.cpus = (char *)"nodes:1-2";
	f.guest.node_mask = 0x6;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(p.nodes[0], 1);
	assert_int_equal(p.nodes[1], 2);
	assert_int_equal(p.node_bytes[0], 256 * MIB);
	assert_int_equal(p.node_bytes[1], 256 * MIB);
	assert_non_null(strstr(p.reason, "nodes:1-2"));

	/* A node that cannot take half gives what it has. */
	f.scrub.nodes[1].dirty_bytes = 1948 * MIB;	/* 100 MiB clean */
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(p.node_bytes[0], 100 * MIB);
	assert_int_equal(p.node_bytes[1], 412 * MIB);

	/* A node the host does not have. */
	f.guest.node_mask = 0x8;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -EINVAL);
}

static void
test_cpu_list(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 4096, 1024, 1024 };

	(void)state;
	host_init(&f, 3, free_mib);
	guest_mib(&f, 512);
	f.guest.cpus = (char *)"8-9";		/* CPUs of node 2 */
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 2);
	f.guest.cpus = (char *)"99";
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -EINVAL);
}

static void
test_vnuma(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 1024, 1024 };

	(void)state;
	host_init(&f, 2, free_mib);
	guest_mib(&f, 768);
	f.guest.nr_vnodes = 2;
	f.guest.vnodes[0] = (struct vmb_vnode){ .pnode = 1,
	    .size_bytes = 512 * MIB, .vcpus = { 1 } };
	f.guest.vnodes[1] = (struct vmb_vnode){ .pnode = 0,
	    .size_bytes = 256 * MIB, .vcpus = { 2 } };
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(p.nodes[0], 1);
	assert_int_equal(p.node_bytes[0], 512 * MIB);
	assert_int_equal(p.nodes[1], 0);
	assert_int_equal(p.node_bytes[1], 256 * MIB);
	assert_non_null(strstr(p.reason, "vnuma"));

	f.guest.vnodes[0].size_bytes = 1536 * MIB;	/* more than node 1 has */
	guest_mib(&f, 1792);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -ENOMEM);
	f.guest.vnodes[0].size_bytes = 512 * MIB;
	guest_mib(&f, 768);
	f.guest.vnodes[0].pnode = 5;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -EINVAL);
}

static void
test_no_room(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 512, 512 };

	(void)state;
	host_init(&f, 2, free_mib);
	guest_mib(&f, 1100);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -ENOMEM);
	/* Fits in free memory, but not next to outstanding claims. */
	guest_mib(&f, 900);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	f.host.claimed_bytes = 200 * MIB;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p),
	    -ENOMEM);
}

static void
test_large_spread_aligned(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 6144, 6144 };

	(void)state;
	host_init(&f, 2, free_mib);
	guest_mib(&f, 9 * 1024 + 6);	/* needs both nodes */
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(placed_total(&p), (9 * 1024 + 6) * MIB);
	/* The first node's share is whole GiBs: node 1 starts 1 GiB aligned. */
	assert_int_equal(p.node_bytes[0] % GIB, 0);
}

/* Random hosts: whatever is placed adds up and fits. */
static void
test_random_invariants(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[8];
	unsigned seed = 12345;

	(void)state;
	for (int iter = 0; iter < 2000; iter++) {
		uint32_t n = 1 + rand_r(&seed) % 8;
		uint64_t total = 0;
		int rc;

		for (uint32_t i = 0; i < n; i++) {
			free_mib[i] = (uint64_t)(rand_r(&seed) % 4096);
			total += free_mib[i];
		}
		host_init(&f, n, free_mib);
		for (uint32_t i = 0; i < n; i++)
			f.scrub.nodes[i].dirty_bytes = free_mib[i] * MIB *
			    (uint64_t)(rand_r(&seed) % 3) / 2;
		guest_mib(&f, 1 + (uint64_t)rand_r(&seed) % 6000);
		if (rand_r(&seed) % 4 == 0) {
			f.guest.node_mask = (1ull << n) - 1;
			f.guest.cpus = (char *)"nodes:all";
		}
		rc = vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p);
		if (f.guest.memory_bytes > total * MIB) {
			assert_int_equal(rc, -ENOMEM);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(placed_total(&p), f.guest.memory_bytes);
		for (uint32_t i = 0; i < p.nr_nodes; i++) {
			assert_true(p.nodes[i] < n);
			assert_true(p.node_bytes[i] <=
			    f.host.nodes[p.nodes[i]].free_bytes);
			assert_int_equal(p.node_bytes[i] % VMB_PAGE_SIZE, 0);
		}
		assert_true(strlen(p.reason) > 0);
	}
}

/*
 * The boundary of "covers": a node whose clean memory is exactly the
 * guest's size takes the whole guest, clean, and is not passed over for
 * a pair of nodes whose clean memory is larger.  One page more and the
 * pair wins.
 */
static void
test_exact_fit_clean(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 2048, 1024 };

	(void)state;
	host_init(&f, 2, free_mib);
	f.scrub.nodes[0].dirty_bytes = 1536 * MIB;	/* 512 MiB clean */
	f.scrub.nodes[1].dirty_bytes = 724 * MIB;	/* 300 MiB clean */
	assert_int_equal(vmb__clean_bytes(&f.host, &f.scrub, 0), 512 * MIB);
	guest_mib(&f, 512);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 0);
	assert_int_equal(p.node_bytes[0], 512 * MIB);
	assert_non_null(strstr(p.reason, "clean free memory"));

	f.guest.memory_bytes = f.guest.maxmem_bytes = 512 * MIB + VMB_PAGE_SIZE;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(placed_total(&p), 512 * MIB + VMB_PAGE_SIZE);
}

/*
 * The same boundary for free memory, when no node set has enough clean
 * memory: a node whose free memory is exactly the guest's size takes it
 * all, rather than a pair of nodes.
 */
static void
test_exact_fit_free(void **state)
{
	struct fixture f;
	struct vmb_placement p;
	uint64_t free_mib[] = { 512, 300 };

	(void)state;
	host_init(&f, 2, free_mib);
	f.scrub.nodes[0].dirty_bytes = 512 * MIB;	/* all dirty */
	f.scrub.nodes[1].dirty_bytes = 300 * MIB;
	guest_mib(&f, 512);
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 1);
	assert_int_equal(p.nodes[0], 0);
	assert_int_equal(p.node_bytes[0], 512 * MIB);
	assert_non_null(strstr(p.reason, "no node set has enough clean"));

	f.guest.memory_bytes = f.guest.maxmem_bytes = 512 * MIB + VMB_PAGE_SIZE;
	assert_int_equal(vmb__place(&f.host, &f.scrub, NULL, 0, &f.guest, &p), 0);
	assert_int_equal(p.nr_nodes, 2);
	assert_int_equal(placed_total(&p), 512 * MIB + VMB_PAGE_SIZE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefers_clean_node),
		cmocka_unit_test(test_prefers_fewer_nodes),
		cmocka_unit_test(test_clean_pair_beats_dirty_single),
		cmocka_unit_test(test_less_loaded_cpus),
		cmocka_unit_test(test_explicit_nodes_spread),
		cmocka_unit_test(test_cpu_list),
		cmocka_unit_test(test_vnuma),
		cmocka_unit_test(test_no_room),
		cmocka_unit_test(test_large_spread_aligned),
		cmocka_unit_test(test_random_invariants),
		cmocka_unit_test(test_clean_two_reads),
		cmocka_unit_test(test_exact_fit_clean),
		cmocka_unit_test(test_exact_fit_free),
	};

	return cmocka_run_group_tests_name("placement", tests, NULL, NULL);
}
