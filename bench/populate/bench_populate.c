/*
 * bench_populate.c - build guests with libvmbuild against hvsim, in
 * rounds, and print every build's phase times and populate counts as
 * JSON lines (bench/report.py turns them into ratios, tables and plots).
 *
 *   bench_populate --hypervisor sim:PATH --kernel ELF --sizes-mib LIST
 *       [--strategies engine,libxl] [--rounds N] [--label NAME]
 *       [--clean | --dirty] [--recreate] [--nt] [--vcpus N]
 *       [--nodes SPEC] [--warmup N]
 *
 *   --clean     before each build, wait until no memory is dirty (an
 *               hvsim with background scrubbing)
 *   --dirty     first fill all free memory with one guest and destroy it,
 *               so that every build finds only dirty memory and scrubs it
 *               inline (an hvsim with --scrub-workers 0, where freed
 *               memory stays dirty)
 *   --recreate  before each timed build, build and destroy an untimed
 *               guest of the same size: post 000's re-created VM, whose
 *               pages all had an owner and need a TLB flush
 *   --nt        after each size, zero as many bytes with non-temporal
 *               stores on 1 and on 2 threads (this machine's limit)
 *   --nodes     cpus = "nodes:SPEC" in the guest's config (spread over
 *               those nodes); default: placement chooses
 *
 * Every round builds every size with every strategy; the order of the
 * strategies alternates from round to round and sizes rotate, so that a
 * burst of noise on a shared machine does not always hit the same one.
 * Lines: {"kind":"build",...} per build, {"kind":"nt",...} per zeroing.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vmbuild.h"
#include "benchlib.h"

#define MAX_SIZES	16
#define NT_BUF_MAX	(1ull << 30)

struct opts {
	const char *hv, *kernel, *label, *nodes;
	uint64_t sizes[MAX_SIZES];	/* MiB */
	int nr_sizes;
	enum vmb_populate_strategy strat[2];
	int nr_strat;
	int rounds, vcpus, warmup;
	bool clean, dirty, recreate, nt;
};

static void
usage(void)
{
	fprintf(stderr, "usage: bench_populate --hypervisor sim:PATH --kernel "
	    "ELF --sizes-mib LIST [--strategies engine,libxl]\n"
	    "       [--rounds N] [--label NAME] [--clean|--dirty] "
	    "[--recreate] [--nt] [--vcpus N]\n"
	    "       [--nodes SPEC] [--warmup N]\n");
	exit(2);
}

static void
die(const char *what, int rc)
{
	fprintf(stderr, "bench_populate: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static struct vmb_guest *
guest(const struct opts *o, const char *name, uint64_t mib)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *g = NULL;
	char text[1024], line[700];
	int rc;

	snprintf(text, sizeof(text), "name = \"%s\"\ntype = \"pvh\"\n"
	    "memory = %llu\nvcpus = %d\nkernel = \"%s\"\n%s%s%s", name,
	    (unsigned long long)mib, o->vcpus, o->kernel,
	    o->nodes ? "cpus = \"nodes:" : "", o->nodes ? o->nodes : "",
	    o->nodes ? "\"\n" : "");
	rc = vmb_config_parse_text(text, strlen(text), "bench", NULL, &g,
	    &diags);
	for (size_t i = 0; i < diags.n; i++) {
		vmb_diag_format(&diags.v[i], line, sizeof(line));
		fprintf(stderr, "bench_populate: %s\n", line);
	}
	vmb_diags_done(&diags);
	if (rc)
		die("guest config", rc);
	return g;
}

/* Build; the domain is left for the caller to destroy. */
static int
build(struct vmb_ctx *ctx, const struct vmb_guest *g,
    enum vmb_populate_strategy s, struct vmb_build_result *res)
{
	struct vmb_build_opts bo = { .strategy = s };
	struct vmb_build *b = NULL;
	int rc;

	rc = vmb_build_new(ctx, g, &bo, NULL, NULL, &b);
	if (rc == 0)
		rc = vmb_build_run(b, res);
	if (rc)
		fprintf(stderr, "bench_populate: build %s: %s (%s)\n", g->name,
		    strerror(-rc), rc && res->error[0] ? res->error : "");
	vmb_build_free(b);
	return rc;
}

static uint64_t
dirty_bytes(struct vmb_ctx *ctx)
{
	struct vmb_scrub sc;
	uint64_t d = 0;

	if (vmb_scrub_progress(ctx, &sc) != 0)
		return 0;
	for (uint32_t i = 0; i < sc.nr_nodes; i++)
		d += sc.nodes[i].dirty_bytes;
	return d;
}

static void
wait_clean(struct vmb_ctx *ctx)
{
	for (int i = 0; i < 300000 && dirty_bytes(ctx) > 0; i++)
		sleep_ms(2);
}

static void
build_destroy(struct vmb_ctx *ctx, const struct opts *o, uint64_t mib,
    enum vmb_populate_strategy s)
{
	struct vmb_build_result res;
	struct vmb_guest *g = guest(o, "untimed", mib);
	int rc = build(ctx, g, s, &res);

	if (rc)
		die("untimed build", rc);
	rc = vmb_domain_destroy(ctx, res.domid);
	if (rc)
		die("destroy", rc);
	vmb_guest_free(g);
}

/* One guest over all free memory, destroyed: everything free is dirty. */
static void
fill_dirty(struct vmb_ctx *ctx, const struct opts *o)
{
	struct vmb_host *h = NULL;
	uint64_t mib;
	int rc = vmb_host_info(ctx, &h);

	if (rc)
		die("host info", rc);
	/* Whole 2 MiB per node, so that the spread leaves nothing clean. */
	mib = h->free_bytes >> 20;
	mib -= mib % (2 * h->nr_nodes);
	vmb_host_free(h);
	build_destroy(ctx, o, mib, VMB_POPULATE_ENGINE);
	fprintf(stderr, "bench_populate: filled and freed %llu MiB, %llu MiB "
	    "dirty\n", (unsigned long long)mib,
	    (unsigned long long)(dirty_bytes(ctx) >> 20));
}

static void
timed(struct vmb_ctx *ctx, const struct opts *o, int round, uint64_t mib,
    enum vmb_populate_strategy s)
{
	const struct vmb_populate_stats *p;
	struct vmb_build_result res;
	struct vmb_guest *g;
	char name[64];
	double load = bl_loadavg();
	int rc;

	if (o->recreate)
		build_destroy(ctx, o, mib, s);
	if (o->clean)
		wait_clean(ctx);
	snprintf(name, sizeof(name), "bench-%s-%llu",
	    vmb_populate_strategy_name(s), (unsigned long long)mib);
	g = guest(o, name, mib);
	rc = build(ctx, g, s, &res);
	if (rc)
		die("timed build", rc);
	p = &res.populate;
	printf("{\"kind\":\"build\",\"label\":\"%s\",\"round\":%d,"
	    "\"size_mib\":%llu,\"strategy\":\"%s\",\"populate_s\":%.9f,"
	    "\"total_s\":%.9f,\"place_s\":%.9f,\"load_s\":%.9f,"
	    "\"calls\":%llu,\"inline_pages\":%llu,\"filter_evaluations\":%llu,"
	    "\"flushes_issued\":%llu,\"flushes_avoided\":%llu,"
	    "\"workers\":%u,\"nodes\":%u,\"loadavg\":%.2f}\n", o->label, round,
	    (unsigned long long)mib, vmb_populate_strategy_name(s),
	    res.phase_ns[VMB_PHASE_POPULATE] / 1e9, res.total_ns / 1e9,
	    res.phase_ns[VMB_PHASE_PLACE] / 1e9,
	    res.phase_ns[VMB_PHASE_LOAD] / 1e9,
	    (unsigned long long)p->calls,
	    (unsigned long long)p->pages_scrubbed_inline,
	    (unsigned long long)p->filter_evaluations,
	    (unsigned long long)p->flushes_issued,
	    (unsigned long long)p->flushes_avoided, res.workers,
	    res.placement.nr_nodes, load);
	fflush(stdout);
	rc = vmb_domain_destroy(ctx, res.domid);
	if (rc)
		die("destroy", rc);
	vmb_guest_free(g);
}

static void
nt(void *buf, size_t bytes, int round, uint64_t mib)
{
	/* 1 then 2 threads, or 2 then 1: alternate as the builds do. */
	for (int k = 0; k < 2; k++) {
		int threads = (k + round) % 2 ? 2 : 1;
		double t = bl_ntzero(buf, bytes, mib << 20, threads);

		printf("{\"kind\":\"nt\",\"round\":%d,\"size_mib\":%llu,"
		    "\"threads\":%d,\"seconds\":%.9f}\n", round,
		    (unsigned long long)mib, threads, t);
	}
	fflush(stdout);
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "hypervisor", required_argument, NULL, 'H' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "sizes-mib", required_argument, NULL, 's' },
		{ "strategies", required_argument, NULL, 'S' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "label", required_argument, NULL, 'l' },
		{ "clean", no_argument, NULL, 'c' },
		{ "dirty", no_argument, NULL, 'd' },
		{ "recreate", no_argument, NULL, 'R' },
		{ "nt", no_argument, NULL, 'n' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "warmup", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	char *tok, *save = NULL;
	int c;

	*o = (struct opts){ .label = "populate", .rounds = 5, .vcpus = 2,
	    .warmup = 1, .strat = { VMB_POPULATE_ENGINE, VMB_POPULATE_LIBXL },
	    .nr_strat = 2 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'H': o->hv = optarg; break;
		case 'k': o->kernel = optarg; break;
		case 'l': o->label = optarg; break;
		case 'c': o->clean = true; break;
		case 'd': o->dirty = true; break;
		case 'R': o->recreate = true; break;
		case 'n': o->nt = true; break;
		case 'N': o->nodes = optarg; break;
		case 'r': o->rounds = atoi(optarg); break;
		case 'v': o->vcpus = atoi(optarg); break;
		case 'w': o->warmup = atoi(optarg); break;
		case 's':
			for (tok = strtok_r(optarg, ",", &save); tok &&
			    o->nr_sizes < MAX_SIZES;
			    tok = strtok_r(NULL, ",", &save))
				o->sizes[o->nr_sizes++] = strtoull(tok, NULL,
				    10);
			break;
		case 'S':
			o->nr_strat = 0;
			for (tok = strtok_r(optarg, ",", &save); tok &&
			    o->nr_strat < 2; tok = strtok_r(NULL, ",", &save))
				if (vmb_populate_strategy_parse(tok,
				    &o->strat[o->nr_strat++]))
					usage();
			break;
		default:
			usage();
		}
	}
	if (!o->hv || !o->kernel || o->nr_sizes == 0 || o->rounds < 1 ||
	    o->vcpus < 1 || o->nr_strat < 1 || (o->clean && o->dirty) ||
	    optind != argc)
		usage();
}

int
main(int argc, char **argv)
{
	struct vmb_ctx *ctx = NULL;
	struct opts o;
	void *buf = NULL;
	size_t bytes = 0;
	uint64_t max = 0;
	int rc, huge = 0;

	parse(argc, argv, &o);
	rc = vmb_ctx_open(o.hv, &ctx);
	if (rc)
		die(o.hv, rc);
	for (int i = 0; i < o.nr_sizes; i++)
		if (o.sizes[i] > max)
			max = o.sizes[i];
	if (o.nt) {
		bytes = (max << 20) < NT_BUF_MAX ? max << 20 : NT_BUF_MAX;
		buf = bl_buffer(bytes, &huge);
		if (!buf)
			die("NT buffer", -ENOMEM);
		bl_ntzero(buf, bytes, bytes, 2);	/* warm-up */
	}
	printf("{\"kind\":\"host\",\"label\":\"%s\",\"hypervisor\":\"%s\","
	    "\"nt_buffer_mib\":%zu,\"nt_huge\":%s}\n", o.label,
	    vmb_ctx_hypervisor(ctx), bytes >> 20, huge ? "true" : "false");
	if (o.clean)
		wait_clean(ctx);
	if (o.dirty)
		fill_dirty(ctx, &o);
	/* Connections and pool threads, once, as a running daemon has. */
	for (int w = 0; w < o.warmup; w++)
		for (int k = 0; k < o.nr_strat; k++)
			build_destroy(ctx, &o, o.sizes[0], o.strat[k]);
	for (int r = 0; r < o.rounds; r++)
		for (int i = 0; i < o.nr_sizes; i++) {
			uint64_t mib = o.sizes[(i + r) % o.nr_sizes];

			for (int k = 0; k < o.nr_strat; k++)
				timed(ctx, &o, r, mib,
				    o.strat[(k + r) % o.nr_strat]);
			if (o.nt)
				nt(buf, bytes, r, mib);
		}
	bl_buffer_free(buf, bytes);
	vmb_ctx_free(ctx);
	return 0;
}
