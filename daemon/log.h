/*
 * log.h - vmbuildd's log.
 *
 * A message goes to one of three places (log.c says how it chooses):
 *   journal  systemd's native protocol: PRIORITY, MESSAGE, the source
 *            location (CODE_FILE, CODE_LINE, CODE_FUNC), ERRNO, and the
 *            VM and task it concerns (VMBUILD_VM, VMBUILD_DOMID,
 *            VMBUILD_TASK) as fields of their own;
 *   syslog   syslog(3), facility daemon, tagged vmbuildd;
 *   stderr   one line per message, starting with the syslog level in
 *            angle brackets ("<3>"), which journald turns into the
 *            priority when it reads the stream.
 *
 * log_warn() and fatal() append strerror(errno) (and give ERRNO=).  The
 * functions are macros, so that each message knows where it was said;
 * all of them keep errno, and all are thread-safe.  None of them blocks:
 * a message its destination does not take at once is dropped, counted,
 * and the count logged once messages go through again.
 */
#ifndef VMBUILDD_LOG_H
#define VMBUILDD_LOG_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "vmbuild.h"

#define LOG_FMT(a, b)	__attribute__((format(printf, a, b)))

enum log_target {
	LOG_TARGET_AUTO = 0,	/* journal if stderr is the journal, else stderr */
	LOG_TARGET_JOURNAL,
	LOG_TARGET_SYSLOG,
	LOG_TARGET_STDERR,
};

/* "auto", "journal", "syslog", "stderr"; -1 for anything else. */
int log_target_parse(const char *name, enum log_target *ret);
/* Before anything is logged; decides where messages go. */
void log_init(int verbose, enum log_target target);
/* Where messages go now: "journal", "syslog" or "stderr". */
const char *log_target_name(void);
/*
 * A daemonised vmbuildd whose parent has gone: stderr is pointed at
 * /dev/null (the terminal that started us may close at any time), and
 * messages that went there go to syslog from now on.
 */
void log_detach(void);

/*
 * Messages lost since start because where they go was not taking them
 * (a stalled journald or syslog daemon, a full stderr pipe): logging
 * never blocks.
 */
unsigned long long log_dropped(void);

void log_emit(int prio, int errnum, const char *vm, uint32_t domid,
    uint64_t task, const char *file, int line, const char *func,
    const char *fmt, ...) LOG_FMT(9, 10);
void log_fatal(int errnum, const char *file, int line, const char *func,
    const char *fmt, ...) LOG_FMT(5, 6) __attribute__((noreturn));

#define LOG_AT		__FILE__, __LINE__, __func__
#define LOG_NO_VM	NULL, VMB_DOMID_INVALID, 0

#define log_warn(...)	log_emit(LOG_WARNING, errno, LOG_NO_VM, LOG_AT, \
			    __VA_ARGS__)	/* adds errno */
#define log_warnx(...)	log_emit(LOG_WARNING, 0, LOG_NO_VM, LOG_AT, \
			    __VA_ARGS__)
#define log_errx(...)	log_emit(LOG_ERR, 0, LOG_NO_VM, LOG_AT, __VA_ARGS__)
#define log_notice(...)	log_emit(LOG_NOTICE, 0, LOG_NO_VM, LOG_AT, \
			    __VA_ARGS__)
#define log_info(...)	log_emit(LOG_INFO, 0, LOG_NO_VM, LOG_AT, __VA_ARGS__)
#define log_debug(...)	log_emit(LOG_DEBUG, 0, LOG_NO_VM, LOG_AT, \
			    __VA_ARGS__)
/*
 * A message about a VM: its name, its domain id (VMB_DOMID_INVALID
 * before it has one) and the task working on it (0: none).
 */
#define log_vm(prio, vm, domid, task, ...) \
			log_emit(prio, 0, vm, domid, task, LOG_AT, __VA_ARGS__)
#define fatal(...)	log_fatal(errno, LOG_AT, __VA_ARGS__)	/* adds errno */
#define fatalx(...)	log_fatal(0, LOG_AT, __VA_ARGS__)

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

#endif /* VMBUILDD_LOG_H */
