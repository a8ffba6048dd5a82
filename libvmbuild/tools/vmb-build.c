/*
 * vmb-build - build one guest with libvmbuild directly, without the
 * daemon, and print what happened: placement, per-phase times, populate
 * statistics.  For measuring the populate strategies against each other
 * and for debugging; the guest is destroyed again unless --keep.
 *
 *   vmb-build --hypervisor sim:PATH [--populate engine|libxl]
 *             [--batch-mib N] [--inflight N] [--memory MIB] [--paused]
 *             [--scrub-wait-ms MS] [--keep] [--json] CONFIG
 *
 * Exit 0 on success, 1 when the build fails, 2 on usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmbuild.h"

static void
usage(void)
{
	fprintf(stderr, "usage: vmb-build --hypervisor sim:PATH|xen|auto "
	    "[--populate engine|libxl]\n"
	    "                 [--batch-mib N] [--inflight N] [--memory MIB] "
	    "[--paused] [--keep]\n"
	    "                 [--scrub-wait-ms MS]\n"
	    "                 [--json] CONFIG\n");
	exit(2);
}

static void
on_log(void *user, const char *msg)
{
	(void)user;
	fprintf(stderr, "vmb-build: %s\n", msg);
}

static void
print_result(const struct vmb_guest *g, const struct vmb_build_result *r,
    enum vmb_populate_strategy s, bool json)
{
	const struct vmb_populate_stats *p = &r->populate;
	double gib = (double)g->memory_bytes / (double)(1ull << 30);
	double pop_s = (double)r->phase_ns[VMB_PHASE_POPULATE] / 1e9;
	/* The hypervisor's counts, each known or not (p->have). */
	const struct {
		const char *key;
		const uint64_t *v;
		uint32_t have;
	} hv[] = {
		{ "pages_scrubbed_inline", &p->pages_scrubbed_inline,
		    VMB_POPSTAT_HAVE_SCRUBBED_INLINE },
		{ "pages_fallback", &p->pages_fallback,
		    VMB_POPSTAT_HAVE_FALLBACK },
		{ "flushes_issued", &p->flushes_issued,
		    VMB_POPSTAT_HAVE_FLUSHES },
		{ "flushes_avoided", &p->flushes_avoided,
		    VMB_POPSTAT_HAVE_FLUSHES },
		{ "filter_evaluations", &p->filter_evaluations,
		    VMB_POPSTAT_HAVE_FILTER },
	};

	if (json) {
		printf("{\"domid\":%u,\"strategy\":\"%s\",\"memory_bytes\":%llu,"
		    "\"total_ns\":%llu,\"scrub_wait_ns\":%llu,\"phases_ns\":{",
		    r->domid, vmb_populate_strategy_name(s),
		    (unsigned long long)g->memory_bytes,
		    (unsigned long long)r->total_ns,
		    (unsigned long long)r->scrub_wait_ns);
		for (int i = 0; i < VMB_PHASE_DONE; i++)
			printf("%s\"%s\":%llu", i ? "," : "",
			    vmb_build_phase_name(i),
			    (unsigned long long)r->phase_ns[i]);
		printf("},\"populate\":{\"calls\":%llu,\"extents_4k\":%llu,"
		    "\"extents_2m\":%llu,\"extents_1g\":%llu",
		    (unsigned long long)p->calls,
		    (unsigned long long)p->extents[VMB_ORDER_4K],
		    (unsigned long long)p->extents[VMB_ORDER_2M],
		    (unsigned long long)p->extents[VMB_ORDER_1G]);
		for (size_t i = 0; i < sizeof(hv) / sizeof(hv[0]); i++) {
			if (p->have & hv[i].have)
				printf(",\"%s\":%llu", hv[i].key,
				    (unsigned long long)*hv[i].v);
			else
				printf(",\"%s\":null", hv[i].key);
		}
		printf(",\"workers\":%u,\"workers_pinned\":%u},"
		    "\"image_loaded\":%s}\n", r->workers,
		    r->workers_pinned, r->image_loaded ? "true" : "false");
		return;
	}
	printf("domain %u (%s), %.2f GiB, populate %s\n", r->domid, g->name,
	    gib, vmb_populate_strategy_name(s));
	printf("placement: %s\n", r->placement.reason);
	for (int i = 0; i < VMB_PHASE_DONE; i++)
		printf("  %-9s %10.3f ms\n", vmb_build_phase_name(i),
		    (double)r->phase_ns[i] / 1e6);
	printf("  %-9s %10.3f ms\n", "total", (double)r->total_ns / 1e6);
	if (r->scrub_wait_ns)
		printf("  (place includes %.3f ms waiting for the scrubber)\n",
		    (double)r->scrub_wait_ns / 1e6);
	printf("populate: %llu calls, extents 1G/2M/4K %llu/%llu/%llu, "
	    "%u workers (%u pinned), %.2f GiB/s\n",
	    (unsigned long long)p->calls,
	    (unsigned long long)p->extents[VMB_ORDER_1G],
	    (unsigned long long)p->extents[VMB_ORDER_2M],
	    (unsigned long long)p->extents[VMB_ORDER_4K], r->workers,
	    r->workers_pinned, pop_s > 0 ? gib / pop_s : 0.0);
	printf("hypervisor:");
	for (size_t i = 0; i < sizeof(hv) / sizeof(hv[0]); i++) {
		if (p->have & hv[i].have)
			printf(" %s %llu%s", hv[i].key,
			    (unsigned long long)*hv[i].v,
			    i + 1 < sizeof(hv) / sizeof(hv[0]) ? "," : "\n");
		else
			printf(" %s unavailable%s", hv[i].key,
			    i + 1 < sizeof(hv) / sizeof(hv[0]) ? "," : "\n");
	}
	printf("image: %s\n", r->image_loaded ? "loaded" :
	    "not loaded (the hypervisor cannot map guest memory)");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hypervisor", required_argument, NULL, 'H' },
		{ "populate", required_argument, NULL, 'p' },
		{ "batch-mib", required_argument, NULL, 'b' },
		{ "inflight", required_argument, NULL, 'i' },
		{ "memory", required_argument, NULL, 'm' },
		{ "paused", no_argument, NULL, 'P' },
		{ "keep", no_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "scrub-wait-ms", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct vmb_build_opts opts = { 0 };
	struct vmb_build_result res;
	struct vmb_diags diags = { 0 };
	struct vmb_guest *g = NULL;
	struct vmb_build *b = NULL;
	struct vmb_ctx *ctx = NULL;
	const char *hv = NULL;
	unsigned long long memory_mib = 0;
	bool keep = false, json = false, verbose = false;
	char line[700];
	int c, rc, status = 1;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			hv = optarg;
			break;
		case 'p':
			if (vmb_populate_strategy_parse(optarg, &opts.strategy))
				usage();
			break;
		case 'b':
			opts.batch_bytes_max = (uint32_t)strtoul(optarg, NULL,
			    10) << 20;
			break;
		case 'i':
			opts.batches_in_flight = (uint32_t)strtoul(optarg,
			    NULL, 10);
			break;
		case 'm':
			memory_mib = strtoull(optarg, NULL, 10);
			break;
		case 'P':
			opts.start_paused = true;
			break;
		case 'k':
			keep = true;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'w':
			opts.scrub_wait_ms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!hv || optind != argc - 1)
		usage();
	rc = vmb_config_parse_file(argv[optind], &g, &diags);
	for (size_t i = 0; i < diags.n; i++) {
		vmb_diag_format(&diags.v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	if (rc)
		goto out;
	if (memory_mib) {
		/* Overrides memory and maxmem (not vnuma sizes). */
		g->memory_bytes = g->maxmem_bytes = memory_mib << 20;
		if (g->nr_vnodes) {
			fprintf(stderr, "vmb-build: --memory with vnuma\n");
			goto out;
		}
	}
	rc = vmb_ctx_open(hv, &ctx);
	if (rc) {
		fprintf(stderr, "vmb-build: %s: %s\n", hv, strerror(-rc));
		goto out;
	}
	if (verbose)
		vmb_ctx_set_log(ctx, on_log, NULL);
	rc = vmb_build_new(ctx, g, &opts, NULL, NULL, &b);
	if (rc) {
		fprintf(stderr, "vmb-build: build failed: %s\n", strerror(-rc));
		goto out;
	}
	rc = vmb_build_run(b, &res);
	if (rc) {
		/* The result says where and why, even on failure. */
		fprintf(stderr, "vmb-build: build failed in phase %s: %s\n",
		    vmb_build_phase_name(res.failed_phase), res.error[0] ?
		    res.error : strerror(-rc));
		goto out;
	}
	print_result(g, &res, opts.strategy, json);
	if (!keep && (rc = vmb_domain_destroy(ctx, res.domid)) != 0) {
		fprintf(stderr, "vmb-build: destroy %u: %s\n", res.domid,
		    strerror(-rc));
		goto out;
	}
	status = 0;
out:
	vmb_build_free(b);
	vmb_ctx_free(ctx);
	vmb_guest_free(g);
	vmb_diags_done(&diags);
	return status;
}
