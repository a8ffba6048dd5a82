/*
 * populate.c - hypercall 1, batched populate (post 000).
 *
 * Pages that had an owner may still be in some CPU's TLB; before they go
 * to a new owner, the CPUs whose last flush is older than the page's
 * free time must flush.  Two ways of doing it:
 *
 *   batch (default, the companion hypercall): the newest free timestamp
 *   of every page in the call is accumulated, the filter is evaluated
 *   once at the end, and at most one flush is issued for the batch;
 *
 *   alloc (Xen before 4.8): the filter - a CPU mask computed against
 *   every CPU's flush clock - is evaluated for every page allocated, and
 *   a flush is issued for every extent whose mask is not empty.
 *
 * Dirty memory: with HV_POPF_ALLOW_DIRTY each node is tried with dirty
 * pages allowed (scrubbed inline), so an extent stays on its node; without
 * it, clean memory on every candidate node is tried first, then dirty
 * memory, as Xen's get_free_buddy.  Neither waits for the background
 * scrubber's progress.
 *
 * The domain lock is held only to reserve an extent's gfns and to record
 * pages already allocated and scrubbed (as Xen, where alloc_heap_pages
 * scrubs outside heap_lock and assign_pages holds page_alloc_lock
 * briefly), so populates of one domain on several nodes scrub in
 * parallel.  A destroy meanwhile is seen at recording time: the pages go
 * back to the heap clean and the call fails with -ESRCH.
 *
 * Both count evaluations, flushes issued and flushes avoided.  A call
 * stops after preempt_pages of work (at least one extent) and says where
 * to continue.  Work is what the call did page by page: pages it
 * scrubbed inline, pages it evaluated the filter for one at a time
 * (alloc mode), plus one per extent for handing out a block and
 * recording it (metadata is per 2 MiB chunk, so a clean extent costs
 * about the same whatever its order).  A call over clean memory is
 * therefore not preempted after 1 GiB of extents it barely touched, as
 * Xen checks for preemption between extents by time, not by size.
 * Extents are tried on their node; without HV_POPF_EXACT_NODE, other
 * nodes follow in order.
 */
#include <errno.h>
#include <string.h>

#include "hvsim.h"

#define GFN_LIMIT	(1ull << 40)	/* 52-bit guest physical addresses */

static int
order_class(uint32_t order)
{
	switch (order) {
	case 0:
		return HV_ORDER_CLASS_4K;
	case HV_ORDER_2M:
		return HV_ORDER_CLASS_2M;
	case HV_ORDER_1G:
		return HV_ORDER_CLASS_1G;
	default:
		return HV_ORDER_CLASS_OTHER;
	}
}

static int
check_extent(struct hv *hv, const struct hv_extent *e)
{
	if (e->order > HV_MAX_ORDER || e->pad || e->pad2)
		return -EINVAL;
	if (e->gfn & ((1ull << e->order) - 1) ||
	    e->gfn >= GFN_LIMIT || e->gfn + (1ull << e->order) > GFN_LIMIT)
		return -EINVAL;
	if (e->node != HV_NODE_ANY && e->node >= hv->heap.nr_nodes)
		return -EINVAL;
	return 0;
}

/* Candidate nodes for an extent, in the order they are tried. */
static uint32_t
node_order(struct hv *hv, const struct hv_extent *e, uint32_t flags,
    uint32_t *nodes)
{
	uint32_t n = hv->heap.nr_nodes, i, j, k;

	if (e->node == HV_NODE_ANY) {
		/* Most free memory first. */
		uint64_t free[HV_MAX_NODES];

		for (i = 0; i < n; i++) {
			nodes[i] = i;
			free[i] = heap_free_pages(&hv->heap, i);
		}
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && free[nodes[j]] > free[nodes[j - 1]];
			    j--) {
				k = nodes[j];
				nodes[j] = nodes[j - 1];
				nodes[j - 1] = k;
			}
		return n;
	}
	nodes[0] = e->node;
	if (flags & HV_POPF_EXACT_NODE)
		return 1;
	for (i = 1; i < n; i++)
		nodes[i] = (e->node + i) % n;
	return n;
}

static void
do_flush(struct hv *hv, const struct cpumask *mask,
    struct hv_populate_stats *st)
{
	if (cpumask_weight(mask, hv->flush.nr_cpus) > 0) {
		flush_cpus(&hv->flush, mask, HV_FLUSH_CAUSE_POPULATE);
		st->flushes_issued++;
	} else {
		CTR_ADD(hv, tlb_flushes_filtered[HV_FLUSH_CAUSE_POPULATE], 1);
		st->flushes_avoided++;
	}
}

int
populate(struct hv *hv, const struct hv_populate *req,
    const struct hv_extent *ext, struct hv_populate_reply *rep)
{
	struct hv_populate_stats st = { 0 };
	bool batch = hv->cfg.flush_mode == HV_FLUSH_BATCH;
	bool acc_need = false;
	uint64_t acc_ts = 0, work = 0, t0 = hv_now_ns();
	uint64_t ext_by_class[HV_ORDER_CLASS_MAX] = { 0 };
	uint64_t pages_by_class[HV_ORDER_CLASS_MAX] = { 0 };
	struct domain *d;
	uint32_t i;
	int rc = 0, c;

	memset(rep, 0, sizeof(*rep));
	rep->version = HV_ABI_VERSION;
	/* A call that fails before any work has still got as far as start. */
	rep->next = req->start;
	if (req->flags & ~(HV_POPF_EXACT_NODE | HV_POPF_ALLOW_DIRTY) ||
	    req->nr_extents > HV_MAX_EXTENTS || req->start > req->nr_extents)
		return -EINVAL;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	for (i = req->start; i < req->nr_extents; i++) {
		const struct hv_extent *e = &ext[i];
		uint64_t size = 1ull << e->order, from_claim = 0;
		uint64_t inl0 = st.pages_scrubbed_inline;
		uint32_t nodes[HV_MAX_NODES], nn, k;
		bool claimed = false, allocated = false, dying;
		struct gfn_resv r;
		struct p2m_ext pe;
		struct hblock b;

		if (i > req->start && work >= hv->cfg.preempt_pages) {
			rep->preempted = 1;
			break;
		}
		rc = check_extent(hv, e);
		if (rc < 0)
			break;
		/* The gfns are ours until recorded: no lock held meanwhile. */
		pthread_mutex_lock(&d->lock);
		rc = dom_gfn_reserve(d, &r, e->gfn, e->order);
		pthread_mutex_unlock(&d->lock);
		if (rc < 0)
			break;
		rc = dom_claim_take(hv, d, size, &from_claim);
		claimed = rc == 0;
		nn = claimed ? node_order(hv, e, req->flags, nodes) : 0;
		if (claimed)
			rc = -ENOMEM;
		for (k = 0; k < nn && rc == -ENOMEM; k++)
			rc = heap_alloc(&hv->heap, nodes[k], e->order,
			    req->flags & HV_POPF_ALLOW_DIRTY, &b,
			    &st.pages_scrubbed_inline);
		/*
		 * Without the flag, clean memory on every candidate node came
		 * first; now dirty memory, scrubbed inline (Xen's second,
		 * use_unscrubbed pass), rather than waiting for the scrubber.
		 */
		for (k = 0; !(req->flags & HV_POPF_ALLOW_DIRTY) && k < nn &&
		    rc == -ENOMEM; k++)
			rc = heap_alloc(&hv->heap, nodes[k], e->order, true,
			    &b, &st.pages_scrubbed_inline);
		allocated = claimed && rc == 0;
		/* Allocated and scrubbed: only recording needs the lock. */
		pthread_mutex_lock(&d->lock);
		dying = d->state == HV_DOMSTATE_DYING;
		if (allocated) {
			pe = (struct p2m_ext){
				.gfn = e->gfn, .mfn = b.mfn, .order = e->order,
				.node = b.node,
			};
			rc = dying ? -ESRCH : dom_p2m_add(d, &pe);
		}
		if (rc == 0) {
			__atomic_store_n(&d->tot_pages, d->tot_pages + size,
			    __ATOMIC_RELAXED);
			__atomic_store_n(&d->node_pages[b.node],
			    d->node_pages[b.node] + size, __ATOMIC_RELAXED);
		} else if (claimed && !dying) {
			dom_claim_undo(hv, d, size, from_claim);
		}
		/* Recorded, or given up: overlapping calls may go on. */
		dom_gfn_release(d, &r);
		pthread_mutex_unlock(&d->lock);
		if (rc < 0) {
			/* Scrubbed and never the domain's: back clean. */
			if (allocated) {
				b.kind = PG_CLEAN;
				heap_free(&hv->heap, &b);
			}
			/* Destroy dropped the claim; the pages are free. */
			if (claimed && dying)
				dom_avail_give(hv, size);
			break;
		}
		if (b.need_flush) {
			if (batch) {
				acc_need = true;
				if (b.tlbflush_ts > acc_ts)
					acc_ts = b.tlbflush_ts;
			} else {
				struct cpumask m;
				uint64_t p;

				/* As Xen < 4.8: the filter for every page. */
				memset(&m, 0, sizeof(m));
				for (p = 0; p < size; p++)
					flush_filter(&hv->flush, b.tlbflush_ts,
					    &m);
				st.filter_evaluations += size;
				work += 1 + (st.pages_scrubbed_inline - inl0);
				do_flush(hv, &m, &st);
			}
		}
		st.extents_done++;
		st.pages_done += size;
		if (e->node != HV_NODE_ANY && b.node != e->node)
			st.pages_fallback += size;
		c = order_class(e->order);
		ext_by_class[c]++;
		pages_by_class[c] += size;
		work += 1 + (st.pages_scrubbed_inline - inl0);
	}
	if (batch && acc_need) {
		/* One evaluation and at most one flush for the whole batch. */
		struct cpumask m;

		memset(&m, 0, sizeof(m));
		flush_filter(&hv->flush, acc_ts, &m);
		st.filter_evaluations++;
		do_flush(hv, &m, &st);
	}
	dom_put(hv, d);

	rep->next = i;
	st.elapsed_ns = hv_now_ns() - t0;
	rep->stats = st;
	CTR_ADD(hv, populate_calls, 1);
	if (rep->preempted)
		CTR_ADD(hv, populate_preemptions, 1);
	for (c = 0; c < HV_ORDER_CLASS_MAX; c++) {
		CTR_ADD(hv, populate_extents[c], ext_by_class[c]);
		CTR_ADD(hv, populate_pages[c], pages_by_class[c]);
	}
	CTR_ADD(hv, populate_pages_fallback, st.pages_fallback);
	return rc;
}
