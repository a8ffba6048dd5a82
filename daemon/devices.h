/*
 * devices.h - hot-plug methods (vm.disk_attach, vm.disk_detach,
 * vm.net_attach, vm.net_detach) and the check that a client may use
 * the disk images it names.
 */
#ifndef VMBUILDD_DEVICES_H
#define VMBUILDD_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include <yajl/yajl_gen.h>

#include "vmbuild.h"

struct call;
struct conn;

int m_vm_disk_attach(struct call *call, yajl_gen g);
int m_vm_disk_detach(struct call *call, yajl_gen g);
int m_vm_net_attach(struct call *call, yajl_gen g);
int m_vm_net_detach(struct call *call, yajl_gen g);

/*
 * May the client on `c` open `path` (for writing too when `write`)?
 * The daemon is root: it attaches only images its client could open
 * itself, judged by the mode bits of every directory on the way and of
 * the file for the peer's uid and groups (its primary group and
 * SO_PEERGROUPS; ACLs are not consulted).  For root, only that it exists.
 * 0 (and what stat(2) says of it in *ret_st unless NULL), or
 * -EACCES/-errno with why.
 */
int devices_peer_may_use(const struct conn *c, const char *path, bool write,
    struct stat *ret_st, char *why, size_t why_len);
/*
 * Every device of a guest a client may have: a client other than root
 * names hotplug scripts of the script directory (no path) and may open
 * every disk's target itself, whatever its script; root may give a
 * script by absolute path.  -1 after an error on the call.
 */
int devices_check_guest(struct call *call, const struct vmb_guest *guest);

#endif /* VMBUILDD_DEVICES_H */
