/*
 * migrate.c - vm.migrate_send, a migration's sending end (migrate.h).
 *
 * The stream (vmbuild-stream(5)) goes to `send`, the receiver's answers
 * come back on `recv`: vmctl migrate runs `ssh HOST vmctl
 * migrate-receive` and passes its stdin and stdout here; the receiving
 * vmctl passes them on to its daemon's vm.restore (incoming).
 *
 *   sender                          receiver
 *   header, guest record   ---->    placement, claim, populate
 *                          <----    READY (or FAILED: no room...)
 *   memory (live: rounds)  ---->    written into the new domain
 *   pause, last memory, end ---->   recorded, unpaused
 *                          <----    DONE
 *   domain destroyed, record removed
 *
 * The receiver decides: with the whole stream (its end record) it
 * keeps the guest, without it destroys what it built.  Until the end
 * record is sent, any failure (a FAILED answer, the connection gone, a
 * cancel) unpauses the guest here.  Once it is sent, a FAILED answer
 * still does; but a connection lost before DONE or FAILED came leaves
 * the outcome unknown here: the guest stays paused (it may run there
 * now) and the task fails with E_MIGRATE_DOUBT, which vmctl migrate
 * resolves by asking the receiver (vmctl migrate-receive --query), then
 * destroying the guest here or unpausing it.
 *
 * A live migration enables log-dirty, sends all memory while the guest
 * runs (round 1), then the pages written since, round after round,
 * until a round leaves at most `dirty_pages` dirty or `max_rounds` were
 * made; then it pauses the guest and sends the last dirty pages.  The
 * downtime is the time from that pause to DONE.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "control.h"
#include "events.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "migrate.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "save.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define CHUNK_PAGES	VMB_STREAM_MAX_PAGES
#define WINDOW_BITS	VMB_DIRTY_MAX_BITS
#define DEF_ROUNDS	10
#define MAX_ROUNDS	100
#define DEF_DIRTY	256
#define QUERY_MAX	2048	/* params.target.command, bytes */

struct mig_job {
	struct job	job;
	struct task	*task;
	struct call	*call;		/* waiting client, or NULL */
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	uint32_t	domid;
	uint64_t	memory_bytes;
	char		*guest_text;	/* the guest record */
	int		send_fd, recv_fd;
	bool		live;
	uint32_t	max_rounds;
	uint64_t	dirty_pages;
	int		cancel_fd;	/* eventfd: task.cancel */
	atomic_bool	cancel;
	/* The thread's. */
	struct vmb_stream_in in;	/* the answers */
	bool		in_open;
	uint64_t	*bits;		/* a window of the dirty log */
	struct state_record rec;	/* its record, "migrating" set */
	/* Results, written by the thread. */
	int		rc;
	char		why[400];
	const char	*stage;		/* where it failed */
	bool		memory;		/* the bytes travelled */
	bool		native;		/* in the hypervisor's stream (Xen) */
	bool		suspended;	/* by the native save, not resumed */
	struct vmb_stream_out *out;	/* a native migration's stream */
	bool		committed;	/* DONE came: the guest is there */
	bool		sent_end;	/* the receiver may have it all */
	bool		doubt;		/* no answer after the end: unknown */
	uint32_t	rounds;
	uint64_t	bytes, pages;
	uint64_t	native_pages;	/* a live native one's, sent running */
	double		t_start, t_ready, t_pause, t_done;
};

static void
mig_cancel(void *arg)
{
	struct mig_job *mj = arg;
	uint64_t one = 1;

	atomic_store(&mj->cancel, true);
	(void)!write(mj->cancel_fd, &one, sizeof(one));
}

static int __attribute__((format(printf, 3, 4)))
mig_fail(struct mig_job *mj, int rc, const char *fmt, ...)
{
	va_list ap;

	if (mj->why[0])
		return rc;	/* the first reason stands */
	va_start(ap, fmt);
	vsnprintf(mj->why, sizeof(mj->why), fmt, ap);
	va_end(ap);
	return rc;
}

/* The receiver's answers: waited for, a cancel seen. */
static ssize_t
mig_read(void *user, void *buf, size_t len)
{
	struct mig_job *mj = user;

	for (;;) {
		struct pollfd pf[2] = { { mj->recv_fd, POLLIN, 0 },
		    { mj->cancel_fd, POLLIN, 0 } };
		ssize_t n;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (pf[1].revents & POLLIN)
			return -ECANCELED;
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(mj->recv_fd, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

/* The receiver's next answer, which must be `want`: 0, or why not. */
static int
mig_wait(struct mig_job *mj, uint32_t want, const char *what)
{
	struct vmb_stream_rec r;
	int rc = 0;

	if (!mj->in_open) {
		rc = vmb_stream_open(&mj->in, mig_read, mj);
		mj->in_open = rc == 0;
		if (rc == 0 && !(mj->in.flags & VMB_STREAM_F_REPLY))
			rc = -EPROTO;
	}
	while (rc == 0) {
		rc = vmb_stream_next(&mj->in, &r);
		if (rc == 0)
			rc = -ECONNRESET;	/* nothing after the end */
		else if (rc > 0 && r.type != VMB_REC_STATUS &&
		    r.type != VMB_REC_END)
			rc = 0;		/* an optional record: skipped */
	}
	if (rc == -ECANCELED || atomic_load(&mj->cancel))
		return mig_fail(mj, -ECANCELED, "cancelled");
	if (rc > 0 && r.type == VMB_REC_STATUS &&
	    r.verdict == VMB_STATUS_FAILED)
		return mig_fail(mj, r.err ? -(int)r.err : -EIO, "the receiver "
		    "failed: %s", r.text[0] ? r.text : "(no reason given)");
	if (rc > 0 && r.type == VMB_REC_STATUS && r.verdict == want)
		return 0;
	if (rc > 0)
		return mig_fail(mj, -EPROTO, "the receiver answered %s where "
		    "%s was due", r.type == VMB_REC_END ? "nothing" :
		    r.verdict == VMB_STATUS_READY ? "ready" : "done", what);
	return mig_fail(mj, rc == 0 || rc == -EBADMSG ? -ECONNRESET : rc,
	    "the connection to the receiver ended before it said %s (%s)",
	    what, mj->in.why[0] ? mj->in.why : strerror(-rc));
}

static void
mig_progress(struct mig_job *mj, const struct vmb_stream_out *o)
{
	task_transfer(mj->task, mj->domid, o->offset, mj->memory_bytes,
	    mj->rounds, o->pages);
}

/* Write errors: a cancel, or the receiver gone. */
static int
mig_sent(struct mig_job *mj, int rc)
{
	if (rc == -ECANCELED || atomic_load(&mj->cancel))
		return mig_fail(mj, -ECANCELED, "cancelled");
	if (rc < 0)
		return mig_fail(mj, rc, "cannot send to the receiver: %s",
		    strerror(-rc));
	return 0;
}

/* Round 1 (or the only one): all of the guest's RAM. */
static int
mig_send_all(struct mig_job *mj, struct vmb_stream_out *o, uint8_t *buf)
{
	uint64_t start[2], end[2];
	int nr, rc = 0;

	nr = vmb_guest_ram(mj->memory_bytes, start, end);
	for (int r = 0; rc == 0 && mj->memory && r < nr; r++) {
		for (uint64_t a = start[r]; rc == 0 && a < end[r];
		    a += (uint64_t)CHUNK_PAGES * VMB_STREAM_PAGE) {
			uint64_t left = (end[r] - a) / VMB_STREAM_PAGE;
			uint32_t n = left < CHUNK_PAGES ? (uint32_t)left :
			    CHUNK_PAGES;

			if (atomic_load(&mj->cancel))
				return mig_fail(mj, -ECANCELED, "cancelled");
			rc = mig_sent(mj, stream_put_pages(o, mj->domid, buf,
			    a / VMB_STREAM_PAGE, n, mj->why, sizeof(mj->why)));
			mig_progress(mj, o);
		}
	}
	return rc;
}

/* Pages dirty now, the log left as it is. */
static int
mig_dirty_count(struct mig_job *mj, uint64_t *ret)
{
	uint64_t end = WINDOW_BITS, n;
	int rc = 0;

	*ret = 0;
	for (uint64_t g = 0; rc == 0 && g < end; g += WINDOW_BITS) {
		rc = vmb_guest_dirty_log(vmbd.ctx, mj->domid, VMB_DIRTY_PEEK,
		    g, WINDOW_BITS, mj->bits, &n, &end);
		*ret += rc == 0 ? n : 0;
	}
	if (rc < 0)
		return mig_fail(mj, rc, "cannot read the dirty log of domain "
		    "%u: %s", mj->domid, strerror(-rc));
	return 0;
}

/* The pages dirty now, taken from the log and sent in runs. */
static int
mig_send_dirty(struct mig_job *mj, struct vmb_stream_out *o, uint8_t *buf)
{
	uint64_t end = WINDOW_BITS, n;
	int rc = 0;

	for (uint64_t g = 0; rc == 0 && g < end; g += WINDOW_BITS) {
		rc = vmb_guest_dirty_log(vmbd.ctx, mj->domid, VMB_DIRTY_CLEAN,
		    g, WINDOW_BITS, mj->bits, &n, &end);
		if (rc < 0)
			return mig_fail(mj, rc, "cannot read the dirty log of "
			    "domain %u: %s", mj->domid, strerror(-rc));
		for (uint64_t i = 0; rc == 0 && n > 0 && i < WINDOW_BITS;) {
			uint32_t run = 0;

			while (i + run < WINDOW_BITS && run < CHUNK_PAGES &&
			    (mj->bits[(i + run) / 64] >> ((i + run) % 64) & 1))
				run++;
			if (run == 0) {
				i++;
				continue;
			}
			if (atomic_load(&mj->cancel))
				return mig_fail(mj, -ECANCELED, "cancelled");
			rc = mig_sent(mj, stream_put_pages(o, mj->domid, buf,
			    g + i, run, mj->why, sizeof(mj->why)));
			mig_progress(mj, o);
			i += run;
		}
	}
	return rc;
}

/* Live rounds while the guest runs (log-dirty on): round 1 and more. */
static int
mig_precopy(struct mig_job *mj, struct vmb_stream_out *o, uint8_t *buf)
{
	uint64_t dirty = 0;
	int rc;

	rc = vmb_guest_dirty_log(vmbd.ctx, mj->domid, VMB_DIRTY_ENABLE, 0, 0,
	    NULL, NULL, NULL);
	if (rc < 0)
		return mig_fail(mj, rc, "cannot enable log-dirty on domain "
		    "%u: %s", mj->domid, strerror(-rc));
	mj->rounds = 1;
	rc = mig_send_all(mj, o, buf);
	while (rc == 0 && mj->rounds < mj->max_rounds) {
		rc = mig_dirty_count(mj, &dirty);
		if (rc < 0 || dirty <= mj->dirty_pages)
			break;
		mj->rounds++;
		rc = mig_send_dirty(mj, o, buf);
	}
	if (rc == 0)
		log_vm(LOG_INFO, mj->name, mj->domid, mj->task->id, "%s: %u "
		    "live round%s, %llu pages dirty at the last: pausing it",
		    mj->name, mj->rounds, mj->rounds == 1 ? "" : "s",
		    (unsigned long long)dirty);
	return rc;
}

/* The memory: live rounds, then the guest paused and the rest. */
static int
mig_transfer(struct mig_job *mj, struct vmb_stream_out *o, uint8_t *buf,
    bool *paused)
{
	bool precopy = mj->live && mj->memory;
	struct vmb_domain dom;
	int rc = 0;

	if (precopy)
		rc = mig_precopy(mj, o, buf);
	if (rc == 0)
		rc = vmb_domain_get(vmbd.ctx, mj->domid, &dom);
	if (rc == 0 && dom.state != VMB_DOM_PAUSED) {
		rc = vmb_domain_pause(vmbd.ctx, mj->domid);
		*paused = rc == 0;
	}
	if (rc < 0)
		return mig_fail(mj, rc, "cannot pause domain %u: %s",
		    mj->domid, strerror(-rc));
	mj->t_pause = now_mono();
	mj->rounds++;
	rc = precopy ? mig_send_dirty(mj, o, buf) : mig_send_all(mj, o, buf);
	/* The receiver may keep the guest once the end goes: say so first. */
	mj->rec.migration.ending = true;
	if (rc == 0 && (rc = state_write(&mj->rec)) < 0)
		return mig_fail(mj, rc, "cannot record in the state directory "
		    "that the stream ends: %s", strerror(-rc));
	if (rc == 0)
		rc = mig_sent(mj, vmb_stream_finish(o));
	return rc;
}

/* vmb_native_io.put: a piece of the hypervisor's stream, one record. */
static int
mig_put_xen(void *user, const void *buf, size_t len)
{
	struct mig_job *mj = user;
	int rc = vmb_stream_put_xen(mj->out, buf, len);

	if (rc == 0)
		mig_progress(mj, mj->out);
	return rc;
}

/*
 * The memory and state in the hypervisor's own stream (Xen:
 * libxenguest's, live: rounds while the guest runs, then its suspend
 * and the last round), framed as Xen records; the receiver's restore
 * reads them.  The downtime starts at the suspend.  A failure resumes
 * the guest (the backend does, or mig_run once the stream went whole).
 */
static int
mig_native(struct mig_job *mj, struct vmb_stream_out *o)
{
	struct vmb_native_live live = { .max_rounds = mj->max_rounds,
	    .dirty_pages = mj->dirty_pages };
	struct vmb_native_io io = { .put = mig_put_xen, .user = mj,
	    .cancel_fd = mj->cancel_fd, .live = mj->live ? &live : NULL };
	int rc;

	mj->out = o;
	rc = vmb_guest_save_native(vmbd.ctx, mj->domid, &io);
	mj->rounds = mj->live ? live.rounds : 1;
	mj->native_pages = mj->live ? live.pages : 0;
	if (mj->live && live.suspended_ns != 0)
		mj->t_pause = (double)live.suspended_ns / 1e9;
	else if (!mj->live)
		mj->t_pause = mj->t_ready;	/* suspended at the start */
	mig_progress(mj, o);
	if (rc == -ECANCELED || atomic_load(&mj->cancel))
		return mig_fail(mj, -ECANCELED, "cancelled");
	if (rc < 0)
		return mig_fail(mj, rc, "%s", io.why[0] ? io.why :
		    mj->why[0] ? mj->why : strerror(-rc));
	mj->suspended = true;
	log_vm(LOG_INFO, mj->name, mj->domid, mj->task->id, "%s: %u "
	    "round%s in Xen's stream (%llu bytes), suspended for the last",
	    mj->name, mj->rounds, mj->rounds == 1 ? "" : "s",
	    (unsigned long long)io.bytes);
	return 0;
}

/* Handshake, memory, DONE: the guest is there, or still here. */
static int
mig_stream(struct mig_job *mj, struct vmb_stream_out *o, uint8_t *buf,
    bool *paused)
{
	int rc;

	/* Phantom memory has no bytes: only the description travels. */
	mj->native = vmb_native_stream(vmbd.ctx);
	rc = mj->native ? 0 : vmb_guest_memory_read(vmbd.ctx, mj->domid, 0,
	    buf, VMB_STREAM_PAGE);
	mj->memory = mj->native || rc != -EOPNOTSUPP;
	mj->stage = "handshake";
	/* Before a byte goes: a daemon killed from here on finds it. */
	rc = state_write(&mj->rec);
	if (rc < 0)
		return mig_fail(mj, rc, "cannot record the migration in the "
		    "state directory: %s", strerror(-rc));
	rc = vmb_stream_begin(o, mj->send_fd, mj->native ?
	    VMB_STREAM_F_XEN : mj->memory ? VMB_STREAM_F_MEMORY : 0,
	    mj->cancel_fd);
	if (rc == 0)
		rc = vmb_stream_put_guest(o, mj->guest_text,
		    strlen(mj->guest_text));
	mig_progress(mj, o);
	/*
	 * A receiver gone before it said ready: whether its end is met as
	 * a broken pipe here or as the end of its answers below is a race
	 * (CI's loaded run at 892cdfd met the pipe).  Its answers say why
	 * either way: read them first.
	 */
	if ((rc == -EPIPE || rc == -ECONNRESET) && !atomic_load(&mj->cancel)) {
		int sent = rc;

		rc = mig_wait(mj, VMB_STATUS_READY, "ready");
		if (rc == 0)
			rc = mig_sent(mj, sent);
	} else {
		rc = mig_sent(mj, rc);
		if (rc == 0)
			rc = mig_wait(mj, VMB_STATUS_READY, "ready");
	}
	if (rc < 0)
		return rc;
	mj->stage = "transfer";
	mj->t_ready = now_mono();
	rc = mj->native ? mig_native(mj, o) : mig_transfer(mj, o, buf, paused);
	if (rc < 0)
		return rc;
	if (mj->native) {
		/* The receiver may keep the guest once the end goes. */
		mj->rec.migration.ending = true;
		if ((rc = state_write(&mj->rec)) < 0)
			return mig_fail(mj, rc, "cannot record in the state "
			    "directory that the stream ends: %s",
			    strerror(-rc));
		rc = mig_sent(mj, vmb_stream_finish(o));
		if (rc < 0)
			return rc;
	}
	mj->stage = "commit";
	mj->sent_end = true;
	rc = mig_wait(mj, VMB_STATUS_DONE, "done");
	if (rc == 0) {
		mj->t_done = now_mono();
		mj->committed = true;
	}
	/* Not a FAILED answer: the receiver may have it running. */
	mj->doubt = rc < 0 && strncmp(mj->why, "the receiver failed", 19);
	return rc;
}

/*
 * The outcome known and the guest here: its record without "migrating"
 * (committed, the record goes; in doubt, the marker stays).  A record
 * that keeps it is resolved at the next start, as it is now.
 */
static void
mig_unmark(struct mig_job *mj)
{
	if (mj->committed || mj->doubt)
		return;
	state_migration_done(&mj->rec.migration);
	if (state_write(&mj->rec) < 0)
		log_vm(LOG_WARNING, mj->name, mj->domid, mj->task->id, "%s: "
		    "its record still says it migrates (see above): the next "
		    "start of the daemon sorts that out", mj->name);
}

static void
mig_run(struct job *job)
{
	struct mig_job *mj = (struct mig_job *)job;
	struct vmb_stream_out o = { .fd = -1 };
	bool paused = false;
	uint8_t *buf;
	int rc, fl;

	mj->t_start = now_mono();
	/* A pipe nobody reads must not hold the thread past a cancel. */
	fl = fcntl(mj->send_fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(mj->send_fd, F_SETFL, fl | O_NONBLOCK);
	buf = malloc((size_t)CHUNK_PAGES * VMB_STREAM_PAGE);
	mj->bits = malloc(WINDOW_BITS / 8);
	rc = buf == NULL || mj->bits == NULL ? mig_fail(mj, -ENOMEM, "out of "
	    "memory") : mig_stream(mj, &o, buf, &paused);
	mj->bytes = o.offset;
	mj->pages = mj->native ? mj->native_pages : o.pages;
	if (mj->live && mj->memory && !mj->native)
		(void)vmb_guest_dirty_log(vmbd.ctx, mj->domid,
		    VMB_DIRTY_DISABLE, 0, 0, NULL, NULL, NULL);
	/* The receiver sees the stream end now, whatever happened. */
	close(mj->send_fd);
	mj->send_fd = -1;
	if (mj->committed) {
		rc = vmb_domain_destroy(vmbd.ctx, mj->domid);
		if (rc == 0 || rc == -ESRCH)
			rc = state_remove(mj->uuid);
		if (rc < 0)
			log_vm(LOG_WARNING, mj->name, mj->domid, mj->task->id,
			    "%s runs on the receiver, but its domain %u here "
			    "could not be removed: %s", mj->name, mj->domid,
			    strerror(-rc));
		rc = 0;
	} else if (mj->doubt) {
		log_vm(LOG_WARNING, mj->name, mj->domid, mj->task->id, "%s: no "
		    "answer after the whole stream went: it may run on the "
		    "receiver; domain %u stays paused here", mj->name,
		    mj->domid);
	} else if (mj->suspended) {
		char why[200];

		if (vmb_guest_resume_native(vmbd.ctx, mj->domid, why,
		    sizeof(why)) < 0)
			log_vm(LOG_ERR, mj->name, mj->domid, mj->task->id,
			    "migration failed and domain %u could not be "
			    "resumed: %s", mj->domid, why);
		else if (mj->rec.migration.was_paused)
			(void)vmb_domain_pause(vmbd.ctx, mj->domid);
	} else if (paused && vmb_domain_unpause(vmbd.ctx, mj->domid) < 0) {
		log_vm(LOG_ERR, mj->name, mj->domid, mj->task->id, "migration "
		    "failed and domain %u could not be unpaused", mj->domid);
	}
	mig_unmark(mj);
	free(buf);
	free(mj->bits);
	mj->bits = NULL;
	vmb_stream_in_done(&mj->in);
	mj->rc = rc;
}

static void
mig_job_free(struct mig_job *mj)
{
	if (mj->send_fd >= 0)
		close(mj->send_fd);
	if (mj->recv_fd >= 0)
		close(mj->recv_fd);
	if (mj->cancel_fd >= 0)
		close(mj->cancel_fd);
	free(mj->guest_text);
	state_record_done(&mj->rec);
	free(mj);
}

static void
mig_reply(struct mig_job *mj, const struct task_migration *m)
{
	yajl_gen g = jg_new();

	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", mj->task->id);
	jg_kv_str(g, "vm", mj->name);
	jg_kv_bool(g, "live", m->live);
	jg_kv_u64(g, "rounds", m->rounds);
	jg_kv_u64(g, "pages", m->pages);
	jg_kv_u64(g, "bytes", m->bytes);
	jg_kv_u64(g, "downtime_ms", m->downtime_ms);
	jg_kv_dbl(g, "total_s", m->total_s);
	yajl_gen_map_close(g);
	call_reply(mj->call, g);
	yajl_gen_free(g);
}

/* A failed or cancelled migration: the guest goes on here. */
static void
mig_failed(struct mig_job *mj, struct vm *vm)
{
	int code = mj->doubt ? E_MIGRATE_DOUBT : mj->rc == -ECANCELED ?
	    E_CANCELLED : E_MIGRATE;
	struct task *t = mj->task;
	char msg[600];

	snprintf(msg, sizeof(msg), "migration of %s %s in its %s: %s; %s",
	    mj->name, mj->rc == -ECANCELED ? "cancelled" : "failed",
	    mj->stage ? mj->stage : "start", mj->why, mj->doubt ? "the "
	    "receiver may run it: it stays paused here until the receiver "
	    "is asked (vmctl migrate does)" : "the guest goes on here");
	log_vm(mj->rc == -ECANCELED ? LOG_NOTICE : LOG_WARNING, mj->name,
	    mj->domid, t->id, "%s", msg);
	task_finish(t, mj->rc == -ECANCELED && !mj->doubt ? TASK_CANCELLED :
	    TASK_FAILED, code, -mj->rc, msg);
	if (vm != NULL)
		vm_announce(vm, NULL, NULL, NULL);
	if (mj->call != NULL) {
		call_error(mj->call, code, -mj->rc, "%s", msg);
		call_fail(mj->call);
	}
}

static void
mig_done(struct job *job)
{
	struct mig_job *mj = (struct mig_job *)job;
	struct vm *vm = vm_find_uuid(mj->uuid);
	struct task *t = mj->task;
	struct task_migration m = { .set = true, .live = mj->live,
	    .rounds = mj->rounds, .pages = mj->pages, .bytes = mj->bytes };

	if (vm != NULL) {
		vm->busy = false;
		if (mj->doubt)
			vm_set_migration(vm, &mj->rec.migration, true);
		else
			vm_set_migration(vm, NULL, false);
	}
	m.total_s = now_mono() - mj->t_start;
	if (mj->committed)
		m.downtime_ms = (uint64_t)((mj->t_done - mj->t_pause) * 1e3);
	t->migration = m;
	metrics_migration_done(mj->rc == 0 ? "done" : mj->rc == -ECANCELED ?
	    "cancelled" : "failed", mj->bytes, mj->committed ?
	    mj->t_done - mj->t_pause : -1);
	if (mj->rc == 0) {
		log_vm(LOG_INFO, mj->name, mj->domid, t->id, "%s migrated: "
		    "downtime_ms=%llu total_s=%.3f pages=%llu rounds=%u; its "
		    "domain here is destroyed", mj->name,
		    (unsigned long long)m.downtime_ms, m.total_s,
		    (unsigned long long)m.pages, m.rounds);
		task_finish(t, TASK_DONE, 0, 0, NULL);
		if (vm != NULL) {
			vm_announce(vm, "migrated", NULL, NULL);
			vm_remove(vm, false);
			events_scrub_kick();
		}
		if (mj->call != NULL)
			mig_reply(mj, &m);
	} else {
		mig_failed(mj, vm);
	}
	vm_refresh_kick();
	mig_job_free(mj);
	vmbd_status_changed();
}

/* The request's numbers: -1 after call_error(). */
static int
mig_params(struct call *call, struct mig_job *mj)
{
	uint64_t rounds = DEF_ROUNDS, dirty = DEF_DIRTY;
	bool regular = false;

	if (param_bool(call, P_LIVE, &mj->live) < 0 ||
	    param_u64(call, P_MAX_ROUNDS, false, &rounds) < 0 ||
	    param_u64(call, P_DIRTY_PAGES, false, &dirty) < 0)
		return -1;
	if (rounds < 1 || rounds > MAX_ROUNDS)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: "
		    "%llu is not 1 to %d", P_MAX_ROUNDS,
		    (unsigned long long)rounds, MAX_ROUNDS);
	mj->max_rounds = (uint32_t)rounds;
	mj->dirty_pages = dirty;
	if ((mj->send_fd = stream_fd(call, "send", true, &regular)) < 0 ||
	    (mj->recv_fd = stream_fd(call, "recv", false, &regular)) < 0)
		return -1;
	return 0;
}

/*
 * Its record as it stands, "migrating" set: to params.target's host,
 * the query (its command and " --query NAME") run as the caller.
 * -1 after call_error().
 */
static int
mig_target(struct call *call, struct vm *vm, struct mig_job *mj)
{
	struct state_migration *m = &mj->rec.migration;
	yajl_val t = NULL, host, cmd;

	if (param_object(call, P_TARGET, false, &t) < 0)
		return -1;
	host = jv_get(t, "host");
	cmd = jv_get(t, "command");
	if (t != NULL && (!YAJL_IS_STRING(host) || !YAJL_IS_STRING(cmd) ||
	    strlen(host->u.string) >= sizeof(m->target) ||
	    strlen(cmd->u.string) > QUERY_MAX || !cmd->u.string[0]))
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: "
		    "{\"host\": at most %zu bytes, \"command\": 1 to %d "
		    "bytes}, both strings", P_TARGET, sizeof(m->target) - 1,
		    QUERY_MAX);
	if (vm_record(vm, NULL, &mj->rec) < 0)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of "
		    "memory");
	state_migration_done(m);
	m->set = true;
	m->was_paused = vm->state == VM_PAUSED;
	if (t == NULL)
		return 0;
	snprintf(m->target, sizeof(m->target), "%s", host->u.string);
	/* A VM's name is letters, digits, '-', '_', '.': no quoting. */
	if (asprintf(&m->query, "%s --query %s", cmd->u.string,
	    vm->name) < 0) {
		m->query = NULL;
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of "
		    "memory");
	}
	m->uid = call->conn->uid;
	m->gid = call->conn->gid;
	return 0;
}

/* The job for `vm`, its task started: -1 after call_error(). */
static int
mig_start(struct call *call, struct vm *vm, struct mig_job *mj, bool wait)
{
	int rc;

	mj->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	mj->task = mj->cancel_fd < 0 ? NULL :
	    task_new(M_VM_MIGRATE_SEND, vm->name, vm->uuid);
	if (mj->task == NULL)
		return call_error(call, RPC_INTERNAL_ERROR, errno, "cannot "
		    "start a task: %s", strerror(errno ? errno : ENOMEM));
	memcpy(mj->uuid, vm->uuid, 16);
	snprintf(mj->name, sizeof(mj->name), "%s", vm->name);
	mj->domid = vm->domid;
	mj->memory_bytes = vm->guest->memory_bytes;
	atomic_init(&mj->cancel, false);
	mj->task->cancel = mig_cancel;
	mj->task->cancel_arg = mj;
	mj->task->phase_name = "migrate";
	mj->call = wait ? call : NULL;
	mj->job.run = mig_run;
	mj->job.done = mig_done;
	rc = worker_spawn(&mj->job);
	if (rc < 0) {
		task_discard(mj->task);
		return call_error(call, RPC_INTERNAL_ERROR, -rc, "cannot start "
		    "a migration thread: %s", strerror(-rc));
	}
	return 0;
}

int
m_vm_migrate_send(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);
	struct mig_job *mj = NULL;
	bool wait = false;

	if (vm == NULL || stream_vm_check(call, vm, "migrated") < 0 ||
	    param_bool(call, P_WAIT, &wait) < 0)
		return -1;
	if (vm->migration.set)
		return call_error(call, E_BAD_STATE, 0, "%s: its migration to "
		    "%s is in doubt (it may run there): destroy it here, or "
		    "unpause it if %s does not run it", vm->name,
		    vm->migration.target[0] ? vm->migration.target :
		    "another host", vm->migration.target[0] ?
		    vm->migration.target : "that host");
	mj = calloc(1, sizeof(*mj));
	if (mj != NULL) {
		mj->send_fd = mj->recv_fd = mj->cancel_fd = -1;
		mj->guest_text = stream_guest_text(vm, true);
	}
	if (mj == NULL || mj->guest_text == NULL) {
		call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
		goto fail;
	}
	if (mig_params(call, mj) < 0 || mig_target(call, vm, mj) < 0 ||
	    mig_start(call, vm, mj, wait) < 0)
		goto fail;
	vm->busy = true;
	log_vm(LOG_INFO, vm->name, vm->domid, mj->task->id, "task %llu: "
	    "migrating %s (domain %u, %llu MiB)%s",
	    (unsigned long long)mj->task->id, vm->name, vm->domid,
	    (unsigned long long)(mj->memory_bytes >> 20),
	    mj->live ? ", live" : "");
	vm_announce(vm, "migrating", NULL, NULL);
	vmbd_status_changed();
	if (wait)
		return CALL_DEFERRED;
	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", mj->task->id);
	jg_kv_str(g, "vm", mj->name);
	yajl_gen_map_close(g);
	return 0;
fail:
	if (mj != NULL)
		mig_job_free(mj);
	return -1;
}
