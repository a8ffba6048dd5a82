/*
 * notify.c - $NOTIFY_SOCKET without blocking (see notify.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

static struct {
	int		fd;
	struct sockaddr_un addr;
	socklen_t	addrlen;
} N = { .fd = -1 };

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

void
notify(bool wait, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (N.fd < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	for (int tries = 0; tries < 10; tries++) {
		struct pollfd pfd = { .fd = N.fd, .events = POLLOUT };

		if (sendto(N.fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT,
		    (struct sockaddr *)&N.addr, N.addrlen) >= 0)
			return;
		if (errno != EAGAIN || !wait)
			break;
		(void)poll(&pfd, 1, 100);
	}
	log_debug("notify \"%.40s\" dropped: %s", buf, strerror(errno));
}

void
notify_close(void)
{
	if (N.fd >= 0)
		close(N.fd);
	N.fd = -1;
}
