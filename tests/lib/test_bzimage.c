/*
 * test_bzimage.c - a PVH kernel as distributions ship it: a bzImage whose
 * payload is the ELF, xz- or gzip-compressed (bzimage.c), built here
 * around build/guest/hello.elf the way the kernel's build lays one out
 * (setup sectors, "HdrS" header, payload_offset/length, the unpacked
 * size appended), then unpacked and loaded like any kernel.  Bad headers
 * and other compressions are refused with a reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "vmb_internal.h"
#include "hellopath.h"
#include "bzfixture.h"

static uint8_t *elf;
static size_t elf_len;

static int
load_hello(void **state)
{
	FILE *f = fopen(hello_elf_path(), "rb");

	(void)state;
	if (!f)
		return -1;
	elf = malloc(1 << 20);
	elf_len = fread(elf, 1, 1 << 20, f);
	fclose(f);
	return elf_len > 0 ? 0 : -1;
}

static int
free_hello(void **state)
{
	(void)state;
	free(elf);
	return 0;
}

static size_t
xz(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	return bz_xz(in, len, out, cap);
}

static size_t
gz(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	z_stream z;

	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	deflateEnd(&z);
	return z.total_out;
}

/* A bzImage around `payload` (which gets the unpacked size appended). */
static uint8_t *
bzimage(const uint8_t *payload, size_t plen, size_t *ret_len)
{
	return bz_wrap(payload, plen, elf_len, ret_len);
}

static void
unpack_ok(size_t (*compress)(const uint8_t *, size_t, uint8_t *, size_t))
{
	uint8_t *c = malloc(elf_len + 4096), *img, *out = NULL;
	size_t clen, len, out_len = 0;
	char why[192] = "";

	assert_non_null(c);
	clen = compress(elf, elf_len, c, elf_len + 4096);
	img = bzimage(c, clen, &len);
	assert_true(vmb__is_bzimage(img, len));
	assert_int_equal(vmb__bzimage_unpack(img, len, &out, &out_len, why,
	    sizeof(why)), 0);
	assert_int_equal(out_len, elf_len);
	assert_memory_equal(out, elf, elf_len);
	free(out);
	free(img);
	free(c);
}

static void
test_xz(void **state)
{
	(void)state;
	unpack_ok(xz);
}

static void
test_gzip(void **state)
{
	(void)state;
	unpack_ok(gz);
}

/* The loader takes a bzImage file as it takes the ELF: same entry. */
static void
test_image_open(void **state)
{
	char path[] = "/tmp/vmb-bzimage-XXXXXX";
	uint8_t *c = malloc(elf_len + 4096), *img;
	struct vmb__image *vi = NULL;
	struct vmb__elf e;
	struct vmb_guest g;
	size_t len;
	int fd;

	(void)state;
	img = bzimage(c, xz(elf, elf_len, c, elf_len + 4096), &len);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, len), (ssize_t)len);
	close(fd);
	memset(&g, 0, sizeof(g));
	g.kernel = path;
	assert_int_equal(vmb__image_open(&g, &vi), 0);
	assert_int_equal(vmb__elf_parse(elf, elf_len, &e), 0);
	assert_int_equal(vmb__image_entry(vi), e.entry);
	vmb__image_free(vi);
	unlink(path);
	free(img);
	free(c);
}

static void
test_refused(void **state)
{
	static const uint8_t zstd[16] = { 0x28, 0xb5, 0x2f, 0xfd };
	uint8_t *img, *out = NULL, *c = malloc(elf_len + 4096);
	size_t len, out_len;
	char why[192] = "";

	(void)state;
	/* Another compression: refused by name. */
	img = bzimage(zstd, sizeof(zstd), &len);
	assert_int_equal(vmb__bzimage_unpack(img, len, &out, &out_len, why,
	    sizeof(why)), -ENOEXEC);
	assert_non_null(strstr(why, "zstd"));
	/* A payload past the end of the file. */
	bz_put32(img + 0x24c, (uint32_t)len);
	assert_int_equal(vmb__bzimage_unpack(img, len, &out, &out_len, why,
	    sizeof(why)), -EINVAL);
	/* Boot protocol before 2.08: no payload fields. */
	bz_put32(img + 0x24c, sizeof(zstd) + 4);
	img[0x206] = 0x07;
	assert_int_equal(vmb__bzimage_unpack(img, len, &out, &out_len, why,
	    sizeof(why)), -EINVAL);
	free(img);
	/* A corrupt xz stream. */
	len = xz(elf, elf_len, c, elf_len + 4096);
	c[len / 2] ^= 0xff;
	img = bzimage(c, len, &len);
	assert_int_equal(vmb__bzimage_unpack(img, len, &out, &out_len, why,
	    sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "corrupt"));
	free(img);
	/* Not a bzImage at all. */
	assert_false(vmb__is_bzimage(elf, elf_len));
	free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xz),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_image_open),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests_name("bzimage", tests, load_hello,
	    free_hello);
}
