/*
 * xen_resize.c - a running domain's memory and vCPUs, as libxl does it:
 *   max_mem        xc_domain_setmaxmem (libxl_set_memory_target with
 *                  enforce, libxl_domain_setmaxmem)
 *   mem_note       memory/target or memory/static-max, in KiB
 *   vcpu_online    cpu/N/availability "online"/"offline" for every vCPU
 *                  (libxl__set_vcpuonline_xenstore: PV and PVH guests)
 *   vcpu_affinity  xc_vcpu_setaffinity (libxl_set_vcpuaffinity)
 *   vcpu_info      xc_vcpu_getinfo and xc_vcpu_getaffinity
 *                  (libxl_list_vcpu)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xen_priv.h"

int
xen_max_mem(void *priv, uint32_t domid, uint64_t pages)
{
	struct xen_be *be = priv;

	return xc_domain_setmaxmem(be->xch, domid, pages << 2) < 0 ?
	    -xen_errno() : 0;
}

struct note_arg {
	uint32_t domid;
	const char *rel;	/* NULL: the vCPUs' availability */
	uint64_t kib;
	uint32_t max, online;
};

static void
fill_note(struct xs_tx *tx, const void *varg)
{
	const struct note_arg *a = varg;
	char dom[XS_PATH_MAX], rel[64], v[32];

	snprintf(dom, sizeof(dom), "/local/domain/%u", a->domid);
	if (a->rel != NULL) {
		snprintf(v, sizeof(v), "%" PRIu64, a->kib);
		xen_xs_tx_write(tx, dom, a->rel, v, NULL, 0);
		return;
	}
	for (uint32_t i = 0; i < a->max && tx->err == 0; i++) {
		snprintf(rel, sizeof(rel), "cpu/%u/availability", i);
		xen_xs_tx_write(tx, dom, rel, i < a->online ? "online" :
		    "offline", NULL, 0);
	}
}

int
xen_mem_note(void *priv, uint32_t domid, bool static_max, uint64_t kib)
{
	struct note_arg a = { .domid = domid, .kib = kib,
	    .rel = static_max ? "memory/static-max" : "memory/target" };

	return xen_xs_transaction(priv, domid, fill_note, &a);
}

int
xen_vcpu_online(void *priv, uint32_t domid, uint32_t max, uint32_t online)
{
	struct note_arg a = { .domid = domid, .max = max, .online = online };

	return xen_xs_transaction(priv, domid, fill_note, &a);
}

static void
to_map(const uint64_t *bits, xc_cpumap_t map, int bytes)
{
	memset(map, 0, (size_t)bytes);
	for (int i = 0; i < bytes && i < VMB_MAX_CPUS / 8; i++)
		map[i] = (uint8_t)(bits[i / 8] >> (8 * (i % 8)));
}

static void
from_map(const xc_cpumap_t map, int bytes, uint64_t *bits)
{
	for (int i = 0; i < bytes && i < VMB_MAX_CPUS / 8; i++)
		bits[i / 8] |= (uint64_t)map[i] << (8 * (i % 8));
}

int
xen_vcpu_affinity(void *priv, uint32_t domid, uint32_t vcpu,
    const uint64_t *hard, const uint64_t *soft)
{
	struct xen_be *be = priv;
	xc_cpumap_t h = NULL, s = NULL;
	int bytes = xc_get_cpumap_size(be->xch), rc = 0;
	uint32_t flags = (hard ? XEN_VCPUAFFINITY_HARD : 0) |
	    (soft ? XEN_VCPUAFFINITY_SOFT : 0);

	if (bytes <= 0)
		return -xen_errno();
	h = xc_cpumap_alloc(be->xch);
	s = xc_cpumap_alloc(be->xch);
	if (h == NULL || s == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (hard)
		to_map(hard, h, bytes);
	if (soft)
		to_map(soft, s, bytes);
	if (flags && xc_vcpu_setaffinity(be->xch, domid, (int)vcpu, h, s,
	    flags) < 0)
		rc = -xen_errno();
out:
	free(h);
	free(s);
	return rc;
}

int
xen_vcpu_info(void *priv, uint32_t domid, uint32_t vcpu,
    struct vmb_vcpu_info *ret, uint64_t *hard, uint64_t *soft)
{
	struct xen_be *be = priv;
	xc_cpumap_t h = NULL, s = NULL;
	int bytes = xc_get_cpumap_size(be->xch), rc = 0;
	xc_vcpuinfo_t vi;

	if (bytes <= 0)
		return -xen_errno();
	memset(&vi, 0, sizeof(vi));
	if (xc_vcpu_getinfo(be->xch, domid, vcpu, &vi) < 0)
		return -xen_errno();
	ret->online = vi.online != 0;
	ret->running = vi.running != 0;
	ret->blocked = vi.blocked != 0;
	ret->cpu = vi.online ? (int32_t)vi.cpu : -1;
	ret->cpu_time_ns = vi.cpu_time;
	h = xc_cpumap_alloc(be->xch);
	s = xc_cpumap_alloc(be->xch);
	if (h == NULL || s == NULL)
		rc = -ENOMEM;
	else if (xc_vcpu_getaffinity(be->xch, domid, (int)vcpu, h, s,
	    XEN_VCPUAFFINITY_HARD | XEN_VCPUAFFINITY_SOFT) < 0)
		rc = -xen_errno();
	if (rc == 0) {
		from_map(h, bytes, hard);
		from_map(s, bytes, soft);
	}
	free(h);
	free(s);
	return rc;
}
