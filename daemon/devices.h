/*
 * devices.h - hot-plug methods (vm.disk_attach, vm.disk_detach,
 * vm.net_attach, vm.net_detach) and the check that a client may use
 * the disk images it names (peer.h).
 */
#ifndef VMBUILDD_DEVICES_H
#define VMBUILDD_DEVICES_H

#include <stdbool.h>
#include <stddef.h>

#include <yajl/yajl_gen.h>

#include "vmbuild.h"

struct call;
struct conn;

int m_vm_disk_attach(struct call *call, yajl_gen g);
int m_vm_disk_detach(struct call *call, yajl_gen g);
int m_vm_net_attach(struct call *call, yajl_gen g);
int m_vm_net_detach(struct call *call, yajl_gen g);

/*
 * Every device of a guest a client may have: a client other than root
 * names hotplug scripts of the script directory (no path) and may open
 * every disk's target itself, whatever its script; root may give a
 * script by absolute path.  -1 after an error on the call.
 */
int devices_check_guest(struct call *call, const struct vmb_guest *guest);
/* The same as diagnostics (`where`, each device's line): config.check. */
void devices_check_diags(const struct conn *c, const struct vmb_guest *guest,
    const char *where, struct vmb_diags *diags);

#endif /* VMBUILDD_DEVICES_H */
