/*
 * shutdown.c - vm.shutdown and vm.reboot (see shutdown.h).
 *
 * Each call is a waiter on its VM, made before the request goes out, so
 * that a guest quicker than the request's own reply is not missed.  It
 * is answered once: when the request is posted (without wait or
 * force), when lifecycle.c says what became of the VM, or when its time
 * is up.  Jobs (the request, a forced shutdown, a withdrawal) hold it
 * until they are done; a client that goes away only loses the answer:
 * what it asked for (a forced shutdown included) is still carried out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "json.h"
#include "log.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "shutdown.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

enum step { STEP_REQUEST, STEP_FORCE, STEP_WITHDRAW };

struct waiter {
	struct call	*call;		/* NULL once answered */
	uint8_t		uuid[16];
	char		vm[VMB_NAME_LEN];
	uint32_t	domid;
	enum vmb_shutdown_reason asked;	/* poweroff or reboot */
	bool		wait, force;
	bool		forced;		/* shut down from the hypervisor */
	bool		seen;		/* the domain shut down ... */
	const char	*seen_reason;	/* ... why (static) */
	unsigned	timeout;
	double		started;
	struct event	*timer;
	unsigned	jobs;		/* in flight, holding it */
	/*
	 * The request's job is in flight: whether it fell back to force is
	 * not known yet, so an outcome lifecycle.c tells meanwhile (a quick
	 * guest, a domain event before the job's completion) waits here.
	 */
	bool		requesting;
	bool		pending;
	const char	*p_state, *p_reason, *p_action;	/* static */
	uint32_t	p_new_domid;
	TAILQ_ENTRY(waiter) entry;
};

struct step_job {
	struct job	job;
	struct waiter	*w;
	enum step	step;
	int		rc;
	int		req_rc;		/* STEP_REQUEST: the request's own */
	bool		forced;		/* STEP_REQUEST fell back to force */
};

static TAILQ_HEAD(, waiter) waiters = TAILQ_HEAD_INITIALIZER(waiters);

static const char *
cmd(const struct waiter *w)
{
	return vmb_shutdown_reason_name(w->asked);
}

static void
waiter_release(struct waiter *w)
{
	if (w->call != NULL || w->jobs > 0)
		return;
	TAILQ_REMOVE(&waiters, w, entry);
	if (w->timer != NULL)
		event_free(w->timer);
	free(w);
}

static void
waiter_reply(struct waiter *w, const char *state, const char *reason,
    const char *action, uint32_t new_domid)
{
	yajl_gen g;

	if (w->call == NULL)
		return;
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", w->vm);
	jg_kv_u64(g, "id", w->domid);
	jg_kv_str(g, "request", cmd(w));
	jg_kv_bool(g, "forced", w->forced);
	jg_kv_str(g, "state", state);
	jg_kv_str(g, "reason", reason != NULL ? reason : w->seen_reason);
	jg_kv_str(g, "action", action);
	if (new_domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "new_id");
	else
		jg_kv_u64(g, "new_id", new_domid);
	jg_kv_dbl(g, "seconds", now_mono() - w->started);
	yajl_gen_map_close(g);
	call_reply(w->call, g);
	yajl_gen_free(g);
	w->call = NULL;
	if (w->timer != NULL)
		event_del(w->timer);
	waiter_release(w);
}

static void waiter_fail(struct waiter *w, int code, int errnum,
    const char *fmt, ...) LOG_FMT(4, 5);

static void
waiter_fail(struct waiter *w, int code, int errnum, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	if (w->call == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	call_error(w->call, code, errnum, "%s", msg);
	call_fail(w->call);
	w->call = NULL;
	if (w->timer != NULL)
		event_del(w->timer);
	waiter_release(w);
}

static void
arm(struct waiter *w, unsigned sec)
{
	struct timeval tv = { (time_t)sec, 0 };

	if (w->call != NULL && !w->seen)
		evtimer_add(w->timer, &tv);
}

/* ------------------------------------------------------------------ */
/* Steps on the pool.                                                  */

static void
step_run(struct job *job)
{
	struct step_job *sj = (struct step_job *)job;
	struct waiter *w = sj->w;

	switch (sj->step) {
	case STEP_REQUEST:
		sj->rc = vmb_domain_shutdown_request(vmbd.ctx, w->domid,
		    w->asked);
		sj->req_rc = sj->rc;
		/*
		 * A guest that cannot be asked, or a request path that failed
		 * for any reason (the guest owns the nodes it goes through
		 * and may make them fail): with force, at once from the
		 * hypervisor, which no guest can refuse.
		 */
		if (sj->rc < 0 && w->force) {
			sj->forced = true;
			sj->rc = vmb_domain_shutdown(vmbd.ctx, w->domid,
			    w->asked);
		}
		break;
	case STEP_FORCE:
		sj->rc = vmb_domain_shutdown(vmbd.ctx, w->domid, w->asked);
		break;
	case STEP_WITHDRAW:
		sj->rc = vmb_domain_shutdown_withdraw(vmbd.ctx, w->domid,
		    w->asked);
		break;
	}
}

/* Why a request fell back to the hypervisor: said once, whoever replies. */
static void
log_fallback(const struct waiter *w, int req_rc)
{
	if (req_rc == -EOPNOTSUPP)
		log_vm(LOG_NOTICE, w->vm, w->domid, 0, "%s (domain %u): no PV "
		    "control in the guest, shut down from the hypervisor (%s)",
		    w->vm, w->domid, cmd(w));
	else
		log_vm(LOG_NOTICE, w->vm, w->domid, 0, "%s (domain %u): the %s "
		    "request failed (%s), shut down from the hypervisor",
		    w->vm, w->domid, cmd(w), strerror(-req_rc));
}

static void
request_done(struct waiter *w, int rc, bool forced)
{
	if (forced && rc == 0) {
		w->forced = true;
		arm(w, SHUTDOWN_FORCE_GRACE);
		return;
	}
	if (rc == -EOPNOTSUPP)
		waiter_fail(w, E_UNAVAILABLE, -rc, "%s does not announce "
		    "control/feature-%s: no PV driver in the guest listens for "
		    "%s requests (force shuts it down from the hypervisor)",
		    w->vm, cmd(w), cmd(w));
	else if (rc == -ESRCH || rc == -ENOENT)
		waiter_fail(w, E_NO_SUCH_VM, -rc, "domain %u no longer exists",
		    w->domid);
	else if (rc < 0)
		waiter_fail(w, E_HYPERVISOR, -rc, "%s request to %s: %s",
		    cmd(w), w->vm, strerror(-rc));
	else if (!w->wait && !w->force)
		waiter_reply(w, "requested", NULL, NULL, VMB_DOMID_INVALID);
	else {
		log_vm(LOG_INFO, w->vm, w->domid, 0, "%s (domain %u): %s "
		    "requested", w->vm, w->domid, cmd(w));
		arm(w, w->timeout);
	}
}

/* The guest did not answer in time and was not forced. */
static void
withdraw_done(struct waiter *w, int rc)
{
	if (rc == 1)
		waiter_fail(w, E_TIMEOUT, 0, "%s did not take the %s request "
		    "within %u s (no PV driver listening, or a hung guest): "
		    "the request was withdrawn and %s is left running; force "
		    "shuts it down from the hypervisor", w->vm, cmd(w),
		    w->timeout, w->vm);
	else
		waiter_fail(w, E_TIMEOUT, rc < 0 ? -rc : 0, "%s took the %s "
		    "request but had not shut down after %u s; it is left "
		    "running (force shuts it down from the hypervisor)",
		    w->vm, cmd(w), w->timeout);
}

static void
step_done(struct job *job)
{
	struct step_job *sj = (struct step_job *)job;
	struct waiter *w = sj->w;

	/* Still held while answering: waiter_release() below frees it. */
	if (sj->step == STEP_REQUEST) {
		w->requesting = false;
		/*
		 * The domain's shutdown may reach the registry (and answer
		 * the call) before this job's end does: log here, not only
		 * where this job answers.
		 */
		if (sj->forced && sj->rc == 0) {
			w->forced = true;
			log_fallback(w, sj->req_rc);
		}
	}
	if (sj->step == STEP_REQUEST && w->pending) {
		w->pending = false;
		waiter_reply(w, w->p_state, w->p_reason, w->p_action,
		    w->p_new_domid);
	} else if (w->call != NULL && !w->seen) {
		switch (sj->step) {
		case STEP_REQUEST:
			request_done(w, sj->rc, sj->forced);
			break;
		case STEP_FORCE:
			if (sj->rc < 0 && sj->rc != -ESRCH)
				waiter_fail(w, E_HYPERVISOR, -sj->rc, "cannot "
				    "shut %s down from the hypervisor: %s",
				    w->vm, strerror(-sj->rc));
			else
				arm(w, SHUTDOWN_FORCE_GRACE);
			break;
		case STEP_WITHDRAW:
			withdraw_done(w, sj->rc);
			break;
		}
	}
	free(sj);
	w->jobs--;
	waiter_release(w);
}

static void
step_submit(struct waiter *w, enum step step)
{
	struct step_job *sj = calloc(1, sizeof(*sj));

	if (sj == NULL) {
		waiter_fail(w, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
		return;
	}
	sj->w = w;
	sj->step = step;
	if (step == STEP_FORCE)
		w->forced = true;
	if (step == STEP_REQUEST)
		w->requesting = true;
	sj->job.run = step_run;
	sj->job.done = step_done;
	w->jobs++;
	worker_submit(&sj->job);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct waiter *w = arg;

	(void)fd;
	(void)what;
	if (w->call == NULL || w->seen)
		return;
	if (w->forced)
		waiter_fail(w, E_HYPERVISOR, 0, "%s was shut down from the "
		    "hypervisor but not seen shut down within %d s", w->vm,
		    SHUTDOWN_FORCE_GRACE);
	else if (w->force) {
		log_vm(LOG_NOTICE, w->vm, w->domid, 0, "%s (domain %u) did "
		    "not %s within %u s: shutting it down from the hypervisor",
		    w->vm, w->domid, cmd(w), w->timeout);
		step_submit(w, STEP_FORCE);
	} else
		step_submit(w, STEP_WITHDRAW);
}

/* ------------------------------------------------------------------ */
/* The methods.                                                        */

static int
shutdown_method(struct call *call, enum vmb_shutdown_reason asked)
{
	struct vm *vm = vm_param(call);
	bool wait = false, force = false;
	uint64_t timeout = SHUTDOWN_TIMEOUT_DEFAULT;
	struct waiter *w;

	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return -1;
	if (param_bool(call, P_WAIT, &wait) < 0 ||
	    param_bool(call, P_FORCE, &force) < 0 ||
	    param_u64(call, P_TIMEOUT, false, &timeout) < 0)
		return -1;
	if (timeout < 1 || timeout > SHUTDOWN_TIMEOUT_MAX)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.timeout "
		    "must be 1 to %d seconds", SHUTDOWN_TIMEOUT_MAX);
	if (vm->restart || vm->state == VM_UNKNOWN)
		return call_error(call, E_BAD_STATE, 0, "%s has no domain "
		    "now (it is being restarted)", vm->name);
	switch (vm->dom.state) {
	case VMB_DOM_SHUTDOWN:
	case VMB_DOM_CRASHED:
		return call_error(call, E_BAD_STATE, 0, "%s is already shut "
		    "down (%s)", vm->name, vm_shutdown_reason(vm));
	case VMB_DOM_DYING:
		return call_error(call, E_BAD_STATE, 0, "%s is being "
		    "destroyed", vm->name);
	case VMB_DOM_PAUSED:
		if (!force)
			return call_error(call, E_BAD_STATE, 0, "%s is paused: "
			    "a paused guest cannot answer; unpause it first "
			    "(or force shuts it down from the hypervisor)",
			    vm->name);
		break;
	default:
		break;
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL || (w->timer = evtimer_new(vmbd.base, timer_cb,
	    w)) == NULL) {
		free(w);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	w->call = call;
	memcpy(w->uuid, vm->uuid, 16);
	snprintf(w->vm, sizeof(w->vm), "%s", vm->name);
	w->domid = vm->domid;
	w->asked = asked;
	w->wait = wait;
	w->force = force;
	w->timeout = (unsigned)timeout;
	w->started = now_mono();
	TAILQ_INSERT_TAIL(&waiters, w, entry);
	log_vm(LOG_INFO, vm->name, vm->domid, 0, "%s (domain %u): %s asked "
	    "by uid %u%s", vm->name, vm->domid, cmd(w),
	    (unsigned)call->conn->uid, force ? " (force)" : "");
	step_submit(w, STEP_REQUEST);
	return CALL_DEFERRED;
}

int
m_vm_shutdown(struct call *call, yajl_gen g)
{
	(void)g;
	return shutdown_method(call, VMB_SHUTDOWN_POWEROFF);
}

int
m_vm_reboot(struct call *call, yajl_gen g)
{
	(void)g;
	return shutdown_method(call, VMB_SHUTDOWN_REBOOT);
}

/* ------------------------------------------------------------------ */
/* From lifecycle.c.                                                   */

void
shutdown_seen(const uint8_t uuid[16], const char *reason)
{
	struct waiter *w;

	TAILQ_FOREACH(w, &waiters, entry)
		if (memcmp(w->uuid, uuid, 16) == 0 && w->call != NULL) {
			w->seen = true;
			w->seen_reason = reason;
			event_del(w->timer);
		}
}

void
shutdown_outcome(const uint8_t uuid[16], const char *state,
    const char *reason, const char *action, uint32_t new_domid)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(&waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (memcmp(w->uuid, uuid, 16) != 0)
			continue;
		if (w->requesting && w->call != NULL) {
			w->pending = true;
			w->p_state = state;
			w->p_reason = reason;
			w->p_action = action;
			w->p_new_domid = new_domid;
			continue;
		}
		waiter_reply(w, state, reason, action, new_domid);
	}
}

void
shutdown_failed(const uint8_t uuid[16], int code, int errnum,
    const char *msg)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(&waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (memcmp(w->uuid, uuid, 16) == 0)
			waiter_fail(w, code, errnum, "%s", msg);
	}
}

void
shutdown_stop(void)
{
	struct waiter *w, *next;

	for (w = TAILQ_FIRST(&waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		waiter_fail(w, E_BUSY, 0, "the daemon is shutting down");
	}
}
