/*
 * worker.c - the thread pool, the build threads and the completion pipe
 * (see worker.h).
 *
 * A build gets a thread of its own, but threads outlive their build: an
 * idle build thread takes the next one, and only when none is idle is a
 * thread started (0.1-0.2 ms each on a 2-CPU VM, a tenth of a small VM's
 * create); idle ones exit after BUILD_IDLE_S.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "worker.h"

TAILQ_HEAD(jobq, job);

#define BUILD_IDLE_S	60	/* an idle build thread lives this long */

static struct {
	pthread_mutex_t lock;
	pthread_cond_t	cond;
	struct jobq	queue;		/* waiting for a pool thread */
	struct jobq	finished;	/* waiting for done() on the loop */
	pthread_t	*threads;
	int		nthreads;
	bool		stopping;
	unsigned	pending;	/* submitted, done() not yet called */
	unsigned	detached_running;	/* builds not yet finished */
	struct jobq	builds;		/* waiting for an idle build thread */
	unsigned	builds_queued;
	unsigned	build_idle;	/* build threads waiting for a build */
	unsigned	build_threads;	/* build threads alive */
	pthread_cond_t	build_cond;
	int		pipe[2];
	struct event	*ev;
} W = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.build_cond = PTHREAD_COND_INITIALIZER,
	.pipe = { -1, -1 },
};

static void
worker_finish(struct job *job)
{
	char c = 1;
	bool wake;

	pthread_mutex_lock(&W.lock);
	wake = TAILQ_EMPTY(&W.finished);
	TAILQ_INSERT_TAIL(&W.finished, job, entry);
	if (job->detached)
		W.detached_running--;
	/*
	 * Only worker_shutdown() waits for detached_running, and only once
	 * stopping is set (under this lock): waking the idle pool threads
	 * at every finished job cost each of them a context switch, on the
	 * critical path of every small VM's create and destroy.
	 */
	if (W.stopping)
		pthread_cond_broadcast(&W.cond);
	pthread_mutex_unlock(&W.lock);
	/*
	 * One byte per batch of completions is enough: the loop drains the
	 * whole list (whoever found it empty writes; the loop takes all
	 * that is there when it drains).  The pipe is non-blocking; a full
	 * pipe already means the loop will wake up.  Written after the
	 * unlock: the loop, woken on the other CPU, would otherwise find
	 * the lock still held, and sleep and be woken for it (two system
	 * calls and a context switch a job).  The pipe outlives this
	 * call: worker_shutdown() closes it after joining the pool threads
	 * and once no build thread is left (build_threads counts one until
	 * it has returned from here).
	 */
	if (wake)
		(void)!write(W.pipe[1], &c, 1);
}

static void *
worker_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct job *job;

		pthread_mutex_lock(&W.lock);
		while (TAILQ_EMPTY(&W.queue) && !W.stopping)
			pthread_cond_wait(&W.cond, &W.lock);
		if (TAILQ_EMPTY(&W.queue)) {
			pthread_mutex_unlock(&W.lock);
			return NULL;
		}
		job = TAILQ_FIRST(&W.queue);
		TAILQ_REMOVE(&W.queue, job, entry);
		pthread_mutex_unlock(&W.lock);
		job->run(job);
		worker_finish(job);
	}
}

/* A build thread: its first build, then any queued, until idle too long. */
static void *
worker_build_main(void *arg)
{
	struct job *job = arg;
	struct timespec ts;

	for (;;) {
		job->run(job);
		worker_finish(job);
		pthread_mutex_lock(&W.lock);
		W.build_idle++;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += BUILD_IDLE_S;
		while (TAILQ_EMPTY(&W.builds) && !W.stopping &&
		    pthread_cond_timedwait(&W.build_cond, &W.lock, &ts) == 0)
			;
		W.build_idle--;
		job = TAILQ_FIRST(&W.builds);
		if (job == NULL) {
			/* Idle too long, or stopping: gone. */
			W.build_threads--;
			pthread_cond_broadcast(&W.cond);
			pthread_mutex_unlock(&W.lock);
			return NULL;
		}
		TAILQ_REMOVE(&W.builds, job, entry);
		W.builds_queued--;
		pthread_mutex_unlock(&W.lock);
	}
}

/* Loop side: call done() for everything that has finished. */
static void
worker_drain(evutil_socket_t fd, short what, void *arg)
{
	char buf[64];
	struct jobq list;

	(void)what;
	(void)arg;
	/*
	 * Mostly one byte: a read that does not fill buf emptied the pipe,
	 * and needs no second one to see EAGAIN (a byte written meanwhile
	 * wakes the loop again).
	 */
	while (read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	TAILQ_INIT(&list);
	pthread_mutex_lock(&W.lock);
	TAILQ_CONCAT(&list, &W.finished, entry);
	pthread_mutex_unlock(&W.lock);
	while (!TAILQ_EMPTY(&list)) {
		struct job *job = TAILQ_FIRST(&list);

		TAILQ_REMOVE(&list, job, entry);
		W.pending--;
		job->done(job);
	}
}

int
worker_init(struct event_base *base, int nthreads)
{
	int rc;

	TAILQ_INIT(&W.queue);
	TAILQ_INIT(&W.builds);
	TAILQ_INIT(&W.finished);
	if (pipe2(W.pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	W.ev = event_new(base, W.pipe[0], EV_READ | EV_PERSIST, worker_drain,
	    NULL);
	if (W.ev == NULL || event_add(W.ev, NULL) < 0)
		return -ENOMEM;
	W.threads = calloc(nthreads, sizeof(*W.threads));
	if (W.threads == NULL)
		return -ENOMEM;
	for (int i = 0; i < nthreads; i++) {
		rc = pthread_create(&W.threads[i], NULL, worker_main, NULL);
		if (rc != 0)
			return -rc;
		W.nthreads++;
	}
	return 0;
}

void
worker_submit(struct job *job)
{
	job->detached = 0;
	pthread_mutex_lock(&W.lock);
	W.pending++;
	TAILQ_INSERT_TAIL(&W.queue, job, entry);
	pthread_mutex_unlock(&W.lock);
	/* After the unlock: the thread woken does not wait for the lock. */
	pthread_cond_signal(&W.cond);
}

int
worker_spawn(struct job *job)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc = 0;

	job->detached = 1;
	pthread_mutex_lock(&W.lock);
	W.pending++;
	W.detached_running++;
	/* An idle build thread for every queued build: hand it over. */
	if (W.build_idle > W.builds_queued) {
		TAILQ_INSERT_TAIL(&W.builds, job, entry);
		W.builds_queued++;
		pthread_mutex_unlock(&W.lock);
		pthread_cond_signal(&W.build_cond);	/* as worker_submit */
		return 0;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, worker_build_main, job);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		W.pending--;
		W.detached_running--;
	} else
		W.build_threads++;
	pthread_mutex_unlock(&W.lock);
	return -rc;
}

unsigned
worker_pending(void)
{
	return W.pending;
}

void
worker_shutdown(void)
{
	pthread_mutex_lock(&W.lock);
	W.stopping = true;
	pthread_cond_broadcast(&W.cond);
	pthread_cond_broadcast(&W.build_cond);
	pthread_mutex_unlock(&W.lock);
	for (int i = 0; i < W.nthreads; i++)
		pthread_join(W.threads[i], NULL);
	/*
	 * Builds were cancelled by the caller; wait for them, and for their
	 * threads to go (a queued build still runs first).
	 */
	pthread_mutex_lock(&W.lock);
	while (W.detached_running > 0 || W.build_threads > 0)
		pthread_cond_wait(&W.cond, &W.lock);
	pthread_mutex_unlock(&W.lock);
	free(W.threads);
	W.threads = NULL;
	W.nthreads = 0;
	if (W.ev != NULL)
		event_free(W.ev);
	W.ev = NULL;
	if (W.pipe[0] >= 0)
		close(W.pipe[0]);
	if (W.pipe[1] >= 0)
		close(W.pipe[1]);
	W.pipe[0] = W.pipe[1] = -1;
}
