/*
 * build.c - building a domain as a table of phases, and one undo path.
 *
 *   place     choose nodes from host, scrub and domain state
 *   create    the domain, paused, with the guest's UUID as its handle, so
 *             a restarted daemon can tell its domains from others
 *   claim     reserve the memory: if it is not there, fail now, not after
 *             populating most of it
 *   populate  the engine or the libxl pattern (populate.c)
 *   load      kernel, ramdisk, command line, start info (loader.c)
 *   devices   disks and vifs: backends, hotplug scripts (device.c)
 *   boot      the backend's last step, then unpause unless start_paused
 *
 * A restore (opts.restore) reads no kernel: its load phase is the
 * caller's, which writes the saved memory into the populated domain, or,
 * with opts.restore_populates (libxenguest's restore of a Xen stream),
 * populates the claimed domain itself.
 *
 * Each phase is a function over the state of one run (struct run) and,
 * where it leaves something behind, an undo.  vmb_build_run() enters the
 * phases in the order of phases[] (timing each, reporting progress and
 * seeing a cancel between them); on a failure or a cancel it runs every
 * undo, last first (each undoes only what was done).  A new phase is a
 * value of enum vmb_build_phase and one entry here.
 *
 * Two pieces of work do not wait for the main line, nor it for them,
 * until it needs their result (struct branch, each on a thread of its
 * own): reading, unpacking and checking the images (seconds for a
 * distribution's xz bzImage and ramdisk on a slow host) runs from the
 * start, while the domain is placed, created and populated, and load
 * waits for it; the devices (backends and hotplug scripts, seconds each)
 * start as soon as the domain exists, beside claim, populate and load,
 * and boot waits for them (for a PVH guest, for their xenstore entries
 * only: hotplug_overlaps; the build is done when they are).  Placement needs only the guest's memory
 * sizes, never the image.  The first failure of any line is the build's:
 * it stops the main line (the cancel flag, seen between phases and
 * populate requests), the branches are waited for, and the one undo
 * path takes everything back, devices first.  Device setup cannot be
 * interrupted (a hotplug script runs to its end or its time limit).
 *
 * The create phase's undo destroys the domain and checks that it is
 * really gone; the hypervisor then owns freeing (and scrubbing) its pages.
 * When that fails, the result says so (undo_rc, leftover_domid): the
 * caller keeps the domain's record and destroys it later, rather than
 * the domain being forgotten with its memory.
 *
 * A cancel is a flag seen between phases and populate requests, and an
 * eventfd that hypervisor calls waiting on the sim backend watch: the
 * build hands it to its thread's part of the context (vmb__set_cancel_fd,
 * ctx.c), so that it ends a wait on a hypervisor that does not answer at
 * once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vmb_internal.h"

struct vmb_build {
	struct vmb_ctx *ctx;
	struct vmb_guest *guest;
	struct vmb_build_opts opts;
	vmb_progress_fn *progress;
	void	*user;
	atomic_bool cancel;
	atomic_bool running;
	int	cancel_fd;		/* eventfd, readable once cancelled */
	int	kernel_fd, ramdisk_fd;	/* vmb_build_set_images; -1: paths */
};

const char *
vmb_populate_strategy_name(enum vmb_populate_strategy s)
{
	switch (s) {
	case VMB_POPULATE_ENGINE:	return "engine";
	case VMB_POPULATE_LIBXL:	return "libxl";
	}
	return "unknown";
}

int
vmb_populate_strategy_parse(const char *name,
    enum vmb_populate_strategy *ret_strategy)
{
	if (!name || !ret_strategy)
		return -EINVAL;
	if (!strcmp(name, "engine"))
		*ret_strategy = VMB_POPULATE_ENGINE;
	else if (!strcmp(name, "libxl"))
		*ret_strategy = VMB_POPULATE_LIBXL;
	else
		return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* One run: what the phases share.                                    */

struct run;

/*
 * Work beside the main line, on a thread of its own (or on the main
 * line's, where it would have run, when no thread can be had).
 */
struct branch {
	struct run *r;
	int	(*fn)(struct run *r, struct branch *br);
	int	who;			/* enum line */
	uint32_t bit;			/* VMB_ALONGSIDE_* */
	struct vmb__task task;		/* on the context's pool */
	size_t	pending;		/* 1 until the pool ran it */
	bool	threaded;		/* started on the pool: to be joined */
	bool	ran;			/* fn returned; rc and why are its */
	int	rc;
	char	why[sizeof(((struct vmb_build_result *)0)->error)];
	struct vmb_span span;
};

/* The lines of work whose first failure is the build's. */
enum line { LINE_NONE = -1, LINE_MAIN, LINE_IMAGES, LINE_DEVICES };

struct run {
	struct vmb_build *b;
	const struct vmb_backend_ops *ops;
	void	*priv;			/* the backend's */
	struct vmb_build_result res;
	struct vmb__image *img;		/* read by place, written by load */
	struct vmb_host *host;
	struct vmb_domain *doms;
	size_t	nr_doms;
	struct vmb_layout layout;	/* planned in place */
	struct vmb_memmap_entry memmap[VMB_MEMMAP_MAX];	/* load's */
	struct vmb_boot boot;		/* filled by load, used by boot */
	uint32_t domid;			/* VMB_DOMID_INVALID until created */
	bool	claimed;
	uint32_t disks_up, nics_up;	/* devices set up, for undo */
	bool	dm_up;			/* the device model started */
	bool	bad_image;		/* the failure is the image's */
	int	undo_rc;		/* 0: nothing of the build is left */
	uint64_t t0;			/* the build's start */
	struct vmb_cpuwait wait0;	/* its CPUs' steal then (cpuwait.c) */
	struct branch images, devices;
	bool	images_bad;		/* the images branch's bad_image */
	/*
	 * The devices' entries are written (device.c's visible hook, from
	 * the devices branch): the guest can find them, and may run while
	 * their backends and hotplug scripts finish (devices_late).
	 */
	pthread_mutex_t gate_lock;
	pthread_cond_t gate_cond;
	bool	devs_visible;		/* under gate_lock */
	bool	devices_late;		/* DONE waits for the devices branch */
	_Atomic int failed_by;		/* enum line: the first to fail */
	/*
	 * Progress reports of the main line and of the branches, one at a
	 * time, so that a branch's report (the main line's phase, with its
	 * own bit changed) never arrives after the main line's next phase.
	 */
	pthread_mutex_t report_lock;
	enum vmb_build_phase phase;	/* the main line's, under the lock */
	uint32_t rdomid;		/* its domid, under the lock */
	uint32_t alongside;		/* VMB_ALONGSIDE_*, under the lock */
	/*
	 * Scrub progress as placement saw it, then as the populate's
	 * progress reports refresh it (at most once a second, from the
	 * worker that reports: hence the lock).
	 */
	pthread_mutex_t scrub_lock;
	bool	have_scrub;
	struct vmb_scrub scrub;
	uint64_t scrub_at_ns;
	bool	scrub_inline;		/* placed short of clean memory */
	char	why[sizeof(((struct vmb_build_result *)0)->error)];
};

/* Say why `rc` happened, for the result's error; returns rc. */
static int __attribute__((format(printf, 3, 4)))
fail(struct run *r, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return rc;
}

/* Nanoseconds since the build started. */
static uint64_t
since(const struct run *r)
{
	return vmb__now_ns() - r->t0;
}

/*
 * Report the main line's phase (its domid, its done) and what runs
 * beside it, as they are under report_lock.  The callback is called
 * outside the lock: a branch's report may reach it after the main
 * line's next one, with the phase just left (vmb_progress).
 */
static void
report_now(struct run *r)
{
	struct vmb_build *b = r->b;
	struct vmb_progress p = { .total = b->guest->memory_bytes };

	p.phase = r->phase;
	p.domid = r->rdomid;
	p.done = p.phase > VMB_PHASE_POPULATE && p.phase != VMB_PHASE_UNDO ?
	    b->guest->memory_bytes : 0;
	/* A restore's load counts the saved bytes written back, from 0. */
	if (p.phase == VMB_PHASE_LOAD && b->opts.restore != NULL)
		p.done = 0;
	p.alongside = r->alongside;
	/* The main line waiting in devices for the devices branch: one. */
	if (p.phase == VMB_PHASE_DEVICES)
		p.alongside &= ~VMB_ALONGSIDE_DEVICES;
	pthread_mutex_unlock(&r->report_lock);
	if (b->progress)
		b->progress(b->user, &p);
}

/* The main line enters `phase` (domid as it is now). */
static void
report(struct run *r, enum vmb_build_phase phase)
{
	pthread_mutex_lock(&r->report_lock);
	r->phase = phase;
	r->rdomid = r->domid;
	report_now(r);
}

/* A branch starts (on) or ends beside the main line. */
static void
report_alongside(struct run *r, uint32_t bit, bool on)
{
	pthread_mutex_lock(&r->report_lock);
	if (on)
		r->alongside |= bit;
	else
		r->alongside &= ~bit;
	report_now(r);
}

/*
 * `who` failed with rc: the first failure (a cancel is none) is the
 * build's, and stops the main line at its next look at the cancel flag
 * (not through the cancel descriptor: a hypervisor call it ends has an
 * unknown outcome, and only the caller's cancel may cost that).
 */
static void
line_failed(struct run *r, int who, int rc)
{
	int none = LINE_NONE;

	if (rc == -ECANCELED)
		return;
	if (atomic_compare_exchange_strong(&r->failed_by, &none, who))
		atomic_store(&r->b->cancel, true);
}

/* ------------------------------------------------------------------ */
/* Branches                                                            */

static void
branch_run(struct branch *br)
{
	struct run *r = br->r;

	/* A thread's own: the build's cancel ends its hypervisor waits. */
	vmb__set_cancel_fd(r->b->cancel_fd);
	br->span.start_ns = since(r);
	br->rc = br->fn(r, br);
	br->span.end_ns = since(r);
	br->ran = true;
	if (br->rc)
		line_failed(r, br->who, br->rc);
}

static void
branch_main(void *arg)
{
	struct branch *br = arg;

	report_alongside(br->r, br->bit, true);
	branch_run(br);
	/* A pool thread goes on to other builds: not with this cancel. */
	vmb__set_cancel_fd(-1);
	report_alongside(br->r, br->bit, false);
}

/*
 * Start `br` beside the main line.  With no thread to be had it runs
 * later, on the main line, when its result is needed (branch_join).
 */
static void
branch_start(struct run *r, struct branch *br, int who, uint32_t bit,
    int (*fn)(struct run *r, struct branch *br))
{
	br->r = r;
	br->fn = fn;
	br->who = who;
	br->bit = bit;
	br->task.fn = branch_main;
	br->task.arg = br;
	br->threaded = vmb__tpool_start(r->b->ctx->pool, &br->task,
	    &br->pending) == 0;
	if (!br->threaded)
		vmb__log(r->b->ctx, "build %s: no thread for the %s: they wait "
		    "for the main line", r->b->guest->name, who == LINE_IMAGES ?
		    "images" : "devices");
}

/*
 * Wait for `br` (or run it here): its rc.  The main line's wait, if
 * any, goes to *ret_wait_ns.  A branch never started returns 0.
 */
static int
branch_join(struct run *r, struct branch *br, uint64_t *ret_wait_ns)
{
	uint64_t t = since(r);

	if (br->threaded) {
		vmb__tpool_wait(r->b->ctx->pool, &br->pending);
		br->threaded = false;
		if (ret_wait_ns)
			*ret_wait_ns = since(r) - t;
	} else if (br->fn && !br->ran) {
		branch_run(br);		/* its own time, not a wait */
	}
	return br->ran ? br->rc : 0;
}

/* The images, read, unpacked and checked beside the main line. */
static int
images_read(struct run *r, struct branch *br)
{
	struct vmb_build *b = r->b;
	int rc;

	if (b->guest->type == VMB_GUEST_HVM) {
		const char *bios = !strcmp(b->guest->hvm.bios, "ovmf") ?
		    (b->opts.ovmf ? b->opts.ovmf : VMB_OVMF_PATH) :
		    (b->opts.seabios ? b->opts.seabios : VMB_SEABIOS_PATH);

		rc = vmb__firmware_open(b->opts.hvmloader ? b->opts.hvmloader :
		    VMB_HVMLOADER_PATH, bios, &r->img, br->why,
		    sizeof(br->why));
		/* Missing firmware is the host's, not the guest's image. */
		r->images_bad = false;
		return rc;
	}
	rc = vmb__image_open_cache(b->ctx->imgcache, b->guest, b->kernel_fd,
	    b->ramdisk_fd, &r->img, br->why, sizeof(br->why));
	r->images_bad = rc && rc != -ENOMEM;
	return rc;
}

/*
 * Every disk and vif, side by side, as soon as the domain exists
 * (libxl adds them in domcreate, with its multidev); the hotplug
 * scripts read the domain's entries of the create phase.  A device that
 * fails takes itself back; undo takes the others (device.c).  Neither
 * claim, populate nor load touches what the devices do: the backend's
 * device ops take its xenstore lock, as when two builds run at once.
 */
static void
devices_visible(void *arg)
{
	struct run *r = arg;

	pthread_mutex_lock(&r->gate_lock);
	r->devs_visible = true;
	pthread_cond_broadcast(&r->gate_cond);
	pthread_mutex_unlock(&r->gate_lock);
}

static int
devices_setup(struct run *r, struct branch *br)
{
	int rc = vmb__devices_setup(r->b->ctx, r->domid, r->res.uuid,
	    r->b->guest, &r->disks_up, &r->nics_up, devices_visible, r,
	    br->why, sizeof(br->why));

	devices_visible(r);	/* said already, unless it failed early */
	return rc;
}

/*
 * The placed nodes, their dirty memory in `scrub` and their scrub rate,
 * into p's scrub_* members; false when they have no dirty memory.
 */
static bool
placed_dirty(const struct vmb_placement *pl, const struct vmb_scrub *scrub,
    struct vmb_progress *p)
{
	p->scrub_nodes = p->scrub_dirty_bytes = p->scrub_rate_bytes_per_sec = 0;
	for (uint32_t i = 0; i < pl->nr_nodes; i++)
		if (pl->nodes[i] < 64)
			p->scrub_nodes |= 1ull << pl->nodes[i];
	for (uint32_t k = 0; k < scrub->nr_nodes; k++) {
		const struct vmb_scrub_node *sn = &scrub->nodes[k];

		if (sn->node >= 64 || !(p->scrub_nodes >> sn->node & 1))
			continue;
		p->scrub_dirty_bytes += sn->dirty_bytes;
		if (scrub->have & VMB_SCRUB_HAVE_RATE)
			p->scrub_rate_bytes_per_sec += sn->rate_bytes_per_sec;
	}
	return p->scrub_dirty_bytes > 0;
}

/* ------------------------------------------------------------------ */
/* place                                                               */

/* Pages of a range that vmb__split_extents() makes 1 GiB extents. */
static uint64_t
range_1g_pages(const struct vmb__range *rg)
{
	const uint64_t p1g = 1ull << VMB_EXT_ORDER_1G;
	uint64_t lo = (rg->gfn + p1g - 1) & ~(p1g - 1);
	uint64_t hi = (rg->gfn + rg->pages) & ~(p1g - 1);

	return hi > lo ? hi - lo : 0;
}

/*
 * Would the populate have to scrub pages inline on some placed node?  It
 * would when the node's clean memory is less than it takes, and also
 * when the node's 1 GiB extents are more than its free 1 GiB blocks
 * without a dirty page (when the hypervisor says, VMB_SCRUB_HAVE_BLOCKS):
 * a 1 GiB extent takes a whole free 1 GiB block, and the dirty pages in
 * it are scrubbed inline however much is clean elsewhere on the node
 * (seen: 56 MiB, after a placement that counted enough clean pages).
 * With 1 GiB extents served by clean 1 GiB blocks, the rest (2 MiB and
 * 4 KiB extents, which the allocator takes smallest block first) fits
 * in the rest of the clean memory.  Only a node with dirty memory is
 * short: what is missing otherwise no scrubber will bring.
 */
static bool
short_of_clean(const struct vmb_placement *pl, const struct vmb_guest *g,
    const struct vmb_host *host, const struct vmb_scrub *scrub)
{
	struct vmb__range rg[VMB_MAX_RANGES];
	uint64_t need_1g[VMB_MAX_NODES] = { 0 };
	int nr = vmb__layout(g, pl, rg);

	/* A placement the layout refuses fails in plan_layout, later. */
	for (int i = 0; i < nr; i++)
		if (rg[i].node < VMB_MAX_NODES)
			need_1g[rg[i].node] += range_1g_pages(&rg[i]) <<
			    VMB_PAGE_SHIFT;
	for (uint32_t i = 0; i < pl->nr_nodes; i++) {
		uint32_t n = pl->nodes[i];

		for (uint32_t k = 0; k < scrub->nr_nodes; k++) {
			const struct vmb_scrub_node *sn = &scrub->nodes[k];

			if (sn->node != n || !sn->dirty_bytes)
				continue;
			if (pl->node_bytes[i] > vmb__clean_bytes(host, scrub, n))
				return true;
			if ((scrub->have & VMB_SCRUB_HAVE_BLOCKS) &&
			    n < VMB_MAX_NODES && need_1g[n] > sn->clean_1g_bytes)
				return true;
		}
	}
	return false;
}

/* Sleep ns nanoseconds, whatever signals arrive meanwhile. */
static void
sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull),
	    (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * Wait, up to opts.scrub_wait_ms, for the background scrubber to make
 * enough memory clean, placing again each time it has made progress.
 * Stops early when the scrubber makes no progress for a while (nothing
 * more will turn clean), and on cancel.  Every step waited is announced
 * first (a progress report naming the dirty memory waited for), and a
 * build that waited says so in its placement's reason, as one that gave
 * up waiting does.  On return res.placement is the latest placement;
 * waiting itself never fails the build.
 */
static int
wait_for_scrubber(struct run *r)
{
	/*
	 * Scrubbers report per chunk (128 MiB), so a loaded host may show
	 * no change for seconds: only 10 s without any sign of work is a
	 * stall.
	 */
	const uint64_t step_ns = 50 * 1000000ull, stall_ns = 10000000000ull;
	struct vmb_build *b = r->b;
	struct vmb_build_result *res = &r->res;
	struct vmb_scrub *scrub = &r->scrub;
	uint64_t t0 = vmb__now_ns(), deadline, last_progress = t0;
	uint64_t last_dirty = UINT64_MAX, last_scrubbed = 0;
	const char *gave_up = NULL;
	bool waited = false;
	size_t len;

	deadline = t0 + (uint64_t)b->opts.scrub_wait_ms * 1000000ull;
	while (short_of_clean(&res->placement, b->guest, r->host, scrub)) {
		struct vmb_progress p = { .phase = VMB_PHASE_PLACE,
		    .domid = VMB_DOMID_INVALID, .total = b->guest->memory_bytes };
		struct vmb_placement pl;
		struct vmb_host *h = NULL;
		uint64_t now = vmb__now_ns(), dirty = 0, scrubbed = 0, rate = 0;

		if (atomic_load(&b->cancel))
			return -ECANCELED;
		for (uint32_t k = 0; k < scrub->nr_nodes; k++) {
			dirty += scrub->nodes[k].dirty_bytes;
			scrubbed += scrub->nodes[k].scrubbed_bytes_total;
			rate += scrub->nodes[k].rate_bytes_per_sec;
		}
		if (dirty < last_dirty || scrubbed > last_scrubbed ||
		    ((scrub->have & VMB_SCRUB_HAVE_RATE) && rate > 0))
			last_progress = now;
		last_dirty = dirty;
		last_scrubbed = scrubbed;
		if (now >= deadline || now - last_progress > stall_ns) {
			gave_up = now >= deadline ? "its time was up" :
			    "the scrubber made no progress for 10 s";
			break;
		}
		/* Say what we wait for: which node, how much is dirty. */
		if (b->progress && placed_dirty(&res->placement, scrub, &p)) {
			p.scrub = VMB_PROGRESS_SCRUB_WAIT;
			b->progress(b->user, &p);
		}
		sleep_ns(step_ns);
		waited = true;
		if (vmb_scrub_progress(b->ctx, scrub) != 0 ||
		    vmb_host_info(b->ctx, &h) != 0) {
			gave_up = "the hypervisor's figures could not be read";
			break;
		}
		vmb_host_free(r->host);
		r->host = h;
		/* Memory may have gone to others meanwhile: keep the old. */
		if (vmb__place(r->host, scrub, r->doms, r->nr_doms, b->guest,
		    &pl) == 0)
			res->placement = pl;
	}
	/* Only time spent asleep for the scrubber is a wait. */
	res->scrub_wait_ns = waited ? vmb__now_ns() - t0 : 0;
	len = strlen(res->placement.reason);
	if (waited)
		len += (size_t)snprintf(res->placement.reason + len,
		    sizeof(res->placement.reason) - len, "; waited %llu ms "
		    "for background scrubbing", (unsigned long long)
		    (res->scrub_wait_ns / 1000000));
	if (gave_up && len < sizeof(res->placement.reason))
		snprintf(res->placement.reason + len,
		    sizeof(res->placement.reason) - len, "; stopped waiting "
		    "short of clean memory: %s", gave_up);
	return 0;
}

/* Where the placed memory goes in the guest (layout.c). */
static int
plan_layout(struct run *r)
{
	int rc = vmb__layout_plan(r->b->guest, &r->res.placement, &r->layout);

	if (rc)
		return fail(r, rc, "the vnuma sizes do not add up to the "
		    "memory placed");
	return 0;
}

static int
phase_place(struct run *r)
{
	struct vmb_build *b = r->b;
	int rc, scrub_rc;

	/* Rather than build something else (PVH) of an HVM guest. */
	if (b->guest->type == VMB_GUEST_HVM && !(b->ctx->caps & VMB_CAP_HVM))
		return fail(r, -EOPNOTSUPP, "hvm: not on %s (its backend "
		    "builds no HVM guests)", r->ops->name);
	if (b->guest->type == VMB_GUEST_HVM && b->opts.restore)
		return fail(r, -EOPNOTSUPP, "hvm: a save or migration of an "
		    "HVM guest is not done yet");
	/*
	 * Loading's first part, beside everything until load (a branch);
	 * a restore has no image: its load writes the saved memory.
	 */
	if (!b->opts.restore)
		branch_start(r, &r->images, LINE_IMAGES, VMB_ALONGSIDE_IMAGES,
		    images_read);
	rc = vmb__host_state(b->ctx, &r->host, &r->doms, &r->nr_doms,
	    &r->scrub, &scrub_rc);
	if (rc)
		return fail(r, rc, "cannot read the host's state: %s",
		    strerror(-rc));
	r->have_scrub = scrub_rc == 0;
	r->scrub_at_ns = vmb__now_ns();
	rc = vmb__place_why(r->host, r->have_scrub ? &r->scrub : NULL, r->doms,
	    r->nr_doms, b->guest, &r->res.placement, r->why, sizeof(r->why));
	if (rc)
		return rc;
	if (!r->have_scrub || !(r->scrub.have & VMB_SCRUB_HAVE_DIRTY)) {
		r->have_scrub = false;
		return plan_layout(r);
	}
	if (b->opts.scrub_wait_ms)
		rc = wait_for_scrubber(r);
	if (rc)
		return rc;
	return plan_layout(r);
}

/* ------------------------------------------------------------------ */
/* create                                                              */

/* A call that failed in transport: the hypervisor may have done it. */
static bool
outcome_unknown(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -ETIMEDOUT ||
	    rc == -ECANCELED || rc == -EPROTO || rc == -ENOTCONN;
}

/*
 * The create's reply was lost: look for a domain with our uuid, which
 * the undo must then destroy.  If the list fails as well, nobody knows:
 * the undo is reported incomplete (the caller looks again by uuid).
 */
static int
adopt_lost_domain(struct run *r, int rc)
{
	struct vmb_domain *doms = NULL;
	size_t n = 0;
	int lrc;

	lrc = vmb_domain_list(r->b->ctx, &doms, &n);
	if (lrc) {
		r->undo_rc = lrc;
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		if (!memcmp(doms[i].uuid, r->res.uuid, sizeof(r->res.uuid)))
			r->domid = doms[i].domid;
	free(doms);
	vmb__log(r->b->ctx, "build %s: create failed in transport (%d); "
	    "domain %s", r->b->guest->name, rc,
	    r->domid != VMB_DOMID_INVALID ? "found, undo destroys it" :
	    "not created");
	return rc;
}

/*
 * cpu_weight= and cap=, as xl sets them after creating the domain
 * (libxl__sched_set_params).  Only those that differ from what a new
 * domain has anyway (Xen's weight 256, no cap): a guest that does not
 * ask for them builds on a host whose scheduler has neither (rtds,
 * null), a JSON description writing the defaults too.
 */
static int
step_sched(struct run *r, const struct vmb_guest *g)
{
	uint32_t w = VMB_SCHED_KEEP, cap = VMB_SCHED_KEEP;
	int rc;

	if ((g->keys_set & (1ull << VMB_KEY_CPU_WEIGHT)) &&
	    g->cpu_weight != VMB_SCHED_WEIGHT_DEFAULT)
		w = g->cpu_weight;
	if ((g->keys_set & (1ull << VMB_KEY_CAP)) && g->cap != 0)
		cap = g->cap;
	if (w == VMB_SCHED_KEEP && cap == VMB_SCHED_KEEP)
		return 0;
	rc = vmb_domain_sched(r->b->ctx, r->domid, w, cap, NULL);
	if (rc)
		return fail(r, rc, "cannot set the scheduler's %s: %s",
		    w != VMB_SCHED_KEEP && cap != VMB_SCHED_KEEP ?
		    "cpu_weight and cap" : w != VMB_SCHED_KEEP ? "cpu_weight" :
		    "cap", rc == -ENOTSUP ? "the domain's scheduler is not "
		    "credit or credit2" : strerror(-rc));
	return 0;
}

static int
phase_create(struct run *r)
{
	const struct vmb_guest *g = r->b->guest;
	struct vmb_dom_config dc;
	int rc;

	memcpy(r->res.uuid, g->uuid, sizeof(r->res.uuid));
	if (vmb_uuid_is_null(r->res.uuid))
		vmb_uuid_new(r->res.uuid);
	memset(&dc, 0, sizeof(dc));
	snprintf(dc.name, sizeof(dc.name), "%s", g->name);
	memcpy(dc.uuid, r->res.uuid, sizeof(dc.uuid));
	dc.hvm = true;		/* a PVH guest is an HVM container */
	rc = vmb__step_paging(g, r->b->ctx->caps, &dc.hap, r->why,
	    sizeof(r->why));
	if (rc)
		return rc;
	dc.max_vcpus = g->maxvcpus ? g->maxvcpus : g->vcpus;
	dc.max_evtchn_port = g->max_event_channels;
	dc.max_grant_frames = g->max_grant_frames;
	dc.max_maptrack_frames = g->max_maptrack_frames;
	dc.max_pages = (g->maxmem_bytes > g->memory_bytes ?
	    g->maxmem_bytes : g->memory_bytes) >> VMB_PAGE_SHIFT;
	dc.target_pages = g->memory_bytes >> VMB_PAGE_SHIFT;
	if (g->type == VMB_GUEST_HVM) {
		dc.dm = true;
		dc.paging_mib = g->hvm.shadow_mib;
	}
	dc.nr_nodes = r->res.placement.nr_nodes;
	memcpy(dc.nodes, r->res.placement.nodes, sizeof(dc.nodes));
	rc = r->ops->domain_create(r->priv, &dc, &r->domid);
	if (rc && outcome_unknown(rc))
		rc = adopt_lost_domain(r, rc);
	if (rc)
		return fail(r, rc, "the hypervisor refused to create the "
		    "domain: %s", strerror(-rc));
	r->res.domid = r->domid;
	/* Undone with the domain: undo_create destroys it. */
	rc = vmb__step_platform(r->b->ctx, r->domid, g, &r->layout,
	    &r->res.placement, r->host, r->why, sizeof(r->why));
	if (rc == 0)
		rc = step_sched(r, g);
	/* The domain exists: its devices need nothing more (a branch). */
	if (rc == 0 && (g->nr_disks || g->nr_nics) &&
	    r->ops->device_add)
		branch_start(r, &r->devices, LINE_DEVICES,
		    VMB_ALONGSIDE_DEVICES, devices_setup);
	return rc;
}

/*
 * Destroy the half-built domain and check it is gone.  A transport
 * error is tried once more (on a new connection); any other failure is
 * the caller's to retry later (undo_rc).
 */
static void
undo_create(struct run *r)
{
	struct vmb_domain d;
	int rc;

	if (r->domid == VMB_DOMID_INVALID)
		return;
	rc = r->ops->domain_destroy(r->priv, r->domid);
	if (rc && outcome_unknown(rc))
		rc = r->ops->domain_destroy(r->priv, r->domid);
	if (rc == -ESRCH)
		rc = 0;
	if (!rc) {
		int q = vmb_domain_get(r->b->ctx, r->domid, &d);

		/* Gone, or dying (its pages are on their way back). */
		if (q == 0 && d.state != VMB_DOM_DYING)
			rc = -EBUSY;
	}
	r->undo_rc = rc;
	vmb__log(r->b->ctx, "build %s: undo domain %u: rc %d",
	    r->b->guest->name, r->domid, rc);
}

/* ------------------------------------------------------------------ */
/* claim                                                               */

/* Why the claim of `pages` was refused, with what the host has free. */
static int
claim_why(struct run *r, uint64_t pages, int rc)
{
	struct vmb_host *h = NULL;
	uint64_t want = pages << VMB_PAGE_SHIFT, avail;

	if (vmb_host_info(r->b->ctx, &h) != 0)
		return fail(r, rc, "claim of %llu MiB refused: %s",
		    (unsigned long long)(want >> 20), strerror(-rc));
	avail = h->free_bytes > h->claimed_bytes ?
	    h->free_bytes - h->claimed_bytes : 0;
	fail(r, rc, "claim of %llu MiB refused: only %llu MiB free "
	    "(%llu MiB claimed by other domains): %s",
	    (unsigned long long)(want >> 20), (unsigned long long)(avail >> 20),
	    (unsigned long long)(h->claimed_bytes >> 20), strerror(-rc));
	vmb_host_free(h);
	return rc;
}

static int
phase_claim(struct run *r)
{
	uint64_t pages = r->b->guest->memory_bytes >> VMB_PAGE_SHIFT;
	int rc;

	if (!r->ops->claim)
		return 0;
	rc = r->ops->claim(r->priv, r->domid, pages);
	if (rc == -EOPNOTSUPP)
		return 0;	/* placement checked free memory instead */
	if (rc)
		return claim_why(r, pages, rc);
	r->claimed = true;
	return 0;
}

/* Give back what is left of the claim (all of it, before a populate). */
static void
undo_claim(struct run *r)
{
	if (r->claimed)
		(void)r->ops->claim(r->priv, r->domid, 0);
	r->claimed = false;
}

/* ------------------------------------------------------------------ */
/* populate                                                            */

/*
 * The populate's progress, from the workers: while the placed nodes are
 * short of clean memory, say that pages are scrubbed inline and how much
 * is still dirty where (sampled again at most once a second).
 */
static void
populate_progress(void *user, const struct vmb_progress *p)
{
	struct run *r = user;
	struct vmb_progress q = *p;
	uint64_t now;

	if (r->scrub_inline) {
		pthread_mutex_lock(&r->scrub_lock);
		now = vmb__now_ns();
		if (now - r->scrub_at_ns >= 1000000000ull &&
		    vmb_scrub_progress(r->b->ctx, &r->scrub) == 0)
			r->scrub_at_ns = now;
		/* Pages taken dirty are zeroed whatever is left free. */
		(void)placed_dirty(&r->res.placement, &r->scrub, &q);
		q.scrub = VMB_PROGRESS_SCRUB_INLINE;
		pthread_mutex_unlock(&r->scrub_lock);
	}
	r->b->progress(r->b->user, &q);
}

static int
phase_populate(struct run *r)
{
	struct vmb_build *b = r->b;
	struct vmb__populate_job job;
	struct vmb_cpuwait now;
	struct vmb_domain dom;
	uint64_t done = 0;
	int rc;

	/* The restore populates (libxenguest's): claimed, no more here. */
	if (b->opts.restore && b->opts.restore_populates)
		return 0;
	memset(&job, 0, sizeof(job));
	job.ranges = r->layout.ranges;
	job.nr_ranges = r->layout.nr_ranges;
	job.ops = r->ops;
	job.priv = r->priv;
	job.domid = r->domid;
	job.host = r->host;
	job.host_topology = b->ctx->caps & VMB_CAP_HOST_TOPOLOGY;
	job.strategy = b->opts.strategy;
	job.pool = b->ctx->pool;
	job.batch_bytes = b->opts.batch_bytes_max;
	job.inflight = b->opts.batches_in_flight;
	job.cancel = &b->cancel;
	job.progress = b->progress ? populate_progress : NULL;
	job.user = r;
	job.ctx = b->ctx;
	r->scrub_inline = r->have_scrub && short_of_clean(&r->res.placement,
	    b->guest, r->host, &r->scrub);
	/* The placed nodes' clean memory covers the guest: see populate.c. */
	job.clean = r->have_scrub && !r->scrub_inline;
	job.cpu_wait = -1;
	if (r->wait0.cpus && vmb_cpuwait_sample(&now) == 0 &&
	    vmb_cpuwait_share(&r->wait0, &now, &r->res.cpu_wait) == 0) {
		r->res.cpu_wait_known = true;
		job.cpu_wait = r->res.cpu_wait;
	}
	if (job.progress)
		populate_progress(r, &(struct vmb_progress){
		    .phase = VMB_PHASE_POPULATE, .domid = r->domid,
		    .total = b->guest->memory_bytes });
	rc = vmb__populate(&job);
	r->res.populate = job.stats;
	r->res.workers = job.workers;
	r->res.workers_pinned = job.workers_pinned;
	r->res.workers_serial = job.serial;
	r->res.worker_profile = job.profile;
	for (uint32_t n = 0; n < VMB_MAX_NODES; n++)
		done += job.stats.node_bytes[n];
	if (rc == -ECANCELED)
		return rc;
	if (rc)
		return fail(r, rc, "populating %llu MiB stopped after %llu "
		    "MiB: %s", (unsigned long long)(b->guest->memory_bytes >>
		    20), (unsigned long long)(done >> 20), strerror(-rc));
	/* Trust, but check: the hypervisor must hold exactly what we asked. */
	rc = vmb_domain_get(b->ctx, r->domid, &dom);
	/*
	 * Whatever the populate did not consume goes back; the domain, read
	 * back, says whether anything is left of its claim: a populate of
	 * the whole guest consumed it all, and a release of nothing would
	 * cost a call.
	 */
	if (rc || dom.outstanding_bytes)
		undo_claim(r);
	r->claimed = false;
	if (rc)
		return fail(r, rc, "cannot read the domain back: %s",
		    strerror(-rc));
	/* An HVM guest's VGA hole is not populated (layout.c). */
	if (dom.memory_bytes != r->layout.populated)
		return fail(r, -EIO, "the domain holds %llu bytes, not the "
		    "%llu populated", (unsigned long long)dom.memory_bytes,
		    (unsigned long long)r->layout.populated);
	r->res.domain = dom;
	r->res.have_domain = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* load and boot                                                       */

/*
 * After a restore that populated the domain itself: what is left of the
 * claim goes back, and the domain read back is the result's.
 */
static int
restored_domain(struct run *r)
{
	int rc;

	undo_claim(r);
	rc = vmb_domain_get(r->b->ctx, r->domid, &r->res.domain);
	if (rc)
		return fail(r, rc, "cannot read the restored domain back: %s",
		    strerror(-rc));
	r->res.have_domain = true;
	return 0;
}

static int
phase_load(struct run *r)
{
	struct vmb_firmware fw;
	struct vmb__load_env env = { .load_limit = r->layout.lowmem_end,
	    .ram_bytes = vmb__layout_ram(&r->layout), .memmap = r->memmap };
	int rc;

	/* A bad image is the images branch's failure, and the build's. */
	rc = branch_join(r, &r->images, &r->res.images_wait_ns);
	if (rc)
		return rc;
	r->res.kernel_cached = vmb__image_cached(r->img);
	r->res.phase_span[VMB_PHASE_LOAD].start_ns = since(r);
	/* A restore: the saved memory, not a kernel (no vCPU set up). */
	if (r->b->opts.restore) {
		rc = r->b->opts.restore(r->b->opts.restore_user, r->domid,
		    r->why, sizeof(r->why));
		return rc == 0 && r->b->opts.restore_populates ?
		    restored_domain(r) : rc;
	}

	/* Special pages and ACPI tables first: the memory map names them. */
	rc = vmb__step_firmware(r->b->ctx, r->domid, r->b->guest, &r->layout,
	    &fw, r->memmap, &env.nr_memmap, r->why, sizeof(r->why));
	if (rc)
		return rc;
	env.rsdp = fw.rsdp;
	rc = vmb__image_load_env(r->ops, r->priv, r->domid, r->img, &env,
	    &r->boot, r->why, sizeof(r->why));
	if (rc == -EOPNOTSUPP) {
		r->res.image_loaded = false;	/* phantom memory: no map */
		return 0;
	}
	/* The image does not fit the guest's memory: the config's fault. */
	r->bad_image = rc == -ENOSPC;
	if (rc)
		return rc;
	r->res.image_loaded = true;
	r->res.entry = r->boot.entry;
	r->res.start_info = r->boot.start_info;
	return 0;
}

/*
 * May the guest run before its devices' hotplug scripts end?  A PV
 * frontend finds its device in the store and waits for the backend to
 * come to InitWait and Connected (Linux's xenbus waits up to 300 s for
 * the disks and vifs it found before it starts init), so what a PVH
 * guest needs at its first instruction is the entries only, and its
 * kernel's early boot and the scripts (seconds each under xl's order,
 * one after the other) overlap.  Not for an HVM guest (its device model
 * starts after the disks, as libxl's), nor a restore (the guest resumes
 * with its frontends connecting at once), nor when the caller asked
 * for xl's order, nor when the devices have no thread of their own.
 */
static bool
hotplug_overlaps(const struct run *r)
{
	const struct vmb_build_opts *o = &r->b->opts;

	return !o->unpause_after_hotplug && !o->start_paused && !o->restore &&
	    r->b->guest->type != VMB_GUEST_HVM && r->devices.threaded;
}

/*
 * Wait until the devices' entries are written, or something failed or
 * cancelled the build (seen within 50 ms: a cancel does not signal).
 */
static void
wait_visible(struct run *r)
{
	pthread_mutex_lock(&r->gate_lock);
	while (!r->devs_visible && !atomic_load(&r->b->cancel)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&r->gate_cond, &r->gate_lock,
		    &ts);
	}
	pthread_mutex_unlock(&r->gate_lock);
}

/*
 * The devices, set up beside the main line since create.  Boot waits
 * here for them all, or, when the guest may run before its hotplug
 * scripts end (hotplug_overlaps), for their entries only; the build is
 * then done when the devices branch is (run_phases).  Its span is
 * theirs, not this wait.
 */
static int
phase_devices(struct run *r)
{
	const struct vmb_build_opts *o = &r->b->opts;
	struct vmb_dm_info dm;
	int rc;

	if (hotplug_overlaps(r)) {
		uint64_t t = since(r);

		wait_visible(r);
		r->res.devices_wait_ns = since(r) - t;
		r->devices_late = true;
		return 0;
	}
	rc = branch_join(r, &r->devices, &r->res.devices_wait_ns);
	if (rc || r->b->guest->type != VMB_GUEST_HVM || !o->dm_start)
		return rc;
	/* Its entries in the store first, as libxl writes them (undo: the
	 * domain's destroy removes them with the domain's). */
	if (r->ops->dm_store != NULL &&
	    (rc = r->ops->dm_store(r->priv, r->domid, r->b->guest)) < 0) {
		vmb__why(r->why, sizeof(r->why), "cannot write the device "
		    "model's xenstore entries: %s", strerror(-rc));
		return rc;
	}
	/* The device model, as libxl spawns it after the disks (dm.c). */
	memset(&dm, 0, sizeof(dm));
	rc = o->dm_start(o->dm_user, r->domid, &dm, r->why, sizeof(r->why));
	r->dm_up = rc == 0;
	if (rc == 0 && r->ops->dm_running != NULL &&
	    (rc = r->ops->dm_running(r->priv, r->domid, &dm)) < 0)
		vmb__why(r->why, sizeof(r->why), "cannot write the device "
		    "model's pid and pty to xenstore: %s", strerror(-rc));
	return rc;
}

static void
undo_devices(struct run *r)
{
	if (r->dm_up && r->b->opts.dm_stop)
		r->b->opts.dm_stop(r->b->opts.dm_user, r->domid);
	r->dm_up = false;
	vmb__devices_undo(r->b->ctx, r->domid, r->b->guest, r->disks_up,
	    r->nics_up);
	r->disks_up = r->nics_up = 0;
}

static int
phase_boot(struct run *r)
{
	int rc;

	if (r->res.image_loaded && r->ops->boot) {
		r->boot.vcpus = r->b->guest->vcpus;
		r->boot.guest = r->b->guest;
		rc = r->ops->boot(r->priv, r->domid, &r->boot);
		if (rc)
			return fail(r, rc, "cannot set up the vCPUs: %s",
			    strerror(-rc));
	}
	/* A device model that died since it started fails the build. */
	if (r->dm_up && r->b->opts.dm_check && (rc = r->b->opts.dm_check(
	    r->b->opts.dm_user, r->domid, r->why, sizeof(r->why))) != 0)
		return rc;
	if (!r->b->opts.start_paused) {
		rc = r->ops->domain_unpause(r->priv, r->domid);
		if (rc)
			return fail(r, rc, "cannot unpause the domain: %s",
			    strerror(-rc));
		r->res.domain.state = VMB_DOM_RUNNING;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The pipeline.                                                       */

/* Indexed by enum vmb_build_phase, in the order they run. */
static const struct phase {
	const char *name;
	int	(*run)(struct run *r);
	void	(*undo)(struct run *r);		/* NULL: nothing to undo */
} phases[] = {
	[VMB_PHASE_PLACE]	= { "place",	phase_place,	NULL },
	[VMB_PHASE_CREATE]	= { "create",	phase_create,	undo_create },
	[VMB_PHASE_CLAIM]	= { "claim",	phase_claim,	undo_claim },
	[VMB_PHASE_POPULATE]	= { "populate",	phase_populate,	NULL },
	[VMB_PHASE_LOAD]	= { "load",	phase_load,	NULL },
	[VMB_PHASE_DEVICES]	= { "devices",	phase_devices,	undo_devices },
	[VMB_PHASE_BOOT]	= { "boot",	phase_boot,	NULL },
};
#define NR_PHASES	(sizeof(phases) / sizeof(phases[0]))

_Static_assert(NR_PHASES == VMB_PHASE_DONE,
    "every phase before VMB_PHASE_DONE has an entry in phases[]");

const char *
vmb_build_phase_name(enum vmb_build_phase phase)
{
	if ((unsigned)phase < NR_PHASES && phases[phase].name)
		return phases[phase].name;
	if (phase == VMB_PHASE_DONE)
		return "done";
	if (phase == VMB_PHASE_UNDO)
		return "undo";
	return "unknown";
}

int
vmb_build_new(struct vmb_ctx *ctx, const struct vmb_guest *guest,
    const struct vmb_build_opts *opts, vmb_progress_fn *progress, void *user,
    struct vmb_build **ret_build)
{
	struct vmb_build *b;
	int rc;

	if (!ctx || !guest || !ret_build || guest->memory_bytes == 0 ||
	    guest->memory_bytes % VMB_PAGE_SIZE || guest->vcpus == 0 ||
	    (!guest->kernel && guest->type != VMB_GUEST_HVM))
		return -EINVAL;
	if (opts && opts->strategy != VMB_POPULATE_ENGINE &&
	    opts->strategy != VMB_POPULATE_LIBXL)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	rc = vmb_guest_copy(guest, &b->guest);
	if (rc) {
		free(b);
		return rc;
	}
	b->ctx = ctx;
	if (opts)
		b->opts = *opts;
	b->progress = progress;
	b->user = user;
	atomic_init(&b->cancel, false);
	atomic_init(&b->running, false);
	b->kernel_fd = b->ramdisk_fd = -1;
	b->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->cancel_fd < 0) {
		rc = -errno;
		vmb_build_free(b);
		return rc;
	}
	*ret_build = b;
	return 0;
}

int
vmb_build_set_images(struct vmb_build *b, int kernel_fd, int ramdisk_fd)
{
	int k, rd = -1;

	if (!b || kernel_fd < 0 || atomic_load(&b->running))
		return -EINVAL;
	k = fcntl(kernel_fd, F_DUPFD_CLOEXEC, 3);
	if (k < 0)
		return -errno;
	if (ramdisk_fd >= 0 && (rd = fcntl(ramdisk_fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		int rc = -errno;

		close(k);
		return rc;
	}
	if (b->kernel_fd >= 0)
		close(b->kernel_fd);
	if (b->ramdisk_fd >= 0)
		close(b->ramdisk_fd);
	b->kernel_fd = k;
	b->ramdisk_fd = rd;
	return 0;
}

void
vmb_build_cancel(struct vmb_build *b)
{
	uint64_t one = 1;

	if (!b)
		return;
	atomic_store(&b->cancel, true);
	if (b->cancel_fd >= 0)
		(void)!write(b->cancel_fd, &one, sizeof(one));
}

bool
vmb_build_cancelled(const struct vmb_build *b)
{
	return b && atomic_load(&b->cancel);
}

void
vmb_build_free(struct vmb_build *b)
{
	if (!b)
		return;
	vmb_guest_free(b->guest);
	if (b->cancel_fd >= 0)
		close(b->cancel_fd);
	if (b->kernel_fd >= 0)
		close(b->kernel_fd);
	if (b->ramdisk_fd >= 0)
		close(b->ramdisk_fd);
	free(b);
}

/* wait_visible's clock: the monotonic one, not the settable wall clock. */
static void
gate_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

/*
 * Enter phases[] in order, then VMB_PHASE_DONE: each entry is timed,
 * reported, and preceded by a look at the cancel flag.  *ret_phase is
 * the last phase entered: on failure, the one that failed.  A phase's
 * span is from its entry to its end, but load's starts when the images
 * are there and devices' is their branch's.
 */
static int
run_phases(struct run *r, enum vmb_build_phase *ret_phase)
{
	struct vmb_build *b = r->b;
	int rc = 0;

	for (unsigned i = 0; ; i++) {
		enum vmb_build_phase id = i < NR_PHASES ?
		    (enum vmb_build_phase)i : VMB_PHASE_DONE;

		/*
		 * A guest that runs before its hotplug scripts end is built
		 * when they have ended: a device that fails then undoes
		 * the build, the running domain with it.
		 */
		if (id == VMB_PHASE_DONE && r->devices_late) {
			uint64_t w = 0;

			r->devices_late = false;
			rc = branch_join(r, &r->devices, &w);
			r->res.devices_wait_ns += w;
			if (rc)
				return rc;
		}
		*ret_phase = id;
		report(r, id);
		if (atomic_load(&b->cancel))
			return fail(r, -ECANCELED, "cancelled");
		if (id == VMB_PHASE_DONE)
			break;
		r->res.phase_span[i].start_ns = since(r);
		rc = phases[i].run(r);
		r->res.phase_span[i].end_ns = since(r);
		if (rc == -ECANCELED)
			return fail(r, rc, "cancelled");
		if (rc)
			return rc;
	}
	r->res.total_ns = since(r);
	return 0;
}

/* The spans of a build that succeeded, and their lengths. */
static void
spans_done(struct run *r)
{
	struct vmb_build_result *res = &r->res;

	res->images_span = r->images.span;
	res->phase_span[VMB_PHASE_DEVICES] = r->devices.span;
	for (unsigned i = 0; i < NR_PHASES; i++)
		res->phase_ns[i] = res->phase_span[i].end_ns -
		    res->phase_span[i].start_ns;
}

/*
 * Where and why the build failed: the first line to fail (the main
 * line's phase `entered`, the images as load, the devices as devices),
 * or, when none did, the cancel.  The error goes to r->why.
 */
static enum vmb_build_phase
failure(struct run *r, enum vmb_build_phase entered, int *rc)
{
	switch (atomic_load(&r->failed_by)) {
	case LINE_IMAGES:
		*rc = r->images.rc;
		r->bad_image = r->images_bad;
		snprintf(r->why, sizeof(r->why), "%s", r->images.why);
		return VMB_PHASE_LOAD;
	case LINE_DEVICES:
		*rc = r->devices.rc;
		r->bad_image = false;
		snprintf(r->why, sizeof(r->why), "%s", r->devices.why);
		return VMB_PHASE_DEVICES;
	default:
		if (!r->why[0])
			snprintf(r->why, sizeof(r->why), "%s", strerror(-*rc));
		return entered;
	}
}

int
vmb_build_run(struct vmb_build *b, struct vmb_build_result *ret_result)
{
	enum vmb_build_phase entered = VMB_PHASE_PLACE, phase;
	struct run r;
	int rc;

	if (!b || !ret_result)
		return -EINVAL;
	if (atomic_exchange(&b->running, true))
		return -EBUSY;	/* a build runs once */
	memset(&r, 0, sizeof(r));
	r.b = b;
	r.ops = b->ctx->ops;
	r.priv = b->ctx->priv;
	r.domid = VMB_DOMID_INVALID;
	r.rdomid = VMB_DOMID_INVALID;
	r.res.domid = VMB_DOMID_INVALID;
	r.t0 = vmb__now_ns();
	if (b->ctx->caps & VMB_CAP_CALLER_CPU)
		(void)vmb_cpuwait_sample(&r.wait0);
	atomic_init(&r.failed_by, LINE_NONE);
	pthread_mutex_init(&r.scrub_lock, NULL);
	pthread_mutex_init(&r.report_lock, NULL);
	pthread_mutex_init(&r.gate_lock, NULL);
	gate_cond_init(&r.gate_cond);
	/*
	 * A caller that reads the result after a failure must not find
	 * domid 0 (a zeroed result names the control domain): say "none".
	 */
	*ret_result = r.res;
	vmb__set_cancel_fd(b->cancel_fd);
	rc = run_phases(&r, &entered);
	if (rc)
		line_failed(&r, LINE_MAIN, rc);
	/* Nothing is undone, nor the run's state freed, under a branch. */
	(void)branch_join(&r, &r.images, NULL);
	(void)branch_join(&r, &r.devices, NULL);
	/* The undo must not be interrupted by the cancel that caused it. */
	vmb__set_cancel_fd(-1);
	if (rc == 0) {
		r.res.failed_phase = VMB_PHASE_DONE;
		spans_done(&r);
		vmb__log(b->ctx, "build %s: domain %u, %llu bytes in %llu ns",
		    b->guest->name, r.domid,
		    (unsigned long long)b->guest->memory_bytes,
		    (unsigned long long)r.res.total_ns);
		*ret_result = r.res;
		goto out;
	}
	/*
	 * Where and why, from the step that failed: the caller must not
	 * guess it from progress reports (the undo below reports its own).
	 */
	phase = failure(&r, entered, &rc);
	vmb__log(b->ctx, "build %s: failed in phase %s: %s", b->guest->name,
	    vmb_build_phase_name(phase), r.why);
	/* The one undo path: every phase's, last first (devices first). */
	if (r.domid != VMB_DOMID_INVALID)
		report(&r, VMB_PHASE_UNDO);
	for (unsigned i = NR_PHASES; i-- > 0; )
		if (phases[i].undo)
			phases[i].undo(&r);
	memset(&r.res, 0, sizeof(r.res));
	r.res.domid = VMB_DOMID_INVALID;
	r.res.failed_phase = phase;
	snprintf(r.res.error, sizeof(r.res.error), "%s", r.why);
	r.res.bad_image = r.bad_image;
	r.res.undo_rc = r.undo_rc;
	r.res.leftover_domid = r.undo_rc ? r.domid : VMB_DOMID_INVALID;
	*ret_result = r.res;
out:
	pthread_mutex_destroy(&r.report_lock);
	pthread_mutex_destroy(&r.scrub_lock);
	pthread_mutex_destroy(&r.gate_lock);
	pthread_cond_destroy(&r.gate_cond);
	free(r.doms);
	vmb_host_free(r.host);
	vmb__image_free(r.img);
	return rc;
}
