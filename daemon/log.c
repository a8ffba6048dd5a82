/*
 * log.c - vmbuildd's tiny log API (see log.h).
 *
 * Lines are assembled in one buffer and written with one write(2), so
 * that lines from the loop and from worker threads never interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int log_verbose;

void
log_init(int verbose)
{
	log_verbose = verbose;
}

static void
log_vline(int prio, const char *fmt, va_list ap, int errnum)
{
	char buf[2048];
	int n, m;

	n = snprintf(buf, sizeof(buf), "<%d>", prio);
	m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (errnum) {
		m = snprintf(buf + n, sizeof(buf) - n, ": %s",
		    strerror(errnum));
		n += m;
		if (n > (int)sizeof(buf) - 2)
			n = sizeof(buf) - 2;
	}
	/* A message must stay one line for journald. */
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

#define LOG_BODY(prio, errnum) do {			\
	va_list ap;					\
	va_start(ap, fmt);				\
	log_vline(prio, fmt, ap, errnum);		\
	va_end(ap);					\
} while (0)

void
log_warn(const char *fmt, ...)
{
	int e = errno;

	LOG_BODY(LOG_WARNING, e);
	errno = e;
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY(LOG_WARNING, 0);
}

void
log_errx(const char *fmt, ...)
{
	LOG_BODY(LOG_ERR, 0);
}

void
log_notice(const char *fmt, ...)
{
	LOG_BODY(LOG_NOTICE, 0);
}

void
log_info(const char *fmt, ...)
{
	LOG_BODY(LOG_INFO, 0);
}

void
log_debug(const char *fmt, ...)
{
	if (log_verbose <= 0)
		return;
	LOG_BODY(LOG_DEBUG, 0);
}

void
fatal(const char *fmt, ...)
{
	int e = errno;

	LOG_BODY(LOG_CRIT, e);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY(LOG_CRIT, 0);
	exit(1);
}

bool
log_rate_ok(struct log_rate *r, double interval, unsigned *ret_suppressed)
{
	struct timespec ts;
	double now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec + ts.tv_nsec / 1e9;
	if (now < r->next) {
		r->suppressed++;
		return false;
	}
	r->next = now + interval;
	*ret_suppressed = r->suppressed;
	r->suppressed = 0;
	return true;
}
