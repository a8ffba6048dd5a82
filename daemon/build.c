/*
 * build.c - vm.create as a task (see build.h).
 *
 * Order matters for crash safety: the record "building" (with the uuid
 * the domain will carry) reaches the disk before the library creates the
 * domain, and "built" only after the build succeeded.  A daemon killed
 * anywhere in between finds the record at its next start and destroys
 * the half-built domain (vm_reconcile).
 *
 * A build that failed and could not undo itself (its domain would not go)
 * keeps its record "building": the domain is handed to reap.c, which
 * destroys it until it is gone, and the record goes only then.
 *
 * The build thread touches only the job: the loop learns everything in
 * build_done().  A client that disconnects meanwhile only loses its
 * reply (conn_send to a closed connection is a no-op).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "cpukeep.h"
#include "dm.h"
#include "events.h"
#include "images.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "reap.h"
#include "report.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

struct build_job {
	struct job	job;
	struct task	*task;
	struct call	*call;		/* waiting client, or NULL */
	struct vmb_guest *guest;
	struct vmb_build *build;
	enum vmb_populate_strategy strategy;
	struct state_record rec;
	struct image_req images;
	bool		restart;	/* a VM's new domain (lifecycle.c) */
	bool		adopted;	/* its task is fill.task */
	struct build_fill fill;		/* a restore's (save.c); fill NULL */
	/* Results, written by the build thread. */
	int		rc;
	/* "state", "image", "finish" (fill.finish), or NULL: the build */
	const char	*failed_in;
	char		why[256];	/* of an "image" failure */
	struct vmb_build_result result;
	struct vmb_domain dom;
	bool		have_dom;
	char		*build_json;
	char		pin_why[256];	/* a vCPU pin not set again, or "" */
	/* cpukeep_begin's CPU (-1: none) and share; cpukeep_leave at free. */
	struct report_keep keep;
	struct build_warnings warnings;	/* of the configuration */
	struct dm	*dm;		/* an HVM guest's device model */
	/* An HVM guest's kernel and ramdisk, for its device model; -1 */
	int		dm_img[2];
};

static struct {
	struct build_config cfg;
	bool		stopping;
} B;

/* The build's device-model hooks (vmb_build_opts), on its thread. */
static int
build_dm_start(void *user, uint32_t domid, struct vmb_dm_info *ret,
    char *why, size_t len)
{
	struct build_job *bj = user;
	int rc = dm_start(bj->guest, domid, bj->dm_img, &bj->dm, why, len);

	if (rc)
		return rc;
	dm_info(bj->dm, ret);
	/*
	 * Recorded at once: a daemon that ends before the build does
	 * finds it in the "building" record and stops it (reconcile.c).
	 */
	dm_record(bj->dm, &bj->rec.dm);
	rc = state_write(&bj->rec);
	if (rc)
		snprintf(why, len, "cannot write the state record: %s",
		    strerror(-rc));
	return rc;
}

static int
build_dm_check(void *user, uint32_t domid, char *why, size_t len)
{
	struct build_job *bj = user;

	(void)domid;
	return dm_check(bj->dm, why, len);
}

static void
build_dm_stop(void *user, uint32_t domid)
{
	struct build_job *bj = user;

	(void)domid;
	dm_stop_now(bj->dm);
	bj->dm = NULL;
}

void
build_init(const struct build_config *cfg)
{
	B.cfg = *cfg;
	B.stopping = false;
}

void
build_stop(void)
{
	B.stopping = true;
}

static void
status_changed(void)
{
	if (B.cfg.status_changed != NULL)
		B.cfg.status_changed();
}

/* A restart's build ended: tell lifecycle.c (build_config). */
static void
restarted(struct vm *vm, int rc, const char *msg)
{
	if (B.cfg.restarted != NULL)
		B.cfg.restarted(vm, rc, msg);
}

int
build_errno_code(int rc)
{
	switch (-rc) {
	case ENOMEM:
	case ENOSPC:
		return E_NO_MEMORY;
	case ECANCELED:
		return E_CANCELLED;
	case EEXIST:
		return E_EXISTS;
	case EOPNOTSUPP:
		return E_UNAVAILABLE;
	case ESRCH:
	case ENOENT:
		return E_NO_SUCH_VM;
	default:
		return E_HYPERVISOR;
	}
}

static char *
build_result_json(const struct vmb_build_result *r,
    enum vmb_populate_strategy strategy, const struct report_keep *keep)
{
	yajl_gen g = jg_new();

	if (g == NULL)
		return NULL;
	report_build(g, r, strategy, keep);
	return jg_finish(g);
}

/*
 * A restart's new domain: the pins of single vCPUs the VM had (its
 * record's), as the build set cpus= for all.  One that cannot be set
 * again (a CPU gone) is said, and dropped from the record; the build
 * stands.
 */
static void
build_pin(struct build_job *bj)
{
	const struct vmb_guest *g = bj->guest;
	uint32_t max = g->maxvcpus > g->vcpus ? g->maxvcpus : g->vcpus, n = 0;
	char why[200];

	for (uint32_t i = 0; i < bj->rec.npins; i++) {
		struct state_pin *p = &bj->rec.pins[i];

		why[0] = '\0';
		if (vmb_vcpu_pin(B.cfg.ctx, bj->result.domid, max, p->vcpu,
		    p->hard, p->soft, why, sizeof(why)) == 0) {
			bj->rec.pins[n++] = *p;
			continue;
		}
		snprintf(bj->pin_why, sizeof(bj->pin_why), "vcpu %u: %s",
		    p->vcpu, why);
		free(p->hard);
		free(p->soft);
	}
	bj->rec.npins = n;
}

/*
 * Destroy a built domain that cannot stay (unrecorded, or a migration
 * that failed at its very end) and its record; one that will not go
 * keeps its "building" record for reap.c.
 */
static void
build_undo_built(struct build_job *bj)
{
	int drc;

	dm_stop_now(bj->dm);
	bj->dm = NULL;
	drc = vmb_domain_destroy(B.cfg.ctx, bj->result.domid);

	if (drc == 0 || drc == -ESRCH) {
		(void)state_remove(bj->rec.uuid);
	} else {
		bj->result.undo_rc = drc;
		bj->result.leftover_domid = bj->result.domid;
	}
}

/* A restore's source hears why its build failed (fill.failed). */
static void
build_tell_failed(struct build_job *bj)
{
	const char *why = bj->why;

	if (bj->fill.failed == NULL || bj->rc == 0)
		return;
	if (bj->failed_in == NULL)
		why = bj->result.error[0] ? bj->result.error :
		    strerror(-bj->rc);
	else if (!strcmp(bj->failed_in, "state"))
		why = "cannot write its state record";
	bj->fill.failed(bj->fill.user, bj->rc, why);
}

/*
 * An HVM guest's kernel and ramdisk are its device model's (-kernel,
 * -initrd): kept for dm_start, numbered above the descriptors the
 * device model gets them at (dm.c).
 */
static int
build_dm_images(struct build_job *bj)
{
	for (int i = 0; i < 2; i++) {
		if (bj->images.fd[i] < 0)
			continue;
		bj->dm_img[i] = fcntl(bj->images.fd[i], F_DUPFD_CLOEXEC, 10);
		if (bj->dm_img[i] < 0) {
			int rc = -errno;

			snprintf(bj->why, sizeof(bj->why), "cannot keep the "
			    "%s for the device model: %s", i ? "ramdisk" :
			    "kernel", strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static void
build_steps(struct build_job *bj)
{
	int rc;

	/*
	 * Where dom0's vCPUs wait for pCPUs, the whole request on one CPU
	 * (cpukeep.h), from here to build_job_free.
	 */
	bj->keep.cpu = cpukeep_begin(&bj->keep.share_before);
	if (bj->keep.cpu >= 0)
		log_info("%s: the daemon's threads kept on CPU %d for the "
		    "build (steal %.2f of the CPUs' wanted time before it)",
		    bj->guest->name, bj->keep.cpu, bj->keep.share_before);
	/* Images under --image-dir are opened here, off the loop. */
	rc = images_open(&bj->images, bj->guest, bj->why, sizeof(bj->why));
	if (rc == 0 && bj->images.fd[0] >= 0 &&
	    bj->guest->type == VMB_GUEST_HVM)
		rc = build_dm_images(bj);
	else if (rc == 0 && bj->images.fd[0] >= 0)
		rc = vmb_build_set_images(bj->build, bj->images.fd[0],
		    bj->images.fd[1]);
	image_req_done(&bj->images);
	if (rc < 0) {
		bj->rc = rc;
		bj->failed_in = "image";
		return;
	}
	rc = state_write(&bj->rec);
	if (rc < 0) {
		bj->rc = rc;
		bj->failed_in = "state";
		return;
	}
	rc = vmb_build_run(bj->build, &bj->result);
	if (rc == 0 && bj->result.domid == VMB_DOMID_INVALID)
		rc = -EIO;	/* a library bug; never record a domid-less VM */
	if (rc != 0) {
		bj->rc = rc < 0 ? rc : -EIO;
		/*
		 * A domain the undo could not destroy keeps its record:
		 * reap.c destroys it.  A restart's record: build_done
		 * decides (it may go on).
		 */
		if (bj->result.undo_rc == 0 && !bj->restart)
			(void)state_remove(bj->rec.uuid);
		return;
	}
	build_pin(bj);
	bj->build_json = build_result_json(&bj->result, bj->strategy,
	    &bj->keep);
	bj->rec.built = true;
	bj->rec.restart = false;
	bj->rec.domid = bj->result.domid;
	bj->rec.build_json = bj->build_json;
	/* A restarted daemon takes its device model back (dm.c). */
	dm_record(bj->dm, &bj->rec.dm);
	rc = state_write(&bj->rec);
	bj->rec.build_json = NULL;
	if (rc < 0) {
		/*
		 * Unrecorded, the domain would be taken for a half-built one
		 * at the next start: undo it now rather than later.
		 */
		build_undo_built(bj);
		bj->rc = rc;
		bj->failed_in = "state";
		return;
	}
	/* An incoming migration: unpaused, and the sender told (save.c). */
	if (bj->fill.finish != NULL) {
		rc = bj->fill.finish(bj->fill.user, bj->result.domid, bj->why,
		    sizeof(bj->why));
		if (rc < 0) {
			build_undo_built(bj);
			bj->rc = rc;
			bj->failed_in = "finish";
			return;
		}
		/*
		 * The result's domain was read before finish unpaused it:
		 * recorded as it is now, or the VM would be listed paused
		 * (after the sender was told DONE) until the next refresh.
		 */
		if (vmb_domain_get(vmbd.ctx, bj->result.domid,
		    &bj->result.domain) < 0)
			bj->result.have_domain = false;
	}
	/*
	 * Only for display: vm_built() takes the domid from the result.
	 * The build read its domain back after populate (a list less per
	 * create); the domain watch's refresh brings the rest.
	 */
	bj->have_dom = bj->result.have_domain;
	if (bj->have_dom)
		bj->dom = bj->result.domain;
	bj->rc = 0;
}

static void
build_run(struct job *job)
{
	struct build_job *bj = (struct build_job *)job;

	build_steps(bj);
	build_tell_failed(bj);
}

static void
build_job_free(struct build_job *bj)
{
	if (bj == NULL)
		return;
	if (bj->keep.cpu >= 0)
		cpukeep_leave();
	vmb_build_free(bj->build);
	/* Built, but not kept (the record failed): its device model too. */
	dm_stop_now(bj->dm);
	for (int i = 0; i < 2; i++)
		if (bj->dm_img[i] >= 0)
			close(bj->dm_img[i]);
	if (bj->fill.drop != NULL)
		bj->fill.drop(bj->fill.user);
	vmb_guest_free(bj->guest);
	image_req_done(&bj->images);
	free(bj->rec.config_path);
	free(bj->rec.config_json);
	free(bj->rec.source_json);
	state_pins_free(bj->rec.pins, bj->rec.npins);
	free(bj->build_json);
	build_warnings_done(&bj->warnings);
	free(bj);
}

void
build_warnings_done(struct build_warnings *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	w->v = NULL;
	w->n = 0;
}

/* "warnings": [...], in every vm.create result. */
static void
gen_warnings(yajl_gen g, const struct build_warnings *w)
{
	jg_key(g, "warnings");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < w->n; i++)
		jg_str(g, w->v[i]);
	yajl_gen_array_close(g);
}

/*
 * A build that succeeded: the VM takes the build's domid, pins and guest,
 * a restart is announced, and the task and its caller are told.
 */
static void
build_succeeded(struct build_job *bj, struct vm *vm)
{
	struct task *t = bj->task;
	char msg[400];

	/* Since the request too: a restore reads the stream's head first,
	 * and what comes before the build is not in its phases. */
	snprintf(msg, sizeof(msg), "domain %u built in %.3f s (%.3f s since "
	    "the request)", bj->result.domid, bj->result.total_ns / 1e9,
	    now_mono() - t->started_mono);
	/*
	 * The build's own domid, not only what a progress tick or the
	 * domain list happened to show: a build can end between two
	 * ticks and the list can fail, and a VM without its domid is
	 * one vm.destroy cannot destroy.
	 */
	if (vm != NULL && bj->pin_why[0])
		log_vm(LOG_WARNING, t->vm, bj->result.domid, t->id,
		    "%s: a pin of its vCPUs is not set again: %s; it "
		    "is dropped", t->vm, bj->pin_why);
	/* From now on its death crashes the guest (dm.c). */
	if (bj->dm != NULL)
		dm_supervise(bj->dm);
	bj->dm = NULL;
	if (vm != NULL) {
		vm->domid = bj->result.domid;
		vm->restart = false;
		/* The pins set again, as the record now has them. */
		state_pins_free(vm->pins, vm->npins);
		vm->pins = bj->rec.pins;
		vm->npins = bj->rec.npins;
		bj->rec.pins = NULL;
		bj->rec.npins = 0;
		vm_built(vm, bj->have_dom ? &bj->dom : NULL,
		    bj->guest, bj->build_json);
		if (bj->restart)
			restarted(vm, 0, msg);
	}
	task_finish(t, TASK_DONE, 0, 0, NULL);
	if (bj->fill.fill != NULL)
		metrics_stream_done(true, "done", 0);
	else
		metrics_build_done("done", bj->result.total_ns / 1e9,
		    &bj->result);
	log_vm(LOG_INFO, t->vm, bj->result.domid, t->id, "%s: %s",
	    t->vm, msg);
	if (bj->call != NULL) {
		yajl_gen g = jg_new();

		yajl_gen_map_open(g);
		jg_kv_u64(g, "task", t->id);
		jg_key(g, "vm");
		if (vm != NULL)
			vm_gen_info(g, vm);
		else
			yajl_gen_null(g);
		gen_warnings(g, &bj->warnings);
		yajl_gen_map_close(g);
		call_reply(bj->call, g);
		yajl_gen_free(g);
	}
}

/*
 * What a failed build says: its RPC error code, the phase it failed in
 * (*phase; the image's load for a bad image) and the message in `msg`,
 * from where and why the library's result says, written on failure
 * too: the task's last progress tick is the undo's by then.
 */
static int
build_failure_text(const struct build_job *bj, bool image,
    const char **phase, char *msg, size_t size)
{
	const char *vmname = bj->task->vm;
	const char *why;
	int code;

	*phase = task_phase_name(bj->task, image ? VMB_PHASE_LOAD :
	    bj->result.failed_phase);
	why = bj->result.error[0] ? bj->result.error : strerror(-bj->rc);
	code = image ? E_IMAGE : bj->failed_in != NULL ?
	    RPC_INTERNAL_ERROR : build_errno_code(bj->rc);
	if (bj->failed_in != NULL && image)
		snprintf(msg, size, "build of %s failed in "
		    "phase %s: %s", vmname, *phase, bj->why);
	else if (bj->failed_in != NULL &&
	    !strcmp(bj->failed_in, "finish"))
		snprintf(msg, size, "migration of %s failed at "
		    "its end: %s; its domain here is destroyed",
		    vmname, bj->why);
	else if (bj->failed_in != NULL)
		snprintf(msg, size, "cannot write the state "
		    "record of %s: %s", vmname, strerror(-bj->rc));
	else if (bj->rc == -ECANCELED)
		snprintf(msg, size, "build of %s cancelled "
		    "(in phase %s); everything was undone", vmname,
		    *phase);
	else if (bj->result.failed_phase == VMB_PHASE_DONE)
		snprintf(msg, size, "build of %s failed after "
		    "it was done: %s", vmname, why);
	else
		snprintf(msg, size, "build of %s failed in "
		    "phase %s: %s", vmname, *phase, why);
	if (bj->result.undo_rc != 0) {
		size_t len = strlen(msg);

		snprintf(msg + len, size - len, "; its domain "
		    "could not be destroyed (%s) and will be again "
		    "until it is gone", strerror(-bj->result.undo_rc));
	}
	return code;
}

/*
 * What becomes of the VM of a failed build: kept for the next daemon
 * (a restart interrupted by the stop), kept for reap.c (a domain the
 * undo could not destroy), or gone with its record.
 */
static void
build_failed_vm(struct build_job *bj, struct vm *vm, const char *msg)
{
	struct task *t = bj->task;

	if (vm != NULL && bj->restart && bj->rc == -ECANCELED &&
	    B.stopping) {
		/* Its record says "restart": the next daemon goes on. */
		log_vm(LOG_NOTICE, t->vm, VMB_DOMID_INVALID, t->id,
		    "restart of %s interrupted: it is built when the "
		    "daemon starts again", t->vm);
	} else if (vm != NULL && bj->result.undo_rc != 0) {
		/* The record stays until reap.c has the domain gone. */
		if (bj->restart)
			restarted(vm, bj->rc, msg);
		reap_start(vm, bj->result.leftover_domid);
	} else {
		if (bj->restart) {
			vm_unrecord(bj->rec.uuid);
			if (vm != NULL)
				restarted(vm, bj->rc, msg);
		}
		if (vm != NULL)
			vm_remove(vm, true);
	}
}

/* A build that failed or was cancelled: the VM, the task, the caller. */
static void
build_failed(struct build_job *bj, struct vm *vm)
{
	struct task *t = bj->task;
	bool image = bj->failed_in ? !strcmp(bj->failed_in, "image") :
	    bj->result.bad_image;
	const char *phase;
	char msg[400];
	int code;

	code = build_failure_text(bj, image, &phase, msg, sizeof(msg));
	build_failed_vm(bj, vm, msg);
	if (bj->failed_in == NULL)
		t->err_phase = phase;
	task_finish(t, bj->rc == -ECANCELED ? TASK_CANCELLED :
	    TASK_FAILED, code, -bj->rc, msg);
	if (bj->fill.fill != NULL)
		metrics_stream_done(true, bj->rc == -ECANCELED ?
		    "cancelled" : "failed", 0);
	else
		metrics_build_done(bj->rc == -ECANCELED ? "cancelled" :
		    "failed", 0, NULL);
	if (bj->call != NULL) {
		call_error(bj->call, code, bj->rc, "%s", msg);
		if (bj->failed_in == NULL || image)
			call_error_phase(bj->call, phase);
		call_fail(bj->call);
	}
}

/* The job's end, back on the event loop. */
static void
build_done(struct job *job)
{
	struct build_job *bj = (struct build_job *)job;
	struct vm *vm = vm_find_uuid(bj->rec.uuid);

	if (bj->rc == 0)
		build_succeeded(bj, vm);
	else
		build_failed(bj, vm);
	/* A failed build freed memory: scrubbing starts. */
	if (bj->rc != 0)
		events_scrub_kick();
	build_job_free(bj);
	status_changed();
}

/*
 * Undo build_prepare() of a build that did not start: its task goes,
 * unless adopted (build_task_start() finishes that one, failed).
 */
static void
build_unprepare(struct build_job *bj)
{
	if (!bj->adopted)
		task_discard(bj->task);
	build_job_free(bj);
}

/*
 * A build of `guest` (taken over) as a new task: the library's build,
 * the job and the record it writes.  0, or a negative errno with the
 * reason in `why`.
 */
static int
build_prepare(struct vmb_guest *guest, const char *kind,
    const char *config_path, const char *source, bool paused,
    const struct build_fill *fill, struct build_job **ret_bj, char *why,
    size_t why_len)
{
	struct vmb_build_opts opts = { 0 };
	struct build_job *bj;
	struct task *t;
	int rc;

	bj = calloc(1, sizeof(*bj));
	if (bj != NULL && fill != NULL && fill->task != NULL) {
		t = fill->task;
		bj->adopted = true;
		task_adopt(t, guest->name, guest->uuid, fill->phase_names);
	} else {
		t = bj != NULL ? task_new(kind, guest->name, guest->uuid) :
		    NULL;
	}
	if (t == NULL) {
		free(bj);
		if (fill != NULL && fill->drop != NULL)
			fill->drop(fill->user);
		vmb_guest_free(guest);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	image_req_init(&bj->images);
	bj->dm_img[0] = bj->dm_img[1] = -1;
	bj->keep.cpu = -1;
	bj->keep.share_before = -1;
	bj->guest = guest;
	bj->task = t;
	if (fill != NULL) {
		bj->fill = *fill;
		opts.restore = fill->fill;
		opts.restore_user = fill->user;
		opts.restore_populates = fill->populates;
	}
	opts.strategy = B.cfg.strategy;
	opts.start_paused = paused;
	opts.scrub_wait_ms = B.cfg.scrub_wait_ms;
	opts.unpause_after_hotplug = B.cfg.unpause_after_hotplug;
	opts.hvmloader = B.cfg.hvmloader;
	opts.seabios = B.cfg.seabios;
	opts.ovmf = B.cfg.ovmf;
	opts.dm_start = build_dm_start;
	opts.dm_check = build_dm_check;
	opts.dm_stop = build_dm_stop;
	opts.dm_user = bj;
	/* The daemon runs its own device model, never one a client names. */
	if (guest->hvm.dm_override != NULL) {
		snprintf(why, why_len, "%s: device_model_override: not "
		    "supported by vmbuildd (it runs %s, its --device-model)",
		    guest->name, dm_path());
		build_unprepare(bj);
		return -EINVAL;
	}
	rc = vmb_build_new(B.cfg.ctx, guest, &opts, task_progress_cb, t,
	    &bj->build);
	if (rc < 0) {
		snprintf(why, why_len, "cannot prepare the build of %s: %s",
		    guest->name, strerror(-rc));
		build_unprepare(bj);
		return rc;
	}
	t->build = bj->build;
	if (fill != NULL && fill->bind != NULL)
		fill->bind(fill->user, bj->build, t);
	bj->strategy = B.cfg.strategy;
	memcpy(bj->rec.uuid, guest->uuid, 16);
	snprintf(bj->rec.name, sizeof(bj->rec.name), "%s", guest->name);
	bj->rec.domid = VMB_DOMID_INVALID;
	bj->rec.created_at = t->created_at;
	bj->rec.config_path = config_path ? strdup(config_path) : NULL;
	bj->rec.source_json = source ? strdup(source) : NULL;
	/* The one JSON form of the description (guestjson.c). */
	bj->rec.config_json = guestjson_text(guest);
	bj->job.run = build_run;
	bj->job.done = build_done;
	*ret_bj = bj;
	return 0;
}


static int
build_task_start(struct call *call, yajl_gen g, struct vmb_guest *guest,
    struct image_req *images, const char *config_path, const char *source,
    bool wait, bool paused, struct build_warnings *warnings,
    const char *kind, const struct build_fill *fill)
{
	struct build_job *bj = NULL;
	struct vm *vm = NULL;
	char u[VMB_UUID_STRLEN], why[300];
	struct task *t;
	int rc;

	if (B.stopping) {
		rc = call_error(call, E_BUSY, 0, "the daemon is shutting down");
		goto fail;
	}
	/* A restore's task is counted already (m_vm_restore). */
	if (task_running() - (fill != NULL && fill->task != NULL) >=
	    B.cfg.max_tasks) {
		rc = call_error(call, E_BUSY, 0, "%u tasks are running "
		    "(limit %u); try again later", task_running(),
		    B.cfg.max_tasks);
		goto fail;
	}
	if (vm_find_name(guest->name) != NULL) {
		rc = call_error(call, E_EXISTS, 0, "a VM named \"%s\" exists",
		    guest->name);
		goto fail;
	}
	/* The uuid is chosen here so that the record can carry it. */
	if (vmb_uuid_is_null(guest->uuid))
		vmb_uuid_new(guest->uuid);
	else if (vm_find_uuid(guest->uuid) != NULL) {
		vmb_uuid_to_str(guest->uuid, u);
		rc = call_error(call, E_EXISTS, 0, "a VM with uuid %s exists",
		    u);
		goto fail;
	}
	rc = build_prepare(guest, kind, config_path, source, paused,
	    fill, &bj, why, sizeof(why));
	guest = NULL;
	if (rc < 0) {
		rc = call_error(call, rc == -ENOMEM ? RPC_INTERNAL_ERROR :
		    build_errno_code(rc), rc, "%s", why);
		goto fail;
	}
	t = bj->task;
	bj->warnings = *warnings;	/* the job's now */
	warnings->v = NULL;
	warnings->n = 0;
	/* The images go with the build (descriptors and all). */
	bj->images = *images;
	image_req_init(images);
	vm = vm_add_building(bj->guest->name, bj->guest->uuid, t->id,
	    config_path, bj->guest, source);
	if (vm == NULL) {
		rc = call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
		goto fail;
	}
	/* A restart builds from the same descriptors (vm.c keeps them). */
	vm_keep_images(vm, bj->images.fd);
	if (wait)
		bj->call = call;
	rc = worker_spawn(&bj->job);
	if (rc < 0) {
		bj->call = NULL;
		rc = call_error(call, RPC_INTERNAL_ERROR, rc,
		    "cannot start a build thread: %s", strerror(-rc));
		goto fail;
	}
	vmb_uuid_to_str(bj->guest->uuid, u);
	log_vm(LOG_INFO, bj->guest->name, VMB_DOMID_INVALID, t->id,
	    "task %llu: building %s (%s, %llu MiB, %u vCPUs, populate %s)",
	    (unsigned long long)t->id, bj->guest->name, u,
	    (unsigned long long)(bj->guest->memory_bytes >> 20),
	    bj->guest->vcpus, vmb_populate_strategy_name(B.cfg.strategy));
	status_changed();
	if (wait)
		return CALL_DEFERRED;
	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", t->id);
	jg_kv_str(g, "vm", bj->guest->name);
	jg_kv_str(g, "uuid", u);
	gen_warnings(g, &bj->warnings);
	yajl_gen_map_close(g);
	return 0;
fail:
	/* Subscribers saw it "building": tell them it is gone. */
	if (vm != NULL)
		vm_remove(vm, true);
	if (bj != NULL)
		build_unprepare(bj);
	else if (fill != NULL && fill->drop != NULL && guest != NULL)
		fill->drop(fill->user);	/* not handed to a job yet */
	/* A restore's task, which its client may follow: it failed. */
	if (fill != NULL && fill->task != NULL)
		task_finish(fill->task, TASK_FAILED, call->err_code,
		    call->err_errno, call->err_msg);
	vmb_guest_free(guest);
	return -1;
}

int
build_start(struct call *call, yajl_gen g, struct vmb_guest *guest,
    struct image_req *images, const char *config_path, const char *source,
    bool wait, bool paused, struct build_warnings *warnings)
{
	return build_task_start(call, g, guest, images, config_path, source, wait,
	    paused, warnings, M_VM_CREATE, NULL);
}

int
build_restore(struct call *call, yajl_gen g, struct vmb_guest *guest,
    const char *source, const struct build_fill *fill, bool wait,
    bool paused)
{
	struct build_warnings none = { NULL, 0 };
	struct image_req images;

	image_req_init(&images);
	return build_task_start(call, g, guest, &images, NULL, source, wait, paused,
	    &none, M_VM_RESTORE, fill);
}

int
build_restart(struct vm *vm, struct vmb_guest *guest,
    struct image_req *images, const char *reason, char *why,
    size_t why_len)
{
	struct build_job *bj = NULL;
	int rc;

	if (B.stopping) {
		vmb_guest_free(guest);
		snprintf(why, why_len, "the daemon is shutting down");
		return -ECANCELED;
	}
	/* The same VM: its name and uuid, whatever the description says. */
	snprintf(guest->name, sizeof(guest->name), "%s", vm->name);
	memcpy(guest->uuid, vm->uuid, 16);
	rc = build_prepare(guest, "vm.restart", vm->config_path, vm->source,
	    false, NULL, &bj, why, why_len);
	if (rc < 0)
		return rc;
	/* Opened: nothing is left to open, with anyone's rights. */
	bj->images = *images;
	bj->images.as = NULL;
	image_req_init(images);
	bj->restart = true;
	bj->rec.restart = true;
	bj->rec.created_at = vm->created_at;
	vm_record_restarts(vm, &bj->rec);
	if (state_pins_copy(vm->pins, vm->npins, &bj->rec.pins) < 0) {
		snprintf(why, why_len, "out of memory");
		build_unprepare(bj);
		return -ENOMEM;
	}
	bj->rec.npins = vm->npins;
	rc = worker_spawn(&bj->job);
	if (rc < 0) {
		snprintf(why, why_len, "cannot start a build thread: %s",
		    strerror(-rc));
		build_unprepare(bj);
		return rc;
	}
	vm_rebuilding(vm, bj->task->id, reason);
	log_vm(LOG_INFO, vm->name, VMB_DOMID_INVALID, bj->task->id,
	    "task %llu: building %s again (%s)",
	    (unsigned long long)bj->task->id, vm->name, reason != NULL ?
	    reason : "a restart a previous vmbuildd left half done");
	status_changed();
	return 0;
}
