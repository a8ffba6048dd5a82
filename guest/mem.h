/*
 * mem.h - the hello guest's RAM: where it is, and touching all of it
 * (prefix mem_).
 */
#ifndef GUEST_MEM_H
#define GUEST_MEM_H

#include <stdint.h>

#include "xen.h"

#define MEM_MAX_RANGES	32
#define MEM_MAP_LIMIT	(64ull << 30)	/* identity-mapped by entry.S */

struct mem_range {
	uint64_t start;
	uint64_t end;		/* exclusive */
};

struct mem_map {
	struct mem_range r[MEM_MAX_RANGES];
	unsigned int nr;
	const char *source;	/* where the map came from, for the log */
};

struct mem_touch {
	uint64_t touched;	/* bytes written and read back */
	uint64_t image;		/* bytes of our own image, left alone */
	uint64_t unmapped;	/* RAM above MEM_MAP_LIMIT, not reachable */
	uint64_t errors;	/* pages that did not read back what we wrote */
	uint64_t first_error;	/* guest physical address, if errors */
};

/* Each returns 0 and fills *m, or -1 when that source has no map. */
int mem_from_start_info(const struct hvm_start_info *si, struct mem_map *m);
int mem_from_hypercall(struct mem_map *m);
int mem_from_size(uint64_t bytes, struct mem_map *m);

uint64_t mem_total(const struct mem_map *m);
/* Write, read back and restore one word in every page outside [skip). */
void mem_touch_all(const struct mem_map *m, uint64_t skip_start,
    uint64_t skip_end, struct mem_touch *t);

#endif /* GUEST_MEM_H */
