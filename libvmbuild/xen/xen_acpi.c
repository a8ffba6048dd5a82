/*
 * xen_acpi.c - the ACPI tables of a PVH guest, written by vmbuild.
 *
 * libxl builds them with its libacpi (libxl__dom_load_acpi in
 * libxl_x86_acpi.c, tools/libacpi/build.c in Xen 4.17); Debian ships no
 * such library, so these are ours, with the same content where it
 * matters to a guest:
 *   - RSDP (revision 2), pointing at an XSDT (and an RSDT for 32-bit
 *     readers), found through hvm_start_info.rsdp_paddr;
 *   - FADT (revision 5, with libxl's values: PM1a event and control
 *     blocks at 0xb000, SCI 9, no PM timer, no power or sleep button, no
 *     VGA, no CMOS RTC), FACS, DSDT;
 *   - MADT: one local APIC per vCPU up to maxvcpus, APIC id 2*i as Xen
 *     gives vCPU i (the same as libxl's acpi_lapic_id), enabled for the
 *     vCPUs that are online at boot; no I/O APIC (PVH has none);
 *   - SRAT (a processor affinity entry per vCPU, a memory affinity entry
 *     per RAM range) and SLIT, when the guest has vNUMA.
 * OEM id "Xen", table id "HVM" as libxl's, so guests that key on them see
 * the same; creator "VMBD".
 *
 * Where vmbuild differs from libxl, on purpose:
 *   - the DSDT is empty (a definition block with no objects): libxl's
 *     pvh DSDT carries processor objects for ACPI vCPU hot-plug, which
 *     vmbuild does not offer; no acpi_info page (only that DSDT reads
 *     it); no revision-1 FADT copy for the RSDT (for Windows 2000);
 *   - a hardware-reduced FADT would describe a PVH guest better (Xen
 *     emulates no PM1 block or SCI: Linux logs "SCI not registered" and
 *     disables the GPEs), but a Linux guest given one was seen to stop
 *     the lab's QEMU machine (tests/lab), so the FADT is libxl's;
 *   - the RSDP is always in the table area, never copied into low memory
 *     for Linux < 4.20 (which ignores rsdp_paddr).
 * Layout in guest memory: all tables from XEN_ACPI_BASE (0xfc000000, the
 * bottom of the MMIO hole, where libxl puts its acpi_info page and
 * tables), at most XEN_ACPI_MAX_PAGES, populated outside the guest's RAM
 * and reported as ACPI memory in its memory map.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xen_priv.h"

#define HDR_LEN			36
#define RSDP_LEN		36
#define FADT_LEN		268	/* ACPI 5.0 */
#define FACS_LEN		64
/* libxl's FADT flags (libacpi static_tables.c, no buttons for PVH). */
#define FADT_FLAGS		((1u << 0) | (1u << 2) | (1u << 4) | \
				 (1u << 5) | (1u << 6) | (1u << 8) | (1u << 15))
#define FADT_PM1A_EVT		0xb000u	/* ACPI_PM1A_EVT_BLK_ADDRESS_V1 */
#define FADT_PM1A_CNT		0xb004u
#define FADT_GPE0		0xafe0u	/* ACPI_GPE0_BLK_ADDRESS_V1 */
#define FADT_BOOT_NO_VGA	(1u << 2)
#define FADT_BOOT_NO_CMOS_RTC	(1u << 5)
#define MADT_PCAT_COMPAT	1u
#define MADT_LAPIC_LEN		8
#define SRAT_CPU_LEN		16
#define SRAT_MEM_LEN		40
#define XEN_LAPIC_BASE		0xfee00000u

struct acpi_buf {
	uint8_t	*p;
	size_t	len, off;
	uint64_t base;		/* guest-physical address of p[0] */
	int	err;
};

static void
put(uint8_t *p, size_t off, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

uint8_t
xen_acpi_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	while (len--)
		sum += *p++;
	return sum;
}

/* Room for a table of `len` bytes, 16 aligned; NULL (and err) if none. */
static uint8_t *
acpi_alloc(struct acpi_buf *b, size_t len)
{
	size_t off = (b->off + 15) & ~(size_t)15;

	if (b->err || off > b->len || len > b->len - off) {
		b->err = -ENOSPC;
		return NULL;
	}
	b->off = off + len;
	memset(b->p + off, 0, len);
	return b->p + off;
}

static uint64_t
addr_of(const struct acpi_buf *b, const uint8_t *t)
{
	return b->base + (uint64_t)(t - b->p);
}

/* The common header; the checksum is set by seal() once filled. */
static void
header(uint8_t *t, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(t, sig, 4);
	put(t, 4, len, 4);
	t[8] = rev;
	memcpy(t + 10, "Xen\0\0\0", 6);
	memcpy(t + 16, "HVM\0\0\0\0\0", 8);
	put(t, 24, 0, 4);		/* OEM revision */
	memcpy(t + 28, "VMBD", 4);
	put(t, 32, 1, 4);		/* creator revision */
}

static void
seal(uint8_t *t)
{
	uint32_t len = (uint32_t)t[4] | (uint32_t)t[5] << 8 |
	    (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;

	t[9] = 0;
	t[9] = (uint8_t)-xen_acpi_checksum(t, len);
}

static uint8_t *
build_dsdt(struct acpi_buf *b)
{
	uint8_t *t = acpi_alloc(b, HDR_LEN);

	if (t) {
		header(t, "DSDT", HDR_LEN, 2);
		seal(t);
	}
	return t;
}

static uint8_t *
build_facs(struct acpi_buf *b)
{
	uint8_t *t;

	b->off = (b->off + 63) & ~(size_t)63;	/* 64-byte aligned */
	t = acpi_alloc(b, FACS_LEN);
	if (t) {
		memcpy(t, "FACS", 4);
		put(t, 4, FACS_LEN, 4);
		t[32] = 1;			/* version, as libacpi */
	}
	return t;
}

/* A generic address structure: system I/O, `bits` wide. */
static void
gas_io(uint8_t *g, uint8_t bits, uint64_t port)
{
	g[0] = 1;
	g[1] = bits;
	put(g, 4, port, 8);
}

static uint8_t *
build_fadt(struct acpi_buf *b, uint64_t dsdt, uint64_t facs)
{
	uint8_t *t = acpi_alloc(b, FADT_LEN);

	if (!t)
		return NULL;
	header(t, "FACP", FADT_LEN, 5);
	put(t, 36, facs, 4);			/* FIRMWARE_CTRL */
	put(t, 40, dsdt, 4);			/* DSDT */
	put(t, 46, 9, 2);			/* SCI_INT */
	put(t, 56, FADT_PM1A_EVT, 4);
	put(t, 64, FADT_PM1A_CNT, 4);
	put(t, 80, FADT_GPE0, 4);
	t[88] = 4;				/* PM1_EVT_LEN */
	t[89] = 2;				/* PM1_CNT_LEN */
	t[92] = 4;				/* GPE0_BLK_LEN */
	put(t, 96, 0x0fff, 2);			/* no C2 */
	put(t, 98, 0x0fff, 2);			/* no C3 */
	put(t, 109, FADT_BOOT_NO_VGA | FADT_BOOT_NO_CMOS_RTC, 2);
	put(t, 112, FADT_FLAGS, 4);
	gas_io(t + 116, 8, 0xcf9);		/* RESET_REG */
	t[128] = 6;				/* RESET_VALUE */
	put(t, 132, facs, 8);			/* X_FIRMWARE_CTRL */
	put(t, 140, dsdt, 8);			/* X_DSDT */
	gas_io(t + 148, 32, FADT_PM1A_EVT);
	gas_io(t + 172, 16, FADT_PM1A_CNT);
	seal(t);
	return t;
}

static uint8_t *
build_madt(struct acpi_buf *b, const struct xen_acpi_cfg *c)
{
	uint32_t len = HDR_LEN + 8 + MADT_LAPIC_LEN * c->nr_vcpus;
	uint8_t *t = acpi_alloc(b, len);

	if (!t)
		return NULL;
	header(t, "APIC", len, 3);
	put(t, 36, XEN_LAPIC_BASE, 4);
	put(t, 40, MADT_PCAT_COMPAT, 4);
	for (uint32_t i = 0; i < c->nr_vcpus; i++) {
		uint8_t *e = t + HDR_LEN + 8 + MADT_LAPIC_LEN * i;

		e[0] = 0;			/* processor local APIC */
		e[1] = MADT_LAPIC_LEN;
		e[2] = (uint8_t)i;		/* ACPI processor id */
		e[3] = (uint8_t)(2 * i);	/* APIC id, as Xen's vLAPIC */
		put(e, 4, i < c->online ? 1 : 0, 4);
	}
	seal(t);
	return t;
}

static uint8_t *
build_srat(struct acpi_buf *b, const struct xen_acpi_cfg *c)
{
	const struct vmb_layout *l = c->layout;
	uint32_t len = HDR_LEN + 12 + SRAT_CPU_LEN * c->nr_vcpus +
	    SRAT_MEM_LEN * l->nr_ranges;
	uint8_t *t = acpi_alloc(b, len), *e;

	if (!t)
		return NULL;
	header(t, "SRAT", len, 1);
	put(t, 36, 1, 4);			/* table revision, as libacpi */
	e = t + HDR_LEN + 12;
	for (uint32_t i = 0; i < c->nr_vcpus; i++, e += SRAT_CPU_LEN) {
		e[0] = 0;			/* processor affinity */
		e[1] = SRAT_CPU_LEN;
		e[2] = l->vcpu_vnode[i];	/* proximity domain [7:0] */
		e[3] = (uint8_t)(2 * i);	/* APIC id */
		put(e, 4, 1, 4);		/* enabled */
	}
	for (uint32_t r = 0; r < l->nr_ranges; r++, e += SRAT_MEM_LEN) {
		e[0] = 1;			/* memory affinity */
		e[1] = SRAT_MEM_LEN;
		put(e, 2, l->ranges[r].vnode, 4);
		put(e, 8, l->ranges[r].gfn << XC_PAGE_SHIFT, 8);
		put(e, 16, l->ranges[r].pages << XC_PAGE_SHIFT, 8);
		put(e, 28, 1, 4);		/* enabled */
	}
	seal(t);
	return t;
}

static uint8_t *
build_slit(struct acpi_buf *b, const struct vmb_layout *l)
{
	uint32_t n = l->nr_vnodes, len = HDR_LEN + 8 + n * n;
	uint8_t *t = acpi_alloc(b, len);

	if (!t)
		return NULL;
	header(t, "SLIT", len, 1);
	put(t, 36, n, 8);
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++)
			t[44 + i * n + j] = l->vdistance[i][j];
	seal(t);
	return t;
}

/* XSDT (64-bit entries) or RSDT (32-bit) over the tables. */
static uint8_t *
build_root(struct acpi_buf *b, const uint64_t *ents, uint32_t n, bool x)
{
	int w = x ? 8 : 4;
	uint32_t len = HDR_LEN + (uint32_t)w * n;
	uint8_t *t = acpi_alloc(b, len);

	if (!t)
		return NULL;
	header(t, x ? "XSDT" : "RSDT", len, 1);
	for (uint32_t i = 0; i < n; i++)
		put(t, HDR_LEN + (size_t)w * i, ents[i], w);
	seal(t);
	return t;
}

static uint8_t *
build_rsdp(struct acpi_buf *b, uint64_t rsdt, uint64_t xsdt)
{
	uint8_t *t = acpi_alloc(b, RSDP_LEN);

	if (!t)
		return NULL;
	memcpy(t, "RSD PTR ", 8);
	memcpy(t + 9, "Xen\0\0\0", 6);
	t[15] = 2;				/* revision: ACPI 2.0+ */
	put(t, 16, rsdt, 4);
	put(t, 20, RSDP_LEN, 4);
	put(t, 24, xsdt, 8);
	t[8] = (uint8_t)-xen_acpi_checksum(t, 20);
	t[32] = (uint8_t)-xen_acpi_checksum(t, RSDP_LEN);
	return t;
}

int
xen_acpi_build(const struct xen_acpi_cfg *c, uint8_t *buf, size_t len,
    struct xen_acpi_out *out)
{
	struct acpi_buf b = { .p = buf, .len = len, .base = c->base };
	uint64_t ents[4];
	uint32_t n = 0;
	uint8_t *t, *rsdt, *xsdt, *rsdp, *facs;

	if (c->nr_vcpus == 0 || c->nr_vcpus > 128 || c->online > c->nr_vcpus ||
	    !c->layout || (c->base & 15))
		return -EINVAL;
	facs = build_facs(&b);
	t = build_dsdt(&b);
	t = t && facs ? build_fadt(&b, addr_of(&b, t), addr_of(&b, facs)) :
	    NULL;
	if (t)
		ents[n++] = addr_of(&b, t);
	if ((t = build_madt(&b, c)))
		ents[n++] = addr_of(&b, t);
	if (c->layout->nr_vnodes) {
		if ((t = build_srat(&b, c)))
			ents[n++] = addr_of(&b, t);
		if ((t = build_slit(&b, c->layout)))
			ents[n++] = addr_of(&b, t);
	}
	xsdt = build_root(&b, ents, n, true);
	rsdt = build_root(&b, ents, n, false);
	rsdp = xsdt && rsdt ? build_rsdp(&b, addr_of(&b, rsdt),
	    addr_of(&b, xsdt)) : NULL;
	if (b.err || !rsdp)
		return b.err ? b.err : -ENOSPC;
	out->rsdp = addr_of(&b, rsdp);
	out->bytes = b.off;
	return 0;
}

/*
 * Build the tables and put them into the guest at XEN_ACPI_BASE, in
 * pages populated for them (outside the guest's RAM, within the slack
 * setmaxmem gave, as libxl's populate_acpi_pages).
 */
int
xen_acpi_load(struct xen_be *be, uint32_t domid, const struct vmb_layout *l,
    uint32_t online, struct xen_acpi_out *out)
{
	struct xen_acpi_cfg c = { .base = XEN_ACPI_BASE, .nr_vcpus =
	    l->nr_vcpus, .online = online, .layout = l };
	xen_pfn_t gfns[XEN_ACPI_MAX_PAGES];
	size_t len = XEN_ACPI_MAX_PAGES * XC_PAGE_SIZE, pages;
	uint8_t *buf = NULL, *map = NULL;
	int rc;

	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	rc = xen_acpi_build(&c, buf, len, out);
	if (rc)
		goto out;
	pages = (out->bytes + XC_PAGE_SIZE - 1) >> XC_PAGE_SHIFT;
	for (size_t i = 0; i < pages; i++)
		gfns[i] = (XEN_ACPI_BASE >> XC_PAGE_SHIFT) + i;
	if (xc_domain_populate_physmap_exact(be->xch, domid, pages, 0, 0,
	    gfns) < 0) {
		rc = -xen_errno();
		goto out;
	}
	map = xenforeignmemory_map(be->fmem, domid, PROT_READ | PROT_WRITE,
	    pages, gfns, NULL);
	if (!map) {
		rc = -xen_errno();
		goto out;
	}
	memcpy(map, buf, pages * XC_PAGE_SIZE);
	(void)xenforeignmemory_unmap(be->fmem, map, pages);
	out->pages = pages;
	rc = 0;
out:
	free(buf);
	return rc;
}
