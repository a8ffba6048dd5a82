/*
 * bzfixture.h - bzImages made around an ELF kernel for the tests, the
 * way the kernel's build lays one out: setup sectors, the "HdrS" header
 * (boot protocol 2.15), payload_offset/length, the payload and the
 * unpacked size appended.  Included by the cmocka tests that need one
 * (test_bzimage, test_imgcache, test_build_sim).
 */
#ifndef VMB_TEST_BZFIXTURE_H
#define VMB_TEST_BZFIXTURE_H

#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BZ_SETUP_SECTS	3
#define BZ_PAYLOAD_AT	((BZ_SETUP_SECTS + 1) * 512)

static inline void
bz_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* `in` xz-compressed into out[cap] (xz -6, CRC32 as the kernel's). */
static inline size_t
bz_xz(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	size_t pos = 0;

	assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in,
	    len, out, &pos, cap), LZMA_OK);
	return pos;
}

/*
 * A bzImage around `payload` (plen bytes, compressed from `unpacked`
 * bytes, which the kernel's build appends), malloc'd: *ret_len bytes.
 */
static inline uint8_t *
bz_wrap(const uint8_t *payload, size_t plen, size_t unpacked,
    size_t *ret_len)
{
	uint8_t *b = calloc(1, BZ_PAYLOAD_AT + plen + 4);

	assert_non_null(b);
	b[0x1f1] = BZ_SETUP_SECTS;
	memcpy(b + 0x202, "HdrS", 4);
	b[0x206] = 0x0f;		/* boot protocol 2.15 */
	b[0x207] = 0x02;
	bz_put32(b + 0x248, 0);		/* payload_offset */
	bz_put32(b + 0x24c, (uint32_t)plen + 4);
	memcpy(b + BZ_PAYLOAD_AT, payload, plen);
	bz_put32(b + BZ_PAYLOAD_AT + plen, (uint32_t)unpacked);
	*ret_len = BZ_PAYLOAD_AT + plen + 4;
	return b;
}

/* The ELF `elf` as an xz bzImage, malloc'd: *ret_len bytes. */
static inline uint8_t *
bz_make(const uint8_t *elf, size_t elf_len, size_t *ret_len)
{
	size_t cap = elf_len + 4096;
	uint8_t *c = malloc(cap), *b;

	assert_non_null(c);
	b = bz_wrap(c, bz_xz(elf, elf_len, c, cap), elf_len, ret_len);
	free(c);
	return b;
}

#endif /* VMB_TEST_BZFIXTURE_H */
