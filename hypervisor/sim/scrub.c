/*
 * scrub.c - background scrubbing of dirty free memory (post 001).
 *
 * One worker per physical core, never two SMT siblings of a core: the
 * siblings share the core's load/store bandwidth, so a second thread per
 * core adds contention, not throughput (66 s against 127 s on 1.5 TB in
 * post 001).  Workers scrub only their own node's memory, 128 MiB
 * (order 15) at a time, with non-temporal stores when memory is real
 * (the boot scrub is what maps it in, memory.c).  The boot scrub is the
 * same machinery: at start every page is dirty with kind PG_BOOT.  A
 * worker scrubs its 128 MiB in 2 MiB steps and gives the block back
 * early when an allocator calls it back (heap.c), and takes no new block
 * while an allocator waits.  With phantom memory a scrub step only
 * changes metadata, so it costs no time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvsim.h"

int
scrub_plan(const struct topo *t, int32_t want, struct scrub_worker **ret_w,
    uint32_t *ret_nr)
{
	uint32_t total = t->nr_nodes * t->cores_per_node, n, i;
	struct scrub_worker *w = NULL;

	n = want < 0 || (uint32_t)want > total ? total : (uint32_t)want;
	if (n > 0) {
		w = calloc(n, sizeof(*w));
		if (!w)
			return -ENOMEM;
	}
	/* Round-robin over nodes, so that N workers spread evenly. */
	for (i = 0; i < n; i++) {
		uint32_t node = i % t->nr_nodes, core = i / t->nr_nodes;

		w[i].node = node;
		w[i].core = node * t->cores_per_node + core;
		w[i].cpu = topo_cpu(t, node, core, 0);
	}
	*ret_w = w;
	*ret_nr = n;
	return 0;
}

/* Sleep until there is dirty memory nobody scrubs and no allocator waits. */
static void
scrub_idle(struct hv *hv, struct hnode *n)
{
	struct timespec ts;

	pthread_mutex_lock(&n->lock);
	if (!__atomic_load_n(&hv->scrub_stop, __ATOMIC_ACQUIRE) &&
	    (n->dirty_pages == n->scrubbing_pages || n->alloc_waiters > 0)) {
		/* Woken by a free or by the last waiting allocator. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&n->work, &n->lock, &ts);
	}
	pthread_mutex_unlock(&n->lock);
}

static void *
scrub_main(void *arg)
{
	struct scrub_worker *w = arg;
	struct hv *hv = w->hv;
	struct hnode *n = &hv->heap.nodes[w->node];
	struct scrub_job job;

	/*
	 * On this machine's own topology, run on the node's CPUs: the
	 * stores stay node-local, and the first touch of real memory places
	 * it on the node that owns it.
	 */
	if (hv->cfg.pin_host)
		(void)topo_pin_host_node(w->node);
	memset(&job, 0, sizeof(job));
	while (!__atomic_load_n(&hv->scrub_stop, __ATOMIC_ACQUIRE)) {
		uint64_t size, step, off;

		if (heap_take_dirty(&hv->heap, w->node, SCRUB_ORDER, &job) < 0) {
			scrub_idle(hv, n);
			continue;
		}
		size = 1ull << job.b.order;
		step = size < SCRUB_STEP_PAGES ? size : SCRUB_STEP_PAGES;
		/*
		 * In steps, so that an allocator that needs these pages gets
		 * them back after one step, not after the whole 128 MiB.
		 */
		for (off = 0; off < size; off += step) {
			if (heap_scrub_aborted(&job))
				break;
			mem_zero(&hv->mem, job.b.mfn + off, step);
			job.done = off + step;
		}
		/*
		 * Count before the pages show up clean, so that whoever sees
		 * no dirty page left also sees them counted.
		 */
		if (job.b.kind == PG_BOOT)
			CTR_ADD(hv, scrub_pages_boot, job.done);
		else
			CTR_ADD(hv, scrub_pages_background, job.done);
		heap_put_scrubbed(&hv->heap, &job);
	}
	return NULL;
}

int
scrub_start(struct hv *hv)
{
	pthread_attr_t attr;
	uint32_t i;
	int rc;

	rc = scrub_plan(&hv->topo, hv->cfg.scrub_workers, &hv->workers,
	    &hv->nr_workers);
	if (rc < 0)
		return rc;
	for (i = 0; i < hv->nr_workers; i++)
		hv->heap.nodes[hv->workers[i].node].workers++;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (i = 0; i < hv->nr_workers; i++) {
		hv->workers[i].hv = hv;
		rc = -pthread_create(&hv->workers[i].thread, &attr, scrub_main,
		    &hv->workers[i]);
		if (rc < 0)
			break;
		hv->workers[i].started = true;
	}
	pthread_attr_destroy(&attr);
	if (rc < 0)
		scrub_stop(hv);
	return rc;
}

void
scrub_stop(struct hv *hv)
{
	uint32_t i;

	__atomic_store_n(&hv->scrub_stop, true, __ATOMIC_RELEASE);
	for (i = 0; i < hv->heap.nr_nodes; i++) {
		pthread_mutex_lock(&hv->heap.nodes[i].lock);
		pthread_cond_broadcast(&hv->heap.nodes[i].work);
		pthread_mutex_unlock(&hv->heap.nodes[i].lock);
	}
	for (i = 0; i < hv->nr_workers; i++)
		if (hv->workers[i].started)
			pthread_join(hv->workers[i].thread, NULL);
	for (i = 0; i < hv->heap.nr_nodes; i++)
		hv->heap.nodes[i].workers = 0;
	free(hv->workers);
	hv->workers = NULL;
	hv->nr_workers = 0;
}

/*
 * Inline-only mode (--scrub-workers 0): no background worker will ever
 * scrub, so the boot scrub is done here, before anything is served;
 * otherwise memory would stay dirty from boot and a client waiting for
 * the scrub (vmctl scrub --wait) would wait for nothing.  It also maps
 * all of the memory in (memory.c), so that later inline scrubs run at
 * memory speed.  One thread per node, on the node's CPUs with
 * --topology host.  Memory freed later stays dirty until an allocation
 * takes it and scrubs it inline; scrub progress says workers = 0.
 */
struct boot_arg {
	struct hv *hv;
	uint32_t node;
};

static void *
boot_node_main(void *arg)
{
	struct boot_arg *a = arg;
	struct hv *hv = a->hv;
	struct scrub_job job;

	if (hv->cfg.pin_host)
		(void)topo_pin_host_node(a->node);
	memset(&job, 0, sizeof(job));
	while (heap_take_dirty(&hv->heap, a->node, SCRUB_ORDER, &job) == 0) {
		job.done = 1ull << job.b.order;
		mem_zero(&hv->mem, job.b.mfn, job.done);
		CTR_ADD(hv, scrub_pages_boot, job.done);
		heap_put_scrubbed(&hv->heap, &job);
	}
	return NULL;
}

void
scrub_boot_inline(struct hv *hv)
{
	uint32_t i, n = hv->heap.nr_nodes;
	struct boot_arg *a = calloc(n, sizeof(*a));
	pthread_t *t = calloc(n, sizeof(*t));
	bool *started = calloc(n, sizeof(*started));

	for (i = 0; i < n; i++) {
		struct boot_arg one = { hv, i };

		/* Without memory or a thread, this thread does the node. */
		if (a && t && started) {
			a[i] = one;
			started[i] = pthread_create(&t[i], NULL,
			    boot_node_main, &a[i]) == 0;
			if (started[i])
				continue;
		}
		boot_node_main(&one);
	}
	for (i = 0; a && t && started && i < n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	free(a);
	free(t);
	free(started);
}

/* Rates are computed over windows of at least 250 ms between samples. */
#define RATE_WINDOW_NS	250000000ull

void
scrub_node_progress(struct hv *hv, uint32_t node, struct hv_scrub_node *out)
{
	struct hnode *n = &hv->heap.nodes[node];
	uint64_t now = hv_now_ns(), tot;

	pthread_mutex_lock(&n->lock);
	tot = ATOMIC_LOAD(&n->scrubbed_total);
	if (n->rate_t == 0) {
		n->rate_t = now;
		n->rate_total = tot;
	} else if (now - n->rate_t >= RATE_WINDOW_NS) {
		n->rate = (uint64_t)((double)(tot - n->rate_total) * 1e9 /
		    (double)(now - n->rate_t));
		n->rate_t = now;
		n->rate_total = tot;
	}
	*out = (struct hv_scrub_node){
		.node = node,
		.workers = n->workers,
		.total_pages = n->pages,
		.free_pages = n->free_pages,
		.dirty_pages = n->dirty_pages,
		.scrubbed_pages_total = tot,
		.rate_pages_per_sec = n->rate,
		.boot_scrub_done = n->boot_done,
		.clean_1g_blocks = n->clean_top_blocks,
	};
	pthread_mutex_unlock(&n->lock);
}
