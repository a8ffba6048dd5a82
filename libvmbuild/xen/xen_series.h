/*
 * xen_series.h - the public interface of vmbuild's Xen series
 * (hypervisor/xen/4.17/, hypervisor/xen/upstream/), as the xen backend
 * uses it over xencall: XEN_SYSCTL_mm_stats, XEN_SYSCTL_scrub_progress
 * and XENMEM_populate_batch.
 *
 * A copy, under names of its own, of what the series adds to Xen's
 * public sysctl.h and memory.h: Debian's libxenctrl (and its headers) do
 * not have them, so the backend cannot use the series' libxenctrl
 * wrappers (xc_mm_stats(), xc_scrub_progress(), xc_domain_populate_batch())
 * and issues the same hypercalls itself.  hypervisor/xen/abi-check.c,
 * compiled by hypervisor/xen/build.sh against the patched tree, checks
 * that every number, structure and field here equals the series'.
 *
 * Also the pure parts of the backend's use of them (xen_series.c): the
 * conversion of Xen's counter array to struct hv_counters, and the scrub
 * rate, which Xen leaves to the tools (it returns counts and a time).
 */
#ifndef VMBUILD_XEN_SERIES_H
#define VMBUILD_XEN_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include <vmbuild/hvabi.h>

/* Sub-op numbers: the next free ones upstream (30 is dt_overlay, 4.19). */
#define VMB_XEN_SYSCTL_mm_stats		31
#define VMB_XEN_SYSCTL_scrub_progress	32
#define VMB_XENMEM_populate_batch	29

/* XEN_MM_STAT_*: indices into XEN_SYSCTL_mm_stats' counter array. */
enum vmb_xen_mm_stat {
	VMB_XEN_MM_STAT_tlb_flush_populate = 0,
	VMB_XEN_MM_STAT_tlb_flush_other,
	VMB_XEN_MM_STAT_tlb_filtered_populate,
	VMB_XEN_MM_STAT_tlb_filtered_other,
	VMB_XEN_MM_STAT_tlb_filter_evaluations,
	VMB_XEN_MM_STAT_tlb_flush_ipis,
	VMB_XEN_MM_STAT_populate_calls,
	VMB_XEN_MM_STAT_populate_preemptions,
	VMB_XEN_MM_STAT_populate_extents_4k,
	VMB_XEN_MM_STAT_populate_extents_2m,
	VMB_XEN_MM_STAT_populate_extents_1g,
	VMB_XEN_MM_STAT_populate_extents_other,
	VMB_XEN_MM_STAT_populate_pages_4k,
	VMB_XEN_MM_STAT_populate_pages_2m,
	VMB_XEN_MM_STAT_populate_pages_1g,
	VMB_XEN_MM_STAT_populate_pages_other,
	VMB_XEN_MM_STAT_populate_pages_offnode,
	VMB_XEN_MM_STAT_scrub_boot,
	VMB_XEN_MM_STAT_scrub_idle,
	VMB_XEN_MM_STAT_scrub_inline,
	VMB_XEN_MM_STAT_unshadow_write_flood,
	VMB_XEN_MM_STAT_unshadow_early,
	VMB_XEN_MM_STAT_unshadow_all,
	VMB_XEN_MM_STAT_shadow_emulated_pt_writes,
	VMB_XEN_MM_STAT_shadow_faults,
	VMB_XEN_MM_STAT_domains_created,
	VMB_XEN_MM_STAT_domains_destroyed,
	VMB_XEN_MM_STAT_NR
};

/* struct xen_sysctl_mm_stats: the start of struct xen_sysctl's union. */
struct vmb_xen_sysctl_mm_stats {
	uint32_t nr_counters;	/* IN: elements at counters; OUT: Xen's */
	uint32_t pad;
	uint64_t now;		/* OUT: Xen's system time, ns */
	uint64_t counters;	/* XEN_GUEST_HANDLE_64(uint64) */
};

#define VMB_XEN_SYSCTL_SCRUB_boot_done	(1u << 0)

struct vmb_xen_sysctl_scrub_node {
	uint32_t node;
	uint32_t flags;		/* VMB_XEN_SYSCTL_SCRUB_* */
	uint64_t total_pages;
	uint64_t free_pages;
	uint64_t dirty_pages;
	uint64_t scrubbed_pages;	/* since boot */
};

struct vmb_xen_sysctl_scrub_progress {
	uint32_t num_nodes;	/* IN: elements at nodes; OUT: online nodes */
	uint32_t pad;
	uint64_t now;		/* OUT: Xen's system time, ns */
	uint64_t nodes;		/* XEN_GUEST_HANDLE_64(scrub_node) */
};

#define VMB_XENMEM_POPB_exact_node	(1u << 0)
#define VMB_XENMEM_POPB_allow_dirty	(1u << 1)
#define VMB_XENMEM_POPB_MAX_EXTENTS	4096
#define VMB_XENMEM_POPB_NODE_ANY	0xffff

struct vmb_xen_populate_extent {
	uint64_t gfn;
	uint8_t order;
	uint8_t pad;
	uint16_t node;		/* or VMB_XENMEM_POPB_NODE_ANY */
	uint32_t pad2;
};

struct vmb_xen_populate_batch_stats {
	uint64_t extents_done;
	uint64_t pages_done;
	uint64_t pages_scrubbed_inline;
	uint64_t pages_offnode;
	uint64_t flushes_issued;
	uint64_t flushes_avoided;
	uint64_t filter_evaluations;
	uint64_t elapsed_ns;
};

struct vmb_xen_populate_batch {
	uint16_t domid;
	uint16_t pad;
	uint32_t flags;		/* VMB_XENMEM_POPB_* */
	uint32_t nr_extents;
	uint32_t start;
	uint64_t extents;	/* address of vmb_xen_populate_extent[nr_extents] */
	uint32_t next;		/* OUT: first extent not populated */
	uint32_t pad2;
	struct vmb_xen_populate_batch_stats stats;	/* OUT */
};

/*
 * Xen's counter array (nr elements, VMB_XEN_MM_STAT_* order) as struct
 * hv_counters, the layout vmb__counters_from_hv() converts; the unshadows
 * of no other reason are all of them less the write-flood and early ones.
 * -EPROTO when Xen has fewer counters than this series defines.
 */
int xen_series_counters(const uint64_t *c, size_t nr, struct hv_counters *h);

/*
 * A node's scrub rate from its scrubbed-pages count: the growth between
 * samples at least XEN_SCRUB_RATE_WINDOW_NS apart (Xen's system time);
 * a closer sample keeps the last rate.  The first sample gives 0.
 */
#define XEN_SCRUB_RATE_WINDOW_NS	250000000ull

struct xen_scrub_rate {
	uint64_t t_ns;		/* 0: no sample yet */
	uint64_t scrubbed;
	uint64_t rate;		/* pages per second */
};

uint64_t xen_series_scrub_rate(struct xen_scrub_rate *r, uint64_t now_ns,
    uint64_t scrubbed);

#endif /* VMBUILD_XEN_SERIES_H */
