/*
 * lifecycle.c - domain events and the on_* actions (see lifecycle.h).
 *
 * Why a slow refresh remains beside the events: xenstored says when a
 * domain is introduced, shuts down or goes, but nothing when another
 * toolstack pauses or unpauses one, when a vCPU blocks, or how memory
 * and CPU time move, which vm.list, vm.info and the per-VM metrics
 * show; and a domain that was never introduced to xenstored (another
 * toolstack's build that failed half way) fires no watch when it goes.
 * So the registry is still listed every VM_REFRESH_SEC (rather than
 * every VM_REFRESH_POLL_SEC, as where there are no events), and a
 * shutdown it finds is acted on as if an event had told it.
 *
 * A restart is crash safe: the record says "restart" before the old
 * domain is destroyed, and keeps saying it while the new one is built,
 * so a daemon that dies in between finishes the restart when it starts
 * again (vm_reconcile, then start_pending here).  The new domain gets
 * the devices the VM has, not those it was created with: the record
 * written then holds the VM's configuration, whose disks and vifs
 * hot-plug keeps current (devices.c), and the build reads them from it
 * (source_parse), in this daemon or the next.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "build.h"
#include "dm.h"
#include "events.h"
#include "guestjson.h"
#include "images.h"
#include "json.h"
#include "lifecycle.h"
#include "log.h"
#include "peer.h"
#include "proto.h"
#include "shutdown.h"
#include "source.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

/*
 * A VM restarted this many times within the last RESTART_WINDOW_SEC (a
 * sliding window) is left shut down: a guest that crashes as it boots,
 * or every minute, with on_crash="restart", would otherwise keep builds
 * going for ever.  Between restarts a growing wait: none for the first
 * in the window, then 1, 2, 4... s, at most --restart-backoff; so a
 * guest crashing once a minute reaches the limit in about 20 min.  The
 * times are kept in the VM's record, so a daemon restart resets nothing.
 */
#define RESTART_LIMIT		10
#define RESTART_WINDOW_SEC	3600

struct watch_job {
	struct job	job;
	int		rc;
	struct vmb_domain_event *ev;
	size_t		n;
	uint64_t	since;		/* vm_seq() before the read */
};

/*
 * Destroy a shut-down domain (on_*=destroy), or replace it (restart:
 * the description is parsed again with the devices the VM has now,
 * then the record says "restart", the domain goes; the loop then
 * starts the build).
 */
struct act_job {
	struct job	job;
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	uint32_t	domid;		/* VMB_DOMID_INVALID: already gone */
	enum vmb_action	action;
	const char	*reason;	/* vmb_shutdown_reason_name(); NULL */
	struct state_record rec;	/* restart: source and config parsed */
	bool		record;		/* restart: write rec first */
	int		rc;
	struct vmb_guest *guest;	/* restart: the guest to build */
	/* restart: its images, opened before the old domain goes */
	int		kept[2];	/* the VM's descriptors (dups); -1 */
	struct source_owner owner;	/* who created it (source.h) */
	struct image_req images;
	char		why[400];
};

/*
 * After a read of the domain events, the watch is looked at again this
 * much later: events in between (hundreds a second while small VMs are
 * created and destroyed) are read together, one domain list for all of
 * them, rather than a list per event.  A guest's shutdown is acted on
 * that much later at most.
 */
#define WATCH_COALESCE_MS	20

static struct {
	struct vmb_watch *watch;
	struct event	*ev;
	struct event	*ev_rearm;	/* watch_arm, WATCH_COALESCE_MS on */
	bool		reading;
	bool		failing;	/* the last read failed */
} L;

/* ------------------------------------------------------------------ */
/* Events.                                                             */

static void
watch_arm(void)
{
	/* One shot: the descriptor stays readable until a worker drains it. */
	if (L.ev != NULL && !vmbd.stopping)
		event_add(L.ev, NULL);
}

static void
watch_run(struct job *job)
{
	struct watch_job *wj = (struct watch_job *)job;

	wj->rc = vmb_watch_read(L.watch, &wj->ev, &wj->n);
}

static void
watch_done(struct job *job)
{
	struct watch_job *wj = (struct watch_job *)job;
	const struct timeval rearm = { 0, WATCH_COALESCE_MS * 1000 };

	L.reading = false;
	if (wj->rc < 0 && !L.failing)
		log_warnx("cannot read domain events: %s; the refresh every "
		    "%d s goes on", strerror(-wj->rc), VM_REFRESH_SEC);
	/*
	 * A watch that cannot list (hvsim gone, say) is news for the
	 * registry too: its refresh finds out now and reports the
	 * hypervisor down, rather than at the next slow refresh.
	 */
	if (wj->rc < 0 && !L.failing)
		vm_refresh_kick();
	L.failing = wj->rc < 0;
	for (size_t i = 0; wj->rc == 0 && i < wj->n; i++)
		vm_apply_event(&wj->ev[i], wj->since);
	if (wj->rc == 0 && wj->n > 0) {
		events_scrub_kick();
		vmbd_status_changed();
	}
	free(wj->ev);
	free(wj);
	if (L.ev_rearm == NULL || evtimer_add(L.ev_rearm, &rearm) < 0)
		watch_arm();
}

static void
watch_rearm_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	watch_arm();
}

static void
watch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct watch_job *wj;

	(void)fd;
	(void)what;
	(void)arg;
	if (L.reading || vmbd.stopping)
		return;
	wj = calloc(1, sizeof(*wj));
	if (wj == NULL) {
		watch_arm();
		return;
	}
	wj->job.run = watch_run;
	wj->job.done = watch_done;
	wj->since = vm_seq();
	L.reading = true;
	worker_submit(&wj->job);
}

void
lifecycle_open(void)
{
	int rc = vmb_watch_open(vmbd.ctx, &L.watch);

	if (rc == 0)
		return;
	L.watch = NULL;
	if (rc == -EOPNOTSUPP)
		log_notice("the hypervisor tells no domain events: domains "
		    "are listed every %d s", VM_REFRESH_POLL_SEC);
	else
		log_warnx("cannot watch domain events: %s; domains are "
		    "listed every %d s", strerror(-rc), VM_REFRESH_POLL_SEC);
}

/* ------------------------------------------------------------------ */
/* Actions.                                                            */

static void start_pending(struct vm *vm);

static bool
shut_down(const struct vm *vm)
{
	return vm->state == VM_SHUTDOWN || vm->state == VM_CRASHED;
}

/* The VM's record as it stands, saying its domain is being replaced. */
static int
restart_record(const struct vm *vm, struct state_record *rec)
{
	int rc = vm_record(vm, NULL, rec);

	rec->restart = true;
	return rc;
}

/*
 * A restart's kernel and ramdisk, opened now, before the old domain is
 * destroyed, so that one refused leaves it shut down: the descriptors
 * the VM came with, else its paths under --image-dir with the rights
 * of its creator (root's only if root created it), if they are still
 * the files the creator was found able to read (images.c).
 */
static int
restart_images(struct act_job *aj)
{
	int rc = source_owner(aj->rec.source_json, &aj->owner, aj->why,
	    sizeof(aj->why));

	if (rc == 0)
		rc = images_restart(aj->guest, aj->kept, &aj->owner,
		    &aj->images, aj->why, sizeof(aj->why));
	if (rc == 0)
		rc = images_open(&aj->images, aj->guest, aj->why,
		    sizeof(aj->why));
	return rc;
}

/*
 * A restart of a VM no root client created attaches only the disks its
 * creator may open, judged as vm.create and hot-plug judged them
 * (peer.c): a target swapped since for a link to a root-only file or
 * a device is refused, not handed to root's hotplug script.
 */
static int
restart_disks(struct act_job *aj)
{
	const struct vmb_guest *g = aj->guest;
	char err[300];

	for (uint32_t i = 0; !aj->owner.by_root && i < g->nr_disks; i++) {
		const struct vmb_disk *d = &g->disks[i];
		int rc = -EACCES;

		snprintf(err, sizeof(err), "\"%.200s\" is not an absolute "
		    "path", d->target ? d->target : "");
		if (d->target != NULL && d->target[0] == '/')
			rc = peer_cred_may_use(&aj->owner.cred, d->target,
			    !d->readonly, NULL, err, sizeof(err));
		if (rc < 0) {
			snprintf(aj->why, sizeof(aj->why), "disk %s: %s (a "
			    "restart attaches only what the VM's creator may "
			    "open)", d->vdev, err);
			return rc;
		}
	}
	return 0;
}

static void
act_run(struct job *job)
{
	struct act_job *aj = (struct act_job *)job;

	aj->rc = 0;
	/*
	 * The guest to build first, as vm.create parses it (no file is
	 * looked at), from its description with the disks and vifs of its
	 * configuration, hot-plugged since or not: a VM that cannot be
	 * built again (an image of its gone) keeps its shut-down domain,
	 * for someone to see; a restart a previous daemon left half done
	 * has none left, so the VM goes.
	 */
	if (aj->action == VMB_ACTION_RESTART && ((aj->rc = source_parse(
	    aj->rec.source_json, aj->rec.config_json, &aj->guest, aj->why,
	    sizeof(aj->why))) < 0 || (aj->rc = restart_images(aj)) < 0 ||
	    (aj->rc = restart_disks(aj)) < 0)) {
		if (aj->domid == VMB_DOMID_INVALID) {
			aj->rc = 0;
			vmb_guest_free(aj->guest);
			aj->guest = NULL;
			(void)state_remove(aj->uuid);
		}
		return;
	}
	if (aj->record && (aj->rc = state_write(&aj->rec)) < 0) {
		snprintf(aj->why, sizeof(aj->why), "cannot write its record: "
		    "%s", strerror(-aj->rc));
		return;
	}
	if (aj->domid != VMB_DOMID_INVALID) {
		dm_stop_domid(aj->domid);
		aj->rc = vmb_domain_destroy(vmbd.ctx, aj->domid);
		if (aj->rc == -ESRCH || aj->rc == -ENOENT)
			aj->rc = 0;
		if (aj->rc < 0) {
			snprintf(aj->why, sizeof(aj->why), "cannot destroy "
			    "domain %u: %s", aj->domid, strerror(-aj->rc));
			return;
		}
	}
	if (aj->action == VMB_ACTION_DESTROY)
		(void)state_remove(aj->uuid);
}

/* A restart that cannot go on: the VM has no domain left, so it goes. */
static void
restart_failed(struct vm *vm, const char *why)
{
	log_vm(LOG_ERR, vm->name, VMB_DOMID_INVALID, 0, "cannot build %s "
	    "again: %s; it is gone", vm->name, why);
	shutdown_failed(vm->uuid, E_HYPERVISOR, 0, why);
	vm_unrecord(vm->uuid);
	vm_remove(vm, true);
}

static void
act_done(struct job *job)
{
	struct act_job *aj = (struct act_job *)job;
	struct vm *vm = vm_find_uuid(aj->uuid);
	char why[400];

	if (vm != NULL)
		vm->busy = false;
	if (aj->rc < 0) {
		/* The domain stays as it is, shut down, for someone to see. */
		log_vm(LOG_ERR, aj->name, aj->domid, 0, "%s: on_%s=%s: %s; "
		    "domain %u left shut down", aj->name, aj->reason ?
		    aj->reason : "restart", vmb_action_name(aj->action),
		    aj->why, aj->domid);
		shutdown_failed(aj->uuid, E_HYPERVISOR, -aj->rc, aj->why);
		if (vm != NULL)
			vm->restart = false;
	} else if (vm == NULL) {
		/* Removed meanwhile: nothing to build or to announce. */
	} else if (aj->action == VMB_ACTION_DESTROY) {
		log_vm(LOG_INFO, vm->name, aj->domid, 0, "%s (domain %u) "
		    "destroyed (on_%s)", vm->name, aj->domid, aj->reason);
		shutdown_outcome(vm->uuid, "destroyed", aj->reason, "destroy",
		    VMB_DOMID_INVALID);
		vm_announce(vm, "destroyed", aj->reason, "destroy");
		vm_remove(vm, false);
		events_scrub_kick();
	} else if (aj->guest == NULL) {
		restart_failed(vm, aj->why);
		events_scrub_kick();
	} else if (vmbd.stopping) {
		/* Its record says "restart": the next daemon builds it. */
		log_vm(LOG_NOTICE, vm->name, VMB_DOMID_INVALID, 0, "%s is "
		    "built again when the daemon starts again", vm->name);
	} else if (build_restart(vm, aj->guest, &aj->images, aj->reason, why,
	    sizeof(why)) < 0) {
		aj->guest = NULL;
		restart_failed(vm, why);
	} else {
		aj->guest = NULL;
		vm->restarts++;
		events_scrub_kick();
	}
	vmb_guest_free(aj->guest);
	state_record_done(&aj->rec);
	image_req_done(&aj->images);
	peer_cred_done(&aj->owner.cred);
	for (int i = 0; i < 2; i++)
		if (aj->kept[i] >= 0)
			close(aj->kept[i]);
	free(aj);
	vmbd_status_changed();
}

static int
act_submit(struct vm *vm, enum vmb_action action, const char *reason)
{
	struct act_job *aj = calloc(1, sizeof(*aj));

	if (aj == NULL)
		return -ENOMEM;
	memcpy(aj->uuid, vm->uuid, 16);
	snprintf(aj->name, sizeof(aj->name), "%s", vm->name);
	aj->domid = vm->have_dom ? vm->domid : VMB_DOMID_INVALID;
	aj->action = action;
	aj->reason = reason;
	if (action == VMB_ACTION_RESTART && restart_record(vm, &aj->rec) < 0) {
		free(aj);
		return -ENOMEM;
	}
	image_req_init(&aj->images);
	/* The worker may not look at the VM: its descriptors go with it. */
	for (int i = 0; i < 2; i++)
		aj->kept[i] = vm->image_fd[i] >= 0 ? fcntl(vm->image_fd[i],
		    F_DUPFD_CLOEXEC, 3) : -1;
	if (action == VMB_ACTION_RESTART) {
		/* A restart left half done by a daemon: recorded already. */
		aj->record = aj->domid != VMB_DOMID_INVALID;
		vm->restart = true;
	}
	aj->job.run = act_run;
	aj->job.done = act_done;
	vm->busy = true;
	worker_submit(&aj->job);
	return 0;
}

/*
 * Forget the restarts that left the window; then the wait before
 * another (s), or -1 when RESTART_LIMIT are in it.  Unix times: they
 * outlive the daemon.  One in the future (the clock set back) counts as
 * now; one more than a window ahead is dropped.
 */
static int
restart_wait(struct vm *vm)
{
	double now = now_real();
	unsigned k = 0, wait;

	for (unsigned i = 0; i < vm->nrestart_times; i++) {
		double t = vm->restart_times[i];

		if (now - t < RESTART_WINDOW_SEC &&
		    t - now < RESTART_WINDOW_SEC)
			vm->restart_times[k++] = t;
	}
	vm->nrestart_times = k;
	if (k >= RESTART_LIMIT)
		return -1;
	wait = k == 0 ? 0 : 1u << (k - 1 < 16 ? k - 1 : 16);
	return (int)(wait < vmbd.restart_backoff ? wait :
	    vmbd.restart_backoff);
}

/* A restart begins: into the history its record will hold. */
static void
restart_note(struct vm *vm)
{
	if (vm->nrestart_times == STATE_RESTARTS_MAX) {
		memmove(vm->restart_times, vm->restart_times + 1,
		    (STATE_RESTARTS_MAX - 1) * sizeof(double));
		vm->nrestart_times--;
	}
	vm->restart_times[vm->nrestart_times++] = now_real();
}

/*
 * Why a restart could not read the VM's kernel or ramdisk (NULL: it
 * can): it came as a descriptor this daemon does not hold (started
 * since the VM was created) and lies outside --image-dir.  Checked
 * before the old domain is destroyed, so that it stays, shut down.
 */
static const char *
restart_images_why(const struct vm *vm)
{
	for (int i = 0; i < 2 && vm->guest != NULL; i++) {
		const char *path = i == 0 ? vm->guest->kernel :
		    vm->guest->ramdisk;

		if (path == NULL || vm->image_fd[i] >= 0 ||
		    images_in_dir(path))
			continue;
		return i == 0 ? "its kernel came as a descriptor, which this "
		    "vmbuildd (started since) does not hold, and lies "
		    "outside --image-dir" : "its ramdisk came as a "
		    "descriptor, which this vmbuildd (started since) does "
		    "not hold, and lies outside --image-dir";
	}
	return NULL;
}

/*
 * The action for a VM of ours that shut down, and why if not on_*'s; a
 * restart's wait in *wait.
 */
static enum vmb_action
action_for(struct vm *vm, enum vmb_shutdown_reason r, const char **why,
    int *wait)
{
	static char buf[120];
	enum vmb_action a = vm->on[r];

	*why = NULL;
	if (a != VMB_ACTION_RESTART)
		return a;
	if (vm->source == NULL) {
		*why = "no description to build it from is recorded (a "
		    "VM of an older vmbuildd)";
		return VMB_ACTION_PRESERVE;
	}
	if ((*why = restart_images_why(vm)) != NULL)
		return VMB_ACTION_PRESERVE;
	if ((*wait = restart_wait(vm)) < 0) {
		snprintf(buf, sizeof(buf), "it was restarted too often (%u "
		    "times within the last %d s, the limit)",
		    vm->nrestart_times, RESTART_WINDOW_SEC);
		*why = buf;
		return VMB_ACTION_PRESERVE;
	}
	return a;
}

/* The wait before a restart is over: restart, if still to be done. */
static void
restart_due(evutil_socket_t fd, short what, void *arg)
{
	struct vm *vm = arg;
	const char *rn = vmb_shutdown_reason_name(vm->dom.shutdown_reason);

	(void)fd;
	(void)what;
	/* Destroyed, or replaced by someone else meanwhile: nothing to do. */
	if (vmbd.stopping || vm->busy || !shut_down(vm) ||
	    vm->handled != vm->domid)
		return;
	restart_note(vm);
	if (act_submit(vm, VMB_ACTION_RESTART, rn) < 0)
		log_vm(LOG_ERR, vm->name, vm->domid, 0, "%s: out of memory, "
		    "left shut down", vm->name);
}

/* A restart after `wait` s (0: now); 0, or -ENOMEM. */
static int
restart_after(struct vm *vm, int wait, const char *rn)
{
	struct timeval tv = { wait, 0 };

	if (wait == 0) {
		restart_note(vm);
		return act_submit(vm, VMB_ACTION_RESTART, rn);
	}
	if (vm->restart_ev == NULL)
		vm->restart_ev = evtimer_new(vmbd.base, restart_due, vm);
	if (vm->restart_ev == NULL)
		return -ENOMEM;
	return evtimer_add(vm->restart_ev, &tv) < 0 ? -ENOMEM : 0;
}

void
lifecycle_check(struct vm *vm)
{
	enum vmb_shutdown_reason r;
	enum vmb_action a;
	const char *rn, *state, *why;
	int wait = 0;

	if (vm->restart && vm->state == VM_UNKNOWN) {
		start_pending(vm);
		return;
	}
	/* Only a domain shut down: not one being built or destroyed. */
	if (vm->busy || !shut_down(vm) ||
	    vm->handled == vm->domid)
		return;
	vm->handled = vm->domid;
	r = vm->dom.shutdown_reason;
	rn = vmb_shutdown_reason_name(r);
	state = vmb_domain_state_name(vm->dom.state);
	shutdown_seen(vm->uuid, rn);
	if (!vm->ours) {
		log_vm(LOG_INFO, vm->name, vm->domid, 0, "%s (domain %u, not "
		    "built here) shut down (%s): left to its toolstack",
		    vm->name, vm->domid, rn);
		vm_announce(vm, NULL, rn, NULL);
		shutdown_outcome(vm->uuid, state, rn, NULL, VMB_DOMID_INVALID);
		return;
	}
	a = action_for(vm, r, &why, &wait);
	if (why != NULL)
		log_vm(LOG_WARNING, vm->name, vm->domid, 0, "%s (domain %u) "
		    "shut down (%s): not restarted, left shut down: %s",
		    vm->name, vm->domid, rn, why);
	else if (a == VMB_ACTION_RESTART)
		log_vm(LOG_NOTICE, vm->name, vm->domid, 0, "%s (domain %u) "
		    "shut down (%s): restart in %d s (%u earlier restarts "
		    "within %d s, at most %d)", vm->name, vm->domid, rn, wait,
		    vm->nrestart_times, RESTART_WINDOW_SEC, RESTART_LIMIT);
	else
		log_vm(LOG_NOTICE, vm->name, vm->domid, 0, "%s (domain %u) "
		    "shut down (%s): %s", vm->name, vm->domid, rn,
		    vmb_action_name(a));
	vm_announce(vm, NULL, rn, vmb_action_name(a));
	if (a == VMB_ACTION_PRESERVE) {
		shutdown_outcome(vm->uuid, state, rn, "preserve",
		    VMB_DOMID_INVALID);
		return;
	}
	if ((a == VMB_ACTION_RESTART ? restart_after(vm, wait, rn) :
	    act_submit(vm, a, rn)) < 0) {
		log_vm(LOG_ERR, vm->name, vm->domid, 0, "%s: out of memory, "
		    "left shut down", vm->name);
		shutdown_failed(vm->uuid, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
}

void
lifecycle_removed(struct vm *vm)
{
	if (vm->restart_ev != NULL)
		event_free(vm->restart_ev);
	vm->restart_ev = NULL;
	/* Destroyed by someone else (vm.destroy, xl destroy). */
	shutdown_outcome(vm->uuid, "destroyed", vm_shutdown_reason(vm), NULL,
	    VMB_DOMID_INVALID);
}

void
lifecycle_vm_hook(void *arg, struct vm *vm, const struct vm_change *c)
{
	(void)arg;
	if (c->kind == VM_HOOK_SEEN)
		lifecycle_check(vm);
	else if (c->kind == VM_HOOK_REMOVED)
		lifecycle_removed(vm);
}

void
lifecycle_restarted(struct vm *vm, int rc, const char *msg)
{
	if (rc == 0) {
		log_vm(LOG_NOTICE, vm->name, vm->domid, vm->task, "%s "
		    "restarted: domain %u", vm->name, vm->domid);
		shutdown_outcome(vm->uuid, "running", NULL, "restart",
		    vm->domid);
	} else {
		log_vm(LOG_ERR, vm->name, VMB_DOMID_INVALID, vm->task,
		    "restart of %s failed: %s; it is gone", vm->name, msg);
		shutdown_failed(vm->uuid, E_HYPERVISOR, -rc, msg);
	}
}

/*
 * A restart a previous daemon left half done: its build is to come.
 * Not before the hypervisor's list is known (the old domain may still
 * be there): lifecycle_check() calls this again once it answers.
 */
static void
start_pending(struct vm *vm)
{
	if (!vm->restart || vm->state != VM_UNKNOWN || vm->busy ||
	    !vm_backend_up())
		return;
	if (vm->source == NULL) {
		restart_failed(vm, "no description to build it from is "
		    "recorded");
		return;
	}
	if (act_submit(vm, VMB_ACTION_RESTART, NULL) < 0)
		log_vm(LOG_ERR, vm->name, VMB_DOMID_INVALID, 0, "%s: out of "
		    "memory, not restarted", vm->name);
}

int
lifecycle_start(struct event_base *base)
{
	if (L.watch != NULL) {
		L.ev = event_new(base, vmb_watch_fd(L.watch), EV_READ,
		    watch_cb, NULL);
		L.ev_rearm = evtimer_new(base, watch_rearm_cb, NULL);
		if (L.ev == NULL || L.ev_rearm == NULL)
			return -ENOMEM;
		vm_refresh_every(VM_REFRESH_SEC);
		log_info("domain events from the hypervisor; full refresh "
		    "every %d s", VM_REFRESH_SEC);
		watch_arm();
	} else {
		vm_refresh_every(VM_REFRESH_POLL_SEC);
	}
	vm_foreach(start_pending);
	vm_foreach(lifecycle_check);
	return 0;
}

void
lifecycle_stop(void)
{
	shutdown_stop();
	if (L.ev != NULL)
		event_free(L.ev);
	if (L.ev_rearm != NULL)
		event_free(L.ev_rearm);
	L.ev = L.ev_rearm = NULL;
	vmb_watch_free(L.watch);
	L.watch = NULL;
}
