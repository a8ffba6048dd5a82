/*
 * hvclient.c - client side of hvsim's socket (see vmbuild/hvclient.h).
 *
 * One request at a time per connection: a header plus payload goes out,
 * one header plus payload comes back with the same seq.  A descriptor may
 * ride along with the reply header (SCM_RIGHTS; no op of ABI 2 passes one,
 * guest memory is copied with HV_OP_GUEST_READ/WRITE).  Any framing
 * error leaves the stream in an unknown state, so the connection is then
 * marked broken and every later call fails with -ECONNRESET.
 *
 * No wait is unbounded: connecting, sending and receiving share one
 * deadline per call (hvc_set_timeout), after which the call fails with
 * -ETIMEDOUT and the connection is broken, so that a hung hypervisor
 * cannot hold a thread for ever.  A cancel descriptor (an eventfd or a
 * pipe, hvc_set_cancel_fd) that becomes readable gives the call in
 * progress HVC_CANCEL_GRACE_MS more, then ends it with -ECANCELED: a
 * call the hypervisor is working on ends well within that, and its
 * outcome is then known (an abandoned populate would still hold pages
 * when the caller's undo has already run), while a hung one is left.
 *
 * Above the transport, every op goes through hvc_op, which takes the
 * sizes of its request and reply from hvops.def, the table hvsim's
 * server checks them by: a typed helper only builds its request and
 * checks what the table cannot (counts, versions).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmbuild/hvclient.h"
#include "vmbuild/hvops.h"

struct hvc {
	int fd;
	bool broken;
	int timeout_ms;			/* per call; <= 0: none */
	int cancel_fd;			/* readable: give up; -1: none */
	uint64_t deadline_ms;		/* of the call in progress; 0: none */
	uint64_t seq;
	uint64_t populate_calls;	/* HV_OP_POPULATE requests sent */
	struct hv_hello_reply hello;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Wait until fd is ready for `events`, the call's deadline passes
 * (-ETIMEDOUT) or the cancel descriptor becomes readable (-ECANCELED).
 */
static int
wait_ready(struct hvc *conn, short events)
{
	bool cancelled = false;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = conn->fd, .events = events },
			{ .fd = conn->cancel_fd, .events = POLLIN },
		};
		bool watch = conn->cancel_fd >= 0 && !cancelled;
		int left = -1, r;

		if (conn->deadline_ms) {
			uint64_t now = now_ms();

			if (now >= conn->deadline_ms)
				return cancelled ? -ECANCELED : -ETIMEDOUT;
			left = (int)(conn->deadline_ms - now);
		}
		r = poll(pfd, watch ? 2 : 1, left);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		if (pfd[0].revents)
			return 0;
		if (watch && pfd[1].revents) {
			uint64_t end = now_ms() + HVC_CANCEL_GRACE_MS;

			cancelled = true;
			if (!conn->deadline_ms || end < conn->deadline_ms)
				conn->deadline_ms = end;
		}
	}
}

static int
write_all(struct hvc *conn, struct iovec *iov, int iovcnt)
{
	while (iovcnt > 0) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = iovcnt };
		ssize_t n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		int rc;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_ready(conn, POLLOUT);
			if (rc < 0)
				return rc;
			continue;
		}
		while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
			n -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= n;
		}
	}
	return 0;
}

/*
 * A descriptor that came with the data goes to *fdp; a second one is
 * closed (the protocol never sends two).
 */
static void
take_fd(struct msghdr *mh, int *fdp)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		int rfd;

		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS ||
		    cm->cmsg_len < CMSG_LEN(sizeof(int)))
			continue;
		memcpy(&rfd, CMSG_DATA(cm), sizeof(int));
		if (*fdp >= 0)
			close(rfd);
		else
			*fdp = rfd;
	}
}

/*
 * Read exactly len bytes.  If fdp is not NULL, a descriptor passed with
 * any part of the data is stored there (a second one is closed: the
 * protocol never sends two).
 */
static int
read_all(struct hvc *conn, void *buf, size_t len, int *fdp)
{
	char *p = buf;

	while (len > 0) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int))];
		} cbuf;
		struct iovec iov = { .iov_base = p, .iov_len = len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (fdp) {
			mh.msg_control = cbuf.buf;
			mh.msg_controllen = sizeof(cbuf.buf);
		}
		n = recvmsg(conn->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			int rc;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_ready(conn, POLLIN);
			if (rc < 0)
				return rc;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (fdp)
			take_fd(&mh, fdp);
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * Wait for the reply, then read its header and as much of its payload as
 * comes with it, into rep, in one recvmsg(): a round trip is then a
 * sendmsg(), a poll() and a recvmsg().  Nothing past this reply can be
 * read: hvsim sends only replies, one per request, and the next request
 * is not sent yet.  *ret_got: the payload bytes read.
 */
static int
read_reply(struct hvc *conn, struct hv_msg_hdr *hdr, void *rep,
    size_t rep_cap, size_t *ret_got, int *fdp)
{
	size_t have = 0;

	while (have < sizeof(*hdr)) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int))];
		} cbuf;
		struct iovec iov[2] = {
			{ (char *)hdr + have, sizeof(*hdr) - have },
			{ rep, rep_cap },
		};
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = rep_cap ?
		    2 : 1, .msg_control = cbuf.buf,
		    .msg_controllen = sizeof(cbuf.buf) };
		ssize_t n;
		int rc;

		rc = wait_ready(conn, POLLIN);
		if (rc < 0)
			return rc;
		n = recvmsg(conn->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ECONNRESET;
		take_fd(&mh, fdp);
		have += (size_t)n;
	}
	*ret_got = have - sizeof(*hdr);
	return 0;
}

/* Read and discard len bytes of payload. */
static int
drain(struct hvc *conn, size_t len)
{
	char tmp[4096];
	int rc;

	while (len > 0) {
		size_t n = len < sizeof(tmp) ? len : sizeof(tmp);

		rc = read_all(conn, tmp, n, NULL);
		if (rc < 0)
			return rc;
		len -= n;
	}
	return 0;
}

/*
 * The rest of a reply whose header (and `got` payload bytes) are in:
 * the header checked against the request (op, seq), the payload read
 * into rep, or drained when it does not fit (-EMSGSIZE, the stream kept
 * in step).  Returns the reply's status, or a transport error with
 * *ret_broken set.  *ret_len: the payload's length.
 */
static int
reply_rest(struct hvc *conn, const struct hv_msg_hdr *hdr, uint16_t op,
    uint64_t seq, void *rep, size_t rep_cap, size_t got, int *fdp,
    size_t *ret_len, bool *ret_broken)
{
	int rc;

	*ret_broken = true;
	if (hdr->magic != HV_MSG_MAGIC || hdr->version != HV_ABI_VERSION ||
	    hdr->op != op || hdr->seq != seq || hdr->len > HV_MAX_PAYLOAD ||
	    hdr->status > 0 || got > hdr->len)
		return -EPROTO;
	if (hdr->len > rep_cap) {
		/* Keep the stream in step: consume what we cannot take. */
		rc = drain(conn, hdr->len - got);
		if (rc < 0)
			return rc;
		*ret_broken = false;
		return hdr->status < 0 ? hdr->status : -EMSGSIZE;
	}
	rc = read_all(conn, (char *)rep + got, hdr->len - got, fdp);
	if (rc < 0)
		return rc;
	/*
	 * A failing call may still carry a payload (a populate that stopped
	 * at a bad extent says how far it got), so the length is reported
	 * either way.
	 */
	*ret_len = hdr->len;
	*ret_broken = false;
	return hdr->status;
}

int
hvc_call(struct hvc *conn, uint16_t op, const void *req, size_t req_len,
    void *rep, size_t rep_cap, size_t *ret_len, int *ret_fd)
{
	struct hv_msg_hdr hdr = {
		.magic = HV_MSG_MAGIC,
		.version = HV_ABI_VERSION,
		.op = op,
		.len = (uint32_t)req_len,
	};
	struct iovec iov[2];
	size_t got = 0, len = SIZE_MAX;	/* SIZE_MAX: no payload read */
	bool broken = true;
	int fd = -1;
	int rc;

	if (!conn || (req_len && !req) || (rep_cap && !rep))
		return -EINVAL;
	if (req_len > HV_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (conn->broken)
		return -ECONNRESET;

	hdr.seq = ++conn->seq;
	conn->deadline_ms = conn->timeout_ms > 0 ?
	    now_ms() + (uint64_t)conn->timeout_ms : 0;
	iov[0] = (struct iovec){ .iov_base = &hdr, .iov_len = sizeof(hdr) };
	iov[1] = (struct iovec){ .iov_base = (void *)req, .iov_len = req_len };
	rc = write_all(conn, iov, req_len ? 2 : 1);
	if (rc == 0)
		rc = read_reply(conn, &hdr, rep, rep_cap, &got, &fd);
	if (rc == 0)
		rc = reply_rest(conn, &hdr, op, conn->seq, rep, rep_cap, got,
		    &fd, &len, &broken);
	conn->broken = broken;
	if (ret_len && len != SIZE_MAX)
		*ret_len = len;
	if (rc == 0 && ret_fd) {
		*ret_fd = fd;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}

/* v's sizes as hvops.def gives them for its op (hvc_op's check). */
static bool
sizes_ok(uint16_t op, size_t req_len, size_t rep_cap)
{
	const struct hv_op_desc *d = hv_op_desc(op);

	return d && (d->req_tail ? req_len >= d->req_len :
	    req_len == d->req_len) && rep_cap >= d->rep_len &&
	    (d->rep_tail || rep_cap == d->rep_len);
}

/* A successful reply's length as hvops.def wants it. */
static bool
reply_len_ok(uint16_t op, size_t len)
{
	const struct hv_op_desc *d = hv_op_desc(op);

	return d->rep_tail ? len >= d->rep_len : len == d->rep_len;
}

int
hvc_calls(struct hvc *conn, struct hvc_req *v, size_t n)
{
	struct hv_msg_hdr hdr[HVC_CALLS_MAX];
	struct iovec iov[2 * HVC_CALLS_MAX];
	int niov = 0, rc = 0;
	uint64_t seq0;

	if (!conn || !v || n == 0 || n > HVC_CALLS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!sizes_ok(v[i].op, v[i].req_len, v[i].rep_cap) ||
		    (v[i].req_len && !v[i].req) || (v[i].rep_cap && !v[i].rep))
			return -EINVAL;
	if (conn->broken)
		return -ECONNRESET;
	seq0 = conn->seq + 1;
	for (size_t i = 0; i < n; i++) {
		hdr[i] = (struct hv_msg_hdr){ .magic = HV_MSG_MAGIC,
		    .version = HV_ABI_VERSION, .op = v[i].op,
		    .len = (uint32_t)v[i].req_len, .seq = ++conn->seq };
		iov[niov++] = (struct iovec){ &hdr[i], sizeof(hdr[i]) };
		if (v[i].req_len)
			iov[niov++] = (struct iovec){ (void *)v[i].req,
			    v[i].req_len };
		v[i].rc = -ECONNRESET;
		v[i].rep_len = 0;
	}
	conn->deadline_ms = conn->timeout_ms > 0 ?
	    now_ms() + (uint64_t)conn->timeout_ms : 0;
	rc = write_all(conn, iov, niov);
	/*
	 * Replies follow one another on the stream: each header is read
	 * alone, then exactly its payload, so that no read takes bytes of
	 * the next reply.
	 */
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct hv_msg_hdr h;
		bool broken = true;
		int fd = -1;

		rc = read_all(conn, &h, sizeof(h), &fd);
		if (rc == 0)
			v[i].rc = reply_rest(conn, &h, v[i].op, seq0 + i,
			    v[i].rep, v[i].rep_cap, 0, &fd, &v[i].rep_len,
			    &broken);
		if (fd >= 0)
			close(fd);	/* no op of ABI 2 passes one */
		if (broken)
			rc = v[i].rc < 0 ? v[i].rc : -EPROTO;
		else if (v[i].rc == 0 && !reply_len_ok(v[i].op,
		    v[i].rep_len))
			v[i].rc = -EPROTO;
	}
	if (rc < 0)
		conn->broken = true;
	return rc;
}

/*
 * A Unix socket whose backlog is full (hvsim not accepting) refuses a
 * non-blocking connect with EAGAIN: try again for a while, not for ever.
 */
static int
connect_bounded(int fd, const struct sockaddr_un *sun)
{
	uint64_t deadline = now_ms() + HVC_DEFAULT_TIMEOUT_MS;

	while (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) < 0) {
		struct timespec ts = { 0, 10 * 1000000 };

		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}

int
hvc_open(const char *path, struct hvc **ret_conn)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct hvc *conn = NULL;
	size_t len = 0;
	int rc;

	if (!path || !ret_conn)
		return -EINVAL;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);

	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return -ENOMEM;
	conn->timeout_ms = HVC_DEFAULT_TIMEOUT_MS;
	conn->cancel_fd = -1;
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (conn->fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = connect_bounded(conn->fd, &sun);
	if (rc < 0)
		goto fail;
	rc = hvc_call(conn, HV_OP_HELLO, NULL, 0, &conn->hello,
	    sizeof(conn->hello), &len, NULL);
	if (rc < 0)
		goto fail;
	if (len != sizeof(conn->hello) ||
	    conn->hello.abi_version != HV_ABI_VERSION) {
		rc = -EPROTO;
		goto fail;
	}
	conn->hello.name[HV_NAME_LEN - 1] = '\0';
	*ret_conn = conn;
	return 0;

fail:
	hvc_close(conn);
	return rc;
}

void
hvc_close(struct hvc *conn)
{
	if (!conn)
		return;
	if (conn->fd >= 0)
		close(conn->fd);
	free(conn);
}

void
hvc_set_timeout(struct hvc *conn, int timeout_ms)
{
	conn->timeout_ms = timeout_ms;
}

void
hvc_set_cancel_fd(struct hvc *conn, int fd)
{
	conn->cancel_fd = fd;
}

const struct hv_hello_reply *
hvc_hello(const struct hvc *conn)
{
	return &conn->hello;
}

uint64_t
hvc_populate_calls(const struct hvc *conn)
{
	return conn->populate_calls;
}


/* ------------------------------------------------------------------ */
/* Ops, as hvops.def describes them.                                   */

int
hvc_op(struct hvc *conn, uint16_t op, const void *req, size_t req_len,
    void *rep, size_t rep_cap, size_t *ret_len)
{
	size_t len = 0;
	int rc;

	if (ret_len)
		*ret_len = 0;
	if (!sizes_ok(op, req_len, rep_cap))
		return -EINVAL;
	rc = hvc_call(conn, op, req, req_len, rep, rep_cap, &len, NULL);
	if (rc == 0 && !reply_len_ok(op, len))
		rc = -EPROTO;
	if (ret_len)
		*ret_len = len;
	return rc;
}

/*
 * An op whose reply has an array: into a buffer of `cap` bytes,
 * malloc'd here, that *ret_rep gets on success (the caller frees it and
 * checks the count against *ret_len).
 */
static int
op_alloc(struct hvc *conn, uint16_t op, const void *req, size_t req_len,
    size_t cap, void **ret_rep, size_t *ret_len)
{
	void *rep = malloc(cap);
	int rc;

	if (!rep)
		return -ENOMEM;
	rc = hvc_op(conn, op, req, req_len, rep, cap, ret_len);
	if (rc < 0) {
		free(rep);
		return rc;
	}
	*ret_rep = rep;
	return 0;
}

#define HOST_INFO_CAP	(sizeof(struct hv_host_info) + \
	HV_MAX_NODES * sizeof(struct hv_node_info) + \
	HV_MAX_CPUS * sizeof(struct hv_cpu_info))

/* A host_info reply of `len` bytes holds what its counts say. */
static int
host_info_check(const struct hv_host_info *info, size_t len)
{
	if (info->nr_nodes > HV_MAX_NODES || info->nr_cpus > HV_MAX_CPUS ||
	    len != sizeof(*info) +
	    info->nr_nodes * sizeof(struct hv_node_info) +
	    info->nr_cpus * sizeof(struct hv_cpu_info))
		return -EPROTO;
	return 0;
}

int
hvc_host_info(struct hvc *conn, struct hv_host_info **ret_info)
{
	struct hv_host_info *info = NULL;
	size_t len = 0;
	int rc;

	rc = op_alloc(conn, HV_OP_HOST_INFO, NULL, 0, HOST_INFO_CAP,
	    (void **)&info, &len);
	if (rc < 0)
		return rc;
	rc = host_info_check(info, len);
	if (rc < 0) {
		free(info);
		return rc;
	}
	*ret_info = info;
	return 0;
}

struct hv_node_info *
hvc_host_nodes(struct hv_host_info *info)
{
	return (struct hv_node_info *)(info + 1);
}

struct hv_cpu_info *
hvc_host_cpus(struct hv_host_info *info)
{
	return (struct hv_cpu_info *)(hvc_host_nodes(info) + info->nr_nodes);
}

int
hvc_domain_create(struct hvc *conn, const struct hv_domain_create *req,
    hv_domid_t *ret_domid)
{
	struct hv_domain_create_reply rep;
	int rc;

	rc = hvc_op(conn, HV_OP_DOMAIN_CREATE, req, sizeof(*req), &rep,
	    sizeof(rep), NULL);
	if (rc == 0 && ret_domid)
		*ret_domid = rep.domid;
	return rc;
}

int
hvc_domain_op(struct hvc *conn, uint16_t op, hv_domid_t domid)
{
	struct hv_domid req = { .domid = domid };

	if (op != HV_OP_DOMAIN_DESTROY && op != HV_OP_DOMAIN_PAUSE &&
	    op != HV_OP_DOMAIN_UNPAUSE)
		return -EINVAL;
	return hvc_op(conn, op, &req, sizeof(req), NULL, 0, NULL);
}

int
hvc_domain_set(struct hvc *conn, uint16_t op, hv_domid_t domid,
    uint64_t value)
{
	struct hv_domain_set req = { .domid = domid, .value = value };

	if (op != HV_OP_DOMAIN_MAX_VCPUS && op != HV_OP_DOMAIN_MAX_MEM &&
	    op != HV_OP_CLAIM)
		return -EINVAL;
	return hvc_op(conn, op, &req, sizeof(req), NULL, 0, NULL);
}

#define LIST_CAP	(sizeof(struct hv_domain_list_reply) + \
	HV_MAX_LIST * sizeof(struct hv_domain_info))

/*
 * One list reply of `len` bytes appended to *all (*nr domains); *req
 * moves past its last domain.  *ret_more: whether more are to be asked.
 */
static int
list_append(const struct hv_domain_list_reply *rep, size_t len,
    struct hv_domain_list *req, struct hv_domain_info **all, uint32_t *nr,
    bool *ret_more)
{
	const struct hv_domain_info *info = (const void *)(rep + 1);
	struct hv_domain_info *tmp;

	if (rep->nr > HV_MAX_LIST || len != sizeof(*rep) + rep->nr *
	    sizeof(*info))
		return -EPROTO;
	if (rep->nr > 0) {
		tmp = realloc(*all, (*nr + rep->nr) * sizeof(*info));
		if (!tmp)
			return -ENOMEM;
		*all = tmp;
		memcpy(*all + *nr, info, rep->nr * sizeof(*info));
		*nr += rep->nr;
	}
	*ret_more = rep->more && rep->nr > 0;
	if (!*ret_more)
		return 0;
	/* Domids only grow, so continue after the last one seen. */
	if (info[rep->nr - 1].domid < req->first_domid)
		return -EPROTO;
	req->first_domid = info[rep->nr - 1].domid + 1;
	return 0;
}

/* The rest of a list from req->first_domid on, rep a LIST_CAP buffer. */
static int
list_more(struct hvc *conn, struct hv_domain_list *req,
    struct hv_domain_list_reply *rep, struct hv_domain_info **all,
    uint32_t *nr)
{
	bool more = true;
	size_t len;
	int rc = 0;

	while (more && rc == 0) {
		rc = hvc_op(conn, HV_OP_DOMAIN_LIST, req, sizeof(*req), rep,
		    LIST_CAP, &len);
		if (rc == 0)
			rc = list_append(rep, len, req, all, nr, &more);
	}
	return rc;
}

int
hvc_domain_list(struct hvc *conn, struct hv_domain_info **ret_info,
    uint32_t *ret_nr)
{
	struct hv_domain_list req = { .first_domid = 0, .max = HV_MAX_LIST };
	struct hv_domain_list_reply *rep;
	struct hv_domain_info *all = NULL;
	uint32_t nr = 0;
	int rc;

	rep = malloc(LIST_CAP);
	if (!rep)
		return -ENOMEM;
	rc = list_more(conn, &req, rep, &all, &nr);
	free(rep);
	if (rc < 0) {
		free(all);
		return rc;
	}
	*ret_info = all;
	*ret_nr = nr;
	return 0;
}

static void
stats_add(struct hv_populate_stats *acc, const struct hv_populate_stats *s)
{
	acc->extents_done += s->extents_done;
	acc->pages_done += s->pages_done;
	acc->pages_scrubbed_inline += s->pages_scrubbed_inline;
	acc->pages_fallback += s->pages_fallback;
	acc->flushes_issued += s->flushes_issued;
	acc->flushes_avoided += s->flushes_avoided;
	acc->filter_evaluations += s->filter_evaluations;
	acc->elapsed_ns += s->elapsed_ns;
}

int
hvc_populate(struct hvc *conn, hv_domid_t domid, uint32_t flags,
    const struct hv_extent *ext, uint32_t nr,
    struct hv_populate_stats *stats, uint32_t *ret_done)
{
	return hvc_populate_step(conn, domid, flags, ext, nr, stats, ret_done,
	    NULL, NULL);
}

int
hvc_populate_step(struct hvc *conn, hv_domid_t domid, uint32_t flags,
    const struct hv_extent *ext, uint32_t nr,
    struct hv_populate_stats *stats, uint32_t *ret_done,
    void (*step)(void *arg, uint32_t done), void *arg)
{
	struct hv_populate *req = NULL;
	struct hv_populate_reply rep;
	uint32_t base = 0;
	size_t len;
	int rc = 0;

	if (nr && !ext)
		return -EINVAL;
	req = malloc(sizeof(*req) + HV_MAX_EXTENTS * sizeof(*ext));
	if (!req)
		return -ENOMEM;

	/* Requests carry at most HV_MAX_EXTENTS; larger lists go in slices. */
	while (base < nr) {
		uint32_t n = nr - base < HV_MAX_EXTENTS ? nr - base :
		    HV_MAX_EXTENTS;

		*req = (struct hv_populate){
			.domid = domid, .flags = flags, .nr_extents = n,
		};
		memcpy(req + 1, ext + base, n * sizeof(*ext));
		while (req->start < n) {
			conn->populate_calls++;
			/* A failed call's reply still says how far it got. */
			rc = hvc_op(conn, HV_OP_POPULATE, req,
			    sizeof(*req) + n * sizeof(*ext), &rep, sizeof(rep),
			    &len);
			if (len == sizeof(rep) &&
			    rep.version == HV_ABI_VERSION) {
				if (stats)
					stats_add(stats, &rep.stats);
			} else {
				len = 0;	/* nothing in it to trust */
				if (rc == 0)
					rc = -EPROTO;
			}
			if (rc < 0) {
				if (ret_done)
					*ret_done = base + (len == sizeof(rep) &&
					    rep.next <= n ? rep.next : req->start);
				goto out;
			}
			if (rep.next <= req->start || rep.next > n) {
				/* No progress would loop for ever. */
				rc = -EPROTO;
				if (ret_done)
					*ret_done = base + req->start;
				goto out;
			}
			req->start = rep.next;
			if (step != NULL)
				step(arg, base + req->start);
		}
		base += n;
	}
out:
	free(req);
	return rc;
}

int
hvc_map(struct hvc *conn, hv_domid_t domid, uint64_t gfn, uint32_t nr,
    uint64_t *mfns)
{
	struct hv_map req = { .domid = domid, .nr = nr, .gfn = gfn };
	struct hv_map_reply *rep = NULL;
	size_t cap, len = 0;
	int rc;

	if (nr == 0 || nr > HV_MAX_MAP_PAGES || !mfns)
		return -EINVAL;
	cap = sizeof(*rep) + (size_t)nr * sizeof(uint64_t);
	rc = op_alloc(conn, HV_OP_MAP, &req, sizeof(req), cap, (void **)&rep,
	    &len);
	if (rc < 0)
		return rc;
	if (len != cap || rep->nr != nr)
		rc = -EPROTO;
	else
		memcpy(mfns, rep + 1, (size_t)nr * sizeof(uint64_t));
	free(rep);
	return rc;
}

int
hvc_guest_read(struct hvc *conn, hv_domid_t domid, uint64_t gpa, void *buf,
    size_t len)
{
	uint8_t *p = buf;
	int rc = 0;

	if (!buf || gpa + len < gpa)
		return -EINVAL;
	while (len > 0 && rc == 0) {
		struct hv_guest_copy req = { .domid = domid, .gpa = gpa,
		    .len = len < HV_MAX_COPY ? (uint32_t)len : HV_MAX_COPY };
		size_t got = 0;

		rc = hvc_op(conn, HV_OP_GUEST_READ, &req, sizeof(req), p,
		    req.len, &got);
		if (rc == 0 && got != req.len)
			rc = -EPROTO;
		p += req.len;
		gpa += req.len;
		len -= req.len;
	}
	return rc;
}

int
hvc_guest_write(struct hvc *conn, hv_domid_t domid, uint64_t gpa,
    const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct hv_guest_copy *req;
	int rc = 0;

	if (!buf || gpa + len < gpa)
		return -EINVAL;
	req = malloc(sizeof(*req) + (len < HV_MAX_COPY ? len : HV_MAX_COPY));
	if (!req)
		return -ENOMEM;
	while (len > 0 && rc == 0) {
		*req = (struct hv_guest_copy){ .domid = domid, .gpa = gpa,
		    .len = len < HV_MAX_COPY ? (uint32_t)len : HV_MAX_COPY };
		memcpy(req + 1, p, req->len);
		rc = hvc_op(conn, HV_OP_GUEST_WRITE, req,
		    sizeof(*req) + req->len, NULL, 0, NULL);
		p += req->len;
		gpa += req->len;
		len -= req->len;
	}
	free(req);
	return rc;
}

int
hvc_dirty_log(struct hvc *conn, hv_domid_t domid, uint32_t op, uint64_t gfn,
    uint32_t nr, uint64_t *bits, uint64_t *ret_dirty, uint64_t *ret_end)
{
	struct hv_dirty_log req = { .domid = domid, .op = op, .gfn = gfn,
	    .nr = nr };
	struct hv_dirty_log_reply *rep = NULL;
	bool window = op == HV_DIRTY_CLEAN || op == HV_DIRTY_PEEK;
	size_t len = 0;
	int rc;

	if ((window && (!bits || nr % 64 || nr > HV_MAX_DIRTY_BITS)) ||
	    (!window && nr != 0))
		return -EINVAL;
	rc = op_alloc(conn, HV_OP_DIRTY_LOG, &req, sizeof(req),
	    sizeof(*rep) + (size_t)nr / 8, (void **)&rep, &len);
	if (rc < 0)
		return rc;
	if (rep->nr != (window ? nr : 0) || len != sizeof(*rep) + rep->nr / 8)
		rc = -EPROTO;
	if (rc == 0 && window)
		memcpy(bits, rep + 1, (size_t)nr / 8);
	if (rc == 0 && ret_dirty)
		*ret_dirty = rep->dirty;
	if (rc == 0 && ret_end)
		*ret_end = rep->end_gfn;
	free(rep);
	return rc;
}

#define SCRUB_CAP	(sizeof(struct hv_scrub_reply) + \
	HV_MAX_NODES * sizeof(struct hv_scrub_node))

static int
scrub_check(const struct hv_scrub_reply *rep, size_t len)
{
	if (rep->version != HV_ABI_VERSION || rep->nr_nodes > HV_MAX_NODES ||
	    len != sizeof(*rep) + rep->nr_nodes * sizeof(struct hv_scrub_node))
		return -EPROTO;
	return 0;
}

int
hvc_scrub_progress(struct hvc *conn, struct hv_scrub_reply **ret_reply)
{
	struct hv_scrub_reply *rep = NULL;
	size_t len = 0;
	int rc;

	rc = op_alloc(conn, HV_OP_SCRUB_PROGRESS, NULL, 0, SCRUB_CAP,
	    (void **)&rep, &len);
	if (rc < 0)
		return rc;
	rc = scrub_check(rep, len);
	if (rc < 0) {
		free(rep);
		return rc;
	}
	*ret_reply = rep;
	return 0;
}

struct hv_scrub_node *
hvc_scrub_nodes(struct hv_scrub_reply *reply)
{
	return (struct hv_scrub_node *)(reply + 1);
}

int
hvc_host_state(struct hvc *conn, struct hv_host_info **ret_info,
    struct hv_domain_info **ret_doms, uint32_t *ret_nr,
    struct hv_scrub_reply **ret_scrub, int *ret_scrub_rc)
{
	struct hv_domain_list lreq = { .first_domid = 0, .max = HV_MAX_LIST };
	struct hv_host_info *info = malloc(HOST_INFO_CAP);
	struct hv_domain_list_reply *lrep = malloc(LIST_CAP);
	struct hv_scrub_reply *scrub = malloc(SCRUB_CAP);
	struct hvc_req v[3] = {
		{ .op = HV_OP_HOST_INFO, .rep = info, .rep_cap = HOST_INFO_CAP },
		{ .op = HV_OP_DOMAIN_LIST, .req = &lreq,
		    .req_len = sizeof(lreq), .rep = lrep, .rep_cap = LIST_CAP },
		{ .op = HV_OP_SCRUB_PROGRESS, .rep = scrub,
		    .rep_cap = SCRUB_CAP },
	};
	struct hv_domain_info *all = NULL;
	uint32_t nr = 0;
	bool more = false;
	int rc;

	rc = !info || !lrep || !scrub ? -ENOMEM : hvc_calls(conn, v, 3);
	if (rc == 0)
		rc = v[0].rc ? v[0].rc : host_info_check(info, v[0].rep_len);
	if (rc == 0)
		rc = v[1].rc;
	if (rc == 0)
		rc = list_append(lrep, v[1].rep_len, &lreq, &all, &nr, &more);
	if (rc == 0 && more)
		rc = list_more(conn, &lreq, lrep, &all, &nr);
	if (rc < 0)
		goto fail;
	*ret_scrub_rc = v[2].rc ? v[2].rc : scrub_check(scrub, v[2].rep_len);
	if (*ret_scrub_rc < 0) {
		free(scrub);
		scrub = NULL;
	}
	free(lrep);
	*ret_info = info;
	*ret_doms = all;
	*ret_nr = nr;
	*ret_scrub = scrub;
	return 0;

fail:
	free(info);
	free(lrep);
	free(scrub);
	free(all);
	return rc;
}

int
hvc_counters(struct hvc *conn, struct hv_counters *ret_counters)
{
	struct hv_counters c;
	int rc;

	rc = hvc_op(conn, HV_OP_COUNTERS, NULL, 0, &c, sizeof(c), NULL);
	if (rc == 0 && c.version != HV_ABI_VERSION)
		rc = -EPROTO;
	if (rc == 0)
		*ret_counters = c;
	return rc;
}

int
hvc_shadow_workload(struct hvc *conn, const struct hv_shadow_workload *req,
    struct hv_shadow_workload_reply *ret_reply)
{
	struct hv_shadow_workload_reply rep;
	int rc;

	rc = hvc_op(conn, HV_OP_SHADOW_WORKLOAD, req, sizeof(*req), &rep,
	    sizeof(rep), NULL);
	if (rc == 0)
		*ret_reply = rep;
	return rc;
}

int
hvc_domain_shutdown(struct hvc *conn, hv_domid_t domid, uint32_t reason)
{
	struct hv_domain_shutdown req = { .domid = domid, .reason = reason };

	return hvc_op(conn, HV_OP_DOMAIN_SHUTDOWN, &req, sizeof(req), NULL, 0,
	    NULL);
}

int
hvc_domain_control(struct hvc *conn, hv_domid_t domid, uint32_t op,
    uint32_t value, struct hv_domain_control_reply *ret_reply)
{
	struct hv_domain_control req = { .domid = domid, .op = op,
	    .value = value };
	struct hv_domain_control_reply rep;
	int rc;

	rc = hvc_op(conn, HV_OP_DOMAIN_CONTROL, &req, sizeof(req), &rep,
	    sizeof(rep), NULL);
	if (rc == 0 && ret_reply)
		*ret_reply = rep;
	return rc;
}

int
hvc_domain_watch(struct hvc *conn, uint64_t since, uint32_t timeout_ms,
    uint64_t *ret_generation)
{
	struct hv_domain_watch req = { .since = since,
	    .timeout_ms = timeout_ms };
	struct hv_domain_watch_reply rep;
	int rc;

	rc = hvc_op(conn, HV_OP_DOMAIN_WATCH, &req, sizeof(req), &rep,
	    sizeof(rep), NULL);
	if (rc == 0)
		*ret_generation = rep.generation;
	return rc;
}
