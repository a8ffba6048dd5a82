/*
 * rpcload.c - closed-loop load on vmbuildd's control socket (JSON-RPC
 * spoken directly, one connection per client thread), on its metrics
 * endpoint, or on the echo server of bench/control/echo.c.
 *
 *   rpcload --socket PATH [--method M] [--params JSON] [--echo]
 *           [--clients N] [--seconds S] [--label L]
 *   rpcload --http HOST:PORT [--gzip] [--clients N] [--seconds S]
 *           [--label L]
 *   rpcload --socket PATH --create-destroy CONFIG [--clients N]
 *           [--seconds S] [--label L]
 *
 * Each client sends one request, waits for its reply, and sends the
 * next, for S seconds.  Replies are checked: a result with the id sent
 * (--echo: the request itself; --any-reply: any line; --http: status
 * 200; --gzip asks for the scrape in gzip, "Accept-Encoding: gzip", as
 * Prometheus does).  A client whose connection the server closes stops
 * and is counted in "lost".  --create-destroy:
 * each client creates a VM from the xl.cfg CONFIG (without a name line:
 * each VM gets its own name) with vm.create and "wait": true, then
 * destroys it with vm.destroy, and again; a request is one such pair,
 * its latency the create's.  Prints one JSON line: requests per second
 * and latency percentiles in microseconds.  Exit 1 on any error reply.
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
	int		id;
	int		fd;
	uint64_t	count;
	uint64_t	errors;
	bool		lost;		/* the server closed its connection */
	double		*lat;		/* seconds, one per request */
	double		*lat2;		/* create-destroy: the destroys */
	size_t		nlat, cap;
	size_t		reply_bytes;
	char		*buf;
	size_t		bufcap, have;
};

static const char *sock_path, *method = "vm.list", *params = "{}";
static const char *http_addr, *label = "";
static char *config_json;		/* --create-destroy, JSON-escaped */
static bool echo_mode, any_reply, gzip_mode;
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

/* Read more into c->buf (grown when full); -1 at the end or an error. */
static int
fill(struct client *c)
{
	ssize_t n;

	if (c->have == c->bufcap) {
		char *nb = realloc(c->buf, c->bufcap * 2);

		if (!nb)
			return -1;
		c->buf = nb;
		c->bufcap *= 2;
	}
	n = read(c->fd, c->buf + c->have, c->bufcap - c->have);
	if (n <= 0)
		return -1;
	c->have += n;
	return 0;
}

/* Read one line into c->buf; its length, or -1. */
static ssize_t
read_line(struct client *c)
{
	char *nl;

	while ((nl = memchr(c->buf, '\n', c->have)) == NULL)
		if (fill(c) < 0)
			return -1;
	return nl - c->buf;
}

/* Drop the first `len` bytes of the buffer. */
static void
consume(struct client *c, size_t len)
{
	memmove(c->buf, c->buf + len, c->have - len);
	c->have -= len;
}

/* Read one HTTP response (headers + Content-Length body); body length. */
static ssize_t
read_http(struct client *c, size_t *ret_total, int *ret_status)
{
	char *end, *cl;
	size_t head, body;

	while ((end = memmem(c->buf, c->have, "\r\n\r\n", 4)) == NULL)
		if (fill(c) < 0)
			return -1;
	head = end + 4 - c->buf;
	*ret_status = atoi(c->buf + 9);
	cl = memmem(c->buf, head, "Content-Length:", 15);
	body = cl != NULL ? strtoul(cl + 15, NULL, 10) : 0;
	while (c->have < head + body)
		if (fill(c) < 0)
			return -1;
	*ret_total = head + body;
	return body;
}

static void
record(struct client *c, double t, double t2)
{
	if (c->nlat == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 4096;
		c->lat = realloc(c->lat, c->cap * sizeof(*c->lat));
		c->lat2 = realloc(c->lat2, c->cap * sizeof(*c->lat2));
		if (!c->lat || !c->lat2) {
			fprintf(stderr, "rpcload: out of memory\n");
			exit(1);
		}
	}
	c->lat[c->nlat] = t;
	c->lat2[c->nlat++] = t2;
	c->count++;
}

/* One JSON-RPC call; 0 when the reply is a result with our id. */
static int
call(struct client *c, uint64_t id, const char *m, const char *p)
{
	char want[64];
	size_t n = strlen(m) + strlen(p) + 96;
	char *req = malloc(n);
	ssize_t len;
	int len_req, rc = -1;

	if (!req)
		return -1;
	len_req = snprintf(req, n, "{\"jsonrpc\":\"2.0\",\"id\":%llu,"
	    "\"method\":\"%s\",\"params\":%s}\n", (unsigned long long)id, m, p);
	if (write(c->fd, req, len_req) != len_req)
		goto out;
	len = read_line(c);
	if (len < 0)
		goto out;
	if (any_reply)
		rc = 0;
	else if (echo_mode)
		rc = (size_t)len + 1 == (size_t)len_req &&
		    memcmp(c->buf, req, (size_t)len) == 0 ? 0 : 1;
	else {
		snprintf(want, sizeof(want), "\"id\":%llu,\"result\"",
		    (unsigned long long)id);
		rc = memmem(c->buf, len, want, strlen(want)) ? 0 : 1;
	}
	if (rc)
		fprintf(stderr, "rpcload: %s: %.*s\n", m, (int)(len < 300 ? len :
		    300), c->buf);
	c->reply_bytes = len + 1;
	consume(c, len + 1);
out:
	free(req);
	return rc;
}

static void *
client_main(void *arg)
{
	struct client *c = arg;
	uint64_t id = 0;

	while (!stop) {
		double t0 = now();
		int rc = call(c, ++id, method, params);

		if (rc < 0)
			break;
		c->errors += rc;
		record(c, now() - t0, 0);
	}
	return NULL;
}

static void *
create_destroy_main(void *arg)
{
	struct client *c = arg;
	size_t cap = strlen(config_json) + 256;
	char *p = malloc(cap), name[64];
	uint64_t id = 0, n = 0;

	while (p && !stop) {
		double t0 = now(), t1;
		int rc;

		snprintf(name, sizeof(name), "sv-%d-%llu", c->id,
		    (unsigned long long)n++);
		snprintf(p, cap, "{\"config\":\"name = \\\"%s\\\"\\n%s\","
		    "\"wait\":true}", name, config_json);
		rc = call(c, ++id, "vm.create", p);
		if (rc < 0)
			break;
		t1 = now();
		if (rc == 0) {
			snprintf(p, cap, "{\"vm\":\"%s\"}", name);
			rc = call(c, ++id, "vm.destroy", p);
			if (rc < 0)
				break;
		}
		c->errors += rc;
		record(c, t1 - t0, now() - t1);
	}
	free(p);
	return NULL;
}

static void *
http_main(void *arg)
{
	struct client *c = arg;
	const char *req = gzip_mode ? "GET /metrics HTTP/1.1\r\nHost: "
	    "localhost\r\nAccept-Encoding: gzip\r\n\r\n" :
	    "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
	ssize_t reqlen = (ssize_t)strlen(req);

	while (!stop) {
		double t0 = now();
		size_t total;
		ssize_t len;
		int status;

		if (write(c->fd, req, reqlen) != reqlen ||
		    (len = read_http(c, &total, &status)) < 0) {
			c->lost = !stop;
			break;
		}
		if (status != 200)
			c->errors++;
		c->reply_bytes = len;
		record(c, now() - t0, 0);
		consume(c, total);
	}
	return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The file's text as the inside of a JSON string. */
static char *
json_escape_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *out = NULL;
	size_t len = 0;
	int ch;

	if (!f)
		return NULL;
	out = malloc(65536 * 6 + 1);
	while (out && (ch = fgetc(f)) != EOF && len < 65536 * 6 - 6) {
		if (ch == '"' || ch == '\\')
			len += sprintf(out + len, "\\%c", ch);
		else if (ch == '\n')
			len += sprintf(out + len, "\\n");
		else if (ch < 0x20)
			len += sprintf(out + len, "\\u%04x", ch);
		else
			out[len++] = (char)ch;
	}
	if (out)
		out[len] = '\0';
	fclose(f);
	return out;
}

static void
usage(void)
{
	fprintf(stderr, "usage: rpcload --socket PATH [--method M] "
	    "[--params JSON] [--echo|--any-reply] [--create-destroy CONFIG]\n"
	    "       rpcload --http HOST:PORT [--gzip]\n"
	    "       [--clients N] [--seconds S] [--label L]\n");
	exit(2);
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
		{ "echo",    no_argument, NULL, 'e' },
		{ "any-reply", no_argument, NULL, 'a' },
		{ "gzip",    no_argument, NULL, 'g' },
		{ "create-destroy", required_argument, NULL, 'C' },
		{ "label",   required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	void *(*fn)(void *) = client_main;
	struct client *cl;
	uint64_t total = 0, errors = 0, lost = 0;
	size_t nlat = 0, k = 0;
	double *all, *all2, t0, el;
	int nclients = 1, o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': sock_path = optarg; break;
		case 'm': method = optarg; break;
		case 'p': params = optarg; break;
		case 'c': nclients = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'H': http_addr = optarg; break;
		case 'e': echo_mode = true; break;
		case 'a': any_reply = true; break;
		case 'g': gzip_mode = true; break;
		case 'l': label = optarg; break;
		case 'C':
			config_json = json_escape_file(optarg);
			if (!config_json) {
				fprintf(stderr, "rpcload: %s: %s\n", optarg,
				    strerror(errno));
				return 2;
			}
			break;
		default:
			usage();
		}
	}
	if ((sock_path == NULL) == (http_addr == NULL) || nclients < 1 ||
	    nclients > 1000 || seconds <= 0 || optind != argc)
		usage();
	if (http_addr)
		fn = http_main;
	else if (config_json)
		fn = create_destroy_main;
	cl = calloc(nclients, sizeof(*cl));
	if (!cl)
		return 1;
	for (int i = 0; i < nclients; i++) {
		cl[i].id = i;
		cl[i].bufcap = 65536;
		cl[i].buf = malloc(cl[i].bufcap);
		cl[i].fd = http_addr ? connect_tcp(http_addr) :
		    connect_unix(sock_path);
		if (cl[i].fd < 0 || !cl[i].buf) {
			fprintf(stderr, "rpcload: connect %s: %s\n",
			    http_addr ? http_addr : sock_path, strerror(errno));
			return 1;
		}
	}
	t0 = now();
	for (int i = 0; i < nclients; i++)
		if (pthread_create(&cl[i].thread, NULL, fn, &cl[i]) != 0) {
			fprintf(stderr, "rpcload: cannot start client %d\n", i);
			return 1;
		}
	usleep((useconds_t)(seconds * 1e6));
	stop = true;
	for (int i = 0; i < nclients; i++) {
		pthread_join(cl[i].thread, NULL);
		total += cl[i].count;
		errors += cl[i].errors;
		lost += cl[i].lost;
		nlat += cl[i].nlat;
	}
	el = now() - t0;
	all = malloc((nlat + 1) * sizeof(*all));
	all2 = malloc((nlat + 1) * sizeof(*all2));
	if (!all || !all2)
		return 1;
	for (int i = 0; i < nclients; i++) {
		memcpy(all + k, cl[i].lat, cl[i].nlat * sizeof(*all));
		memcpy(all2 + k, cl[i].lat2, cl[i].nlat * sizeof(*all2));
		k += cl[i].nlat;
		close(cl[i].fd);
		free(cl[i].lat);
		free(cl[i].lat2);
		free(cl[i].buf);
	}
	qsort(all, nlat, sizeof(*all), cmp_double);
	qsort(all2, nlat, sizeof(*all2), cmp_double);
	printf("{\"kind\":\"rpc\",\"label\":\"%s\",\"method\":\"%s\","
	    "\"clients\":%d,\"requests\":%llu,\"errors\":%llu,\"seconds\":%.3f,"
	    "\"rps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
	    "\"reply_bytes\":%zu,\"lost\":%llu", label,
	    http_addr ? (gzip_mode ? "GET /metrics gzip" : "GET /metrics") :
	    config_json ? "create+destroy" : echo_mode ? "echo" :
	    any_reply ? "blob" : method,
	    nclients, (unsigned long long)total, (unsigned long long)errors,
	    el, total / el, nlat ? all[nlat / 2] * 1e6 : 0,
	    nlat ? all[nlat * 99 / 100] * 1e6 : 0, cl[0].reply_bytes,
	    (unsigned long long)lost);
	if (config_json)
		printf(",\"destroy_p50_us\":%.1f,\"destroy_p99_us\":%.1f",
		    nlat ? all2[nlat / 2] * 1e6 : 0,
		    nlat ? all2[nlat * 99 / 100] * 1e6 : 0);
	printf("}\n");
	free(all);
	free(all2);
	free(cl);
	free(config_json);
	return errors ? 1 : 0;
}
