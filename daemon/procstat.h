/*
 * procstat.h - the daemon's own resource use, for the process_* series
 * that Prometheus client libraries export (client_golang's process
 * collector): CPU time, memory, descriptors, start time.
 */
#ifndef VMBUILDD_PROCSTAT_H
#define VMBUILDD_PROCSTAT_H

#include <stdbool.h>
#include <stdint.h>

struct procstat {
	double		cpu_seconds;		/* user + system, all threads */
	bool		have_memory;		/* /proc/self/statm was read */
	uint64_t	resident_bytes;
	uint64_t	virtual_bytes;
	bool		have_fds;		/* /proc/self/fd was read */
	uint64_t	open_fds;
	uint64_t	max_fds;		/* RLIMIT_NOFILE, soft */
	double		start_time;		/* Unix time; 0 when unknown */
};

/* Take the figures now; what cannot be read is marked missing. */
void procstat_read(struct procstat *ret);

#endif /* VMBUILDD_PROCSTAT_H */
