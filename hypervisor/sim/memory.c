/*
 * memory.c - the modelled host's physical memory.
 *
 * Real backing: hvsim's own anonymous memory, one range per node, machine
 * frame m at base + (m << HV_PAGE_SHIFT), the way a hypervisor's direct
 * map holds all of the host's memory.  It is asked for in transparent
 * huge pages (MADV_HUGEPAGE), so that mapping it in costs one fault per
 * 2 MiB instead of 512, and every zeroing is non-temporal stores through
 * that mapping, at memory speed, from as many threads as there are
 * scrubbers or populates: nothing in the kernel serialises them.
 *
 * What this replaced, measured with bench/hvsim/bench_zero on the shared
 * 2-CPU VM this was developed on (a shadow-paging guest: a 4 KiB user
 * mapping costs ~14 us on its first access, a 2 MiB one little more than
 * its zeroing):
 *   - one memfd mapped shared (so that HV_OP_MAP could pass it to a
 *     loader): shmem gets no huge pages (shmem_enabled is "never" on
 *     Debian), so the first store through a fresh 4 KiB mapping cost
 *     3.6-4 s per GiB; inline zeroing therefore went through the
 *     descriptor (pwritev of the zero page), 0.16-0.36 s per GiB, and two
 *     threads doing so serialised on the memfd's inode lock;
 *   - here: 0.08-0.1 s per GiB once mapped, two threads side by side.
 * A loader reaches guest memory with HV_OP_GUEST_READ/WRITE (copies)
 * instead of a shared descriptor.
 *
 * The memory is faulted in by its first store: the boot scrub (workers in
 * the background, or all of it before serving with --scrub-workers 0)
 * maps everything in, as a hypervisor has all of its memory mapped; with
 * --no-boot-scrub a page is mapped in when it is first scrubbed.  With
 * --topology host, node i's range prefers this machine's node i
 * (mem_bind_host_nodes), so that memory and its scrubbers are local.
 *
 * Phantom backing: no memory at all, only the heap's metadata.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hvsim.h"

#define ALIGN_2M	(2ull << 20)
#define MPOL_PREFERRED_	1	/* <numaif.h>, without needing libnuma */

int
mem_init(struct hvmem *m, uint32_t backing, uint64_t bytes)
{
	uint8_t *p;

	memset(m, 0, sizeof(*m));
	m->backing = backing;
	m->bytes = bytes;
	if (backing == HV_BACKING_PHANTOM)
		return 0;
	if (backing != HV_BACKING_REAL || bytes == 0)
		return -EINVAL;
	/* Reserve 2 MiB more, to start on a huge-page boundary. */
	p = mmap(NULL, bytes + ALIGN_2M, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->map = p;
	m->map_len = bytes + ALIGN_2M;
	m->base = (uint8_t *)(((uintptr_t)p + ALIGN_2M - 1) & ~(ALIGN_2M - 1));
	/* Without THP (disabled on this machine) 4 KiB pages still work. */
	m->huge = madvise(m->base, bytes, MADV_HUGEPAGE) == 0;
	return 0;
}

void
mem_fini(struct hvmem *m)
{
	if (m->map)
		munmap(m->map, m->map_len);
	m->map = NULL;
	m->base = NULL;
}

int
mem_bind_host_nodes(const struct hvmem *m, uint32_t nodes, uint64_t per_node)
{
	uint32_t i;

	if (!m->base)
		return 0;
	for (i = 0; i < nodes && i < 64; i++) {
		unsigned long mask = 1ul << i;

		/* Preferred, not bound: a full node falls back, not OOM. */
		if (syscall(SYS_mbind, m->base + i * per_node, per_node,
		    MPOL_PREFERRED_, &mask, 64ul, 0u) != 0)
			return -errno;
	}
	return 0;
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
	uint8_t *p = mem_page(m, mfn);

	if (p && nr > 0)
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
