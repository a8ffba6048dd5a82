/*
 * xl-vnuma-shim.c - LD_PRELOAD for the lab's `xl create` of the vNUMA
 * Linux guest, working around a libxl 4.17 bug so that xl can build the
 * guest vmbuild is compared with.
 *
 * libxl builds a PVH guest's ACPI tables in init_acpi_config
 * (tools/libs/light/libxl_x86_acpi.c).  With vnuma= it first asks
 * xc_domain_getvnuma for the sizes, passing zero sizes and no buffers;
 * XENMEM_get_vnumainfo answers that with the sizes and -ENOBUFS, by
 * design, and libxl takes the -1 for a failure: "xc_domain_getvnuma
 * failed", and `xl create` of any PVH guest with vnuma= fails (Debian's
 * 4.17.7; the code is unchanged in Xen's master).  This shim returns 0
 * for exactly that size query once Xen has filled the sizes in.
 *
 * libxl then allocates the distance matrix for nr_vnodes entries, not
 * nr_vnodes^2; libxenctrl copies the whole matrix into it.  For the
 * lab's 2 vnodes that is 16 bytes into an 8-byte calloc, inside malloc's
 * 24-byte minimum chunk, so it goes unnoticed; the shim does not hide it.
 * Not part of vmbuild: tests/lab only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <xenctrl.h>

int
xc_domain_getvnuma(xc_interface *xch, uint32_t domid, uint32_t *nr_vnodes,
    uint32_t *nr_vmemranges, uint32_t *nr_vcpus, xen_vmemrange_t *vmemrange,
    unsigned int *vdistance, unsigned int *vcpu_to_vnode)
{
	static int (*real)(xc_interface *, uint32_t, uint32_t *, uint32_t *,
	    uint32_t *, xen_vmemrange_t *, unsigned int *, unsigned int *);
	int rc;

	if (!real)
		real = (__typeof__(real))dlsym(RTLD_NEXT, "xc_domain_getvnuma");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	rc = real(xch, domid, nr_vnodes, nr_vmemranges, nr_vcpus, vmemrange,
	    vdistance, vcpu_to_vnode);
	if (rc < 0 && errno == ENOBUFS && !vmemrange && !vdistance &&
	    !vcpu_to_vnode)
		return 0;	/* the sizes are filled in */
	return rc;
}
