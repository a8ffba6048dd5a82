/*
 * topology.c - the modelled host's shape: nodes, cores, SMT threads.
 *
 * CPU numbering follows the usual Linux/Xen enumeration on one socket per
 * node: cpu = (node * cores_per_node + core) * threads_per_core + thread,
 * so siblings of a core are adjacent and share the host-wide core id.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvsim.h"

int
topo_init(struct topo *t, uint32_t nodes, uint32_t cpus_per_node,
    uint32_t threads_per_core)
{
	uint32_t n, c, th, cpu = 0;

	memset(t, 0, sizeof(*t));
	if (nodes == 0 || nodes > HV_MAX_NODES || cpus_per_node == 0 ||
	    threads_per_core == 0 || threads_per_core > 8 ||
	    cpus_per_node % threads_per_core != 0 ||
	    (uint64_t)nodes * cpus_per_node > HV_MAX_CPUS)
		return -EINVAL;
	t->nr_nodes = nodes;
	t->threads_per_core = threads_per_core;
	t->cores_per_node = cpus_per_node / threads_per_core;
	t->nr_cpus = nodes * cpus_per_node;
	t->cpus = calloc(t->nr_cpus, sizeof(*t->cpus));
	if (!t->cpus)
		return -ENOMEM;
	for (n = 0; n < nodes; n++)
		for (c = 0; c < t->cores_per_node; c++)
			for (th = 0; th < threads_per_core; th++, cpu++) {
				t->cpus[cpu] = (struct hv_cpu_info){
					.cpu = cpu, .node = n, .socket = n,
					.core = n * t->cores_per_node + c,
					.thread = th,
				};
			}
	return 0;
}

void
topo_fini(struct topo *t)
{
	free(t->cpus);
	t->cpus = NULL;
}

uint32_t
topo_cpu(const struct topo *t, uint32_t node, uint32_t core, uint32_t thread)
{
	return (node * t->cores_per_node + core) * t->threads_per_core + thread;
}

/* Count entries of a Linux cpulist such as "0-3,8-11". */
static uint32_t
cpulist_count(const char *s)
{
	uint32_t n = 0;

	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;

		if (end == s)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (b >= a)
			n += b - a + 1;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

static int
read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int rc = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		rc = -EIO;
	fclose(f);
	return rc;
}

/*
 * This machine's shape from sysfs.  Uneven nodes are rounded down to the
 * smallest node, since the model gives every node the same CPU count.
 */
int
topo_host(uint32_t *ret_nodes, uint32_t *ret_cpus_per_node,
    uint32_t *ret_threads_per_core)
{
	char buf[4096], path[512];
	uint32_t nodes = 0, min_cpus = UINT32_MAX, tpc;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	DIR *d;
	struct dirent *de;

	d = opendir("/sys/devices/system/node");
	if (d) {
		while ((de = readdir(d))) {
			uint32_t c;

			if (strncmp(de->d_name, "node", 4) != 0 ||
			    de->d_name[4] < '0' || de->d_name[4] > '9')
				continue;
			snprintf(path, sizeof(path),
			    "/sys/devices/system/node/%s/cpulist", de->d_name);
			if (read_line(path, buf, sizeof(buf)) < 0)
				continue;
			c = cpulist_count(buf);
			if (c == 0)
				continue;	/* memory-only node */
			nodes++;
			if (c < min_cpus)
				min_cpus = c;
		}
		closedir(d);
	}
	if (nodes == 0) {
		nodes = 1;
		min_cpus = ncpu > 0 ? (uint32_t)ncpu : 1;
	}
	tpc = 1;
	if (read_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list",
	    buf, sizeof(buf)) == 0)
		tpc = cpulist_count(buf);
	if (tpc == 0 || min_cpus % tpc != 0)
		tpc = 1;
	if (nodes > HV_MAX_NODES)
		return -E2BIG;
	*ret_nodes = nodes;
	*ret_cpus_per_node = min_cpus;
	*ret_threads_per_core = tpc;
	return 0;
}

int
topo_pin_host_node(uint32_t node)
{
	char path[128], buf[4096], *s = buf;
	cpu_set_t set;
	int rc;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist",
	    node);
	rc = read_line(path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	CPU_ZERO(&set);
	while (*s && *s != '\n') {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a, i;

		if (end == s)
			break;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		for (i = a; i <= b && i < CPU_SETSIZE; i++)
			CPU_SET(i, &set);
		s = *end == ',' ? end + 1 : end;
	}
	if (CPU_COUNT(&set) == 0)
		return -ENOENT;
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}
