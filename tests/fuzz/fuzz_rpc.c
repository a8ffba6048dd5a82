/*
 * fuzz_rpc.c - the JSON-RPC request path of vmbuildd: bytes on a control
 * connection (control.c: framing, limits), each line parsed and checked
 * (json.c, rpc.c) and dispatched to its method (methods.c and what it
 * calls: configs, guest descriptions, params.fds, tasks, events), over a
 * hypervisor that is not there.  The input is what a client sends,
 * newlines and all, on a connection of the control socket; its first
 * byte, when odd, makes it the read-only socket instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "control.h"
#include "daemon_stub.h"
#include "fuzz.h"

struct client {
	int		fd;
	const uint8_t	*data;
	size_t		len, off;
	int		eof;
	struct event	*ev;
};

static void
client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct client *cl = arg;
	char buf[65536];

	if (what & EV_WRITE) {
		ssize_t n = 0;

		if (cl->off < cl->len)
			n = send(fd, cl->data + cl->off, cl->len - cl->off,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			cl->off += (size_t)n;
		if (cl->off >= cl->len || (n < 0 && errno != EAGAIN)) {
			shutdown(fd, SHUT_WR);
			cl->off = cl->len;
			event_del(cl->ev);
			event_assign(cl->ev, event_get_base(cl->ev), fd,
			    EV_READ | EV_PERSIST, client_cb, cl);
			event_add(cl->ev, NULL);
		}
	}
	if (what & EV_READ) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			/* Readable for ever now: stop watching it. */
			cl->eof = 1;
			event_del(cl->ev);
		}
	}
}

static int
client_done(void *arg)
{
	return ((struct client *)arg)->eof;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_daemon_init();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct event_base *base = fuzz_daemon_init();
	struct client cl = { .data = data, .len = len };
	int sv[2];
	bool ro = len > 0 && (data[0] & 1);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	cl.fd = sv[1];
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	if (control_attach(sv[0], ro) == NULL) {
		close(sv[1]);
		return 0;
	}
	cl.ev = event_new(base, sv[1], EV_READ | EV_WRITE | EV_PERSIST,
	    client_cb, &cl);
	event_add(cl.ev, NULL);
	fuzz_daemon_run(client_done, &cl);
	event_free(cl.ev);
	close(sv[1]);
	/* A connection the daemon still has (a deferred reply) goes now. */
	fuzz_daemon_run(client_done, &cl);
	return 0;
}
