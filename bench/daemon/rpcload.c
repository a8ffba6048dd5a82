/*
 * rpcload.c - closed-loop load on vmbuildd's control socket.
 *
 * N client threads, each on its own connection, send one request, wait
 * for its reply, and send the next, for a fixed time.  Prints requests
 * per second and latency percentiles.  Replies are checked to be
 * results (not errors) with the id that was sent.
 *
 *   vmbd-rpcload --socket PATH [--method M] [--params JSON]
 *                [--clients N] [--seconds S]
 *   vmbd-rpcload --http HOST:PORT [--clients N] [--seconds S]
 *
 * With --http, each request is "GET /metrics" on a kept-alive HTTP/1.1
 * connection instead (the cost of a Prometheus scrape).
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

struct client {
	pthread_t	thread;
	int		fd;
	uint64_t	count;
	uint64_t	errors;
	double		*lat;		/* seconds, one per request */
	size_t		nlat, cap;
	size_t		reply_bytes;
};

static const char *sock_path, *method = "vm.list", *params = "{}";
static const char *http_addr;
static double seconds = 3;
static volatile bool stop;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
connect_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
connect_tcp(const char *hostport)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(hostport, ':');
	int fd;

	if (colon == NULL || colon - hostport >= (int)sizeof(host))
		return -1;
	memcpy(host, hostport, colon - hostport);
	host[colon - hostport] = '\0';
	sin.sin_port = htons(atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Read one line into buf (growing it); returns its length or -1. */
static ssize_t
read_line(int fd, char **buf, size_t *cap, size_t *have)
{
	for (;;) {
		char *nl = memchr(*buf, '\n', *have);
		ssize_t n;

		if (nl != NULL)
			return nl - *buf;
		if (*have == *cap) {
			*cap *= 2;
			*buf = realloc(*buf, *cap);
			if (*buf == NULL)
				return -1;
		}
		n = read(fd, *buf + *have, *cap - *have);
		if (n <= 0)
			return -1;
		*have += n;
	}
}

/* Read one HTTP response (headers + Content-Length body); body length. */
static ssize_t
read_http(int fd, char **buf, size_t *cap, size_t *have, size_t *ret_total,
    int *ret_status)
{
	char *end = NULL, *cl;
	size_t head, body;

	for (;;) {
		ssize_t n;

		end = memmem(*buf, *have, "\r\n\r\n", 4);
		if (end != NULL)
			break;
		if (*have == *cap) {
			*cap *= 2;
			*buf = realloc(*buf, *cap);
		}
		n = read(fd, *buf + *have, *cap - *have);
		if (n <= 0)
			return -1;
		*have += n;
	}
	head = end + 4 - *buf;
	*ret_status = atoi(*buf + 9);
	cl = memmem(*buf, head, "Content-Length:", 15);
	body = cl != NULL ? strtoul(cl + 15, NULL, 10) : 0;
	while (*have < head + body) {
		ssize_t n;

		if (*have == *cap) {
			*cap *= 2;
			*buf = realloc(*buf, *cap);
		}
		n = read(fd, *buf + *have, *cap - *have);
		if (n <= 0)
			return -1;
		*have += n;
	}
	*ret_total = head + body;
	return body;
}

static void *
http_main(void *arg)
{
	struct client *c = arg;
	size_t cap = 65536, have = 0, total;
	char *buf = malloc(cap);
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: localhost"
	    "\r\n\r\n";

	while (!stop) {
		double t0 = now();
		ssize_t len;
		int status;

		if (write(c->fd, req, sizeof(req) - 1) !=
		    (ssize_t)sizeof(req) - 1)
			break;
		len = read_http(c->fd, &buf, &cap, &have, &total, &status);
		if (len < 0)
			break;
		if (status != 200)
			c->errors++;
		c->reply_bytes = len;
		if (c->nlat == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 4096;
			c->lat = realloc(c->lat, c->cap * sizeof(*c->lat));
		}
		c->lat[c->nlat++] = now() - t0;
		c->count++;
		memmove(buf, buf + total, have - total);
		have -= total;
	}
	free(buf);
	return NULL;
}

static void *
client_main(void *arg)
{
	struct client *c = arg;
	size_t cap = 65536, have = 0;
	char *buf = malloc(cap), req[4096], want[64];
	uint64_t id = 0;

	while (!stop) {
		int n = snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\","
		    "\"id\":%llu,\"method\":\"%s\",\"params\":%s}\n",
		    (unsigned long long)++id, method, params);
		double t0 = now();
		ssize_t len;

		if (write(c->fd, req, n) != n)
			break;
		len = read_line(c->fd, &buf, &cap, &have);
		if (len < 0)
			break;
		snprintf(want, sizeof(want), "\"id\":%llu,\"result\"",
		    (unsigned long long)id);
		if (memmem(buf, len, want, strlen(want)) == NULL)
			c->errors++;
		c->reply_bytes = len + 1;
		if (c->nlat == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 4096;
			c->lat = realloc(c->lat, c->cap * sizeof(*c->lat));
		}
		c->lat[c->nlat++] = now() - t0;
		c->count++;
		memmove(buf, buf + len + 1, have - len - 1);
		have -= len + 1;
	}
	free(buf);
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket",  required_argument, NULL, 's' },
		{ "method",  required_argument, NULL, 'm' },
		{ "params",  required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 't' },
		{ "http",    required_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 }
	};
	struct client *cl;
	uint64_t total = 0, errors = 0;
	size_t nlat = 0, k = 0;
	double *all, t0, el;
	int nclients = 1, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': sock_path = optarg; break;
		case 'm': method = optarg; break;
		case 'p': params = optarg; break;
		case 'c': nclients = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'H': http_addr = optarg; break;
		default:
			fprintf(stderr, "usage: vmbd-rpcload --socket PATH "
			    "[--method M] [--params JSON] [--clients N] "
			    "[--seconds S]\n");
			return 2;
		}
	}
	if ((sock_path == NULL && http_addr == NULL) || nclients < 1 ||
	    seconds <= 0) {
		fprintf(stderr, "vmbd-rpcload: --socket or --http is "
		    "required\n");
		return 2;
	}
	cl = calloc(nclients, sizeof(*cl));
	for (int i = 0; i < nclients; i++) {
		cl[i].fd = http_addr ? connect_tcp(http_addr) :
		    connect_unix(sock_path);
		if (cl[i].fd < 0) {
			fprintf(stderr, "vmbd-rpcload: connect %s: %s\n",
			    http_addr ? http_addr : sock_path, strerror(errno));
			return 1;
		}
	}
	t0 = now();
	for (int i = 0; i < nclients; i++)
		pthread_create(&cl[i].thread, NULL,
		    http_addr ? http_main : client_main, &cl[i]);
	usleep((useconds_t)(seconds * 1e6));
	stop = true;
	for (int i = 0; i < nclients; i++) {
		pthread_join(cl[i].thread, NULL);
		total += cl[i].count;
		errors += cl[i].errors;
		nlat += cl[i].nlat;
	}
	el = now() - t0;
	all = malloc((nlat + 1) * sizeof(*all));
	for (int i = 0; i < nclients; i++) {
		memcpy(all + k, cl[i].lat, cl[i].nlat * sizeof(*all));
		k += cl[i].nlat;
		close(cl[i].fd);
		free(cl[i].lat);
	}
	qsort(all, nlat, sizeof(*all), cmp_double);
	printf("method=%s clients=%d requests=%llu errors=%llu seconds=%.2f "
	    "rps=%.0f p50_us=%.0f p99_us=%.0f reply_bytes=%zu\n",
	    http_addr ? "GET /metrics" : method,
	    nclients, (unsigned long long)total, (unsigned long long)errors,
	    el, total / el, nlat ? all[nlat / 2] * 1e6 : 0,
	    nlat ? all[nlat * 99 / 100] * 1e6 : 0, cl[0].reply_bytes);
	free(all);
	free(cl);
	return errors ? 1 : 0;
}
