/*
 * vmstate.h - the states a VM of the registry (vm.h) is in, with their
 * names as the protocol shows them (vm.list, vm.info, vm.state events,
 * metrics) and the transitions between them that are legal, in one
 * table (vmstate.c).  vm.c's vm_state_set() changes a VM's state by it.
 *
 * A VM whose domain the registry knows, and which it neither builds nor
 * destroys, is in its domain's state (running ... crashed), as the
 * hypervisor last said: another toolstack may take a domain from any of
 * them to any other, so all of those moves are legal.  Not states: a VM
 * busy with one operation (struct vm's `busy`, a lock), a VM whose
 * domain is being replaced by a restart (`restart`, across building,
 * destroying and the domain's states).
 */
#ifndef VMBUILDD_VMSTATE_H
#define VMBUILDD_VMSTATE_H

#include <stdbool.h>

#include "vmbuild.h"

enum vm_state {
	VM_UNKNOWN = 0,		/* no domain known (a record's, a build's) */
	VM_BUILDING,		/* a build runs: vm.create's or a restart's */
	VM_RUNNING,		/* its domain's state, as the hypervisor says */
	VM_BLOCKED,
	VM_PAUSED,
	VM_SHUTDOWN,		/* shut down, not yet destroyed */
	VM_DYING,
	VM_CRASHED,
	VM_DESTROYING,		/* reap.c destroys its domain until gone */
	VM_SAVING,		/* vm.save writes it out (save.c) */
	VM_STATE_NR
};

/* "running", "destroying"...; "unknown" for a value out of range. */
const char *vm_state_str(enum vm_state s);
/* May a VM go from `from` to `to`?  (Staying is always legal.) */
bool vm_state_legal(enum vm_state from, enum vm_state to);
/* The state of a VM whose domain is in `d` (VM_UNKNOWN: none such). */
enum vm_state vm_state_of_domain(enum vmb_domain_state d);
/* One of its domain's states (running ... crashed)? */
bool vm_state_is_domain(enum vm_state s);

#endif /* VMBUILDD_VMSTATE_H */
