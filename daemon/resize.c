/*
 * resize.c - a running VM's memory and vCPUs, as xl mem-set, mem-max,
 * vcpu-set, vcpu-pin and vcpu-list change and show them.
 *
 * Each change is checked on the loop against the VM's configuration
 * (maxmem, maxvcpus), then made on a thread (the hypervisor, and on
 * Xen xenstore, through libvmbuild) which also rewrites the VM's
 * record with it, so that a restarted daemon knows the guest's real
 * size.  The loop then takes the changed guest, logs the change and
 * tells subscribers (vm.changed).  The new size is in the record's
 * configuration: memory (the balloon target), maxmem, vcpus (online)
 * and cpus/cpus_soft (a pin of every vCPU, as xl's keys mean it); a
 * pin of one vCPU is kept beside it (vcpu_pins, state.h), for a
 * restarted daemon to report and a restarted domain to get again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "params.h"
#include "proto.h"
#include "resize.h"
#include "rpc.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

enum rz_kind { RZ_MEM_SET, RZ_MEM_MAX, RZ_VCPU_SET, RZ_VCPU_PIN, RZ_LIST };

struct rz_job {
	struct job	job;
	struct call	*call;
	enum rz_kind	kind;
	uint32_t	domid;
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	uint64_t	bytes;		/* MEM_SET, MEM_MAX */
	uint32_t	n;		/* VCPU_SET: online; PIN: the vCPU */
	uint32_t	maxvcpus;
	char		*hard, *soft;	/* VCPU_PIN; NULL: unchanged */
	struct vmb_guest *guest;	/* the VM's guest with the change */
	struct state_record rec;	/* its record, written on success */
	struct vmb_vcpu_info *info;	/* RZ_LIST: maxvcpus of them */
	struct vmb_domain dom;		/* the domain after the change */
	bool		have_dom;
	/* results */
	unsigned	uid;		/* who asked, for the log */
	char		change[160];	/* what changes, for the log */
	int		rc;
	bool		record_failed;
	char		why[512];
};

static void
rz_free(struct rz_job *j)
{
	vmb_guest_free(j->guest);
	free(j->hard);
	free(j->soft);
	free(j->info);
	state_record_done(&j->rec);
	free(j);
}

static void
rz_run(struct job *job)
{
	struct rz_job *j = (struct rz_job *)job;

	switch (j->kind) {
	case RZ_MEM_SET:
		j->rc = vmb_domain_set_target(vmbd.ctx, j->domid, j->bytes);
		break;
	case RZ_MEM_MAX:
		j->rc = vmb_domain_set_maxmem(vmbd.ctx, j->domid, j->bytes);
		break;
	case RZ_VCPU_SET:
		j->rc = vmb_domain_set_vcpus(vmbd.ctx, j->domid, j->maxvcpus,
		    j->n);
		break;
	case RZ_VCPU_PIN:
		j->rc = vmb_vcpu_pin(vmbd.ctx, j->domid, j->maxvcpus, j->n,
		    j->hard, j->soft, j->why, sizeof(j->why));
		break;
	case RZ_LIST:
		j->rc = 0;
		for (uint32_t v = 0; v < j->maxvcpus && j->rc == 0; v++)
			j->rc = vmb_vcpu_info(vmbd.ctx, j->domid, v,
			    &j->info[v]);
		return;
	}
	if (j->rc == 0 && j->rec.config_json && state_write(&j->rec) < 0)
		j->record_failed = true;
	/* Its max memory changed: the registry sees it at once. */
	if (j->rc == 0)
		j->have_dom = vmb_domain_get(vmbd.ctx, j->domid, &j->dom) == 0;
}

/* What changed, for the log, the event and the reply. */
/* vm.changed's "change", by kind (RZ_LIST changes nothing). */
static const char *const change_names[] = {
	[RZ_MEM_SET] = "memory", [RZ_MEM_MAX] = "maxmem",
	[RZ_VCPU_SET] = "vcpus", [RZ_VCPU_PIN] = "affinity",
	[RZ_LIST] = "",
};

static void
gen_change(yajl_gen g, const struct rz_job *j)
{
	const struct vmb_guest *gu = j->guest;

	switch (j->kind) {
	case RZ_MEM_SET:
		jg_kv_u64(g, "memory_target_bytes", gu->memory_bytes);
		break;
	case RZ_MEM_MAX:
		jg_kv_u64(g, "maxmem_bytes", gu->maxmem_bytes);
		break;
	case RZ_VCPU_SET:
		jg_kv_u64(g, "vcpus", gu->vcpus);
		break;
	default:
		if (j->n == VMB_VCPU_ALL)
			jg_kv_str(g, "vcpu", "all");
		else
			jg_kv_u64(g, "vcpu", j->n);
		jg_kv_str(g, "hard", j->hard);
		jg_kv_str(g, "soft", j->soft);
		break;
	}
}

/*
 * One vCPU as the record has it, where the hypervisor keeps no state:
 * its own pin (j->rec.pins, the VM's), else the guest's cpus=.
 */
static void
recorded_vcpu(const struct rz_job *j, uint32_t v, struct vmb_vcpu_info *vi)
{
	const struct vmb_guest *gu = j->guest;
	const struct state_pin *p = state_pin_find(j->rec.pins, j->rec.npins,
	    v);

	memset(vi, 0, sizeof(*vi));
	vi->vcpu = v;
	vi->online = v < gu->vcpus;
	vi->cpu = -1;
	snprintf(vi->hard, sizeof(vi->hard), "%s", p && p->hard ? p->hard :
	    gu->cpus ? gu->cpus : "all");
	snprintf(vi->soft, sizeof(vi->soft), "%s", p && p->soft ? p->soft :
	    gu->cpus_soft ? gu->cpus_soft : "all");
}

static void
gen_list(yajl_gen g, struct rz_job *j, bool recorded)
{
	jg_key(g, "vcpus");
	yajl_gen_array_open(g);
	for (uint32_t v = 0; v < j->maxvcpus; v++) {
		struct vmb_vcpu_info *vi = &j->info[v];

		if (recorded)
			recorded_vcpu(j, v, vi);
		yajl_gen_map_open(g);
		jg_kv_u64(g, "vcpu", v);
		jg_kv_bool(g, "online", vi->online);
		if (vi->cpu < 0)
			jg_kv_null(g, "cpu");
		else
			jg_kv_u64(g, "cpu", (uint64_t)vi->cpu);
		jg_kv_str(g, "state", !vi->online ? "offline" : recorded ?
		    "-" : vi->running ? "running" : vi->blocked ? "blocked" :
		    "runnable");
		if (recorded)
			jg_kv_null(g, "cpu_time_seconds");
		else
			jg_kv_dbl(g, "cpu_time_seconds", vi->cpu_time_ns / 1e9);
		jg_kv_str(g, "hard_affinity", vi->hard);
		jg_kv_str(g, "soft_affinity", vi->soft);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	/* A hypervisor that keeps no vCPU state: the list is the record's. */
	jg_kv_bool(g, "recorded_only", recorded);
}

static void
rz_reply(struct rz_job *j, struct vm *vm)
{
	bool recorded = j->kind == RZ_LIST && j->rc == -EOPNOTSUPP;
	yajl_gen g = jg_new();

	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", j->name);
	jg_kv_u64(g, "id", j->domid);
	if (j->kind == RZ_LIST) {
		jg_kv_u64(g, "maxvcpus", j->maxvcpus);
		gen_list(g, j, recorded);
	} else {
		gen_change(g, j);
	}
	yajl_gen_map_close(g);
	call_reply(j->call, g);
	yajl_gen_free(g);
	if (j->kind == RZ_LIST || vm == NULL)
		return;
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", j->name);
	jg_kv_u64(g, "id", j->domid);
	/* vm.changed's one shape: what changed, then its new values. */
	jg_kv_str(g, "change", change_names[j->kind]);
	gen_change(g, j);
	yajl_gen_map_close(g);
	events_emit(EVT_VM_CHANGED, g);
	yajl_gen_free(g);
}

static void
rz_done(struct job *job)
{
	static const char *const what[] = { "memory target", "maxmem",
	    "vcpus", "vcpu affinity", "vcpu list" };
	struct rz_job *j = (struct rz_job *)job;
	struct vm *vm = vm_find_uuid(j->uuid);

	if (vm && j->kind != RZ_LIST)
		vm->busy = false;
	if (j->rc != 0 && !(j->kind == RZ_LIST && j->rc == -EOPNOTSUPP)) {
		if (!j->why[0])
			snprintf(j->why, sizeof(j->why), "%s: %s",
			    what[j->kind], strerror(-j->rc));
		if (j->kind != RZ_LIST)
			log_vm(LOG_WARNING, j->name, j->domid, 0, "%s: %s",
			    what[j->kind], j->why);
		call_error(j->call, j->rc == -EINVAL ? RPC_INVALID_PARAMS :
		    E_HYPERVISOR, j->rc, "%s%s", j->kind == RZ_VCPU_PIN &&
		    j->rc == -EINVAL ? "params.hard/soft: " : "", j->why);
		call_fail(j->call);
		rz_free(j);
		return;
	}
	if (vm && j->kind != RZ_LIST) {
		if (j->record_failed)
			log_vm(LOG_WARNING, j->name, j->domid, 0, "%s changed "
			    "but its record could not be rewritten: a "
			    "restarted daemon will not know", what[j->kind]);
		log_vm(LOG_INFO, j->name, j->domid, 0, "%s of %s set by uid "
		    "%u: %s", what[j->kind], j->name, j->uid, j->change);
	}
	if (vm && j->have_dom)
		vm_update(vm, &j->dom);
	rz_reply(j, vm);
	if (vm && j->kind != RZ_LIST) {
		struct state_pin *pins = vm->pins;
		uint32_t npins = vm->npins;

		vmb_guest_free(vm->guest);
		vm->guest = j->guest;
		j->guest = NULL;
		/* The pins as the record has them now; the old ones go. */
		vm->pins = j->rec.pins;
		vm->npins = j->rec.npins;
		j->rec.pins = pins;
		j->rec.npins = npins;
		vmbd_status_changed();
	}
	rz_free(j);
}

/*
 * The VM a change or list names: ours (its configuration says maxmem
 * and maxvcpus), built, not shut down, and idle.
 */
static struct vm *
rz_vm(struct call *call, bool change)
{
	struct vm *vm = vm_param(call);

	if (vm == NULL || (change && vm_check_idle(call, vm) < 0))
		return NULL;
	if (!vm->ours || vm->domid == VMB_DOMID_INVALID || !vm->guest) {
		call_error(call, E_BAD_STATE, 0, "%s was not built by vmbuildd "
		    "(or its configuration could not be read from its "
		    "record): its size is not vmbuild's to change", vm->name);
		return NULL;
	}
	if (vm->have_dom && (vm->dom.state == VMB_DOM_DYING ||
	    vm->dom.state == VMB_DOM_SHUTDOWN ||
	    vm->dom.state == VMB_DOM_CRASHED)) {
		call_error(call, E_BAD_STATE, 0, "%s is %s", vm->name,
		    vm_state_name(vm));
		return NULL;
	}
	return vm;
}

static struct rz_job *
rz_new(struct call *call, struct vm *vm, enum rz_kind kind)
{
	struct rz_job *j = calloc(1, sizeof(*j));

	if (!j || vmb_guest_copy(vm->guest, &j->guest) < 0) {
		free(j);
		call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
		return NULL;
	}
	j->call = call;
	j->kind = kind;
	j->domid = vm->domid;
	j->uid = (unsigned)call->conn->uid;
	memcpy(j->uuid, vm->uuid, 16);
	snprintf(j->name, sizeof(j->name), "%s", vm->name);
	j->maxvcpus = vm->guest->maxvcpus ? vm->guest->maxvcpus :
	    vm->guest->vcpus;
	return j;
}

/*
 * The record as it will be with j->guest and, for a pin of one vCPU,
 * that pin among the VM's (the hypervisor's pin of every vCPU is the
 * guest's cpus/cpus_soft, pin_guest); then the thread.
 */
static int
rz_start(struct call *call, struct vm *vm, struct rz_job *j)
{
	if (j->kind != RZ_LIST && (vm_record(vm, j->guest, &j->rec) < 0 ||
	    (j->kind == RZ_VCPU_PIN && state_pins_set(&j->rec.pins,
	    &j->rec.npins, j->n, j->hard, j->soft) < 0))) {
		rz_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	j->job.run = rz_run;
	j->job.done = rz_done;
	if (j->kind != RZ_LIST)
		vm->busy = true;
	if (worker_spawn(&j->job) < 0) {
		vm->busy = false;
		rz_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, EAGAIN,
		    "cannot start a thread");
	}
	return CALL_DEFERRED;
}

/*
 * A size in bytes for `key`, page-aligned.  No guest is ballooned down
 * below VMB_MEM_FLOOR; one built smaller than that may still be given
 * more (`cur`: what it has now).
 */
static int
mem_param(struct call *call, const char *key, uint64_t cur, uint64_t *ret)
{
	if (param_u64(call, key, true, ret) < 0)
		return -1;
	if (*ret % 4096 != 0)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: %llu "
		    "is not a multiple of 4 KiB (a page)", key,
		    (unsigned long long)*ret);
	if (*ret < VMB_MEM_FLOOR && *ret < cur)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: "
		    "%llu MiB is below the %llu MiB a guest keeps at least",
		    key, (unsigned long long)(*ret >> 20),
		    (unsigned long long)(VMB_MEM_FLOOR >> 20));
	return 0;
}

int
m_vm_mem_set(struct call *call, yajl_gen g)
{
	struct vm *vm = rz_vm(call, true);
	struct rz_job *j;
	uint64_t b;

	(void)g;
	if (vm == NULL || mem_param(call, P_MEMORY_BYTES,
	    vm->guest->memory_bytes, &b) < 0)
		return -1;
	if (b > vm->guest->maxmem_bytes)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: "
		    "%llu MiB is above %s's maxmem (%llu MiB); raise that "
		    "first (vmctl mem-max)", P_MEMORY_BYTES,
		    (unsigned long long)(b >> 20), vm->name,
		    (unsigned long long)(vm->guest->maxmem_bytes >> 20));
	if ((j = rz_new(call, vm, RZ_MEM_SET)) == NULL)
		return -1;
	snprintf(j->change, sizeof(j->change), "memory target %llu KiB "
	    "(was %llu KiB)", (unsigned long long)(b >> 10),
	    (unsigned long long)(vm->guest->memory_bytes >> 10));
	j->bytes = j->guest->memory_bytes = b;
	return rz_start(call, vm, j);
}

int
m_vm_mem_max(struct call *call, yajl_gen g)
{
	struct vm *vm = rz_vm(call, true);
	struct rz_job *j;
	uint64_t b;

	(void)g;
	if (vm == NULL || mem_param(call, P_MAXMEM_BYTES,
	    vm->guest->maxmem_bytes, &b) < 0)
		return -1;
	if (b < vm->guest->memory_bytes)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: "
		    "%llu MiB is below %s's memory target (%llu MiB); lower "
		    "that first (vmctl mem-set)", P_MAXMEM_BYTES,
		    (unsigned long long)(b >> 20), vm->name,
		    (unsigned long long)(vm->guest->memory_bytes >> 20));
	if ((j = rz_new(call, vm, RZ_MEM_MAX)) == NULL)
		return -1;
	snprintf(j->change, sizeof(j->change), "maxmem %llu KiB (was %llu "
	    "KiB)", (unsigned long long)(b >> 10),
	    (unsigned long long)(vm->guest->maxmem_bytes >> 10));
	j->bytes = j->guest->maxmem_bytes = b;
	return rz_start(call, vm, j);
}

int
m_vm_vcpu_set(struct call *call, yajl_gen g)
{
	struct vm *vm = rz_vm(call, true);
	struct rz_job *j;
	uint64_t n;

	(void)g;
	if (vm == NULL || param_u64(call, P_VCPUS, true, &n) < 0 ||
	    (j = rz_new(call, vm, RZ_VCPU_SET)) == NULL)
		return -1;
	if (n == 0 || n > j->maxvcpus) {
		rz_free(j);
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: %llu "
		    "is not between 1 and %s's maxvcpus (%u)", P_VCPUS,
		    (unsigned long long)n, vm->name, vm->guest->maxvcpus ?
		    vm->guest->maxvcpus : vm->guest->vcpus);
	}
	snprintf(j->change, sizeof(j->change), "%llu vcpus online (was %u)",
	    (unsigned long long)n, vm->guest->vcpus);
	j->n = j->guest->vcpus = (uint32_t)n;
	return rz_start(call, vm, j);
}

/* params.vcpu: a number below maxvcpus or "all". */
static int
vcpu_param(struct call *call, struct rz_job *j, const char *vm)
{
	yajl_val v = jv_get(call->params, P_VCPU);

	if (v != NULL && YAJL_IS_STRING(v) && strcmp(v->u.string, "all") == 0) {
		j->n = VMB_VCPU_ALL;
		return 0;
	}
	if (v == NULL || !YAJL_IS_INTEGER(v))
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s (a "
		    "vCPU number or \"all\") is required", P_VCPU);
	if (YAJL_GET_INTEGER(v) < 0 || YAJL_GET_INTEGER(v) >= j->maxvcpus)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: vCPU "
		    "%lld does not exist (%s has %u: 0-%u)", P_VCPU,
		    (long long)YAJL_GET_INTEGER(v), vm, j->maxvcpus,
		    j->maxvcpus - 1);
	j->n = (uint32_t)YAJL_GET_INTEGER(v);
	return 0;
}

/* A pin of every vCPU is what cpus= and cpus_soft= say: kept there. */
static int
pin_guest(struct rz_job *j)
{
	char **f[2] = { &j->guest->cpus, &j->guest->cpus_soft };
	const char *s[2] = { j->hard, j->soft };

	for (int i = 0; i < 2 && j->n == VMB_VCPU_ALL; i++) {
		if (s[i] == NULL)
			continue;
		free(*f[i]);
		*f[i] = strcmp(s[i], "all") == 0 ? NULL : strdup(s[i]);
		if (*f[i] == NULL && strcmp(s[i], "all") != 0)
			return -ENOMEM;
	}
	return 0;
}

int
m_vm_vcpu_pin(struct call *call, yajl_gen g)
{
	struct vm *vm = rz_vm(call, true);
	const char *hard = NULL, *soft = NULL;
	struct rz_job *j;

	(void)g;
	if (vm == NULL || param_string(call, P_HARD, true, &hard) < 0 ||
	    param_string(call, P_SOFT, false, &soft) < 0 ||
	    (j = rz_new(call, vm, RZ_VCPU_PIN)) == NULL)
		return -1;
	if (vcpu_param(call, j, vm->name) < 0) {
		rz_free(j);
		return -1;
	}
	if ((strcmp(hard, "-") != 0 && !(j->hard = strdup(hard))) ||
	    (soft && strcmp(soft, "-") != 0 && !(j->soft = strdup(soft))) ||
	    pin_guest(j) < 0) {
		rz_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	if (j->n == VMB_VCPU_ALL)
		snprintf(j->change, sizeof(j->change), "every vcpu");
	else
		snprintf(j->change, sizeof(j->change), "vcpu %u", j->n);
	snprintf(j->change + strlen(j->change), sizeof(j->change) -
	    strlen(j->change), ": hard %.64s, soft %.64s", j->hard ? j->hard :
	    "unchanged", j->soft ? j->soft : "unchanged");
	return rz_start(call, vm, j);
}

int
m_vm_vcpu_list(struct call *call, yajl_gen g)
{
	struct vm *vm = rz_vm(call, false);
	struct rz_job *j;

	(void)g;
	if (vm == NULL || (j = rz_new(call, vm, RZ_LIST)) == NULL)
		return -1;
	/* Of the record only the pins: a list the hypervisor cannot give. */
	if ((j->info = calloc(j->maxvcpus, sizeof(*j->info))) == NULL ||
	    state_pins_copy(vm->pins, vm->npins, &j->rec.pins) < 0) {
		rz_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	j->rec.npins = vm->npins;
	return rz_start(call, vm, j);
}
