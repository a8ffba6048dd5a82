/*
 * test_populate_plan.c - extent splitting, and both populate strategies
 * against a recording backend (no hypervisor): which extents, in how
 * many calls, on which nodes, and that cancel and failure stop them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmb_internal.h"

#define MIB	VMB_MIB
#define GIB	VMB_GIB

static void
test_split_orders(void **state)
{
	struct vmb_extent e[2048];
	uint64_t pages = (GIB + 6 * MIB + 12 * 1024) >> 12;
	size_t n;

	(void)state;
	n = vmb__split_extents(0, pages, 3, e, 2048);
	assert_int_equal(n, 1 + 3 + 3);
	assert_int_equal(e[0].order, 18);
	assert_int_equal(e[1].order, 9);
	assert_int_equal(e[1].gfn, 1u << 18);
	assert_int_equal(e[4].order, 0);
	assert_int_equal(e[6].node, 3);
	/* Unaligned start: 4 KiB up to a 2 MiB boundary, then 2 MiB. */
	n = vmb__split_extents(510, 514, 0, e, 2048);
	assert_int_equal(n, 3);
	assert_int_equal(e[0].order, 0);
	assert_int_equal(e[1].order, 0);
	assert_int_equal(e[2].order, 9);
	assert_int_equal(e[2].gfn, 512);
	/* Counting only. */
	assert_int_equal(vmb__split_extents(0, 3u << 18, 0, NULL, 0), 3);
}

static struct vmb__range ranges[VMB_MAX_RANGES];

/* A backend that records populate calls. */
struct rec {
	pthread_mutex_t lock;
	size_t	calls;
	size_t	extents;
	uint64_t pages;
	uint64_t node_pages[4];
	uint64_t gfn_seen_bits[(3u << 18) / 64 + 1];	/* up to 3 GiB */
	size_t	max_per_call;
	size_t	call_sizes[64];	/* extents of each of the first 64 calls */
	uint64_t max_pages_per_call;
	int	fail_at_call;	/* 0: never */
	int	fail_errno;
	uint32_t enomem_min_order;	/* extents of this order or more: ENOMEM */
	atomic_bool *cancel_at_half;
	uint64_t total_pages;
	bool	overlap;
	uint32_t nr_ranges;
	/* Tell the engine of each extent as it is done (continuations). */
	bool	step_each;
	/* The most CPUs a calling thread might run on, call by call. */
	int	max_cpus;
};

static struct rec rec;

static int
rec_populate(void *priv, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr, struct vmb_populate_stats *st,
    size_t *ret_done, const struct vmb__popstep *step)
{
	(void)priv;
	(void)domid;
	assert_true(flags & VMB_POPF_EXACT_NODE);
	pthread_mutex_lock(&rec.lock);
	rec.calls++;
	{
		cpu_set_t set;

		if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
		    CPU_COUNT(&set) > rec.max_cpus)
			rec.max_cpus = CPU_COUNT(&set);
	}
	if (rec.fail_at_call && (int)rec.calls == rec.fail_at_call) {
		pthread_mutex_unlock(&rec.lock);
		*ret_done = 0;
		return -rec.fail_errno;
	}
	if (nr > rec.max_per_call)
		rec.max_per_call = nr;
	if (rec.calls <= sizeof(rec.call_sizes) / sizeof(rec.call_sizes[0]))
		rec.call_sizes[rec.calls - 1] = nr;
	{
		uint64_t cp = 0;

		for (size_t i = 0; i < nr; i++)
			cp += 1ull << ext[i].order;
		if (cp > rec.max_pages_per_call)
			rec.max_pages_per_call = cp;
	}
	for (size_t i = 0; i < nr; i++) {
		uint64_t np = 1ull << ext[i].order;

		if (rec.enomem_min_order && ext[i].order >= rec.enomem_min_order) {
			/* No block that large: the first i are done. */
			st->calls++;
			rec.extents += i;
			pthread_mutex_unlock(&rec.lock);
			*ret_done = i;
			return -ENOMEM;
		}

		assert_int_equal(ext[i].gfn % np, 0);
		/* Every extent lies in one range and asks for its node. */
		{
			bool found = false;

			for (uint32_t r = 0; r < rec.nr_ranges; r++)
				if (ext[i].gfn >= ranges[r].gfn &&
				    ext[i].gfn + np <= ranges[r].gfn +
				    ranges[r].pages) {
					assert_int_equal(ext[i].node,
					    ranges[r].node);
					found = true;
				}
			assert_true(found);
		}
		for (uint64_t g = ext[i].gfn; g < ext[i].gfn + np; g++) {
			if (rec.gfn_seen_bits[g / 64] >> (g % 64) & 1)
				rec.overlap = true;
			rec.gfn_seen_bits[g / 64] |= 1ull << (g % 64);
		}
		rec.pages += np;
		rec.node_pages[ext[i].node] += np;
		if (rec.step_each && step)
			step->fn(step->arg, i + 1);
		st->extents[ext[i].order == 18 ? VMB_ORDER_1G :
		    ext[i].order == 9 ? VMB_ORDER_2M : VMB_ORDER_4K]++;
	}
	st->calls++;
	/* The hypervisor's own time: 1 us an extent, for the sums. */
	st->hv_ns += 1000 * nr;
	st->have |= VMB_POPSTAT_HAVE_HV_TIME;
	rec.extents += nr;
	if (rec.cancel_at_half && rec.pages * 2 >= rec.total_pages)
		atomic_store(rec.cancel_at_half, true);
	pthread_mutex_unlock(&rec.lock);
	*ret_done = nr;
	return 0;
}

static const struct vmb_backend_ops rec_ops = {
	.name = "rec",
	.populate = rec_populate,
};

static _Atomic uint64_t last_done;
static _Atomic unsigned nr_reports;
/* The engine's workers run on a pool, as on a context's. */
static struct vmb__tpool *pool;

static void
on_progress(void *user, const struct vmb_progress *p)
{
	(void)user;
	assert_true(p->done <= p->total);
	assert_int_equal(p->phase, VMB_PHASE_POPULATE);
	/* Workers report in any order; keep the largest seen. */
	uint64_t prev = atomic_load(&last_done);

	atomic_fetch_add(&nr_reports, 1);
	while (p->done > prev &&
	    !atomic_compare_exchange_weak(&last_done, &prev, p->done))
		;
}

static void
job_init(struct vmb__populate_job *job, struct vmb_placement *pl,
    atomic_bool *cancel, enum vmb_populate_strategy s)
{
	struct vmb_guest g;
	int n;

	memset(&rec, 0, sizeof(rec));
	pthread_mutex_init(&rec.lock, NULL);
	memset(job, 0, sizeof(*job));
	job->ops = &rec_ops;
	job->domid = 7;
	memset(&g, 0, sizeof(g));
	for (uint32_t i = 0; i < pl->nr_nodes; i++)
		g.memory_bytes += pl->node_bytes[i];
	n = vmb__layout(&g, pl, ranges);
	assert_int_equal(n, pl->nr_nodes);
	job->ranges = ranges;
	job->nr_ranges = (uint32_t)n;
	rec.nr_ranges = (uint32_t)n;
	job->strategy = s;
	job->pool = pool;
	job->cancel = cancel;
	job->progress = on_progress;
	atomic_store(&last_done, 0);
	atomic_store(&nr_reports, 0);
	for (uint32_t i = 0; i < pl->nr_nodes; i++)
		rec.total_pages += pl->node_bytes[i] >> 12;
}

/* 1 GiB + 300 MiB + 20 KiB on node 0, 700 MiB on node 1. */
static void
placement_mixed(struct vmb_placement *pl)
{
	memset(pl, 0, sizeof(*pl));
	pl->nr_nodes = 2;
	pl->nodes[0] = 0;
	pl->node_bytes[0] = GIB + 300 * MIB + 20 * 1024;
	pl->nodes[1] = 1;
	pl->node_bytes[1] = 700 * MIB;
}

static void
test_engine(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;

	(void)state;
	placement_mixed(&pl);
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.batch_bytes = 64 * MIB;
	job.inflight = 3;
	assert_int_equal(vmb__populate(&job), 0);
	assert_false(rec.overlap);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_int_equal(rec.node_pages[0], pl.node_bytes[0] >> 12);
	assert_int_equal(rec.node_pages[1], pl.node_bytes[1] >> 12);
	assert_int_equal(atomic_load(&last_done), rec.total_pages << 12);
	assert_int_equal(job.stats.extents[VMB_ORDER_1G], 1);
	assert_true(job.stats.extents[VMB_ORDER_2M] > 0);
	assert_int_equal(job.stats.extents[VMB_ORDER_4K],
	    /* node 0's tail, node 1's head up to 2 MiB, node 1's tail */
	    5 + (512 - 5) + 5);
	assert_true(job.workers >= 2 && job.workers <= 6);
	/* A batch is at most 64 MiB, unless it is one 1 GiB extent. */
	assert_true(rec.max_pages_per_call == (1u << 18) ||
	    rec.max_pages_per_call <= (64 * MIB) >> 12);
	assert_int_equal(job.stats.calls, rec.calls);
	/*
	 * This backend says nothing about scrubbing or flushes: unknown;
	 * only its time (hv_ns) is known.
	 */
	assert_int_equal(job.stats.have, VMB_POPSTAT_HAVE_HV_TIME);
}

/*
 * Progress moves as the backend reports extents done within one call (a
 * hypervisor's continuations), not only when the call returns: one
 * batch of 64 extents of 2 MiB reported extent by extent gives 64
 * reports, each 2 MiB further; reported only at the end, one.
 */
static void
test_progress_within_a_call(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;

	(void)state;
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = 128 * MIB;
	for (int each = 0; each < 2; each++) {
		job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
		job.batch_bytes = 256 * MIB;
		job.inflight = 1;
		rec.step_each = each;
		assert_int_equal(vmb__populate(&job), 0);
		assert_int_equal(rec.calls, 1);
		assert_int_equal(atomic_load(&last_done), 128 * MIB);
		assert_int_equal(atomic_load(&nr_reports), each ? 64 : 1);
	}
}

/*
 * Memory to be scrubbed inline (not known clean) is cut finer and run by
 * as many workers as there are CPUs to run them; clean memory is one
 * request on the caller's thread.  1.5 GiB on one node: a 1 GiB extent
 * and 256 2 MiB ones, cut by VMB_BATCH_SPLIT_MIN alone into one batch.
 */
static void
test_dirty_parallel(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;
	cpu_set_t all, one;
	uint32_t cpus, want;

	(void)state;
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = GIB + 512 * MIB;

	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.clean = true;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_int_equal(job.workers, 1);
	assert_int_equal(rec.calls, 1);

	/* Dirty, one CPU: the default two in flight, each a batch. */
	assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_false(rec.overlap);
	assert_int_equal(job.workers, 2);
	assert_int_equal(rec.calls, 2);

	/*
	 * Dirty, every CPU we have: up to a worker each, as many as there
	 * are batches (the 1 GiB extent is a batch of its own, so fewer
	 * than 6 with more CPUs); on 2 CPUs or fewer, the default 2.
	 */
	cpus = (uint32_t)CPU_COUNT(&all);
	want = cpus < 2 ? 2 : cpus > 6 ? 6 : cpus;
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_false(rec.overlap);
	assert_true(job.workers >= 2 && job.workers <= want);
	if (cpus <= 2)
		assert_int_equal(job.workers, 2);

	/* The caller's count wins. */
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.inflight = 1;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(job.workers, 1);
}

/*
 * One engine populate of `bytes` on one node with `inflight` workers,
 * its memory to be scrubbed inline or not; every page taken once.
 */
static void
run_one_node(struct vmb__populate_job *job, uint64_t bytes, uint32_t inflight)
{
	static struct vmb_placement pl;
	static atomic_bool cancel;

	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = bytes;
	job_init(job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job->inflight = inflight;
	assert_int_equal(vmb__populate(job), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_false(rec.overlap);
}

/*
 * Few GiB for the workers (the lab's dirty-memory guest: 2280 MiB on
 * one node, 4 workers): the guest keeps its 1 GiB extents, each a batch
 * of its own, and the rest is one batch; three workers, the GiBs never
 * cut to even them out (populate.c says why).  The worker profile adds
 * up.
 */
static void
test_dirty_keeps_superpages(void **state)
{
	struct vmb__populate_job job;
	const struct vmb_worker_profile *wp = &job.profile;

	(void)state;
	run_one_node(&job, 2280 * MIB, 4);
	assert_int_equal(job.stats.extents[VMB_ORDER_1G], 2);
	assert_int_equal(job.stats.extents[VMB_ORDER_2M], (2280 - 2048) / 2);
	assert_int_equal(rec.max_pages_per_call, 1u << 18);
	assert_int_equal(rec.calls, 3);
	assert_int_equal(job.workers, 3);
	assert_true(wp->longest_ns > 0);
	assert_true(wp->shortest_ns <= wp->longest_ns);
	assert_true(wp->busy_ns >= wp->longest_ns);
	assert_true(wp->busy_ns <= 3 * wp->longest_ns);
	/* The longest worker may have taken two batches: any share. */
	assert_true(wp->longest_bytes > 0 && wp->longest_bytes <= 2280 * MIB);
	/* Every worker's hypervisor time is the build's. */
	assert_int_equal(job.stats.hv_ns, 1000 * (2 + (2280 - 2048) / 2));
	assert_true(job.stats.have & VMB_POPSTAT_HAVE_HV_TIME);

	/* 3 GiB for 2 workers: one carries 2 GiB, in whole GiBs still. */
	run_one_node(&job, 3 * GIB, 2);
	assert_int_equal(job.stats.extents[VMB_ORDER_1G], 3);
	assert_int_equal(job.stats.extents[VMB_ORDER_2M], 0);
	assert_int_equal(job.workers, 2);
}

/*
 * CPUs that wait for physical ones (job.cpu_wait at VMB_CPUWAIT_SERIAL
 * or more): one worker per node, the GiBs kept; below it, or when the
 * caller set the count, or for clean memory (one request anyway), the
 * workers are as without it.
 */
static void
test_cpu_wait_serial(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;
	cpu_set_t before, after;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
	/* The lab's guest: 2280 MiB on one node, by one worker. */
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = 2280 * MIB;
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.cpu_wait = 0.6;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_false(rec.overlap);
	assert_int_equal(job.workers, 1);
	assert_true(job.serial);
	/* The worker ran on this thread, kept on one CPU meanwhile. */
	assert_int_equal(rec.max_cpus, 1);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	assert_int_equal(job.stats.extents[VMB_ORDER_1G], 2);
	/*
	 * Batches of up to 2 GiB cut evenly (1140 MiB): a GiB, a GiB and
	 * 116 MiB, the rest; the worker takes them one after the other.
	 */
	assert_int_equal(rec.calls, 3);
	assert_int_equal(job.profile.longest_bytes, 2280 * MIB);

	/* Two nodes: a worker each, side by side. */
	placement_mixed(&pl);
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.cpu_wait = VMB_CPUWAIT_SERIAL;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_false(rec.overlap);
	assert_int_equal(job.workers, 2);
	assert_true(job.serial);

	/* Less wait: the workers dirty_inflight gives, at least 2. */
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = 2280 * MIB;
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.cpu_wait = VMB_CPUWAIT_SERIAL - 0.01;
	assert_int_equal(vmb__populate(&job), 0);
	assert_true(job.workers >= 2);
	assert_false(job.serial);

	/* The caller's count wins over the wait. */
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.cpu_wait = 0.9;
	job.inflight = 3;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(job.workers, 3);
	assert_false(job.serial);

	/*
	 * Clean memory is one request on this thread anyway: kept on its
	 * CPU for it, and given its CPUs back after.
	 */
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.cpu_wait = 0.9;
	job.clean = true;
	assert_int_equal(vmb__populate(&job), 0);
	assert_int_equal(job.workers, 1);
	assert_int_equal(rec.calls, 1);
	assert_true(job.serial);
	assert_int_equal(rec.max_cpus, 1);
	assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
	assert_true(CPU_EQUAL(&before, &after));
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.clean = true;
	assert_int_equal(vmb__populate(&job), 0);
	assert_false(job.serial);
}

static void
test_libxl_pattern(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;

	(void)state;
	placement_mixed(&pl);
	job_init(&job, &pl, &cancel, VMB_POPULATE_LIBXL);
	assert_int_equal(vmb__populate(&job), 0);
	assert_false(rec.overlap);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_int_equal(job.workers, 1);
	/*
	 * Node 0: one 1 GiB call, 150 2 MiB extents in calls of 4 (38),
	 * 5 pages in one call.  Node 1 starts 5 pages short of a 2 MiB
	 * boundary: 507 pages in one call, then 349 2 MiB extents (88
	 * calls), then the last 5 pages.
	 */
	assert_int_equal(rec.calls, 1 + 38 + 1 + 1 + 88 + 1);
	assert_int_equal(rec.max_per_call, 507);
}

static void
test_cancel_and_failure(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;

	(void)state;
	placement_mixed(&pl);
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.batch_bytes = 8 * MIB;
	job.inflight = 1;
	rec.cancel_at_half = &cancel;
	assert_int_equal(vmb__populate(&job), -ECANCELED);
	assert_true(rec.pages < rec.total_pages);

	cancel = false;
	job_init(&job, &pl, &cancel, VMB_POPULATE_LIBXL);
	rec.cancel_at_half = &cancel;
	assert_int_equal(vmb__populate(&job), -ECANCELED);
	assert_true(rec.pages < rec.total_pages);

	cancel = false;
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	job.batch_bytes = 8 * MIB;
	rec.fail_at_call = 5;
	rec.fail_errno = EIO;
	assert_int_equal(vmb__populate(&job), -EIO);
	assert_true(rec.pages < rec.total_pages);
}

/* No free 1 GiB (then 2 MiB) blocks: extents are retried smaller. */
static void
test_fragmented(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;

	(void)state;
	for (int s = 0; s < 2; s++) {
		placement_mixed(&pl);
		job_init(&job, &pl, &cancel, s ? VMB_POPULATE_LIBXL :
		    VMB_POPULATE_ENGINE);
		rec.enomem_min_order = 18;
		assert_int_equal(vmb__populate(&job), 0);
		assert_false(rec.overlap);
		assert_int_equal(rec.pages, rec.total_pages);
		assert_int_equal(job.stats.extents[VMB_ORDER_1G], 0);
		assert_int_equal(job.stats.extents_split, 1);
		assert_int_equal(job.stats.extents[VMB_ORDER_2M], 512 + 150 + 349);

		job_init(&job, &pl, &cancel, s ? VMB_POPULATE_LIBXL :
		    VMB_POPULATE_ENGINE);
		rec.enomem_min_order = 9;
		assert_int_equal(vmb__populate(&job), 0);
		assert_int_equal(rec.pages, rec.total_pages);
		assert_int_equal(job.stats.extents[VMB_ORDER_1G] +
		    job.stats.extents[VMB_ORDER_2M], 0);
		assert_int_equal(job.stats.extents[VMB_ORDER_4K],
		    rec.total_pages);
	}
}

/* vnodes 0 and 2 on node 0, vnode 1 on node 1: ranges in vnode order. */
static void
test_vnuma_layout(void **state)
{
	struct vmb__populate_job job;
	struct vmb_placement pl;
	struct vmb_guest g;
	atomic_bool cancel = false;
	int n;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.memory_bytes = 768 * MIB;
	g.nr_vnodes = 3;
	g.vnodes[0] = (struct vmb_vnode){ .pnode = 0, .size_bytes = 256 * MIB };
	g.vnodes[1] = (struct vmb_vnode){ .pnode = 1, .size_bytes = 256 * MIB };
	g.vnodes[2] = (struct vmb_vnode){ .pnode = 0, .size_bytes = 256 * MIB };
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 2;
	pl.nodes[0] = 0;
	pl.node_bytes[0] = 512 * MIB;
	pl.nodes[1] = 1;
	pl.node_bytes[1] = 256 * MIB;
	for (int s = 0; s < 2; s++) {
		job_init(&job, &pl, &cancel, s ? VMB_POPULATE_LIBXL :
		    VMB_POPULATE_ENGINE);
		n = vmb__layout(&g, &pl, ranges);
		assert_int_equal(n, 3);
		assert_int_equal(ranges[1].gfn, (256 * MIB) >> 12);
		assert_int_equal(ranges[1].node, 1);
		assert_int_equal(ranges[2].node, 0);
		job.nr_ranges = rec.nr_ranges = (uint32_t)n;
		assert_int_equal(vmb__populate(&job), 0);
		assert_false(rec.overlap);
		assert_int_equal(rec.node_pages[0], (512 * MIB) >> 12);
		assert_int_equal(rec.node_pages[1], (256 * MIB) >> 12);
	}
	/* Sizes that do not add up to the guest are refused. */
	g.memory_bytes = 1024 * MIB;
	assert_int_equal(vmb__layout(&g, &pl, ranges), -EINVAL);
}

/*
 * One hypervisor request takes at most VMB_BATCH_EXTENTS_MAX extents:
 * a node with more than that in what would otherwise be one batch gets
 * batches of exactly the cap, then the rest.  Three ranges on node 0,
 * each one page short of a GiB at both ends: 511 pages, 510 extents of
 * 2 MiB and 511 pages each, 4596 extents in all, and no 1 GiB extent.
 */
static void
test_batch_extent_cap(void **state)
{
	struct vmb__range rg[3];
	struct vmb__populate_job job;
	struct vmb_placement pl;
	atomic_bool cancel = false;
	const uint64_t p1g = GIB >> 12;
	size_t per = 511 + 510 + 511;

	(void)state;
	memset(&pl, 0, sizeof(pl));
	pl.nr_nodes = 1;
	pl.node_bytes[0] = 3 * GIB;
	job_init(&job, &pl, &cancel, VMB_POPULATE_ENGINE);
	for (int r = 0; r < 3; r++) {
		rg[r] = (struct vmb__range){ .gfn = r * p1g + 1,
		    .pages = p1g - 2, .node = 0 };
		memcpy(&ranges[r], &rg[r], sizeof(rg[r]));
		assert_int_equal(vmb__split_extents(rg[r].gfn, rg[r].pages, 0,
		    NULL, 0), per);
	}
	job.nr_ranges = rec.nr_ranges = 3;
	rec.total_pages = 3 * (p1g - 2);
	/* Bytes would allow one batch: only the extent cap cuts it. */
	job.batch_bytes = 4 * GIB - MIB;
	job.inflight = 1;
	assert_true(3 * per > VMB_BATCH_EXTENTS_MAX);
	assert_int_equal(vmb__populate(&job), 0);
	assert_false(rec.overlap);
	assert_int_equal(rec.pages, rec.total_pages);
	assert_int_equal(rec.calls, 2);
	assert_int_equal(rec.call_sizes[0], VMB_BATCH_EXTENTS_MAX);
	assert_int_equal(rec.call_sizes[1], 3 * per - VMB_BATCH_EXTENTS_MAX);
	assert_int_equal(rec.max_per_call, VMB_BATCH_EXTENTS_MAX);
	assert_int_equal(job.stats.calls, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_orders),
		cmocka_unit_test(test_engine),
		cmocka_unit_test(test_progress_within_a_call),
		cmocka_unit_test(test_dirty_parallel),
		cmocka_unit_test(test_dirty_keeps_superpages),
		cmocka_unit_test(test_cpu_wait_serial),
		cmocka_unit_test(test_libxl_pattern),
		cmocka_unit_test(test_cancel_and_failure),
		cmocka_unit_test(test_fragmented),
		cmocka_unit_test(test_vnuma_layout),
		cmocka_unit_test(test_batch_extent_cap),
	};
	int failed;

	if (vmb__tpool_new(&pool) != 0)
		return 1;
	failed = cmocka_run_group_tests_name("populate", tests, NULL, NULL);
	vmb__tpool_free(pool);
	return failed;
}
