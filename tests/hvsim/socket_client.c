/*
 * socket_client.c - the client half of tests/hvsim/socket.sh.
 *
 * usage: socket_client DIR PHANTOM_PID
 * DIR holds real.sock, batch.sock, alloc.sock and phantom.sock.
 * Prints TAP lines.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vmbuild/hvclient.h"
#include "vmbuild/hvops.h"

#include "../tap.h"

static char dir[512];

static char *
sock(const char *name)
{
	static char path[600];

	snprintf(path, sizeof(path), "%s/%s.sock", dir, name);
	return path;
}

static struct hvc *
conn(const char *name)
{
	struct hvc *c = NULL;
	int rc = -1, i;

	/* hvsim may still be starting: bounded retries. */
	for (i = 0; i < 100; i++) {
		rc = hvc_open(sock(name), &c);
		if (rc == 0)
			return c;
		usleep(100000);
	}
	diag("hvc_open %s: %s", sock(name), strerror(-rc));
	return NULL;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Free and dirty pages of the host. */
static int
host_pages(struct hvc *c, uint64_t *free_p, uint64_t *dirty_p,
    uint64_t *total_p, int *boot_done)
{
	struct hv_scrub_reply *r;
	struct hv_scrub_node *n;
	uint32_t i;
	int rc;

	rc = hvc_scrub_progress(c, &r);
	if (rc < 0)
		return rc;
	n = hvc_scrub_nodes(r);
	*free_p = *dirty_p = *total_p = 0;
	if (boot_done)
		*boot_done = 1;
	for (i = 0; i < r->nr_nodes; i++) {
		*free_p += n[i].free_pages;
		*dirty_p += n[i].dirty_pages;
		*total_p += n[i].total_pages;
		if (boot_done && !n[i].boot_scrub_done)
			*boot_done = 0;
	}
	free(r);
	return 0;
}

/* Wait (bounded, 120 s) until no free page is dirty. */
static int
wait_clean(struct hvc *c)
{
	uint64_t f, d, t;
	int i, boot;

	for (i = 0; i < 2400; i++) {
		if (host_pages(c, &f, &d, &t, &boot) < 0)
			return -1;
		if (d == 0 && boot)
			return 0;
		sleep_ms(50);
	}
	return -1;
}

static hv_domid_t
create(struct hvc *c, const char *name, uint32_t flags, uint64_t max_pages)
{
	struct hv_domain_create req = {
		.flags = flags, .max_vcpus = 2, .max_pages = max_pages,
	};
	hv_domid_t id = HV_DOMID_INVALID;
	int rc;

	snprintf(req.name, sizeof(req.name), "%s", name);
	rc = hvc_domain_create(c, &req, &id);
	if (rc < 0)
		diag("create %s: %s", name, strerror(-rc));
	return id;
}

static int
find_dom(struct hvc *c, hv_domid_t id, struct hv_domain_info *out)
{
	struct hv_domain_info *all = NULL;
	uint32_t nr = 0, i;
	int rc;

	rc = hvc_domain_list(c, &all, &nr);
	if (rc < 0)
		return rc;
	rc = -ESRCH;
	for (i = 0; i < nr; i++)
		if (all[i].domid == id) {
			*out = all[i];
			rc = 0;
		}
	free(all);
	return rc;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool
all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Real memory: populate across two nodes, destroy, scrub, account.    */

#define N2M	20	/* 2 MiB extents per node */
#define N4K	16

static uint32_t
layout(struct hv_extent *e)
{
	uint32_t n = 0, i;
	uint64_t gfn = 0;

	for (i = 0; i < 2 * N2M; i++, gfn += 512)
		e[n++] = (struct hv_extent){ .gfn = gfn, .order = 9,
		    .node = (uint16_t)(i / N2M) };
	for (i = 0; i < N4K; i++, gfn++)
		e[n++] = (struct hv_extent){ .gfn = gfn, .order = 0, .node = 1 };
	return n;
}

/* How many of a[0..n) (sorted) appear in b[0..n). */
static uint64_t
common_frames(const uint64_t *sorted_a, const uint64_t *b, uint64_t n)
{
	uint64_t i, k = 0;

	for (i = 0; i < n; i++)
		k += bsearch(&b[i], sorted_a, n, sizeof(*b), cmp_u64) != NULL;
	return k;
}

static void
test_real(void)
{
	const uint64_t P = 2 * N2M * 512 + N4K;
	const size_t bytes = P << HV_PAGE_SHIFT;
	struct hv_extent ext[2 * N2M + N4K];
	struct hv_populate_stats st;
	struct hv_domain_info info;
	struct hv_host_info *hi = NULL;
	struct hv_counters c0, c1;
	struct hv_guest_copy gc;
	uint64_t *mfns = NULL, *sorted = NULL, *m2 = NULL, f, d, t, i;
	uint8_t *buf = NULL, small[16];
	uint32_t nr = layout(ext), done = 0;
	struct hvc *c;
	hv_domid_t a, b;
	int rc, dups = 0, wrong_node = 0;
	size_t len;

	c = conn("real");
	ok(c != NULL, "connect to hvsim (real memory)");
	if (!c)
		return;
	ok(hvc_hello(c)->backing == HV_BACKING_REAL &&
	    (hvc_hello(c)->caps & HV_CAP_GUEST_COPY),
	    "hello: real backing, guest copies");
	rc = hvc_host_info(c, &hi);
	ok(rc == 0 && hi->nr_nodes == 2 && hi->nr_cpus == 8 &&
	    hi->total_pages == 2 * 32768, "host info: 2 nodes, 8 CPUs, 256 MiB");
	if (rc == 0) {
		struct hv_cpu_info *cpu = hvc_host_cpus(hi);

		ok(cpu[1].core == cpu[0].core && cpu[1].thread == 1 &&
		    cpu[2].core != cpu[0].core && hvc_host_nodes(hi)[1].first_mfn
		    == 32768, "host info: SMT siblings share a core");
	}
	free(hi);
	ok(wait_clean(c) == 0, "boot scrub finishes");
	hvc_counters(c, &c0);
	ok(c0.scrub_pages_boot == 2 * 32768, "boot scrub counted every page "
	    "(%llu)", (unsigned long long)c0.scrub_pages_boot);

	a = create(c, "int-a", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	memset(&st, 0, sizeof(st));
	rc = hvc_populate(c, a, HV_POPF_EXACT_NODE, ext, nr, &st, &done);
	ok(rc == 0 && st.pages_done == P && st.extents_done == nr,
	    "populate across two nodes (%d, %llu pages)", rc,
	    (unsigned long long)st.pages_done);
	rc = find_dom(c, a, &info);
	ok(rc == 0 && info.tot_pages == P &&
	    info.node_pages[0] == N2M * 512 &&
	    info.node_pages[1] == N2M * 512 + N4K,
	    "domain pages split by node as requested");
	host_pages(c, &f, &d, &t, NULL);
	ok(f == t - P, "host free = total - populated, exactly");

	mfns = calloc(P, sizeof(*mfns));
	sorted = calloc(P, sizeof(*sorted));
	m2 = calloc(P, sizeof(*m2));
	buf = malloc(bytes);
	if (!mfns || !sorted || !m2 || !buf) {
		ok(0, "test memory");
		goto out;
	}
	rc = hvc_map(c, a, 0, (uint32_t)P, mfns);
	ok(rc == 0, "translate the domain's memory to machine frames");
	memcpy(sorted, mfns, P * sizeof(*mfns));
	qsort(sorted, P, sizeof(*sorted), cmp_u64);
	for (i = 1; i < P; i++)
		dups += sorted[i] == sorted[i - 1];
	for (i = 0; i < P; i++)
		wrong_node += (i < N2M * 512) != (mfns[i] < 32768);
	ok(dups == 0, "no machine frame handed out twice");
	ok(wrong_node == 0, "every page on the node asked for");
	ok(hvc_guest_read(c, a, 0, buf, bytes) == 0 &&
	    all_bytes(buf, bytes, 0), "populated memory reads as zero "
	    "(%zu bytes, HV_OP_GUEST_READ)", bytes);
	memset(buf, 0xa5, bytes);
	ok(hvc_guest_write(c, a, 0, buf, bytes) == 0,
	    "write all of the domain's memory (HV_OP_GUEST_WRITE)");
	memset(buf, 0, bytes);
	ok(hvc_guest_read(c, a, 0, buf, bytes) == 0 &&
	    all_bytes(buf, bytes, 0xa5), "and read it back");
	/* 16 bytes across the boundary of the first two 2 MiB extents. */
	for (i = 0; i < sizeof(small); i++)
		small[i] = (uint8_t)i;
	rc = hvc_guest_write(c, a, (2u << 20) - 8, small, sizeof(small));
	memset(small, 0, sizeof(small));
	if (rc == 0)
		rc = hvc_guest_read(c, a, (2u << 20) - 9, small, 10);
	ok(rc == 0 && small[0] == 0xa5 && small[1] == 0 && small[9] == 8,
	    "an unaligned copy across two extents");
	ok(hvc_guest_read(c, a, bytes, small, 1) == -ENOENT,
	    "read of a hole: -ENOENT");
	ok(hvc_guest_write(c, a, bytes - 8, small, 16) == -ENOENT,
	    "write running into a hole: -ENOENT");
	gc = (struct hv_guest_copy){ .domid = a, .len = HV_MAX_COPY + 1 };
	ok(hvc_call(c, HV_OP_GUEST_READ, &gc, sizeof(gc), buf, bytes, &len,
	    NULL) == -EINVAL, "read beyond HV_MAX_COPY: -EINVAL");
	gc.len = 0;
	ok(hvc_call(c, HV_OP_GUEST_READ, &gc, sizeof(gc), buf, bytes, &len,
	    NULL) == -EINVAL, "read of 0 bytes: -EINVAL");
	memcpy(buf, &(struct hv_guest_copy){ .domid = a, .len = 64 },
	    sizeof(gc));
	ok(hvc_call(c, HV_OP_GUEST_WRITE, buf, sizeof(gc) + 32, NULL, 0, NULL,
	    NULL) == -EINVAL, "write with fewer bytes than it says: -EINVAL");
	ok(hvc_guest_read(c, 0x7000, 0, small, 1) == -ESRCH,
	    "read of a domain that does not exist: -ESRCH");

	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a) == 0, "destroy");
	host_pages(c, &f, &d, &t, NULL);
	ok(f == t, "after destroy every page is free again (%llu of %llu)",
	    (unsigned long long)f, (unsigned long long)t);
	ok(find_dom(c, a, &info) == -ESRCH, "destroyed domain is not listed");
	ok(wait_clean(c) == 0, "background scrub cleans the dead domain's pages");
	host_pages(c, &f, &d, &t, NULL);
	ok(f == t && d == 0, "every byte accounted: all free, none dirty");
	hvc_counters(c, &c1);
	ok(c1.scrub_pages_background - c0.scrub_pages_background +
	    c1.scrub_pages_inline - c0.scrub_pages_inline >= P,
	    "scrub counters cover the freed pages");

	/* The next domain gets the dead one's frames, zeroed. */
	b = create(c, "int-b", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	rc = hvc_populate(c, b, 0, ext, nr, NULL, NULL);
	ok(rc == 0, "populate a second domain");
	rc = hvc_map(c, b, 0, (uint32_t)P, m2);
	ok(rc == 0 && common_frames(sorted, m2, P) > P / 2,
	    "it reuses the dead domain's frames (%llu of %llu)",
	    (unsigned long long)common_frames(sorted, m2, P),
	    (unsigned long long)P);
	ok(hvc_guest_read(c, b, 0, buf, bytes) == 0 &&
	    all_bytes(buf, bytes, 0), "and they read as zero: scrubbed");
	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b) == 0, "destroy second");
	hvc_counters(c, &c1);
	ok(c1.domains_created - c0.domains_created == 2 &&
	    c1.domains_destroyed - c0.domains_destroyed == 2 &&
	    c1.populate_pages[HV_ORDER_CLASS_2M] -
	    c0.populate_pages[HV_ORDER_CLASS_2M] == 2 * 2 * N2M * 512 &&
	    c1.populate_pages[HV_ORDER_CLASS_4K] -
	    c0.populate_pages[HV_ORDER_CLASS_4K] == 2 * N4K,
	    "counters: domains and populated pages by order");
out:
	free(buf);
	free(m2);
	free(mfns);
	free(sorted);
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* Malformed requests.                                                 */

static int
raw_conn(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (strlen(sock("real")) >= sizeof(sun.sun_path))
		return -1;
	memcpy(sun.sun_path, sock("real"), strlen(sock("real")) + 1);
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Send a header (+payload) and return the reply's status, or 1 on EOF. */
static int
raw_call(int fd, uint32_t magic, uint16_t version, uint16_t op, uint32_t len,
    const void *payload, size_t plen)
{
	struct hv_msg_hdr h = { .magic = magic, .version = version, .op = op,
	    .len = len, .seq = 77 };
	char buf[4096];
	ssize_t n;
	size_t got = 0;

	if (write(fd, &h, sizeof(h)) != sizeof(h))
		return 1;
	if (plen && write(fd, payload, plen) != (ssize_t)plen)
		return 1;
	while (got < sizeof(h)) {
		n = read(fd, (char *)&h + got, sizeof(h) - got);
		if (n <= 0)
			return 1;
		got += n;
	}
	/* Drain the payload, if any. */
	for (got = 0; got < h.len; got += n) {
		n = read(fd, buf, h.len - got < sizeof(buf) ? h.len - got :
		    sizeof(buf));
		if (n <= 0)
			return 1;
	}
	return h.seq == 77 ? h.status : 2;
}

static bool
closed_by_peer(int fd)
{
	char b;

	return read(fd, &b, 1) == 0;
}

static void
test_malformed(void)
{
	struct {
		struct hv_populate p;
		struct hv_extent e[2];
	} pop;
	struct hv_domain_create cr = { .max_vcpus = 1, .max_pages = 600 };
	struct hv_extent e;
	struct hvc *c;
	uint64_t f, d, t, mfn;
	hv_domid_t id;
	int fd, rc;

	fd = raw_conn();
	ok(fd >= 0 && raw_call(fd, 0xdeadbeef, HV_ABI_VERSION, HV_OP_HELLO, 0,
	    NULL, 0) == -EPROTO && closed_by_peer(fd),
	    "wrong magic: -EPROTO, connection closed");
	close(fd);

	fd = raw_conn();
	ok(raw_call(fd, HV_MSG_MAGIC, 99, HV_OP_HELLO, 0, NULL, 0) == -EPROTO,
	    "wrong version: -EPROTO");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_HELLO, 0, NULL, 0)
	    == 0, "same connection still serves after a version error");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, 999, 0, NULL, 0) ==
	    -ENOSYS, "unknown op: -ENOSYS");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, 0, 0, NULL, 0) ==
	    -ENOSYS, "op 0: -ENOSYS");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_HELLO, 4, "abcd",
	    4) == -EINVAL, "hello with a payload: -EINVAL");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_DOMAIN_CREATE, 8,
	    &cr, 8) == -EINVAL, "short create: -EINVAL");
	memset(&pop, 0, sizeof(pop));
	pop.p.domid = 1;
	pop.p.nr_extents = 5;
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_POPULATE,
	    sizeof(pop), &pop, sizeof(pop)) == -EINVAL,
	    "populate whose count disagrees with its length: -EINVAL");
	pop.p.nr_extents = HV_MAX_EXTENTS + 1;
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_POPULATE,
	    sizeof(pop), &pop, sizeof(pop)) == -EINVAL,
	    "populate with too many extents: -EINVAL");
	ok(raw_call(fd, HV_MSG_MAGIC, HV_ABI_VERSION, HV_OP_HELLO,
	    HV_MAX_PAYLOAD + 1, NULL, 0) == -EMSGSIZE && closed_by_peer(fd),
	    "oversized payload: -EMSGSIZE, connection closed");
	close(fd);

	/* A header cut short, then a hang-up. */
	fd = raw_conn();
	ok(fd >= 0 && write(fd, "HVSM", 4) == 4, "send half a header");
	close(fd);

	c = conn("real");
	ok(c != NULL, "hvsim serves after the short header");
	if (!c)
		return;
	{
		char small[16];
		size_t len = 0;
		struct hv_counters ctr;

		ok(hvc_call(c, HV_OP_HOST_INFO, NULL, 0, small, sizeof(small),
		    &len, NULL) == -EMSGSIZE && hvc_counters(c, &ctr) == 0,
		    "client: a reply larger than the buffer is -EMSGSIZE and "
		    "the connection stays usable");
	}
	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, 4242) == -ESRCH &&
	    hvc_domain_op(c, HV_OP_DOMAIN_PAUSE, 99999) == -ESRCH,
	    "unknown domain: -ESRCH");
	e = (struct hv_extent){ .gfn = 0, .order = 0, .node = 0 };
	ok(hvc_populate(c, 4242, 0, &e, 1, NULL, NULL) == -ESRCH,
	    "populate of an unknown domain: -ESRCH");
	cr.name[0] = 'x';
	memset(cr.name, 'x', sizeof(cr.name));
	ok(hvc_domain_create(c, &cr, &id) == -EINVAL,
	    "create with an unterminated name: -EINVAL");
	memset(cr.name, 0, sizeof(cr.name));
	cr.max_vcpus = 0;
	ok(hvc_domain_create(c, &cr, &id) == -EINVAL,
	    "create with 0 vCPUs: -EINVAL");
	cr.max_vcpus = 1;
	cr.flags = HV_DOMF_HAP;
	ok(hvc_domain_create(c, &cr, &id) == 0, "create a domain");
	e = (struct hv_extent){ .gfn = 0, .order = 19, .node = 0 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EINVAL,
	    "order 19: -EINVAL");
	e = (struct hv_extent){ .gfn = 1, .order = 9, .node = 0 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EINVAL,
	    "unaligned gfn: -EINVAL");
	e = (struct hv_extent){ .gfn = 0, .order = 0, .node = 7 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EINVAL,
	    "node out of range: -EINVAL");
	e = (struct hv_extent){ .gfn = 0, .order = 0, .node = 0, .pad2 = 1 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EINVAL,
	    "non-zero padding: -EINVAL");
	e = (struct hv_extent){ .gfn = 1ull << 50, .order = 0, .node = 0 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EINVAL,
	    "gfn beyond the address space: -EINVAL");
	ok(hvc_populate(c, id, 0x80, &e, 1, NULL, NULL) == -EINVAL,
	    "unknown populate flag: -EINVAL");
	e = (struct hv_extent){ .gfn = 0, .order = 9, .node = 0 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == 0,
	    "a good extent after the bad ones");
	e.order = 0;
	e.gfn = 5;
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -EEXIST,
	    "populating a populated gfn: -EEXIST");
	e = (struct hv_extent){ .gfn = 4096, .order = 9, .node = 0 };
	ok(hvc_populate(c, id, 0, &e, 1, NULL, NULL) == -ENOMEM,
	    "beyond max memory: -ENOMEM");
	ok(hvc_map(c, id, 4096, 1, &mfn) == -ENOENT,
	    "map of a hole: -ENOENT");
	ok(hvc_domain_set(c, HV_OP_DOMAIN_MAX_VCPUS, id, 0) == -EINVAL,
	    "0 max vCPUs: -EINVAL");
	ok(hvc_domain_set(c, HV_OP_CLAIM, id, 1ull << 40) == -ENOMEM,
	    "claim beyond the host: -ENOMEM");
	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, id) == 0, "destroy it");
	rc = wait_clean(c);
	host_pages(c, &f, &d, &t, NULL);
	ok(rc == 0 && f == t && d == 0,
	    "heap intact after the bad requests: all free and clean");
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* Flush modes: same layout, far fewer filter evaluations in batch.    */

#define FILL	60	/* 2 MiB extents per node for the first domain */
#define KEEP	4

struct mode_result {
	uint64_t mfns[2 * FILL * 512];
	struct hv_counters ctr;
	struct hv_populate_stats st;
	uint64_t calls;		/* populate requests, as the client counted */
	int rc;
};

static void
fill(struct hv_extent *e, uint32_t per_node, uint64_t gfn0)
{
	uint32_t i;

	for (i = 0; i < 2 * per_node; i++)
		e[i] = (struct hv_extent){ .gfn = gfn0 + i * 512ull,
		    .order = 9, .node = (uint16_t)(i % 2) };
}

static void
run_mode(const char *name, struct mode_result *r)
{
	struct hv_extent e[2 * FILL];
	struct hvc *c = conn(name);
	hv_domid_t a, b, cdom;

	r->rc = -1;
	if (!c)
		return;
	a = create(c, "fill", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	b = create(c, "keep", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	cdom = create(c, "again", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	fill(e, FILL, 0);
	r->rc = hvc_populate(c, a, HV_POPF_EXACT_NODE | HV_POPF_ALLOW_DIRTY,
	    e, 2 * FILL, NULL, NULL);
	fill(e, KEEP, 0);
	if (r->rc == 0)
		r->rc = hvc_populate(c, b, HV_POPF_EXACT_NODE |
		    HV_POPF_ALLOW_DIRTY, e, 2 * KEEP, NULL, NULL);
	if (r->rc == 0)
		r->rc = hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, a);
	/* The third domain can only get the first one's freed pages. */
	fill(e, FILL, 0);
	memset(&r->st, 0, sizeof(r->st));
	if (r->rc == 0)
		r->rc = hvc_populate(c, cdom, HV_POPF_EXACT_NODE |
		    HV_POPF_ALLOW_DIRTY, e, 2 * FILL, &r->st, NULL);
	if (r->rc == 0)
		r->rc = hvc_map(c, cdom, 0, 2 * FILL * 512, r->mfns);
	if (r->rc == 0)
		r->rc = hvc_counters(c, &r->ctr);
	r->calls = hvc_populate_calls(c);
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, b);
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, cdom);
	hvc_close(c);
}

static void
test_flush_modes(void)
{
	struct mode_result *rb = calloc(1, sizeof(*rb));
	struct mode_result *ra = calloc(1, sizeof(*ra));
	const uint64_t pages = 2 * FILL * 512;

	run_mode("batch", rb);
	run_mode("alloc", ra);
	ok(rb->rc == 0 && ra->rc == 0, "create/destroy/create in both modes "
	    "(%d, %d)", rb->rc, ra->rc);
	ok(memcmp(rb->mfns, ra->mfns, sizeof(rb->mfns)) == 0,
	    "both flush modes give the same memory layout");
	ok(rb->st.pages_scrubbed_inline == pages &&
	    ra->st.pages_scrubbed_inline == pages,
	    "the reused pages were dirty and scrubbed inline");
	diag("batch: %llu evaluations, %llu flushes, %llu avoided; "
	    "alloc: %llu evaluations, %llu flushes, %llu avoided",
	    (unsigned long long)rb->st.filter_evaluations,
	    (unsigned long long)rb->st.flushes_issued,
	    (unsigned long long)rb->st.flushes_avoided,
	    (unsigned long long)ra->st.filter_evaluations,
	    (unsigned long long)ra->st.flushes_issued,
	    (unsigned long long)ra->st.flushes_avoided);
	ok(ra->st.filter_evaluations == pages,
	    "alloc mode: one filter evaluation per page (%llu)",
	    (unsigned long long)ra->st.filter_evaluations);
	/* 61440 pages at 16384 pages per call: 4 calls, one evaluation each. */
	ok(rb->st.filter_evaluations >= 1 && rb->st.filter_evaluations <= 4,
	    "batch mode: one filter evaluation per call (%llu)",
	    (unsigned long long)rb->st.filter_evaluations);
	ok(rb->st.filter_evaluations * 1000 < ra->st.filter_evaluations,
	    "far fewer filter evaluations in batch mode");
	ok(rb->st.flushes_issued >= 1 && ra->st.flushes_issued >= 1 &&
	    rb->st.flushes_issued <= rb->st.filter_evaluations,
	    "both modes flush the reused pages; batch at most once per call");
	ok(rb->ctr.tlb_filter_evaluations == rb->st.filter_evaluations &&
	    ra->ctr.tlb_filter_evaluations == ra->st.filter_evaluations,
	    "host counters agree with the per-call statistics");
	/* This client is the only one of these two hvsims. */
	ok(rb->ctr.populate_preemptions > 0 &&
	    rb->calls == rb->ctr.populate_calls &&
	    ra->calls == ra->ctr.populate_calls,
	    "the client counts every populate request, continuations "
	    "included, as the hypervisor does (%llu, %llu preempted)",
	    (unsigned long long)rb->calls,
	    (unsigned long long)rb->ctr.populate_preemptions);
	ok(rb->ctr.tlb_flushes_issued[HV_FLUSH_CAUSE_POPULATE] ==
	    rb->st.flushes_issued && rb->ctr.tlb_flush_cpu_ipis ==
	    16 * rb->st.flushes_issued,
	    "batch flush reached all 16 CPUs (%llu IPIs)",
	    (unsigned long long)rb->ctr.tlb_flush_cpu_ipis);
	free(rb);
	free(ra);
}

/* ------------------------------------------------------------------ */
/* Phantom: 8 nodes, 128 CPUs, 2 TiB in little memory.                 */

static uint64_t
rss_kib(const char *pid)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %lu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void
test_phantom(const char *pid)
{
	struct hv_extent *e = calloc(4096, sizeof(*e));
	struct hv_populate_stats st;
	struct hv_domain_info info;
	struct hv_host_info *hi = NULL;
	struct hvc *c = conn("phantom");
	uint64_t mfn, f, d, t, rss;
	hv_domid_t id;
	uint32_t i;
	int rc;

	ok(c != NULL, "connect to hvsim (phantom 2 TiB)");
	if (!c || !e)
		goto out;
	rc = hvc_host_info(c, &hi);
	ok(rc == 0 && hi->nr_nodes == 8 && hi->nr_cpus == 128 &&
	    hi->total_pages == 8ull * (256ull << 18),
	    "phantom host: 8 nodes, 128 CPUs, 2 TiB");
	free(hi);
	ok(wait_clean(c) == 0, "phantom boot scrub done");
	id = create(c, "big", HV_DOMF_HVM | HV_DOMF_HAP, 1ull << 40);
	/* 135 GiB in 1 GiB extents over 8 nodes, as post 000's guest. */
	for (i = 0; i < 135; i++)
		e[i] = (struct hv_extent){ .gfn = (uint64_t)i << 18,
		    .order = 18, .node = (uint16_t)(i % 8) };
	memset(&st, 0, sizeof(st));
	rc = hvc_populate(c, id, HV_POPF_EXACT_NODE, e, 135, &st, NULL);
	ok(rc == 0 && st.pages_done == 135ull << 18,
	    "populate 135 GiB in 1 GiB extents");
	/* And 4 KiB extents, which split 2 MiB chunks. */
	for (i = 0; i < 4096; i++)
		e[i] = (struct hv_extent){ .gfn = (136ull << 18) + i,
		    .order = 0, .node = 3 };
	rc = hvc_populate(c, id, HV_POPF_EXACT_NODE, e, 4096, &st, NULL);
	ok(rc == 0, "populate 4096 4 KiB extents");
	ok(find_dom(c, id, &info) == 0 &&
	    info.tot_pages == (135ull << 18) + 4096 &&
	    info.node_pages[3] == (17ull << 18) + 4096,
	    "phantom domain pages by node");
	ok(hvc_map(c, id, 0, 1, &mfn) == 0 && hvc_map(c, id, 135ull << 18, 1,
	    &mfn) == -ENOENT, "phantom memory translates, holes do not");
	ok(hvc_guest_read(c, id, 0, &mfn, 8) == -EOPNOTSUPP,
	    "guest read on phantom memory: -EOPNOTSUPP");
	ok(!(hvc_hello(c)->caps & HV_CAP_GUEST_COPY),
	    "phantom: no guest copies announced");
	rss = rss_kib(pid);
	ok(rss > 0 && rss < 1024 * 1024, "2 TiB phantom host in %llu MiB "
	    "of resident memory", (unsigned long long)rss / 1024);
	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, id) == 0, "destroy");
	ok(wait_clean(c) == 0, "phantom scrub after destroy");
	host_pages(c, &f, &d, &t, NULL);
	ok(f == t && d == 0, "phantom: every page free and clean again");
out:
	free(e);
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* Domain states, claims and the shadow workload over the socket.      */

static void
test_domain_ops(void)
{
	struct hv_shadow_workload wl = { .pattern = HV_SHADOW_IPERF,
	    .nr_writes = 300 };
	struct hv_shadow_workload_reply wr;
	struct hv_domain_info info;
	struct hv_counters c0, c1;
	struct hv_extent e[4];
	struct hvc *c = conn("real");
	hv_domid_t sh, hap;
	uint32_t i;

	if (!c)
		return;
	hvc_counters(c, &c0);
	sh = create(c, "shadowed", HV_DOMF_HVM, 1 << 20);
	hap = create(c, "hap", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	ok(find_dom(c, sh, &info) == 0 && info.state == HV_DOMSTATE_PAUSED,
	    "created domains start paused");
	wl.domid = sh;
	ok(hvc_shadow_workload(c, &wl, &wr) == -EBUSY,
	    "shadow workload on a paused domain: -EBUSY");
	ok(hvc_domain_op(c, HV_OP_DOMAIN_UNPAUSE, sh) == 0 &&
	    find_dom(c, sh, &info) == 0 && info.state == HV_DOMSTATE_RUNNING,
	    "unpause: running");
	ok(hvc_shadow_workload(c, &wl, &wr) == 0 && wr.emulated_writes == 300 &&
	    wr.unshadow[HV_UNSHADOW_WRITE_FLOOD] == 100,
	    "iperf pattern: unshadow after 3 consecutive writes (%llu)",
	    (unsigned long long)wr.unshadow[HV_UNSHADOW_WRITE_FLOOD]);
	wl.pattern = HV_SHADOW_FORK_EXIT;
	ok(hvc_shadow_workload(c, &wl, &wr) == 0 &&
	    wr.unshadow[HV_UNSHADOW_EARLY] == 150,
	    "fork/exit pattern: early unshadow on the 2nd zero write");
	wl.pattern = HV_SHADOW_PT_UPDATE;
	ok(hvc_shadow_workload(c, &wl, &wr) == 0 && wr.emulated_writes == 300,
	    "page-table update pattern");
	wl.pattern = 42;
	ok(hvc_shadow_workload(c, &wl, &wr) == -EINVAL,
	    "unknown pattern: -EINVAL");
	wl.domid = hap;
	wl.pattern = HV_SHADOW_PT_UPDATE;
	hvc_domain_op(c, HV_OP_DOMAIN_UNPAUSE, hap);
	ok(hvc_shadow_workload(c, &wl, &wr) == -EOPNOTSUPP,
	    "HAP domain has no shadow workload: -EOPNOTSUPP");
	ok(hvc_domain_op(c, HV_OP_DOMAIN_PAUSE, sh) == 0 &&
	    find_dom(c, sh, &info) == 0 && info.state == HV_DOMSTATE_PAUSED,
	    "pause: paused");
	ok(hvc_domain_set(c, HV_OP_DOMAIN_MAX_VCPUS, hap, 8) == 0 &&
	    hvc_domain_set(c, HV_OP_DOMAIN_MAX_MEM, hap, 2048) == 0 &&
	    find_dom(c, hap, &info) == 0 && info.max_vcpus == 8 &&
	    info.max_pages == 2048, "max vCPUs and max memory");
	ok(hvc_domain_set(c, HV_OP_CLAIM, hap, 2048) == 0 &&
	    find_dom(c, hap, &info) == 0 && info.outstanding_pages == 2048,
	    "claim 2048 pages");
	for (i = 0; i < 4; i++)
		e[i] = (struct hv_extent){ .gfn = i * 512ull, .order = 9,
		    .node = HV_NODE_ANY };
	ok(hvc_populate(c, hap, 0, e, 2, NULL, NULL) == 0 &&
	    find_dom(c, hap, &info) == 0 && info.outstanding_pages == 1024 &&
	    info.tot_pages == 1024, "populate takes from the claim");
	ok(hvc_domain_set(c, HV_OP_CLAIM, hap, 0) == 0 &&
	    find_dom(c, hap, &info) == 0 && info.outstanding_pages == 0,
	    "claim 0 cancels");
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, sh);
	hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, hap);
	ok(wait_clean(c) == 0, "clean again");
	/* The background workload may hold the domain a moment longer. */
	sleep_ms(300);
	hvc_counters(c, &c1);
	diag("unshadow flood %llu early %llu other %llu, emulated %llu",
	    (unsigned long long)(c1.unshadow[0] - c0.unshadow[0]),
	    (unsigned long long)(c1.unshadow[1] - c0.unshadow[1]),
	    (unsigned long long)(c1.unshadow[2] - c0.unshadow[2]),
	    (unsigned long long)(c1.emulated_pt_writes - c0.emulated_pt_writes));
	ok(c1.unshadow[HV_UNSHADOW_WRITE_FLOOD] -
	    c0.unshadow[HV_UNSHADOW_WRITE_FLOOD] >= 100 &&
	    c1.unshadow[HV_UNSHADOW_OTHER] > c0.unshadow[HV_UNSHADOW_OTHER] &&
	    c1.emulated_pt_writes - c0.emulated_pt_writes >= 900,
	    "host counters: unshadow by reason, emulated writes");
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* --topology host and --scrub-workers 0 (inline only).                */

static void
test_inline_host(void)
{
	struct hv_extent e[4];
	struct hv_scrub_reply *r;
	struct hv_scrub_node *n;
	struct hv_counters c0;
	struct hvc *c = conn("inline"), *s = conn("real");
	uint64_t f = 0, d = 0, t = 0;
	hv_domid_t id;
	uint32_t i, workers = 0;
	int boot = 0, rc;

	if (s) {
		ok(hvc_hello(s)->flags == 0,
		    "hello: a synthetic topology has no flag");
		hvc_close(s);
	}
	if (!c)
		return;
	ok(hvc_hello(c)->flags == HV_HELLO_TOPOLOGY_HOST,
	    "hello: --topology host says so (flags %#x)", hvc_hello(c)->flags);
	/* No waiting: the boot scrub was done before the socket served. */
	ok(hvc_scrub_progress(c, &r) == 0, "inline only: scrub progress");
	n = hvc_scrub_nodes(r);
	for (i = 0; i < r->nr_nodes; i++)
		workers += n[i].workers;
	ok(workers == 0, "inline only: 0 workers on every node");
	free(r);
	rc = host_pages(c, &f, &d, &t, &boot);
	ok(rc == 0 && d == 0 && boot && t > 0 &&
	    f == t, "inline only: boot scrub done at start (%llu of %llu "
	    "dirty)", (unsigned long long)d, (unsigned long long)t);
	hvc_counters(c, &c0);
	ok(c0.scrub_pages_boot == t && c0.scrub_pages_background == 0,
	    "inline only: every page counted as boot scrub (%llu)",
	    (unsigned long long)c0.scrub_pages_boot);
	id = create(c, "inline", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	for (i = 0; i < 4; i++)
		e[i] = (struct hv_extent){ .gfn = i * 512ull, .order = 9,
		    .node = HV_NODE_ANY };
	ok(hvc_populate(c, id, 0, e, 4, NULL, NULL) == 0 &&
	    hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, id) == 0,
	    "inline only: populate and destroy");
	/*
	 * The destroyed domain's memory comes back as hvsim gets to it:
	 * wait for it (bounded), rather than for a time that a busy machine
	 * may overrun.  No scrub worker, so it must come back dirty.
	 */
	for (i = 0; i < 400; i++) {
		rc = host_pages(c, &f, &d, &t, NULL);
		if (rc < 0 || d >= 4 * 512)
			break;
		sleep_ms(50);
	}
	ok(rc == 0 && d == 4 * 512,
	    "inline only: freed memory stays dirty (%llu)",
	    (unsigned long long)d);
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* Lifecycle: shutdown with a reason, the PV control node, the watch.  */

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct watch_arg {
	struct hvc *c;
	uint64_t since, gen;
	int rc;
};

static void *
watch_thread(void *arg)
{
	struct watch_arg *w = arg;

	w->rc = hvc_domain_watch(w->c, w->since, 20000, &w->gen);
	return NULL;
}

static void
test_lifecycle(void)
{
	struct hv_domain_control_reply cr;
	struct hv_domain_info info;
	struct hvc *c = conn("real"), *wc = conn("real");
	struct watch_arg wa;
	uint64_t g0, g1;
	pthread_t th;
	hv_domid_t d, e;
	long waited;
	int rc;

	if (!c || !wc)
		return;
	ok((hvc_hello(c)->caps & HV_CAP_LIFECYCLE) != 0,
	    "hello announces the lifecycle ops");
	ok(hvc_domain_watch(wc, 0, 1000, &g0) == 0 && g0 > 0,
	    "watch since 0 answers at once with the generation");
	d = create(c, "life", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	ok(hvc_domain_watch(wc, g0, 1000, &g1) == 0 && g1 > g0,
	    "a create moves the generation");
	/* A watch that waits, woken by a shutdown. */
	wa = (struct watch_arg){ .c = wc, .since = g1 };
	pthread_create(&th, NULL, watch_thread, &wa);
	sleep_ms(200);
	ok(hvc_domain_op(c, HV_OP_DOMAIN_UNPAUSE, d) == 0 &&
	    hvc_domain_shutdown(c, d, HV_SHUTDOWN_REBOOT) == 0,
	    "shut a running domain down (reboot)");
	pthread_join(th, NULL);
	ok(wa.rc == 0 && wa.gen > g1, "the waiting watch returns on the "
	    "shutdown (generation %llu -> %llu)", (unsigned long long)g1,
	    (unsigned long long)wa.gen);
	ok(find_dom(c, d, &info) == 0 && info.state == HV_DOMSTATE_SHUTDOWN &&
	    ((info.flags >> HV_DOMINF_SHUTDOWN_SHIFT) &
	    HV_DOMINF_SHUTDOWN_MASK) == HV_SHUTDOWN_REBOOT &&
	    (info.flags & HV_DOMF_HAP),
	    "listed as shut down, the reason in the flags beside HV_DOMF_*");
	ok(hvc_domain_shutdown(c, d, HV_SHUTDOWN_CRASH) == 0 &&
	    find_dom(c, d, &info) == 0 && ((info.flags >>
	    HV_DOMINF_SHUTDOWN_SHIFT) & 0xff) == HV_SHUTDOWN_REBOOT,
	    "a second shutdown keeps the first reason (as Xen)");
	ok(hvc_domain_op(c, HV_OP_DOMAIN_UNPAUSE, d) == 0 &&
	    find_dom(c, d, &info) == 0 && info.state == HV_DOMSTATE_SHUTDOWN,
	    "unpause does not bring a shut-down domain back");
	ok(hvc_domain_shutdown(c, d, 9) == -EINVAL &&
	    hvc_domain_shutdown(c, 4242, 0) == -ESRCH,
	    "shutdown: unknown reason -EINVAL, unknown domain -ESRCH");

	/* The control node: toolstack and guest sides. */
	e = create(c, "ctl", HV_DOMF_HVM | HV_DOMF_HAP, 1 << 20);
	ok(hvc_domain_control(c, e, HV_CONTROL_GET, 0, &cr) == 0 &&
	    cr.features == 0 && cr.request == HV_CONTROL_NONE,
	    "a new domain announces nothing and has no request");
	ok(hvc_domain_control(c, e, HV_CONTROL_ANNOUNCE,
	    HV_CONTROL_FEATURE_POWEROFF, &cr) == 0 &&
	    cr.features == HV_CONTROL_FEATURE_POWEROFF,
	    "the guest side announces feature-poweroff");
	ok(hvc_domain_control(c, e, HV_CONTROL_REQUEST, HV_SHUTDOWN_POWEROFF,
	    &cr) == 0 && cr.request == HV_SHUTDOWN_POWEROFF &&
	    cr.before == HV_CONTROL_NONE, "the toolstack posts poweroff");
	ok(hvc_domain_control(c, e, HV_CONTROL_TAKE, 0, &cr) == 0 &&
	    cr.before == HV_SHUTDOWN_POWEROFF && cr.request == HV_CONTROL_NONE,
	    "the guest takes it");
	ok(hvc_domain_control(c, e, HV_CONTROL_WITHDRAW, 0, &cr) == 0 &&
	    cr.before == HV_CONTROL_NONE,
	    "withdrawing a taken request finds nothing");
	ok(hvc_domain_control(c, e, HV_CONTROL_REQUEST, 7, &cr) == -EINVAL &&
	    hvc_domain_control(c, e, HV_CONTROL_ANNOUNCE, 0x10, &cr) ==
	    -EINVAL && hvc_domain_control(c, e, 99, 0, &cr) == -EINVAL,
	    "control: bad request, feature or op -EINVAL");
	ok(hvc_domain_control(c, e, HV_CONTROL_REQUEST, HV_SHUTDOWN_REBOOT,
	    &cr) == 0 && hvc_domain_shutdown(c, e, HV_SHUTDOWN_POWEROFF) == 0 &&
	    hvc_domain_control(c, e, HV_CONTROL_GET, 0, &cr) == 0 &&
	    cr.request == HV_CONTROL_NONE,
	    "a shutdown clears a posted request");

	/* Destroy moves the generation; a watch without change times out. */
	hvc_domain_watch(wc, 0, 1000, &g0);
	ok(hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, d) == 0 &&
	    hvc_domain_op(c, HV_OP_DOMAIN_DESTROY, e) == 0 &&
	    hvc_domain_watch(wc, g0, 1000, &g1) == 0 && g1 >= g0 + 2,
	    "destroys move the generation");
	waited = now_ms();
	rc = hvc_domain_watch(wc, g1, 1000, &g0);
	waited = now_ms() - waited;
	ok(rc == 0 && g0 == g1 && waited >= 900,
	    "a watch with nothing new returns the same generation after its "
	    "timeout (%ld ms)", waited);
	hvc_close(wc);
	hvc_close(c);
}

/*
 * hvops.def is the one description of the ops: hvsim refuses a request
 * of any other size than its line gives (one byte short, one byte over
 * when no array follows), and hvc_op refuses to send one, or to take a
 * reply into a buffer of another size, without breaking the connection.
 */
static void
test_op_table(void)
{
	struct hv_hello_reply hello;
	struct hv_counters ctr;
	struct hv_domid dom = { .domid = 4242 };
	/* Room for one byte over the largest request, hv_domain_vcpu's. */
	uint8_t req[sizeof(struct hv_domain_vcpu) + 1], rep[4096];
	unsigned bad = 0, checked = 0;
	struct hvc *c = conn("real");

	ok(c != NULL, "op table: connect");
	if (!c)
		return;
	memset(req, 0, sizeof(req));
	for (uint16_t op = 1; op < HV_OP_MAX; op++) {
		const struct hv_op_desc *d = hv_op_desc(op);
		size_t len = 0;

		if (d == NULL || d->req_len + 1 > sizeof(req)) {
			diag("op %u: no line, or a request over %zu bytes", op,
			    sizeof(req) - 1);
			bad++;
			continue;
		}
		if (d->req_len > 0) {
			checked++;
			if (hvc_call(c, op, req, d->req_len - 1, rep, sizeof(rep),
			    &len, NULL) != -EINVAL) {
				diag("%s: %u bytes taken", d->name,
				    d->req_len - 1);
				bad++;
			}
		}
		if (!d->req_tail) {
			checked++;
			if (hvc_call(c, op, req, d->req_len + 1, rep, sizeof(rep),
			    &len, NULL) != -EINVAL) {
				diag("%s: %u bytes taken", d->name,
				    d->req_len + 1);
				bad++;
			}
		}
	}
	ok(bad == 0 && checked > HV_OP_MAX,
	    "hvsim takes each op's request at the size of hvops.def only "
	    "(%u sizes checked)", checked);
	ok(hvc_op(c, HV_OP_DOMAIN_DESTROY, &dom, sizeof(dom) - 1, NULL, 0,
	    NULL) == -EINVAL &&
	    hvc_op(c, HV_OP_DOMAIN_DESTROY, &dom, sizeof(dom), rep, 8,
	    NULL) == -EINVAL &&
	    hvc_op(c, HV_OP_COUNTERS, NULL, 0, &ctr, sizeof(ctr) - 8,
	    NULL) == -EINVAL &&
	    hvc_op(c, 0, NULL, 0, NULL, 0, NULL) == -EINVAL &&
	    hvc_op(c, HV_OP_MAX, NULL, 0, NULL, 0, NULL) == -EINVAL &&
	    hvc_counters(c, &ctr) == 0,
	    "hvc_op: a request or reply buffer of another size than "
	    "hvops.def's, or an unknown op, is -EINVAL; the connection "
	    "stays usable");
	ok(hvc_op(c, HV_OP_HELLO, NULL, 0, &hello, sizeof(hello), NULL) == 0 &&
	    hello.abi_version == HV_ABI_VERSION &&
	    hvc_op(c, HV_OP_DOMAIN_DESTROY, &dom, sizeof(dom), NULL, 0,
	    NULL) == -ESRCH,
	    "hvc_op: hello, and a destroy of an unknown domain is -ESRCH");
	hvc_close(c);
}

/* ------------------------------------------------------------------ */
/* Pipelined calls (hvc_calls) and replies held together.              */

static void
test_pipelined(void)
{
	struct hv_hello_reply hello;
	struct hv_counters ctr;
	struct hv_domid dom = { .domid = 4242 };
	struct hv_host_info small;
	struct hv_host_info *hi = NULL;
	struct hv_domain_info *doms = NULL;
	struct hv_scrub_reply *scrub = NULL;
	struct {
		struct hv_msg_hdr h[2];
		struct hv_domain_watch w;
	} req;
	struct pollfd pfd;
	uint64_t gen;
	uint32_t nr = 0;
	char buf[8192];
	ssize_t n;
	size_t want;
	int scrub_rc = 1, fd, rc;
	struct hvc *c = conn("real");
	struct hvc_req v[4] = {
		{ .op = HV_OP_HELLO, .rep = &hello, .rep_cap = sizeof(hello) },
		{ .op = HV_OP_DOMAIN_DESTROY, .req = &dom,
		    .req_len = sizeof(dom) },
		/* Room for the fixed part only: the reply has nodes too. */
		{ .op = HV_OP_HOST_INFO, .rep = &small, .rep_cap = sizeof(small) },
		{ .op = HV_OP_COUNTERS, .rep = &ctr, .rep_cap = sizeof(ctr) },
	};

	ok(c != NULL, "pipelined: connect");
	if (!c)
		return;
	ok(hvc_calls(c, v, 0) == -EINVAL &&
	    hvc_calls(c, v, HVC_CALLS_MAX + 1) == -EINVAL,
	    "hvc_calls: no request, or more than HVC_CALLS_MAX, is -EINVAL");
	rc = hvc_calls(c, v, 4);
	ok(rc == 0 && v[0].rc == 0 && v[0].rep_len == sizeof(hello) &&
	    hello.abi_version == HV_ABI_VERSION && v[1].rc == -ESRCH &&
	    v[2].rc == -EMSGSIZE && v[3].rc == 0 &&
	    v[3].rep_len == sizeof(ctr),
	    "hvc_calls: four requests in one round trip, each answered as if "
	    "alone (%d: %d %d %d %d)", rc, v[0].rc, v[1].rc, v[2].rc, v[3].rc);
	ok(hvc_counters(c, &ctr) == 0,
	    "hvc_calls: the stream stays in step after a reply too large");
	ok(hvc_host_state(c, &hi, &doms, &nr, &scrub, &scrub_rc) == 0 &&
	    hi->nr_nodes == 2 && scrub_rc == 0 && scrub != NULL &&
	    scrub->nr_nodes == 2,
	    "hvc_host_state: host, domains (%u) and scrub progress at once",
	    nr);
	free(hi);
	free(doms);
	free(scrub);
	hvc_close(c);

	/*
	 * A hello and a watch that waits (nothing changes) in one write:
	 * hvsim holds the hello's reply while the watch is already there,
	 * so both come in one sendmsg() and the first read after the
	 * socket is readable takes both (the client wakes once, not once
	 * per reply).  Sent one by one, the hello's reply would come alone,
	 * the watch's some 300 ms later.
	 */
	fd = raw_conn();
	c = conn("real");
	if (c == NULL || hvc_domain_watch(c, 0, 0, &gen) < 0)
		gen = 0;
	hvc_close(c);
	memset(&req, 0, sizeof(req));
	req.h[0] = (struct hv_msg_hdr){ .magic = HV_MSG_MAGIC,
	    .version = HV_ABI_VERSION, .op = HV_OP_HELLO, .seq = 100 };
	req.h[1] = (struct hv_msg_hdr){ .magic = HV_MSG_MAGIC,
	    .version = HV_ABI_VERSION, .op = HV_OP_DOMAIN_WATCH,
	    .len = sizeof(req.w), .seq = 101 };
	req.w = (struct hv_domain_watch){ .since = gen, .timeout_ms = 300 };
	want = 2 * sizeof(struct hv_msg_hdr) + sizeof(hello) +
	    sizeof(struct hv_domain_watch_reply);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	n = fd >= 0 && gen != 0 &&
	    write(fd, &req, sizeof(req)) == (ssize_t)sizeof(req) &&
	    poll(&pfd, 1, 30000) == 1 ? read(fd, buf, sizeof(buf)) : -1;
	ok(n == (ssize_t)want,
	    "replies to requests sent together come together (%zd of %zu "
	    "bytes in the first read)", n, want);
	if (fd >= 0)
		close(fd);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: socket_client DIR PHANTOM_PID\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	test_real();
	test_malformed();
	test_op_table();
	test_pipelined();
	test_domain_ops();
	test_lifecycle();
	test_flush_modes();
	test_phantom(argv[2]);
	test_inline_host();
	return tap_status();
}
