/*
 * fuzz_http.c - what an HTTP client sends to the metrics endpoint
 * (metrics.c on libevent's evhttp, with the connection limit and the
 * sweep of closed connections): each input is written on a fresh TCP
 * connection to it, then the writing side is shut down, and the loop
 * runs until the daemon closes the connection.  Only the daemon's code
 * is instrumented for coverage; evhttp's parser is Debian's libevent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon_stub.h"
#include "fuzz.h"
#include "metrics.h"

static int port;

struct client {
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

	if ((what & EV_WRITE) && cl->off < cl->len) {
		ssize_t n = send(fd, cl->data + cl->off, cl->len - cl->off,
		    MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			cl->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			cl->off = cl->len;
		if (cl->off >= cl->len) {
			shutdown(fd, SHUT_WR);
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
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	char addr[64];
	int s;

	(void)argc, (void)argv;
	/* A free port: bind 0, read it back, let it go. */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(s, (struct sockaddr *)&sa, &sl) < 0)
		abort();
	port = ntohs(sa.sin_port);
	close(s);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (metrics_init(fuzz_daemon_init(), addr, 8) < 0)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct client cl = { .data = data, .len = len };
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (len == 0)
		shutdown(fd, SHUT_WR);
	cl.ev = event_new(fuzz_daemon_init(), fd, (len ? EV_WRITE : 0) |
	    EV_READ | EV_PERSIST, client_cb, &cl);
	event_add(cl.ev, NULL);
	fuzz_daemon_run(client_done, &cl);
	event_free(cl.ev);
	close(fd);
	return 0;
}
