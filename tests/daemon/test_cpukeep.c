/*
 * test_cpukeep.c - daemon/cpukeep.c: every thread of the process on one
 * CPU while kept, each given its own affinity back after, a thread
 * started meanwhile the process's; builds that overlap counted.
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
