/*
 * procstat.c - the daemon's own resource use (see procstat.h), read the
 * way Prometheus' client libraries read it: getrusage(2) for CPU time,
 * /proc/self/statm for memory, /proc/self/fd for descriptors, and the
 * start time from /proc/self/stat's starttime (clock ticks since boot)
 * plus /proc/stat's btime.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "procstat.h"

/* Seconds since the epoch at which this process started; 0: unknown. */
static double
start_time(void)
{
	static double cached = -1;
	unsigned long long starttime = 0, btime = 0;
	char buf[1024], *p;
	FILE *f;
	size_t n;
	long hz = sysconf(_SC_CLK_TCK);

	if (cached >= 0)
		return cached;
	cached = 0;
	if (hz <= 0 || (f = fopen("/proc/self/stat", "re")) == NULL)
		return cached;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields follow the last ')'. */
	p = strrchr(buf, ')');
	/* Field 22; after ')' come field 3 (state) and onwards. */
	if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u "
	    "%*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &starttime) != 1)
		return cached;
	if ((f = fopen("/proc/stat", "re")) == NULL)
		return cached;
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	if (btime > 0)
		cached = (double)btime + (double)starttime / (double)hz;
	return cached;
}

void
procstat_read(struct procstat *ret)
{
	unsigned long long size, resident;
	struct rusage ru;
	struct rlimit rl;
	struct dirent *de;
	DIR *d;
	FILE *f;
	long page = sysconf(_SC_PAGESIZE);

	memset(ret, 0, sizeof(*ret));
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		ret->cpu_seconds = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
		    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	if ((f = fopen("/proc/self/statm", "re")) != NULL) {
		ret->have_memory = fscanf(f, "%llu %llu", &size,
		    &resident) == 2 && page > 0;
		fclose(f);
		if (ret->have_memory) {
			ret->virtual_bytes = size * (uint64_t)page;
			ret->resident_bytes = resident * (uint64_t)page;
		}
	}
	/* Out of descriptors, the count is missing rather than wrong. */
	if ((d = opendir("/proc/self/fd")) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				ret->open_fds++;
		ret->open_fds--;	/* the directory's own */
		ret->have_fds = true;
		closedir(d);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		ret->max_fds = rl.rlim_cur;
	ret->start_time = start_time();
}
