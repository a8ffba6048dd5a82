/*
 * test_layout.c - the guest-physical layout (layout.c) around every
 * boundary: RAM below the MMIO hole [0xfc000000, 4 GiB), the rest from
 * 4 GiB; node and vnode ranges split at the hole; the extents the
 * populate engine makes of them; the memory map with the firmware's
 * regions; the NUMA view a guest is given.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vmb_internal.h"

#define MIB	(1ull << 20)
#define GIB	(1ull << 30)
#define HOLE	VMB_MMIO_HOLE_START
#define LAPIC	0xfee00000ull

static void
one_node(struct vmb_placement *pl, struct vmb_guest *g, uint64_t bytes)
{
	memset(pl, 0, sizeof(*pl));
	memset(g, 0, sizeof(*g));
	pl->nr_nodes = 1;
	pl->node_bytes[0] = bytes;
	g->memory_bytes = g->maxmem_bytes = bytes;
	g->vcpus = g->maxvcpus = 2;
}

/* Every range: RAM outside the hole, in order, adding up to the guest. */
static void
check_ranges(const struct vmb_layout *l, uint64_t bytes)
{
	uint64_t sum = 0, prev_end = 0;

	for (uint32_t i = 0; i < l->nr_ranges; i++) {
		uint64_t a = l->ranges[i].gfn << 12;
		uint64_t e = a + (l->ranges[i].pages << 12);

		assert_true(l->ranges[i].pages > 0);
		assert_true(a >= prev_end);
		/* Never over the hole: no RAM on the LAPIC or special pages. */
		assert_false(a < VMB_4GIB && e > HOLE);
		assert_false(a <= LAPIC && LAPIC < e);
		sum += e - a;
		prev_end = e;
	}
	assert_int_equal(sum, bytes);
	assert_true(l->lowmem_end <= HOLE);
	if (bytes > HOLE) {
		assert_int_equal(l->lowmem_end, HOLE);
		assert_int_equal(l->highmem_end, VMB_4GIB + bytes - HOLE);
	} else {
		assert_int_equal(l->lowmem_end, bytes);
		assert_int_equal(l->highmem_end, 0);
	}
}

/* Sizes around each boundary, the 4079 MiB of the issue among them. */
static void
test_boundaries(void **state)
{
	static const uint64_t sizes[] = {
		2 * MIB, 1 * GIB, 3 * GIB, 4031 * MIB, 4032 * MIB,
		4032 * MIB + 4096, 4033 * MIB, 4079 * MIB, 4095 * MIB,
		4096 * MIB, 4097 * MIB, 4608 * MIB, 5 * GIB - 64 * MIB,
		64 * GIB, 135000 * MIB, 16ull << 40,
	};
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one_node(&pl, &g, sizes[i]);
		assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
		check_ranges(&l, sizes[i]);
		assert_int_equal(l.nr_ranges, sizes[i] > HOLE ? 2 : 1);
		assert_int_equal(l.nr_vnodes, 0);
	}
	/* 4079 MiB: 4032 below, 47 MiB at 4 GiB, none at 0xfee00000. */
	one_node(&pl, &g, 4079 * MIB);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.ranges[0].pages << 12, 4032 * MIB);
	assert_int_equal(l.ranges[1].gfn << 12, VMB_4GIB);
	assert_int_equal(l.ranges[1].pages << 12, 47 * MIB);
}

/* The extents the engine makes: 1 GiB where aligned, 2 MiB, 4 KiB. */
static void
test_extents(void **state)
{
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;
	size_t n1g = 0, n2m = 0, n4k = 0;

	(void)state;
	one_node(&pl, &g, 4608 * MIB);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	for (uint32_t r = 0; r < l.nr_ranges; r++) {
		size_t n = vmb__split_extents(l.ranges[r].gfn,
		    l.ranges[r].pages, 0, NULL, 0);
		struct vmb_extent *e = calloc(n, sizeof(*e));

		assert_non_null(e);
		vmb__split_extents(l.ranges[r].gfn, l.ranges[r].pages, 0, e, n);
		for (size_t k = 0; k < n; k++) {
			n1g += e[k].order == VMB_EXT_ORDER_1G;
			n2m += e[k].order == VMB_EXT_ORDER_2M;
			n4k += e[k].order == 0;
		}
		free(e);
	}
	/* [0, 4032M): 3 x 1G + 480 x 2M; [4G, 4G+576M): 288 x 2M. */
	assert_int_equal(n1g, 3);
	assert_int_equal(n2m, 480 + 288);
	assert_int_equal(n4k, 0);

	/* 8 GiB + 64 MiB: the high part starts 1 GiB aligned at 4 GiB. */
	one_node(&pl, &g, 8 * GIB + 64 * MIB);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(vmb__split_extents(l.ranges[1].gfn, l.ranges[1].pages,
	    0, NULL, 0), 4 + 64);	/* 4 x 1G, then 128 MiB as 2M */
}

/* Two placed nodes: the one crossing the hole is split, a vnode each. */
static void
test_two_nodes(void **state)
{
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;

	(void)state;
	memset(&pl, 0, sizeof(pl));
	memset(&g, 0, sizeof(g));
	pl.nr_nodes = 2;
	pl.nodes[0] = 1;
	pl.node_bytes[0] = 5 * GIB;
	pl.nodes[1] = 0;
	pl.node_bytes[1] = 3 * GIB;
	g.memory_bytes = g.maxmem_bytes = 8 * GIB;
	g.vcpus = 3;
	g.maxvcpus = 4;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	check_ranges(&l, 8 * GIB);
	assert_int_equal(l.nr_ranges, 3);
	assert_int_equal(l.ranges[0].node, 1);
	assert_int_equal(l.ranges[1].node, 1);
	assert_int_equal(l.ranges[1].gfn << 12, VMB_4GIB);
	assert_int_equal(l.ranges[2].node, 0);
	assert_int_equal(l.ranges[2].gfn << 12, 5 * GIB + 64 * MIB);
	assert_int_equal(l.nr_vnodes, 2);
	assert_int_equal(l.vnode_pnode[0], 1);
	assert_int_equal(l.vnode_pnode[1], 0);
	assert_int_equal(l.ranges[1].vnode, 0);
	assert_int_equal(l.ranges[2].vnode, 1);
	assert_int_equal(l.vdistance[0][0], 10);
	assert_int_equal(l.vdistance[0][1], 20);
	/* maxvcpus 4 in two equal blocks. */
	assert_int_equal(l.nr_vcpus, 4);
	assert_int_equal(l.vcpu_vnode[0], 0);
	assert_int_equal(l.vcpu_vnode[1], 0);
	assert_int_equal(l.vcpu_vnode[2], 1);
	assert_int_equal(l.vcpu_vnode[3], 1);
	/* Placement that does not add up to the guest is refused. */
	g.memory_bytes = 9 * GIB;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
}

/* vnuma= as written: vnode 0 crosses the hole, distances kept. */
static void
test_vnuma(void **state)
{
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;

	(void)state;
	memset(&pl, 0, sizeof(pl));
	memset(&g, 0, sizeof(g));
	g.memory_bytes = g.maxmem_bytes = 4608 * MIB;
	g.vcpus = g.maxvcpus = 2;
	g.nr_vnodes = 2;
	g.vnodes[0] = (struct vmb_vnode){ .pnode = 0, .size_bytes = 4096 * MIB,
	    .vcpus = { 1 }, .distances = { 10, 21 } };
	g.vnodes[1] = (struct vmb_vnode){ .pnode = 1, .size_bytes = 512 * MIB,
	    .vcpus = { 2 } };
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	check_ranges(&l, 4608 * MIB);
	assert_int_equal(l.nr_ranges, 3);
	assert_int_equal(l.ranges[0].vnode, 0);
	assert_int_equal(l.ranges[1].vnode, 0);
	assert_int_equal(l.ranges[1].pages << 12, 64 * MIB);
	assert_int_equal(l.ranges[2].vnode, 1);
	assert_int_equal(l.ranges[2].node, 1);
	assert_int_equal(l.ranges[2].gfn << 12, VMB_4GIB + 64 * MIB);
	assert_int_equal(l.vdistance[0][1], 21);
	assert_int_equal(l.vdistance[1][0], 20);	/* not given: default */
	assert_int_equal(l.vcpu_vnode[0], 0);
	assert_int_equal(l.vcpu_vnode[1], 1);
	/* vmb__layout: the ranges only, the same. */
	struct vmb__range r[VMB_MAX_RANGES];
	assert_int_equal(vmb__layout(&g, &pl, r), 3);
	assert_int_equal(r[2].gfn, l.ranges[2].gfn);
}

/* The memory map: RAM, the firmware's regions, sorted, no overlaps. */
static void
test_memmap(void **state)
{
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;
	struct vmb_firmware fw;
	struct vmb_memmap_entry m[VMB_MEMMAP_MAX];

	(void)state;
	one_node(&pl, &g, 4608 * MIB);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	memset(&fw, 0, sizeof(fw));
	fw.regions[0] = (struct vmb_memmap_entry){ 0xfeff8000, 0x8000,
	    VMB_E820_RESERVED };
	fw.regions[1] = (struct vmb_memmap_entry){ HOLE, 0x2000,
	    VMB_E820_ACPI };
	fw.nr_regions = 2;
	assert_int_equal(vmb__memmap(&l, &fw, m, VMB_MEMMAP_MAX), 4);
	assert_int_equal(m[0].addr, 0);
	assert_int_equal(m[0].size, HOLE);
	assert_int_equal(m[0].type, VMB_E820_RAM);
	assert_int_equal(m[1].addr, HOLE);
	assert_int_equal(m[1].type, VMB_E820_ACPI);
	assert_int_equal(m[2].addr, 0xfeff8000);
	assert_int_equal(m[2].type, VMB_E820_RESERVED);
	assert_int_equal(m[3].addr, VMB_4GIB);
	assert_int_equal(m[3].size, 576 * MIB);
	/* Without firmware: RAM only. */
	assert_int_equal(vmb__memmap(&l, NULL, m, VMB_MEMMAP_MAX), 2);
	/* A region over RAM is refused, so is a map too large. */
	fw.regions[1].addr = HOLE - 4096;
	assert_int_equal(vmb__memmap(&l, &fw, m, VMB_MEMMAP_MAX), -EINVAL);
	fw.regions[1].addr = HOLE;
	assert_int_equal(vmb__memmap(&l, &fw, m, 3), -EINVAL);
}

/*
 * An HVM guest (libxl's meminit_hvm): RAM from 0 up to the VGA hole,
 * from its end up to the MMIO hole at 4 GiB less mmio_hole (default
 * 0xf0000000), the rest from 4 GiB; the VGA hole's 32 pages are not
 * populated.  Checks every range against the holes and the totals.
 */
static void
check_hvm(const struct vmb_layout *l, uint64_t bytes, uint64_t hole)
{
	uint64_t sum = 0, prev_end = 0;

	assert_true(l->hvm);
	assert_int_equal(l->hole_start, hole);
	for (uint32_t i = 0; i < l->nr_ranges; i++) {
		uint64_t a = l->ranges[i].gfn << 12;
		uint64_t e = a + (l->ranges[i].pages << 12);

		assert_true(l->ranges[i].pages > 0);
		assert_true(a >= prev_end);
		assert_false(a < VMB_VGA_HOLE_END && e > VMB_VGA_HOLE_START);
		assert_false(a < VMB_4GIB && e > hole);
		sum += e - a;
		prev_end = e;
	}
	assert_int_equal(sum, bytes - (VMB_VGA_HOLE_END - VMB_VGA_HOLE_START));
	assert_int_equal(l->populated, sum);
	assert_int_equal(l->lowmem_end, bytes < hole ? bytes : hole);
	assert_int_equal(l->highmem_end, bytes > hole ? VMB_4GIB + bytes -
	    hole : 0);
}

/* An HVM guest without a card: its layout's holes alone. */
static void
hvm_no_vga(struct vmb_guest *g)
{
	g->type = VMB_GUEST_HVM;
	snprintf(g->hvm.vga, sizeof(g->hvm.vga), "none");
}

static void
test_hvm(void **state)
{
	static const uint64_t mmio[] = { 0, 256 * MIB, 1 * GIB, 3840 * MIB };
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;

	(void)state;
	for (size_t m = 0; m < sizeof(mmio) / sizeof(mmio[0]); m++) {
		uint64_t hole = VMB_4GIB - (mmio[m] ? mmio[m] : 256 * MIB);
		/* Below, at and above the hole's start, by a page and more. */
		const uint64_t sizes[] = { 4 * MIB, hole - 4096, hole,
		    hole + 4096, hole + 2 * GIB };

		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			one_node(&pl, &g, sizes[i]);
			hvm_no_vga(&g);
			g.hvm.mmio_hole_bytes = mmio[m];
			assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
			check_hvm(&l, sizes[i], hole);
			/* [0, VGA), [VGA end, ...) and, past the hole, 4 GiB. */
			assert_int_equal(l.nr_ranges, sizes[i] > hole ? 3 : 2);
			assert_int_equal(l.ranges[0].pages << 12,
			    VMB_VGA_HOLE_START);
			assert_int_equal(l.ranges[1].gfn << 12,
			    VMB_VGA_HOLE_END);
		}
	}
	/* Default: 0xf0000000, as libxl's HVM_BELOW_4G_MMIO_START. */
	one_node(&pl, &g, 8 * GIB);
	hvm_no_vga(&g);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 0xf0000000ull);
	assert_int_equal(l.highmem_end, VMB_4GIB + 8 * GIB - 0xf0000000ull);
	/* Two nodes: node 0 holds the VGA hole, node 1 the rest. */
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 2;
	pl.nodes[1] = 1;
	pl.node_bytes[0] = pl.node_bytes[1] = 2 * GIB;
	g.memory_bytes = g.maxmem_bytes = 4 * GIB;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	check_hvm(&l, 4 * GIB, 0xf0000000ull);
	assert_int_equal(l.ranges[1].node, 0);
	assert_int_equal(l.ranges[2].node, 1);
	assert_int_equal(l.ranges[2].gfn << 12, 2 * GIB);
	assert_int_equal(l.nr_vnodes, 2);
	/* Bad values refused: a hole too small, too big, not whole MiB. */
	one_node(&pl, &g, 1 * GIB);
	hvm_no_vga(&g);
	g.hvm.mmio_hole_bytes = 128 * MIB;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
	g.hvm.mmio_hole_bytes = 3841 * MIB;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
	g.hvm.mmio_hole_bytes = 512 * MIB + 4096;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
	/* No memory past the VGA hole: nothing to boot. */
	one_node(&pl, &g, VMB_VGA_HOLE_END);
	hvm_no_vga(&g);
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
}

/*
 * The card's video RAM comes out of memory=, from the first node (or
 * vnode), as libxl's mem_size = max_memkb - video_memkb: the device
 * model populates it beyond the RAM.  cirrus 8 MiB, stdvga 16, or
 * videoram=; none without a card.
 */
static void
test_hvm_vram(void **state)
{
	struct vmb_placement pl;
	struct vmb_guest g;
	struct vmb_layout l;

	(void)state;
	one_node(&pl, &g, 512 * MIB);
	g.type = VMB_GUEST_HVM;
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "cirrus");
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 504 * MIB);
	assert_int_equal(vmb__layout_ram(&l), 504 * MIB);
	assert_int_equal(l.populated, 504 * MIB - 0x20000);
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "stdvga");
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 496 * MIB);
	g.hvm.videoram_mib = 32;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 480 * MIB);
	/* Past the hole: the high part is what is left. */
	one_node(&pl, &g, 8 * GIB);
	g.type = VMB_GUEST_HVM;
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "cirrus");
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 0xf0000000ull);
	assert_int_equal(l.highmem_end, VMB_4GIB + 8 * GIB - 8 * MIB -
	    0xf0000000ull);
	/* Two nodes: node 0 gives it, node 1 keeps all of its share. */
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 2;
	pl.nodes[1] = 1;
	pl.node_bytes[0] = pl.node_bytes[1] = 1 * GIB;
	g.memory_bytes = g.maxmem_bytes = 2 * GIB;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 2 * GIB - 8 * MIB);
	assert_int_equal(l.ranges[2].gfn << 12, 1 * GIB - 8 * MIB);
	assert_int_equal(l.ranges[2].pages << 12, 1 * GIB);
	assert_int_equal(l.ranges[2].node, 1);
	/* vNUMA: vnode 0 gives it. */
	one_node(&pl, &g, 2 * GIB);
	g.type = VMB_GUEST_HVM;
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "cirrus");
	g.nr_vnodes = 2;
	g.vnodes[0].size_bytes = g.vnodes[1].size_bytes = 1 * GIB;
	g.vnodes[1].pnode = 1;
	g.vnodes[0].vcpus[0] = 1;
	g.vnodes[1].vcpus[0] = 2;
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(l.lowmem_end, 2 * GIB - 8 * MIB);
	assert_int_equal(l.ranges[l.nr_ranges - 1].pages << 12, 1 * GIB);
	assert_int_equal(l.ranges[l.nr_ranges - 1].vnode, 1);
	/* Nothing left beside the card: refused. */
	one_node(&pl, &g, 8 * MIB);
	g.type = VMB_GUEST_HVM;
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "cirrus");
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), -EINVAL);
	/* A PVH guest has no card: all of memory= is RAM. */
	one_node(&pl, &g, 512 * MIB);
	snprintf(g.hvm.vga, sizeof(g.hvm.vga), "cirrus");
	assert_int_equal(vmb__layout_plan(&g, &pl, &l), 0);
	assert_int_equal(vmb__layout_ram(&l), 512 * MIB);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_boundaries),
		cmocka_unit_test(test_extents),
		cmocka_unit_test(test_two_nodes),
		cmocka_unit_test(test_vnuma),
		cmocka_unit_test(test_memmap),
		cmocka_unit_test(test_hvm),
		cmocka_unit_test(test_hvm_vram),
	};

	return cmocka_run_group_tests_name("layout", tests, NULL, NULL);
}
