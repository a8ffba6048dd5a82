/*
 * reap.h - the domains of builds that failed and could not be undone, or
 * were interrupted by a crash and could not be destroyed at start.
 *
 * Such a VM stays in the registry as "destroying" and keeps its state
 * record ("building"); reap.c destroys every domain carrying its uuid,
 * again and again with a growing pause (up to REAP_MAX_DELAY), until
 * none is left.  Only then do the record and the VM go.  Nothing is
 * forgotten while it still holds memory.
 */
#ifndef VMBUILDD_REAP_H
#define VMBUILDD_REAP_H

#include <stdint.h>

struct vm;
struct vm_change;

#define REAP_FIRST_DELAY	0.2	/* s before the first try */
#define REAP_MAX_DELAY		30.0	/* s between tries, at most */

/* Start reaping vm's domains (domid: a hint, or VMB_DOMID_INVALID). */
void reap_start(struct vm *vm, uint32_t domid);
/* Try again now (an operator asked to destroy it). */
void reap_now(struct vm *vm);
/* The VM goes (vm_remove): forget it; a try in flight ends unseen. */
void reap_forget(struct vm *vm);
/* How many tries have failed so far. */
unsigned reap_tries(const struct vm *vm);
/*
 * Once the loop runs (main.c, after vm_init): start reaping the VMs
 * reconciliation could not destroy (reap_at_start).
 */
void reap_start_pending(void);
/* The registry's subscriber (vm_hook_add, main.c): a VM that goes. */
void reap_vm_hook(void *arg, struct vm *vm, const struct vm_change *c);

#endif /* VMBUILDD_REAP_H */
