/*
 * cpukeep.c - every thread of vmbuildd on one CPU while a build asks for
 * it (see cpukeep.h), as `taskset -a -p -c CPU` would, then back.
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
#include <unistd.h>

#include "cpukeep.h"
#include "log.h"

/* Bounds the saved affinities: far above vmbuildd's threads. */
#define CPUKEEP_MAX_THREADS	4096

struct saved {
	pid_t	tid;
	cpu_set_t set;
};

static struct {
	pthread_mutex_t lock;
	unsigned count;		/* builds keeping */
	int	cpu;		/* -1 when none */
	cpu_set_t own;		/* the main thread's, for later threads */
	struct saved *saved;
	size_t	nr_saved;
} K = { PTHREAD_MUTEX_INITIALIZER, 0, -1, { { 0 } }, NULL, 0 };

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

	if (K.nr_saved >= CPUKEEP_MAX_THREADS)
		return;
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

int
cpukeep_enter(int cpu)
{
	cpu_set_t one;
	int rc = 0;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	pthread_mutex_lock(&K.lock);
	if (K.count > 0) {
		/* Another build keeps them: this one's thread is there too. */
		K.count++;
		goto out;
	}
	if (sched_getaffinity(getpid(), sizeof(K.own), &K.own) < 0) {
		rc = -errno;
		goto out;
	}
	K.saved = calloc(CPUKEEP_MAX_THREADS, sizeof(*K.saved));
	if (K.saved == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	K.nr_saved = 0;
	K.cpu = cpu;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	rc = each_thread(keep_one, &one);
	if (rc < 0) {
		(void)each_thread(give_back, NULL);
		free(K.saved);
		K.saved = NULL;
		K.cpu = -1;
		goto out;
	}
	K.count = 1;
out:
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
	free(K.saved);
	K.saved = NULL;
	K.nr_saved = 0;
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
