/*
 * ptw.c - a workload that rewrites the guest's own page-table entries.
 *
 * Under shadow paging (no HAP) every write to a page the hypervisor
 * shadows as a page table traps and is emulated; this makes such writes
 * on purpose, to exercise the hypervisor's unshadow heuristics:
 *
 *   flood round: read through a scratch 2 MiB mapping (a shadow fault
 *   re-shadows its page directory if it was unshadowed), then write its
 *   PDE 4 times with alternating non-zero values: Xen's write-flood
 *   heuristic (hypervisor/xen, shadow-flood=3) unshadows the page
 *   directory at the third write;
 *
 *   zero round: read through the mapping, write the PDE 0 twice (Xen's
 *   early unshadow, aimed at process teardown, fires at the second),
 *   then put a valid entry back.
 *
 * The scratch mapping is the last 2 MiB entry of the page directory that
 * entry.S built for GiB 63, far above any RAM the lab gives a guest; it
 * points at guest-physical 0 or 2 MiB alternately, and every read through
 * it is checked against the same bytes read through the identity map.
 * The original entry is restored at the end.  The page directory is an
 * L2 table, which Xen never lets go out of sync, so its writes are always
 * emulated while it is shadowed.
 */
#include "ptw.h"

#define PTE_ADDR	0x000ffffffffff000ull
#define PDE_2M		0x83ull		/* present, writable, 2 MiB page */
#define SCRATCH_GIB	63
#define SCRATCH_SLOT	511
#define SCRATCH_VA	(((uint64_t)SCRATCH_GIB << 30) | \
			 ((uint64_t)SCRATCH_SLOT << 21))
#define PROBE_OFF	0x1008ull	/* a word inside the mapped 2 MiB */

static uint64_t
read_cr3(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr3, %0" : "=r"(v));
	return v;
}

static void
invlpg(uint64_t va)
{
	__asm__ volatile("invlpg (%0)" : : "r"(va) : "memory");
}

static void
set_pde(volatile uint64_t *pde, uint64_t v)
{
	*pde = v;			/* one 8-byte store: one emulated write */
}

/* Read through the scratch mapping of guest-physical `target`; 0 if right. */
static int
check_read(uint64_t target)
{
	volatile uint64_t *via = (volatile uint64_t *)(SCRATCH_VA + PROBE_OFF);
	volatile uint64_t *direct = (volatile uint64_t *)(target + PROBE_OFF);

	return *via == *direct ? 0 : -1;
}

int
ptw_run(uint64_t rounds, struct ptw_result *r)
{
	volatile uint64_t *pml4, *pdpt, *pd, *pde;
	uint64_t saved, a = 0 | PDE_2M, b = (2ull << 20) | PDE_2M, i;

	r->flood_rounds = r->zero_rounds = r->bad_reads = 0;
	/* Identity-mapped tables (entry.S): physical is virtual. */
	pml4 = (volatile uint64_t *)(read_cr3() & PTE_ADDR);
	pdpt = (volatile uint64_t *)(pml4[0] & PTE_ADDR);
	if (!(pml4[0] & 1) || !(pdpt[SCRATCH_GIB] & 1))
		return -1;
	pd = (volatile uint64_t *)(pdpt[SCRATCH_GIB] & PTE_ADDR);
	pde = &pd[SCRATCH_SLOT];
	saved = *pde;

	set_pde(pde, a);
	invlpg(SCRATCH_VA);
	for (i = 0; i < rounds; i++) {
		if (check_read(0) != 0)
			r->bad_reads++;
		set_pde(pde, b);
		set_pde(pde, a);
		set_pde(pde, b);
		set_pde(pde, a);
		invlpg(SCRATCH_VA);
		r->flood_rounds++;
	}
	for (i = 0; i < rounds; i++) {
		if (check_read(0) != 0)
			r->bad_reads++;
		set_pde(pde, 0);
		set_pde(pde, 0);
		set_pde(pde, i & 1 ? a : b);
		invlpg(SCRATCH_VA);
		if (check_read(i & 1 ? 0 : 2ull << 20) != 0)
			r->bad_reads++;
		set_pde(pde, a);
		invlpg(SCRATCH_VA);
		r->zero_rounds++;
	}
	set_pde(pde, saved);
	invlpg(SCRATCH_VA);
	return 0;
}
