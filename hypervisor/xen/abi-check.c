/*
 * abi-check.c - the series' public structures have hvabi.h's layouts.
 *
 * Compiled (syntax only) by build.sh against the patched tree's public
 * headers: xenctrl-free, so that the check needs nothing but the tree.
 * The xen backend talks to the patched Xen with hvabi.h's structures;
 * any drift between the two is a build failure, not a lab mystery.
 */
#include <stddef.h>
#include <stdint.h>

#include <public/xen.h>
#include <public/memory.h>
#include <public/sysctl.h>

#include <vmbuild/hvabi.h>

#define SAME_SIZE(x, h) \
	_Static_assert(sizeof(struct x) == sizeof(struct h), \
	    #x " and " #h " differ in size")
#define SAME_FIELD(x, xf, h, hf) \
	_Static_assert(offsetof(struct x, xf) == offsetof(struct h, hf) && \
	    sizeof(((struct x *)0)->xf) == sizeof(((struct h *)0)->hf), \
	    #x "." #xf " and " #h "." #hf " differ")
#define SAME(a, b) _Static_assert((a) == (b), #a " != " #b)

/* Sub-ops, numbers and versions. */
SAME(XEN_SYSCTL_scrub_progress, HV_XEN_SYSCTL_SCRUB_PROGRESS);
SAME(XEN_SYSCTL_vmstat, HV_XEN_SYSCTL_COUNTERS);
SAME(XENMEM_populate_batch, HV_XEN_XENMEM_POPULATE_BATCH);
SAME(XEN_VMSTAT_VERSION, HV_ABI_VERSION);
SAME(XENMEM_POPB_VERSION, HV_ABI_VERSION);
SAME(XENMEM_POPB_exact_node, HV_POPF_EXACT_NODE);
SAME(XENMEM_POPB_allow_dirty, HV_POPF_ALLOW_DIRTY);
SAME(XENMEM_POPB_MAX_EXTENTS, HV_MAX_EXTENTS);
SAME(XENMEM_POPB_NODE_ANY, HV_NODE_ANY);
SAME(XEN_VMSTAT_FLUSH_populate, HV_FLUSH_CAUSE_POPULATE);
SAME(XEN_VMSTAT_FLUSH_free, HV_FLUSH_CAUSE_FREE);
SAME(XEN_VMSTAT_FLUSH_other, HV_FLUSH_CAUSE_OTHER);
SAME(XEN_VMSTAT_FLUSH_NR, HV_FLUSH_CAUSE_MAX);
SAME(XEN_VMSTAT_ORDER_4k, HV_ORDER_CLASS_4K);
SAME(XEN_VMSTAT_ORDER_2M, HV_ORDER_CLASS_2M);
SAME(XEN_VMSTAT_ORDER_1G, HV_ORDER_CLASS_1G);
SAME(XEN_VMSTAT_ORDER_NR, HV_ORDER_CLASS_MAX);
SAME(XEN_VMSTAT_UNSHADOW_write_flood, HV_UNSHADOW_WRITE_FLOOD);
SAME(XEN_VMSTAT_UNSHADOW_early, HV_UNSHADOW_EARLY);
SAME(XEN_VMSTAT_UNSHADOW_other, HV_UNSHADOW_OTHER);
SAME(XEN_VMSTAT_UNSHADOW_NR, HV_UNSHADOW_REASON_MAX);

/* The sysctl's buffer descriptor starts the union. */
SAME_SIZE(xen_sysctl_vmstat_buf, hv_xen_sysctl_buf);
SAME_FIELD(xen_sysctl_vmstat_buf, buf, hv_xen_sysctl_buf, buf);
SAME_FIELD(xen_sysctl_vmstat_buf, size, hv_xen_sysctl_buf, size);
SAME_FIELD(xen_sysctl_vmstat_buf, pad, hv_xen_sysctl_buf, pad);
_Static_assert(offsetof(struct xen_sysctl, u.vmstat_buf) ==
    offsetof(struct xen_sysctl, u), "vmstat_buf does not start the union");

/* Scrub progress. */
SAME_SIZE(xen_scrub_progress, hv_scrub_reply);
SAME_FIELD(xen_scrub_progress, nr_nodes, hv_scrub_reply, nr_nodes);
SAME_FIELD(xen_scrub_progress, version, hv_scrub_reply, version);
SAME_FIELD(xen_scrub_progress, now_ns, hv_scrub_reply, now_ns);
SAME_SIZE(xen_scrub_node, hv_scrub_node);
SAME_FIELD(xen_scrub_node, node, hv_scrub_node, node);
SAME_FIELD(xen_scrub_node, workers, hv_scrub_node, workers);
SAME_FIELD(xen_scrub_node, total_pages, hv_scrub_node, total_pages);
SAME_FIELD(xen_scrub_node, free_pages, hv_scrub_node, free_pages);
SAME_FIELD(xen_scrub_node, dirty_pages, hv_scrub_node, dirty_pages);
SAME_FIELD(xen_scrub_node, scrubbed_pages, hv_scrub_node,
    scrubbed_pages_total);
SAME_FIELD(xen_scrub_node, rate_pages_per_sec, hv_scrub_node,
    rate_pages_per_sec);
SAME_FIELD(xen_scrub_node, boot_scrub_done, hv_scrub_node,
    boot_scrub_done);

/* Counters. */
SAME_SIZE(xen_vmstat, hv_counters);
SAME_FIELD(xen_vmstat, version, hv_counters, version);
SAME_FIELD(xen_vmstat, tlb_flushes_issued, hv_counters, tlb_flushes_issued);
SAME_FIELD(xen_vmstat, tlb_flushes_filtered, hv_counters,
    tlb_flushes_filtered);
SAME_FIELD(xen_vmstat, tlb_filter_evaluations, hv_counters,
    tlb_filter_evaluations);
SAME_FIELD(xen_vmstat, tlb_flush_cpu_ipis, hv_counters, tlb_flush_cpu_ipis);
SAME_FIELD(xen_vmstat, populate_calls, hv_counters, populate_calls);
SAME_FIELD(xen_vmstat, populate_preemptions, hv_counters,
    populate_preemptions);
SAME_FIELD(xen_vmstat, populate_extents, hv_counters, populate_extents);
SAME_FIELD(xen_vmstat, populate_pages, hv_counters, populate_pages);
SAME_FIELD(xen_vmstat, populate_pages_fallback, hv_counters,
    populate_pages_fallback);
SAME_FIELD(xen_vmstat, scrub_pages_boot, hv_counters, scrub_pages_boot);
SAME_FIELD(xen_vmstat, scrub_pages_background, hv_counters,
    scrub_pages_background);
SAME_FIELD(xen_vmstat, scrub_pages_inline, hv_counters, scrub_pages_inline);
SAME_FIELD(xen_vmstat, unshadow, hv_counters, unshadow);
SAME_FIELD(xen_vmstat, emulated_pt_writes, hv_counters, emulated_pt_writes);
SAME_FIELD(xen_vmstat, shadow_faults, hv_counters, shadow_faults);
SAME_FIELD(xen_vmstat, domains_created, hv_counters, domains_created);
SAME_FIELD(xen_vmstat, domains_destroyed, hv_counters, domains_destroyed);

/* Batched populate. */
SAME_SIZE(xen_populate_extent, hv_extent);
SAME_FIELD(xen_populate_extent, gfn, hv_extent, gfn);
SAME_FIELD(xen_populate_extent, order, hv_extent, order);
SAME_FIELD(xen_populate_extent, node, hv_extent, node);
SAME_SIZE(xen_populate_batch, hv_xen_populate);
SAME_FIELD(xen_populate_batch, domid, hv_xen_populate, req.domid);
SAME_FIELD(xen_populate_batch, flags, hv_xen_populate, req.flags);
SAME_FIELD(xen_populate_batch, nr_extents, hv_xen_populate, req.nr_extents);
SAME_FIELD(xen_populate_batch, start, hv_xen_populate, req.start);
SAME_FIELD(xen_populate_batch, extents, hv_xen_populate, extents);
SAME_FIELD(xen_populate_batch, version, hv_xen_populate, rep.version);
SAME_FIELD(xen_populate_batch, next, hv_xen_populate, rep.next);
SAME_FIELD(xen_populate_batch, preempted, hv_xen_populate, rep.preempted);
SAME_FIELD(xen_populate_batch, stats.extents_done, hv_xen_populate,
    rep.stats.extents_done);
SAME_FIELD(xen_populate_batch, stats.pages_done, hv_xen_populate,
    rep.stats.pages_done);
SAME_FIELD(xen_populate_batch, stats.pages_scrubbed_inline, hv_xen_populate,
    rep.stats.pages_scrubbed_inline);
SAME_FIELD(xen_populate_batch, stats.pages_fallback, hv_xen_populate,
    rep.stats.pages_fallback);
SAME_FIELD(xen_populate_batch, stats.flushes_issued, hv_xen_populate,
    rep.stats.flushes_issued);
SAME_FIELD(xen_populate_batch, stats.flushes_avoided, hv_xen_populate,
    rep.stats.flushes_avoided);
SAME_FIELD(xen_populate_batch, stats.filter_evaluations, hv_xen_populate,
    rep.stats.filter_evaluations);
SAME_FIELD(xen_populate_batch, stats.elapsed_ns, hv_xen_populate,
    rep.stats.elapsed_ns);
