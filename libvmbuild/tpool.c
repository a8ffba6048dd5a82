/*
 * tpool.c - the context's pool of populate threads.
 *
 * Starting a thread costs 0.1-0.2 ms here (a 2-CPU virtual machine:
 * clone, a stack mapping, a malloc arena on first use); the engine
 * started three for an 8 GiB guest, more than the whole populate of
 * clean memory took in the libxl pattern.  So threads outlive a build:
 * a task given to the pool runs on an idle thread, or on a new one when
 * none is idle, and the threads wait for the next build until the
 * context is freed.
 *
 * Tasks never wait for one another, so a task waits at most for the
 * tasks queued before it: no deadlock, whatever the number of threads.
 * A build's branches (build.c: the images, the devices) run on it too,
 * started without waiting (vmb__tpool_start) and joined later: a thread
 * per small VM's build cost as much as its populate.
 * A task may change its thread's CPU affinity (pinning to a node); the
 * pool puts back the thread's first affinity after each task, so a later
 * unpinned task does not inherit it.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "vmb_internal.h"

struct tpool_thread {
	pthread_t tid;
	struct tpool_thread *next;
};

struct vmb__tpool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a task was queued, or stop */
	pthread_cond_t done;		/* a task finished */
	struct vmb__task *head, **tail;	/* queued, oldest first */
	struct tpool_thread *threads;
	uint32_t idle;			/* threads waiting for a task */
	uint32_t queued;
	bool	stop;
};

int
vmb__tpool_new(struct vmb__tpool **ret_pool)
{
	struct vmb__tpool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	p->tail = &p->head;
	*ret_pool = p;
	return 0;
}

static void *
tpool_main(void *arg)
{
	struct vmb__tpool *p = arg;
	cpu_set_t first;
	bool have_first = sched_getaffinity(0, sizeof(first), &first) == 0;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct vmb__task *t;

		p->idle++;
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->work, &p->lock);
		p->idle--;
		if (!p->head)
			break;		/* stop, and nothing left to run */
		t = p->head;
		p->head = t->next;
		if (!p->head)
			p->tail = &p->head;
		p->queued--;
		pthread_mutex_unlock(&p->lock);
		t->fn(t->arg);
		if (have_first)
			(void)pthread_setaffinity_np(pthread_self(),
			    sizeof(first), &first);
		pthread_mutex_lock(&p->lock);
		(*t->remaining)--;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Under the lock: queue n tasks counted down in *remaining, with a
 * thread for each that no idle thread will take.  -EAGAIN (nothing
 * queued) when the pool has no thread and cannot start one.
 */
static int
tpool_queue(struct vmb__tpool *p, struct vmb__task *tasks, size_t n,
    size_t *remaining)
{
	size_t started = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		tasks[i].remaining = remaining;
		tasks[i].next = NULL;
		*p->tail = &tasks[i];
		p->tail = &tasks[i].next;
		p->queued++;
	}
	while (p->queued > p->idle + started) {
		struct tpool_thread *th = malloc(sizeof(*th));

		if (!th || pthread_create(&th->tid, NULL, tpool_main, p)) {
			free(th);
			/* Queued tasks still run on the threads there are. */
			if (!p->threads && !p->idle)
				rc = -EAGAIN;
			break;
		}
		th->next = p->threads;
		p->threads = th;
		started++;
	}
	if (rc) {
		/* No thread at all: take the tasks back, run none. */
		p->head = NULL;
		p->tail = &p->head;
		p->queued = 0;
		return rc;
	}
	pthread_cond_broadcast(&p->work);
	return 0;
}

int
vmb__tpool_run(struct vmb__tpool *p, struct vmb__task *tasks, size_t n,
    void (*self_fn)(void *), void *self_arg)
{
	size_t remaining = n;
	int rc;

	pthread_mutex_lock(&p->lock);
	rc = tpool_queue(p, tasks, n, &remaining);
	pthread_mutex_unlock(&p->lock);
	if (rc)
		return rc;
	if (self_fn)
		self_fn(self_arg);
	vmb__tpool_wait(p, &remaining);
	return 0;
}

int
vmb__tpool_start(struct vmb__tpool *p, struct vmb__task *task,
    size_t *remaining)
{
	int rc;

	*remaining = 1;
	pthread_mutex_lock(&p->lock);
	rc = tpool_queue(p, task, 1, remaining);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void
vmb__tpool_wait(struct vmb__tpool *p, size_t *remaining)
{
	pthread_mutex_lock(&p->lock);
	while (*remaining > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void
vmb__tpool_free(struct vmb__tpool *p)
{
	struct tpool_thread *th;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	while ((th = p->threads) != NULL) {
		p->threads = th->next;
		pthread_join(th->tid, NULL);
		free(th);
	}
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
