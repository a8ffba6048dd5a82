/*
 * migrate.h - vm.migrate_send: a guest sent to another vmbuildd, whose
 * vm.restore (incoming, save.c) receives it, over a connection the
 * client made (vmctl migrate: ssh HOST vmctl migrate-receive) and
 * passed as two descriptors.
 */
#ifndef VMBUILDD_MIGRATE_H
#define VMBUILDD_MIGRATE_H

#include <yajl/yajl_gen.h>

struct call;

int m_vm_migrate_send(struct call *call, yajl_gen g);
/*
 * Once the loop runs: each VM whose record says it was migrating when
 * the daemon died (state.h) is resolved on a thread: resumed here when
 * the end record never went, else as the receiver answers its query
 * (migresolve.c); what cannot be decided stays paused, in doubt.
 */
void migrate_resolve_pending(void);

#endif /* VMBUILDD_MIGRATE_H */
