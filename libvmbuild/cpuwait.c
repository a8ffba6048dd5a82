/*
 * cpuwait.c - how long the CPUs this process runs on waited for a
 * physical CPU: the steal time of /proc/stat.
 *
 * On Xen the toolstack runs on dom0's vCPUs, and a populate hypercall
 * runs on the vCPU that makes it.  When the host's pCPUs are all busy
 * with guests' vCPUs, a dom0 vCPU that wants to run waits for one (the
 * Linux kernel reads that wait from Xen's runstate area and reports it
 * as steal).  Such a host is where the populate engine's workers lost
 * to a single thread (populate.c, tests/lab/README.md), so the build
 * measures the wait from its start to its populate phase, and the
 * engine chooses its worker count from it.
 *
 * The share is the wait over the time the CPUs wanted to run (busy or
 * waiting); idle time is left out, so that a dom0 whose vCPUs are
 * mostly idle still shows how much each waited when it did want to run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "vmb_internal.h"

int
vmb__cpuwait_read(const char *path, const cpu_set_t *set,
    struct vmb_cpuwait *ret)
{
	char line[512];
	bool line_start = true;
	FILE *f;
	int rc = -ENODATA;

	memset(ret, 0, sizeof(*ret));
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		bool at_start = line_start;
		uint64_t v[8];
		unsigned cpu;
		int n;

		/* The rest of a long line ("intr ...") is not a line. */
		line_start = strchr(line, '\n') != NULL;
		/*
		 * "cpuN user nice system idle iowait irq softirq steal ...";
		 * the first line ("cpu ") is the sum, not a CPU.
		 */
		if (!at_start || strncmp(line, "cpu", 3) != 0 ||
		    line[3] < '0' || line[3] > '9')
			continue;
		n = sscanf(line + 3, "%u %" SCNu64 " %" SCNu64 " %" SCNu64
		    " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %"
		    SCNu64, &cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		    &v[6], &v[7]);
		/* No steal column (kernels before 2.6.11): nothing known. */
		if (n < 9) {
			rc = -ENODATA;
			break;
		}
		if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set))
			continue;
		ret->run += v[0] + v[1] + v[2] + v[5] + v[6];
		ret->steal += v[7];
		ret->cpus++;
		rc = 0;
	}
	fclose(f);
	if (rc)
		memset(ret, 0, sizeof(*ret));
	return rc;
}

int
vmb_cpuwait_sample(struct vmb_cpuwait *ret)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0) {
		memset(ret, 0, sizeof(*ret));
		return -errno;
	}
	return vmb__cpuwait_read("/proc/stat", &set, ret);
}

int
vmb_cpuwait_share(const struct vmb_cpuwait *a, const struct vmb_cpuwait *b,
    double *ret_share)
{
	uint64_t run, steal;

	/* Not the same CPUs (the affinity changed), or counters went back. */
	if (a->cpus == 0 || a->cpus != b->cpus || b->run < a->run ||
	    b->steal < a->steal)
		return -ENODATA;
	run = b->run - a->run;
	steal = b->steal - a->steal;
	if (run + steal < VMB_CPUWAIT_MIN_TICKS)
		return -ENODATA;
	*ret_share = (double)steal / (double)(run + steal);
	return 0;
}
