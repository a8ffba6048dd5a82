/*
 * lifecycle.h - what the daemon does when a domain shuts down.
 *
 * Domain events come from libvmbuild's watch (on Xen, xenstore's
 * @introduceDomain and @releaseDomain; on hvsim, its domain watch): its
 * descriptor is watched by the loop, and each time it fires a worker
 * reads what changed and the loop applies it to the registry (vm.c).
 * Whenever a VM is seen shut down, lifecycle_check() applies its
 * on_poweroff / on_reboot / on_crash / on_watchdog / on_soft_reset
 * action once for that domain: destroy it, preserve it (leave it shut
 * down), or restart it (destroy it and build it again from the
 * description it was created from, as a "vm.restart" task).  This is
 * level, not edge, triggered: a shutdown that happened while the daemon
 * was down, or that an event missed, is acted on when it is seen (at
 * start, at the next refresh).  A VM that is not ours is left to its
 * own toolstack.
 */
#ifndef VMBUILDD_LIFECYCLE_H
#define VMBUILDD_LIFECYCLE_H

#include <stdint.h>

struct event_base;
struct vm;
struct vm_change;

/*
 * Before the registry is reconciled (the loop does not run yet): open
 * the hypervisor's domain events, so that nothing between the
 * reconciliation's list and the loop is missed.
 */
void lifecycle_open(void);
/*
 * Once the loop and the workers are there: watch the events (or, where
 * the hypervisor has none, refresh every VM_REFRESH_POLL_SEC), act on
 * VMs found shut down at start and go on with restarts a previous
 * daemon left half done.
 */
int lifecycle_start(struct event_base *base);
void lifecycle_stop(void);

/* A VM's state may have changed: act on a shutdown not acted on yet. */
void lifecycle_check(struct vm *vm);
/* A VM is about to leave the registry. */
void lifecycle_removed(struct vm *vm);
/*
 * The registry's subscriber (vm_hook_add, main.c): a VM seen is
 * checked, one that goes is let go.
 */
void lifecycle_vm_hook(void *arg, struct vm *vm, const struct vm_change *c);
/*
 * The build of a restart ended (rc 0: running again, else its error
 * and message).
 */
void lifecycle_restarted(struct vm *vm, int rc, const char *msg);

#endif /* VMBUILDD_LIFECYCLE_H */
