/*
 * xen_platform.c - the platform op: what libxl sets on a new PVH or HVM domain
 * before any memory is populated (libxl__build_pre, set_vnuma_info and
 * set_vnuma_affinity in libxl_dom.c; libxl__arch_domain_create and
 * hvm_set_conf_params in libxl_x86.c; libxl__cpuid_legacy), in its order:
 *
 *   1. vNUMA (XEN_DOMCTL_setvnumainfo): the vnodes of the layout, their
 *      memory ranges, distances, vCPUs and host nodes;
 *   2. vCPU hard affinity (cpus=) and soft affinity (cpus_soft=, else
 *      each vCPU its vnode's host node, else the placed nodes);
 *   3. HVM parameters (xen_hvm.c): for PVH timer mode and altp2m off;
 *      for HVM also HPET, vpt_align, Viridian, and the RTC's offset;
 *   4. TSC mode;
 *   5. the CPUID policy, as libxl applies it to a PVH guest: PAE on, no
 *      invariant TSC (libxl advertises it only with nomigrate or an
 *      emulated TSC), no nested virtualisation.
 *
 * vmbuild differs from libxl in that a guest placed on several nodes
 * without vnuma= gets a vnode per node (layout.c), so steps 1 and 2
 * apply to it too.  Node affinity and the paging pool are set at create
 * (backend_xen.c), the memory limit too.  Nothing here needs an undo of
 * its own: it all goes with the domain.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xen_priv.h"

static int
xen_vnuma(struct xen_be *be, uint32_t domid, const struct vmb_layout *l)
{
	xen_vmemrange_t range[VMB_MAX_RANGES];
	unsigned int dist[VMB_MAX_VNODES * VMB_MAX_VNODES];
	unsigned int vcpu[VMB_MAX_VCPUS], pnode[VMB_MAX_VNODES];
	uint32_t n = l->nr_vnodes;

	if (n == 0)
		return 0;
	for (uint32_t r = 0; r < l->nr_ranges; r++)
		range[r] = (xen_vmemrange_t){
		    .start = l->ranges[r].gfn << XC_PAGE_SHIFT,
		    .end = (l->ranges[r].gfn + l->ranges[r].pages) <<
			XC_PAGE_SHIFT,
		    .nid = l->ranges[r].vnode };
	for (uint32_t i = 0; i < n; i++) {
		pnode[i] = l->vnode_pnode[i];
		for (uint32_t j = 0; j < n; j++)
			dist[i * n + j] = l->vdistance[i][j];
	}
	for (uint32_t c = 0; c < l->nr_vcpus; c++)
		vcpu[c] = l->vcpu_vnode[c];
	return xc_domain_setvnuma(be->xch, domid, n, l->nr_ranges,
	    l->nr_vcpus, range, dist, vcpu, pnode) < 0 ? -xen_errno() : 0;
}

/* A VMB_MAX_CPUS bitmap into an xc_cpumap_t of `bytes`. */
static void
to_cpumap(const uint64_t *bits, xc_cpumap_t map, int bytes)
{
	memset(map, 0, (size_t)bytes);
	for (int i = 0; i < bytes && i < VMB_MAX_CPUS / 8; i++)
		map[i] = (uint8_t)(bits[i / 8] >> (8 * (i % 8)));
}

static int
xen_affinity(struct xen_be *be, uint32_t domid, const struct vmb_platform *p)
{
	const struct vmb_layout *l = p->layout;
	xc_cpumap_t hard = NULL, soft = NULL;
	int bytes = xc_get_cpumap_size(be->xch), rc = 0;

	if (bytes <= 0)
		return -xen_errno();
	hard = xc_cpumap_alloc(be->xch);
	soft = xc_cpumap_alloc(be->xch);
	if (hard == NULL || soft == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t c = 0; c < l->nr_vcpus && rc == 0; c++) {
		const uint64_t *s = p->soft[p->soft_per_vnode ?
		    l->vcpu_vnode[c] : 0];
		uint32_t flags = 0;

		if (p->hard) {
			to_cpumap(p->hard, hard, bytes);
			flags |= XEN_VCPUAFFINITY_HARD;
		}
		if (s) {
			to_cpumap(s, soft, bytes);
			flags |= XEN_VCPUAFFINITY_SOFT;
		}
		if (flags && xc_vcpu_setaffinity(be->xch, domid, (int)c, hard,
		    soft, flags) < 0)
			rc = -xen_errno();
	}
out:
	free(hard);
	free(soft);
	return rc;
}

int
xen_platform(void *priv, uint32_t domid, const struct vmb_platform *p)
{
	struct xen_be *be = priv;
	int rc;

	if (p == NULL || p->layout == NULL || p->guest == NULL)
		return -EINVAL;
	rc = xen_vnuma(be, domid, p->layout);
	if (rc == 0)
		rc = xen_affinity(be, domid, p);
	if (rc < 0)
		return rc;
	rc = xen_hvm_params_set(be, domid, p->guest);
	if (rc < 0)
		return rc;
	if (xc_domain_set_tsc_info(be->xch, domid, (uint32_t)p->guest->tsc_mode,
	    0, 0, 0) < 0)
		return -xen_errno();
	/* xc_cpuid_apply_policy returns -errno itself. */
	rc = xc_cpuid_apply_policy(be->xch, domid, false, NULL, 0, true,
	    p->guest->tsc_mode == VMB_TSC_ALWAYS_EMULATE, false, NULL, NULL);
	return rc < 0 ? rc : 0;
}
