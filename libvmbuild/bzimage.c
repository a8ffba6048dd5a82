/*
 * bzimage.c - the ELF kernel inside an x86 bzImage.
 *
 * Distributions ship Linux as a bzImage (/boot/vmlinuz-*): real-mode
 * setup code, then a compressed payload that is the kernel's ELF image
 * (vmlinux, with its PVH entry note).  xl boots it as a PVH kernel
 * because libxenguest's bzImage loader (xg_dom_bzimageloader.c) unpacks
 * the payload; so does vmbuild, here, before the ELF is parsed.
 *
 * The boot protocol (Documentation/x86/boot.rst) gives, from version
 * 2.08 on, payload_offset and payload_length in the setup header; the
 * payload starts after the (setup_sects + 1) * 512 bytes of setup.  Its
 * first bytes say how it is compressed.  xz (Debian's kernels) and gzip
 * are unpacked with liblzma and zlib; other compressions are refused by
 * name.  The image is untrusted: every offset is checked, and the
 * unpacked size is bounded.
 */
#include <elf.h>
#include <errno.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "vmb_internal.h"

#define SETUP_SECTS_OFF		0x1f1
#define HDR_MAGIC_OFF		0x202
#define HDR_VERSION_OFF		0x206
#define PAYLOAD_OFFSET_OFF	0x248
#define PAYLOAD_LENGTH_OFF	0x24c
#define HDR_END			0x250
#define UNPACKED_MAX		(512ull << 20)

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

bool
vmb__is_bzimage(const void *image, size_t len)
{
	const uint8_t *p = image;

	return len >= HDR_END && !memcmp(p + HDR_MAGIC_OFF, "HdrS", 4);
}

static const struct {
	const char *name;
	const char *magic;
	size_t	len;
} compressions[] = {
	{ "xz",		"\xfd" "7zXZ\0",	6 },
	{ "gzip",	"\x1f\x8b",		2 },
	{ "zstd",	"\x28\xb5\x2f\xfd",	4 },
	{ "bzip2",	"BZh",			3 },
	{ "lz4",	"\x02\x21\x4c\x18",	4 },
	{ "lzo",	"\x89LZO",		4 },
	{ "lzma",	"\x5d\x00\x00",		3 },
};

static const char *
compression(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < sizeof(compressions) / sizeof(compressions[0]);
	    i++)
		if (len >= compressions[i].len &&
		    !memcmp(p, compressions[i].magic, compressions[i].len))
			return compressions[i].name;
	return NULL;
}

/* Grow *out to at least `want` bytes (bounded); -EFBIG past the bound. */
static int
grow(uint8_t **out, size_t *cap, size_t want)
{
	uint8_t *n;

	if (want > UNPACKED_MAX)
		return -EFBIG;
	if (want <= *cap)
		return 0;
	n = realloc(*out, want);
	if (!n)
		return -ENOMEM;
	*out = n;
	*cap = want;
	return 0;
}

static int
unxz(const uint8_t *in, size_t len, uint8_t **out, size_t *cap,
    size_t *ret_len)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;
	int rc = 0;

	if (lzma_stream_decoder(&s, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = in;
	s.avail_in = len;
	do {
		if (s.total_out == *cap &&
		    (rc = grow(out, cap, *cap * 2)) != 0)
			break;
		s.next_out = *out + s.total_out;
		s.avail_out = *cap - s.total_out;
		r = lzma_code(&s, LZMA_FINISH);
	} while (r == LZMA_OK || (r == LZMA_BUF_ERROR && s.avail_out == 0));
	/* The kernel appends its unpacked size after the stream: ignored. */
	if (!rc && r != LZMA_STREAM_END)
		rc = r == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
	*ret_len = (size_t)s.total_out;
	lzma_end(&s);
	return rc;
}

static int
gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *cap,
    size_t *ret_len)
{
	z_stream z;
	int r, rc = 0;

	memset(&z, 0, sizeof(z));
	if (len > UINT32_MAX || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	do {
		if (z.total_out == *cap &&
		    (rc = grow(out, cap, *cap * 2)) != 0)
			break;
		z.next_out = *out + z.total_out;
		z.avail_out = (uInt)(*cap - z.total_out);
		r = inflate(&z, Z_FINISH);
	} while (r == Z_OK || (r == Z_BUF_ERROR && z.avail_out == 0));
	if (!rc && r != Z_STREAM_END)
		rc = r == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	*ret_len = (size_t)z.total_out;
	inflateEnd(&z);
	return rc;
}

int
vmb__bzimage_unpack(const void *image, size_t len, uint8_t **ret,
    size_t *ret_len, char *why, size_t why_len)
{
	const uint8_t *p = image, *pl;
	uint32_t sects, off, plen, hint;
	size_t cap, got = 0;
	uint8_t *out = NULL, *grown;
	const char *comp;
	int rc;

	if (!vmb__is_bzimage(image, len))
		return -ENOEXEC;
	sects = p[SETUP_SECTS_OFF] ? p[SETUP_SECTS_OFF] : 4;
	off = (sects + 1) * 512 + le32(p + PAYLOAD_OFFSET_OFF);
	plen = le32(p + PAYLOAD_LENGTH_OFF);
	if ((p[HDR_VERSION_OFF] | p[HDR_VERSION_OFF + 1] << 8) < 0x208 ||
	    plen < 16 || off > len || plen > len - off) {
		snprintf(why, why_len, "a bzImage without a payload it "
		    "describes (boot protocol 2.08 or later needed)");
		return -EINVAL;
	}
	pl = p + off;
	comp = compression(pl, plen);
	if (!comp || (strcmp(comp, "xz") && strcmp(comp, "gzip"))) {
		snprintf(why, why_len, "a bzImage whose payload is %s%s, which "
		    "vmbuild cannot unpack (xz and gzip only)", comp ?
		    "compressed with " : "not compressed in a known way",
		    comp ? comp : "");
		return -ENOEXEC;
	}
	/* Both formats end with the unpacked size: a hint, not trusted. */
	hint = le32(pl + plen - 4);
	cap = hint >= (1u << 20) && hint <= UNPACKED_MAX ? hint : 64u << 20;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	rc = !strcmp(comp, "xz") ? unxz(pl, plen, &out, &cap, &got) :
	    gunzip(pl, plen, &out, &cap, &got);
	if (!rc && (got < SELFMAG || memcmp(out, ELFMAG, SELFMAG)))
		rc = -ENOEXEC;
	if (rc) {
		snprintf(why, why_len, "bzImage: its %s payload %s", comp,
		    rc == -EFBIG ? "unpacks to more than 512 MiB" :
		    rc == -ENOEXEC ? "is not an ELF image" : rc == -ENOMEM ?
		    "cannot be unpacked: out of memory" : "is corrupt");
		free(out);
		return rc;
	}
	/* Without the slack of the guess: the image cache keeps it long. */
	if (got < cap && (grown = realloc(out, got)))
		out = grown;
	*ret = out;
	*ret_len = got;
	return 0;
}
