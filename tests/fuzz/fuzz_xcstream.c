/*
 * fuzz_xcstream.c - libFuzzer target: the reader of libxc's migration
 * stream (libvmbuild/xen/xen_xcstream.c, the engine restore's) over any
 * bytes, from a memfd as it reads a file.  Its callbacks play a guest of
 * 64 pfns: each PAGE_DATA's data pages go into a buffer the size asked,
 * checked to be within the limit and of the count given; a record whose
 * first pfn is odd has its pages go straight into the guest's memory,
 * read later (XCS_PAGES_LATER: the reader threads, from the memfd).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xen/xen_xcstream.h"

#define LIMIT	64u

static uint8_t *batch;
static struct iovec one;
static uint8_t mem[LIMIT][XCS_PAGE_SIZE];
static struct iovec each[XCS_BATCH_MAX];

static int
pages(void *u, uint32_t count, const uint64_t *pfns, const uint32_t *types,
    uint32_t nr_data, struct iovec **iov, int *iovcnt, char *why, size_t len)
{
	uint32_t n = 0;

	(void)u, (void)why, (void)len;
	for (uint32_t i = 0; i < count; i++) {
		if (pfns[i] >= LIMIT)
			abort();
		if (types[i] != XCS_TYPE_XTAB && types[i] != XCS_TYPE_XALLOC &&
		    types[i] != XCS_TYPE_BROKEN)
			n++;
	}
	if (n != nr_data)
		abort();
	if (nr_data > 0 && count > 0 && (pfns[0] & 1)) {
		n = 0;
		for (uint32_t i = 0; i < count; i++)
			if (types[i] != XCS_TYPE_XTAB &&
			    types[i] != XCS_TYPE_XALLOC &&
			    types[i] != XCS_TYPE_BROKEN) {
				each[n].iov_base = mem[pfns[i]];
				each[n++].iov_len = XCS_PAGE_SIZE;
			}
		*iov = each;
		*iovcnt = (int)n;
		return XCS_PAGES_LATER;
	}
	if (nr_data > 0) {
		batch = malloc((size_t)nr_data * XCS_PAGE_SIZE);
		if (batch == NULL)
			return -12;
		one.iov_base = batch;
		one.iov_len = (size_t)nr_data * XCS_PAGE_SIZE;
		*iov = &one;
		*iovcnt = 1;
	}
	return 0;
}

static void
pages_done(void *u, uint32_t nr_data, int rc)
{
	(void)u, (void)nr_data, (void)rc;
	free(batch);
	batch = NULL;
}

static int
end(void *u, const void *ctx, uint32_t ctx_len, char *why, size_t len)
{
	(void)u, (void)why, (void)len;
	if (ctx == NULL || ctx_len == 0)
		abort();
	return 0;
}

static const struct xcs_ops ops = {
	.pages = pages, .pages_done = pages_done, .end = end,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xcs_stats st;
	char why[256];
	int fd = memfd_create("xcstream", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size > 0 && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	(void)vmb__xcs_read(fd, LIMIT, &ops, NULL, &st, why, sizeof(why));
	if (st.bytes > size || batch != NULL)
		abort();
	close(fd);
	return 0;
}
