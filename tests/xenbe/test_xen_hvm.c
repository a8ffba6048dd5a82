/*
 * test_xen_hvm.c - what the xen backend gives an HVM guest's hvmloader
 * beyond a PVH guest's (xen_hvm.c), from layouts the build plans
 * (layout.c):
 *
 *   - the memory map Xen hands hvmloader: RAM only, low RAM from 1 MiB
 *     (libxl's domain_construct_memmap), the high part above 4 GiB when
 *     memory= reaches the MMIO hole (at 4 GiB less mmio_hole);
 *   - the hvm_info_table at HVM_INFO_PFN: read back as hvmloader reads
 *     it (signature, length, a byte sum of 0), RAM ends matching the
 *     layout's, vCPUs and the online bitmap, the reserved region at the
 *     ioreq server pages;
 *   - the HVM parameters of libxl's hvm_set_conf_params and
 *     hvm_set_viridian_features, in its order, for HVM and PVH; the
 *     RTC's offset.
 *
 * The table is read at the offsets of Xen's public header's layout
 * (hvm_info_table.h), not through the builder's struct.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xen_priv.h"
#include "vmb_internal.h"

#include <xen/hvm/hvm_info_table.h>
#include <xen/hvm/params.h>

#define MIB	(1ull << 20)
#define GIB	(1ull << 30)

static void
hvm_guest(struct vmb_guest *g, struct vmb_placement *pl, uint64_t bytes,
    uint64_t mmio_hole)
{
	memset(g, 0, sizeof(*g));
	memset(pl, 0, sizeof(*pl));
	g->type = VMB_GUEST_HVM;
	g->memory_bytes = g->maxmem_bytes = bytes;
	g->vcpus = g->maxvcpus = 2;
	g->hvm.mmio_hole_bytes = mmio_hole;
	g->hvm.hpet = true;
	snprintf(g->hvm.vga, sizeof(g->hvm.vga), "cirrus");
	pl->nr_nodes = 1;
	pl->node_bytes[0] = bytes;
}

/* The build's memory map of `bytes` of HVM guest, then Xen's of it. */
static int
xen_map_of(uint64_t bytes, uint64_t mmio_hole, struct vmb_layout *l,
    struct e820entry *e, uint64_t *low, uint64_t *high)
{
	struct vmb_memmap_entry m[VMB_MEMMAP_MAX];
	struct vmb_placement pl;
	struct vmb_guest g;
	int n;

	hvm_guest(&g, &pl, bytes, mmio_hole);
	assert_int_equal(vmb__layout_plan(&g, &pl, l), 0);
	n = vmb__memmap(l, NULL, m, VMB_MEMMAP_MAX);
	assert_true(n > 0);
	return xen_hvm_memmap(m, (uint32_t)n, e, VMB_MEMMAP_MAX, low, high);
}

static void
test_memmap(void **state)
{
	struct e820entry e[VMB_MEMMAP_MAX];
	struct vmb_layout l;
	uint64_t low, high;

	(void)state;
	/*
	 * Below the hole: one RAM entry, [1 MiB, memory less the cirrus
	 * card's 8 MiB of VRAM), as libxl lays out xl's guest.
	 */
	assert_int_equal(xen_map_of(512 * MIB, 0, &l, e, &low, &high), 1);
	assert_int_equal(e[0].addr, MIB);
	assert_int_equal(e[0].size, 503 * MIB);
	assert_int_equal(e[0].type, VMB_E820_RAM);
	assert_int_equal(low, 504 * MIB);
	assert_int_equal(high, 0);
	assert_int_equal(low, l.lowmem_end);

	/* 6 GiB, default hole at 0xf0000000: the rest relocated above 4 GiB. */
	assert_int_equal(xen_map_of(6 * GIB, 0, &l, e, &low, &high), 2);
	assert_int_equal(e[0].addr, MIB);
	assert_int_equal(e[0].addr + e[0].size, 0xf0000000ull);
	assert_int_equal(e[1].addr, 4 * GIB);
	assert_int_equal(e[1].size, 6 * GIB - 8 * MIB - 0xf0000000ull);
	assert_int_equal(low, 0xf0000000ull);
	assert_int_equal(high, 4 * GIB + 6 * GIB - 8 * MIB - 0xf0000000ull);
	assert_int_equal(high, l.highmem_end);

	/* mmio_hole = 1024: RAM below 3 GiB only. */
	assert_int_equal(xen_map_of(4 * GIB, GIB, &l, e, &low, &high), 2);
	assert_int_equal(low, 3 * GIB);
	assert_int_equal(e[1].size, GIB - 8 * MIB);

	/* Neither the special pages nor ACPI: hvmloader reserves its own. */
	{
		struct vmb_memmap_entry m[3] = {
			{ 0, 64 * MIB, VMB_E820_RAM },
			{ 0xfc000000ull, 4096, VMB_E820_ACPI },
			{ (uint64_t)XEN_SPECIAL_GFN(0) << 12, 8 << 12,
			  VMB_E820_RESERVED } };

		assert_int_equal(xen_hvm_memmap(m, 3, e, VMB_MEMMAP_MAX, &low,
		    &high), 1);
		assert_int_equal(e[0].addr + e[0].size, 64 * MIB);
		/* No RAM above 1 MiB for hvmloader: refused. */
		m[0].size = MIB;
		assert_int_equal(xen_hvm_memmap(m, 3, e, VMB_MEMMAP_MAX, &low,
		    &high), -EINVAL);
		m[0].size = 64 * MIB;
		assert_int_equal(xen_hvm_memmap(m, 1, e, 0, &low, &high),
		    -E2BIG);
	}
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static void
test_hvm_info(void **state)
{
	static uint8_t page[4096];
	const uint8_t *t = page + 0x800;	/* HVM_INFO_OFFSET */
	struct xen_hvm_info hi = { .lowmem_end = 0xf0000000ull,
	    .highmem_end = 4 * GIB + 2 * GIB, .nr_vcpus = 12, .online = 10 };
	size_t len = sizeof(struct hvm_info_table);
	uint8_t sum = 0;

	(void)state;
	memset(page, 0xaa, sizeof(page));	/* the page was RAM */
	xen_hvm_info_fill(&hi, page);
	assert_int_equal(HVM_INFO_OFFSET, 0x800);
	assert_int_equal(HVM_INFO_PFN, 0x9f);
	assert_memory_equal(t, "HVM INFO", 8);
	assert_int_equal(get32(t + 8), len);		/* length */
	for (size_t i = 0; i < len; i++)
		sum += t[i];
	assert_int_equal(sum, 0);			/* checksum at 12 */
	assert_int_equal(t[13], 1);			/* apic_mode */
	assert_int_equal(get32(t + 16), 12);		/* nr_vcpus */
	/* low_mem_pgend, reserved_mem_pgstart, high_mem_pgend. */
	assert_int_equal(get32(t + 20), 0xf0000);
	assert_int_equal(get32(t + 24), XEN_SPECIAL_GFN(0) - 8);
	assert_int_equal(get32(t + 24), 0xfeff0);
	assert_int_equal(get32(t + 28), 0x180000);
	/* vcpu_online: vCPUs 0-9 of 12. */
	assert_int_equal(t[32], 0xff);
	assert_int_equal(t[33], 0x03);
	for (size_t i = 34; i < 32 + HVM_MAX_VCPUS / 8; i++)
		assert_int_equal(t[i], 0);
	/* The rest of the page cleared, as libxenguest's. */
	for (size_t i = 0; i < sizeof(page); i++)
		if (i < 0x800 || i >= 0x800 + len)
			assert_int_equal(page[i], 0);

	/* A guest below 4 GiB: no high RAM. */
	hi.highmem_end = 0;
	hi.lowmem_end = 512 * MIB;
	hi.nr_vcpus = hi.online = 1;
	xen_hvm_info_fill(&hi, page);
	assert_int_equal(get32(t + 20), 0x20000);
	assert_int_equal(get32(t + 28), 0);
	assert_int_equal(t[32], 0x01);
	assert_int_equal(t[33], 0);
	for (size_t i = 0, s = 0; i <= len; i++) {
		if (i == len)
			assert_int_equal(s & 0xff, 0);
		else
			s += t[i];
	}
}

static void
test_params(void **state)
{
	struct xen_hvm_setting p[XEN_HVM_MAX_PARAMS];
	struct vmb_placement pl;
	struct vmb_guest g;
	size_t n;

	(void)state;
	hvm_guest(&g, &pl, 512 * MIB, 0);
	g.timer_mode = VMB_TIMER_DELAY_FOR_MISSED_TICKS;
	n = xen_hvm_params(&g, p);
	assert_int_equal(n, 4);
	assert_int_equal(p[0].index, HVM_PARAM_HPET_ENABLED);
	assert_int_equal(p[0].value, 1);
	assert_int_equal(p[1].index, HVM_PARAM_VPT_ALIGN);
	assert_int_equal(p[1].value, 1);
	assert_int_equal(p[2].index, HVM_PARAM_TIMER_MODE);
	assert_int_equal(p[2].value, HVMPTM_delay_for_missed_ticks);
	assert_int_equal(p[3].index, HVM_PARAM_ALTP2M);
	assert_int_equal(p[3].value, 0);

	/* hpet = 0, viridian = 1: xl's default groups, frequency MSRs on. */
	g.hvm.hpet = false;
	g.hvm.viridian = true;
	n = xen_hvm_params(&g, p);
	assert_int_equal(n, 5);
	assert_int_equal(p[0].value, 0);
	assert_int_equal(p[4].index, HVM_PARAM_VIRIDIAN);
	assert_int_equal(p[4].value, HVMPV_base_freq | HVMPV_time_ref_count |
	    HVMPV_apic_assist | HVMPV_crash_ctl | HVMPV_no_vp_limit |
	    HVMPV_cpu_hotplug);
	assert_int_equal(p[4].value & HVMPV_no_freq, 0);
	assert_int_equal(p[4].value & ~(uint64_t)HVMPV_feature_mask, 0);

	/* PVH: the timer mode and altp2m only, whatever the HVM keys say. */
	g.type = VMB_GUEST_PVH;
	g.timer_mode = VMB_TIMER_NO_DELAY_FOR_MISSED_TICKS;
	n = xen_hvm_params(&g, p);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].index, HVM_PARAM_TIMER_MODE);
	assert_int_equal(p[0].value, HVMPTM_no_delay_for_missed_ticks);
	assert_int_equal(p[1].index, HVM_PARAM_ALTP2M);

	/* The RTC: rtc_timeoffset, plus the host's offset with localtime. */
	assert_int_equal(xen_hvm_time_offset(&g, 3600), 0);
	g.type = VMB_GUEST_HVM;
	assert_int_equal(xen_hvm_time_offset(&g, 3600), 0);
	g.hvm.rtc_timeoffset = 100;
	assert_int_equal(xen_hvm_time_offset(&g, 3600), 100);
	g.hvm.localtime = true;
	assert_int_equal(xen_hvm_time_offset(&g, 3600), 3700);
	assert_int_equal(xen_hvm_time_offset(&g, -7200), -7100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memmap),
		cmocka_unit_test(test_hvm_info),
		cmocka_unit_test(test_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
