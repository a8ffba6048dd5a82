/*
 * hvsim.h - private header of hvsim, the companion hypervisor as a
 * user-space process.  Prototypes are grouped by the file defining them.
 *
 * hvsim executes no guest code: domains are memory, vCPU counts and a
 * synthetic shadow-paging workload.  What it does for real is the
 * hypervisor's memory work: the buddy heap, TLB-flush filtering with a
 * real broadcast to simulated CPU threads, scrubbing (real stores when the
 * memory is real) and populate.
 */
#ifndef HVSIM_H
#define HVSIM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmbuild/hvabi.h"

struct hv;
struct domain;

#define CHUNK_ORDER		9	/* metadata granule: 2 MiB */
#define CHUNK_PAGES		(1u << CHUNK_ORDER)
#define SCRUB_ORDER		15	/* 128 MiB per scrub step */

/* Relaxed atomic counter updates; counters are monotonic statistics. */
#define CTR_ADD(hv, field, n) \
	__atomic_fetch_add(&(hv)->ctr.field, (uint64_t)(n), __ATOMIC_RELAXED)
#define ATOMIC_LOAD(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define ATOMIC_ADD(p, n)	__atomic_fetch_add((p), (n), __ATOMIC_RELAXED)

struct hv_config {
	const char *socket_path;
	uint32_t nodes;
	uint32_t cpus_per_node;		/* logical CPUs (threads) per node */
	uint32_t threads_per_core;
	uint64_t mem_per_node;		/* bytes, multiple of 2 MiB */
	uint32_t backing;		/* enum hv_backing */
	uint32_t flush_mode;		/* enum hv_flush_mode */
	int32_t scrub_workers;		/* -1: one per core */
	uint32_t shadow_threshold;
	bool boot_scrub;
	uint32_t max_conns;
	uint64_t preempt_pages;		/* populate work per call */
	uint32_t switch_hz;		/* context-switch flushes per CPU */
	uint32_t shadow_bg_writes;	/* background writes per 100 ms */
	bool verbose;
	bool pin_host;			/* nodes are this machine's nodes */
	bool fault_requests;		/* HV_OP_FAULT is served */
};

void hv_config_defaults(struct hv_config *cfg);

/* ------------------------------------------------------------------ */
/* clock.c - the clocks every part reads */

uint64_t hv_now_ns(void);		/* CLOCK_MONOTONIC */
uint64_t hv_realtime_ns(void);		/* CLOCK_REALTIME */

/* ------------------------------------------------------------------ */
/* topology.c */

struct topo {
	uint32_t nr_nodes;
	uint32_t cores_per_node;
	uint32_t threads_per_core;
	uint32_t nr_cpus;
	struct hv_cpu_info *cpus;	/* [nr_cpus] */
};

int topo_init(struct topo *t, uint32_t nodes, uint32_t cpus_per_node,
    uint32_t threads_per_core);
int topo_host(uint32_t *ret_nodes, uint32_t *ret_cpus_per_node,
    uint32_t *ret_threads_per_core);
void topo_fini(struct topo *t);
/* Pin the calling thread to the CPUs of host node `node`; 0 or -errno. */
int topo_pin_host_node(uint32_t node);
uint32_t topo_cpu(const struct topo *t, uint32_t node, uint32_t core,
    uint32_t thread);

/* ------------------------------------------------------------------ */
/* memory.c */

struct hvmem {
	uint32_t backing;
	uint8_t *base;		/* frame m at base + (m << 12); NULL: phantom */
	uint64_t bytes;
	uint8_t *map;		/* the reservation base lies in */
	size_t map_len;
	bool huge;		/* transparent huge pages were granted */
};

int mem_init(struct hvmem *m, uint32_t backing, uint64_t bytes);
void mem_fini(struct hvmem *m);
/* Node i's `per_node` bytes prefer this machine's node i (--topology host). */
int mem_bind_host_nodes(const struct hvmem *m, uint32_t nodes,
    uint64_t per_node);
/* NULL for phantom memory. */
void *mem_page(const struct hvmem *m, uint64_t mfn);
/*
 * Zero pages with non-temporal stores (a page never touched is mapped in
 * by the first of them).  Nothing when phantom.
 */
void mem_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr);
void mem_ntzero(void *p, size_t len);
/* Test helper: true when every byte of the pages is zero (phantom: true). */
bool mem_is_zero(const struct hvmem *m, uint64_t mfn, uint64_t nr);

/* ------------------------------------------------------------------ */
/* heap.c - per-node buddy allocator, orders 0..HV_MAX_ORDER. */

enum pg_kind { PG_CLEAN = 0, PG_DIRTY = 1, PG_BOOT = 2 };

struct pinfo {
	uint32_t next, prev;	/* free list links, node-relative indices */
	uint64_t tlbflush_ts;	/* flush clock when freed */
	uint8_t order;
	uint8_t flags;		/* PIF_* */
	uint8_t kind;		/* enum pg_kind */
	uint8_t pad[5];
};

/*
 * Metadata per 2 MiB chunk, not per page: an unsplit chunk is described
 * by `head`; only chunks split below order 9 get a 512-entry `sub`
 * array.  A 2 TiB phantom host of 2 MiB and 1 GiB extents thus needs
 * 32 bytes per 2 MiB.
 */
struct chunk {
	struct pinfo head;
	struct pinfo *sub;
};

/* One allocated or freed block. */
struct hblock {
	uint64_t mfn;
	uint32_t node;
	uint8_t order;
	uint8_t kind;		/* enum pg_kind before it was handed out */
	bool need_flush;
	uint64_t tlbflush_ts;
};

/*
 * A background scrub in flight: a dirty block a worker has taken off the
 * free lists.  The worker scrubs it in 2 MiB steps and checks `abort`
 * before each; an allocator that needs the pages sets it (Xen's
 * BUDDY_SCRUB_ABORT), and the worker gives the block back at once, the
 * scrubbed part clean and the rest still dirty.
 */
struct scrub_job {
	struct hblock b;
	uint64_t done;		/* pages scrubbed from b.mfn on */
	bool abort;		/* atomic: an allocator wants the pages */
	struct scrub_job *next;	/* the node's jobs, under the node lock */
};

#define SCRUB_STEP_PAGES	CHUNK_PAGES	/* abort granule: 2 MiB */

struct hnode {
	pthread_mutex_t lock;
	pthread_cond_t work;	/* scrub workers: dirty pages appeared */
	pthread_cond_t done;	/* allocators: scrubbing pages came back */
	uint32_t node;
	uint32_t workers;	/* background scrub workers on this node */
	uint64_t first_mfn;
	uint64_t pages;
	struct chunk *chunks;
	uint32_t list[2][HV_MAX_ORDER + 1];	/* [clean, dirty][order] */
	uint64_t free_pages;	/* on lists + being scrubbed */
	uint64_t dirty_pages;	/* dirty on lists + being scrubbed */
	uint64_t boot_dirty_pages;
	uint64_t scrubbing_pages;	/* off the lists, being scrubbed */
	/*
	 * Clean free blocks of HV_MAX_ORDER (1 GiB) on the lists: what
	 * 1 GiB extents can take without scrubbing (scrub progress).
	 */
	uint32_t clean_top_blocks;
	struct scrub_job *jobs;		/* background scrubs in flight */
	uint32_t alloc_waiters;		/* allocators waiting for those */
	uint64_t scrubbed_total;	/* atomic */
	bool boot_done;
	/* rate sampling (scrub.c), under lock */
	uint64_t rate_t, rate_total, rate;
};

struct heap {
	uint32_t nr_nodes;
	uint64_t total_pages;
	const struct hvmem *mem;
	struct hv *hv;		/* counters; may be NULL in unit tests */
	struct hnode *nodes;
};

int heap_init(struct heap *h, struct hv *hv, const struct hvmem *mem,
    uint32_t nr_nodes, uint64_t pages_per_node, bool dirty);
void heap_fini(struct heap *h);
/*
 * Allocate 1 << order pages on `node`.  Clean pages first.  When
 * allow_dirty is set or no background worker serves the node, dirty pages
 * are taken too and scrubbed inline right away (counted in *ret_inline),
 * and blocks in the background scrubbers' hands are called back (never a
 * timed sleep); otherwise only clean pages are taken.  -ENOMEM when the
 * node cannot satisfy it.
 */
int heap_alloc(struct heap *h, uint32_t node, uint32_t order,
    bool allow_dirty, struct hblock *ret_blk, uint64_t *ret_inline);
/* Give a block back; it merges with free buddies of the same kind. */
void heap_free(struct heap *h, const struct hblock *blk);
/* The same for many blocks: one lock and one scrubber wake-up a node. */
void heap_free_many(struct heap *h, const struct hblock *blks, size_t nr);
/*
 * Scrubber side: take a dirty block of order <= max_order into `job`;
 * -ENOENT if there is none, -EAGAIN while allocators wait for pages.
 */
int heap_take_dirty(struct heap *h, uint32_t node, uint32_t max_order,
    struct scrub_job *job);
/* True when an allocator has called the job's pages back. */
bool heap_scrub_aborted(const struct scrub_job *job);
/* Give the job's block back: job->done pages clean, the rest dirty. */
void heap_put_scrubbed(struct heap *h, struct scrub_job *job);
uint32_t heap_node_of(const struct heap *h, uint64_t mfn);
/* Check every invariant of a node; 0 or -EUCLEAN.  For tests. */
int heap_check(struct heap *h, uint32_t node);
uint64_t heap_free_pages(struct heap *h, uint32_t node);
uint64_t heap_dirty_pages(struct heap *h, uint32_t node);

/* ------------------------------------------------------------------ */
/* flush.c - per-CPU flush clocks and simulated CPU threads. */

#define CPUMASK_WORDS	(HV_MAX_CPUS / 64)
struct cpumask {
	uint64_t w[CPUMASK_WORDS];
};

struct flushctl {
	struct hv *hv;
	uint32_t nr_cpus;
	uint64_t clock;			/* atomic, the global flush clock */
	uint64_t *cpu_time;		/* [nr_cpus], clock at last flush */
	pthread_t *threads;
	uint32_t nr_threads;
	pthread_mutex_t serial;		/* one flush at a time, as Xen */
	pthread_mutex_t lock;
	pthread_cond_t req, ack;
	uint64_t gen;
	uint32_t pending;
	uint64_t stamp;			/* clock of the flush in progress */
	struct cpumask target;
	bool stop;
	uint32_t switch_hz;
	uint32_t running;		/* running domains (atomic) */
};

int flush_init(struct flushctl *f, struct hv *hv, uint32_t nr_cpus,
    uint32_t switch_hz);
void flush_fini(struct flushctl *f);
uint64_t flush_now(struct flushctl *f);
/*
 * The filter: the CPUs whose last flush is not later than `ts` (they may
 * still hold a TLB entry for a page freed at `ts`) are added to `mask`.
 * Every call counts one filter evaluation.  Returns the CPUs added.
 */
uint32_t flush_filter(struct flushctl *f, uint64_t ts, struct cpumask *mask);
/* Broadcast a flush to the CPUs of `mask` and wait for every ack. */
void flush_cpus(struct flushctl *f, const struct cpumask *mask, int cause);
void flush_running(struct flushctl *f, int delta);
uint32_t cpumask_weight(const struct cpumask *m, uint32_t nr);

/* ------------------------------------------------------------------ */
/* scrub.c */

struct scrub_worker {
	struct hv *hv;
	uint32_t node, core, cpu;
	pthread_t thread;
	bool started;
};

/* Placement: one worker per physical core, never two SMT siblings. */
int scrub_plan(const struct topo *t, int32_t want,
    struct scrub_worker **ret_w, uint32_t *ret_nr);
int scrub_start(struct hv *hv);
void scrub_stop(struct hv *hv);
/* Without workers: do the boot scrub now, before serving. */
void scrub_boot_inline(struct hv *hv);
void scrub_node_progress(struct hv *hv, uint32_t node,
    struct hv_scrub_node *out);

/* ------------------------------------------------------------------ */
/* shadow.c */

/* The unshadow heuristic, separated from the workload for unit tests. */
struct sh_track {
	uint32_t last_page;
	uint32_t consecutive;
	uint32_t zeros;
};

/* Returns an hv_unshadow_reason, or -1 if the page stays shadowed. */
int sh_heuristic(struct sh_track *t, uint32_t page, uint64_t val,
    uint32_t threshold);

struct shadow;
struct shadow *shadow_new(uint32_t domid);
void shadow_free(struct hv *hv, struct shadow *sh);
int shadow_run(struct hv *hv, struct shadow *sh, uint32_t pattern,
    uint64_t nr_writes, struct hv_shadow_workload_reply *rep);
int shadow_bg_start(struct hv *hv);
void shadow_bg_stop(struct hv *hv);

/* ------------------------------------------------------------------ */
/* domain.c */

struct p2m_ext {
	uint64_t gfn;
	uint64_t mfn;
	uint32_t order;
	uint32_t node;
};

/*
 * A gfn range a populate call has reserved while it allocates and scrubs
 * its pages outside the domain lock; other calls that overlap it wait
 * for it to become populated (then -EEXIST) or free again.
 */
struct gfn_resv {
	uint64_t gfn;
	uint32_t order;
	struct gfn_resv *next;
};

struct domain {
	hv_domid_t domid;
	uint32_t state;
	uint32_t flags;
	uint32_t max_vcpus;
	uint64_t max_pages;
	uint64_t tot_pages;
	uint64_t outstanding;	/* claim */
	uint64_t created_ns;
	uint8_t handle[16];
	char name[HV_NAME_LEN];
	uint64_t node_pages[HV_MAX_NODES];
	pthread_mutex_t lock;
	uint32_t refs;		/* under the table lock */
	struct p2m_ext *ext;	/* sorted by gfn */
	size_t nr_ext, cap_ext;
	struct gfn_resv *resv;	/* populates in flight, under lock */
	uint64_t resv_pages;	/* their pages, not yet in tot_pages */
	pthread_cond_t resv_done;	/* a reservation went away */
	struct shadow *sh;	/* NULL with HAP */
	/* Lifecycle, under lock (state and reason are read atomically). */
	uint32_t shutdown_reason;	/* HV_SHUTDOWN_*, in SHUTDOWN */
	uint32_t ctrl_features;		/* HV_CONTROL_FEATURE_* */
	uint32_t ctrl_request;		/* HV_CONTROL_NONE or HV_SHUTDOWN_* */
	/* Scheduling parameters (HV_OP_DOMAIN_SCHED), under lock. */
	uint32_t sched_weight;
	uint32_t sched_cap;
	/*
	 * Its vCPUs (HV_OP_DOMAIN_VCPU), under lock: nr_vcpus of them (its
	 * max_vcpus), each online or not, with a hard and a soft affinity
	 * of cpu_words words (the host's CPUs) each.
	 */
	uint32_t nr_vcpus;
	uint32_t nr_online;
	uint32_t cpu_words;
	uint8_t *vcpu_online;
	uint64_t *vcpu_hard;
	uint64_t *vcpu_soft;
	/*
	 * Log-dirty (HV_OP_DIRTY_LOG), under lock: a bit per page of
	 * [0, dirty_end), set by guest writes; NULL when the log is off.
	 */
	uint64_t *dirty;
	uint64_t dirty_end;
};

int dom_init(struct hv *hv);
void dom_fini(struct hv *hv);
int dom_create(struct hv *hv, const struct hv_domain_create *req,
    hv_domid_t *ret_domid);
int dom_destroy(struct hv *hv, hv_domid_t domid);
int dom_pause(struct hv *hv, hv_domid_t domid, bool pause);
int dom_set(struct hv *hv, uint16_t op, hv_domid_t domid, uint64_t value);
int dom_list(struct hv *hv, const struct hv_domain_list *req,
    struct hv_domain_info *out, uint32_t *ret_nr, uint32_t *ret_more);
struct domain *dom_get(struct hv *hv, hv_domid_t domid);
/* References to running shadow-paged domains (dom_put each). */
uint32_t dom_snapshot_shadow(struct hv *hv, struct domain **out, uint32_t max);
void dom_put(struct hv *hv, struct domain *d);
/* The domain stops with a reason (HV_OP_DOMAIN_SHUTDOWN). */
int dom_shutdown(struct hv *hv, hv_domid_t domid, uint32_t reason);
/* Everyday settings: HV_OP_DOMAIN_SCHED, HV_OP_DOMAIN_RENAME. */
int dom_sched(struct hv *hv, const struct hv_domain_sched *req,
    struct hv_domain_sched_reply *rep);
int dom_rename(struct hv *hv, const struct hv_domain_rename *req);
/* One vCPU read, and changed as `set` says (HV_OP_DOMAIN_VCPU). */
int dom_vcpu(struct hv *hv, const struct hv_domain_vcpu *req,
    struct hv_domain_vcpu_reply *rep);
/* Its PV control node (HV_OP_DOMAIN_CONTROL). */
int dom_control(struct hv *hv, const struct hv_domain_control *req,
    struct hv_domain_control_reply *rep);
/*
 * Wait until the domain generation (bumped by create, shutdown and
 * destroy) exceeds `since`, `timeout_ms` passed or dom_watch_stop() was
 * called; *ret_gen is the generation then.
 */
int dom_watch(struct hv *hv, uint64_t since, uint32_t timeout_ms,
    uint64_t *ret_gen);
/* Wake every dom_watch() for good (hvsim is stopping). */
void dom_watch_stop(struct hv *hv);
/* Under d->lock: add a populated extent, -EEXIST on overlap. */
int dom_p2m_add(struct domain *d, const struct p2m_ext *e);
/*
 * Under d->lock: reserve [gfn, gfn + 2^order) for a populate that will
 * allocate outside the lock.  Waits (on the lock) while another call has
 * an overlapping range in flight; then -EEXIST if populated, -ESRCH if
 * the domain is dying, -ENOMEM beyond max_pages (counting reservations).
 * dom_gfn_release drops it (after dom_p2m_add, or on failure).
 */
int dom_gfn_reserve(struct domain *d, struct gfn_resv *r, uint64_t gfn,
    uint32_t order);
void dom_gfn_release(struct domain *d, struct gfn_resv *r);
bool dom_p2m_overlaps(const struct domain *d, uint64_t gfn, uint32_t order);
/* Machine frames of gfn..gfn+nr; -ENOENT at a hole. */
int dom_map(struct hv *hv, hv_domid_t domid, uint64_t gfn, uint32_t nr,
    uint64_t *mfns);
/*
 * Copy len bytes between buf and guest-physical gpa (write: into the
 * guest).  -ENOENT at a hole, -EOPNOTSUPP with phantom memory.
 */
int dom_copy(struct hv *hv, hv_domid_t domid, uint64_t gpa, void *buf,
    uint32_t len, bool write);
/* HV_OP_DIRTY_LOG: `bits` has room for HV_MAX_DIRTY_BITS. */
int dom_dirty_log(struct hv *hv, const struct hv_dirty_log *req,
    struct hv_dirty_log_reply *rep, uint64_t *bits);
/*
 * Claims: pages a domain may still take from the host's free memory.
 * dom_claim_take reserves `pages` for an allocation about to be made
 * (-ENOMEM when they would eat into others' claims); after a failed
 * allocation dom_claim_undo gives the reservation and the claim back.
 * Whoever frees heap pages outside that pair calls dom_avail_give.
 */
int dom_claim_take(struct hv *hv, struct domain *d, uint64_t pages,
    uint64_t *ret_from_claim);
void dom_claim_undo(struct hv *hv, struct domain *d, uint64_t pages,
    uint64_t from_claim);
void dom_avail_give(struct hv *hv, uint64_t pages);
uint64_t dom_outstanding_total(struct hv *hv);

/* ------------------------------------------------------------------ */
/* counters.c */

void counters_snapshot(struct hv *hv, struct hv_counters *out);

/* ------------------------------------------------------------------ */
/* populate.c */

int populate(struct hv *hv, const struct hv_populate *req,
    const struct hv_extent *ext, struct hv_populate_reply *rep);

/* ------------------------------------------------------------------ */
/* fault.c - injected failures for tests (--fail, HV_OP_FAULT) */

struct fault_hit {
	uint16_t mode;		/* enum hv_fault_mode; HV_FAULT_QUERY: none */
	int error;		/* HV_FAULT_FAIL: positive errno */
	uint64_t call;		/* the op's calls so far, this one included */
};

/* "OP:N[:ERRNO|hang|crash]"; -EINVAL after saying why in `why`. */
int fault_parse(const char *spec, struct hv_fault *ret, char *why,
    size_t len);
/* Arm a fault at call nth of its op: from now on, or from the start. */
int fault_arm(const struct hv_fault *f, bool from_now);
void fault_clear(void);
/* Count one call of `op`: the fault armed for it, if any. */
struct fault_hit fault_check(uint16_t op);
void fault_report(struct hv_fault_reply *rep);
/* The lower-case HV_OP_ name, or NULL. */
const char *fault_op_name(uint16_t op);

/* ------------------------------------------------------------------ */
/* server.c */

int server_listen(const char *path);
/* Serve until *stop becomes true; one thread per connection. */
int server_run(struct hv *hv, int lfd, volatile int *stop);
/*
 * Handle one framed request (header already validated for magic and
 * length).  Writes the reply payload into `rep` (capacity
 * HV_MAX_PAYLOAD), its length and an fd to pass or -1.  Returns the
 * status.
 */
int server_dispatch(struct hv *hv, uint16_t op, const void *req, size_t len,
    void *rep, size_t *ret_len, int *ret_fd);
/*
 * A whole request (header checked for magic and length, payload read):
 * the version, HV_OP_FAULT, an injected fault, then server_dispatch.
 * *ret_hang: an injected hang, send no reply.  Returns the status.
 */
int server_handle(struct hv *hv, const struct hv_msg_hdr *h, const void *req,
    void *rep, size_t *ret_len, int *ret_fd, bool *ret_hang);

/* ------------------------------------------------------------------ */
/* hv.c - assembling the parts */

struct hv {
	struct hv_config cfg;
	struct topo topo;
	struct hvmem mem;
	struct heap heap;
	struct flushctl flush;
	struct hv_counters ctr;
	uint64_t boot_time_ns;

	struct scrub_worker *workers;
	uint32_t nr_workers;
	bool scrub_stop;

	pthread_mutex_t dom_lock;
	struct domain **doms;	/* [HV_DOMID_MAX + 1] */
	hv_domid_t next_domid;
	uint32_t nr_doms;
	uint64_t dom_gen;	/* under dom_lock: create, shutdown, destroy */
	pthread_cond_t dom_changed;	/* with dom_lock: dom_gen moved */
	bool	watch_stop;
	pthread_mutex_t claim_lock;
	uint64_t outstanding;	/* sum of claims */
	uint64_t avail;		/* free pages not reserved by allocations */

	pthread_t shadow_thread;
	bool shadow_started;
	pthread_mutex_t shadow_lock;
	pthread_cond_t shadow_cond;
	bool shadow_stop;
};

int hv_init(struct hv **ret_hv, const struct hv_config *cfg);
void hv_fini(struct hv *hv);
int hv_parse_size(const char *s, uint64_t *ret);
void hv_log(struct hv *hv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * The last HV_LOG_RING bytes hv_log wrote, oldest first, into buf
 * (HV_LOG_RING bytes); `clear` empties the ring.  Returns the length.
 */
size_t hv_log_read(char *buf, bool clear);

#endif /* HVSIM_H */
