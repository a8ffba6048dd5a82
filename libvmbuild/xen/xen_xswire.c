/*
 * xen_xswire.c - xenstore requests pipelined on a connection of our own
 * to xenstored's socket (docs/misc/xenstore.txt, io/xs_wire.h).
 *
 * libxenstore sends a request and waits for its reply before the next
 * one: a domain's skeleton of some 40 writes is 40 round trips, each
 * waking xenstored and then the caller.  On a host whose dom0 vCPUs
 * wait for a pCPU (a busy host, the one big builds meet) each wake
 * costs tens of milliseconds: the lab measured the create and boot
 * phases, which are mostly such writes, at 4.6 and 4.2 s of a dirty
 * create whose populate took 1.9 s.  The protocol lets a client send
 * several requests and match the replies by req_id; here the requests
 * a transaction does not need answers to are kept in a buffer and sent
 * in one write, their replies read together (a flush): a transaction
 * is a start, one flush per read whose value it needs, and an end.
 *
 * Requests queue with flags saying which errors do not count (an rm of
 * what may not be there); a flush returns the first error that does,
 * as -errno, after reading every reply so the connection stays in step.
 * A transport failure (EOF, a reply that does not parse) returns
 * -EPIPE or -EPROTO: the connection is then useless and the caller
 * drops it (xen_xs.c falls back to libxenstore).
 *
 * Not thread-safe: the caller holds be->xs_lock.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "xen_priv.h"

#include <xen/io/xs_wire.h>	/* after xen_priv.h: it needs stdint.h */

#define XSW_MAX_QUEUED	128	/* requests in one flush */
#define XSW_OUT_MAX	(64 * 1024)	/* bytes in one flush */

struct xen_xsw {
	int	fd;
	uint32_t next_req;
	char	*out;
	size_t	out_len, out_cap;
	unsigned nq;			/* requests in out */
	uint32_t q_req[XSW_MAX_QUEUED];	/* their req_ids */
	unsigned q_flags[XSW_MAX_QUEUED];
	int	q_err;			/* a request that could not queue */
	uint64_t round_trips;
};

int
xen_xsw_adopt(int fd, struct xen_xsw **ret)
{
	struct xen_xsw *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -ENOMEM;
	w->fd = fd;
	w->next_req = 1;
	*ret = w;
	return 0;
}

int
xen_xsw_connect(const char *path, struct xen_xsw **ret)
{
	struct sockaddr_un sa;
	int fd, rc;

	if (path == NULL || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = xen_xsw_adopt(fd, ret);
	if (rc)
		close(fd);
	return rc;
}

void
xen_xsw_free(struct xen_xsw *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w->out);
	free(w);
}

uint64_t
xen_xsw_round_trips(const struct xen_xsw *w)
{
	return w ? w->round_trips : 0;
}

static int
out_put(struct xen_xsw *w, const void *p, size_t n)
{
	if (w->out_len + n > w->out_cap) {
		size_t cap = w->out_cap ? w->out_cap : 4096;
		char *o;

		while (cap < w->out_len + n)
			cap *= 2;
		if (cap > XSW_OUT_MAX)
			return -E2BIG;
		o = realloc(w->out, cap);
		if (o == NULL)
			return -ENOMEM;
		w->out = o;
		w->out_cap = cap;
	}
	memcpy(w->out + w->out_len, p, n);
	w->out_len += n;
	return 0;
}

/*
 * Queue a request of `type` in transaction `tx` whose payload is the
 * `n` parts given (each `len` bytes, or its string and nul when len is
 * (size_t)-1).  A request that cannot queue (too long, too many) fails
 * the next flush.
 */
struct xsw_part {
	const void *p;
	size_t	len;
};

static void
queue(struct xen_xsw *w, uint32_t tx, uint32_t type, unsigned flags,
    const struct xsw_part *part, unsigned n)
{
	struct xsd_sockmsg m;
	size_t len = 0, mark = w->out_len;
	int rc = 0;

	if (w->q_err)
		return;
	for (unsigned i = 0; i < n; i++)
		len += part[i].len == (size_t)-1 ? strlen(part[i].p) + 1 :
		    part[i].len;
	if (w->nq >= XSW_MAX_QUEUED) {
		w->q_err = -ENOBUFS;
		return;
	}
	if (len > XENSTORE_PAYLOAD_MAX) {
		w->q_err = -E2BIG;
		return;
	}
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.req_id = w->next_req++;
	m.tx_id = tx;
	m.len = (uint32_t)len;
	rc = out_put(w, &m, sizeof(m));
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = out_put(w, part[i].p, part[i].len == (size_t)-1 ?
		    strlen(part[i].p) + 1 : part[i].len);
	if (rc) {
		w->out_len = mark;
		w->q_err = rc;
		return;
	}
	w->q_req[w->nq] = m.req_id;
	w->q_flags[w->nq] = flags;
	w->nq++;
}

void
xen_xsw_write(struct xen_xsw *w, uint32_t tx, const char *path,
    const void *value, size_t len)
{
	struct xsw_part p[] = { { path, (size_t)-1 }, { value, len } };

	queue(w, tx, XS_WRITE, 0, p, 2);
}

void
xen_xsw_mkdir(struct xen_xsw *w, uint32_t tx, const char *path)
{
	struct xsw_part p[] = { { path, (size_t)-1 } };

	queue(w, tx, XS_MKDIR, 0, p, 1);
}

void
xen_xsw_rm(struct xen_xsw *w, uint32_t tx, const char *path, unsigned flags)
{
	struct xsw_part p[] = { { path, (size_t)-1 } };

	queue(w, tx, XS_RM, flags, p, 1);
}

/* As libxenstore's xs_perm_to_string: n, r, w or b, then the domid. */
void
xen_xsw_set_perms(struct xen_xsw *w, uint32_t tx, const char *path,
    const struct xs_permissions *perms, unsigned nperms)
{
	char buf[XSW_PERMS_MAX][16];
	struct xsw_part p[1 + XSW_PERMS_MAX];

	if (nperms == 0 || nperms > XSW_PERMS_MAX) {
		if (w->q_err == 0)
			w->q_err = -EINVAL;
		return;
	}
	p[0].p = path;
	p[0].len = (size_t)-1;
	for (unsigned i = 0; i < nperms; i++) {
		unsigned rw = perms[i].perms & (XS_PERM_READ | XS_PERM_WRITE);

		snprintf(buf[i], sizeof(buf[i]), "%c%u",
		    rw == (XS_PERM_READ | XS_PERM_WRITE) ? 'b' :
		    rw == XS_PERM_READ ? 'r' : rw == XS_PERM_WRITE ? 'w' : 'n',
		    perms[i].id);
		p[1 + i].p = buf[i];
		p[1 + i].len = (size_t)-1;
	}
	queue(w, tx, XS_SET_PERMS, 0, p, 1 + nperms);
}

void
xen_xsw_read(struct xen_xsw *w, uint32_t tx, const char *path)
{
	struct xsw_part p[] = { { path, (size_t)-1 } };

	queue(w, tx, XS_READ, XSW_IGNORE_ERR, p, 1);
}

/* An ERROR reply's name ("ENOENT") as an errno, as libxenstore maps it. */
static int
error_errno(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(xsd_errors) / sizeof(xsd_errors[0]);
	    i++)
		if (strlen(xsd_errors[i].errstring) == len &&
		    memcmp(xsd_errors[i].errstring, name, len) == 0)
			return xsd_errors[i].errnum;
	return EINVAL;
}

/* All n bytes sent (out) or read; -EPIPE when the connection ends. */
static int
move_all(int fd, void *buf, size_t n, bool out)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = out ? send(fd, p, n, MSG_NOSIGNAL) :
		    read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Send what is queued and read every reply.  Returns the first error
 * of a request whose flags do not excuse it (-errno), or a transport
 * error; the last request's own outcome in *ret_last_err (0 or -errno)
 * and its reply payload, nul-terminated, in *ret_last (the caller
 * frees it) when asked for.
 */
int
xen_xsw_flush(struct xen_xsw *w, char **ret_last, unsigned *ret_len,
    int *ret_last_err)
{
	struct xsd_sockmsg m;
	bool answered[XSW_MAX_QUEUED] = { false };
	char *body = NULL;
	int rc = 0, err, last_err = 0;
	unsigned got = 0;

	if (ret_last)
		*ret_last = NULL;
	if (w->q_err) {
		rc = w->q_err;
		w->q_err = 0;
		w->out_len = 0;
		w->nq = 0;
		return rc;
	}
	if (w->nq == 0)
		return 0;
	w->round_trips++;
	if (move_all(w->fd, w->out, w->out_len, true) < 0) {
		rc = -EPIPE;
		goto out;
	}
	while (got < w->nq) {
		unsigned i;

		if (move_all(w->fd, &m, sizeof(m), false) < 0) {
			rc = -EPIPE;
			goto out;
		}
		if (m.len > XENSTORE_PAYLOAD_MAX) {
			rc = -EPROTO;
			goto out;
		}
		body = malloc(m.len + 1);
		if (body == NULL) {
			rc = -ENOMEM;	/* the stream is lost with it */
			goto out;
		}
		if (move_all(w->fd, body, m.len, false) < 0) {
			rc = -EPIPE;
			goto out;
		}
		body[m.len] = '\0';
		/*
		 * No watches on this connection, and one reply per request:
		 * anything else (a second reply to one, which fuzz_xswire
		 * found) is a fault.
		 */
		for (i = 0; i < w->nq && w->q_req[i] != m.req_id; i++)
			;
		if (m.type == XS_WATCH_EVENT || i == w->nq || answered[i]) {
			rc = -EPROTO;
			goto out;
		}
		answered[i] = true;
		err = m.type == XS_ERROR ? -error_errno(body,
		    strnlen(body, m.len)) : 0;
		if (i == w->nq - 1) {
			last_err = err;
			if (ret_last && err == 0) {
				*ret_last = body;
				if (ret_len)
					*ret_len = m.len;
				body = NULL;
			}
		}
		if (err && rc == 0 && !(w->q_flags[i] & XSW_IGNORE_ERR) &&
		    !(err == -ENOENT && (w->q_flags[i] & XSW_IGNORE_ENOENT)))
			rc = err;
		free(body);
		body = NULL;
		got++;
	}
out:
	free(body);
	if (ret_last_err)
		*ret_last_err = last_err;
	if ((rc == -EPIPE || rc == -EPROTO || rc == -ENOMEM) && ret_last &&
	    *ret_last) {
		free(*ret_last);
		*ret_last = NULL;
	}
	w->out_len = 0;
	w->nq = 0;
	return rc;
}

/* Forget what is queued (it belongs to a transaction being aborted). */
static void
discard(struct xen_xsw *w)
{
	w->out_len = 0;
	w->nq = 0;
	w->q_err = 0;
}

/* One request alone, its reply's payload in *ret (nul-terminated). */
static int
call(struct xen_xsw *w, uint32_t tx, uint32_t type, const char *arg,
    char **ret)
{
	struct xsw_part p[] = { { arg, (size_t)-1 } };
	int rc, last;

	queue(w, tx, type, XSW_IGNORE_ERR, p, 1);
	rc = xen_xsw_flush(w, ret, NULL, &last);
	return rc ? rc : last;
}

int
xen_xsw_start(struct xen_xsw *w, uint32_t *ret_tx)
{
	char *id = NULL, *end;
	unsigned long v;
	int rc;

	/* A flush left over from a failed transaction goes unsent. */
	discard(w);
	rc = call(w, 0, XS_TRANSACTION_START, "", &id);
	if (rc)
		return rc;
	errno = 0;
	v = strtoul(id, &end, 10);
	rc = (errno || end == id || *end != '\0' || v == 0 || v > UINT32_MAX) ?
	    -EPROTO : 0;
	if (rc == 0)
		*ret_tx = (uint32_t)v;
	free(id);
	return rc;
}

/*
 * Commit (or abort): -EAGAIN when another writer won.  What is still
 * queued goes first, on its own: a commit sent behind a request that
 * fails would commit without it, so a failure there aborts.  An abort
 * sends nothing of it (and nothing left unsent keeps the END from
 * going, which would leave the transaction open on the connection).
 */
int
xen_xsw_end(struct xen_xsw *w, uint32_t tx, bool abort)
{
	char *r = NULL;
	int rc = 0;

	if (abort)
		discard(w);
	else if (w->nq > 0 || w->q_err)
		rc = xen_xsw_flush(w, NULL, NULL, NULL);
	if (rc == -EPIPE || rc == -EPROTO || rc == -ENOMEM)
		return rc;
	if (rc) {
		(void)call(w, tx, XS_TRANSACTION_END, "F", &r);
		free(r);
		return rc;
	}
	rc = call(w, tx, XS_TRANSACTION_END, abort ? "F" : "T", &r);
	free(r);
	return rc;
}
