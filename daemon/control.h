/*
 * control.h - the control socket: listening, connections, line framing.
 *
 * control.c only accepts, reads the peer's credentials, cuts the input
 * into lines (bounded by --max-request) and hands each line to rpc.c.
 * A connection is reference counted: a deferred reply (a build the
 * client waits for) holds a reference, and sending on a connection the
 * client has closed is a no-op, so nothing dangles.
 */
#ifndef VMBUILDD_CONTROL_H
#define VMBUILDD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct event_base;

struct conn {
	unsigned	serial;		/* for log lines */
	int		refs;
	bool		closed;		/* socket gone; sends are dropped */
	bool		closing;	/* close once the output is flushed */
	struct bufferevent *bev;
	pid_t		pid;
	uid_t		uid;
	gid_t		gid;
	bool		can_write;	/* root or group vmbuild */
	unsigned	inflight;	/* deferred calls not yet answered */
	/* A line waiting to carry a descriptor (conn_send_fd). */
	int		fd_out;		/* ours (a duplicate); -1: none */
	char		*fd_line;
	size_t		fd_len;
	struct event	*ev_fd;		/* the socket writable again */
	TAILQ_ENTRY(conn) entry;
};

struct control_opts {
	const char	*path;
	size_t		max_request;
	unsigned	max_connections;
	unsigned	request_timeout;	/* s a partial request may wait */
};

/* Listen on opts->path, or on the socket systemd passed. */
int control_listen(const struct control_opts *opts);
/* Start accepting on the loop. */
int control_start(struct event_base *base);
/* Stop accepting, close every connection, remove the socket we made. */
void control_stop(void);
/* Re-read group vmbuild (SIGHUP). */
void control_reload_group(void);
unsigned control_connections(void);
bool control_socket_activated(void);
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
/* Send what is queued, then close. */
void conn_close_after_flush(struct conn *c);
/*
 * Send one whole line with descriptor `fd` attached to its first byte
 * (SCM_RIGHTS), after what is already queued: at once when nothing is,
 * else when the output has drained (lines queued meanwhile may go
 * first: they are whole lines too, and replies are matched by id).  The
 * descriptor is duplicated; the caller keeps its own.  0, or -EPIPE
 * (the connection is gone), -EBUSY (a line with a descriptor is waiting
 * already) or another negative errno.
 */
int conn_send_fd(struct conn *c, int fd, const char *line, size_t len);

#endif /* VMBUILDD_CONTROL_H */
