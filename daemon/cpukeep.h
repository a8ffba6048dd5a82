/*
 * cpukeep.h - every thread of vmbuildd kept on one CPU for a build's whole
 * request where dom0's vCPUs wait for physical CPUs.
 *
 * Why: on Xen the daemon runs on dom0's vCPUs.  When guests keep the
 * host's pCPUs busy, a dom0 vCPU that wants to run waits for one (its
 * steal time), and work one of the daemon's threads hands another on a
 * different vCPU (a pool's task, progress, the loop's reply, a hotplug
 * script's exit) waits for that vCPU too.  The lab's creates with all of
 * vmbuildd's threads on one CPU for the whole request reached the guest's
 * line first in 7 of 8 sequences over dirty memory; kept only from
 * populate on they gained nothing (tests/lab/README.md).
 *
 * So the daemon samples its CPUs' steal (libvmbuild's vmb_cpuwait_sample)
 * every second on its loop, and a build that starts (cpukeep_begin) when
 * the last few seconds' share is VMB_CPUWAIT_SERIAL or more moves every
 * thread of the process to the CPU it is on until it ends (cpukeep_leave).
 * Counted: builds that overlap share that CPU, and the last end gives
 * each thread its affinity back (one started meanwhile, which inherited
 * the one CPU, the process's own).  A process spawned meanwhile inherits
 * the one CPU: a hotplug script, gone by the build's end, keeps it; a
 * long-lived one (a device model) is spawned between
 * cpukeep_spawn_begin() and _end(), with the process's own CPUs.
 *
 * Thread-safe.  Functions returning int return 0 (or a CPU) or a negative
 * errno, nothing changed.
 */
#ifndef VMBUILDD_CPUKEEP_H
#define VMBUILDD_CPUKEEP_H

#include <stdbool.h>

#include "vmbuild.h"

enum cpukeep_mode {
	CPUKEEP_AUTO,		/* from the steal share before the build */
	CPUKEEP_NEVER,
	CPUKEEP_ALWAYS,
};

/* "auto", "never", "always" to a mode: 0 or -EINVAL. */
int cpukeep_mode_parse(const char *s, enum cpukeep_mode *ret);
const char *cpukeep_mode_name(enum cpukeep_mode mode);

struct event_base;
/*
 * The mode, and in auto mode where `sample` (the backend's work runs on
 * the caller's CPU: VMB_CAP_CALLER_CPU) a timer on `base` sampling the
 * steal each second.  -ENODATA: auto without steal to read (the kernel
 * reports none), nothing kept then.
 */
int cpukeep_init(struct event_base *base, enum cpukeep_mode mode,
    bool sample);
void cpukeep_stop(void);

/*
 * A build's start, on its thread.  Returns the CPU every thread is now
 * kept on, or -1 (not kept: the mode, a share below the bound or not
 * measured, or the move failed, said in the log).  *ret_share is the
 * steal share measured over the seconds before, or -1 when unknown.
 * A return >= 0 is matched by one cpukeep_leave() (below).
 */
int cpukeep_begin(double *ret_share);

/* Around spawning a long-lived process from a kept thread. */
void cpukeep_spawn_begin(void);
void cpukeep_spawn_end(void);

/*
 * The parts, for tests: whether a build is kept in `mode` after `share`
 * (negative: not measured), record a sample (the timer's), the share from
 * the oldest recorded sample of the same CPUs to `now` (0 or -ENODATA),
 * keep every thread on `cpu`, and the CPU they are kept on (-1: none).
 * cpukeep_leave() is also a build's end: the last one gives every
 * thread its affinity back (counted as above); one too many does
 * nothing.
 */
bool cpukeep_wanted(enum cpukeep_mode mode, double share);
void cpukeep_note(const struct vmb_cpuwait *s);
int cpukeep_share(const struct vmb_cpuwait *now, double *ret_share);
int cpukeep_enter(int cpu);
void cpukeep_leave(void);
int cpukeep_cpu(void);

#endif /* VMBUILDD_CPUKEEP_H */
