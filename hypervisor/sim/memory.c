/*
 * memory.c - the modelled host's physical memory.
 *
 * Real backing: one memfd for the whole host, machine frame m at offset
 * m << HV_PAGE_SHIFT, mapped shared so that HV_OP_MAP can pass the same
 * descriptor to a loader.  Pages are faulted in by the first store (the
 * boot scrub, or a scrub after destroy), so untouched memory costs nothing.
 *
 * That first store is expensive: a page fault per 4 KiB page, 2-7 s per
 * GiB on the VM this was measured on, 50-100 times the cost of zeroing a
 * mapped page, and a cost of this process's mapping, not of the memory
 * (a hypervisor has all of its memory mapped).  So a 2 MiB chunk is
 * zeroed one of three ways:
 *   - mapped in already: non-temporal stores, at memory speed;
 *   - not mapped in, background scrub: the chunk is mapped in, in one
 *     call (MADV_POPULATE_WRITE, half the cost of faulting page by page),
 *     then stored to; the background pays the first touch once, as a
 *     boot scrub pays for touching all memory, and later scrubs of the
 *     chunk run at memory speed;
 *   - not mapped in, inline (an allocation is waiting): zeros are written
 *     through the descriptor (pwritev of the zero page, 0.1-0.2 s per
 *     GiB there), so no allocation pays a first touch.
 * Whether the memfd already has the pages makes no difference to mapping
 * them in: MADV_POPULATE_WRITE over pages written before by pwritev cost
 * 1.7-2.2 s per GiB there, as much as over pages never touched, against
 * 0.14-0.22 s for pwritev.  So inline zeroing maps nothing in, even
 * though writes to the one memfd serialise on its inode lock (two
 * threads zeroing 1 GiB each by pwritev took 0.29-0.36 s, no faster than
 * one after the other); only mapped chunks are zeroed in parallel
 * (2 GiB by two threads with NT stores: 0.055 s).  bench/hvsim/bench_zero
 * measures all of these.
 * Phantom backing: no memory at all, only the heap's metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hvsim.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23	/* Linux 5.14 */
#endif
#define MAP_SHIFT	21		/* one "mapped" bit per 2 MiB */
#define ZERO_IOV	512		/* 2 MiB of the zero page per call */

static const uint8_t zero_page[HV_PAGE_SIZE] __attribute__((aligned(4096)));

int
mem_init(struct hvmem *m, uint32_t backing, uint64_t bytes)
{
	int rc;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->backing = backing;
	m->bytes = bytes;
	if (backing == HV_BACKING_PHANTOM)
		return 0;
	if (backing != HV_BACKING_REAL)
		return -EINVAL;
	m->fd = memfd_create("hvsim-memory", MFD_CLOEXEC);
	if (m->fd < 0)
		return -errno;
	m->mapped = calloc((bytes >> MAP_SHIFT) / 64 + 1, sizeof(uint64_t));
	if (!m->mapped) {
		rc = -ENOMEM;
		goto fail;
	}
	if (ftruncate(m->fd, (off_t)bytes) < 0) {
		rc = -errno;
		goto fail;
	}
	m->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_NORESERVE, m->fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		rc = -errno;
		goto fail;
	}
	return 0;

fail:
	free(m->mapped);
	m->mapped = NULL;
	close(m->fd);
	m->fd = -1;
	return rc;
}

void
mem_fini(struct hvmem *m)
{
	if (m->base)
		munmap(m->base, m->bytes);
	if (m->fd >= 0)
		close(m->fd);
	free(m->mapped);
	m->mapped = NULL;
	m->base = NULL;
	m->fd = -1;
}

void *
mem_page(const struct hvmem *m, uint64_t mfn)
{
	if (!m->base || (mfn << HV_PAGE_SHIFT) >= m->bytes)
		return NULL;
	return m->base + (mfn << HV_PAGE_SHIFT);
}

/*
 * Zero with non-temporal stores: scrubbed memory is not about to be read,
 * so streaming past the cache keeps the cache for others and avoids the
 * read-for-ownership of ordinary stores.
 */
void
mem_ntzero(void *p, size_t len)
{
#ifdef __SSE2__
	__m128i z = _mm_setzero_si128();
	__m128i *q = p;
	size_t i, n = len / 64;

	for (i = 0; i < n; i++, q += 4) {
		_mm_stream_si128(q + 0, z);
		_mm_stream_si128(q + 1, z);
		_mm_stream_si128(q + 2, z);
		_mm_stream_si128(q + 3, z);
	}
	_mm_sfence();
	if (len % 64)
		memset((char *)p + n * 64, 0, len % 64);
#else
	memset(p, 0, len);
#endif
}

static bool
chunk_mapped(const struct hvmem *m, uint64_t c)
{
	return __atomic_load_n(&m->mapped[c / 64], __ATOMIC_RELAXED) &
	    (1ull << (c % 64));
}

static void
mark_mapped(const struct hvmem *m, uint64_t off, uint64_t len)
{
	uint64_t c;

	for (c = off >> MAP_SHIFT; c <= (off + len - 1) >> MAP_SHIFT; c++)
		__atomic_fetch_or(&m->mapped[c / 64], 1ull << (c % 64),
		    __ATOMIC_RELAXED);
}

/* Zero [off, off + len) through the descriptor; false if it failed. */
static bool
zero_fd(const struct hvmem *m, uint64_t off, uint64_t len)
{
	struct iovec iov[ZERO_IOV];
	uint32_t i;

	for (i = 0; i < ZERO_IOV; i++)
		iov[i] = (struct iovec){ (void *)zero_page, HV_PAGE_SIZE };
	while (len > 0) {
		uint64_t n = len < (uint64_t)ZERO_IOV * HV_PAGE_SIZE ? len :
		    (uint64_t)ZERO_IOV * HV_PAGE_SIZE;
		ssize_t w = pwritev(m->fd, iov,
		    (int)((n + HV_PAGE_SIZE - 1) / HV_PAGE_SIZE), (off_t)off);

		if (w <= 0)
			return false;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return true;
}

void
mem_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr, bool map_in)
{
	uint64_t off = mfn << HV_PAGE_SHIFT, end = off + (nr << HV_PAGE_SHIFT);

	if (!mem_page(m, mfn) || nr == 0)
		return;
	while (off < end) {
		uint64_t c = off >> MAP_SHIFT, n = ((c + 1) << MAP_SHIFT) - off;
		uint64_t cs = c << MAP_SHIFT, cl = 1ull << MAP_SHIFT;

		if (n > end - off)
			n = end - off;
		if (!chunk_mapped(m, c) && map_in) {
			if (cs + cl > m->bytes)
				cl = m->bytes - cs;
			/* An error (old kernel) only loses the speed-up. */
			(void)madvise(m->base + cs, cl, MADV_POPULATE_WRITE);
			mark_mapped(m, cs, cl);
		}
		if (chunk_mapped(m, c) || !zero_fd(m, off, n)) {
			mem_ntzero(m->base + off, n);
			mark_mapped(m, off, n);
		}
		off += n;
	}
}

bool
mem_is_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr)
{
	const uint64_t *p = mem_page(m, mfn);
	uint64_t i, words = (nr << HV_PAGE_SHIFT) / sizeof(uint64_t);

	if (!p)
		return true;
	/* Reading maps the pages in: from now on stores are cheaper. */
	mark_mapped(m, mfn << HV_PAGE_SHIFT, nr << HV_PAGE_SHIFT);
	for (i = 0; i < words; i++)
		if (p[i])
			return false;
	return true;
}
