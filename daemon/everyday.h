/*
 * everyday.h - the everyday methods an operator uses on a running host
 * (xl's sched-credit2, rename, uptime, dmesg): vm.sched_get,
 * vm.sched_set, vm.rename, vm.uptime and host.dmesg.
 */
#ifndef VMBUILDD_EVERYDAY_H
#define VMBUILDD_EVERYDAY_H

#include <yajl/yajl_gen.h>

struct call;

int m_vm_sched_get(struct call *call, yajl_gen g);
int m_vm_sched_set(struct call *call, yajl_gen g);
int m_vm_rename(struct call *call, yajl_gen g);
int m_vm_uptime(struct call *call, yajl_gen g);
int m_host_dmesg(struct call *call, yajl_gen g);

#endif /* VMBUILDD_EVERYDAY_H */
