/*
 * xen_firmware.c - the firmware op: what a PVH guest finds outside its
 * RAM, in the MMIO hole below 4 GiB, set up after populate and before
 * the image is loaded (libxl: libxl__arch_domain_finalise_hw_description
 * loads the ACPI tables and sets the memory map; xc_dom_build_image's
 * alloc_magic_pages_hvm the special pages):
 *
 *   - the special pages (xenstore and console rings, identity page
 *     table, ioreq and ring pages) below gfn 0xff000, cleared, and the
 *     HVM parameters that announce them; RESERVED in the memory map;
 *   - the ACPI tables (xen_acpi.c) at 0xfc000000, ACPI in the memory map,
 *     the RSDP's address for the start info.
 *
 * An HVM guest gets the special pages and, below them, the ioreq
 * server pages (xen_hvm.c), and no ACPI tables: hvmloader makes them.
 *
 * Both are populated outside the guest's RAM, within the 1 MiB that
 * setmaxmem adds (libxl's LIBXL_MAXMEM_CONSTANT).  On failure what was
 * populated here is released again; the rest is the build's undo.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "xen_priv.h"

/* After xenctrl.h (in xen_priv.h), which these rely on. */
#include <xen/hvm/params.h>

#define PDE_FLAGS_4M		0xe7u	/* P, RW, US, A, D, PS */

/* Where each special page's gfn is announced to the guest. */
static const struct {
	uint32_t param;
	uint32_t page;
} xen_special_params[] = {
	{ HVM_PARAM_STORE_PFN,		XEN_SPECIAL_XENSTORE },
	{ HVM_PARAM_BUFIOREQ_PFN,	XEN_SPECIAL_BUFIOREQ },
	{ HVM_PARAM_IOREQ_PFN,		XEN_SPECIAL_IOREQ },
	{ HVM_PARAM_CONSOLE_PFN,	XEN_SPECIAL_CONSOLE },
	{ HVM_PARAM_PAGING_RING_PFN,	XEN_SPECIAL_PAGING },
	{ HVM_PARAM_MONITOR_RING_PFN,	XEN_SPECIAL_ACCESS },
	{ HVM_PARAM_SHARING_RING_PFN,	XEN_SPECIAL_SHARING },
};

static int
xen_special_pages(struct xen_be *be, uint32_t domid)
{
	xen_pfn_t gfns[XEN_SPECIAL_NR];
	uint32_t *pd;
	size_t i;
	int err = 0;

	for (i = 0; i < XEN_SPECIAL_NR; i++)
		gfns[i] = XEN_SPECIAL_GFN(i);
	if (xc_domain_populate_physmap_exact(be->xch, domid, XEN_SPECIAL_NR,
	    0, 0, gfns) < 0)
		return -xen_errno();
	if (xc_clear_domain_pages(be->xch, domid, XEN_SPECIAL_GFN(0),
	    XEN_SPECIAL_NR) < 0)
		return -xen_errno();
	for (i = 0; i < sizeof(xen_special_params) /
	    sizeof(xen_special_params[0]); i++)
		if (xc_hvm_param_set(be->xch, domid,
		    xen_special_params[i].param,
		    XEN_SPECIAL_GFN(xen_special_params[i].page)) < 0)
			return -xen_errno();

	/*
	 * Intel without unrestricted guest runs CR0.PG=0 code on an identity
	 * map: a 32-bit page directory of 4 MiB pages.
	 */
	gfns[0] = XEN_SPECIAL_GFN(XEN_SPECIAL_IDENT_PT);
	pd = xenforeignmemory_map(be->fmem, domid, PROT_READ | PROT_WRITE, 1,
	    gfns, &err);
	if (pd == NULL)
		return -xen_errno();
	if (err != 0) {
		(void)xenforeignmemory_unmap(be->fmem, pd, 1);
		return err < 0 ? err : -err;
	}
	for (i = 0; i < XC_PAGE_SIZE / sizeof(*pd); i++)
		pd[i] = (uint32_t)(i << 22) | PDE_FLAGS_4M;
	(void)xenforeignmemory_unmap(be->fmem, pd, 1);
	if (xc_hvm_param_set(be->xch, domid, HVM_PARAM_IDENT_PT,
	    (uint64_t)XEN_SPECIAL_GFN(XEN_SPECIAL_IDENT_PT) << XC_PAGE_SHIFT) < 0)
		return -xen_errno();
	return 0;
}

static void
xen_special_pages_undo(struct xen_be *be, uint32_t domid)
{
	xen_pfn_t gfns[XEN_SPECIAL_NR];
	size_t i;

	for (i = 0; i < XEN_SPECIAL_NR; i++)
		gfns[i] = XEN_SPECIAL_GFN(i);
	(void)xc_domain_decrease_reservation_exact(be->xch, domid,
	    XEN_SPECIAL_NR, 0, gfns);
}

int
xen_firmware(void *priv, uint32_t domid, const struct vmb_platform *p,
    struct vmb_firmware *ret)
{
	struct xen_be *be = priv;
	struct xen_acpi_out acpi;
	uint32_t online;
	int rc;

	if (p == NULL || p->layout == NULL || p->guest == NULL)
		return -EINVAL;
	rc = xen_special_pages(be, domid);
	if (rc < 0) {
		xen_special_pages_undo(be, domid);
		return rc;
	}
	memset(ret, 0, sizeof(*ret));
	if (p->guest->type == VMB_GUEST_HVM) {
		/*
		 * hvmloader builds the ACPI tables and the guest's E820
		 * itself; the device model gets the ioreq server pages.
		 */
		rc = xen_hvm_ioreq_pages(be, domid);
		if (rc < 0) {
			xen_hvm_ioreq_pages_undo(be, domid);
			xen_special_pages_undo(be, domid);
		}
		return rc;
	}
	online = p->guest->vcpus < p->layout->nr_vcpus ? p->guest->vcpus :
	    p->layout->nr_vcpus;
	rc = xen_acpi_load(be, domid, p->layout, online, &acpi);
	if (rc < 0) {
		xen_special_pages_undo(be, domid);
		return rc;
	}
	ret->regions[0] = (struct vmb_memmap_entry){ XEN_ACPI_BASE,
	    (uint64_t)acpi.pages << XC_PAGE_SHIFT, VMB_E820_ACPI };
	ret->regions[1] = (struct vmb_memmap_entry){
	    (uint64_t)XEN_SPECIAL_GFN(0) << XC_PAGE_SHIFT,
	    (uint64_t)XEN_SPECIAL_NR << XC_PAGE_SHIFT, VMB_E820_RESERVED };
	ret->nr_regions = 2;
	ret->rsdp = acpi.rsdp;
	return 0;
}
