/*
 * test_vmstate.c - the daemon's VM states (daemon/vmstate.c): the names
 * the protocol shows, each legal transition, and that every other one
 * is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmstate.h"

#define N	VM_STATE_NR

/* The legal moves, written out again here rather than read from vmstate.c. */
static const struct {
	enum vm_state	from, to;
} legal[] = {
	/* A record's VM whose domain is not listed. */
	{ VM_UNKNOWN, VM_BUILDING }, { VM_UNKNOWN, VM_DESTROYING },
	{ VM_UNKNOWN, VM_RUNNING }, { VM_UNKNOWN, VM_BLOCKED },
	{ VM_UNKNOWN, VM_PAUSED }, { VM_UNKNOWN, VM_SHUTDOWN },
	{ VM_UNKNOWN, VM_DYING }, { VM_UNKNOWN, VM_CRASHED },
	/* A build ends: its domain, none seen, or left to reap.c. */
	{ VM_BUILDING, VM_UNKNOWN }, { VM_BUILDING, VM_DESTROYING },
	{ VM_BUILDING, VM_RUNNING }, { VM_BUILDING, VM_BLOCKED },
	{ VM_BUILDING, VM_PAUSED }, { VM_BUILDING, VM_SHUTDOWN },
	{ VM_BUILDING, VM_DYING }, { VM_BUILDING, VM_CRASHED },
	/* A save starts from a running, blocked or paused guest... */
	{ VM_RUNNING, VM_SAVING }, { VM_BLOCKED, VM_SAVING },
	{ VM_PAUSED, VM_SAVING },
	/* ...and ends in its domain's state (a save done: removed). */
	{ VM_SAVING, VM_RUNNING }, { VM_SAVING, VM_BLOCKED },
	{ VM_SAVING, VM_PAUSED }, { VM_SAVING, VM_SHUTDOWN },
	{ VM_SAVING, VM_DYING }, { VM_SAVING, VM_CRASHED },
};

static const enum vm_state domain[] = {
	VM_RUNNING, VM_BLOCKED, VM_PAUSED, VM_SHUTDOWN, VM_DYING, VM_CRASHED,
};
#define NDOMAIN	(sizeof(domain) / sizeof(domain[0]))

static bool
is_domain(enum vm_state s)
{
	for (size_t i = 0; i < NDOMAIN; i++)
		if (domain[i] == s)
			return true;
	return false;
}

/* The expected table: `legal`, and each domain state to any other, to
 * building (a restart) and to destroying; staying is always legal. */
static void
expected(bool want[N][N])
{
	memset(want, 0, sizeof(bool) * N * N);
	for (size_t i = 0; i < sizeof(legal) / sizeof(legal[0]); i++)
		want[legal[i].from][legal[i].to] = true;
	for (size_t i = 0; i < NDOMAIN; i++) {
		for (size_t j = 0; j < NDOMAIN; j++)
			want[domain[i]][domain[j]] = true;
		want[domain[i]][VM_BUILDING] = true;
		want[domain[i]][VM_DESTROYING] = true;
	}
	for (int s = 0; s < N; s++)
		want[s][s] = true;
}

static void
test_legal(void **state)
{
	bool want[N][N];

	(void)state;
	expected(want);
	for (int f = 0; f < N; f++)
		for (int t = 0; t < N; t++)
			if (want[f][t] && !vm_state_legal(f, t))
				fail_msg("%s -> %s refused", vm_state_str(f),
				    vm_state_str(t));
}

static void
test_illegal(void **state)
{
	bool want[N][N];

	(void)state;
	expected(want);
	for (int f = 0; f < N; f++)
		for (int t = 0; t < N; t++)
			if (!want[f][t] && vm_state_legal(f, t))
				fail_msg("%s -> %s allowed", vm_state_str(f),
				    vm_state_str(t));
	/* Some by name: what the daemon must never do. */
	assert_false(vm_state_legal(VM_DESTROYING, VM_RUNNING));
	assert_false(vm_state_legal(VM_DESTROYING, VM_BUILDING));
	assert_false(vm_state_legal(VM_DESTROYING, VM_UNKNOWN));
	assert_false(vm_state_legal(VM_RUNNING, VM_UNKNOWN));
	assert_false(vm_state_legal(VM_SHUTDOWN, VM_UNKNOWN));
	assert_false(vm_state_legal(VM_SHUTDOWN, VM_SAVING));
	assert_false(vm_state_legal(VM_SAVING, VM_BUILDING));
	/* Out of range, either side. */
	assert_false(vm_state_legal(VM_STATE_NR, VM_RUNNING));
	assert_false(vm_state_legal(VM_RUNNING, VM_STATE_NR));
	assert_false(vm_state_legal(-1, VM_RUNNING));
}

/* The strings vm.list, vm.info, vm.state events and metrics show. */
static void
test_names(void **state)
{
	static const char *const want[N] = {
		[VM_UNKNOWN] = "unknown", [VM_BUILDING] = "building",
		[VM_RUNNING] = "running", [VM_BLOCKED] = "blocked",
		[VM_PAUSED] = "paused", [VM_SHUTDOWN] = "shutdown",
		[VM_DYING] = "dying", [VM_CRASHED] = "crashed",
		[VM_DESTROYING] = "destroying", [VM_SAVING] = "saving",
	};

	(void)state;
	for (int s = 0; s < N; s++)
		assert_string_equal(vm_state_str(s), want[s]);
	assert_string_equal(vm_state_str(VM_STATE_NR), "unknown");
	for (int s = 0; s < N; s++)
		assert_int_equal(vm_state_is_domain(s), is_domain(s));
}

/* A domain's state is the VM's of the same name (libvmbuild's). */
static void
test_of_domain(void **state)
{
	(void)state;
	for (int d = VMB_DOM_PAUSED; d <= VMB_DOM_CRASHED; d++) {
		enum vm_state s = vm_state_of_domain(d);

		assert_true(vm_state_is_domain(s));
		assert_string_equal(vm_state_str(s),
		    vmb_domain_state_name(d));
	}
	assert_int_equal(vm_state_of_domain(VMB_DOM_CRASHED + 1), VM_UNKNOWN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legal),
		cmocka_unit_test(test_illegal),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_of_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
