/*
 * test_xen_save.c - the suspend of a save on Xen without a Xen
 * (xen_save.c, xen_suspend_wait): "suspend" posted on the guest's
 * control/shutdown only once it announced control/feature-suspend, the
 * wait for the domain to be shut down with reason suspend, and, when the
 * guest does not answer (in time, or the save is cancelled), the request
 * taken back and the reason told apart: never answered, or taken but no
 * suspend.  A domain that crashes or goes instead is an error naming it.
 *
 * The domain's state comes from a wrapped xc_domain_getinfolist (build.mk),
 * the guest's side from fake_xs.c: a meddle hook plays a Linux guest's
 * xenbus shutdown watcher (it clears control/shutdown, then suspends a
 * few polls later).  Timeouts here are the case under test (a guest that
 * never answers), not waits for something to happen.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_xs.h"
#include "xen_priv.h"

#define DOMID	7
#define CTRL	"/local/domain/7/control/shutdown"
#define FEAT	"/local/domain/7/control/feature-suspend"

int __wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info);

static struct {
	bool	acks;		/* the guest takes the request */
	int	suspends_after;	/* polls after taking it; -1: never */
	unsigned reason;	/* SHUTDOWN_* it stops with */
	bool	gone;		/* the domain is not there */
	bool	taken;
	unsigned polls;		/* getinfolist calls */
} fx;

static struct xen_be be;

int
__wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info)
{
	(void)xch;
	(void)max_domains;
	fx.polls++;
	if (fx.gone)
		return 0;
	memset(info, 0, sizeof(*info));
	info->domain = first_domain;
	if (fx.taken && fx.suspends_after >= 0 && fx.suspends_after-- == 0) {
		fx.suspends_after = 0;	/* and stays suspended */
		info->flags = XEN_DOMINF_shutdown |
		    (fx.reason << XEN_DOMINF_shutdownshift);
	}
	return 1;
}

/* Linux's shutdown watcher: "suspend" read and the node cleared. */
static void
guest(const char *op, const char *path)
{
	const char *v = fake_xs_val(CTRL);

	(void)path;
	if (!fx.acks || strcmp(op, "write") != 0 || v == NULL ||
	    strcmp(v, "suspend") != 0)
		return;
	assert_int_equal(fake_xs_guest_write(DOMID, CTRL, "", 0), 0);
	fx.taken = true;
}

static int
setup(void **state)
{
	static const struct xs_permissions guest_owns[] = {
		{ .id = DOMID, .perms = XS_PERM_NONE },
	};

	(void)state;
	memset(&fx, 0, sizeof(fx));
	fx.acks = true;
	fx.suspends_after = 2;
	fx.reason = SHUTDOWN_suspend;
	fake_xs_reset();
	fake_xs.meddle = guest;
	fake_xs.guest = DOMID;
	fake_xs_set(CTRL, "");
	fake_xs_set_perms(CTRL, guest_owns, 1);
	fake_xs_set(FEAT, "1");
	memset(&be, 0, sizeof(be));
	be.xch = (xc_interface *)&fx;		/* never dereferenced */
	be.xsh = (struct xs_handle *)&fake_xs;
	pthread_mutex_init(&be.xs_lock, NULL);
	return 0;
}

static int
suspend(int cancel_fd, uint32_t ms, char *why)
{
	why[0] = '\0';
	return xen_suspend_wait(&be, DOMID, cancel_fd, ms, why, 256);
}

/* The guest takes the request and suspends: done, nothing withdrawn. */
static void
test_suspend_answered(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(suspend(-1, 60000, why), 0);
	assert_true(fx.taken);
	assert_true(fx.polls >= 3);
	assert_string_equal(fake_xs_val(CTRL), "");
}

/* No PV suspend in the guest: refused before anything is posted. */
static void
test_suspend_no_feature(void **state)
{
	char why[256];

	(void)state;
	fake_xs_set(FEAT, "0");
	assert_int_equal(suspend(-1, 60000, why), -EOPNOTSUPP);
	assert_non_null(strstr(why, "control/feature-suspend"));
	assert_false(fx.taken);
	assert_int_equal(fx.polls, 0);
	assert_string_equal(fake_xs_val(CTRL), "");
}

/* A guest that never answers: bounded, the request taken back. */
static void
test_suspend_unanswered(void **state)
{
	char why[256];

	(void)state;
	fx.acks = false;
	assert_int_equal(suspend(-1, 30, why), -ETIMEDOUT);
	assert_non_null(strstr(why, "did not answer the request within 30 ms"));
	assert_string_equal(fake_xs_val(CTRL), "");
}

/* Taken but never suspended: said so (the node is the guest's now). */
static void
test_suspend_taken_not_suspended(void **state)
{
	char why[256];

	(void)state;
	fx.suspends_after = -1;
	assert_int_equal(suspend(-1, 30, why), -ETIMEDOUT);
	assert_true(fx.taken);
	assert_non_null(strstr(why, "took the request but did not suspend"));
}

/* A cancel ends the wait at once, the request taken back. */
static void
test_suspend_cancelled(void **state)
{
	uint64_t one = 1;
	char why[256];
	int efd = eventfd(0, EFD_CLOEXEC);

	(void)state;
	assert_true(efd >= 0);
	fx.acks = false;
	assert_int_equal(write(efd, &one, sizeof(one)), (int)sizeof(one));
	assert_int_equal(suspend(efd, 600000, why), -ECANCELED);
	assert_non_null(strstr(why, "cancelled"));
	assert_string_equal(fake_xs_val(CTRL), "");
	close(efd);
}

/* Stopped for another reason, or gone: an error naming it. */
static void
test_suspend_crashed_or_gone(void **state)
{
	char why[256];

	(void)state;
	fx.reason = SHUTDOWN_crash;
	assert_int_equal(suspend(-1, 60000, why), -EIO);
	assert_non_null(strstr(why, "reason 3 instead of suspending"));
	setup(NULL);
	fx.gone = true;
	assert_int_equal(suspend(-1, 60000, why), -ESRCH);
	assert_non_null(strstr(why, "domain 7 is gone"));
}

/*
 * A live save's pages: libxenguest counts its first round as the whole
 * p2m (the lab's 1 GiB PVH guest: 1044480 pfns up to its special pages
 * below 4 GiB, 262144 + a few populated), the later rounds as sent.
 */
static void
test_live_pages(void **state)
{
	(void)state;
	/* Round 1 only: the populated pages, not the p2m. */
	assert_int_equal(xen_live_pages(1044480, 1044480, 262400), 262400);
	/* Then 9000 pages more in later rounds. */
	assert_int_equal(xen_live_pages(1044480 + 9000, 1044480, 262400),
	    262400 + 9000);
	/* Unknown: libxenguest's count as it is. */
	assert_int_equal(xen_live_pages(1044480, 1044480, 0), 1044480);
	assert_int_equal(xen_live_pages(1044480, 0, 262400), 1044480);
	/* Before round 1 went. */
	assert_int_equal(xen_live_pages(0, 1044480, 262400), 0);
	/* Never more than the p2m for round 1. */
	assert_int_equal(xen_live_pages(100, 100, 262400), 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_suspend_answered, setup),
		cmocka_unit_test_setup(test_suspend_no_feature, setup),
		cmocka_unit_test_setup(test_suspend_unanswered, setup),
		cmocka_unit_test_setup(test_suspend_taken_not_suspended, setup),
		cmocka_unit_test_setup(test_suspend_cancelled, setup),
		cmocka_unit_test_setup(test_suspend_crashed_or_gone, setup),
		cmocka_unit_test(test_live_pages),
	};

	return cmocka_run_group_tests_name("xen-save", tests, NULL, NULL);
}
