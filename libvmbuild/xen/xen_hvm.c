/*
 * xen_hvm.c - what an HVM guest (hvmloader, SeaBIOS, qemu-xen) needs of
 * Xen beyond what a PVH guest does, as libxl 4.17 and libxenguest set it
 * up for a guest with a device model:
 *
 *   - the HVM parameters at create (libxl_x86.c hvm_set_conf_params and
 *     hvm_set_viridian_features): HPET, vpt_align, timer mode, altp2m
 *     off, the Viridian groups xl enables with viridian = 1; a PVH guest
 *     gets the timer mode and altp2m only (xen_hvm_params, one list for
 *     both, which xen_platform.c applies); the RTC's offset (localtime,
 *     rtc_timeoffset);
 *   - the ioreq server pages below the special pages, which the device
 *     model's ioreq server may use (xg_dom_x86.c alloc_magic_pages_hvm);
 *   - the memory map Xen hands hvmloader through XENMEM_memory_map
 *     (libxl_x86.c domain_construct_memmap): low RAM from 1 MiB, high
 *     RAM above 4 GiB, nothing else (hvmloader builds the guest's E820,
 *     its ACPI tables and its reserved ranges itself);
 *   - the hvm_info_table hvmloader reads at HVM_INFO_PFN: RAM ends, where
 *     the reserved pages start, vCPUs and which are online (xg_dom_x86.c
 *     build_hvm_info, libxl_dom.c hvm_build_set_params).
 *
 * The pure parts (the parameter list, the memory map, the table) are
 * separate from the calls into Xen so that tests/xenbe checks them.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "xen_priv.h"

/* After xenctrl.h (in xen_priv.h), which these rely on. */
#include <xen/hvm/hvm_info_table.h>
#include <xen/hvm/params.h>

/* hvmloader's RAM starts above the BIOS area (libxl's GUEST_LOW_MEM_START_DEFAULT). */
#define HVM_LOW_MEM_START	0x100000ull

/* The Viridian groups libxl enables for viridian = 1 ("defaults"). */
#define VIRIDIAN_DEFAULTS	(HVMPV_base_freq | HVMPV_time_ref_count | \
	HVMPV_apic_assist | HVMPV_crash_ctl | HVMPV_no_vp_limit | \
	HVMPV_cpu_hotplug)

size_t
xen_hvm_params(const struct vmb_guest *g, struct xen_hvm_setting *out)
{
	size_t n = 0;
	bool hvm = g->type == VMB_GUEST_HVM;

	/* In libxl's order; vpt_align and mca_caps have no key: defaults. */
	if (hvm) {
		out[n++] = (struct xen_hvm_setting){ HVM_PARAM_HPET_ENABLED,
		    g->hvm.hpet ? 1 : 0 };
		out[n++] = (struct xen_hvm_setting){ HVM_PARAM_VPT_ALIGN, 1 };
	}
	out[n++] = (struct xen_hvm_setting){ HVM_PARAM_TIMER_MODE,
	    (uint64_t)g->timer_mode };
	out[n++] = (struct xen_hvm_setting){ HVM_PARAM_ALTP2M, 0 };
	/* An empty mask is not set at all, as libxl. */
	if (hvm && g->hvm.viridian)
		out[n++] = (struct xen_hvm_setting){ HVM_PARAM_VIRIDIAN,
		    VIRIDIAN_DEFAULTS };
	return n;
}

int32_t
xen_hvm_time_offset(const struct vmb_guest *g, long gmtoff)
{
	uint32_t off = g->type == VMB_GUEST_HVM ? g->hvm.rtc_timeoffset : 0;

	/* As libxl: the local time's offset added to rtc_timeoffset. */
	if (g->type == VMB_GUEST_HVM && g->hvm.localtime)
		off += (uint32_t)gmtoff;
	return (int32_t)off;
}

int
xen_hvm_params_set(struct xen_be *be, uint32_t domid,
    const struct vmb_guest *g)
{
	struct xen_hvm_setting p[XEN_HVM_MAX_PARAMS];
	size_t n = xen_hvm_params(g, p);
	long gmtoff = 0;
	int32_t off;

	for (size_t i = 0; i < n; i++)
		if (xc_hvm_param_set(be->xch, domid, p[i].index,
		    p[i].value) < 0)
			return -xen_errno();
	if (g->type == VMB_GUEST_HVM && g->hvm.localtime) {
		time_t t = time(NULL);
		struct tm tm;

		if (localtime_r(&t, &tm) == NULL)
			return -EINVAL;
		gmtoff = tm.tm_gmtoff;
	}
	off = xen_hvm_time_offset(g, gmtoff);
	if (off != 0 && xc_domain_set_time_offset(be->xch, domid, off) < 0)
		return -xen_errno();
	return 0;
}

int
xen_hvm_memmap(const struct vmb_memmap_entry *in, uint32_t n,
    struct e820entry *out, uint32_t cap, uint64_t *ret_low,
    uint64_t *ret_high)
{
	uint32_t k = 0;

	*ret_low = *ret_high = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t start = in[i].addr, end = in[i].addr + in[i].size;

		/* hvmloader reserves the rest itself (libxl passes RAM only). */
		if (in[i].type != VMB_E820_RAM)
			continue;
		if (start < HVM_LOW_MEM_START) {
			if (end <= HVM_LOW_MEM_START)
				return -EINVAL;	/* no RAM for hvmloader */
			start = HVM_LOW_MEM_START;
		}
		if (k == cap)
			return -E2BIG;
		out[k++] = (struct e820entry){ .addr = start,
		    .size = end - start, .type = VMB_E820_RAM };
		if (end <= (1ull << 32))
			*ret_low = end > *ret_low ? end : *ret_low;
		else
			*ret_high = end > *ret_high ? end : *ret_high;
	}
	if (k == 0 || *ret_low == 0)
		return -EINVAL;
	return (int)k;
}

void
xen_hvm_info_fill(const struct xen_hvm_info *hi, uint8_t *page)
{
	struct hvm_info_table t;
	uint8_t sum = 0;

	memset(page, 0, XC_PAGE_SIZE);
	memset(&t, 0, sizeof(t));
	memcpy(t.signature, "HVM INFO", sizeof(t.signature));
	t.length = sizeof(t);
	t.apic_mode = 1;	/* libxl's apic=1 default; vmbuild has no key */
	t.nr_vcpus = hi->nr_vcpus;
	for (uint32_t v = 0; v < hi->online && v < HVM_MAX_VCPUS; v++)
		t.vcpu_online[v / 8] |= (uint8_t)(1u << (v % 8));
	t.low_mem_pgend = (uint32_t)(hi->lowmem_end >> XC_PAGE_SHIFT);
	t.high_mem_pgend = (uint32_t)(hi->highmem_end >> XC_PAGE_SHIFT);
	/* Where the ioreq server and special pages start: hvmloader's hole. */
	t.reserved_mem_pgstart = XEN_IOREQ_SERVER_GFN(0);
	for (size_t i = 0; i < sizeof(t); i++)
		sum += ((const uint8_t *)&t)[i];
	t.checksum = (uint8_t)-sum;
	memcpy(page + HVM_INFO_OFFSET, &t, sizeof(t));
}

int
xen_hvm_info_load(struct xen_be *be, uint32_t domid,
    const struct xen_hvm_info *hi)
{
	xen_pfn_t gfn = HVM_INFO_PFN;
	uint8_t *page;
	int err = 0;

	page = xenforeignmemory_map(be->fmem, domid, PROT_READ | PROT_WRITE,
	    1, &gfn, &err);
	if (page == NULL)
		return -xen_errno();
	if (err == 0)
		xen_hvm_info_fill(hi, page);
	(void)xenforeignmemory_unmap(be->fmem, page, 1);
	return err < 0 ? err : -err;
}

int
xen_hvm_ioreq_pages(struct xen_be *be, uint32_t domid)
{
	xen_pfn_t gfns[XEN_IOREQ_SERVER_NR];

	for (uint32_t i = 0; i < XEN_IOREQ_SERVER_NR; i++)
		gfns[i] = XEN_IOREQ_SERVER_GFN(i);
	if (xc_domain_populate_physmap_exact(be->xch, domid,
	    XEN_IOREQ_SERVER_NR, 0, 0, gfns) < 0)
		return -xen_errno();
	if (xc_clear_domain_pages(be->xch, domid, XEN_IOREQ_SERVER_GFN(0),
	    XEN_IOREQ_SERVER_NR) < 0 ||
	    xc_hvm_param_set(be->xch, domid, HVM_PARAM_IOREQ_SERVER_PFN,
	    XEN_IOREQ_SERVER_GFN(0)) < 0 ||
	    xc_hvm_param_set(be->xch, domid, HVM_PARAM_NR_IOREQ_SERVER_PAGES,
	    XEN_IOREQ_SERVER_NR) < 0)
		return -xen_errno();
	return 0;
}

void
xen_hvm_ioreq_pages_undo(struct xen_be *be, uint32_t domid)
{
	xen_pfn_t gfns[XEN_IOREQ_SERVER_NR];

	for (uint32_t i = 0; i < XEN_IOREQ_SERVER_NR; i++)
		gfns[i] = XEN_IOREQ_SERVER_GFN(i);
	(void)xc_domain_decrease_reservation_exact(be->xch, domid,
	    XEN_IOREQ_SERVER_NR, 0, gfns);
}
