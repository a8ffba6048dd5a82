/*
 * backend_sim.c - the "sim" backend: hvsim over its Unix socket.
 *
 * An hvclient connection carries one request at a time, while the ops
 * here are called from many threads at once (one populate worker per
 * node and several batches in flight on each).  So the backend keeps a
 * mutex-protected pool of idle connections: a call takes one (or opens a
 * new one), uses it alone, and gives it back (sim_call, which every op
 * goes through).  A connection that saw a transport error is closed
 * instead of being reused.
 *
 * Every call is bounded (set_timeout, 30 s by default) and watches the
 * calling thread's build cancel descriptor (vmb__cancel_fd): a hvsim that
 * hangs costs a build its timeout, or nothing once it is cancelled.
 *
 * hvsim executes no guest code: boot only records that the image is in
 * place, and "running" means the hypervisor's state, not a guest's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmbuild/hvclient.h"
#include "vmb_internal.h"

/*
 * Idle connections kept open.  hvsim serves a bounded number of
 * connections (--max-conns, 64 by default): keep few idle ones so that
 * other clients (benchmarks, tests) still get in.
 */
#define SIM_POOL_IDLE_MAX	16
#define SIM_TIMEOUT_MS		30000

struct sim {
	char	*path;
	_Atomic unsigned timeout_ms;	/* per call; 0: none */
	pthread_mutex_t lock;
	struct hvc *idle[SIM_POOL_IDLE_MAX];
	size_t	nidle;
	struct hv_hello_reply hello;
	char	desc[128];
};

static int
conn_get(struct sim *s, struct hvc **ret)
{
	struct hvc *c = NULL;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (s->nidle)
		c = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->lock);
	if (!c && (rc = hvc_open(s->path, &c)) < 0)
		return rc;
	hvc_set_timeout(c, (int)atomic_load(&s->timeout_ms));
	hvc_set_cancel_fd(c, vmb__cancel_fd());
	*ret = c;
	return 0;
}

static bool
transport_error(int rc)
{
	return rc == -ECONNRESET || rc == -EPIPE || rc == -EPROTO ||
	    rc == -ENOTCONN || rc == -EIO || rc == -ETIMEDOUT ||
	    rc == -EBADMSG || rc == -ECANCELED;
}

/*
 * Give a connection back; rc is the result of its last call.  A peer
 * that went away (hvsim crashed or restarted) took every idle connection
 * with it: those go too, so that the next calls connect afresh instead
 * of failing one after the other on dead connections.
 */
static void
conn_put(struct sim *s, struct hvc *c, int rc)
{
	if (!c)
		return;
	hvc_set_cancel_fd(c, -1);
	if (rc == -ECONNRESET || rc == -EPIPE || rc == -ENOTCONN) {
		struct hvc *dead[SIM_POOL_IDLE_MAX];
		size_t n;

		pthread_mutex_lock(&s->lock);
		n = s->nidle;
		memcpy(dead, s->idle, n * sizeof(*dead));
		s->nidle = 0;
		pthread_mutex_unlock(&s->lock);
		while (n > 0)
			hvc_close(dead[--n]);
	}
	if (!transport_error(rc)) {
		pthread_mutex_lock(&s->lock);
		if (s->nidle < SIM_POOL_IDLE_MAX) {
			s->idle[s->nidle++] = c;
			c = NULL;
		}
		pthread_mutex_unlock(&s->lock);
	}
	hvc_close(c);
}

/*
 * Every call of this backend: fn(c, arg) on a connection of the pool,
 * which it has alone meanwhile.
 */
static int
sim_call(struct sim *s, int (*fn)(struct hvc *c, void *arg), void *arg)
{
	struct hvc *c = NULL;
	int rc;

	rc = conn_get(s, &c);
	if (rc)
		return rc;
	rc = fn(c, arg);
	conn_put(s, c, rc);
	return rc;
}

/* One op whose sizes hvops.def gives (no array in its reply). */
struct sim_op {
	uint16_t op;
	const void *req;
	size_t	req_len;
	void	*rep;
	size_t	rep_cap;
};

static int
sim_op_call(struct hvc *c, void *arg)
{
	const struct sim_op *o = arg;

	return hvc_op(c, o->op, o->req, o->req_len, o->rep, o->rep_cap, NULL);
}

static int
sim_op(struct sim *s, uint16_t op, const void *req, size_t req_len,
    void *rep, size_t rep_cap)
{
	struct sim_op o = { op, req, req_len, rep, rep_cap };

	return sim_call(s, sim_op_call, &o);
}

static void
sim_close(void *priv)
{
	struct sim *s = priv;

	if (!s)
		return;
	for (size_t i = 0; i < s->nidle; i++)
		hvc_close(s->idle[i]);
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}

static int
sim_open(const char *arg, void **ret_priv)
{
	struct sim *s;
	struct hvc *c = NULL;
	int rc;

	if (!arg || !*arg)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	atomic_init(&s->timeout_ms, SIM_TIMEOUT_MS);
	s->path = strdup(arg);
	if (!s->path) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = hvc_open(s->path, &c);
	if (rc)
		goto fail;
	s->hello = *hvc_hello(c);
	s->hello.name[sizeof(s->hello.name) - 1] = '\0';
	snprintf(s->desc, sizeof(s->desc), "%s (%s, %s)", s->hello.name,
	    s->hello.backing == HV_BACKING_REAL ? "real" : "phantom",
	    s->hello.flush_mode == HV_FLUSH_ALLOC ? "alloc" : "batch");
	conn_put(s, c, 0);
	*ret_priv = s;
	return 0;
fail:
	sim_close(s);
	return rc;
}

static uint32_t
sim_caps(void *priv)
{
	struct sim *s = priv;
	uint32_t hc = s->hello.caps, caps = 0;

	if (hc & HV_CAP_POPULATE_BATCH)
		caps |= VMB_CAP_BATCH_POPULATE;
	if (hc & HV_CAP_SCRUB_PROGRESS)
		caps |= VMB_CAP_SCRUB_PROGRESS;
	if (hc & HV_CAP_COUNTERS)
		caps |= VMB_CAP_COUNTERS;
	/* Phantom memory has no bytes to load an image into. */
	if ((hc & HV_CAP_GUEST_COPY) && s->hello.backing == HV_BACKING_REAL)
		caps |= VMB_CAP_IMAGE_LOAD;
	if (hc & HV_CAP_SHADOW)
		caps |= VMB_CAP_SHADOW;
	caps |= VMB_CAP_HAP;	/* hvsim models HAP for every host */
	caps |= VMB_CAP_HVM;	/* firmware loaded as a kernel is */
	if (hc & HV_CAP_CLAIMS)
		caps |= VMB_CAP_CLAIMS;
	/* Without the flag the topology is modelled. */
	if (s->hello.flags & HV_HELLO_TOPOLOGY_HOST)
		caps |= VMB_CAP_HOST_TOPOLOGY;
	return caps;
}

static const char *
sim_describe(void *priv)
{
	return ((struct sim *)priv)->desc;
}

static int
host_info_call(struct hvc *c, void *ret_hi)
{
	return hvc_host_info(c, ret_hi);
}

/* hvsim's host_info reply as ours. */
static int
host_from_hv(const struct hv_host_info *hi, struct vmb_host **ret_host)
{
	struct hv_node_info *ni;
	struct hv_cpu_info *ci;
	struct vmb_host *h;

	if (hi->nr_nodes == 0 || hi->nr_nodes > VMB_MAX_NODES)
		return -EPROTO;
	h = calloc(1, sizeof(*h));
	if (!h || !(h->cpus = calloc(hi->nr_cpus ? hi->nr_cpus : 1,
	    sizeof(*h->cpus)))) {
		vmb_host_free(h);
		return -ENOMEM;
	}
	h->nr_nodes = hi->nr_nodes;
	h->nr_cpus = hi->nr_cpus;
	h->threads_per_core = hi->threads_per_core;
	h->cores_per_node = hi->cores_per_node;
	h->total_bytes = hi->total_pages << HV_PAGE_SHIFT;
	h->free_bytes = hi->free_pages << HV_PAGE_SHIFT;
	h->claimed_bytes = hi->outstanding_claims << HV_PAGE_SHIFT;
	ni = hvc_host_nodes((struct hv_host_info *)hi);
	for (uint32_t i = 0; i < hi->nr_nodes; i++) {
		h->nodes[i].node = ni[i].node;
		h->nodes[i].nr_cpus = ni[i].nr_cpus;
		h->nodes[i].total_bytes = ni[i].total_pages << HV_PAGE_SHIFT;
		h->nodes[i].free_bytes = ni[i].free_pages << HV_PAGE_SHIFT;
	}
	ci = hvc_host_cpus((struct hv_host_info *)hi);
	for (uint32_t i = 0; i < hi->nr_cpus; i++) {
		h->cpus[i] = (struct vmb_cpu){ .cpu = ci[i].cpu,
		    .node = ci[i].node, .socket = ci[i].socket,
		    .core = ci[i].core, .thread = ci[i].thread };
	}
	*ret_host = h;
	return 0;
}

static int
sim_host_info(void *priv, struct vmb_host **ret_host)
{
	struct hv_host_info *hi = NULL;
	int rc;

	rc = sim_call(priv, host_info_call, &hi);
	if (rc)
		return rc;
	rc = host_from_hv(hi, ret_host);
	free(hi);
	return rc;
}

static int
scrub_call(struct hvc *c, void *ret_reply)
{
	return hvc_scrub_progress(c, ret_reply);
}

/* hvsim's scrub progress reply as ours. */
static int
scrub_from_hv(const struct sim *s, const struct hv_scrub_reply *r,
    struct vmb_scrub *ret)
{
	struct hv_scrub_node *n;

	if (r->nr_nodes > VMB_MAX_NODES)
		return -EPROTO;
	memset(ret, 0, sizeof(*ret));
	ret->have = VMB_SCRUB_HAVE_DIRTY | VMB_SCRUB_HAVE_SCRUBBED |
	    VMB_SCRUB_HAVE_RATE | VMB_SCRUB_HAVE_BOOT;
	if (s->hello.caps & HV_CAP_SCRUB_BLOCKS)
		ret->have |= VMB_SCRUB_HAVE_BLOCKS;
	ret->nr_nodes = r->nr_nodes;
	n = hvc_scrub_nodes((struct hv_scrub_reply *)r);
	for (uint32_t i = 0; i < r->nr_nodes; i++) {
		ret->nodes[i] = (struct vmb_scrub_node){
			.node = n[i].node,
			.workers = n[i].workers,
			.total_bytes = n[i].total_pages << HV_PAGE_SHIFT,
			.free_bytes = n[i].free_pages << HV_PAGE_SHIFT,
			.dirty_bytes = n[i].dirty_pages << HV_PAGE_SHIFT,
			.scrubbed_bytes_total =
			    n[i].scrubbed_pages_total << HV_PAGE_SHIFT,
			.rate_bytes_per_sec =
			    n[i].rate_pages_per_sec << HV_PAGE_SHIFT,
			.clean_1g_bytes = (uint64_t)n[i].clean_1g_blocks <<
			    (HV_PAGE_SHIFT + HV_ORDER_1G),
			.boot_scrub_done = n[i].boot_scrub_done != 0,
		};
	}
	return 0;
}

static int
sim_scrub(void *priv, struct vmb_scrub *ret)
{
	struct hv_scrub_reply *r = NULL;
	int rc;

	rc = sim_call(priv, scrub_call, &r);
	if (rc)
		return rc;
	rc = scrub_from_hv(priv, r, ret);
	free(r);
	return rc;
}

static int
counters_call(struct hvc *c, void *ret_counters)
{
	return hvc_counters(c, ret_counters);
}

static int
sim_counters(void *priv, struct vmb_counters *ret)
{
	struct sim *s = priv;
	struct hv_counters hc;
	uint32_t have;
	int rc;

	rc = sim_call(s, counters_call, &hc);
	if (rc)
		return rc;
	have = VMB_CNT_HAVE_FLUSH | VMB_CNT_HAVE_POPULATE | VMB_CNT_HAVE_SCRUB;
	if (s->hello.caps & HV_CAP_SHADOW)
		have |= VMB_CNT_HAVE_SHADOW;
	return vmb__counters_from_hv(&hc, sizeof(hc), have, ret);
}

static int
sim_domain_create(void *priv, const struct vmb_dom_config *cfg,
    uint32_t *ret_domid)
{
	struct sim *s = priv;
	struct hv_domain_create req;
	struct hv_domain_create_reply rep;
	int rc;

	memset(&req, 0, sizeof(req));
	req.flags = (cfg->hvm ? HV_DOMF_HVM : 0) | (cfg->hap ? HV_DOMF_HAP : 0);
	req.max_vcpus = cfg->max_vcpus;
	/*
	 * hvsim has no event channels: cfg->max_evtchn_port limits nothing
	 * there, and is only shown (vm.info's config.max_event_channels).
	 */
	req.max_pages = cfg->max_pages;
	memcpy(req.handle, cfg->uuid, sizeof(req.handle));
	snprintf(req.name, sizeof(req.name), "%s", cfg->name);
	rc = sim_op(s, HV_OP_DOMAIN_CREATE, &req, sizeof(req), &rep,
	    sizeof(rep));
	if (!rc)
		*ret_domid = rep.domid;
	return rc;
}

static int
sim_domain_op(struct sim *s, uint16_t op, uint32_t domid)
{
	struct hv_domid req = { .domid = domid };

	return sim_op(s, op, &req, sizeof(req), NULL, 0);
}

static int
sim_domain_destroy(void *priv, uint32_t domid)
{
	return sim_domain_op(priv, HV_OP_DOMAIN_DESTROY, domid);
}

static int
sim_domain_pause(void *priv, uint32_t domid)
{
	return sim_domain_op(priv, HV_OP_DOMAIN_PAUSE, domid);
}

static int
sim_domain_unpause(void *priv, uint32_t domid)
{
	return sim_domain_op(priv, HV_OP_DOMAIN_UNPAUSE, domid);
}

/* hvsim's reasons are Xen's SHUTDOWN_* codes, as ours. */
static enum vmb_shutdown_reason
sim_reason(uint32_t flags)
{
	uint32_t r = (flags >> HV_DOMINF_SHUTDOWN_SHIFT) &
	    HV_DOMINF_SHUTDOWN_MASK;

	return r < VMB_SHUTDOWN_NR ? (enum vmb_shutdown_reason)r :
	    VMB_SHUTDOWN_CRASH;
}

static enum vmb_domain_state
sim_state(uint32_t st, uint32_t flags)
{
	switch (st) {
	case HV_DOMSTATE_RUNNING:	return VMB_DOM_RUNNING;
	case HV_DOMSTATE_DYING:		return VMB_DOM_DYING;
	case HV_DOMSTATE_SHUTDOWN:
		return sim_reason(flags) == VMB_SHUTDOWN_CRASH ?
		    VMB_DOM_CRASHED : VMB_DOM_SHUTDOWN;
	default:			return VMB_DOM_PAUSED;
	}
}

struct list_call {
	struct hv_domain_info *info;
	uint32_t nr;
};

static int
list_call(struct hvc *c, void *arg)
{
	struct list_call *l = arg;

	return hvc_domain_list(c, &l->info, &l->nr);
}

/* hvsim's domains as ours, the control domain left out; frees info. */
static int
domains_from_hv(struct hv_domain_info *info, uint32_t nr,
    struct vmb_domain **ret_domains, size_t *ret_nr)
{
	struct vmb_domain *d = NULL;
	size_t n = 0;

	if (nr) {
		d = calloc(nr, sizeof(*d));
		if (!d) {
			free(info);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < nr; i++) {
		const struct hv_domain_info *hi = &info[i];
		struct vmb_domain *o = &d[n];

		if (hi->domid == 0)
			continue;	/* the control domain */
		n++;
		o->domid = hi->domid;
		o->state = sim_state(hi->state, hi->flags);
		if (hi->state == HV_DOMSTATE_SHUTDOWN)
			o->shutdown_reason = sim_reason(hi->flags);
		memcpy(o->uuid, hi->handle, sizeof(o->uuid));
		/* hvsim's name need not end in a NUL: ours does. */
		snprintf(o->name, sizeof(o->name), "%.*s",
		    (int)(sizeof(o->name) - 1 < sizeof(hi->name) ?
		    sizeof(o->name) - 1 : sizeof(hi->name)), hi->name);
		o->hap = (hi->flags & HV_DOMF_HAP) != 0;
		o->vcpus = hi->max_vcpus;
		o->memory_bytes = hi->tot_pages << HV_PAGE_SHIFT;
		o->max_memory_bytes = hi->max_pages << HV_PAGE_SHIFT;
		o->outstanding_bytes = hi->outstanding_pages << HV_PAGE_SHIFT;
		o->cpu_time_ns = 0;	/* hvsim runs no guest code */
		o->nr_nodes = VMB_MAX_NODES < HV_MAX_NODES ? VMB_MAX_NODES :
		    HV_MAX_NODES;
		for (uint32_t k = 0; k < o->nr_nodes; k++)
			o->node_bytes[k] = hi->node_pages[k] << HV_PAGE_SHIFT;
	}
	free(info);
	if (n == 0) {
		free(d);
		d = NULL;
	}
	*ret_domains = d;
	*ret_nr = n;
	return 0;
}

static int
sim_domain_list(void *priv, struct vmb_domain **ret_domains, size_t *ret_nr)
{
	struct list_call l = { NULL, 0 };
	int rc;

	rc = sim_call(priv, list_call, &l);
	if (rc)
		return rc;
	return domains_from_hv(l.info, l.nr, ret_domains, ret_nr);
}

struct state_call {
	struct hv_host_info *info;
	struct hv_domain_info *doms;
	uint32_t nr;
	struct hv_scrub_reply *scrub;
	int	scrub_rc;
};

static int
state_call(struct hvc *c, void *arg)
{
	struct state_call *st = arg;

	return hvc_host_state(c, &st->info, &st->doms, &st->nr, &st->scrub,
	    &st->scrub_rc);
}

/*
 * The host, its domains and scrub progress in one round trip: three
 * requests sent together on one connection (hvc_host_state).
 */
static int
sim_host_state(void *priv, struct vmb_host **ret_host,
    struct vmb_domain **ret_domains, size_t *ret_nr,
    struct vmb_scrub *ret_scrub, int *ret_scrub_rc)
{
	struct state_call st = { 0 };
	struct vmb_host *h = NULL;
	int rc;

	rc = sim_call(priv, state_call, &st);
	if (rc)
		return rc;
	*ret_scrub_rc = st.scrub ? scrub_from_hv(priv, st.scrub, ret_scrub) :
	    st.scrub_rc;
	free(st.scrub);
	rc = host_from_hv(st.info, &h);
	free(st.info);
	if (rc) {
		free(st.doms);
		return rc;
	}
	rc = domains_from_hv(st.doms, st.nr, ret_domains, ret_nr);
	if (rc) {
		vmb_host_free(h);
		return rc;
	}
	*ret_host = h;
	return 0;
}

static int
sim_claim(void *priv, uint32_t domid, uint64_t pages)
{
	struct hv_domain_set req = { .domid = domid, .value = pages };

	return sim_op(priv, HV_OP_CLAIM, &req, sizeof(req), NULL, 0);
}

/* The domain's max memory (mem-set, mem-max), as Xen's setmaxmem. */
static int
sim_max_mem(void *priv, uint32_t domid, uint64_t pages)
{
	struct hv_domain_set req = { .domid = domid, .value = pages };

	return sim_op(priv, HV_OP_DOMAIN_MAX_MEM, &req, sizeof(req), NULL, 0);
}

static enum vmb_order_class
order_class(uint32_t order)
{
	return order == 0 ? VMB_ORDER_4K : order == HV_ORDER_2M ?
	    VMB_ORDER_2M : order == HV_ORDER_1G ? VMB_ORDER_1G :
	    VMB_ORDER_OTHER;
}

/* hvclient's word on a continuation, for the engine's progress. */
static void
sim_step(void *arg, uint32_t done)
{
	const struct vmb__popstep *step = arg;

	step->fn(step->arg, done);
}

struct populate_call {
	hv_domid_t domid;
	uint32_t flags;			/* HV_POPF_* */
	const struct hv_extent *ext;
	uint32_t nr;
	const struct vmb__popstep *step;
	/* outputs */
	bool	ran;			/* a connection was had */
	struct hv_populate_stats stats;
	uint32_t done;
	uint64_t calls;
};

static int
populate_call(struct hvc *c, void *arg)
{
	struct populate_call *p = arg;
	uint64_t calls0 = hvc_populate_calls(c);
	int rc;

	p->ran = true;
	rc = hvc_populate_step(c, p->domid, p->flags, p->ext, p->nr,
	    &p->stats, &p->done, p->step ? sim_step : NULL, (void *)p->step);
	/* Every request, continuations included, as hvclient made them. */
	p->calls = hvc_populate_calls(c) - calls0;
	return rc;
}

static int
sim_populate(void *priv, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr, struct vmb_populate_stats *st,
    size_t *ret_done, const struct vmb__popstep *step)
{
	struct populate_call p = { .domid = domid, .step = step };
	struct hv_extent *he = NULL;
	uint32_t done;
	int rc;

	*ret_done = 0;
	if (nr == 0)
		return 0;
	if (nr > UINT32_MAX)
		return -E2BIG;
	he = calloc(nr, sizeof(*he));
	if (!he)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		he[i].gfn = ext[i].gfn;
		he[i].order = (uint8_t)ext[i].order;
		he[i].node = (uint16_t)(ext[i].node == VMB_NODE_ANY ?
		    HV_NODE_ANY : ext[i].node);
	}
	if (flags & VMB_POPF_EXACT_NODE)
		p.flags |= HV_POPF_EXACT_NODE;
	if (flags & VMB_POPF_ALLOW_DIRTY)
		p.flags |= HV_POPF_ALLOW_DIRTY;
	p.ext = he;
	p.nr = (uint32_t)nr;
	rc = sim_call(priv, populate_call, &p);
	if (!p.ran)
		goto out;
	st->calls += p.calls;
	done = rc == 0 || p.done > nr ? (uint32_t)nr : p.done;
	st->pages_scrubbed_inline += p.stats.pages_scrubbed_inline;
	st->pages_fallback += p.stats.pages_fallback;
	st->flushes_issued += p.stats.flushes_issued;
	st->flushes_avoided += p.stats.flushes_avoided;
	st->filter_evaluations += p.stats.filter_evaluations;
	st->hv_ns += p.stats.elapsed_ns;
	/* hvsim counts all of these, whatever its flush mode. */
	st->have |= VMB_POPSTAT_HAVE_SCRUBBED_INLINE |
	    VMB_POPSTAT_HAVE_FALLBACK | VMB_POPSTAT_HAVE_FLUSHES |
	    VMB_POPSTAT_HAVE_FILTER | VMB_POPSTAT_HAVE_HV_TIME;
	for (uint32_t i = 0; i < done; i++) {
		st->extents[order_class(ext[i].order)]++;
		if (ext[i].node < VMB_MAX_NODES)
			st->node_bytes[ext[i].node] +=
			    VMB_PAGE_SIZE << ext[i].order;
	}
	*ret_done = done;
out:
	free(he);
	return rc;
}

struct write_call {
	uint32_t domid;
	uint64_t paddr;
	const void *src;		/* NULL: zeroes */
	uint64_t len;
};

static int
write_call(struct hvc *c, void *arg)
{
	static const uint8_t zeroes[64 << 10];
	const struct write_call *w = arg;
	uint64_t paddr = w->paddr, len = w->len;
	int rc = 0;

	if (w->src)
		return hvc_guest_write(c, w->domid, paddr, w->src, len);
	while (len > 0 && rc == 0) {
		uint64_t n = len < sizeof(zeroes) ? len : sizeof(zeroes);

		rc = hvc_guest_write(c, w->domid, paddr, zeroes, n);
		paddr += n;
		len -= n;
	}
	return rc;
}

/*
 * hvsim's memory is its own anonymous mapping, which no other process can
 * map: the image goes in by copies (HV_OP_GUEST_WRITE), zeroes included.
 */
static int
sim_write(void *priv, uint32_t domid, uint64_t paddr, const void *src,
    uint64_t len)
{
	struct write_call w = { domid, paddr, src, len };
	struct sim *s = priv;

	/* Phantom memory has no bytes to copy into: hvsim said so at hello. */
	if (!(s->hello.caps & HV_CAP_GUEST_COPY))
		return -EOPNOTSUPP;
	return sim_call(s, write_call, &w);
}

/* ------------------------------------------------------------------ */
/* vCPUs: hvsim's HV_OP_DOMAIN_VCPU (online, hard and soft affinity).  */

_Static_assert(VMB_MAX_CPUS == HV_MAX_CPUS, "CPU bitmaps of one size");

/* One vCPU read, and changed as req->set says; -EOPNOTSUPP before it. */
static int
sim_vcpu(struct sim *s, struct hv_domain_vcpu *req,
    struct hv_domain_vcpu_reply *rep)
{
	if (!(s->hello.caps & HV_CAP_VCPUS))
		return -EOPNOTSUPP;
	return sim_op(s, HV_OP_DOMAIN_VCPU, req, sizeof(*req), rep,
	    sizeof(*rep));
}

/* vCPUs 0..online-1 online, the rest up to max offline (vcpu-set). */
static int
sim_vcpu_online(void *priv, uint32_t domid, uint32_t max, uint32_t online)
{
	struct hv_domain_vcpu req = { .domid = domid,
	    .set = HV_VCPU_SET_ONLINE };
	struct hv_domain_vcpu_reply rep;
	int rc = 0;

	/* vCPU 0 first, online: the domain never has none online. */
	for (uint32_t v = 0; v < max && rc == 0; v++) {
		req.vcpu = v;
		req.online = v < online;
		rc = sim_vcpu(priv, &req, &rep);
	}
	return rc;
}

/* One vCPU's affinity (vcpu-pin); hard or soft NULL: left. */
static int
sim_vcpu_affinity(void *priv, uint32_t domid, uint32_t vcpu,
    const uint64_t *hard, const uint64_t *soft)
{
	struct hv_domain_vcpu req = { .domid = domid, .vcpu = vcpu };
	struct hv_domain_vcpu_reply rep;

	if (hard != NULL) {
		req.set |= HV_VCPU_SET_HARD;
		memcpy(req.hard, hard, sizeof(req.hard));
	}
	if (soft != NULL) {
		req.set |= HV_VCPU_SET_SOFT;
		memcpy(req.soft, soft, sizeof(req.soft));
	}
	return sim_vcpu(priv, &req, &rep);
}

/*
 * One vCPU as hvsim holds it.  hvsim runs no guest code: an online
 * vCPU has nothing to run, is never on a CPU and has used no time.
 */
static int
sim_vcpu_info(void *priv, uint32_t domid, uint32_t vcpu,
    struct vmb_vcpu_info *ret, uint64_t *hard, uint64_t *soft)
{
	struct hv_domain_vcpu req = { .domid = domid, .vcpu = vcpu };
	struct hv_domain_vcpu_reply rep;
	int rc = sim_vcpu(priv, &req, &rep);

	if (rc)
		return rc;
	ret->online = rep.online != 0;
	ret->blocked = ret->online;
	memcpy(hard, rep.hard, sizeof(rep.hard));
	memcpy(soft, rep.soft, sizeof(rep.soft));
	return 0;
}

/*
 * Right after create: which vCPUs are online (those the guest starts
 * with, as Xen's toolstack writes cpu/N/availability) and each vCPU's
 * affinity as the build resolved it (cpus=, cpus_soft= or its vnode's
 * node), as the Xen backend sets it.  Here and not at boot: a guest
 * built without its image (phantom memory) has them too.  A hvsim
 * without vCPU state has nothing to set.
 */
static int
sim_platform(void *priv, uint32_t domid, const struct vmb_platform *p)
{
	const struct vmb_layout *l = p->layout;
	int rc;

	if (!(((struct sim *)priv)->hello.caps & HV_CAP_VCPUS))
		return 0;
	/*
	 * One call per vCPU sets whether it is online and its affinity
	 * (HV_OP_DOMAIN_VCPU applies all its `set` bits at once); vCPU 0
	 * first, online: the domain never has none online.
	 */
	rc = 0;
	for (uint32_t v = 0; v < l->nr_vcpus && rc == 0; v++) {
		const uint64_t *soft = p->soft[p->soft_per_vnode ?
		    l->vcpu_vnode[v] : 0];
		struct hv_domain_vcpu req = { .domid = domid, .vcpu = v,
		    .set = HV_VCPU_SET_ONLINE, .online = v < p->guest->vcpus };
		struct hv_domain_vcpu_reply rep;

		if (p->hard != NULL) {
			req.set |= HV_VCPU_SET_HARD;
			memcpy(req.hard, p->hard, sizeof(req.hard));
		}
		if (soft != NULL) {
			req.set |= HV_VCPU_SET_SOFT;
			memcpy(req.soft, soft, sizeof(req.soft));
		}
		rc = sim_vcpu(priv, &req, &rep);
	}
	return rc;
}

struct read_call {
	uint32_t domid;
	uint64_t paddr;
	void	*dst;
	uint64_t len;
};

static int
read_call(struct hvc *c, void *arg)
{
	const struct read_call *r = arg;

	return hvc_guest_read(c, r->domid, r->paddr, r->dst, r->len);
}

/* A save reads the guest's memory back by copies (HV_OP_GUEST_READ). */
static int
sim_read(void *priv, uint32_t domid, uint64_t paddr, void *dst, uint64_t len)
{
	struct read_call r = { domid, paddr, dst, len };
	struct sim *s = priv;

	if (!(s->hello.caps & HV_CAP_GUEST_COPY))
		return -EOPNOTSUPP;
	return sim_call(s, read_call, &r);
}

/*
 * hvsim has no vCPUs to load a context into and runs no guest code; the
 * image and start info are in guest memory, which is all there is to do.
 */
static int
sim_boot(void *priv, uint32_t domid, const struct vmb_boot *boot)
{
	(void)priv;
	(void)domid;
	(void)boot;
	return 0;
}

static void
sim_set_timeout(void *priv, unsigned ms)
{
	atomic_store(&((struct sim *)priv)->timeout_ms, ms);
}

/* ------------------------------------------------------------------ */
/* Lifecycle: hvsim's shutdown op, its model of the PV control node,   */
/* and its domain watch.                                               */

static bool
sim_lifecycle(const struct sim *s)
{
	return (s->hello.caps & HV_CAP_LIFECYCLE) != 0;
}

static int
sim_control(struct sim *s, uint32_t domid, uint32_t op, uint32_t value,
    struct hv_domain_control_reply *rep)
{
	struct hv_domain_control req = { .domid = domid, .op = op,
	    .value = value };

	if (!sim_lifecycle(s))
		return -EOPNOTSUPP;
	return sim_op(s, HV_OP_DOMAIN_CONTROL, &req, sizeof(req), rep,
	    sizeof(*rep));
}

/* Post the request if the guest announced the feature, as on Xen. */
static int
sim_shutdown_request(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	uint32_t want = reason == VMB_SHUTDOWN_REBOOT ?
	    HV_CONTROL_FEATURE_REBOOT : HV_CONTROL_FEATURE_POWEROFF;
	struct hv_domain_control_reply rep;
	int rc;

	rc = sim_control(priv, domid, HV_CONTROL_GET, 0, &rep);
	if (rc)
		return rc;
	if (!(rep.features & want))
		return -EOPNOTSUPP;
	return sim_control(priv, domid, HV_CONTROL_REQUEST, reason, &rep);
}

static int
sim_shutdown_withdraw(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	struct hv_domain_control_reply rep;
	int rc;

	rc = sim_control(priv, domid, HV_CONTROL_GET, 0, &rep);
	if (rc)
		return rc;
	if (rep.request != (uint32_t)reason)
		return 0;
	rc = sim_control(priv, domid, HV_CONTROL_WITHDRAW, 0, &rep);
	if (rc)
		return rc;
	return rep.before == (uint32_t)reason;
}

static int
sim_shutdown(void *priv, uint32_t domid, enum vmb_shutdown_reason reason)
{
	struct hv_domain_shutdown req = { .domid = domid, .reason = reason };

	if (!sim_lifecycle(priv))
		return -EOPNOTSUPP;
	return sim_op(priv, HV_OP_DOMAIN_SHUTDOWN, &req, sizeof(req), NULL, 0);
}

/*
 * The domain watch: a thread keeps one HV_OP_DOMAIN_WATCH call
 * outstanding on a connection of its own and makes an eventfd readable
 * when the generation moves (or hvsim came back after losing it: what
 * changed meanwhile is unknown).  The thread is detached and shares its
 * state with the watch: watch_close only asks it to stop, and whichever
 * of the two lets go last frees it, so closing never waits for a call
 * that hvsim holds for up to SIM_WATCH_MS.
 */
#define SIM_WATCH_MS		10000
#define SIM_WATCH_RETRY_MS	1000
/*
 * After a change is signalled, the next watch starts this much later:
 * the changes in between (one or two per small VM created or destroyed,
 * hundreds a second) are one signal, not a wake-up of hvsim's watch and
 * of this thread each.  The daemon reads events at most every 20 ms
 * anyway (lifecycle.c's WATCH_COALESCE_MS); the first change of a quiet
 * spell is signalled at once.
 */
#define SIM_WATCH_COALESCE_MS	5

struct sim_watch {
	pthread_mutex_t lock;
	int	refs;		/* the watch and its thread */
	bool	stop;
	int	efd;
	char	*path;
};

static void
sim_watch_unref(struct sim_watch *w)
{
	bool last;

	pthread_mutex_lock(&w->lock);
	last = --w->refs == 0;
	pthread_mutex_unlock(&w->lock);
	if (!last)
		return;
	close(w->efd);
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w);
}

static bool
sim_watch_stopping(struct sim_watch *w)
{
	bool stop;

	pthread_mutex_lock(&w->lock);
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	return stop;
}

static void
sim_watch_signal(struct sim_watch *w)
{
	uint64_t one = 1;

	(void)!write(w->efd, &one, sizeof(one));
}

static void *
sim_watch_main(void *arg)
{
	struct timespec retry = { SIM_WATCH_RETRY_MS / 1000,
	    (SIM_WATCH_RETRY_MS % 1000) * 1000000L };
	struct timespec coalesce = { 0, SIM_WATCH_COALESCE_MS * 1000000L };
	struct sim_watch *w = arg;
	struct hvc *c = NULL;
	uint64_t gen = 0, now;
	bool lost = false;
	int rc;

	while (!sim_watch_stopping(w)) {
		if (!c && hvc_open(w->path, &c) < 0) {
			c = NULL;
			lost = true;
			nanosleep(&retry, NULL);
			continue;
		}
		/* The first call (since 0) answers at once: our baseline. */
		rc = hvc_domain_watch(c, lost ? 0 : gen, SIM_WATCH_MS, &now);
		if (rc < 0) {
			hvc_close(c);
			c = NULL;
			/*
			 * Losing hvsim is news too: the daemon lists domains
			 * at once and learns the hypervisor is down, rather
			 * than at its next slow refresh.
			 */
			if (!lost)
				sim_watch_signal(w);
			lost = true;
			continue;
		}
		if ((gen != 0 && now != gen) || lost) {
			sim_watch_signal(w);
			nanosleep(&coalesce, NULL);
		}
		gen = now;
		lost = false;
	}
	hvc_close(c);
	sim_watch_unref(w);
	return NULL;
}

static int
sim_watch_open(void *priv, void **ret_w)
{
	struct sim *s = priv;
	struct sim_watch *w;
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	if (!sim_lifecycle(s))
		return -EOPNOTSUPP;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	w->refs = 2;
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->path = strdup(s->path);
	if (w->efd < 0 || !w->path) {
		rc = w->efd < 0 ? -errno : -ENOMEM;
		goto fail;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&th, &attr, sim_watch_main, w);
	pthread_attr_destroy(&attr);
	if (rc)
		goto fail;
	*ret_w = w;
	return 0;
fail:
	if (w->efd >= 0)
		close(w->efd);
	free(w->path);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return rc;
}

static int
sim_watch_fd(void *vw)
{
	return ((struct sim_watch *)vw)->efd;
}

static int
sim_watch_drain(void *vw)
{
	struct sim_watch *w = vw;
	uint64_t n = 0;

	if (read(w->efd, &n, sizeof(n)) < 0)
		return errno == EAGAIN ? 0 : -errno;
	return n > 0;
}

static void
sim_watch_close(void *vw)
{
	struct sim_watch *w = vw;

	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_mutex_unlock(&w->lock);
	sim_watch_unref(w);
}

/* hvsim runs no guest code: no console daemon, no pty, nothing to say. */
static int
sim_console_open(void *priv, uint32_t domid, int *ret_fd, char *ret_path,
    size_t path_len)
{
	(void)priv, (void)domid, (void)ret_fd, (void)ret_path, (void)path_len;
	return -EOPNOTSUPP;
}

/* ------------------------------------------------------------------ */
/* Everyday settings: hvsim's HV_OP_DOMAIN_SCHED, _RENAME, LOG_READ.   */

static int
sim_everyday(const struct sim *s)
{
	return (s->hello.caps & HV_CAP_EVERYDAY) ? 0 : -EOPNOTSUPP;
}

static int
sim_sched(void *priv, uint32_t domid, uint32_t weight, uint32_t cap,
    struct vmb_sched *ret)
{
	struct sim *s = priv;
	struct hv_domain_sched req = { .domid = domid };
	struct hv_domain_sched_reply rep;
	int rc = sim_everyday(s);

	if (rc)
		return rc;
	if (weight != VMB_SCHED_KEEP) {
		req.set |= HV_SCHED_SET_WEIGHT;
		req.weight = weight;
	}
	if (cap != VMB_SCHED_KEEP) {
		req.set |= HV_SCHED_SET_CAP;
		req.cap = cap;
	}
	rc = sim_op(s, HV_OP_DOMAIN_SCHED, &req, sizeof(req), &rep,
	    sizeof(rep));
	if (rc)
		return rc;
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->scheduler, sizeof(ret->scheduler), "%s",
	    rep.scheduler == HV_SCHED_CREDIT2 ? "credit2" : "unknown");
	ret->weight = rep.weight;
	ret->cap = rep.cap;
	return 0;
}

static int
sim_rename(void *priv, uint32_t domid, const char *name)
{
	struct sim *s = priv;
	struct hv_domain_rename req = { .domid = domid };
	int rc = sim_everyday(s);

	if (rc)
		return rc;
	if (strlen(name) >= sizeof(req.name))
		return -ENAMETOOLONG;
	snprintf(req.name, sizeof(req.name), "%s", name);
	return sim_op(s, HV_OP_DOMAIN_RENAME, &req, sizeof(req), NULL, 0);
}

/* hvsim reports when it created each domain (hv_domain_info). */
static int
sim_start_time(void *priv, uint32_t domid, double *ret_time)
{
	struct list_call l = { NULL, 0 };
	int rc;

	rc = sim_call(priv, list_call, &l);
	if (rc)
		return rc;
	rc = -ESRCH;
	for (uint32_t i = 0; i < l.nr; i++)
		if (l.info[i].domid == domid) {
			*ret_time = (double)l.info[i].created_ns / 1e9;
			rc = 0;
		}
	free(l.info);
	return rc;
}

struct log_call {
	uint32_t flags;
	char	*text;
	size_t	len;
};

static int
log_call(struct hvc *c, void *arg)
{
	struct log_call *l = arg;
	struct hv_log_read req = { .flags = l->flags };
	size_t cap = sizeof(struct hv_log_reply) + HV_LOG_RING, len = 0;
	struct hv_log_reply *rep = malloc(cap);
	int rc;

	if (!rep)
		return -ENOMEM;
	rc = hvc_op(c, HV_OP_LOG_READ, &req, sizeof(req), rep, cap, &len);
	if (rc == 0 && (rep->len > HV_LOG_RING || len != sizeof(*rep) +
	    rep->len))
		rc = -EPROTO;
	if (rc == 0 && !(l->text = malloc(rep->len + 1)))
		rc = -ENOMEM;
	if (rc == 0) {
		memcpy(l->text, rep + 1, rep->len);
		l->text[rep->len] = '\0';
		l->len = rep->len;
	}
	free(rep);
	return rc;
}

static int
sim_dmesg(void *priv, bool clear, char **ret_text, size_t *ret_len)
{
	struct log_call l = { clear ? HV_LOG_CLEAR : 0, NULL, 0 };
	int rc = sim_everyday(priv);

	if (rc == 0)
		rc = sim_call(priv, log_call, &l);
	if (rc)
		return rc;
	*ret_text = l.text;
	*ret_len = l.len;
	return 0;
}

_Static_assert(VMB_DIRTY_CLEAN == HV_DIRTY_CLEAN &&
    VMB_DIRTY_ENABLE == HV_DIRTY_ENABLE && VMB_DIRTY_PEEK == HV_DIRTY_PEEK &&
    VMB_DIRTY_MAX_BITS == HV_MAX_DIRTY_BITS, "log-dirty ops of one kind");

struct dirty_call {
	uint32_t domid;
	unsigned op;
	uint64_t gfn;
	uint32_t nr;
	uint64_t *bits, *dirty, *end;
};

static int
dirty_call(struct hvc *c, void *arg)
{
	const struct dirty_call *d = arg;

	return hvc_dirty_log(c, d->domid, d->op, d->gfn, d->nr, d->bits,
	    d->dirty, d->end);
}

/* A live migration's log of written pages (HV_OP_DIRTY_LOG). */
static int
sim_dirty_log(void *priv, uint32_t domid, unsigned op, uint64_t gfn,
    uint32_t nr, uint64_t *bits, uint64_t *ret_dirty, uint64_t *ret_end)
{
	struct dirty_call d = { domid, op, gfn, nr, bits, ret_dirty, ret_end };
	struct sim *s = priv;

	if (!(s->hello.caps & HV_CAP_LOG_DIRTY))
		return -EOPNOTSUPP;
	return sim_call(s, dirty_call, &d);
}

const struct vmb_backend_ops vmb_backend_sim = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.caps = sim_caps,
	.describe = sim_describe,
	.host_info = sim_host_info,
	.scrub = sim_scrub,
	.host_state = sim_host_state,
	.counters = sim_counters,
	.domain_create = sim_domain_create,
	.domain_destroy = sim_domain_destroy,
	.domain_pause = sim_domain_pause,
	.domain_unpause = sim_domain_unpause,
	.domain_list = sim_domain_list,
	.claim = sim_claim,
	.max_mem = sim_max_mem,
	.populate = sim_populate,
	.write = sim_write,
	.platform = sim_platform,
	.read = sim_read,
	.dirty_log = sim_dirty_log,
	.boot = sim_boot,
	.set_timeout = sim_set_timeout,
	.shutdown_request = sim_shutdown_request,
	.shutdown_withdraw = sim_shutdown_withdraw,
	.shutdown = sim_shutdown,
	.console_open = sim_console_open,
	.watch_open = sim_watch_open,
	.watch_fd = sim_watch_fd,
	.watch_drain = sim_watch_drain,
	.watch_close = sim_watch_close,
	.sched = sim_sched,
	.rename = sim_rename,
	.start_time = sim_start_time,
	.dmesg = sim_dmesg,
	.vcpu_online = sim_vcpu_online,
	.vcpu_affinity = sim_vcpu_affinity,
	.vcpu_info = sim_vcpu_info,
};
