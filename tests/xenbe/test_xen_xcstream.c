/*
 * test_xen_xcstream.c - the reader of libxc's migration stream
 * (xen_xcstream.c, for the engine restore of xen_xcrestore.c) on
 * synthetic streams, without Xen: a good v3 stream (static data, pages
 * with every type, a pfn sent twice, TSC, HVM params and context, an
 * optional record it does not know) applied to a fake guest; a v2
 * stream without STATIC_DATA_END; and the refusals: every truncation,
 * bad headers, oversized counts and lengths, a pfn beyond the limit, an
 * unknown type, unknown mandatory and PV records, records out of order,
 * an END without HVM_CONTEXT, a callback's failure.  And the pages read
 * on the reader's threads (from a file, when the callback's memory
 * stays): the same results, the later of a pfn sent twice winning.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "xen_xcstream.h"

#define LIMIT	0x20u		/* the fake guest's pfns */
#define PG	XCS_PAGE_SIZE

/* ------------------------------------------------------------------ */
/* A stream, built. */

struct sb {
	uint8_t	*p;
	size_t	len, cap;
};

static void
put(struct sb *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static void
put32(struct sb *b, uint32_t v)
{
	put(b, &v, 4);	/* little-endian host (x86) */
}

static void
put64(struct sb *b, uint64_t v)
{
	put(b, &v, 8);
}

static void
put_be32(struct sb *b, uint32_t v)
{
	uint8_t x[4] = { v >> 24, v >> 16, v >> 8, v };

	put(b, x, 4);
}

static void
headers(struct sb *b, uint32_t version)
{
	uint8_t opt[8] = { 0 };

	put64(b, ~0ull);
	put_be32(b, 0x58454e46);
	put_be32(b, version);
	put(b, opt, 8);		/* options 0, reserved */
	put32(b, 2);		/* x86 HVM */
	put32(b, 12);		/* page_shift 12, reserved 0 */
	put32(b, 4);
	put32(b, 17);
}

/* A record: header, body, padding to 8. */
static void
rec(struct sb *b, uint32_t type, const void *body, uint32_t len)
{
	static const uint8_t zero[8];

	put32(b, type);
	put32(b, len);
	if (len)
		put(b, body, len);
	if (len % 8)
		put(b, zero, 8 - len % 8);
}

/* PAGE_DATA: n entries (pfn | type << 32), a page of fill[i] each with data. */
static void
page_rec(struct sb *b, uint32_t n, const uint64_t *pfn, const uint32_t *type,
    const uint8_t *fill)
{
	struct sb body = { 0 };
	uint8_t page[PG];

	put32(&body, n);
	put32(&body, 0);
	for (uint32_t i = 0; i < n; i++)
		put64(&body, pfn[i] | (uint64_t)type[i] << 32);
	for (uint32_t i = 0; i < n; i++) {
		if (type[i] == XCS_TYPE_XTAB || type[i] == XCS_TYPE_XALLOC ||
		    type[i] == XCS_TYPE_BROKEN)
			continue;
		memset(page, fill[i], sizeof(page));
		put(&body, page, sizeof(page));
	}
	rec(b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	free(body.p);
}

static void
tsc_rec(struct sb *b)
{
	struct sb t = { 0 };

	put32(&t, 1);		/* mode */
	put32(&t, 2400000);	/* khz */
	put64(&t, 123456789);	/* nsec */
	put32(&t, 3);		/* incarnation */
	put32(&t, 0);
	rec(b, XCS_REC_X86_TSC_INFO, t.p, (uint32_t)t.len);
	free(t.p);
}

static void
params_rec(struct sb *b)
{
	struct sb t = { 0 };

	put32(&t, 2);
	put32(&t, 0);
	put64(&t, 1);		/* STORE_PFN */
	put64(&t, 0x1e);
	put64(&t, 17);		/* CONSOLE_PFN */
	put64(&t, 0x1f);
	rec(b, XCS_REC_HVM_PARAMS, t.p, (uint32_t)t.len);
	free(t.p);
}

/* The good v3 stream, its parts switchable for the refusals. */
struct good {
	bool	no_sde, no_ctx, pages_before_sde;
	uint32_t version;
};

static void
good_stream(struct sb *b, const struct good *g)
{
	static const uint64_t pfn1[] = { 0x10, 0x11, 0x12, 0x13, 0x14 };
	static const uint32_t type1[] = { XCS_TYPE_NOTAB, XCS_TYPE_XTAB,
	    XCS_TYPE_NOTAB, XCS_TYPE_XALLOC, XCS_TYPE_BROKEN };
	static const uint8_t fill1[] = { 'A', 0, 'B', 0, 0 };
	static const uint64_t pfn2[] = { 0x10, 0x1e, 0x1f };
	static const uint32_t type2[] = { XCS_TYPE_NOTAB, XCS_TYPE_NOTAB,
	    XCS_TYPE_NOTAB };
	static const uint8_t fill2[] = { 'C', 'S', 'K' };
	uint8_t leaf[24] = { 1 }, msr[16] = { 2 }, ctx[12] = "hvm-context";
	uint8_t opt[5] = "12345";

	headers(b, g->version ? g->version : 3);
	if (g->pages_before_sde)
		page_rec(b, 1, pfn2, type2, fill2);
	rec(b, XCS_REC_X86_CPUID_POLICY, leaf, sizeof(leaf));
	rec(b, XCS_REC_X86_MSR_POLICY, msr, sizeof(msr));
	if (!g->no_sde)
		rec(b, XCS_REC_STATIC_DATA_END, NULL, 0);
	page_rec(b, 5, pfn1, type1, fill1);
	rec(b, XCS_REC_OPTIONAL | 0x123, opt, sizeof(opt));
	/* A later round: pfn 0x10 again, the later wins. */
	page_rec(b, 3, pfn2, type2, fill2);
	tsc_rec(b);
	if (!g->no_ctx)
		rec(b, XCS_REC_HVM_CONTEXT, ctx, sizeof(ctx));
	params_rec(b);
	rec(b, XCS_REC_END, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* The fake guest the callbacks fill. */

static struct {
	uint8_t	mem[LIMIT][PG];
	bool	populated[LIMIT];
	uint8_t	*batch;		/* handed out by pages */
	uint64_t batch_pfn[64];
	uint32_t batch_n;
	int	order;		/* calls, in order */
	int	static_at, first_pages_at, end_at;
	uint32_t cpuid_len, msr_len, ctx_len;
	uint8_t	ctx[64];
	struct xcs_tsc tsc;
	uint64_t store, console;
	int	fail_pages;	/* -errno from the nth pages call (1-based) */
	int	pages_calls;
} g;

static struct iovec f_iov[64];

/*
 * later: the pages go straight into the fake guest's memory, which stays,
 * and pages says so (XCS_PAGES_LATER): from a file, the reader may read
 * them on its threads.
 */
static bool later;

/*
 * Each page its own iovec but the first two (one iovec of two pages), as
 * the restorer's windows scatter them.
 */
static int
f_pages(void *u, uint32_t count, const uint64_t *pfns, const uint32_t *types,
    uint32_t nr_data, struct iovec **iov, int *iovcnt, char *why, size_t len)
{
	(void)u;
	g.pages_calls++;
	if (g.first_pages_at == 0)
		g.first_pages_at = ++g.order;
	if (g.fail_pages && g.pages_calls == g.fail_pages) {
		snprintf(why, len, "fake map failure");
		return -EFAULT;
	}
	g.batch_n = 0;
	for (uint32_t i = 0; i < count; i++) {
		assert_true(pfns[i] < LIMIT);
		if (types[i] == XCS_TYPE_XALLOC)
			g.populated[pfns[i]] = true;
		if (types[i] == XCS_TYPE_XTAB || types[i] == XCS_TYPE_XALLOC ||
		    types[i] == XCS_TYPE_BROKEN)
			continue;
		g.batch_pfn[g.batch_n++] = pfns[i];
	}
	assert_int_equal(g.batch_n, nr_data);
	if (later && nr_data) {
		for (uint32_t i = 0; i < nr_data; i++) {
			f_iov[i].iov_base = g.mem[g.batch_pfn[i]];
			f_iov[i].iov_len = PG;
			g.populated[g.batch_pfn[i]] = true;
		}
		*iov = f_iov;
		*iovcnt = (int)nr_data;
		return XCS_PAGES_LATER;
	}
	if (nr_data) {
		int n = 0;

		g.batch = malloc((size_t)nr_data * PG);
		assert_non_null(g.batch);
		for (uint32_t i = 0; i < nr_data; i++) {
			if (n > 0 && i == 1) {
				f_iov[0].iov_len += PG;
				continue;
			}
			f_iov[n].iov_base = g.batch + (size_t)i * PG;
			f_iov[n++].iov_len = PG;
		}
		*iov = f_iov;
		*iovcnt = n;
	}
	return 0;
}

static void
f_pages_done(void *u, uint32_t nr_data, int rc)
{
	(void)u;
	if (later)
		return;
	for (uint32_t i = 0; rc == 0 && i < nr_data; i++) {
		memcpy(g.mem[g.batch_pfn[i]], g.batch + (size_t)i * PG, PG);
		g.populated[g.batch_pfn[i]] = true;
	}
	free(g.batch);
	g.batch = NULL;
}

static int
f_static(void *u, const void *cpuid, uint32_t cpuid_len, const void *msr,
    uint32_t msr_len, char *why, size_t len)
{
	(void)u, (void)why, (void)len;
	g.static_at = ++g.order;
	g.cpuid_len = cpuid_len;
	g.msr_len = msr_len;
	assert_true(cpuid_len == 0 || ((const uint8_t *)cpuid)[0] == 1);
	assert_true(msr_len == 0 || ((const uint8_t *)msr)[0] == 2);
	return 0;
}

static int
f_tsc(void *u, const struct xcs_tsc *t, char *why, size_t len)
{
	(void)u, (void)why, (void)len;
	g.tsc = *t;
	return 0;
}

static int
f_params(void *u, uint32_t count, const uint64_t *index,
    const uint64_t *value, char *why, size_t len)
{
	(void)u, (void)why, (void)len;
	for (uint32_t i = 0; i < count; i++) {
		if (index[i] == 1)
			g.store = value[i];
		if (index[i] == 17)
			g.console = value[i];
	}
	return 0;
}

static int
f_end(void *u, const void *ctx, uint32_t ctx_len, char *why, size_t len)
{
	(void)u, (void)why, (void)len;
	g.end_at = ++g.order;
	g.ctx_len = ctx_len;
	assert_true(ctx_len <= sizeof(g.ctx));
	memcpy(g.ctx, ctx, ctx_len);
	return 0;
}

static const struct xcs_ops ops = {
	.pages = f_pages, .pages_done = f_pages_done, .static_data = f_static,
	.tsc = f_tsc, .hvm_params = f_params, .end = f_end,
};

/* The stream in a file (and trailing bytes after it); read from offset 0. */
static int
run(const struct sb *b, size_t cut, const void *tail, size_t tail_len,
    struct xcs_stats *st, char *why, size_t why_len, off_t *end_off)
{
	FILE *f = tmpfile();
	int rc;

	assert_non_null(f);
	memset(&g, 0, sizeof(g));
	if (cut)
		assert_int_equal(fwrite(b->p, 1, cut, f), cut);
	if (tail_len)
		assert_int_equal(fwrite(tail, 1, tail_len, f), tail_len);
	fflush(f);
	assert_int_equal(lseek(fileno(f), 0, SEEK_SET), 0);
	rc = vmb__xcs_read(fileno(f), LIMIT, &ops, NULL, st, why, why_len);
	if (end_off)
		*end_off = lseek(fileno(f), 0, SEEK_CUR);
	fclose(f);
	free(g.batch);
	g.batch = NULL;
	return rc;
}

static int
run_all(const struct sb *b, char *why, size_t why_len)
{
	return run(b, b->len, NULL, 0, NULL, why, why_len, NULL);
}

/* ------------------------------------------------------------------ */

static void
test_good(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	struct xcs_stats st;
	char why[256];
	off_t end;
	int rc;

	(void)state;
	good_stream(&b, &gd);
	/* Bytes after END are not the reader's. */
	rc = run(&b, b.len, "TRAILING", 8, &st, why, sizeof(why), &end);
	assert_int_equal(rc, 0);
	assert_string_equal(why, "");
	assert_int_equal(end, (off_t)b.len);
	assert_int_equal(st.bytes, b.len);
	assert_int_equal(st.version, 3);
	assert_int_equal(st.xen_major, 4);
	assert_int_equal(st.xen_minor, 17);
	assert_int_equal(st.page_records, 2);
	assert_int_equal(st.pfns, 8);
	assert_int_equal(st.pages, 5);
	assert_int_equal(st.records, 10);
	/* The later 0x10 won; XTAB and BROKEN untouched; XALLOC populated. */
	assert_int_equal(g.mem[0x10][0], 'C');
	assert_int_equal(g.mem[0x10][PG - 1], 'C');
	assert_int_equal(g.mem[0x12][7], 'B');
	assert_int_equal(g.mem[0x1e][0], 'S');
	assert_int_equal(g.mem[0x1f][0], 'K');
	assert_false(g.populated[0x11]);
	assert_true(g.populated[0x13]);
	assert_false(g.populated[0x14]);
	assert_int_equal(g.mem[0x11][0], 0);
	/* Static data before the pages, END last with the context. */
	assert_int_equal(g.cpuid_len, 24);
	assert_int_equal(g.msr_len, 16);
	assert_true(g.static_at < g.first_pages_at);
	assert_true(g.first_pages_at < g.end_at);
	assert_int_equal(g.ctx_len, 12);
	assert_memory_equal(g.ctx, "hvm-context", 12);
	assert_int_equal(g.tsc.mode, 1);
	assert_int_equal(g.tsc.khz, 2400000);
	assert_int_equal(g.tsc.nsec, 123456789);
	assert_int_equal(g.tsc.incarnation, 3);
	assert_int_equal(g.store, 0x1e);
	assert_int_equal(g.console, 0x1f);
	free(b.p);
}

/* v2: no STATIC_DATA_END; its place is before the first PAGE_DATA. */
static void
test_v2_infers_static_data_end(void **state)
{
	struct good gd = { .no_sde = true, .version = 2 };
	struct sb b = { 0 };
	char why[256];

	(void)state;
	good_stream(&b, &gd);
	assert_int_equal(run_all(&b, why, sizeof(why)), 0);
	assert_true(g.static_at > 0 && g.static_at < g.first_pages_at);
	assert_int_equal(g.mem[0x10][0], 'C');
	/* v3 without it: PAGE_DATA refused. */
	free(b.p);
	memset(&b, 0, sizeof(b));
	gd.version = 3;
	good_stream(&b, &gd);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "before STATIC_DATA_END"));
	assert_non_null(strstr(why, "PAGE_DATA"));
	free(b.p);
}

/* Cut anywhere, the stream fails: never a success, never a crash. */
static void
test_truncated(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	char why[256];

	(void)state;
	good_stream(&b, &gd);
	for (size_t cut = 0; cut < b.len; cut++) {
		int rc = run(&b, cut, NULL, 0, NULL, why, sizeof(why), NULL);

		if (rc != -EIO)
			fail_msg("cut at %zu: rc %d (%s)", cut, rc, why);
		assert_non_null(strstr(why, "truncated"));
		assert_int_equal(g.end_at, 0);
	}
	free(b.p);
}

static void
test_bad_headers(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	char why[256];

	(void)state;
	good_stream(&b, &gd);
	b.p[0] = 0xfe;				/* marker */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "marker"));
	b.p[0] = 0xff;
	b.p[8] = 'Y';				/* id */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "id "));
	b.p[8] = 0x58;
	b.p[15] = 4;				/* version 4 */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "version 4"));
	b.p[15] = 3;
	b.p[17] = 1;				/* big-endian */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "big-endian"));
	b.p[17] = 0;
	b.p[24] = 1;				/* x86 PV */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "PV"));
	b.p[24] = 2;
	b.p[28] = 16;				/* page_shift */
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "page_shift"));
	b.p[28] = 12;
	assert_int_equal(run_all(&b, why, sizeof(why)), 0);
	free(b.p);
}

/* A stream of headers, STATIC_DATA_END, then one record made by hand. */
static void
one_record(struct sb *b, uint32_t type, const void *body, uint32_t len)
{
	headers(b, 3);
	rec(b, XCS_REC_STATIC_DATA_END, NULL, 0);
	rec(b, type, body, len);
}

static void
test_page_data_bounds(void **state)
{
	struct sb b = { 0 };
	struct sb body = { 0 };
	char why[256];
	uint8_t page[PG] = { 0 };

	(void)state;
	/* count 1000 in a record with room for 1 pfn */
	put32(&body, 1000);
	put32(&body, 0);
	put64(&body, 0x10);
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "count 1000"));
	assert_non_null(strstr(why, "record 1 (PAGE_DATA"));
	assert_non_null(strstr(why, "offset 48"));
	assert_int_equal(g.pages_calls, 0);
	/* count beyond the batch bound, whatever the length */
	free(b.p), memset(&b, 0, sizeof(b));
	body.len = 0;
	put32(&body, XCS_BATCH_MAX + 1);
	put32(&body, 0);
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "over 65536"));
	/* count 0 */
	free(b.p), memset(&b, 0, sizeof(b));
	body.len = 0;
	put32(&body, 0);
	put32(&body, 0);
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "count 0"));
	/* a pfn beyond the guest's limit */
	free(b.p), memset(&b, 0, sizeof(b));
	body.len = 0;
	put32(&body, 1);
	put32(&body, 0);
	put64(&body, LIMIT);
	put(&body, page, sizeof(page));
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "beyond the guest's limit"));
	/* an unknown page type (0x5 << 28) */
	free(b.p), memset(&b, 0, sizeof(b));
	body.len = 0;
	put32(&body, 1);
	put32(&body, 0);
	put64(&body, 0x10 | (uint64_t)0x50000000u << 32);
	put(&body, page, sizeof(page));
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "unknown type"));
	/* one page more than its pfns have data for */
	free(b.p), memset(&b, 0, sizeof(b));
	body.len = 0;
	put32(&body, 1);
	put32(&body, 0);
	put64(&body, 0x10);
	put(&body, page, sizeof(page));
	put(&body, page, sizeof(page));
	one_record(&b, XCS_REC_PAGE_DATA, body.p, (uint32_t)body.len);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "pages of data make"));
	assert_int_equal(g.pages_calls, 0);
	free(body.p);
	free(b.p);
}

static void
test_refused_records(void **state)
{
	static const struct { uint32_t type; const char *says; } cases[] = {
		{ 0x77, "unknown mandatory" },
		{ XCS_REC_X86_PV_INFO, "not for a PVH" },
		{ XCS_REC_TOOLSTACK, "not for a PVH" },
		{ XCS_REC_CHECKPOINT, "not for a PVH" },
		{ XCS_REC_VERIFY, "not for a PVH" },
	};
	uint8_t body[8] = { 0 };
	char why[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sb b = { 0 };

		one_record(&b, cases[i].type, body, sizeof(body));
		assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
		assert_non_null(strstr(why, cases[i].says));
		assert_non_null(strstr(why, "record 1 "));
		free(b.p);
	}
}

static void
test_lengths_and_order(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	uint8_t body[40] = { 0 };
	char why[256];

	(void)state;
	/* a record over 128 MiB: refused before anything is read */
	headers(&b, 3);
	put32(&b, XCS_REC_OPTIONAL | 0x99);
	put32(&b, XCS_REC_LENGTH_MAX + 1);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "over the spec's"));
	free(b.p), memset(&b, 0, sizeof(b));
	/* TSC of the wrong size; END with a body; HVM_PARAMS miscounted */
	one_record(&b, XCS_REC_X86_TSC_INFO, body, 16);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not 24"));
	free(b.p), memset(&b, 0, sizeof(b));
	one_record(&b, XCS_REC_END, body, 8);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "not 0"));
	free(b.p), memset(&b, 0, sizeof(b));
	body[0] = 3;	/* count 3, 2 entries */
	one_record(&b, XCS_REC_HVM_PARAMS, body, 40);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "count 3"));
	free(b.p), memset(&b, 0, sizeof(b));
	/* a CPUID policy not a multiple of its leaves */
	headers(&b, 3);
	rec(&b, XCS_REC_X86_CPUID_POLICY, body, 20);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "multiple of 24"));
	free(b.p), memset(&b, 0, sizeof(b));
	/* static data after STATIC_DATA_END */
	one_record(&b, XCS_REC_X86_MSR_POLICY, body, 16);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "after STATIC_DATA_END"));
	free(b.p), memset(&b, 0, sizeof(b));
	/* PAGE_DATA before STATIC_DATA_END in v3 */
	gd.pages_before_sde = true;
	good_stream(&b, &gd);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "before STATIC_DATA_END"));
	free(b.p), memset(&b, 0, sizeof(b));
	/* END without HVM_CONTEXT */
	gd.pages_before_sde = false;
	gd.no_ctx = true;
	good_stream(&b, &gd);
	assert_int_equal(run_all(&b, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "without an HVM_CONTEXT"));
	assert_int_equal(g.end_at, 0);
	free(b.p);
}

/* A callback's failure stops the stream with its why, said of the record. */
static void
test_callback_failure(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	char why[256];
	int rc;

	(void)state;
	good_stream(&b, &gd);
	memset(&g, 0, sizeof(g));
	{
		FILE *f = tmpfile();

		assert_non_null(f);
		assert_int_equal(fwrite(b.p, 1, b.len, f), b.len);
		fflush(f);
		lseek(fileno(f), 0, SEEK_SET);
		g.fail_pages = 2;
		rc = vmb__xcs_read(fileno(f), LIMIT, &ops, NULL, NULL, why,
		    sizeof(why));
		fclose(f);
	}
	assert_int_equal(rc, -EFAULT);
	assert_non_null(strstr(why, "fake map failure"));
	assert_non_null(strstr(why, "record 5 (PAGE_DATA"));
	assert_int_equal(g.end_at, 0);
	free(b.p);
}

/* The good stream read by the reader threads: the same guest results. */
static void
test_good_later(void **state)
{
	struct good gd = { 0 };
	struct sb b = { 0 };
	struct xcs_stats st;
	char why[256];
	off_t end;

	(void)state;
	later = true;
	good_stream(&b, &gd);
	assert_int_equal(run(&b, b.len, "TRAILING", 8, &st, why, sizeof(why),
	    &end), 0);
	assert_string_equal(why, "");
	assert_int_equal(end, (off_t)b.len);
	assert_int_equal(st.bytes, b.len);
	assert_int_equal(st.pages, 5);
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		assert_true(st.readers >= 1);
		assert_int_equal(st.pages_later, 5);
	}
	/* pfn 0x10's second round won, read after the first. */
	assert_int_equal(g.mem[0x10][0], 'C');
	assert_int_equal(g.mem[0x10][PG - 1], 'C');
	assert_int_equal(g.mem[0x12][7], 'B');
	assert_int_equal(g.mem[0x1e][0], 'S');
	assert_int_equal(g.mem[0x1f][PG - 1], 'K');
	assert_true(g.first_pages_at < g.end_at);
	/* Cut anywhere: truncated, said once, END never reached. */
	for (size_t cut = 0; cut < b.len; cut += 8) {
		int rc = run(&b, cut, NULL, 0, NULL, why, sizeof(why), NULL);

		if (rc != -EIO)
			fail_msg("cut at %zu: rc %d (%s)", cut, rc, why);
		assert_non_null(strstr(why, "truncated"));
		assert_int_equal(g.end_at, 0);
	}
	later = false;
	free(b.p);
}

/*
 * Many PAGE_DATA records, pfns sent again and again (more than the
 * readers' queue holds between two of the same pfn, and fewer): each
 * page holds what the last record that sent it said, read from a file
 * (on the reader threads) and from a pipe (here, in order).
 */
#define MANY_RECS	300
static void
many_stream(struct sb *b, uint8_t want[LIMIT])
{
	uint8_t leaf[24] = { 1 }, ctx[12] = "hvm-context";
	uint32_t seed = 12345;

	memset(want, 0, LIMIT);
	headers(b, 3);
	rec(b, XCS_REC_X86_CPUID_POLICY, leaf, sizeof(leaf));
	rec(b, XCS_REC_STATIC_DATA_END, NULL, 0);
	for (int i = 0; i < MANY_RECS; i++) {
		uint64_t pfn[3];
		uint32_t type[3] = { XCS_TYPE_NOTAB, XCS_TYPE_NOTAB,
		    XCS_TYPE_NOTAB };
		uint8_t fill[3];
		uint32_t n = 1 + (uint32_t)i % 3;

		for (uint32_t k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			/* Mostly distinct pfns, now and then one again. */
			pfn[k] = (i % 7 == 0 ? (seed >> 16) % 4 :
			    (uint64_t)((i * 3 + (int)k) % 0x1c));
			if (k > 0 && pfn[k] == pfn[k - 1])
				pfn[k] = (pfn[k] + 1) % 0x1c;
			if (k > 1 && pfn[k] == pfn[0])
				pfn[k] = (pfn[k] + 1) % 0x1c;
			fill[k] = (uint8_t)(1 + (i * 3 + (int)k) % 251);
			want[pfn[k]] = fill[k];
		}
		page_rec(b, n, pfn, type, fill);
	}
	rec(b, XCS_REC_HVM_CONTEXT, ctx, sizeof(ctx));
	rec(b, XCS_REC_END, NULL, 0);
}

static void
test_many_later(void **state)
{
	struct sb b = { 0 };
	struct xcs_stats st;
	uint8_t want[LIMIT];
	char why[256];
	int fds[2];
	pid_t pid;

	(void)state;
	many_stream(&b, want);
	later = true;
	/* One reader keeps the order by itself: more than one, each run. */
	for (int n = 1; n <= 4; n++) {
		char v[16];

		snprintf(v, sizeof(v), "%d", n);
		assert_int_equal(setenv("VMBUILD_RESTORE_READERS", v, 1), 0);
		assert_int_equal(run(&b, b.len, NULL, 0, &st, why, sizeof(why),
		    NULL), 0);
		assert_int_equal(st.readers, n);
		assert_int_equal(st.page_records, MANY_RECS);
		assert_int_equal(st.pages_later, st.pages);
		for (uint32_t p = 0; p < LIMIT; p++) {
			if (g.mem[p][0] != want[p] ||
			    g.mem[p][PG - 1] != want[p])
				fail_msg("file, %d readers: pfn %#x holds %u, "
				    "want %u", n, p, g.mem[p][0], want[p]);
		}
	}
	/* 0: none; anything but 0 to 16: refused, by name. */
	assert_int_equal(setenv("VMBUILD_RESTORE_READERS", "0", 1), 0);
	assert_int_equal(run(&b, b.len, NULL, 0, &st, why, sizeof(why), NULL),
	    0);
	assert_int_equal(st.readers, 0);
	assert_int_equal(g.mem[0][PG - 1], want[0]);
	for (int i = 0; i < 3; i++) {
		static const char *const badv[] = { "17", "two", "-1" };

		assert_int_equal(setenv("VMBUILD_RESTORE_READERS", badv[i], 1),
		    0);
		assert_int_equal(run(&b, b.len, NULL, 0, &st, why,
		    sizeof(why), NULL), -EINVAL);
		assert_non_null(strstr(why, "VMBUILD_RESTORE_READERS"));
		assert_non_null(strstr(why, badv[i]));
		assert_int_equal(g.end_at, 0);
	}
	assert_int_equal(unsetenv("VMBUILD_RESTORE_READERS"), 0);
	/* From a pipe: no reader threads, the same result. */
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		size_t off = 0;

		close(fds[0]);
		while (off < b.len) {
			ssize_t n = write(fds[1], b.p + off, b.len - off);

			if (n <= 0)
				_exit(1);
			off += (size_t)n;
		}
		_exit(0);
	}
	close(fds[1]);
	memset(&g, 0, sizeof(g));
	assert_int_equal(vmb__xcs_read(fds[0], LIMIT, &ops, NULL, &st, why,
	    sizeof(why)), 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(st.readers, 0);
	assert_int_equal(st.pages_later, 0);
	for (uint32_t p = 0; p < LIMIT; p++)
		assert_int_equal(g.mem[p][PG - 1], want[p]);
	later = false;
	free(b.p);
}

/*
 * The restorer's windows, played: the fake guest's memory seen through
 * three windows of four pages each, mapped (a buffer of their own, filled
 * from the guest) when a pfn needs one and unmapped (copied back, then
 * freed) to make room for another, the least recently used.  Pages go
 * into the windows to be read later (XCS_PAGES_LATER); a window is
 * unmapped only after the reader has finished every read handed out
 * (XCS_PAGES_DRAIN), or a read would land in freed memory.
 */
#define W_PAGES	4
#define W_MAX	3	/* a record of many_stream spans 3 at most */
static struct {
	uint8_t	*buf[W_MAX];
	uint64_t base[W_MAX], used[W_MAX], tick;
	bool	pending;	/* pages handed out since the last drain */
	int	drains, evictions;
	bool	always_drain;	/* misbehave: DRAIN every time */
} w;

static void
w_unmap(int i)
{
	memcpy(g.mem[w.base[i]], w.buf[i], (size_t)W_PAGES * PG);
	free(w.buf[i]);
	w.buf[i] = NULL;
}

static int
w_pages(void *u, uint32_t count, const uint64_t *pfns, const uint32_t *types,
    uint32_t nr_data, struct iovec **iov, int *iovcnt, char *why, size_t len)
{
	uint32_t d = 0;

	(void)u, (void)why, (void)len;
	if (w.always_drain)
		return XCS_PAGES_DRAIN;
	for (uint32_t k = 0; k < count; k++) {
		uint64_t base = pfns[k] & ~(uint64_t)(W_PAGES - 1);
		int i, lru = 0;

		if (types[k] == XCS_TYPE_XTAB || types[k] == XCS_TYPE_XALLOC ||
		    types[k] == XCS_TYPE_BROKEN)
			continue;
		for (i = 0; i < W_MAX; i++)
			if (w.buf[i] != NULL && w.base[i] == base)
				break;
		if (i == W_MAX) {
			for (i = 0; i < W_MAX && w.buf[i] != NULL; i++)
				;
			if (i == W_MAX) {
				for (int j = 1; j < W_MAX; j++)
					if (w.used[j] < w.used[lru])
						lru = j;
				if (w.pending) {
					w.pending = false;
					w.drains++;
					return XCS_PAGES_DRAIN;
				}
				w_unmap(lru);
				w.evictions++;
				i = lru;
			}
			w.buf[i] = malloc((size_t)W_PAGES * PG);
			assert_non_null(w.buf[i]);
			w.base[i] = base;
			memcpy(w.buf[i], g.mem[base], (size_t)W_PAGES * PG);
		}
		w.used[i] = ++w.tick;
		f_iov[d].iov_base = w.buf[i] + (pfns[k] - base) * PG;
		f_iov[d++].iov_len = PG;
	}
	assert_int_equal(d, nr_data);
	*iov = f_iov;
	*iovcnt = (int)d;
	w.pending = true;
	return XCS_PAGES_LATER;
}

static const struct xcs_ops w_ops = { .pages = w_pages, .end = f_end };

static int
w_run(const struct sb *b, struct xcs_stats *st, char *why, size_t why_len)
{
	FILE *f = tmpfile();
	int rc;

	assert_non_null(f);
	memset(&g, 0, sizeof(g));
	assert_int_equal(fwrite(b->p, 1, b->len, f), b->len);
	fflush(f);
	assert_int_equal(lseek(fileno(f), 0, SEEK_SET), 0);
	rc = vmb__xcs_read(fileno(f), LIMIT, &w_ops, NULL, st, why, why_len);
	fclose(f);
	for (int i = 0; i < W_MAX; i++)
		if (w.buf[i] != NULL)
			w_unmap(i);
	return rc;
}

static void
test_windows_drain(void **state)
{
	struct sb b = { 0 };
	struct xcs_stats st;
	uint8_t want[LIMIT];
	char why[256];

	(void)state;
	many_stream(&b, want);
	for (int n = 1; n <= 4; n++) {
		char v[16];

		snprintf(v, sizeof(v), "%d", n);
		assert_int_equal(setenv("VMBUILD_RESTORE_READERS", v, 1), 0);
		memset(&w, 0, sizeof(w));
		assert_int_equal(w_run(&b, &st, why, sizeof(why)), 0);
		assert_int_equal(st.pages_later, st.pages);
		assert_true(w.drains > 0 && w.evictions >= w.drains);
		for (uint32_t p = 0; p < 0x1c; p++) {
			if (g.mem[p][0] != want[p] ||
			    g.mem[p][PG - 1] != want[p])
				fail_msg("%d readers: pfn %#x holds %u, want %u",
				    n, p, g.mem[p][0], want[p]);
		}
	}
	assert_int_equal(unsetenv("VMBUILD_RESTORE_READERS"), 0);
	/* A callback that asks again after the drain fails the stream. */
	memset(&w, 0, sizeof(w));
	w.always_drain = true;
	assert_int_equal(w_run(&b, &st, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "asked twice"));
	assert_non_null(strstr(why, "PAGE_DATA"));
	free(b.p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_v2_infers_static_data_end),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_page_data_bounds),
		cmocka_unit_test(test_refused_records),
		cmocka_unit_test(test_lengths_and_order),
		cmocka_unit_test(test_callback_failure),
		cmocka_unit_test(test_good_later),
		cmocka_unit_test(test_many_later),
		cmocka_unit_test(test_windows_drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
