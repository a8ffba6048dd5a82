/*
 * vm.c - the registry of domains (see vm.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "control.h"
#include "dm.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

TAILQ_HEAD(vmq, vm);

struct refresh_job {
	struct job	job;
	uint64_t	seq;		/* vm_seq when submitted */
	int		rc;
	struct vmb_domain *doms;
	size_t		n;
	int		rc_dom0;
	struct vmb_domain dom0;
};

struct unrecord_job {
	struct job	job;
	uint8_t		uuid[16];
};

static struct {
	struct vmq	vms;
	unsigned	count;
	uint64_t	seq;		/* bumped by each change of ours */
	uint64_t	removed_seq;	/* seq of the last VM removed */
	bool		refreshing;
	bool		list_failing;	/* the last refresh failed */
	struct event	*ev_refresh;
	unsigned	refresh_sec;
	struct list_text *list;		/* cached vm.list result */
	bool		list_valid;
	uint64_t	generation;	/* bumped by each visible change */
	/*
	 * The control domain, shown beside the VMs as `xl list` shows it,
	 * never one of them: not in the registry, so nothing that manages
	 * VMs (reconciliation, records, destroy, metrics) sees it.
	 */
	bool		have_dom0;
	struct vmb_domain dom0;
	struct {
		vm_hook_fn	*fn;
		void		*arg;
	}		hooks[VM_HOOKS_MAX];
	unsigned	nhooks;
} V = { .vms = TAILQ_HEAD_INITIALIZER(V.vms) };

struct vm *
vm_find_name(const char *name)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &V.vms, entry)
		if (strcmp(vm->name, name) == 0)
			return vm;
	return NULL;
}

struct vm *
vm_find_domid(uint32_t domid)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &V.vms, entry)
		if (vm->domid == domid && domid != VMB_DOMID_INVALID)
			return vm;
	return NULL;
}

struct vm *
vm_find_uuid(const uint8_t uuid[16])
{
	struct vm *vm;

	if (vmb_uuid_is_null(uuid))
		return NULL;
	TAILQ_FOREACH(vm, &V.vms, entry)
		if (memcmp(vm->uuid, uuid, 16) == 0)
			return vm;
	return NULL;
}

unsigned
vm_count(void)
{
	return V.count;
}

bool
vm_backend_up(void)
{
	return !V.list_failing;
}

void
vm_set_backend_up(bool up)
{
	V.list_failing = !up;
}

int
vm_state_set(struct vm *vm, enum vm_state s)
{
	if (vm->state == s)
		return 0;
	if (!vm_state_legal(vm->state, s)) {
		log_vm(LOG_ERR, vm->name, vm->domid, vm->task, "%s: no move "
		    "from state %s to %s (vmstate.c): left %s", vm->name,
		    vm_state_str(vm->state), vm_state_str(s),
		    vm_state_str(vm->state));
		return -EINVAL;
	}
	vm->state = s;
	return 0;
}

const char *
vm_state_name(const struct vm *vm)
{
	return vm_state_str(vm->state);
}

/*
 * Its domain was stored (`dom`, shown): the VM is in the domain's state,
 * unless it is being built, destroyed or saved.
 */
static void
vm_domain_state(struct vm *vm)
{
	if (vm->state != VM_BUILDING && vm->state != VM_DESTROYING &&
	    vm->state != VM_SAVING)
		(void)vm_state_set(vm, vm_state_of_domain(vm->dom.state));
}

static bool
is_shutdown(const struct vmb_domain *d)
{
	return d->state == VMB_DOM_SHUTDOWN || d->state == VMB_DOM_CRASHED;
}

const char *
vm_shutdown_reason(const struct vm *vm)
{
	if (vm->state == VM_BUILDING || !vm->have_dom ||
	    !is_shutdown(&vm->dom))
		return NULL;
	return vmb_shutdown_reason_name(vm->dom.shutdown_reason);
}

int
vm_hook_add(vm_hook_fn *fn, void *arg)
{
	if (V.nhooks == VM_HOOKS_MAX)
		return -ENOSPC;
	V.hooks[V.nhooks].fn = fn;
	V.hooks[V.nhooks].arg = arg;
	V.nhooks++;
	return 0;
}

static void
vm_hooks_run(struct vm *vm, const struct vm_change *c)
{
	for (unsigned i = 0; i < V.nhooks; i++)
		V.hooks[i].fn(V.hooks[i].arg, vm, c);
}

void
vm_announce(struct vm *vm, const char *state, const char *reason,
    const char *action)
{
	vm_hooks_run(vm, &(struct vm_change){ .kind = VM_HOOK_ANNOUNCE,
	    .state = state, .reason = reason, .action = action });
}

/* Its domain was seen or changed (a shutdown to act on, lifecycle.c). */
static void
vm_seen_hooks(struct vm *vm)
{
	vm_hooks_run(vm, &(struct vm_change){ .kind = VM_HOOK_SEEN });
}

/*
 * A state change seen: announced here, unless the domain shut down,
 * which lifecycle_check() announces with its reason and action.
 */
static void
vm_changed(struct vm *vm)
{
	if (vm->state != VM_BUILDING && vm->have_dom && is_shutdown(&vm->dom))
		return;
	vm_announce(vm, NULL, NULL, NULL);
}

/* on_poweroff & co. of a VM of ours, from its guest. */
static void
vm_actions(struct vm *vm)
{
	struct vmb_guest *defaults = NULL;

	if (vm->guest != NULL) {
		memcpy(vm->on, vm->guest->on, sizeof(vm->on));
		return;
	}
	/* No guest known (an unreadable record): the defaults (xl's). */
	if (vmb_guest_new(&defaults) == 0) {
		memcpy(vm->on, defaults->on, sizeof(vm->on));
		vmb_guest_free(defaults);
	}
}

/*
 * vm.list is the most frequent request of a busy host (every `vmctl
 * list`, every dashboard): its reply is kept as text and rebuilt only
 * after the registry changed.  So are the metrics' per-VM series, by
 * vm_generation().
 */
static void
vm_list_invalidate(void)
{
	V.list_valid = false;
	V.generation++;
}

uint64_t
vm_seq(void)
{
	return V.seq;
}

uint64_t
vm_generation(void)
{
	return V.generation;
}

/*
 * Replies queue the text itself, not a copy (90 KB with 1000 VMs): each
 * queued reply holds a reference, and so does the cache while it is
 * valid, so that a rebuild never changes text still being sent.
 */
struct list_text {
	unsigned	refs;
	size_t		len;
	char		*text;
};

void
vm_list_text_put(const void *buf, size_t len, void *ref)
{
	struct list_text *l = ref;

	(void)buf;
	(void)len;
	if (l != NULL && --l->refs == 0) {
		free(l->text);
		free(l);
	}
}

const char *
vm_list_text(size_t *ret_len, void **ret_ref)
{
	if (!V.list_valid) {
		struct list_text *l = calloc(1, sizeof(*l));
		yajl_gen g = jg_new();

		if (l == NULL || g == NULL) {
			free(l);
			if (g != NULL)
				yajl_gen_free(g);
			return NULL;
		}
		vm_gen_list(g);
		if ((l->text = jg_finish(g)) == NULL) {
			free(l);
			return NULL;
		}
		l->len = strlen(l->text);
		l->refs = 1;
		vm_list_text_put(NULL, 0, V.list);
		V.list = l;
		V.list_valid = true;
	}
	V.list->refs++;
	*ret_len = V.list->len;
	*ret_ref = V.list;
	return V.list->text;
}

static struct vm *
vm_alloc(const char *name)
{
	struct vm *vm = calloc(1, sizeof(*vm));

	if (vm == NULL)
		return NULL;
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	vm->domid = VMB_DOMID_INVALID;
	vm->handled = VMB_DOMID_INVALID;
	vm->image_fd[0] = vm->image_fd[1] = -1;
	TAILQ_INSERT_TAIL(&V.vms, vm, entry);
	V.count++;
	vm_list_invalidate();
	return vm;
}

/* A domain we did not build: name it as the hypervisor does. */
struct vm *
vm_add_foreign(const struct vmb_domain *dom)
{
	char name[VMB_NAME_LEN];
	struct vm *vm;

	if (dom->name[0] != '\0' && vm_find_name(dom->name) == NULL)
		snprintf(name, sizeof(name), "%s", dom->name);
	else if (dom->name[0] != '\0')
		snprintf(name, sizeof(name), "%.40s-%u", dom->name, dom->domid);
	else
		snprintf(name, sizeof(name), "domain-%u", dom->domid);
	vm = vm_alloc(name);
	if (vm == NULL)
		return NULL;
	memcpy(vm->uuid, dom->uuid, 16);
	vm->domid = dom->domid;
	vm->have_dom = true;
	vm->dom = *dom;
	vm_domain_state(vm);
	return vm;
}

struct vm *
vm_add_building(const char *name, const uint8_t uuid[16], uint64_t task,
    const char *config_path, const struct vmb_guest *guest,
    const char *source)
{
	struct vm *vm = vm_alloc(name);

	if (vm == NULL)
		return NULL;
	memcpy(vm->uuid, uuid, 16);
	(void)vm_state_set(vm, VM_BUILDING);
	vm->ours = true;
	vm->task = task;
	vm->created_at = now_real();
	vm->config_path = config_path ? strdup(config_path) : NULL;
	vm->source = source ? strdup(source) : NULL;
	if (guest != NULL && vmb_guest_copy(guest, &vm->guest) < 0)
		vm->guest = NULL;
	vm_actions(vm);
	V.seq++;
	vm_list_invalidate();
	vm_announce(vm, NULL, NULL, NULL);
	return vm;
}

void
vm_rebuilding(struct vm *vm, uint64_t task, const char *reason)
{
	(void)vm_state_set(vm, VM_BUILDING);
	vm->task = task;
	vm->have_dom = false;
	vm->domid = VMB_DOMID_INVALID;
	V.seq++;
	vm_list_invalidate();
	vm_announce(vm, "building", reason, "restart");
}

void
vm_building_progress(const uint8_t uuid[16], const struct vmb_progress *p)
{
	struct vm *vm = vm_find_uuid(uuid);

	if (vm == NULL || vm->state != VM_BUILDING)
		return;
	if (p->domid != VMB_DOMID_INVALID && vm->domid != p->domid) {
		vm->domid = p->domid;
		vm_list_invalidate();
	}
}

void
vm_built(struct vm *vm, const struct vmb_domain *dom,
    const struct vmb_guest *guest, const char *build_json)
{
	struct vmb_guest *copy;

	if (dom != NULL) {
		vm->dom = *dom;
		vm->have_dom = true;
		vm->domid = dom->domid;
	}
	(void)vm_state_set(vm, vm->have_dom ?
	    vm_state_of_domain(vm->dom.state) : VM_UNKNOWN);
	/* Read after its unpause: newer than a watch begun while it built. */
	if (dom != NULL)
		vm->read_seq = V.seq + 1;
	if (guest != NULL && vmb_guest_copy(guest, &copy) == 0) {
		vmb_guest_free(vm->guest);
		vm->guest = copy;
	}
	if (build_json != NULL) {
		yajl_tree_free(vm->build);
		vm->build = jv_parse(build_json, strlen(build_json),
		    JSON_MAX_DEPTH, NULL, 0);
	}
	V.seq++;
	vm_list_invalidate();
	vm_announce(vm, NULL, NULL, NULL);
}

void
vm_update(struct vm *vm, const struct vmb_domain *dom)
{
	bool changed = !vm->have_dom || vm->dom.state != dom->state;

	vm->dom = *dom;
	vm->have_dom = true;
	vm->domid = dom->domid;
	vm_domain_state(vm);
	V.seq++;
	vm->read_seq = V.seq;
	vm_list_invalidate();
	if (changed)
		vm_changed(vm);
	vm_seen_hooks(vm);
}

void
vm_set_saving(struct vm *vm)
{
	(void)vm_state_set(vm, VM_SAVING);
	V.seq++;
	vm_list_invalidate();
	vm_announce(vm, NULL, NULL, NULL);
}

void
vm_save_ended(struct vm *vm, const struct vmb_domain *dom)
{
	if (vm->state != VM_SAVING)
		return;
	/* Its domain's state, announced even if the same as before. */
	(void)vm_state_set(vm, vm_state_of_domain(vm->dom.state));
	if (dom != NULL) {
		vm->dom = *dom;
		vm->have_dom = true;
		vm->domid = dom->domid;
		(void)vm_state_set(vm, vm_state_of_domain(dom->state));
	}
	V.seq++;
	vm->read_seq = V.seq;
	vm_list_invalidate();
	vm_announce(vm, NULL, NULL, NULL);
	vm_seen_hooks(vm);
}

void
vm_rename(struct vm *vm, const char *name)
{
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	if (vm->guest != NULL)
		snprintf(vm->guest->name, sizeof(vm->guest->name), "%s", name);
	vm->dom.name[0] = '\0';	/* the next refresh brings the new one */
	V.seq++;
	vm_list_invalidate();
}

void
vm_set_reaping(struct vm *vm, struct reap *r, uint32_t domid)
{
	(void)vm_state_set(vm, VM_DESTROYING);
	vm->reap = r;
	if (domid != VMB_DOMID_INVALID)
		vm->domid = domid;
	V.seq++;
	vm_list_invalidate();
	vm_announce(vm, NULL, NULL, NULL);
}

void
vm_record_restarts(const struct vm *vm, struct state_record *rec)
{
	memcpy(rec->restart_times, vm->restart_times,
	    sizeof(rec->restart_times));
	rec->nrestart_times = vm->nrestart_times;
}

int
vm_record(const struct vm *vm, const struct vmb_guest *guest,
    struct state_record *rec)
{
	yajl_gen g;

	memset(rec, 0, sizeof(*rec));
	memcpy(rec->uuid, vm->uuid, 16);
	snprintf(rec->name, sizeof(rec->name), "%s", vm->name);
	rec->built = true;
	rec->domid = vm->domid;
	rec->created_at = vm->created_at;
	vm_record_restarts(vm, rec);
	if (vm->config_path != NULL)
		rec->config_path = strdup(vm->config_path);
	/* What a restart rebuilds from stays in the record. */
	if (vm->source != NULL)
		rec->source_json = strdup(vm->source);
	rec->config_json = guestjson_text(guest != NULL ? guest : vm->guest);
	if (vm->build != NULL && (g = jg_new()) != NULL) {
		jg_tree(g, vm->build);
		rec->build_json = jg_finish(g);
	}
	if ((vm->config_path != NULL && rec->config_path == NULL) ||
	    (vm->source != NULL && rec->source_json == NULL) ||
	    rec->config_json == NULL ||
	    (vm->build != NULL && rec->build_json == NULL) ||
	    state_migration_copy(&rec->migration, &vm->migration) < 0 ||
	    state_pins_copy(vm->pins, vm->npins, &rec->pins) < 0) {
		state_record_done(rec);
		return -ENOMEM;
	}
	rec->npins = vm->npins;
	if (vm->domid != VMB_DOMID_INVALID)
		dm_record_domid(vm->domid, &rec->dm);
	return 0;
}

void
vm_set_migration(struct vm *vm, struct state_migration *m, bool doubt)
{
	state_migration_done(&vm->migration);
	if (m != NULL) {
		vm->migration = *m;
		memset(m, 0, sizeof(*m));
	}
	vm->mig_doubt = vm->migration.set && doubt;
	vm_list_invalidate();
}

/* "migration": its marker, in doubt or not; null when none. */
static void
vm_gen_migration(yajl_gen g, const struct vm *vm)
{
	jg_key(g, "migration");
	if (!vm->migration.set) {
		yajl_gen_null(g);
		return;
	}
	yajl_gen_map_open(g);
	jg_kv_str(g, "target", vm->migration.target);
	jg_kv_str(g, "phase", vm->migration.ending ? "ending" : "sending");
	jg_kv_bool(g, "in_doubt", vm->mig_doubt);
	yajl_gen_map_close(g);
}

void
vm_remove(struct vm *vm, bool announce)
{
	if (announce)
		vm_announce(vm, "destroyed", NULL, NULL);
	/* reap.c, then lifecycle.c (main.c's order) let go of it. */
	vm_hooks_run(vm, &(struct vm_change){ .kind = VM_HOOK_REMOVED });
	TAILQ_REMOVE(&V.vms, vm, entry);
	V.count--;
	V.seq++;
	V.removed_seq = V.seq;
	vm_list_invalidate();
	yajl_tree_free(vm->build);
	vmb_guest_free(vm->guest);
	free(vm->config_path);
	free(vm->source);
	state_pins_free(vm->pins, vm->npins);
	state_migration_done(&vm->migration);
	conn_unref(vm->console);
	for (int i = 0; i < 2; i++)
		if (vm->image_fd[i] >= 0)
			close(vm->image_fd[i]);
	free(vm);
}

void
vm_keep_images(struct vm *vm, const int fd[2])
{
	bool restarts = false;

	for (int r = 0; r < VMB_SHUTDOWN_NR; r++)
		restarts = restarts || vm->on[r] == VMB_ACTION_RESTART;
	for (int i = 0; i < 2; i++) {
		if (vm->image_fd[i] >= 0)
			close(vm->image_fd[i]);
		vm->image_fd[i] = restarts && fd[i] >= 0 ?
		    fcntl(fd[i], F_DUPFD_CLOEXEC, 3) : -1;
	}
}

static void
vm_gen_nodes(yajl_gen g, const struct vm *vm)
{
	bool any = false;

	yajl_gen_array_open(g);
	if (vm->have_dom) {
		for (uint32_t i = 0; i < vm->dom.nr_nodes && i < VMB_MAX_NODES;
		    i++) {
			if (vm->dom.node_bytes[i] == 0)
				continue;
			jg_u64(g, i);
			any = true;
		}
	}
	if (!any) {
		yajl_val nodes = jv_get(jv_get(vm->build, "placement"),
		    "nodes");

		if (YAJL_IS_ARRAY(nodes))
			for (size_t i = 0; i < nodes->u.array.len; i++)
				jg_tree(g, nodes->u.array.values[i]);
	}
	yajl_gen_array_close(g);
}

uint32_t
vm_vcpus_online(const struct vm *vm)
{
	if (vm->ours && vm->guest && vm->guest->vcpus > 0 &&
	    vm->guest->vcpus < vm->dom.vcpus)
		return vm->guest->vcpus;
	return vm->dom.vcpus;
}

void
vm_gen_summary(yajl_gen g, const struct vm *vm)
{
	yajl_gen_map_open(g);
	if (vm->domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "id");
	else
		jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "name", vm->name);
	jg_kv_str(g, "state", vm_state_name(vm));
	/* "pvh", "hvm"; null for a domain not built here. */
	if (vm->guest != NULL)
		jg_kv_str(g, "type", vmb_guest_type_name(vm->guest->type));
	else
		jg_kv_null(g, "type");
	if (vm->have_dom) {
		jg_kv_u64(g, "memory_bytes", vm->dom.memory_bytes);
		jg_kv_u64(g, "vcpus", vm_vcpus_online(vm));
	} else {
		jg_kv_null(g, "memory_bytes");
		jg_kv_null(g, "vcpus");
	}
	jg_key(g, "nodes");
	vm_gen_nodes(g, vm);
	vm_gen_migration(g, vm);
	yajl_gen_map_close(g);
}

/*
 * The guest's type and RAM layout (layout.c); an HVM guest's device
 * model (its pid and serial pty; null when none runs).
 */
static void
vm_gen_layout(yajl_gen g, const struct vm *vm)
{
	struct vmb_ram_layout l;
	struct vmb_dm_info dm;

	if (vm->guest == NULL) {
		jg_kv_null(g, "type");
		return;
	}
	jg_kv_str(g, "type", vmb_guest_type_name(vm->guest->type));
	jg_key(g, "layout");
	if (vmb_guest_ram_layout(vm->guest, &l) < 0) {
		yajl_gen_null(g);
	} else {
		yajl_gen_map_open(g);
		jg_kv_u64(g, "lowmem_end", l.lowmem_end);
		jg_kv_u64(g, "highmem_end", l.highmem_end);
		jg_kv_u64(g, "mmio_hole_start", l.hole_start);
		jg_kv_u64(g, "vga_hole_start", l.vga_start);
		jg_kv_u64(g, "vga_hole_end", l.vga_end);
		jg_kv_u64(g, "populated_bytes", l.populated);
		yajl_gen_map_close(g);
	}
	if (vm->guest->type != VMB_GUEST_HVM)
		return;
	jg_key(g, "device_model");
	if (vm->domid == VMB_DOMID_INVALID ||
	    dm_info_domid(vm->domid, &dm) < 0) {
		yajl_gen_null(g);
		return;
	}
	yajl_gen_map_open(g);
	jg_kv_u64(g, "pid", (uint64_t)dm.pid);
	jg_kv_str(g, "path", dm_path());
	if (dm.serial_tty[0])
		jg_kv_str(g, "serial_tty", dm.serial_tty);
	else
		jg_kv_null(g, "serial_tty");
	yajl_gen_map_close(g);
}

void
vm_gen_info(yajl_gen g, const struct vm *vm)
{
	char u[VMB_UUID_STRLEN];

	vmb_uuid_to_str(vm->uuid, u);
	yajl_gen_map_open(g);
	if (vm->domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "id");
	else
		jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "name", vm->name);
	jg_kv_str(g, "uuid", u);
	jg_kv_str(g, "state", vm_state_name(vm));
	jg_kv_str(g, "shutdown_reason", vm_shutdown_reason(vm));
	jg_kv_str(g, "origin", vm->ours ? "vmbuildd" : "foreign");
	vm_gen_layout(g, vm);
	vm_gen_migration(g, vm);
	if (vm->ours) {
		jg_key(g, "lifecycle");
		yajl_gen_map_open(g);
		jg_kv_str(g, "on_poweroff",
		    vmb_action_name(vm->on[VMB_SHUTDOWN_POWEROFF]));
		jg_kv_str(g, "on_reboot",
		    vmb_action_name(vm->on[VMB_SHUTDOWN_REBOOT]));
		jg_kv_str(g, "on_crash",
		    vmb_action_name(vm->on[VMB_SHUTDOWN_CRASH]));
		jg_kv_str(g, "on_watchdog",
		    vmb_action_name(vm->on[VMB_SHUTDOWN_WATCHDOG]));
		jg_kv_str(g, "on_soft_reset",
		    vmb_action_name(vm->on[VMB_SHUTDOWN_SOFT_RESET]));
		jg_kv_u64(g, "restarts", vm->restarts);
		yajl_gen_map_close(g);
	} else {
		jg_kv_null(g, "lifecycle");
	}
	if (vm->have_dom) {
		const struct vmb_domain *d = &vm->dom;

		jg_kv_u64(g, "memory_bytes", d->memory_bytes);
		jg_kv_u64(g, "max_memory_bytes", d->max_memory_bytes);
		jg_kv_u64(g, "outstanding_bytes", d->outstanding_bytes);
		/*
		 * The hypervisor counts every vCPU the domain has (maxvcpus);
		 * those online and the balloon target are the guest's, as
		 * vm.vcpu_set and vm.mem_set left them.
		 */
		jg_kv_u64(g, "vcpus", vm_vcpus_online(vm));
		jg_kv_u64(g, "maxvcpus", d->vcpus);
		if (vm->ours && vm->guest) {
			jg_kv_u64(g, "memory_target_bytes",
			    vm->guest->memory_bytes);
			jg_kv_u64(g, "maxmem_bytes", vm->guest->maxmem_bytes);
		}
		jg_kv_bool(g, "hap", d->hap);
		jg_kv_dbl(g, "cpu_time_seconds", d->cpu_time_ns / 1e9);
		jg_key(g, "node_bytes");
		yajl_gen_map_open(g);
		for (uint32_t i = 0; i < d->nr_nodes && i < VMB_MAX_NODES;
		    i++) {
			char key[16];

			/* Only the nodes that hold some of its memory. */
			if (d->node_bytes[i] == 0)
				continue;
			snprintf(key, sizeof(key), "%u", i);
			jg_kv_u64(g, key, d->node_bytes[i]);
		}
		yajl_gen_map_close(g);
	} else {
		jg_kv_null(g, "memory_bytes");
		jg_kv_null(g, "vcpus");
	}
	jg_key(g, "nodes");
	vm_gen_nodes(g, vm);
	jg_kv_str(g, "config_path", vm->config_path);
	if (vm->ours)
		jg_kv_dbl(g, "created_at", vm->created_at);
	else
		jg_kv_null(g, "created_at");
	if (vm->task != 0)
		jg_kv_u64(g, "task", vm->task);
	else
		jg_kv_null(g, "task");
	jg_key(g, "config");
	guestjson_gen(g, vm->guest);
	jg_key(g, "placement_reason");
	jg_tree(g, jv_get(jv_get(vm->build, "placement"), "reason"));
	jg_key(g, "build");
	jg_tree(g, vm->build);
	yajl_gen_map_close(g);
}

void
vm_gen_list(yajl_gen g)
{
	struct vm *vm;

	yajl_gen_map_open(g);
	jg_key(g, "vms");
	yajl_gen_array_open(g);
	TAILQ_FOREACH(vm, &V.vms, entry)
		vm_gen_summary(g, vm);
	yajl_gen_array_close(g);
	/* Only where the hypervisor has one (Xen, not hvsim). */
	if (V.have_dom0) {
		jg_key(g, "control_domain");
		yajl_gen_map_open(g);
		jg_kv_u64(g, "id", V.dom0.domid);
		jg_kv_str(g, "name", V.dom0.name);
		jg_kv_str(g, "state", vmb_domain_state_name(V.dom0.state));
		jg_kv_u64(g, "memory_bytes", V.dom0.memory_bytes);
		jg_kv_u64(g, "vcpus", V.dom0.vcpus);
		jg_kv_dbl(g, "cpu_time_seconds", V.dom0.cpu_time_ns / 1e9);
		yajl_gen_map_close(g);
	}
	yajl_gen_map_close(g);
}

/* What the hypervisor says of its control domain, if it has one. */
void
vm_set_dom0(int rc, const struct vmb_domain *dom0)
{
	V.have_dom0 = rc == 0;
	if (V.have_dom0)
		V.dom0 = *dom0;
	vm_list_invalidate();
}

const struct vm *
vm_first(void)
{
	return TAILQ_FIRST(&V.vms);
}

const struct vm *
vm_next(const struct vm *vm)
{
	return TAILQ_NEXT(vm, entry);
}

void
vm_count_states(unsigned states[8], unsigned *building)
{
	struct vm *vm;

	TAILQ_FOREACH(vm, &V.vms, entry) {
		if (vm->state == VM_BUILDING)
			(*building)++;
		else if (vm->have_dom && vm->dom.state < 8)
			states[vm->dom.state]++;
	}
}

static void
unrecord_run(struct job *job)
{
	struct unrecord_job *uj = (struct unrecord_job *)job;

	(void)state_remove(uj->uuid);
}

static void
unrecord_done(struct job *job)
{
	free(job);
}

void
vm_unrecord(const uint8_t uuid[16])
{
	struct unrecord_job *uj = calloc(1, sizeof(*uj));

	if (uj == NULL)
		return;
	memcpy(uj->uuid, uuid, 16);
	uj->job.run = unrecord_run;
	uj->job.done = unrecord_done;
	worker_submit(&uj->job);
}

/*
 * The registry's entry for a domain: by uuid, or by domid when a uuid
 * is missing on either side (Xen reuses domids, so a new domain must
 * not inherit the name of a dead one).
 */
static struct vm *
vm_match(const struct vmb_domain *d)
{
	struct vm *vm = vm_find_uuid(d->uuid);

	if (vm == NULL) {
		vm = vm_find_domid(d->domid);
		if (vm != NULL && !vmb_uuid_is_null(vm->uuid) &&
		    !vmb_uuid_is_null(d->uuid))
			vm = NULL;
	}
	return vm;
}

/* A domain we had not seen: a VM of someone else's. */
static void
vm_appeared(const struct vmb_domain *d, unsigned generation)
{
	struct vm *vm = vm_add_foreign(d);

	if (vm == NULL)
		return;
	vm->seen = generation;
	log_vm(LOG_INFO, vm->name, d->domid, 0, "domain %u (%s) appeared",
	    d->domid, vm->name);
	vm_announce(vm, NULL, NULL, NULL);
	vm_seen_hooks(vm);
}

/* What the hypervisor says now of a domain we know. */
static void
vm_seen(struct vm *vm, const struct vmb_domain *d)
{
	bool changed = !vm->have_dom || vm->dom.state != d->state ||
	    (is_shutdown(d) && vm->dom.shutdown_reason != d->shutdown_reason);

	if (vm->state == VM_BUILDING) {
		vm->domid = d->domid;
		vm->dom = *d;
		return;
	}
	vm->dom = *d;
	vm->have_dom = true;
	vm->domid = d->domid;
	vm_domain_state(vm);
	/* The save's own pause is no change of the VM's: it is saving. */
	if (changed && vm->state != VM_SAVING)
		vm_changed(vm);
}

/*
 * Its domain is gone, and not by an operation of ours (those remove the
 * VM themselves; a domain replaced by a restart is not gone).
 */
static bool
vm_gone(struct vm *vm)
{
	if (vm->state == VM_BUILDING || vm->busy || vm->restart)
		return false;
	log_vm(LOG_INFO, vm->name, vm->domid, vm->task,
	    "domain %u (%s) is gone", vm->domid, vm->name);
	if (vm->ours)
		vm_unrecord(vm->uuid);
	vm_remove(vm, true);
	return true;
}

/* Merge a fresh domain list into the registry. */
static void
vm_apply(const struct vmb_domain *doms, size_t n)
{
	static unsigned generation;
	struct vm *vm, *next;

	generation++;
	/* Memory and states may have moved: rebuild the cached list. */
	vm_list_invalidate();
	for (size_t i = 0; i < n; i++) {
		vm = vm_match(&doms[i]);
		if (vm == NULL) {
			vm_appeared(&doms[i], generation);
			continue;
		}
		vm->seen = generation;
		vm_seen(vm, &doms[i]);
	}
	for (vm = TAILQ_FIRST(&V.vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		if (vm->seen != generation)
			(void)vm_gone(vm);
	}
	/* Level, not edge: a shutdown an event missed is acted on now. */
	vm_foreach(vm_seen_hooks);
}

void
vm_apply_event(const struct vmb_domain_event *ev, uint64_t since)
{
	struct vm *vm = vm_match(&ev->dom);

	V.seq++;
	vm_list_invalidate();
	switch (ev->type) {
	case VMB_EVENT_NEW:
	case VMB_EVENT_CHANGED:
		/*
		 * A domain read before a VM was removed (a vm.destroy's dying
		 * domain, say) would come back as someone else's VM under the
		 * name just freed: a create of that name then found it taken
		 * (faults.py under ASan).  A fresh list decides instead.
		 */
		if (vm == NULL && V.removed_seq > since) {
			vm_refresh_kick();
			return;
		}
		if (vm == NULL) {
			vm_appeared(&ev->dom, 0);
			return;
		}
		/*
		 * Read by a method (a pause, say) after the watch began: the
		 * event may show the domain as it was before (a vm.pause
		 * answered "paused" and the next vm.list said "running").
		 */
		if (vm->read_seq > since) {
			vm_refresh_kick();
			return;
		}
		vm_seen(vm, &ev->dom);
		vm_seen_hooks(vm);
		return;
	case VMB_EVENT_GONE:
		/* Only the domain it had: not one its restart has built. */
		if (vm != NULL && vm->domid == ev->dom.domid)
			(void)vm_gone(vm);
		return;
	}
}

void
vm_foreach(void (*fn)(struct vm *vm))
{
	struct vm *vm, *next;

	for (vm = TAILQ_FIRST(&V.vms); vm != NULL; vm = next) {
		next = TAILQ_NEXT(vm, entry);
		fn(vm);
	}
}

static void
refresh_run(struct job *job)
{
	struct refresh_job *rj = (struct refresh_job *)job;

	rj->rc = vmb_domain_list(vmbd.ctx, &rj->doms, &rj->n);
	rj->rc_dom0 = vmb_control_domain(vmbd.ctx, &rj->dom0);
}

static void
vm_refresh_arm(double sec)
{
	struct timeval tv = { (time_t)sec,
	    (suseconds_t)((sec - (time_t)sec) * 1e6) };

	if (V.ev_refresh != NULL)
		evtimer_add(V.ev_refresh, &tv);
}

/*
 * The refresh interval: the slow one beside domain events, but while
 * the hypervisor does not answer, the poll's: only a list that works
 * tells it is back (events may come from a watch that has its own
 * connection).
 */
static unsigned
vm_refresh_sec(void)
{
	return V.list_failing ? VM_REFRESH_POLL_SEC : V.refresh_sec;
}

static void
refresh_done(struct job *job)
{
	struct refresh_job *rj = (struct refresh_job *)job;
	bool busy = false;
	struct vm *vm;

	V.refreshing = false;
	TAILQ_FOREACH(vm, &V.vms, entry)
		if (vm->busy)
			busy = true;
	/* Say it once when the hypervisor stops answering, once when back. */
	if (rj->rc < 0 && !V.list_failing)
		log_warnx("the hypervisor does not answer (cannot list domains: "
		    "%s); VM states may be stale, trying again every %d s",
		    strerror(-rj->rc), VM_REFRESH_POLL_SEC);
	else if (rj->rc == 0 && V.list_failing)
		log_notice("the hypervisor answers again: reconciling %u VMs "
		    "with its %zu domains", V.count, rj->n);
	if ((rj->rc < 0) != V.list_failing) {
		V.list_failing = rj->rc < 0;
		vmbd_status_changed();
	}
	if (rj->rc == 0 && rj->seq == V.seq && !busy)
		vm_apply(rj->doms, rj->n);
	vm_set_dom0(rj->rc_dom0, &rj->dom0);
	free(rj->doms);
	free(rj);
	if (!vmbd.stopping)
		vm_refresh_arm(vm_refresh_sec());
}

static void
refresh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh_job *rj;

	(void)fd;
	(void)what;
	(void)arg;
	if (V.refreshing || vmbd.stopping)
		return;
	rj = calloc(1, sizeof(*rj));
	if (rj == NULL)
		return;
	rj->seq = V.seq;
	rj->job.run = refresh_run;
	rj->job.done = refresh_done;
	V.refreshing = true;
	worker_submit(&rj->job);
}

void
vm_refresh_kick(void)
{
	if (!V.refreshing)
		vm_refresh_arm(0);
}

void
vm_refresh_every(unsigned sec)
{
	V.refresh_sec = sec;
	if (!V.refreshing)
		vm_refresh_arm(vm_refresh_sec());
}

int
vm_init(struct event_base *base)
{
	V.ev_refresh = evtimer_new(base, refresh_cb, NULL);
	if (V.ev_refresh == NULL)
		return -1;
	if (V.refresh_sec == 0)
		V.refresh_sec = VM_REFRESH_POLL_SEC;
	vm_refresh_arm(vm_refresh_sec());
	return 0;
}

void
vm_stop(void)
{
	if (V.ev_refresh != NULL)
		event_free(V.ev_refresh);
	V.ev_refresh = NULL;
	while (!TAILQ_EMPTY(&V.vms))
		vm_remove(TAILQ_FIRST(&V.vms), false);
	vm_list_text_put(NULL, 0, V.list);
	V.list = NULL;
	V.list_valid = false;
}

/* A VM of ours from its record (the domain, when it is known). */
struct vm *
vm_add_record(struct state_record *rec, const struct vmb_domain *dom)
{
	struct vm *vm = vm_alloc(rec->name);
	char why[200];

	if (vm == NULL)
		return NULL;
	memcpy(vm->uuid, rec->uuid, 16);
	vm->ours = true;
	vm->domid = dom != NULL ? dom->domid : rec->domid;
	vm->have_dom = dom != NULL;
	if (dom != NULL) {
		vm->dom = *dom;
		vm_domain_state(vm);
	}
	vm->created_at = rec->created_at;
	vm->config_path = rec->config_path;
	rec->config_path = NULL;
	if (rec->build_json != NULL)
		vm->build = jv_parse(rec->build_json, strlen(rec->build_json),
		    JSON_MAX_DEPTH, NULL, 0);
	if (rec->config_json != NULL && guestjson_parse(rec->config_json,
	    &vm->guest, why, sizeof(why)) < 0)
		log_vm(LOG_WARNING, rec->name, vm->domid, 0, "%s: its record's "
		    "%s: vm.info shows no config", rec->name, why);
	vm->restart = rec->restart;
	memcpy(vm->restart_times, rec->restart_times,
	    sizeof(vm->restart_times));
	vm->nrestart_times = rec->nrestart_times;
	vm->source = rec->source_json;
	rec->source_json = NULL;
	vm->pins = rec->pins;
	vm->npins = rec->npins;
	rec->pins = NULL;
	rec->npins = 0;
	vm_set_migration(vm, &rec->migration, rec->migration.ending);
	vm_actions(vm);
	return vm;
}
