/*
 * test_xen_everyday.c - the xen backend's everyday ops without a Xen
 * (xen_everyday.c): which scheduler call the domain's cpupool decides
 * (credit, credit2, another one refused), that a change keeps the
 * parameter not given, as libxl does; the rename's two xenstore names in
 * one transaction; the start time libxl reads; the console ring read in
 * pieces and cleared after.
 *
 * libxenctrl's calls are wrapped at link time (build.mk) by fakes that
 * record what was asked; libxenstore's by fake_xs.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_xs.h"
#include "xen_priv.h"

int __wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info);
xc_cpupoolinfo_t *__wrap_xc_cpupool_getinfo(xc_interface *xch,
    uint32_t poolid);
void __wrap_xc_cpupool_infofree(xc_interface *xch, xc_cpupoolinfo_t *info);
int __wrap_xc_sched_credit_domain_get(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit *sdom);
int __wrap_xc_sched_credit_domain_set(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit *sdom);
int __wrap_xc_sched_credit2_domain_get(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit2 *sdom);
int __wrap_xc_sched_credit2_domain_set(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit2 *sdom);
int __wrap_xc_readconsolering(xc_interface *xch, char *buffer,
    unsigned int *pnr_chars, int clear, int incremental, uint32_t *pindex);

static struct {
	uint32_t pool;		/* the domain's cpupool */
	uint32_t sched;		/* that pool's XEN_SCHEDULER_* */
	uint16_t weight, cap;	/* the domain's, as Xen keeps them */
	unsigned credit_calls, credit2_calls, sets;
	unsigned pools_freed, pools_got;
	const char *ring;	/* the console ring's text */
	unsigned ring_reads, clears;
} fx;

static struct xen_be be;

int
__wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info)
{
	(void)xch;
	(void)max_domains;
	memset(info, 0, sizeof(*info));
	info->domain = first_domain;
	info->cpupool = fx.pool;
	return 1;
}

xc_cpupoolinfo_t *
__wrap_xc_cpupool_getinfo(xc_interface *xch, uint32_t poolid)
{
	xc_cpupoolinfo_t *p = calloc(1, sizeof(*p));

	(void)xch;
	/* As Xen: the first pool from poolid on. */
	p->cpupool_id = poolid <= fx.pool ? fx.pool : poolid + 1;
	p->sched_id = fx.sched;
	fx.pools_got++;
	return p;
}

void
__wrap_xc_cpupool_infofree(xc_interface *xch, xc_cpupoolinfo_t *info)
{
	(void)xch;
	fx.pools_freed++;
	free(info);
}

/* Xen leaves a weight of 0 as it is (sched_credit{,2}.c). */
static int
sched(uint32_t want, bool set, uint16_t *weight, uint16_t *cap)
{
	if (fx.sched != want) {
		errno = EINVAL;
		return -1;
	}
	if (set) {
		fx.sets++;
		if (*weight)
			fx.weight = *weight;
		fx.cap = *cap;
	}
	*weight = fx.weight;
	*cap = fx.cap;
	return 0;
}

int
__wrap_xc_sched_credit_domain_get(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit *s)
{
	(void)xch, (void)domid;
	fx.credit_calls++;
	return sched(XEN_SCHEDULER_CREDIT, false, &s->weight, &s->cap);
}

int
__wrap_xc_sched_credit_domain_set(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit *s)
{
	(void)xch, (void)domid;
	fx.credit_calls++;
	return sched(XEN_SCHEDULER_CREDIT, true, &s->weight, &s->cap);
}

int
__wrap_xc_sched_credit2_domain_get(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit2 *s)
{
	(void)xch, (void)domid;
	fx.credit2_calls++;
	return sched(XEN_SCHEDULER_CREDIT2, false, &s->weight, &s->cap);
}

int
__wrap_xc_sched_credit2_domain_set(xc_interface *xch, uint32_t domid,
    struct xen_domctl_sched_credit2 *s)
{
	(void)xch, (void)domid;
	fx.credit2_calls++;
	return sched(XEN_SCHEDULER_CREDIT2, true, &s->weight, &s->cap);
}

/* As Xen's read_console_ring: incremental reads go on from *pindex. */
int
__wrap_xc_readconsolering(xc_interface *xch, char *buffer,
    unsigned int *pnr_chars, int clear, int incremental, uint32_t *pindex)
{
	size_t len = strlen(fx.ring), from = incremental ? *pindex : 0;
	unsigned n = 0;

	(void)xch;
	fx.ring_reads++;
	while (from + n < len && n < *pnr_chars) {
		buffer[n] = fx.ring[from + n];
		n++;
	}
	if (incremental)
		*pindex = (uint32_t)(from + n);
	*pnr_chars = n;
	if (clear) {
		fx.clears++;
		fx.ring = "";
	}
	return 0;
}

static int
setup(void **state)
{
	(void)state;
	memset(&fx, 0, sizeof(fx));
	fx.weight = 256;
	fx.ring = "";
	fake_xs_reset();
	memset(&be, 0, sizeof(be));
	be.xch = (xc_interface *)&fx;		/* never dereferenced */
	be.xsh = (struct xs_handle *)&fake_xs;
	pthread_mutex_init(&be.xs_lock, NULL);
	return 0;
}

static void
test_sched_credit2(void **state)
{
	struct vmb_sched s;

	(void)state;
	fx.pool = 3;
	fx.sched = XEN_SCHEDULER_CREDIT2;
	assert_int_equal(xen_sched(&be, 5, VMB_SCHED_KEEP, VMB_SCHED_KEEP,
	    &s), 0);
	assert_string_equal(s.scheduler, "credit2");
	assert_int_equal(s.weight, 256);
	assert_int_equal(s.cap, 0);
	assert_int_equal(fx.sets, 0);
	assert_int_equal(fx.credit_calls, 0);
	/* A weight alone keeps the cap; a cap alone keeps the weight. */
	fx.cap = 50;
	assert_int_equal(xen_sched(&be, 5, 512, VMB_SCHED_KEEP, &s), 0);
	assert_int_equal(s.weight, 512);
	assert_int_equal(s.cap, 50);
	assert_int_equal(xen_sched(&be, 5, VMB_SCHED_KEEP, 0, &s), 0);
	assert_int_equal(s.weight, 512);
	assert_int_equal(s.cap, 0);
	assert_int_equal(fx.sets, 2);
	assert_int_equal(fx.pools_got, fx.pools_freed);
}

static void
test_sched_credit(void **state)
{
	struct vmb_sched s;

	(void)state;
	fx.sched = XEN_SCHEDULER_CREDIT;
	assert_int_equal(xen_sched(&be, 5, 100, 200, &s), 0);
	assert_string_equal(s.scheduler, "credit");
	assert_int_equal(fx.weight, 100);
	assert_int_equal(fx.cap, 200);
	assert_int_equal(fx.credit2_calls, 0);
	assert_true(fx.credit_calls >= 2);
}

static void
test_sched_other(void **state)
{
	struct vmb_sched s;

	(void)state;
	fx.sched = XEN_SCHEDULER_RTDS;
	assert_int_equal(xen_sched(&be, 5, 100, VMB_SCHED_KEEP, &s),
	    -ENOTSUP);
	assert_int_equal(fx.credit_calls + fx.credit2_calls, 0);
	assert_int_equal(fx.pools_got, fx.pools_freed);
	/* Out of what Xen's fields hold. */
	fx.sched = XEN_SCHEDULER_CREDIT2;
	assert_int_equal(xen_sched(&be, 5, 70000, VMB_SCHED_KEEP, &s),
	    -EINVAL);
	assert_int_equal(fx.sets, 0);
}

static void
test_rename(void **state)
{
	(void)state;
	fake_xs_set("/local/domain/7/name", "old");
	fake_xs_set("/local/domain/7/vm", "/vm/1234");
	fake_xs_set("/vm/1234/name", "old");
	assert_int_equal(xen_rename(&be, 7, "new"), 0);
	assert_string_equal(fake_xs_val("/local/domain/7/name"), "new");
	assert_string_equal(fake_xs_val("/vm/1234/name"), "new");
	assert_int_equal(fake_xs.commits, 1);	/* both in one */
	/* A domain without /vm: its name only. */
	fake_xs_set("/local/domain/8/name", "x");
	assert_int_equal(xen_rename(&be, 8, "y"), 0);
	assert_string_equal(fake_xs_val("/local/domain/8/name"), "y");
	/* A /vm that is not one is never written through. */
	fake_xs_set("/local/domain/9/vm", "/local/domain/0");
	assert_int_equal(xen_rename(&be, 9, "z"), -EPROTO);
	assert_int_equal(xen_rename(&be, 0, "dom0"), -EINVAL);
}

static void
test_start_time(void **state)
{
	double t = 0;

	(void)state;
	fake_xs_set("/local/domain/7/vm", "/vm/1234");
	fake_xs_set("/vm/1234/start_time", "1700000000.25");
	assert_int_equal(xen_start_time(&be, 7, &t), 0);
	assert_true(t > 1700000000.2 && t < 1700000000.3);
	assert_int_equal(xen_start_time(&be, 8, &t), -ENOENT);
	fake_xs_set("/vm/1234/start_time", "soon");
	assert_int_equal(xen_start_time(&be, 7, &t), -EPROTO);
}

static void
test_dmesg(void **state)
{
	static char big[40000];
	char *text = NULL;
	size_t len = 0;

	(void)state;
	/* More than one piece: read on from where the last ended. */
	memset(big, 'x', sizeof(big) - 2);
	big[sizeof(big) - 2] = '\n';
	fx.ring = big;
	assert_int_equal(xen_dmesg(&be, false, &text, &len), 0);
	assert_int_equal(len, sizeof(big) - 1);
	assert_int_equal(strlen(text), len);
	assert_true(fx.ring_reads >= 3);
	assert_int_equal(fx.clears, 0);
	free(text);
	fx.ring = "(XEN) hello\n";
	assert_int_equal(xen_dmesg(&be, true, &text, &len), 0);
	assert_string_equal(text, "(XEN) hello\n");
	assert_int_equal(fx.clears, 1);
	free(text);
	assert_int_equal(xen_dmesg(&be, false, &text, &len), 0);
	assert_string_equal(text, "");
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sched_credit2, setup),
		cmocka_unit_test_setup(test_sched_credit, setup),
		cmocka_unit_test_setup(test_sched_other, setup),
		cmocka_unit_test_setup(test_rename, setup),
		cmocka_unit_test_setup(test_start_time, setup),
		cmocka_unit_test_setup(test_dmesg, setup),
	};

	return cmocka_run_group_tests_name("xen-everyday", tests, NULL, NULL);
}
