/*
 * cpukeep.h - every thread of vmbuildd kept on one CPU while a build asks
 * for it (libvmbuild's opts.keep_cpu: where dom0's vCPUs wait for
 * physical CPUs, work handed between threads on different vCPUs waits
 * for each of them).
 *
 * Counted: the first cpukeep_enter() moves every thread of the process
 * to `cpu`, saying what each had; builds that overlap share that CPU;
 * the last cpukeep_leave() gives each thread its affinity back, and a
 * thread started meanwhile (which inherited the one CPU) the process's
 * own.  Thread-safe.  Returns 0 or a negative errno (nothing changed).
 */
#ifndef VMBUILDD_CPUKEEP_H
#define VMBUILDD_CPUKEEP_H

int cpukeep_enter(int cpu);
void cpukeep_leave(void);

/* The CPU threads are kept to, -1 when none (for tests and logs). */
int cpukeep_cpu(void);

#endif /* VMBUILDD_CPUKEEP_H */
