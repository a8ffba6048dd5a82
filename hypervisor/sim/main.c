/*
 * main.c - hvsim: options, startup, signals.
 *
 * hvsim is the companion hypervisor as a user-space process.  It models
 * a NUMA host (its memory real or phantom), serves the ABI of
 * vmbuild/hvabi.h on a Unix socket, and runs no guest code.  Its state is
 * in memory only: it lives as long as the process.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvsim.h"
#include "version.h"

static volatile int stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
"usage: hvsim --socket PATH [options]\n"
"\n"
"The companion hypervisor of vmbuild as a user-space process.\n"
"It models a host and serves the hypercall ABI on a Unix socket.\n"
"\n"
"  --socket PATH            Unix socket to serve (required)\n"
"  --nodes N                NUMA nodes (default 2)\n"
"  --cpus-per-node N        logical CPUs per node (default 4)\n"
"  --threads-per-core N     SMT threads per core (default 2)\n"
"  --mem-per-node SIZE      memory per node, multiple of 2M (default 256M)\n"
"  --backing real|phantom   real: memory is mapped and written (default);\n"
"                           phantom: metadata only, for large hosts\n"
"  --topology host          nodes, CPUs and SMT of this machine\n"
"                           (explicit --nodes etc. still win)\n"
"  --flush-mode batch|alloc batch: one filter and <= 1 flush per populate\n"
"                           call (default); alloc: filter per page, flush\n"
"                           per extent, as Xen before 4.8\n"
"  --scrub-workers auto|N   background scrub workers, at most one per core\n"
"                           (default auto: one per core).  0 = inline\n"
"                           only: the boot scrub runs before the socket\n"
"                           is served, and freed memory stays dirty until\n"
"                           an allocation scrubs it; scrub progress then\n"
"                           reports 0 workers per node, and waiting for\n"
"                           dirty memory to shrink is pointless\n"
"  --shadow-threshold N     unshadow after N consecutive emulated writes\n"
"                           to one page (default 3)\n"
"  --boot-scrub, --no-boot-scrub\n"
"                           scrub all memory at start (default on)\n"
"  --max-conns N            concurrent connections (default 64)\n"
"  --preempt-pages N        populate work per call before preemption\n"
"                           (default 262144 = 1 GiB)\n"
"  --switch-hz N            context-switch flushes per CPU and second while\n"
"                           domains run (default 10, 0 = none)\n"
"  --shadow-bg-writes N     background emulated writes per 100 ms per\n"
"                           running shadow-paged domain (default 64)\n"
"  --fail OP:N[:ERRNO|hang|crash]\n"
"                           fault injection, for tests (repeatable): the\n"
"                           Nth call of OP (the HV_OP_ name in lower case,\n"
"                           e.g. populate, domain_destroy, map) fails with\n"
"                           -ERRNO (a name or a number; default EIO), is\n"
"                           never answered (hang), or kills hvsim (crash)\n"
"  --fault-requests         serve HV_OP_FAULT: clients arm such faults\n"
"                           (tests only: any peer could crash hvsim)\n"
"  --foreground             accepted for symmetry; hvsim never forks\n"
"  --verbose                log every request on stderr\n"
"  --help                   this text\n"
"  --version                print the version\n");
}

enum {
	O_SOCKET = 256, O_NODES, O_CPUS, O_TPC, O_MEM, O_BACKING, O_TOPO,
	O_FLUSH, O_SCRUB, O_SHADOW, O_BOOT, O_NOBOOT, O_CONNS, O_PREEMPT,
	O_HZ, O_SHBG, O_FG, O_VERBOSE, O_HELP, O_FAIL, O_FAULTREQ,
};

static const struct option longopts[] = {
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "nodes", required_argument, NULL, O_NODES },
	{ "cpus-per-node", required_argument, NULL, O_CPUS },
	{ "threads-per-core", required_argument, NULL, O_TPC },
	{ "mem-per-node", required_argument, NULL, O_MEM },
	{ "backing", required_argument, NULL, O_BACKING },
	{ "topology", required_argument, NULL, O_TOPO },
	{ "flush-mode", required_argument, NULL, O_FLUSH },
	{ "scrub-workers", required_argument, NULL, O_SCRUB },
	{ "shadow-threshold", required_argument, NULL, O_SHADOW },
	{ "boot-scrub", no_argument, NULL, O_BOOT },
	{ "no-boot-scrub", no_argument, NULL, O_NOBOOT },
	{ "max-conns", required_argument, NULL, O_CONNS },
	{ "preempt-pages", required_argument, NULL, O_PREEMPT },
	{ "switch-hz", required_argument, NULL, O_HZ },
	{ "shadow-bg-writes", required_argument, NULL, O_SHBG },
	{ "fail", required_argument, NULL, O_FAIL },
	{ "fault-requests", no_argument, NULL, O_FAULTREQ },
	{ "foreground", no_argument, NULL, O_FG },
	{ "verbose", no_argument, NULL, O_VERBOSE },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static int
parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max,
    uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "hvsim: --%s: '%s' is not a number in %u..%u\n",
		    opt, s, min, max);
		return -EINVAL;
	}
	*ret = (uint32_t)v;
	return 0;
}

/* ARG is word `a` (value va) or `b` (vb); -EINVAL after saying so. */
static int
parse_choice(const char *opt, const char *arg, const char *a, uint32_t va,
    const char *b, uint32_t vb, uint32_t *ret)
{
	if (strcmp(arg, a) == 0 || strcmp(arg, b) == 0) {
		*ret = strcmp(arg, a) == 0 ? va : vb;
		return 0;
	}
	fprintf(stderr, "hvsim: --%s: %s or %s, not '%s'\n", opt, a, b, arg);
	return -EINVAL;
}

/* Options that depend on --topology host, which may come after them. */
struct topo_opts {
	bool	host, set_nodes, set_cpus, set_tpc;
};

/* One option into cfg; 0, or -EINVAL after saying why on stderr. */
static int
parse_option(int c, const char *arg, struct hv_config *cfg,
    struct topo_opts *t)
{
	uint64_t sz;
	uint32_t v;
	int rc = 0;

	switch (c) {
	case O_SOCKET:
		cfg->socket_path = arg;
		break;
	case O_NODES:
		t->set_nodes = true;
		return parse_u32("nodes", arg, 1, HV_MAX_NODES, &cfg->nodes);
	case O_CPUS:
		t->set_cpus = true;
		return parse_u32("cpus-per-node", arg, 1, HV_MAX_CPUS,
		    &cfg->cpus_per_node);
	case O_TPC:
		t->set_tpc = true;
		return parse_u32("threads-per-core", arg, 1, 8,
		    &cfg->threads_per_core);
	case O_MEM:
		if (hv_parse_size(arg, &sz) < 0 || sz == 0 || sz % (2u << 20)) {
			fprintf(stderr, "hvsim: --mem-per-node: '%s' is not a "
			    "size that is a multiple of 2M\n", arg);
			return -EINVAL;
		}
		cfg->mem_per_node = sz;
		break;
	case O_BACKING:
		return parse_choice("backing", arg, "real", HV_BACKING_REAL,
		    "phantom", HV_BACKING_PHANTOM, &cfg->backing);
	case O_TOPO:
		if (strcmp(arg, "host") != 0) {
			fprintf(stderr, "hvsim: --topology: only 'host' is "
			    "known\n");
			return -EINVAL;
		}
		t->host = true;
		break;
	case O_FLUSH:
		return parse_choice("flush-mode", arg, "batch", HV_FLUSH_BATCH,
		    "alloc", HV_FLUSH_ALLOC, &cfg->flush_mode);
	case O_SCRUB:
		if (!strcmp(arg, "auto")) {
			cfg->scrub_workers = -1;
			break;
		}
		rc = parse_u32("scrub-workers", arg, 0, HV_MAX_CPUS, &v);
		cfg->scrub_workers = (int32_t)v;
		break;
	case O_SHADOW:
		return parse_u32("shadow-threshold", arg, 1, 1000000,
		    &cfg->shadow_threshold);
	case O_BOOT:
	case O_NOBOOT:
		cfg->boot_scrub = c == O_BOOT;
		break;
	case O_CONNS:
		return parse_u32("max-conns", arg, 1, 4096, &cfg->max_conns);
	case O_PREEMPT:
		rc = parse_u32("preempt-pages", arg, 1, UINT32_MAX, &v);
		cfg->preempt_pages = v;
		break;
	case O_HZ:
		return parse_u32("switch-hz", arg, 0, 10000, &cfg->switch_hz);
	case O_SHBG:
		return parse_u32("shadow-bg-writes", arg, 0, 1000000,
		    &cfg->shadow_bg_writes);
	case O_FAIL: {
		struct hv_fault f;
		char why[200];

		if (fault_parse(arg, &f, why, sizeof(why)) < 0) {
			fprintf(stderr, "hvsim: --fail: %s\n", why);
			return -EINVAL;
		}
		return fault_arm(&f, false);
	}
	case O_FAULTREQ:
		cfg->fault_requests = true;
		break;
	case O_FG:
		break;
	case O_VERBOSE:
		cfg->verbose = true;
		break;
	}
	return rc;
}

/* --topology host: this machine's shape where no option gave one. */
static int
apply_host_topology(struct hv_config *cfg, const struct topo_opts *t)
{
	uint32_t hn, hc, ht;
	int rc;

	rc = topo_host(&hn, &hc, &ht);
	if (rc < 0) {
		fprintf(stderr, "hvsim: cannot read this machine's topology: "
		    "%s\n", strerror(-rc));
		return rc;
	}
	if (!t->set_nodes)
		cfg->nodes = hn;
	if (!t->set_cpus)
		cfg->cpus_per_node = hc;
	if (!t->set_tpc)
		cfg->threads_per_core = ht;
	/* Pin scrub workers only when the model's nodes are real. */
	cfg->pin_host = cfg->nodes == hn;
	return 0;
}

/* The options together: a host that can be built on this machine. */
static int
check_config(const struct hv_config *cfg)
{
	uint64_t phys;

	if (cfg->cpus_per_node % cfg->threads_per_core ||
	    (uint64_t)cfg->nodes * cfg->cpus_per_node > HV_MAX_CPUS) {
		fprintf(stderr, "hvsim: %u CPUs per node cannot be split into "
		    "cores of %u threads, or more than %u CPUs in all\n",
		    cfg->cpus_per_node, cfg->threads_per_core, HV_MAX_CPUS);
		return -EINVAL;
	}
	if ((cfg->mem_per_node >> HV_PAGE_SHIFT) > (1ull << 32) - CHUNK_PAGES) {
		fprintf(stderr, "hvsim: --mem-per-node: at most 16T per "
		    "node\n");
		return -EINVAL;
	}
	if (cfg->backing != HV_BACKING_REAL)
		return 0;
	phys = (uint64_t)sysconf(_SC_PHYS_PAGES) *
	    (uint64_t)sysconf(_SC_PAGESIZE);
	/* Real memory beyond this machine's would end in the OOM killer. */
	if (cfg->nodes * cfg->mem_per_node > phys / 10 * 9) {
		fprintf(stderr, "hvsim: %u x %llu MiB of real memory does not "
		    "fit this machine (%llu MiB); use --backing phantom\n",
		    cfg->nodes, (unsigned long long)(cfg->mem_per_node >> 20),
		    (unsigned long long)(phys >> 20));
		return -EINVAL;
	}
	return 0;
}

/*
 * The command line into cfg: 0, or the exit status (0 after --help, 2
 * for a usage error, 1 when this machine's topology cannot be read).
 */
static int
parse_options(int argc, char **argv, struct hv_config *cfg, bool *ret_exit)
{
	struct topo_opts t = { .host = false };
	int c;

	*ret_exit = true;
	hv_config_defaults(cfg);
	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		if (c == 'h' || c == O_HELP) {
			usage(stdout);
			return 0;
		}
		if (c == 'V') {
			printf("hvsim (vmbuild) %s, hypercall ABI %d\n",
			    VMBUILD_VERSION, HV_ABI_VERSION);
			return 0;
		}
		if (c == '?' || c == ':') {
			usage(stderr);
			return 2;
		}
		if (parse_option(c, optarg, cfg, &t) < 0)
			return 2;
	}
	if (optind < argc || !cfg->socket_path) {
		if (optind < argc)
			fprintf(stderr, "hvsim: unexpected argument '%s'\n",
			    argv[optind]);
		else
			fprintf(stderr, "hvsim: --socket PATH is required\n");
		usage(stderr);
		return 2;
	}
	if (t.host && apply_host_topology(cfg, &t) < 0)
		return 1;
	if (check_config(cfg) < 0)
		return 2;
	*ret_exit = false;
	return 0;
}

int
main(int argc, char **argv)
{
	struct hv_config cfg;
	struct hv *hv = NULL;
	struct sigaction sa;
	bool exit_now;
	int rc, lfd = -1;

	rc = parse_options(argc, argv, &cfg, &exit_now);
	if (exit_now)
		return rc;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	lfd = server_listen(cfg.socket_path);
	if (lfd < 0) {
		fprintf(stderr, "hvsim: %s: %s\n", cfg.socket_path,
		    strerror(-lfd));
		return 1;
	}
	rc = hv_init(&hv, &cfg);
	if (rc < 0) {
		fprintf(stderr, "hvsim: cannot set up the host: %s\n",
		    strerror(-rc));
		close(lfd);
		unlink(cfg.socket_path);
		return 1;
	}
	hv_log(hv, "serving %s: %u nodes x %u CPUs (%u per core), %llu MiB "
	    "per node, %s memory, flush mode %s, %u scrub workers%s",
	    cfg.socket_path, cfg.nodes, cfg.cpus_per_node, cfg.threads_per_core,
	    (unsigned long long)(cfg.mem_per_node >> 20),
	    cfg.backing == HV_BACKING_REAL ? "real" : "phantom",
	    cfg.flush_mode == HV_FLUSH_BATCH ? "batch" : "alloc",
	    hv->nr_workers, hv->nr_workers ? "" :
	    " (inline only: freed memory is scrubbed when allocated)");
	rc = server_run(hv, lfd, &stop);
	close(lfd);
	unlink(cfg.socket_path);
	hv_fini(hv);
	return rc < 0 ? 1 : 0;
}
