/*
 * task.c - tasks and their progress events (see task.h).
 *
 * Finished tasks stay queryable (task.get) until TASK_KEEP newer ones
 * have finished: enough for a client to see how its build ended, and a
 * bound on memory for a daemon that runs for months.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "events.h"
#include "json.h"
#include "log.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define TASK_KEEP		256
#define TASK_TICK_USEC		100000
#define RATE_WINDOW_SEC		5.0	/* the populate's current rate */
#define EMIT_IDLE_SEC		1.0	/* progress events while populating */

TAILQ_HEAD(taskq, task);

static struct {
	struct taskq	tasks;		/* oldest first */
	uint64_t	next_id;
	unsigned	running;
	unsigned	finished;
	struct event	*ev_tick;
	bool		scrub_busy;	/* a scrub sample is being taken */
	double		scrub_at;	/* when the last one was asked for */
} T = { .next_id = 1 };

/* Scrub progress, for builds that dirty memory holds up. */
struct scrub_job {
	struct job	job;
	int		rc;
	struct vmb_scrub scrub;
};

static const char *const state_names[] = {
	[TASK_RUNNING] = "running",
	[TASK_DONE] = "done",
	[TASK_FAILED] = "failed",
	[TASK_CANCELLED] = "cancelled",
};

const char *
task_state_name(enum task_state s)
{
	return state_names[s];
}

static void
task_tick_arm(void)
{
	struct timeval tv = { 0, TASK_TICK_USEC };

	if (T.ev_tick != NULL && !evtimer_pending(T.ev_tick, NULL))
		evtimer_add(T.ev_tick, &tv);
}

void
task_get_progress(struct task *t, struct vmb_progress *ret)
{
	pthread_mutex_lock(&t->lock);
	*ret = t->progress;
	t->dirty = false;
	pthread_mutex_unlock(&t->lock);
}

/*
 * Bytes per second: while populating, over the last RATE_WINDOW_SEC;
 * after, the populate's average.  False while there is no such figure
 * (before the populate, and in its first moments).
 */
static bool
task_rate(struct task *t, const struct vmb_progress *p, double *ret)
{
	bool have;

	pthread_mutex_lock(&t->lock);
	if (p->phase == VMB_PHASE_POPULATE) {
		have = rate_get(&t->pop_rate, t->state == TASK_RUNNING ?
		    now_mono() : t->finished_mono, ret);
	} else {
		have = t->pop_end > t->pop_rate.start &&
		    t->pop_rate.start > 0 && p->phase != VMB_PHASE_UNDO;
		if (have)
			*ret = p->total / (t->pop_end - t->pop_rate.start);
	}
	pthread_mutex_unlock(&t->lock);
	return have;
}

const char *
task_phase_name(const struct task *t, enum vmb_build_phase phase)
{
	if (t->phase_name != NULL)
		return t->phase_name;
	if (t->phase_names != NULL && (unsigned)phase <= VMB_PHASE_UNDO &&
	    t->phase_names[phase] != NULL)
		return t->phase_names[phase];
	return vmb_build_phase_name(phase);
}

static void
task_gen_progress(yajl_gen g, struct task *t, const struct vmb_progress *p)
{
	static const char *const modes[] = {
		[VMB_PROGRESS_SCRUB_WAIT] = "wait",
		[VMB_PROGRESS_SCRUB_INLINE] = "inline",
	};
	uint64_t pages;
	uint32_t round;
	double rate;

	pthread_mutex_lock(&t->lock);
	round = t->round;
	pages = t->pages;
	pthread_mutex_unlock(&t->lock);
	yajl_gen_map_open(g);
	if (round > 0) {
		jg_kv_u64(g, "round", round);
		jg_kv_u64(g, "pages", pages);
	}
	jg_kv_u64(g, "done", p->done);
	jg_kv_u64(g, "total", p->total);
	jg_kv_str(g, "unit", "bytes");
	jg_kv_str(g, "phase", task_phase_name(t, p->phase));
	/* The work beside that phase, on threads of its own. */
	jg_key(g, "alongside");
	yajl_gen_array_open(g);
	if (p->alongside & VMB_ALONGSIDE_IMAGES)
		jg_str(g, "images");
	if (p->alongside & VMB_ALONGSIDE_DEVICES)
		jg_str(g, "devices");
	yajl_gen_array_close(g);
	if (task_rate(t, p, &rate))
		jg_kv_dbl(g, "rate_bytes_per_second", rate);
	else
		jg_kv_null(g, "rate_bytes_per_second");
	jg_key(g, "scrub");
	if (p->scrub == VMB_PROGRESS_SCRUB_WAIT ||
	    p->scrub == VMB_PROGRESS_SCRUB_INLINE) {
		yajl_gen_map_open(g);
		jg_kv_str(g, "mode", modes[p->scrub]);
		jg_key(g, "nodes");
		yajl_gen_array_open(g);
		for (int n = 0; n < 64; n++)
			if (p->scrub_nodes >> n & 1)
				jg_u64(g, n);
		yajl_gen_array_close(g);
		jg_kv_u64(g, "dirty_bytes", p->scrub_dirty_bytes);
		if (p->scrub_rate_bytes_per_sec > 0)
			jg_kv_u64(g, "rate_bytes_per_second",
			    p->scrub_rate_bytes_per_sec);
		else
			jg_kv_null(g, "rate_bytes_per_second");
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	yajl_gen_map_close(g);
}

static void
task_emit_progress(struct task *t, const struct vmb_progress *p)
{
	yajl_gen g;

	if (!events_wanted(EVT_TASK_PROGRESS))
		return;
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_u64(g, "task", t->id);
	jg_kv_str(g, "kind", t->kind);
	jg_kv_str(g, "vm", t->vm);
	jg_key(g, "progress");
	task_gen_progress(g, t, p);
	yajl_gen_map_close(g);
	events_emit(EVT_TASK_PROGRESS, g);
	yajl_gen_free(g);
}

static void
scrub_sample_run(struct job *job)
{
	struct scrub_job *sj = (struct scrub_job *)job;

	sj->rc = vmb_scrub_progress(vmbd.ctx, &sj->scrub);
}

/*
 * A build held up by dirty memory reports nothing new while a large
 * extent is scrubbed (or while it waits): its figures of dirty memory
 * are refreshed here, from a sample of our own.
 */
static void
scrub_sample_done(struct job *job)
{
	struct scrub_job *sj = (struct scrub_job *)job;
	struct task *t;

	T.scrub_busy = false;
	TAILQ_FOREACH(t, &T.tasks, entry) {
		struct vmb_progress *p = &t->progress;

		if (sj->rc != 0 || t->state != TASK_RUNNING)
			continue;
		pthread_mutex_lock(&t->lock);
		if (p->scrub != VMB_PROGRESS_SCRUB_NONE) {
			p->scrub_dirty_bytes = p->scrub_rate_bytes_per_sec = 0;
			t->dirty = true;
		}
		for (uint32_t i = 0; i < sj->scrub.nr_nodes &&
		    p->scrub != VMB_PROGRESS_SCRUB_NONE; i++) {
			const struct vmb_scrub_node *n = &sj->scrub.nodes[i];

			if (n->node >= 64 || !(p->scrub_nodes >> n->node & 1))
				continue;
			p->scrub_dirty_bytes += n->dirty_bytes;
			if (sj->scrub.have & VMB_SCRUB_HAVE_RATE)
				p->scrub_rate_bytes_per_sec +=
				    n->rate_bytes_per_sec;
		}
		pthread_mutex_unlock(&t->lock);
	}
	free(sj);
}

/* Ask for a scrub sample if a running build waits on dirty memory. */
static void
scrub_sample_maybe(double now)
{
	struct scrub_job *sj;
	struct task *t;
	bool want = false;

	if (T.scrub_busy || now - T.scrub_at < 1.0 || vmbd.stopping)
		return;
	TAILQ_FOREACH(t, &T.tasks, entry) {
		if (t->state != TASK_RUNNING)
			continue;
		pthread_mutex_lock(&t->lock);
		if (t->progress.scrub != VMB_PROGRESS_SCRUB_NONE)
			want = true;
		pthread_mutex_unlock(&t->lock);
	}
	if (!want || (sj = calloc(1, sizeof(*sj))) == NULL)
		return;
	sj->job.run = scrub_sample_run;
	sj->job.done = scrub_sample_done;
	T.scrub_busy = true;
	T.scrub_at = now;
	worker_submit(&sj->job);
}

/*
 * Loop: forward coalesced progress and learn domids of new domains;
 * while populating, say where it stands at least once a second, so that
 * the rate clients show falls when the populate stalls.
 */
static void
task_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct task *t;
	double now = now_mono();

	(void)fd;
	(void)what;
	(void)arg;
	TAILQ_FOREACH(t, &T.tasks, entry) {
		struct vmb_progress p;
		bool dirty;

		if (t->state != TASK_RUNNING)
			continue;
		pthread_mutex_lock(&t->lock);
		dirty = t->dirty;
		p = t->progress;
		t->dirty = false;
		pthread_mutex_unlock(&t->lock);
		if (!dirty && !(p.phase == VMB_PHASE_POPULATE &&
		    now - t->last_emit >= EMIT_IDLE_SEC))
			continue;
		t->last_emit = now;
		if (dirty)
			vm_building_progress(t->uuid, &p);
		task_emit_progress(t, &p);
	}
	scrub_sample_maybe(now);
	if (T.running > 0)
		task_tick_arm();
}

void
task_progress_cb(void *user, const struct vmb_progress *p)
{
	struct task *t = user;

	double now = now_mono();

	pthread_mutex_lock(&t->lock);
	/*
	 * Populate workers report from several threads without a common
	 * lock, so a smaller count of the same phase can arrive after a
	 * larger one: keep progress monotonic within a phase.
	 * The build's branches report from their own threads, with the
	 * phase the main line was in: phases only go forward.
	 */
	if (!(p->phase == t->progress.phase && p->done < t->progress.done) &&
	    p->phase >= t->progress.phase) {
		t->progress = *p;
		t->dirty = true;
	} else if (p->alongside != t->progress.alongside) {
		/* A branch of the build started or ended: that is news. */
		t->progress.alongside = p->alongside;
		t->dirty = true;
	}
	/* The populate's pace, timed as its reports arrive. */
	if (p->phase == VMB_PHASE_POPULATE) {
		if (t->pop_rate.start == 0)
			rate_start(&t->pop_rate, RATE_WINDOW_SEC, now);
		rate_sample(&t->pop_rate, now, t->progress.done);
	} else if (p->phase > VMB_PHASE_POPULATE && t->pop_end == 0 &&
	    t->pop_rate.start > 0) {
		t->pop_end = now;
	}
	pthread_mutex_unlock(&t->lock);
}

void
task_transfer(struct task *t, uint32_t domid, uint64_t done, uint64_t total,
    uint32_t round, uint64_t pages)
{
	struct vmb_progress p = { .phase = VMB_PHASE_POPULATE, .domid = domid,
	    .done = done, .total = total > done ? total : done };

	pthread_mutex_lock(&t->lock);
	t->round = round;
	t->pages = pages;
	pthread_mutex_unlock(&t->lock);
	task_progress_cb(t, &p);
}

int
task_init(struct event_base *base)
{
	TAILQ_INIT(&T.tasks);
	T.ev_tick = evtimer_new(base, task_tick_cb, NULL);
	return T.ev_tick == NULL ? -1 : 0;
}

void
task_stop(void)
{
	struct task *t;

	if (T.ev_tick != NULL)
		event_free(T.ev_tick);
	T.ev_tick = NULL;
	while ((t = TAILQ_FIRST(&T.tasks)) != NULL) {
		TAILQ_REMOVE(&T.tasks, t, entry);
		pthread_mutex_destroy(&t->lock);
		free(t);
	}
}

struct task *
task_new(const char *kind, const char *vm, const uint8_t uuid[16])
{
	struct task *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->id = T.next_id++;
	t->kind = kind;
	t->state = TASK_RUNNING;
	snprintf(t->vm, sizeof(t->vm), "%s", vm);
	memcpy(t->uuid, uuid, 16);
	t->created_at = now_real();
	t->started_mono = now_mono();
	t->progress.phase = VMB_PHASE_PLACE;
	t->progress.domid = VMB_DOMID_INVALID;
	pthread_mutex_init(&t->lock, NULL);
	TAILQ_INSERT_TAIL(&T.tasks, t, entry);
	T.running++;
	task_tick_arm();
	return t;
}

void
task_adopt(struct task *t, const char *vm, const uint8_t uuid[16],
    const char *const *phase_names)
{
	snprintf(t->vm, sizeof(t->vm), "%s", vm);
	memcpy(t->uuid, uuid, 16);
	t->phase_name = NULL;
	t->phase_names = phase_names;
	/* The build cancels it from here (t->build). */
	t->cancel = NULL;
	t->cancel_arg = NULL;
	pthread_mutex_lock(&t->lock);
	/* Phases only go forward: the build's place begins anew. */
	memset(&t->progress, 0, sizeof(t->progress));
	t->progress.phase = VMB_PHASE_PLACE;
	t->progress.domid = VMB_DOMID_INVALID;
	t->dirty = true;
	pthread_mutex_unlock(&t->lock);
}

void
task_discard(struct task *t)
{
	TAILQ_REMOVE(&T.tasks, t, entry);
	T.running--;
	pthread_mutex_destroy(&t->lock);
	free(t);
}

/* Forget the oldest finished tasks beyond TASK_KEEP. */
static void
task_trim(void)
{
	struct task *t, *next;

	for (t = TAILQ_FIRST(&T.tasks); t != NULL && T.finished > TASK_KEEP;
	    t = next) {
		next = TAILQ_NEXT(t, entry);
		if (t->state == TASK_RUNNING)
			continue;
		TAILQ_REMOVE(&T.tasks, t, entry);
		T.finished--;
		pthread_mutex_destroy(&t->lock);
		free(t);
	}
}

void
task_finish(struct task *t, enum task_state state, int code, int errnum,
    const char *msg)
{
	struct vmb_progress p;
	yajl_gen g;

	t->state = state;
	t->err_code = code;
	t->err_errno = errnum;
	snprintf(t->err_msg, sizeof(t->err_msg), "%s", msg ? msg : "");
	t->finished_mono = now_mono();
	t->finished_at = now_real();
	t->build = NULL;
	t->cancel = NULL;
	T.running--;
	T.finished++;
	task_get_progress(t, &p);
	if (events_wanted(EVT_TASK_DONE)) {
		g = jg_new();
		task_gen(g, t);
		events_emit(EVT_TASK_DONE, g);
		yajl_gen_free(g);
	}
	/* A failed build is the operator's to look at; a cancel, a note. */
	log_vm(state == TASK_FAILED ? LOG_WARNING : state == TASK_CANCELLED ?
	    LOG_NOTICE : LOG_INFO, t->vm, p.domid, t->id,
	    "task %llu (%s %s) %s%s%s", (unsigned long long)t->id, t->kind,
	    t->vm, state_names[state], msg ? ": " : "", msg ? msg : "");
	task_trim();
}

struct task *
task_find(uint64_t id)
{
	struct task *t;

	TAILQ_FOREACH(t, &T.tasks, entry)
		if (t->id == id)
			return t;
	return NULL;
}

unsigned
task_running(void)
{
	return T.running;
}

void
task_cancel_all(void)
{
	struct task *t;

	TAILQ_FOREACH(t, &T.tasks, entry) {
		if (t->state != TASK_RUNNING)
			continue;
		if (t->build != NULL)
			vmb_build_cancel(t->build);
		else if (t->cancel != NULL)
			t->cancel(t->cancel_arg);
		else
			continue;
		t->cancel_requested = true;
	}
}

void
task_gen(yajl_gen g, struct task *t)
{
	struct vmb_progress p;
	char u[VMB_UUID_STRLEN];
	double end;

	pthread_mutex_lock(&t->lock);
	p = t->progress;
	pthread_mutex_unlock(&t->lock);
	vmb_uuid_to_str(t->uuid, u);
	end = t->state == TASK_RUNNING ? now_mono() : t->finished_mono;
	yajl_gen_map_open(g);
	jg_kv_u64(g, "id", t->id);
	jg_kv_str(g, "kind", t->kind);
	jg_kv_str(g, "state", state_names[t->state]);
	jg_kv_str(g, "vm", t->vm);
	jg_kv_str(g, "uuid", u);
	if (p.domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "domid");
	else
		jg_kv_u64(g, "domid", p.domid);
	jg_key(g, "progress");
	task_gen_progress(g, t, &p);
	if (t->migration.set) {
		jg_key(g, "migration");
		yajl_gen_map_open(g);
		jg_kv_bool(g, "live", t->migration.live);
		jg_kv_u64(g, "rounds", t->migration.rounds);
		jg_kv_u64(g, "pages", t->migration.pages);
		jg_kv_u64(g, "bytes", t->migration.bytes);
		jg_kv_u64(g, "downtime_ms", t->migration.downtime_ms);
		jg_kv_dbl(g, "total_s", t->migration.total_s);
		yajl_gen_map_close(g);
	}
	jg_kv_bool(g, "cancel_requested", t->cancel_requested);
	jg_kv_dbl(g, "created_at", t->created_at);
	jg_key(g, "finished_at");
	if (t->state == TASK_RUNNING)
		yajl_gen_null(g);
	else
		jg_dbl(g, t->finished_at);
	jg_kv_dbl(g, "elapsed_seconds", end - t->started_mono);
	jg_key(g, "error");
	if (t->state == TASK_FAILED || t->state == TASK_CANCELLED) {
		yajl_gen_map_open(g);
		jg_kv_i64(g, "code", t->err_code);
		jg_kv_str(g, "message", t->err_msg);
		if (t->err_errno != 0)
			jg_kv_i64(g, "errno", t->err_errno);
		/* As data.phase of a waiting vm.create's error. */
		if (t->err_phase != NULL)
			jg_kv_str(g, "phase", t->err_phase);
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	yajl_gen_map_close(g);
}

void
task_gen_list(yajl_gen g)
{
	struct task *t;

	yajl_gen_map_open(g);
	jg_key(g, "tasks");
	yajl_gen_array_open(g);
	TAILQ_FOREACH(t, &T.tasks, entry)
		task_gen(g, t);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}
