/*
 * cpukeep.c - every thread of vmbuildd on one CPU for a build's request
 * where dom0's vCPUs wait for pCPUs (see cpukeep.h), as
 * `taskset -a -p -c CPU` would, then back.
 *
 * The steal is sampled on the loop each second into a ring of the last
 * CPUKEEP_SAMPLES; a build's start compares a sample of its own with the
 * oldest of the same CPUs, a window of a few seconds that ends as the
 * request begins (the build's own wait, measured by libvmbuild from its
 * start, comes too late to decide where the build runs).
 *
 * The threads are read from /proc/self/task and each moved with
 * sched_setaffinity(2) on its tid.  One that ends between the listing
 * and its move (ESRCH) is no longer there to keep; one started after
 * the listing inherits its creator's affinity, which is then the one
 * CPU, and gets the process's own back at the end (the main thread's,
 * as it was).  A thread whose affinity cannot be read or set is left
 * as it is and said; the others are kept all the same.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cpukeep.h"
#include "log.h"

/* Bounds the saved affinities: far above vmbuildd's threads. */
#define CPUKEEP_MAX_THREADS	4096
/* The window before a build: this many samples, one a second. */
#define CPUKEEP_SAMPLES		5

struct saved {
	pid_t	tid;
	cpu_set_t set;
};

static struct {
	pthread_mutex_t lock;
	enum cpukeep_mode mode;
	struct event	*ev_sample;
	bool		sampling;	/* auto, with steal to read */
	struct vmb_cpuwait ring[CPUKEEP_SAMPLES];
	unsigned	next;		/* ring slot the next sample takes */
	unsigned	count;		/* builds keeping */
	int		cpu;		/* -1 when none */
	cpu_set_t	own;		/* the main thread's, for later threads */
	struct saved	*saved;		/* grown as threads are listed */
	size_t		nr_saved, cap_saved;
} K = { .lock = PTHREAD_MUTEX_INITIALIZER, .cpu = -1 };

static const char *const mode_names[] = {
	[CPUKEEP_AUTO] = "auto",
	[CPUKEEP_NEVER] = "never",
	[CPUKEEP_ALWAYS] = "always",
};

int
cpukeep_mode_parse(const char *s, enum cpukeep_mode *ret)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]);
	    i++)
		if (strcmp(s, mode_names[i]) == 0) {
			*ret = (enum cpukeep_mode)i;
			return 0;
		}
	return -EINVAL;
}

const char *
cpukeep_mode_name(enum cpukeep_mode mode)
{
	return (unsigned)mode < sizeof(mode_names) / sizeof(mode_names[0]) ?
	    mode_names[mode] : "?";
}

bool
cpukeep_wanted(enum cpukeep_mode mode, double share)
{
	switch (mode) {
	case CPUKEEP_ALWAYS:
		return true;
	case CPUKEEP_AUTO:
		return share >= VMB_CPUWAIT_SERIAL;
	default:
		return false;
	}
}

void
cpukeep_note(const struct vmb_cpuwait *s)
{
	pthread_mutex_lock(&K.lock);
	/* A sample while kept is of the one CPU the loop is on: not ours. */
	if (K.count == 0) {
		K.ring[K.next] = *s;
		K.next = (K.next + 1) % CPUKEEP_SAMPLES;
	}
	pthread_mutex_unlock(&K.lock);
}

int
cpukeep_share(const struct vmb_cpuwait *now, double *ret_share)
{
	int rc = -ENODATA;

	pthread_mutex_lock(&K.lock);
	/* From the oldest slot on: the first that measures is the widest. */
	for (unsigned i = 0; i < CPUKEEP_SAMPLES && rc != 0; i++) {
		const struct vmb_cpuwait *s =
		    &K.ring[(K.next + i) % CPUKEEP_SAMPLES];

		if (s->cpus != 0)
			rc = vmb_cpuwait_share(s, now, ret_share);
	}
	pthread_mutex_unlock(&K.lock);
	return rc;
}

static void
sample_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vmb_cpuwait s;

	(void)fd;
	(void)what;
	(void)arg;
	if (vmb_cpuwait_sample(&s) == 0)
		cpukeep_note(&s);
}

int
cpukeep_init(struct event_base *base, enum cpukeep_mode mode, bool sample)
{
	struct timeval tv = { 1, 0 };
	struct vmb_cpuwait s;
	int rc;

	K.mode = mode;
	K.sampling = false;
	if (mode != CPUKEEP_AUTO || !sample)
		return 0;
	rc = vmb_cpuwait_sample(&s);
	if (rc < 0)
		return rc;
	cpukeep_note(&s);
	K.ev_sample = event_new(base, -1, EV_PERSIST, sample_cb, NULL);
	if (K.ev_sample == NULL || evtimer_add(K.ev_sample, &tv) < 0)
		return -ENOMEM;
	K.sampling = true;
	return 0;
}

void
cpukeep_stop(void)
{
	if (K.ev_sample != NULL)
		event_free(K.ev_sample);
	K.ev_sample = NULL;
	K.sampling = false;
	free(K.saved);
	K.saved = NULL;
	K.cap_saved = 0;
}

/* Calls fn(tid, arg) for each thread now in the process; -errno. */
static int
each_thread(void (*fn)(pid_t tid, void *arg), void *arg)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (de->d_name[0] != '.' && *end == '\0' && tid > 0)
			fn((pid_t)tid, arg);
	}
	closedir(d);
	return 0;
}

static void
keep_one(pid_t tid, void *arg)
{
	const cpu_set_t *one = arg;
	struct saved *s;

	if (K.nr_saved == K.cap_saved) {
		size_t cap = K.cap_saved ? 2 * K.cap_saved : 64;

		s = cap <= CPUKEEP_MAX_THREADS ?
		    realloc(K.saved, cap * sizeof(*s)) : NULL;
		if (s == NULL) {
			log_warnx("cpukeep: thread %d not kept: no room to "
			    "save its affinity", (int)tid);
			return;
		}
		K.saved = s;
		K.cap_saved = cap;
	}
	s = &K.saved[K.nr_saved];
	s->tid = tid;
	if (sched_getaffinity(tid, sizeof(s->set), &s->set) < 0) {
		if (errno != ESRCH)
			log_warn("cpukeep: thread %d's affinity", (int)tid);
		return;
	}
	if (sched_setaffinity(tid, sizeof(*one), one) < 0) {
		if (errno != ESRCH)
			log_warn("cpukeep: thread %d to CPU %d", (int)tid,
			    K.cpu);
		return;
	}
	K.nr_saved++;
}

static void
give_back(pid_t tid, void *arg)
{
	const cpu_set_t *set = &K.own;

	(void)arg;
	for (size_t i = 0; i < K.nr_saved; i++)
		if (K.saved[i].tid == tid) {
			set = &K.saved[i].set;
			break;
		}
	if (sched_setaffinity(tid, sizeof(*set), set) < 0 && errno != ESRCH)
		log_warn("cpukeep: thread %d's affinity back", (int)tid);
}

/* cpukeep_enter with K.lock held. */
static int
enter_locked(int cpu)
{
	cpu_set_t one;
	int rc;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	if (K.count > 0) {
		/* Another build keeps them: this one's thread is there too. */
		K.count++;
		return 0;
	}
	if (sched_getaffinity(getpid(), sizeof(K.own), &K.own) < 0)
		return -errno;
	if (!CPU_ISSET(cpu, &K.own))
		return -EINVAL;
	K.nr_saved = 0;
	K.cpu = cpu;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	/* Fails only when the listing cannot open: nothing was moved. */
	rc = each_thread(keep_one, &one);
	if (rc < 0) {
		K.cpu = -1;
		return rc;
	}
	K.count = 1;
	return 0;
}

int
cpukeep_enter(int cpu)
{
	int rc;

	pthread_mutex_lock(&K.lock);
	rc = enter_locked(cpu);
	pthread_mutex_unlock(&K.lock);
	return rc;
}

void
cpukeep_leave(void)
{
	pthread_mutex_lock(&K.lock);
	if (K.count == 0 || --K.count > 0)
		goto out;
	if (each_thread(give_back, NULL) < 0)
		log_warn("cpukeep: the threads' affinity back");
	K.nr_saved = 0;		/* K.saved kept for the next build */
	K.cpu = -1;
out:
	pthread_mutex_unlock(&K.lock);
}

int
cpukeep_cpu(void)
{
	int cpu;

	pthread_mutex_lock(&K.lock);
	cpu = K.cpu;
	pthread_mutex_unlock(&K.lock);
	return cpu;
}

int
cpukeep_begin(double *ret_share)
{
	struct vmb_cpuwait now;
	double share = -1;
	int cpu = -1, rc;

	*ret_share = -1;
	if (K.mode == CPUKEEP_NEVER)
		return -1;
	/*
	 * Only where the loop samples: a build on hvsim (whose work runs
	 * on its own threads) reads no /proc/stat, which at a thousand
	 * small creates a second would cost some of them.
	 */
	if (K.sampling && vmb_cpuwait_sample(&now) == 0 &&
	    cpukeep_share(&now, &share) == 0)
		*ret_share = share;
	pthread_mutex_lock(&K.lock);
	/* A build already kept: this thread is on its CPU, and joins. */
	if (K.count == 0 && !cpukeep_wanted(K.mode, *ret_share))
		goto out;
	rc = K.count > 0 ? enter_locked(K.cpu) : enter_locked(sched_getcpu());
	if (rc < 0) {
		log_warnx("cannot keep the daemon's threads on one CPU: %s",
		    strerror(-rc));
		goto out;
	}
	cpu = K.cpu;
out:
	pthread_mutex_unlock(&K.lock);
	return cpu;
}

void
cpukeep_spawn_begin(void)
{
	pthread_mutex_lock(&K.lock);
	if (K.count > 0)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(K.own),
		    &K.own);
	pthread_mutex_unlock(&K.lock);
}

void
cpukeep_spawn_end(void)
{
	cpu_set_t one;

	pthread_mutex_lock(&K.lock);
	if (K.count > 0) {
		CPU_ZERO(&one);
		CPU_SET(K.cpu, &one);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	pthread_mutex_unlock(&K.lock);
}
