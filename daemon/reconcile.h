/*
 * reconcile.h - the registry at start: the state directory's records
 * merged with the hypervisor's list (vm.h holds the result).
 */
#ifndef VMBUILDD_RECONCILE_H
#define VMBUILDD_RECONCILE_H

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

#endif /* VMBUILDD_RECONCILE_H */
