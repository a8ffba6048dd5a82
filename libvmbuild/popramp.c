/*
 * popramp.c - how many of a node's populate workers take batches, decided
 * by what they are measured to deliver (the ramp).
 *
 * Memory scrubbed inline is work per page on the CPU that asks for it,
 * so the engine runs a worker per CPU it may use.  Whether a second, a
 * fourth, an eighth worker makes the node's populate faster is the
 * machine's to say, not ours: on a host whose memory bandwidth one
 * thread does not fill, it does; where dom0's vCPUs share physical CPUs
 * with busy guests, or the hypervisor itself runs on emulated CPUs that
 * share a few host cores, more workers contend for the same CPUs and
 * locks and were measured slower together than one alone (the lab's
 * dirty sequence under TCG: one CPU 2.2 to 2.4 s for 2280 MiB, four
 * workers 4.7 to 6.7 s), and each burns dom0's scheduler credit.
 *
 * So the node's workers start one at a time and double: one worker
 * takes batches until one of its batches has been timed; then twice as
 * many, until each admitted worker has timed a batch begun at that
 * level; and so on while the level's aggregate rate (its workers times
 * their mean rate per batch) is at least RAMP_GAIN over the level
 * before.  A level that gains less settles the ramp at the level before:
 * the workers above it finish the batch they hold and leave; a level
 * that gains with every worker admitted settles there.  A batch begun
 * at one level and ended at another is not counted (the level changed
 * under it).
 *
 * Workers wait for admission on a condition with a short timeout, so
 * that a cancel or another worker's failure (the caller's stopping())
 * is seen without a signal from here.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "vmb_internal.h"

/* A level must beat the one before by this much to be worth its CPUs. */
#define RAMP_GAIN_PCT	15
/* How long a waiting worker sleeps before its caller checks stopping(). */
#define RAMP_WAIT_NS	(20 * 1000 * 1000)

int
vmb__ramp_init(struct vmb__ramp *r, uint32_t max)
{
	int rc;

	memset(r, 0, sizeof(*r));
	r->max = max ? max : 1;
	r->admitted = 1;
	r->level_workers = 1;
	r->settled = r->max == 1;
	if ((rc = pthread_mutex_init(&r->lock, NULL)) != 0)
		return -rc;
	if ((rc = pthread_cond_init(&r->cond, NULL)) != 0) {
		pthread_mutex_destroy(&r->lock);
		return -rc;
	}
	r->ready = true;
	return 0;
}

void
vmb__ramp_fini(struct vmb__ramp *r)
{
	if (!r->ready)
		return;
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	r->ready = false;
}

int
vmb__ramp_enter(struct vmb__ramp *r, uint32_t idx, uint32_t *ret_gen)
{
	struct timespec ts;
	int go;

	pthread_mutex_lock(&r->lock);
	if (idx >= r->admitted && !r->settled && !r->drained) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += RAMP_WAIT_NS;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	}
	if (idx < r->admitted)
		go = 1;			/* take a batch */
	else if (r->settled || r->drained)
		go = 0;			/* never needed: leave */
	else
		go = -1;		/* still waiting: check stopping() */
	*ret_gen = r->gen;
	pthread_mutex_unlock(&r->lock);
	return go;
}

/* Start level `workers` (the lock held). */
static void
level_start(struct vmb__ramp *r, uint32_t workers)
{
	r->admitted = workers;
	r->level_workers = workers;
	r->gen++;
	r->bytes = r->ns = 0;
	r->counted = 0;
	pthread_cond_broadcast(&r->cond);
}

void
vmb__ramp_done(struct vmb__ramp *r, uint32_t gen, uint64_t bytes,
    uint64_t ns)
{
	double rate;

	pthread_mutex_lock(&r->lock);
	if (r->settled || gen != r->gen || ns == 0)
		goto out;
	r->bytes += bytes;
	r->ns += ns;
	if (++r->counted < r->level_workers)
		goto out;
	/* Bytes per second of the level: its workers at their mean rate. */
	rate = (double)r->level_workers * (double)r->bytes * 1e9 /
	    (double)r->ns;
	r->rates[r->nr_levels < VMB_RAMP_LEVELS ? r->nr_levels :
	    VMB_RAMP_LEVELS - 1] = rate;
	r->nr_levels++;
	if (r->nr_levels > 1 &&
	    rate * 100 < r->prev_rate * (100 + RAMP_GAIN_PCT)) {
		/* No gain worth the CPUs: back to the level before. */
		r->admitted = r->prev_workers;
		r->settled = true;
		pthread_cond_broadcast(&r->cond);
		goto out;
	}
	if (r->level_workers >= r->max) {
		r->settled = true;
		goto out;
	}
	r->prev_rate = rate;
	r->prev_workers = r->level_workers;
	level_start(r, r->level_workers * 2 > r->max ? r->max :
	    r->level_workers * 2);
out:
	pthread_mutex_unlock(&r->lock);
}

void
vmb__ramp_drained(struct vmb__ramp *r)
{
	pthread_mutex_lock(&r->lock);
	r->drained = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

uint32_t
vmb__ramp_result(struct vmb__ramp *r)
{
	uint32_t n;

	pthread_mutex_lock(&r->lock);
	n = r->admitted;
	pthread_mutex_unlock(&r->lock);
	return n;
}
