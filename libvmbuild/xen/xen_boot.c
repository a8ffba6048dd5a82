/*
 * xen_boot.c - everything a PVH or HVM domain needs between "image
 * loaded" and its first unpause, in the order libxenguest and libxl do
 * it (xg_dom_x86.c bootlate_hvm, vcpu_hvm; libxl__build_post):
 *
 *   1. event channels for xenstore and the console, bound to the domains
 *      that run xenstored and xenconsoled (/tool/.../domid, as libxl);
 *   2. the memory map the guest gets from XENMEM_memory_map: the same
 *      one its start info carries (RAM around the MMIO hole, the special
 *      pages RESERVED, the ACPI tables), as domain_construct_memmap;
 *      an HVM guest's hvmloader gets its RAM only, and the
 *      hvm_info_table (xen_hvm.c);
 *   3. the reserved grant entries that let xenstored and xenconsoled map
 *      the two rings;
 *   4. the BSP in 32-bit flat protected mode, paging off, at the PVH
 *      entry (hvmloader's ELF entry) with %ebx = start info; a PVH
 *      guest's MTRRs write-back on every vCPU;
 *   5. the xenstore entries of a booted domain, then xs_introduce_domain.
 *
 * The special pages and ACPI tables are the firmware op's
 * (xen_firmware.c), before the image is loaded.  A failure undoes steps
 * 5 back to 1 that were done (destroying the domain, the caller's job,
 * takes the rest).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xen_priv.h"

/* After xenctrl.h (in xen_priv.h), which these rely on. */
#include <xenguest.h>
#include <xen/hvm/params.h>
#include <xen/hvm/save.h>

#define X86_CR0_PE		0x01u
#define X86_CR0_ET		0x10u
#define X86_DR6_DEFAULT		0xffff0ff0u
#define X86_DR7_DEFAULT		0x00000400u
#define MTRR_TYPE_WRBACK	6u
#define MTRR_DEF_TYPE_ENABLE	(1u << 11)

static bool xen_boot_hvm(const struct vmb_boot *boot);

/*
 * The memory map: a PVH guest's the same its start info carries; an HVM
 * guest's as libxl gives hvmloader (xen_hvm_memmap), and its
 * hvm_info_table, which says where RAM ends, after it.
 */
static int
xen_memory_map(struct xen_be *be, uint32_t domid, uint32_t max_vcpus,
    const struct vmb_boot *boot)
{
	struct e820entry e820[VMB_MEMMAP_MAX];
	struct xen_hvm_info hi;
	int n;

	if (boot->nr_memmap == 0 || boot->nr_memmap > VMB_MEMMAP_MAX)
		return -EINVAL;
	if (!xen_boot_hvm(boot)) {
		for (uint32_t i = 0; i < boot->nr_memmap; i++) {
			e820[i].addr = boot->memmap[i].addr;
			e820[i].size = boot->memmap[i].size;
			e820[i].type = boot->memmap[i].type;
		}
		return xc_domain_set_memory_map(be->xch, domid, e820,
		    boot->nr_memmap) < 0 ? -xen_errno() : 0;
	}
	n = xen_hvm_memmap(boot->memmap, boot->nr_memmap, e820,
	    VMB_MEMMAP_MAX, &hi.lowmem_end, &hi.highmem_end);
	if (n < 0)
		return n;
	if (xc_domain_set_memory_map(be->xch, domid, e820, (uint32_t)n) < 0)
		return -xen_errno();
	hi.nr_vcpus = max_vcpus;
	hi.online = boot->vcpus;
	return xen_hvm_info_load(be, domid, &hi);
}

/* An HVM guest's boot: hvmloader, with a device model. */
static bool
xen_boot_hvm(const struct vmb_boot *boot)
{
	return boot->guest != NULL && boot->guest->type == VMB_GUEST_HVM;
}

/* Find a record in an HVM context blob (descriptor-prefixed records). */
static const void *
xen_hvm_record(const uint8_t *ctx, size_t len, uint16_t type,
    uint16_t instance)
{
	const struct hvm_save_descriptor *d;
	size_t off = 0;

	while (off + sizeof(*d) <= len) {
		d = (const void *)(ctx + off);
		if (d->typecode == HVM_SAVE_CODE(END))
			break;
		if (off + sizeof(*d) + d->length > len)
			break;
		if (d->typecode == type && d->instance == instance)
			return ctx + off + sizeof(*d);
		off += sizeof(*d) + d->length;
	}
	return NULL;
}

/*
 * A PVH guest's MTRRs, write-back on every vCPU (no device model, no
 * passthrough: all of RAM is write-back), through partial contexts with
 * Xen's own header (`hdr`, its descriptor first) from the full context.
 */
static int
xen_vcpu_mtrrs(struct xen_be *be, uint32_t domid, uint32_t max_vcpus,
    const uint8_t *full, size_t len)
{
	struct {
		struct hvm_save_descriptor header_d;
		HVM_SAVE_TYPE(HEADER) header;
		struct hvm_save_descriptor mtrr_d;
		HVM_SAVE_TYPE(MTRR) mtrr;
		struct hvm_save_descriptor end_d;
		HVM_SAVE_TYPE(END) end;
	} mtrr;
	const HVM_SAVE_TYPE(MTRR) *cur;

	cur = xen_hvm_record(full, len, HVM_SAVE_CODE(MTRR), 0);
	if (cur == NULL)
		return -EPROTO;
	memset(&mtrr, 0, sizeof(mtrr));
	memcpy(&mtrr, full, sizeof(mtrr.header_d) + HVM_SAVE_LENGTH(HEADER));
	mtrr.mtrr_d.typecode = HVM_SAVE_CODE(MTRR);
	mtrr.mtrr_d.length = HVM_SAVE_LENGTH(MTRR);
	memcpy(&mtrr.mtrr, cur, sizeof(mtrr.mtrr));
	mtrr.mtrr.msr_mtrr_def_type = MTRR_TYPE_WRBACK | MTRR_DEF_TYPE_ENABLE;
	mtrr.end_d.typecode = HVM_SAVE_CODE(END);
	mtrr.end_d.length = HVM_SAVE_LENGTH(END);
	for (uint32_t i = 0; i < max_vcpus; i++) {
		mtrr.mtrr_d.instance = (uint16_t)i;
		if (xc_domain_hvm_setcontext(be->xch, domid, (uint8_t *)&mtrr,
		    sizeof(mtrr)) < 0)
			return -xen_errno();
	}
	return 0;
}

/*
 * The BSP's context, set through a partial HVM context: the header must
 * be Xen's own (it carries the CPUID Xen checks on load), so the full
 * context is fetched first.  Each setcontext resets every vCPU, so a
 * PVH guest's MTRRs go first and the BSP last; an HVM guest's hvmloader
 * sets the MTRRs itself (libxenguest leaves them for a device model).
 * PVH kernel and hvmloader alike start in 32-bit flat protected mode.
 */
static int
xen_vcpu_context(struct xen_be *be, uint32_t domid, uint32_t max_vcpus,
    const struct vmb_boot *boot)
{
	struct {
		struct hvm_save_descriptor header_d;
		HVM_SAVE_TYPE(HEADER) header;
		struct hvm_save_descriptor cpu_d;
		HVM_SAVE_TYPE(CPU) cpu;
		struct hvm_save_descriptor end_d;
		HVM_SAVE_TYPE(END) end;
	} bsp;
	uint8_t *full = NULL;
	int len, rc;

	len = xc_domain_hvm_getcontext(be->xch, domid, NULL, 0);
	if (len <= 0) {
		rc = len < 0 ? -xen_errno() : -EPROTO;
		goto out;
	}
	full = calloc(1, (size_t)len);
	if (full == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	len = xc_domain_hvm_getcontext(be->xch, domid, full, (uint32_t)len);
	if (len <= 0 || (size_t)len < sizeof(bsp.header_d) +
	    HVM_SAVE_LENGTH(HEADER)) {
		rc = len < 0 ? -xen_errno() : -EPROTO;
		goto out;
	}

	memset(&bsp, 0, sizeof(bsp));
	memcpy(&bsp, full, sizeof(bsp.header_d) + HVM_SAVE_LENGTH(HEADER));
	bsp.cpu_d.typecode = HVM_SAVE_CODE(CPU);
	bsp.cpu_d.instance = 0;
	bsp.cpu_d.length = HVM_SAVE_LENGTH(CPU);
	/* Flat 4 GiB code and data segments, a minimal busy TSS. */
	bsp.cpu.cs_limit = bsp.cpu.ds_limit = ~0u;
	bsp.cpu.es_limit = bsp.cpu.ss_limit = ~0u;
	bsp.cpu.tr_limit = 0x67;
	bsp.cpu.cs_arbytes = 0xc9b;
	bsp.cpu.ds_arbytes = bsp.cpu.es_arbytes = bsp.cpu.ss_arbytes = 0xc93;
	bsp.cpu.tr_arbytes = 0x8b;
	bsp.cpu.cr0 = X86_CR0_PE | X86_CR0_ET;
	bsp.cpu.rip = boot->entry;
	bsp.cpu.rbx = boot->start_info;
	bsp.cpu.dr6 = X86_DR6_DEFAULT;
	bsp.cpu.dr7 = X86_DR7_DEFAULT;
	bsp.end_d.typecode = HVM_SAVE_CODE(END);
	bsp.end_d.instance = 0;
	bsp.end_d.length = HVM_SAVE_LENGTH(END);

	rc = xen_boot_hvm(boot) ? 0 :
	    xen_vcpu_mtrrs(be, domid, max_vcpus, full, (size_t)len);
	if (rc == 0 && xc_domain_hvm_setcontext(be->xch, domid,
	    (uint8_t *)&bsp, sizeof(bsp)) < 0)
		rc = -xen_errno();
out:
	free(full);
	return rc;
}

int
xen_boot(void *priv, uint32_t domid, const struct vmb_boot *boot)
{
	struct xen_be *be = priv;
	xc_domaininfo_t di;
	struct xen_xs_boot xb;
	bool ports = false, xs = false;
	int port, rc;

	if (boot == NULL || boot->vcpus == 0 || boot->memory_bytes == 0 ||
	    (boot->memory_bytes & (XC_PAGE_SIZE - 1)) != 0 ||
	    boot->entry >= (1ull << 32) || boot->start_info >= (1ull << 32))
		return -EINVAL;
	if (xc_domain_getinfolist(be->xch, domid, 1, &di) != 1 ||
	    di.domain != domid)
		return -ESRCH;
	memset(&xb, 0, sizeof(xb));
	xb.domid = domid;
	xb.max_vcpus = di.max_vcpu_id == XEN_INVALID_MAX_VCPU_ID ? 0 :
	    di.max_vcpu_id + 1;
	if (boot->vcpus > xb.max_vcpus)
		return -EINVAL;
	xb.vcpus = boot->vcpus;
	xb.target_kb = boot->memory_bytes >> 10;
	xb.static_max_kb = boot->guest != NULL &&
	    boot->guest->maxmem_bytes >= boot->memory_bytes ?
	    boot->guest->maxmem_bytes >> 10 : xb.target_kb;
	xb.store_gfn = XEN_SPECIAL_GFN(XEN_SPECIAL_XENSTORE);
	xb.console_gfn = XEN_SPECIAL_GFN(XEN_SPECIAL_CONSOLE);
	xen_xs_tool_domids(be, &xb.store_domid, &xb.console_domid);

	ports = true;
	port = xc_evtchn_alloc_unbound(be->xch, domid, xb.store_domid);
	if (port < 0) {
		rc = -xen_errno();
		goto fail;
	}
	xb.store_port = (uint32_t)port;
	port = xc_evtchn_alloc_unbound(be->xch, domid, xb.console_domid);
	if (port < 0) {
		rc = -xen_errno();
		goto fail;
	}
	xb.console_port = (uint32_t)port;
	if (xc_hvm_param_set(be->xch, domid, HVM_PARAM_STORE_EVTCHN,
	    xb.store_port) < 0 ||
	    xc_hvm_param_set(be->xch, domid, HVM_PARAM_CONSOLE_EVTCHN,
	    xb.console_port) < 0) {
		rc = -xen_errno();
		goto fail;
	}

	rc = xen_memory_map(be, domid, xb.max_vcpus, boot);
	if (rc < 0)
		goto fail;
	if (xc_dom_gnttab_seed(be->xch, domid, true, xb.console_gfn,
	    xb.store_gfn, xb.console_domid, xb.store_domid) < 0) {
		rc = -xen_errno();
		goto fail;
	}
	rc = xen_vcpu_context(be, domid, xb.max_vcpus, boot);
	if (rc < 0)
		goto fail;

	rc = xen_xs_domain_boot(be, &xb);
	if (rc < 0)
		goto fail;
	xs = true;
	rc = xen_xs_introduce(be, domid, xb.store_gfn, xb.store_port);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	/* The domain's own entries from create stay until destroy. */
	if (xs)
		xen_xs_domain_boot_undo(be, &xb);
	if (ports)
		(void)xc_evtchn_reset(be->xch, domid);
	return rc;
}
