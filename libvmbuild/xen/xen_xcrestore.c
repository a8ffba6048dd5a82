/*
 * xen_xcrestore.c - a PVH guest's libxc stream (v2/v3, x86 HVM type)
 * restored by vmbuild itself rather than by libxenguest's
 * xc_domain_restore: the "engine" restore (vmb_ctx_set_native_restore).
 * The build has populated the guest's RAM through the populate engine
 * (NUMA-local batches, superpages) as for a fresh create; the stream,
 * read by xen_xcstream.c, is applied here:
 *
 *   PAGE_DATA: the pfns with data mapped in one batch and the pages read
 *     from the stream straight into the mapping (no copy through a
 *     buffer); from a file, a record whose pages all fall in the
 *     windows over the build's RAM is read on reader threads while the
 *     next is mapped (xen_xcstream.c).  A pfn the build did not
 *     populate (the special pages and
 *     ACPI tables in the MMIO hole, a page the guest ballooned in beyond
 *     its layout) fails to map: it is populated (4 KiB) and the batch
 *     mapped again.  XALLOC: populated, no data; BROKEN: nothing.
 *     XTAB (not the guest's on the source: ballooned out, or no RAM
 *     there): a pfn of the RAM the build populated is noted, and given
 *     back (decrease_reservation) at the end unless a later record of a
 *     live stream sent it again, so that the guest holds what it held.
 *   STATIC_DATA_END: the CPUID and MSR policies set
 *     (xc_set_domain_cpu_policy), when the stream had them.
 *   X86_TSC_INFO: xc_domain_set_tsc_info.
 *   HVM_PARAMS: each set; the console and store pfns kept and their
 *     pages cleared, as the ioreq pages (as libxenguest does: the
 *     consoled and xenstored of this host start them again);
 *     PAE_ENABLED, obsolete, dropped.
 *   END: the store and console event channels (allocated by the caller)
 *     set as HVM parameters, the HVM context (vCPUs, devices) set, the
 *     grant table seeded with the console and store pages.
 *
 * The same as libxenguest's xg_sr_restore.c and xg_sr_restore_x86_hvm.c
 * do for an HVM stream, read from the spec and checked against them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "vmb_internal.h"
#include "xen_priv.h"
#include "xen_xcstream.h"

#include <xenguest.h>
#include <xen/hvm/params.h>

/*
 * The guest's memory is mapped in windows of WIN_PAGES pfns, kept while
 * the stream goes on (at most WIN_MAX, the oldest unmapped for a new
 * one): a libxc stream sends the pfns in order, 1024 to a record, and a
 * window's one map serves eight records, the rounds of a live stream
 * again.  A pfn of a window that did not map (not populated: the
 * special pages, ACPI tables) goes through the batch's own mapping,
 * populated first.
 */
#define WIN_SHIFT	13
#define WIN_PAGES	(1u << WIN_SHIFT)	/* 32 MiB */
#define WIN_MAX		32			/* 1 GiB mapped at most */

struct win {
	uint64_t	base;		/* first pfn; UINT64_MAX: unused */
	uint8_t		*map;
	int		*errs;		/* per pfn: 0 mapped */
	uint64_t	used;		/* when last used (a counter) */
};

struct xcr {
	struct xen_be	*be;
	xc_interface	*xch;
	uint32_t	domid;
	uint64_t	pfn_limit;
	uint32_t	store_port, store_domid;
	uint32_t	console_port, console_domid;
	uint64_t	store_gfn, console_gfn;
	/* One batch's pfns (as xen_pfn_t) and map errors. */
	xen_pfn_t	*gfns;
	int		*errs;
	xen_pfn_t	*fill;
	uint32_t	size;
	struct iovec	*iov;
	uint32_t	*slot;		/* per pfn with data: its place */
	/* The batch's own mapping (pfns outside the windows), or NULL. */
	void		*bmap;
	uint32_t	bmap_n;
	struct win	win[WIN_MAX];
	uint64_t	tick;
	uint64_t	rec_tick;	/* tick when this record began */
	/* A record's pages went to the windows to be read later: until the
	 * reader drained (XCS_PAGES_DRAIN), no window may be unmapped. */
	bool		later;
	/* Windows only at or below the highest pfn the build populated. */
	uint64_t	win_limit;
	/* XTAB pfns of the build's RAM (a bit each, from pfn 0), or NULL. */
	uint64_t	*xtab;
	uint64_t	xtab_bits;	/* pfns the bitmap covers */
	struct vmb_ram_layout ram;
	/* What it took (xcrestore's debug line). */
	uint64_t	populated;	/* pfns populated here, on demand */
	uint64_t	released;	/* XTAB pfns given back */
	uint64_t	windows, win_pages, batch_pages;
	uint64_t	map_ns, unmap_ns, pop_ns, read_ns, end_ns, t_pages;
};

static int
grow(struct xcr *x, uint32_t count)
{
	xen_pfn_t *g, *f;
	struct iovec *v;
	uint32_t *sl;
	int *e;

	if (count <= x->size)
		return 0;
	g = realloc(x->gfns, count * sizeof(*g));
	if (g != NULL)
		x->gfns = g;
	e = g ? realloc(x->errs, count * sizeof(*e)) : NULL;
	if (e != NULL)
		x->errs = e;
	f = e ? realloc(x->fill, count * sizeof(*f)) : NULL;
	if (f != NULL)
		x->fill = f;
	v = f ? realloc(x->iov, count * sizeof(*v)) : NULL;
	if (v != NULL)
		x->iov = v;
	sl = v ? realloc(x->slot, count * sizeof(*sl)) : NULL;
	if (sl == NULL)
		return -ENOMEM;
	x->slot = sl;
	x->size = count;
	return 0;
}

/*
 * The window of pfn, mapped (NULL: it cannot be: the batch's way; or,
 * *drain set, the least recently used window is to be unmapped for it
 * while reads handed out may still fill it: XCS_PAGES_DRAIN first).
 */
static struct win *
window(struct xcr *x, uint64_t pfn, bool *drain)
{
	uint64_t base = pfn & ~(uint64_t)(WIN_PAGES - 1);
	struct win *w = NULL, *old = &x->win[0];
	xen_pfn_t *g;
	uint64_t t0;

	for (int i = 0; i < WIN_MAX; i++) {
		if (x->win[i].map != NULL && x->win[i].base == base) {
			x->win[i].used = ++x->tick;
			return &x->win[i];
		}
		if (x->win[i].map == NULL && w == NULL)
			w = &x->win[i];
		if (x->win[i].used < old->used)
			old = &x->win[i];
	}
	/* Every window is this record's (its iovecs point there): the batch
	 * maps this pfn instead. */
	if (w == NULL && old->used > x->rec_tick)
		return NULL;
	if (w == NULL && x->later) {
		x->later = false;	/* the reader drains before asking again */
		*drain = true;
		return NULL;
	}
	if (w == NULL) {
		w = old;
		t0 = vmb__now_ns();
		xenforeignmemory_unmap(x->be->fmem, w->map, WIN_PAGES);
		x->unmap_ns += vmb__now_ns() - t0;
		w->map = NULL;
	}
	if (w->errs == NULL && (w->errs = malloc(WIN_PAGES *
	    sizeof(*w->errs))) == NULL)
		return NULL;
	if ((g = malloc(WIN_PAGES * sizeof(*g))) == NULL)
		return NULL;
	for (uint32_t i = 0; i < WIN_PAGES; i++)
		g[i] = (xen_pfn_t)(base + i);
	t0 = vmb__now_ns();
	w->map = xenforeignmemory_map(x->be->fmem, x->domid,
	    PROT_READ | PROT_WRITE, WIN_PAGES, g, w->errs);
	x->map_ns += vmb__now_ns() - t0;
	free(g);
	if (w->map == NULL) {
		x->win_limit = 0;	/* no windows: each batch its own map */
		return NULL;
	}
	w->base = base;
	w->used = ++x->tick;
	x->windows++;
	return w;
}

/*
 * A restored guest's windows unmapped after it is handed back: the
 * guest may run meanwhile (the mappings only hold its pages), and the
 * restore does not wait for some 65536 PTEs per 256 MiB to be zapped.
 */
struct unmapper {
	struct xen_be	*be;
	struct win	win[WIN_MAX];
};

static void *
unmap_thread(void *arg)
{
	struct unmapper *um = arg;
	struct xen_be *be = um->be;

	for (int i = 0; i < WIN_MAX; i++) {
		if (um->win[i].map != NULL)
			xenforeignmemory_unmap(be->fmem, um->win[i].map,
			    WIN_PAGES);
		free(um->win[i].errs);
	}
	free(um);
	__atomic_sub_fetch(&be->unmapping, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* The windows to a thread of their own (0), else -errno: unmap here. */
static int
windows_unmap_later(struct xcr *x)
{
	struct unmapper *um = malloc(sizeof(*um));
	pthread_attr_t at;
	pthread_t t;
	int rc;

	if (um == NULL)
		return -ENOMEM;
	um->be = x->be;
	memcpy(um->win, x->win, sizeof(um->win));
	__atomic_add_fetch(&x->be->unmapping, 1, __ATOMIC_ACQ_REL);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&t, &at, unmap_thread, um);
	pthread_attr_destroy(&at);
	if (rc < 0) {
		__atomic_sub_fetch(&x->be->unmapping, 1, __ATOMIC_RELEASE);
		free(um);
		return rc;
	}
	for (int i = 0; i < WIN_MAX; i++) {
		x->win[i].map = NULL;
		x->win[i].errs = NULL;
	}
	return 0;
}

static void
windows_unmap(struct xcr *x)
{
	for (int i = 0; i < WIN_MAX; i++) {
		if (x->win[i].map != NULL)
			xenforeignmemory_unmap(x->be->fmem, x->win[i].map,
			    WIN_PAGES);
		free(x->win[i].errs);
		x->win[i].map = NULL;
		x->win[i].errs = NULL;
	}
}

/*
 * Map x->gfns[0..n) read-write; those that do not map (not populated)
 * are populated and the whole mapped again.  The mapping, or NULL with
 * rc and why.
 */
static void *
map_populating(struct xcr *x, uint32_t n, int *rc, char *why, size_t len)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		uint64_t t0 = vmb__now_ns();
		uint32_t nf = 0;
		int prc;
		void *m;

		m = xenforeignmemory_map(x->be->fmem, x->domid,
		    PROT_READ | PROT_WRITE, n, x->gfns, x->errs);
		x->map_ns += vmb__now_ns() - t0;
		if (m == NULL) {
			*rc = -xen_errno();
			snprintf(why, len, "cannot map %u pfns of domain %u: "
			    "%s", n, x->domid, strerror(-*rc));
			return NULL;
		}
		for (uint32_t i = 0; i < n; i++)
			if (x->errs[i] != 0)
				x->fill[nf++] = x->gfns[i];
		if (nf == 0)
			return m;
		xenforeignmemory_unmap(x->be->fmem, m, n);
		if (attempt > 0) {
			*rc = -EIO;
			snprintf(why, len, "pfn %#llx of domain %u does not map "
			    "even once populated",
			    (unsigned long long)x->fill[0], x->domid);
			return NULL;
		}
		/* Duplicates within a batch: each pfn populated once. */
		{
			uint32_t k = 0;

			for (uint32_t i = 0; i < nf; i++) {
				bool dup = false;

				for (uint32_t j = 0; j < k && !dup; j++)
					dup = x->fill[j] == x->fill[i];
				if (!dup)
					x->fill[k++] = x->fill[i];
			}
			nf = k;
		}
		t0 = vmb__now_ns();
		prc = xc_domain_populate_physmap_exact(x->xch, x->domid, nf,
		    0, 0, x->fill);
		x->pop_ns += vmb__now_ns() - t0;
		if (prc != 0) {
			*rc = -xen_errno();
			snprintf(why, len, "cannot populate %u pfns of domain %u "
			    "beyond its built memory (first %#llx): %s", nf,
			    x->domid, (unsigned long long)x->fill[0],
			    strerror(-*rc));
			return NULL;
		}
		x->populated += nf;
	}
	*rc = -EIO;
	snprintf(why, len, "mapping domain %u's pfns failed", x->domid);
	return NULL;
}

/* Is pfn in the RAM the build populated? */
static bool
in_ram(const struct xcr *x, uint64_t pfn)
{
	uint64_t a = pfn << XC_PAGE_SHIFT;

	if (a >= x->ram.vga_start && a < x->ram.vga_end)
		return false;
	return a < x->ram.lowmem_end ||
	    (x->ram.highmem_end && a >= VMB_4GIB && a < x->ram.highmem_end);
}

/*
 * Note an XTAB pfn (on) or a pfn the stream gave again (off).  The
 * bitmap covers the build's RAM, allocated at the first XTAB there.
 */
static int
xtab_note(struct xcr *x, uint64_t pfn, bool on)
{
	if (!in_ram(x, pfn))
		return 0;
	if (x->xtab == NULL) {
		if (!on)
			return 0;
		x->xtab_bits = (x->ram.highmem_end > x->ram.lowmem_end ?
		    x->ram.highmem_end : x->ram.lowmem_end) >> XC_PAGE_SHIFT;
		x->xtab = calloc((x->xtab_bits + 63) / 64, sizeof(uint64_t));
		if (x->xtab == NULL)
			return -ENOMEM;
	}
	if (pfn >= x->xtab_bits)
		return 0;
	if (on)
		x->xtab[pfn / 64] |= 1ull << (pfn % 64);
	else
		x->xtab[pfn / 64] &= ~(1ull << (pfn % 64));
	return 0;
}

/*
 * batch[0..n) given back.  A pfn that is not populated (the build's RAM
 * should be, all of it) stops a call short (decrease_reservation stops
 * at it): it is stepped over.
 */
static int
release_batch(struct xcr *x, xen_pfn_t *batch, uint32_t n, char *why,
    size_t len)
{
	for (uint32_t i = 0; i < n; ) {
		int done = xc_domain_decrease_reservation(x->xch, x->domid,
		    n - i, 0, batch + i);

		if (done < 0) {
			int rc = -xen_errno();

			snprintf(why, len, "cannot give back pfn %#llx "
			    "(ballooned out on the source): %s",
			    (unsigned long long)batch[i], strerror(-rc));
			return rc;
		}
		x->released += (uint64_t)done;
		i += (uint32_t)done;
		if (i < n)
			i++;
	}
	return 0;
}

/* The noted pfns given back, 1024 to a call. */
static int
xtab_release(struct xcr *x, char *why, size_t len)
{
	xen_pfn_t batch[1024];
	uint64_t words = (x->xtab_bits + 63) / 64;
	uint32_t n = 0;
	int rc = 0;

	for (uint64_t w = 0; x->xtab != NULL && w < words && rc == 0; w++)
		for (uint64_t bits = x->xtab[w]; bits && rc == 0;
		    bits &= bits - 1) {
			batch[n++] = (xen_pfn_t)(w * 64 +
			    (uint64_t)__builtin_ctzll(bits));
			if (n == 1024) {
				rc = release_batch(x, batch, n, why, len);
				n = 0;
			}
		}
	if (rc == 0 && n > 0)
		rc = release_batch(x, batch, n, why, len);
	return rc;
}

static int
on_pages(void *u, uint32_t count, const uint64_t *pfns, const uint32_t *types,
    uint32_t nr_data, struct iovec **iov, int *iovcnt, char *why, size_t len)
{
	struct xcr *x = u;
	uint32_t n = 0, d = 0;
	int rc = 0, nv = 0;
	bool drain = false;
	void *m;

	if (grow(x, count) < 0) {
		snprintf(why, len, "out of memory for %u pfns", count);
		return -ENOMEM;
	}
	/* Allocate-only pages: populated (if they are not), no data. */
	for (uint32_t i = 0; i < count; i++) {
		if (types[i] == XCS_TYPE_XALLOC)
			x->gfns[n++] = (xen_pfn_t)pfns[i];
		if (types[i] != XCS_TYPE_BROKEN && xtab_note(x, pfns[i],
		    types[i] == XCS_TYPE_XTAB) < 0) {
			snprintf(why, len, "out of memory for the ballooned-"
			    "out pfns");
			return -ENOMEM;
		}
	}
	if (n > 0) {
		if ((m = map_populating(x, n, &rc, why, len)) == NULL)
			return rc;
		xenforeignmemory_unmap(x->be->fmem, m, n);
	}
	if (nr_data == 0)
		return 0;
	/*
	 * Each page with data: into its window where it mapped, else
	 * (slot >= nr_data: index into the batch's own mapping) later.
	 */
	n = 0;
	x->rec_tick = x->tick;
	for (uint32_t i = 0; i < count; i++) {
		struct win *w;
		uint64_t pfn = pfns[i];

		if (types[i] == XCS_TYPE_XTAB || types[i] == XCS_TYPE_XALLOC ||
		    types[i] == XCS_TYPE_BROKEN)
			continue;
		if (d >= nr_data) {
			snprintf(why, len, "more pfns with data than %u",
			    nr_data);
			return -EINVAL;
		}
		w = pfn <= x->win_limit ? window(x, pfn, &drain) : NULL;
		if (drain)
			return XCS_PAGES_DRAIN;
		if (w != NULL && w->errs[pfn - w->base] == 0) {
			x->iov[d].iov_base = w->map + (pfn - w->base) *
			    XCS_PAGE_SIZE;
			x->slot[d] = UINT32_MAX;
		} else {
			x->slot[d] = n;
			x->gfns[n++] = (xen_pfn_t)pfn;
		}
		d++;
	}
	if (d != nr_data) {
		snprintf(why, len, "%u pfns with data, %u expected", d,
		    nr_data);
		return -EINVAL;
	}
	x->win_pages += d - n;	/* counted once asked no more (no DRAIN) */
	x->bmap = NULL;
	x->bmap_n = n;
	if (n > 0) {
		if ((x->bmap = map_populating(x, n, &rc, why, len)) == NULL)
			return rc;
		x->batch_pages += n;
	}
	/* The iovecs, in order, neighbours in memory joined. */
	for (uint32_t i = 0; i < d; i++) {
		uint8_t *p = x->slot[i] == UINT32_MAX ?
		    (uint8_t *)x->iov[i].iov_base :
		    (uint8_t *)x->bmap + (size_t)x->slot[i] * XCS_PAGE_SIZE;

		if (nv > 0 && (uint8_t *)x->iov[nv - 1].iov_base +
		    x->iov[nv - 1].iov_len == p)
			x->iov[nv - 1].iov_len += XCS_PAGE_SIZE;
		else {
			x->iov[nv].iov_base = p;
			x->iov[nv++].iov_len = XCS_PAGE_SIZE;
		}
	}
	*iov = x->iov;
	*iovcnt = nv;
	x->t_pages = vmb__now_ns();
	/* Windows stay mapped until a drain: the reader may fill them later. */
	if (n > 0)
		return 0;
	x->later = true;
	return XCS_PAGES_LATER;
}

static void
on_pages_done(void *u, uint32_t nr_data, int rc)
{
	struct xcr *x = u;
	uint64_t t0 = vmb__now_ns();

	(void)rc;
	if (nr_data > 0 && x->t_pages)
		x->read_ns += t0 - x->t_pages;
	x->t_pages = 0;
	if (x->bmap != NULL) {
		xenforeignmemory_unmap(x->be->fmem, x->bmap, x->bmap_n);
		x->unmap_ns += vmb__now_ns() - t0;
	}
	x->bmap = NULL;
}

static int
on_static_data(void *u, const void *cpuid, uint32_t cpuid_len,
    const void *msr, uint32_t msr_len, char *why, size_t len)
{
	struct xcr *x = u;
	uint32_t nr_leaves = cpuid_len / sizeof(xen_cpuid_leaf_t);
	uint32_t nr_msrs = msr_len / sizeof(xen_msr_entry_t);
	uint32_t err_l = ~0u, err_s = ~0u, err_m = ~0u;
	int rc;

	/* None: the build's policy stays (libxenguest: the same). */
	if (nr_leaves == 0 && nr_msrs == 0)
		return 0;
	if (xc_set_domain_cpu_policy(x->xch, x->domid, nr_leaves,
	    (xen_cpuid_leaf_t *)cpuid, nr_msrs, (xen_msr_entry_t *)msr,
	    &err_l, &err_s, &err_m) != 0) {
		rc = -xen_errno();
		snprintf(why, len, "cannot set the CPU policy (%u leaves, %u "
		    "MSRs; leaf %#x subleaf %#x msr %#x): %s", nr_leaves,
		    nr_msrs, err_l, err_s, err_m, strerror(-rc));
		return rc;
	}
	return 0;
}

static int
on_tsc(void *u, const struct xcs_tsc *t, char *why, size_t len)
{
	struct xcr *x = u;
	int rc;

	if (xc_domain_set_tsc_info(x->xch, x->domid, t->mode, t->nsec, t->khz,
	    t->incarnation) != 0) {
		rc = -xen_errno();
		snprintf(why, len, "cannot set the TSC (mode %u, %u kHz): %s",
		    t->mode, t->khz, strerror(-rc));
		return rc;
	}
	return 0;
}

static int
on_hvm_params(void *u, uint32_t count, const uint64_t *index,
    const uint64_t *value, char *why, size_t len)
{
	struct xcr *x = u;
	int rc;

	for (uint32_t i = 0; i < count; i++) {
		bool page = false;

		if (index[i] >= HVM_NR_PARAMS) {
			snprintf(why, len, "entry %u: parameter %llu: over "
			    "Xen's %u", i, (unsigned long long)index[i],
			    HVM_NR_PARAMS);
			return -EINVAL;
		}
		switch (index[i]) {
		case HVM_PARAM_PAE_ENABLED:
			continue;	/* obsolete, as libxenguest drops it */
		case HVM_PARAM_CONSOLE_PFN:
			x->console_gfn = value[i];
			page = true;
			break;
		case HVM_PARAM_STORE_PFN:
			x->store_gfn = value[i];
			page = true;
			break;
		case HVM_PARAM_IOREQ_PFN:
		case HVM_PARAM_BUFIOREQ_PFN:
			page = true;
			break;
		}
		if (page && value[i] >= x->pfn_limit) {
			snprintf(why, len, "entry %u: parameter %llu: pfn "
			    "%#llx beyond the guest's limit %#llx", i,
			    (unsigned long long)index[i],
			    (unsigned long long)value[i],
			    (unsigned long long)x->pfn_limit);
			return -EINVAL;
		}
		/* Its old contents are the old host's: as libxenguest. */
		if (page)
			(void)xc_clear_domain_page(x->xch, x->domid,
			    (xen_pfn_t)value[i]);
		if (xc_hvm_param_set(x->xch, x->domid, (uint32_t)index[i],
		    value[i]) < 0) {
			rc = -xen_errno();
			snprintf(why, len, "cannot set HVM parameter %llu to "
			    "%#llx: %s", (unsigned long long)index[i],
			    (unsigned long long)value[i], strerror(-rc));
			return rc;
		}
	}
	return 0;
}

static int
on_end(void *u, const void *ctx, uint32_t ctx_len, char *why, size_t len)
{
	struct xcr *x = u;
	uint64_t t0 = vmb__now_ns();
	const char *step;

	step = "setting HVM_PARAM_STORE_EVTCHN";
	if (xc_hvm_param_set(x->xch, x->domid, HVM_PARAM_STORE_EVTCHN,
	    x->store_port) < 0)
		goto fail;
	step = "setting HVM_PARAM_CONSOLE_EVTCHN";
	if (xc_hvm_param_set(x->xch, x->domid, HVM_PARAM_CONSOLE_EVTCHN,
	    x->console_port) < 0)
		goto fail;
	step = "setting the HVM context";
	if (xc_domain_hvm_setcontext(x->xch, x->domid, (uint8_t *)ctx,
	    ctx_len) < 0)
		goto fail;
	step = "seeding the grant table";
	if (xc_dom_gnttab_seed(x->xch, x->domid, true,
	    (xen_pfn_t)x->console_gfn, (xen_pfn_t)x->store_gfn,
	    x->console_domid, x->store_domid) != 0)
		goto fail;
	x->end_ns = vmb__now_ns() - t0;
	return 0;
fail:
	{
		int rc = -xen_errno();

		snprintf(why, len, "%s: %s", step, strerror(-rc));
		return rc;
	}
}

int
xen_xcrestore(struct xen_be *be, xc_interface *xch, uint32_t domid, int fd,
    const struct xen_xcrestore_args *a, uint64_t *ret_store_gfn,
    uint64_t *ret_console_gfn, char *why, size_t len)
{
	static const struct xcs_ops ops = {
		.pages = on_pages,
		.pages_done = on_pages_done,
		.static_data = on_static_data,
		.tsc = on_tsc,
		.hvm_params = on_hvm_params,
		.end = on_end,
	};
	struct xcr x = { .be = be, .xch = xch, .domid = domid,
	    .pfn_limit = a->pfn_limit, .store_port = a->store_port,
	    .store_domid = a->store_domid, .console_port = a->console_port,
	    .console_domid = a->console_domid, .ram = a->ram };
	struct xcs_stats st;
	uint64_t t0 = vmb__now_ns();

	xen_pfn_t maxpfn = 0;
	int rc;

	/* The build's RAM, populated: above it nothing to window. */
	x.win_limit = xc_domain_maximum_gpfn(xch, domid, &maxpfn) == 0 ?
	    (uint64_t)maxpfn : 0;
	for (int i = 0; i < WIN_MAX; i++)
		x.win[i].base = UINT64_MAX;
	rc = vmb__xcs_read(fd, a->pfn_limit, &ops, &x, &st, why, len);
	/* Mapped still in a window (unmapped below): freed once it is. */
	if (rc == 0)
		rc = xtab_release(&x, why, len);
	{
		uint64_t t1 = vmb__now_ns();

		if (rc < 0 || windows_unmap_later(&x) < 0)
			windows_unmap(&x);
		x.unmap_ns += vmb__now_ns() - t1;
	}
	if (rc == 0) {
		*ret_store_gfn = x.store_gfn;
		*ret_console_gfn = x.console_gfn;
	}
	if (be->debug)
		fprintf(stderr, "xcrestore: domain %u: %s: v%u from Xen %u.%u, "
		    "%llu bytes, %u records, %llu PAGE_DATA, %llu pages "
		    "(%llu through %llu windows, %llu batch-mapped), %llu "
		    "populated on demand, %llu given back (XTAB), %llu read "
		    "on %u reader threads; %.3f s: read %.3f, waiting for "
		    "the readers %.3f, map %.3f, unmap %.3f, populate %.3f, "
		    "end %.3f\n", domid,
		    rc == 0 ? "restored" : "failed", st.version, st.xen_major,
		    st.xen_minor, (unsigned long long)st.bytes, st.records,
		    (unsigned long long)st.page_records,
		    (unsigned long long)st.pages,
		    (unsigned long long)x.win_pages,
		    (unsigned long long)x.windows,
		    (unsigned long long)x.batch_pages,
		    (unsigned long long)x.populated,
		    (unsigned long long)x.released,
		    (unsigned long long)st.pages_later, st.readers,
		    (double)(vmb__now_ns() - t0) / 1e9,
		    (double)x.read_ns / 1e9, (double)st.wait_ns / 1e9,
		    (double)x.map_ns / 1e9,
		    (double)x.unmap_ns / 1e9, (double)x.pop_ns / 1e9,
		    (double)x.end_ns / 1e9);
	free(x.xtab);
	free(x.gfns);
	free(x.errs);
	free(x.fill);
	free(x.iov);
	free(x.slot);
	return rc;
}
