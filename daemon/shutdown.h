/*
 * shutdown.h - vm.shutdown and vm.reboot: ask the guest, as xl shutdown
 * and xl reboot do, and wait for the outcome.
 *
 * The request goes to the guest's PV control node (xenstore's
 * control/shutdown), only if the guest announced that it listens
 * (control/feature-poweroff, feature-reboot).  Without "wait" or
 * "force" the call returns once the request is posted.  With "wait" it
 * returns when the domain has shut down and the daemon has done what
 * its on_* key says (destroyed, preserved, or restarted: then the new
 * domain is running), or after "timeout" seconds (default 60, xl's
 * acknowledgement timeout): a guest that does not answer is reported
 * (E_TIMEOUT) and left running, its request withdrawn if it was never
 * taken.  With "force", a guest that cannot be asked, or does not
 * answer in time, is shut down from the hypervisor with the same
 * reason, and its on_* action applies as if it had done it itself.
 */
#ifndef VMBUILDD_SHUTDOWN_H
#define VMBUILDD_SHUTDOWN_H

#include <stdint.h>

#include <yajl/yajl_gen.h>

#include "vmbuild.h"

struct call;

#define SHUTDOWN_TIMEOUT_DEFAULT	60	/* s, as libxl's ack timeout */
#define SHUTDOWN_TIMEOUT_MAX		3600
#define SHUTDOWN_FORCE_GRACE		30	/* s for a forced one to show */

int m_vm_shutdown(struct call *call, yajl_gen g);
int m_vm_reboot(struct call *call, yajl_gen g);

/*
 * Calls wait on a VM (its uuid: a restart gives it a new domain).
 * shutdown_seen: its domain was seen shut down (`reason`, a static
 * string), the guest answered: stop their clocks.
 */
void shutdown_seen(const uint8_t uuid[16], const char *reason);
/*
 * What became of it: `state` ("destroyed", "shutdown", "crashed",
 * "running"), the shutdown reason and action (NULL: none), and for a
 * restart the new domain.  Answers every call waiting on it.
 */
void shutdown_outcome(const uint8_t uuid[16], const char *state,
    const char *reason, const char *action, uint32_t new_domid);
/* Or that its action failed: the calls waiting get the error. */
void shutdown_failed(const uint8_t uuid[16], int code, int errnum,
    const char *msg);
/* Drop every waiter (the daemon stops). */
void shutdown_stop(void);

#endif /* VMBUILDD_SHUTDOWN_H */
