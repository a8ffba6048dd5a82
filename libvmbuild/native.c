/*
 * native.c - the hypervisor's own save and restore (vmbuild.h,
 * vmb_guest_save_native): the backend's saver or restorer blocks until
 * it is done, reading or writing a descriptor, so it runs on a thread of
 * its own with a pipe to the caller, who moves the bytes between the
 * pipe and its stream (Xen records) and can stop at any point: closing
 * its end of the pipe makes the other side fail, and the backend then
 * takes back what it did (resumes the guest; the caller destroys a
 * domain being restored).
 *
 * A regular file (vmb_native_io.direct) is the backend's own to read or
 * write, from its offset on, as xl hands libxenguest the file: no pipe,
 * no copies, no checksums (the inline stream, vmbuild-stream(5)).  The
 * backend gets a duplicate of the descriptor; a cancel points that
 * duplicate at a pipe's dead end (dup2), so that the backend's next
 * write fails with EPIPE or its next read sees the end, and it takes
 * back what it did as after any failure.  I/O on a regular file never
 * waits for a peer, so that next read or write comes soon.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vmb_internal.h"

/* One read of the pipe into one Xen record at most (a pipe made this big). */
#define NATIVE_CHUNK	VMB_STREAM_MAX_XEN

struct native_run {
	struct vmb_ctx	*ctx;
	uint32_t	domid;
	/*
	 * The thread's end of the pipe, or its duplicate of the file; the
	 * thread closes it (under lock, -1 after) before it says so on
	 * done_fd (-1: none), so that a cancel's dup2 never lands on a
	 * descriptor number that is no longer the thread's.
	 */
	pthread_mutex_t	lock;
	int		fd;
	int		done_fd;
	bool		started;	/* native_direct's thread ran */
	int		cancel_fd;
	uint32_t	suspend_ms;
	struct vmb_native_live *live;	/* a live save's */
	struct vmb_boot	boot;		/* a restore's */
	int		rc;
	char		why[256];
};

/* A run's start, and the caller's io reset (one place for save and restore). */
static void
native_run_init(struct native_run *r, struct vmb_ctx *ctx, uint32_t domid,
    struct vmb_native_io *io)
{
	io->why[0] = '\0';
	io->bytes = 0;
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	r->ctx = ctx;
	r->domid = domid;
	r->done_fd = -1;
	r->cancel_fd = io->cancel_fd;
}

/* The thread's descriptor closed, and the waiter told. */
static void
native_run_end(struct native_run *r)
{
	uint64_t one = 1;

	pthread_mutex_lock(&r->lock);
	close(r->fd);
	r->fd = -1;
	pthread_mutex_unlock(&r->lock);
	/* An eventfd's counter does not fill up: the write cannot fail. */
	if (r->done_fd >= 0)
		(void)!write(r->done_fd, &one, sizeof(one));
}

/*
 * The thread's writes to a pipe whose reader is gone fail with EPIPE
 * rather than raise SIGPIPE (blocked here, it stays pending on the
 * thread and goes with it).
 */
static void
block_sigpipe(sigset_t *old)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s, old);
}

/* The calling thread's SIGPIPE, raised by its own write, taken back. */
static void
unblock_sigpipe(const sigset_t *old)
{
	struct timespec zero = { 0, 0 };
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	while (sigtimedwait(&s, NULL, &zero) == SIGPIPE)
		;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void *
save_thread(void *arg)
{
	struct native_run *r = arg;
	sigset_t old;

	block_sigpipe(&old);
	r->rc = r->ctx->ops->save_native(r->ctx->priv, r->domid, r->fd,
	    r->cancel_fd, r->suspend_ms, r->live, r->why, sizeof(r->why));
	native_run_end(r);	/* the reader sees the end */
	return NULL;
}

static void *
restore_thread(void *arg)
{
	struct native_run *r = arg;
	sigset_t old;

	block_sigpipe(&old);
	r->rc = (vmb_native_restore_populates(r->ctx) ?
	    r->ctx->ops->restore_native : r->ctx->ops->restore_engine)(
	    r->ctx->priv, r->domid, r->fd, &r->boot, r->why, sizeof(r->why));
	native_run_end(r);	/* the writer's next write fails */
	return NULL;
}

bool
vmb_native_stream(struct vmb_ctx *ctx)
{
	return ctx && ctx->ops->save_native && ctx->ops->restore_native &&
	    ctx->ops->resume_native;
}

bool
vmb_native_restore_populates(struct vmb_ctx *ctx)
{
	return !(ctx && ctx->restore_engine && ctx->ops->restore_engine);
}

/* A pipe, its capacity raised so that a read can fill a whole record. */
static int
native_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	(void)fcntl(p[0], F_SETPIPE_SZ, NATIVE_CHUNK);
	return 0;
}

/*
 * Run fn (save_thread, restore_thread) on io->fd, a regular file, and
 * wait for it: io->progress every 200 ms with the bytes it has moved,
 * a cancel (cancel_fd readable, or io->cancelled) seen as often.  0, or
 * -ECANCELED, or a negative errno of our own; the backend's result is
 * r->rc.
 */
static int
native_direct(struct native_run *r, void *(*fn)(void *), bool writing,
    struct vmb_native_io *io)
{
	int dead[2] = { -1, -1 }, rc = 0, dead_end;
	bool cancelled = false;
	off_t at0, at;
	pthread_t t;

	at0 = lseek(io->fd, 0, SEEK_CUR);
	r->fd = fcntl(io->fd, F_DUPFD_CLOEXEC, 0);
	r->done_fd = eventfd(0, EFD_CLOEXEC);
	if (at0 < 0 || r->fd < 0 || r->done_fd < 0 ||
	    pipe2(dead, O_CLOEXEC) < 0) {
		rc = -errno;
		snprintf(io->why, sizeof(io->why), "cannot set up the %s: %s",
		    writing ? "save" : "restore", strerror(-rc));
		if (r->fd >= 0)
			close(r->fd);
		goto out;
	}
	/* A writer's dead end: no reader (EPIPE); a reader's: no writer. */
	close(writing ? dead[0] : dead[1]);
	dead_end = writing ? dead[1] : dead[0];
	if (writing)
		dead[0] = -1;
	else
		dead[1] = -1;
	rc = -pthread_create(&t, NULL, fn, r);
	if (rc < 0) {
		close(r->fd);
		snprintf(io->why, sizeof(io->why), "cannot start the %s "
		    "thread: %s", writing ? "save" : "restore", strerror(-rc));
		goto out;
	}
	r->started = true;
	for (;;) {
		struct pollfd pf[2] = { { r->done_fd, POLLIN, 0 },
		    { io->cancel_fd, POLLIN, 0 } };
		int n = poll(pf, io->cancel_fd >= 0 ? 2 : 1, 200);

		if (n > 0 && (pf[0].revents & POLLIN))
			break;
		if (!cancelled && ((n > 0 && io->cancel_fd >= 0 &&
		    (pf[1].revents & POLLIN)) ||
		    (io->cancelled && io->cancelled(io->user)))) {
			cancelled = true;
			pthread_mutex_lock(&r->lock);
			if (r->fd >= 0)
				(void)dup2(dead_end, r->fd);
			pthread_mutex_unlock(&r->lock);
		}
		at = lseek(io->fd, 0, SEEK_CUR);
		if (!cancelled && io->progress && at >= at0)
			io->progress(io->user, (uint64_t)(at - at0));
	}
	pthread_join(t, NULL);
	at = lseek(io->fd, 0, SEEK_CUR);
	io->bytes = at >= at0 ? (uint64_t)(at - at0) : 0;
	if (cancelled)
		rc = -ECANCELED;
out:
	if (dead[0] >= 0)
		close(dead[0]);
	if (dead[1] >= 0)
		close(dead[1]);
	if (r->done_fd >= 0)
		close(r->done_fd);
	r->done_fd = -1;
	return rc;
}

/*
 * Read what the saver wrote into records until it closes its end: fill
 * buf as far as the pipe has bytes, then one put.  A readable cancel_fd
 * stops it (-ECANCELED).
 */
static int
save_pump(struct vmb_native_io *io, int rfd, uint8_t *buf)
{
	size_t have = 0;
	bool eof = false;

	while (!eof) {
		struct pollfd pf[2] = { { rfd, POLLIN, 0 },
		    { io->cancel_fd, POLLIN, 0 } };
		uint64_t t0 = vmb__now_ns();
		ssize_t n;
		int rc, pr;

		pr = poll(pf, io->cancel_fd >= 0 ? 2 : 1, -1);
		io->wait_ns += vmb__now_ns() - t0;
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (io->cancel_fd >= 0 && (pf[1].revents & POLLIN))
			return -ECANCELED;
		while (have < NATIVE_CHUNK) {
			n = read(rfd, buf + have, NATIVE_CHUNK - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
			if (n < 0)
				return -errno;
			if (n == 0) {
				eof = true;
				break;
			}
			have += (size_t)n;
		}
		if (have == 0 || (!eof && have < NATIVE_CHUNK / 2))
			continue;	/* more to come: fewer, fuller records */
		t0 = vmb__now_ns();
		rc = io->put(io->user, buf, have);
		io->put_ns += vmb__now_ns() - t0;
		if (rc < 0)
			return rc;
		io->bytes += have;
		have = 0;
	}
	return 0;
}

int
vmb_guest_save_native(struct vmb_ctx *ctx, uint32_t domid,
    struct vmb_native_io *io)
{
	struct native_run r;
	pthread_t t;
	uint8_t *buf = NULL;
	int p[2] = { -1, -1 }, rc;

	if (!ctx || !io || (io->direct ? io->fd < 0 : !io->put))
		return -EINVAL;
	if (!vmb_native_stream(ctx))
		return -EOPNOTSUPP;
	native_run_init(&r, ctx, domid, io);
	r.suspend_ms = io->suspend_ms;
	r.live = io->live;
	if (io->direct) {
		uint64_t t0 = vmb__now_ns();

		rc = native_direct(&r, save_thread, true, io);
		io->wait_ns = vmb__now_ns() - t0;
		if (!r.started)
			goto out;	/* nothing was asked of the guest */
		goto done;
	}
	buf = malloc(NATIVE_CHUNK);
	rc = buf == NULL ? -ENOMEM : native_pipe(p);
	if (rc == 0 && fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
		rc = -errno;
	if (rc < 0) {
		snprintf(io->why, sizeof(io->why), "cannot set up the save: "
		    "%s", strerror(-rc));
		goto out;
	}
	r.fd = p[1];
	rc = -pthread_create(&t, NULL, save_thread, &r);
	if (rc < 0) {
		close(p[1]);
		snprintf(io->why, sizeof(io->why), "cannot start the save "
		    "thread: %s", strerror(-rc));
		goto out;
	}
	rc = save_pump(io, p[0], buf);
	/* Stopped early: the saver's writes fail, and it resumes the guest. */
	close(p[0]);
	p[0] = -1;
	pthread_join(t, NULL);
done:
	if (rc == 0 && r.rc < 0)
		rc = r.rc;
	if (r.rc < 0)
		snprintf(io->why, sizeof(io->why), "%s", r.why);
	else if (rc < 0 || io->resume) {
		/* Saved whole, but not kept: the guest runs on. */
		int rr = ctx->ops->resume_native(ctx->priv, domid, r.why,
		    sizeof(r.why));

		if (rr < 0 && rc == 0) {
			rc = rr;
			snprintf(io->why, sizeof(io->why), "saved, but %.200s",
			    r.why);
		}
	}
	if (rc == -ECANCELED && !io->why[0])
		snprintf(io->why, sizeof(io->why), "cancelled");
out:
	if (p[0] >= 0)
		close(p[0]);
	free(buf);
	return rc;
}

int
vmb_guest_resume_native(struct vmb_ctx *ctx, uint32_t domid, char *why,
    size_t why_len)
{
	if (!ctx || !why)
		return -EINVAL;
	if (!vmb_native_stream(ctx))
		return -EOPNOTSUPP;
	return ctx->ops->resume_native(ctx->priv, domid, why, why_len);
}

/* Every byte of buf into the pipe (blocking), or -EPIPE & co. */
static int
pipe_write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
vmb_guest_restore_native(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *guest, struct vmb_native_io *io)
{
	struct native_run r;
	sigset_t old;
	pthread_t t;
	uint8_t *buf = NULL;
	int p[2] = { -1, -1 }, rc, wrc = 0;
	ssize_t n = 0;

	if (!ctx || !io || (io->direct ? io->fd < 0 : !io->get) || !guest)
		return -EINVAL;
	if (!vmb_native_stream(ctx))
		return -EOPNOTSUPP;
	native_run_init(&r, ctx, domid, io);
	r.boot.vcpus = guest->vcpus;
	r.boot.memory_bytes = guest->memory_bytes;
	r.boot.guest = guest;
	if (io->direct) {
		/* The restorer read what it could: its failure names it. */
		rc = native_direct(&r, restore_thread, false, io);
		if (r.started && r.rc < 0 && rc != -ECANCELED) {
			snprintf(io->why, sizeof(io->why), "%s", r.why);
			rc = r.rc;
		}
		if (rc == -ECANCELED && !io->why[0])
			snprintf(io->why, sizeof(io->why), "cancelled");
		return rc;
	}
	buf = malloc(NATIVE_CHUNK);
	rc = buf == NULL ? -ENOMEM : native_pipe(p);
	if (rc < 0) {
		snprintf(io->why, sizeof(io->why), "cannot set up the "
		    "restore: %s", strerror(-rc));
		free(buf);
		return rc;
	}
	r.fd = p[0];
	rc = -pthread_create(&t, NULL, restore_thread, &r);
	if (rc < 0) {
		close(p[0]);
		close(p[1]);
		free(buf);
		snprintf(io->why, sizeof(io->why), "cannot start the restore "
		    "thread: %s", strerror(-rc));
		return rc;
	}
	block_sigpipe(&old);
	while (wrc == 0 && (n = io->get(io->user, buf, NATIVE_CHUNK)) > 0) {
		wrc = pipe_write_all(p[1], buf, (size_t)n);
		io->bytes += (uint64_t)n;
	}
	/* The end (or a failure): the restorer reads EOF after the rest. */
	close(p[1]);
	pthread_join(t, NULL);
	unblock_sigpipe(&old);
	free(buf);
	/*
	 * The stream's failure first (the caller's to name: the restorer
	 * then only saw the end come early), else the restorer's.
	 */
	if (n < 0)
		return (int)n;
	if (r.rc < 0) {
		snprintf(io->why, sizeof(io->why), "%s", r.why);
		return r.rc;
	}
	if (wrc < 0) {
		snprintf(io->why, sizeof(io->why), "the restorer stopped "
		    "reading: %s", strerror(-wrc));
		return wrc;
	}
	return 0;
}
