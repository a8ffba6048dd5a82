/*
 * xen_series.c - the pure parts of the xen backend's use of the series'
 * interface (xen_series.h): Xen's counter array as struct hv_counters,
 * and scrub rates from Xen's counts and times.  No Xen library here, so
 * that tests/lib/test_xen_series checks them without a hypervisor.
 */
#include <errno.h>
#include <string.h>

#include "xen_series.h"

/* Where each of Xen's counters goes in struct hv_counters. */
static const size_t to_hv[VMB_XEN_MM_STAT_NR] = {
#define AT(stat, field) [VMB_XEN_MM_STAT_##stat] = \
	offsetof(struct hv_counters, field)
	AT(tlb_flush_populate, tlb_flushes_issued[HV_FLUSH_CAUSE_POPULATE]),
	AT(tlb_flush_other, tlb_flushes_issued[HV_FLUSH_CAUSE_OTHER]),
	AT(tlb_filtered_populate, tlb_flushes_filtered[HV_FLUSH_CAUSE_POPULATE]),
	AT(tlb_filtered_other, tlb_flushes_filtered[HV_FLUSH_CAUSE_OTHER]),
	AT(tlb_filter_evaluations, tlb_filter_evaluations),
	AT(tlb_flush_ipis, tlb_flush_cpu_ipis),
	AT(populate_calls, populate_calls),
	AT(populate_preemptions, populate_preemptions),
	AT(populate_extents_4k, populate_extents[HV_ORDER_CLASS_4K]),
	AT(populate_extents_2m, populate_extents[HV_ORDER_CLASS_2M]),
	AT(populate_extents_1g, populate_extents[HV_ORDER_CLASS_1G]),
	AT(populate_extents_other, populate_extents[HV_ORDER_CLASS_OTHER]),
	AT(populate_pages_4k, populate_pages[HV_ORDER_CLASS_4K]),
	AT(populate_pages_2m, populate_pages[HV_ORDER_CLASS_2M]),
	AT(populate_pages_1g, populate_pages[HV_ORDER_CLASS_1G]),
	AT(populate_pages_other, populate_pages[HV_ORDER_CLASS_OTHER]),
	AT(populate_pages_offnode, populate_pages_fallback),
	AT(scrub_boot, scrub_pages_boot),
	AT(scrub_idle, scrub_pages_background),
	AT(scrub_inline, scrub_pages_inline),
	AT(unshadow_write_flood, unshadow[HV_UNSHADOW_WRITE_FLOOD]),
	AT(unshadow_early, unshadow[HV_UNSHADOW_EARLY]),
	/* all of them: "other" is what is left, below */
	AT(unshadow_all, unshadow[HV_UNSHADOW_OTHER]),
	AT(shadow_emulated_pt_writes, emulated_pt_writes),
	AT(shadow_faults, shadow_faults),
	AT(domains_created, domains_created),
	AT(domains_destroyed, domains_destroyed),
#undef AT
};

int
xen_series_counters(const uint64_t *c, size_t nr, struct hv_counters *h)
{
	uint64_t *other = &h->unshadow[HV_UNSHADOW_OTHER], known;
	size_t i;

	if (nr < VMB_XEN_MM_STAT_NR)
		return -EPROTO;
	memset(h, 0, sizeof(*h));
	h->version = HV_ABI_VERSION;
	for (i = 0; i < VMB_XEN_MM_STAT_NR; i++)
		*(uint64_t *)((char *)h + to_hv[i]) = c[i];
	/*
	 * Xen never flushes when it frees a page (the next allocation does):
	 * the "free" cause stays 0, as in hvsim.
	 */
	known = h->unshadow[HV_UNSHADOW_WRITE_FLOOD] +
	    h->unshadow[HV_UNSHADOW_EARLY];
	*other = *other > known ? *other - known : 0;
	return 0;
}

uint64_t
xen_series_scrub_rate(struct xen_scrub_rate *r, uint64_t now_ns,
    uint64_t scrubbed)
{
	if (r->t_ns == 0 || now_ns < r->t_ns || scrubbed < r->scrubbed) {
		/* The first sample, or one from another boot: start again. */
		r->t_ns = now_ns;
		r->scrubbed = scrubbed;
		r->rate = 0;
	} else if (now_ns - r->t_ns >= XEN_SCRUB_RATE_WINDOW_NS) {
		r->rate = (uint64_t)((double)(scrubbed - r->scrubbed) *
		    1e9 / (double)(now_ns - r->t_ns));
		r->t_ns = now_ns;
		r->scrubbed = scrubbed;
	}
	return r->rate;
}
