/*
 * bench_client.c - the measuring half of bench/hvsim/run.sh.
 *
 *   bench_client populate SOCK ROUNDS
 *	Fill the host with a first domain, destroy it, wait for the scrub,
 *	then time populating a second domain of the same size from the
 *	first one's (need-flush) pages, in 2 MiB extents.  Prints the best
 *	round and the flush / filter counts of that populate.
 *
 *   bench_client scrub SOCK
 *	Populate and destroy a domain, time the background scrub of its
 *	pages until none is dirty, then time a plain non-temporal zeroing
 *	loop over the same pages (the host memory descriptor from
 *	HV_OP_MAP), with one thread per host CPU and with one thread.
 *
 *   bench_client dirty SOCK GIB ROUNDS
 *	Populate GIB GiB (2 MiB extents, HV_POPF_ALLOW_DIRTY) right after
 *	a domain of the same size was destroyed, so that the populate
 *	takes dirty pages and scrubs them inline; then the same populate
 *	on clean memory; then one thread's plain non-temporal zeroing of
 *	the same bytes.  Best of ROUNDS each, and the inline/background
 *	page counts of the dirty populate.
 *
 *   bench_client boot SOCK GIB
 *	Run against a freshly started hvsim: populate GIB GiB while the
 *	boot scrub runs.  Then zero GIB GiB of a fresh memfd twice with
 *	one thread: the first pass pays the first touch of every page
 *	(which the boot scrub pays too), the second does not.
 *
 *   bench_client par SOCK GIB ROUNDS
 *	One domain of GIB GiB per node populated on dirty memory (2 MiB
 *	extents, HV_POPF_ALLOW_DIRTY, right after a domain of the same size
 *	was destroyed): by two threads at once, one per node, each with its
 *	own connection (vmbuild's engine), against one thread doing node 0
 *	then node 1 (libxl's pattern).  The two alternate; median and best
 *	of ROUNDS each, with the pages scrubbed inline.  Meant for an hvsim
 *	with --scrub-workers 0, so that all dirty pages are scrubbed by the
 *	populates themselves.
 *
 * Output lines are "key=value ..." for run.sh to combine.
 */
#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <emmintrin.h>

#include "vmbuild/hvclient.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
die(const char *what, int rc)
{
	fprintf(stderr, "bench_client: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static struct hvc *
open_wait(const char *path)
{
	struct hvc *c = NULL;
	int i, rc = -ENOENT;

	for (i = 0; i < 600; i++) {
		rc = hvc_open(path, &c);
		if (rc == 0)
			return c;
		usleep(100000);
	}
	die("connect", rc);
	return NULL;
}

static void
host_dirty(struct hvc *c, uint64_t *dirty, uint64_t *total, int *boot,
    uint64_t *rate)
{
	struct hv_scrub_reply *r;
	struct hv_scrub_node *n;
	uint32_t i;
	int rc;

	rc = hvc_scrub_progress(c, &r);
	if (rc < 0)
		die("scrub progress", rc);
	n = hvc_scrub_nodes(r);
	*dirty = *total = 0;
	*boot = 1;
	if (rate)
		*rate = 0;
	for (i = 0; i < r->nr_nodes; i++) {
		*dirty += n[i].dirty_pages;
		*total += n[i].total_pages;
		*boot &= n[i].boot_scrub_done != 0;
		if (rate)
			*rate += n[i].rate_pages_per_sec;
	}
	free(r);
}

static uint32_t
scrub_workers(struct hvc *c)
{
	struct hv_scrub_reply *r;
	uint32_t i, w = 0;

	if (hvc_scrub_progress(c, &r) < 0)
		return 1;
	for (i = 0; i < r->nr_nodes; i++)
		w += hvc_scrub_nodes(r)[i].workers;
	free(r);
	return w > 0 && w <= 64 ? w : 1;
}

static void
wait_clean(struct hvc *c)
{
	uint64_t d, t;
	int boot;

	do {
		usleep(5000);
		host_dirty(c, &d, &t, &boot, NULL);
	} while (d || !boot);
}

static hv_domid_t
create(struct hvc *c, const char *name)
{
	struct hv_domain_create req = {
		.flags = HV_DOMF_HVM | HV_DOMF_HAP, .max_vcpus = 4,
		.max_pages = 1ull << 30,
	};
	hv_domid_t id;
	int rc;

	snprintf(req.name, sizeof(req.name), "%s", name);
	rc = hvc_domain_create(c, &req, &id);
	if (rc < 0)
		die("create", rc);
	return id;
}

/* 2 MiB extents covering `frac` of each node, alternating nodes. */
static uint32_t
extents(struct hvc *c, struct hv_extent **ret, uint32_t *nodes_out)
{
	struct hv_host_info *hi;
	struct hv_extent *e;
	uint32_t per, n, i, nr;
	int rc;

	rc = hvc_host_info(c, &hi);
	if (rc < 0)
		die("host info", rc);
	n = hi->nr_nodes;
	/* 7/8 of every node, leaving room for the page-table reserve. */
	per = (uint32_t)(hvc_host_nodes(hi)[0].total_pages / 512 * 7 / 8);
	nr = per * n;
	e = calloc(nr, sizeof(*e));
	for (i = 0; i < nr; i++)
		e[i] = (struct hv_extent){ .gfn = (uint64_t)i * 512,
		    .order = 9, .node = (uint16_t)(i % n) };
	*nodes_out = n;
	free(hi);
	*ret = e;
	return nr;
}

static void
bench_populate(const char *path, int rounds)
{
	struct hvc *c = open_wait(path);
	const struct hv_hello_reply *h = hvc_hello(c);
	struct hv_populate_stats st, best_st;
	struct hv_extent *e;
	uint32_t nr, nodes;
	double best = 1e30, t0, t;
	int r, rc;

	nr = extents(c, &e, &nodes);
	wait_clean(c);
	memset(&best_st, 0, sizeof(best_st));
	for (r = 0; r < rounds; r++) {
		hv_domid_t a = create(c, "fill"), b;

		rc = hvc_populate(c, a, HV_POPF_EXACT_NODE, e, nr, NULL, NULL);
		if (rc < 0)
			die("populate fill", rc);
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a);
		wait_clean(c);
		b = create(c, "timed");
		memset(&st, 0, sizeof(st));
		t0 = now_s();
		rc = hvc_populate(c, b, HV_POPF_EXACT_NODE, e, nr, &st, NULL);
		t = now_s() - t0;
		if (rc < 0)
			die("populate timed", rc);
		if (t < best) {
			best = t;
			best_st = st;
		}
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b);
		wait_clean(c);
	}
	printf("populate mode=%s extents=%u gib=%.3f best_s=%.6f gibps=%.2f "
	    "hv_s=%.6f evaluations=%llu flushes=%llu avoided=%llu\n",
	    h->flush_mode == HV_FLUSH_BATCH ? "batch" : "alloc", nr,
	    nr * 2.0 / 1024, best, nr * 2.0 / 1024 / best,
	    best_st.elapsed_ns / 1e9,
	    (unsigned long long)best_st.filter_evaluations,
	    (unsigned long long)best_st.flushes_issued,
	    (unsigned long long)best_st.flushes_avoided);
	free(e);
	hvc_close(c);
}

struct ntjob {
	uint8_t *base;
	const uint64_t *mfns;
	uint32_t from, to;
};

/* The plain loop: stream zeros over each 2 MiB extent. */
static void *
nt_run(void *arg)
{
	struct ntjob *j = arg;
	__m128i z = _mm_setzero_si128();
	uint32_t i;

	for (i = j->from; i < j->to; i++) {
		__m128i *p = (__m128i *)(j->base + (j->mfns[i] << 12));
		size_t k;

		for (k = 0; k < (2u << 20) / 16; k += 4) {
			_mm_stream_si128(p + k, z);
			_mm_stream_si128(p + k + 1, z);
			_mm_stream_si128(p + k + 2, z);
			_mm_stream_si128(p + k + 3, z);
		}
	}
	_mm_sfence();
	return NULL;
}

static double
nt_zero(uint8_t *base, const uint64_t *mfns, uint32_t nr, int threads)
{
	pthread_t th[64];
	struct ntjob job[64];
	double t0 = now_s();
	int i;

	for (i = 0; i < threads; i++) {
		job[i] = (struct ntjob){ base, mfns, nr * i / threads,
		    nr * (i + 1) / threads };
		pthread_create(&th[i], NULL, nt_run, &job[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	return now_s() - t0;
}

/*
 * One scrub trial: populate the extents, destroy the domain and time
 * until no page is dirty.  The first trial also records the first frame
 * of every extent and the memory descriptor.
 */
static double
scrub_once(struct hvc *c, const struct hv_extent *e, uint32_t nr,
    uint64_t *starts, int *fd, uint64_t *pages)
{
	struct hv_counters c0, c1;
	uint64_t mfns[512], d, t;
	hv_domid_t a = create(c, "scrub");
	double t0;
	uint32_t i;
	int rc, boot;
	bool first = *fd < 0;

	rc = hvc_populate(c, a, HV_POPF_EXACT_NODE, e, nr, NULL, NULL);
	if (rc < 0)
		die("populate", rc);
	for (i = 0; first && i < nr; i++) {
		rc = hvc_map(c, a, e[i].gfn, 512, mfns, i == 0 ? fd : NULL);
		if (rc < 0)
			die("map", rc);
		starts[i] = mfns[0];
	}
	hvc_counters(c, &c0);
	t0 = now_s();
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a);
	do {
		usleep(2000);
		host_dirty(c, &d, &t, &boot, NULL);
	} while (d);
	t0 = now_s() - t0;
	hvc_counters(c, &c1);
	*pages += c1.scrub_pages_background - c0.scrub_pages_background;
	return t0;
}

#define SCRUB_TRIALS	3

static double
min_d(double a, double b)
{
	return a < b ? a : b;
}

static void
bench_scrub(const char *path)
{
	struct hvc *c = open_wait(path);
	struct hv_extent *e;
	uint64_t *starts, d, t, pages = 0;
	uint32_t nr, nodes, workers;
	double ts = 1e30, tn = 1e30, t1 = 1e30, tw = 1e30, gb;
	int fd = -1, boot, k, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	uint8_t *base = MAP_FAILED;

	if (ncpu > 64)
		ncpu = 64;
	nr = extents(c, &e, &nodes);
	starts = calloc(nr, sizeof(*starts));
	wait_clean(c);
	workers = scrub_workers(c);
	host_dirty(c, &d, &t, &boot, NULL);
	/*
	 * Trials interleave hvsim and the plain loops, so that both see the
	 * same moments of a shared machine; each keeps its best.
	 */
	for (k = 0; k < SCRUB_TRIALS; k++) {
		ts = min_d(ts, scrub_once(c, e, nr, starts, &fd, &pages));
		if (base == MAP_FAILED) {
			/* Mapped up front: the loops time stores, not faults. */
			base = mmap(NULL, t << 12, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_POPULATE, fd, 0);
			if (base == MAP_FAILED)
				die("mmap", -errno);
			nt_zero(base, starts, nr, ncpu);	/* warm-up */
		}
		tn = min_d(tn, nt_zero(base, starts, nr, ncpu));
		t1 = min_d(t1, nt_zero(base, starts, nr, 1));
		/*
		 * And with as many threads as hvsim has workers: on a
		 * shared machine the thread count decides the CPU share.
		 */
		tw = min_d(tw, nt_zero(base, starts, nr, (int)workers));
	}
	gb = nr * 2.0 * 1048576 / 1e9;
	printf("scrub gib=%.3f trials=%d workers_pages=%llu hvsim_workers=%u "
	    "hvsim_s=%.4f hvsim_gbps=%.2f nt_threads=%d nt_s=%.4f "
	    "nt_gbps=%.2f nt1_s=%.4f nt1_gbps=%.2f ntw_s=%.4f ntw_gbps=%.2f\n",
	    nr * 2.0 / 1024, SCRUB_TRIALS, (unsigned long long)pages, workers,
	    ts, gb / ts, ncpu, tn, gb / tn, t1, gb / t1, tw, gb / tw);
	munmap(base, t << 12);
	close(fd);
	free(starts);
	free(e);
	hvc_close(c);
}

/* 2 MiB extents covering `gib` GiB, alternating nodes. */
static uint32_t
extents_gib(struct hvc *c, double gib, struct hv_extent **ret)
{
	struct hv_host_info *hi;
	struct hv_extent *e;
	uint32_t n, i, nr;
	uint64_t total = 0;
	int rc;

	rc = hvc_host_info(c, &hi);
	if (rc < 0)
		die("host info", rc);
	n = hi->nr_nodes;
	for (i = 0; i < n; i++)
		total += hvc_host_nodes(hi)[i].total_pages;
	free(hi);
	nr = (uint32_t)(gib * 512);
	if (nr == 0 || (uint64_t)nr * 512 > total / 8 * 7) {
		fprintf(stderr, "bench_client: %.2f GiB does not fit in 7/8 "
		    "of the host's %llu MiB\n", gib,
		    (unsigned long long)(total >> 8));
		exit(2);
	}
	e = calloc(nr, sizeof(*e));
	if (!e)
		die("calloc", -ENOMEM);
	for (i = 0; i < nr; i++)
		e[i] = (struct hv_extent){ .gfn = (uint64_t)i * 512,
		    .order = 9, .node = (uint16_t)(i % n) };
	*ret = e;
	return nr;
}

/* Time one populate of a new domain; its id in *ret_id. */
static double
timed_populate(struct hvc *c, const struct hv_extent *e, uint32_t nr,
    struct hv_populate_stats *st, hv_domid_t *ret_id)
{
	hv_domid_t id = create(c, "timed");
	double t0;
	int rc;

	memset(st, 0, sizeof(*st));
	t0 = now_s();
	rc = hvc_populate(c, id, HV_POPF_EXACT_NODE | HV_POPF_ALLOW_DIRTY, e,
	    nr, st, NULL);
	t0 = now_s() - t0;
	if (rc < 0)
		die("populate", rc);
	*ret_id = id;
	return t0;
}

static void
bench_dirty(const char *path, double gib, int rounds)
{
	struct hvc *c = open_wait(path);
	struct hv_populate_stats st;
	struct hv_counters c0, c1;
	struct hv_extent *e;
	uint64_t *starts, m[512], inl = 0, bg = 0;
	uint8_t *base = MAP_FAILED;
	double td = 1e30, tc = 1e30, tn = 1e30, t;
	hv_domid_t a, b;
	uint32_t nr, i;
	int r, rc, fd = -1;
	uint64_t d, tot;
	int boot;

	nr = extents_gib(c, gib, &e);
	starts = calloc(nr, sizeof(*starts));
	wait_clean(c);
	host_dirty(c, &d, &tot, &boot, NULL);
	for (r = 0; r < rounds; r++) {
		/* Dirty: the pages of a domain destroyed just before. */
		a = create(c, "fill");
		rc = hvc_populate(c, a, HV_POPF_EXACT_NODE, e, nr, NULL, NULL);
		if (rc < 0)
			die("populate fill", rc);
		hvc_counters(c, &c0);
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a);
		t = timed_populate(c, e, nr, &st, &b);
		hvc_counters(c, &c1);
		if (t < td) {
			td = t;
			inl = st.pages_scrubbed_inline;
			bg = c1.scrub_pages_background -
			    c0.scrub_pages_background;
		}
		for (i = 0; r == 0 && i < nr; i++) {
			rc = hvc_map(c, b, e[i].gfn, 512, m, i ? NULL : &fd);
			if (rc < 0)
				die("map", rc);
			starts[i] = m[0];
		}
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b);
		wait_clean(c);
		/* Clean: the same populate when nothing is dirty. */
		t = timed_populate(c, e, nr, &st, &b);
		if (t < tc)
			tc = t;
		hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b);
		wait_clean(c);
		/* The plain loop over the same (free, clean) frames. */
		if (base == MAP_FAILED) {
			base = mmap(NULL, tot << 12, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_POPULATE, fd, 0);
			if (base == MAP_FAILED)
				die("mmap", -errno);
			nt_zero(base, starts, nr, 1);	/* warm-up */
		}
		t = nt_zero(base, starts, nr, 1);
		if (t < tn)
			tn = t;
	}
	printf("dirty gib=%.3f rounds=%d dirty_s=%.6f clean_s=%.6f nt1_s=%.6f "
	    "inline_pages=%llu background_pages=%llu dirty_over_clean=%.2f "
	    "dirty_over_nt=%.2f inline_gbps=%.2f nt1_gbps=%.2f\n",
	    nr / 512.0, rounds, td, tc, tn, (unsigned long long)inl,
	    (unsigned long long)bg, td / tc, td / tn,
	    td > tc ? inl * 4096.0 / 1e9 / (td - tc) : 0.0,
	    nr * 2.0 * 1048576 / 1e9 / tn);
	if (base != MAP_FAILED)
		munmap(base, tot << 12);
	if (fd >= 0)
		close(fd);
	free(starts);
	free(e);
	hvc_close(c);
}

/* One thread's NT zeroing of a fresh memfd: first touch, then again. */
static void
fresh_nt(uint64_t bytes, double *first, double *second)
{
	uint64_t *starts, i, nr = bytes >> 21;
	uint8_t *p;
	int fd = memfd_create("bench-fresh", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0)
		die("memfd", -errno);
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", -errno);
	starts = calloc(nr, sizeof(*starts));
	for (i = 0; i < nr; i++)
		starts[i] = i * 512;
	*first = nt_zero(p, starts, (uint32_t)nr, 1);
	*second = nt_zero(p, starts, (uint32_t)nr, 1);
	munmap(p, bytes);
	close(fd);
	free(starts);
}

static void
bench_boot(const char *path, double gib)
{
	struct hvc *c = open_wait(path);
	struct hv_populate_stats st;
	struct hv_counters c0, c1;
	struct hv_extent *e;
	uint64_t d, tot;
	double tp, t1, t2;
	hv_domid_t b;
	uint32_t nr;
	int boot;

	nr = extents_gib(c, gib, &e);
	hvc_counters(c, &c0);
	host_dirty(c, &d, &tot, &boot, NULL);
	tp = timed_populate(c, e, nr, &st, &b);
	hvc_counters(c, &c1);
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b);
	wait_clean(c);
	fresh_nt((uint64_t)nr << 21, &t1, &t2);
	printf("boot gib=%.3f dirty_at_start_pages=%llu populate_s=%.4f "
	    "inline_pages=%llu boot_pages_meanwhile=%llu nt_first_touch_s=%.4f "
	    "nt_touched_s=%.4f populate_over_first_touch=%.2f "
	    "populate_over_touched=%.2f\n", nr / 512.0,
	    (unsigned long long)d, tp,
	    (unsigned long long)st.pages_scrubbed_inline,
	    (unsigned long long)(c1.scrub_pages_boot - c0.scrub_pages_boot),
	    t1, t2, tp / t1, tp / t2);
	free(e);
	hvc_close(c);
}

struct parjob {
	struct hvc *c;
	hv_domid_t domid;
	const struct hv_extent *e;
	uint32_t nr;
	struct hv_populate_stats st;
	int rc;
};

static void *
par_run(void *arg)
{
	struct parjob *j = arg;

	memset(&j->st, 0, sizeof(j->st));
	j->rc = hvc_populate(j->c, j->domid,
	    HV_POPF_EXACT_NODE | HV_POPF_ALLOW_DIRTY, j->e, j->nr, &j->st,
	    NULL);
	return NULL;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Fill both nodes and destroy: the next populate finds dirty memory. */
static void
par_dirty(struct hvc *c, const struct hv_extent *e, uint32_t nr)
{
	hv_domid_t a = create(c, "fill");
	int rc;

	rc = hvc_populate(c, a, HV_POPF_EXACT_NODE, e, 2 * nr, NULL, NULL);
	if (rc < 0)
		die("populate fill", rc);
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a);
}

static void
bench_par(const char *path, double gib, int rounds)
{
	struct hvc *c[2] = { open_wait(path), open_wait(path) };
	uint32_t nr = (uint32_t)(gib * 512), i, n;
	struct hv_extent *e = calloc(2 * nr, sizeof(*e));
	double *tp = calloc((size_t)rounds, sizeof(double));
	double *ts = calloc((size_t)rounds, sizeof(double));
	uint64_t inl_p = 0, inl_s = 0;
	int r, k;

	/* Boot scrub first: with workers it maps the memory in. */
	wait_clean(c[0]);
	/* Node n's extents at e[n * nr], gfns 1 TiB apart per node. */
	for (n = 0; n < 2; n++)
		for (i = 0; i < nr; i++)
			e[n * nr + i] = (struct hv_extent){
			    .gfn = ((uint64_t)n << 28) + (uint64_t)i * 512,
			    .order = 9, .node = (uint16_t)n };
	for (r = 0; r < rounds; r++)
		for (k = 0; k < 2; k++) {
			/* Alternate which goes first: drift hits both. */
			bool par = (k + r) % 2 == 0;
			struct parjob j[2];
			pthread_t th[2];
			hv_domid_t d;
			double t0;

			par_dirty(c[0], e, nr);
			d = create(c[0], par ? "par" : "seq");
			for (n = 0; n < 2; n++)
				j[n] = (struct parjob){ .c = c[n], .domid = d,
				    .e = e + n * nr, .nr = nr };
			t0 = now_s();
			if (par) {
				for (n = 0; n < 2; n++)
					pthread_create(&th[n], NULL, par_run,
					    &j[n]);
				for (n = 0; n < 2; n++)
					pthread_join(th[n], NULL);
			} else {
				for (n = 0; n < 2; n++)
					par_run(&j[n]);
			}
			t0 = now_s() - t0;
			for (n = 0; n < 2; n++) {
				if (j[n].rc < 0)
					die("populate timed", j[n].rc);
				if (par)
					inl_p += j[n].st.pages_scrubbed_inline;
				else
					inl_s += j[n].st.pages_scrubbed_inline;
			}
			(par ? tp : ts)[r] = t0;
			hvc_domain_op(c[0], HV_OP_DOMAIN_DESTROY, d);
		}
	qsort(tp, (size_t)rounds, sizeof(double), cmp_d);
	qsort(ts, (size_t)rounds, sizeof(double), cmp_d);
	printf("par gib=%.3f rounds=%d par_median_s=%.6f par_best_s=%.6f "
	    "seq_median_s=%.6f seq_best_s=%.6f seq_over_par_median=%.2f "
	    "inline_pages_par=%llu inline_pages_seq=%llu\n", 2 * gib, rounds,
	    tp[rounds / 2], tp[0], ts[rounds / 2], ts[0],
	    ts[rounds / 2] / tp[rounds / 2],
	    (unsigned long long)inl_p / (unsigned)rounds,
	    (unsigned long long)inl_s / (unsigned)rounds);
	free(tp);
	free(ts);
	free(e);
	hvc_close(c[0]);
	hvc_close(c[1]);
}

int
main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "populate"))
		bench_populate(argv[2], atoi(argv[3]) > 0 ? atoi(argv[3]) : 1);
	else if (argc == 3 && !strcmp(argv[1], "scrub"))
		bench_scrub(argv[2]);
	else if (argc == 5 && !strcmp(argv[1], "dirty") && atof(argv[3]) > 0)
		bench_dirty(argv[2], atof(argv[3]),
		    atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
	else if (argc == 5 && !strcmp(argv[1], "par") && atof(argv[3]) > 0)
		bench_par(argv[2], atof(argv[3]),
		    atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
	else if (argc == 4 && !strcmp(argv[1], "boot") && atof(argv[3]) > 0)
		bench_boot(argv[2], atof(argv[3]));
	else {
		fprintf(stderr, "usage: bench_client populate SOCK ROUNDS | "
		    "scrub SOCK | dirty SOCK GIB ROUNDS | par SOCK GIB ROUNDS | "
		    "boot SOCK GIB\n");
		return 2;
	}
	return 0;
}
