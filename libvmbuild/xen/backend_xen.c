/*
 * backend_xen.c - the "xen" backend: domains on a real Xen 4.17 through
 * libxenctrl, libxenforeignmemory and libxenstore.
 *
 * This file holds the handles, host information, domain lifetime and the
 * memory operations (claim, populate, map).  vNUMA, affinity, CPUID and
 * TSC are in xen_platform.c, the special pages and ACPI tables in
 * xen_firmware.c and xen_acpi.c, what a PVH or HVM domain needs before
 * its first unpause in xen_boot.c (an HVM guest's own parts in
 * xen_hvm.c), the xenstore entries in xen_xs.c, the
 * probes of the companion hypercalls and of Xen's perf counters in
 * xen_companion.c.
 *
 * Threads: every op may run on several daemon workers at once.  The
 * xenctrl and foreignmemory handles are opened reentrant (each call is its
 * own ioctl), the xenstore handle is serialised by be->xs_lock.
 *
 * Logging: the Xen libraries log their errors through be->logger, which
 * drops them unless VMBUILD_XEN_DEBUG is set in the environment (the
 * library must not log above debug level; errors are returned as -errno).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xen_priv.h"

#include <xen/hvm/hvm_info_table.h>	/* HVM_MAX_VCPUS */

#define XEN_LIST_CHUNK		256	/* domains per getinfolist call */
#define XEN_MAXMEM_SLACK_KB	1024	/* as libxl's LIBXL_MAXMEM_CONSTANT */
/* max_evtchn_port for a description that gives none (libxl's default). */
#define XEN_MAX_EVTCHN_PORT	1023

static void
xen_log_vmessage(xentoollog_logger *logger, xentoollog_level level,
    int errnoval, const char *context, const char *format, va_list al)
{
	struct xen_be *be = (struct xen_be *)logger;

	if (!be->debug || level < XTL_DETAIL)
		return;
	fprintf(stderr, "vmbuild-xen: %s: ", context ? context : "xen");
	vfprintf(stderr, format, al);
	if (errnoval >= 0)
		fprintf(stderr, ": %s", strerror(errnoval));
	fputc('\n', stderr);
}

static void
xen_log_progress(xentoollog_logger *logger, const char *context,
    const char *doing_what, int percent, unsigned long done,
    unsigned long total)
{
	(void)logger; (void)context; (void)doing_what;
	(void)percent; (void)done; (void)total;
}

static void
xen_log_destroy(xentoollog_logger *logger)
{
	(void)logger;
}

static void xen_close(void *priv);

/* Describe the hypervisor and decide the capabilities, once, at open. */
static int
xen_probe(struct xen_be *be)
{
	xen_extraversion_t extra;
	xc_physinfo_t pi;
	int ver, rc;

	ver = xc_version(be->xch, XENVER_version, NULL);
	if (ver < 0)
		return -xen_errno();
	/*
	 * The domctl and sysctl structures are versioned per release: a
	 * daemon built against 4.17's headers gets -EACCES from every
	 * domctl of another release, so say so once, clearly.
	 */
	if ((ver >> 16) != 4 || (ver & 0xffff) != 17)
		return -EPROTONOSUPPORT;
	memset(extra, 0, sizeof(extra));
	if (xc_version(be->xch, XENVER_extraversion, &extra) < 0)
		extra[0] = '\0';
	extra[sizeof(extra) - 1] = '\0';

	memset(&pi, 0, sizeof(pi));
	if (xc_physinfo(be->xch, &pi) < 0)
		return -xen_errno();

	/* HVM: hvmloader, the BIOS and the device model (xen_hvm.c). */
	be->caps = VMB_CAP_IMAGE_LOAD | VMB_CAP_CLAIMS | VMB_CAP_HVM |
	    VMB_CAP_CALLER_CPU;
	if (pi.capabilities & XEN_SYSCTL_PHYSCAP_shadow)
		be->caps |= VMB_CAP_SHADOW;
	be->have_hap = (pi.capabilities & XEN_SYSCTL_PHYSCAP_hap) != 0;
	if (be->have_hap)
		be->caps |= VMB_CAP_HAP;
	/* libxl's default max grant version: 2 where Xen offers it. */
	be->gnttab_version = (pi.capabilities & XEN_SYSCTL_PHYSCAP_gnttab_v2) ?
	    2 : 1;

	xen_companion_probe(be);
	if (be->companion & XEN_COMP_SCRUB)
		be->caps |= VMB_CAP_SCRUB_PROGRESS;
	if (be->companion & XEN_COMP_COUNTERS)
		be->caps |= VMB_CAP_COUNTERS;
	if (be->companion & XEN_COMP_POPULATE)
		be->caps |= VMB_CAP_BATCH_POPULATE;
	if (be->nr_perfc_desc > 0)
		be->caps |= VMB_CAP_PERF_COUNTERS;

	rc = snprintf(be->describe, sizeof(be->describe),
	    "xen %d.%d%s (%s%s%s%s%s%s)", ver >> 16, ver & 0xffff, extra,
	    be->companion ? "companion:" : "stock",
	    (be->companion & XEN_COMP_SCRUB) ? " scrub" : "",
	    (be->companion & XEN_COMP_COUNTERS) ? " counters" : "",
	    (be->companion & XEN_COMP_POPULATE) ? " populate" : "",
	    be->nr_perfc_desc ? ", perfc" : "",
	    (pi.capabilities & XEN_SYSCTL_PHYSCAP_hap) ? ", hap" : ", no hap");
	if (rc < 0)
		be->describe[0] = '\0';
	return 0;
}

static int
xen_open(const char *arg, void **ret_priv)
{
	struct xen_be *be;
	const char *dbg;
	int rc;

	if (arg != NULL && arg[0] != '\0')
		return -EINVAL;		/* "xen" takes no argument */
	be = calloc(1, sizeof(*be));
	if (be == NULL)
		return -ENOMEM;
	be->logger.vmessage = xen_log_vmessage;
	be->logger.progress = xen_log_progress;
	be->logger.destroy = xen_log_destroy;
	dbg = getenv("VMBUILD_XEN_DEBUG");
	be->debug = dbg != NULL && dbg[0] != '\0' && strcmp(dbg, "0") != 0;
	pthread_mutex_init(&be->xs_lock, NULL);
	pthread_mutex_init(&be->scrub_lock, NULL);

	be->xch = xc_interface_open(&be->logger, &be->logger, 0);
	if (be->xch == NULL) {
		rc = -(errno > 0 ? errno : ENODEV);
		goto fail;
	}
	be->fmem = xenforeignmemory_open(&be->logger, 0);
	if (be->fmem == NULL) {
		rc = -xen_errno();
		goto fail;
	}
	/* The companion sysctls need raw hypercalls; without them: stock. */
	be->xcall = xencall_open(&be->logger, 0);
	/* A toolstack without xenstored cannot give a domain its console. */
	be->xsh = xs_open(0);
	if (be->xsh == NULL) {
		rc = -(errno > 0 ? errno : ECONNREFUSED);
		goto fail;
	}
	/*
	 * And a connection of our own for pipelined transactions
	 * (xen_xswire.c), where xenstored listens on a socket in dom0; a
	 * xenstore domain has none: one request at a time, as libxl.
	 */
	rc = xen_xsw_connect(xs_daemon_socket(), &be->xsw);
	if (rc < 0)
		xtl_log(&be->logger, XTL_DETAIL, -rc, "xenstore",
		    "no socket at %s: transactions one request at a time",
		    xs_daemon_socket());
	rc = xen_probe(be);
	if (rc < 0)
		goto fail;
	*ret_priv = be;
	return 0;
fail:
	xen_close(be);
	return rc;
}

static void
xen_close(void *priv)
{
	struct xen_be *be = priv;

	if (be == NULL)
		return;
	xen_xsw_free(be->xsw);
	if (be->xsh != NULL)
		xs_close(be->xsh);
	if (be->xcall != NULL)
		xencall_close(be->xcall);
	/* A restore's windows being unmapped (xen_xcrestore.c): at most 10 s. */
	for (int i = 0; i < 1000 && __atomic_load_n(&be->unmapping,
	    __ATOMIC_ACQUIRE) > 0; i++)
		usleep(10000);
	if (be->fmem != NULL)
		xenforeignmemory_close(be->fmem);
	if (be->xch != NULL)
		xc_interface_close(be->xch);
	pthread_mutex_destroy(&be->xs_lock);
	pthread_mutex_destroy(&be->scrub_lock);
	free(be);
}

static uint32_t
xen_caps(void *priv)
{
	return ((struct xen_be *)priv)->caps;
}

static const char *
xen_describe(void *priv)
{
	return ((struct xen_be *)priv)->describe;
}

/* ------------------------------------------------------------------ */
/* Host.                                                               */

/*
 * Topology from physinfo, numainfo and cputopoinfo.  Offline CPUs (all
 * ids invalid) are left out; nodes without memory information (offline
 * node ids) too.  cpus[].thread is the CPU's index among the CPUs that
 * share its socket and core, so 0 is the first SMT sibling.
 */
static int
xen_host_info(void *priv, struct vmb_host **ret_host)
{
	struct xen_be *be = priv;
	xc_physinfo_t pi;
	xc_meminfo_t *mem = NULL;
	xc_cputopo_t *topo = NULL;
	struct vmb_host *host = NULL;
	unsigned nr_nodes = 0, nr_cpus = 0, i, j, n;
	uint32_t node_index[VMB_MAX_NODES];
	uint64_t cores = 0;
	int rc;

	memset(&pi, 0, sizeof(pi));
	if (xc_physinfo(be->xch, &pi) < 0 ||
	    xc_numainfo(be->xch, &nr_nodes, NULL, NULL) < 0 ||
	    xc_cputopoinfo(be->xch, &nr_cpus, NULL) < 0) {
		rc = -xen_errno();
		goto out;
	}
	mem = calloc(nr_nodes ? nr_nodes : 1, sizeof(*mem));
	topo = calloc(nr_cpus ? nr_cpus : 1, sizeof(*topo));
	host = calloc(1, sizeof(*host));
	if (mem == NULL || topo == NULL || host == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (xc_numainfo(be->xch, &nr_nodes, mem, NULL) < 0 ||
	    xc_cputopoinfo(be->xch, &nr_cpus, topo) < 0) {
		rc = -xen_errno();
		goto out;
	}
	host->cpus = calloc(nr_cpus ? nr_cpus : 1, sizeof(*host->cpus));
	if (host->cpus == NULL) {
		rc = -ENOMEM;
		goto out;
	}

	for (i = 0; i < VMB_MAX_NODES; i++)
		node_index[i] = UINT32_MAX;
	for (i = 0; i < nr_nodes && host->nr_nodes < VMB_MAX_NODES; i++) {
		struct vmb_node *nd;

		if (mem[i].memsize == XEN_INVALID_MEM_SZ)
			continue;
		nd = &host->nodes[host->nr_nodes];
		nd->node = i;
		nd->total_bytes = mem[i].memsize;
		nd->free_bytes = mem[i].memfree;
		node_index[i] = host->nr_nodes++;
	}

	for (i = 0; i < nr_cpus; i++) {
		struct vmb_cpu *c;

		if (topo[i].core == XEN_INVALID_CORE_ID)
			continue;	/* offline */
		c = &host->cpus[host->nr_cpus++];
		c->cpu = i;
		c->node = topo[i].node == XEN_INVALID_NODE_ID ? 0 :
		    topo[i].node;
		c->socket = topo[i].socket;
		c->core = topo[i].core;
		for (j = 0, n = 0; j < i; j++)
			if (topo[j].core == topo[i].core &&
			    topo[j].socket == topo[i].socket)
				n++;
		c->thread = n;
		if (n == 0)
			cores++;
		if (c->node < VMB_MAX_NODES &&
		    node_index[c->node] != UINT32_MAX)
			host->nodes[node_index[c->node]].nr_cpus++;
	}

	host->threads_per_core = pi.threads_per_core;
	host->cores_per_node = host->nr_nodes ?
	    (uint32_t)(cores / host->nr_nodes) : 0;
	host->total_bytes = (uint64_t)pi.total_pages << XC_PAGE_SHIFT;
	host->free_bytes = (uint64_t)pi.free_pages << XC_PAGE_SHIFT;
	host->claimed_bytes = (uint64_t)pi.outstanding_pages << XC_PAGE_SHIFT;
	*ret_host = host;
	host = NULL;
	rc = 0;
out:
	if (host != NULL) {
		free(host->cpus);
		free(host);
	}
	free(topo);
	free(mem);
	return rc;
}

/*
 * Stock Xen counts dirty free pages per node (node_need_scrub[]) but
 * exposes none of it (physinfo.scrub_pages is hard-wired to 0): only the
 * companion sysctl can answer.
 */
static int
xen_scrub(void *priv, struct vmb_scrub *ret_scrub)
{
	struct xen_be *be = priv;

	if (!(be->companion & XEN_COMP_SCRUB))
		return -EOPNOTSUPP;
	return xen_companion_scrub(be, ret_scrub);
}

static int
xen_counters(void *priv, struct vmb_counters *ret_counters)
{
	struct xen_be *be = priv;

	if (be->companion & XEN_COMP_COUNTERS)
		return xen_companion_counters(be, ret_counters);
	if (be->nr_perfc_desc > 0)
		return xen_perfc_counters(be, ret_counters);
	return -EOPNOTSUPP;
}

/* ------------------------------------------------------------------ */
/* Domains.                                                            */

/*
 * Paging pool as libxl sizes it (libxl__get_required_paging_memory):
 * 4 KiB per (256 per vCPU + 1 per MiB of maxmem, twice that with
 * shadow paging).  HAP domains start with 256 pages only and fail to
 * populate large guests without it (Xen 4.17, XSA-409).
 */
static uint64_t
xen_paging_pool_bytes(const struct vmb_dom_config *cfg)
{
	uint64_t maxmem_mb = (cfg->max_pages << XC_PAGE_SHIFT) >> 20;
	uint64_t kb;

	/* shadow_memory= of an HVM guest, as libxl takes it. */
	if (cfg->paging_mib)
		return (uint64_t)cfg->paging_mib << 20;
	kb = 4 * (256 * (uint64_t)cfg->max_vcpus +
	    maxmem_mb * (cfg->hap ? 1 : 2));
	return kb << 10;
}

static int
xen_node_affinity(struct xen_be *be, uint32_t domid,
    const struct vmb_dom_config *cfg)
{
	xc_nodemap_t map;
	int max_nodes, rc;
	uint32_t i;

	if (cfg->nr_nodes == 0)
		return 0;
	max_nodes = xc_get_max_nodes(be->xch);
	if (max_nodes <= 0)
		return -xen_errno();
	map = xc_nodemap_alloc(be->xch);
	if (map == NULL)
		return -ENOMEM;
	for (i = 0; i < cfg->nr_nodes; i++) {
		if (cfg->nodes[i] >= (uint32_t)max_nodes) {
			rc = -EINVAL;
			goto out;
		}
		map[cfg->nodes[i] / 8] |= 1u << (cfg->nodes[i] % 8);
	}
	rc = xc_domain_node_setaffinity(be->xch, domid, map) < 0 ?
	    -xen_errno() : 0;
out:
	free(map);
	return rc;
}

/*
 * Create a paused PVH or HVM domain: hvm (+hap); a PVH guest's LAPIC
 * emulation only, an HVM guest's every emulated device but vPCI (as
 * libxl__arch_domain_prepare_config); grant table version, its highest
 * event channel port (max_event_channels), then its limits and paging
 * pool, node affinity and the xenstore skeleton.  An HVM guest's video
 * RAM, which its device model populates, is within max_pages (the
 * layout carves it out of memory=, as libxl).  Any failure destroys
 * the domain again.
 */
static int
xen_domain_create(void *priv, const struct vmb_dom_config *cfg,
    uint32_t *ret_domid)
{
	struct xen_be *be = priv;
	struct xen_domctl_createdomain dc;
	uint32_t domid = 0;
	int rc;

	if (cfg->max_vcpus == 0 || cfg->max_vcpus > HVM_MAX_VCPUS ||
	    cfg->max_pages == 0 || cfg->target_pages > cfg->max_pages ||
	    !cfg->hvm)
		return -EINVAL;	/* PVH and HVM domains only, no PV */
	/* The build chose the mode (vmb__step_paging); Xen's -EINVAL says less. */
	if (cfg->hap ? !be->have_hap : !(be->caps & VMB_CAP_SHADOW))
		return -EOPNOTSUPP;

	memset(&dc, 0, sizeof(dc));
	memcpy(dc.handle, cfg->uuid, sizeof(dc.handle));
	dc.flags = XEN_DOMCTL_CDF_hvm | (cfg->hap ? XEN_DOMCTL_CDF_hap : 0);
	dc.max_vcpus = cfg->max_vcpus;
	/* As libxl: 0 is the default (a description always has one). */
	dc.max_evtchn_port = cfg->max_evtchn_port ? cfg->max_evtchn_port :
	    XEN_MAX_EVTCHN_PORT;
	/* -1: Xen's default, as libxl passes for an unset key. */
	dc.max_grant_frames = cfg->max_grant_frames ?
	    (int32_t)cfg->max_grant_frames : -1;
	dc.max_maptrack_frames = cfg->max_maptrack_frames ?
	    (int32_t)cfg->max_maptrack_frames : -1;
	dc.grant_opts = XEN_DOMCTL_GRANT_version(be->gnttab_version);
	dc.arch.emulation_flags = cfg->dm ?
	    (XEN_X86_EMU_ALL & ~XEN_X86_EMU_VPCI) : XEN_X86_EMU_LAPIC;

	if (xc_domain_create(be->xch, &domid, &dc) < 0)
		return -xen_errno();

	if (xc_domain_max_vcpus(be->xch, domid, cfg->max_vcpus) < 0 ||
	    xc_domain_setmaxmem(be->xch, domid,
		((cfg->max_pages << XC_PAGE_SHIFT) >> 10) +
		XEN_MAXMEM_SLACK_KB) < 0 ||
	    xc_set_paging_mempool_size(be->xch, domid,
		xen_paging_pool_bytes(cfg)) < 0) {
		rc = -xen_errno();
		goto fail;
	}
	rc = xen_node_affinity(be, domid, cfg);
	if (rc < 0)
		goto fail;
	rc = xen_xs_domain_make(be, domid, cfg);
	if (rc < 0)
		goto fail;
	*ret_domid = domid;
	return 0;
fail:
	xen_xs_domain_remove(be, domid);
	(void)xc_domain_destroy(be->xch, domid);
	return rc;
}

static int
xen_domain_destroy(void *priv, uint32_t domid)
{
	struct xen_be *be = priv;
	int rc;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	/* Destroy first: a domain that stays must keep its entries. */
	rc = xc_domain_destroy(be->xch, domid) < 0 ? -xen_errno() : 0;
	if (rc < 0 && rc != -ESRCH)
		return rc;
	/*
	 * Then its devices (libxl takes them down before, with the domain
	 * paused; a dying domain's backends let go just the same), while
	 * the entries their hotplug scripts read are still there.
	 */
	xen_devices_destroy(be, domid);
	xen_xs_domain_remove(be, domid);
	return rc;
}

static int
xen_domain_pause(void *priv, uint32_t domid)
{
	struct xen_be *be = priv;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	return xc_domain_pause(be->xch, domid) < 0 ? -xen_errno() : 0;
}

static int
xen_domain_unpause(void *priv, uint32_t domid)
{
	struct xen_be *be = priv;

	if (domid == 0 || domid >= DOMID_FIRST_RESERVED)
		return -EINVAL;
	return xc_domain_unpause(be->xch, domid) < 0 ? -xen_errno() : 0;
}

/* The shutdown code of domain info flags (Xen's SHUTDOWN_*, ours too). */
_Static_assert(VMB_SHUTDOWN_POWEROFF == SHUTDOWN_poweroff &&
    VMB_SHUTDOWN_REBOOT == SHUTDOWN_reboot &&
    VMB_SHUTDOWN_SUSPEND == SHUTDOWN_suspend &&
    VMB_SHUTDOWN_CRASH == SHUTDOWN_crash &&
    VMB_SHUTDOWN_WATCHDOG == SHUTDOWN_watchdog &&
    VMB_SHUTDOWN_SOFT_RESET == SHUTDOWN_soft_reset,
    "vmb_shutdown_reason follows Xen's SHUTDOWN_* codes");
static enum vmb_shutdown_reason
xen_shutdown_reason(uint32_t flags)
{
	unsigned reason = (flags >> XEN_DOMINF_shutdownshift) &
	    XEN_DOMINF_shutdownmask;

	/* A code newer than this backend: the guest stopped, say crash. */
	return reason < VMB_SHUTDOWN_NR ? (enum vmb_shutdown_reason)reason :
	    VMB_SHUTDOWN_CRASH;
}

static enum vmb_domain_state
xen_state(uint32_t flags)
{
	if (flags & XEN_DOMINF_dying)
		return VMB_DOM_DYING;
	if (flags & XEN_DOMINF_shutdown)
		return xen_shutdown_reason(flags) == VMB_SHUTDOWN_CRASH ?
		    VMB_DOM_CRASHED : VMB_DOM_SHUTDOWN;
	if (flags & XEN_DOMINF_paused)
		return VMB_DOM_PAUSED;
	if (flags & XEN_DOMINF_blocked)
		return VMB_DOM_BLOCKED;
	return VMB_DOM_RUNNING;	/* running, or runnable and waiting */
}

/* One domain as Xen's domain info has it; its name from xenstore if asked. */
static void
xen_fill_domain(struct xen_be *be, const xc_domaininfo_t *di,
    struct vmb_domain *d, bool name)
{
	memset(d, 0, sizeof(*d));
	d->domid = di->domain;
	d->state = xen_state(di->flags);
	if (di->flags & XEN_DOMINF_shutdown)
		d->shutdown_reason = xen_shutdown_reason(di->flags);
	memcpy(d->uuid, di->handle, sizeof(d->uuid));
	if (name)
		xen_xs_read_name(be, di->domain, d->name, sizeof(d->name));
	d->hap = (di->flags & XEN_DOMINF_hap) != 0;
	d->vcpus = di->max_vcpu_id == XEN_INVALID_MAX_VCPU_ID ? 0 :
	    di->max_vcpu_id + 1;
	d->memory_bytes = (uint64_t)di->tot_pages << XC_PAGE_SHIFT;
	d->max_memory_bytes = (uint64_t)di->max_pages << XC_PAGE_SHIFT;
	d->outstanding_bytes = (uint64_t)di->outstanding_pages << XC_PAGE_SHIFT;
	d->cpu_time_ns = di->cpu_time;
	d->nr_nodes = 0;	/* stock Xen does not split tot_pages by node */
}

static int
xen_list(struct xen_be *be, bool names, struct vmb_domain **ret_domains,
    size_t *ret_nr)
{
	xc_domaininfo_t *info;
	struct vmb_domain *doms = NULL, *tmp;
	size_t nr = 0, cap = 0;
	uint32_t first = 0;
	int got, i, rc;

	info = calloc(XEN_LIST_CHUNK, sizeof(*info));
	if (info == NULL)
		return -ENOMEM;
	for (;;) {
		got = xc_domain_getinfolist(be->xch, first, XEN_LIST_CHUNK,
		    info);
		if (got < 0) {
			rc = -xen_errno();
			goto out;
		}
		for (i = 0; i < got; i++) {
			if (info[i].domain == 0)
				continue;	/* the control domain */
			if (nr == cap) {
				cap = cap ? cap * 2 : 16;
				tmp = realloc(doms, cap * sizeof(*doms));
				if (tmp == NULL) {
					rc = -ENOMEM;
					goto out;
				}
				doms = tmp;
			}
			xen_fill_domain(be, &info[i], &doms[nr++], names);
		}
		if (got < XEN_LIST_CHUNK)
			break;
		first = info[got - 1].domain + 1;
	}
	if (nr == 0) {
		free(doms);
		doms = NULL;
	}
	*ret_domains = doms;
	*ret_nr = nr;
	doms = NULL;
	rc = 0;
out:
	free(doms);
	free(info);
	return rc;
}

static int
xen_domain_list(void *priv, struct vmb_domain **ret_domains, size_t *ret_nr)
{
	return xen_list(priv, true, ret_domains, ret_nr);
}

/* Without the names: one xenstore round trip less per domain. */
static int
xen_domain_usage(void *priv, struct vmb_domain **ret_domains, size_t *ret_nr)
{
	return xen_list(priv, false, ret_domains, ret_nr);
}

/*
 * Domain 0, as `xl list` shows it: named from xenstore (xen-init-dom0
 * writes "Domain-0"), or "Domain-0" when xenstore has no name for it.
 */
static int
xen_control_domain(void *priv, struct vmb_domain *ret)
{
	struct xen_be *be = priv;
	xc_domaininfo_t info;
	int got;

	got = xc_domain_getinfolist(be->xch, 0, 1, &info);
	if (got < 0)
		return -xen_errno();
	if (got != 1 || info.domain != 0)
		return -ESRCH;
	xen_fill_domain(be, &info, ret, true);
	if (ret->name[0] == '\0')
		snprintf(ret->name, sizeof(ret->name), "Domain-0");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Memory.                                                             */

static int
xen_claim(void *priv, uint32_t domid, uint64_t pages)
{
	struct xen_be *be = priv;

	return xc_domain_claim_pages(be->xch, domid, pages) < 0 ?
	    -xen_errno() : 0;
}

static enum vmb_order_class
xen_order_class(uint32_t order)
{
	switch (order) {
	case 0:
		return VMB_ORDER_4K;
	case 9:
		return VMB_ORDER_2M;
	case 18:
		return VMB_ORDER_1G;
	default:
		return VMB_ORDER_OTHER;
	}
}

void
xen_count(struct vmb_populate_stats *stats, uint32_t order, uint32_t node,
    long got)
{
	if (stats == NULL || got <= 0)
		return;
	stats->extents[xen_order_class(order)] += got;
	if (node < VMB_MAX_NODES)
		stats->node_bytes[node] +=
		    ((uint64_t)got << order) << XC_PAGE_SHIFT;
}

/*
 * Populate one extent Xen could not give as a whole (no free buddy of
 * that order on the node: fragmentation, not lack of memory) with the
 * next smaller order, and those that fail again with 4 KiB pages, as
 * libxl's meminit_hvm does.  Same node, same flags: only the size of the
 * pieces changes.
 */
static int
xen_populate_split(struct xen_be *be, uint32_t domid, unsigned memflags,
    uint64_t gfn, uint32_t order, uint32_t node,
    struct vmb_populate_stats *stats)
{
	xen_pfn_t gfns[512];
	uint32_t sub = order > 9 ? 9 : 0;
	unsigned long count = 1ul << (order - sub), i;
	long got;
	int rc;

	if (order == 0 || count > sizeof(gfns) / sizeof(gfns[0]))
		return -ENOMEM;
	for (i = 0; i < count; i++)
		gfns[i] = gfn + (i << sub);
	got = xc_domain_populate_physmap(be->xch, domid, count, sub, memflags,
	    gfns);
	if (stats != NULL)
		stats->calls++;
	if (got < 0 && errno == ENOMEM && sub > 0)
		got = 0;
	if (got < 0)
		return -xen_errno();
	xen_count(stats, sub, node, got);
	for (i = (unsigned long)got; i < count; i++) {
		rc = xen_populate_split(be, domid, memflags, gfn + (i << sub),
		    sub, node, stats);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * Carry the engine's extents to the companion's batched populate when
 * Xen has it (xen_companion.c), else to XENMEM_populate_physmap.  Consecutive
 * extents of the same order and node go in one call (the hypercall takes
 * one order and one node per call); Xen preempts and continues long calls
 * itself.  An extent Xen cannot find as one buddy is split (see
 * xen_populate_split), so a fragmented heap costs calls, not the build.
 * Stock Xen reports nothing about flushes or scrubbing, so those
 * stats are left alone and stats->have stays clear: they are unknown.
 */
static int
xen_populate(void *priv, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr,
    struct vmb_populate_stats *stats, size_t *ret_done,
    const struct vmb__popstep *step)
{
	struct xen_be *be = priv;
	xen_pfn_t *gfns;
	size_t i = 0, j, n, done = 0;
	unsigned memflags;
	long got;
	int rc = 0;

	*ret_done = 0;
	if (nr == 0)
		return 0;
	if (be->companion & XEN_COMP_POPULATE) {
		/* One call is the whole batch: Xen continues it itself. */
		rc = xen_companion_populate(be, domid, flags, ext, nr, stats,
		    ret_done);
		if (rc == 0 && step != NULL)
			step->fn(step->arg, *ret_done);
		if (rc != -ENOSYS && rc != -EOPNOTSUPP)
			return rc;
	}
	gfns = malloc(nr * sizeof(*gfns));
	if (gfns == NULL)
		return -ENOMEM;
	while (i < nr) {
		if (ext[i].order > 18 ||
		    (ext[i].gfn & ((1ull << ext[i].order) - 1)) != 0) {
			rc = -EINVAL;
			break;
		}
		for (n = 1; i + n < nr && ext[i + n].order == ext[i].order &&
		    ext[i + n].node == ext[i].node; n++)
			;
		for (j = 0; j < n; j++)
			gfns[j] = ext[i + j].gfn;
		memflags = 0;
		if (ext[i].node != VMB_NODE_ANY)
			memflags = (flags & VMB_POPF_EXACT_NODE) ?
			    XENMEMF_exact_node(ext[i].node) :
			    XENMEMF_node(ext[i].node);
		got = xc_domain_populate_physmap(be->xch, domid, n,
		    ext[i].order, memflags, gfns);
		if (stats != NULL)
			stats->calls++;
		/* No buddy of that order at all comes back as -ENOMEM. */
		if (got < 0 && errno == ENOMEM && ext[i].order > 0)
			got = 0;
		if (got < 0) {
			rc = -xen_errno();
			break;
		}
		xen_count(stats, ext[i].order, ext[i].node, got);
		done += got;
		i += got;
		if ((size_t)got < n) {
			/*
			 * Xen stops at the first extent it cannot allocate:
			 * retry that one in smaller pieces, then go on.
			 */
			rc = xen_populate_split(be, domid, memflags, ext[i].gfn,
			    ext[i].order, ext[i].node, stats);
			if (rc < 0)
				break;
			done++;
			i++;
		}
		if (step != NULL)
			step->fn(step->arg, done);
	}
	free(gfns);
	*ret_done = done;
	return rc;
}

static int
xen_map(void *priv, uint32_t domid, uint64_t gfn, size_t nr, void **ret_addr)
{
	struct xen_be *be = priv;
	xen_pfn_t *gfns = NULL;
	int *err = NULL;
	void *addr = NULL;
	size_t i;
	int rc;

	if (nr == 0)
		return -EINVAL;
	gfns = malloc(nr * sizeof(*gfns));
	err = calloc(nr, sizeof(*err));
	if (gfns == NULL || err == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++)
		gfns[i] = gfn + i;
	addr = xenforeignmemory_map(be->fmem, domid, PROT_READ | PROT_WRITE,
	    nr, gfns, err);
	if (addr == NULL) {
		rc = -xen_errno();
		goto out;
	}
	for (i = 0; i < nr; i++) {
		if (err[i] != 0) {
			/* A hole in the range: nothing half-mapped is returned. */
			rc = err[i] < 0 ? err[i] : -err[i];
			(void)xenforeignmemory_unmap(be->fmem, addr, nr);
			goto out;
		}
	}
	*ret_addr = addr;
	rc = 0;
out:
	free(err);
	free(gfns);
	return rc;
}

static void
xen_unmap(void *priv, void *addr, size_t nr)
{
	struct xen_be *be = priv;

	if (addr != NULL)
		(void)xenforeignmemory_unmap(be->fmem, addr, nr);
}

const struct vmb_backend_ops vmb_backend_xen = {
	.name = "xen",
	.open = xen_open,
	.close = xen_close,
	.caps = xen_caps,
	.describe = xen_describe,
	.host_info = xen_host_info,
	.scrub = xen_scrub,
	.counters = xen_counters,
	.domain_create = xen_domain_create,
	.domain_destroy = xen_domain_destroy,
	.domain_pause = xen_domain_pause,
	.domain_unpause = xen_domain_unpause,
	.domain_list = xen_domain_list,
	.domain_usage = xen_domain_usage,
	.control_domain = xen_control_domain,
	.claim = xen_claim,
	.max_mem = xen_max_mem,
	.mem_note = xen_mem_note,
	.vcpu_online = xen_vcpu_online,
	.vcpu_affinity = xen_vcpu_affinity,
	.vcpu_info = xen_vcpu_info,
	.populate = xen_populate,
	.map = xen_map,
	.unmap = xen_unmap,
	.platform = xen_platform,
	.firmware = xen_firmware,
	.dm_store = xen_xs_dm_store,
	.dm_running = xen_xs_dm_running,
	.boot = xen_boot,
	.save_native = xen_save_native,
	.resume_native = xen_resume_native,
	.restore_native = xen_restore_native,
	.restore_engine = xen_restore_engine,
	.device_add = xen_device_add,
	.device_remove = xen_device_remove,
	.shutdown_request = xen_shutdown_request,
	.shutdown_withdraw = xen_shutdown_withdraw,
	.shutdown = xen_shutdown,
	.console_open = xen_console_open,
	.watch_open = xen_watch_open,
	.watch_fd = xen_watch_fd,
	.watch_drain = xen_watch_drain,
	.watch_close = xen_watch_close,
	.sched = xen_sched,
	.rename = xen_rename,
	.start_time = xen_start_time,
	.dmesg = xen_dmesg,
};
