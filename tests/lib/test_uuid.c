/*
 * test_uuid.c - libvmbuild's UUID helpers (over libuuid): the one form
 * they accept and write, and what a generated UUID is.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmbuild.h"

static void
test_round_trip(void **state)
{
	static const uint8_t want[16] = { 0x6f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a,
	    0x49, 0x78, 0x86, 0x95, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xf9 };
	char buf[VMB_UUID_STRLEN];
	uint8_t u[16];

	(void)state;
	assert_int_equal(vmb_uuid_from_str(
	    "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", u), 0);
	assert_memory_equal(u, want, 16);
	vmb_uuid_to_str(u, buf);
	assert_string_equal(buf, "6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9");
	/* Either case in, lower case out. */
	assert_int_equal(vmb_uuid_from_str(
	    "6F1E2D3C-4B5A-4978-8695-A4B3C2D1E0F9", u), 0);
	assert_memory_equal(u, want, 16);
}

static void
test_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"6f1e2d3c4b5a49788695a4b3c2d1e0f9",		/* no dashes */
		"6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f",		/* short */
		"6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9a",	/* long */
		"6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0fg",		/* not hex */
		"6f1e2d3c4-b5a-4978-8695-a4b3c2d1e0f9",		/* dash moved */
		"{6f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9}",
	};
	uint8_t u[16], before[16];

	(void)state;
	memset(u, 0xaa, sizeof(u));
	memcpy(before, u, sizeof(u));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(vmb_uuid_from_str(bad[i], u), -EINVAL);
		/* Written only on success. */
		assert_memory_equal(u, before, 16);
	}
	assert_int_equal(vmb_uuid_from_str(NULL, u), -EINVAL);
}

static void
test_generate(void **state)
{
	uint8_t a[16], b[16], zero[16] = { 0 };

	(void)state;
	assert_true(vmb_uuid_is_null(zero));
	vmb_uuid_new(a);
	vmb_uuid_new(b);
	assert_false(vmb_uuid_is_null(a));
	assert_memory_not_equal(a, b, 16);
	/* Random: version 4, RFC 4122 variant. */
	assert_int_equal(a[6] >> 4, 4);
	assert_int_equal(a[8] >> 6, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_generate),
	};

	return cmocka_run_group_tests_name("uuid", tests, NULL, NULL);
}
