/*
 * test_vcpu.c - a domain's vCPUs in hvsim (hypervisor/sim/domain.c,
 * HV_OP_DOMAIN_VCPU through server.c's dispatch): online or not, hard
 * and soft affinity, kept per vCPU and read back; checked as Xen checks
 * them (no vCPU at or past max_vcpus, no CPU the host lacks, no empty
 * affinity), the last online vCPU kept online, and following a change
 * of max_vcpus.
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

/* 2 nodes of 3 CPUs: CPUs 0-5. */
#define NR_CPUS		6
#define ALL_CPUS	((1ull << NR_CPUS) - 1)

static struct hv *
host(void)
{
	struct hv_config cfg;
	struct hv *hv = NULL;

	hv_config_defaults(&cfg);
	cfg.nodes = 2;
	cfg.cpus_per_node = 3;
	cfg.threads_per_core = 1;
	cfg.mem_per_node = 32u << 20;
	cfg.backing = HV_BACKING_PHANTOM;
	cfg.scrub_workers = 0;
	cfg.boot_scrub = false;
	cfg.switch_hz = 0;
	cfg.shadow_bg_writes = 0;
	assert_int_equal(hv_init(&hv, &cfg), 0);
	return hv;
}

static hv_domid_t
create(struct hv *hv, uint32_t max_vcpus)
{
	struct hv_domain_create cr = { .flags = HV_DOMF_HVM | HV_DOMF_HAP,
	    .max_vcpus = max_vcpus, .max_pages = 1 << 20 };
	hv_domid_t id;

	assert_int_equal(dom_create(hv, &cr, &id), 0);
	return id;
}

/* One call as a client makes it: through the server's dispatch. */
static int
vcpu_op(struct hv *hv, const struct hv_domain_vcpu *req,
    struct hv_domain_vcpu_reply *rep)
{
	size_t len = 0;
	int fd = -1, rc;

	rc = server_dispatch(hv, HV_OP_DOMAIN_VCPU, req, sizeof(*req), rep,
	    &len, &fd);
	if (rc == 0)
		assert_int_equal(len, sizeof(*rep));
	return rc;
}

static int
get(struct hv *hv, hv_domid_t id, uint32_t vcpu,
    struct hv_domain_vcpu_reply *rep)
{
	struct hv_domain_vcpu req = { .domid = id, .vcpu = vcpu };

	return vcpu_op(hv, &req, rep);
}

static int
set_online(struct hv *hv, hv_domid_t id, uint32_t vcpu, uint32_t online)
{
	struct hv_domain_vcpu req = { .domid = id, .vcpu = vcpu,
	    .set = HV_VCPU_SET_ONLINE, .online = online };
	struct hv_domain_vcpu_reply rep;

	return vcpu_op(hv, &req, &rep);
}

static int
pin(struct hv *hv, hv_domid_t id, uint32_t vcpu, uint64_t hard,
    uint64_t soft)
{
	struct hv_domain_vcpu req = { .domid = id, .vcpu = vcpu };
	struct hv_domain_vcpu_reply rep;

	if (hard) {
		req.set |= HV_VCPU_SET_HARD;
		req.hard[0] = hard;
	}
	if (soft) {
		req.set |= HV_VCPU_SET_SOFT;
		req.soft[0] = soft;
	}
	return vcpu_op(hv, &req, &rep);
}

/* Created: every vCPU online, every CPU of the host in both maps. */
static void
test_vcpu_defaults(void **state)
{
	struct hv *hv = host();
	hv_domid_t id = create(hv, 4);
	struct hv_domain_vcpu_reply rep;

	(void)state;
	for (uint32_t v = 0; v < 4; v++) {
		assert_int_equal(get(hv, id, v, &rep), 0);
		assert_int_equal(rep.online, 1);
		assert_int_equal(rep.nr_online, 4);
		assert_int_equal(rep.hard[0], ALL_CPUS);
		assert_int_equal(rep.soft[0], ALL_CPUS);
		assert_int_equal(rep.hard[1], 0);
	}
	hv_fini(hv);
}

/* Each vCPU keeps its own state; the others stay as they were. */
static void
test_vcpu_per_vcpu_state(void **state)
{
	struct hv *hv = host();
	hv_domid_t id = create(hv, 4);
	struct hv_domain_vcpu_reply rep;

	(void)state;
	assert_int_equal(pin(hv, id, 1, 0x2, 0), 0);
	assert_int_equal(pin(hv, id, 2, 0, 0x30), 0);
	assert_int_equal(set_online(hv, id, 3, 0), 0);
	assert_int_equal(get(hv, id, 1, &rep), 0);
	assert_int_equal(rep.hard[0], 0x2);
	assert_int_equal(rep.soft[0], ALL_CPUS);
	assert_int_equal(get(hv, id, 2, &rep), 0);
	assert_int_equal(rep.hard[0], ALL_CPUS);
	assert_int_equal(rep.soft[0], 0x30);
	assert_int_equal(get(hv, id, 3, &rep), 0);
	assert_int_equal(rep.online, 0);
	assert_int_equal(rep.nr_online, 3);
	assert_int_equal(get(hv, id, 0, &rep), 0);
	assert_int_equal(rep.online, 1);
	assert_int_equal(rep.hard[0], ALL_CPUS);
	/* Online again, counted once. */
	assert_int_equal(set_online(hv, id, 3, 1), 0);
	assert_int_equal(set_online(hv, id, 3, 1), 0);
	assert_int_equal(get(hv, id, 3, &rep), 0);
	assert_int_equal(rep.nr_online, 4);
	hv_fini(hv);
}

/* What Xen refuses, hvsim refuses, changing nothing. */
static void
test_vcpu_refused(void **state)
{
	struct hv *hv = host();
	hv_domid_t id = create(hv, 2);
	struct hv_domain_vcpu req = { .domid = id, .vcpu = 0,
	    .set = HV_VCPU_SET_HARD };
	struct hv_domain_vcpu_reply rep;

	(void)state;
	/* A vCPU past max_vcpus. */
	assert_int_equal(pin(hv, id, 2, 0x1, 0), -EINVAL);
	assert_int_equal(get(hv, id, 2, &rep), -EINVAL);
	/* A CPU the host lacks (6), one far past it, an empty map. */
	assert_int_equal(pin(hv, id, 0, 1ull << NR_CPUS, 0), -EINVAL);
	assert_int_equal(pin(hv, id, 0, 0, 0x1 | 1ull << 63), -EINVAL);
	req.hard[5] = 1;
	assert_int_equal(vcpu_op(hv, &req, &rep), -EINVAL);
	req.hard[5] = 0;
	assert_int_equal(vcpu_op(hv, &req, &rep), -EINVAL);
	/* Unknown bits of `set`, an online that is not 0 or 1. */
	req.set = 1u << 7;
	req.hard[0] = 1;
	assert_int_equal(vcpu_op(hv, &req, &rep), -EINVAL);
	assert_int_equal(set_online(hv, id, 0, 2), -EINVAL);
	/* The last online vCPU stays online. */
	assert_int_equal(set_online(hv, id, 1, 0), 0);
	assert_int_equal(set_online(hv, id, 0, 0), -EBUSY);
	/* No such domain. */
	assert_int_equal(get(hv, 999, 0, &rep), -ESRCH);
	assert_int_equal(get(hv, id, 0, &rep), 0);
	assert_int_equal(rep.online, 1);
	assert_int_equal(rep.hard[0], ALL_CPUS);
	assert_int_equal(rep.soft[0], ALL_CPUS);
	assert_int_equal(dom_destroy(hv, id), 0);
	assert_int_equal(get(hv, id, 0, &rep), -ESRCH);
	hv_fini(hv);
}

/* max_vcpus changed: kept vCPUs keep their state, new ones are fresh. */
static void
test_vcpu_max_vcpus(void **state)
{
	struct hv *hv = host();
	hv_domid_t id = create(hv, 2);
	struct hv_domain_vcpu_reply rep;

	(void)state;
	assert_int_equal(pin(hv, id, 1, 0x4, 0x8), 0);
	assert_int_equal(dom_set(hv, HV_OP_DOMAIN_MAX_VCPUS, id, 3), 0);
	assert_int_equal(get(hv, id, 1, &rep), 0);
	assert_int_equal(rep.hard[0], 0x4);
	assert_int_equal(rep.soft[0], 0x8);
	assert_int_equal(get(hv, id, 2, &rep), 0);
	assert_int_equal(rep.online, 1);
	assert_int_equal(rep.hard[0], ALL_CPUS);
	assert_int_equal(rep.nr_online, 3);
	assert_int_equal(dom_set(hv, HV_OP_DOMAIN_MAX_VCPUS, id, 1), 0);
	assert_int_equal(get(hv, id, 1, &rep), -EINVAL);
	assert_int_equal(get(hv, id, 0, &rep), 0);
	assert_int_equal(rep.nr_online, 1);
	hv_fini(hv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vcpu_defaults),
		cmocka_unit_test(test_vcpu_per_vcpu_state),
		cmocka_unit_test(test_vcpu_refused),
		cmocka_unit_test(test_vcpu_max_vcpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
