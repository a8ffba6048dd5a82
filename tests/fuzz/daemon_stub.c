/*
 * daemon_stub.c - a daemon without main() for the fuzz targets (see
 * daemon_stub.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "build.h"
#include "control.h"
#include "daemon_stub.h"
#include "events.h"
#include "lifecycle.h"
#include "methods.h"
#include "proto.h"
#include "reap.h"
#include "reconcile.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmb_internal.h"
#include "vmbuildd.h"
#include "worker.h"

struct vmbuildd vmbd;

/* A hypervisor that is not there. */
static int
null_host_info(void *priv, struct vmb_host **ret)
{
	(void)priv, (void)ret;
	return -ENODEV;
}

static int
null_scrub(void *priv, struct vmb_scrub *ret)
{
	(void)priv, (void)ret;
	return -ENODEV;
}

static int
null_counters(void *priv, struct vmb_counters *ret)
{
	(void)priv, (void)ret;
	return -ENODEV;
}

static int
null_create(void *priv, const struct vmb_dom_config *cfg, uint32_t *ret)
{
	(void)priv, (void)cfg, (void)ret;
	return -ENODEV;
}

static int
null_domid(void *priv, uint32_t domid)
{
	(void)priv, (void)domid;
	return -ENODEV;
}

static int
null_list(void *priv, struct vmb_domain **ret, size_t *ret_nr)
{
	(void)priv;
	*ret = NULL;
	*ret_nr = 0;
	return 0;
}

static int
null_claim(void *priv, uint32_t domid, uint64_t pages)
{
	(void)priv, (void)domid, (void)pages;
	return -ENODEV;
}

static const struct vmb_backend_ops null_ops = {
	.name = "null",
	.host_info = null_host_info,
	.scrub = null_scrub,
	.counters = null_counters,
	.domain_create = null_create,
	.domain_destroy = null_domid,
	.domain_pause = null_domid,
	.domain_unpause = null_domid,
	.domain_list = null_list,
	.claim = null_claim,
};

struct event_base *
fuzz_daemon_init(void)
{
	static struct control_opts copts = {
		.max_request = VMBUILD_MAX_REQUEST,
		.max_connections = 64,
		.max_ro_connections = 64,
		.max_uid_connections = 64,
		.request_timeout = 30,
		.idle_timeout = 30,
		.max_output = VMBUILD_MAX_OUTPUT,
	};
	char dir[] = "/tmp/vmbd-fuzz.XXXXXX";
	struct vmb_ctx *ctx;

	if (vmbd.base != NULL)
		return vmbd.base;
	/* As main.c: a client gone mid-reply must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	ctx = calloc(1, sizeof(*ctx));

	if (ctx == NULL || vmb__tpool_new(&ctx->pool) < 0 ||
	    mkdtemp(dir) == NULL || state_init(dir) < 0)
		abort();
	pthread_mutex_init(&ctx->log_lock, NULL);
	ctx->ops = &null_ops;
	vmbd.ctx = ctx;
	vmbd.hypervisor = "null";
	vmbd.state_dir = "/nonexistent";
	vmbd.max_tasks = 4;
	vmbd.max_connections = 64;
	vmbd.max_request = VMBUILD_MAX_REQUEST;
	vmbd.request_timeout = 30;
	vmbd.started_at = now_real();
	build_init(&(struct build_config){ .ctx = ctx, .max_tasks = 4,
	    .restarted = lifecycle_restarted });
	vmbd.base = event_base_new();
	rpc_set_methods(methods_find);
	/* The registry's subscribers, as main.c has them. */
	if (vm_hook_add(reap_vm_hook, NULL) < 0 ||
	    vm_hook_add(lifecycle_vm_hook, NULL) < 0 ||
	    vm_hook_add(events_vm_hook, NULL) < 0)
		abort();
	if (vmbd.base == NULL || worker_init(vmbd.base, 1) < 0 ||
	    vm_reconcile() < 0 || control_listen(&copts) < 0 ||
	    task_init(vmbd.base) < 0 || events_init(vmbd.base) < 0 ||
	    vm_init(vmbd.base) < 0 || control_start(vmbd.base) < 0)
		abort();
	reap_start_pending();
	return vmbd.base;
}

void
fuzz_daemon_run(int (*done)(void *arg), void *arg)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		event_base_loop(vmbd.base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (done(arg) && worker_pending() == 0)
			return;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 1)
			return;
		event_base_loop(vmbd.base, EVLOOP_ONCE);
	}
}

/*
 * A client on the loop: writes its bytes to fd, shuts its side down and
 * reads until the daemon closes the connection.
 */
struct fuzz_client {
	const uint8_t	*data;
	size_t		len, off;
	int		eof;
	struct event	*ev;
};

static void
fuzz_client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fuzz_client *cl = arg;
	char buf[65536];

	if ((what & EV_WRITE) && cl->off < cl->len) {
		ssize_t n = send(fd, cl->data + cl->off, cl->len - cl->off,
		    MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			cl->off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			cl->off = cl->len;
	}
	if ((what & EV_WRITE) && cl->off >= cl->len) {
		shutdown(fd, SHUT_WR);
		event_del(cl->ev);
		event_assign(cl->ev, vmbd.base, fd, EV_READ | EV_PERSIST,
		    fuzz_client_cb, cl);
		event_add(cl->ev, NULL);
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
fuzz_client_done(void *arg)
{
	return ((struct fuzz_client *)arg)->eof;
}

void
fuzz_client_run(int fd, const uint8_t *data, size_t len)
{
	struct fuzz_client cl = { .data = data, .len = len };

	fcntl(fd, F_SETFL, O_NONBLOCK);
	cl.ev = event_new(vmbd.base, fd, EV_READ | EV_WRITE | EV_PERSIST,
	    fuzz_client_cb, &cl);
	event_add(cl.ev, NULL);
	fuzz_daemon_run(fuzz_client_done, &cl);
	event_free(cl.ev);
	close(fd);
	/* What the daemon still does for the connection (a deferred reply). */
	fuzz_daemon_run(fuzz_client_done, &cl);
}
