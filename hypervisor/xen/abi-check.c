/*
 * abi-check.c - the xen backend's copy of the series' interface
 * (libvmbuild/xen/xen_series.h) equals the series' public headers.
 *
 * Compiled (syntax only) by build.sh against the patched tree's public
 * headers: xenctrl-free, so that the check needs nothing but the tree.
 * The backend issues the series' hypercalls over xencall with its own
 * copies of the structures (Debian's libxenctrl has no wrappers for
 * them); any drift between the two is a build failure, not a lab mystery.
 */
#include <stddef.h>
#include <stdint.h>

#include <public/xen.h>
#include <public/memory.h>
#include <public/sysctl.h>

#include "../../libvmbuild/xen/xen_series.h"

#define SAME_SIZE(x, h) \
	_Static_assert(sizeof(struct x) == sizeof(struct h), \
	    #x " and " #h " differ in size")
#define SAME_FIELD(x, h, f) \
	_Static_assert(offsetof(struct x, f) == offsetof(struct h, f) && \
	    sizeof(((struct x *)0)->f) == sizeof(((struct h *)0)->f), \
	    #x "." #f " and " #h "." #f " differ")
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)

/* Numbers. */
SAME(XEN_SYSCTL_mm_stats, VMB_XEN_SYSCTL_mm_stats);
SAME(XEN_SYSCTL_scrub_progress, VMB_XEN_SYSCTL_scrub_progress);
SAME(XENMEM_populate_batch, VMB_XENMEM_populate_batch);
SAME(XEN_SYSCTL_SCRUB_boot_done, VMB_XEN_SYSCTL_SCRUB_boot_done);
SAME(XENMEM_POPB_exact_node, VMB_XENMEM_POPB_exact_node);
SAME(XENMEM_POPB_allow_dirty, VMB_XENMEM_POPB_allow_dirty);
SAME(XENMEM_POPB_MAX_EXTENTS, VMB_XENMEM_POPB_MAX_EXTENTS);
SAME(XENMEM_POPB_NODE_ANY, VMB_XENMEM_POPB_NODE_ANY);

/* The counter indices, every one. */
#define STAT(s) SAME(XEN_MM_STAT_##s, VMB_XEN_MM_STAT_##s)
STAT(tlb_flush_populate);
STAT(tlb_flush_other);
STAT(tlb_filtered_populate);
STAT(tlb_filtered_other);
STAT(tlb_filter_evaluations);
STAT(tlb_flush_ipis);
STAT(populate_calls);
STAT(populate_preemptions);
STAT(populate_extents_4k);
STAT(populate_extents_2m);
STAT(populate_extents_1g);
STAT(populate_extents_other);
STAT(populate_pages_4k);
STAT(populate_pages_2m);
STAT(populate_pages_1g);
STAT(populate_pages_other);
STAT(populate_pages_offnode);
STAT(scrub_boot);
STAT(scrub_idle);
STAT(scrub_inline);
STAT(unshadow_write_flood);
STAT(unshadow_early);
STAT(unshadow_all);
STAT(shadow_emulated_pt_writes);
STAT(shadow_faults);
STAT(domains_created);
STAT(domains_destroyed);
STAT(NR);

/* The sysctls' structures start struct xen_sysctl's union. */
SAME_SIZE(xen_sysctl_mm_stats, vmb_xen_sysctl_mm_stats);
SAME_FIELD(xen_sysctl_mm_stats, vmb_xen_sysctl_mm_stats, nr_counters);
SAME_FIELD(xen_sysctl_mm_stats, vmb_xen_sysctl_mm_stats, pad);
SAME_FIELD(xen_sysctl_mm_stats, vmb_xen_sysctl_mm_stats, now);
SAME_FIELD(xen_sysctl_mm_stats, vmb_xen_sysctl_mm_stats, counters);
SAME_SIZE(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node, node);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node, flags);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node, total_pages);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node, free_pages);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node, dirty_pages);
SAME_FIELD(xen_sysctl_scrub_node, vmb_xen_sysctl_scrub_node,
    scrubbed_pages);
SAME_SIZE(xen_sysctl_scrub_progress, vmb_xen_sysctl_scrub_progress);
SAME_FIELD(xen_sysctl_scrub_progress, vmb_xen_sysctl_scrub_progress,
    num_nodes);
SAME_FIELD(xen_sysctl_scrub_progress, vmb_xen_sysctl_scrub_progress, pad);
SAME_FIELD(xen_sysctl_scrub_progress, vmb_xen_sysctl_scrub_progress, now);
SAME_FIELD(xen_sysctl_scrub_progress, vmb_xen_sysctl_scrub_progress, nodes);
_Static_assert(offsetof(struct xen_sysctl, u.mm_stats) ==
    offsetof(struct xen_sysctl, u), "mm_stats does not start the union");
_Static_assert(offsetof(struct xen_sysctl, u.scrub_progress) ==
    offsetof(struct xen_sysctl, u), "scrub_progress does not start the union");

/* Batched populate. */
SAME_SIZE(xen_populate_extent, vmb_xen_populate_extent);
SAME_FIELD(xen_populate_extent, vmb_xen_populate_extent, gfn);
SAME_FIELD(xen_populate_extent, vmb_xen_populate_extent, order);
SAME_FIELD(xen_populate_extent, vmb_xen_populate_extent, pad);
SAME_FIELD(xen_populate_extent, vmb_xen_populate_extent, node);
SAME_FIELD(xen_populate_extent, vmb_xen_populate_extent, pad2);
SAME_SIZE(xen_populate_batch_stats, vmb_xen_populate_batch_stats);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    extents_done);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    pages_done);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    pages_scrubbed_inline);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    pages_offnode);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    flushes_issued);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    flushes_avoided);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    filter_evaluations);
SAME_FIELD(xen_populate_batch_stats, vmb_xen_populate_batch_stats,
    elapsed_ns);
SAME_SIZE(xen_populate_batch, vmb_xen_populate_batch);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, domid);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, pad);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, flags);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, nr_extents);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, start);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, extents);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, next);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, pad2);
SAME_FIELD(xen_populate_batch, vmb_xen_populate_batch, stats);
