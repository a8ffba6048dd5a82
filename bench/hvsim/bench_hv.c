/*
 * bench_hv.c - benchmarks that talk to hvsim directly (hvclient), as
 * JSON lines for bench/report.py.
 *
 *   bench_hv scrub SOCK GIB ROUNDS
 *	Benchmark 3.  Each round: populate GIB GiB (2 MiB extents, both
 *	nodes) of clean memory, destroy the domain and time until hvsim's
 *	background scrubbers report no dirty page; then zero as many bytes
 *	with non-temporal stores in this process, on as many threads as
 *	hvsim has scrub workers, on 1 and on 2 threads (this machine's
 *	limit, before the scrub in odd rounds and after it in even ones).
 *	Then, where this machine has two NUMA nodes or more, one thread on
 *	node 0 zeroing memory of node 0 against memory of node 1
 *	(node-local against remote).
 *
 *   bench_hv unshadow SOCK WRITES ROUNDS
 *	Benchmark 7.  A shadow-paged domain (no HAP) runs the synthetic
 *	workloads of hvsim's shadow model (post 004's iperf pattern, a
 *	process exiting, ordinary page-table updates) for WRITES emulated
 *	writes each; prints what the guest wrote, what was emulated, the
 *	shadow faults and unshadows, under hvsim's --shadow-threshold.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vmbuild/hvclient.h"
#include "benchlib.h"

#define NT_BUF_MAX	(4ull << 30)	/* the scrubbed bytes, up to this */
#define MPOL_BIND_	2

static void
die(const char *what, int rc)
{
	fprintf(stderr, "bench_hv: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static struct hvc *
open_wait(const char *path)
{
	struct hvc *c = NULL;
	int rc = -ENOENT;

	for (int i = 0; i < 600; i++) {
		rc = hvc_open(path, &c);
		if (rc == 0)
			return c;
		bl_sleep_ms(100);
	}
	die("connect", rc);
	return NULL;
}

/* Dirty pages of the host; *workers: scrub workers in all. */
static uint64_t
host_dirty(struct hvc *c, uint32_t *workers)
{
	struct hv_scrub_reply *r;
	struct hv_scrub_node *n;
	uint64_t d = 0;
	int rc = hvc_scrub_progress(c, &r);

	if (rc < 0)
		die("scrub progress", rc);
	n = hvc_scrub_nodes(r);
	if (workers)
		*workers = 0;
	for (uint32_t i = 0; i < r->nr_nodes; i++) {
		d += n[i].dirty_pages;
		if (workers)
			*workers += n[i].workers;
	}
	free(r);
	return d;
}

static hv_domid_t
create(struct hvc *c, const char *name, uint32_t flags)
{
	struct hv_domain_create req = { .flags = flags, .max_vcpus = 2,
	    .max_pages = 1ull << 32 };
	hv_domid_t id;
	int rc;

	snprintf(req.name, sizeof(req.name), "%s", name);
	rc = hvc_domain_create(c, &req, &id);
	if (rc < 0)
		die("create", rc);
	return id;
}

/* ------------------------------------------------------------------ */

/* A thread zeroing memory bound to `mem_node`, running on `cpu_node`. */
static double
numa_once(void *buf, size_t bytes, int cpu_node)
{
	char path[96], list[256];
	cpu_set_t set;
	FILE *f;
	double t;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist",
	    cpu_node);
	f = fopen(path, "re");
	if (!f || !fgets(list, sizeof(list), f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	CPU_ZERO(&set);
	for (char *p = list; *p && *p != '\n';) {
		long a = strtol(p, &p, 10), b = a;

		if (*p == '-')
			b = strtol(p + 1, &p, 10);
		for (long x = a; x <= b && x < CPU_SETSIZE; x++)
			CPU_SET(x, &set);
		if (*p == ',')
			p++;
	}
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return -1;
	t = bl_ntzero(buf, bytes, bytes * 4, 1);
	return t;
}

static int
nr_host_nodes(void)
{
	char path[64];
	int n = 0;

	for (;; n++) {
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d",
		    n);
		if (access(path, F_OK) != 0)
			return n;
	}
}

static void
numa(int rounds)
{
	size_t bytes = 256u << 20;
	unsigned long mask = 1ul << 1;
	cpu_set_t all;
	void *buf;

	if (nr_host_nodes() < 2) {
		printf("{\"kind\":\"numa\",\"available\":false,\"reason\":"
		    "\"this machine has %d NUMA node(s)\"}\n",
		    nr_host_nodes());
		return;
	}
	sched_getaffinity(0, sizeof(all), &all);
	buf = bl_buffer(bytes, NULL);
	/* The buffer's memory on node 1 (moved there if it was not). */
	if (!buf || syscall(SYS_mbind, buf, bytes, MPOL_BIND_, &mask, 64ul,
	    3u /* MPOL_MF_STRICT | MPOL_MF_MOVE */) != 0) {
		printf("{\"kind\":\"numa\",\"available\":false,\"reason\":"
		    "\"cannot bind memory to node 1: %s\"}\n", strerror(errno));
		return;
	}
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++) {
			int node = (k + r) % 2;	/* 1: local, 0: remote */
			double t = numa_once(buf, bytes, node);

			printf("{\"kind\":\"numa\",\"available\":true,\"round\":%d,"
			    "\"cpu_node\":%d,\"mem_node\":1,\"bytes\":%zu,"
			    "\"seconds\":%.9f}\n", r, node, bytes * 4, t);
		}
	sched_setaffinity(0, sizeof(all), &all);
	bl_buffer_free(buf, bytes);
}

/* This machine's limit: as many threads as workers, 1 and 2 (once each). */
static void
nt_round(void *buf, size_t bufsz, uint64_t bytes, uint32_t workers, int r)
{
	int threads[3] = { (int)workers, workers == 1 ? 2 : 1,
	    workers == 1 || workers == 2 ? 0 : 2 };

	for (int k = 0; k < 3 && threads[k] > 0; k++) {
		double t = bl_ntzero(buf, bufsz, bytes, threads[k]);

		printf("{\"kind\":\"nt\",\"round\":%d,\"bytes\":%llu,"
		    "\"threads\":%d,\"seconds\":%.9f}\n", r,
		    (unsigned long long)bytes, threads[k], t);
	}
}

static void
bench_scrub(const char *path, double gib, int rounds)
{
	struct hvc *c = open_wait(path);
	struct hv_host_info *hi;
	struct hv_extent *e;
	uint32_t nr = (uint32_t)(gib * 512), n, workers;
	uint64_t bytes = (uint64_t)nr << 21;
	size_t bufsz = bytes < NT_BUF_MAX ? bytes : NT_BUF_MAX;
	int huge = 0, rc;
	void *buf;

	rc = hvc_host_info(c, &hi);
	if (rc < 0)
		die("host info", rc);
	n = hi->nr_nodes;
	free(hi);
	e = calloc(nr, sizeof(*e));
	buf = bl_buffer(bufsz, &huge);
	if (!e || !buf)
		die("memory", -ENOMEM);
	for (uint32_t i = 0; i < nr; i++)
		e[i] = (struct hv_extent){ .gfn = (uint64_t)i * 512, .order = 9,
		    .node = (uint16_t)(i % n) };
	while (host_dirty(c, &workers))
		bl_sleep_ms(10);
	bl_ntzero(buf, bufsz, bufsz, 2);	/* warm-up */
	printf("{\"kind\":\"host\",\"bytes\":%llu,\"workers\":%u,"
	    "\"nt_huge\":%s}\n", (unsigned long long)bytes, workers,
	    huge ? "true" : "false");
	for (int r = 0; r < rounds; r++) {
		hv_domid_t d = create(c, "scrub", HV_DOMF_HVM | HV_DOMF_HAP);
		struct hv_counters c0, c1;
		double t0, t;

		rc = hvc_populate(c, d, HV_POPF_EXACT_NODE, e, nr, NULL, NULL);
		if (rc < 0)
			die("populate", rc);
		/* The limit before the scrub in odd rounds, after in even. */
		if (r % 2)
			nt_round(buf, bufsz, bytes, workers, r);
		hvc_counters(c, &c0);
		t0 = bl_now();
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, d);
		/* 5 ms between samples: the poller must not slow the scrub. */
		while (host_dirty(c, NULL))
			bl_sleep_ms(5);
		t = bl_now() - t0;
		hvc_counters(c, &c1);
		printf("{\"kind\":\"scrub\",\"round\":%d,\"bytes\":%llu,"
		    "\"workers\":%u,\"seconds\":%.9f,\"background_pages\":%llu,"
		    "\"inline_pages\":%llu}\n", r, (unsigned long long)bytes,
		    workers, t, (unsigned long long)
		    (c1.scrub_pages_background - c0.scrub_pages_background),
		    (unsigned long long)(c1.scrub_pages_inline -
		    c0.scrub_pages_inline));
		if (r % 2 == 0)
			nt_round(buf, bufsz, bytes, workers, r);
		fflush(stdout);
	}
	numa(rounds);
	bl_buffer_free(buf, bufsz);
	free(e);
	hvc_close(c);
}

/* ------------------------------------------------------------------ */

static void
bench_unshadow(const char *path, uint64_t writes, int rounds)
{
	static const struct {
		uint32_t pattern;
		const char *name;
	} pats[] = {
		{ HV_SHADOW_IPERF, "iperf" },
		{ HV_SHADOW_FORK_EXIT, "fork_exit" },
		{ HV_SHADOW_PT_UPDATE, "pt_update" },
	};
	struct hvc *c = open_wait(path);
	uint32_t threshold = hvc_hello(c)->shadow_threshold;
	hv_domid_t d = create(c, "shadowed", HV_DOMF_HVM);
	int rc;

	rc = hvc_domain_op(c, HV_OP_DOMAIN_UNPAUSE, d);
	if (rc < 0)
		die("unpause", rc);
	for (int r = 0; r < rounds; r++)
		for (size_t p = 0; p < sizeof(pats) / sizeof(pats[0]); p++) {
			struct hv_shadow_workload wl = { .domid = d,
			    .pattern = pats[p].pattern, .nr_writes = writes };
			struct hv_shadow_workload_reply w;

			rc = hvc_shadow_workload(c, &wl, &w);
			if (rc < 0)
				die("shadow workload", rc);
			printf("{\"kind\":\"shadow\",\"threshold\":%u,\"round\":%d,"
			    "\"pattern\":\"%s\",\"guest_writes\":%llu,"
			    "\"emulated_writes\":%llu,\"shadow_faults\":%llu,"
			    "\"unshadow_write_flood\":%llu,\"unshadow_early\":%llu,"
			    "\"seconds\":%.9f}\n", threshold, r, pats[p].name,
			    (unsigned long long)w.guest_writes,
			    (unsigned long long)w.emulated_writes,
			    (unsigned long long)w.shadow_faults,
			    (unsigned long long)w.unshadow[HV_UNSHADOW_WRITE_FLOOD],
			    (unsigned long long)w.unshadow[HV_UNSHADOW_EARLY],
			    w.elapsed_ns / 1e9);
		}
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, d);
	hvc_close(c);
}

int
main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "scrub") && atof(argv[3]) > 0)
		bench_scrub(argv[2], atof(argv[3]), atoi(argv[4]) > 0 ?
		    atoi(argv[4]) : 1);
	else if (argc == 5 && !strcmp(argv[1], "unshadow") &&
	    atoll(argv[3]) > 0)
		bench_unshadow(argv[2], (uint64_t)atoll(argv[3]),
		    atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
	else {
		fprintf(stderr, "usage: bench_hv scrub SOCK GIB ROUNDS | "
		    "unshadow SOCK WRITES ROUNDS\n");
		return 2;
	}
	return 0;
}
