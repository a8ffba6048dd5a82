/*
 * log.c - vmbuildd's log (see log.h).
 *
 * Where messages go is decided once by log_init, and once more by
 * log_detach for a daemonised vmbuildd:
 *   - journal when asked (--log-target journal), or, by default, when
 *     stderr is connected to the journal: systemd then sets
 *     JOURNAL_STREAM to the device and inode of that stream, and a
 *     program that finds them on its fd 2 should upgrade to the native
 *     protocol (systemd.exec(5)), which carries fields;
 *   - syslog when asked, and by default for a daemonised vmbuildd once
 *     its parent has exited (log_detach): the terminal it was started
 *     from may close at any time;
 *   - stderr otherwise.
 * A message the journal does not take (no journald) goes to stderr.
 *
 * The text of a message is the same everywhere; on stderr and syslog a
 * newline in it becomes a space, so that it stays one line.  Lines on
 * stderr are written with one write(2), so that lines from the loop and
 * from worker threads never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* The location is the caller's, given by log.h's macros, not ours. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "log.h"

#define LOG_IDENT	"vmbuildd"
#define LOG_MSG_MAX	2048

static const char *const target_names[] = {
	[LOG_TARGET_AUTO] = "auto",
	[LOG_TARGET_JOURNAL] = "journal",
	[LOG_TARGET_SYSLOG] = "syslog",
	[LOG_TARGET_STDERR] = "stderr",
};

static struct {
	int		verbose;
	enum log_target	target;		/* never AUTO after log_init */
} L = { .target = LOG_TARGET_STDERR };

int
log_target_parse(const char *name, enum log_target *ret)
{
	for (size_t i = 0; i < sizeof(target_names) / sizeof(target_names[0]);
	    i++)
		if (strcmp(name, target_names[i]) == 0) {
			*ret = (enum log_target)i;
			return 0;
		}
	return -1;
}

const char *
log_target_name(void)
{
	return target_names[L.target];
}

/* Is fd 2 the stream JOURNAL_STREAM ("DEVICE:INODE") names? */
static int
stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int n = 0;

	if (env == NULL || sscanf(env, "%llu:%llu%n", &dev, &ino, &n) != 2 ||
	    env[n] != '\0' || fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void
log_init(int verbose, enum log_target target)
{
	L.verbose = verbose;
	if (target == LOG_TARGET_AUTO)
		target = stderr_is_journal() ? LOG_TARGET_JOURNAL :
		    LOG_TARGET_STDERR;
	L.target = target;
	if (target == LOG_TARGET_SYSLOG)
		openlog(LOG_IDENT, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_detach(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		(void)dup2(fd, STDERR_FILENO);
		if (fd != STDERR_FILENO)
			close(fd);
	}
	if (L.target == LOG_TARGET_STDERR) {
		openlog(LOG_IDENT, LOG_PID | LOG_NDELAY, LOG_DAEMON);
		L.target = LOG_TARGET_SYSLOG;
	}
}

/* One line, "<PRIO>message\n", in one write. */
static void
to_stderr(int prio, const char *msg)
{
	char buf[LOG_MSG_MAX + 16];
	int n;

	n = snprintf(buf, sizeof(buf) - 1, "<%d>%s", prio, msg);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}

static void
to_syslog(int prio, const char *msg)
{
	char buf[LOG_MSG_MAX];

	snprintf(buf, sizeof(buf), "%s", msg);
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	syslog(prio, "%s", buf);
}

/*
 * The native protocol, through libsystemd: every field its own iovec.
 * 0, or a negative errno when journald did not take the message.
 */
static int
to_journal(int prio, int errnum, const char *vm, uint32_t domid,
    uint64_t task, const char *file, int line, const char *func,
    const char *msg)
{
	char message[LOG_MSG_MAX + 16], f[9][128];
	struct iovec iov[10];
	int n = 1, len;

	/* MESSAGE= may be long; the other fields are short. */
	len = snprintf(message, sizeof(message), "MESSAGE=%s", msg);
	iov[0] = (struct iovec){ message, len < (int)sizeof(message) ?
	    (size_t)len : sizeof(message) - 1 };
#define FIELD(...) do { \
	len = snprintf(f[n - 1], sizeof(f[n - 1]), __VA_ARGS__); \
	iov[n] = (struct iovec){ f[n - 1], len < (int)sizeof(f[n - 1]) ? \
	    (size_t)len : sizeof(f[n - 1]) - 1 }; \
	n++; \
	} while (0)
	FIELD("PRIORITY=%d", prio);
	FIELD("SYSLOG_IDENTIFIER=%s", LOG_IDENT);
	FIELD("CODE_FILE=%s", file);
	FIELD("CODE_LINE=%d", line);
	FIELD("CODE_FUNC=%s", func);
	if (errnum != 0)
		FIELD("ERRNO=%d", errnum);
	if (vm != NULL)
		FIELD("VMBUILD_VM=%s", vm);
	if (domid != VMB_DOMID_INVALID)
		FIELD("VMBUILD_DOMID=%u", domid);
	if (task != 0)
		FIELD("VMBUILD_TASK=%llu", (unsigned long long)task);
#undef FIELD
	return sd_journal_sendv(iov, n);
}

static void
emit(int prio, int errnum, const char *vm, uint32_t domid, uint64_t task,
    const char *file, int line, const char *func, const char *fmt,
    va_list ap)
{
	char msg[LOG_MSG_MAX];
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		msg[0] = '\0';
	else if (errnum != 0 && n < (int)sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(errnum));
	switch (L.target) {
	case LOG_TARGET_JOURNAL:
		if (to_journal(prio, errnum, vm, domid, task, file, line, func,
		    msg) == 0)
			break;
		to_stderr(prio, msg);
		break;
	case LOG_TARGET_SYSLOG:
		to_syslog(prio, msg);
		break;
	default:
		to_stderr(prio, msg);
		break;
	}
}

void
log_emit(int prio, int errnum, const char *vm, uint32_t domid, uint64_t task,
    const char *file, int line, const char *func, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (prio == LOG_DEBUG && L.verbose <= 0)
		return;
	va_start(ap, fmt);
	emit(prio, errnum, vm, domid, task, file, line, func, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_fatal(int errnum, const char *file, int line, const char *func,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_CRIT, errnum, NULL, VMB_DOMID_INVALID, 0, file, line, func,
	    fmt, ap);
	va_end(ap);
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
