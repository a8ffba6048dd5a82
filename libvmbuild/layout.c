/*
 * layout.c - where a guest's RAM lies in its guest-physical address
 * space, which host node backs each part, and which NUMA topology the
 * guest is told.
 *
 * An HVM guest's layout differs in three ways (backend.h): its MMIO hole
 * starts at 4 GiB less mmio_hole, the VGA hole is not populated, and its
 * card's video RAM is carved out of memory= (libxl__build_hvm's mem_size
 * = max_memkb - video_memkb; libxl__vnuma_build_vmemrange_hvm takes it
 * from vnode 0): the device model populates it itself, beyond the RAM.
 *
 * As libxl lays out a PVH guest (libxl__build_hvm in Xen 4.17's
 * libxl_dom.c): the MMIO hole is [VMB_MMIO_HOLE_START, 4 GiB), libxl
 * starting it at the lowest of the ACPI tables (0xfc000000), the LAPIC
 * page (0xfee00000) and the special pages (0xfeff8000), so 64 MiB.  RAM
 * fills [0, hole) and whatever is left goes to [4 GiB, ...).  A node's
 * (or vnode's) part that crosses the hole is split in two, as
 * libxl__vnuma_build_vmemrange_hvm splits vnodes; its second half starts
 * 1 GiB aligned at 4 GiB, so the populate engine still uses 1 GiB
 * extents there (the first half ends 2 MiB aligned, 4032 MiB).
 *
 * One layout for both backends.  hvsim needs no hole (it emulates no
 * LAPIC and has no special pages), but with one layout the plan the
 * engine makes, the extents it populates and the memory map the guest
 * gets are the same on hvsim as on Xen: what the benchmarks measure on
 * hvsim is what a real build does, and the arithmetic is tested once.
 * The hole costs hvsim nothing (its p2m is sparse).
 *
 * vNUMA: a vnuma= guest is told its vnodes as written; a guest without
 * vnuma= that placement spread over several host nodes is told one
 * vnode per node (libxl tells such a guest nothing: it then runs with
 * one node's view of memory that is not there), its vCPUs split into
 * equal consecutive blocks.  Distances not written are 10 locally and
 * 20 otherwise, the values Linux assumes without a SLIT (xl leaves them
 * 0, an invalid SLIT that Linux ignores).
 */
#include <errno.h>
#include <string.h>

#include "vmb_internal.h"

#define DISTANCE_LOCAL		10
#define DISTANCE_REMOTE		20

/*
 * Append `bytes` of node/vnode at *next, split at the MMIO hole; an HVM
 * guest's bytes that fall in the VGA hole are address space only (not
 * populated), as meminit_hvm skips those pages.
 */
static int
add_ram(struct vmb_layout *l, uint64_t *next, uint64_t bytes, uint32_t node,
    uint32_t vnode)
{
	while (bytes > 0) {
		uint64_t count = bytes;

		if (*next >= l->hole_start && *next < VMB_4GIB)
			*next = VMB_4GIB;
		if (l->hvm && *next >= VMB_VGA_HOLE_START &&
		    *next < VMB_VGA_HOLE_END) {
			count = VMB_VGA_HOLE_END - *next;
			count = count < bytes ? count : bytes;
			*next += count;
			bytes -= count;
			continue;
		}
		if (l->hvm && *next < VMB_VGA_HOLE_START &&
		    bytes > VMB_VGA_HOLE_START - *next)
			count = VMB_VGA_HOLE_START - *next;
		else if (*next < l->hole_start && bytes > l->hole_start - *next)
			count = l->hole_start - *next;
		if (l->nr_ranges == VMB_MAX_RANGES)
			return -E2BIG;
		l->ranges[l->nr_ranges++] = (struct vmb__range){
		    .gfn = *next >> VMB_PAGE_SHIFT,
		    .pages = count >> VMB_PAGE_SHIFT, .node = node,
		    .vnode = vnode };
		l->populated += count;
		*next += count;
		bytes -= count;
	}
	return 0;
}

/*
 * Where the MMIO hole starts: libxl's for PVH, and for HVM 4 GiB less
 * mmio_hole (default 256 MiB: 0xf0000000, HVM_BELOW_4G_MMIO_START).
 */
static int
hole_start(const struct vmb_guest *g, uint64_t *ret)
{
	uint64_t size = g->hvm.mmio_hole_bytes ? g->hvm.mmio_hole_bytes :
	    VMB_HVM_MMIO_HOLE_DEFAULT;

	if (g->type != VMB_GUEST_HVM) {
		*ret = VMB_MMIO_HOLE_START;
		return 0;
	}
	if (size < (uint64_t)VMB_HVM_MMIO_HOLE_MIN_MIB * VMB_MIB ||
	    size > (uint64_t)VMB_HVM_MMIO_HOLE_MAX_MIB * VMB_MIB ||
	    size % VMB_MIB)
		return -EINVAL;
	*ret = VMB_4GIB - size;
	return 0;
}

/* The video memory the device model gets (libxl's defaults). */
uint32_t
vmb_hvm_videoram_mib(const struct vmb_guest *g)
{
	if (!strcmp(g->hvm.vga, "none"))
		return 0;
	if (g->hvm.videoram_mib)
		return g->hvm.videoram_mib;
	return !strcmp(g->hvm.vga, "stdvga") ? 16 : 8;
}

/* Bytes of node or vnode 0 less an HVM guest's VRAM (-EINVAL: none left). */
static int
less_vram(const struct vmb_layout *l, uint64_t vram, uint64_t *bytes)
{
	if (!l->hvm || vram == 0)
		return 0;
	if (*bytes <= vram)
		return -EINVAL;
	*bytes -= vram;
	return 0;
}

static void
default_distances(struct vmb_layout *l, uint32_t v)
{
	for (uint32_t j = 0; j < l->nr_vnodes; j++)
		l->vdistance[v][j] = v == j ? DISTANCE_LOCAL : DISTANCE_REMOTE;
}

/* vnuma= as written: vnodes in order, each on its pnode. */
static int
plan_vnuma(const struct vmb_guest *g, uint64_t vram, struct vmb_layout *l,
    uint64_t *next)
{
	int rc;

	l->nr_vnodes = g->nr_vnodes;
	for (uint32_t v = 0; v < g->nr_vnodes; v++) {
		const struct vmb_vnode *vn = &g->vnodes[v];
		uint64_t bytes = vn->size_bytes;
		bool given = false;

		if (bytes % VMB_PAGE_SIZE)
			return -EINVAL;
		rc = v == 0 ? less_vram(l, vram, &bytes) : 0;
		if (rc == 0)
			rc = add_ram(l, next, bytes, vn->pnode, v);
		if (rc)
			return rc;
		l->vnode_pnode[v] = vn->pnode;
		for (uint32_t j = 0; j < g->nr_vnodes; j++)
			given |= vn->distances[j] != 0;
		if (given)
			memcpy(l->vdistance[v], vn->distances,
			    sizeof(l->vdistance[v]));
		else
			default_distances(l, v);
		for (uint32_t c = 0; c < l->nr_vcpus; c++)
			if (vn->vcpus[c / 64] >> (c % 64) & 1)
				l->vcpu_vnode[c] = (uint8_t)v;
	}
	return 0;
}

/* No vnuma=: the placement's nodes in order; a vnode each if several. */
static int
plan_placed(const struct vmb_placement *pl, uint64_t vram,
    struct vmb_layout *l, uint64_t *next)
{
	uint32_t n = pl->nr_nodes;
	int rc;

	if (n == 0 || n > VMB_MAX_NODES)
		return -EINVAL;
	l->nr_vnodes = n > 1 && n <= VMB_MAX_VNODES ? n : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t bytes = pl->node_bytes[i];

		if (bytes % VMB_PAGE_SIZE)
			return -EINVAL;
		rc = i == 0 ? less_vram(l, vram, &bytes) : 0;
		if (rc == 0)
			rc = add_ram(l, next, bytes, pl->nodes[i],
			    l->nr_vnodes ? i : 0);
		if (rc)
			return rc;
	}
	for (uint32_t v = 0; v < l->nr_vnodes; v++) {
		l->vnode_pnode[v] = pl->nodes[v];
		default_distances(l, v);
	}
	/* Equal consecutive blocks of vCPUs, as the nodes come. */
	for (uint32_t c = 0; l->nr_vnodes && c < l->nr_vcpus; c++)
		l->vcpu_vnode[c] = (uint8_t)((uint64_t)c * l->nr_vnodes /
		    l->nr_vcpus);
	return 0;
}

int
vmb__layout_plan(const struct vmb_guest *g, const struct vmb_placement *pl,
    struct vmb_layout *ret)
{
	struct vmb_layout l;
	uint64_t next = 0, vram;
	int rc;

	if (!g || !pl || !ret || g->nr_vnodes > VMB_MAX_VNODES)
		return -EINVAL;
	memset(&l, 0, sizeof(l));
	l.hvm = g->type == VMB_GUEST_HVM;
	vram = l.hvm ? (uint64_t)vmb_hvm_videoram_mib(g) * VMB_MIB : 0;
	/* Below the VGA hole an HVM guest has nothing to boot with. */
	if (hole_start(g, &l.hole_start) || (l.hvm && g->memory_bytes <=
	    VMB_VGA_HOLE_END + vram))
		return -EINVAL;
	l.nr_vcpus = g->maxvcpus > g->vcpus ? g->maxvcpus : g->vcpus;
	if (l.nr_vcpus > VMB_MAX_VCPUS)
		return -EINVAL;
	rc = g->nr_vnodes ? plan_vnuma(g, vram, &l, &next) :
	    plan_placed(pl, vram, &l, &next);
	if (rc)
		return rc;
	l.lowmem_end = next < l.hole_start ? next : l.hole_start;
	l.highmem_end = next > VMB_4GIB ? next : 0;
	if (vmb__layout_ram(&l) != g->memory_bytes - vram)
		return -EINVAL;
	*ret = l;
	return 0;
}

uint64_t
vmb__layout_ram(const struct vmb_layout *l)
{
	return l->lowmem_end + (l->highmem_end ? l->highmem_end - VMB_4GIB : 0);
}

int
vmb__layout(const struct vmb_guest *g, const struct vmb_placement *pl,
    struct vmb__range *ranges)
{
	struct vmb_layout l;
	int rc;

	if (!ranges)
		return -EINVAL;
	rc = vmb__layout_plan(g, pl, &l);
	if (rc)
		return rc;
	memcpy(ranges, l.ranges, l.nr_ranges * sizeof(*ranges));
	return (int)l.nr_ranges;
}

int
vmb__memmap(const struct vmb_layout *l, const struct vmb_firmware *fw,
    struct vmb_memmap_entry *out, size_t cap)
{
	struct vmb_memmap_entry e[VMB_MEMMAP_MAX];
	size_t n = 0;

	if (!l || !out)
		return -EINVAL;
	if (l->lowmem_end)
		e[n++] = (struct vmb_memmap_entry){ 0, l->lowmem_end,
		    VMB_E820_RAM };
	if (l->highmem_end)
		e[n++] = (struct vmb_memmap_entry){ VMB_4GIB,
		    l->highmem_end - VMB_4GIB, VMB_E820_RAM };
	for (uint32_t i = 0; fw && i < fw->nr_regions; i++) {
		if (n == VMB_MEMMAP_MAX || fw->regions[i].size == 0)
			return -EINVAL;
		e[n++] = fw->regions[i];
	}
	/* Insertion sort by address, then no overlaps. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && e[j].addr < e[j - 1].addr; j--) {
			struct vmb_memmap_entry t = e[j];

			e[j] = e[j - 1];
			e[j - 1] = t;
		}
	for (size_t i = 1; i < n; i++)
		if (e[i - 1].addr + e[i - 1].size > e[i].addr)
			return -EINVAL;
	if (n > cap)
		return -EINVAL;
	memcpy(out, e, n * sizeof(*e));
	return (int)n;
}

int
vmb_guest_ram_layout(const struct vmb_guest *g, struct vmb_ram_layout *ret)
{
	struct vmb_placement pl = { .nr_nodes = 1 };
	struct vmb_guest one;
	struct vmb_layout l;
	int rc;

	if (!g || !ret)
		return -EINVAL;
	/* The address ranges do not depend on which nodes back them. */
	one = *g;
	one.nr_vnodes = 0;
	pl.node_bytes[0] = g->memory_bytes;
	rc = vmb__layout_plan(&one, &pl, &l);
	if (rc)
		return rc;
	*ret = (struct vmb_ram_layout){ .lowmem_end = l.lowmem_end,
	    .highmem_end = l.highmem_end, .hole_start = l.hole_start,
	    .vga_start = l.hvm ? VMB_VGA_HOLE_START : 0,
	    .vga_end = l.hvm ? VMB_VGA_HOLE_END : 0,
	    .populated = l.populated };
	return 0;
}
