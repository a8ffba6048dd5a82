/*
 * xen_companion.c - what the xen backend can do beyond stock Xen: the
 * interface of vmbuild's Xen series (hypervisor/xen; xen_series.h):
 * XEN_SYSCTL_mm_stats, XEN_SYSCTL_scrub_progress, XENMEM_populate_batch;
 * and Xen's own perf counters when the hypervisor was built with
 * CONFIG_PERF_COUNTERS.
 *
 * The series comes with libxenctrl wrappers for them, but Debian's
 * libxenctrl does not have them: the backend issues the same hypercalls
 * over xencall with xen_series.h's copies of the public structures
 * (checked against the series by hypervisor/xen/abi-check.c).
 *
 * All are probed once at open.  An unknown sysctl or memory op gets
 * -ENOSYS from stock Xen (-EOPNOTSUPP from some), and XEN_SYSCTL_perfc_op
 * gets -ENOSYS when perf counters are compiled out (Debian's build): then
 * the backend reports them as unavailable, never as zero, and populates
 * with stock XENMEM_populate_physmap.  Xen returns counts and its time;
 * the scrub rates are computed here (xen_series_scrub_rate()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vmbuild/hvabi.h>

#include "vmb_internal.h"
#include "xen_priv.h"

/*
 * One series sysctl: `arg` (arg_size bytes) starts struct xen_sysctl's
 * union; `handle_off` is where in it the array handle goes, pointing at a
 * hypercall buffer of `size` bytes copied to `out` afterwards.  The
 * union is copied back to `arg`, on -ENOBUFS too.  Returns 0 or -errno.
 */
static int
xen_series_sysctl(struct xen_be *be, uint32_t cmd, void *arg,
    size_t arg_size, size_t handle_off, void *out, size_t size)
{
	struct xen_sysctl *sc = NULL;
	void *buf = NULL;
	uint64_t h;
	int rc;

	if (be->xcall == NULL)
		return -ENOSYS;
	sc = xencall_alloc_buffer(be->xcall, sizeof(*sc));
	buf = size ? xencall_alloc_buffer(be->xcall, size) : NULL;
	if (sc == NULL || (size && buf == NULL)) {
		rc = -ENOMEM;
		goto out;
	}
	memset(sc, 0, sizeof(*sc));
	if (buf != NULL)
		memset(buf, 0, size);
	sc->cmd = cmd;
	sc->interface_version = XEN_SYSCTL_INTERFACE_VERSION;
	memcpy(&sc->u, arg, arg_size);
	h = (uint64_t)(uintptr_t)buf;
	memcpy((char *)&sc->u + handle_off, &h, sizeof(h));
	rc = xencall1(be->xcall, __HYPERVISOR_sysctl, (uint64_t)(uintptr_t)sc);
	rc = rc < 0 ? -xen_errno() : 0;
	if (rc == 0 || rc == -ENOBUFS)
		memcpy(arg, &sc->u, arg_size);
	if (rc == 0 && size)
		memcpy(out, buf, size);
out:
	if (buf != NULL)
		xencall_free_buffer(be->xcall, buf);
	if (sc != NULL)
		xencall_free_buffer(be->xcall, sc);
	return rc;
}

/* XEN_SYSCTL_mm_stats as struct hv_counters. */
static int
xen_mm_stats(struct xen_be *be, struct hv_counters *h)
{
	struct vmb_xen_sysctl_mm_stats ms;
	uint64_t c[VMB_XEN_MM_STAT_NR];
	int rc;

	memset(&ms, 0, sizeof(ms));
	ms.nr_counters = VMB_XEN_MM_STAT_NR;
	rc = xen_series_sysctl(be, VMB_XEN_SYSCTL_mm_stats, &ms, sizeof(ms),
	    offsetof(struct vmb_xen_sysctl_mm_stats, counters), c, sizeof(c));
	if (rc < 0)
		return rc;
	return xen_series_counters(c, ms.nr_counters, h);
}

/*
 * XEN_SYSCTL_scrub_progress into `nodes` (HV_MAX_NODES of them): the
 * number of nodes, or -errno.
 */
static int
xen_scrub_nodes(struct xen_be *be, struct vmb_xen_sysctl_scrub_node *nodes,
    uint64_t *now)
{
	struct vmb_xen_sysctl_scrub_progress sp;
	int rc;

	memset(&sp, 0, sizeof(sp));
	sp.num_nodes = HV_MAX_NODES;
	rc = xen_series_sysctl(be, VMB_XEN_SYSCTL_scrub_progress, &sp,
	    sizeof(sp), offsetof(struct vmb_xen_sysctl_scrub_progress, nodes),
	    nodes, HV_MAX_NODES * sizeof(*nodes));
	if (rc < 0)
		return rc;
	if (sp.num_nodes > HV_MAX_NODES)
		return -EPROTO;
	*now = sp.now;
	return (int)sp.num_nodes;
}

/*
 * One batched populate call on the hypercall buffer `arg` (request and
 * extents filled in).  Returns 0 or -errno; arg->next and arg->stats hold
 * Xen's reply (also on failure: the extents before next are done).
 */
static int
xen_populate_call(struct xen_be *be, struct vmb_xen_populate_batch *arg)
{
	memset(&arg->stats, 0, sizeof(arg->stats));
	arg->next = UINT32_MAX;	/* not Xen's: nothing replied */
	if (xencall2(be->xcall, __HYPERVISOR_memory_op,
	    VMB_XENMEM_populate_batch, (uint64_t)(uintptr_t)arg) < 0)
		return -xen_errno();
	return 0;
}

/* The engine's extents [base, base + n) in Xen's layout. */
static void
xen_populate_fill(struct vmb_xen_populate_extent *he,
    const struct vmb_extent *ext, size_t n)
{
	size_t i;

	memset(he, 0, n * sizeof(*he));
	for (i = 0; i < n; i++) {
		he[i].gfn = ext[i].gfn;
		he[i].order = (uint8_t)ext[i].order;
		he[i].node = (uint16_t)(ext[i].node == VMB_NODE_ANY ?
		    VMB_XENMEM_POPB_NODE_ANY : ext[i].node);
	}
}

/*
 * Carry the engine's extents to the batched populate: one call per
 * VMB_XENMEM_POPB_MAX_EXTENTS (an engine batch fits in one), so one
 * filtered TLB flush per batch; Xen continues a preempted call by itself.
 * Stock Xen answers -ENOSYS, which the caller takes as "use
 * populate_physmap".
 */
int
xen_companion_populate(struct xen_be *be, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr,
    struct vmb_populate_stats *stats, size_t *ret_done)
{
	struct vmb_xen_populate_batch *arg;
	struct vmb_xen_populate_extent *he;
	struct vmb_populate_stats unused;
	size_t base = 0, i, n, cap = nr < VMB_XENMEM_POPB_MAX_EXTENTS ? nr :
	    VMB_XENMEM_POPB_MAX_EXTENTS;
	int rc = 0;

	*ret_done = 0;
	if (nr == 0)
		return 0;
	if (stats == NULL)
		stats = &unused;
	arg = xencall_alloc_buffer(be->xcall, sizeof(*arg));
	he = xencall_alloc_buffer(be->xcall, cap * sizeof(*he));
	if (arg == NULL || he == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	while (base < nr) {
		n = nr - base < cap ? nr - base : cap;
		xen_populate_fill(he, ext + base, n);
		memset(arg, 0, sizeof(*arg));
		arg->domid = (uint16_t)domid;
		arg->flags = ((flags & VMB_POPF_EXACT_NODE) ?
		    VMB_XENMEM_POPB_exact_node : 0) |
		    ((flags & VMB_POPF_ALLOW_DIRTY) ?
		    VMB_XENMEM_POPB_allow_dirty : 0);
		arg->nr_extents = (uint32_t)n;
		arg->extents = (uint64_t)(uintptr_t)he;
		rc = xen_populate_call(be, arg);
		if (arg->next > n) {
			/* No reply: nothing of this call is known to be done. */
			if (rc == 0 || ((rc == -ENOSYS || rc == -EOPNOTSUPP) &&
			    base > 0))
				rc = -EPROTO;
			break;
		}
		stats->calls++;
		stats->pages_scrubbed_inline += arg->stats.pages_scrubbed_inline;
		stats->pages_fallback += arg->stats.pages_offnode;
		stats->flushes_issued += arg->stats.flushes_issued;
		stats->flushes_avoided += arg->stats.flushes_avoided;
		stats->filter_evaluations += arg->stats.filter_evaluations;
		/* Xen's time in the call, its continuations added up. */
		stats->hv_ns += arg->stats.elapsed_ns;
		stats->have |= VMB_POPSTAT_HAVE_SCRUBBED_INLINE |
		    VMB_POPSTAT_HAVE_FALLBACK | VMB_POPSTAT_HAVE_FLUSHES |
		    VMB_POPSTAT_HAVE_FILTER | VMB_POPSTAT_HAVE_HV_TIME;
		for (i = 0; i < arg->next; i++)
			xen_count(stats, ext[base + i].order, ext[base + i].node,
			    1);
		base += arg->next;
		if (rc == 0 && arg->next != n)
			rc = -EPROTO;	/* success is every extent done */
		if (rc < 0)
			break;
	}
	*ret_done = base;
out:
	if (he != NULL)
		xencall_free_buffer(be->xcall, he);
	if (arg != NULL)
		xencall_free_buffer(be->xcall, arg);
	return rc;
}

/* Is the batched populate there?  See xen_companion_probe(). */
static bool
xen_populate_probe(struct xen_be *be)
{
	struct vmb_xen_populate_batch *arg;
	bool ok;

	arg = xencall_alloc_buffer(be->xcall, sizeof(*arg));
	if (arg == NULL)
		return false;
	memset(arg, 0, sizeof(*arg));
	arg->domid = DOMID_INVALID;
	ok = xen_populate_call(be, arg) == -ESRCH;
	xencall_free_buffer(be->xcall, arg);
	return ok;
}

void
xen_companion_probe(struct xen_be *be)
{
	struct vmb_xen_sysctl_scrub_node *nodes;
	struct hv_counters cnt;
	uint64_t now;
	int nd, nv;

	nodes = calloc(HV_MAX_NODES, sizeof(*nodes));
	if (nodes != NULL && xen_scrub_nodes(be, nodes, &now) > 0)
		be->companion |= XEN_COMP_SCRUB;
	free(nodes);
	if (xen_mm_stats(be, &cnt) == 0)
		be->companion |= XEN_COMP_COUNTERS;
	/*
	 * No domain has DOMID_INVALID: the op answers -ESRCH, stock Xen
	 * -ENOSYS, and nothing is populated either way.
	 */
	if (be->xcall != NULL && xen_populate_probe(be))
		be->companion |= XEN_COMP_POPULATE;

	if (xc_perfc_query_number(be->xch, &nd, &nv) == 0 && nd > 0)
		be->nr_perfc_desc = (unsigned)nd;
}

int
xen_companion_scrub(struct xen_be *be, struct vmb_scrub *ret_scrub)
{
	struct vmb_xen_sysctl_scrub_node *n;
	struct vmb_scrub s;
	uint64_t now, rate;
	int i, nr, rc;

	n = calloc(HV_MAX_NODES, sizeof(*n));
	if (n == NULL)
		return -ENOMEM;
	nr = xen_scrub_nodes(be, n, &now);
	if (nr < 0) {
		rc = nr;
		goto out;
	}
	memset(&s, 0, sizeof(s));
	s.have = VMB_SCRUB_HAVE_DIRTY | VMB_SCRUB_HAVE_SCRUBBED |
	    VMB_SCRUB_HAVE_RATE | VMB_SCRUB_HAVE_BOOT;
	for (i = 0; i < nr && i < VMB_MAX_NODES; i++) {
		struct vmb_scrub_node *o = &s.nodes[s.nr_nodes++];

		if (n[i].node >= HV_MAX_NODES) {
			rc = -EPROTO;
			goto out;
		}
		pthread_mutex_lock(&be->scrub_lock);
		rate = xen_series_scrub_rate(&be->scrub_rate[n[i].node], now,
		    n[i].scrubbed_pages);
		pthread_mutex_unlock(&be->scrub_lock);
		o->node = n[i].node;
		/* Xen's idle loop lets one CPU at a time scrub a node. */
		o->workers = 1;
		o->total_bytes = n[i].total_pages << HV_PAGE_SHIFT;
		o->free_bytes = n[i].free_pages << HV_PAGE_SHIFT;
		o->dirty_bytes = n[i].dirty_pages << HV_PAGE_SHIFT;
		o->scrubbed_bytes_total = n[i].scrubbed_pages << HV_PAGE_SHIFT;
		o->rate_bytes_per_sec = rate << HV_PAGE_SHIFT;
		o->boot_scrub_done =
		    (n[i].flags & VMB_XEN_SYSCTL_SCRUB_boot_done) != 0;
	}
	*ret_scrub = s;
	rc = 0;
out:
	free(n);
	return rc;
}

int
xen_companion_counters(struct xen_be *be, struct vmb_counters *ret_cnt)
{
	struct hv_counters h;
	int rc;

	rc = xen_mm_stats(be, &h);
	if (rc < 0)
		return rc;
	return vmb__counters_from_hv(&h, sizeof(h), VMB_CNT_HAVE_FLUSH |
	    VMB_CNT_HAVE_POPULATE | VMB_CNT_HAVE_SCRUB | VMB_CNT_HAVE_SHADOW,
	    ret_cnt);
}

/*
 * Xen perf counters, found by their description strings (what
 * XEN_SYSCTL_perfc_op returns; the C names are not exported).  A
 * scalar counter has one value per CPU, summed here.  Only the groups
 * whose counters are present get their `have` bit.
 */
int
xen_perfc_counters(struct xen_be *be, struct vmb_counters *ret_cnt)
{
	DECLARE_HYPERCALL_BUFFER(xc_perfc_desc_t, desc);
	DECLARE_HYPERCALL_BUFFER(xc_perfc_val_t, val);
	struct vmb_counters c;
	uint64_t flush = 0, early = 0, unshadow = 0, sum;
	bool have_flush = false, have_early = false, have_unshadow = false;
	unsigned i, j, v = 0;
	int nd, nv, rc;

	if (xc_perfc_query_number(be->xch, &nd, &nv) < 0)
		return -xen_errno();
	if (nd <= 0)
		return -EOPNOTSUPP;
	desc = xc_hypercall_buffer_alloc(be->xch, desc, sizeof(*desc) * nd);
	val = xc_hypercall_buffer_alloc(be->xch, val,
	    sizeof(*val) * (nv > 0 ? nv : 1));
	if (desc == NULL || val == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (xc_perfc_query(be->xch, HYPERCALL_BUFFER(desc),
	    HYPERCALL_BUFFER(val)) < 0) {
		rc = -xen_errno();
		goto out;
	}
	for (i = 0; i < (unsigned)nd; i++) {
		desc[i].name[sizeof(desc[i].name) - 1] = '\0';
		for (j = 0, sum = 0; j < desc[i].nr_vals &&
		    v + j < (unsigned)nv; j++)
			sum += val[v + j];
		v += desc[i].nr_vals;
		if (strcmp(desc[i].name, "PG_need_flush tlb flushes") == 0) {
			flush = sum;
			have_flush = true;
		} else if (strcmp(desc[i].name,
		    "shadow unshadows for fork/exit") == 0) {
			early = sum;
			have_early = true;
		} else if (strcmp(desc[i].name,
		    "shadow unshadows a page") == 0) {
			unshadow = sum;
			have_unshadow = true;
		}
	}
	memset(&c, 0, sizeof(c));
	if (have_flush) {
		/* Xen does not say why it flushed: all of it is "other". */
		c.have |= VMB_CNT_HAVE_FLUSH;
		c.v[VMB_CNT_TLB_ISSUED_OTHER] = flush;
	}
	if (have_early && have_unshadow) {
		/* every sh_remove_shadows() counts in "unshadows a page" */
		c.have |= VMB_CNT_HAVE_SHADOW;
		c.v[VMB_CNT_UNSHADOW_EARLY] = early;
		c.v[VMB_CNT_UNSHADOW_OTHER] = unshadow > early ?
		    unshadow - early : 0;
	}
	if (c.have == 0) {
		rc = -EOPNOTSUPP;
		goto out;
	}
	*ret_cnt = c;
	rc = 0;
out:
	xc_hypercall_buffer_free(be->xch, val);
	xc_hypercall_buffer_free(be->xch, desc);
	return rc;
}
