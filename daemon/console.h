/*
 * console.h - vm.console: a guest's PV console, handed to the client.
 */
#ifndef VMBUILDD_CONSOLE_H
#define VMBUILDD_CONSOLE_H

#include <yajl/yajl_gen.h>

struct call;

int m_vm_console(struct call *call, yajl_gen g);

#endif /* VMBUILDD_CONSOLE_H */
