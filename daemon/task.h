/*
 * task.h - long operations as tasks: id, kind, state, progress, timings.
 *
 * Progress is written by build threads (task_progress_cb, the library's
 * callback) under the task's lock and only marks the task dirty; a
 * timer on the loop turns dirty tasks into task.progress events at most
 * ten times a second, so a fast populate cannot flood clients, and at
 * least once a second while memory is populated, so that the rate a
 * client shows follows a populate that stalls.  The rate is measured
 * here, where the progress arrives: over the last 5 s while populating,
 * the populate's average once it is over.
 */
#ifndef VMBUILDD_TASK_H
#define VMBUILDD_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include <yajl/yajl_gen.h>

#include "rate.h"
#include "vmbuild.h"

struct event_base;

enum task_state { TASK_RUNNING = 0, TASK_DONE, TASK_FAILED, TASK_CANCELLED };

struct task {
	uint64_t	id;
	const char	*kind;		/* "vm.create" */
	enum task_state	state;
	char		vm[VMB_NAME_LEN];
	uint8_t		uuid[16];
	double		created_at;	/* Unix time */
	double		started_mono, finished_mono;
	double		finished_at;
	struct vmb_build *build;	/* while running; for cancel */
	/* Or, for a task that is not a build (a save): how to cancel it. */
	void		(*cancel)(void *arg);
	void		*cancel_arg;
	/* Shown as progress.phase in place of the build phase's name. */
	const char	*phase_name;
	/* Or per build phase (NULL or a NULL entry: the build's name). */
	const char *const *phase_names;
	bool		cancel_requested;
	int		err_code;	/* when failed or cancelled */
	int		err_errno;
	char		err_msg[256];
	const char	*err_phase;	/* build phase that failed, or NULL */
	/* Shared with the build thread. */
	pthread_mutex_t	lock;
	struct vmb_progress progress;
	bool		dirty;
	struct rate	pop_rate;	/* bytes populated, over 5 s */
	double		pop_end;	/* when a later phase began; 0: not */
	double		last_emit;	/* loop: last task.progress */
	/* A migration's (task_transfer), under the lock; round 0: none. */
	uint32_t	round;
	uint64_t	pages;
	/* A migration's figures once it is over (the loop's): "migration". */
	struct task_migration {
		bool	set, live;
		uint32_t rounds;
		uint64_t pages, bytes, downtime_ms;
		double	total_s;
	} migration;
	TAILQ_ENTRY(task) entry;
};

int task_init(struct event_base *base);
void task_stop(void);
/* A new running task; NULL when out of memory. */
struct task *task_new(const char *kind, const char *vm,
    const uint8_t uuid[16]);
/*
 * A build takes over task `t` (a restore's, made before its stream told
 * which VM it is): now of VM `vm` and `uuid`, its phases named by
 * `phase_names` (see struct task), its progress the build's from the
 * start (phase place, nothing done).
 */
void task_adopt(struct task *t, const char *vm, const uint8_t uuid[16],
    const char *const *phase_names);
/* What task `t` calls build phase `phase` (progress.phase, error.phase). */
const char *task_phase_name(const struct task *t, enum vmb_build_phase phase);
/* Discard a task that never started (its build could not be spawned). */
void task_discard(struct task *t);
void task_finish(struct task *t, enum task_state state, int code, int errnum,
    const char *msg);
struct task *task_find(uint64_t id);
unsigned task_running(void);
const char *task_state_name(enum task_state s);
/* Cancel every running task (shutdown). */
void task_cancel_all(void);
/* The latest progress, copied under the lock. */
void task_get_progress(struct task *t, struct vmb_progress *ret);

void task_gen(yajl_gen g, struct task *t);
/* {"tasks":[...]} */
void task_gen_list(yajl_gen g);

/*
 * A migration's progress: `done` bytes of the stream sent of `total`,
 * in pre-copy round `round` (from 1), `pages` of memory sent in all.
 */
void task_transfer(struct task *t, uint32_t domid, uint64_t done,
    uint64_t total, uint32_t round, uint64_t pages);

/* vmb_progress_fn: `user` is the struct task. */
void task_progress_cb(void *user, const struct vmb_progress *p);

#endif /* VMBUILDD_TASK_H */
