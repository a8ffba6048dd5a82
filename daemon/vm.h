/*
 * vm.h - the registry of domains: what the hypervisor has, merged with
 * what the daemon knows from its own builds (records in the state dir).
 *
 * The registry is owned by the loop.  It is refreshed from the
 * hypervisor every few seconds on a worker, and immediately by every
 * operation of ours; a refresh that raced with one of our operations is
 * discarded (vm_seq), so a stale list never resurrects or drops a VM.
 */
#ifndef VMBUILDD_VM_H
#define VMBUILDD_VM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "vmbuild.h"

struct event_base;

struct vm {
	char		name[VMB_NAME_LEN];
	uint8_t		uuid[16];
	uint32_t	domid;		/* VMB_DOMID_INVALID until created */
	bool		building;	/* a vm.create task runs */
	uint64_t	task;		/* that task, or the one that built it */
	bool		busy;		/* destroy/pause/unpause in flight */
	bool		ours;		/* built by this daemon (has a record) */
	bool		have_dom;
	struct vmb_domain dom;		/* last seen from the hypervisor */
	unsigned	seen;		/* refresh generation that saw it */
	char		*config_path;
	double		created_at;
	yajl_val	config;		/* the guest as configured, or NULL */
	yajl_val	build;		/* build result, or NULL */
	struct vmb_placement placement;	/* nodes while building */
	struct reap	*reap;		/* "destroying": reap.c's */
	bool		reap_at_start;	/* reconcile: reap once the loop runs */
	TAILQ_ENTRY(vm) entry;
};

int vm_init(struct event_base *base);
void vm_stop(void);
/*
 * At start, before serving: destroy domains whose record says
 * "building", drop records of domains that are gone, and list every
 * domain the hypervisor has.  Blocking (the loop is not running yet).
 * Only an unreadable state directory fails it: a domain that will not
 * be destroyed is handed to reap.c, and a hypervisor that does not
 * answer is reconciled with once it does (every VM of a record is then
 * listed with state "unknown").
 */
int vm_reconcile(void);
/* Did the last domain list succeed?  (The hypervisor answers.) */
bool vm_backend_up(void);

struct vm *vm_find_name(const char *name);
struct vm *vm_find_domid(uint32_t domid);
struct vm *vm_find_uuid(const uint8_t uuid[16]);
unsigned vm_count(void);

struct vm *vm_add_building(const char *name, const uint8_t uuid[16],
    uint64_t task, const char *config_path, const char *config_json);
/* Loop: progress of a build (learn the domid once created). */
void vm_building_progress(const uint8_t uuid[16],
    const struct vmb_progress *p);
/* A build finished well: `dom` as the hypervisor reports it. */
void vm_built(struct vm *vm, const struct vmb_domain *dom,
    const char *build_json);
/* Our operation changed a domain (pause, unpause). */
void vm_update(struct vm *vm, const struct vmb_domain *dom);
/* Forget a VM (destroyed, or its build failed). */
void vm_remove(struct vm *vm, bool announce);
/* reap.c took the VM over: it is "destroying" (`domid`: a hint). */
void vm_set_reaping(struct vm *vm, struct reap *r, uint32_t domid);

const char *vm_state_name(const struct vm *vm);
void vm_gen_summary(yajl_gen g, const struct vm *vm);
void vm_gen_info(yajl_gen g, const struct vm *vm);
/* {"vms":[...]} */
void vm_gen_list(yajl_gen g);
/* The same as text, cached until the registry changes; NULL: no memory. */
const char *vm_list_text(size_t *ret_len);
/* The registry in order, for readers on the loop (NULL at the end). */
const struct vm *vm_first(void);
const struct vm *vm_next(const struct vm *vm);
/* VMs per vmb_domain_state (states[0..7]) and being built. */
void vm_count_states(unsigned states[8], unsigned *building);
/* Ask for a refresh soon. */
void vm_refresh_kick(void);

#endif /* VMBUILDD_VM_H */
