/*
 * build.h - vm.create as a task: record, build on a thread of its own,
 * record again, report.
 */
#ifndef VMBUILDD_BUILD_H
#define VMBUILDD_BUILD_H

#include <stdbool.h>

#include "rpc.h"
#include "vmbuild.h"

/*
 * What builds run with, given once by main.c before the loop runs: this
 * file reads no global of the daemon's.
 */
struct vm;

struct build_config {
	struct vmb_ctx	*ctx;
	enum vmb_populate_strategy strategy;
	unsigned	max_tasks;	/* builds running at once */
	/* Wait this long for the scrubber rather than scrub inline. */
	uint32_t	scrub_wait_ms;
	/* vmb_build_opts.unpause_after_hotplug: xl's order. */
	bool		unpause_after_hotplug;
	/* An HVM guest's firmware (NULL: Debian's, vmbuild.h). */
	const char	*hvmloader, *seabios, *ovmf;
	void		(*status_changed)(void);	/* a build began or ended */
	/*
	 * A restart's build ended (lifecycle_restarted: rc 0, running
	 * again, else its error and message); NULL: nobody is told.
	 */
	void		(*restarted)(struct vm *vm, int rc, const char *msg);
};

void build_init(const struct build_config *cfg);
/* Refuse new builds from now on (the daemon is stopping). */
void build_stop(void);

/*
 * Start building `guest` (taken over, freed by the build), its kernel and
 * ramdisk from `images` (taken over); `source` (source.h) is recorded
 * to build it again from.  With `wait`
 * the call is answered when the build ends (CALL_DEFERRED is returned);
 * without, the result {"task":N,...} is written into g and 0 returned.
 * Errors are set on the call (negative return).
 */
struct image_req;
/* `images` (images.h) is taken over; *images is left empty. */
/*
 * The warnings of the configuration ("file:line: key: warning: ..."),
 * answered as the result's "warnings": every key it ignored is there.
 * build_start takes *warnings over (leaving it empty) once it answers.
 */
struct build_warnings {
	char	**v;
	size_t	n;
};
void build_warnings_done(struct build_warnings *w);

int build_start(struct call *call, yajl_gen g, struct vmb_guest *guest,
    struct image_req *images, const char *config_path, const char *source,
    bool wait, bool paused, struct build_warnings *warnings);
/*
 * Build a VM of ours again (on_reboot=restart & co.) from `guest`
 * (taken over), under its own name and uuid, as a "vm.restart" task;
 * `reason` is why (the shutdown reason).  Its images (taken over) are
 * open already (lifecycle.c: images_restart, images_open, before the
 * old domain went): the descriptors the VM was created with (vm.c
 * keeps them), or files under --image-dir, opened with its creator's
 * rights.  The VM is "building" until build_config's restarted() hears
 * how it ended.  0, or a negative errno with the reason in `why`.
 */
int build_restart(struct vm *vm, struct vmb_guest *guest,
    struct image_req *images, const char *reason, char *why,
    size_t why_len);

/*
 * vm.restore (save.c): build `guest` (taken over) as a "vm.restore" task
 * whose load phase is `fill` (called on the build thread with `user`,
 * the domain populated and paused; see vmb_build_opts.restore) in place
 * of the kernel, `source` recorded as vm.create's is (source.h); `drop(user)` is called once the build is over, whatever
 * happened (also on a failure to start).  Answered as build_start.
 */
struct build_fill {
	int	(*fill)(void *user, uint32_t domid, char *why, size_t len);
	void	(*drop)(void *user);
	void	(*bind)(void *user, struct vmb_build *build, void *task);
	/*
	 * Optional, on the build thread: once the built domain is
	 * recorded (an incoming migration unpauses it and tells the
	 * sender; a failure destroys it), and when the build failed
	 * (`why` says why).
	 */
	int	(*finish)(void *user, uint32_t domid, char *why, size_t len);
	void	(*failed)(void *user, int rc, const char *why);
	void	*user;
	/* The fill populates the domain itself (a Xen stream's restore). */
	bool	populates;
	/*
	 * The restore's task, made while its stream was read (NULL: a new
	 * one): the build adopts it, its phases named by `phase_names`
	 * (task_adopt()); one that fails to start finishes it failed.
	 */
	struct task *task;
	const char *const *phase_names;
};
int build_restore(struct call *call, yajl_gen g, struct vmb_guest *guest,
    const char *source, const struct build_fill *fill, bool wait,
    bool paused);

/* Map a negative errno from libvmbuild to an application error code. */
int build_errno_code(int rc);

#endif /* VMBUILDD_BUILD_H */
