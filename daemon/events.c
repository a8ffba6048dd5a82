/*
 * events.c - subscriptions and notifications (see events.h).
 *
 * The subscriptions are this file's own records, one per subscribed
 * connection; control.c knows nothing of them and only says when a
 * connection closes (control_on_close), which drops its record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "control.h"
#include "events.h"
#include "json.h"
#include "log.h"
#include "proto.h"
#include "report.h"
#include "rpc.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

struct sub {
	struct conn	*conn;		/* no reference: dropped at its close */
	uint32_t	mask;		/* EVT_*, never 0 */
	TAILQ_ENTRY(sub) entry;
};

TAILQ_HEAD(subq, sub);

static const struct {
	uint32_t	bit;
	const char	*name;
} event_names[] = {
	{ EVT_TASK_PROGRESS,	E_TASK_PROGRESS },
	{ EVT_TASK_DONE,	E_TASK_DONE },
	{ EVT_VM_STATE,		E_VM_STATE },
	{ EVT_SCRUB_PROGRESS,	E_SCRUB_PROGRESS },
	{ EVT_VM_CHANGED,	E_VM_CHANGED },
};

struct scrub_job {
	struct job	job;
	int		rc;
	struct vmb_scrub scrub;
};

static struct {
	struct subq	subs;
	uint32_t	counts[NR_EVENTS];	/* subscribers per event */
	struct event	*ev_scrub;
	bool		scrub_busy;	/* a sample is on a worker */
	bool		last_dirty;	/* the last sample had dirty memory */
	bool		kicked;
} E;

uint32_t
events_bit(const char *name)
{
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]);
	    i++)
		if (strcmp(event_names[i].name, name) == 0)
			return event_names[i].bit;
	return 0;
}

const char *
events_name(uint32_t bit)
{
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]);
	    i++)
		if (event_names[i].bit == bit)
			return event_names[i].name;
	return NULL;
}

static void
events_count(uint32_t mask, int delta)
{
	for (int i = 0; i < NR_EVENTS; i++)
		if (mask & (1u << i))
			E.counts[i] += delta;
}

bool
events_wanted(uint32_t bit)
{
	for (int i = 0; i < NR_EVENTS; i++)
		if (bit == (1u << i))
			return E.counts[i] > 0;
	return false;
}

static void
events_scrub_arm(double seconds)
{
	struct timeval tv = { (time_t)seconds,
	    (suseconds_t)((seconds - (time_t)seconds) * 1e6) };

	if (E.ev_scrub != NULL && !evtimer_pending(E.ev_scrub, NULL))
		evtimer_add(E.ev_scrub, &tv);
}

static struct sub *
sub_find(const struct conn *c)
{
	struct sub *s;

	TAILQ_FOREACH(s, &E.subs, entry)
		if (s->conn == c)
			return s;
	return NULL;
}

int
events_subscribe(struct conn *c, uint32_t mask)
{
	struct sub *s = sub_find(c);

	/* An empty list unsubscribes. */
	if (mask == 0) {
		events_forget(c);
		return 0;
	}
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL)
			return -ENOMEM;
		s->conn = c;
		TAILQ_INSERT_TAIL(&E.subs, s, entry);
		/* A subscriber waits for events: no idle timeout for it. */
		c->lingers = true;
	}
	events_count(s->mask, -1);
	s->mask = mask;
	events_count(s->mask, +1);
	if (mask & EVT_SCRUB_PROGRESS) {
		/* A new listener gets a first sample whatever the state. */
		E.kicked = true;
		events_scrub_arm(0);
	}
	return 0;
}

void
events_forget(struct conn *c)
{
	struct sub *s = sub_find(c);

	if (s == NULL)
		return;
	events_count(s->mask, -1);
	TAILQ_REMOVE(&E.subs, s, entry);
	c->lingers = false;
	free(s);
}

void
events_emit(uint32_t bit, yajl_gen params)
{
	const char *name = events_name(bit), *text;
	struct sub *s, *next;
	size_t len;

	if (!events_wanted(bit))
		return;
	text = jg_text(params, &len);
	/* conn_send may drop a slow subscriber (and its record): next first. */
	for (s = TAILQ_FIRST(&E.subs); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		if (s->mask & bit)
			rpc_send_event(s->conn, name, text, len);
	}
}

static void
scrub_run(struct job *job)
{
	struct scrub_job *sj = (struct scrub_job *)job;

	sj->rc = vmb_scrub_progress(vmbd.ctx, &sj->scrub);
}

static void
scrub_done(struct job *job)
{
	struct scrub_job *sj = (struct scrub_job *)job;
	bool dirty = false;

	E.scrub_busy = false;
	if (sj->rc == 0) {
		for (uint32_t i = 0; i < sj->scrub.nr_nodes; i++)
			if (sj->scrub.nodes[i].dirty_bytes > 0)
				dirty = true;
		if (!(sj->scrub.have & VMB_SCRUB_HAVE_DIRTY))
			dirty = false;
		if ((dirty || E.last_dirty || E.kicked) &&
		    events_wanted(EVT_SCRUB_PROGRESS)) {
			yajl_gen g = jg_new();

			report_scrub(g, &sj->scrub);
			events_emit(EVT_SCRUB_PROGRESS, g);
			yajl_gen_free(g);
		}
		E.last_dirty = dirty;
	} else if (E.kicked) {
		log_debug("scrub progress: %s", strerror(-sj->rc));
	}
	E.kicked = false;
	free(sj);
	/* Keep sampling while memory is dirty and someone listens. */
	if (dirty && events_wanted(EVT_SCRUB_PROGRESS) && !vmbd.stopping)
		events_scrub_arm(1.0);
}

static void
scrub_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct scrub_job *sj;

	(void)fd;
	(void)what;
	(void)arg;
	if (E.scrub_busy || vmbd.stopping ||
	    !events_wanted(EVT_SCRUB_PROGRESS))
		return;
	sj = calloc(1, sizeof(*sj));
	if (sj == NULL)
		return;
	sj->job.run = scrub_run;
	sj->job.done = scrub_done;
	E.scrub_busy = true;
	worker_submit(&sj->job);
}

void
events_scrub_kick(void)
{
	if (events_wanted(EVT_SCRUB_PROGRESS))
		events_scrub_arm(0.2);
}

int
events_init(struct event_base *base)
{
	TAILQ_INIT(&E.subs);
	control_on_close(events_forget);
	E.ev_scrub = evtimer_new(base, scrub_timer_cb, NULL);
	return E.ev_scrub == NULL ? -1 : 0;
}

void
events_stop(void)
{
	struct sub *s;

	while ((s = TAILQ_FIRST(&E.subs)) != NULL)
		events_forget(s->conn);
	if (E.ev_scrub != NULL)
		event_free(E.ev_scrub);
	E.ev_scrub = NULL;
}

void
events_vm_hook(void *arg, struct vm *vm, const struct vm_change *c)
{
	yajl_gen g;

	(void)arg;
	if (c->kind != VM_HOOK_ANNOUNCE || !events_wanted(EVT_VM_STATE))
		return;
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", vm->name);
	if (vm->domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "id");
	else
		jg_kv_u64(g, "id", vm->domid);
	jg_kv_str(g, "state", c->state != NULL ? c->state :
	    vm_state_name(vm));
	jg_kv_str(g, "reason", c->reason);
	jg_kv_str(g, "action", c->action);
	yajl_gen_map_close(g);
	events_emit(EVT_VM_STATE, g);
	yajl_gen_free(g);
}
