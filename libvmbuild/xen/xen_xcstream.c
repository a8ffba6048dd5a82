/*
 * xen_xcstream.c - libxc's migration stream v2/v3 read for an x86 HVM
 * (PVH) guest (xen_xcstream.h).  The layout, from Xen's
 * docs/specs/libxc-migration-stream.pandoc:
 *
 *   image header, 24 octets: marker (8 x 0xff), id "XENF" (0x58454e46),
 *     version (2 or 3), options (bit 0: big-endian), reserved; id,
 *     version and options in network byte order;
 *   domain header, 16 octets: type (2: x86 HVM), page_shift (12),
 *     reserved, xen_major, xen_minor;
 *   records: type and length (4 octets each), the body, padded to 8
 *     octets; the body at most 128 MiB.  A type with bit 31 set is
 *     optional: one not understood is skipped; any other not understood
 *     fails the stream.
 *
 * The body of what an HVM stream carries, all little-endian:
 *   PAGE_DATA: count (>= 1), reserved, count pfn entries (pfn in bits
 *     0-51, type in 60-63), then a page for each entry whose type has
 *     data (not XTAB, XALLOC or BROKEN), in order.  The same pfn may come
 *     again (a live stream's later rounds): the later wins.
 *   X86_TSC_INFO: mode, khz, nsec, incarnation, reserved (24 octets).
 *   HVM_CONTEXT: the blob for XEN_DOMCTL_sethvmcontext, applied at END.
 *   HVM_PARAMS: count, reserved, count (index, value) pairs.
 *   X86_CPUID_POLICY, X86_MSR_POLICY: arrays of 24 and 16 octet
 *     entries (non-empty), static data: before STATIC_DATA_END.
 *   STATIC_DATA_END: empty, once, before any PAGE_DATA; a v2 stream may
 *     lack it, and then it is where the first PAGE_DATA is.
 *   END: empty, the last.
 * The PV records, TOOLSTACK, VERIFY and the checkpoint (COLO/Remus)
 * records are refused: a PVH guest's plain or live stream has none.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "xen_xcstream.h"

#define IHDR_MARKER	0xffffffffffffffffull
#define IHDR_ID		0x58454e46u
#define DHDR_TYPE_X86_HVM 2u
#define CPUID_LEAF_SIZE	24u	/* xen_cpuid_leaf_t */
#define MSR_ENTRY_SIZE	16u	/* xen_msr_entry_t */

/*
 * Readers: from a regular file, a PAGE_DATA record whose pages go to
 * memory that stays (the pages callback returned XCS_PAGES_LATER) is
 * read on a thread of its own, by pread at the record's offset, while
 * this one goes on to the next record's header, pfns and mappings.  The
 * copy from the page cache into the guest's pages is most of a restore's
 * time, and one thread copies at one CPU's speed.  Every read is done
 * before any other record is handled (END applies the HVM context) and
 * before the reader returns, failed or not; a pfn whose data comes again
 * waits for the reads before it (the later must win).
 */
#define POOL_MAX	16	/* threads, at most (VMBUILD_RESTORE_READERS) */
#define POOL_DEFAULT	4	/* by default, at most (and a CPU left) */
#define POOL_QUEUE	16	/* records queued */

struct job {
	uint64_t	off;		/* in the file */
	struct iovec	*iov;		/* the job's own copy */
	int		cnt;
	uint32_t	index;		/* the record's, for the message */
	uint64_t	rec_off;
};

struct pool {
	pthread_mutex_t	mu;
	pthread_cond_t	more;		/* a job queued, or stop */
	pthread_cond_t	less;		/* a job done */
	struct job	q[POOL_QUEUE];
	unsigned	head, n;	/* queued, from q[head] */
	unsigned	busy;		/* taken, being read */
	bool		stop;
	int		fd;
	int		nthreads;
	pthread_t	t[POOL_MAX];
	/* The first failure: its rc, record and text. */
	int		rc;
	uint32_t	bad_index;
	uint64_t	bad_off;
	char		bad_why[160];
	/* A bit per pfn whose data was handed out since the last drain,
	 * set between pfns seen_lo and seen_hi (none: lo > hi). */
	uint8_t		*seen;
	uint64_t	seen_lo, seen_hi;
};

struct rd {
	int		fd;
	uint64_t	base;		/* the fd's offset where the stream began */
	struct pool	*pool;		/* NULL: every read on this thread */
	int		readers;	/* for the pool, started when asked */
	uint64_t	pfn_limit;
	uint64_t	wait_ns;	/* this thread's waits for the readers */
	uint64_t	off;		/* of the stream read so far */
	uint32_t	index;		/* the record's (0: the first) */
	uint32_t	type;		/* the record's */
	uint64_t	rec_off;	/* where its header was */
	char		*why;
	size_t		len;
	/* The record's body, grown as needed. */
	uint8_t		*buf;
	size_t		buf_size;
	/* Static data kept for STATIC_DATA_END, and the last HVM context. */
	uint8_t		*cpuid, *msr, *ctx;
	uint32_t	cpuid_len, msr_len, ctx_len;
	/* One PAGE_DATA's entries. */
	uint64_t	*pfns;
	uint32_t	*types;
	uint32_t	batch_size;
};

static const char *const rec_names[] = {
	[XCS_REC_END] = "END",
	[XCS_REC_PAGE_DATA] = "PAGE_DATA",
	[XCS_REC_X86_PV_INFO] = "X86_PV_INFO",
	[XCS_REC_X86_PV_P2M_FRAMES] = "X86_PV_P2M_FRAMES",
	[XCS_REC_X86_PV_VCPU_BASIC] = "X86_PV_VCPU_BASIC",
	[XCS_REC_X86_PV_VCPU_EXTENDED] = "X86_PV_VCPU_EXTENDED",
	[XCS_REC_X86_PV_VCPU_XSAVE] = "X86_PV_VCPU_XSAVE",
	[XCS_REC_SHARED_INFO] = "SHARED_INFO",
	[XCS_REC_X86_TSC_INFO] = "X86_TSC_INFO",
	[XCS_REC_HVM_CONTEXT] = "HVM_CONTEXT",
	[XCS_REC_HVM_PARAMS] = "HVM_PARAMS",
	[XCS_REC_TOOLSTACK] = "TOOLSTACK",
	[XCS_REC_X86_PV_VCPU_MSRS] = "X86_PV_VCPU_MSRS",
	[XCS_REC_VERIFY] = "VERIFY",
	[XCS_REC_CHECKPOINT] = "CHECKPOINT",
	[XCS_REC_CHECKPOINT_DIRTY_PFN_LIST] = "CHECKPOINT_DIRTY_PFN_LIST",
	[XCS_REC_STATIC_DATA_END] = "STATIC_DATA_END",
	[XCS_REC_X86_CPUID_POLICY] = "X86_CPUID_POLICY",
	[XCS_REC_X86_MSR_POLICY] = "X86_MSR_POLICY",
};

const char *
vmb__xcs_rec_name(uint32_t type)
{
	if (type < sizeof(rec_names) / sizeof(rec_names[0]) &&
	    rec_names[type] != NULL)
		return rec_names[type];
	return "unknown";
}

/* The failure, said of the record being read (or of the headers). */
static int __attribute__((format(printf, 3, 4)))
bad(struct rd *r, int rc, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->index == UINT32_MAX)
		snprintf(r->why, r->len, "libxc stream: %s", msg);
	else
		snprintf(r->why, r->len, "libxc stream: record %u (%s, type "
		    "%#x) at offset %llu: %s", r->index,
		    vmb__xcs_rec_name(r->type & ~XCS_REC_OPTIONAL), r->type,
		    (unsigned long long)r->rec_off, msg);
	return rc;
}

/* A callback's failure: its why, said of the record. */
static int
cb_failed(struct rd *r, int rc, const char *cbwhy)
{
	return bad(r, rc, "%s", cbwhy[0] ? cbwhy : strerror(-rc));
}

/* Exactly len bytes, or -EIO (the end came early) or -errno. */
static int
read_exact(struct rd *r, void *p, size_t len, const char *what)
{
	uint8_t *b = p;

	while (len > 0) {
		ssize_t n = read(r->fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			return bad(r, rc, "reading %s: %s", what,
			    strerror(-rc));
		}
		if (n == 0)
			return bad(r, -EIO, "truncated: the stream ended "
			    "within %s (%zu bytes short)", what, len);
		b += n;
		len -= (size_t)n;
		r->off += (uint64_t)n;
	}
	return 0;
}

/*
 * The page data into iov (changed as it fills): from the fd's offset
 * (off < 0) or from off (pread).  *got counts what was read.  0, or
 * -EIO (the end came early) or -errno, with why.
 */
static int
fill_iov(int fd, struct iovec *iov, int cnt, int64_t off, uint64_t *got,
    char *why, size_t len)
{
	while (cnt > 0) {
		int c = cnt < IOV_MAX ? cnt : IOV_MAX;
		ssize_t n = off < 0 ? readv(fd, iov, c) :
		    preadv(fd, iov, c, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int rc = -errno;

			snprintf(why, len, "reading the page data: %s",
			    strerror(-rc));
			return rc;
		}
		if (n == 0) {
			snprintf(why, len, "truncated: the stream ended "
			    "within the page data");
			return -EIO;
		}
		*got += (uint64_t)n;
		if (off >= 0)
			off += n;
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* The page data into iov at the fd's offset, as read_exact. */
static int
read_iov(struct rd *r, struct iovec *iov, int cnt)
{
	char why[160];
	int rc = fill_iov(r->fd, iov, cnt, -1, &r->off, why, sizeof(why));

	return rc < 0 ? bad(r, rc, "%s", why) : 0;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A job's pages, read at its offset: 0, or -errno with why. */
static int
job_read(int fd, struct job *j, char *why, size_t len)
{
	uint64_t got = 0;

	return fill_iov(fd, j->iov, j->cnt, (int64_t)j->off, &got, why, len);
}

static void *
pool_thread(void *arg)
{
	struct pool *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct job j;
		char why[160] = "";
		int rc = 0;

		while (p->n == 0 && !p->stop)
			pthread_cond_wait(&p->more, &p->mu);
		if (p->n == 0)
			break;
		j = p->q[p->head];
		p->head = (p->head + 1) % POOL_QUEUE;
		p->n--;
		p->busy++;
		/* After a failure the rest is not read: it fails anyway. */
		if (p->rc == 0) {
			pthread_mutex_unlock(&p->mu);
			rc = job_read(p->fd, &j, why, sizeof(why));
			pthread_mutex_lock(&p->mu);
		}
		free(j.iov);
		if (rc < 0 && p->rc == 0) {
			p->rc = rc;
			p->bad_index = j.index;
			p->bad_off = j.rec_off;
			snprintf(p->bad_why, sizeof(p->bad_why), "%s", why);
		}
		p->busy--;
		pthread_cond_broadcast(&p->less);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int
vmb__xcs_readers(void)
{
	const char *v = getenv(XCS_READERS_ENV);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char *end;
	long n;

	if (v != NULL) {
		errno = 0;
		n = strtol(v, &end, 10);
		if (errno != 0 || end == v || *end != '\0' || n < 0 ||
		    n > POOL_MAX)
			return -EINVAL;
		return (int)n;
	}
	if (cpus <= 1)
		return 0;
	return (int)(cpus - 1 < POOL_DEFAULT ? cpus - 1 : POOL_DEFAULT);
}

/*
 * Readers (n threads) for fd when it is a regular file; NULL: none,
 * every read here.
 */
static struct pool *
pool_start(int fd, uint64_t pfn_limit, int n)
{
	struct stat sb;
	struct pool *p;

	if (n <= 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->seen_lo = UINT64_MAX;
	if ((p->seen = calloc(pfn_limit / 8 + 1, 1)) == NULL) {
		free(p);
		return NULL;
	}
	p->fd = fd;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->less, NULL);
	for (int i = 0; i < n; i++) {
		if (pthread_create(&p->t[i], NULL, pool_thread, p) != 0)
			break;
		p->nthreads++;
	}
	if (p->nthreads > 0)
		return p;
	pthread_cond_destroy(&p->less);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->mu);
	free(p->seen);
	free(p);
	return NULL;
}

/*
 * Every read handed out done; the first failure (-errno, said of its
 * record unless quiet: the caller has its own to say), else 0.  The
 * pfns seen are forgotten: nothing is pending.
 */
static int
pool_wait(struct rd *r, bool quiet)
{
	struct pool *p = r->pool;
	uint64_t t0;
	int rc;

	if (p == NULL)
		return 0;
	t0 = now_ns();
	pthread_mutex_lock(&p->mu);
	while (p->n > 0 || p->busy > 0)
		pthread_cond_wait(&p->less, &p->mu);
	rc = p->rc;
	pthread_mutex_unlock(&p->mu);
	r->wait_ns += now_ns() - t0;
	if (p->seen_lo <= p->seen_hi)
		memset(p->seen + p->seen_lo / 8, 0,
		    (size_t)(p->seen_hi / 8 - p->seen_lo / 8 + 1));
	p->seen_lo = UINT64_MAX;
	p->seen_hi = 0;
	if (rc < 0 && !quiet)
		snprintf(r->why, r->len, "libxc stream: record %u (PAGE_DATA) "
		    "at offset %llu: %s", p->bad_index,
		    (unsigned long long)p->bad_off, p->bad_why);
	return rc;
}

static int
pool_drain(struct rd *r)
{
	return pool_wait(r, false);
}

/* The readers drained and gone: rc when it failed, else theirs. */
static int
pool_stop(struct rd *r, int rc)
{
	struct pool *p = r->pool;
	int drc;

	if (p == NULL)
		return rc;
	drc = pool_wait(r, rc < 0);
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->t[i], NULL);
	pthread_cond_destroy(&p->less);
	pthread_cond_destroy(&p->more);
	pthread_mutex_destroy(&p->mu);
	free(p->seen);
	free(p);
	r->pool = NULL;
	return rc < 0 ? rc : drc;
}

/*
 * The data pfns of a record marked seen (pass 1); when one was already
 * (pass 0: its earlier data may be read still), every read drains first.
 */
static int
pool_order(struct rd *r, uint32_t count)
{
	struct pool *p = r->pool;
	bool again = false;

	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < count; i++) {
			uint64_t pfn = r->pfns[i];
			uint32_t t = r->types[i];

			if (t == XCS_TYPE_XTAB || t == XCS_TYPE_XALLOC ||
			    t == XCS_TYPE_BROKEN)
				continue;
			if (pass == 0) {
				again |= (p->seen[pfn / 8] >> (pfn % 8)) & 1;
				continue;
			}
			p->seen[pfn / 8] |= (uint8_t)(1u << (pfn % 8));
			p->seen_lo = pfn < p->seen_lo ? pfn : p->seen_lo;
			p->seen_hi = pfn > p->seen_hi ? pfn : p->seen_hi;
		}
		if (pass == 0 && again) {
			int rc = pool_drain(r);

			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

/* The record's pages to a reader, and the fd past them. */
static int
pool_submit(struct rd *r, const struct iovec *iov, int cnt, uint64_t bytes)
{
	struct pool *p = r->pool;
	struct job j = { .off = r->base + r->off, .cnt = cnt,
	    .index = r->index, .rec_off = r->rec_off };
	uint64_t t0;

	if ((j.iov = malloc((size_t)cnt * sizeof(*iov))) == NULL)
		return bad(r, -ENOMEM, "out of memory for %d iovecs", cnt);
	memcpy(j.iov, iov, (size_t)cnt * sizeof(*iov));
	if (lseek(r->fd, (off_t)bytes, SEEK_CUR) < 0) {
		int rc = -errno;

		free(j.iov);
		return bad(r, rc, "seeking past the page data: %s",
		    strerror(-rc));
	}
	r->off += bytes;
	t0 = now_ns();
	pthread_mutex_lock(&p->mu);
	while (p->n == POOL_QUEUE)
		pthread_cond_wait(&p->less, &p->mu);
	p->q[(p->head + p->n) % POOL_QUEUE] = j;
	p->n++;
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->mu);
	r->wait_ns += now_ns() - t0;
	return 0;
}

static uint32_t
le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* The record's body (length bytes) and its padding into r->buf. */
static int
read_body(struct rd *r, uint32_t length)
{
	size_t padded = ((size_t)length + 7) & ~(size_t)7;

	if (padded > r->buf_size) {
		uint8_t *nb = realloc(r->buf, padded);

		if (nb == NULL)
			return bad(r, -ENOMEM, "out of memory for %u bytes",
			    length);
		r->buf = nb;
		r->buf_size = padded;
	}
	return padded ? read_exact(r, r->buf, padded, "the record") : 0;
}

/* A copy of the body kept (a policy, an HVM context): the last wins. */
static int
keep(struct rd *r, uint8_t **dst, uint32_t *dst_len, uint32_t length)
{
	uint8_t *p = malloc(length ? length : 1);

	if (p == NULL)
		return bad(r, -ENOMEM, "out of memory for %u bytes", length);
	memcpy(p, r->buf, length);
	free(*dst);
	*dst = p;
	*dst_len = length;
	return 0;
}

static int
static_data_end(struct rd *r, const struct xcs_ops *ops, void *u)
{
	char cbwhy[200] = "";
	int rc;

	if (ops->static_data == NULL)
		return 0;
	rc = ops->static_data(u, r->cpuid, r->cpuid_len, r->msr, r->msr_len,
	    cbwhy, sizeof(cbwhy));
	return rc < 0 ? cb_failed(r, rc, cbwhy) : 0;
}

static int
page_data(struct rd *r, uint32_t length, uint64_t pfn_limit,
    const struct xcs_ops *ops, void *u, struct xcs_stats *st)
{
	uint8_t hdr[8];
	uint32_t count, nr_data = 0;
	uint64_t want;
	char cbwhy[200] = "";
	struct iovec *iov = NULL;
	int iovcnt = 0, rc;
	bool later = false;

	if (length < sizeof(hdr))
		return bad(r, -EINVAL, "length %u: shorter than its 8-byte "
		    "header", length);
	if ((rc = read_exact(r, hdr, sizeof(hdr), "the record")) < 0)
		return rc;
	count = le32(hdr);
	if (count == 0)
		return bad(r, -EINVAL, "count 0: no pfn");
	if (count > XCS_BATCH_MAX)
		return bad(r, -EINVAL, "count %u: over %u pfns in one record",
		    count, XCS_BATCH_MAX);
	if ((uint64_t)count * 8 > length - sizeof(hdr))
		return bad(r, -EINVAL, "count %u: %u pfns do not fit its "
		    "length %u", count, count, length);
	if (count > r->batch_size) {
		uint64_t *np = realloc(r->pfns, count * sizeof(*np));
		uint32_t *nt;

		if (np != NULL)
			r->pfns = np;
		nt = np ? realloc(r->types, count * sizeof(*nt)) : NULL;
		if (nt == NULL)
			return bad(r, -ENOMEM, "out of memory for %u pfns",
			    count);
		r->types = nt;
		r->batch_size = count;
	}
	/* The entries, read into pfns and split in place. */
	if ((rc = read_exact(r, r->pfns, (size_t)count * 8,
	    "the pfn list")) < 0)
		return rc;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t e = le64((const uint8_t *)&r->pfns[i]);
		uint64_t pfn = e & XCS_PFN_MASK;
		uint32_t type = (uint32_t)(e >> XCS_TYPE_SHIFT) & 0xf0000000u;

		if ((e & ~(XCS_PFN_MASK | 0xf000000000000000ull)) != 0)
			return bad(r, -EINVAL, "pfn entry %u (%#llx): reserved "
			    "bits 52-59 set", i, (unsigned long long)e);
		if (pfn >= pfn_limit)
			return bad(r, -EINVAL, "pfn entry %u: pfn %#llx beyond "
			    "the guest's limit %#llx", i,
			    (unsigned long long)pfn,
			    (unsigned long long)pfn_limit);
		switch (type) {
		case XCS_TYPE_XTAB:
		case XCS_TYPE_XALLOC:
		case XCS_TYPE_BROKEN:
			break;
		default:
			/* NOTAB, and L1-L4 (pinned or not): a page each. */
			if ((type & ~XCS_TYPE_LPINTAB) > 0x40000000u)
				return bad(r, -EINVAL, "pfn entry %u (pfn "
				    "%#llx): unknown type %#x", i,
				    (unsigned long long)pfn, type);
			nr_data++;
		}
		r->pfns[i] = pfn;
		r->types[i] = type;
	}
	want = 8 + (uint64_t)count * 8 + (uint64_t)nr_data * XCS_PAGE_SIZE;
	if (want != length)
		return bad(r, -EINVAL, "length %u, but its %u pfns with %u "
		    "pages of data make %llu", length, count, nr_data,
		    (unsigned long long)want);
	if (ops->pages != NULL) {
		/*
		 * DRAIN: memory an earlier record's read may still be filling
		 * is to go; every read finished, the same record asked again.
		 */
		for (int asked = 0;; asked++) {
			iov = NULL;
			iovcnt = 0;
			rc = ops->pages(u, count, r->pfns, r->types, nr_data,
			    &iov, &iovcnt, cbwhy, sizeof(cbwhy));
			if (rc != XCS_PAGES_DRAIN)
				break;
			if (asked > 0)
				return bad(r, -EINVAL, "the pages callback "
				    "asked twice for the reads to finish");
			if ((rc = pool_drain(r)) < 0)
				return rc;
		}
		if (rc < 0)
			return cb_failed(r, rc, cbwhy);
		later = rc == XCS_PAGES_LATER;
		rc = 0;
		if (later && r->pool == NULL && r->readers > 0) {
			r->pool = pool_start(r->fd, r->pfn_limit, r->readers);
			r->readers = 0;		/* started, or never */
			if (r->pool != NULL)
				st->readers = (uint32_t)r->pool->nthreads;
		}
	}
	if (nr_data > 0 && iovcnt > 0) {
		uint64_t sum = 0;

		for (int i = 0; i < iovcnt; i++)
			sum += iov[i].iov_len;
		if (sum != (uint64_t)nr_data * XCS_PAGE_SIZE)
			rc = bad(r, -EINVAL, "its %u pages were given %llu "
			    "bytes to go to", nr_data,
			    (unsigned long long)sum);
		else if (r->pool != NULL &&
		    (rc = pool_order(r, count)) < 0)
			;
		else if (r->pool != NULL && later) {
			rc = pool_submit(r, iov, iovcnt, sum);
			if (rc == 0)
				st->pages_later += nr_data;
		} else
			rc = read_iov(r, iov, iovcnt);
	} else if (nr_data > 0) {
		/* Nowhere asked: read and dropped. */
		uint8_t *scratch = malloc((size_t)nr_data * XCS_PAGE_SIZE);

		if (scratch == NULL)
			rc = bad(r, -ENOMEM, "out of memory for %u pages",
			    nr_data);
		else
			rc = read_exact(r, scratch,
			    (size_t)nr_data * XCS_PAGE_SIZE, "the page data");
		free(scratch);
	}
	if (ops->pages_done != NULL)
		ops->pages_done(u, nr_data, rc);
	if (rc < 0)
		return rc;
	st->page_records++;
	st->pfns += count;
	st->pages += nr_data;
	return 0;
}

static int
hvm_params(struct rd *r, uint32_t length, const struct xcs_ops *ops,
    void *u)
{
	uint64_t *idx = NULL, *val = NULL;
	char cbwhy[200] = "";
	uint32_t count;
	int rc = 0;

	if (length < 8)
		return bad(r, -EINVAL, "length %u: shorter than its 8-byte "
		    "header", length);
	count = le32(r->buf);
	if ((uint64_t)count * 16 != length - 8)
		return bad(r, -EINVAL, "count %u: %u entries make %llu bytes, "
		    "the record has %u", count, count,
		    (unsigned long long)count * 16, length - 8);
	if (count == 0 || ops->hvm_params == NULL)
		return 0;	/* as libxc: older senders sent empty ones */
	idx = malloc(count * sizeof(*idx));
	val = malloc(count * sizeof(*val));
	if (idx == NULL || val == NULL)
		rc = bad(r, -ENOMEM, "out of memory for %u entries", count);
	for (uint32_t i = 0; rc == 0 && i < count; i++) {
		idx[i] = le64(r->buf + 8 + 16 * (size_t)i);
		val[i] = le64(r->buf + 16 + 16 * (size_t)i);
	}
	if (rc == 0) {
		rc = ops->hvm_params(u, count, idx, val, cbwhy, sizeof(cbwhy));
		if (rc < 0)
			rc = cb_failed(r, rc, cbwhy);
	}
	free(idx);
	free(val);
	return rc;
}

static int
read_headers(struct rd *r, struct xcs_stats *st)
{
	uint8_t ih[24], dh[16];
	uint64_t marker;
	uint32_t id, type;
	uint16_t options, shift;
	int rc;

	if ((rc = read_exact(r, ih, sizeof(ih), "the image header")) < 0)
		return rc;
	memcpy(&marker, ih, 8);
	if (marker != IHDR_MARKER)
		return bad(r, -EINVAL, "image header at offset 0: marker "
		    "%#llx, not all ones: not a libxc stream",
		    (unsigned long long)le64toh(marker));
	memcpy(&id, ih + 8, 4);
	id = be32toh(id);
	if (id != IHDR_ID)
		return bad(r, -EINVAL, "image header at offset 8: id %#x, not "
		    "%#x (\"XENF\")", id, IHDR_ID);
	memcpy(&st->version, ih + 12, 4);
	st->version = be32toh(st->version);
	if (st->version < 2 || st->version > 3)
		return bad(r, -EINVAL, "image header at offset 12: version "
		    "%u, not 2 or 3", st->version);
	memcpy(&options, ih + 16, 2);
	options = be16toh(options);
	if (options & 1)
		return bad(r, -EINVAL, "image header at offset 16: options "
		    "%#x: a big-endian stream", options);
	if ((rc = read_exact(r, dh, sizeof(dh), "the domain header")) < 0)
		return rc;
	type = le32(dh);
	if (type != DHDR_TYPE_X86_HVM)
		return bad(r, -EINVAL, "domain header at offset 24: type %u, "
		    "not 2 (x86 HVM): %s", type, type == 1 ? "an x86 PV "
		    "guest's stream" : "not an x86 HVM guest's stream");
	memcpy(&shift, dh + 4, 2);
	shift = le16toh(shift);
	if (shift != 12)
		return bad(r, -EINVAL, "domain header at offset 28: "
		    "page_shift %u, not 12", shift);
	st->xen_major = le32(dh + 8);
	st->xen_minor = le32(dh + 12);
	return 0;
}

int
vmb__xcs_read(int fd, uint64_t pfn_limit, const struct xcs_ops *ops,
    void *u, struct xcs_stats *stats, char *why, size_t len)
{
	struct rd r = { .fd = fd, .index = UINT32_MAX, .why = why,
	    .len = len };
	struct xcs_stats st_local, *st = stats ? stats : &st_local;
	bool seen_sde = false, seen_ctx = false;
	char cbwhy[200];
	int rc;

	memset(st, 0, sizeof(*st));
	if (why != NULL && len > 0)
		why[0] = '\0';
	{
		off_t at = lseek(fd, 0, SEEK_CUR);
		int n = vmb__xcs_readers();

		if (n < 0) {
			if (why != NULL && len > 0)
				snprintf(why, len, "%s=\"%s\": not a number of "
				    "reader threads from 0 to %d",
				    XCS_READERS_ENV, getenv(XCS_READERS_ENV),
				    POOL_MAX);
			return -EINVAL;
		}
		/* The pool: at the first record that can use it. */
		if (at >= 0) {
			r.base = (uint64_t)at;
			r.readers = n;
			r.pfn_limit = pfn_limit;
		}
	}
	rc = read_headers(&r, st);
	for (r.index = 0; rc == 0; r.index++) {
		uint8_t rh[8];
		uint32_t type, length;

		r.rec_off = r.off;
		r.type = 0;
		if ((rc = read_exact(&r, rh, sizeof(rh),
		    "a record header")) < 0)
			break;
		r.type = type = le32(rh);
		length = le32(rh + 4);
		st->records++;
		/* What follows may need the pages in place (END does). */
		if (type != XCS_REC_PAGE_DATA && (rc = pool_drain(&r)) < 0)
			break;
		if (length > XCS_REC_LENGTH_MAX) {
			rc = bad(&r, -EINVAL, "length %u: over the spec's "
			    "%u", length, XCS_REC_LENGTH_MAX);
			break;
		}
		/* v2 without STATIC_DATA_END: it is here. */
		if (type == XCS_REC_PAGE_DATA && !seen_sde &&
		    st->version == 2) {
			seen_sde = true;
			if ((rc = static_data_end(&r, ops, u)) < 0)
				break;
		}
		switch (type) {
		case XCS_REC_PAGE_DATA:
			if (!seen_sde) {
				rc = bad(&r, -EINVAL, "before STATIC_DATA_END "
				    "(a version 3 stream)");
				break;
			}
			if (length % 8) {
				rc = bad(&r, -EINVAL, "length %u: not a "
				    "multiple of 8", length);
				break;
			}
			rc = page_data(&r, length, pfn_limit, ops, u, st);
			break;
		case XCS_REC_END:
			if (length != 0) {
				rc = bad(&r, -EINVAL, "length %u, not 0",
				    length);
				break;
			}
			if (!seen_ctx) {
				rc = bad(&r, -EINVAL, "the stream ends without "
				    "an HVM_CONTEXT record");
				break;
			}
			if (!seen_sde) {
				rc = bad(&r, -EINVAL, "the stream ends without "
				    "STATIC_DATA_END or any PAGE_DATA");
				break;
			}
			cbwhy[0] = '\0';
			if (ops->end != NULL && (rc = ops->end(u, r.ctx,
			    r.ctx_len, cbwhy, sizeof(cbwhy))) < 0)
				rc = cb_failed(&r, rc, cbwhy);
			if (rc == 0)
				goto done;
			break;
		case XCS_REC_STATIC_DATA_END:
			if (length != 0)
				rc = bad(&r, -EINVAL, "length %u, not 0",
				    length);
			else if (seen_sde)
				rc = bad(&r, -EINVAL, "a second one (or after "
				    "PAGE_DATA)");
			else {
				seen_sde = true;
				rc = static_data_end(&r, ops, u);
			}
			break;
		case XCS_REC_X86_CPUID_POLICY:
		case XCS_REC_X86_MSR_POLICY: {
			bool cpuid = type == XCS_REC_X86_CPUID_POLICY;
			uint32_t unit = cpuid ? CPUID_LEAF_SIZE : MSR_ENTRY_SIZE;

			if (seen_sde)
				rc = bad(&r, -EINVAL, "static data after "
				    "STATIC_DATA_END or PAGE_DATA");
			else if (length == 0 || length % unit != 0 ||
			    length > XCS_BLOB_MAX)
				rc = bad(&r, -EINVAL, "length %u: not a "
				    "non-empty multiple of %u (at most %u)",
				    length, unit, XCS_BLOB_MAX);
			else if ((rc = read_body(&r, length)) == 0)
				rc = cpuid ? keep(&r, &r.cpuid, &r.cpuid_len,
				    length) : keep(&r, &r.msr, &r.msr_len,
				    length);
			break;
		}
		case XCS_REC_X86_TSC_INFO: {
			struct xcs_tsc t;

			if (length != 24) {
				rc = bad(&r, -EINVAL, "length %u, not 24",
				    length);
				break;
			}
			if ((rc = read_body(&r, length)) < 0)
				break;
			t.mode = le32(r.buf);
			t.khz = le32(r.buf + 4);
			t.nsec = le64(r.buf + 8);
			t.incarnation = le32(r.buf + 16);
			cbwhy[0] = '\0';
			if (ops->tsc != NULL && (rc = ops->tsc(u, &t, cbwhy,
			    sizeof(cbwhy))) < 0)
				rc = cb_failed(&r, rc, cbwhy);
			break;
		}
		case XCS_REC_HVM_CONTEXT:
			if (length == 0 || length > XCS_BLOB_MAX)
				rc = bad(&r, -EINVAL, "length %u: empty or over "
				    "%u", length, XCS_BLOB_MAX);
			else if ((rc = read_body(&r, length)) == 0 &&
			    (rc = keep(&r, &r.ctx, &r.ctx_len, length)) == 0)
				seen_ctx = true;
			break;
		case XCS_REC_HVM_PARAMS:
			if ((rc = read_body(&r, length)) == 0)
				rc = hvm_params(&r, length, ops, u);
			break;
		default:
			if (type & XCS_REC_OPTIONAL) {
				/* Optional, not understood: skipped. */
				rc = read_body(&r, length);
				break;
			}
			rc = bad(&r, -EINVAL, "%s", type <
			    sizeof(rec_names) / sizeof(rec_names[0]) ?
			    "not for a PVH guest's plain or live stream "
			    "(refused)" : "an unknown mandatory record");
		}
	}
done:
	rc = pool_stop(&r, rc);
	st->wait_ns = r.wait_ns;
	st->bytes = r.off;
	free(r.buf);
	free(r.cpuid);
	free(r.msr);
	free(r.ctx);
	free(r.pfns);
	free(r.types);
	return rc;
}
