/*
 * bench_populate.c - build guests with libvmbuild against hvsim, in
 * rounds, and print every build's phase times and populate counts as
 * JSON lines (bench/report.py turns them into ratios, tables and plots).
 *
 *   bench_populate --hypervisor sim:PATH --kernel ELF --sizes-mib LIST
 *       [--strategies engine,libxl | --variant NAME:STRATEGY[:NODES[:MS]]...]
 *       [--rounds N] [--label NAME] [--clean | --dirty] [--recreate]
 *       [--before MIB:NODES] [--nt] [--vcpus N] [--nodes SPEC]
 *       [--warmup N]
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
 *   --before    before each timed build, build and destroy a guest of
 *               MIB on NODES, and do not wait: its memory is still dirty
 *               (being scrubbed) when the timed build starts
 *   --nodes     cpus = "nodes:SPEC" in the guest's config (spread over
 *               those nodes); default: placement chooses
 *   --variant   a build variant: its name, populate strategy, nodes (as
 *               --nodes, empty: the default) and scrub_wait_ms; repeated.
 *               --strategies S,T is --variant S:S --variant T:T.
 *
 * Every round builds every size in every variant; the order of the
 * variants rotates from round to round and so do sizes, so that a burst
 * of noise on a shared machine does not always hit the same one.
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
#define MAX_VARIANTS	8
#define NT_BUF_MAX	(1ull << 30)

struct variant {
	char name[32];
	enum vmb_populate_strategy strategy;
	char nodes[32];		/* "": the default nodes */
	uint32_t scrub_wait_ms;
};

struct opts {
	const char *hv, *kernel, *label, *nodes;
	uint64_t sizes[MAX_SIZES];	/* MiB */
	int nr_sizes;
	struct variant var[MAX_VARIANTS];
	int nr_var;
	int rounds, vcpus, warmup;
	bool clean, dirty, recreate, nt;
	uint64_t before_mib;
	const char *before_nodes;
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

static struct vmb_guest *
guest(const struct opts *o, const char *name, uint64_t mib,
    const char *nodes)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *g = NULL;
	char text[1024], line[700];
	int rc;

	if (!nodes || !*nodes)
		nodes = o->nodes;
	snprintf(text, sizeof(text), "name = \"%s\"\ntype = \"pvh\"\n"
	    "memory = %llu\nvcpus = %d\nkernel = \"%s\"\n%s%s%s", name,
	    (unsigned long long)mib, o->vcpus, o->kernel,
	    nodes ? "cpus = \"nodes:" : "", nodes ? nodes : "",
	    nodes ? "\"\n" : "");
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
    const struct variant *v, struct vmb_build_result *res)
{
	struct vmb_build_opts bo = { .strategy = v->strategy,
	    .scrub_wait_ms = v->scrub_wait_ms };
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
		bl_sleep_ms(2);
}

static void
build_destroy(struct vmb_ctx *ctx, const struct opts *o, uint64_t mib,
    const struct variant *v, const char *nodes)
{
	struct vmb_build_result res;
	struct vmb_guest *g = guest(o, "untimed", mib, nodes);
	int rc = build(ctx, g, v, &res);

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
	build_destroy(ctx, o, mib, &o->var[0], NULL);
	fprintf(stderr, "bench_populate: filled and freed %llu MiB, %llu MiB "
	    "dirty\n", (unsigned long long)mib,
	    (unsigned long long)(dirty_bytes(ctx) >> 20));
}

static void
timed(struct vmb_ctx *ctx, const struct opts *o, int round, uint64_t mib,
    const struct variant *v)
{
	const struct vmb_populate_stats *p;
	struct vmb_build_result res;
	struct vmb_guest *g;
	char name[64];
	double load = bl_loadavg();
	int rc;

	if (o->recreate)
		build_destroy(ctx, o, mib, v, v->nodes);
	if (o->clean)
		wait_clean(ctx);
	if (o->before_mib)
		build_destroy(ctx, o, o->before_mib, v, o->before_nodes);
	snprintf(name, sizeof(name), "bench-%s-%llu", v->name,
	    (unsigned long long)mib);
	g = guest(o, name, mib, v->nodes);
	rc = build(ctx, g, v, &res);
	if (rc)
		die("timed build", rc);
	p = &res.populate;
	printf("{\"kind\":\"build\",\"label\":\"%s\",\"round\":%d,"
	    "\"size_mib\":%llu,\"variant\":\"%s\",\"strategy\":\"%s\","
	    "\"populate_s\":%.9f,\"scrub_wait_s\":%.9f,\"first_node\":%u,"
	    "\"total_s\":%.9f,\"place_s\":%.9f,\"load_s\":%.9f,"
	    "\"calls\":%llu,\"inline_pages\":%llu,\"filter_evaluations\":%llu,"
	    "\"flushes_issued\":%llu,\"flushes_avoided\":%llu,"
	    "\"workers\":%u,\"nodes\":%u,\"loadavg\":%.2f}\n", o->label, round,
	    (unsigned long long)mib, v->name,
	    vmb_populate_strategy_name(v->strategy),
	    res.phase_ns[VMB_PHASE_POPULATE] / 1e9, res.scrub_wait_ns / 1e9,
	    res.placement.nodes[0], res.total_ns / 1e9,
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

/* NAME:STRATEGY[:NODES[:SCRUB_WAIT_MS]] */
static int
add_variant(struct opts *o, const char *spec)
{
	struct variant *v;
	char buf[128], *f[4] = { NULL }, *p;
	int n = 0;

	if (o->nr_var >= MAX_VARIANTS || strlen(spec) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", spec);
	/* strsep keeps empty fields ("aware:engine::") */
	for (p = buf; n < 4 && (f[n] = strsep(&p, ":")) != NULL; n++)
		;
	if (n < 2 || !*f[0] || strlen(f[0]) >= sizeof(v->name) ||
	    (f[2] && strlen(f[2]) >= sizeof(v->nodes)))
		return -EINVAL;
	v = &o->var[o->nr_var];
	*v = (struct variant){ 0 };
	snprintf(v->name, sizeof(v->name), "%s", f[0]);
	if (vmb_populate_strategy_parse(f[1], &v->strategy))
		return -EINVAL;
	if (f[2])
		snprintf(v->nodes, sizeof(v->nodes), "%s", f[2]);
	if (f[3] && *f[3])
		v->scrub_wait_ms = (uint32_t)strtoul(f[3], NULL, 10);
	o->nr_var++;
	return 0;
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "hypervisor", required_argument, NULL, 'H' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "sizes-mib", required_argument, NULL, 's' },
		{ "strategies", required_argument, NULL, 'S' },
		{ "variant", required_argument, NULL, 'V' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "label", required_argument, NULL, 'l' },
		{ "clean", no_argument, NULL, 'c' },
		{ "dirty", no_argument, NULL, 'd' },
		{ "recreate", no_argument, NULL, 'R' },
		{ "before", required_argument, NULL, 'B' },
		{ "nt", no_argument, NULL, 'n' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "warmup", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	char *tok, *save = NULL, spec[80], *colon;
	int c;

	*o = (struct opts){ .label = "populate", .rounds = 5, .vcpus = 2,
	    .warmup = 1 };
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
		case 'B':
			colon = strchr(optarg, ':');
			o->before_mib = strtoull(optarg, NULL, 10);
			o->before_nodes = colon ? colon + 1 : NULL;
			break;
		case 's':
			for (tok = strtok_r(optarg, ",", &save); tok &&
			    o->nr_sizes < MAX_SIZES;
			    tok = strtok_r(NULL, ",", &save))
				o->sizes[o->nr_sizes++] = strtoull(tok, NULL,
				    10);
			break;
		case 'S':
			for (tok = strtok_r(optarg, ",", &save); tok;
			    tok = strtok_r(NULL, ",", &save)) {
				snprintf(spec, sizeof(spec), "%s:%s", tok, tok);
				if (add_variant(o, spec))
					usage();
			}
			break;
		case 'V':
			if (add_variant(o, optarg))
				usage();
			break;
		default:
			usage();
		}
	}
	if (o->nr_var == 0 && (add_variant(o, "engine:engine") ||
	    add_variant(o, "libxl:libxl")))
		usage();
	if (!o->hv || !o->kernel || o->nr_sizes == 0 || o->rounds < 1 ||
	    o->vcpus < 1 || (o->clean && o->dirty) || optind != argc)
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
		for (int k = 0; k < o.nr_var; k++)
			build_destroy(ctx, &o, o.sizes[0], &o.var[k],
			    o.var[k].nodes);
	for (int r = 0; r < o.rounds; r++)
		for (int i = 0; i < o.nr_sizes; i++) {
			uint64_t mib = o.sizes[(i + r) % o.nr_sizes];

			for (int k = 0; k < o.nr_var; k++)
				timed(ctx, &o, r, mib,
				    &o.var[(k + r) % o.nr_var]);
			if (o.nt)
				nt(buf, bytes, r, mib);
		}
	bl_buffer_free(buf, bytes);
	vmb_ctx_free(ctx);
	return 0;
}
