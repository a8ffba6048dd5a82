/*
 * platform.c - the build steps that give a domain its platform, each a
 * small function the build's phase sequence calls (build.c):
 *
 *   vmb__step_paging    HAP or shadow paging, from hap= and what the host
 *                       can do (before create)
 *   vmb__step_platform  vNUMA, vCPU hard and soft affinity, CPUID, TSC
 *                       and timer modes: the backend's platform op, right
 *                       after create, before any memory is populated
 *   vmb__step_firmware  special pages and ACPI tables (the backend's
 *                       firmware op) and the guest's memory map, after
 *                       populate, before the image is loaded
 *
 * None leaves anything that destroying the domain does not take back:
 * their undo is the build's undo (destroy), nothing of their own.
 * Each says why it failed in `why`, for the build's error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

#define BITS_WORDS	(VMB_MAX_CPUS / 64)

/* Set (or clear) every CPU of host node `node` in bits. */
static bool
node_cpus(const struct vmb_host *h, unsigned node, bool clear, uint64_t *bits)
{
	bool any = false;

	for (uint32_t i = 0; h->cpus && i < h->nr_cpus; i++) {
		uint32_t c = h->cpus[i].cpu;

		if (h->cpus[i].node != node || c >= VMB_MAX_CPUS)
			continue;
		if (clear)
			bits[c / 64] &= ~(1ull << (c % 64));
		else
			bits[c / 64] |= 1ull << (c % 64);
		any = true;
	}
	return any;
}

static bool
host_has_cpu(const struct vmb_host *h, unsigned cpu)
{
	for (uint32_t i = 0; h->cpus && i < h->nr_cpus; i++)
		if (h->cpus[i].cpu == cpu)
			return true;
	return false;
}

int
vmb__cpus_resolve(const char *key, const char *s, const struct vmb_host *h,
    uint64_t *bits, char *why, size_t why_len)
{
	struct vmb__cpus_item it[VMB_CPUS_ITEMS_MAX];
	int n = vmb__cpus_parse(s, it, VMB_CPUS_ITEMS_MAX);
	bool any = false;

	memset(bits, 0, BITS_WORDS * sizeof(*bits));
	if (n < 0) {
		vmb__why(why, why_len, "%s=\"%s\": not a CPU list", key, s);
		return -EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (it[i].all) {
			for (uint32_t k = 0; k < h->nr_nodes; k++)
				node_cpus(h, h->nodes[k].node, it[i].neg, bits);
			continue;
		}
		for (unsigned x = it[i].lo; x <= it[i].hi; x++) {
			if (it[i].node ? !node_cpus(h, x, it[i].neg, bits) :
			    !host_has_cpu(h, x)) {
				vmb__why(why, why_len, "%s=\"%s\": %s %u does "
				    "not exist (the host has %u %s)", key, s,
				    it[i].node ? "node" : "CPU", x, it[i].node ?
				    h->nr_nodes : h->nr_cpus, it[i].node ?
				    "nodes with CPUs" : "CPUs");
				return -EINVAL;
			}
			if (it[i].node)
				continue;
			if (it[i].neg)
				bits[x / 64] &= ~(1ull << (x % 64));
			else
				bits[x / 64] |= 1ull << (x % 64);
		}
	}
	for (int w = 0; w < BITS_WORDS; w++)
		any |= bits[w] != 0;
	if (!any) {
		vmb__why(why, why_len, "%s=\"%s\" leaves no CPU", key, s);
		return -EINVAL;
	}
	return 0;
}

int
vmb__step_paging(const struct vmb_guest *g, uint32_t caps, bool *ret_hap,
    char *why, size_t why_len)
{
	bool asked = g->keys_set & (1ull << VMB_KEY_HAP);

	if (asked && g->hap && !(caps & VMB_CAP_HAP)) {
		vmb__why(why, why_len, "hap=1: the host has no hardware-"
		    "assisted paging (Xen's virt_caps lack hap)");
		return -EOPNOTSUPP;
	}
	if (asked && !g->hap && !(caps & VMB_CAP_SHADOW)) {
		vmb__why(why, why_len, "hap=0: the hypervisor has no shadow "
		    "paging (not compiled in: Xen's virt_caps lack shadow)");
		return -EOPNOTSUPP;
	}
	if (!(caps & (VMB_CAP_HAP | VMB_CAP_SHADOW))) {
		vmb__why(why, why_len, "the host can do neither hardware-"
		    "assisted nor shadow paging: no PVH guest can run");
		return -EOPNOTSUPP;
	}
	/* As libxl: HAP where the host has it, unless hap=0 says not. */
	*ret_hap = asked ? g->hap : (caps & VMB_CAP_HAP) != 0;
	return 0;
}

/* The CPU bitmaps of the platform op, in one allocation. */
struct maps {
	uint64_t hard[BITS_WORDS];
	uint64_t soft[VMB_MAX_VNODES][BITS_WORDS];
};

/*
 * Soft affinity as libxl gives it: cpus_soft= for every vCPU; else, for
 * a vNUMA guest, each vCPU its vnode's host node (set_vnuma_affinity);
 * else the nodes the guest was placed on (numa_place_domain).
 */
static int
soft_maps(const struct vmb_guest *g, const struct vmb_layout *l,
    const struct vmb_placement *pl, const struct vmb_host *h,
    struct maps *m, struct vmb_platform *p, char *why, size_t why_len)
{
	int rc;

	if (g->cpus_soft) {
		rc = vmb__cpus_resolve("cpus_soft", g->cpus_soft, h,
		    m->soft[0], why, why_len);
		if (rc)
			return rc;
		p->soft[0] = m->soft[0];
		return 0;
	}
	if (l->nr_vnodes) {
		for (uint32_t v = 0; v < l->nr_vnodes; v++) {
			node_cpus(h, l->vnode_pnode[v], false, m->soft[v]);
			p->soft[v] = m->soft[v];
		}
		p->soft_per_vnode = true;
		return 0;
	}
	for (uint32_t i = 0; i < pl->nr_nodes; i++)
		node_cpus(h, pl->nodes[i], false, m->soft[0]);
	p->soft[0] = m->soft[0];
	return 0;
}

int
vmb__step_platform(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *g, const struct vmb_layout *l,
    const struct vmb_placement *pl, const struct vmb_host *h,
    char *why, size_t why_len)
{
	struct vmb_platform p = { .guest = g, .layout = l };
	struct maps *m;
	int rc;

	if (!ctx->ops->platform)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	if (g->cpus && strcmp(g->cpus, "all") != 0) {
		rc = vmb__cpus_resolve("cpus", g->cpus, h, m->hard, why,
		    why_len);
		if (rc)
			goto out;
		p.hard = m->hard;
	}
	rc = soft_maps(g, l, pl, h, m, &p, why, why_len);
	if (rc)
		goto out;
	rc = ctx->ops->platform(ctx->priv, domid, &p);
	if (rc)
		vmb__why(why, why_len, "cannot set the domain's platform "
		    "(vNUMA, affinity, CPUID, TSC): %s", strerror(-rc));
out:
	free(m);
	return rc;
}

int
vmb__step_firmware(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *g, const struct vmb_layout *l,
    struct vmb_firmware *ret_fw, struct vmb_memmap_entry *memmap,
    uint32_t *ret_nr, char *why, size_t why_len)
{
	struct vmb_platform p = { .guest = g, .layout = l };
	struct vmb_firmware fw;
	int rc;

	memset(&fw, 0, sizeof(fw));
	if (ctx->ops->firmware) {
		rc = ctx->ops->firmware(ctx->priv, domid, &p, &fw);
		if (rc) {
			vmb__why(why, why_len, "cannot set up the special "
			    "pages and ACPI tables: %s", strerror(-rc));
			return rc;
		}
	}
	rc = vmb__memmap(l, &fw, memmap, VMB_MEMMAP_MAX);
	if (rc < 0) {
		vmb__why(why, why_len, "the firmware's regions overlap the "
		    "guest's RAM");
		return rc;
	}
	*ret_nr = (uint32_t)rc;
	*ret_fw = fw;
	return 0;
}
