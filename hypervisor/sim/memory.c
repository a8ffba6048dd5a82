/*
 * memory.c - the modelled host's physical memory.
 *
 * Real backing: one memfd for the whole host, machine frame m at offset
 * m << HV_PAGE_SHIFT, mapped shared so that HV_OP_MAP can pass the same
 * descriptor to a loader.  Pages are faulted in by the first store (the
 * boot scrub, or a scrub after destroy), so untouched memory costs nothing.
 * Phantom backing: no memory at all, only the heap's metadata.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hvsim.h"

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

void
mem_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr)
{
	void *p = mem_page(m, mfn);

	if (p)
		mem_ntzero(p, nr << HV_PAGE_SHIFT);
}

bool
mem_is_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr)
{
	const uint64_t *p = mem_page(m, mfn);
	uint64_t i, words = (nr << HV_PAGE_SHIFT) / sizeof(uint64_t);

	if (!p)
		return true;
	for (i = 0; i < words; i++)
		if (p[i])
			return false;
	return true;
}
