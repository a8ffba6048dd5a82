/*
 * fuzz_loader.c - a kernel image as a client would pass it: read from a
 * descriptor (loader.c), checked as ELF with a PVH entry note, and, when
 * accepted, loaded with a command line and a ramdisk into 16 MiB of
 * guest memory through a backend whose map op refuses anything outside
 * it (a write past the guest would be a bug the sanitizers see).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "vmb_internal.h"

#define GUEST_BYTES	(16u << 20)

static uint8_t *guest;

static int
fake_map(void *priv, uint32_t domid, uint64_t gfn, size_t nr, void **ret)
{
	(void)priv, (void)domid;
	if (nr == 0 || gfn > GUEST_BYTES / VMB_PAGE_SIZE ||
	    nr > GUEST_BYTES / VMB_PAGE_SIZE - gfn)
		return -EINVAL;
	*ret = guest + gfn * VMB_PAGE_SIZE;
	return 0;
}

static void
fake_unmap(void *priv, void *addr, size_t nr)
{
	(void)priv, (void)addr, (void)nr;
}

static const struct vmb_backend_ops fake_ops = {
	.name = "fuzz",
	.map = fake_map,
	.unmap = fake_unmap,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct vmb_guest g = { .kernel = (char *)"/fuzz/kernel",
	    .ramdisk = (char *)"/fuzz/initrd", .cmdline = (char *)"console=hvc0" };
	struct vmb__image *img = NULL;
	struct vmb_boot boot;
	int kfd, rfd;

	if (guest == NULL && (guest = malloc(GUEST_BYTES)) == NULL)
		abort();
	kfd = memfd_create("kernel", MFD_CLOEXEC);
	rfd = memfd_create("initrd", MFD_CLOEXEC);
	if (kfd < 0 || rfd < 0 || (len && write(kfd, data, len) != (ssize_t)len) ||
	    write(rfd, "initrd", 6) != 6)
		abort();
	if (vmb__image_open_why(&g, kfd, rfd, &img, NULL, 0) == 0)
		(void)vmb__image_load(&fake_ops, NULL, 1, img, GUEST_BYTES,
		    &boot);
	vmb__image_free(img);
	close(kfd);
	close(rfd);
	return 0;
}
