/*
 * log.h - vmbuildd's log: one line per message on stderr.
 *
 * Every line starts with a syslog level in angle brackets ("<3>"), which
 * journald turns into the message's priority; on a terminal it is just a
 * short marker.  log_warn() and fatal() append strerror(errno).
 */
#ifndef VMBUILDD_LOG_H
#define VMBUILDD_LOG_H

#include <stdbool.h>

#define LOG_FMT(a, b)	__attribute__((format(printf, a, b)))

void log_init(int verbose);

void log_warn(const char *fmt, ...) LOG_FMT(1, 2);	/* adds errno */
void log_warnx(const char *fmt, ...) LOG_FMT(1, 2);
void log_errx(const char *fmt, ...) LOG_FMT(1, 2);
void log_notice(const char *fmt, ...) LOG_FMT(1, 2);
void log_info(const char *fmt, ...) LOG_FMT(1, 2);
void log_debug(const char *fmt, ...) LOG_FMT(1, 2);
/*
 * Rate limiting for messages an outsider can cause at will (accept
 * errors, a hypervisor that keeps failing): log_rate_ok() is true at
 * most once per `interval` seconds, and then says in *ret_suppressed
 * how many were held back since.  Loop thread only.
 */
struct log_rate {
	double	next;		/* CLOCK_MONOTONIC seconds */
	unsigned suppressed;
};
bool log_rate_ok(struct log_rate *r, double interval, unsigned *ret_suppressed);

void fatal(const char *fmt, ...) LOG_FMT(1, 2) __attribute__((noreturn));
void fatalx(const char *fmt, ...) LOG_FMT(1, 2) __attribute__((noreturn));

#endif /* VMBUILDD_LOG_H */
