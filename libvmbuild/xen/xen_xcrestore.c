/*
 * xen_xcrestore.c - a PVH guest's libxc stream (v2/v3, x86 HVM type)
 * restored by vmbuild itself rather than by libxenguest's
 * xc_domain_restore: the "engine" restore (vmb_ctx_set_native_restore).
 * The build has populated the guest's RAM through the populate engine
 * (NUMA-local batches, superpages) as for a fresh create; the stream,
 * read by xen_xcstream.c, is applied here:
 *
 *   PAGE_DATA: the pfns with data mapped in one batch and the pages read
 *     from the stream straight into the mapping (no copy through a
 *     buffer).  A pfn the build did not populate (the special pages and
 *     ACPI tables in the MMIO hole, a page the guest ballooned in beyond
 *     its layout) fails to map: it is populated (4 KiB) and the batch
 *     mapped again.  XALLOC: populated, no data; XTAB, BROKEN: nothing.
 *   STATIC_DATA_END: the CPUID and MSR policies set
 *     (xc_set_domain_cpu_policy), when the stream had them.
 *   X86_TSC_INFO: xc_domain_set_tsc_info.
 *   HVM_PARAMS: each set; the console and store pfns kept and their
 *     pages cleared, as the ioreq pages (as libxenguest does: the
 *     consoled and xenstored of this host start them again);
 *     PAE_ENABLED, obsolete, dropped.
 *   END: the store and console event channels (allocated by the caller)
 *     set as HVM parameters, the HVM context (vCPUs, devices) set, the
 *     grant table seeded with the console and store pages.
 *
 * The same as libxenguest's xg_sr_restore.c and xg_sr_restore_x86_hvm.c
 * do for an HVM stream, read from the spec and checked against them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "vmb_internal.h"
#include "xen_priv.h"
#include "xen_xcstream.h"

#include <xenguest.h>
#include <xen/hvm/params.h>

struct xcr {
	struct xen_be	*be;
	xc_interface	*xch;
	uint32_t	domid;
	uint64_t	pfn_limit;
	uint32_t	store_port, store_domid;
	uint32_t	console_port, console_domid;
	uint64_t	store_gfn, console_gfn;
	/* One batch's pfns (as xen_pfn_t) and map errors. */
	xen_pfn_t	*gfns;
	int		*errs;
	xen_pfn_t	*fill;
	uint32_t	size;
	uint64_t	populated;	/* pfns populated here, on demand */
};

static int
grow(struct xcr *x, uint32_t count)
{
	xen_pfn_t *g, *f;
	int *e;

	if (count <= x->size)
		return 0;
	g = realloc(x->gfns, count * sizeof(*g));
	if (g != NULL)
		x->gfns = g;
	e = g ? realloc(x->errs, count * sizeof(*e)) : NULL;
	if (e != NULL)
		x->errs = e;
	f = e ? realloc(x->fill, count * sizeof(*f)) : NULL;
	if (f == NULL)
		return -ENOMEM;
	x->fill = f;
	x->size = count;
	return 0;
}

/*
 * Map x->gfns[0..n) read-write; those that do not map (not populated)
 * are populated and the whole mapped again.  The mapping, or NULL with
 * rc and why.
 */
static void *
map_populating(struct xcr *x, uint32_t n, int *rc, char *why, size_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		uint32_t nf = 0;
		void *m;

		m = xenforeignmemory_map(x->be->fmem, x->domid,
		    PROT_READ | PROT_WRITE, n, x->gfns, x->errs);
		if (m == NULL) {
			*rc = -xen_errno();
			snprintf(why, len, "cannot map %u pfns of domain %u: "
			    "%s", n, x->domid, strerror(-*rc));
			return NULL;
		}
		for (uint32_t i = 0; i < n; i++)
			if (x->errs[i] != 0)
				x->fill[nf++] = x->gfns[i];
		if (nf == 0)
			return m;
		xenforeignmemory_unmap(x->be->fmem, m, n);
		if (attempt > 0) {
			*rc = -EIO;
			snprintf(why, len, "pfn %#llx of domain %u does not map "
			    "even once populated",
			    (unsigned long long)x->fill[0], x->domid);
			return NULL;
		}
		/* Duplicates within a batch: each pfn populated once. */
		{
			uint32_t k = 0;

			for (uint32_t i = 0; i < nf; i++) {
				bool dup = false;

				for (uint32_t j = 0; j < k && !dup; j++)
					dup = x->fill[j] == x->fill[i];
				if (!dup)
					x->fill[k++] = x->fill[i];
			}
			nf = k;
		}
		if (xc_domain_populate_physmap_exact(x->xch, x->domid, nf, 0, 0,
		    x->fill) != 0) {
			*rc = -xen_errno();
			snprintf(why, len, "cannot populate %u pfns of domain %u "
			    "beyond its built memory (first %#llx): %s", nf,
			    x->domid, (unsigned long long)x->fill[0],
			    strerror(-*rc));
			return NULL;
		}
		x->populated += nf;
	}
	*rc = -EIO;
	snprintf(why, len, "mapping domain %u's pfns failed", x->domid);
	return NULL;
}

static int
on_pages(void *u, uint32_t count, const uint64_t *pfns, const uint32_t *types,
    uint32_t nr_data, void **dst, char *why, size_t len)
{
	struct xcr *x = u;
	uint32_t n = 0;
	void *m;
	int rc = 0;

	if (grow(x, count) < 0) {
		snprintf(why, len, "out of memory for %u pfns", count);
		return -ENOMEM;
	}
	/* Allocate-only pages: populated (if they are not), no data. */
	for (uint32_t i = 0; i < count; i++)
		if (types[i] == XCS_TYPE_XALLOC)
			x->gfns[n++] = (xen_pfn_t)pfns[i];
	if (n > 0) {
		if ((m = map_populating(x, n, &rc, why, len)) == NULL)
			return rc;
		xenforeignmemory_unmap(x->be->fmem, m, n);
	}
	if (nr_data == 0)
		return 0;
	n = 0;
	for (uint32_t i = 0; i < count; i++)
		if (types[i] != XCS_TYPE_XTAB && types[i] != XCS_TYPE_XALLOC &&
		    types[i] != XCS_TYPE_BROKEN)
			x->gfns[n++] = (xen_pfn_t)pfns[i];
	if (n != nr_data) {
		snprintf(why, len, "%u pfns with data, %u expected", n,
		    nr_data);
		return -EINVAL;
	}
	if ((m = map_populating(x, n, &rc, why, len)) == NULL)
		return rc;
	*dst = m;
	return 0;
}

static void
on_pages_done(void *u, void *dst, uint32_t nr_data, int rc)
{
	struct xcr *x = u;

	(void)rc;
	xenforeignmemory_unmap(x->be->fmem, dst, nr_data);
}

static int
on_static_data(void *u, const void *cpuid, uint32_t cpuid_len,
    const void *msr, uint32_t msr_len, char *why, size_t len)
{
	struct xcr *x = u;
	uint32_t nr_leaves = cpuid_len / sizeof(xen_cpuid_leaf_t);
	uint32_t nr_msrs = msr_len / sizeof(xen_msr_entry_t);
	uint32_t err_l = ~0u, err_s = ~0u, err_m = ~0u;
	int rc;

	/* None: the build's policy stays (libxenguest: the same). */
	if (nr_leaves == 0 && nr_msrs == 0)
		return 0;
	if (xc_set_domain_cpu_policy(x->xch, x->domid, nr_leaves,
	    (xen_cpuid_leaf_t *)cpuid, nr_msrs, (xen_msr_entry_t *)msr,
	    &err_l, &err_s, &err_m) != 0) {
		rc = -xen_errno();
		snprintf(why, len, "cannot set the CPU policy (%u leaves, %u "
		    "MSRs; leaf %#x subleaf %#x msr %#x): %s", nr_leaves,
		    nr_msrs, err_l, err_s, err_m, strerror(-rc));
		return rc;
	}
	return 0;
}

static int
on_tsc(void *u, const struct xcs_tsc *t, char *why, size_t len)
{
	struct xcr *x = u;
	int rc;

	if (xc_domain_set_tsc_info(x->xch, x->domid, t->mode, t->nsec, t->khz,
	    t->incarnation) != 0) {
		rc = -xen_errno();
		snprintf(why, len, "cannot set the TSC (mode %u, %u kHz): %s",
		    t->mode, t->khz, strerror(-rc));
		return rc;
	}
	return 0;
}

static int
on_hvm_params(void *u, uint32_t count, const uint64_t *index,
    const uint64_t *value, char *why, size_t len)
{
	struct xcr *x = u;
	int rc;

	for (uint32_t i = 0; i < count; i++) {
		bool page = false;

		if (index[i] >= HVM_NR_PARAMS) {
			snprintf(why, len, "entry %u: parameter %llu: over "
			    "Xen's %u", i, (unsigned long long)index[i],
			    HVM_NR_PARAMS);
			return -EINVAL;
		}
		switch (index[i]) {
		case HVM_PARAM_PAE_ENABLED:
			continue;	/* obsolete, as libxenguest drops it */
		case HVM_PARAM_CONSOLE_PFN:
			x->console_gfn = value[i];
			page = true;
			break;
		case HVM_PARAM_STORE_PFN:
			x->store_gfn = value[i];
			page = true;
			break;
		case HVM_PARAM_IOREQ_PFN:
		case HVM_PARAM_BUFIOREQ_PFN:
			page = true;
			break;
		}
		if (page && value[i] >= x->pfn_limit) {
			snprintf(why, len, "entry %u: parameter %llu: pfn "
			    "%#llx beyond the guest's limit %#llx", i,
			    (unsigned long long)index[i],
			    (unsigned long long)value[i],
			    (unsigned long long)x->pfn_limit);
			return -EINVAL;
		}
		/* Its old contents are the old host's: as libxenguest. */
		if (page)
			(void)xc_clear_domain_page(x->xch, x->domid,
			    (xen_pfn_t)value[i]);
		if (xc_hvm_param_set(x->xch, x->domid, (uint32_t)index[i],
		    value[i]) < 0) {
			rc = -xen_errno();
			snprintf(why, len, "cannot set HVM parameter %llu to "
			    "%#llx: %s", (unsigned long long)index[i],
			    (unsigned long long)value[i], strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int
on_end(void *u, const void *ctx, uint32_t ctx_len, char *why, size_t len)
{
	struct xcr *x = u;
	const char *step;

	step = "setting HVM_PARAM_STORE_EVTCHN";
	if (xc_hvm_param_set(x->xch, x->domid, HVM_PARAM_STORE_EVTCHN,
	    x->store_port) < 0)
		goto fail;
	step = "setting HVM_PARAM_CONSOLE_EVTCHN";
	if (xc_hvm_param_set(x->xch, x->domid, HVM_PARAM_CONSOLE_EVTCHN,
	    x->console_port) < 0)
		goto fail;
	step = "setting the HVM context";
	if (xc_domain_hvm_setcontext(x->xch, x->domid, (uint8_t *)ctx,
	    ctx_len) < 0)
		goto fail;
	step = "seeding the grant table";
	if (xc_dom_gnttab_seed(x->xch, x->domid, true,
	    (xen_pfn_t)x->console_gfn, (xen_pfn_t)x->store_gfn,
	    x->console_domid, x->store_domid) != 0)
		goto fail;
	return 0;
fail:
	{
		int rc = -xen_errno();

		snprintf(why, len, "%s: %s", step, strerror(-rc));
		return rc;
	}
}

int
xen_xcrestore(struct xen_be *be, xc_interface *xch, uint32_t domid, int fd,
    const struct xen_xcrestore_args *a, uint64_t *ret_store_gfn,
    uint64_t *ret_console_gfn, char *why, size_t len)
{
	static const struct xcs_ops ops = {
		.pages = on_pages,
		.pages_done = on_pages_done,
		.static_data = on_static_data,
		.tsc = on_tsc,
		.hvm_params = on_hvm_params,
		.end = on_end,
	};
	struct xcr x = { .be = be, .xch = xch, .domid = domid,
	    .pfn_limit = a->pfn_limit, .store_port = a->store_port,
	    .store_domid = a->store_domid, .console_port = a->console_port,
	    .console_domid = a->console_domid };
	struct xcs_stats st;
	uint64_t t0 = vmb__now_ns();
	int rc;

	rc = vmb__xcs_read(fd, a->pfn_limit, &ops, &x, &st, why, len);
	if (rc == 0) {
		*ret_store_gfn = x.store_gfn;
		*ret_console_gfn = x.console_gfn;
	}
	if (be->debug)
		fprintf(stderr, "xcrestore: domain %u: %s: v%u from Xen %u.%u, "
		    "%llu bytes, %u records, %llu PAGE_DATA, %llu pages, "
		    "%llu populated on demand, %.3f s\n", domid,
		    rc == 0 ? "restored" : "failed", st.version, st.xen_major,
		    st.xen_minor, (unsigned long long)st.bytes, st.records,
		    (unsigned long long)st.page_records,
		    (unsigned long long)st.pages,
		    (unsigned long long)x.populated,
		    (double)(vmb__now_ns() - t0) / 1e9);
	free(x.gfns);
	free(x.errs);
	free(x.fill);
	return rc;
}
