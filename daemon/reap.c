/*
 * reap.c - destroying what failed builds left (see reap.h).
 *
 * A try runs on the worker pool: list the domains, destroy each that
 * carries the VM's uuid and is not already dying, and, when none is
 * left, remove the state record.  The loop then drops the VM, or
 * schedules the next try.  The uuid, not the domid, is what is looked
 * for: a domid may have been reused, and a create whose reply was lost
 * left a domain whose domid nobody knows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "events.h"
#include "log.h"
#include "reap.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

struct reap {
	struct vm	*vm;		/* NULL once the VM is gone */
	struct event	*ev;
	unsigned	tries;
	bool		inflight;
	struct log_rate	rate;
};

struct reap_job {
	struct job	job;
	struct reap	*r;
	uint8_t		uuid[16];
	int		rc;		/* first failure of this try */
	bool		gone;		/* no domain with the uuid is left */
	unsigned	destroyed;
};

static void reap_arm(struct reap *r, double seconds);

static void
reap_run(struct job *job)
{
	struct reap_job *rj = (struct reap_job *)job;
	struct vmb_domain *doms = NULL;
	size_t n = 0;

	rj->rc = vmb_domain_list(vmbd.ctx, &doms, &n);
	if (rj->rc < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		int rc;

		if (memcmp(doms[i].uuid, rj->uuid, 16) != 0 ||
		    doms[i].state == VMB_DOM_DYING)
			continue;
		rc = vmb_domain_destroy(vmbd.ctx, doms[i].domid);
		if (rc == 0)
			rj->destroyed++;
		else if (rc != -ESRCH && rj->rc == 0)
			rj->rc = rc;
	}
	free(doms);
	/* Dying domains are on their way out: their pages come back. */
	rj->gone = rj->rc == 0;
	if (rj->gone && state_remove(rj->uuid) < 0)
		rj->gone = false;	/* the record would come back at start */
}

static double
reap_delay(unsigned tries)
{
	double d = REAP_FIRST_DELAY * 2;

	for (unsigned i = 1; i < tries && d < REAP_MAX_DELAY; i++)
		d *= 2;
	return d < REAP_MAX_DELAY ? d : REAP_MAX_DELAY;
}

static void
reap_done(struct job *job)
{
	struct reap_job *rj = (struct reap_job *)job;
	struct reap *r = rj->r;
	struct vm *vm = r->vm;
	unsigned held;

	r->inflight = false;
	if (vm == NULL) {
		/* The VM went meanwhile (reap_forget). */
		free(r);
	} else if (rj->gone) {
		log_notice("%s: the domain of its failed build is destroyed "
		    "(%u tries before this one failed)", vm->name, r->tries);
		vm_remove(vm, true);
		events_scrub_kick();
		vmbd_status_changed();
	} else {
		r->tries++;
		if (log_rate_ok(&r->rate, 300, &held))
			log_warnx("%s: cannot destroy the domain of its failed "
			    "build (try %u): %s; trying again in %.1f s%s",
			    vm->name, r->tries, strerror(-rj->rc),
			    reap_delay(r->tries), held ? " (earlier failures "
			    "not logged)" : "");
		reap_arm(r, reap_delay(r->tries));
	}
	free(rj);
}

static void
reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct reap *r = arg;
	struct reap_job *rj;

	(void)fd;
	(void)what;
	/* Stopping: the record stays, the next start goes on. */
	if (r->inflight || r->vm == NULL || vmbd.stopping)
		return;
	rj = calloc(1, sizeof(*rj));
	if (rj == NULL) {
		reap_arm(r, REAP_MAX_DELAY);
		return;
	}
	rj->r = r;
	memcpy(rj->uuid, r->vm->uuid, 16);
	rj->job.run = reap_run;
	rj->job.done = reap_done;
	r->inflight = true;
	worker_submit(&rj->job);
}

static void
reap_arm(struct reap *r, double seconds)
{
	struct timeval tv = { (time_t)seconds,
	    (suseconds_t)((seconds - (time_t)seconds) * 1e6) };

	evtimer_add(r->ev, &tv);
}

void
reap_start(struct vm *vm, uint32_t domid)
{
	struct reap *r;

	if (vm->reap != NULL)
		return;
	r = calloc(1, sizeof(*r));
	if (r != NULL)
		r->ev = evtimer_new(vmbd.base, reap_cb, r);
	if (r == NULL || r->ev == NULL) {
		/* The record stays: the next start destroys the domain. */
		log_warnx("%s: out of memory; its domain is left to the next "
		    "start", vm->name);
		free(r);
		return;
	}
	r->vm = vm;
	if (domid == VMB_DOMID_INVALID)
		log_notice("%s: its build could not be undone; destroying the "
		    "domains with its uuid until none is left", vm->name);
	else
		log_notice("%s: its build could not be undone; destroying "
		    "domain %u until it is gone", vm->name, domid);
	vm_set_reaping(vm, r, domid);
	reap_arm(r, REAP_FIRST_DELAY);
}

void
reap_now(struct vm *vm)
{
	if (vm->reap != NULL && !vm->reap->inflight)
		reap_arm(vm->reap, 0);
}

static void
start_pending(struct vm *vm)
{
	/* Reconciliation's: to destroy once the loop runs. */
	if (vm->state == VM_DESTROYING && vm->reap == NULL)
		reap_start(vm, vm->domid);
}

void
reap_start_pending(void)
{
	vm_foreach(start_pending);
}

void
reap_vm_hook(void *arg, struct vm *vm, const struct vm_change *c)
{
	(void)arg;
	if (c->kind == VM_HOOK_REMOVED)
		reap_forget(vm);
}

unsigned
reap_tries(const struct vm *vm)
{
	return vm->reap != NULL ? vm->reap->tries : 0;
}

void
reap_forget(struct vm *vm)
{
	struct reap *r = vm->reap;

	if (r == NULL)
		return;
	vm->reap = NULL;
	event_free(r->ev);
	r->ev = NULL;
	r->vm = NULL;
	if (!r->inflight)
		free(r);
}
