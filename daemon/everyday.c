/*
 * everyday.c - vm.sched_get, vm.sched_set, vm.rename, vm.uptime and
 * host.dmesg.
 *
 * Each asks the hypervisor on the pool.  A change to a VM of ours
 * (sched_set, rename) is written to its record in the same job, after
 * the hypervisor took it, so that it outlives a daemon restart and a
 * restart of the guest (source.c carries it into the rebuilt guest);
 * then, on the loop, the registry follows, the change is logged and
 * told to subscribers as vm.changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "events.h"
#include "everyday.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

struct ed_job {
	struct job	job;
	struct call	*call;
	int		(*run)(struct ed_job *j);	/* worker */
	int		(*reply)(struct ed_job *j, yajl_gen g);	/* loop */
	int		rc;
	struct vm	*vm;		/* busy while in flight; NULL: host */
	uint32_t	domid;
	uint32_t	weight, cap;	/* sched_set: VMB_SCHED_KEEP or new */
	struct vmb_sched sched;
	char		name[VMB_NAME_LEN];	/* rename: the new name */
	struct vmb_guest *guest;	/* the record's guest after the change */
	struct state_record rec;	/* written when rec.config_json */
	bool		record_failed;
	bool		clear;		/* host.dmesg */
	char		*text;
	size_t		len;
	/* vm.uptime: the domains asked about, and when they started. */
	size_t		n;
	uint32_t	*domids;
	char		(*names)[VMB_NAME_LEN];
	double		*started;	/* 0: unknown */
};

static void
ed_free(struct ed_job *j)
{
	vmb_guest_free(j->guest);
	state_record_done(&j->rec);
	free(j->text);
	free(j->domids);
	free(j->names);
	free(j->started);
	free(j);
}

static void
ed_run(struct job *job)
{
	struct ed_job *j = (struct ed_job *)job;

	j->rc = j->run(j);
	/* The hypervisor has it: the record follows, or says it could not. */
	if (j->rc == 0 && j->rec.config_json && state_write(&j->rec) < 0)
		j->record_failed = true;
}

static void
ed_done(struct job *job)
{
	struct ed_job *j = (struct ed_job *)job;
	yajl_gen g = jg_new();

	if (j->vm != NULL)
		j->vm->busy = false;
	if (j->reply(j, g) < 0)
		call_fail(j->call);
	else
		call_reply(j->call, g);
	yajl_gen_free(g);
	ed_free(j);
}

static int
ed_submit(struct call *call, struct ed_job *j, struct vm *vm,
    int (*run)(struct ed_job *), int (*reply)(struct ed_job *, yajl_gen))
{
	j->call = call;
	j->run = run;
	j->reply = reply;
	j->job.run = ed_run;
	j->job.done = ed_done;
	if (vm != NULL) {
		j->vm = vm;
		j->domid = vm->domid;
		vm->busy = true;
	}
	worker_submit(&j->job);
	return CALL_DEFERRED;
}

static struct ed_job *
ed_new(struct call *call)
{
	struct ed_job *j = calloc(1, sizeof(*j));

	if (j == NULL)
		call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
	return j;
}

static int
ed_error(struct ed_job *j, const char *what)
{
	if (j->rc == -EOPNOTSUPP)
		return call_error(j->call, E_UNAVAILABLE, j->rc,
		    "%s: the hypervisor does not support this", what);
	if (j->rc == -ENOTSUP)
		return call_error(j->call, E_UNAVAILABLE, j->rc, "%s: the "
		    "domain's scheduler is not credit or credit2", what);
	return call_error(j->call, build_errno_code(j->rc), j->rc, "%s: %s",
	    what, strerror(-j->rc));
}

/*
 * The VM's guest as it will be after the change, into j->guest (a
 * copy, changed by the caller): only for a VM of ours whose guest is
 * known; 0 without a copy (nothing is recorded) otherwise.
 */
static int
ed_record(struct ed_job *j, const struct vm *vm)
{
	if (!vm->ours || vm->guest == NULL)
		return 0;
	return vmb_guest_copy(vm->guest, &j->guest);
}

/* The record with that guest, once the caller changed it. */
static int
ed_record_guest(struct ed_job *j, const struct vm *vm)
{
	if (j->guest == NULL)
		return 0;
	return vm_record(vm, j->guest, &j->rec);
}

/* vm.changed: {"vm","id","change", and what changed}. */
static void
ed_announce(const struct vm *vm, const char *change, const char *old_name,
    const struct vmb_sched *s)
{
	yajl_gen g;

	if (!events_wanted(EVT_VM_CHANGED))
		return;
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", vm->name);
	jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "change", change);
	if (old_name != NULL)
		jg_kv_str(g, "old_name", old_name);
	if (s != NULL) {
		jg_kv_str(g, "scheduler", s->scheduler);
		jg_kv_u64(g, "weight", s->weight);
		jg_kv_u64(g, "cap", s->cap);
	}
	yajl_gen_map_close(g);
	events_emit(EVT_VM_CHANGED, g);
	yajl_gen_free(g);
}

/* A VM with a domain to change: not being built, busy or destroyed. */
static struct vm *
ed_vm(struct call *call)
{
	struct vm *vm = vm_param(call);

	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return NULL;
	if (vm->domid == VMB_DOMID_INVALID) {
		call_error(call, E_BAD_STATE, 0, "%s has no domain",
		    vm->name);
		return NULL;
	}
	return vm;
}

/* ------------------------------------------------------------------ */
/* vm.sched_get, vm.sched_set                                          */

static int
sched_run(struct ed_job *j)
{
	return vmb_domain_sched(vmbd.ctx, j->domid, j->weight, j->cap,
	    &j->sched);
}

static void
sched_gen(yajl_gen g, const struct vm *vm, const struct vmb_sched *s)
{
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", vm->name);
	jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "scheduler", s->scheduler);
	jg_kv_u64(g, "weight", s->weight);
	jg_kv_u64(g, "cap", s->cap);
	yajl_gen_map_close(g);
}

static int
sched_get_reply(struct ed_job *j, yajl_gen g)
{
	if (j->rc < 0)
		return ed_error(j, j->vm->name);
	sched_gen(g, j->vm, &j->sched);
	return 0;
}

int
m_vm_sched_get(struct call *call, yajl_gen g)
{
	struct vm *vm = ed_vm(call);
	struct ed_job *j;

	(void)g;
	if (vm == NULL || (j = ed_new(call)) == NULL)
		return -1;
	j->weight = j->cap = VMB_SCHED_KEEP;
	return ed_submit(call, j, vm, sched_run, sched_get_reply);
}

static int
sched_set_reply(struct ed_job *j, yajl_gen g)
{
	struct vm *vm = j->vm;

	if (j->rc < 0)
		return ed_error(j, vm->name);
	if (vm->guest != NULL && j->guest != NULL) {
		vm->guest->cpu_weight = j->guest->cpu_weight;
		vm->guest->cap = j->guest->cap;
		vm->guest->keys_set |= j->guest->keys_set &
		    (1ull << VMB_KEY_CPU_WEIGHT | 1ull << VMB_KEY_CAP);
	}
	log_vm(LOG_INFO, vm->name, vm->domid, 0, "%s: scheduler %s: weight "
	    "%u, cap %u%s", vm->name, j->sched.scheduler, j->sched.weight,
	    j->sched.cap, j->record_failed ? " (its record could not be "
	    "written: lost if the daemon restarts)" : "");
	ed_announce(vm, "sched", NULL, &j->sched);
	sched_gen(g, vm, &j->sched);
	return 0;
}

/* params.weight and params.cap: absent is VMB_SCHED_KEEP. */
static int
sched_params(struct call *call, uint32_t *weight, uint32_t *cap)
{
	uint64_t w, c;
	int hw, hc;

	if ((hw = param_u64(call, P_WEIGHT, false, &w)) < 0 ||
	    (hc = param_u64(call, P_CAP, false, &c)) < 0)
		return -1;
	if (!hw && !hc)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s or "
		    "params.%s is required", P_WEIGHT, P_CAP);
	*weight = hw ? (w > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)w) :
	    VMB_SCHED_KEEP;
	*cap = hc ? (c > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)c) :
	    VMB_SCHED_KEEP;
	return 0;
}

int
m_vm_sched_set(struct call *call, yajl_gen g)
{
	struct vm *vm = ed_vm(call);
	uint32_t weight = VMB_SCHED_KEEP, cap = VMB_SCHED_KEEP, vcpus;
	struct ed_job *j;
	char why[160];
	int rc;

	(void)g;
	if (vm == NULL || sched_params(call, &weight, &cap) < 0)
		return -1;
	vcpus = vm->guest != NULL ? vm->guest->maxvcpus : vm->dom.vcpus;
	if (vmb_sched_check(weight, cap, vcpus ? vcpus : 1, why,
	    sizeof(why)) < 0)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: %s",
		    weight != VMB_SCHED_KEEP && strncmp(why, "weight", 6) == 0 ?
		    P_WEIGHT : P_CAP, why);
	if ((j = ed_new(call)) == NULL)
		return -1;
	j->weight = weight;
	j->cap = cap;
	if ((rc = ed_record(j, vm)) == 0 && j->guest != NULL) {
		if (weight != VMB_SCHED_KEEP) {
			j->guest->cpu_weight = weight;
			j->guest->keys_set |= 1ull << VMB_KEY_CPU_WEIGHT;
		}
		if (cap != VMB_SCHED_KEEP) {
			j->guest->cap = cap;
			j->guest->keys_set |= 1ull << VMB_KEY_CAP;
		}
		rc = ed_record_guest(j, vm);
	}
	if (rc < 0) {
		ed_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, -rc, "%s",
		    strerror(-rc));
	}
	return ed_submit(call, j, vm, sched_run, sched_set_reply);
}

/* ------------------------------------------------------------------ */
/* vm.rename                                                           */

static int
rename_run(struct ed_job *j)
{
	return vmb_domain_rename(vmbd.ctx, j->domid, j->name);
}

static int
rename_reply(struct ed_job *j, yajl_gen g)
{
	struct vm *vm = j->vm;
	char old[VMB_NAME_LEN];

	if (j->rc < 0)
		return ed_error(j, vm->name);
	snprintf(old, sizeof(old), "%s", vm->name);
	vm_rename(vm, j->name);
	log_vm(LOG_NOTICE, vm->name, vm->domid, 0, "%s (domain %u) renamed "
	    "%s%s", old, vm->domid, vm->name, j->record_failed ? " (its "
	    "record could not be written: the old name comes back if the "
	    "daemon restarts)" : "");
	ed_announce(vm, "rename", old, NULL);
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", vm->name);
	jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "old_name", old);
	yajl_gen_map_close(g);
	return 0;
}

int
m_vm_rename(struct call *call, yajl_gen g)
{
	struct vm *vm = ed_vm(call), *other;
	const char *name = NULL;
	struct ed_job *j;
	char why[160];
	int rc;

	(void)g;
	if (vm == NULL || param_string(call, P_NAME_NEW, true, &name) < 0)
		return -1;
	if (vmb_name_check(name, why, sizeof(why)) < 0)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: %s",
		    P_NAME_NEW, why);
	other = vm_find_name(name);
	if (other == vm)
		return call_error(call, E_EXISTS, 0, "%s is already its name",
		    name);
	if (other != NULL)
		return call_error(call, E_EXISTS, 0, "a VM named %s exists "
		    "(domain %u)", name, other->domid);
	if ((j = ed_new(call)) == NULL)
		return -1;
	snprintf(j->name, sizeof(j->name), "%s", name);
	if ((rc = ed_record(j, vm)) == 0 && j->guest != NULL) {
		snprintf(j->guest->name, sizeof(j->guest->name), "%s", name);
		rc = ed_record_guest(j, vm);
		snprintf(j->rec.name, sizeof(j->rec.name), "%s", name);
	}
	if (rc < 0) {
		ed_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, -rc, "%s",
		    strerror(-rc));
	}
	return ed_submit(call, j, vm, rename_run, rename_reply);
}

/* ------------------------------------------------------------------ */
/* vm.uptime                                                           */

static int
uptime_run(struct ed_job *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (vmb_domain_start_time(vmbd.ctx, j->domids[i],
		    &j->started[i]) < 0)
			j->started[i] = 0;
	return 0;
}

static int
uptime_reply(struct ed_job *j, yajl_gen g)
{
	double now = now_real();

	yajl_gen_map_open(g);
	jg_key(g, "vms");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < j->n; i++) {
		yajl_gen_map_open(g);
		jg_kv_str(g, "name", j->names[i]);
		jg_kv_u64(g, "id", j->domids[i]);
		if (j->started[i] > 0) {
			jg_kv_dbl(g, "start_time", j->started[i]);
			jg_kv_dbl(g, "uptime_seconds", now > j->started[i] ?
			    now - j->started[i] : 0);
		} else {
			jg_kv_null(g, "start_time");
			jg_kv_null(g, "uptime_seconds");
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	return 0;
}

/* The VMs with a domain: params.vm's, or all in the registry's order. */
static int
uptime_vms(struct call *call, struct ed_job *j)
{
	const struct vm *one = NULL, *vm;
	size_t n = 0;

	if (jv_get(call->params, P_VM) != NULL ||
	    jv_get(call->params, "name") != NULL ||
	    jv_get(call->params, "id") != NULL) {
		if ((one = vm_param(call)) == NULL)
			return -1;
	}
	j->domids = calloc(vm_count() + 1, sizeof(*j->domids));
	j->names = calloc(vm_count() + 1, sizeof(*j->names));
	j->started = calloc(vm_count() + 1, sizeof(*j->started));
	if (!j->domids || !j->names || !j->started)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	for (vm = vm_first(); vm != NULL; vm = vm_next(vm)) {
		if ((one != NULL && vm != one) ||
		    vm->domid == VMB_DOMID_INVALID)
			continue;
		j->domids[n] = vm->domid;
		snprintf(j->names[n], VMB_NAME_LEN, "%s", vm->name);
		n++;
	}
	if (one != NULL && n == 0)
		return call_error(call, E_BAD_STATE, 0, "%s has no domain",
		    one->name);
	j->n = n;
	return 0;
}

int
m_vm_uptime(struct call *call, yajl_gen g)
{
	struct ed_job *j;

	(void)g;
	if ((j = ed_new(call)) == NULL)
		return -1;
	if (uptime_vms(call, j) < 0) {
		ed_free(j);
		return -1;
	}
	return ed_submit(call, j, NULL, uptime_run, uptime_reply);
}

/* ------------------------------------------------------------------ */
/* host.dmesg                                                          */

static int
dmesg_run(struct ed_job *j)
{
	return vmb_dmesg(vmbd.ctx, j->clear, &j->text, &j->len);
}

static int
dmesg_reply(struct ed_job *j, yajl_gen g)
{
	if (j->rc < 0)
		return ed_error(j, "hypervisor messages");
	/* The ring is bytes; JSON wants text: anything else shows as '?'. */
	for (size_t i = 0; i < j->len; i++)
		if ((unsigned char)j->text[i] >= 0x7f ||
		    ((unsigned char)j->text[i] < 0x20 && j->text[i] != '\n' &&
		    j->text[i] != '\t'))
			j->text[i] = '?';
	if (j->clear)
		log_notice("the hypervisor's message ring was cleared by uid "
		    "%u", (unsigned)j->call->conn->uid);
	yajl_gen_map_open(g);
	jg_key(g, "text");
	yajl_gen_string(g, (const unsigned char *)j->text, j->len);
	jg_kv_bool(g, "cleared", j->clear);
	yajl_gen_map_close(g);
	return 0;
}

int
m_host_dmesg(struct call *call, yajl_gen g)
{
	struct ed_job *j;
	bool clear = false;

	(void)g;
	if (param_bool(call, P_CLEAR, &clear) < 0 || (j = ed_new(call)) == NULL)
		return -1;
	j->clear = clear;
	return ed_submit(call, j, NULL, dmesg_run, dmesg_reply);
}
