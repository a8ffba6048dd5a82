/*
 * test_cpukeep.c - daemon/cpukeep.c: every thread of the process on one
 * CPU while kept, each given its own affinity back after, a thread
 * started meanwhile the process's; builds that overlap counted; the
 * steal share from the sampled window before a build and what it
 * decides in each mode; a spawn from a kept thread on the process's
 * own CPUs.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cpukeep.h"

#define NR_THREADS	3

static pthread_barrier_t ready, done;

/* Waits until the test has looked at its affinity. */
static void *
waiter(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&done);
	return NULL;
}

static void
affinity(pthread_t t, cpu_set_t *set)
{
	assert_int_equal(pthread_getaffinity_np(t, sizeof(*set), set), 0);
}

/* Two CPUs of this process's, a and b, or skip with only one. */
static int
two_cpus(int *a, int *b)
{
	cpu_set_t set;

	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	*a = *b = -1;
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		if (*a < 0)
			*a = i;
		else if (*b < 0)
			*b = i;
	}
	return *b >= 0;
}

static void
test_keep_and_back(void **state)
{
	pthread_t t[NR_THREADS], late;
	cpu_set_t own, one, before, got;
	int a, b;

	(void)state;
	if (!two_cpus(&a, &b))
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof(own), &own), 0);
	pthread_barrier_init(&ready, NULL, NR_THREADS + 1);
	pthread_barrier_init(&done, NULL, NR_THREADS + 2);
	for (int i = 0; i < NR_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, waiter, NULL), 0);
	pthread_barrier_wait(&ready);
	/* One thread with an affinity of its own: it gets it back. */
	CPU_ZERO(&before);
	CPU_SET(a, &before);
	CPU_SET(b, &before);
	assert_int_equal(pthread_setaffinity_np(t[0], sizeof(before),
	    &before), 0);

	assert_int_equal(cpukeep_cpu(), -1);
	assert_int_equal(cpukeep_enter(b), 0);
	assert_int_equal(cpukeep_cpu(), b);
	CPU_ZERO(&one);
	CPU_SET(b, &one);
	for (int i = 0; i < NR_THREADS; i++) {
		affinity(t[i], &got);
		assert_true(CPU_EQUAL(&got, &one));
	}
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &one));
	/* A second build: counted, the same CPU, nothing moves. */
	assert_int_equal(cpukeep_enter(a), 0);
	assert_int_equal(cpukeep_cpu(), b);
	/* Started while kept: the one CPU, the process's after. */
	pthread_barrier_init(&ready, NULL, 2);
	assert_int_equal(pthread_create(&late, NULL, waiter, NULL), 0);
	pthread_barrier_wait(&ready);
	affinity(late, &got);
	assert_true(CPU_EQUAL(&got, &one));
	cpukeep_leave();
	affinity(t[1], &got);
	assert_true(CPU_EQUAL(&got, &one));	/* the first build still runs */
	cpukeep_leave();
	assert_int_equal(cpukeep_cpu(), -1);

	affinity(t[0], &got);
	assert_true(CPU_EQUAL(&got, &before));
	for (int i = 1; i < NR_THREADS; i++) {
		affinity(t[i], &got);
		assert_true(CPU_EQUAL(&got, &own));
	}
	affinity(late, &got);
	assert_true(CPU_EQUAL(&got, &own));
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &own));
	/* One leave too many changes nothing. */
	cpukeep_leave();
	assert_int_equal(cpukeep_cpu(), -1);

	pthread_barrier_wait(&done);
	for (int i = 0; i < NR_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_join(late, NULL);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&done);
}

/* The window: the oldest sample of the same CPUs, wrapped ring. */
static void
test_share(void **state)
{
	struct vmb_cpuwait s = { .run = 1000, .steal = 0, .cpus = 4 };
	struct vmb_cpuwait now;
	double share;

	(void)state;
	now = s;
	/* Nothing recorded yet in this process: nothing measured. */
	assert_int_equal(cpukeep_share(&now, &share), -ENODATA);
	cpukeep_note(&s);
	/* Too little wanted since the sample: no measurement. */
	now.run += 10;
	assert_int_equal(cpukeep_share(&now, &share), -ENODATA);
	now.run = s.run + 60;
	now.steal = s.steal + 40;
	assert_int_equal(cpukeep_share(&now, &share), 0);
	assert_true(share > 0.399 && share < 0.401);
	/* Five later samples push the first out: the oldest then counts. */
	for (int i = 1; i <= 5; i++) {
		struct vmb_cpuwait t = { .run = 1000 + 10 * i, .steal = 0,
		    .cpus = 4 };

		cpukeep_note(&t);
	}
	now.run = 1010 + 80;
	now.steal = 20;
	assert_int_equal(cpukeep_share(&now, &share), 0);
	assert_true(share > 0.199 && share < 0.201);
	/* Samples of other CPUs (an affinity changed) are passed over. */
	for (int i = 0; i < 5; i++) {
		struct vmb_cpuwait t = { .run = 1000, .steal = 0, .cpus = 2 };

		cpukeep_note(&t);
	}
	assert_int_equal(cpukeep_share(&now, &share), -ENODATA);
}

static void
test_wanted(void **state)
{
	enum cpukeep_mode m;

	(void)state;
	assert_false(cpukeep_wanted(CPUKEEP_AUTO, -1));
	assert_false(cpukeep_wanted(CPUKEEP_AUTO, VMB_CPUWAIT_SERIAL - 0.01));
	assert_true(cpukeep_wanted(CPUKEEP_AUTO, VMB_CPUWAIT_SERIAL));
	assert_false(cpukeep_wanted(CPUKEEP_NEVER, 0.9));
	assert_true(cpukeep_wanted(CPUKEEP_ALWAYS, -1));
	assert_int_equal(cpukeep_mode_parse("auto", &m), 0);
	assert_int_equal(m, CPUKEEP_AUTO);
	assert_int_equal(cpukeep_mode_parse("always", &m), 0);
	assert_int_equal(m, CPUKEEP_ALWAYS);
	assert_int_equal(cpukeep_mode_parse("never", &m), 0);
	assert_int_equal(m, CPUKEEP_NEVER);
	assert_int_equal(cpukeep_mode_parse("Always", &m), -EINVAL);
	assert_int_equal(cpukeep_mode_parse("", &m), -EINVAL);
	assert_string_equal(cpukeep_mode_name(CPUKEEP_NEVER), "never");
}

/*
 * A build's begin and end in each mode; while kept, a spawn on the
 * process's CPUs and back to the one.
 */
static void
test_begin(void **state)
{
	cpu_set_t own, got, one;
	double share;
	int a, b, cpu;

	(void)state;
	if (!two_cpus(&a, &b))
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof(own), &own), 0);
	assert_int_equal(cpukeep_init(NULL, CPUKEEP_NEVER, true), 0);
	assert_int_equal(cpukeep_begin(&share), -1);
	assert_true(share < 0);
	/* auto, no sampler: nothing measured, not kept. */
	assert_int_equal(cpukeep_init(NULL, CPUKEEP_AUTO, false), 0);
	assert_int_equal(cpukeep_begin(&share), -1);
	assert_int_equal(cpukeep_cpu(), -1);

	assert_int_equal(cpukeep_init(NULL, CPUKEEP_ALWAYS, false), 0);
	cpu = cpukeep_begin(&share);
	assert_true(cpu >= 0);
	assert_int_equal(cpukeep_cpu(), cpu);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &one));
	/* An overlapping build joins on the same CPU. */
	assert_int_equal(cpukeep_begin(&share), cpu);
	cpukeep_spawn_begin();
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &own));
	cpukeep_spawn_end();
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &one));
	cpukeep_leave();
	assert_int_equal(cpukeep_cpu(), cpu);
	cpukeep_leave();
	assert_int_equal(cpukeep_cpu(), -1);
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &own));
	/* Not kept: a spawn changes nothing. */
	cpukeep_spawn_begin();
	cpukeep_spawn_end();
	affinity(pthread_self(), &got);
	assert_true(CPU_EQUAL(&got, &own));
	assert_int_equal(cpukeep_init(NULL, CPUKEEP_AUTO, false), 0);
}

static void
test_bad_cpu(void **state)
{
	(void)state;
	assert_int_equal(cpukeep_enter(-1), -EINVAL);
	assert_int_equal(cpukeep_enter(CPU_SETSIZE), -EINVAL);
	assert_int_equal(cpukeep_cpu(), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_and_back),
		cmocka_unit_test(test_bad_cpu),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_begin),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
