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

#endif /* VMBUILDD_MIGRATE_H */
