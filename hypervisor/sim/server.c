/*
 * server.c - hvsim's Unix socket: framing, validation and dispatch.
 *
 * One thread per connection, at most max_conns of them.  Every request is
 * checked before it reaches a handler: magic, version, payload length
 * against HV_MAX_PAYLOAD and against the op's fixed or counted size,
 * padding.  A bad request gets an error reply; when the framing itself
 * cannot be trusted (wrong magic, oversized length) the reply is followed
 * by closing that connection, since the next header's position is
 * unknown.  Nothing a client sends can crash hvsim or touch the heap
 * before it is validated.
 *
 * Only root and hvsim's own user may connect: the socket is created
 * 0600 (under a umask, so that it is never more open than that, not
 * even between bind and a chmod), and each peer's SO_PEERCRED is
 * checked as well, for a socket passed in or made more open later.
 * A peer could otherwise create and destroy domains and read and write
 * every guest's memory.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "hvsim.h"
#include "vmbuild/hvops.h"
#include "version.h"

typedef int (*op_fn)(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd);


static int
op_hello(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_hello_reply *r = rep;

	(void)req, (void)len, (void)ret_fd;
	memset(r, 0, sizeof(*r));
	r->abi_version = HV_ABI_VERSION;
	r->caps = HV_CAP_POPULATE_BATCH | HV_CAP_SCRUB_PROGRESS |
	    HV_CAP_COUNTERS | HV_CAP_SHADOW | HV_CAP_CLAIMS | HV_CAP_LIFECYCLE |
	    HV_CAP_SCRUB_BLOCKS | HV_CAP_EVERYDAY | HV_CAP_VCPUS |
	    (hv->mem.backing == HV_BACKING_REAL ? HV_CAP_GUEST_COPY |
	    HV_CAP_LOG_DIRTY : 0);
	r->backing = hv->mem.backing;
	r->flush_mode = hv->cfg.flush_mode;
	r->shadow_threshold = hv->cfg.shadow_threshold;
	r->flags = hv->cfg.pin_host ? HV_HELLO_TOPOLOGY_HOST : 0;
	r->boot_time_ns = hv->boot_time_ns;
	strncpy(r->name, "hvsim " VMBUILD_VERSION, HV_NAME_LEN - 1);
	*ret_len = sizeof(*r);
	return 0;
}

static int
op_host_info(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_host_info *r = rep;
	struct hv_node_info *ni = (struct hv_node_info *)(r + 1);
	struct hv_cpu_info *ci;
	uint32_t i;

	(void)req, (void)len, (void)ret_fd;
	memset(r, 0, sizeof(*r));
	r->nr_nodes = hv->topo.nr_nodes;
	r->nr_cpus = hv->topo.nr_cpus;
	r->threads_per_core = hv->topo.threads_per_core;
	r->cores_per_node = hv->topo.cores_per_node;
	r->total_pages = hv->heap.total_pages;
	r->outstanding_claims = dom_outstanding_total(hv);
	r->max_mfn = hv->heap.total_pages - 1;
	for (i = 0; i < r->nr_nodes; i++) {
		struct hnode *n = &hv->heap.nodes[i];

		ni[i] = (struct hv_node_info){
			.node = i,
			.nr_cpus = hv->topo.cores_per_node *
			    hv->topo.threads_per_core,
			.first_mfn = n->first_mfn,
			.total_pages = n->pages,
			.free_pages = heap_free_pages(&hv->heap, i),
		};
		r->free_pages += ni[i].free_pages;
	}
	ci = (struct hv_cpu_info *)(ni + r->nr_nodes);
	memcpy(ci, hv->topo.cpus, r->nr_cpus * sizeof(*ci));
	*ret_len = sizeof(*r) + r->nr_nodes * sizeof(*ni) +
	    r->nr_cpus * sizeof(*ci);
	return 0;
}

static int
op_domain_create(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_domain_create_reply *r = rep;
	hv_domid_t id;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_create(hv, req, &id);
	if (rc < 0)
		return rc;
	*r = (struct hv_domain_create_reply){ .domid = id };
	*ret_len = sizeof(*r);
	return 0;
}

static int
op_domid(struct hv *hv, uint16_t op, const void *req)
{
	const struct hv_domid *q = req;

	if (q->pad)
		return -EINVAL;
	switch (op) {
	case HV_OP_DOMAIN_DESTROY:
		return dom_destroy(hv, q->domid);
	case HV_OP_DOMAIN_PAUSE:
		return dom_pause(hv, q->domid, true);
	default:
		return dom_pause(hv, q->domid, false);
	}
}

static int
op_domain_destroy(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_domid(hv, HV_OP_DOMAIN_DESTROY, req);
}

static int
op_domain_pause(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_domid(hv, HV_OP_DOMAIN_PAUSE, req);
}

static int
op_domain_unpause(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_domid(hv, HV_OP_DOMAIN_UNPAUSE, req);
}

static int
op_domain_list(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_domain_list_reply *r = rep;
	uint32_t nr = 0, more = 0;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_list(hv, req, (struct hv_domain_info *)(r + 1), &nr, &more);
	if (rc < 0)
		return rc;
	r->nr = nr;
	r->more = more;
	*ret_len = sizeof(*r) + nr * sizeof(struct hv_domain_info);
	return 0;
}

static int
op_set(struct hv *hv, uint16_t op, const void *req)
{
	const struct hv_domain_set *q = req;

	if (q->pad)
		return -EINVAL;
	return dom_set(hv, op, q->domid, q->value);
}

static int
op_domain_max_vcpus(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_set(hv, HV_OP_DOMAIN_MAX_VCPUS, req);
}

static int
op_domain_max_mem(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_set(hv, HV_OP_DOMAIN_MAX_MEM, req);
}

static int
op_claim(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return op_set(hv, HV_OP_CLAIM, req);
}

static int
op_populate(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_populate *q = req;
	int rc;

	(void)ret_fd;
	if (q->nr_extents > HV_MAX_EXTENTS ||
	    len != sizeof(*q) + q->nr_extents * sizeof(struct hv_extent))
		return -EINVAL;
	rc = populate(hv, q, (const struct hv_extent *)(q + 1), rep);
	/* A failed call still says how far it got. */
	*ret_len = sizeof(struct hv_populate_reply);
	return rc;
}

static int
op_map(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_map *q = req;
	struct hv_map_reply *r = rep;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_map(hv, q->domid, q->gfn, q->nr, (uint64_t *)(r + 1));
	if (rc < 0)
		return rc;
	r->nr = q->nr;
	r->pad = 0;
	*ret_len = sizeof(*r) + (size_t)q->nr * sizeof(uint64_t);
	return 0;
}

static int
op_guest_read(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_guest_copy *q = req;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_copy(hv, q->domid, q->gpa, rep, q->len, false);
	if (rc == 0)
		*ret_len = q->len;
	return rc;
}

static int
op_guest_write(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_guest_copy *q = req;

	(void)rep, (void)ret_len, (void)ret_fd;
	if (q->len > HV_MAX_COPY || len != sizeof(*q) + q->len)
		return -EINVAL;
	return dom_copy(hv, q->domid, q->gpa, (void *)(q + 1), q->len, true);
}

static int
op_scrub_progress(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_scrub_reply *r = rep;
	struct hv_scrub_node *sn = (struct hv_scrub_node *)(r + 1);
	uint32_t i;

	(void)req, (void)len, (void)ret_fd;
	memset(r, 0, sizeof(*r));
	r->version = HV_ABI_VERSION;
	r->nr_nodes = hv->heap.nr_nodes;
	r->now_ns = hv_now_ns();
	for (i = 0; i < r->nr_nodes; i++)
		scrub_node_progress(hv, i, &sn[i]);
	*ret_len = sizeof(*r) + r->nr_nodes * sizeof(*sn);
	return 0;
}

static int
op_counters(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	(void)req, (void)len, (void)ret_fd;
	counters_snapshot(hv, rep);
	*ret_len = sizeof(struct hv_counters);
	return 0;
}

static int
op_shadow_workload(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_shadow_workload *q = req;
	struct domain *d;
	int rc;

	(void)len, (void)ret_fd;
	d = dom_get(hv, q->domid);
	if (!d)
		return -ESRCH;
	if (d->flags & HV_DOMF_HAP)
		rc = -EOPNOTSUPP;	/* HAP guests are not shadow-paged */
	else if (__atomic_load_n(&d->state, __ATOMIC_ACQUIRE) !=
	    HV_DOMSTATE_RUNNING || !d->sh)
		rc = -EBUSY;
	else
		rc = shadow_run(hv, d->sh, q->pattern, q->nr_writes, rep);
	dom_put(hv, d);
	if (rc == 0)
		*ret_len = sizeof(struct hv_shadow_workload_reply);
	return rc;
}

static int
op_domain_shutdown(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_domain_shutdown *q = req;

	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	return dom_shutdown(hv, q->domid, q->reason);
}

static int
op_domain_control(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_control(hv, req, rep);
	if (rc == 0)
		*ret_len = sizeof(struct hv_domain_control_reply);
	return rc;
}

/*
 * Blocks this connection's thread until something changes (bounded by
 * HV_WATCH_MAX_MS): a client keeps one such call on a connection of its
 * own.
 */
static int
op_domain_watch(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_domain_watch *q = req;
	struct hv_domain_watch_reply *r = rep;

	(void)len, (void)ret_fd;
	if (q->pad != 0)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	dom_watch(hv, q->since, q->timeout_ms, &r->generation);
	*ret_len = sizeof(*r);
	return 0;
}

static int
op_domain_sched(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_sched(hv, req, rep);
	if (rc == 0)
		*ret_len = sizeof(struct hv_domain_sched_reply);
	return rc;
}

static int
op_domain_rename(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_domain_rename *q = req;
	int rc;

	(void)len, (void)rep, (void)ret_len, (void)ret_fd;
	rc = dom_rename(hv, q);
	if (rc == 0)
		hv_log(hv, "domain %u renamed %s", q->domid, q->name);
	return rc;
}

static int
op_log_read(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_log_read *q = req;
	struct hv_log_reply *r = rep;

	(void)hv, (void)len, (void)ret_fd;
	if (q->pad != 0 || (q->flags & ~HV_LOG_CLEAR))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->len = (uint32_t)hv_log_read((char *)(r + 1),
	    (q->flags & HV_LOG_CLEAR) != 0);
	*ret_len = sizeof(*r) + r->len;
	return 0;
}

static int
op_domain_vcpu(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	const struct hv_domain_vcpu *q = req;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_vcpu(hv, q, rep);
	if (rc == 0)
		*ret_len = sizeof(struct hv_domain_vcpu_reply);
	/* A build sets every vCPU: only --verbose tells each. */
	if (rc == 0 && q->set && hv->cfg.verbose)
		hv_log(hv, "domain %u vcpu %u:%s%s%s", q->domid, q->vcpu,
		    (q->set & HV_VCPU_SET_ONLINE) ? (q->online ? " online" :
		    " offline") : "", (q->set & HV_VCPU_SET_HARD) ?
		    " hard affinity set" : "", (q->set & HV_VCPU_SET_SOFT) ?
		    " soft affinity set" : "");
	return rc;
}

static int
op_dirty_log(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len, int *ret_fd)
{
	struct hv_dirty_log_reply *r = rep;
	int rc;

	(void)len, (void)ret_fd;
	rc = dom_dirty_log(hv, req, r, (uint64_t *)(r + 1));
	if (rc == 0)
		*ret_len = sizeof(*r) + (size_t)r->nr / 8;
	return rc;
}

/* The handler of each op is op_<name> of hvops.def. */
static const op_fn ops[HV_OP_MAX] = {
#define HV_OPDEF(OP, name, req, req_tail, rep, rep_tail) \
	[HV_OP_##OP] = op_##name,
#include "vmbuild/hvops.def"
#undef HV_OPDEF
};

int
server_dispatch(struct hv *hv, uint16_t op, const void *req, size_t len,
    void *rep, size_t *ret_len, int *ret_fd)
{
	const struct hv_op_desc *d;

	*ret_len = 0;
	*ret_fd = -1;
	if (op == 0 || op >= HV_OP_MAX)
		return -ENOSYS;
	/* A fixed size, or the minimum when an array follows. */
	d = hv_op_desc(op);
	if (d->req_tail ? len < d->req_len : len != d->req_len)
		return -EINVAL;
	return ops[op](hv, req, len, rep, ret_len, ret_fd);
}

/* HV_OP_FAULT: arm, clear or only report; never counted itself. */
static int
op_fault(struct hv *hv, const void *req, size_t len, void *rep,
    size_t *ret_len)
{
	const struct hv_fault *q = req;
	int rc = 0;

	if (!hv->cfg.fault_requests)
		return -EPERM;
	if (len != sizeof(*q))
		return -EINVAL;
	if (q->mode == HV_FAULT_CLEAR)
		fault_clear();
	else if (q->mode != HV_FAULT_QUERY)
		rc = fault_arm(q, true);
	if (rc == 0) {
		fault_report(rep);
		*ret_len = sizeof(struct hv_fault_reply);
	}
	if (hv->cfg.verbose || rc == 0)
		hv_log(hv, "fault request: op %s, call %u, mode %u, error %d: "
		    "%s", fault_op_name(q->op) ? fault_op_name(q->op) : "-",
		    q->nth, q->mode, q->error, rc ? strerror(-rc) : "ok");
	return rc;
}

int
server_handle(struct hv *hv, const struct hv_msg_hdr *h, const void *req,
    void *rep, size_t *ret_len, int *ret_fd, bool *ret_hang)
{
	struct fault_hit hit;

	*ret_len = 0;
	*ret_fd = -1;
	*ret_hang = false;
	if (h->version != HV_ABI_VERSION)
		return -EPROTO;
	if (h->op == HV_OP_FAULT)
		return op_fault(hv, req, h->len, rep, ret_len);
	if (h->op == 0 || h->op >= HV_OP_MAX)
		return -ENOSYS;
	hit = fault_check(h->op);
	switch (hit.mode) {
	case HV_FAULT_FAIL:
		hv_log(hv, "fault: %s call %llu fails with %s",
		    fault_op_name(h->op), (unsigned long long)hit.call,
		    strerrorname_np(hit.error));
		return -hit.error;
	case HV_FAULT_HANG:
		hv_log(hv, "fault: %s call %llu hangs", fault_op_name(h->op),
		    (unsigned long long)hit.call);
		*ret_hang = true;
		return 0;
	case HV_FAULT_CRASH:
		hv_log(hv, "fault: %s call %llu: crashing",
		    fault_op_name(h->op), (unsigned long long)hit.call);
		kill(getpid(), SIGKILL);
		return -EIO;	/* not reached */
	default:
		break;
	}
	return server_dispatch(hv, h->op, req, h->len, rep, ret_len, ret_fd);
}

/* ------------------------------------------------------------------ */

struct conn {
	struct hv *hv;
	int fd;
	uint32_t slot;
};

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_gone = PTHREAD_COND_INITIALIZER;
static int *conn_fds;		/* [max_conns], -1 when free */
static uint32_t nr_conns;

static int
read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * Requests are read through a buffer: a request's header and its
 * payload usually come in one read() instead of two (a system call is
 * the larger part of a small request's cost).  Bytes past the request
 * stay for the next one; payloads larger than the buffer go straight
 * to their destination.
 */
struct rbuf {
	size_t	off, len;
	char	b[64 << 10];
};

static int
read_buffered(int fd, struct rbuf *rb, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		size_t k;

		if (rb->len == 0) {
			ssize_t n;

			if (len >= sizeof(rb->b))
				return read_full(fd, p, len);
			n = read(fd, rb->b, sizeof(rb->b));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return n == 0 ? -ECONNRESET : -errno;
			rb->off = 0;
			rb->len = (size_t)n;
		}
		k = len < rb->len ? len : rb->len;
		memcpy(p, rb->b + rb->off, k);
		rb->off += k;
		rb->len -= k;
		p += k;
		len -= k;
	}
	return 0;
}

/*
 * Replies to requests that came together (a client's pipelined call,
 * hvc_calls) are held while the next request is already in the read
 * buffer, then go out with the last one in one sendmsg(): the client
 * wakes once for all of them, not once per reply.
 */
struct obuf {
	size_t	len;
	char	b[64 << 10];
};

/* Whether the whole next request is in the read buffer already. */
static bool
next_buffered(const struct rbuf *rb)
{
	struct hv_msg_hdr h;

	if (rb->len < sizeof(h))
		return false;
	memcpy(&h, rb->b + rb->off, sizeof(h));
	return h.magic == HV_MSG_MAGIC && h.len <= rb->len - sizeof(h);
}

static struct hv_msg_hdr
reply_hdr(const struct hv_msg_hdr *req, int status, size_t len)
{
	return (struct hv_msg_hdr){
		.magic = HV_MSG_MAGIC,
		.version = HV_ABI_VERSION,
		.op = req->op,
		.len = (uint32_t)len,
		.status = status,
		.seq = req->seq,
	};
}

/* Hold a reply in ob; false when it does not fit (it is sent now). */
static bool
hold_reply(struct obuf *ob, const struct hv_msg_hdr *req, int status,
    const void *payload, size_t len)
{
	struct hv_msg_hdr h = reply_hdr(req, status, len);

	if (sizeof(h) + len > sizeof(ob->b) - ob->len)
		return false;
	memcpy(ob->b + ob->len, &h, sizeof(h));
	if (len)
		memcpy(ob->b + ob->len + sizeof(h), payload, len);
	ob->len += sizeof(h) + len;
	return true;
}

/* All of iov[0..n), pass_fd (if >= 0) with the first bytes. */
static int
send_iov(int fd, struct iovec *iov, int n, int pass_fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };

	while (mh.msg_iovlen > 0 && mh.msg_iov->iov_len == 0) {
		mh.msg_iov++;
		mh.msg_iovlen--;
	}
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf.buf;
		mh.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	while (mh.msg_iovlen > 0) {
		ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		/* The descriptor went with the first bytes. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		while (mh.msg_iovlen > 0 && (size_t)k >= mh.msg_iov->iov_len) {
			k -= mh.msg_iov->iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov->iov_base = (char *)mh.msg_iov->iov_base + k;
			mh.msg_iov->iov_len -= k;
		}
	}
	return 0;
}

/*
 * A reply, after the replies held in ob (which it empties); a passed
 * descriptor goes with its own reply's bytes, not with held ones.
 */
static int
send_reply(int fd, struct obuf *ob, const struct hv_msg_hdr *req, int status,
    const void *payload, size_t len, int pass_fd)
{
	struct hv_msg_hdr h = reply_hdr(req, status, len);
	struct iovec iov[3] = {
		{ .iov_base = ob->b, .iov_len = ob->len },
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};
	int rc = 0;

	if (pass_fd >= 0 && ob->len > 0) {
		rc = send_iov(fd, iov, 1, -1);
		iov[0].iov_len = 0;
	}
	ob->len = 0;
	if (rc == 0)
		rc = send_iov(fd, iov, 3, pass_fd);
	return rc;
}

/* What ob holds, sent now (before a hang or a close). */
static void
flush_held(int fd, struct obuf *ob)
{
	struct iovec iov = { .iov_base = ob->b, .iov_len = ob->len };

	if (ob->len > 0)
		(void)send_iov(fd, &iov, 1, -1);
	ob->len = 0;
}

/*
 * An injected hang: no reply ever, but the thread ends when the client
 * gives up (closes) or hvsim stops (server_run shuts the socket down).
 */
static void
hang_until_closed(int fd)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };

		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return;
		if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
			return;
	}
}

static void *
conn_main(void *arg)
{
	struct conn *c = arg;
	struct hv *hv = c->hv;
	void *req = malloc(HV_MAX_PAYLOAD), *rep = malloc(HV_MAX_PAYLOAD);
	struct rbuf *rb = malloc(sizeof(*rb));
	struct obuf *ob = malloc(sizeof(*ob));
	struct hv_msg_hdr h;

	if (rb != NULL)
		rb->off = rb->len = 0;
	if (ob != NULL)
		ob->len = 0;
	while (req && rep && rb && ob) {
		size_t rlen;
		int status, pfd;
		bool hang;

		if (read_buffered(c->fd, rb, &h, sizeof(h)) < 0)
			break;
		if (h.magic != HV_MSG_MAGIC) {
			send_reply(c->fd, ob, &h, -EPROTO, NULL, 0, -1);
			break;
		}
		if (h.len > HV_MAX_PAYLOAD) {
			send_reply(c->fd, ob, &h, -EMSGSIZE, NULL, 0, -1);
			break;
		}
		if (read_buffered(c->fd, rb, req, h.len) < 0)
			break;
		status = server_handle(hv, &h, req, rep, &rlen, &pfd, &hang);
		if (hang) {
			flush_held(c->fd, ob);
			hang_until_closed(c->fd);
			break;
		}
		if (hv->cfg.verbose)
			hv_log(hv, "conn %u: op %u len %u -> %d", c->slot,
			    h.op, h.len, status);
		if (pfd < 0 && next_buffered(rb) &&
		    hold_reply(ob, &h, status, rep, rlen))
			continue;
		if (send_reply(c->fd, ob, &h, status, rep, rlen, pfd) < 0)
			break;
	}
	free(req);
	free(rep);
	free(rb);
	free(ob);
	/* Closed under the lock, so that shutdown never hits a reused fd. */
	pthread_mutex_lock(&conn_lock);
	close(c->fd);
	conn_fds[c->slot] = -1;
	nr_conns--;
	pthread_cond_broadcast(&conn_gone);
	pthread_mutex_unlock(&conn_lock);
	free(c);
	return NULL;
}

int
server_listen(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A stale socket of a dead hvsim is replaced, a live one is not. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			rc = -EADDRINUSE;
			goto fail;
		}
		unlink(path);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
	}
	/* 0600 from the start: no moment in which others could connect. */
	old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0 || listen(fd, SOMAXCONN) < 0) {
		rc = -errno;
		goto fail;
	}
	return fd;

fail:
	close(fd);
	return rc;
}

/* Root or hvsim's own user; others are refused (logged once a uid). */
static bool
peer_allowed(struct hv *hv, int fd)
{
	static uid_t last_refused = (uid_t)-1;
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		hv_log(hv, "SO_PEERCRED: %s; connection refused",
		    strerror(errno));
		return false;
	}
	if (cr.uid == 0 || cr.uid == geteuid())
		return true;
	if (cr.uid != last_refused)
		hv_log(hv, "connection of pid %d uid %u refused: only root and "
		    "uid %u may use hvsim", (int)cr.pid, (unsigned)cr.uid,
		    (unsigned)geteuid());
	last_refused = cr.uid;
	return false;
}

int
server_run(struct hv *hv, int lfd, volatile int *stop)
{
	uint32_t max = hv->cfg.max_conns, i;
	pthread_attr_t attr;
	int rc = 0;

	conn_fds = malloc(max * sizeof(*conn_fds));
	if (!conn_fds)
		return -ENOMEM;
	for (i = 0; i < max; i++)
		conn_fds[i] = -1;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	while (!*stop) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		struct conn *c;
		pthread_t th;
		int fd;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!peer_allowed(hv, fd)) {
			close(fd);
			continue;
		}
		pthread_mutex_lock(&conn_lock);
		for (i = 0; i < max && conn_fds[i] >= 0; i++)
			;
		if (i == max) {
			/* Bounded: refuse rather than grow without limit. */
			pthread_mutex_unlock(&conn_lock);
			hv_log(hv, "connection refused: %u connections", max);
			close(fd);
			continue;
		}
		conn_fds[i] = fd;
		nr_conns++;
		pthread_mutex_unlock(&conn_lock);
		c = malloc(sizeof(*c));
		if (c) {
			*c = (struct conn){ .hv = hv, .fd = fd, .slot = i };
			if (pthread_create(&th, &attr, conn_main, c) == 0)
				continue;
			free(c);
		}
		pthread_mutex_lock(&conn_lock);
		conn_fds[i] = -1;
		nr_conns--;
		pthread_mutex_unlock(&conn_lock);
		close(fd);
	}
	pthread_attr_destroy(&attr);
	/* Wake every connection and wait until they have all gone. */
	dom_watch_stop(hv);
	pthread_mutex_lock(&conn_lock);
	for (i = 0; i < max; i++)
		if (conn_fds[i] >= 0)
			shutdown(conn_fds[i], SHUT_RDWR);
	while (nr_conns > 0)
		pthread_cond_wait(&conn_gone, &conn_lock);
	pthread_mutex_unlock(&conn_lock);
	free(conn_fds);
	conn_fds = NULL;
	return rc;
}
