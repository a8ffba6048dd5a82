/*
 * test_xen_backend.c - the xen backend without a Xen: how populate groups
 * extents into XENMEM_populate_physmap calls, which node flags it passes,
 * how it splits an extent Xen cannot give whole, how it reports partial
 * failure, that open without Xen is a clean -errno, how it reports
 * the control domain (Domain-0, as `xl list` names it), that the list
 * placement reads costs no xenstore read, and what it asks of Xen's
 * domain creation (max_event_channels).
 *
 * xc_domain_populate_physmap, xc_interface_open, xc_domain_getinfolist,
 * xs_read and xc_domain_create are wrapped at link time (see build.mk);
 * the populate fake
 * records every call and answers from a
 * small script: a per-order limit on how many extents of one call it
 * grants, and whether a refusal is "0 done" or "-1, ENOMEM" (Xen gives
 * both, depending on where the allocation failed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "xen_priv.h"

int __wrap_xc_domain_populate_physmap(xc_interface *xch, uint32_t domid,
    unsigned long nr_extents, unsigned int extent_order,
    unsigned int mem_flags, xen_pfn_t *extent_start);
xc_interface *__wrap_xc_interface_open(xentoollog_logger *logger,
    xentoollog_logger *dombuild_logger, unsigned open_flags);
int __wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info);
void *__wrap_xs_read(struct xs_handle *h, xs_transaction_t t,
    const char *path, unsigned int *len);
int __wrap_xc_domain_create(xc_interface *xch, uint32_t *pdomid,
    struct xen_domctl_createdomain *config);

#define MAX_CALLS	64

static struct {
	unsigned	nr;
	unsigned long	nr_extents[MAX_CALLS];
	unsigned	order[MAX_CALLS];
	unsigned	flags[MAX_CALLS];
	xen_pfn_t	first_gfn[MAX_CALLS];
	/* script: grant at most limit[order] extents per call (-1: all) */
	long		limit[19];
	bool		fail_errno;	/* a refusal of everything: -1/ENOMEM */
} fake;

int
__wrap_xc_domain_populate_physmap(xc_interface *xch, uint32_t domid,
    unsigned long nr_extents, unsigned int extent_order,
    unsigned int mem_flags, xen_pfn_t *extent_start)
{
	long grant;

	(void)xch;
	(void)domid;
	if (fake.nr < MAX_CALLS) {
		fake.nr_extents[fake.nr] = nr_extents;
		fake.order[fake.nr] = extent_order;
		fake.flags[fake.nr] = mem_flags;
		fake.first_gfn[fake.nr] = extent_start[0];
	}
	fake.nr++;
	grant = extent_order < 19 ? fake.limit[extent_order] : 0;
	if (grant < 0 || (unsigned long)grant > nr_extents)
		grant = (long)nr_extents;
	if (grant == 0 && fake.fail_errno) {
		errno = ENOMEM;
		return -1;
	}
	return (int)grant;
}

xc_interface *
__wrap_xc_interface_open(xentoollog_logger *logger,
    xentoollog_logger *dombuild_logger, unsigned open_flags)
{
	(void)logger;
	(void)dombuild_logger;
	(void)open_flags;
	errno = ENOENT;		/* as on a machine without privcmd */
	return NULL;
}

/* The domains Xen lists (first domid up), and what xenstore names. */
static struct {
	unsigned	nr;
	xc_domaininfo_t	info[4];
	const char	*name;		/* /local/domain/N/name; NULL: none */
	char		path[64];	/* the last path read */
	unsigned	reads;		/* xs_read calls */
} doms;

int
__wrap_xc_domain_getinfolist(xc_interface *xch, uint32_t first_domain,
    unsigned int max_domains, xc_domaininfo_t *info)
{
	unsigned n = 0;

	(void)xch;
	for (unsigned i = 0; i < doms.nr && n < max_domains; i++)
		if (doms.info[i].domain >= first_domain)
			info[n++] = doms.info[i];
	return (int)n;
}

void *
__wrap_xs_read(struct xs_handle *h, xs_transaction_t t, const char *path,
    unsigned int *len)
{
	(void)h;
	(void)t;
	doms.reads++;
	snprintf(doms.path, sizeof(doms.path), "%s", path);
	if (doms.name == NULL) {
		errno = ENOENT;
		return NULL;
	}
	*len = (unsigned)strlen(doms.name);
	return strdup(doms.name);
}

/* What the backend asked xc_domain_create; the fake then refuses. */
static struct {
	unsigned	nr;
	struct xen_domctl_createdomain dc;
} created;

int
__wrap_xc_domain_create(xc_interface *xch, uint32_t *pdomid,
    struct xen_domctl_createdomain *config)
{
	(void)xch;
	(void)pdomid;
	created.nr++;
	created.dc = *config;
	errno = EPERM;		/* nothing to undo after a refused create */
	return -1;
}

static struct xen_be be;

static int
setup(void **state)
{
	(void)state;
	memset(&fake, 0, sizeof(fake));
	memset(fake.limit, 0xff, sizeof(fake.limit));	/* all -1 */
	memset(&doms, 0, sizeof(doms));
	memset(&created, 0, sizeof(created));
	memset(&be, 0, sizeof(be));
	be.xch = (xc_interface *)&fake;	/* never dereferenced by the fake */
	return 0;
}

static void
test_open_without_xen(void **state)
{
	void *priv = (void *)1;

	(void)state;
	assert_int_equal(vmb_backend_xen.open(NULL, &priv), -ENOENT);
	assert_ptr_equal(priv, (void *)1);	/* untouched on failure */
	assert_int_equal(vmb_backend_xen.open("junk", &priv), -EINVAL);
}

/* What a populate op said of its progress, call by call. */
struct steps {
	size_t	n;
	size_t	done[16];
};

static void
record_step(void *arg, size_t done)
{
	struct steps *s = arg;

	if (s->n < 16)
		s->done[s->n++] = done;
}

static void
test_groups_by_order_and_node(void **state)
{
	const struct vmb_extent ext[] = {
		{ 0x000, 9, 0 }, { 0x200, 9, 0 },
		{ 0x400, 9, 1 },
		{ 0x600, 0, 1 }, { 0x601, 0, 1 }, { 0x602, 0, 1 },
	};
	struct vmb_populate_stats st;
	struct steps steps = { 0 };
	struct vmb__popstep step = { record_step, &steps };
	size_t done = 99;

	(void)state;
	memset(&st, 0, sizeof(st));
	assert_int_equal(vmb_backend_xen.populate(&be, 5, VMB_POPF_EXACT_NODE,
	    ext, 6, &st, &done, &step), 0);
	assert_int_equal(done, 6);
	/* Progress after each hypercall: 2, 3, then all 6 extents done. */
	assert_int_equal(steps.n, 3);
	assert_int_equal(steps.done[0], 2);
	assert_int_equal(steps.done[1], 3);
	assert_int_equal(steps.done[2], 6);
	assert_int_equal(fake.nr, 3);
	assert_int_equal(fake.nr_extents[0], 2);
	assert_int_equal(fake.order[0], 9);
	assert_int_equal(fake.flags[0], XENMEMF_exact_node(0));
	assert_int_equal(fake.nr_extents[1], 1);
	assert_int_equal(fake.flags[1], XENMEMF_exact_node(1));
	assert_int_equal(fake.first_gfn[1], 0x400);
	assert_int_equal(fake.nr_extents[2], 3);
	assert_int_equal(fake.order[2], 0);
	assert_int_equal(st.calls, 3);
	assert_int_equal(st.extents[VMB_ORDER_2M], 3);
	assert_int_equal(st.extents[VMB_ORDER_4K], 3);
	assert_int_equal(st.node_bytes[0], 4ull << 20);
	assert_int_equal(st.node_bytes[1], (2ull << 20) + 3 * 4096);
	/* stock Xen says nothing of flushes: the backend invents none */
	assert_int_equal(st.flushes_issued, 0);
	assert_int_equal(st.flushes_avoided, 0);
}

static void
test_node_flags(void **state)
{
	const struct vmb_extent any[] = { { 0, 9, VMB_NODE_ANY } };
	const struct vmb_extent one[] = { { 0, 9, 3 } };
	size_t done;

	(void)state;
	assert_int_equal(vmb_backend_xen.populate(&be, 5, VMB_POPF_EXACT_NODE,
	    any, 1, NULL, &done, NULL), 0);
	assert_int_equal(fake.flags[0], 0);
	assert_int_equal(vmb_backend_xen.populate(&be, 5, 0, one, 1, NULL,
	    &done, NULL), 0);
	assert_int_equal(fake.flags[1], XENMEMF_node(3));
}

/* A 1 GiB extent refused outright, then 510 of 512 2 MiB pieces. */
static void
test_split_on_fragmentation(void **state)
{
	const struct vmb_extent ext[] = { { 0x40000, 18, 0 }, { 0x80000, 9, 0 } };
	struct vmb_populate_stats st;
	size_t done;

	(void)state;
	memset(&st, 0, sizeof(st));
	fake.limit[18] = 0;
	fake.fail_errno = true;
	fake.limit[9] = 510;
	assert_int_equal(vmb_backend_xen.populate(&be, 5, VMB_POPF_EXACT_NODE,
	    ext, 2, &st, &done, NULL), 0);
	assert_int_equal(done, 2);
	/* 1G (refused), 512x2M (510 granted), 2 x 512x4K, then the 2M */
	assert_int_equal(fake.nr, 5);
	assert_int_equal(fake.order[1], 9);
	assert_int_equal(fake.nr_extents[1], 512);
	assert_int_equal(fake.order[2], 0);
	assert_int_equal(fake.first_gfn[2], 0x40000 + 510 * 512);
	assert_int_equal(fake.first_gfn[3], 0x40000 + 511 * 512);
	assert_int_equal(fake.first_gfn[4], 0x80000);
	assert_int_equal(fake.flags[2], XENMEMF_exact_node(0));
	assert_int_equal(st.extents[VMB_ORDER_1G], 0);
	assert_int_equal(st.extents[VMB_ORDER_2M], 511);
	assert_int_equal(st.extents[VMB_ORDER_4K], 1024);
	assert_int_equal(st.node_bytes[0], (1ull << 30) + (2ull << 20));
}

/* 4 KiB pages that Xen cannot give: partial count, -ENOMEM. */
static void
test_partial_failure(void **state)
{
	const struct vmb_extent ext[] = {
		{ 0, 0, 0 }, { 1, 0, 0 }, { 2, 0, 0 }, { 3, 0, 0 }, { 4, 0, 0 },
	};
	size_t done = 0;

	(void)state;
	fake.limit[0] = 3;
	assert_int_equal(vmb_backend_xen.populate(&be, 5, VMB_POPF_EXACT_NODE,
	    ext, 5, NULL, &done, NULL), -ENOMEM);
	assert_int_equal(done, 3);
}

static void
test_bad_extent(void **state)
{
	const struct vmb_extent ext[] = { { 0x100, 9, 0 } };	/* unaligned */
	size_t done = 7;

	(void)state;
	assert_int_equal(vmb_backend_xen.populate(&be, 5, 0, ext, 1, NULL,
	    &done, NULL), -EINVAL);
	assert_int_equal(done, 0);
	assert_int_equal(fake.nr, 0);
}

/* Refusals that need no hypercall: bad sizes, a paging mode Xen lacks. */
static void
test_create_refusals(void **state)
{
	struct vmb_dom_config cfg;
	uint32_t domid = 77;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.hvm = true;
	cfg.hap = true;
	cfg.max_vcpus = 1;
	cfg.max_pages = cfg.target_pages = 32768;
	be.have_hap = false;
	be.caps = 0;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EOPNOTSUPP);
	cfg.hap = false;	/* shadow, compiled out of this "Xen" */
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EOPNOTSUPP);
	cfg.hap = true;
	be.have_hap = true;
	cfg.max_vcpus = 0;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EINVAL);
	cfg.max_vcpus = 1;
	cfg.hvm = false;	/* PV: not built by this backend */
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EINVAL);
	assert_int_equal(domid, 77);
}

/*
 * max_event_channels reaches Xen as the domain's max_evtchn_port; a
 * configuration without one (0) gets libxl's default, 1023.
 */
static void
test_create_event_channels(void **state)
{
	struct vmb_dom_config cfg;
	uint32_t domid = 77;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.hvm = cfg.hap = true;
	cfg.max_vcpus = 1;
	cfg.max_pages = cfg.target_pages = 32768;
	cfg.max_evtchn_port = 2047;
	be.have_hap = true;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EPERM);
	assert_int_equal(created.nr, 1);
	assert_int_equal(created.dc.max_evtchn_port, 2047);
	assert_int_equal(created.dc.max_vcpus, 1);
	cfg.max_evtchn_port = 0;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EPERM);
	assert_int_equal(created.nr, 2);
	assert_int_equal(created.dc.max_evtchn_port, 1023);
	assert_int_equal(domid, 77);
}

/*
 * An HVM guest with a device model gets every emulated device but vPCI,
 * as libxl__arch_domain_prepare_config gives one; a PVH guest the LAPIC
 * only.  Both are HVM containers, with HAP as asked.
 */
static void
test_create_hvm_emulation(void **state)
{
	struct vmb_dom_config cfg;
	uint32_t domid = 77;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.hvm = cfg.hap = true;
	cfg.max_vcpus = 2;
	cfg.max_pages = cfg.target_pages = 131072;
	cfg.dm = true;
	be.have_hap = true;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EPERM);
	assert_int_equal(created.nr, 1);
	assert_int_equal(created.dc.arch.emulation_flags,
	    XEN_X86_EMU_ALL & ~XEN_X86_EMU_VPCI);
	assert_true(created.dc.arch.emulation_flags & XEN_X86_EMU_PIT);
	assert_true(created.dc.arch.emulation_flags & XEN_X86_EMU_VGA);
	assert_true(created.dc.flags & XEN_DOMCTL_CDF_hvm);
	assert_true(created.dc.flags & XEN_DOMCTL_CDF_hap);
	cfg.dm = false;
	assert_int_equal(vmb_backend_xen.domain_create(&be, &cfg, &domid),
	    -EPERM);
	assert_int_equal(created.dc.arch.emulation_flags, XEN_X86_EMU_LAPIC);
	assert_true(created.dc.flags & XEN_DOMCTL_CDF_hvm);
	assert_int_equal(domid, 77);
}

/*
 * Domain 0 as `xl list` shows it: its name from xenstore, its memory,
 * vCPUs and CPU time; "Domain-0" when xenstore has no name; -ESRCH when
 * Xen lists no domain 0.  The domain list itself leaves it out.
 */
static void
test_control_domain(void **state)
{
	struct vmb_domain d, *list = NULL;
	size_t nr = 99;

	(void)state;
	doms.nr = 2;
	doms.info[0] = (xc_domaininfo_t){ .domain = 0, .tot_pages = 262144,
	    .max_pages = 262144, .max_vcpu_id = 1, .cpu_time = 2500000000ull,
	    .flags = XEN_DOMINF_running };
	doms.info[1] = (xc_domaininfo_t){ .domain = 3, .tot_pages = 32768,
	    .max_pages = 32768, .flags = XEN_DOMINF_blocked };
	doms.name = "Domain-0";
	assert_int_equal(vmb_backend_xen.control_domain(&be, &d), 0);
	assert_string_equal(doms.path, "/local/domain/0/name");
	assert_int_equal(d.domid, 0);
	assert_string_equal(d.name, "Domain-0");
	assert_int_equal(d.memory_bytes, 1ull << 30);
	assert_int_equal(d.vcpus, 2);
	assert_int_equal(d.cpu_time_ns, 2500000000ull);
	assert_int_equal(d.state, VMB_DOM_RUNNING);
	doms.name = NULL;
	assert_int_equal(vmb_backend_xen.control_domain(&be, &d), 0);
	assert_string_equal(d.name, "Domain-0");
	assert_int_equal(vmb_backend_xen.domain_list(&be, &list, &nr), 0);
	assert_int_equal(nr, 1);
	assert_int_equal(list[0].domid, 3);
	free(list);
	doms.info[0].domain = 1;
	assert_int_equal(vmb_backend_xen.control_domain(&be, &d), -ESRCH);
}

/*
 * What placement lists (domain_usage) has each domain's memory and vCPUs
 * but no name, and costs no xenstore read; domain_list reads one name
 * per domain.
 */
static void
test_domain_usage_reads_no_names(void **state)
{
	struct vmb_domain *list = NULL;
	size_t nr = 0;

	(void)state;
	doms.nr = 3;
	doms.info[0] = (xc_domaininfo_t){ .domain = 0, .tot_pages = 262144,
	    .max_vcpu_id = 1, .flags = XEN_DOMINF_running };
	doms.info[1] = (xc_domaininfo_t){ .domain = 3, .tot_pages = 32768,
	    .max_vcpu_id = 0, .flags = XEN_DOMINF_blocked };
	doms.info[2] = (xc_domaininfo_t){ .domain = 4, .tot_pages = 65536,
	    .max_vcpu_id = 3, .flags = XEN_DOMINF_running };
	doms.name = "guest";
	doms.reads = 0;
	assert_int_equal(vmb_backend_xen.domain_list(&be, &list, &nr), 0);
	assert_int_equal(nr, 2);
	assert_string_equal(list[0].name, "guest");
	assert_int_equal(doms.reads, 2);
	free(list);
	list = NULL;
	doms.reads = 0;
	assert_non_null(vmb_backend_xen.domain_usage);
	assert_int_equal(vmb_backend_xen.domain_usage(&be, &list, &nr), 0);
	assert_int_equal(doms.reads, 0);
	assert_int_equal(nr, 2);
	assert_int_equal(list[0].domid, 3);
	assert_string_equal(list[0].name, "");
	assert_int_equal(list[0].memory_bytes, 128ull << 20);
	assert_int_equal(list[1].domid, 4);
	assert_int_equal(list[1].vcpus, 4);
	assert_int_equal(list[1].memory_bytes, 256ull << 20);
	assert_int_equal(list[1].state, VMB_DOM_RUNNING);
	free(list);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_open_without_xen, setup),
		cmocka_unit_test_setup(test_groups_by_order_and_node, setup),
		cmocka_unit_test_setup(test_node_flags, setup),
		cmocka_unit_test_setup(test_split_on_fragmentation, setup),
		cmocka_unit_test_setup(test_partial_failure, setup),
		cmocka_unit_test_setup(test_bad_extent, setup),
		cmocka_unit_test_setup(test_create_refusals, setup),
		cmocka_unit_test_setup(test_create_event_channels, setup),
		cmocka_unit_test_setup(test_create_hvm_emulation, setup),
		cmocka_unit_test_setup(test_control_domain, setup),
		cmocka_unit_test_setup(test_domain_usage_reads_no_names, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
