/*
 * bench_pipeline.c - the wall time of a build whose images are slow to
 * read (a large xz bzImage, a large ramdisk) and whose devices take
 * time (a hotplug script per device), on hvsim: what running them beside
 * the main line saves (libvmbuild/build.c).
 *
 * hvsim has no I/O, so the devices are the backend's device ops of this
 * program: each add runs the given script (fork and exec, as the Xen
 * backend runs /etc/xen/scripts/block) and waits for it; each remove
 * does nothing.  Every round builds and destroys one guest and prints
 * its wall time and phases; the median of the rounds ends the output.
 *
 *   bench_pipeline SOCKET KERNEL RAMDISK MEMORY_MIB DEVICES SCRIPT ROUNDS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "benchlib.h"
#include "vmb_internal.h"

static const char *script;

static int
script_add(void *priv, uint32_t domid, const struct vmb_dev *dev,
    char *why, size_t why_len)
{
	pid_t pid;
	int status;

	(void)priv; (void)domid; (void)dev;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl(script, script, "add", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		snprintf(why, why_len, "%s add failed", script);
		return -EIO;
	}
	return 0;
}

static int
script_remove(void *priv, uint32_t domid, enum vmb_device_kind kind,
    uint32_t devid, bool force, uint32_t close_ms, char *why, size_t why_len)
{
	(void)priv; (void)domid; (void)kind; (void)devid; (void)force;
	(void)close_ms; (void)why; (void)why_len;
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	const struct vmb_backend_ops *sim_ops;
	struct vmb_backend_ops ops;
	struct vmb_disk disks[8];
	struct vmb_ctx *ctx = NULL;
	struct vmb_guest g;
	char spec[256];
	double secs[64];
	int ndev, rounds, rc;

	if (argc != 8) {
		fprintf(stderr, "usage: bench_pipeline SOCKET KERNEL RAMDISK "
		    "MEMORY_MIB DEVICES SCRIPT ROUNDS\n");
		return 2;
	}
	ndev = atoi(argv[5]);
	rounds = atoi(argv[7]);
	script = argv[6];
	if (ndev < 0 || ndev > 8 || rounds < 1 || rounds > 64)
		return 2;
	snprintf(spec, sizeof(spec), "sim:%s", argv[1]);
	if ((rc = vmb_ctx_open(spec, &ctx)) != 0) {
		fprintf(stderr, "bench_pipeline: %s: %s\n", spec,
		    strerror(-rc));
		return 1;
	}
	sim_ops = ctx->ops;
	ops = *sim_ops;
	ops.device_add = script_add;
	ops.device_remove = script_remove;
	ctx->ops = &ops;
	memset(&g, 0, sizeof(g));
	memset(disks, 0, sizeof(disks));
	for (int i = 0; i < ndev; i++) {
		disks[i].target = argv[2];
		snprintf(disks[i].vdev, sizeof(disks[i].vdev), "xvd%c", 'a' + i);
		disks[i].devid = 51712 + 16 * (uint32_t)i;
	}
	g.type = VMB_GUEST_PVH;
	g.memory_bytes = g.maxmem_bytes = (uint64_t)atoi(argv[4]) << 20;
	g.vcpus = g.maxvcpus = 1;
	g.hap = true;
	g.kernel = argv[2];
	g.ramdisk = argv[3];
	g.cmdline = (char *)"console=hvc0";
	g.disks = disks;
	g.nr_disks = (uint32_t)ndev;
	for (int i = 0; i < rounds; i++) {
		struct vmb_build_result res;
		struct vmb_build *b = NULL;
		double t0;

		snprintf(g.name, sizeof(g.name), "pipe%d", i);
		if ((rc = vmb_build_new(ctx, &g, NULL, NULL, NULL, &b)) != 0)
			break;
		t0 = bl_now();
		rc = vmb_build_run(b, &res);
		secs[i] = bl_now() - t0;
		vmb_build_free(b);
		if (rc) {
			fprintf(stderr, "bench_pipeline: build failed in phase "
			    "%s: %s\n", vmb_build_phase_name(res.failed_phase),
			    res.error);
			break;
		}
		printf("round %d: %.3f s (", i, secs[i]);
		for (int p = 0; p < VMB_PHASE_DONE; p++)
			printf("%s%s %.3f", p ? ", " : "",
			    vmb_build_phase_name(p), res.phase_ns[p] / 1e9);
		printf(")\n");
		(void)vmb_domain_destroy(ctx, res.domid);
		/* The next build starts on clean memory, as the first did. */
		for (int w = 0; w < 600; w++) {
			struct vmb_scrub sc;
			uint64_t dirty = 0;

			if (vmb_scrub_progress(ctx, &sc) != 0)
				break;
			for (uint32_t n = 0; n < sc.nr_nodes; n++)
				dirty += sc.nodes[n].dirty_bytes;
			if (!dirty)
				break;
			bl_sleep_ms(50);
		}
	}
	ctx->ops = sim_ops;
	vmb_ctx_free(ctx);
	if (rc)
		return 1;
	qsort(secs, (size_t)rounds, sizeof(secs[0]), cmp_double);
	printf("median %.3f s, min %.3f s, max %.3f s over %d rounds\n",
	    secs[rounds / 2], secs[0], secs[rounds - 1], rounds);
	return 0;
}
