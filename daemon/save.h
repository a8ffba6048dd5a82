/*
 * save.h - vm.save and vm.restore: a guest written to a save stream
 * (vmbuild-stream(5)) and built again from one.
 *
 * The stream goes to and comes from a descriptor the client passes
 * (params.fds.file, SCM_RIGHTS): the daemon opens no file a client
 * names, so a client saves only where it may write and restores only
 * what it may read.
 */
#ifndef VMBUILDD_SAVE_H
#define VMBUILDD_SAVE_H

#include <yajl/yajl_gen.h>

struct call;

int m_vm_save(struct call *call, yajl_gen g);
int m_vm_restore(struct call *call, yajl_gen g);

#endif /* VMBUILDD_SAVE_H */
