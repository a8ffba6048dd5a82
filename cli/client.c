/*
 * client.c - vmctl's connection to vmbuildd: connect, line-based JSON-RPC.
 *
 * One request is outstanding at a time.  Notifications (events) that
 * arrive while a reply is awaited are queued, so a command that follows
 * a task can mix calls and events on one connection.  Every wait is
 * bounded by the timeout given at connect time: vmctl never hangs for
 * ever on a daemon that stopped answering (only vmc_next_event may wait
 * without limit, when its caller asks, as `vmctl events` does).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

/* A reply larger than this is refused rather than buffered for ever. */
#define VMC_MAX_LINE	(64u * 1024 * 1024)
#define VMC_MAX_QUEUED	4096
#define VMC_MAX_FDS	2		/* the daemon's RPC_MAX_FDS */

struct vmc_event {
	yajl_val msg;
	struct vmc_event *next;
};

struct vmc_client {
	int	fd;
	int	timeout_ms;
	long long next_id;
	char	*buf;		/* bytes read, not yet parsed */
	size_t	len, cap;
	yajl_gen req;		/* the request being built */
	struct vmc_event *head, *tail;
	size_t	nr_queued;
	int	fd_in;		/* the last descriptor the daemon sent, or -1 */
};

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd until `deadline` (ms, <0: none).  0 or -errno. */
static int
wait_fd(int fd, short events, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int r, left;

	for (;;) {
		left = -1;
		if (deadline >= 0) {
			long long d = deadline - now_ms();
			left = d < 0 ? 0 : (int)(d > 1000000 ? 1000000 : d);
		}
		r = poll(&pfd, 1, left);
		if (r > 0)
			return 0;
		if (r == 0) {
			if (deadline >= 0 && now_ms() >= deadline)
				return -ETIMEDOUT;
			continue;
		}
		if (errno == EINTR && vmctl_interrupted)
			return -EINTR;
		if (errno != EINTR)
			return -errno;
	}
}

int
vmc_connect(const char *path, int timeout_ms, struct vmc_client **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct vmc_client *c = NULL;
	socklen_t sl = sizeof(int);
	int fd = -1, rc, soerr = 0;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	/* Non-blocking, so that a full listen backlog cannot stall us. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN) {
			rc = -errno;
			goto out;
		}
		rc = wait_fd(fd, POLLOUT, now_ms() + timeout_ms);
		if (rc < 0)
			goto out;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
			rc = -errno;
			goto out;
		}
		if (soerr) {
			rc = -soerr;
			goto out;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		rc = -ENOMEM;
		goto out;
	}
	c->fd = fd;
	fd = -1;
	c->fd_in = -1;
	c->timeout_ms = timeout_ms;
	c->next_id = 1;
	*ret = c;
	c = NULL;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(c);
	return rc;
}

void
vmc_close(struct vmc_client *c)
{
	struct vmc_event *e;

	if (!c)
		return;
	while ((e = c->head)) {
		c->head = e->next;
		yajl_tree_free(e->msg);
		free(e);
	}
	if (c->req)
		yajl_gen_free(c->req);
	if (c->fd >= 0)
		close(c->fd);
	if (c->fd_in >= 0)
		close(c->fd_in);
	free(c->buf);
	free(c);
}

/*
 * recv() that keeps a descriptor the daemon passes with a reply
 * (SCM_RIGHTS, vm.console): the last one wins, others are closed.
 */
static ssize_t
recv_fds(struct vmc_client *c, char *buf, size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} cbuf;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm;
	ssize_t r;

	r = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	if (r < 0)
		return r;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			if (c->fd_in >= 0)
				close(c->fd_in);
			memcpy(&c->fd_in, CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(int));
		}
	}
	return r;
}

int
vmc_take_fd(struct vmc_client *c)
{
	int fd = c->fd_in;

	c->fd_in = -1;
	return fd;
}

yajl_gen
vmc_request(struct vmc_client *c, const char *method)
{
	yajl_gen g;

	if (c->req)
		yajl_gen_free(c->req);
	g = c->req = yajl_gen_alloc(NULL);
	if (!g)
		return NULL;
	yajl_gen_map_open(g);
	jg_kv_str(g, "jsonrpc", "2.0");
	jg_kv_i64(g, "id", c->next_id);
	jg_kv_str(g, "method", method);
	jg_str(g, "params");
	yajl_gen_map_open(g);
	return g;
}

/*
 * Send n bytes; descriptors (nfds of them) go with the first byte
 * (SCM_RIGHTS), which is how the daemon knows which request they are
 * for.
 */
static int
send_all(struct vmc_client *c, const unsigned char *p, size_t n,
    const int *fds, size_t nfds)
{
	long long deadline = now_ms() + c->timeout_ms;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * VMC_MAX_FDS)];
	} cbuf;
	ssize_t w;
	int rc;

	if (nfds > VMC_MAX_FDS)
		return -E2BIG;
	while (n > 0) {
		struct iovec iov = { .iov_base = (void *)p, .iov_len = n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

		if (nfds > 0) {
			struct cmsghdr *cm;

			memset(&cbuf, 0, sizeof(cbuf));
			mh.msg_control = cbuf.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w > 0)
			nfds = 0;	/* they went with the first byte */
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_fd(c->fd, POLLOUT, deadline);
			if (rc < 0)
				return rc;
			continue;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Say why a message from the daemon is no JSON object, and its start. */
static void
bad_msg(const char *line, size_t len, const char *why)
{
	char start[161];
	size_t i, n = len < sizeof(start) - 1 ? len : sizeof(start) - 1;
	const char *nl;

	for (i = 0; i < n; i++)
		start[i] = line[i] >= 0x20 && line[i] < 0x7f ? line[i] : '?';
	start[n] = '\0';
	/* yajl's error text runs over lines: its first is enough. */
	nl = strchr(why, '\n');
	vmctl_warnx("a message of %zu bytes from the daemon is not JSON "
	    "(%.*s); it began: %s", len, nl ? (int)(nl - why) : (int)strlen(why),
	    why, start);
}

/*
 * Read one line (one JSON message) and parse it.  `deadline` in ms of
 * the monotonic clock, or <0 for none.
 */
static int
read_msg(struct vmc_client *c, long long deadline, yajl_val *ret)
{
	char errbuf[256];
	char *nl;
	ssize_t r;
	size_t n;
	yajl_val v;
	int rc;

	for (;;) {
		nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl) {
			n = (size_t)(nl - c->buf) + 1;
			v = jv_parse(c->buf, n - 1, JSON_MAX_DEPTH, errbuf,
			    sizeof(errbuf));
			if (!v || !YAJL_IS_OBJECT(v)) {
				/* What it was, for the report that follows. */
				bad_msg(c->buf, n - 1, v ? "not an object" :
				    errbuf);
				memmove(c->buf, c->buf + n, c->len - n);
				c->len -= n;
				yajl_tree_free(v);
				return -EPROTO;
			}
			memmove(c->buf, c->buf + n, c->len - n);
			c->len -= n;
			*ret = v;
			return 0;
		}
		if (c->len >= VMC_MAX_LINE)
			return -EMSGSIZE;
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 131072;
			char *b = realloc(c->buf, cap);

			if (!b)
				return -ENOMEM;
			c->buf = b;
			c->cap = cap;
		}
		r = recv_fds(c, c->buf + c->len, c->cap - c->len - 1);
		if (r > 0) {
			c->len += (size_t)r;
			continue;
		}
		if (r == 0)
			return -ECONNRESET;	/* the daemon went away */
		if (errno == EINTR) {
			if (vmctl_interrupted)
				return -EINTR;
			continue;
		}
		if (errno != EAGAIN)
			return -errno;
		rc = wait_fd(c->fd, POLLIN, deadline);
		if (rc < 0)
			return rc;
	}
}

static int
queue_event(struct vmc_client *c, yajl_val msg)
{
	struct vmc_event *e;

	/* A client that never reads its events must not grow without end. */
	if (c->nr_queued >= VMC_MAX_QUEUED) {
		e = c->head;
		c->head = e->next;
		if (!c->head)
			c->tail = NULL;
		yajl_tree_free(e->msg);
		free(e);
		c->nr_queued--;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->msg = msg;
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	c->nr_queued++;
	return 0;
}

static void
fill_error(yajl_val e, struct vmc_error *err)
{
	const char *msg = jstr(e, "message");
	double code = 0;

	err->code = jnum(e, "code", &code) ? (long long)code : 0;
	snprintf(err->message, sizeof(err->message), "%s",
	    msg ? msg : "(no message)");
	err->data = jget(e, "data");
}

int
vmc_call(struct vmc_client *c, yajl_gen params, yajl_val *ret_result,
    struct vmc_error *err)
{
	return vmc_call_fds(c, params, NULL, 0, ret_result, err);
}

void
vmc_gen_fds(yajl_gen params, const char *const *keys, size_t nfds)
{
	if (nfds == 0)
		return;
	jg_key(params, P_FDS);
	yajl_gen_map_open(params);
	for (size_t i = 0; i < nfds; i++)
		jg_kv_i64(params, keys[i], (int64_t)i);
	yajl_gen_map_close(params);
}

int
vmc_call_fds(struct vmc_client *c, yajl_gen params, const int *fds,
    size_t nfds, yajl_val *ret_result, struct vmc_error *err)
{
	const unsigned char *out;
	long long deadline, id;
	yajl_val msg = NULL, idv, e;
	size_t outlen;
	double num;
	int rc;

	memset(err, 0, sizeof(*err));
	if (!params || params != c->req) {
		rc = -EINVAL;
		goto out;
	}
	yajl_gen_map_close(params);	/* params */
	yajl_gen_map_close(params);	/* request */
	if (yajl_gen_get_buf(params, &out, &outlen) != yajl_gen_status_ok) {
		rc = -EINVAL;
		goto out;
	}
	id = c->next_id++;
	rc = send_all(c, out, outlen, fds, nfds);
	if (rc == 0)
		rc = send_all(c, (const unsigned char *)"\n", 1, NULL, 0);
	if (rc < 0)
		goto out;
	deadline = now_ms() + c->timeout_ms;
	for (;;) {
		rc = read_msg(c, deadline, &msg);
		if (rc < 0)
			goto out;
		idv = jget(msg, "id");
		if (!idv || YAJL_IS_NULL(idv)) {
			if (jget(msg, "method")) {
				rc = queue_event(c, msg);
				msg = NULL;
				if (rc < 0)
					goto out;
				continue;
			}
			/* An error without id: the daemon could not parse us. */
			if (!(e = jget(msg, "error"))) {
				rc = -EPROTO;
				goto out;
			}
		} else if (!jnum(msg, "id", &num) || (long long)num != id) {
			/* A reply to an earlier request we gave up on. */
			yajl_tree_free(msg);
			msg = NULL;
			continue;
		}
		break;
	}
	if ((e = jget(msg, "error"))) {
		fill_error(e, err);
		/* Detach data from the message so the caller may keep it. */
		if (err->data) {
			yajl_val obj = jget(msg, "error");
			size_t i;

			for (i = 0; i < obj->u.object.len; i++)
				if (obj->u.object.values[i] == err->data)
					obj->u.object.values[i] = NULL;
		}
		rc = VMC_RPC_ERROR;
		goto out;
	}
	if (!jget(msg, "result")) {
		rc = -EPROTO;
		goto out;
	}
	{
		/* Hand the result over without copying it. */
		size_t i;

		for (i = 0; i < msg->u.object.len; i++)
			if (!strcmp(msg->u.object.keys[i], "result")) {
				*ret_result = msg->u.object.values[i];
				msg->u.object.values[i] = NULL;
			}
	}
	rc = 0;
out:
	yajl_tree_free(msg);
	if (c->req) {
		yajl_gen_free(c->req);
		c->req = NULL;
	}
	return rc;
}

int
vmc_call0(struct vmc_client *c, const char *method, yajl_val *ret_result,
    struct vmc_error *err)
{
	yajl_gen g = vmc_request(c, method);

	if (!g) {
		memset(err, 0, sizeof(*err));
		return -ENOMEM;
	}
	return vmc_call(c, g, ret_result, err);
}

int
vmc_next_event(struct vmc_client *c, int timeout_ms, yajl_val *ret_msg)
{
	struct vmc_event *e;
	yajl_val msg = NULL;
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	int rc;

	for (;;) {
		if ((e = c->head)) {
			c->head = e->next;
			if (!c->head)
				c->tail = NULL;
			c->nr_queued--;
			*ret_msg = e->msg;
			free(e);
			return 0;
		}
		rc = read_msg(c, deadline, &msg);
		if (rc < 0)
			return rc;
		if (jget(msg, "method") && !jget(msg, "id")) {
			*ret_msg = msg;
			return 0;
		}
		/* A late reply to a request we gave up on. */
		yajl_tree_free(msg);
		msg = NULL;
	}
}

void
vmc_error_done(struct vmc_error *err)
{
	yajl_tree_free(err->data);
	err->data = NULL;
}

int
vmc_report(struct vmctl *ctl, const char *what, int rc,
    const struct vmc_error *err)
{
	yajl_val list;
	const char *first;
	size_t i, n, ml, fl;
	int keep;

	if (rc == VMC_RPC_ERROR) {
		/*
		 * Config errors carry one "file:line: key: msg" each in
		 * data.errors, and the message quotes the first: say each
		 * once, the message without the one the list says, then the
		 * list, one per line.
		 */
		list = jget(err->data, "errors");
		n = YAJL_IS_ARRAY(list) ? list->u.array.len : 0;
		first = n ? jstr(list->u.array.values[0], NULL) : NULL;
		ml = strlen(err->message);
		fl = first ? strlen(first) : 0;
		keep = (int)ml;
		if (n > 1 && fl > 0 && ml > fl + 2 &&
		    !strcmp(err->message + ml - fl, first) &&
		    !strncmp(err->message + ml - fl - 2, ": ", 2))
			keep = (int)(ml - fl - 2);
		vmctl_warnx("%s: %.*s (code %lld)", what, keep, err->message,
		    err->code);
		for (i = 0; i < n; i++) {
			const char *s = jstr(list->u.array.values[i], NULL);

			/* A message may already quote the only error. */
			if (s && !(n == 1 && strstr(err->message, s)))
				fprintf(stderr, "%s\n", s);
		}
		return VMCTL_EXIT_ERROR;
	}
	if (rc == -ETIMEDOUT)
		vmctl_warnx("%s: no answer from the daemon at %s within %d s",
		    what, ctl->socket, ctl->timeout_ms / 1000);
	else if (rc == -ECONNRESET)
		vmctl_warnx("%s: the daemon at %s closed the connection",
		    what, ctl->socket);
	else if (rc == -EPROTO)
		vmctl_warnx("%s: malformed reply from the daemon at %s",
		    what, ctl->socket);
	else if (rc == -EINTR)
		vmctl_warnx("%s: interrupted", what);
	else
		vmctl_warnx("%s: %s: %s", what, ctl->socket, strerror(-rc));
	return VMCTL_EXIT_UNREACHABLE;
}

/* The daemon's read-only socket beside `path`: NAME-ro.sock. */
static void
ro_socket(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n > 5 && !strcmp(path + n - 5, ".sock"))
		snprintf(buf, len, "%.*s-ro.sock", (int)(n - 5), path);
	else
		snprintf(buf, len, "%s-ro", path);
}

int
vmc_open(struct vmctl *ctl, struct vmc_client **ret)
{
	int rc = vmc_connect(ctl->socket, ctl->timeout_ms, ret);

	/*
	 * Not in the group that may use the control socket: the read-only
	 * socket serves everyone (a change is then refused, with a reason).
	 */
	if (rc == -EACCES) {
		char ro[4200];

		ro_socket(ctl->socket, ro, sizeof(ro));
		if (vmc_connect(ro, ctl->timeout_ms, ret) == 0)
			return VMCTL_EXIT_OK;
	}
	if (rc < 0) {
		vmctl_warnx("cannot reach vmbuildd at %s: %s%s", ctl->socket,
		    strerror(-rc), rc == -ENOENT || rc == -ECONNREFUSED ?
		    " (is vmbuildd running? see --socket)" : "");
		return VMCTL_EXIT_UNREACHABLE;
	}
	return VMCTL_EXIT_OK;
}
