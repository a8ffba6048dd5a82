/*
 * worker.h - work off the event loop.
 *
 * A job runs job->run() on a worker thread, then job->done() on the loop
 * thread.  Short jobs (one hypervisor call) share a small fixed pool;
 * long jobs (a domain build) get a thread of their own, so that a build
 * never delays a host.scrub (an idle one kept from an earlier build, or
 * a new one).  Completions reach the loop through a pipe
 * watched by the loop, so the loop never waits for a worker.
 *
 * The job struct is owned by the submitter and usually embedded in a
 * larger one; done() may free it.
 */
#ifndef VMBUILDD_WORKER_H
#define VMBUILDD_WORKER_H

#include <sys/queue.h>

struct event_base;

struct job {
	void	(*run)(struct job *job);	/* worker thread */
	void	(*done)(struct job *job);	/* loop thread */
	TAILQ_ENTRY(job) entry;
	int	detached;			/* ran on its own thread */
};

int worker_init(struct event_base *base, int nthreads);
/* Queue a short job on the pool. */
void worker_submit(struct job *job);
/* Run a long job on a thread of its own; 0 or a negative errno. */
int worker_spawn(struct job *job);
/* Jobs submitted or running and not yet done(). */
unsigned worker_pending(void);
/* Stop the pool; waits for running jobs; pending done() are dropped. */
void worker_shutdown(void);

#endif /* VMBUILDD_WORKER_H */
