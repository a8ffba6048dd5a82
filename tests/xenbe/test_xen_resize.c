/*
 * test_xen_resize.c - a running domain's memory and vCPUs on Xen
 * (xen_resize.c), against the in-memory xenstore (fake_xs.c) and fakes
 * of the libxenctrl calls (-Wl,--wrap, build.mk): what xl mem-set,
 * mem-max, vcpu-set, vcpu-pin and vcpu-list leave, as libxl does them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_xs.h"
#include "xen_priv.h"

int __wrap_xc_domain_setmaxmem(xc_interface *xch, uint32_t domid,
    uint64_t max_memkb);
int __wrap_xc_get_cpumap_size(xc_interface *xch);
xc_cpumap_t __wrap_xc_cpumap_alloc(xc_interface *xch);
int __wrap_xc_vcpu_setaffinity(xc_interface *xch, uint32_t domid, int vcpu,
    xc_cpumap_t hard, xc_cpumap_t soft, uint32_t flags);
int __wrap_xc_vcpu_getaffinity(xc_interface *xch, uint32_t domid, int vcpu,
    xc_cpumap_t hard, xc_cpumap_t soft, uint32_t flags);
int __wrap_xc_vcpu_getinfo(xc_interface *xch, uint32_t domid, uint32_t vcpu,
    xc_vcpuinfo_t *info);

#define MAP_BYTES	2	/* a host of 16 CPUs */

static struct {
	uint32_t domid;
	uint64_t maxmem_kb;
	int	maxmem_errno;
	uint8_t	hard[8][MAP_BYTES], soft[8][MAP_BYTES];
	uint32_t set_flags[8];
	unsigned nr_set;
} xc;

int
__wrap_xc_domain_setmaxmem(xc_interface *xch, uint32_t domid,
    uint64_t max_memkb)
{
	(void)xch;
	if (xc.maxmem_errno) {
		errno = xc.maxmem_errno;
		return -1;
	}
	xc.domid = domid;
	xc.maxmem_kb = max_memkb;
	return 0;
}

int
__wrap_xc_get_cpumap_size(xc_interface *xch)
{
	(void)xch;
	return MAP_BYTES;
}

xc_cpumap_t
__wrap_xc_cpumap_alloc(xc_interface *xch)
{
	(void)xch;
	return calloc(1, MAP_BYTES);
}

int
__wrap_xc_vcpu_setaffinity(xc_interface *xch, uint32_t domid, int vcpu,
    xc_cpumap_t hard, xc_cpumap_t soft, uint32_t flags)
{
	(void)xch;
	if (vcpu < 0 || vcpu >= 8) {
		errno = EINVAL;
		return -1;
	}
	xc.domid = domid;
	xc.set_flags[vcpu] = flags;
	xc.nr_set++;
	if (flags & XEN_VCPUAFFINITY_HARD)
		memcpy(xc.hard[vcpu], hard, MAP_BYTES);
	if (flags & XEN_VCPUAFFINITY_SOFT)
		memcpy(xc.soft[vcpu], soft, MAP_BYTES);
	return 0;
}

int
__wrap_xc_vcpu_getaffinity(xc_interface *xch, uint32_t domid, int vcpu,
    xc_cpumap_t hard, xc_cpumap_t soft, uint32_t flags)
{
	(void)xch, (void)domid;
	assert_int_equal(flags, XEN_VCPUAFFINITY_HARD | XEN_VCPUAFFINITY_SOFT);
	memcpy(hard, xc.hard[vcpu], MAP_BYTES);
	memcpy(soft, xc.soft[vcpu], MAP_BYTES);
	return 0;
}

int
__wrap_xc_vcpu_getinfo(xc_interface *xch, uint32_t domid, uint32_t vcpu,
    xc_vcpuinfo_t *info)
{
	(void)xch, (void)domid;
	if (vcpu >= 4) {
		errno = ESRCH;
		return -1;
	}
	memset(info, 0, sizeof(*info));
	info->vcpu = vcpu;
	info->online = vcpu < 2;
	info->running = vcpu == 0;
	info->blocked = vcpu == 1;
	info->cpu = vcpu + 5;
	info->cpu_time = 1000000000ull * (vcpu + 1);
	return 0;
}

static struct xen_be be;

static int
setup(void **state)
{
	(void)state;
	fake_xs_reset();
	memset(&xc, 0, sizeof(xc));
	memset(&be, 0, sizeof(be));
	be.xsh = (struct xs_handle *)&fake_xs;	/* never dereferenced */
	pthread_mutex_init(&be.xs_lock, NULL);
	fake_xs_set("/local/domain/3/memory/target", "262144");
	fake_xs_set("/local/domain/3/memory/static-max", "524288");
	return 0;
}

/* mem-set: the domain's max, then memory/target in KiB. */
static void
test_mem_target(void **state)
{
	(void)state;
	/* What vmb_domain_set_target asks: (target + 1 MiB) in pages. */
	assert_int_equal(xen_max_mem(&be, 3, (393216 + 1024) / 4), 0);
	assert_int_equal(xc.domid, 3);
	assert_int_equal(xc.maxmem_kb, 393216 + 1024);
	assert_int_equal(xen_mem_note(&be, 3, false, 393216), 0);
	assert_string_equal(fake_xs_val("/local/domain/3/memory/target"),
	    "393216");
	assert_string_equal(fake_xs_val("/local/domain/3/memory/static-max"),
	    "524288");
	/* mem-max: memory/static-max. */
	assert_int_equal(xen_mem_note(&be, 3, true, 786432), 0);
	assert_string_equal(fake_xs_val("/local/domain/3/memory/static-max"),
	    "786432");
	/* Xen refuses: the error comes back. */
	xc.maxmem_errno = EPERM;
	assert_int_equal(xen_max_mem(&be, 3, 1024), -EPERM);
}

/* vcpu-set: cpu/N/availability for every vCPU up to maxvcpus. */
static void
test_vcpu_online(void **state)
{
	(void)state;
	assert_int_equal(xen_vcpu_online(&be, 3, 4, 3), 0);
	assert_string_equal(fake_xs_val("/local/domain/3/cpu/0/availability"),
	    "online");
	assert_string_equal(fake_xs_val("/local/domain/3/cpu/2/availability"),
	    "online");
	assert_string_equal(fake_xs_val("/local/domain/3/cpu/3/availability"),
	    "offline");
	assert_null(fake_xs_lookup("/local/domain/3/cpu/4/availability"));
	assert_int_equal(xen_vcpu_online(&be, 3, 4, 1), 0);
	assert_string_equal(fake_xs_val("/local/domain/3/cpu/1/availability"),
	    "offline");
}

/* vcpu-pin: xc_vcpu_setaffinity with the flags of what was given. */
static void
test_vcpu_affinity(void **state)
{
	uint64_t hard[VMB_MAX_CPUS / 64] = { 0x0f }, soft[VMB_MAX_CPUS / 64] =
	    { 0x300 };

	(void)state;
	assert_int_equal(xen_vcpu_affinity(&be, 3, 1, hard, soft), 0);
	assert_int_equal(xc.set_flags[1], XEN_VCPUAFFINITY_HARD |
	    XEN_VCPUAFFINITY_SOFT);
	assert_int_equal(xc.hard[1][0], 0x0f);
	assert_int_equal(xc.soft[1][1], 0x03);
	/* Soft only: hard is left as it is. */
	assert_int_equal(xen_vcpu_affinity(&be, 3, 2, NULL, soft), 0);
	assert_int_equal(xc.set_flags[2], XEN_VCPUAFFINITY_SOFT);
	assert_int_equal(xen_vcpu_affinity(&be, 3, 9, hard, NULL), -EINVAL);
}

/* vcpu-list: xc_vcpu_getinfo and both affinities read back. */
static void
test_vcpu_info(void **state)
{
	uint64_t hard[VMB_MAX_CPUS / 64] = { 0 }, soft[VMB_MAX_CPUS / 64] =
	    { 0 };
	struct vmb_vcpu_info vi;

	(void)state;
	xc.hard[1][0] = 0x0f;
	xc.soft[1][1] = 0x80;
	memset(&vi, 0, sizeof(vi));
	assert_int_equal(xen_vcpu_info(&be, 3, 1, &vi, hard, soft), 0);
	assert_true(vi.online);
	assert_true(vi.blocked);
	assert_false(vi.running);
	assert_int_equal(vi.cpu, 6);
	assert_int_equal(vi.cpu_time_ns, 2000000000ull);
	assert_int_equal(hard[0], 0x0f);
	assert_int_equal(soft[0], 0x8000);
	memset(&vi, 0, sizeof(vi));
	assert_int_equal(xen_vcpu_info(&be, 3, 3, &vi, hard, soft), 0);
	assert_false(vi.online);
	assert_int_equal(vi.cpu, -1);
	assert_int_equal(xen_vcpu_info(&be, 3, 4, &vi, hard, soft), -ESRCH);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_mem_target, setup),
		cmocka_unit_test_setup(test_vcpu_online, setup),
		cmocka_unit_test_setup(test_vcpu_affinity, setup),
		cmocka_unit_test_setup(test_vcpu_info, setup),
	};

	return cmocka_run_group_tests_name("xen-resize", tests, NULL, NULL);
}
