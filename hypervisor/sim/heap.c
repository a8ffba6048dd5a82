/*
 * heap.c - the Xen-like heap: one buddy allocator per node, orders
 * 0..HV_MAX_ORDER, each node under its own lock.
 *
 * A free block is described by its first page's metadata: order, kind
 * (clean, dirty from a dead domain, dirty since boot), whether it had an
 * owner whose TLB entries may survive (need-flush) and the flush clock
 * when it was freed.  Metadata lives per 2 MiB chunk (struct chunk); a
 * chunk carries a 512-entry array only while it is split below order 9,
 * so large phantom hosts cost 32 bytes per 2 MiB.
 *
 * Buddies merge only when they are of the same kind.  Merging a clean
 * block into a dirty one would either lose the fact that half of it is
 * clean or, worse, make the scrubber re-scrub memory it just cleaned.
 * Unmerged clean/dirty pairs become mergeable once the dirty half is
 * scrubbed, and an allocation that needs the merged order scrubs the
 * small dirty halves inline (heap_alloc).
 *
 * Counts per node: free_pages includes blocks a scrub worker has taken
 * off the lists (they are free memory being cleaned), dirty_pages the
 * dirty part of it.  Both are exact at every unlock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvsim.h"

#define NIL		UINT32_MAX
#define PIF_FREE	0x1	/* head of a block on a free list */
#define PIF_NEED_FLUSH	0x2

static struct pinfo *
pi(struct hnode *n, uint32_t idx)
{
	struct chunk *c = &n->chunks[idx >> CHUNK_ORDER];

	if (c->sub)
		return &c->sub[idx & (CHUNK_PAGES - 1)];
	if (idx & (CHUNK_PAGES - 1))
		return NULL;	/* inside an unsplit chunk: not a block head */
	return &c->head;
}

static int
list_of(const struct pinfo *p)
{
	return p->kind != PG_CLEAN;
}

static void
list_add(struct hnode *n, uint32_t idx, struct pinfo *p)
{
	uint32_t *head = &n->list[list_of(p)][p->order];

	p->prev = NIL;
	p->next = *head;
	if (*head != NIL)
		pi(n, *head)->prev = idx;
	*head = idx;
	p->flags |= PIF_FREE;
	if (p->kind == PG_CLEAN && p->order == HV_MAX_ORDER)
		n->clean_top_blocks++;
}

static void
list_del(struct hnode *n, struct pinfo *p)
{
	if (p->prev != NIL)
		pi(n, p->prev)->next = p->next;
	else
		n->list[list_of(p)][p->order] = p->next;
	if (p->next != NIL)
		pi(n, p->next)->prev = p->prev;
	p->flags &= ~PIF_FREE;
	p->next = p->prev = NIL;
	if (p->kind == PG_CLEAN && p->order == HV_MAX_ORDER)
		n->clean_top_blocks--;
}

/* Give a chunk per-page metadata before a block in it goes below order 9. */
static int
chunk_split(struct hnode *n, uint32_t idx)
{
	struct chunk *c = &n->chunks[idx >> CHUNK_ORDER];
	struct pinfo *sub;

	if (c->sub)
		return 0;
	sub = calloc(CHUNK_PAGES, sizeof(*sub));
	if (!sub)
		return -ENOMEM;
	sub[0] = c->head;
	c->sub = sub;
	return 0;
}

static void
chunk_unsplit(struct hnode *n, uint32_t idx)
{
	struct chunk *c = &n->chunks[idx >> CHUNK_ORDER];

	if (!c->sub)
		return;
	c->head = c->sub[0];
	free(c->sub);
	c->sub = NULL;
}

/*
 * Take the smallest block of order >= `order` from list l (0 clean,
 * 1 dirty) and split it down, returning the lowest part.  Split-off upper
 * halves keep the block's kind, need-flush flag and timestamp.
 */
static int
take_block(struct hnode *n, int l, uint32_t order, struct hblock *b)
{
	struct pinfo tmpl, *p;
	uint32_t j, idx;

	for (j = order; j <= HV_MAX_ORDER; j++)
		if (n->list[l][j] != NIL)
			break;
	if (j > HV_MAX_ORDER)
		return -ENOMEM;
	idx = n->list[l][j];
	if (order < CHUNK_ORDER && chunk_split(n, idx) < 0)
		return -ENOMEM;
	p = pi(n, idx);
	list_del(n, p);
	tmpl = *p;
	while (j > order) {
		uint32_t up;

		j--;
		up = idx + (1u << j);
		p = pi(n, up);
		*p = tmpl;
		p->order = (uint8_t)j;
		list_add(n, up, p);
	}
	p = pi(n, idx);
	p->order = (uint8_t)order;
	b->mfn = n->first_mfn + idx;
	b->node = n->node;
	b->order = (uint8_t)order;
	b->kind = tmpl.kind;
	b->need_flush = tmpl.flags & PIF_NEED_FLUSH;
	b->tlbflush_ts = tmpl.tlbflush_ts;
	return 0;
}

/* Put a block on the lists, merging with free buddies of the same kind. */
static void
free_block(struct hnode *n, uint32_t idx, uint32_t order, uint8_t kind,
    bool need_flush, uint64_t ts)
{
	struct pinfo *p;

	while (order < HV_MAX_ORDER) {
		uint32_t buddy = idx ^ (1u << order);
		struct pinfo *bp;

		if ((uint64_t)buddy + (1u << order) > n->pages)
			break;
		if (order >= CHUNK_ORDER) {
			struct chunk *c = &n->chunks[buddy >> CHUNK_ORDER];

			if (c->sub)
				break;	/* split: not a free block this big */
			bp = &c->head;
		} else {
			bp = pi(n, buddy);
		}
		if (!bp || !(bp->flags & PIF_FREE) || bp->order != order ||
		    bp->kind != kind)
			break;
		need_flush |= bp->flags & PIF_NEED_FLUSH;
		if (bp->tlbflush_ts > ts)
			ts = bp->tlbflush_ts;
		list_del(n, bp);
		idx &= ~(1u << order);
		order++;
		if (order == CHUNK_ORDER)
			chunk_unsplit(n, idx);
	}
	p = pi(n, idx);
	p->order = (uint8_t)order;
	p->kind = kind;
	p->flags = need_flush ? PIF_NEED_FLUSH : 0;
	p->tlbflush_ts = ts;
	list_add(n, idx, p);
}

/* Dirty block of order in [0, below) (largest first), split to max_order. */
static int
take_dirty_locked(struct hnode *n, uint32_t below, uint32_t max_order,
    struct hblock *b)
{
	int j;

	for (j = (int)below - 1; j >= 0; j--) {
		if (n->list[1][j] == NIL)
			continue;
		return take_block(n, 1, (uint32_t)j > max_order ? max_order :
		    (uint32_t)j, b);
	}
	return -ENOENT;
}

/* `pages` of kind `kind` are no longer dirty. */
static void
account_scrubbed(struct hnode *n, uint8_t kind, uint64_t pages)
{
	n->dirty_pages -= pages;
	if (kind == PG_BOOT) {
		n->boot_dirty_pages -= pages;
		if (n->boot_dirty_pages == 0)
			n->boot_done = true;
	}
	ATOMIC_ADD(&n->scrubbed_total, pages);
}

/* Free pages [idx, idx + nr) as the largest aligned blocks that fit. */
static void
free_range(struct hnode *n, uint32_t idx, uint64_t nr, uint8_t kind,
    bool need_flush, uint64_t ts)
{
	while (nr > 0) {
		uint32_t k = 0;

		while (k < HV_MAX_ORDER && !(idx & (1u << k)) &&
		    (2ull << k) <= nr)
			k++;
		free_block(n, idx, k, kind, need_flush, ts);
		idx += 1u << k;
		nr -= 1ull << k;
	}
}

/*
 * Call back every background scrub of the node (BUDDY_SCRUB_ABORT): the
 * workers give their blocks back after at most one 2 MiB step.
 */
static void
abort_scrubs(struct hnode *n)
{
	struct scrub_job *j;

	for (j = n->jobs; j; j = j->next)
		__atomic_store_n(&j->abort, true, __ATOMIC_RELAXED);
}

int
heap_init(struct heap *h, struct hv *hv, const struct hvmem *mem,
    uint32_t nr_nodes, uint64_t pages_per_node, bool dirty)
{
	uint32_t i, k;
	int rc;

	memset(h, 0, sizeof(*h));
	if (nr_nodes == 0 || nr_nodes > HV_MAX_NODES || pages_per_node == 0 ||
	    pages_per_node % CHUNK_PAGES != 0 ||
	    pages_per_node > (1ull << 32) - CHUNK_PAGES)
		return -EINVAL;
	h->hv = hv;
	h->mem = mem;
	h->nr_nodes = nr_nodes;
	h->total_pages = nr_nodes * pages_per_node;
	h->nodes = calloc(nr_nodes, sizeof(*h->nodes));
	if (!h->nodes)
		return -ENOMEM;
	for (i = 0; i < nr_nodes; i++) {
		struct hnode *n = &h->nodes[i];
		uint32_t idx, nblk = 0, *blk_idx = NULL, b;
		uint8_t *blk_ord = NULL;

		pthread_mutex_init(&n->lock, NULL);
		pthread_cond_init(&n->work, NULL);
		pthread_cond_init(&n->done, NULL);
		n->node = i;
		n->first_mfn = i * pages_per_node;
		n->pages = pages_per_node;
		memset(n->list, 0xff, sizeof(n->list));
		n->chunks = calloc(pages_per_node / CHUNK_PAGES,
		    sizeof(*n->chunks));
		/* At most one block per order per 1 GiB boundary region. */
		blk_idx = calloc(pages_per_node / (1u << HV_MAX_ORDER) +
		    HV_MAX_ORDER + 2, sizeof(*blk_idx));
		blk_ord = calloc(pages_per_node / (1u << HV_MAX_ORDER) +
		    HV_MAX_ORDER + 2, 1);
		if (!n->chunks || !blk_idx || !blk_ord) {
			free(blk_idx);
			free(blk_ord);
			rc = -ENOMEM;
			goto fail;
		}
		/* Carve the node into maximal aligned blocks. */
		for (idx = 0; idx < pages_per_node; idx += 1u << k) {
			for (k = HV_MAX_ORDER; k > 0; k--)
				if (!(idx & ((1u << k) - 1)) &&
				    (uint64_t)idx + (1u << k) <= pages_per_node)
					break;
			blk_idx[nblk] = idx;
			blk_ord[nblk++] = (uint8_t)k;
		}
		/* Push from the top so that the lowest block is handed out first. */
		for (b = nblk; b-- > 0;) {
			struct pinfo *p = pi(n, blk_idx[b]);

			p->order = blk_ord[b];
			p->kind = dirty ? PG_BOOT : PG_CLEAN;
			p->flags = 0;
			list_add(n, blk_idx[b], p);
		}
		free(blk_idx);
		free(blk_ord);
		n->free_pages = pages_per_node;
		n->dirty_pages = dirty ? pages_per_node : 0;
		n->boot_dirty_pages = n->dirty_pages;
		n->boot_done = !dirty;
	}
	return 0;

fail:
	heap_fini(h);
	return rc;
}

void
heap_fini(struct heap *h)
{
	uint32_t i;
	uint64_t c;

	if (!h->nodes)
		return;
	for (i = 0; i < h->nr_nodes; i++) {
		struct hnode *n = &h->nodes[i];

		if (n->chunks)
			for (c = 0; c < n->pages / CHUNK_PAGES; c++)
				free(n->chunks[c].sub);
		free(n->chunks);
		pthread_mutex_destroy(&n->lock);
		pthread_cond_destroy(&n->work);
		pthread_cond_destroy(&n->done);
	}
	free(h->nodes);
	h->nodes = NULL;
}

/*
 * As Xen's alloc_heap_pages: clean buddies first; failing that, a dirty
 * buddy is taken and scrubbed inline, at once.  When only smaller dirty
 * blocks are left, they are scrubbed inline so that they merge with their
 * clean buddies.  When what is missing is in the background scrubbers'
 * hands, they are called back and the allocation waits only for them to
 * hand the blocks over (one 2 MiB step at most), never for a fixed time
 * nor for their whole step; the scrubbed part comes back clean and the
 * rest is scrubbed here.
 */
int
heap_alloc(struct heap *h, uint32_t node, uint32_t order, bool allow_dirty,
    struct hblock *ret_blk, uint64_t *ret_inline)
{
	struct hnode *n;
	struct hblock b, sb;
	uint64_t size = 1ull << order, inl = 0;
	bool inline_ok;
	int rc;

	if (node >= h->nr_nodes || order > HV_MAX_ORDER)
		return -EINVAL;
	n = &h->nodes[node];
	pthread_mutex_lock(&n->lock);
	inline_ok = allow_dirty || n->workers == 0;
	for (;;) {
		if (n->free_pages < size) {
			rc = -ENOMEM;
			break;
		}
		rc = take_block(n, 0, order, &b);
		if (rc == 0) {
			n->free_pages -= size;
			break;
		}
		if (!inline_ok) {
			rc = -ENOMEM;
			break;
		}
		if (take_block(n, 1, order, &b) == 0) {
			/* Handed out now, scrubbed below outside the lock. */
			n->free_pages -= size;
			account_scrubbed(n, b.kind, size);
			inl += size;
			rc = 1;
			break;
		}
		if (take_dirty_locked(n, order, SCRUB_ORDER, &sb) == 0) {
			uint64_t ss = 1ull << sb.order;

			n->scrubbing_pages += ss;
			pthread_mutex_unlock(&n->lock);
			mem_zero(h->mem, sb.mfn, ss);
			pthread_mutex_lock(&n->lock);
			n->scrubbing_pages -= ss;
			account_scrubbed(n, sb.kind, ss);
			free_block(n, (uint32_t)(sb.mfn - n->first_mfn),
			    sb.order, PG_CLEAN, sb.need_flush, sb.tlbflush_ts);
			inl += ss;
			pthread_cond_broadcast(&n->done);
			continue;
		}
		if (n->scrubbing_pages > 0) {
			abort_scrubs(n);
			n->alloc_waiters++;
			pthread_cond_wait(&n->done, &n->lock);
			/* Workers stand aside while anyone waits. */
			if (--n->alloc_waiters == 0 &&
			    n->dirty_pages > n->scrubbing_pages)
				pthread_cond_broadcast(&n->work);
			continue;
		}
		rc = -ENOMEM;
		break;
	}
	pthread_mutex_unlock(&n->lock);
	if (rc < 0)
		goto out;
	if (rc == 1) {
		mem_zero(h->mem, b.mfn, size);
		b.kind = PG_CLEAN;
		rc = 0;
	}
	*ret_blk = b;
out:
	if (inl && h->hv)
		CTR_ADD(h->hv, scrub_pages_inline, inl);
	if (ret_inline)
		*ret_inline += inl;
	return rc;
}

/* Under the node lock: put one block back and count it. */
static bool
free_locked(struct hnode *n, const struct hblock *blk)
{
	uint64_t size = 1ull << blk->order;

	free_block(n, (uint32_t)(blk->mfn - n->first_mfn), blk->order,
	    blk->kind, blk->need_flush, blk->tlbflush_ts);
	n->free_pages += size;
	if (blk->kind == PG_CLEAN)
		return false;
	n->dirty_pages += size;
	if (blk->kind == PG_BOOT)
		n->boot_dirty_pages += size;
	return true;
}

void
heap_free(struct heap *h, const struct hblock *blk)
{
	heap_free_many(h, blk, 1);
}

/*
 * Node by node, one lock and at most one wake-up of the node's scrubbers
 * for all of its blocks: a destroy frees a domain's extents together,
 * and waking the scrubbers once per extent cost more context switches
 * than the frees themselves (4 ms for a 128 MiB domain here).
 */
void
heap_free_many(struct heap *h, const struct hblock *blks, size_t nr)
{
	size_t i, done = 0;
	uint32_t node;

	for (node = 0; node < h->nr_nodes && done < nr; node++) {
		struct hnode *n = &h->nodes[node];
		bool dirty = false, any = false;

		for (i = 0; i < nr; i++) {
			if (blks[i].node != node)
				continue;
			if (!any)
				pthread_mutex_lock(&n->lock);
			any = true;
			dirty |= free_locked(n, &blks[i]);
			done++;
		}
		if (!any)
			continue;
		if (dirty)
			pthread_cond_broadcast(&n->work);
		pthread_mutex_unlock(&n->lock);
	}
}

int
heap_take_dirty(struct heap *h, uint32_t node, uint32_t max_order,
    struct scrub_job *job)
{
	struct hnode *n = &h->nodes[node];
	int rc = -EAGAIN;

	pthread_mutex_lock(&n->lock);
	/* An allocator waiting for pages goes first (Xen scrubs when idle). */
	if (n->alloc_waiters > 0)
		goto out;
	rc = take_dirty_locked(n, HV_MAX_ORDER + 1, max_order, &job->b);
	if (rc < 0)
		goto out;
	n->scrubbing_pages += 1ull << job->b.order;
	job->done = 0;
	job->abort = false;
	job->next = n->jobs;
	n->jobs = job;
out:
	pthread_mutex_unlock(&n->lock);
	return rc;
}

bool
heap_scrub_aborted(const struct scrub_job *job)
{
	return __atomic_load_n(&job->abort, __ATOMIC_RELAXED);
}

void
heap_put_scrubbed(struct heap *h, struct scrub_job *job)
{
	const struct hblock *b = &job->b;
	struct hnode *n = &h->nodes[b->node];
	uint64_t size = 1ull << b->order, done = job->done;
	uint32_t idx = (uint32_t)(b->mfn - n->first_mfn);
	struct scrub_job **pp;

	if (done > size)
		done = size;
	pthread_mutex_lock(&n->lock);
	for (pp = &n->jobs; *pp; pp = &(*pp)->next)
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	job->next = NULL;
	n->scrubbing_pages -= size;
	account_scrubbed(n, b->kind, done);
	/* Steps are 2 MiB aligned, so both parts are whole blocks >= 2 MiB. */
	free_range(n, idx, done, PG_CLEAN, b->need_flush, b->tlbflush_ts);
	free_range(n, idx + (uint32_t)done, size - done, b->kind,
	    b->need_flush, b->tlbflush_ts);
	pthread_cond_broadcast(&n->done);
	pthread_mutex_unlock(&n->lock);
}

uint32_t
heap_node_of(const struct heap *h, uint64_t mfn)
{
	return (uint32_t)(mfn / h->nodes[0].pages);
}

/* Counts change under the node lock; read them under it too. */
uint64_t
heap_free_pages(struct heap *h, uint32_t node)
{
	struct hnode *n = &h->nodes[node];
	uint64_t v;

	pthread_mutex_lock(&n->lock);
	v = n->free_pages;
	pthread_mutex_unlock(&n->lock);
	return v;
}

uint64_t
heap_dirty_pages(struct heap *h, uint32_t node)
{
	struct hnode *n = &h->nodes[node];
	uint64_t v;

	pthread_mutex_lock(&n->lock);
	v = n->dirty_pages;
	pthread_mutex_unlock(&n->lock);
	return v;
}

/*
 * Walk every free list of a node and check: links, alignment, bounds,
 * kinds, no overlap, no unmerged buddy pair of one kind, and that the
 * listed pages add up to the counts.
 */
int
heap_check(struct heap *h, uint32_t node)
{
	struct hnode *n = &h->nodes[node];
	uint64_t listed = 0, listed_dirty = 0, pg;
	uint32_t top = 0;
	uint8_t *seen;
	int l, rc = 0;
	uint32_t j;

	seen = calloc(n->pages / 8 + 1, 1);
	if (!seen)
		return -ENOMEM;
	pthread_mutex_lock(&n->lock);
	for (l = 0; l < 2 && rc == 0; l++)
		for (j = 0; j <= HV_MAX_ORDER && rc == 0; j++) {
			uint32_t idx, prev = NIL;

			for (idx = n->list[l][j]; idx != NIL && rc == 0;) {
				struct pinfo *p = pi(n, idx), *bp;
				uint32_t buddy = idx ^ (1u << j);

				if (!p || !(p->flags & PIF_FREE) ||
				    (j >= CHUNK_ORDER &&
				    n->chunks[idx >> CHUNK_ORDER].sub) ||
				    p->order != j || list_of(p) != l ||
				    p->prev != prev ||
				    (idx & ((1u << j) - 1)) ||
				    (uint64_t)idx + (1u << j) > n->pages) {
					rc = -EUCLEAN;
					break;
				}
				for (pg = idx; pg < idx + (1ull << j); pg++) {
					if (seen[pg / 8] & (1u << (pg % 8)))
						rc = -EUCLEAN;
					seen[pg / 8] |= 1u << (pg % 8);
				}
				if (j < HV_MAX_ORDER &&
				    (uint64_t)buddy + (1u << j) <= n->pages) {
					bp = (j >= CHUNK_ORDER &&
					    n->chunks[buddy >> CHUNK_ORDER].sub) ?
					    NULL : pi(n, buddy);
					if (bp && (bp->flags & PIF_FREE) &&
					    bp->order == j && bp->kind == p->kind)
						rc = -EUCLEAN;
				}
				listed += 1ull << j;
				if (l)
					listed_dirty += 1ull << j;
				else if (j == HV_MAX_ORDER)
					top++;
				prev = idx;
				idx = p->next;
			}
		}
	if (rc == 0 && (listed + n->scrubbing_pages != n->free_pages ||
	    listed_dirty + n->scrubbing_pages != n->dirty_pages ||
	    top != n->clean_top_blocks || n->free_pages > n->pages ||
	    n->boot_dirty_pages > n->dirty_pages))
		rc = -EUCLEAN;
	pthread_mutex_unlock(&n->lock);
	free(seen);
	return rc;
}
