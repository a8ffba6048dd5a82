/*
 * control.h - the control sockets: listening, connections, line framing.
 *
 * control.c only accepts, reads the peer's credentials, cuts the input
 * into lines (bounded by --max-request) with the descriptors that came
 * with them (SCM_RIGHTS), and hands each line to rpc.c.  It bounds what
 * a client can make the daemon hold: requests are not read while a
 * client's replies pile up unread, a client whose output passes
 * CONTROL_OUTPUT_MAX is dropped, and so is the biggest one when all
 * queued output passes --max-output.  Connections are bounded per
 * socket (the read-only socket's clients cannot take the control
 * socket's slots) and per uid (root excepted), and one with nothing
 * going on is closed after --idle-timeout, counted from the accept.
 *
 * A connection is reference counted: a deferred reply (a build the
 * client waits for) holds a reference, and sending on a connection the
 * client has closed is a no-op, so nothing dangles.
 *
 * Two sockets: the control socket (0660, group vmbuild: root and the
 * group may change things, others who can connect may read) and the
 * read-only socket (0666: anyone may read, nobody may change anything),
 * as libvirt has, so that monitoring needs no group membership.
 */
#ifndef VMBUILDD_CONTROL_H
#define VMBUILDD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct event;
struct event_base;
struct evbuffer;

/* Descriptors received and not yet handed to a request, per connection. */
#define CONTROL_MAX_FDS		4

struct conn {
	unsigned	serial;		/* for log lines */
	int		refs;
	bool		closed;		/* socket gone; sends are dropped */
	bool		closing;	/* close once the output is flushed */
	bool		reading;	/* off while the output is backed up */
	bool		read_only;	/* came in on the read-only socket */
	bool		doomed;		/* output over the limits: closing */
	/*
	 * Idle by design (events.subscribe, set by events.c): no
	 * --idle-timeout, but it counts against its uid's connections.
	 */
	bool		lingers;
	int		fd;
	struct event	*ev_read, *ev_write, *ev_timeout;
	struct event	*ev_idle;	/* --idle-timeout, see conn_idle_cb */
	double		active_mono;	/* last request byte in or reply out */
	struct evbuffer	*in, *out;
	uint64_t	in_base;	/* stream offset of in's first byte */
	uint64_t	partial_base;	/* in_base when the timeout was armed */
	struct {
		int	 fd;
		uint64_t at;		/* stream offset of the bytes it came with */
	}		fds[CONTROL_MAX_FDS];
	size_t		nfds;
	pid_t		pid;
	uid_t		uid;
	gid_t		gid;
	bool		can_write;	/* root or group vmbuild, not read-only */
	unsigned	inflight;	/* deferred calls not yet answered */
	/* A line waiting to carry a descriptor (conn_send_fd). */
	int		fd_out;		/* ours (a duplicate); -1: none */
	char		*fd_line;
	size_t		fd_len;
	unsigned	corked;		/* conn_cork() depth: sends are queued */
	TAILQ_ENTRY(conn) entry;
};

struct control_opts {
	const char	*path;		/* NULL: no control socket of our own */
	const char	*ro_path;	/* NULL: no read-only socket */
	const char	*group;		/* may change things besides root */
	size_t		max_request;
	unsigned	max_connections;	/* on the control socket */
	unsigned	max_ro_connections;	/* on the read-only socket */
	unsigned	max_uid_connections;	/* one uid's, root's unbounded */
	unsigned	request_timeout;	/* s for a request to complete */
	unsigned	idle_timeout;	/* s with nothing going on; 0: none */
	size_t		max_output;	/* bytes queued for all clients */
};

/* Listen on the paths of opts, or on the sockets systemd passed. */
int control_listen(const struct control_opts *opts);
/* Start accepting on the loop. */
int control_start(struct event_base *base);
/* Stop accepting, close every connection, remove the sockets we made. */
void control_stop(void);
/* Remove the socket files we made (at exit, whatever the path). */
void control_unlink(void);
/* The group that may change things, and the control socket (or NULL). */
const char *control_group_name(void);
const char *control_socket_path(void);
/* Re-read the group (SIGHUP). */
void control_reload_group(void);
unsigned control_connections(void);
/* Bytes queued for all clients. */
size_t control_output_bytes(void);
bool control_socket_activated(void);
/*
 * Serve a connected stream socket as if it had been accepted (taken
 * over; for tests and the fuzzer).  NULL when out of memory.
 */
struct conn *control_attach(int fd, bool read_only);
/*
 * Call `fn` for each connection whose socket closes, before its last
 * reference can go: layers above keep their own per-connection state
 * (events.c its subscriptions) and drop it there.
 */
typedef void conn_closed_fn(struct conn *c);
void control_on_close(conn_closed_fn *fn);

struct conn *conn_ref(struct conn *c);
void conn_unref(struct conn *c);
/* Queue bytes for the client; dropped when the connection is gone. */
void conn_send(struct conn *c, const char *buf, size_t len);
/*
 * Queue `len` bytes of `buf` without copying them: `buf` must stay
 * unchanged until cleanup(buf, len, arg) is called, once, when the bytes
 * were sent or dropped (which may be at once, before conn_send_ref
 * returns).
 */
void conn_send_ref(struct conn *c, const char *buf, size_t len,
    void (*cleanup)(const void *buf, size_t len, void *arg), void *arg);
/*
 * Between conn_cork() and conn_uncork() sends are only queued; the last
 * conn_uncork() writes what is queued at once when the socket takes it,
 * without a round through the event loop, and waits for the socket to
 * be writable only for what is left.  A reply is sent in parts: cork
 * around them so that it goes out in one writev().
 */
void conn_cork(struct conn *c);
void conn_uncork(struct conn *c);
/* Send what is queued, then close. */
void conn_close_after_flush(struct conn *c);
/*
 * Send one whole line with descriptor `fd` attached to its first byte
 * (SCM_RIGHTS), after what is already queued: from the loop, once the
 * output has drained (lines queued meanwhile may go first: they are
 * whole lines too, and replies are matched by id).  The
 * descriptor is duplicated; the caller keeps its own.  0, or -EPIPE
 * (the connection is gone), -EBUSY (a line with a descriptor is waiting
 * already) or another negative errno.
 */
int conn_send_fd(struct conn *c, int fd, const char *line, size_t len);

#endif /* VMBUILDD_CONTROL_H */
