/*
 * echo.c - the floors of benchmark 6: a minimal libevent server on a Unix
 * socket that sends every line back as it came.  One event loop, as
 * vmbuildd's, line framing, no parsing: what a request costs when the
 * server does nothing with it.  With a reply size, it answers every line
 * with that many bytes instead (a line of spaces), from one buffer it
 * never copies: what a reply as large as vm.list's costs the socket.
 *
 *   bench-echo PATH [REPLY_BYTES]     serve until SIGTERM or SIGINT
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

static char *blob;
static size_t blob_len;

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer *out = bufferevent_get_output(bev);
	struct evbuffer_ptr eol;

	(void)arg;
	/* Whole lines, newline included, moved without a copy to us. */
	while ((eol = evbuffer_search_eol(in, NULL, NULL,
	    EVBUFFER_EOL_LF)).pos >= 0) {
		if (!blob) {
			evbuffer_remove_buffer(in, out, (size_t)eol.pos + 1);
			continue;
		}
		evbuffer_drain(in, (size_t)eol.pos + 1);
		evbuffer_add_reference(out, blob, blob_len, NULL, NULL);
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)what, (void)arg;
	bufferevent_free(bev);
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct bufferevent *bev = bufferevent_socket_new(
	    evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);

	(void)sa, (void)len, (void)arg;
	if (!bev) {
		close(fd);
		return;
	}
	bufferevent_setcb(bev, on_read, NULL, on_event, NULL);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig, (void)what;
	event_base_loopexit(arg, NULL);
}

int
main(int argc, char **argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct evconnlistener *l;
	struct event_base *base;
	struct event *sigterm, *sigint;

	if (argc < 2 || argc > 3 || strlen(argv[1]) >= sizeof(sun.sun_path) ||
	    (argc == 3 && (blob_len = strtoul(argv[2], NULL, 10)) < 1)) {
		fprintf(stderr, "usage: bench-echo PATH [REPLY_BYTES]\n");
		return 2;
	}
	if (blob_len) {
		blob = malloc(blob_len);
		if (!blob)
			return 1;
		memset(blob, ' ', blob_len - 1);
		blob[blob_len - 1] = '\n';
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", argv[1]);
	unlink(argv[1]);
	base = event_base_new();
	if (!base)
		return 1;
	l = evconnlistener_new_bind(base, on_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 1024,
	    (struct sockaddr *)&sun, sizeof(sun));
	if (!l) {
		fprintf(stderr, "bench-echo: %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	sigterm = evsignal_new(base, SIGTERM, on_signal, base);
	sigint = evsignal_new(base, SIGINT, on_signal, base);
	event_add(sigterm, NULL);
	event_add(sigint, NULL);
	event_base_dispatch(base);
	event_free(sigterm);
	event_free(sigint);
	evconnlistener_free(l);
	event_base_free(base);
	unlink(argv[1]);
	free(blob);
	return 0;
}
