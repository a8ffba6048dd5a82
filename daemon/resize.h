/*
 * resize.h - a running VM's memory and vCPUs: vm.mem_set, vm.mem_max,
 * vm.vcpu_set, vm.vcpu_pin and vm.vcpu_list (resize.c).
 */
#ifndef VMBUILDD_RESIZE_H
#define VMBUILDD_RESIZE_H

#include <yajl/yajl_gen.h>

struct call;

int m_vm_mem_set(struct call *call, yajl_gen g);
int m_vm_mem_max(struct call *call, yajl_gen g);
int m_vm_vcpu_set(struct call *call, yajl_gen g);
int m_vm_vcpu_pin(struct call *call, yajl_gen g);
int m_vm_vcpu_list(struct call *call, yajl_gen g);

#endif /* VMBUILDD_RESIZE_H */
