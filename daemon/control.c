/*
 * control.c - the control sockets (see control.h).
 *
 * Who may change things is decided here, once per connection, from the
 * peer's credentials: root, and members of the group (vmbuild unless
 * --group says otherwise) by their primary group, their supplementary
 * groups (SO_PEERGROUPS: the groups the peer's process really has) or
 * the member list of /etc/group (read at start and on SIGHUP, so that no
 * NSS lookup ever runs on the loop per request).  Everyone who can
 * connect may read; the sockets' modes decide who can connect.  A
 * connection of the read-only socket may never change anything, root's
 * included.
 *
 * I/O is done here rather than through a bufferevent because requests
 * carry descriptors (SCM_RIGHTS) and a bufferevent reads with readv(),
 * which drops them.  A descriptor belongs to the request whose bytes it
 * came with: Linux delivers it with the first byte of the sendmsg() that
 * carried it, and never merges those bytes with earlier ones in one
 * recvmsg().  The other way, a reply may carry one descriptor (the
 * console's pty, conn_send_fd), sent the same way with its first byte.
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
#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include "control.h"
#include "log.h"
#include "proto.h"
#include "rpc.h"
#include "vmbuildd.h"

#define CONTROL_GROUP		"vmbuild"
#define CONTROL_READ_CHUNK	65536
/*
 * Output flow control.  Above HIGH queued bytes a connection's requests
 * are not read (the client, not the daemon, holds what it sends next),
 * below LOW they are read again.  Events still go out meanwhile: a
 * client that reads nothing is dropped at CONTROL_OUTPUT_MAX.
 */
#define CONTROL_OUTPUT_HIGH	(1u << 20)
#define CONTROL_OUTPUT_LOW	(256u << 10)
#define CONTROL_OUTPUT_MAX	(8u << 20)

TAILQ_HEAD(connq, conn);

struct listener {
	int		fd;
	bool		read_only;
	bool		activated;	/* from systemd */
	bool		made;		/* we bound path: unlink it */
	const char	*path;
	struct event	*ev;
	unsigned	nconns;		/* its connections now */
};

static struct {
	struct control_opts opts;
	struct listener	ls[2];		/* control, read-only */
	struct event_base *base;
	struct event	*ev_resume;	/* accept again after EMFILE */
	struct event	*ev_doom;	/* close what control_shed dropped */
	struct log_rate	accept_rate;
	struct log_rate	refuse_rate;
	struct connq	conns;
	unsigned	nconns;
	unsigned	serial;
	size_t		out_total;	/* bytes queued for all clients */
	bool		have_group;
	gid_t		group_gid;
	uid_t		*group_uids;
	size_t		group_nuids;
	conn_closed_fn	*on_close;
} C = { .ls = { { .fd = -1 }, { .fd = -1, .read_only = true } } };

static void conn_close(struct conn *c);
static void conn_process(struct conn *c);
static void control_doom_cb(evutil_socket_t fd, short what, void *arg);
static void conn_idle_cb(evutil_socket_t fd, short what, void *arg);

const char *
control_group_name(void)
{
	return C.opts.group ? C.opts.group : CONTROL_GROUP;
}

const char *
control_socket_path(void)
{
	return C.opts.path;
}

void
control_reload_group(void)
{
	const char *name = C.opts.group ? C.opts.group : CONTROL_GROUP;
	struct group *gr;
	uid_t *uids = NULL;
	size_t n = 0;

	free(C.group_uids);
	C.group_uids = NULL;
	C.group_nuids = 0;
	C.have_group = false;
	gr = getgrnam(name);
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

/* Is the group among the peer's supplementary groups? */
static bool
peer_in_group(int fd, gid_t want)
{
	gid_t small[64], *gids = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gids, &len) < 0) {
		if (errno != ERANGE || (gids = malloc(len)) == NULL)
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, gids, &len) < 0)
			len = 0;
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (gids[i] == want)
			found = true;
	if (gids != small)
		free(gids);
	return found;
}

static bool
control_may_write(int fd, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (!C.have_group)
		return false;
	if (gid == C.group_gid || peer_in_group(fd, C.group_gid))
		return true;
	for (size_t i = 0; i < C.group_nuids; i++)
		if (C.group_uids[i] == uid)
			return true;
	return false;
}

bool
control_socket_activated(void)
{
	return C.ls[0].activated || C.ls[1].activated;
}

unsigned
control_connections(void)
{
	return C.nconns;
}

size_t
control_output_bytes(void)
{
	return C.out_total;
}

/* Bind `path` with `mode`, replacing a stale socket but never a live one. */
static int
control_bind(const char *path, mode_t mode)
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
	/* The final mode from the start: no window with a wider one. */
	old = umask(~mode & 0777);
	rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc < 0) {
		rc = -errno;
		log_warn("bind %s", path);
		goto fail;
	}
	if (mode == 0660 && C.have_group &&
	    chown(path, (uid_t)-1, C.group_gid) < 0)
		log_warn("chown %s to group %s, ignoring", path,
		    C.opts.group ? C.opts.group : CONTROL_GROUP);
	/* Room for a burst of clients: --max-connections may be large. */
	if (listen(fd, SOMAXCONN) < 0) {
		rc = -errno;
		(void)unlink(path);
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

/*
 * Sockets from systemd: named "control" and "ro" (FileDescriptorName=),
 * or, unnamed, the first is the control socket and the second the
 * read-only one.
 */
static int
control_from_systemd(void)
{
	char **names = NULL;
	int n, rc = 0;

	n = sd_listen_fds_with_names(1, &names);
	if (n < 0)
		log_warnx("sd_listen_fds: %s, ignoring", strerror(-n));
	for (int i = 0; i < n && rc == 0; i++) {
		int fd = SD_LISTEN_FDS_START + i, which = i;

		if (names && names[i] && !strcmp(names[i], "ro"))
			which = 1;
		else if (names && names[i] && !strcmp(names[i], "control"))
			which = 0;
		if (which > 1 || C.ls[which].fd >= 0) {
			log_warnx("systemd passed socket %d (%s) as well, not "
			    "using it", i, names && names[i] ? names[i] : "?");
			continue;
		}
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_errx("socket %d systemd passed is not a listening "
			    "Unix stream socket", i);
			rc = -EINVAL;
		} else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) |
		    O_NONBLOCK) < 0) {
			rc = -errno;
		} else {
			C.ls[which].fd = fd;
			C.ls[which].activated = true;
			log_info("listening on the %s socket passed by systemd",
			    which ? "read-only" : "control");
		}
	}
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int
control_listen(const struct control_opts *opts)
{
	static const mode_t modes[2] = { 0660, 0666 };
	int rc;

	C.opts = *opts;
	/* rpc.c words a refused change with these (it calls nothing here). */
	rpc_set_access_names(control_group_name(), control_socket_path());
	TAILQ_INIT(&C.conns);
	control_reload_group();
	C.ls[0].path = opts->path;
	C.ls[1].path = opts->ro_path;
	rc = control_from_systemd();
	if (rc < 0)
		return rc;
	for (int i = 0; i < 2; i++) {
		struct listener *l = &C.ls[i];

		if (l->fd >= 0 || l->path == NULL)
			continue;
		l->fd = control_bind(l->path, modes[i]);
		if (l->fd < 0) {
			rc = l->fd;
			control_unlink();
			return rc;
		}
		l->made = true;
		log_info("listening on %s (%s)", l->path, i ? "read-only, "
		    "anyone may connect" : "control");
	}
	return 0;
}

/*
 * Connections are bounded per socket, so that the read-only socket's
 * clients (anyone) never take the control socket's slots (root and the
 * group), and per uid on both together, so that one user cannot take
 * all of a socket's; root is not bounded per uid.  NULL when `cred` may
 * connect, else why not, in `buf`.
 */
static const char *
control_over_limit(const struct listener *l, const struct ucred *cred,
    char *buf, size_t size)
{
	unsigned max = l->read_only ? C.opts.max_ro_connections :
	    C.opts.max_connections, mine = 0;
	const struct conn *c;

	if (l->nconns >= max) {
		snprintf(buf, size, "too many connections to the %s socket "
		    "(limit %u)", l->read_only ? "read-only" : "control", max);
		return buf;
	}
	if (cred->uid == 0)
		return NULL;
	TAILQ_FOREACH(c, &C.conns, entry)
		if (c->uid == cred->uid)
			mine++;
	if (mine < C.opts.max_uid_connections)
		return NULL;
	snprintf(buf, size, "too many connections from uid %u (limit %u a "
	    "user)", (unsigned)cred->uid, C.opts.max_uid_connections);
	return buf;
}

/* Refuse a connection over a limit with one error line, saying which. */
static void
control_refuse(int fd, const struct ucred *cred, const char *why)
{
	char buf[256];
	unsigned held;
	int n;

	if (log_rate_ok(&C.refuse_rate, 10, &held))
		log_warnx("connection of pid %d uid %u refused: %s (%u more "
		    "refused before this one and not logged)", (int)cred->pid,
		    (unsigned)cred->uid, why, held);
	n = snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":null,"
	    "\"error\":{\"code\":%d,\"message\":\"%s\"}}\n", E_BUSY, why);
	(void)!send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

/* Output accounting: every change of a connection's output buffer. */
static void
conn_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	(void)buf;
	(void)arg;
	C.out_total += info->n_added;
	C.out_total -= info->n_deleted;
}

static size_t
out_len(const struct conn *c)
{
	return evbuffer_get_length(c->out);
}

/* Nothing left to send: no bytes, no line waiting with a descriptor. */
static bool
conn_idle(const struct conn *c)
{
	return out_len(c) == 0 && c->fd_out < 0;
}

static void
conn_pause(struct conn *c)
{
	if (c->reading)
		event_del(c->ev_read);
	c->reading = false;
}

static void
conn_resume(struct conn *c)
{
	if (c->closed || c->closing || c->reading || c->doomed)
		return;
	c->reading = true;
	event_add(c->ev_read, NULL);
	/* Lines that arrived before the pause are waiting. */
	conn_process(c);
}

/*
 * Receive what the socket has into c->in, with any descriptors.
 * >0 bytes read, 0 at EOF, -EAGAIN when nothing is there, or -errno.
 */
static ssize_t
conn_recv(struct conn *c)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)];
	} cbuf;
	struct evbuffer_iovec vec;
	struct msghdr mh = { .msg_control = cbuf.buf,
	    .msg_controllen = sizeof(cbuf.buf) };
	uint64_t at = c->in_base + evbuffer_get_length(c->in);
	bool overflow = false;
	ssize_t n;

	if (evbuffer_reserve_space(c->in, CONTROL_READ_CHUNK, &vec, 1) < 1)
		return -ENOMEM;
	if (vec.iov_len > CONTROL_READ_CHUNK)
		vec.iov_len = CONTROL_READ_CHUNK;
	mh.msg_iov = (struct iovec *)&vec;
	mh.msg_iovlen = 1;
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL;
	    cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfd;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			/*
			 * The read-only socket takes them too: config.check
			 * reads the client's images from its descriptors.
			 */
			if (c->nfds == CONTROL_MAX_FDS) {
				close(fd);
				overflow = true;
				continue;
			}
			c->fds[c->nfds].fd = fd;
			c->fds[c->nfds].at = at;
			c->nfds++;
		}
	}
	vec.iov_len = (size_t)n;
	evbuffer_commit_space(c->in, &vec, 1);
	if (overflow || (mh.msg_flags & MSG_CTRUNC)) {
		char msg[128];

		snprintf(msg, sizeof(msg), "more than %d descriptors sent "
		    "before the requests they belong to", CONTROL_MAX_FDS);
		log_info("conn %u: %s, closing", c->serial, msg);
		rpc_send_error(c, NULL, RPC_INVALID_REQUEST, msg);
		conn_close_after_flush(c);
	}
	return n;
}

/* The descriptors that came with bytes before stream offset `end`. */
static size_t
conn_take_fds(struct conn *c, uint64_t end, int *fds, size_t max)
{
	size_t n = 0, keep = 0;

	for (size_t i = 0; i < c->nfds; i++) {
		if (c->fds[i].at < end && n < max)
			fds[n++] = c->fds[i].fd;
		else if (c->fds[i].at < end)
			close(c->fds[i].fd);	/* more than a request takes */
		else
			c->fds[keep++] = c->fds[i];
	}
	c->nfds = keep;
	return n;
}

/*
 * A request must be complete within --request-timeout seconds of its
 * first byte: one that trickles in holds a connection slot for no one.
 * The clock starts again with each new request.
 */
static void
conn_arm_timeout(struct conn *c)
{
	struct timeval tv = { C.opts.request_timeout, 0 };

	if (evbuffer_get_length(c->in) == 0) {
		event_del(c->ev_timeout);
		return;
	}
	if (evtimer_pending(c->ev_timeout, NULL) &&
	    c->partial_base == c->in_base)
		return;
	c->partial_base = c->in_base;
	evtimer_add(c->ev_timeout, &tv);
}

/*
 * Hand every complete line of c->in to rpc.c, while output allows.  The
 * replies of the lines handled here go out together, in one writev()
 * at the end.
 */
static void
conn_process(struct conn *c)
{
	conn_ref(c);
	conn_cork(c);
	while (!c->closed && !c->closing) {
		struct evbuffer_ptr eol;
		size_t eol_len = 0, len, nfds;
		int fds[RPC_MAX_FDS];
		char *line;

		if (out_len(c) >= CONTROL_OUTPUT_HIGH) {
			conn_pause(c);
			break;
		}
		eol = evbuffer_search_eol(c->in, NULL, &eol_len,
		    EVBUFFER_EOL_LF);
		len = eol.pos < 0 ? evbuffer_get_length(c->in) :
		    (size_t)eol.pos;
		if (len > C.opts.max_request) {
			char msg[128];

			log_info("conn %u: request over %zu bytes, closing",
			    c->serial, C.opts.max_request);
			snprintf(msg, sizeof(msg), "request larger than %zu "
			    "bytes", C.opts.max_request);
			rpc_send_error(c, NULL, E_REQUEST_TOO_LARGE, msg);
			conn_close_after_flush(c);
			break;
		}
		if (eol.pos < 0)
			break;
		line = (char *)evbuffer_pullup(c->in, len + eol_len);
		nfds = conn_take_fds(c, c->in_base + len + eol_len, fds,
		    RPC_MAX_FDS);
		rpc_handle_line(c, line, len, fds, nfds);
		if (c->closed)
			break;
		evbuffer_drain(c->in, len + eol_len);
		c->in_base += len + eol_len;
	}
	if (!c->closed && !c->closing)
		conn_arm_timeout(c);
	conn_uncork(c);
	conn_unref(c);
}

static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	size_t partial;

	(void)fd;
	(void)what;
	conn_ref(c);
	/* A few reads per wake-up, so that one client cannot hog the loop. */
	for (int i = 0; i < 8 && !c->closed && c->reading; i++) {
		ssize_t n = conn_recv(c);

		if (n == -EAGAIN)
			break;
		if (n < 0) {
			log_debug("conn %u: %s", c->serial, strerror(-n));
			conn_close(c);
			break;
		}
		if (n == 0) {
			partial = evbuffer_get_length(c->in);
			if (partial > 0)
				log_debug("conn %u: closed with %zu bytes of "
				    "an unfinished request, dropped",
				    c->serial, partial);
			/*
			 * The client may have only shut down its sending
			 * side and still wait for replies: flush first.
			 */
			conn_close_after_flush(c);
			break;
		}
		c->active_mono = now_mono();
		conn_process(c);
		/*
		 * Less than a chunk: the socket is empty, do not ask again
		 * (the event is level-triggered: more wakes us up).  One
		 * recvmsg() per request instead of two.
		 */
		if (n < CONTROL_READ_CHUNK)
			break;
	}
	conn_unref(c);
}

static void conn_flush_fd(struct conn *c);

static void
conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)what;
	if (out_len(c) > 0 && evbuffer_write(c->out, fd) < 0 &&
	    errno != EAGAIN && errno != EINTR) {
		log_debug("conn %u: %s", c->serial, strerror(errno));
		conn_close(c);
		return;
	}
	/* A line with a descriptor goes once what was before it has. */
	if (out_len(c) == 0 && c->fd_out >= 0) {
		conn_flush_fd(c);
		if (c->closed)
			return;
	}
	if (conn_idle(c)) {
		event_del(c->ev_write);
		/* refs > 1: a deferred reply is still to come. */
		if (c->closing && c->refs <= 1) {
			conn_close(c);
			return;
		}
	}
	if (!c->reading && out_len(c) < CONTROL_OUTPUT_LOW)
		conn_resume(c);
}

static void
conn_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	log_info("conn %u: %zu bytes of a request and no end of line for %u "
	    "s, closing", c->serial, evbuffer_get_length(c->in),
	    C.opts.request_timeout);
	rpc_send_error(c, NULL, RPC_INVALID_REQUEST, "incomplete request: "
	    "no end of line within the timeout");
	conn_close_after_flush(c);
}

/* The peer's credentials, or false (logged, fd closed). */
static bool
conn_cred(int fd, struct ucred *cred)
{
	socklen_t clen = sizeof(*cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &clen) < 0) {
		log_warn("SO_PEERCRED");
		close(fd);
		return false;
	}
	return true;
}

/*
 * Something is going on: a request being received or answered (a
 * deferred call, or a console, holds a reference), output waiting, or a
 * subscription.
 */
static bool
conn_busy(const struct conn *c)
{
	return evbuffer_get_length(c->in) > 0 || !conn_idle(c) ||
	    c->refs > 1 || c->lingers || !c->reading;
}

/*
 * --idle-timeout: a connection with nothing going on for that long is
 * closed, so that a client that connects and sends nothing (or nothing
 * more) holds a slot for a while only.  Armed at the accept; rather than
 * re-armed at each byte, it looks when it fires: busy, or active since,
 * it waits again.
 */
static void
conn_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	double now = now_mono(), left;
	struct timeval tv;
	char msg[96];

	(void)fd;
	(void)what;
	if (c->closed || c->closing || c->doomed)
		return;
	if (conn_busy(c))
		c->active_mono = now;
	left = c->active_mono + C.opts.idle_timeout - now;
	if (left > 0) {
		tv.tv_sec = (time_t)left;
		tv.tv_usec = (suseconds_t)((left - (double)tv.tv_sec) * 1e6);
		evtimer_add(c->ev_idle, &tv);
		return;
	}
	log_info("conn %u: pid %d uid %u did nothing for %u s, closing",
	    c->serial, (int)c->pid, (unsigned)c->uid, C.opts.idle_timeout);
	snprintf(msg, sizeof(msg), "idle for %u s, closing",
	    C.opts.idle_timeout);
	rpc_send_error(c, NULL, E_BUSY, msg);
	conn_close_after_flush(c);
}

static struct conn *
conn_new(int fd, bool read_only, const struct ucred *cred)
{
	struct timeval idle = { C.opts.idle_timeout, 0 };
	struct conn *c;

	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->fd_out = -1;
	c->in = evbuffer_new();
	c->out = evbuffer_new();
	c->ev_read = event_new(C.base, fd, EV_READ | EV_PERSIST, conn_read_cb,
	    c);
	c->ev_write = event_new(C.base, fd, EV_WRITE | EV_PERSIST,
	    conn_write_cb, c);
	c->ev_timeout = evtimer_new(C.base, conn_timeout_cb, c);
	c->ev_idle = evtimer_new(C.base, conn_idle_cb, c);
	if (c->in == NULL || c->out == NULL || c->ev_read == NULL ||
	    c->ev_write == NULL || c->ev_timeout == NULL || c->ev_idle == NULL ||
	    evbuffer_add_cb(c->out, conn_out_cb, c) == NULL) {
		c->closed = true;
		conn_close(c);	/* frees what was made; c->closed skips it */
		return NULL;
	}
	c->serial = ++C.serial;
	c->refs = 1;
	c->pid = cred->pid;
	c->uid = cred->uid;
	c->gid = cred->gid;
	c->read_only = read_only;
	c->can_write = !read_only && control_may_write(fd, cred->uid,
	    cred->gid);
	c->reading = true;
	event_add(c->ev_read, NULL);
	/* From the accept: a client that sends nothing is idle too. */
	c->active_mono = now_mono();
	if (C.opts.idle_timeout > 0)
		evtimer_add(c->ev_idle, &idle);
	TAILQ_INSERT_TAIL(&C.conns, c, entry);
	C.nconns++;
	C.ls[read_only].nconns++;
	log_debug("conn %u: pid %d uid %u gid %u%s%s", c->serial, (int)c->pid,
	    (unsigned)c->uid, (unsigned)c->gid, read_only ? " (read-only "
	    "socket)" : "", c->can_write ? " (may write)" : "");
	return c;
}

struct conn *
control_attach(int fd, bool read_only)
{
	int fl = fcntl(fd, F_GETFL);
	struct ucred cred;

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		close(fd);
		return NULL;
	}
	if (!conn_cred(fd, &cred))
		return NULL;
	return conn_new(fd, read_only, &cred);
}

/* Out of descriptors or memory: say so now and then, accept again in 1 s. */
static void
control_accept_pause(int err)
{
	struct timeval tv = { 1, 0 };
	unsigned held;

	if (log_rate_ok(&C.accept_rate, 10, &held))
		log_warnx("accept: %s; not accepting for 1 s (%u such errors "
		    "not logged before this one)", strerror(err), held);
	for (int i = 0; i < 2; i++)
		if (C.ls[i].ev != NULL)
			event_del(C.ls[i].ev);
	evtimer_add(C.ev_resume, &tv);
}

static void
control_accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct listener *l = arg;
	struct ucred cred;
	const char *why;
	char buf[128];

	(void)what;
	/* A bounded batch per wake-up: the loop serves the others too. */
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				control_accept_pause(errno);
			return;
		}
		if (!conn_cred(fd, &cred))
			continue;
		why = control_over_limit(l, &cred, buf, sizeof(buf));
		if (why != NULL)
			control_refuse(fd, &cred, why);
		else
			(void)conn_new(fd, l->read_only, &cred);
	}
}

static void
control_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	for (int i = 0; i < 2; i++)
		if (C.ls[i].ev != NULL)
			event_add(C.ls[i].ev, NULL);
}

int
control_start(struct event_base *base)
{
	C.base = base;
	C.ev_resume = evtimer_new(base, control_resume_cb, NULL);
	C.ev_doom = evtimer_new(base, control_doom_cb, NULL);
	if (C.ev_resume == NULL || C.ev_doom == NULL)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		struct listener *l = &C.ls[i];

		if (l->fd < 0)
			continue;
		l->ev = event_new(base, l->fd, EV_READ | EV_PERSIST,
		    control_accept_cb, l);
		if (l->ev == NULL)
			return -ENOMEM;
		if (event_add(l->ev, NULL) < 0)
			return -EIO;
	}
	return 0;
}

void
control_unlink(void)
{
	for (int i = 0; i < 2; i++) {
		if (C.ls[i].made && C.ls[i].path != NULL)
			(void)unlink(C.ls[i].path);
		C.ls[i].made = false;
	}
}

void
control_stop(void)
{
	if (C.ev_resume != NULL)
		event_free(C.ev_resume);
	if (C.ev_doom != NULL)
		event_free(C.ev_doom);
	C.ev_resume = C.ev_doom = NULL;
	for (int i = 0; i < 2; i++) {
		if (C.ls[i].ev != NULL)
			event_free(C.ls[i].ev);
		C.ls[i].ev = NULL;
		if (C.ls[i].fd >= 0)
			close(C.ls[i].fd);
		C.ls[i].fd = -1;
	}
	while (!TAILQ_EMPTY(&C.conns))
		conn_close(TAILQ_FIRST(&C.conns));
	control_unlink();
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
	if (c->refs == 2 && c->closing && !c->closed && conn_idle(c)) {
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
	if (c->fd_out >= 0)
		close(c->fd_out);
	c->fd_out = -1;
	free(c->fd_line);
	c->fd_line = NULL;
	c->fd_len = 0;
}

/*
 * Send the waiting line, from the write callback once c->out is empty:
 * only then, as c->out may hold the rest of a line half written, and
 * bytes sent around it would cut that line in two.  The descriptor goes
 * with the first byte that sendmsg() takes; the rest of the line is
 * queued as plain bytes.  Not written yet (EAGAIN): the write event
 * stays armed and comes back here.
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
	ssize_t n;

	memset(&cbuf, 0, sizeof(cbuf));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &c->fd_out, sizeof(int));
	n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		log_debug("conn %u: sending a descriptor: %s", c->serial,
		    strerror(errno));
		conn_close(c);
		return;
	}
	evbuffer_add(c->out, c->fd_line + n, c->fd_len - (size_t)n);
	conn_drop_fd(c);
}

int
conn_send_fd(struct conn *c, int fd, const char *line, size_t len)
{
	if (c->closed || c->doomed)
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
	/* Sent from the write callback, after what is queued before it. */
	if (!event_pending(c->ev_write, EV_WRITE, NULL))
		event_add(c->ev_write, NULL);
	return 0;
}

/* Drop the socket now; the struct lives on while references remain. */
static void
conn_close(struct conn *c)
{
	bool listed = !c->closed;

	if (listed) {
		c->closed = true;
		if (C.on_close != NULL)
			C.on_close(c);
		TAILQ_REMOVE(&C.conns, c, entry);
		C.nconns--;
		C.ls[c->read_only].nconns--;
		log_debug("conn %u: closed", c->serial);
	}
	for (size_t i = 0; i < c->nfds; i++)
		close(c->fds[i].fd);
	c->nfds = 0;
	conn_drop_fd(c);
	if (c->ev_read != NULL)
		event_free(c->ev_read);
	if (c->ev_write != NULL)
		event_free(c->ev_write);
	if (c->ev_timeout != NULL)
		event_free(c->ev_timeout);
	if (c->ev_idle != NULL)
		event_free(c->ev_idle);
	c->ev_read = c->ev_write = c->ev_timeout = c->ev_idle = NULL;
	if (c->out != NULL) {
		C.out_total -= evbuffer_get_length(c->out);
		evbuffer_free(c->out);
	}
	if (c->in != NULL)
		evbuffer_free(c->in);
	c->in = c->out = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (listed)
		conn_unref(c);
	else if (c->refs == 0)
		free(c);
}

void
control_on_close(conn_closed_fn *fn)
{
	C.on_close = fn;
}

/* Close the doomed connections, from the loop (see control_shed). */
static void
control_doom_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c, *next;

	(void)fd;
	(void)what;
	(void)arg;
	for (c = TAILQ_FIRST(&C.conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->doomed)
			conn_close(c);
	}
}

/*
 * All output together is over --max-output: drop the biggest client.
 * Its output goes at once; the connection itself is closed from the loop
 * a moment later, not here: the caller may be going through a list that
 * names it (events_emit's subscriptions).
 */
static void
control_shed(size_t want)
{
	struct conn *c, *big;

	while (C.out_total + want > C.opts.max_output) {
		big = NULL;
		TAILQ_FOREACH(c, &C.conns, entry)
			if (!c->doomed && (big == NULL ||
			    out_len(c) > out_len(big)))
				big = c;
		if (big == NULL || out_len(big) == 0)
			return;
		log_warnx("conn %u: %zu bytes queued while all clients have "
		    "%zu (limit %zu), closing it", big->serial, out_len(big),
		    C.out_total, C.opts.max_output);
		big->doomed = true;
		conn_pause(big);
		event_del(big->ev_write);
		evbuffer_drain(big->out, out_len(big));
		event_active(C.ev_doom, EV_TIMEOUT, 0);
	}
}

/* May `len` more bytes be queued for c?  Closes or sheds when not. */
static bool
conn_send_room(struct conn *c, size_t len)
{
	if (c->closed || c->doomed)
		return false;
	if (out_len(c) + len > CONTROL_OUTPUT_MAX) {
		log_warnx("conn %u: client does not read its replies "
		    "(%zu bytes queued), closing", c->serial, out_len(c));
		conn_close(c);
		return false;
	}
	if (C.out_total + len > C.opts.max_output) {
		control_shed(len);
		/*
		 * c itself may be the one shed: its queue is gone, and a
		 * part of a message queued now would reach the client
		 * without the parts before it.
		 */
		if (c->closed || c->doomed)
			return false;
	}
	c->active_mono = now_mono();
	return true;
}

static void
conn_want_write(struct conn *c)
{
	if (c->corked == 0 && !event_pending(c->ev_write, EV_WRITE, NULL))
		event_add(c->ev_write, NULL);
}

void
conn_send(struct conn *c, const char *buf, size_t len)
{
	if (!conn_send_room(c, len))
		return;
	evbuffer_add(c->out, buf, len);
	conn_want_write(c);
}

void
conn_send_ref(struct conn *c, const char *buf, size_t len,
    void (*cleanup)(const void *buf, size_t len, void *arg), void *arg)
{
	if (!conn_send_room(c, len) ||
	    evbuffer_add_reference(c->out, buf, len, cleanup, arg) < 0) {
		cleanup(buf, len, arg);
		return;
	}
	conn_want_write(c);
}

void
conn_cork(struct conn *c)
{
	c->corked++;
}

/*
 * Write at once only on a connection in its ordinary state: one that is
 * paused, closing or being dropped goes through conn_write_cb(), which
 * knows what to do next (resume reading, close).  Errors too: the write
 * callback reports and closes, from the loop.
 */
void
conn_uncork(struct conn *c)
{
	if (c->corked == 0 || --c->corked > 0)
		return;
	if (c->closed || c->doomed || out_len(c) == 0)
		return;
	if (event_pending(c->ev_write, EV_WRITE, NULL))
		return;		/* the socket was full: wait for it */
	if (c->reading && !c->closing &&
	    evbuffer_write(c->out, c->fd) >= 0 && out_len(c) == 0)
		return;
	event_add(c->ev_write, NULL);
}

void
conn_close_after_flush(struct conn *c)
{
	if (c->closed)
		return;
	c->closing = true;
	conn_pause(c);
	event_del(c->ev_timeout);
	if (conn_idle(c) && c->refs <= 1)
		conn_close(c);
}
