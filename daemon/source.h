/*
 * source.h - what a VM is built from, kept to build it again.
 *
 * vm.create takes the guest as xl.cfg text (params.config, with
 * params.config_path) or as an object of xl.cfg keys (params.guest).
 * The daemon records that as the VM's source and, when on_reboot (or
 * another on_* key) says restart, parses it again the way vm.create
 * did, so the new domain is the guest that was created, whatever
 * happened to the file it was read from since (xl restarts from the
 * configuration it created the domain with, too), with the disks and
 * vifs the VM has when it restarts (hot-plugged since, or detached),
 * as xl keeps a domain's current devices across a reboot.
 */
#ifndef VMBUILDD_SOURCE_H
#define VMBUILDD_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include <yajl/yajl_tree.h>

#include "peer.h"
#include "vmbuild.h"

/*
 * Who created a VM, as its source records it: a restart opens the VM's
 * images by path (the descriptors it came as are gone with the daemon
 * that took them) with its creator's rights, never root's, unless root
 * created it (images.c).
 */
struct source_owner {
	bool	by_root;	/* a root client created it */
	/*
	 * Not by root, and no creator recorded (a record of a vmbuildd
	 * before this field): cred is others_only, nobody's rights.
	 */
	bool	unknown;
	struct peer_cred cred;	/* the creator's, at vm.create */
	/*
	 * The kernel (0) and ramdisk (1) the creator was found to be able
	 * to read at vm.create (a descriptor it sent, or a path of an
	 * image directory): device and inode; ino 0 when none was.
	 */
	dev_t	dev[2];
	ino_t	ino[2];
};

/*
 * The source as JSON text: {"config":TEXT} or {"guest":{...}}, with
 * "config_path" when given, "ignore_unsupported": true when the VM
 * was created so (a restart reads its keys the same way), and
 * "by_root": true when a root client created it (only then may its
 * devices run hotplug scripts by absolute path), else "creator" (uid,
 * gid, groups) and "images" (the pins: {"kernel": "DEV:INO"}).  NULL
 * when out of memory.
 */
char *source_json(const char *config, yajl_val guest,
    const char *config_path, bool ignore_unsupported,
    const struct source_owner *owner);
/* Does the recorded source say a root client created the VM? */
bool source_by_root(const char *json);
/*
 * The creator a recorded source names (peer_cred_done(&out->cred)
 * after).  One that says neither by_root nor creator is an older
 * vmbuildd's: out->unknown, nobody's rights.  0, or -EINVAL with why
 * for a creator member that is malformed (-ENOMEM).
 */
int source_owner(const char *json, struct source_owner *out, char *why,
    size_t why_len);
/*
 * A recorded source back into a validated guest.  With `config_json`
 * (the VM's configuration as recorded: vm.info's config), the guest
 * gets the disks and vifs listed there, the ones the VM has now, in
 * place of those of the description (hot-plug changes the
 * configuration, not the source); a configuration without such lists
 * (a record of an older vmbuildd) leaves the description's.  The whole
 * is validated once the devices are in, so a disk detached since,
 * whose image is gone, is not looked for.  A hotplug script by absolute
 * path is refused (-EPERM) unless a root client created the VM: a
 * record (of an older vmbuildd, say) does not let a path that no root
 * client gave run as root.  -EINVAL (or another
 * negative errno) with the reason in `why` (the first configuration
 * error, file:line: key: message, or the configuration's member that
 * is wrong).
 */
int source_parse(const char *json, const char *config_json,
    struct vmb_guest **ret_guest, char *why, size_t why_len);

#endif /* VMBUILDD_SOURCE_H */
