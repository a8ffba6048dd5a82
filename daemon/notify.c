/*
 * notify.c - $NOTIFY_SOCKET without blocking (see notify.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "notify.h"

/* STATUS= messages: at most one per this many ms (see notify_status). */
#define NOTIFY_STATUS_MS	250

static struct {
	int		fd;
	struct sockaddr_un addr;
	socklen_t	addrlen;
	/* notify_status(): what systemd has, and what it is to get. */
	char		sent[512];
	char		pending[512];
	bool		have_pending;
	uint64_t	sent_ms;	/* monotonic, of the last STATUS= */
	struct event	*flush;		/* sends `pending` when it is time */
} N = { .fd = -1 };

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
notify_init(void)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t len;

	if (path == NULL || path[0] == '\0')
		return;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') ||
	    len >= sizeof(N.addr.sun_path)) {
		log_warnx("NOTIFY_SOCKET=%s: not a usable socket path, ignoring",
		    path);
		return;
	}
	N.addr.sun_family = AF_UNIX;
	memcpy(N.addr.sun_path, path, len);
	/* "@name" is Linux's abstract namespace: a leading NUL byte. */
	if (path[0] == '@')
		N.addr.sun_path[0] = '\0';
	N.addrlen = offsetof(struct sockaddr_un, sun_path) + len;
	N.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (N.fd < 0)
		log_warn("notify socket");
	/* Children (none today) must not talk to systemd in our name. */
	unsetenv("NOTIFY_SOCKET");
}

/* Send `buf`: 0, or -EAGAIN when the receiver's queue is full. */
static int
notify_send(bool wait, const char *buf)
{
	size_t n = strlen(buf);

	for (int tries = 0; tries < 10; tries++) {
		struct pollfd pfd = { .fd = N.fd, .events = POLLOUT };

		if (sendto(N.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT,
		    (struct sockaddr *)&N.addr, N.addrlen) >= 0)
			return 0;
		if (errno != EAGAIN || !wait)
			break;
		(void)poll(&pfd, 1, 100);
	}
	log_debug("notify \"%.40s\" dropped: %s", buf, strerror(errno));
	/* Any other error: nobody listens there; nothing to try again. */
	return errno == EAGAIN ? -EAGAIN : 0;
}

void
notify(bool wait, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (N.fd < 0)
		return;
	va_start(ap, fmt);
	/* Truncated if need be: vsnprintf always terminates. */
	if (vsnprintf(buf, sizeof(buf), fmt, ap) >= 0)
		(void)notify_send(wait, buf);
	va_end(ap);
}

/* Send the pending STATUS=, if it says something new; 0 or -EAGAIN. */
static int
status_flush(void)
{
	if (!N.have_pending)
		return 0;
	if (strcmp(N.pending, N.sent) != 0 &&
	    notify_send(false, N.pending) < 0)
		return -EAGAIN;
	memcpy(N.sent, N.pending, sizeof(N.sent));
	N.have_pending = false;
	N.sent_ms = mono_ms();
	return 0;
}

static void
status_arm(uint64_t ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	if (N.flush != NULL && !evtimer_pending(N.flush, NULL))
		evtimer_add(N.flush, &tv);
}

static void
status_flush_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	/* A full queue (systemd busy): the latest is tried again later. */
	if (status_flush() < 0)
		status_arm(NOTIFY_STATUS_MS);
}

void
notify_status_start(struct event_base *base)
{
	if (N.fd >= 0 && N.flush == NULL)
		N.flush = evtimer_new(base, status_flush_cb, NULL);
}

void
notify_status(const char *fmt, ...)
{
	uint64_t now, since;
	va_list ap;

	if (N.fd < 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(N.pending, sizeof(N.pending), fmt, ap);
	va_end(ap);
	N.have_pending = true;
	if (!strcmp(N.pending, N.sent)) {
		/* Back to what systemd has: nothing to send, now or later. */
		N.have_pending = false;
		return;
	}
	now = mono_ms();
	since = now - N.sent_ms;
	if (N.flush == NULL || (since >= NOTIFY_STATUS_MS &&
	    !evtimer_pending(N.flush, NULL))) {
		if (status_flush() == 0)
			return;
		since = 0;
	}
	/* Too soon after the last one: the timer sends the latest. */
	status_arm(since < NOTIFY_STATUS_MS ? NOTIFY_STATUS_MS - since : 0);
}

void
notify_close(void)
{
	if (N.fd >= 0)
		(void)status_flush();	/* the last word, if it was held */
	if (N.flush != NULL)
		event_free(N.flush);
	N.flush = NULL;
	if (N.fd >= 0)
		close(N.fd);
	N.fd = -1;
}
