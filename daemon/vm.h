/*
 * vm.h - the registry of domains: what the hypervisor has, merged with
 * what the daemon knows from its own builds (records in the state dir).
 *
 * The registry is owned by the loop.  Domain events (lifecycle.c: the
 * hypervisor's watch) update it as domains appear, shut down and go,
 * and every operation of ours does at once; a slow refresh from the
 * hypervisor's list (every VM_REFRESH_SEC, every VM_REFRESH_POLL_SEC
 * where there are no events) brings what no event tells: memory, CPU
 * time, pause and unpause by another toolstack.  A refresh that raced
 * with a change of ours or an event is discarded (vm_seq), so a stale
 * list never resurrects or drops a VM.
 */
#ifndef VMBUILDD_VM_H
#define VMBUILDD_VM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "state.h"
#include "vmbuild.h"
#include "vmstate.h"

struct event;
struct event_base;

struct vm {
	char		name[VMB_NAME_LEN];
	uint8_t		uuid[16];
	uint32_t	domid;		/* VMB_DOMID_INVALID until created */
	enum vm_state	state;		/* vm_state_set() changes it */
	uint64_t	task;		/* that task, or the one that built it */
	bool		busy;		/* destroy/pause/unpause in flight */
	bool		ours;		/* built by this daemon (has a record) */
	bool		have_dom;	/* `dom` is shown (not while building) */
	struct vmb_domain dom;		/* last seen from the hypervisor */
	uint64_t	read_seq;	/* vm_seq() when a method or its build read it */
	unsigned	seen;		/* refresh generation that saw it */
	char		*config_path;
	double		created_at;
	struct vmb_guest *guest;	/* as configured (its own copy); NULL */
	yajl_val	build;		/* build result, or NULL */
	struct vmb_placement placement;	/* nodes while building */
	struct reap	*reap;		/* reap.c's, once it destroys it */
	/* Lifecycle (lifecycle.c); the actions and source of ours only. */
	enum vmb_action	on[VMB_SHUTDOWN_NR];	/* on_poweroff & co. */
	char		*source;	/* what to build it again from (source.h) */
	uint32_t	handled;	/* the domain whose shutdown was acted on */
	bool		restart;	/* its domain is being replaced */
	unsigned	restarts;	/* by the daemon, since vm.create */
	/* Restarts within lifecycle.c's window (Unix times, oldest first). */
	double		restart_times[STATE_RESTARTS_MAX];
	unsigned	nrestart_times;
	struct event	*restart_ev;	/* a restart waiting out its back-off */
	struct conn	*console;	/* the client attached to its console */
	int		image_fd[2];	/* kernel, ramdisk it came as; -1 */
	/* Pins of single vCPUs (resize.c), as its record keeps them. */
	struct state_pin *pins;
	uint32_t	npins;
	/*
	 * Its record's migration (state.h; migrate.c sets it), and whether
	 * its outcome is in doubt: the end record may have gone and nobody
	 * knows yet whether the receiver runs the guest (vm.list, vm.info).
	 */
	struct state_migration migration;
	bool		mig_doubt;
	TAILQ_ENTRY(vm) entry;
};

#define VM_REFRESH_SEC		10
#define VM_REFRESH_POLL_SEC	2

int vm_init(struct event_base *base);
void vm_stop(void);
/* Did the last domain list succeed?  (The hypervisor answers.) */
bool vm_backend_up(void);
/*
 * Filling the registry at start (reconcile.c, before the loop runs):
 * whether the hypervisor listed its domains, the control domain (rc 0:
 * `dom0` is it), a VM of ours from its record (`dom`: its domain when
 * known; the record's strings are taken), and a domain not ours.
 */
void vm_set_backend_up(bool up);
void vm_set_dom0(int rc, const struct vmb_domain *dom0);
struct vm *vm_add_record(struct state_record *rec,
    const struct vmb_domain *dom);
struct vm *vm_add_foreign(const struct vmb_domain *dom);

struct vm *vm_find_name(const char *name);
struct vm *vm_find_domid(uint32_t domid);
struct vm *vm_find_uuid(const uint8_t uuid[16]);
unsigned vm_count(void);

/* `guest` and `source` (source.h) are copied. */
struct vm *vm_add_building(const char *name, const uint8_t uuid[16],
    uint64_t task, const char *config_path, const struct vmb_guest *guest,
    const char *source);
/* A VM of ours is built again (a restart) as task `task`. */
void vm_rebuilding(struct vm *vm, uint64_t task, const char *reason);
/* Loop: progress of a build (learn the domid once created). */
void vm_building_progress(const uint8_t uuid[16],
    const struct vmb_progress *p);
/*
 * A build finished well: `dom` as the hypervisor reports it, the
 * guest it was built as (copied: a restart's has the devices the VM
 * had, which its record before may lack) and the build's result.
 */
void vm_built(struct vm *vm, const struct vmb_domain *dom,
    const struct vmb_guest *guest, const char *build_json);
/* Our operation changed a domain (pause, unpause). */
void vm_update(struct vm *vm, const struct vmb_domain *dom);
/* vm.save began (save.c): the VM is "saving" until vm_save_ended(). */
void vm_set_saving(struct vm *vm);
/*
 * A save ended with the VM still here (failed, cancelled, a
 * checkpoint): it is in its domain's state again, as `dom` (read once
 * the save ended) says, or as last seen when NULL.
 */
void vm_save_ended(struct vm *vm, const struct vmb_domain *dom);
/* Our operation renamed it (vm.rename): the registry and its guest. */
void vm_rename(struct vm *vm, const char *name);
/* The VM's restart history into a record it is about to write. */
void vm_record_restarts(const struct vm *vm, struct state_record *rec);
/*
 * The record of a built VM of ours as it stands, into `rec` (zeroed
 * first; the caller frees it with state_record_done): its name, uuid,
 * domain, where it came from, build result, restart history and vCPU
 * pins, and `guest` as its configuration (NULL: the VM's own).  The one
 * place every rewrite of a record (a restart, hot-plug, resize, sched,
 * rename) takes it from; the caller changes what its operation changes.
 * 0, or -ENOMEM with nothing in rec.
 */
int vm_record(const struct vm *vm, const struct vmb_guest *guest,
    struct state_record *rec);
/*
 * The VM's migration marker as its record now holds it (`m` taken and
 * zeroed; NULL: none) and whether its outcome is in doubt.
 */
void vm_set_migration(struct vm *vm, struct state_migration *m, bool doubt);
/* Forget a VM (destroyed, or its build failed). */
void vm_remove(struct vm *vm, bool announce);
/* reap.c took the VM over: it is "destroying" (`domid`: a hint). */
void vm_set_reaping(struct vm *vm, struct reap *r, uint32_t domid);
/* Remove a VM's record off the loop (a file system call). */
void vm_unrecord(const uint8_t uuid[16]);
/*
 * A domain event (vmb_watch_read) into the registry; `since`: vm_seq()
 * when the watch began to read.  A VM a method read after that keeps
 * what the method read (the event may be older) and a refresh is asked.
 */
void vm_apply_event(const struct vmb_domain_event *ev, uint64_t since);
/* The registry's change count (every update adds one). */
uint64_t vm_seq(void);
/*
 * Tell subscribers (vm.state): `state` (NULL: the VM's own), and for a
 * shutdown the reason and the action taken (NULL: none).
 */
void vm_announce(struct vm *vm, const char *state, const char *reason,
    const char *action);

/*
 * The registry's subscribers: what it tells them, on the loop, in the
 * order they were added.  The registry calls nothing above it; main.c
 * subscribes lifecycle.c, reap.c and events.c.
 *   VM_HOOK_ANNOUNCE  a state to announce (vm_announce): `state` (NULL:
 *                     the VM's own), `reason` and `action` (NULL: none)
 *   VM_HOOK_SEEN      its domain was seen or changed: a shutdown may be
 *                     there to act on
 *   VM_HOOK_REMOVED   it is about to leave the registry
 */
enum vm_hook_kind { VM_HOOK_ANNOUNCE, VM_HOOK_SEEN, VM_HOOK_REMOVED };

struct vm_change {
	enum vm_hook_kind kind;
	const char	*state;		/* VM_HOOK_ANNOUNCE only */
	const char	*reason;
	const char	*action;
};

typedef void vm_hook_fn(void *arg, struct vm *vm, const struct vm_change *c);
#define VM_HOOKS_MAX	8
/* Before the loop runs; -ENOSPC past VM_HOOKS_MAX. */
int vm_hook_add(vm_hook_fn *fn, void *arg);
/* The VM's shutdown reason, or NULL when it is not shut down. */
const char *vm_shutdown_reason(const struct vm *vm);
/*
 * Keep duplicates of the descriptors a VM's kernel and ramdisk came as
 * (-1: none), for its restarts (on_*="restart"), while it is in the
 * registry.  Only for a VM with a restart action.
 */
void vm_keep_images(struct vm *vm, const int fd[2]);

/*
 * Move a VM to state `s` if vmstate.c's table allows it; an illegal
 * move is logged and refused (-EINVAL), the VM left as it was.
 */
int vm_state_set(struct vm *vm, enum vm_state s);
/* Its state as the protocol shows it. */
const char *vm_state_name(const struct vm *vm);
/* vCPUs online: the guest's when ours (vm.vcpu_set), else the domain's. */
uint32_t vm_vcpus_online(const struct vm *vm);
void vm_gen_summary(yajl_gen g, const struct vm *vm);
void vm_gen_info(yajl_gen g, const struct vm *vm);
/* {"vms":[...]} */
void vm_gen_list(yajl_gen g);
/*
 * The same as text, cached until the registry changes; NULL: no memory.
 * The caller holds a reference (*ret_ref) that keeps the text unchanged
 * until vm_list_text_put(text, len, ref): a conn_send_ref() cleanup.
 */
const char *vm_list_text(size_t *ret_len, void **ret_ref);
void vm_list_text_put(const void *buf, size_t len, void *ref);
/*
 * Changes with every change of the registry that vm.list shows (VMs
 * added or removed, states, domids, what the hypervisor reported), at
 * the points that drop vm.list's text: for other caches of it.
 */
uint64_t vm_generation(void);
/* The registry in order, for readers on the loop (NULL at the end). */
const struct vm *vm_first(void);
const struct vm *vm_next(const struct vm *vm);
/* VMs per vmb_domain_state (states[0..7]) and being built. */
void vm_count_states(unsigned states[8], unsigned *building);
/* Ask for a refresh soon. */
void vm_refresh_kick(void);
/* Seconds between refreshes (events make the short one unneeded). */
void vm_refresh_every(unsigned sec);
/* Each VM in order, for a function that may remove the one it gets. */
void vm_foreach(void (*fn)(struct vm *vm));

#endif /* VMBUILDD_VM_H */
