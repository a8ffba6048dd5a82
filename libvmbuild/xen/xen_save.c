/*
 * xen_save.c - a PVH guest saved and restored through libxenguest
 * (xc_domain_save, xc_domain_restore: libxc's stream v2), the backend's
 * save_native, resume_native and restore_native ops.  native.c runs them
 * on a thread of their own and frames the stream as Xen records.
 *
 * The suspend is asked of the guest as xl asks it (libxl_dom_suspend.c):
 * "suspend" on its control/shutdown node (once it announced
 * control/feature-suspend, as Linux does), then a wait, bounded, for the
 * domain to be shut down with reason suspend.  A guest that does not
 * answer has the request taken back.  A failed save resumes the guest as
 * xl's checkpoint does (xc_domain_resume, cooperative: the guest's
 * suspend hypercall returns "cancelled", then xs_resume_domain).
 *
 * A restore gets a domain created and claimed by the build, not
 * populated: xc_domain_restore populates what the stream holds (RAM,
 * special pages, ACPI tables) and sets the vCPUs, HVM parameters and
 * grant table; then, as libxl does after it (libxl__build_post), the
 * store and console event channels and pages go into xenstore and the
 * domain is introduced to xenstored.  Each call has an xc_interface of
 * its own: it blocks for as long as the stream takes.
 *
 * restore_engine does the same with vmbuild's own reader of the stream
 * (xen_xcrestore.c) in libxenguest's place, into a domain whose RAM the
 * build populated (vmb_ctx_set_native_restore).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmb_internal.h"
#include "xen_priv.h"

/* After xenctrl.h (xen_priv.h): it relies on its types. */
#include <xenguest.h>

/* As libxl: a minute for the guest to suspend. */
#define SUSPEND_MS_DEFAULT	60000u
#define SUSPEND_POLL_MS		10

/* libvmbuild's one clock (clock.c), in ms. */
static uint64_t
now_ms(void)
{
	return vmb__now_ns() / 1000000;
}

/*
 * The domain's state: 1 suspended, 0 not yet, or a negative errno (gone,
 * or shut down for another reason) with why.
 */
static int
suspend_state(struct xen_be *be, uint32_t domid, char *why, size_t len)
{
	xc_domaininfo_t di;
	unsigned reason;

	if (xc_domain_getinfolist(be->xch, domid, 1, &di) != 1 ||
	    di.domain != domid) {
		snprintf(why, len, "suspend: domain %u is gone", domid);
		return -ESRCH;
	}
	if (!(di.flags & XEN_DOMINF_shutdown))
		return 0;
	reason = (di.flags >> XEN_DOMINF_shutdownshift) &
	    XEN_DOMINF_shutdownmask;
	if (reason == SHUTDOWN_suspend)
		return 1;
	snprintf(why, len, "suspend: domain %u shut down with reason %u "
	    "instead of suspending", domid, reason);
	return -EIO;
}

int
xen_suspend_wait(struct xen_be *be, uint32_t domid, int cancel_fd,
    uint32_t suspend_ms, char *why, size_t len)
{
	uint64_t deadline;
	int rc;

	if (suspend_ms == 0)
		suspend_ms = SUSPEND_MS_DEFAULT;
	rc = xen_xs_control(be, domid, "suspend", false);
	if (rc == -EOPNOTSUPP) {
		snprintf(why, len, "suspend: the guest of domain %u has not "
		    "announced control/feature-suspend (no PV suspend "
		    "support): it cannot be saved", domid);
		return rc;
	}
	if (rc < 0) {
		snprintf(why, len, "suspend: cannot write control/shutdown of "
		    "domain %u: %s", domid, strerror(-rc));
		return rc;
	}
	deadline = now_ms() + suspend_ms;
	while ((rc = suspend_state(be, domid, why, len)) == 0) {
		struct pollfd pf = { cancel_fd, POLLIN, 0 };
		uint64_t t = now_ms();

		if (t >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		/* The domain's state is polled: its change wakes nothing. */
		if (poll(&pf, cancel_fd >= 0 ? 1 : 0, SUSPEND_POLL_MS) > 0 &&
		    (pf.revents & POLLIN)) {
			rc = -ECANCELED;
			break;
		}
	}
	if (rc == 1)
		return 0;
	/* Not suspended: the request, if the guest has not taken it, goes. */
	if (rc == -ETIMEDOUT || rc == -ECANCELED) {
		int taken = xen_xs_control(be, domid, "suspend", true) == 0;

		if (rc == -ECANCELED)
			snprintf(why, len, "cancelled while waiting for the "
			    "guest to suspend");
		else
			snprintf(why, len, "suspend: the guest of domain %u "
			    "%s within %u ms (control/shutdown)", domid, taken ?
			    "took the request but did not suspend" :
			    "did not answer the request", suspend_ms);
	}
	return rc;
}

/* Its suspend (cooperative) cancelled: the guest runs on. */
static int
xen_resume_with(struct xen_be *be, xc_interface *xch, uint32_t domid,
    char *why, size_t len)
{
	int rc = 0;

	if (xc_domain_resume(xch, domid, 1) < 0) {
		rc = -xen_errno();
		snprintf(why, len, "resume: xc_domain_resume of domain %u: %s",
		    domid, strerror(-rc));
		return rc;
	}
	pthread_mutex_lock(&be->xs_lock);
	if (!xs_resume_domain(be->xsh, domid))
		rc = -(errno > 0 ? errno : EIO);
	pthread_mutex_unlock(&be->xs_lock);
	if (rc < 0)
		snprintf(why, len, "resume: xs_resume_domain of domain %u: %s",
		    domid, strerror(-rc));
	return rc;
}

int
xen_resume_native(void *priv, uint32_t domid, char *why, size_t len)
{
	struct xen_be *be = priv;

	return xen_resume_with(be, be->xch, domid, why, len);
}

struct save_cb {
	struct xen_be	*be;
	uint32_t	domid;
	int		cancel_fd;
	uint32_t	suspend_ms;
	struct vmb_native_live *live;	/* NULL: not a live save */
	uint64_t	first;		/* round 1's count: the p2m's size */
	uint64_t	populated;	/* the domain's pages at the start */
	bool		suspended;
	int		rc;		/* the suspend's */
	char		why[200];
};

/* xc_domain_save's suspend callback: 1 once suspended, 0 failed. */
static int
save_suspend(void *data)
{
	struct save_cb *s = data;

	s->rc = xen_suspend_wait(s->be, s->domid, s->cancel_fd,
	    s->suspend_ms, s->why, sizeof(s->why));
	s->suspended = s->rc == 0;
	if (s->suspended && s->live != NULL)
		s->live->suspended_ns = vmb__now_ns();
	return s->suspended;
}

uint64_t
xen_live_pages(uint64_t total_written, uint64_t first, uint64_t populated)
{
	if (populated == 0 || first == 0 || total_written < first)
		return total_written;
	return total_written - first + (populated < first ? populated : first);
}

/*
 * A live save's precopy policy, asked by libxenguest (xg_sr_save.c,
 * send_memory_live) after each round with no dirty count (-1: "fetch
 * the log?"), then with the log's count before the next round.  Round
 * 1 sends all memory whatever the answer; a STOP with a count still
 * sends those pages live, then the guest is suspended and the last
 * round goes.  So: stop once max_rounds live rounds went, or when a
 * round would leave at most dirty_pages.  A cancel aborts (libxenguest
 * takes back log-dirty; the guest never stopped).
 */
static int
save_precopy_policy(struct precopy_stats stats, void *data)
{
	struct save_cb *s = data;
	struct vmb_native_live *l = s->live;
	struct pollfd pf = { s->cancel_fd, POLLIN, 0 };

	/*
	 * Round 1's count is the p2m's size, not the pages that went (a
	 * 1 GiB PVH guest's was over 4 GiB on the lab's first migration).
	 */
	if (stats.iteration == 0 && stats.dirty_count > 0)
		s->first = (uint64_t)stats.dirty_count;
	l->pages = xen_live_pages(stats.total_written, s->first, s->populated);
	l->rounds = stats.iteration;		/* live rounds sent */
	if (s->cancel_fd >= 0 && poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN)) {
		snprintf(s->why, sizeof(s->why), "cancelled during live "
		    "round %u", stats.iteration + 1);
		s->rc = -ECANCELED;
		return XGS_POLICY_ABORT;
	}
	if (stats.iteration == 0)
		return XGS_POLICY_CONTINUE_PRECOPY;
	if (stats.dirty_count < 0) {
		if (stats.iteration < l->max_rounds)
			return XGS_POLICY_CONTINUE_PRECOPY;
		l->rounds = stats.iteration + 1;	/* and the last */
		return XGS_POLICY_STOP_AND_COPY;
	}
	if ((uint64_t)stats.dirty_count > l->dirty_pages)
		return XGS_POLICY_CONTINUE_PRECOPY;
	l->pages += (uint64_t)stats.dirty_count;
	l->rounds = stats.iteration + 2;	/* these live, and the last */
	return XGS_POLICY_STOP_AND_COPY;
}

/* A PVH guest has no device model whose log-dirty to switch. */
static int
save_logdirty(uint32_t domid, unsigned enable, void *data)
{
	(void)domid, (void)enable, (void)data;
	return 0;
}

int
xen_save_native(void *priv, uint32_t domid, int fd, int cancel_fd,
    uint32_t suspend_ms, struct vmb_native_live *live, char *why,
    size_t len)
{
	struct xen_be *be = priv;
	struct save_cb s = { .be = be, .domid = domid,
	    .cancel_fd = cancel_fd, .suspend_ms = suspend_ms, .live = live };
	struct save_callbacks cb;
	xc_interface *xch;
	int rc = 0;

	xch = xc_interface_open(&be->logger, &be->logger, 0);
	if (xch == NULL) {
		rc = -xen_errno();
		snprintf(why, len, "save: cannot open libxenctrl: %s",
		    strerror(-rc));
		return rc;
	}
	memset(&cb, 0, sizeof(cb));
	cb.suspend = save_suspend;
	cb.switch_qemu_logdirty = save_logdirty;
	cb.data = &s;
	if (live != NULL) {
		xc_domaininfo_t di;

		if (xc_domain_getinfolist(xch, domid, 1, &di) == 1 &&
		    di.domain == domid)
			s.populated = di.tot_pages;
		live->rounds = 0;
		live->pages = 0;
		live->suspended_ns = 0;
		if (live->max_rounds == 0)
			live->max_rounds = 1;
		cb.precopy_policy = save_precopy_policy;
	}
	if (xc_domain_save(xch, fd, domid, live != NULL ? XCFLAGS_LIVE : 0,
	    &cb, XC_STREAM_PLAIN, -1) != 0) {
		rc = -xen_errno();
		if (s.rc < 0)
			rc = s.rc;
		if (s.rc < 0)
			snprintf(why, len, "%s", s.why);
		else
			snprintf(why, len, "save: xc_domain_save of domain %u "
			    "failed: %s", domid, strerror(-rc));
	}
	/* Suspended for nothing: it runs on (its own why, if that fails). */
	if (rc < 0 && s.suspended) {
		char rwhy[160];

		if (xen_resume_with(be, xch, domid, rwhy, sizeof(rwhy)) < 0) {
			size_t l = strlen(why);

			snprintf(why + l, len - l, "; and %s", rwhy);
		}
	}
	xc_interface_close(xch);
	return rc;
}

/*
 * The guest announced its PV control watcher when it booted (Linux's
 * drivers/xen/manage.c: control/feature-poweroff, -reboot, -suspend),
 * in the saved domain's tree; the restored domain's tree is new, and a
 * guest that resumes rather than boots does not announce again.  It
 * answered control/shutdown with a suspend to be saved: the watcher is
 * there, and the same watcher takes poweroff and reboot.  Without these
 * a restored guest could be neither shut down nor saved again (the
 * nodes stay the guest's own: the values only are written).
 */
static void
fill_restored_control(struct xs_tx *tx, const void *arg)
{
	static const char *const feature[] = { "control/feature-poweroff",
	    "control/feature-reboot", "control/feature-suspend" };
	const uint32_t *domid = arg;
	char dom[XS_PATH_MAX];

	snprintf(dom, sizeof(dom), "/local/domain/%u", *domid);
	for (size_t i = 0; i < sizeof(feature) / sizeof(feature[0]); i++)
		xen_xs_tx_write(tx, dom, feature[i], "1", NULL, 0);
}

/*
 * A PVH guest's pfns: RAM below 4 GiB (with the MMIO hole, the special
 * pages and ACPI tables in it) and above it, at most its static maximum.
 */
static uint64_t
restore_pfn_limit(uint64_t static_max_kb)
{
	return (1ull << 20) + (static_max_kb >> 2);
}

/*
 * engine: the stream read by xen_xcrestore into the domain the build
 * populated; else by libxenguest's xc_domain_restore, which populates.
 */
static int
restore_with(void *priv, uint32_t domid, int fd,
    const struct vmb_boot *boot, bool engine, char *why, size_t len)
{
	struct xen_be *be = priv;
	struct restore_callbacks cb;
	unsigned long store_gfn = 0, console_gfn = 0;
	struct xen_xs_boot xb;
	xc_domaininfo_t di;
	xc_interface *xch;
	const char *step;
	int port, rc = 0;

	if (boot == NULL || boot->vcpus == 0 || boot->memory_bytes == 0)
		return -EINVAL;
	xch = xc_interface_open(&be->logger, &be->logger, 0);
	if (xch == NULL) {
		rc = -xen_errno();
		snprintf(why, len, "restore: cannot open libxenctrl: %s",
		    strerror(-rc));
		return rc;
	}
	memset(&xb, 0, sizeof(xb));
	xb.domid = domid;
	xen_xs_tool_domids(be, &xb.store_domid, &xb.console_domid);
	step = "reading the domain";
	if (xc_domain_getinfolist(xch, domid, 1, &di) != 1 ||
	    di.domain != domid)
		goto fail;
	xb.max_vcpus = di.max_vcpu_id == XEN_INVALID_MAX_VCPU_ID ? 0 :
	    di.max_vcpu_id + 1;
	xb.vcpus = boot->vcpus < xb.max_vcpus ? boot->vcpus : xb.max_vcpus;
	xb.target_kb = boot->memory_bytes >> 10;
	xb.static_max_kb = boot->guest != NULL &&
	    boot->guest->maxmem_bytes >= boot->memory_bytes ?
	    boot->guest->maxmem_bytes >> 10 : xb.target_kb;
	/* The channels first, as libxl__build_pre: the restore binds them. */
	step = "allocating the xenstore event channel";
	if ((port = xc_evtchn_alloc_unbound(xch, domid, xb.store_domid)) < 0)
		goto fail;
	xb.store_port = (uint32_t)port;
	step = "allocating the console event channel";
	if ((port = xc_evtchn_alloc_unbound(xch, domid, xb.console_domid)) < 0)
		goto fail;
	xb.console_port = (uint32_t)port;
	if (engine) {
		struct xen_xcrestore_args a = {
		    .pfn_limit = restore_pfn_limit(xb.static_max_kb),
		    .store_port = xb.store_port,
		    .store_domid = xb.store_domid,
		    .console_port = xb.console_port,
		    .console_domid = xb.console_domid };
		uint64_t sg = 0, cg = 0;
		char xwhy[256] = "";

		/* Not known (left 0): nothing given back. */
		if (boot->guest != NULL)
			(void)vmb_guest_ram_layout(boot->guest, &a.ram);

		rc = xen_xcrestore(be, xch, domid, fd, &a, &sg, &cg, xwhy,
		    sizeof(xwhy));
		if (rc < 0) {
			snprintf(why, len, "restore of domain %u: %s", domid,
			    xwhy[0] ? xwhy : strerror(-rc));
			/* The domain is the caller's undo, as below. */
			xc_interface_close(xch);
			return rc;
		}
		xb.store_gfn = sg;
		xb.console_gfn = cg;
	} else {
		memset(&cb, 0, sizeof(cb));
		step = "xc_domain_restore";
		if (xc_domain_restore(xch, fd, domid, xb.store_port,
		    &store_gfn, xb.store_domid, xb.console_port, &console_gfn,
		    xb.console_domid, XC_STREAM_PLAIN, &cb, -1) != 0)
			goto fail;
		xb.store_gfn = store_gfn;
		xb.console_gfn = console_gfn;
	}
	xc_interface_close(xch);
	rc = xen_xs_domain_boot(be, &xb);
	if (rc < 0) {
		snprintf(why, len, "restore: cannot write domain %u's xenstore "
		    "entries: %s", domid, strerror(-rc));
		return rc;
	}
	rc = xen_xs_transaction(be, domid, fill_restored_control, &domid);
	if (rc == 0)
		rc = xen_xs_introduce(be, domid, xb.store_gfn, xb.store_port);
	if (rc < 0) {
		xen_xs_domain_boot_undo(be, &xb);
		snprintf(why, len, "restore: cannot write domain %u's control "
		    "nodes or introduce it to xenstored: %s", domid,
		    strerror(-rc));
	}
	return rc;
fail:
	/* The domain, with whatever the restore made, is the caller's undo. */
	rc = -xen_errno();
	snprintf(why, len, "restore of domain %u: %s: %s", domid, step,
	    strerror(-rc));
	xc_interface_close(xch);
	return rc;
}

int
xen_restore_native(void *priv, uint32_t domid, int fd,
    const struct vmb_boot *boot, char *why, size_t len)
{
	return restore_with(priv, domid, fd, boot, false, why, len);
}

int
xen_restore_engine(void *priv, uint32_t domid, int fd,
    const struct vmb_boot *boot, char *why, size_t len)
{
	return restore_with(priv, domid, fd, boot, true, why, len);
}
