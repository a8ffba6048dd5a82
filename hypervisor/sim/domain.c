/*
 * domain.c - domains: create, destroy, pause, unpause, list, limits,
 * claims, and the physical-to-machine map used by populate, translation
 * and guest memory copies.
 *
 * Locking: the table lock (hv->dom_lock) protects the table and the
 * reference counts; a domain's own lock protects its p2m, its gfn
 * reservations and page counts.  A populate holds it only to reserve an
 * extent's gfns and, once the pages are allocated and scrubbed, to record
 * them (as Xen's assign_pages takes page_alloc_lock briefly), so that
 * populates of one domain on several nodes scrub in parallel.  Order:
 * domain lock, then claim lock or a heap node lock; the table lock is
 * never held while taking a domain lock.
 * Fields read by list without the domain lock are read atomically.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvsim.h"

int
dom_init(struct hv *hv)
{
	hv->doms = calloc(HV_DOMID_MAX + 1, sizeof(*hv->doms));
	if (!hv->doms)
		return -ENOMEM;
	hv->next_domid = HV_DOMID_FIRST;
	hv->dom_gen = 1;
	pthread_mutex_init(&hv->dom_lock, NULL);
	pthread_cond_init(&hv->dom_changed, NULL);
	pthread_mutex_init(&hv->claim_lock, NULL);
	hv->avail = hv->heap.total_pages;
	return 0;
}

static void
dom_free(struct hv *hv, struct domain *d)
{
	shadow_free(hv, d->sh);
	free(d->ext);
	free(d->vcpu_online);
	free(d->vcpu_hard);
	free(d->vcpu_soft);
	free(d->dirty);
	pthread_cond_destroy(&d->resv_done);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* Give every page back to the heap: free, dirty, and needing a flush. */
static void
dom_release_memory(struct hv *hv, struct domain *d)
{
	uint64_t ts = flush_now(&hv->flush), pages = 0;
	struct hblock *b = calloc(d->nr_ext ? d->nr_ext : 1, sizeof(*b));
	size_t i;

	for (i = 0; i < d->nr_ext; i++) {
		struct hblock one = {
			.mfn = d->ext[i].mfn,
			.node = d->ext[i].node,
			.order = (uint8_t)d->ext[i].order,
			.kind = PG_DIRTY,
			.need_flush = true,
			.tlbflush_ts = ts,
		};

		/* Without memory for the batch, one at a time. */
		if (b)
			b[i] = one;
		else
			heap_free(&hv->heap, &one);
		pages += 1ull << one.order;
	}
	if (b)
		heap_free_many(&hv->heap, b, d->nr_ext);
	free(b);
	dom_avail_give(hv, pages);
	d->nr_ext = 0;
	__atomic_store_n(&d->tot_pages, 0, __ATOMIC_RELAXED);
	memset(d->node_pages, 0, sizeof(d->node_pages));
}

void
dom_fini(struct hv *hv)
{
	uint32_t i;

	if (!hv->doms)
		return;
	for (i = 0; i <= HV_DOMID_MAX; i++)
		if (hv->doms[i])
			dom_free(hv, hv->doms[i]);
	free(hv->doms);
	hv->doms = NULL;
	pthread_mutex_destroy(&hv->dom_lock);
	pthread_cond_destroy(&hv->dom_changed);
	pthread_mutex_destroy(&hv->claim_lock);
}

/*
 * A domain's claim changes under claim_lock, and dom_info() reads it
 * without that lock (as its other counts): the store is atomic too.
 */
static void
claim_store(struct domain *d, uint64_t pages)
{
	__atomic_store_n(&d->outstanding, pages, __ATOMIC_RELAXED);
}

/* The valid bits of word w of a CPU bitmap: the host's CPUs. */
static uint64_t
host_cpus_word(const struct hv *hv, uint32_t w)
{
	uint32_t n = hv->topo.nr_cpus;

	if ((uint64_t)w * 64 >= n)
		return 0;
	return n - w * 64 >= 64 ? ~0ull : (1ull << (n - w * 64)) - 1;
}

/*
 * State for `n` vCPUs, under d->lock or before the domain is shared:
 * those kept as they were, new ones online with every CPU of the host
 * in both affinities (as Xen creates a vCPU: any CPU).
 */
static int
dom_vcpus_resize(struct hv *hv, struct domain *d, uint32_t n)
{
	uint32_t w = d->cpu_words, keep = n < d->nr_vcpus ? n : d->nr_vcpus;
	uint8_t *on = calloc(n, 1);
	uint64_t *hard = calloc((size_t)n * w, sizeof(*hard));
	uint64_t *soft = calloc((size_t)n * w, sizeof(*soft));

	if (!on || !hard || !soft) {
		free(on);
		free(hard);
		free(soft);
		return -ENOMEM;
	}
	if (keep) {
		memcpy(on, d->vcpu_online, keep);
		memcpy(hard, d->vcpu_hard, (size_t)keep * w * sizeof(*hard));
		memcpy(soft, d->vcpu_soft, (size_t)keep * w * sizeof(*soft));
	}
	d->nr_online = 0;
	for (uint32_t v = 0; v < n; v++) {
		for (uint32_t i = 0; v >= keep && i < w; i++)
			hard[v * w + i] = soft[v * w + i] =
			    host_cpus_word(hv, i);
		on[v] |= v >= keep;
		d->nr_online += on[v];
	}
	free(d->vcpu_online);
	free(d->vcpu_hard);
	free(d->vcpu_soft);
	d->vcpu_online = on;
	d->vcpu_hard = hard;
	d->vcpu_soft = soft;
	d->nr_vcpus = n;
	return 0;
}

/* Under dom_lock: tell the watchers (dom_watch) something changed. */
static void
dom_changed(struct hv *hv)
{
	hv->dom_gen++;
	pthread_cond_broadcast(&hv->dom_changed);
}

int
dom_create(struct hv *hv, const struct hv_domain_create *req,
    hv_domid_t *ret_domid)
{
	struct domain *d;
	uint32_t i;
	hv_domid_t id;
	int rc;

	if (req->flags & ~(HV_DOMF_HVM | HV_DOMF_HAP) ||
	    req->max_vcpus == 0 || req->max_vcpus > HV_MAX_CPUS ||
	    !memchr(req->name, '\0', HV_NAME_LEN))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->resv_done, NULL);
	d->state = HV_DOMSTATE_PAUSED;
	d->flags = req->flags;
	d->max_vcpus = req->max_vcpus;
	d->max_pages = req->max_pages;
	d->created_ns = hv_realtime_ns();
	d->ctrl_request = HV_CONTROL_NONE;
	d->sched_weight = HV_SCHED_WEIGHT_DEFAULT;
	memcpy(d->handle, req->handle, sizeof(d->handle));
	memcpy(d->name, req->name, HV_NAME_LEN);
	d->refs = 1;	/* the table's */
	d->cpu_words = (hv->topo.nr_cpus + 63) / 64;
	if (dom_vcpus_resize(hv, d, d->max_vcpus) < 0) {
		dom_free(hv, d);
		return -ENOMEM;
	}

	pthread_mutex_lock(&hv->dom_lock);
	rc = -ENOSPC;
	/* Domids are not reused right away: a client may still hold one. */
	for (i = 0, id = hv->next_domid; i <= HV_DOMID_MAX; i++) {
		if (id > HV_DOMID_MAX || id < HV_DOMID_FIRST)
			id = HV_DOMID_FIRST;
		if (!hv->doms[id]) {
			d->domid = id;
			hv->doms[id] = d;
			hv->nr_doms++;
			hv->next_domid = id + 1;
			dom_changed(hv);
			rc = 0;
			break;
		}
		id++;
	}
	pthread_mutex_unlock(&hv->dom_lock);
	if (rc < 0) {
		dom_free(hv, d);
		return rc;
	}
	CTR_ADD(hv, domains_created, 1);
	*ret_domid = d->domid;
	return 0;
}

struct domain *
dom_get(struct hv *hv, hv_domid_t domid)
{
	struct domain *d = NULL;

	if (domid > HV_DOMID_MAX)
		return NULL;
	pthread_mutex_lock(&hv->dom_lock);
	d = hv->doms[domid];
	if (d)
		d->refs++;
	pthread_mutex_unlock(&hv->dom_lock);
	return d;
}

void
dom_put(struct hv *hv, struct domain *d)
{
	bool last;

	if (!d)
		return;
	pthread_mutex_lock(&hv->dom_lock);
	last = --d->refs == 0;
	pthread_mutex_unlock(&hv->dom_lock);
	if (last)
		dom_free(hv, d);
}

int
dom_destroy(struct hv *hv, hv_domid_t domid)
{
	struct domain *d = NULL;

	pthread_mutex_lock(&hv->dom_lock);
	if (domid <= HV_DOMID_MAX && hv->doms[domid]) {
		d = hv->doms[domid];
		hv->doms[domid] = NULL;
		hv->nr_doms--;
		dom_changed(hv);
	}
	pthread_mutex_unlock(&hv->dom_lock);
	if (!d)
		return -ESRCH;
	/*
	 * We now hold the table's reference.  Populates in flight see DYING
	 * when they come back to record their pages, and give them back to
	 * the heap themselves; waiters on a reservation see it too.
	 */
	pthread_mutex_lock(&d->lock);
	if (d->state == HV_DOMSTATE_RUNNING)
		flush_running(&hv->flush, -1);
	d->state = HV_DOMSTATE_DYING;
	pthread_cond_broadcast(&d->resv_done);
	dom_release_memory(hv, d);
	pthread_mutex_lock(&hv->claim_lock);
	hv->outstanding -= d->outstanding;
	claim_store(d, 0);
	pthread_mutex_unlock(&hv->claim_lock);
	pthread_mutex_unlock(&d->lock);
	CTR_ADD(hv, domains_destroyed, 1);
	dom_put(hv, d);
	return 0;
}

int
dom_pause(struct hv *hv, hv_domid_t domid, bool pause)
{
	struct domain *d = dom_get(hv, domid);
	int rc = 0;

	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	if (d->state == HV_DOMSTATE_DYING) {
		rc = -ESRCH;
	} else if (pause && d->state == HV_DOMSTATE_RUNNING) {
		__atomic_store_n(&d->state, HV_DOMSTATE_PAUSED,
		    __ATOMIC_RELAXED);
		flush_running(&hv->flush, -1);
	} else if (!pause && d->state == HV_DOMSTATE_PAUSED) {
		if (!(d->flags & HV_DOMF_HAP) && !d->sh) {
			/* Shadow state exists once the guest first runs. */
			d->sh = shadow_new(d->domid);
			if (!d->sh)
				rc = -ENOMEM;
		}
		if (rc == 0) {
			/* Release: whoever sees RUNNING also sees d->sh. */
			__atomic_store_n(&d->state, HV_DOMSTATE_RUNNING,
			    __ATOMIC_RELEASE);
			flush_running(&hv->flush, 1);
		}
	}
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

/*
 * Lifecycle.  A shut-down domain keeps its memory and counts as not
 * running (no flush reaches it), as a Xen domain after SCHEDOP_shutdown;
 * only destroy takes it further.  The reason is stored before the state,
 * so that whoever sees SHUTDOWN sees its reason.
 */
int
dom_shutdown(struct hv *hv, hv_domid_t domid, uint32_t reason)
{
	struct domain *d;
	bool changed = false;
	int rc = 0;

	if (reason > HV_SHUTDOWN_MAX)
		return -EINVAL;
	d = dom_get(hv, domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	if (d->state == HV_DOMSTATE_DYING) {
		rc = -ESRCH;
	} else if (d->state != HV_DOMSTATE_SHUTDOWN) {
		if (d->state == HV_DOMSTATE_RUNNING)
			flush_running(&hv->flush, -1);
		__atomic_store_n(&d->shutdown_reason, reason,
		    __ATOMIC_RELAXED);
		__atomic_store_n(&d->state, HV_DOMSTATE_SHUTDOWN,
		    __ATOMIC_RELEASE);
		d->ctrl_request = HV_CONTROL_NONE;
		changed = true;
	}
	pthread_mutex_unlock(&d->lock);
	if (changed) {
		pthread_mutex_lock(&hv->dom_lock);
		dom_changed(hv);
		pthread_mutex_unlock(&hv->dom_lock);
	}
	dom_put(hv, d);
	return rc;
}

int
dom_control(struct hv *hv, const struct hv_domain_control *req,
    struct hv_domain_control_reply *rep)
{
	struct domain *d;
	int rc = 0;

	if (req->pad != 0 || req->op > HV_CONTROL_TAKE ||
	    (req->op == HV_CONTROL_REQUEST && req->value > HV_SHUTDOWN_MAX) ||
	    (req->op == HV_CONTROL_ANNOUNCE && (req->value &
	    ~(HV_CONTROL_FEATURE_POWEROFF | HV_CONTROL_FEATURE_REBOOT))))
		return -EINVAL;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	memset(rep, 0, sizeof(*rep));
	rep->before = d->ctrl_request;
	if (d->state == HV_DOMSTATE_DYING) {
		rc = -ESRCH;
	} else {
		switch (req->op) {
		case HV_CONTROL_REQUEST:
			d->ctrl_request = req->value;
			break;
		case HV_CONTROL_WITHDRAW:
		case HV_CONTROL_TAKE:
			d->ctrl_request = HV_CONTROL_NONE;
			break;
		case HV_CONTROL_ANNOUNCE:
			d->ctrl_features = req->value;
			break;
		default:
			break;
		}
	}
	rep->features = d->ctrl_features;
	rep->request = d->ctrl_request;
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

/*
 * Scheduling parameters, checked as Xen's credit2 checks them (weight
 * 1..65535, cap at most 100 per vCPU), kept and reported.
 */
int
dom_sched(struct hv *hv, const struct hv_domain_sched *req,
    struct hv_domain_sched_reply *rep)
{
	struct domain *d;
	int rc = 0;

	if (req->set & ~(HV_SCHED_SET_WEIGHT | HV_SCHED_SET_CAP) ||
	    ((req->set & HV_SCHED_SET_WEIGHT) &&
	    (req->weight == 0 || req->weight > 65535)))
		return -EINVAL;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	if (d->state == HV_DOMSTATE_DYING)
		rc = -ESRCH;
	else if ((req->set & HV_SCHED_SET_CAP) &&
	    req->cap > 100ull * d->max_vcpus)
		rc = -EINVAL;
	if (rc == 0 && (req->set & HV_SCHED_SET_WEIGHT))
		d->sched_weight = req->weight;
	if (rc == 0 && (req->set & HV_SCHED_SET_CAP))
		d->sched_cap = req->cap;
	memset(rep, 0, sizeof(*rep));
	rep->scheduler = HV_SCHED_CREDIT2;
	rep->weight = d->sched_weight;
	rep->cap = d->sched_cap;
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

int
dom_rename(struct hv *hv, const struct hv_domain_rename *req)
{
	struct domain *d;
	int rc = 0;

	if (req->pad != 0 || !memchr(req->name, '\0', HV_NAME_LEN))
		return -EINVAL;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	if (d->state == HV_DOMSTATE_DYING)
		rc = -ESRCH;
	else
		memcpy(d->name, req->name, HV_NAME_LEN);
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

/* An affinity asked for: some CPU, none the host lacks. */
static bool
cpumap_ok(const struct hv *hv, const uint64_t *map)
{
	bool any = false;

	for (uint32_t w = 0; w < HV_CPUMAP_WORDS; w++) {
		if (map[w] & ~host_cpus_word(hv, w))
			return false;
		any = any || map[w] != 0;
	}
	return any;
}

/*
 * One vCPU: read, and changed as req->set says, checked as Xen checks a
 * vCPU's number and affinity; the last online vCPU stays online.
 */
int
dom_vcpu(struct hv *hv, const struct hv_domain_vcpu *req,
    struct hv_domain_vcpu_reply *rep)
{
	const uint32_t all = HV_VCPU_SET_ONLINE | HV_VCPU_SET_HARD |
	    HV_VCPU_SET_SOFT;
	struct domain *d;
	uint32_t v = req->vcpu, w;
	int rc = 0;

	if ((req->set & ~all) || req->online > 1 ||
	    ((req->set & HV_VCPU_SET_HARD) && !cpumap_ok(hv, req->hard)) ||
	    ((req->set & HV_VCPU_SET_SOFT) && !cpumap_ok(hv, req->soft)))
		return -EINVAL;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	w = d->cpu_words;
	if (d->state == HV_DOMSTATE_DYING)
		rc = -ESRCH;
	else if (v >= d->nr_vcpus)
		rc = -EINVAL;
	else if ((req->set & HV_VCPU_SET_ONLINE) && !req->online &&
	    d->vcpu_online[v] && d->nr_online == 1)
		rc = -EBUSY;
	if (rc == 0 && (req->set & HV_VCPU_SET_ONLINE)) {
		d->nr_online = d->nr_online - d->vcpu_online[v] + req->online;
		d->vcpu_online[v] = (uint8_t)req->online;
	}
	if (rc == 0 && (req->set & HV_VCPU_SET_HARD))
		memcpy(&d->vcpu_hard[v * w], req->hard, w * sizeof(uint64_t));
	if (rc == 0 && (req->set & HV_VCPU_SET_SOFT))
		memcpy(&d->vcpu_soft[v * w], req->soft, w * sizeof(uint64_t));
	if (rc == 0) {
		memset(rep, 0, sizeof(*rep));
		rep->online = d->vcpu_online[v];
		rep->nr_online = d->nr_online;
		memcpy(rep->hard, &d->vcpu_hard[v * w], w * sizeof(uint64_t));
		memcpy(rep->soft, &d->vcpu_soft[v * w], w * sizeof(uint64_t));
	}
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

int
dom_watch(struct hv *hv, uint64_t since, uint32_t timeout_ms,
    uint64_t *ret_gen)
{
	struct timespec until;

	if (timeout_ms > HV_WATCH_MAX_MS)
		timeout_ms = HV_WATCH_MAX_MS;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&hv->dom_lock);
	while (hv->dom_gen <= since && !hv->watch_stop &&
	    pthread_cond_timedwait(&hv->dom_changed, &hv->dom_lock,
	    &until) == 0)
		;
	*ret_gen = hv->dom_gen;
	pthread_mutex_unlock(&hv->dom_lock);
	return 0;
}

void
dom_watch_stop(struct hv *hv)
{
	pthread_mutex_lock(&hv->dom_lock);
	hv->watch_stop = true;
	pthread_cond_broadcast(&hv->dom_changed);
	pthread_mutex_unlock(&hv->dom_lock);
}

/*
 * Claims and the pages they guard.  hv->avail counts the free pages that
 * no allocation in flight has reserved; it changes only under claim_lock.
 * The invariant avail >= outstanding (the sum of claims) is what makes a
 * claim a guarantee: an allocation reserves its pages from avail here,
 * under the same lock as the check, before it goes to the heap, so two
 * allocations cannot both pass the check against the same free pages (as
 * Xen, which checks and allocates under its heap_lock).  The heap itself
 * is not held meanwhile, so that allocations on different nodes, and
 * their inline scrubbing, still run in parallel.
 */

void
dom_avail_give(struct hv *hv, uint64_t pages)
{
	pthread_mutex_lock(&hv->claim_lock);
	hv->avail += pages;
	pthread_mutex_unlock(&hv->claim_lock);
}

/* Under d->lock. */
static int
dom_claim_set(struct hv *hv, struct domain *d, uint64_t pages)
{
	uint64_t have = d->tot_pages + d->resv_pages;
	uint64_t want = pages > have ? pages - have : 0;
	int rc = 0;

	pthread_mutex_lock(&hv->claim_lock);
	if (pages == 0) {
		hv->outstanding -= d->outstanding;
		claim_store(d, 0);
	} else if (hv->avail < hv->outstanding - d->outstanding + want) {
		rc = -ENOMEM;
	} else {
		hv->outstanding = hv->outstanding - d->outstanding + want;
		claim_store(d, want);
	}
	pthread_mutex_unlock(&hv->claim_lock);
	return rc;
}

int
dom_claim_take(struct hv *hv, struct domain *d, uint64_t pages,
    uint64_t *ret_from_claim)
{
	uint64_t from, others;
	int rc = 0;

	pthread_mutex_lock(&hv->claim_lock);
	from = d->outstanding < pages ? d->outstanding : pages;
	others = hv->outstanding - d->outstanding;
	/*
	 * Pages beyond our claim come out of what nobody has reserved or
	 * claimed.  The claimed part needs no check: avail >= outstanding
	 * already holds for it.
	 */
	if (pages > from && hv->avail < others + (pages - from)) {
		rc = -ENOMEM;
	} else {
		claim_store(d, d->outstanding - from);
		hv->outstanding -= from;
		hv->avail -= pages;
		*ret_from_claim = from;
	}
	pthread_mutex_unlock(&hv->claim_lock);
	return rc;
}

void
dom_claim_undo(struct hv *hv, struct domain *d, uint64_t pages,
    uint64_t from_claim)
{
	pthread_mutex_lock(&hv->claim_lock);
	claim_store(d, d->outstanding + from_claim);
	hv->outstanding += from_claim;
	hv->avail += pages;
	pthread_mutex_unlock(&hv->claim_lock);
}

uint64_t
dom_outstanding_total(struct hv *hv)
{
	uint64_t v;

	pthread_mutex_lock(&hv->claim_lock);
	v = hv->outstanding;
	pthread_mutex_unlock(&hv->claim_lock);
	return v;
}

int
dom_set(struct hv *hv, uint16_t op, hv_domid_t domid, uint64_t value)
{
	struct domain *d = dom_get(hv, domid);
	int rc = 0;

	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	switch (op) {
	case HV_OP_DOMAIN_MAX_VCPUS:
		if (value == 0 || value > HV_MAX_CPUS)
			rc = -EINVAL;
		else if ((rc = dom_vcpus_resize(hv, d, (uint32_t)value)) == 0)
			__atomic_store_n(&d->max_vcpus, (uint32_t)value,
			    __ATOMIC_RELAXED);
		break;
	case HV_OP_DOMAIN_MAX_MEM:
		__atomic_store_n(&d->max_pages, value, __ATOMIC_RELAXED);
		break;
	case HV_OP_CLAIM:
		rc = dom_claim_set(hv, d, value);
		break;
	default:
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

static void
dom_info(struct domain *d, struct hv_domain_info *o)
{
	uint32_t i;

	memset(o, 0, sizeof(*o));
	o->domid = d->domid;
	o->state = ATOMIC_LOAD(&d->state);
	o->flags = d->flags;
	if (o->state == HV_DOMSTATE_SHUTDOWN)
		o->flags |= (ATOMIC_LOAD(&d->shutdown_reason) &
		    HV_DOMINF_SHUTDOWN_MASK) << HV_DOMINF_SHUTDOWN_SHIFT;
	o->max_vcpus = ATOMIC_LOAD(&d->max_vcpus);
	o->tot_pages = ATOMIC_LOAD(&d->tot_pages);
	o->max_pages = ATOMIC_LOAD(&d->max_pages);
	o->outstanding_pages = ATOMIC_LOAD(&d->outstanding);
	o->created_ns = d->created_ns;
	memcpy(o->handle, d->handle, sizeof(o->handle));
	memcpy(o->name, d->name, HV_NAME_LEN);
	for (i = 0; i < HV_MAX_NODES; i++)
		o->node_pages[i] = ATOMIC_LOAD(&d->node_pages[i]);
}

int
dom_list(struct hv *hv, const struct hv_domain_list *req,
    struct hv_domain_info *out, uint32_t *ret_nr, uint32_t *ret_more)
{
	uint32_t id, nr = 0, more = 0;

	if (req->max == 0 || req->max > HV_MAX_LIST)
		return -EINVAL;
	pthread_mutex_lock(&hv->dom_lock);
	for (id = req->first_domid; id <= HV_DOMID_MAX; id++) {
		if (!hv->doms[id])
			continue;
		if (nr == req->max) {
			more = 1;
			break;
		}
		dom_info(hv->doms[id], &out[nr++]);
	}
	pthread_mutex_unlock(&hv->dom_lock);
	*ret_nr = nr;
	*ret_more = more;
	return 0;
}

uint32_t
dom_snapshot_shadow(struct hv *hv, struct domain **out, uint32_t max)
{
	uint32_t id, n = 0;

	pthread_mutex_lock(&hv->dom_lock);
	for (id = HV_DOMID_FIRST; id <= HV_DOMID_MAX && n < max; id++) {
		struct domain *d = hv->doms[id];

		if (d && __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) ==
		    HV_DOMSTATE_RUNNING && d->sh) {
			d->refs++;
			out[n++] = d;
		}
	}
	pthread_mutex_unlock(&hv->dom_lock);
	return n;
}

/* Index of the first extent whose gfn is > gfn. */
static size_t
p2m_upper(const struct domain *d, uint64_t gfn)
{
	size_t lo = 0, hi = d->nr_ext;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->ext[mid].gfn <= gfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool
dom_p2m_overlaps(const struct domain *d, uint64_t gfn, uint32_t order)
{
	size_t i = p2m_upper(d, gfn);
	uint64_t end = gfn + (1ull << order);

	if (i > 0 && d->ext[i - 1].gfn + (1ull << d->ext[i - 1].order) > gfn)
		return true;
	if (i < d->nr_ext && d->ext[i].gfn < end)
		return true;
	return false;
}

int
dom_p2m_add(struct domain *d, const struct p2m_ext *e)
{
	size_t i;

	if (dom_p2m_overlaps(d, e->gfn, e->order))
		return -EEXIST;
	if (d->nr_ext == d->cap_ext) {
		size_t cap = d->cap_ext ? d->cap_ext * 2 : 64;
		struct p2m_ext *n = realloc(d->ext, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->ext = n;
		d->cap_ext = cap;
	}
	/* Populate usually goes up in gfn, so this is mostly an append. */
	i = d->nr_ext && d->ext[d->nr_ext - 1].gfn < e->gfn ? d->nr_ext :
	    p2m_upper(d, e->gfn);
	memmove(&d->ext[i + 1], &d->ext[i], (d->nr_ext - i) * sizeof(*e));
	d->ext[i] = *e;
	d->nr_ext++;
	return 0;
}

static bool
resv_overlaps(const struct domain *d, uint64_t gfn, uint32_t order)
{
	uint64_t end = gfn + (1ull << order);
	const struct gfn_resv *r;

	for (r = d->resv; r; r = r->next)
		if (r->gfn < end && gfn < r->gfn + (1ull << r->order))
			return true;
	return false;
}

int
dom_gfn_reserve(struct domain *d, struct gfn_resv *r, uint64_t gfn,
    uint32_t order)
{
	uint64_t size = 1ull << order;

	/*
	 * An overlapping call in flight may still fail and leave the range
	 * free, so wait for its outcome rather than guess -EEXIST.  It holds
	 * no lock while it allocates, and waits for nothing of ours.
	 */
	while (d->state != HV_DOMSTATE_DYING && resv_overlaps(d, gfn, order))
		pthread_cond_wait(&d->resv_done, &d->lock);
	if (d->state == HV_DOMSTATE_DYING)
		return -ESRCH;
	if (dom_p2m_overlaps(d, gfn, order))
		return -EEXIST;
	if (d->tot_pages + d->resv_pages + size > d->max_pages)
		return -ENOMEM;
	r->gfn = gfn;
	r->order = order;
	r->next = d->resv;
	d->resv = r;
	d->resv_pages += size;
	return 0;
}

void
dom_gfn_release(struct domain *d, struct gfn_resv *r)
{
	struct gfn_resv **pp;

	for (pp = &d->resv; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			d->resv_pages -= 1ull << r->order;
			break;
		}
	r->next = NULL;
	pthread_cond_broadcast(&d->resv_done);
}

/*
 * Under d->lock: the extent that holds gfn g, searching on from *i (an
 * index at or before it, kept between calls of one walk); NULL at a hole.
 */
static const struct p2m_ext *
p2m_walk(const struct domain *d, uint64_t g, size_t *i)
{
	while (*i < d->nr_ext &&
	    d->ext[*i].gfn + (1ull << d->ext[*i].order) <= g)
		(*i)++;
	if (*i == d->nr_ext || d->ext[*i].gfn > g)
		return NULL;
	return &d->ext[*i];
}

int
dom_map(struct hv *hv, hv_domid_t domid, uint64_t gfn, uint32_t nr,
    uint64_t *mfns)
{
	struct domain *d;
	uint32_t k = 0;
	size_t i;
	int rc = 0;

	if (nr == 0 || nr > HV_MAX_MAP_PAGES || gfn + nr < gfn)
		return -EINVAL;
	d = dom_get(hv, domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	i = p2m_upper(d, gfn);
	i = i > 0 ? i - 1 : 0;
	while (k < nr) {
		const struct p2m_ext *e = p2m_walk(d, gfn + k, &i);

		if (!e) {
			rc = -ENOENT;	/* a hole in the guest's memory */
			break;
		}
		for (; k < nr && gfn + k < e->gfn + (1ull << e->order); k++)
			mfns[k] = e->mfn + (gfn + k - e->gfn);
	}
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

/* Pages first..last (inclusive) were written: mark them, if logged. */
static void
dirty_mark(struct domain *d, uint64_t first, uint64_t last)
{
	for (uint64_t g = first; d->dirty != NULL && g <= last &&
	    g < d->dirty_end; g++)
		d->dirty[g / 64] |= 1ull << (g % 64);
}

/*
 * Under the domain's lock, so that a destroy cannot free the pages while
 * they are copied (it releases memory under the same lock).
 */
int
dom_copy(struct hv *hv, hv_domid_t domid, uint64_t gpa, void *buf,
    uint32_t len, bool write)
{
	struct domain *d;
	uint32_t done = 0;
	size_t i;
	int rc = 0;

	if (len == 0 || len > HV_MAX_COPY || gpa + len < gpa)
		return -EINVAL;
	d = dom_get(hv, domid);
	if (!d)
		return -ESRCH;
	if (hv->mem.backing != HV_BACKING_REAL) {
		dom_put(hv, d);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&d->lock);
	i = p2m_upper(d, gpa >> HV_PAGE_SHIFT);
	i = i > 0 ? i - 1 : 0;
	while (done < len && rc == 0) {
		uint64_t a = gpa + done, end;
		const struct p2m_ext *e = p2m_walk(d, a >> HV_PAGE_SHIFT, &i);
		uint8_t *p;
		uint32_t n;

		if (d->state == HV_DOMSTATE_DYING) {
			rc = -ESRCH;
			break;
		}
		if (!e) {
			rc = -ENOENT;	/* a hole in the guest's memory */
			break;
		}
		end = (e->gfn + (1ull << e->order)) << HV_PAGE_SHIFT;
		n = end - a < len - done ? (uint32_t)(end - a) : len - done;
		p = (uint8_t *)mem_page(&hv->mem, e->mfn) +
		    (a - (e->gfn << HV_PAGE_SHIFT));
		if (write) {
			memcpy(p, (uint8_t *)buf + done, n);
			dirty_mark(d, a >> HV_PAGE_SHIFT,
			    (a + n - 1) >> HV_PAGE_SHIFT);
		} else
			memcpy((uint8_t *)buf + done, p, n);
		done += n;
	}
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}

/*
 * Log-dirty: ENABLE sizes the bitmap to the memory populated now (the
 * highest extent's end), CLEAN and PEEK copy out a window of it.
 */
static int
dirty_enable(struct domain *d)
{
	uint64_t end = 0;
	uint64_t *bits;

	if (d->nr_ext > 0)
		end = d->ext[d->nr_ext - 1].gfn +
		    (1ull << d->ext[d->nr_ext - 1].order);
	end = (end + 63) & ~63ull;
	bits = calloc(end / 64 ? end / 64 : 1, sizeof(*bits));
	if (bits == NULL)
		return -ENOMEM;
	free(d->dirty);
	d->dirty = bits;
	d->dirty_end = end;
	return 0;
}

int
dom_dirty_log(struct hv *hv, const struct hv_dirty_log *req,
    struct hv_dirty_log_reply *rep, uint64_t *bits)
{
	struct domain *d;
	int rc = 0;

	memset(rep, 0, sizeof(*rep));
	if (req->op > HV_DIRTY_PEEK || req->pad != 0 ||
	    (req->op >= HV_DIRTY_CLEAN && (req->gfn % 64 || req->nr % 64 ||
	    req->nr > HV_MAX_DIRTY_BITS)))
		return -EINVAL;
	if (hv->mem.backing != HV_BACKING_REAL)
		return -EOPNOTSUPP;
	d = dom_get(hv, req->domid);
	if (!d)
		return -ESRCH;
	pthread_mutex_lock(&d->lock);
	if (req->op == HV_DIRTY_ENABLE) {
		rc = dirty_enable(d);
	} else if (req->op == HV_DIRTY_DISABLE) {
		free(d->dirty);
		d->dirty = NULL;
		d->dirty_end = 0;
	} else if (d->dirty == NULL) {
		rc = -ENOENT;
	} else {
		for (uint32_t w = 0; w < req->nr / 64; w++) {
			uint64_t at = req->gfn / 64 + w;

			bits[w] = at < d->dirty_end / 64 ? d->dirty[at] : 0;
			if (req->op == HV_DIRTY_CLEAN && at < d->dirty_end / 64)
				d->dirty[at] = 0;
			rep->dirty += (uint64_t)__builtin_popcountll(bits[w]);
		}
		rep->nr = req->nr;
	}
	rep->end_gfn = d->dirty_end;
	pthread_mutex_unlock(&d->lock);
	dom_put(hv, d);
	return rc;
}
