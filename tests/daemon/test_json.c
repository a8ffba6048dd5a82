/*
 * test_json.c - daemon/json.c's writer and a non-finite number.
 *
 * JSON has no NaN or infinity.  yajl_gen_double() refuses them
 * (yajl_gen_invalid_number) and writes nothing, not even the value's
 * separator, while the key before it is already out: the map that
 * follows is broken (the next key is taken as the missing value, and so
 * on), which a reader such as vmctl refuses as a whole.  The daemon's
 * jg_dbl()/jg_kv_dbl() write null instead, so a message stays JSON.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"

/* The text of g, parsed as vmctl and the daemon parse messages. */
static yajl_val
parse_gen(yajl_gen g, char *err, size_t err_len)
{
	size_t len;
	const char *text = jg_text(g, &len);

	return jv_parse(text, len, JSON_MAX_DEPTH, err, err_len);
}

/* What yajl itself does: no output at all for the value. */
static void
test_yajl_writes_nothing(void **state)
{
	static const double bad[] = { NAN, INFINITY, -INFINITY };
	const unsigned char *buf;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		yajl_gen g = jg_new();

		assert_non_null(g);
		yajl_gen_array_open(g);
		assert_int_equal(yajl_gen_double(g, bad[i]),
		    yajl_gen_invalid_number);
		yajl_gen_get_buf(g, &buf, &len);
		assert_int_equal(len, 1);	/* just the "[" */
		yajl_gen_free(g);
	}
}

/*
 * ... so a map written with it is broken: the next key is taken as the
 * missing value, the next value as a key, and so on, until a value that
 * cannot be a key (a number, null, a map) is dropped in turn.  No JSON
 * at all when the map ends first ({"rate"}: what a reader such as vmctl
 * refuses), else valid JSON with shifted keys, silently wrong.
 */
static void
test_yajl_breaks_the_map(void **state)
{
	char err[256];
	yajl_gen g = jg_new();
	yajl_val v;

	(void)state;
	yajl_gen_map_open(g);
	jg_kv_u64(g, "done", 1);
	jg_key(g, "rate_bytes_per_second");
	yajl_gen_double(g, NAN);		/* as before 3e5021d */
	yajl_gen_map_close(g);
	v = parse_gen(g, err, sizeof(err));
	assert_null(v);
	assert_true(err[0] != '\0');
	yajl_gen_free(g);

	g = jg_new();
	yajl_gen_map_open(g);
	jg_key(g, "rate_bytes_per_second");
	yajl_gen_double(g, INFINITY);
	jg_kv_str(g, "phase", "populate");
	jg_kv_u64(g, "total", 2);	/* 2 cannot be a key: dropped */
	yajl_gen_map_close(g);
	v = parse_gen(g, err, sizeof(err));
	assert_non_null(v);
	assert_string_equal(jv_get(v, "rate_bytes_per_second")->u.string,
	    "phase");
	assert_string_equal(jv_get(v, "populate")->u.string, "total");
	assert_null(jv_get(v, "phase"));
	yajl_tree_free(v);
	yajl_gen_free(g);
}

/* jg_kv_dbl() and jg_dbl() write null for each non-finite value. */
static void
test_jg_writes_null(void **state)
{
	static const double bad[] = { NAN, -NAN, INFINITY, -INFINITY };
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		yajl_gen g = jg_new();
		yajl_val v, x;

		yajl_gen_map_open(g);
		jg_kv_u64(g, "done", 1);
		jg_kv_dbl(g, "rate", bad[i]);
		jg_key(g, "finished_at");
		jg_dbl(g, bad[i]);
		jg_kv_str(g, "phase", "populate");
		yajl_gen_map_close(g);
		v = parse_gen(g, err, sizeof(err));
		assert_non_null(v);
		assert_true(YAJL_IS_OBJECT(v));
		assert_int_equal(v->u.object.len, 4);
		x = jv_get(v, "rate");
		assert_non_null(x);
		assert_true(YAJL_IS_NULL(x));
		x = jv_get(v, "finished_at");
		assert_non_null(x);
		assert_true(YAJL_IS_NULL(x));
		x = jv_get(v, "phase");
		assert_true(YAJL_IS_STRING(x));
		assert_string_equal(x->u.string, "populate");
		yajl_tree_free(v);
		yajl_gen_free(g);
	}
}

/* A finite double is still a number, whatever its size. */
static void
test_jg_finite(void **state)
{
	static const double good[] = { 0.0, -0.0, 1.5, 1e300, -1e-300,
		5e-324, 1.7976931348623157e308 };
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		yajl_gen g = jg_new();
		yajl_val v, x;

		yajl_gen_map_open(g);
		jg_kv_dbl(g, "x", good[i]);
		yajl_gen_map_close(g);
		v = parse_gen(g, err, sizeof(err));
		assert_non_null(v);
		x = jv_get(v, "x");
		assert_true(YAJL_IS_NUMBER(x));
		yajl_tree_free(v);
		yajl_gen_free(g);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yajl_writes_nothing),
		cmocka_unit_test(test_yajl_breaks_the_map),
		cmocka_unit_test(test_jg_writes_null),
		cmocka_unit_test(test_jg_finite),
	};

	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
