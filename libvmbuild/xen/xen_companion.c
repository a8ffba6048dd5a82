/*
 * xen_companion.c - what the xen backend can do beyond stock Xen: the
 * companion hypercalls of vmbuild's Xen patch series (hypervisor/xen;
 * hvabi.h): the scrub-progress and counters sysctls, the batched
 * populate memory op; and Xen's own perf counters when the hypervisor
 * was built with CONFIG_PERF_COUNTERS.
 *
 * All are probed once at open.  An unknown sysctl or memory op gets
 * -ENOSYS from stock Xen, and XEN_SYSCTL_perfc_op gets -ENOSYS when perf
 * counters are compiled out (Debian's build): then the backend reports
 * them as unavailable, never as zero, and populates with stock
 * XENMEM_populate_physmap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <vmbuild/hvabi.h>

#include "vmb_internal.h"
#include "xen_priv.h"

#define XEN_SCRUB_BUF	(sizeof(struct hv_scrub_reply) + \
			 HV_MAX_NODES * sizeof(struct hv_scrub_node))

/*
 * One companion sysctl: the reply lands in a hypercall buffer of `size`
 * bytes, then is copied to `out`.  Returns the bytes written or -errno.
 */
static int
xen_companion_call(struct xen_be *be, uint32_t cmd, void *out, size_t size)
{
	struct xen_sysctl *sc = NULL;
	struct hv_xen_sysctl_buf req;
	void *buf = NULL;
	int rc;

	if (be->xcall == NULL)
		return -ENOSYS;
	sc = xencall_alloc_buffer(be->xcall, sizeof(*sc));
	buf = xencall_alloc_buffer(be->xcall, size);
	if (sc == NULL || buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	memset(sc, 0, sizeof(*sc));
	memset(buf, 0, size);
	memset(&req, 0, sizeof(req));
	req.buf = (uint64_t)(uintptr_t)buf;
	req.size = (uint32_t)size;
	sc->cmd = cmd;
	sc->interface_version = XEN_SYSCTL_INTERFACE_VERSION;
	memcpy(&sc->u, &req, sizeof(req));
	rc = xencall1(be->xcall, __HYPERVISOR_sysctl, (uint64_t)(uintptr_t)sc);
	if (rc < 0) {
		rc = -xen_errno();
		goto out;
	}
	memcpy(&req, &sc->u, sizeof(req));
	if (req.size > size) {
		rc = -EPROTO;
		goto out;
	}
	memcpy(out, buf, req.size);
	rc = (int)req.size;
out:
	if (buf != NULL)
		xencall_free_buffer(be->xcall, buf);
	if (sc != NULL)
		xencall_free_buffer(be->xcall, sc);
	return rc;
}

/*
 * One batched populate call on the hypercall buffer `arg` (request and
 * extents filled in).  Returns 0 or -errno; arg->rep holds Xen's reply
 * when it wrote one (its version is then HV_ABI_VERSION).
 */
static int
xen_populate_call(struct xen_be *be, struct hv_xen_populate *arg)
{
	memset(&arg->rep, 0, sizeof(arg->rep));
	if (xencall2(be->xcall, __HYPERVISOR_memory_op,
	    HV_XEN_XENMEM_POPULATE_BATCH, (uint64_t)(uintptr_t)arg) < 0)
		return -xen_errno();
	return 0;
}

/*
 * Carry the engine's extents to the batched populate: one call per
 * HV_MAX_EXTENTS (an engine batch fits in one), so one filtered TLB
 * flush per batch; Xen continues a preempted call by itself.  Stock Xen
 * answers -ENOSYS, which the caller takes as "use populate_physmap".
 */
int
xen_companion_populate(struct xen_be *be, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr,
    struct vmb_populate_stats *stats, size_t *ret_done)
{
	struct hv_xen_populate *arg;
	struct hv_extent *he;
	const struct hv_populate_reply *rep;
	struct vmb_populate_stats unused;
	size_t base = 0, i, n, cap = nr < HV_MAX_EXTENTS ? nr : HV_MAX_EXTENTS;
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
	rep = &arg->rep;
	while (base < nr) {
		n = nr - base < cap ? nr - base : cap;
		memset(he, 0, n * sizeof(*he));
		for (i = 0; i < n; i++) {
			he[i].gfn = ext[base + i].gfn;
			he[i].order = (uint8_t)ext[base + i].order;
			he[i].node = (uint16_t)(ext[base + i].node ==
			    VMB_NODE_ANY ? HV_NODE_ANY : ext[base + i].node);
		}
		memset(arg, 0, sizeof(*arg));
		arg->req.domid = domid;
		arg->req.flags = ((flags & VMB_POPF_EXACT_NODE) ?
		    HV_POPF_EXACT_NODE : 0) | ((flags & VMB_POPF_ALLOW_DIRTY) ?
		    HV_POPF_ALLOW_DIRTY : 0);
		arg->req.nr_extents = (uint32_t)n;
		arg->extents = (uint64_t)(uintptr_t)he;
		rc = xen_populate_call(be, arg);
		if (rep->version != HV_ABI_VERSION || rep->next > n) {
			/* No reply: nothing of this call is known to be done. */
			if (rc == 0 || ((rc == -ENOSYS || rc == -EOPNOTSUPP) &&
			    base > 0))
				rc = -EPROTO;
			break;
		}
		stats->calls++;
		stats->pages_scrubbed_inline += rep->stats.pages_scrubbed_inline;
		stats->pages_fallback += rep->stats.pages_fallback;
		stats->flushes_issued += rep->stats.flushes_issued;
		stats->flushes_avoided += rep->stats.flushes_avoided;
		stats->filter_evaluations += rep->stats.filter_evaluations;
		stats->have |= VMB_POPSTAT_HAVE_SCRUBBED_INLINE |
		    VMB_POPSTAT_HAVE_FALLBACK | VMB_POPSTAT_HAVE_FLUSHES |
		    VMB_POPSTAT_HAVE_FILTER;
		for (i = 0; i < rep->next; i++)
			xen_count(stats, ext[base + i].order, ext[base + i].node,
			    1);
		base += rep->next;
		if (rc == 0 && rep->next != n)
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
	struct hv_xen_populate *arg;
	bool ok;

	arg = xencall_alloc_buffer(be->xcall, sizeof(*arg));
	if (arg == NULL)
		return false;
	memset(arg, 0, sizeof(*arg));
	arg->req.domid = DOMID_INVALID;
	ok = xen_populate_call(be, arg) == -ESRCH;
	xencall_free_buffer(be->xcall, arg);
	return ok;
}

void
xen_companion_probe(struct xen_be *be)
{
	struct hv_counters cnt;
	void *scrub;
	int nd, nv;

	scrub = malloc(XEN_SCRUB_BUF);
	if (scrub != NULL &&
	    xen_companion_call(be, HV_XEN_SYSCTL_SCRUB_PROGRESS, scrub,
	    XEN_SCRUB_BUF) >= (int)sizeof(struct hv_scrub_reply) &&
	    ((struct hv_scrub_reply *)scrub)->version == HV_ABI_VERSION)
		be->companion |= XEN_COMP_SCRUB;
	free(scrub);
	if (xen_companion_call(be, HV_XEN_SYSCTL_COUNTERS, &cnt,
	    sizeof(cnt)) == (int)sizeof(cnt) && cnt.version == HV_ABI_VERSION)
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
	struct hv_scrub_reply *rep;
	struct hv_scrub_node *n;
	struct vmb_scrub s;
	uint32_t i;
	int got, rc;

	rep = malloc(XEN_SCRUB_BUF);
	if (rep == NULL)
		return -ENOMEM;
	got = xen_companion_call(be, HV_XEN_SYSCTL_SCRUB_PROGRESS, rep,
	    XEN_SCRUB_BUF);
	if (got < 0) {
		rc = got;
		goto out;
	}
	if ((size_t)got < sizeof(*rep) || rep->version != HV_ABI_VERSION ||
	    rep->nr_nodes > HV_MAX_NODES ||
	    (size_t)got < sizeof(*rep) + rep->nr_nodes * sizeof(*n)) {
		rc = -EPROTO;
		goto out;
	}
	memset(&s, 0, sizeof(s));
	s.have = VMB_SCRUB_HAVE_DIRTY | VMB_SCRUB_HAVE_SCRUBBED |
	    VMB_SCRUB_HAVE_RATE | VMB_SCRUB_HAVE_BOOT;
	n = (struct hv_scrub_node *)(rep + 1);
	for (i = 0; i < rep->nr_nodes && i < VMB_MAX_NODES; i++) {
		struct vmb_scrub_node *o = &s.nodes[s.nr_nodes++];

		o->node = n[i].node;
		o->workers = n[i].workers;
		o->total_bytes = n[i].total_pages << HV_PAGE_SHIFT;
		o->free_bytes = n[i].free_pages << HV_PAGE_SHIFT;
		o->dirty_bytes = n[i].dirty_pages << HV_PAGE_SHIFT;
		o->scrubbed_bytes_total =
		    n[i].scrubbed_pages_total << HV_PAGE_SHIFT;
		o->rate_bytes_per_sec = n[i].rate_pages_per_sec << HV_PAGE_SHIFT;
		o->boot_scrub_done = n[i].boot_scrub_done != 0;
	}
	*ret_scrub = s;
	rc = 0;
out:
	free(rep);
	return rc;
}

int
xen_companion_counters(struct xen_be *be, struct vmb_counters *ret_cnt)
{
	struct hv_counters h;
	int got;

	got = xen_companion_call(be, HV_XEN_SYSCTL_COUNTERS, &h, sizeof(h));
	if (got < 0)
		return got;
	return vmb__counters_from_hv(&h, (size_t)got, VMB_CNT_HAVE_FLUSH |
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
