/*
 * xen_companion.c - what the xen backend can learn beyond stock Xen:
 * the companion sysctls of vmbuild's Xen patch series (scrub progress,
 * counters; see hvabi.h), and Xen's own perf counters when the
 * hypervisor was built with CONFIG_PERF_COUNTERS.
 *
 * Both are probed once at open.  An unknown sysctl gets -ENOSYS from
 * stock Xen, and XEN_SYSCTL_perfc_op gets -ENOSYS when perf counters are
 * compiled out (Debian's build): then the backend reports them as
 * unavailable, never as zero.
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

void
xen_companion_probe(struct xen_be *be)
{
	struct hv_counters cnt;
	void *scrub;
	int nd, nv;

	scrub = malloc(XEN_SCRUB_BUF);
	if (scrub != NULL &&
	    xen_companion_call(be, HV_XEN_SYSCTL_SCRUB_PROGRESS, scrub,
	    XEN_SCRUB_BUF) >= (int)sizeof(struct hv_scrub_reply))
		be->companion |= XEN_COMP_SCRUB;
	free(scrub);
	if (xen_companion_call(be, HV_XEN_SYSCTL_COUNTERS, &cnt,
	    sizeof(cnt)) == (int)sizeof(cnt) && cnt.version == HV_ABI_VERSION)
		be->companion |= XEN_COMP_COUNTERS;

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
	if ((size_t)got < sizeof(*rep) || rep->nr_nodes > HV_MAX_NODES ||
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
