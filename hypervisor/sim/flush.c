/*
 * flush.c - TLB-flush clocks and the simulated CPUs.
 *
 * As in Xen: a global flush clock ticks on every flush; each CPU records
 * the clock of its last flush; a page freed at time T may still be in
 * the TLB of every CPU whose last flush is not later than T.  Computing
 * that CPU mask for a timestamp is "the filter".
 *
 * Each simulated CPU is a thread.  A flush is a real broadcast: the
 * target CPUs' threads are woken, each records its new flush time and
 * acknowledges, and the flusher waits for all of them, so the cost grows
 * with the number of CPUs as IPIs do.  Flushes are serialised, as Xen's
 * flush_lock does.  While domains run, each CPU also flushes locally at
 * switch_hz (a vCPU context switch, post 002), cause "other".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvsim.h"

struct cpu_arg {
	struct flushctl *f;
	uint32_t cpu;
};

static bool
mask_test(const struct cpumask *m, uint32_t cpu)
{
	return m->w[cpu / 64] & (1ull << (cpu % 64));
}

uint32_t
cpumask_weight(const struct cpumask *m, uint32_t nr)
{
	uint32_t i, n = 0;

	/* Only CPUs that exist: bits past nr are ignored, never waited for. */
	for (i = 0; i < (nr + 63) / 64; i++) {
		uint64_t w = m->w[i];

		if (i == nr / 64)
			w &= (1ull << (nr % 64)) - 1;
		n += (uint32_t)__builtin_popcountll(w);
	}
	return n;
}



static void *
cpu_main(void *arg)
{
	struct cpu_arg *a = arg;
	struct flushctl *f = a->f;
	uint32_t cpu = a->cpu;
	uint64_t seen;

	free(a);
	/*
	 * Start from generation 0, not the current one: a flush requested
	 * before this thread first ran must still be acknowledged.
	 */
	seen = 0;
	pthread_mutex_lock(&f->lock);
	while (!f->stop) {
		if (f->gen == seen) {
			if (f->switch_hz && ATOMIC_LOAD(&f->running) > 0) {
				struct timespec ts;
				int r;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_nsec += 1000000000L / f->switch_hz;
				ts.tv_sec += ts.tv_nsec / 1000000000L;
				ts.tv_nsec %= 1000000000L;
				r = pthread_cond_timedwait(&f->req, &f->lock,
				    &ts);
				if (r == ETIMEDOUT && f->gen == seen &&
				    !f->stop) {
					/* Local flush on a context switch. */
					__atomic_store_n(&f->cpu_time[cpu],
					    __atomic_add_fetch(&f->clock, 1,
					    __ATOMIC_SEQ_CST), __ATOMIC_RELEASE);
					CTR_ADD(f->hv, tlb_flushes_issued[
					    HV_FLUSH_CAUSE_OTHER], 1);
				}
			} else {
				pthread_cond_wait(&f->req, &f->lock);
			}
			continue;
		}
		seen = f->gen;
		if (mask_test(&f->target, cpu)) {
			__atomic_store_n(&f->cpu_time[cpu], f->stamp,
			    __ATOMIC_RELEASE);
			if (--f->pending == 0)
				pthread_cond_signal(&f->ack);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

int
flush_init(struct flushctl *f, struct hv *hv, uint32_t nr_cpus,
    uint32_t switch_hz)
{
	pthread_attr_t attr;
	uint32_t i;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	if (nr_cpus == 0 || nr_cpus > HV_MAX_CPUS)
		return -EINVAL;
	f->hv = hv;
	f->nr_cpus = nr_cpus;
	f->clock = 1;
	f->switch_hz = switch_hz;
	pthread_mutex_init(&f->serial, NULL);
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->req, NULL);
	pthread_cond_init(&f->ack, NULL);
	f->cpu_time = calloc(nr_cpus, sizeof(*f->cpu_time));
	f->threads = calloc(nr_cpus, sizeof(*f->threads));
	if (!f->cpu_time || !f->threads) {
		rc = -ENOMEM;
		goto fail;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < nr_cpus; i++) {
		struct cpu_arg *a = malloc(sizeof(*a));

		if (!a) {
			rc = -ENOMEM;
			break;
		}
		a->f = f;
		a->cpu = i;
		rc = -pthread_create(&f->threads[i], &attr, cpu_main, a);
		if (rc < 0) {
			free(a);
			break;
		}
		f->nr_threads++;
	}
	pthread_attr_destroy(&attr);
	if (rc < 0)
		goto fail;
	return 0;

fail:
	flush_fini(f);
	return rc;
}

void
flush_fini(struct flushctl *f)
{
	uint32_t i;

	pthread_mutex_lock(&f->lock);
	f->stop = true;
	pthread_cond_broadcast(&f->req);
	pthread_mutex_unlock(&f->lock);
	for (i = 0; i < f->nr_threads; i++)
		pthread_join(f->threads[i], NULL);
	f->nr_threads = 0;
	free(f->threads);
	free(f->cpu_time);
	f->threads = NULL;
	f->cpu_time = NULL;
}

uint64_t
flush_now(struct flushctl *f)
{
	return __atomic_load_n(&f->clock, __ATOMIC_ACQUIRE);
}

uint32_t
flush_filter(struct flushctl *f, uint64_t ts, struct cpumask *mask)
{
	uint32_t cpu, n = 0;

	for (cpu = 0; cpu < f->nr_cpus; cpu++) {
		if (__atomic_load_n(&f->cpu_time[cpu], __ATOMIC_ACQUIRE) <=
		    ts) {
			mask->w[cpu / 64] |= 1ull << (cpu % 64);
			n++;
		}
	}
	if (f->hv)
		CTR_ADD(f->hv, tlb_filter_evaluations, 1);
	return n;
}

void
flush_cpus(struct flushctl *f, const struct cpumask *mask, int cause)
{
	uint32_t n = cpumask_weight(mask, f->nr_cpus);

	if (n == 0)
		return;
	pthread_mutex_lock(&f->serial);
	pthread_mutex_lock(&f->lock);
	f->stamp = __atomic_add_fetch(&f->clock, 1, __ATOMIC_SEQ_CST);
	f->target = *mask;
	f->pending = n;
	f->gen++;
	pthread_cond_broadcast(&f->req);
	while (f->pending > 0 && !f->stop)
		pthread_cond_wait(&f->ack, &f->lock);
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_unlock(&f->serial);
	if (f->hv) {
		CTR_ADD(f->hv, tlb_flushes_issued[cause], 1);
		CTR_ADD(f->hv, tlb_flush_cpu_ipis, n);
	}
}

void
flush_running(struct flushctl *f, int delta)
{
	__atomic_add_fetch(&f->running, (uint32_t)delta, __ATOMIC_SEQ_CST);
	if (delta > 0) {
		/* Wake the CPUs so that they start their switch timers. */
		pthread_mutex_lock(&f->lock);
		pthread_cond_broadcast(&f->req);
		pthread_mutex_unlock(&f->lock);
	}
}
