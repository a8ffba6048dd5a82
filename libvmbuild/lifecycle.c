/*
 * lifecycle.c - what happens to a domain after its build: shutdown
 * requests to the guest, shutdown from the hypervisor, the console (thin
 * over the backend), and domain events: the backend's descriptor, and
 * the list of domains compared with the one seen before.
 *
 * The comparison is here, once, rather than in each backend: Xen's
 * watches (@introduceDomain, @releaseDomain) say only that some domain
 * came or went, not which, and hvsim's watch says the same; so after
 * each firing the domains are listed and set against the last list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

struct vmb_watch {
	struct vmb_ctx *ctx;
	void	*bw;			/* the backend's watch */
	struct vmb_domain *seen;	/* the last list, sorted by domid */
	size_t	nseen;
	bool	stale;			/* drained but not listed: list next */
};

static int
check_request(enum vmb_shutdown_reason reason)
{
	return reason == VMB_SHUTDOWN_POWEROFF ||
	    reason == VMB_SHUTDOWN_REBOOT ? 0 : -EINVAL;
}

int
vmb_domain_shutdown_request(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	if (!ctx || check_request(reason) < 0)
		return -EINVAL;
	if (!ctx->ops->shutdown_request)
		return -EOPNOTSUPP;
	return ctx->ops->shutdown_request(ctx->priv, domid, reason);
}

int
vmb_domain_shutdown_withdraw(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	if (!ctx || check_request(reason) < 0)
		return -EINVAL;
	if (!ctx->ops->shutdown_withdraw)
		return -EOPNOTSUPP;
	return ctx->ops->shutdown_withdraw(ctx->priv, domid, reason);
}

int
vmb_domain_shutdown(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	if (!ctx || (unsigned)reason >= VMB_SHUTDOWN_NR)
		return -EINVAL;
	if (!ctx->ops->shutdown)
		return -EOPNOTSUPP;
	return ctx->ops->shutdown(ctx->priv, domid, reason);
}

int
vmb_console_open(struct vmb_ctx *ctx, uint32_t domid, int *ret_fd,
    char *ret_path, size_t path_len)
{
	if (!ctx || !ret_fd || (ret_path && path_len == 0))
		return -EINVAL;
	if (!ctx->ops->console_open)
		return -EOPNOTSUPP;
	return ctx->ops->console_open(ctx->priv, domid, ret_fd, ret_path,
	    path_len);
}

/* ------------------------------------------------------------------ */
/* Domain events.                                                      */

static int
by_domid(const void *a, const void *b)
{
	const struct vmb_domain *x = a, *y = b;

	return x->domid < y->domid ? -1 : x->domid > y->domid;
}

/* The same domain: same id and, where both have one, same uuid. */
static bool
same_domain(const struct vmb_domain *a, const struct vmb_domain *b)
{
	return a->domid == b->domid &&
	    (vmb_uuid_is_null(a->uuid) || vmb_uuid_is_null(b->uuid) ||
	    memcmp(a->uuid, b->uuid, 16) == 0);
}

static bool
changed(const struct vmb_domain *a, const struct vmb_domain *b)
{
	if (a->state != b->state)
		return true;
	return (a->state == VMB_DOM_SHUTDOWN || a->state == VMB_DOM_CRASHED) &&
	    a->shutdown_reason != b->shutdown_reason;
}

static int
add_event(struct vmb_domain_event **ev, size_t *n, size_t *cap,
    enum vmb_domain_event_type type, const struct vmb_domain *dom)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct vmb_domain_event *v = realloc(*ev, c * sizeof(**ev));

		if (!v)
			return -ENOMEM;
		*ev = v;
		*cap = c;
	}
	(*ev)[*n].type = type;
	(*ev)[*n].dom = *dom;
	(*n)++;
	return 0;
}

/*
 * What changed from `old` to `cur` (both sorted by domid): a domain
 * whose id was reused under another uuid went and a new one came.
 */
static int
compare(const struct vmb_domain *old, size_t nold,
    const struct vmb_domain *cur, size_t ncur,
    struct vmb_domain_event **ret_ev, size_t *ret_n)
{
	struct vmb_domain_event *ev = NULL;
	size_t i = 0, j = 0, n = 0, cap = 0;
	int rc = 0;

	while (rc == 0 && (i < nold || j < ncur)) {
		if (j == ncur || (i < nold && old[i].domid < cur[j].domid)) {
			rc = add_event(&ev, &n, &cap, VMB_EVENT_GONE, &old[i++]);
		} else if (i == nold || cur[j].domid < old[i].domid) {
			rc = add_event(&ev, &n, &cap, VMB_EVENT_NEW, &cur[j++]);
		} else if (!same_domain(&old[i], &cur[j])) {
			rc = add_event(&ev, &n, &cap, VMB_EVENT_GONE, &old[i++]);
			if (rc == 0)
				rc = add_event(&ev, &n, &cap, VMB_EVENT_NEW,
				    &cur[j++]);
		} else {
			if (changed(&old[i], &cur[j]))
				rc = add_event(&ev, &n, &cap,
				    VMB_EVENT_CHANGED, &cur[j]);
			i++;
			j++;
		}
	}
	if (rc < 0) {
		free(ev);
		return rc;
	}
	*ret_ev = ev;
	*ret_n = n;
	return 0;
}

/* A fresh list, sorted, into the watch's snapshot; the old one out. */
static int
relist(struct vmb_watch *w, struct vmb_domain **ret_old, size_t *ret_nold)
{
	struct vmb_domain *d = NULL;
	size_t n = 0;
	int rc;

	rc = vmb_domain_list(w->ctx, &d, &n);
	if (rc < 0)
		return rc;
	if (n > 1)
		qsort(d, n, sizeof(*d), by_domid);
	*ret_old = w->seen;
	*ret_nold = w->nseen;
	w->seen = d;
	w->nseen = n;
	return 0;
}

int
vmb_watch_open(struct vmb_ctx *ctx, struct vmb_watch **ret_watch)
{
	struct vmb_domain *old = NULL;
	struct vmb_watch *w;
	size_t nold = 0;
	int rc;

	if (!ctx || !ret_watch)
		return -EINVAL;
	if (!ctx->ops->watch_open)
		return -EOPNOTSUPP;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ctx = ctx;
	rc = ctx->ops->watch_open(ctx->priv, &w->bw);
	if (rc < 0) {
		free(w);
		return rc;
	}
	/*
	 * Watch first, then list: nothing between the two is missed.  A
	 * list that fails (the hypervisor does not answer now) leaves the
	 * watch stale: its first read lists again, and says every domain
	 * is new, rather than the caller going without events for good.
	 */
	if (relist(w, &old, &nold) < 0)
		w->stale = true;
	*ret_watch = w;
	return 0;
}

int
vmb_watch_fd(const struct vmb_watch *w)
{
	if (!w)
		return -EINVAL;
	return w->ctx->ops->watch_fd(w->bw);
}

int
vmb_watch_read(struct vmb_watch *w, struct vmb_domain_event **ret_events,
    size_t *ret_nr)
{
	struct vmb_domain *old = NULL;
	size_t nold = 0;
	int rc;

	if (!w || !ret_events || !ret_nr)
		return -EINVAL;
	rc = w->ctx->ops->watch_drain(w->bw);
	if (rc < 0)
		return rc;
	if (rc == 0 && !w->stale) {
		*ret_events = NULL;
		*ret_nr = 0;
		return 0;
	}
	/* What fired is consumed: a failed list must be tried again. */
	w->stale = true;
	rc = relist(w, &old, &nold);
	if (rc < 0)
		return rc;
	w->stale = false;
	rc = compare(old, nold, w->seen, w->nseen, ret_events, ret_nr);
	if (rc < 0) {
		/* Keep the old snapshot: the next read tells it all. */
		free(w->seen);
		w->seen = old;
		w->nseen = nold;
		w->stale = true;
		return rc;
	}
	free(old);
	vmb__log(w->ctx, "watch: %zu domains, %zu changes", w->nseen, *ret_nr);
	return 0;
}

void
vmb_watch_free(struct vmb_watch *w)
{
	if (!w)
		return;
	if (w->bw)
		w->ctx->ops->watch_close(w->bw);
	free(w->seen);
	free(w);
}
