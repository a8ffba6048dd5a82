/*
 * test_xen_acpi.c - the ACPI tables the xen backend gives a PVH guest
 * (xen_acpi.c), read back the way a guest's OS finds them: from the
 * RSDP (both checksums), through the XSDT and the RSDT to each table
 * (its checksum, length, signature), then the MADT's local APICs, the
 * SRAT's processor and memory affinities and the SLIT's distances,
 * compared with the layout they were built from.  The reader here is
 * written from the ACPI specification's offsets, not from the builder.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xen_priv.h"

#define BASE	0xfc000000ull
#define LEN	(XEN_ACPI_MAX_PAGES * 4096)

static uint8_t buf[LEN];

static uint64_t
get(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint8_t
sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

/* The table at guest address `a`, checked: its bytes in buf. */
static const uint8_t *
table(uint64_t a, const char *sig)
{
	const uint8_t *t;
	uint32_t len;

	assert_true(a >= BASE && a < BASE + LEN);
	t = buf + (a - BASE);
	len = (uint32_t)get(t + 4, 4);
	assert_true(len >= 36 && a - BASE + len <= LEN);
	assert_memory_equal(t, sig, 4);
	assert_int_equal(sum(t, len), 0);
	assert_memory_equal(t + 10, "Xen", 3);	/* OEM id, as libxl's */
	return t;
}

/* Find `sig` among the XSDT's tables; NULL if absent. */
static const uint8_t *
find(const uint8_t *xsdt, const char *sig)
{
	uint32_t n = ((uint32_t)get(xsdt + 4, 4) - 36) / 8;

	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *t = buf + (get(xsdt + 36 + 8 * i, 8) - BASE);

		if (!memcmp(t, sig, 4))
			return table(get(xsdt + 36 + 8 * i, 8), sig);
	}
	return NULL;
}

static const uint8_t *
rsdp_to_xsdt(uint64_t rsdp)
{
	const uint8_t *r = buf + (rsdp - BASE), *rsdt, *xsdt;
	uint32_t n;

	assert_memory_equal(r, "RSD PTR ", 8);
	assert_int_equal(r[15], 2);
	assert_int_equal(sum(r, 20), 0);
	assert_int_equal(get(r + 20, 4), 36);
	assert_int_equal(sum(r, 36), 0);
	xsdt = table(get(r + 24, 8), "XSDT");
	rsdt = table(get(r + 16, 4), "RSDT");
	/* The RSDT names the same tables, in 32 bits. */
	n = ((uint32_t)get(xsdt + 4, 4) - 36) / 8;
	assert_int_equal(get(rsdt + 4, 4), 36 + 4 * n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(get(rsdt + 36 + 4 * i, 4),
		    get(xsdt + 36 + 8 * i, 8));
	return xsdt;
}

/* 4608 MiB on two vnodes, vnode 0 crossing the MMIO hole. */
static void
two_vnodes(struct vmb_layout *l, uint32_t vcpus)
{
	memset(l, 0, sizeof(*l));
	l->nr_ranges = 3;
	l->ranges[0] = (struct vmb__range){ 0, 0xfc000, 0, 0 };
	l->ranges[1] = (struct vmb__range){ 0x100000, 0x9000, 0, 0 };
	l->ranges[2] = (struct vmb__range){ 0x109000, 0x90000, 1, 1 };
	l->nr_vnodes = 2;
	l->vnode_pnode[1] = 1;
	l->vdistance[0][0] = l->vdistance[1][1] = 10;
	l->vdistance[0][1] = l->vdistance[1][0] = 21;
	l->nr_vcpus = vcpus;
	for (uint32_t c = 0; c < vcpus; c++)
		l->vcpu_vnode[c] = c >= vcpus / 2;
}

static void
test_numa_tables(void **state)
{
	struct vmb_layout l;
	struct xen_acpi_cfg c = { .base = BASE, .nr_vcpus = 4, .online = 3,
	    .layout = &l };
	struct xen_acpi_out out;
	const uint8_t *xsdt, *madt, *srat, *slit, *fadt, *e;

	(void)state;
	two_vnodes(&l, 4);
	memset(buf, 0xa5, sizeof(buf));
	assert_int_equal(xen_acpi_build(&c, buf, sizeof(buf), &out), 0);
	assert_true(out.bytes <= 4096);		/* one page for 4 vCPUs */
	xsdt = rsdp_to_xsdt(out.rsdp);
	/* FADT: libxl's, pointing at a DSDT and a FACS. */
	fadt = find(xsdt, "FACP");
	assert_non_null(fadt);
	assert_int_equal(fadt[8], 5);
	assert_false(get(fadt + 112, 4) & (1u << 20));	/* not HW-reduced */
	assert_int_equal(get(fadt + 46, 2), 9);			/* SCI */
	table(get(fadt + 140, 8), "DSDT");
	assert_int_equal(get(fadt + 132, 8), get(fadt + 36, 4));
	assert_int_equal(get(fadt + 36, 4) % 64, 0);
	assert_memory_equal(buf + (get(fadt + 36, 4) - BASE), "FACS", 4);
	/* MADT: a LAPIC per vCPU, APIC id 2i, enabled while online. */
	madt = find(xsdt, "APIC");
	assert_non_null(madt);
	assert_int_equal(get(madt + 4, 4), 44 + 4 * 8);
	assert_int_equal(get(madt + 36, 4), 0xfee00000);
	for (int i = 0; i < 4; i++) {
		e = madt + 44 + 8 * i;
		assert_int_equal(e[0], 0);
		assert_int_equal(e[1], 8);
		assert_int_equal(e[2], i);
		assert_int_equal(e[3], 2 * i);
		assert_int_equal(get(e + 4, 4), i < 3 ? 1 : 0);
	}
	/* SRAT: vCPUs 0-1 on vnode 0, 2-3 on 1; a memory entry per range. */
	srat = find(xsdt, "SRAT");
	assert_non_null(srat);
	assert_int_equal(get(srat + 4, 4), 48 + 4 * 16 + 3 * 40);
	for (int i = 0; i < 4; i++) {
		e = srat + 48 + 16 * i;
		assert_int_equal(e[0], 0);
		assert_int_equal(e[2], i >= 2);
		assert_int_equal(e[3], 2 * i);
		assert_int_equal(get(e + 4, 4), 1);
	}
	for (int r = 0; r < 3; r++) {
		e = srat + 48 + 4 * 16 + 40 * r;
		assert_int_equal(e[0], 1);
		assert_int_equal(e[1], 40);
		assert_int_equal(get(e + 2, 4), l.ranges[r].vnode);
		assert_int_equal(get(e + 8, 8), l.ranges[r].gfn << 12);
		assert_int_equal(get(e + 16, 8), l.ranges[r].pages << 12);
		assert_int_equal(get(e + 28, 4), 1);
	}
	/* SLIT: the distances, row by row. */
	slit = find(xsdt, "SLIT");
	assert_non_null(slit);
	assert_int_equal(get(slit + 36, 8), 2);
	assert_int_equal(slit[44], 10);
	assert_int_equal(slit[45], 21);
	assert_int_equal(slit[46], 21);
	assert_int_equal(slit[47], 10);
}

/* Without vNUMA: no SRAT, no SLIT; the rest as before. */
static void
test_no_numa(void **state)
{
	struct vmb_layout l;
	struct xen_acpi_cfg c = { .base = BASE, .nr_vcpus = 1, .online = 1,
	    .layout = &l };
	struct xen_acpi_out out;
	const uint8_t *xsdt;

	(void)state;
	memset(&l, 0, sizeof(l));
	l.nr_ranges = 1;
	l.ranges[0] = (struct vmb__range){ 0, 0x8000, 0, 0 };
	l.nr_vcpus = 1;
	assert_int_equal(xen_acpi_build(&c, buf, sizeof(buf), &out), 0);
	xsdt = rsdp_to_xsdt(out.rsdp);
	assert_int_equal(get(xsdt + 4, 4), 36 + 2 * 8);	/* FADT, MADT */
	assert_non_null(find(xsdt, "APIC"));
	assert_null(find(xsdt, "SRAT"));
	assert_null(find(xsdt, "SLIT"));
}

/* Xen's maximum of 128 vCPUs fits; bad requests and small buffers fail. */
static void
test_limits(void **state)
{
	struct vmb_layout l;
	struct xen_acpi_cfg c = { .base = BASE, .nr_vcpus = 128,
	    .online = 128, .layout = &l };
	struct xen_acpi_out out;

	(void)state;
	two_vnodes(&l, 128);
	assert_int_equal(xen_acpi_build(&c, buf, sizeof(buf), &out), 0);
	assert_non_null(find(rsdp_to_xsdt(out.rsdp), "SRAT"));
	assert_int_equal(xen_acpi_build(&c, buf, 1024, &out), -ENOSPC);
	c.nr_vcpus = 129;
	assert_int_equal(xen_acpi_build(&c, buf, sizeof(buf), &out), -EINVAL);
	c.nr_vcpus = 2;
	c.online = 3;
	assert_int_equal(xen_acpi_build(&c, buf, sizeof(buf), &out), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numa_tables),
		cmocka_unit_test(test_no_numa),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests_name("xen-acpi", tests, NULL, NULL);
}
