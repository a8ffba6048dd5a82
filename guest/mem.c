/*
 * mem.c - find the guest's RAM and touch every page of it.
 *
 * The map comes, in order of preference, from the start info's memory map
 * (hvm_start_info version >= 1, which libxl fills for PVH guests), from
 * XENMEM_memory_map (the e820 a toolstack set with XENMEM_set_memory_map),
 * or from a "mem=" size on the command line, taken as RAM from address 0.
 * Only RAM entries are touched: the ACPI tables, special pages (console,
 * xenstore) and holes are not, since touching an unpopulated gfn would
 * crash the domain.
 */
#include <stddef.h>

#include "mem.h"

#define PAGE_SIZE	4096ull
#define E820_RAM	1

static void
add(struct mem_map *m, uint64_t addr, uint64_t size)
{
	uint64_t start = (addr + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	uint64_t end = (addr + size) & ~(PAGE_SIZE - 1);

	if (end <= start || m->nr == MEM_MAX_RANGES)
		return;
	m->r[m->nr].start = start;
	m->r[m->nr].end = end;
	m->nr++;
}

int
mem_from_start_info(const struct hvm_start_info *si, struct mem_map *m)
{
	const struct hvm_memmap_table_entry *e;
	uint32_t i;

	m->nr = 0;
	if (si == NULL || si->version < 1 || si->memmap_paddr == 0 ||
	    si->memmap_entries == 0 || si->memmap_entries > 1024 ||
	    si->memmap_paddr >= MEM_MAP_LIMIT - 1024 * sizeof(*e))
		return -1;
	e = (const struct hvm_memmap_table_entry *)(uintptr_t)si->memmap_paddr;
	for (i = 0; i < si->memmap_entries; i++)
		if (e[i].type == XEN_HVM_MEMMAP_TYPE_RAM)
			add(m, e[i].addr, e[i].size);
	m->source = "start_info memmap";
	return m->nr ? 0 : -1;
}

int
mem_from_hypercall(struct mem_map *m)
{
	static struct e820entry_guest e[MEM_MAX_RANGES];
	unsigned int nr = MEM_MAX_RANGES, i;

	m->nr = 0;
	if (xg_memory_map(e, &nr) != 0)
		return -1;
	for (i = 0; i < nr && i < MEM_MAX_RANGES; i++)
		if (e[i].type == E820_RAM)
			add(m, e[i].addr, e[i].size);
	m->source = "XENMEM_memory_map";
	return m->nr ? 0 : -1;
}

int
mem_from_size(uint64_t bytes, struct mem_map *m)
{
	m->nr = 0;
	add(m, 0, bytes);
	m->source = "command line mem=";
	return m->nr ? 0 : -1;
}

uint64_t
mem_total(const struct mem_map *m)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		sum += m->r[i].end - m->r[i].start;
	return sum;
}

/*
 * Non-destructive: the start info, command line and memory map live in
 * RAM too, so each probed word is put back as it was.
 */
static void
touch_range(uint64_t start, uint64_t end, struct mem_touch *t)
{
	volatile uint64_t *p;
	uint64_t a, old, pat;

	for (a = start; a < end; a += PAGE_SIZE) {
		p = (volatile uint64_t *)(uintptr_t)a;
		pat = a ^ 0x5a5aa5a5c3c33c3cull;
		old = *p;
		*p = pat;
		if (*p != pat) {
			if (t->errors++ == 0)
				t->first_error = a;
		}
		*p = old;
	}
	t->touched += end - start;
}

void
mem_touch_all(const struct mem_map *m, uint64_t skip_start,
    uint64_t skip_end, struct mem_touch *t)
{
	uint64_t s, e;
	unsigned int i;

	t->touched = t->image = t->unmapped = t->errors = t->first_error = 0;
	skip_start &= ~(PAGE_SIZE - 1);
	skip_end = (skip_end + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	for (i = 0; i < m->nr; i++) {
		s = m->r[i].start;
		e = m->r[i].end;
		if (e > MEM_MAP_LIMIT) {
			t->unmapped += e - (s > MEM_MAP_LIMIT ? s : MEM_MAP_LIMIT);
			if (s >= MEM_MAP_LIMIT)
				continue;
			e = MEM_MAP_LIMIT;
		}
		if (skip_end <= s || skip_start >= e) {
			touch_range(s, e, t);
			continue;
		}
		/* The range holds (part of) our image: touch around it. */
		if (s < skip_start)
			touch_range(s, skip_start, t);
		if (skip_end < e)
			touch_range(skip_end, e, t);
		t->image += (skip_end < e ? skip_end : e) -
		    (skip_start > s ? skip_start : s);
	}
}
