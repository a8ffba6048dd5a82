/*
 * fault.c - injected failures, so that tests can see a toolstack undo
 * and lose nothing (--fail OP:N[:ERRNO|hang|crash], HV_OP_FAULT).
 *
 * Every call of an op on the socket is counted, over all connections.
 * A fault fires at one count of one op: the call then fails with -errno
 * without doing anything, is never answered, or kills hvsim.  Faults
 * given on the command line count from hvsim's start; faults armed by a
 * request count from that request on.  Each fires once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvsim.h"
#include "vmbuild/hvops.h"

#define FAULT_MAX	64		/* armed at once */

struct fault {
	uint16_t op;
	uint16_t mode;			/* enum hv_fault_mode */
	int	error;			/* positive errno */
	uint64_t at;			/* fires at this count of op's calls */
};

static struct {
	pthread_mutex_t lock;
	uint64_t calls[HV_FAULT_MAX_OPS];
	struct fault armed[FAULT_MAX];
	uint32_t nr;
	uint64_t fired;
} F = { .lock = PTHREAD_MUTEX_INITIALIZER };

_Static_assert(HV_OP_MAX <= HV_FAULT_MAX_OPS, "every op can be counted");

/* HV_OP_ names in lower case, as --fail takes them: hvops.def's. */
const char *
fault_op_name(uint16_t op)
{
	return op > 0 && op < HV_OP_MAX ? hv_op_desc(op)->name : NULL;
}

static int
op_by_name(const char *name, size_t len)
{
	for (uint16_t op = 1; op < HV_OP_MAX; op++)
		if (strlen(fault_op_name(op)) == len &&
		    !strncmp(fault_op_name(op), name, len))
			return op;
	return -1;
}

/* "EIO", "eio" or "5": a positive errno, or -1. */
static int
errno_by_name(const char *s)
{
	char *end;
	long v;

	v = strtol(s, &end, 10);
	if (*s && !*end)
		return v > 0 && v < 4096 ? (int)v : -1;
	for (int e = 1; e < 200; e++) {
		const char *n = strerrorname_np(e);

		if (n && !strcasecmp(n, s))
			return e;
	}
	return -1;
}

int
fault_parse(const char *spec, struct hv_fault *ret, char *why, size_t len)
{
	const char *c1 = strchr(spec, ':'), *c2;
	char *end;
	unsigned long n;
	int op;

	memset(ret, 0, sizeof(*ret));
	if (!c1) {
		snprintf(why, len, "'%s': expected OP:N[:ERRNO|hang|crash]",
		    spec);
		return -EINVAL;
	}
	op = op_by_name(spec, (size_t)(c1 - spec));
	if (op < 0) {
		snprintf(why, len, "'%.*s' is not an op (the HV_OP_ name in "
		    "lower case, e.g. populate, domain_destroy, map)",
		    (int)(c1 - spec), spec);
		return -EINVAL;
	}
	errno = 0;
	n = strtoul(c1 + 1, &end, 10);
	if (errno || end == c1 + 1 || (*end && *end != ':') || n == 0 ||
	    n > UINT32_MAX || c1[1] == '-') {
		snprintf(why, len, "'%s': N must be a call number from 1", spec);
		return -EINVAL;
	}
	ret->op = (uint16_t)op;
	ret->nth = (uint32_t)n;
	ret->mode = HV_FAULT_FAIL;
	ret->error = EIO;
	if (!*end)
		return 0;
	c2 = end + 1;
	if (!strcmp(c2, "hang")) {
		ret->mode = HV_FAULT_HANG;
	} else if (!strcmp(c2, "crash")) {
		ret->mode = HV_FAULT_CRASH;
	} else if ((ret->error = errno_by_name(c2)) < 0) {
		snprintf(why, len, "'%s': '%s' is neither an errno (EIO, "
		    "ENOMEM, 12, ...) nor hang or crash", spec, c2);
		return -EINVAL;
	}
	return 0;
}

int
fault_arm(const struct hv_fault *f, bool from_now)
{
	int rc = 0;

	if (f->pad || f->nth == 0 || f->op == 0 || f->op >= HV_OP_MAX ||
	    (f->mode != HV_FAULT_FAIL && f->mode != HV_FAULT_HANG &&
	    f->mode != HV_FAULT_CRASH) || f->error < 0 || f->error >= 4096)
		return -EINVAL;
	pthread_mutex_lock(&F.lock);
	if (F.nr == FAULT_MAX) {
		rc = -ENOSPC;
	} else {
		F.armed[F.nr++] = (struct fault){ .op = f->op,
		    .mode = f->mode, .error = f->error ? f->error : EIO,
		    .at = (from_now ? F.calls[f->op] : 0) + f->nth };
	}
	pthread_mutex_unlock(&F.lock);
	return rc;
}

void
fault_clear(void)
{
	pthread_mutex_lock(&F.lock);
	F.nr = 0;
	pthread_mutex_unlock(&F.lock);
}

struct fault_hit
fault_check(uint16_t op)
{
	struct fault_hit hit = { .mode = HV_FAULT_QUERY };

	if (op == 0 || op >= HV_FAULT_MAX_OPS)
		return hit;
	pthread_mutex_lock(&F.lock);
	hit.call = ++F.calls[op];
	for (uint32_t i = 0; i < F.nr; i++) {
		if (F.armed[i].op != op || F.armed[i].at != hit.call)
			continue;
		hit.mode = F.armed[i].mode;
		hit.error = F.armed[i].error;
		F.armed[i] = F.armed[--F.nr];
		F.fired++;
		break;
	}
	pthread_mutex_unlock(&F.lock);
	return hit;
}

void
fault_report(struct hv_fault_reply *rep)
{
	memset(rep, 0, sizeof(*rep));
	pthread_mutex_lock(&F.lock);
	memcpy(rep->calls, F.calls, sizeof(rep->calls));
	rep->fired = F.fired;
	rep->armed = F.nr;
	pthread_mutex_unlock(&F.lock);
}
