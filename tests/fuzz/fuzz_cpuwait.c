/*
 * fuzz_cpuwait.c - libFuzzer target: the reader of /proc/stat's steal
 * time (libvmbuild/cpuwait.c) over any bytes, from a memfd by its path
 * as it reads the file, for every CPU.  What it accepts adds up to
 * something of at least one CPU, and the share of two such readings,
 * when it gives one, lies between 0 and 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "vmb_internal.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct vmb_cpuwait a, b;
	char path[64];
	cpu_set_t all;
	double share;
	int fd, rc;

	fd = memfd_create("stat", MFD_CLOEXEC);
	if (fd < 0 || (len && write(fd, data, len) != (ssize_t)len))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	rc = vmb__cpuwait_read(path, &all, &a);
	if (rc == 0 ? a.cpus == 0 : (rc != -ENODATA || a.cpus != 0))
		abort();
	/* The same file read again, and against a reading of nothing. */
	if (vmb__cpuwait_read(path, &all, &b) != rc)
		abort();
	b.run += VMB_CPUWAIT_MIN_TICKS;
	b.steal += len;
	if (vmb_cpuwait_share(&a, &b, &share) == 0 &&
	    (rc != 0 || !(share >= 0 && share <= 1)))
		abort();
	close(fd);
	return 0;
}
