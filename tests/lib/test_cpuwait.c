/*
 * test_cpuwait.c - the steal time of this process's CPUs (cpuwait.c)
 * from /proc/stat files written here: the CPUs asked for are added and
 * the others and the sum line left out; a kernel without a steal column,
 * a missing file and a line longer than the reader's buffer; the share
 * between two samples, with too few ticks, other CPUs or counters that
 * went back refused; and the real /proc/stat read for this thread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmb_internal.h"

static char path[64];

static void
write_stat(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* A file of our own for the test's /proc/stat, removed after it. */
static int
setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_cpuwait.XXXXXX");
	fd = mkstemp(path);
	return fd < 0 ? -1 : close(fd);
}

static int
teardown(void **state)
{
	(void)state;
	return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* user nice system idle iowait irq softirq steal guest guest_nice */
#define STAT_A \
	"cpu  1000 0 1000 9000 0 0 0 900 0 0\n" \
	"cpu0 100 1 50 1000 7 2 3 40 0 0\n" \
	"cpu1 200 0 60 1000 0 0 0 400 0 0\n" \
	"cpu2 300 0 70 1000 0 4 5 60 0 0\n" \
	"intr 123 4 5 6\n" \
	"ctxt 99\n"

static void
test_read(void **state)
{
	struct vmb_cpuwait w;
	cpu_set_t set;

	(void)state;
	write_stat(STAT_A);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(2, &set);
	CPU_SET(7, &set);		/* not in the file: not counted */
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), 0);
	/* busy is user + nice + system + irq + softirq; idle, iowait out */
	assert_int_equal(w.run, (100 + 1 + 50 + 2 + 3) + (300 + 70 + 4 + 5));
	assert_int_equal(w.steal, 40 + 60);
	assert_int_equal(w.cpus, 2);

	/* None of the file's CPUs is ours. */
	CPU_ZERO(&set);
	CPU_SET(5, &set);
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), -ENODATA);
	assert_int_equal(w.cpus, 0);
}

static void
test_bad_files(void **state)
{
	struct vmb_cpuwait w;
	cpu_set_t set;
	char *text;
	size_t len = 0, cap = 8192, start;

	(void)state;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	CPU_SET(1, &set);
	/* A kernel before steal: seven columns. */
	write_stat("cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n");
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), -ENODATA);
	assert_int_equal(w.cpus, 0);
	/* Not numbers at all. */
	write_stat("cpu0 a b c\n");
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), -ENODATA);
	write_stat("");
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), -ENODATA);
	/*
	 * A line longer than the reader's buffer whose rest looks like a
	 * CPU's line: the rest is not read as one.
	 */
	text = malloc(cap);
	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len,
	    "cpu0 10 0 10 0 0 0 0 5 0 0\n");
	start = len;
	len += (size_t)snprintf(text + len, cap - len, "intr");
	while (len - start < 511)	/* what one read of 512 bytes takes */
		text[len++] = ' ';
	len += (size_t)snprintf(text + len, cap - len,
	    "cpu1 1000 0 0 0 0 0 0 1000 0 0\n");
	write_stat(text);
	free(text);
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), 0);
	assert_int_equal(w.cpus, 1);
	assert_int_equal(w.run, 20);
	assert_int_equal(w.steal, 5);

	unlink(path);
	assert_int_equal(vmb__cpuwait_read(path, &set, &w), -ENOENT);
}

static void
test_share(void **state)
{
	struct vmb_cpuwait a = { .run = 1000, .steal = 100, .cpus = 4 };
	struct vmb_cpuwait b = a;
	double share = -1;

	(void)state;
	/* 30 ticks busy and 30 waiting: half the wanted time was steal. */
	b.run += 30;
	b.steal += 30;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), 0);
	assert_true(share > 0.499 && share < 0.501);

	/* No wait at all. */
	b = a;
	b.run += 500;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), 0);
	assert_true(share == 0.0);

	/* Too few ticks to say. */
	b = a;
	b.run += VMB_CPUWAIT_MIN_TICKS - 1;
	share = -1;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), -ENODATA);
	assert_true(share == -1);
	b.run += 1;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), 0);

	/* Other CPUs (the affinity changed), nothing read, going back. */
	b = a;
	b.run += 100;
	b.cpus = 3;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), -ENODATA);
	b.cpus = 4;
	b.steal = a.steal - 1;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), -ENODATA);
	a.cpus = b.cpus = 0;
	assert_int_equal(vmb_cpuwait_share(&a, &b, &share), -ENODATA);
}

/*
 * This machine's own /proc/stat: every Linux since 2.6.11 has steal, so
 * the thread's CPUs are read, and counters never go back.
 */
static void
test_proc(void **state)
{
	struct vmb_cpuwait a, b;
	cpu_set_t set;
	double share;
	int rc;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal(vmb_cpuwait_sample(&a), 0);
	assert_int_equal(a.cpus, (uint32_t)CPU_COUNT(&set));
	assert_int_equal(vmb_cpuwait_sample(&b), 0);
	assert_true(b.run >= a.run && b.steal >= a.steal);
	rc = vmb_cpuwait_share(&a, &b, &share);
	assert_true(rc == 0 || rc == -ENODATA);
	if (rc == 0)
		assert_true(share >= 0 && share <= 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_files, setup,
		    teardown),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
