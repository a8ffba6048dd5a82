/*
 * control.c - the control socket (see control.h).
 *
 * Who may change things is decided here, once per connection, from
 * SO_PEERCRED: root, and members of group "vmbuild" (primary group or
 * listed in /etc/group, read at start and on SIGHUP, so that no NSS
 * lookup ever runs on the loop per request).  Everyone who can connect
 * may read; the socket's mode (0660, group vmbuild) decides who can
 * connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "control.h"
#include "log.h"
#include "proto.h"
#include "rpc.h"

#define CONTROL_GROUP		"vmbuild"
/*
 * A client that does not read its replies (or its events) is dropped
 * once this much output is queued for it, instead of growing without
 * bound.
 */
#define CONTROL_OUTPUT_MAX	(64u << 20)

TAILQ_HEAD(connq, conn);

static struct {
	struct control_opts opts;
	int		fd;
	bool		activated;	/* fd came from systemd */
	bool		made_socket;	/* we bound opts.path: unlink it */
	struct event_base *base;
	struct event	*ev_accept;
	struct event	*ev_resume;	/* accept again after EMFILE */
	struct connq	conns;
	unsigned	nconns;
	unsigned	serial;
	bool		have_group;
	gid_t		group_gid;
	uid_t		*group_uids;
	size_t		group_nuids;
	conn_closed_fn	*on_close;
} C = { .fd = -1 };

static void conn_close(struct conn *c);

void
control_reload_group(void)
{
	struct group *gr;
	uid_t *uids = NULL;
	size_t n = 0;

	free(C.group_uids);
	C.group_uids = NULL;
	C.group_nuids = 0;
	C.have_group = false;
	gr = getgrnam(CONTROL_GROUP);
	if (gr == NULL)
		return;
	C.have_group = true;
	C.group_gid = gr->gr_gid;
	for (char **m = gr->gr_mem; *m != NULL; m++)
		n++;
	if (n > 0)
		uids = calloc(n, sizeof(*uids));
	n = 0;
	for (char **m = gr->gr_mem; uids != NULL && *m != NULL; m++) {
		struct passwd *pw = getpwnam(*m);

		if (pw != NULL)
			uids[n++] = pw->pw_uid;
	}
	C.group_uids = uids;
	C.group_nuids = n;
}

static bool
control_may_write(uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (!C.have_group)
		return false;
	if (gid == C.group_gid)
		return true;
	for (size_t i = 0; i < C.group_nuids; i++)
		if (C.group_uids[i] == uid)
			return true;
	return false;
}

bool
control_socket_activated(void)
{
	return C.activated;
}

unsigned
control_connections(void)
{
	return C.nconns;
}

/* Bind opts->path, replacing a stale socket but never a live one. */
static int
control_bind(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, rc;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_errx("socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (lstat(path, &st) == 0) {
		int probe;

		if (!S_ISSOCK(st.st_mode)) {
			log_errx("%s exists and is not a socket", path);
			rc = -EEXIST;
			goto fail;
		}
		probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe >= 0 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			log_errx("%s: another daemon is listening", path);
			rc = -EADDRINUSE;
			goto fail;
		}
		if (probe >= 0)
			close(probe);
		(void)unlink(path);
	}
	/* 0660 from the start: no window in which others could connect. */
	old = umask(0117);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0) {
		rc = -errno;
		log_warn("bind %s", path);
		goto fail;
	}
	if (C.have_group && chown(path, (uid_t)-1, C.group_gid) < 0)
		log_warn("chown %s to group %s, ignoring", path, CONTROL_GROUP);
	if (chmod(path, 0660) < 0)
		log_warn("chmod %s, ignoring", path);
	if (listen(fd, 128) < 0) {
		rc = -errno;
		(void)unlink(path);
		goto fail;
	}
	C.made_socket = true;
	return fd;
fail:
	close(fd);
	return rc;
}

int
control_listen(const struct control_opts *opts)
{
	int n;

	C.opts = *opts;
	TAILQ_INIT(&C.conns);
	control_reload_group();
	n = sd_listen_fds(1);
	if (n < 0)
		log_warnx("sd_listen_fds: %s, ignoring", strerror(-n));
	if (n > 0) {
		int fd = SD_LISTEN_FDS_START;

		if (n > 1)
			log_warnx("systemd passed %d sockets, using the first", n);
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_errx("the socket systemd passed is not a listening "
			    "Unix stream socket");
			return -EINVAL;
		}
		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
			return -errno;
		C.fd = fd;
		C.activated = true;
		log_info("listening on the socket passed by systemd");
		return 0;
	}
	C.fd = control_bind(opts->path);
	if (C.fd < 0)
		return C.fd;
	log_info("listening on %s", opts->path);
	return 0;
}

/* Refuse a connection over the limit with one error line. */
static void
control_refuse(int fd)
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":null,"
	    "\"error\":{\"code\":%d,\"message\":\"too many connections "
	    "(limit %u)\"}}\n", E_BUSY, C.opts.max_connections);
	(void)!send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	conn_ref(c);
	while (!c->closed && !c->closing) {
		struct evbuffer_ptr eol;
		size_t eol_len = 0, len;
		char *line;

		eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
		len = eol.pos < 0 ? evbuffer_get_length(in) : (size_t)eol.pos;
		if (len > C.opts.max_request) {
			char msg[128];

			log_info("conn %u: request over %zu bytes, closing",
			    c->serial, C.opts.max_request);
			snprintf(msg, sizeof(msg), "request larger than %zu "
			    "bytes", C.opts.max_request);
			rpc_send_error(c, NULL, E_REQUEST_TOO_LARGE, msg);
			evbuffer_drain(in, evbuffer_get_length(in));
			conn_close_after_flush(c);
			break;
		}
		if (eol.pos < 0)
			break;
		line = (char *)evbuffer_pullup(in, len + eol_len);
		rpc_handle_line(c, line, len);
		evbuffer_drain(in, len + eol_len);
	}
	/*
	 * An idle connection may stay (event subscribers wait for hours),
	 * but one that sent part of a request and then nothing holds a
	 * connection slot for no purpose: give it --request-timeout
	 * seconds of silence.
	 */
	if (!c->closed && !c->closing) {
		if (evbuffer_get_length(in) > 0) {
			struct timeval tv = { C.opts.request_timeout, 0 };

			bufferevent_set_timeouts(bev, &tv, NULL);
		} else
			bufferevent_set_timeouts(bev, NULL, NULL);
	}
	conn_unref(c);
}

static void conn_flush_fd(struct conn *c);

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	conn_flush_fd(c);
	if (c->closed)
		return;

	/* refs > 1: a deferred reply is still to come. */
	if (c->closing && c->refs <= 1 &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_close(c);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	size_t partial = evbuffer_get_length(bufferevent_get_input(bev));

	if (what & BEV_EVENT_EOF) {
		if (partial > 0)
			log_debug("conn %u: closed with %zu bytes of an "
			    "unfinished request, dropped", c->serial, partial);
		/*
		 * The client may have only shut down its sending side and
		 * still wait for replies: flush what is queued first.
		 */
		conn_close_after_flush(c);
		return;
	}
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING)) {
		log_info("conn %u: %zu bytes of a request and no more for "
		    "%u s, closing", c->serial, partial,
		    C.opts.request_timeout);
		rpc_send_error(c, NULL, RPC_INVALID_REQUEST, "incomplete "
		    "request: no end of line within the timeout");
		conn_close_after_flush(c);
		return;
	}
	if (what & BEV_EVENT_ERROR)
		log_debug("conn %u: %s", c->serial, strerror(errno));
	conn_close(c);
}

static void
control_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	(void)arg;
	for (;;) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		struct conn *c;
		int fd;

		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				struct timeval tv = { 1, 0 };

				/* Out of descriptors: pause accepting 1 s. */
				log_warn("accept");
				event_del(C.ev_accept);
				evtimer_add(C.ev_resume, &tv);
			}
			return;
		}
		if (C.nconns >= C.opts.max_connections) {
			log_info("connection refused: limit of %u reached",
			    C.opts.max_connections);
			control_refuse(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			log_warn("SO_PEERCRED");
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->bev = bufferevent_socket_new(C.base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
		if (c->bev == NULL) {
			close(fd);
			free(c);
			continue;
		}
		c->serial = ++C.serial;
		c->refs = 1;
		c->fd_out = -1;
		c->pid = cred.pid;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->can_write = control_may_write(cred.uid, cred.gid);
		bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb,
		    conn_event_cb, c);
		bufferevent_enable(c->bev, EV_READ | EV_WRITE);
		TAILQ_INSERT_TAIL(&C.conns, c, entry);
		C.nconns++;
		log_debug("conn %u: pid %d uid %u gid %u%s", c->serial,
		    (int)c->pid, (unsigned)c->uid, (unsigned)c->gid,
		    c->can_write ? " (may write)" : "");
	}
}

static void
control_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	event_add(C.ev_accept, NULL);
}

int
control_start(struct event_base *base)
{
	C.base = base;
	C.ev_accept = event_new(base, C.fd, EV_READ | EV_PERSIST,
	    control_accept_cb, NULL);
	C.ev_resume = evtimer_new(base, control_resume_cb, NULL);
	if (C.ev_accept == NULL || C.ev_resume == NULL)
		return -ENOMEM;
	if (event_add(C.ev_accept, NULL) < 0)
		return -EIO;
	return 0;
}

void
control_stop(void)
{
	if (C.ev_accept != NULL)
		event_free(C.ev_accept);
	if (C.ev_resume != NULL)
		event_free(C.ev_resume);
	C.ev_accept = C.ev_resume = NULL;
	while (!TAILQ_EMPTY(&C.conns))
		conn_close(TAILQ_FIRST(&C.conns));
	if (C.fd >= 0)
		close(C.fd);
	C.fd = -1;
	if (C.made_socket)
		(void)unlink(C.opts.path);
	C.made_socket = false;
	free(C.group_uids);
	C.group_uids = NULL;
}

struct conn *
conn_ref(struct conn *c)
{
	c->refs++;
	return c;
}

void
conn_unref(struct conn *c)
{
	if (c == NULL)
		return;
	/*
	 * The last deferred call of a connection that is closing (its
	 * client shut down its side) is gone: close now if nothing is left
	 * to send.  Otherwise the write callback closes it once flushed.
	 */
	if (c->refs == 2 && c->closing && !c->closed &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		c->refs--;
		conn_close(c);
		return;
	}
	if (--c->refs > 0)
		return;
	free(c);
}

/* ------------------------------------------------------------------ */
/* Descriptors out (the console's pty): one line at a time.            */

static void
conn_drop_fd(struct conn *c)
{
	if (c->ev_fd != NULL)
		event_free(c->ev_fd);
	c->ev_fd = NULL;
	if (c->fd_out >= 0)
		close(c->fd_out);
	c->fd_out = -1;
	free(c->fd_line);
	c->fd_line = NULL;
}

static void
conn_fd_writable_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_flush_fd(arg);
}

/*
 * Send the waiting line if nothing is queued before it.  Only then: a
 * bufferevent may hold part of a line already half written, and bytes
 * sent around it would cut that line in two.
 */
static void
conn_flush_fd(struct conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { c->fd_line, c->fd_len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf) };
	struct cmsghdr *cm;
	int sock;
	ssize_t n;

	if (c->closed || c->fd_out < 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
		return;
	sock = bufferevent_getfd(c->bev);
	memset(&cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &c->fd_out, sizeof(int));
	n = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (c->ev_fd == NULL)
			c->ev_fd = event_new(C.base, sock, EV_WRITE,
			    conn_fd_writable_cb, c);
		if (c->ev_fd != NULL)
			event_add(c->ev_fd, NULL);
		return;
	}
	if (n < 0) {
		log_debug("conn %u: sending a descriptor: %s", c->serial,
		    strerror(errno));
		conn_close(c);
		return;
	}
	/* The descriptor went with the first byte; the rest is plain. */
	evbuffer_add(bufferevent_get_output(c->bev), c->fd_line + n,
	    c->fd_len - (size_t)n);
	conn_drop_fd(c);
}

int
conn_send_fd(struct conn *c, int fd, const char *line, size_t len)
{
	if (c->closed)
		return -EPIPE;
	if (c->fd_out >= 0)
		return -EBUSY;
	if (len == 0)
		return -EINVAL;
	c->fd_line = malloc(len);
	if (c->fd_line == NULL)
		return -ENOMEM;
	c->fd_out = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (c->fd_out < 0) {
		int rc = -errno;

		conn_drop_fd(c);
		return rc;
	}
	memcpy(c->fd_line, line, len);
	c->fd_len = len;
	conn_flush_fd(c);
	return 0;
}

/* Drop the socket now; the struct lives on while references remain. */
static void
conn_close(struct conn *c)
{
	if (c->closed)
		return;
	c->closed = true;
	if (C.on_close != NULL)
		C.on_close(c);
	conn_drop_fd(c);
	bufferevent_free(c->bev);
	c->bev = NULL;
	TAILQ_REMOVE(&C.conns, c, entry);
	C.nconns--;
	log_debug("conn %u: closed", c->serial);
	conn_unref(c);
}

void
control_on_close(conn_closed_fn *fn)
{
	C.on_close = fn;
}

void
conn_send(struct conn *c, const char *buf, size_t len)
{
	struct evbuffer *out;

	if (c->closed)
		return;
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) + len > CONTROL_OUTPUT_MAX) {
		log_warnx("conn %u: client does not read its replies "
		    "(%zu bytes queued), closing", c->serial,
		    evbuffer_get_length(out));
		conn_close(c);
		return;
	}
	evbuffer_add(out, buf, len);
}

void
conn_close_after_flush(struct conn *c)
{
	if (c->closed)
		return;
	c->closing = true;
	bufferevent_disable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
	    c->refs <= 1)
		conn_close(c);
}
