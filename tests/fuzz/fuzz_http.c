/*
 * fuzz_http.c - what an HTTP client sends to the metrics endpoint
 * (metrics.c on libevent's evhttp, with the connection limit and the
 * sweep of closed connections): each input is written on a fresh TCP
 * connection to it, then the writing side is shut down, and the loop
 * runs until the daemon closes the connection.  Only the daemon's code
 * is instrumented for coverage; evhttp's parser is Debian's libevent.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon_stub.h"
#include "fuzz.h"
#include "metrics.h"

static int port;

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
	if (metrics_init(fuzz_daemon_init(), addr, 8, 10) < 0)
		abort();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	fuzz_client_run(fd, data, len);
	return 0;
}
