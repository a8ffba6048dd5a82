/*
 * populate.c - filling a new domain's memory: the engine and the libxl
 * pattern.
 *
 * Guest memory is laid out by layout.c (vmb__layout_plan): for a vNUMA
 * guest vnode after vnode, each on its pnode; otherwise in placement
 * order, the first placed node getting the first node_bytes[0], and so
 * on; RAM that would reach the MMIO hole below 4 GiB continues at 4 GiB.
 *
 * The engine (VMB_POPULATE_ENGINE) cuts each node's ranges into extents of
 * the largest orders its alignment allows (1 GiB, 2 MiB, 4 KiB), groups
 * them into batches of up to batch_bytes, and runs, per node, `inflight`
 * worker threads that take the node's batches in turn (by default as
 * many as there are CPUs for the node: dirty_inflight).  A batch is one
 * populate request (one filtered TLB flush in the companion hypercall),
 * every worker has its own backend connection (the backend's pool), so a
 * node has up to `inflight` batches in the hypervisor at once, and nodes
 * proceed in parallel.  Extents ask for their node exactly: placement
 * already chose where memory is, and a silent fallback would undo it.
 *
 * Memory to be scrubbed inline is work per page on the CPU that takes
 * it, and an extent is taken by one request, so a guest of few GiB for
 * the node's workers leaves some of them a whole GiB and others less.
 * The guest keeps its 1 GiB extents all the same (its p2m's 1 GiB
 * mappings, as libxl gives it): cutting them into 2 MiB ones to even
 * the workers out was tried on Xen 4.17 with every pCPU busy and did not
 * pay.  Xen scrubs a 1 GiB extent inline in one go, while 2 MiB extents
 * let the hypercall be preempted between them, and each preemption gave
 * the pCPU to a guest's vCPU: such workers were in Xen for 15 to 21% of
 * their time (vmb_populate_stats.hv_ns against their wall time), one
 * with a whole GiB for 70 to 99% (tests/lab/README.md).
 *
 * Parallel requests pay where the hypervisor has work per page: scrubbing
 * dirty pages inline (and, on Xen, the per-page work of assigning them).
 * When the placed nodes' clean memory covers the guest (job->clean, from
 * scrub progress) or the plan is a single batch, the engine runs on the
 * calling thread instead, all extents in one request: handing out clean
 * pages is metadata work, a few tens of microseconds per GiB on hvsim,
 * less than waking pool threads and waiting for them costs.
 *
 * Where this process's CPUs wait for physical ones (job->cpu_wait, the
 * steal time measured from the build's start: cpuwait.c), a node gets
 * one worker, whatever its CPUs: see populate_engine.
 *
 * Pinning: a node's workers are pinned to that node's CPUs when the
 * hypervisor says its topology is this machine's (VMB_CAP_HOST_TOPOLOGY:
 * hvsim --topology host; never Xen, where we run on dom0's vCPUs) and
 * the CPUs it lists for node N are
 * exactly /sys/devices/system/node/nodeN's.  With a modelled topology
 * (hvsim's 2 or 8 nodes on a 1-node machine) the CPU numbers name
 * simulated CPUs - even when node 0's happen to equal this machine's
 * node 0 - so the workers are left to the scheduler; workers_pinned says
 * which.
 *
 * The libxl strategy (VMB_POPULATE_LIBXL) reproduces what libxl's
 * meminit_hvm does in Xen 4.17: node after node, one thread, one 1 GiB
 * extent per call when aligned, else up to four 2 MiB extents per call,
 * and what is left in 4 KiB pages in one call.
 *
 * Both stop between requests when *cancel is set and return -ECANCELED;
 * undoing (destroying the domain) is the caller's job.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

#define PAGES_1G	(1ull << VMB_EXT_ORDER_1G)
#define PAGES_2M	(1ull << VMB_EXT_ORDER_2M)
#define LIBXL_2M_PER_CALL	4	/* meminit_hvm clips to 8 MiB */

size_t
vmb__split_extents(uint64_t gfn, uint64_t pages, uint32_t node,
    struct vmb_extent *out, size_t cap)
{
	size_t n = 0;

	while (pages > 0) {
		uint32_t order = 0;

		if (gfn % PAGES_1G == 0 && pages >= PAGES_1G)
			order = VMB_EXT_ORDER_1G;
		else if (gfn % PAGES_2M == 0 && pages >= PAGES_2M)
			order = VMB_EXT_ORDER_2M;
		if (n < cap)
			out[n] = (struct vmb_extent){ .gfn = gfn,
			    .order = order, .node = node };
		n++;
		gfn += 1ull << order;
		pages -= 1ull << order;
	}
	return n;
}

static void
stats_add(struct vmb_populate_stats *a, const struct vmb_populate_stats *b)
{
	a->calls += b->calls;
	for (int i = 0; i < VMB_ORDER_CLASS_MAX; i++)
		a->extents[i] += b->extents[i];
	a->pages_scrubbed_inline += b->pages_scrubbed_inline;
	a->pages_fallback += b->pages_fallback;
	a->flushes_issued += b->flushes_issued;
	a->flushes_avoided += b->flushes_avoided;
	a->filter_evaluations += b->filter_evaluations;
	a->extents_split += b->extents_split;
	a->hv_ns += b->hv_ns;
	a->have |= b->have;
	for (int i = 0; i < VMB_MAX_NODES; i++)
		a->node_bytes[i] += b->node_bytes[i];
}

static uint64_t
extents_bytes(const struct vmb_extent *e, size_t n)
{
	uint64_t b = 0;

	for (size_t i = 0; i < n; i++)
		b += VMB_PAGE_SIZE << e[i].order;
	return b;
}

/* ------------------------------------------------------------------ */
/* Shared progress.                                                    */

struct progress {
	struct vmb__populate_job *job;
	_Atomic uint64_t done;
	uint64_t total;
	atomic_bool failed;		/* one worker failed: the others stop */
	int	cancel_fd;		/* the build's (vmb__cancel_fd) */
};

static void
progress_add(struct progress *pr, uint64_t bytes)
{
	struct vmb_progress p;
	uint64_t done = atomic_fetch_add(&pr->done, bytes) + bytes;

	if (!pr->job->progress)
		return;
	p = (struct vmb_progress){ .phase = VMB_PHASE_POPULATE,
	    .domid = pr->job->domid, .done = done, .total = pr->total };
	pr->job->progress(pr->job->user, &p);
}

/*
 * One populate op's progress, from the backend as the hypervisor gets
 * through its extents (each continuation), not only when it returns.
 */
struct op_progress {
	struct progress *pr;
	const struct vmb_extent *e;	/* the op's extents */
	size_t	reported;		/* the first `reported` are counted */
};

static void
op_step(void *arg, size_t done)
{
	struct op_progress *op = arg;

	if (done <= op->reported)
		return;
	progress_add(op->pr, extents_bytes(op->e + op->reported,
	    done - op->reported));
	op->reported = done;
}

static bool
stopping(const struct progress *pr)
{
	return atomic_load(pr->job->cancel) || atomic_load(&pr->failed);
}

/*
 * Populate n extents; when one fails for want of a free block of its
 * order (-ENOMEM: the node's memory is fragmented, or what is free is
 * still being scrubbed in smaller pieces), retry its range at the next
 * smaller order (1 GiB -> 2 MiB -> 4 KiB), as libxl does.  Only when 4 KiB
 * pages cannot be had does the populate fail.
 */
static int
populate_extents(struct vmb__populate_job *job, struct progress *pr,
    const struct vmb_extent *e, size_t n, struct vmb_populate_stats *st)
{
	size_t off = 0;

	while (off < n) {
		struct op_progress op = { pr, e + off, 0 };
		struct vmb__popstep step = { op_step, &op };
		struct vmb_extent *sub;
		uint32_t lower;
		size_t done = 0, nsub;
		int rc;

		if (stopping(pr))
			return atomic_load(job->cancel) ? -ECANCELED : -EINTR;
		rc = job->ops->populate(job->priv, job->domid,
		    VMB_POPF_EXACT_NODE | VMB_POPF_ALLOW_DIRTY, e + off, n - off,
		    st, &done, &step);
		if (done > n - off)
			done = n - off;
		/* What the backend did not report as it went. */
		op_step(&op, done);
		off += done;
		if (rc == 0)
			return 0;
		if (rc != -ENOMEM || off >= n || e[off].order == 0)
			return rc;
		lower = e[off].order == VMB_EXT_ORDER_1G ? VMB_EXT_ORDER_2M : 0;
		nsub = (size_t)1 << (e[off].order - lower);
		sub = malloc(nsub * sizeof(*sub));
		if (!sub)
			return -ENOMEM;
		for (size_t k = 0; k < nsub; k++)
			sub[k] = (struct vmb_extent){ .gfn = e[off].gfn +
			    ((uint64_t)k << lower), .order = lower,
			    .node = e[off].node };
		st->extents_split++;
		rc = populate_extents(job, pr, sub, nsub, st);
		free(sub);
		if (rc)
			return rc;
		off++;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The engine.                                                         */

struct node_work {
	uint32_t node;
	struct vmb_extent *ext;
	size_t	nr_ext;
	size_t	*batch;		/* batch i is ext[batch[i] .. batch[i + 1]) */
	size_t	nr_batches;
	_Atomic size_t next;	/* next batch to take */
	bool	pin;
	cpu_set_t cpus;
};

struct worker {
	bool	started;
	struct node_work *nw;
	struct progress *pr;
	struct vmb_populate_stats stats;
	int	rc;
	bool	pinned;
	uint64_t ns;		/* its time, first batch taken to last done */
	uint64_t bytes;		/* what it populated */
};

/* The CPUs of this machine's NUMA node `node`, from sysfs. */
static int
sys_node_cpus(uint32_t node, cpu_set_t *set)
{
	char path[96], buf[4096];
	uint64_t bits[4096 / 64] = { 0 };
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist",
	    node);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	buf[len] = '\0';
	CPU_ZERO(set);
	if (len == 0 || vmb__parse_ranges(buf, bits, 4096))
		return -EINVAL;
	for (unsigned c = 0; c < 4096 && c < CPU_SETSIZE; c++)
		if (bits[c / 64] >> (c % 64) & 1)
			CPU_SET(c, set);
	return 0;
}

/* Decide whether node `nw->node`'s workers can be pinned (see above). */
static void
plan_pinning(const struct vmb_host *host, bool host_topology,
    struct node_work *nw)
{
	cpu_set_t hv, sys, mine;

	nw->pin = false;
	/*
	 * A modelled topology's CPU numbers can equal this machine's by
	 * coincidence (hvsim's node 0 is CPUs 0-1, and so may be ours):
	 * only pin when the hypervisor says its nodes are the machine's.
	 */
	if (!host_topology || !host || !host->cpus)
		return;
	CPU_ZERO(&hv);
	for (uint32_t i = 0; i < host->nr_cpus; i++)
		if (host->cpus[i].node == nw->node &&
		    host->cpus[i].cpu < CPU_SETSIZE)
			CPU_SET(host->cpus[i].cpu, &hv);
	if (CPU_COUNT(&hv) == 0 || sys_node_cpus(nw->node, &sys) != 0 ||
	    !CPU_EQUAL(&hv, &sys))
		return;
	if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
		return;
	CPU_AND(&nw->cpus, &sys, &mine);
	nw->pin = CPU_COUNT(&nw->cpus) > 0;
}

/* A worker: take the node's next batch until none is left. */
static void
worker_run(void *arg)
{
	struct worker *w = arg;
	struct node_work *nw = w->nw;
	struct vmb__populate_job *job = w->pr->job;
	uint64_t t0;
	int saved_fd;

	if (nw->pin)
		w->pinned = pthread_setaffinity_np(pthread_self(),
		    sizeof(nw->cpus), &nw->cpus) == 0;
	/*
	 * A cancel interrupts this worker's hypervisor calls too.  The
	 * worker may run on the building thread itself: restore its value.
	 */
	saved_fd = vmb__cancel_fd();
	vmb__set_cancel_fd(w->pr->cancel_fd);
	t0 = vmb__now_ns();
	while (!stopping(w->pr)) {
		size_t b = atomic_fetch_add(&nw->next, 1);
		size_t n;
		int rc;

		if (b >= nw->nr_batches)
			break;
		n = nw->batch[b + 1] - nw->batch[b];
		rc = populate_extents(job, w->pr, nw->ext + nw->batch[b], n,
		    &w->stats);
		if (rc == 0)
			w->bytes += extents_bytes(nw->ext + nw->batch[b], n);
		if (rc == -EINTR)
			break;		/* another worker failed */
		if (rc) {
			w->rc = rc;
			atomic_store(&w->pr->failed, true);
			break;
		}
	}
	w->ns = vmb__now_ns() - t0;
	vmb__set_cancel_fd(saved_fd);
}

/*
 * How many batches to cut one node's `total` bytes into: what
 * batch_bytes asks for, but at least `inflight` (so that every worker of
 * the node has one) when each batch still holds split_min
 * (VMB_BATCH_SPLIT_MIN, or _DIRTY for memory to be scrubbed inline:
 * below that a thread and a call cost more than running the pieces side
 * by side can save), and never more than there are extents.
 */
static size_t
batch_count(uint64_t total, size_t nr_ext, uint64_t batch_bytes,
    uint32_t inflight, uint64_t split_min)
{
	uint64_t want = (total + batch_bytes - 1) / batch_bytes;

	/* More batches than the size asks for only when each stays big. */
	if (want < inflight)
		want = total / split_min > inflight ? inflight :
		    (total / split_min > want ? total / split_min : want);
	return want > nr_ext ? nr_ext : (size_t)want;
}

/*
 * Cut one node's extents into batch_count() batches, their bytes spread
 * evenly, so that no worker is left with a long tail while the others
 * idle.  A batch never splits an extent (a 1 GiB extent larger than
 * batch_bytes is a batch of its own) and holds at most
 * VMB_BATCH_EXTENTS_MAX extents (one hypervisor request).
 */
static int
make_batches(struct node_work *nw, uint64_t batch_bytes, uint32_t inflight,
    uint64_t split_min)
{
	uint64_t total = extents_bytes(nw->ext, nw->nr_ext), target;
	uint64_t bytes = 0;
	size_t nb = 0, want;

	nw->batch = malloc((nw->nr_ext + 1) * sizeof(*nw->batch));
	if (!nw->batch)
		return -ENOMEM;
	want = batch_count(total, nw->nr_ext, batch_bytes, inflight,
	    split_min);
	target = want ? (total + want - 1) / want : total;
	for (size_t i = 0; i < nw->nr_ext; i++) {
		uint64_t eb = VMB_PAGE_SIZE << nw->ext[i].order;
		size_t in_batch = nb ? i - nw->batch[nb - 1] : 0;

		/* Start a new batch when this extent would overflow it. */
		if (nb == 0 || (bytes + eb > target && bytes > 0) ||
		    in_batch >= VMB_BATCH_EXTENTS_MAX) {
			nw->batch[nb++] = i;
			bytes = 0;
		}
		bytes += eb;
	}
	nw->batch[nb] = nw->nr_ext;
	nw->nr_batches = nb;
	return 0;
}

/* One node_work per host node, with the extents of all its ranges. */
static int
node_works(const struct vmb__populate_job *job, struct node_work *nws,
    uint32_t *ret_nr)
{
	uint32_t nr_nw = 0;

	for (uint32_t r = 0; r < job->nr_ranges; r++) {
		const struct vmb__range *rg = &job->ranges[r];
		struct node_work *nw = NULL;
		struct vmb_extent *grown;
		size_t need;

		for (uint32_t i = 0; i < nr_nw; i++)
			if (nws[i].node == rg->node)
				nw = &nws[i];
		if (!nw) {
			nw = &nws[nr_nw++];
			nw->node = rg->node;
		}
		*ret_nr = nr_nw;
		need = vmb__split_extents(rg->gfn, rg->pages, rg->node, NULL, 0);
		grown = realloc(nw->ext, (nw->nr_ext + need + 1) *
		    sizeof(*nw->ext));
		if (!grown)
			return -ENOMEM;
		nw->ext = grown;
		vmb__split_extents(rg->gfn, rg->pages, rg->node,
		    nw->ext + nw->nr_ext, need);
		nw->nr_ext += need;
	}
	return 0;
}

/*
 * Keep this thread on the CPU it is on, for a populate that runs on it
 * alone where our CPUs wait for pCPUs (job->cpu_wait): the lab's lone
 * populate thread took 4.4 to 11.3 s left to the scheduler and 2.4 to
 * 2.5 s kept to one dom0 vCPU (any one), for the same 1.4 to 1.8 s of
 * Xen's work.  A thread that moves makes another vCPU wake, and a woken
 * vCPU waits for its pCPU behind a guest's.  *saved gets the affinity
 * to put back; false when nothing was changed.
 */
static bool
stay_on_cpu(cpu_set_t *saved)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    pthread_getaffinity_np(pthread_self(), sizeof(*saved), saved) != 0)
		return false;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
}

/*
 * On this thread, every node's extents in one request (as many as the
 * backend needs for the count): the hypervisor takes each extent from
 * its node, and a clean populate then enters it once, not once per node
 * or per GiB.
 */
static int
run_inline(struct vmb__populate_job *job, struct progress *pr,
    struct node_work *nws, uint32_t nr_nw)
{
	struct vmb_extent *all;
	cpu_set_t mine;
	bool stayed = false;
	size_t n = 0;
	int rc = 0;

	for (uint32_t i = 0; i < nr_nw; i++)
		n += nws[i].nr_ext;
	all = malloc((n ? n : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < nr_nw; i++) {
		memcpy(all + n, nws[i].ext, nws[i].nr_ext * sizeof(*all));
		n += nws[i].nr_ext;
	}
	/* One node: pinned to it for the request, as its workers would be. */
	if (nr_nw == 1)
		plan_pinning(job->host, job->host_topology, &nws[0]);
	if (nr_nw == 1 && nws[0].pin &&
	    pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) == 0 &&
	    pthread_setaffinity_np(pthread_self(), sizeof(nws[0].cpus),
	    &nws[0].cpus) == 0)
		job->workers_pinned = 1;
	else if (job->cpu_wait >= VMB_CPUWAIT_SERIAL)
		job->serial = stayed = stay_on_cpu(&mine);
	rc = populate_extents(job, pr, all, n, &job->stats);
	if (job->workers_pinned || stayed)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(mine),
		    &mine);
	free(all);
	job->workers = 1;
	if (!rc && atomic_load(job->cancel))
		rc = -ECANCELED;
	vmb__log(job->ctx, "populate engine: %zu extents on %u nodes inline "
	    "(%s%s), rc %d", n, nr_nw, job->clean ? "clean memory" :
	    "one batch", stayed ? ", kept on its CPU: our CPUs wait for "
	    "pCPUs" : "", rc);
	return rc;
}

/*
 * Run the workers: all but one as tasks of the context's thread pool,
 * the last unpinned one (its affinity is the caller's to keep) on this
 * thread, a thread fewer to start and none at all for a guest that is
 * one batch on one node.
 */
static int
run_workers(struct vmb__tpool *pool, struct worker *ws, size_t n)
{
	struct vmb__task *tasks = calloc(n ? n : 1, sizeof(*tasks));
	struct worker *self = NULL;
	size_t k = 0;
	int rc;

	if (!tasks)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!ws[i].nw->pin)
			self = &ws[i];
	for (size_t i = 0; i < n; i++)
		if (&ws[i] != self)
			tasks[k++] = (struct vmb__task){ .fn = worker_run,
			    .arg = &ws[i] };
	rc = vmb__tpool_run(pool, tasks, k, self ? worker_run : NULL, self);
	if (rc == 0)
		for (size_t i = 0; i < n; i++)
			ws[i].started = true;
	free(tasks);
	return rc;
}

/*
 * Batches in flight per node for memory not known to be clean, unless
 * the caller said: each request scrubs what it takes inline, on the CPU
 * that makes it (a Xen hypercall runs on the calling vCPU: in dom0, on
 * a busy host, beside the guests' vCPUs), so the work is the CPUs' and
 * VMB_INFLIGHT_DEFAULT would leave most of them idle.  As many as this
 * thread may run on, shared by the nodes being built, never fewer than
 * the default nor more than VMB_INFLIGHT_MAX.
 */
static uint32_t
dirty_inflight(uint32_t nr_nodes)
{
	cpu_set_t set;
	uint32_t cpus = 0, n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = (uint32_t)CPU_COUNT(&set);
	n = nr_nodes ? cpus / nr_nodes : cpus;
	if (n < VMB_INFLIGHT_DEFAULT)
		n = VMB_INFLIGHT_DEFAULT;
	return n > VMB_INFLIGHT_MAX ? VMB_INFLIGHT_MAX : n;
}

static int
populate_engine(struct vmb__populate_job *job, struct progress *pr)
{
	struct node_work *nws = NULL;
	struct worker *ws = NULL;
	uint32_t inflight = job->inflight, nr_nw = 0;
	uint64_t batch_bytes = job->batch_bytes ? job->batch_bytes :
	    VMB_BATCH_BYTES_DEFAULT;
	uint64_t split_min = job->clean ? VMB_BATCH_SPLIT_MIN :
	    VMB_BATCH_SPLIT_MIN_DIRTY;
	size_t nr_workers = 0, total_batches = 0;
	cpu_set_t mine;
	bool stayed = false;
	int rc;

	if (!job->pool)
		return -EINVAL;
	nws = calloc(job->nr_ranges, sizeof(*nws));
	rc = !nws ? -ENOMEM : node_works(job, nws, &nr_nw);
	if (!rc && job->clean) {
		rc = run_inline(job, pr, nws, nr_nw);
		goto out;
	}
	/*
	 * A host whose pCPUs our vCPUs wait for: one worker per node.  On
	 * such a host (Xen 4.17, a guest spinning on every pCPU) each worker
	 * shares its pCPU with a guest's vCPU, and every preemption of its
	 * hypercall hands the pCPU over: the lab's workers spent 75 to 85%
	 * of their time waiting, and one thread populated faster than
	 * three.  There the share was 0.57 to 0.97 before every dirty
	 * create, with dom0's default credit2 weight and with 1024; a dom0
	 * with pCPUs of its own has no guest's vCPU to wait behind, and
	 * keeps its workers.
	 */
	if (!rc && inflight == 0) {
		inflight = dirty_inflight(nr_nw);
		if (job->cpu_wait >= VMB_CPUWAIT_SERIAL && inflight > 1) {
			inflight = 1;
			job->serial = true;
		}
	}
	if (inflight > VMB_INFLIGHT_MAX)
		inflight = VMB_INFLIGHT_MAX;
	ws = rc ? NULL : calloc((size_t)job->nr_ranges * inflight, sizeof(*ws));
	if (!rc && !ws)
		rc = -ENOMEM;
	for (uint32_t i = 0; i < nr_nw && !rc; i++) {
		rc = make_batches(&nws[i], batch_bytes, inflight, split_min);
		plan_pinning(job->host, job->host_topology, &nws[i]);
		total_batches += nws[i].nr_batches;
	}
	if (rc)
		goto out;
	if (total_batches == 1) {
		rc = run_inline(job, pr, nws, nr_nw);
		goto out;
	}
	/* Up to `inflight` workers per node, as many as it has batches. */
	for (uint32_t i = 0; i < nr_nw; i++)
		for (size_t j = 0; j < nws[i].nr_batches && j < inflight; j++)
			ws[nr_workers++] = (struct worker){ .nw = &nws[i],
			    .pr = pr };
	/* The one worker runs on this thread (run_workers): see above. */
	if (job->serial && nr_workers == 1 && !nws[0].pin)
		stayed = stay_on_cpu(&mine);
	rc = run_workers(job->pool, ws, nr_workers);
	if (stayed)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(mine),
		    &mine);
	for (size_t i = 0; i < nr_workers; i++) {
		struct vmb_worker_profile *p = &job->profile;

		if (!ws[i].started)
			continue;
		stats_add(&job->stats, &ws[i].stats);
		if (ws[i].ns >= p->longest_ns) {
			p->longest_ns = ws[i].ns;
			p->longest_bytes = ws[i].bytes;
		}
		if (job->workers == 0 || ws[i].ns < p->shortest_ns)
			p->shortest_ns = ws[i].ns;
		p->busy_ns += ws[i].ns;
		if (ws[i].rc && !rc)
			rc = ws[i].rc;
		job->workers++;
		if (ws[i].pinned)
			job->workers_pinned++;
	}
	if (!rc && atomic_load(job->cancel))
		rc = -ECANCELED;
	vmb__log(job->ctx, "populate engine: %zu workers on %u nodes, %u "
	    "pinned, longest worker %.3f s for %llu MiB%s, rc %d", nr_workers,
	    nr_nw, job->workers_pinned, job->profile.longest_ns / 1e9,
	    (unsigned long long)(job->profile.longest_bytes >> 20),
	    !job->serial ? "" : stayed ? " (one, kept on its CPU: our CPUs "
	    "wait for pCPUs)" : " (one per node: our CPUs wait for pCPUs)",
	    rc);
out:
	for (uint32_t i = 0; nws && i < nr_nw; i++) {
		free(nws[i].ext);
		free(nws[i].batch);
	}
	free(nws);
	free(ws);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The libxl pattern.                                                  */

/* One call of the pattern; a failed superpage is retried smaller. */
static int
libxl_call(struct vmb__populate_job *job, struct progress *pr,
    const struct vmb_extent *e, size_t n)
{
	return populate_extents(job, pr, e, n, &job->stats);
}

static int
populate_libxl(struct vmb__populate_job *job, struct progress *pr)
{
	struct vmb_extent *small = NULL;
	int rc = 0;

	/* Order-0 leftovers go in one call, as populate_physmap_exact. */
	small = calloc(PAGES_2M, sizeof(*small));
	if (!small)
		return -ENOMEM;
	/* Range after range, as meminit_hvm goes vmemrange by vmemrange. */
	for (uint32_t i = 0; i < job->nr_ranges && !rc; i++) {
		uint32_t node = job->ranges[i].node;
		uint64_t gfn = job->ranges[i].gfn;
		uint64_t left = job->ranges[i].pages;

		while (left > 0 && !rc) {
			struct vmb_extent e[LIBXL_2M_PER_CALL];
			uint64_t to_1g = PAGES_1G - gfn % PAGES_1G;
			uint64_t count = left < to_1g ? left : to_1g;
			size_t n = 0;

			if (gfn % PAGES_1G == 0 && count == PAGES_1G) {
				e[0] = (struct vmb_extent){ gfn, VMB_EXT_ORDER_1G,
				    node };
				rc = libxl_call(job, pr, e, 1);
				gfn += PAGES_1G;
				left -= PAGES_1G;
				continue;
			}
			if (gfn % PAGES_2M == 0 && count >= PAGES_2M) {
				while (n < LIBXL_2M_PER_CALL &&
				    count >= PAGES_2M) {
					e[n++] = (struct vmb_extent){ gfn,
					    VMB_EXT_ORDER_2M, node };
					gfn += PAGES_2M;
					left -= PAGES_2M;
					count -= PAGES_2M;
				}
				rc = libxl_call(job, pr, e, n);
				continue;
			}
			/* Up to the next 2 MiB boundary, or the end. */
			count = PAGES_2M - gfn % PAGES_2M;
			if (count > left)
				count = left;
			for (n = 0; n < count; n++)
				small[n] = (struct vmb_extent){ gfn + n, 0,
				    node };
			rc = libxl_call(job, pr, small, count);
			gfn += count;
			left -= count;
		}
	}
	free(small);
	job->workers = 1;
	return rc;
}

int
vmb__populate(struct vmb__populate_job *job)
{
	struct progress pr;
	int rc;

	if (!job || !job->ops || !job->ranges || !job->cancel ||
	    job->nr_ranges == 0 || job->nr_ranges > VMB_MAX_RANGES)
		return -EINVAL;
	if (!job->ops->populate)
		return -EOPNOTSUPP;
	memset(&pr, 0, sizeof(pr));
	pr.job = job;
	pr.cancel_fd = vmb__cancel_fd();
	for (uint32_t i = 0; i < job->nr_ranges; i++) {
		if (job->ranges[i].node >= VMB_MAX_NODES)
			return -EINVAL;
		pr.total += job->ranges[i].pages << VMB_PAGE_SHIFT;
	}
	atomic_init(&pr.done, 0);
	atomic_init(&pr.failed, false);
	memset(&job->stats, 0, sizeof(job->stats));
	memset(&job->profile, 0, sizeof(job->profile));
	job->workers = job->workers_pinned = 0;
	switch (job->strategy) {
	case VMB_POPULATE_ENGINE:
		rc = populate_engine(job, &pr);
		break;
	case VMB_POPULATE_LIBXL:
		rc = populate_libxl(job, &pr);
		break;
	default:
		rc = -EINVAL;
		break;
	}
	return rc;
}
