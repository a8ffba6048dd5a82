/*
 * dm.h - the device models of HVM guests (see dm.c).
 */
#ifndef VMBUILDD_DM_H
#define VMBUILDD_DM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "state.h"
#include "vmbuild.h"

struct dm;

/* Debian's qemu-system-xen: what xen-utils-4.17's libxl runs. */
#define DM_DEFAULT_PATH		"/usr/libexec/xen-qemu-system-i386"

/* The device model to run (--device-model) and where its sockets go. */
void dm_init(const char *path, const char *state_dir);

/* libxl 4.17's users for a restricted qemu-xen (LIBXL_QEMU_USER_*). */
#define DM_USER_RANGE_BASE	"xen-qemuuser-range-base"
#define DM_USER_SHARED		"xen-qemuuser-shared"
/*
 * --dm-user: whom the device model runs as (-runas).  "auto" (the
 * default): as libxl with dm_restrict, DM_USER_RANGE_BASE's uid plus
 * the domid, else DM_USER_SHARED, else root with a warning;
 * "required": the same, but no such user refuses the build; a user
 * name: that user, as device_model_user=.  0, or -EINVAL (a user that
 * does not exist or is root: said on stderr).
 */
int dm_set_user(const char *user);
const char *dm_path(void);

/*
 * Build thread: start the guest's device model for `domid` and wait
 * until it answers on QMP (img: the kernel and ramdisk of a direct
 * kernel boot, opened with the client's rights, numbered above 4; -1
 * for none); 0 with *ret, or a negative errno with why
 * (nothing is left running).  dm_check: it still answers.  dm_stop_now:
 * stop it (QMP quit, SIGKILL after a while), reap it and free it; for a
 * device model not handed to dm_supervise().
 */
int dm_start(const struct vmb_guest *g, uint32_t domid, const int img[2],
    struct dm **ret, char *why, size_t why_len);
int dm_check(struct dm *dm, char *why, size_t why_len);
void dm_stop_now(struct dm *dm);

/*
 * Loop thread: the device model of a built guest, taken over; its death
 * is noticed (a pidfd in the event loop) and the domain is shut down as
 * crashed, so on_crash applies.
 */
void dm_supervise(struct dm *dm);
/*
 * Any thread (a destroy, before the domain goes): stop the device model
 * of `domid`, if it has one, and wait until it has exited; the loop
 * reaps it.
 */
void dm_stop_domid(uint32_t domid);
/*
 * A worker (vm.console of an HVM guest): open the pty of the device
 * model's serial port 0 (QMP query-chardev); 0 with the descriptor and
 * its path, -ESRCH for no device model, -ENOENT for no serial port,
 * -EPERM for a path that is no pty, another negative errno.
 */
int dm_console_open(uint32_t domid, int *ret_fd, char *tty, size_t tty_len);
/*
 * What runs: of a device model (build thread: the build writes it to
 * the store), or of the domain's, 0 or -ESRCH for none (vm.info).
 */
void dm_info(const struct dm *dm, struct vmb_dm_info *ret);
int dm_info_domid(uint32_t domid, struct vmb_dm_info *ret);

/*
 * Across a restart of the daemon: what a record keeps of it (pid 0 for
 * none): of a device model (build thread), or of the domain's (any
 * thread).
 */
void dm_record(const struct dm *dm, struct state_dm *ret);
void dm_record_domid(uint32_t domid, struct state_dm *ret);
/*
 * At start (reconcile.c, before the loop): take back the recorded
 * device model of `domid` if that process still runs (its pid with its
 * start time): 0, or -ESRCH when it is gone.  dm_adopted_supervise,
 * once the loop runs: watch those taken back as dm_supervise does (one
 * that died meanwhile crashes its guest then).  dm_kill_recorded: the
 * device model of a build interrupted by the daemon's end, killed if
 * it still runs.
 */
int dm_adopt(const struct state_dm *rec, uint32_t domid, const char *name);
void dm_adopted_supervise(void);
void dm_kill_recorded(const struct state_dm *rec, uint32_t domid,
    const char *name);

#endif /* VMBUILDD_DM_H */
