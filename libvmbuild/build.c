/*
 * build.c - building a domain, phase by phase, and undoing it on failure.
 *
 *   place     read the kernel (a bad image fails before anything exists),
 *             then choose nodes from host, scrub and domain state, and
 *             lay the guest out (layout.c)
 *   create    the domain, paused, with the guest's UUID as its handle, so
 *             a restarted daemon can tell its domains from others, in the
 *             paging mode the host allows; then its platform (vNUMA,
 *             affinity, CPUID: platform.c)
 *   claim     reserve the memory: if it is not there, fail now, not after
 *             populating most of it
 *   populate  the engine or the libxl pattern (populate.c)
 *   load      special pages and ACPI tables (platform.c), kernel,
 *             ramdisk, command line, start info (loader.c)
 *   boot      the backend's last step, then unpause unless start_paused
 *
 * Any failure, or a cancel seen between or inside phases, destroys the
 * domain; the hypervisor then owns freeing (and scrubbing) its pages.
 * The undo checks that the domain is really gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmb_internal.h"

struct vmb_build {
	struct vmb_ctx *ctx;
	struct vmb_guest *guest;
	struct vmb_build_opts opts;
	vmb_progress_fn *progress;
	void	*user;
	atomic_bool cancel;
	atomic_bool running;
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

const char *
vmb_build_phase_name(enum vmb_build_phase phase)
{
	static const char *const names[] = {
		[VMB_PHASE_PLACE] = "place",
		[VMB_PHASE_CREATE] = "create",
		[VMB_PHASE_CLAIM] = "claim",
		[VMB_PHASE_POPULATE] = "populate",
		[VMB_PHASE_LOAD] = "load",
		[VMB_PHASE_BOOT] = "boot",
		[VMB_PHASE_DONE] = "done",
		[VMB_PHASE_UNDO] = "undo",
	};

	if ((unsigned)phase >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[phase];
}

int
vmb_build_new(struct vmb_ctx *ctx, const struct vmb_guest *guest,
    const struct vmb_build_opts *opts, vmb_progress_fn *progress, void *user,
    struct vmb_build **ret_build)
{
	struct vmb_build *b;
	int rc;

	if (!ctx || !guest || !ret_build || guest->memory_bytes == 0 ||
	    guest->memory_bytes % VMB_PAGE_SIZE || !guest->kernel ||
	    guest->vcpus == 0)
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
	*ret_build = b;
	return 0;
}

void
vmb_build_cancel(struct vmb_build *b)
{
	if (b)
		atomic_store(&b->cancel, true);
}

void
vmb_build_free(struct vmb_build *b)
{
	if (!b)
		return;
	vmb_guest_free(b->guest);
	free(b);
}

static void
report(struct vmb_build *b, enum vmb_build_phase phase, uint32_t domid,
    uint64_t done)
{
	struct vmb_progress p = { .phase = phase, .domid = domid, .done = done,
	    .total = b->guest->memory_bytes };

	if (b->progress)
		b->progress(b->user, &p);
}

/* Destroy the half-built domain and check it is gone. */
static int
undo(struct vmb_build *b, uint32_t domid)
{
	const struct vmb_backend_ops *ops = b->ctx->ops;
	struct vmb_domain d;
	int rc;

	rc = ops->domain_destroy(b->ctx->priv, domid);
	if (rc && rc != -ESRCH) {
		/* A transient transport error: one more try on a new connection. */
		rc = ops->domain_destroy(b->ctx->priv, domid);
	}
	if (rc == -ESRCH)
		rc = 0;
	if (!rc) {
		int r = vmb_domain_get(b->ctx, domid, &d);

		/* Gone, or dying (its pages are on their way back). */
		if (r == 0 && d.state != VMB_DOM_DYING)
			rc = -EBUSY;
	}
	vmb__log(b->ctx, "build %s: undo domain %u: rc %d", b->guest->name,
	    domid, rc);
	return rc;
}

/* Why the claim of `pages` was refused, with what the host has free. */
static void
claim_why(struct vmb_build *b, uint64_t pages, int rc, char *why, size_t len)
{
	struct vmb_host *h = NULL;
	uint64_t want = pages << VMB_PAGE_SHIFT, avail;

	if (vmb_host_info(b->ctx, &h) != 0) {
		snprintf(why, len, "claim of %llu MiB refused: %s",
		    (unsigned long long)(want >> 20), strerror(-rc));
		return;
	}
	avail = h->free_bytes > h->claimed_bytes ?
	    h->free_bytes - h->claimed_bytes : 0;
	snprintf(why, len, "claim of %llu MiB refused: only %llu MiB free "
	    "(%llu MiB claimed by other domains): %s",
	    (unsigned long long)(want >> 20), (unsigned long long)(avail >> 20),
	    (unsigned long long)(h->claimed_bytes >> 20), strerror(-rc));
	vmb_host_free(h);
}

/* Would the populate have to scrub pages inline on some placed node? */
static bool
short_of_clean(const struct vmb_placement *pl, const struct vmb_host *host,
    const struct vmb_scrub *scrub)
{
	for (uint32_t i = 0; i < pl->nr_nodes; i++) {
		uint32_t n = pl->nodes[i];
		uint64_t free = n < host->nr_nodes ? host->nodes[n].free_bytes : 0;
		uint64_t dirty = 0;

		for (uint32_t k = 0; k < scrub->nr_nodes; k++)
			if (scrub->nodes[k].node == n)
				dirty = scrub->nodes[k].dirty_bytes;
		if (dirty && pl->node_bytes[i] + dirty > free)
			return true;
	}
	return false;
}

/*
 * Wait, up to opts.scrub_wait_ms, for the background scrubber to make
 * enough memory clean, placing again each time it has made progress.
 * Stops early when the scrubber makes no progress for a while (nothing
 * more will turn clean), and on cancel.  On return res->placement is the
 * latest placement; waiting itself never fails the build.
 */
static int
wait_for_scrubber(struct vmb_build *b, struct vmb_host **host,
    struct vmb_scrub *scrub, const struct vmb_domain *doms, size_t nr_doms,
    struct vmb_build_result *res)
{
	/*
	 * Scrubbers report per chunk (128 MiB), so a loaded host may show
	 * no change for seconds: only 10 s without any sign of work is a
	 * stall.
	 */
	const uint64_t step_ns = 50 * 1000000ull, stall_ns = 10000000000ull;
	uint64_t t0 = vmb__now_ns(), deadline, last_progress = t0;
	uint64_t last_dirty = UINT64_MAX, last_scrubbed = 0;

	deadline = t0 + (uint64_t)b->opts.scrub_wait_ms * 1000000ull;
	while (short_of_clean(&res->placement, *host, scrub)) {
		struct timespec ts = { 0, (long)step_ns };
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
		if (now >= deadline || now - last_progress > stall_ns)
			break;
		nanosleep(&ts, NULL);
		if (vmb_scrub_progress(b->ctx, scrub) != 0 ||
		    vmb_host_info(b->ctx, &h) != 0)
			break;
		vmb_host_free(*host);
		*host = h;
		/* Memory may have gone to others meanwhile: keep the old one. */
		if (vmb__place(*host, scrub, doms, nr_doms, b->guest, &pl) == 0)
			res->placement = pl;
	}
	res->scrub_wait_ns = vmb__now_ns() - t0;
	if (res->scrub_wait_ns >= step_ns) {
		size_t len = strlen(res->placement.reason);

		snprintf(res->placement.reason + len,
		    sizeof(res->placement.reason) - len, "; waited %llu ms for "
		    "background scrubbing", (unsigned long long)
		    (res->scrub_wait_ns / 1000000));
	}
	return 0;
}

int
vmb_build_run(struct vmb_build *b, struct vmb_build_result *ret_result)
{
	const struct vmb_backend_ops *ops;
	struct vmb_build_result res;
	struct vmb__populate_job job;
	struct vmb_layout layout;
	struct vmb_firmware fw;
	struct vmb__load_env env;
	struct vmb_memmap_entry memmap[VMB_MEMMAP_MAX];
	struct vmb__image *img = NULL;
	struct vmb_host *host = NULL;
	struct vmb_domain *doms = NULL, dom;
	struct vmb_dom_config dc;
	struct vmb_scrub scrub;
	struct vmb_boot boot;
	enum vmb_build_phase phase = VMB_PHASE_PLACE;
	int fail_phase = -1;	/* when the failing step is not `phase`'s */
	char why[sizeof(res.error)] = "";
	uint32_t domid = VMB_DOMID_INVALID;
	uint64_t t0, tp, pages;
	size_t nr_doms = 0;
	bool claimed = false, have_scrub;
	int rc;

	if (!b || !ret_result)
		return -EINVAL;
	if (atomic_exchange(&b->running, true))
		return -EBUSY;	/* a build runs once */
	ops = b->ctx->ops;
	memset(&res, 0, sizeof(res));
	res.domid = VMB_DOMID_INVALID;
	/*
	 * A caller that reads the result after a failure must not find
	 * domid 0 (a zeroed result names the control domain): say "none".
	 */
	*ret_result = res;
	pages = b->guest->memory_bytes >> VMB_PAGE_SHIFT;
	t0 = tp = vmb__now_ns();
#define PHASE(p) do { \
	uint64_t now_ = vmb__now_ns(); \
	res.phase_ns[phase] += now_ - tp; tp = now_; phase = (p); \
	report(b, phase, domid, phase > VMB_PHASE_POPULATE ? \
	    b->guest->memory_bytes : 0); \
	if (atomic_load(&b->cancel)) { rc = -ECANCELED; goto fail; } \
	} while (0)

	report(b, phase, domid, 0);
	/*
	 * Reading the image is part of loading it, done first so that a
	 * bad kernel fails before anything exists: it fails as "load".
	 */
	rc = vmb__image_open_why(b->guest, &img, why, sizeof(why));
	if (rc) {
		fail_phase = VMB_PHASE_LOAD;
		goto fail;
	}
	rc = vmb_host_info(b->ctx, &host);
	if (!rc)
		rc = vmb_domain_list(b->ctx, &doms, &nr_doms);
	if (rc) {
		snprintf(why, sizeof(why), "cannot read the host's state: %s",
		    strerror(-rc));
		goto fail;
	}
	have_scrub = vmb_scrub_progress(b->ctx, &scrub) == 0;
	rc = vmb__place_why(host, have_scrub ? &scrub : NULL, doms, nr_doms,
	    b->guest, &res.placement, why, sizeof(why));
	if (rc)
		goto fail;
	if (b->opts.scrub_wait_ms && have_scrub &&
	    (scrub.have & VMB_SCRUB_HAVE_DIRTY)) {
		rc = wait_for_scrubber(b, &host, &scrub, doms, nr_doms, &res);
		if (rc)
			goto fail;
	}
	rc = vmb__layout_plan(b->guest, &res.placement, &layout);
	if (rc) {
		snprintf(why, sizeof(why), "the vnuma sizes do not add up to "
		    "the memory placed");
		goto fail;
	}

	PHASE(VMB_PHASE_CREATE);
	memcpy(res.uuid, b->guest->uuid, sizeof(res.uuid));
	if (vmb__uuid_is_zero(res.uuid))
		vmb__uuid_generate(res.uuid);
	memset(&dc, 0, sizeof(dc));
	snprintf(dc.name, sizeof(dc.name), "%s", b->guest->name);
	memcpy(dc.uuid, res.uuid, sizeof(dc.uuid));
	dc.hvm = true;		/* a PVH guest is an HVM container */
	rc = vmb__step_paging(b->guest, b->ctx->caps, &dc.hap, why,
	    sizeof(why));
	if (rc)
		goto fail;
	dc.max_vcpus = b->guest->maxvcpus ? b->guest->maxvcpus :
	    b->guest->vcpus;
	dc.max_pages = (b->guest->maxmem_bytes > b->guest->memory_bytes ?
	    b->guest->maxmem_bytes : b->guest->memory_bytes) >> VMB_PAGE_SHIFT;
	dc.target_pages = pages;
	dc.nr_nodes = res.placement.nr_nodes;
	memcpy(dc.nodes, res.placement.nodes, sizeof(dc.nodes));
	rc = ops->domain_create(b->ctx->priv, &dc, &domid);
	if (rc) {
		snprintf(why, sizeof(why), "the hypervisor refused to create "
		    "the domain: %s", strerror(-rc));
		goto fail;
	}
	res.domid = domid;
	rc = vmb__step_platform(b->ctx, domid, b->guest, &layout,
	    &res.placement, host, why, sizeof(why));
	if (rc)
		goto fail;

	PHASE(VMB_PHASE_CLAIM);
	if (ops->claim) {
		rc = ops->claim(b->ctx->priv, domid, pages);
		if (rc == -EOPNOTSUPP)
			rc = 0;	/* placement checked free memory instead */
		else if (rc) {
			claim_why(b, pages, rc, why, sizeof(why));
			goto fail;
		} else
			claimed = true;
	}

	PHASE(VMB_PHASE_POPULATE);
	memset(&job, 0, sizeof(job));
	job.ranges = layout.ranges;
	job.nr_ranges = layout.nr_ranges;
	job.ops = ops;
	job.priv = b->ctx->priv;
	job.domid = domid;
	job.host = host;
	job.host_topology = b->ctx->caps & VMB_CAP_HOST_TOPOLOGY;
	job.strategy = b->opts.strategy;
	job.batch_bytes = b->opts.batch_bytes_max;
	job.inflight = b->opts.batches_in_flight;
	job.cancel = &b->cancel;
	job.progress = b->progress;
	job.user = b->user;
	job.ctx = b->ctx;
	rc = vmb__populate(&job);
	res.populate = job.stats;
	res.workers = job.workers;
	res.workers_pinned = job.workers_pinned;
	if (rc && rc != -ECANCELED) {
		uint64_t done = 0;

		for (uint32_t n = 0; n < VMB_MAX_NODES; n++)
			done += job.stats.node_bytes[n];
		snprintf(why, sizeof(why), "populating %llu MiB stopped after "
		    "%llu MiB: %s", (unsigned long long)(b->guest->memory_bytes
		    >> 20), (unsigned long long)(done >> 20), strerror(-rc));
	}
	if (rc)
		goto fail;
	if (claimed) {
		/* Whatever the populate did not consume goes back. */
		(void)ops->claim(b->ctx->priv, domid, 0);
		claimed = false;
	}
	/* Trust, but check: the hypervisor must hold exactly what we asked. */
	rc = vmb_domain_get(b->ctx, domid, &dom);
	if (rc) {
		snprintf(why, sizeof(why), "cannot read the domain back: %s",
		    strerror(-rc));
		goto fail;
	}
	if (dom.memory_bytes != b->guest->memory_bytes) {
		snprintf(why, sizeof(why), "the domain holds %llu bytes, not "
		    "the %llu populated", (unsigned long long)
		    dom.memory_bytes, (unsigned long long)
		    b->guest->memory_bytes);
		rc = -EIO;
		goto fail;
	}

	PHASE(VMB_PHASE_LOAD);
	memset(&env, 0, sizeof(env));
	rc = vmb__step_firmware(b->ctx, domid, b->guest, &layout, &fw, memmap,
	    &env.nr_memmap, why, sizeof(why));
	if (rc)
		goto fail;
	env.load_limit = layout.lowmem_end;
	env.ram_bytes = b->guest->memory_bytes;
	env.memmap = memmap;
	env.rsdp = fw.rsdp;
	rc = vmb__image_load_env(ops, b->ctx->priv, domid, img, &env, &boot,
	    why, sizeof(why));
	if (rc == -EOPNOTSUPP) {
		res.image_loaded = false;	/* phantom memory: nothing to map */
		rc = 0;
	} else if (rc) {
		goto fail;
	} else {
		res.image_loaded = true;
		res.entry = boot.entry;
		res.start_info = boot.start_info;
	}

	PHASE(VMB_PHASE_BOOT);
	if (res.image_loaded && ops->boot) {
		boot.vcpus = b->guest->vcpus;
		boot.guest = b->guest;
		rc = ops->boot(b->ctx->priv, domid, &boot);
		if (rc) {
			snprintf(why, sizeof(why), "cannot set up the vCPUs: "
			    "%s", strerror(-rc));
			goto fail;
		}
	}
	if (!b->opts.start_paused) {
		rc = ops->domain_unpause(b->ctx->priv, domid);
		if (rc) {
			snprintf(why, sizeof(why), "cannot unpause the "
			    "domain: %s", strerror(-rc));
			goto fail;
		}
	}

	PHASE(VMB_PHASE_DONE);
#undef PHASE
	res.total_ns = vmb__now_ns() - t0;
	res.failed_phase = VMB_PHASE_DONE;
	vmb__log(b->ctx, "build %s: domain %u, %llu bytes in %llu ns",
	    b->guest->name, domid, (unsigned long long)b->guest->memory_bytes,
	    (unsigned long long)res.total_ns);
	*ret_result = res;
	rc = 0;
	goto out;
fail:
	/*
	 * Where and why, from the step that failed: the caller must not
	 * guess it from progress reports (the undo below reports its own).
	 */
	if (fail_phase >= 0)
		phase = (enum vmb_build_phase)fail_phase;
	if (rc == -ECANCELED)
		snprintf(why, sizeof(why), "cancelled");
	else if (!why[0])
		snprintf(why, sizeof(why), "%s", strerror(-rc));
	memset(&res, 0, sizeof(res));
	res.domid = VMB_DOMID_INVALID;
	res.failed_phase = phase;
	snprintf(res.error, sizeof(res.error), "%s", why);
	*ret_result = res;
	vmb__log(b->ctx, "build %s: failed in phase %s: %s", b->guest->name,
	    vmb_build_phase_name(phase), why);
	if (domid != VMB_DOMID_INVALID) {
		report(b, VMB_PHASE_UNDO, domid, 0);
		if (claimed)
			(void)ops->claim(b->ctx->priv, domid, 0);
		(void)undo(b, domid);
	}
out:
	free(doms);
	vmb_host_free(host);
	vmb__image_free(img);
	return rc;
}
