/*
 * placement.c - which host nodes a guest's memory goes to, and why.
 *
 * vmb__place() is a pure function of the host (free memory and CPUs per
 * node), the scrubber's view (dirty memory per node) and the existing
 * domains (their vCPUs and where their memory is), so the tests drive it
 * with made-up tables; the build's place phase gathers those from the
 * backend.  One function per way of placing: place_vnuma (the vnodes'
 * pnodes), place_explicit (cpus=), place_best (searching node sets).
 *
 * Order of preference, as libxl's candidate search but scrub-aware:
 *   1. explicit requests: vnuma pnodes, then cpus="nodes:..." (or a CPU
 *      list, through the nodes of those CPUs);
 *   2. node sets whose free *clean* memory covers the guest, because
 *      dirty pages must be scrubbed inline by the populate that takes
 *      them, which is what makes a build slow right after a big destroy;
 *   3. fewer nodes;
 *   4. less loaded CPUs: vCPUs of the domains with memory on the nodes,
 *      per CPU of the nodes;
 *   5. more clean memory, then lower node numbers (determinism).
 * Memory is then spread over the chosen nodes evenly, within what each
 * can give.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

#define PLACE_EXHAUSTIVE_MAX	16	/* up to 2^16 subsets are cheap */

struct node_view {
	uint64_t free;
	uint64_t clean;
	uint32_t cpus;
	uint32_t vcpus;		/* of existing domains with memory here */
};

struct cand {
	uint64_t mask;
	int	tier;		/* 0: clean covers, 1: free covers */
	int	nr;
	double	load;
	uint64_t clean;
	uint64_t free;
};

static void
fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b >= VMB_GIB && b % VMB_GIB == 0)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(b / VMB_GIB));
	else if (b >= 10 * VMB_GIB)
		snprintf(buf, len, "%.1f GiB", (double)b / (double)VMB_GIB);
	else
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b / VMB_MIB));
}

static void
reason_add(struct vmb_placement *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
reason_add(struct vmb_placement *p, const char *fmt, ...)
{
	size_t len = strlen(p->reason);
	va_list ap;

	if (len + 1 >= sizeof(p->reason))
		return;
	va_start(ap, fmt);
	vsnprintf(p->reason + len, sizeof(p->reason) - len, fmt, ap);
	va_end(ap);
}

static void
why_set(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Why placement failed, for the build's error; why may be NULL. */
static void
why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* Is candidate a better than b? */
static bool
cand_better(const struct cand *a, const struct cand *b)
{
	if (a->tier != b->tier)
		return a->tier < b->tier;
	if (a->nr != b->nr)
		return a->nr < b->nr;
	if (a->load != b->load)
		return a->load < b->load;
	if (a->clean != b->clean)
		return a->clean > b->clean;
	return a->mask < b->mask;	/* lower node numbers first */
}

static void
cand_eval(const struct node_view *nv, uint32_t nr_nodes, uint64_t mask,
    uint64_t want, struct cand *c)
{
	uint64_t cpus = 0, vcpus = 0;

	memset(c, 0, sizeof(*c));
	c->mask = mask;
	for (uint32_t n = 0; n < nr_nodes; n++) {
		if (!(mask >> n & 1))
			continue;
		c->nr++;
		c->clean += nv[n].clean;
		c->free += nv[n].free;
		cpus += nv[n].cpus;
		vcpus += nv[n].vcpus;
	}
	c->tier = c->clean >= want ? 0 : c->free >= want ? 1 : 2;
	/* A node without CPUs is as loaded as can be. */
	c->load = cpus ? (double)vcpus / (double)cpus : 1e9;
}

/*
 * Spread `want` bytes over the nodes of `mask` as evenly as their
 * capacity allows, in units of `gran` (the last unit may be smaller).
 */
static int
spread(const struct node_view *nv, uint32_t nr_nodes, uint64_t mask,
    uint64_t want, bool use_clean, struct vmb_placement *p)
{
	uint64_t cap[VMB_MAX_NODES], share[VMB_MAX_NODES] = { 0 };
	uint64_t left = want, gran;
	bool active[VMB_MAX_NODES] = { false };
	int nactive = 0;

	for (uint32_t n = 0; n < nr_nodes; n++) {
		if (!(mask >> n & 1))
			continue;
		cap[n] = (use_clean ? nv[n].clean : nv[n].free) &
		    ~(VMB_PAGE_SIZE - 1);
		active[n] = true;
		nactive++;
	}
	if (nactive == 0)
		return -EINVAL;
	/* 1 GiB units keep every node's range aligned for 1 GiB extents. */
	gran = want / (uint64_t)nactive >= 2 * VMB_GIB ? VMB_GIB : 2 * VMB_MIB;
	/* Water filling: nodes that cannot take an even share give all. */
	for (bool capped = true; capped && nactive > 0; ) {
		uint64_t even = left / (uint64_t)nactive / gran * gran;

		capped = false;
		for (uint32_t n = 0; n < nr_nodes; n++) {
			if (!active[n] || cap[n] >= even)
				continue;
			share[n] = cap[n] / gran * gran;
			left -= share[n];
			cap[n] -= share[n];
			active[n] = false;
			nactive--;
			capped = true;
		}
		if (!capped) {
			for (uint32_t n = 0; n < nr_nodes; n++) {
				if (!active[n])
					continue;
				share[n] = even;
				cap[n] -= even;
				left -= even;
			}
		}
	}
	/* What rounding left over goes, unit by unit, where there is room. */
	while (left > 0) {
		uint64_t unit = left < gran ? left : gran;
		bool placed = false;

		for (uint32_t n = 0; n < nr_nodes && left > 0; n++) {
			if (!(mask >> n & 1))
				continue;
			unit = left < gran ? left : gran;
			if (cap[n] < unit) {
				/* Smaller than a unit: whatever pages fit. */
				unit = cap[n] < left ? cap[n] : left;
				if (unit == 0)
					continue;
			}
			share[n] += unit;
			cap[n] -= unit;
			left -= unit;
			placed = true;
		}
		if (!placed)
			return -ENOMEM;
	}
	p->nr_nodes = 0;
	for (uint32_t n = 0; n < nr_nodes; n++) {
		if (!share[n])
			continue;
		p->nodes[p->nr_nodes] = n;
		p->node_bytes[p->nr_nodes] = share[n];
		p->nr_nodes++;
	}
	return 0;
}

static void
reason_nodes(struct vmb_placement *p, const struct node_view *nv)
{
	char a[32], b[32];

	for (uint32_t i = 0; i < p->nr_nodes; i++) {
		uint32_t n = p->nodes[i];

		fmt_bytes(a, sizeof(a), p->node_bytes[i]);
		fmt_bytes(b, sizeof(b), nv[n].clean);
		reason_add(p, "%snode %u: %s (%s clean free%s)", i ? ", " : "",
		    n, a, b, p->node_bytes[i] > nv[n].clean ?
		    ", rest scrubbed inline" : "");
	}
}

static int
place_vnuma(const struct vmb_host *host, const struct node_view *nv,
    const struct vmb_guest *g, struct vmb_placement *p, char *why,
    size_t why_len)
{
	uint64_t bytes[VMB_MAX_NODES] = { 0 };
	char a[32], b[32];

	for (uint32_t i = 0; i < g->nr_vnodes; i++) {
		uint32_t pn = g->vnodes[i].pnode;

		if (pn >= host->nr_nodes) {
			/* With the file:line the key was read from, if any. */
			char at[300] = "";

			if (g->source && g->key_line[VMB_KEY_VNUMA] > 0)
				snprintf(at, sizeof(at), "%s:%d: ", g->source,
				    g->key_line[VMB_KEY_VNUMA]);
			why_set(why, why_len, "%svnuma: vnode %u is on node %u, "
			    "but the host has %u node%s", at, i, pn,
			    host->nr_nodes, host->nr_nodes > 1 ? "s" : "");
			return -EINVAL;
		}
		if (bytes[pn] == 0) {
			p->nodes[p->nr_nodes++] = pn;
		}
		bytes[pn] += g->vnodes[i].size_bytes;
	}
	for (uint32_t i = 0; i < p->nr_nodes; i++) {
		uint32_t pn = p->nodes[i];

		if (bytes[pn] > nv[pn].free) {
			fmt_bytes(a, sizeof(a), bytes[pn]);
			fmt_bytes(b, sizeof(b), nv[pn].free);
			why_set(why, why_len, "vnuma: node %u must take %s but "
			    "has %s free", pn, a, b);
			return -ENOMEM;
		}
		p->node_bytes[i] = bytes[pn];
	}
	reason_add(p, "vnuma requested: ");
	for (uint32_t i = 0; i < g->nr_vnodes; i++) {
		uint32_t pn = g->vnodes[i].pnode;

		fmt_bytes(a, sizeof(a), g->vnodes[i].size_bytes);
		reason_add(p, "%svnode %u -> node %u (%s)", i ? ", " : "", i,
		    pn, a);
	}
	for (uint32_t i = 0; i < p->nr_nodes; i++) {
		uint32_t pn = p->nodes[i];

		if (bytes[pn] > nv[pn].clean) {
			fmt_bytes(a, sizeof(a), nv[pn].clean);
			fmt_bytes(b, sizeof(b), bytes[pn] - nv[pn].clean);
			reason_add(p, "; node %u has %s clean, %s will be "
			    "scrubbed inline", pn, a, b);
		}
	}
	return 0;
}

/* The nodes the guest may use: cpus="nodes:..." or a CPU list's nodes. */
static int
allowed_nodes(const struct vmb_host *host, const struct vmb_guest *g,
    uint64_t *ret_mask, bool *ret_explicit, char *why, size_t why_len)
{
	uint64_t all = host->nr_nodes >= 64 ? ~0ull :
	    (1ull << host->nr_nodes) - 1;
	uint64_t cpubits[VMB_MAX_CPUS / 64], mask = 0;

	*ret_explicit = false;
	if (g->node_mask) {
		if (g->node_mask & ~all) {
			why_set(why, why_len, "cpus=\"%s\": node %d does not "
			    "exist (the host has %u node%s)", g->cpus ?
			    g->cpus : "", __builtin_ctzll(g->node_mask & ~all),
			    host->nr_nodes, host->nr_nodes > 1 ? "s" : "");
			return -EINVAL;
		}
		*ret_mask = g->node_mask;
		*ret_explicit = true;
		return 0;
	}
	if (!g->cpus || !strcmp(g->cpus, "all")) {
		*ret_mask = all;
		return 0;
	}
	/* Any other CPU list (xl syntax): the nodes of the CPUs it names. */
	if (vmb__cpus_resolve("cpus", g->cpus, host, cpubits, why, why_len))
		return -EINVAL;
	for (uint32_t i = 0; host->cpus && i < host->nr_cpus; i++) {
		uint32_t c = host->cpus[i].cpu;

		if (c < VMB_MAX_CPUS && (cpubits[c / 64] >> (c % 64) & 1))
			mask |= 1ull << host->cpus[i].node;
	}
	*ret_mask = mask & all;
	if (!*ret_mask) {
		why_set(why, why_len, "cpus=\"%s\": no CPU on any node",
		    g->cpus);
		return -EINVAL;
	}
	return 0;
}

uint64_t
vmb__clean_bytes(const struct vmb_host *host, const struct vmb_scrub *scrub,
    uint32_t node)
{
	uint64_t free = node < host->nr_nodes ?
	    host->nodes[node].free_bytes : 0, clean;

	if (!scrub || !(scrub->have & VMB_SCRUB_HAVE_DIRTY))
		return free;
	for (uint32_t i = 0; i < scrub->nr_nodes; i++) {
		const struct vmb_scrub_node *s = &scrub->nodes[i];

		if (s->node != node)
			continue;
		/*
		 * The scrubber's free and dirty counts are one snapshot; the
		 * host's free count was read at another time.  Memory freed
		 * (dirty) in between is not clean, memory taken in between
		 * may have been: the lower free count, less dirty, is clean.
		 */
		clean = s->free_bytes < free ? s->free_bytes : free;
		return clean > s->dirty_bytes ? clean - s->dirty_bytes : 0;
	}
	return free;
}

/*
 * What placement sees of each node: free and clean memory, CPUs, and the
 * vCPUs of the domains that have memory there.  Returns the host's free
 * memory.
 */
static uint64_t
node_views(const struct vmb_host *host, const struct vmb_scrub *scrub,
    const struct vmb_domain *domains, size_t nr_domains,
    struct node_view *nv)
{
	uint32_t nn = host->nr_nodes;
	uint64_t total_free = 0;

	memset(nv, 0, VMB_MAX_NODES * sizeof(*nv));
	for (uint32_t n = 0; n < nn; n++) {
		nv[n].free = host->nodes[n].free_bytes;
		nv[n].clean = nv[n].free;
		nv[n].cpus = host->nodes[n].nr_cpus;
		total_free += nv[n].free;
	}
	for (uint32_t n = 0; n < nn; n++)
		nv[n].clean = vmb__clean_bytes(host, scrub, n);
	for (size_t d = 0; d < nr_domains; d++)
		for (uint32_t n = 0; n < nn && n < domains[d].nr_nodes; n++)
			if (domains[d].node_bytes[n])
				nv[n].vcpus += domains[d].vcpus;
	return total_free;
}

/* Does the guest fit the host's free memory, less what others claimed? */
static int
check_host_free(const struct vmb_host *host, uint64_t total_free,
    uint64_t want, char *why, size_t why_len)
{
	char a[32], b[32];
	size_t l;

	/* Claims are host-wide in Xen: they do not say which node. */
	if (total_free >= host->claimed_bytes &&
	    total_free - host->claimed_bytes >= want)
		return 0;
	fmt_bytes(a, sizeof(a), want);
	fmt_bytes(b, sizeof(b), total_free);
	why_set(why, why_len, "%s do not fit: the host has %s free", a, b);
	if (host->claimed_bytes) {
		l = why ? strlen(why) : 0;
		fmt_bytes(b, sizeof(b), host->claimed_bytes);
		if (why && l < why_len)
			why_set(why + l, why_len - l, ", %s of it claimed by "
			    "other builds", b);
	}
	return -ENOMEM;
}

/* cpus="nodes:..." or a CPU list: spread over all the nodes named. */
static int
place_explicit(const struct node_view *nv, uint32_t nn,
    const struct vmb_guest *g, uint64_t mask, struct vmb_placement *p,
    char *why, size_t why_len)
{
	struct cand best;
	char a[32], b[32];
	int rc;

	cand_eval(nv, nn, mask, g->memory_bytes, &best);
	if (best.tier == 2) {
		fmt_bytes(a, sizeof(a), g->memory_bytes);
		fmt_bytes(b, sizeof(b), best.free);
		why_set(why, why_len, "cpus=\"%s\": the nodes given have %s "
		    "free, the guest needs %s", g->cpus ? g->cpus : "", b, a);
		return -ENOMEM;
	}
	rc = spread(nv, nn, mask, g->memory_bytes, best.tier == 0, p);
	if (rc)
		return rc;
	reason_add(p, "cpus=\"%s\" requested: spread over the %d node%s "
	    "given; ", g->cpus, best.nr, best.nr > 1 ? "s" : "");
	reason_nodes(p, nv);
	return 0;
}

/* Counts of the node sets a search looked at, for the reason. */
struct search {
	struct cand best;
	bool	found;
	unsigned nr_cands, nr_fit;
};

/* Every subset of the allowed nodes (up to PLACE_EXHAUSTIVE_MAX). */
static void
search_subsets(const struct node_view *nv, uint32_t nn, uint64_t mask,
    uint64_t want, struct search *sr)
{
	struct cand c;

	for (uint64_t s = mask; s; s = (s - 1) & mask) {
		sr->nr_cands++;
		cand_eval(nv, nn, s, want, &c);
		if (c.tier == 2)
			continue;
		sr->nr_fit++;
		if (!sr->found || cand_better(&c, &sr->best)) {
			sr->best = c;
			sr->found = true;
		}
	}
}

/*
 * Too many subsets: take nodes by most clean memory until the guest
 * fits (fewest nodes), first counting only clean memory, then all free
 * memory.
 */
static void
search_greedy(const struct node_view *nv, uint32_t nn, uint64_t mask,
    uint64_t want, struct search *sr)
{
	for (int tier = 0; tier < 2 && !sr->found; tier++) {
		uint64_t taken = 0, sum = 0;

		while (taken != mask) {
			int bn = -1;

			for (uint32_t n = 0; n < nn; n++)
				if ((mask & ~taken) >> n & 1 &&
				    (bn < 0 || nv[n].clean > nv[bn].clean))
					bn = (int)n;
			taken |= 1ull << bn;
			sum += tier ? nv[bn].free : nv[bn].clean;
			sr->nr_cands++;
			if (sum >= want) {
				cand_eval(nv, nn, taken, want, &sr->best);
				sr->found = true;
				sr->nr_fit++;
				break;
			}
		}
	}
}

/* No request: the best node set among those allowed, by the order above. */
static int
place_best(const struct node_view *nv, uint32_t nn, uint64_t mask,
    uint64_t want, struct vmb_placement *p, char *why, size_t why_len)
{
	struct search sr = { .found = false };
	struct cand c;
	char a[32], b[32];
	int rc;

	if (__builtin_popcountll(mask) <= PLACE_EXHAUSTIVE_MAX)
		search_subsets(nv, nn, mask, want, &sr);
	else
		search_greedy(nv, nn, mask, want, &sr);
	fmt_bytes(a, sizeof(a), want);
	if (!sr.found) {
		cand_eval(nv, nn, mask, want, &c);
		fmt_bytes(b, sizeof(b), c.free);
		why_set(why, why_len, "%s do not fit: the allowed nodes have "
		    "%s free", a, b);
		return -ENOMEM;
	}
	rc = spread(nv, nn, sr.best.mask, want, sr.best.tier == 0, p);
	if (rc)
		return rc;
	fmt_bytes(b, sizeof(b), sr.best.tier == 0 ? sr.best.clean :
	    sr.best.free);
	reason_add(p, "%s %s cover%s %s", sr.best.tier == 0 ? "clean free "
	    "memory" : "no node set has enough clean memory; free memory",
	    b, sr.best.nr > 1 ? "" : "s", a);
	reason_add(p, " on %d node%s (fewest possible), CPU load %.2f "
	    "vCPU/CPU; %u of %u node sets fit: ", sr.best.nr,
	    sr.best.nr > 1 ? "s" : "", sr.best.load, sr.nr_fit, sr.nr_cands);
	reason_nodes(p, nv);
	return 0;
}

int
vmb__place(const struct vmb_host *host, const struct vmb_scrub *scrub,
    const struct vmb_domain *domains, size_t nr_domains,
    const struct vmb_guest *g, struct vmb_placement *ret_placement)
{
	return vmb__place_why(host, scrub, domains, nr_domains, g,
	    ret_placement, NULL, 0);
}

int
vmb__place_why(const struct vmb_host *host, const struct vmb_scrub *scrub,
    const struct vmb_domain *domains, size_t nr_domains,
    const struct vmb_guest *g, struct vmb_placement *ret_placement,
    char *why, size_t why_len)
{
	struct node_view nv[VMB_MAX_NODES];
	struct vmb_placement p;
	uint64_t want, mask, total_free;
	bool explicit_nodes;
	int rc;

	if (!host || !g || !ret_placement || host->nr_nodes == 0 ||
	    host->nr_nodes > VMB_MAX_NODES) {
		why_set(why, why_len, "the host reports %u NUMA nodes",
		    host ? host->nr_nodes : 0);
		return -EINVAL;
	}
	want = g->memory_bytes;
	if (want == 0 || want % VMB_PAGE_SIZE) {
		why_set(why, why_len, "memory of %llu bytes is not a whole "
		    "number of pages", (unsigned long long)want);
		return -EINVAL;
	}
	memset(&p, 0, sizeof(p));
	total_free = node_views(host, scrub, domains, nr_domains, nv);
	rc = check_host_free(host, total_free, want, why, why_len);
	if (rc)
		return rc;
	if (g->nr_vnodes) {
		rc = place_vnuma(host, nv, g, &p, why, why_len);
	} else {
		rc = allowed_nodes(host, g, &mask, &explicit_nodes, why,
		    why_len);
		if (rc == 0 && explicit_nodes)
			rc = place_explicit(nv, host->nr_nodes, g, mask, &p,
			    why, why_len);
		else if (rc == 0)
			rc = place_best(nv, host->nr_nodes, mask, want, &p,
			    why, why_len);
	}
	if (rc)
		return rc;
	*ret_placement = p;
	return 0;
}
