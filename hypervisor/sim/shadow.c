/*
 * shadow.c - the shadow-paging model for domains without HAP (post 004).
 *
 * hvsim runs no guest code, so the guest is a synthetic workload: a set
 * of guest page-table pages, each with its 512 guest entries and their
 * shadow.  A write to a shadowed page traps (a shadow fault) and is
 * emulated: the guest entry is written and its shadow re-validated.  A
 * write to a page that is not shadowed goes straight through.  A page the
 * guest uses as a page table again is re-shadowed (another fault).
 *
 * The unshadow heuristic (sh_heuristic): after `threshold` consecutive
 * emulated writes to the same page the page is taken to be data and
 * unshadowed (KVM's write-flooding detection, post 004: 3 writes); Xen's
 * own early unshadow fires on the 2nd consecutive zero write to the same
 * page (a process tearing down its page tables).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvsim.h"

#define SH_PT_PAGES	32
#define SH_ENTRIES	512
#define SH_BURST	16	/* data writes to a page turned buffer */
#define SH_MAX_WRITES	100000000ull	/* per request: bounded work */

struct shadow {
	pthread_mutex_t lock;
	uint32_t domid;
	uint64_t rng;
	uint32_t cursor;
	struct sh_track t;
	uint8_t shadowed[SH_PT_PAGES];
	uint64_t guest[SH_PT_PAGES][SH_ENTRIES];
	uint64_t shadow[SH_PT_PAGES][SH_ENTRIES];
};

int
sh_heuristic(struct sh_track *t, uint32_t page, uint64_t val,
    uint32_t threshold)
{
	if (t->consecutive == 0 || page != t->last_page) {
		t->last_page = page;
		t->consecutive = 0;
		t->zeros = 0;
	}
	t->consecutive++;
	t->zeros = val == 0 ? t->zeros + 1 : 0;
	if (t->zeros >= 2) {
		t->consecutive = t->zeros = 0;
		return HV_UNSHADOW_EARLY;
	}
	if (t->consecutive >= threshold) {
		t->consecutive = t->zeros = 0;
		return HV_UNSHADOW_WRITE_FLOOD;
	}
	return -1;
}

static uint64_t
rnd(struct shadow *sh)
{
	/* xorshift64: deterministic per domain, cheap. */
	sh->rng ^= sh->rng << 13;
	sh->rng ^= sh->rng >> 7;
	sh->rng ^= sh->rng << 17;
	return sh->rng;
}

static uint64_t
validate(uint64_t gpte)
{
	/* The shadow of a present entry: frame kept, access bits masked. */
	return gpte ? (gpte & ~0xfffull) | 0x1 : 0;
}

/* The guest starts using `page` as a page table: shadow it. */
static void
use_as_pt(struct shadow *sh, uint32_t page, struct hv_shadow_workload_reply *r)
{
	uint32_t i;

	if (sh->shadowed[page])
		return;
	for (i = 0; i < SH_ENTRIES; i++)
		sh->shadow[page][i] = validate(sh->guest[page][i]);
	sh->shadowed[page] = 1;
	r->shadow_faults++;
}

static void
guest_write(struct hv *hv, struct shadow *sh, uint32_t page, uint32_t slot,
    uint64_t val, struct hv_shadow_workload_reply *r)
{
	int reason;

	sh->guest[page][slot] = val;
	r->guest_writes++;
	if (!sh->shadowed[page])
		return;		/* data page: no trap */
	r->shadow_faults++;
	r->emulated_writes++;
	sh->shadow[page][slot] = validate(val);
	reason = sh_heuristic(&sh->t, page, val, hv->cfg.shadow_threshold);
	if (reason >= 0) {
		sh->shadowed[page] = 0;
		r->unshadow[reason]++;
	}
}

struct shadow *
shadow_new(uint32_t domid)
{
	struct shadow *sh = calloc(1, sizeof(*sh));
	uint32_t i;

	if (!sh)
		return NULL;
	pthread_mutex_init(&sh->lock, NULL);
	sh->domid = domid;
	sh->rng = 0x9e3779b97f4a7c15ull ^ domid;
	for (i = 0; i < SH_PT_PAGES; i++)
		sh->shadowed[i] = 1;
	return sh;
}

void
shadow_free(struct hv *hv, struct shadow *sh)
{
	uint32_t i, n = 0;

	if (!sh)
		return;
	for (i = 0; i < SH_PT_PAGES; i++)
		n += sh->shadowed[i];
	/* Teardown unshadows what is left. */
	if (hv)
		CTR_ADD(hv, unshadow[HV_UNSHADOW_OTHER], n);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

int
shadow_run(struct hv *hv, struct shadow *sh, uint32_t pattern,
    uint64_t nr_writes, struct hv_shadow_workload_reply *rep)
{
	struct hv_shadow_workload_reply r = { 0 };
	uint64_t t0 = hv_now_ns();
	uint32_t i, page;

	if (pattern < HV_SHADOW_PT_UPDATE || pattern > HV_SHADOW_FORK_EXIT ||
	    nr_writes > SH_MAX_WRITES)
		return -EINVAL;
	pthread_mutex_lock(&sh->lock);
	while (r.emulated_writes < nr_writes) {
		switch (pattern) {
		case HV_SHADOW_PT_UPDATE:
			/* Scattered PTE updates: tables stay tables. */
			page = (uint32_t)(rnd(sh) % SH_PT_PAGES);
			use_as_pt(sh, page, &r);
			guest_write(hv, sh, page, (uint32_t)(rnd(sh) % SH_ENTRIES),
			    (rnd(sh) & ~0xfffull) | 0x67, &r);
			break;
		case HV_SHADOW_IPERF:
			/*
			 * A freed page-table page is reused as a network
			 * buffer: a burst of data writes.  Without the
			 * heuristic every one of them is emulated.
			 */
			page = sh->cursor++ % SH_PT_PAGES;
			use_as_pt(sh, page, &r);
			for (i = 0; i < SH_BURST && r.emulated_writes < nr_writes;
			    i++)
				guest_write(hv, sh, page, i, rnd(sh) | 1, &r);
			break;
		case HV_SHADOW_FORK_EXIT:
			/* A process exits: its L1 entries are cleared. */
			page = sh->cursor++ % SH_PT_PAGES;
			use_as_pt(sh, page, &r);
			for (i = 0; i < 8 && r.emulated_writes < nr_writes; i++)
				guest_write(hv, sh, page, i, 0, &r);
			break;
		}
	}
	pthread_mutex_unlock(&sh->lock);
	r.elapsed_ns = hv_now_ns() - t0;
	CTR_ADD(hv, emulated_pt_writes, r.emulated_writes);
	CTR_ADD(hv, shadow_faults, r.shadow_faults);
	for (i = 0; i < HV_UNSHADOW_REASON_MAX; i++)
		CTR_ADD(hv, unshadow[i], r.unshadow[i]);
	if (rep)
		*rep = r;
	return 0;
}

/*
 * Background: every running shadow-paged domain does a little work
 * every 100 ms (mostly page-table updates, now and then the iperf
 * pattern), so that the counters move while domains run.
 */
static void *
shadow_bg(void *arg)
{
	struct hv *hv = arg;
	struct domain *doms[64];
	uint32_t i, n, round = 0;
	struct timespec ts;

	pthread_mutex_lock(&hv->shadow_lock);
	while (!hv->shadow_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&hv->shadow_cond, &hv->shadow_lock, &ts);
		if (hv->shadow_stop || hv->cfg.shadow_bg_writes == 0)
			continue;
		pthread_mutex_unlock(&hv->shadow_lock);
		n = dom_snapshot_shadow(hv, doms, 64);
		round++;
		for (i = 0; i < n; i++) {
			shadow_run(hv, doms[i]->sh, round % 10 == 0 ?
			    HV_SHADOW_IPERF : HV_SHADOW_PT_UPDATE,
			    hv->cfg.shadow_bg_writes, NULL);
			dom_put(hv, doms[i]);
		}
		pthread_mutex_lock(&hv->shadow_lock);
	}
	pthread_mutex_unlock(&hv->shadow_lock);
	return NULL;
}

int
shadow_bg_start(struct hv *hv)
{
	int rc;

	hv->shadow_stop = false;
	rc = -pthread_create(&hv->shadow_thread, NULL, shadow_bg, hv);
	if (rc == 0)
		hv->shadow_started = true;
	return rc;
}

void
shadow_bg_stop(struct hv *hv)
{
	if (!hv->shadow_started)
		return;
	pthread_mutex_lock(&hv->shadow_lock);
	hv->shadow_stop = true;
	pthread_cond_broadcast(&hv->shadow_cond);
	pthread_mutex_unlock(&hv->shadow_lock);
	pthread_join(hv->shadow_thread, NULL);
	hv->shadow_started = false;
}
