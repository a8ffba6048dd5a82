/*
 * test_counters.c - the table of companion counters (counters.def):
 * its shape (groups and objects together, one HELP and unit per family,
 * names Prometheus accepts, memory exported in bytes), that it takes
 * every field of struct hv_counters exactly once, and the conversion and
 * sums.
 *
 * With --list it prints the table instead, one counter a line:
 * "GROUP<TAB>KEY<TAB>METRIC<TAB>LABELS<TAB>SCALE" (METRIC "-" and SCALE
 * 0 for a sum; SCALE is what one count is in the metric), for
 * tests/daemon/counters.py, which looks for each of them in
 * host.counters, /metrics and `vmctl stats`.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <vmbuild/hvabi.h>

#include "vmb_internal.h"

static const struct vmb_counter_info *
info(int i)
{
	const struct vmb_counter_info *ci = vmb_counter_info(i);

	assert_non_null(ci);
	return ci;
}

static bool
is_sum(const struct vmb_counter_info *ci)
{
	return ci->metric == NULL;
}

static void
test_entries(void **state)
{
	(void)state;
	assert_null(vmb_counter_info(VMB_COUNTER_MAX));
	assert_null(vmb_counter_info(-1));
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = info(i);

		assert_non_null(ci->group);
		assert_non_null(ci->key);
		assert_true(ci->key[0] && ci->key[strlen(ci->key) - 1] != '.');
		/* One VMB_CNT_HAVE_* bit. */
		assert_true(ci->have && !(ci->have & (ci->have - 1)));
		assert_non_null(ci->help);
		assert_true(strlen(ci->help) > 10);
		if (is_sum(ci)) {
			assert_true(ci->sum_first <= ci->sum_last);
			for (unsigned k = ci->sum_first; k <= ci->sum_last;
			    k++) {
				assert_false(is_sum(info(k)));
				assert_string_equal(info(k)->group, ci->group);
			}
			continue;
		}
		assert_int_equal(strncmp(ci->metric, "vmbuild_", 8), 0);
		assert_string_equal(ci->metric + strlen(ci->metric) - 6,
		    "_total");
		assert_non_null(ci->labels);
		assert_non_null(ci->unit);
		assert_true(ci->unit[0] != '\0');
	}
}

/* Length of the object part of "a.b" (0 for a plain key). */
static size_t
obj_len(const char *key)
{
	const char *dot = strchr(key, '.');

	return dot ? (size_t)(dot - key) : 0;
}

/* Is `key`'s object (the "a" of "a.b") the same as `other`'s? */
static bool
same_obj(const char *key, const char *other)
{
	return obj_len(key) == obj_len(other) &&
	    strncmp(key, other, obj_len(key)) == 0;
}

/* Groups, and objects within a group, are contiguous; keys are unique. */
static void
test_layout(void **state)
{
	(void)state;
	for (int i = 1; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *a = info(i), *prev = info(i - 1);
		bool new_group = strcmp(a->group, prev->group) != 0;

		for (int j = 0; j < i; j++) {
			const struct vmb_counter_info *b = info(j);

			/* A group starts once. */
			if (new_group)
				assert_string_not_equal(b->group, a->group);
			if (strcmp(a->group, b->group) != 0)
				continue;
			assert_string_not_equal(a->key, b->key);
			/* An object starts once within its group. */
			if (obj_len(a->key) && !same_obj(a->key, prev->key))
				assert_false(same_obj(a->key, b->key));
			/* "a" is not both a plain key and an object. */
			assert_false(!obj_len(b->key) && obj_len(a->key) ==
			    strlen(b->key) && !strncmp(a->key, b->key,
			    strlen(b->key)));
			assert_false(!obj_len(a->key) && obj_len(b->key) ==
			    strlen(a->key) && !strncmp(b->key, a->key,
			    strlen(a->key)));
		}
	}
}

/* The entries of a family share group, help and unit; labels differ. */
static void
test_families(void **state)
{
	(void)state;
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *a = info(i);
		int n = 0;

		if (is_sum(a))
			continue;
		for (int j = 0; j < VMB_COUNTER_MAX; j++) {
			const struct vmb_counter_info *b = info(j);

			if (is_sum(b) || strcmp(a->metric, b->metric) != 0)
				continue;
			n++;
			assert_string_equal(a->group, b->group);
			assert_string_equal(a->help, b->help);
			assert_string_equal(a->unit, b->unit);
			if (i != j)
				assert_string_not_equal(a->labels, b->labels);
		}
		/* Labels only where a family has several series. */
		assert_true((n == 1) == (a->labels[0] == '\0'));
	}
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/*
 * Prometheus wants base units: a counter of memory is exported in bytes
 * and its family says so in its name; a family named in bytes counts
 * memory; no family is named in pages.
 */
static void
test_metric_units(void **state)
{
	(void)state;
	assert_int_equal(vmb_counter_metric_scale(VMB_COUNTER_MAX, NULL), 0);
	assert_int_equal(vmb_counter_metric_scale(VMB_CNT_TLB_ISSUED, NULL),
	    0);
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = info(i);
		const char *unit = NULL;
		uint64_t scale;

		if (is_sum(ci))
			continue;
		scale = vmb_counter_metric_scale(i, &unit);
		assert_non_null(unit);
		assert_null(strstr(ci->metric, "page"));
		if (strcmp(ci->unit, "pages") == 0) {
			assert_int_equal(scale, 4096);
			assert_string_equal(unit, "bytes");
		} else {
			assert_int_equal(scale, 1);
			assert_string_equal(unit, ci->unit);
		}
		assert_true((scale != 1) == ends_with(ci->metric,
		    "_bytes_total"));
	}
	assert_int_equal(vmb_counter_metric_scale(VMB_CNT_SCRUB_PAGES_BOOT,
	    NULL), 4096);
	assert_int_equal(vmb_counter_metric_scale(VMB_CNT_UNSHADOW_EARLY,
	    NULL), 1);
}

/*
 * Every uint64_t of struct hv_counters after version and pad is one
 * entry's value, each a different one: a field added to the ABI without
 * its entry (or an entry reading the wrong field) fails here.
 */
static void
test_from_hv(void **state)
{
	struct hv_counters h;
	struct vmb_counters c;
	const size_t first = offsetof(struct hv_counters, tlb_flushes_issued);
	const size_t nslots = (sizeof(h) - first) / sizeof(uint64_t);
	bool *taken = calloc(nslots, sizeof(*taken));
	size_t used = 0;

	(void)state;
	assert_non_null(taken);
	memset(&h, 0, sizeof(h));
	h.version = HV_ABI_VERSION;
	for (size_t s = 0; s < nslots; s++) {
		uint64_t v = 1000 + s;

		memcpy((char *)&h + first + s * sizeof(v), &v, sizeof(v));
	}
	assert_int_equal(vmb__counters_from_hv(&h, sizeof(h),
	    VMB_CNT_HAVE_FLUSH, &c), 0);
	assert_int_equal(c.have, VMB_CNT_HAVE_FLUSH);
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		size_t s;

		if (is_sum(info(i))) {
			assert_int_equal(c.v[i], 0);
			continue;
		}
		assert_true(c.v[i] >= 1000 && c.v[i] < 1000 + nslots);
		s = c.v[i] - 1000;
		assert_false(taken[s]);
		taken[s] = true;
		used++;
	}
	assert_int_equal(used, nslots);
	free(taken);
	/* The named fields land where their names say. */
	assert_int_equal(c.v[VMB_CNT_DOMAINS_DESTROYED],
	    1000 + (offsetof(struct hv_counters, domains_destroyed) - first) /
	    sizeof(uint64_t));
	assert_int_equal(c.v[VMB_CNT_UNSHADOW_EARLY], 1000 +
	    (offsetof(struct hv_counters, unshadow[HV_UNSHADOW_EARLY]) -
	    first) / sizeof(uint64_t));

	/* Another layout is refused, not misread. */
	assert_int_equal(vmb__counters_from_hv(&h, sizeof(h) - 8, 0, &c),
	    -EPROTO);
	h.version = HV_ABI_VERSION + 1;
	assert_int_equal(vmb__counters_from_hv(&h, sizeof(h), 0, &c),
	    -EPROTO);
}

static void
test_sums(void **state)
{
	struct vmb_counters c;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.v[VMB_CNT_TLB_ISSUED_POPULATE] = 1;
	c.v[VMB_CNT_TLB_ISSUED_FREE] = 20;
	c.v[VMB_CNT_TLB_ISSUED_OTHER] = 300;
	c.v[VMB_CNT_TLB_FILTERED_FREE] = 7;
	c.v[VMB_CNT_TLB_ISSUED] = 99;	/* stale: recomputed */
	vmb__counters_sum(&c);
	assert_int_equal(c.v[VMB_CNT_TLB_ISSUED], 321);
	assert_int_equal(c.v[VMB_CNT_TLB_FILTERED], 7);
}

static int
list(void)
{
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = vmb_counter_info(i);

		printf("%s\t%s\t%s\t%s\t%llu\n", ci->group, ci->key,
		    ci->metric ? ci->metric : "-", ci->metric ? ci->labels :
		    "", (unsigned long long)vmb_counter_metric_scale(i, NULL));
	}
	return ferror(stdout) ? 1 : 0;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_metric_units),
		cmocka_unit_test(test_from_hv),
		cmocka_unit_test(test_sums),
	};

	if (argc == 2 && strcmp(argv[1], "--list") == 0)
		return list();
	return cmocka_run_group_tests_name("counters", tests, NULL, NULL);
}
