/*
 * save.c - vm.save and vm.restore (see save.h).
 *
 * On a hypervisor with its own save (Xen: libxenguest, vmb_native_stream)
 * the guest is not paused but asked to suspend, and its state travels as
 * that stream in Xen records after the guest record; a restore of such a
 * stream builds the domain without populating it and hands the records
 * to the hypervisor's restore, which populates.
 *
 * A save is a task on a thread of its own: the guest is paused, the
 * stream written (the guest record: the VM's configuration as its state
 * record holds it; then its memory, read back from the hypervisor, in
 * records of up to VMB_STREAM_MAX_PAGES pages), and then either the
 * domain destroyed and the VM's record removed (a save) or the guest
 * unpaused (a checkpoint).  The VM is "saving" meanwhile (vm.list,
 * vm.info, a vm.state event), then in its domain's state again, or gone
 * ("saved").  A save that fails or is cancelled leaves the
 * guest as it found it and truncates a regular file it wrote (the client,
 * which created the file, removes it).  The VM is busy meanwhile: no
 * other operation, and no domain event, touches it.
 *
 * A restore is a task from its request on: phase "read" while a worker
 * reads the stream's header and guest record (a pipe may be slow to
 * come), then the build's, which adopts the task and builds the guest
 * as vm.create does (placement, claim, the
 * populate engine, the state records that make a crash safe), with the
 * load phase writing the saved memory back in place of a kernel.
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
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "events.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "params.h"
#include "proto.h"
#include "save.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define CHUNK_PAGES	VMB_STREAM_MAX_PAGES

/*
 * params.fds.file: a descriptor the request carried, a regular file or
 * a pipe open for writing (save) or reading (restore).  -1 after
 * call_error().
 */
int
stream_fd(struct call *call, const char *key, bool writing,
    bool *ret_regular)
{
	yajl_val fds = NULL, v;
	struct stat st;
	int fd, fl, acc;

	if (param_object(call, P_FDS, true, &fds) < 0)
		return -1;
	v = jv_get(fds, key);
	if (v == NULL || !YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0 ||
	    YAJL_GET_INTEGER(v) >= RPC_MAX_FDS)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s "
		    "must be the index of a descriptor sent with the request "
		    "(0 to %d): the daemon opens no file a client names", key,
		    RPC_MAX_FDS - 1);
	fd = call_take_fd(call, (size_t)YAJL_GET_INTEGER(v));
	if (fd < 0)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s: "
		    "no descriptor %lld came with the request (%zu did)", key,
		    YAJL_GET_INTEGER(v), call->nfds);
	fl = fcntl(fd, F_GETFL);
	acc = fl & O_ACCMODE;
	if (fstat(fd, &st) < 0 || fl < 0) {
		call_error(call, RPC_INVALID_PARAMS, errno, "params.fds.%s: "
		    "%s", key, strerror(errno));
	} else if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) &&
	    !S_ISSOCK(st.st_mode)) {
		call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s: not "
		    "a regular file, a pipe or a socket", key);
	} else if ((fl & O_PATH) || (writing && acc == O_RDONLY) ||
	    (!writing && acc == O_WRONLY)) {
		call_error(call, RPC_INVALID_PARAMS, 0, "params.fds.%s: not "
		    "open for %s", key, writing ? "writing" : "reading");
	} else {
		*ret_regular = S_ISREG(st.st_mode);
		return fd;
	}
	close(fd);
	return -1;
}

/* ------------------------------------------------------------------ */
/* vm.save                                                             */

struct save_job {
	struct job	job;
	struct task	*task;
	struct call	*call;		/* waiting client, or NULL */
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	uint32_t	domid;
	uint64_t	memory_bytes;
	char		*guest_text;	/* the guest record */
	int		fd;
	bool		regular;
	bool		checkpoint;
	int		cancel_fd;	/* eventfd: task.cancel */
	atomic_bool	cancel;
	/* Results, written by the save thread. */
	int		rc;
	char		why[256];
	bool		memory;		/* the bytes travelled */
	uint64_t	bytes, pages;
	uint64_t	wait_ns, put_ns;	/* a native save's (native.c) */
	/* Its domain once the save ended, when the guest stays here. */
	struct vmb_domain dom;
	bool		have_dom;
	struct vmb_stream_out *out;	/* a native save's stream */
};

static void
save_cancel(void *arg)
{
	struct save_job *sj = arg;
	uint64_t one = 1;

	atomic_store(&sj->cancel, true);
	(void)!write(sj->cancel_fd, &one, sizeof(one));
}

static int __attribute__((format(printf, 3, 4)))
save_fail(struct save_job *sj, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sj->why, sizeof(sj->why), fmt, ap);
	va_end(ap);
	return rc;
}

static void
save_progress(struct save_job *sj, uint64_t done)
{
	struct vmb_progress p = { .phase = VMB_PHASE_POPULATE,
	    .domid = sj->domid, .done = done, .total = sj->memory_bytes };

	task_progress_cb(sj->task, &p);
}

/*
 * Pages [gfn, gfn + n) of domain `domid` into the stream, page by page
 * where the chunk has holes (a ballooned guest): only populated pages
 * travel.  `buf` holds n pages.
 */
int
stream_put_pages(struct vmb_stream_out *o, uint32_t domid, uint8_t *buf,
    uint64_t gfn, uint32_t n, char *why, size_t why_len)
{
	uint64_t at = gfn;
	uint32_t run = 0;
	int rc;

	rc = vmb_guest_memory_read(vmbd.ctx, domid, gfn * VMB_STREAM_PAGE,
	    buf, (size_t)n * VMB_STREAM_PAGE);
	if (rc == 0)
		return vmb_stream_put_memory(o, gfn, n, buf);
	if (rc != -ENOENT)
		goto read_error;
	for (uint32_t i = 0; i <= n; i++) {
		at = gfn + i;
		rc = i < n ? vmb_guest_memory_read(vmbd.ctx, domid,
		    at * VMB_STREAM_PAGE, buf + (size_t)run * VMB_STREAM_PAGE,
		    VMB_STREAM_PAGE) : -ENOENT;
		if (rc == 0) {
			run++;
			continue;
		}
		if (rc != -ENOENT)
			goto read_error;
		if (run > 0 && (rc = vmb_stream_put_memory(o, at - run, run,
		    buf)) < 0)
			return rc;
		run = 0;
	}
	return 0;
read_error:
	snprintf(why, why_len, "cannot read guest memory at gfn %#llx: %s",
	    (unsigned long long)at, strerror(-rc));
	return rc;
}

/* The guest record, then the memory (when the hypervisor has bytes). */
static int
save_stream(struct save_job *sj, struct vmb_stream_out *o, uint8_t *buf)
{
	uint64_t start[2], end[2], done = 0;
	int nr, rc;

	save_progress(sj, 0);
	/* Phantom memory has no bytes: only the description travels. */
	rc = vmb_guest_memory_read(vmbd.ctx, sj->domid, 0, buf, VMB_STREAM_PAGE);
	sj->memory = rc != -EOPNOTSUPP;
	rc = vmb_stream_begin(o, sj->fd, sj->memory ? VMB_STREAM_F_MEMORY : 0,
	    sj->cancel_fd);
	if (rc == 0)
		rc = vmb_stream_put_guest(o, sj->guest_text,
		    strlen(sj->guest_text));
	nr = vmb_guest_ram(sj->memory_bytes, start, end);
	for (int r = 0; rc == 0 && sj->memory && r < nr; r++) {
		for (uint64_t a = start[r]; rc == 0 && a < end[r];
		    a += (uint64_t)CHUNK_PAGES * VMB_STREAM_PAGE) {
			uint64_t left = (end[r] - a) / VMB_STREAM_PAGE;
			uint32_t n = left < CHUNK_PAGES ? (uint32_t)left :
			    CHUNK_PAGES;

			if (atomic_load(&sj->cancel))
				return save_fail(sj, -ECANCELED, "cancelled");
			rc = stream_put_pages(o, sj->domid, buf,
			    a / VMB_STREAM_PAGE, n, sj->why, sizeof(sj->why));
			done += (uint64_t)n * VMB_STREAM_PAGE;
			save_progress(sj, done);
		}
	}
	if (rc == 0)
		rc = vmb_stream_finish(o);
	if (rc == 0 && sj->regular && fsync(sj->fd) < 0)
		rc = -errno;
	if (rc < 0 && !sj->why[0])
		save_fail(sj, rc, "cannot write the stream: %s",
		    strerror(-rc));
	return rc;
}

/* vmb_native_io.put: one piece of the hypervisor's stream, one record. */
static int
save_put_xen(void *user, const void *buf, size_t len)
{
	struct save_job *sj = user;
	int rc = vmb_stream_put_xen(sj->out, buf, len);

	if (rc == 0) {
		/* Bytes of the stream so far, against the guest's RAM. */
		save_progress(sj, sj->out->offset < sj->memory_bytes ?
		    sj->out->offset : sj->memory_bytes);
	}
	return rc;
}

/* vmb_native_io.progress of a direct save: the backend's bytes so far. */
static void
save_direct_progress(void *user, uint64_t bytes)
{
	struct save_job *sj = user;

	save_progress(sj, bytes < sj->memory_bytes ? bytes : sj->memory_bytes);
}

/*
 * The hypervisor's own save: the guest suspended and its stream written
 * by the backend (vmb_guest_save_native), a checkpoint resumed.  Not
 * kept (a write of ours failed after), the guest is resumed.  To a
 * regular file the backend writes its stream itself, inline, as xl
 * does (no pipe, copies or checksums: in the lab a 256 MiB guest's save
 * took 4.2 s, 6.3 s in Xen records); to a pipe or socket it goes in Xen
 * records.
 */
static int
save_native(struct save_job *sj, struct vmb_stream_out *o)
{
	struct vmb_native_io io = { .put = save_put_xen, .user = sj,
	    .cancel_fd = sj->cancel_fd, .resume = sj->checkpoint,
	    .direct = sj->regular, .fd = sj->fd,
	    .progress = save_direct_progress };
	char rwhy[160];
	int rc;

	save_progress(sj, 0);
	sj->out = o;
	rc = vmb_stream_begin(o, sj->fd, sj->regular ?
	    VMB_STREAM_F_XEN_INLINE : VMB_STREAM_F_XEN, sj->cancel_fd);
	if (rc == 0)
		rc = vmb_stream_put_guest(o, sj->guest_text,
		    strlen(sj->guest_text));
	if (rc == 0 && sj->regular)
		rc = vmb_stream_put_xen_inline(o);
	if (rc < 0)
		return save_fail(sj, rc, "cannot write the stream: %s",
		    strerror(-rc));
	rc = vmb_guest_save_native(vmbd.ctx, sj->domid, &io);
	sj->wait_ns = io.wait_ns;
	sj->put_ns = io.put_ns;
	if (sj->regular)
		vmb_stream_out_inline_done(o, io.bytes);
	if (rc < 0)
		return save_fail(sj, rc, "%s", io.why[0] ? io.why :
		    rc == -ECANCELED ? "cancelled" : strerror(-rc));
	sj->memory = true;
	rc = vmb_stream_finish(o);
	if (rc == 0 && sj->regular && fsync(sj->fd) < 0)
		rc = -errno;
	if (rc < 0) {
		save_fail(sj, rc, "cannot write the stream: %s", strerror(-rc));
		if (!sj->checkpoint && vmb_guest_resume_native(vmbd.ctx,
		    sj->domid, rwhy, sizeof(rwhy)) < 0) {
			size_t l = strlen(sj->why);

			snprintf(sj->why + l, sizeof(sj->why) - l, "; and %s",
			    rwhy);
		}
	}
	return rc;
}

static void
save_run(struct job *job)
{
	struct save_job *sj = (struct save_job *)job;
	struct vmb_stream_out o = { .fd = -1 };
	struct vmb_domain dom;
	bool paused = false;
	uint8_t *buf;
	int rc, fl;

	fl = fcntl(sj->fd, F_GETFL);
	/* A pipe nobody reads must not hold the thread past a cancel. */
	if (fl >= 0 && !sj->regular)
		(void)fcntl(sj->fd, F_SETFL, fl | O_NONBLOCK);
	buf = malloc((size_t)CHUNK_PAGES * VMB_STREAM_PAGE);
	rc = buf == NULL ? save_fail(sj, -ENOMEM, "out of memory") :
	    vmb_domain_get(vmbd.ctx, sj->domid, &dom);
	/* The guest suspends itself: a paused one could not. */
	if (rc == 0 && vmb_native_stream(vmbd.ctx) &&
	    dom.state == VMB_DOM_PAUSED)
		rc = save_fail(sj, -EBUSY, "domain %u is paused: the guest "
		    "must run to answer the suspend request (unpause it "
		    "first)", sj->domid);
	else if (rc == 0 && vmb_native_stream(vmbd.ctx))
		rc = save_native(sj, &o);
	else if (rc == 0 && dom.state != VMB_DOM_PAUSED) {
		rc = vmb_domain_pause(vmbd.ctx, sj->domid);
		paused = rc == 0;
	}
	if (rc < 0 && !sj->why[0])
		save_fail(sj, rc, "cannot pause domain %u: %s", sj->domid,
		    strerror(-rc));
	if (rc == 0 && !vmb_native_stream(vmbd.ctx))
		rc = save_stream(sj, &o, buf);
	sj->bytes = o.offset;
	sj->pages = o.pages;
	if (rc == 0 && !sj->checkpoint) {
		rc = vmb_domain_destroy(vmbd.ctx, sj->domid);
		if (rc == 0 || rc == -ESRCH)
			rc = state_remove(sj->uuid);
		if (rc < 0)
			save_fail(sj, rc, "saved, but domain %u could not be "
			    "destroyed: %s", sj->domid, strerror(-rc));
		paused = false;
	}
	/* A failed or cancelled save leaves no half stream behind. */
	if (rc < 0 && sj->regular)
		(void)!ftruncate(sj->fd, 0);
	if (paused && vmb_domain_unpause(vmbd.ctx, sj->domid) < 0 && rc == 0)
		rc = save_fail(sj, -EIO, "saved, but domain %u could not be "
		    "unpaused", sj->domid);
	if (fl >= 0 && !sj->regular)
		(void)fcntl(sj->fd, F_SETFL, fl);
	/* The state the VM leaves "saving" for: read after the unpause. */
	if (rc < 0 || sj->checkpoint)
		sj->have_dom = vmb_domain_get(vmbd.ctx, sj->domid,
		    &sj->dom) == 0;
	free(buf);
	sj->rc = rc;
}

static void
save_job_free(struct save_job *sj)
{
	if (sj->fd >= 0)
		close(sj->fd);
	if (sj->cancel_fd >= 0)
		close(sj->cancel_fd);
	free(sj->guest_text);
	free(sj);
}

static void
save_reply(struct save_job *sj)
{
	yajl_gen g = jg_new();

	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", sj->task->id);
	jg_kv_str(g, "vm", sj->name);
	jg_kv_bool(g, "checkpoint", sj->checkpoint);
	jg_kv_bool(g, "memory", sj->memory);
	jg_kv_u64(g, "bytes", sj->bytes);
	jg_kv_u64(g, "pages", sj->pages);
	yajl_gen_map_close(g);
	call_reply(sj->call, g);
	yajl_gen_free(g);
}

static void
save_done(struct job *job)
{
	struct save_job *sj = (struct save_job *)job;
	struct vm *vm = vm_find_uuid(sj->uuid);
	struct task *t = sj->task;
	const char *result = sj->rc == 0 ? "done" : sj->rc == -ECANCELED ?
	    "cancelled" : "failed";

	if (vm != NULL)
		vm->busy = false;
	metrics_stream_done(false, result, sj->rc == 0 ? sj->bytes : 0);
	if (sj->rc == 0) {
		char what[160];

		/*
		 * A hypervisor's save carries the pages inside its own
		 * records: where its time went instead of a page count.
		 */
		if (sj->wait_ns || sj->put_ns)
			snprintf(what, sizeof(what), "%llu bytes, the "
			    "hypervisor's stream; %.3f s waiting for its "
			    "saver, %.3f s writing",
			    (unsigned long long)sj->bytes, sj->wait_ns / 1e9,
			    sj->put_ns / 1e9);
		else
			snprintf(what, sizeof(what), "%llu bytes, %llu pages",
			    (unsigned long long)sj->bytes,
			    (unsigned long long)sj->pages);
		log_vm(LOG_INFO, sj->name, sj->domid, t->id, "%s saved (%s)%s",
		    sj->name, what, sj->checkpoint ?
		    "; it keeps running" : "; its domain is destroyed");
		task_finish(t, TASK_DONE, 0, 0, NULL);
		if (vm != NULL && !sj->checkpoint) {
			vm_announce(vm, "saved", NULL, NULL);
			vm_remove(vm, false);
			events_scrub_kick();
		} else if (vm != NULL) {
			vm_save_ended(vm, sj->have_dom ? &sj->dom : NULL);
		}
		if (sj->call != NULL)
			save_reply(sj);
	} else {
		int code = sj->rc == -ECANCELED ? E_CANCELLED : E_HYPERVISOR;
		char msg[400];

		snprintf(msg, sizeof(msg), "save of %s %s: %s; the guest goes "
		    "on as before", sj->name, sj->rc == -ECANCELED ?
		    "cancelled" : "failed", sj->why);
		log_vm(sj->rc == -ECANCELED ? LOG_NOTICE : LOG_WARNING,
		    sj->name, sj->domid, t->id, "%s", msg);
		task_finish(t, sj->rc == -ECANCELED ? TASK_CANCELLED :
		    TASK_FAILED, code, -sj->rc, msg);
		if (vm != NULL)
			vm_save_ended(vm, sj->have_dom ? &sj->dom : NULL);
		if (sj->call != NULL) {
			call_error(sj->call, code, sj->rc, "%s", msg);
			call_fail(sj->call);
		}
	}
	vm_refresh_kick();
	save_job_free(sj);
	vmbd_status_changed();
}

/*
 * The guest record: the VM as its state record describes it; with
 * `paused`, whether it is paused (a migration's receiver leaves it so).
 */
char *
stream_guest_text(const struct vm *vm, bool paused)
{
	char u[VMB_UUID_STRLEN];
	yajl_gen g = jg_new();

	if (g == NULL)
		return NULL;
	vmb_uuid_to_str(vm->uuid, u);
	yajl_gen_map_open(g);
	jg_kv_str(g, "name", vm->name);
	jg_kv_str(g, "uuid", u);
	jg_kv_dbl(g, "created_at", vm->created_at);
	jg_key(g, "config");
	guestjson_gen(g, vm->guest);
	jg_kv_str(g, "source", vm->source);
	if (paused)
		jg_kv_bool(g, "paused", vm->state == VM_PAUSED);
	yajl_gen_map_close(g);
	return jg_finish(g);
}

/* Can `vm` be saved (`verb`) now?  -1 after call_error(). */
int
stream_vm_check(struct call *call, struct vm *vm, const char *verb)
{
	if (vm_check_idle(call, vm) < 0)
		return -1;
	if (!vm->ours || vm->guest == NULL)
		return call_error(call, E_BAD_STATE, 0, "%s was not built by "
		    "this daemon: it has no description to %s", vm->name,
		    strcmp(verb, "saved") == 0 ? "save" : "send");
	/*
	 * An HVM guest's stream would need its device model's state too
	 * (libxl's emulator record, QMP xen-save-devices-state), which
	 * vmbuild neither writes nor reads: refused before anything is
	 * done, rather than a guest saved, destroyed and not restorable.
	 */
	if (vm->guest->type == VMB_GUEST_HVM)
		return call_error(call, E_UNAVAILABLE, 0, "%s is an HVM guest: "
		    "vmbuild does not save or migrate HVM guests yet (its "
		    "device model's state is not in the stream)", vm->name);
	if (vm->state != VM_RUNNING && vm->state != VM_BLOCKED &&
	    vm->state != VM_PAUSED)
		return call_error(call, E_BAD_STATE, 0, "%s is %s: only a "
		    "running or paused guest can be %s", vm->name,
		    vm_state_name(vm), verb);
	if (task_running() >= vmbd.max_tasks)
		return call_error(call, E_BUSY, 0, "%u tasks are running "
		    "(limit %u); try again later", task_running(),
		    vmbd.max_tasks);
	return 0;
}

int
m_vm_save(struct call *call, yajl_gen g)
{
	struct save_job *sj = NULL;
	bool wait = false, checkpoint = false, regular = false;
	struct vm *vm = vm_param(call);
	int fd = -1, rc;

	if (vm == NULL || stream_vm_check(call, vm, "saved") < 0 ||
	    param_bool(call, P_WAIT, &wait) < 0 ||
	    param_bool(call, P_CHECKPOINT, &checkpoint) < 0 ||
	    (fd = stream_fd(call, "file", true, &regular)) < 0)
		goto fail;
	sj = calloc(1, sizeof(*sj));
	if (sj != NULL)
		sj->fd = sj->cancel_fd = -1;
	if (sj == NULL || (sj->guest_text = stream_guest_text(vm, false)) == NULL) {
		call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
		goto fail;
	}
	sj->fd = fd;
	fd = -1;
	sj->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sj->task = sj->cancel_fd < 0 ? NULL :
	    task_new(M_VM_SAVE, vm->name, vm->uuid);
	if (sj->task == NULL) {
		call_error(call, RPC_INTERNAL_ERROR, errno, "cannot start a "
		    "task: %s", strerror(errno ? errno : ENOMEM));
		goto fail;
	}
	memcpy(sj->uuid, vm->uuid, 16);
	snprintf(sj->name, sizeof(sj->name), "%s", vm->name);
	sj->domid = vm->domid;
	sj->memory_bytes = vm->guest->memory_bytes;
	sj->regular = regular;
	sj->checkpoint = checkpoint;
	atomic_init(&sj->cancel, false);
	sj->task->cancel = save_cancel;
	sj->task->cancel_arg = sj;
	sj->task->phase_name = "save";
	sj->call = wait ? call : NULL;
	sj->job.run = save_run;
	sj->job.done = save_done;
	rc = worker_spawn(&sj->job);
	if (rc < 0) {
		task_discard(sj->task);
		call_error(call, RPC_INTERNAL_ERROR, -rc, "cannot start a save "
		    "thread: %s", strerror(-rc));
		goto fail;
	}
	vm->busy = true;
	log_vm(LOG_INFO, vm->name, vm->domid, sj->task->id, "task %llu: "
	    "saving %s (domain %u, %llu MiB)%s",
	    (unsigned long long)sj->task->id, vm->name, vm->domid,
	    (unsigned long long)(sj->memory_bytes >> 20),
	    checkpoint ? ", a checkpoint" : "");
	vm_set_saving(vm);
	vmbd_status_changed();
	if (wait)
		return CALL_DEFERRED;
	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", sj->task->id);
	jg_kv_str(g, "vm", sj->name);
	yajl_gen_map_close(g);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (sj != NULL)
		save_job_free(sj);
	return -1;
}

/* ------------------------------------------------------------------ */
/* vm.restore                                                          */

/*
 * The stream being restored: its reader, opened on a worker (header and
 * guest record), then handed to the build, whose load phase reads the
 * rest (restore_fill) on the build thread.
 */
struct restore_src {
	struct job	job;
	struct call	*call;
	int		fd;
	bool		regular;
	bool		wait, paused;
	struct vmb_stream_in in;
	struct vmb_build *build;	/* bound once the build exists */
	/*
	 * Its task: its own in phase "read" (`own_task`, cancelled by
	 * `cancel`), the build's once handed to build_restore().
	 */
	struct task	*task;
	bool		own_task;
	atomic_bool	cancel;
	uint64_t	size;		/* a regular file's, else 0 */
	uint64_t	got;		/* bytes read */
	struct vmb_guest *guest;	/* what the stream describes */
	char		*guest_text;	/* its guest record */
	uint64_t	memory_bytes;
	int		rc;
	/*
	 * An incoming migration (vmctl migrate-receive): its answers go on
	 * a reply stream (VMB_STREAM_F_REPLY) to reply_fd: READY from the
	 * load phase (placed, claimed, populated), DONE once the guest runs
	 * here, FAILED otherwise.  `said`: the last answer went.
	 */
	bool		incoming;
	int		reply_fd;
	struct vmb_stream_out reply;
	bool		said;
	/* A Xen stream's restore: the domain, and the guest being built. */
	uint32_t	domid;
	const struct vmb_guest *xguest;
};

/* The restore's phases by name (task.h): the build's boot unpauses. */
static const char *const restore_phases[VMB_PHASE_UNDO + 1] = {
	[VMB_PHASE_BOOT] = "unpause",
};

static void
restore_cancel(void *arg)
{
	struct restore_src *rs = arg;

	atomic_store(&rs->cancel, true);
}

/* Phase "read": the bytes read of the stream (of the file's size). */
static void
restore_read_progress(struct restore_src *rs)
{
	struct vmb_progress p = { .phase = VMB_PHASE_PLACE,
	    .domid = VMB_DOMID_INVALID, .done = rs->got, .total = rs->size };

	if (rs->own_task)
		task_progress_cb(rs->task, &p);
}

/* Regular files are always ready; a pipe is waited on, a cancel seen. */
static ssize_t
restore_read(void *user, void *buf, size_t len)
{
	struct restore_src *rs = user;

	for (;;) {
		struct pollfd pf = { rs->fd, POLLIN, 0 };
		ssize_t n;

		if (atomic_load(&rs->cancel) ||
		    (rs->build != NULL && vmb_build_cancelled(rs->build)))
			return -ECANCELED;
		if (!rs->regular && poll(&pf, 1, 200) == 0)
			continue;
		n = read(rs->fd, buf, len);
		if (n > 0) {
			rs->got += (uint64_t)n;
			restore_read_progress(rs);
		}
		if (n >= 0)
			return n;
		if (errno != EINTR && errno != EAGAIN)
			return -errno;
	}
}

/*
 * An answer to the sender: the reply stream's header before the first,
 * the end record after the last (DONE or FAILED).
 *
 * A DONE written whole is the sender's to read: it may read it, destroy
 * its guest and close the connection before the end record follows.
 * So once DONE is written, the guest is this host's whatever becomes of
 * the end record (a sender that never read DONE is in doubt and asks,
 * vmctl migrate-receive --query, and finds it here).  Failing the build
 * on that end record destroyed a guest the sender had destroyed too:
 * tests/ops/ansible.sh's drain lost one VM in some fourteen runs.
 */
static int
restore_say(struct restore_src *rs, uint32_t verdict, int err,
    const char *text)
{
	int rc = 0, end;

	if (!rs->incoming || rs->said)
		return 0;
	if (rs->reply.fd != rs->reply_fd)
		rc = vmb_stream_begin(&rs->reply, rs->reply_fd,
		    VMB_STREAM_F_REPLY, -1);
	if (rc == 0)
		rc = vmb_stream_put_status(&rs->reply, verdict, (uint32_t)err,
		    text);
	if (rc == 0 && verdict != VMB_STATUS_READY) {
		rs->said = true;
		end = vmb_stream_finish(&rs->reply);
		if (end < 0 && verdict == VMB_STATUS_DONE)
			log_vm(LOG_INFO, rs->guest ? rs->guest->name : "?",
			    VMB_DOMID_INVALID, rs->task ? rs->task->id :
			    0, "the sender closed the connection after DONE "
			    "(%s): the guest runs here", strerror(-end));
		else
			rc = end;
	}
	return rc;
}

/* build_fill.failed: the sender hears why (its guest goes on there). */
static void
restore_failed(void *user, int rc, const char *why)
{
	struct restore_src *rs = user;

	(void)restore_say(rs, VMB_STATUS_FAILED, -rc, why);
}

/*
 * build_fill.finish of an incoming migration, the guest recorded: it
 * runs here from now on (unless it was paused), and the sender, told
 * DONE, destroys its own.  A DONE that cannot go fails the build, which
 * destroys the domain: the sender, never told, resumes the guest there.
 */
static int
restore_finish(void *user, uint32_t domid, char *why, size_t why_len)
{
	struct restore_src *rs = user;
	int rc = 0;

	if (!rs->paused)
		rc = vmb_domain_unpause(vmbd.ctx, domid);
	if (rc < 0) {
		snprintf(why, why_len, "cannot unpause domain %u: %s", domid,
		    strerror(-rc));
		return rc;
	}
	rc = restore_say(rs, VMB_STATUS_DONE, 0, NULL);
	if (rc < 0)
		snprintf(why, why_len, "cannot tell the sender the guest runs "
		    "here (%s): it goes on there", strerror(-rc));
	return rc;
}

static void
restore_free(void *user)
{
	struct restore_src *rs = user;

	if (rs == NULL)
		return;
	/* Never handed to a build: the task ends here, as the call. */
	if (rs->own_task)
		task_finish(rs->task, rs->call != NULL &&
		    rs->call->err_code == E_CANCELLED ? TASK_CANCELLED :
		    TASK_FAILED, rs->call != NULL ? rs->call->err_code : 0,
		    rs->call != NULL ? rs->call->err_errno : 0,
		    rs->call != NULL ? rs->call->err_msg : NULL);
	/* Refused before its build began: the sender hears why. */
	(void)restore_say(rs, VMB_STATUS_FAILED, EAGAIN, rs->call != NULL &&
	    rs->call->err_msg[0] ? rs->call->err_msg : "the receiving daemon "
	    "did not build the guest (see its log)");
	if (rs->reply_fd >= 0)
		close(rs->reply_fd);
	if (rs->incoming)
		metrics_migration_received(rs->in.offset);
	else
		metrics_restore_bytes(rs->in.offset);
	vmb_stream_in_done(&rs->in);
	if (rs->fd >= 0)
		close(rs->fd);
	vmb_guest_free(rs->guest);
	free(rs->guest_text);
	free(rs);
}

static void
restore_bind(void *user, struct vmb_build *build, void *task)
{
	struct restore_src *rs = user;

	rs->build = build;
	rs->task = task;
	rs->call = NULL;	/* answered by the build from here */
}

/* Does [gfn, gfn + count) lie in the guest's RAM? */
static bool
restore_in_ram(const struct restore_src *rs, uint64_t gfn, uint32_t count)
{
	uint64_t start[2], end[2], a = gfn * VMB_STREAM_PAGE,
	    b = (gfn + count) * VMB_STREAM_PAGE;
	int nr = vmb_guest_ram(rs->memory_bytes, start, end);

	for (int i = 0; i < nr; i++)
		if (a >= start[i] && b <= end[i])
			return true;
	return false;
}

/*
 * vmb_native_io.get: the next Xen record's payload (optional records
 * skipped), 0 at the end record; any other record is out of place.
 */
static ssize_t
restore_get_xen(void *user, void *buf, size_t len)
{
	struct restore_src *rs = user;
	struct vmb_progress p = { .phase = VMB_PHASE_LOAD,
	    .domid = rs->domid, .total = rs->memory_bytes };
	struct vmb_stream_rec r;
	int rc;

	while ((rc = vmb_stream_next(&rs->in, &r)) > 0) {
		if (r.type == VMB_REC_END)
			return 0;
		if (r.type & VMB_REC_OPTIONAL)
			continue;
		if (r.type != VMB_REC_XEN || r.len > len) {
			snprintf(rs->in.why, sizeof(rs->in.why), "stream "
			    "record %llu (%s) at offset %llu: only Xen "
			    "records belong in a Xen stream",
			    (unsigned long long)rs->in.index - 1,
			    vmb_stream_rec_name(r.type),
			    (unsigned long long)r.offset);
			return -EBADMSG;
		}
		memcpy(buf, r.data, r.len);
		p.done = rs->in.offset < p.total ? rs->in.offset : p.total;
		if (rs->task != NULL)
			task_progress_cb(rs->task, &p);
		return (ssize_t)r.len;
	}
	if (rc == 0)
		snprintf(rs->in.why, sizeof(rs->in.why), "the stream ended "
		    "without its end record");
	return rc < 0 ? rc : -EBADMSG;
}

/* vmb_native_io.cancelled of a direct restore: task.cancel, or the build's. */
static bool
restore_cancelled(void *user)
{
	struct restore_src *rs = user;

	return atomic_load(&rs->cancel) ||
	    (rs->build != NULL && vmb_build_cancelled(rs->build));
}

/* vmb_native_io.progress of a direct restore: the stream read so far. */
static void
restore_direct_progress(void *user, uint64_t bytes)
{
	struct restore_src *rs = user;
	struct vmb_progress p = { .phase = VMB_PHASE_LOAD,
	    .domid = rs->domid, .total = rs->memory_bytes };

	p.done = bytes < p.total ? bytes : p.total;
	if (rs->task != NULL)
		task_progress_cb(rs->task, &p);
}

/*
 * An inline Xen stream (VMB_STREAM_F_XEN_INLINE): its xen-inline record
 * next, then the restorer reads the file itself, from there up to its
 * own end; the end record after it.  Only from a regular file: from a
 * pipe nothing would stop a restorer that waits for bytes that never
 * come (the sender writes Xen records to a pipe).
 */
static int
restore_inline(struct restore_src *rs, uint32_t domid,
    struct vmb_native_io *io)
{
	struct vmb_stream_rec r;
	int rc;

	rc = vmb_stream_next(&rs->in, &r);
	if (rc == 0 || (rc > 0 && r.type != VMB_REC_XEN_INLINE)) {
		snprintf(rs->in.why, sizeof(rs->in.why), "stream record %llu "
		    "(%s) at offset %llu: the inline Xen stream was expected",
		    (unsigned long long)rs->in.index - (rc > 0),
		    rc > 0 ? vmb_stream_rec_name(r.type) : "none",
		    (unsigned long long)(rc > 0 ? r.offset : rs->in.offset));
		return -EBADMSG;
	}
	if (rc < 0)
		return rc;
	if (!rs->regular) {
		snprintf(rs->in.why, sizeof(rs->in.why), "the stream carries "
		    "its Xen stream inline (saved to a file): restore it from "
		    "a regular file, not a pipe or socket");
		return -EINVAL;
	}
	io->direct = true;
	io->fd = rs->fd;
	io->cancelled = restore_cancelled;
	io->progress = restore_direct_progress;
	rc = vmb_guest_restore_native(vmbd.ctx, domid, rs->xguest, io);
	vmb_stream_inline_done(&rs->in, io->bytes);
	rs->got += io->bytes;
	if (rc < 0)
		return rc;
	rc = vmb_stream_next(&rs->in, &r);
	if (rc > 0 && r.type != VMB_REC_END) {
		snprintf(rs->in.why, sizeof(rs->in.why), "stream record %llu "
		    "(%s) at offset %llu: only the end record belongs after "
		    "the inline Xen stream", (unsigned long long)rs->in.index - 1,
		    vmb_stream_rec_name(r.type), (unsigned long long)r.offset);
		return -EBADMSG;
	}
	if (rc == 0) {
		snprintf(rs->in.why, sizeof(rs->in.why), "the stream ended "
		    "without its end record");
		return -EBADMSG;
	}
	return rc < 0 ? rc : 0;
}

/*
 * The load phase of a Xen stream's restore: the hypervisor's restore
 * reads the Xen records or the inline stream (and populates); an
 * incoming migration's sender hears READY first.
 */
static int
restore_fill_native(struct restore_src *rs, uint32_t domid, char *why,
    size_t why_len)
{
	struct vmb_native_io io = { .get = restore_get_xen, .user = rs,
	    .cancel_fd = -1 };
	int rc;

	rs->domid = domid;
	rc = restore_say(rs, VMB_STATUS_READY, 0, NULL);
	if (rc < 0) {
		snprintf(why, why_len, "cannot tell the sender it is ready: "
		    "%s", strerror(-rc));
		return rc;
	}
	if (rs->in.flags & VMB_STREAM_F_XEN_INLINE)
		rc = restore_inline(rs, domid, &io);
	else
		rc = vmb_guest_restore_native(vmbd.ctx, domid, rs->xguest,
		    &io);
	if (rc < 0)
		snprintf(why, why_len, "%s", rc == -ECANCELED ? "cancelled" :
		    io.why[0] ? io.why : rs->in.why);
	return rc;
}

/* The build's load phase: every memory record into the new domain. */
static int
restore_fill(void *user, uint32_t domid, char *why, size_t why_len)
{
	struct restore_src *rs = user;
	struct vmb_progress p = { .phase = VMB_PHASE_LOAD, .domid = domid,
	    .total = rs->memory_bytes };
	struct vmb_stream_rec r;
	int rc;

	if (rs->in.flags & (VMB_STREAM_F_XEN | VMB_STREAM_F_XEN_INLINE))
		return restore_fill_native(rs, domid, why, why_len);
	/* Placed, claimed and populated: the sender may send the memory. */
	rc = restore_say(rs, VMB_STATUS_READY, 0, NULL);
	if (rc < 0) {
		snprintf(why, why_len, "cannot tell the sender it is ready: "
		    "%s", strerror(-rc));
		return rc;
	}
	while ((rc = vmb_stream_next(&rs->in, &r)) > 0) {
		/* A migration's sender waits for DONE: no EOF comes. */
		if (r.type == VMB_REC_END && rs->incoming) {
			rc = 0;
			break;
		}
		if (r.type != VMB_REC_MEMORY)
			continue;	/* the end, or an optional record */
		if (!restore_in_ram(rs, r.gfn, r.count)) {
			snprintf(why, why_len, "stream record %llu at offset "
			    "%llu: gfn %#llx + %u pages lies outside the "
			    "guest's %llu MiB of RAM",
			    (unsigned long long)rs->in.index - 1,
			    (unsigned long long)r.offset,
			    (unsigned long long)r.gfn, r.count,
			    (unsigned long long)(rs->memory_bytes >> 20));
			return -EBADMSG;
		}
		rc = vmb_guest_memory_write(vmbd.ctx, domid,
		    r.gfn * VMB_STREAM_PAGE, r.pages,
		    (size_t)r.count * VMB_STREAM_PAGE);
		if (rc < 0) {
			snprintf(why, why_len, "cannot write guest memory at "
			    "gfn %#llx: %s%s", (unsigned long long)r.gfn,
			    strerror(-rc), rc == -EOPNOTSUPP ? " (this "
			    "hypervisor's memory is phantom: it cannot hold "
			    "the stream's bytes)" : "");
			return rc;
		}
		/* A live migration sends pages again: done stops at total. */
		p.done += (uint64_t)r.count * VMB_STREAM_PAGE;
		if (p.done > p.total)
			p.done = p.total;
		if (rs->task != NULL)
			task_progress_cb(rs->task, &p);
	}
	if (rc < 0)
		snprintf(why, why_len, "%s", rc == -ECANCELED ? "cancelled" :
		    rs->in.why);
	return rc;
}

/* Worker: the header and the guest record. */
static void
restore_open_run(struct job *job)
{
	struct restore_src *rs = (struct restore_src *)job;
	struct vmb_stream_rec r;
	int rc;

	rc = vmb_stream_open(&rs->in, restore_read, rs);
	if (rc == 0)
		rc = vmb_stream_next(&rs->in, &r);
	if (rc == 0)
		rc = -EBADMSG;		/* cannot happen: guest comes first */
	if (rc > 0) {
		rs->guest_text = strndup((const char *)r.data, r.len);
		rc = rs->guest_text == NULL ? -ENOMEM : 0;
	}
	rs->rc = rc;
}

/* The guest record into a guest: -1 after call_error(). */
static int
restore_guest(struct restore_src *rs, char **ret_source)
{
	char err[200], why[300];
	yajl_val root, v;
	int rc;

	root = jv_parse(rs->guest_text, strlen(rs->guest_text), 32, err,
	    sizeof(err));
	if (root == NULL)
		return call_error(rs->call, E_STREAM, EBADMSG, "stream record "
		    "0 (guest) at offset %d: not JSON: %s", VMB_STREAM_HDR,
		    err);
	v = jv_get(root, "config");
	rc = v != NULL && YAJL_IS_OBJECT(v) ? guestjson_read(v, &rs->guest,
	    why, sizeof(why)) : -EINVAL;
	if (rc < 0) {
		yajl_tree_free(root);
		return call_error(rs->call, E_STREAM, -rc, "stream record 0 "
		    "(guest) at offset %d: %s", VMB_STREAM_HDR,
		    v == NULL ? "no \"config\" object" : why);
	}
	v = jv_get(root, "paused");
	if (v != NULL && YAJL_IS_TRUE(v))
		rs->paused = true;	/* it was paused there */
	v = jv_get(root, "source");
	*ret_source = v != NULL && YAJL_IS_STRING(v) ?
	    strdup(v->u.string) : NULL;
	yajl_tree_free(root);
	rs->memory_bytes = rs->guest->memory_bytes;
	return 0;
}

static void
restore_open_done(struct job *job)
{
	struct restore_src *rs = (struct restore_src *)job;
	struct build_fill fill = { .fill = restore_fill, .drop = restore_free,
	    .bind = restore_bind, .finish = rs->incoming ? restore_finish :
	    NULL, .failed = restore_failed, .user = rs, .task = rs->task,
	    .phase_names = restore_phases };
	struct call *call = rs->call;
	struct vmb_guest *guest;
	char *source = NULL;
	yajl_gen g;
	int rc;

	if (rs->rc == -ECANCELED) {
		call_error(call, E_CANCELLED, ECANCELED, "restore cancelled "
		    "while reading the stream's header and guest record");
		goto fail;
	}
	if (rs->rc < 0) {
		call_error(call, rs->rc == -ENOMEM ? RPC_INTERNAL_ERROR :
		    E_STREAM, -rs->rc, "%s", rs->in.why[0] ? rs->in.why :
		    strerror(-rs->rc));
		goto fail;
	}
	/* The guest's state as this hypervisor can take it, or nothing. */
	if (!(rs->in.flags & (VMB_STREAM_F_XEN | VMB_STREAM_F_XEN_INLINE)) !=
	    !vmb_native_stream(vmbd.ctx)) {
		call_error(call, E_STREAM, EOPNOTSUPP, "stream header flags "
		    "%#x at offset 12: %s", rs->in.flags,
		    vmb_native_stream(vmbd.ctx) ? "the stream has no Xen "
		    "stream (saved on another hypervisor): this one restores "
		    "only its own" : "the guest's state is a Xen stream: this "
		    "hypervisor cannot restore it");
		goto fail;
	}
	if (restore_guest(rs, &source) < 0)
		goto fail;
	guest = rs->guest;
	rs->guest = NULL;
	rs->xguest = guest;	/* the build's until it ends, after the fill */
	/* libxenguest's restore populates; ours has the engine build it. */
	fill.populates = (rs->in.flags & (VMB_STREAM_F_XEN |
	    VMB_STREAM_F_XEN_INLINE)) != 0 &&
	    vmb_native_restore_populates(vmbd.ctx);
	log_info("restoring %s (%llu MiB) from a stream%s", guest->name,
	    (unsigned long long)(guest->memory_bytes >> 20),
	    rs->in.flags & VMB_STREAM_F_XEN ? " with a Xen stream" :
	    rs->in.flags & VMB_STREAM_F_XEN_INLINE ? " with an inline Xen "
	    "stream" :
	    rs->in.flags & VMB_STREAM_F_MEMORY ? " with its memory" :
	    " without memory bytes (phantom)");
	g = jg_new();
	/* The build owns rs and its task from here (fill.drop frees rs). */
	rs->own_task = false;
	/* Incoming: unpaused by restore_finish, once recorded. */
	rc = build_restore(call, g, guest, source, &fill, rs->wait,
	    rs->paused || rs->incoming);
	free(source);
	if (rc == 0)
		call_reply(call, g);
	else if (rc < 0)
		call_fail(call);
	yajl_gen_free(g);
	return;
fail:
	restore_free(rs);	/* an incoming migration's sender told why */
	call_fail(call);
}

int
m_vm_restore(struct call *call, yajl_gen g)
{
	static const uint8_t no_uuid[16];
	struct restore_src *rs;
	bool wait = false, paused = false, regular = false, incoming = false,
	    early = false;
	struct stat st;
	int fd = -1, reply_fd = -1;

	if (param_bool(call, P_WAIT, &wait) < 0 ||
	    param_bool(call, P_PAUSED, &paused) < 0 ||
	    param_bool(call, P_INCOMING, &incoming) < 0 ||
	    param_bool(call, P_EARLY, &early) < 0 ||
	    (fd = stream_fd(call, "file", false, &regular)) < 0 ||
	    (incoming && (reply_fd = stream_fd(call, "reply", true,
	    &regular)) < 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rs = task_running() >= vmbd.max_tasks ? NULL : calloc(1, sizeof(*rs));
	/* Its task from now on: phase "read" until the build adopts it. */
	if (rs != NULL && (rs->task = task_new(M_VM_RESTORE, "",
	    no_uuid)) == NULL) {
		free(rs);
		rs = NULL;
	}
	if (rs == NULL) {
		close(fd);
		if (reply_fd >= 0)
			close(reply_fd);
		if (task_running() >= vmbd.max_tasks)
			return call_error(call, E_BUSY, 0, "%u tasks are "
			    "running (limit %u); try again later",
			    task_running(), vmbd.max_tasks);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	rs->own_task = true;
	rs->task->phase_name = "read";
	rs->task->cancel = restore_cancel;
	rs->task->cancel_arg = rs;
	atomic_init(&rs->cancel, false);
	if (regular && !incoming && fstat(fd, &st) == 0)
		rs->size = (uint64_t)st.st_size;
	restore_read_progress(rs);
	rs->call = call;
	rs->fd = fd;
	rs->regular = regular && !incoming;
	rs->wait = wait;
	rs->paused = paused;
	rs->incoming = incoming;
	rs->reply_fd = reply_fd;
	rs->reply.fd = -1;
	rs->job.run = restore_open_run;
	rs->job.done = restore_open_done;
	/* A pipe may take its time: a thread of its own, not the pool's. */
	if (worker_spawn(&rs->job) < 0) {
		call_error(call, RPC_INTERNAL_ERROR, EAGAIN,
		    "cannot start a thread");
		task_discard(rs->task);
		rs->own_task = false;
		restore_free(rs);
		return -1;
	}
	if (incoming)
		log_info("an incoming migration: reading its stream");
	/* The client follows the task from its first phase. */
	if (early && !wait && !incoming) {
		yajl_gen_map_open(g);
		jg_kv_u64(g, "task", rs->task->id);
		yajl_gen_map_close(g);
		call_answer_now(call, g);
	}
	return CALL_DEFERRED;
}
