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
 * Nothing here blocks: a destination that does not take a message now
 * (journald or the syslog daemon stalled with their queues full, a
 * stderr pipe nobody reads) loses it, and the loss is counted
 * (log_dropped(), vmbuild_log_dropped_total) and said in one line once
 * messages go through again.  A daemon that stopped answering whenever
 * journald did would be worse than one that loses a few lines.
 *
 * The text of a message is the same everywhere; on stderr and syslog a
 * newline in it becomes a space, so that it stays one line.  Lines on
 * stderr are written with one write(2), so that lines from the loop and
 * from worker threads never interleave.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOG_IDENT	"vmbuildd"
#define LOG_MSG_MAX	2048
/* journald's native socket (systemd-journald.service(8)). */
#define JOURNAL_SOCKET	"/run/systemd/journal/socket"

static const char *const target_names[] = {
	[LOG_TARGET_AUTO] = "auto",
	[LOG_TARGET_JOURNAL] = "journal",
	[LOG_TARGET_SYSLOG] = "syslog",
	[LOG_TARGET_STDERR] = "stderr",
};

static struct {
	int		verbose;
	enum log_target	target;		/* never AUTO after log_init */
	int		journal_fd;	/* unconnected, non-blocking */
	int		syslog_fd;	/* connected to /dev/log; under lock */
	pthread_mutex_t	lock;		/* stderr writes, syslog_fd */
	bool		stderr_has_room;	/* a regular file, /dev/null */
	atomic_ullong	dropped;	/* since start */
	atomic_uint	unreported;	/* dropped, not said yet */
} L = {
	.target = LOG_TARGET_STDERR,
	.journal_fd = -1,
	.syslog_fd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

/* A journal entry: the message, and nine fields of under 128 bytes. */
struct jbuf {
	char	buf[LOG_MSG_MAX + 10 * (128 + 32)];
	size_t	len;
};

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

/*
 * Connect L.syslog_fd to /dev/log; it stays -1 without a syslog daemon
 * (and the next message tries again).  Under L.lock.
 */
static void
syslog_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (L.syslog_fd >= 0)
		return;
	L.syslog_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0);
	if (L.syslog_fd < 0)
		return;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", _PATH_LOG);
	if (connect(L.syslog_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(L.syslog_fd);
		L.syslog_fd = -1;
	}
}

/*
 * Is fd 2 a regular file or /dev/null, which always take a write (poll
 * says so every time): no poll() before each line, a system call of
 * every log line (four a small VM's create and destroy).
 */
static bool
stderr_always_has_room(void)
{
	struct stat st;

	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) &&
	    major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
}

void
log_init(int verbose, enum log_target target)
{
	L.verbose = verbose;
	L.stderr_has_room = stderr_always_has_room();
	if (target == LOG_TARGET_AUTO)
		target = stderr_is_journal() ? LOG_TARGET_JOURNAL :
		    LOG_TARGET_STDERR;
	L.target = target;
	if (target == LOG_TARGET_JOURNAL)
		L.journal_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, 0);
	/* Connected now, as openlog(LOG_NDELAY) would. */
	if (target == LOG_TARGET_SYSLOG)
		syslog_connect();
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
		pthread_mutex_lock(&L.lock);
		syslog_connect();
		pthread_mutex_unlock(&L.lock);
		L.target = LOG_TARGET_SYSLOG;
	}
}

/*
 * Did a message go where it was sent?  A destination that is not taking
 * messages (a journald or syslog daemon that stalls, a pipe nobody
 * reads) must not stop the event loop with it: every write is
 * non-blocking, and what would block is dropped and counted.
 */
enum sent { SENT, DROPPED, FAILED };

/* One line, "<PRIO>message\n", in one write. */
static enum sent
to_stderr(int prio, const char *msg)
{
	struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };
	char buf[LOG_MSG_MAX + 16];
	enum sent r = SENT;
	int n;

	n = snprintf(buf, sizeof(buf) - 1, "<%d>%s", prio, msg);
	if (n < 0)
		return FAILED;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	/*
	 * O_NONBLOCK would change the file description we share with
	 * whoever started us, so ask first: a pipe or socket that polls
	 * writable has room for one line (under a page), and the lock
	 * keeps our threads from filling that room between the poll and
	 * the write.  A regular file or /dev/null always has room: not
	 * asked (L.stderr_has_room).
	 */
	pthread_mutex_lock(&L.lock);
	if (!L.stderr_has_room &&
	    (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT)))
		r = DROPPED;
	else if (write(STDERR_FILENO, buf, n) < 0)
		r = errno == EAGAIN ? DROPPED : FAILED;
	pthread_mutex_unlock(&L.lock);
	return r;
}

/*
 * syslog(3)'s datagram, "<PRI>Mmm dd hh:mm:ss vmbuildd[PID]: message",
 * sent without blocking (glibc's syslog() blocks while the queue of
 * /dev/log is full).  No syslog daemon: the message is lost, as with
 * syslog(3) without LOG_CONS.
 */
static enum sent
to_syslog(int prio, const char *msg)
{
	char buf[LOG_MSG_MAX + 64], stamp[32];
	enum sent r = FAILED;
	struct tm tm;
	time_t now = time(NULL);
	int n;

	if (localtime_r(&now, &tm) == NULL ||
	    strftime(stamp, sizeof(stamp), "%h %e %T", &tm) == 0)
		stamp[0] = '\0';
	n = snprintf(buf, sizeof(buf), "<%d>%s %s[%d]: %s",
	    LOG_DAEMON | prio, stamp, LOG_IDENT, (int)getpid(), msg);
	if (n < 0)
		return FAILED;
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	pthread_mutex_lock(&L.lock);
	/* A second try after a syslog daemon that restarted. */
	for (int tries = 0; tries < 2 && r == FAILED; tries++) {
		syslog_connect();
		if (L.syslog_fd < 0)
			break;
		if (send(L.syslog_fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			r = SENT;
		else if (errno == EAGAIN || errno == ENOBUFS)
			r = DROPPED;
		else {
			close(L.syslog_fd);
			L.syslog_fd = -1;
		}
	}
	pthread_mutex_unlock(&L.lock);
	return r;
}

/*
 * One field of the native protocol into `j`: KEY=VALUE and a newline,
 * or, for a value with a newline in it, KEY, a newline, the value's
 * length (64 bits, little-endian), the value and a newline.
 */
static void
jfield(struct jbuf *j, const char *key, const char *value)
{
	size_t klen = strlen(key), vlen = strlen(value);
	uint64_t le = htole64(vlen);

	if (j->len + klen + vlen + 2 + sizeof(le) > sizeof(j->buf))
		return;		/* cannot happen: values are bounded */
	memcpy(j->buf + j->len, key, klen);
	j->len += klen;
	if (strchr(value, '\n') != NULL) {
		j->buf[j->len++] = '\n';
		memcpy(j->buf + j->len, &le, sizeof(le));
		j->len += sizeof(le);
	} else
		j->buf[j->len++] = '=';
	memcpy(j->buf + j->len, value, vlen);
	j->len += vlen;
	j->buf[j->len++] = '\n';
}

/*
 * The native protocol: one datagram to journald's socket, every field
 * its own.  Sent by us rather than by libsystemd's sd_journal_sendv(),
 * which blocks while journald's queue is full.
 */
static enum sent
to_journal(int prio, int errnum, const char *vm, uint32_t domid,
    uint64_t task, const char *file, int line, const char *func,
    const char *msg)
{
	static const struct sockaddr_un sa = { .sun_family = AF_UNIX,
	    .sun_path = JOURNAL_SOCKET };
	struct jbuf j = { .len = 0 };
	char v[128];

	if (L.journal_fd < 0)
		return FAILED;
	jfield(&j, "MESSAGE", msg);
	snprintf(v, sizeof(v), "%d", prio);
	jfield(&j, "PRIORITY", v);
	jfield(&j, "SYSLOG_IDENTIFIER", LOG_IDENT);
	snprintf(v, sizeof(v), "%s", file);
	jfield(&j, "CODE_FILE", v);
	snprintf(v, sizeof(v), "%d", line);
	jfield(&j, "CODE_LINE", v);
	snprintf(v, sizeof(v), "%s", func);
	jfield(&j, "CODE_FUNC", v);
	if (errnum != 0) {
		snprintf(v, sizeof(v), "%d", errnum);
		jfield(&j, "ERRNO", v);
	}
	if (vm != NULL) {
		snprintf(v, sizeof(v), "%s", vm);
		jfield(&j, "VMBUILD_VM", v);
	}
	if (domid != VMB_DOMID_INVALID) {
		snprintf(v, sizeof(v), "%u", domid);
		jfield(&j, "VMBUILD_DOMID", v);
	}
	if (task != 0) {
		snprintf(v, sizeof(v), "%llu", (unsigned long long)task);
		jfield(&j, "VMBUILD_TASK", v);
	}
	if (sendto(L.journal_fd, j.buf, j.len, MSG_DONTWAIT | MSG_NOSIGNAL,
	    (const struct sockaddr *)&sa, sizeof(sa)) >= 0)
		return SENT;
	return errno == EAGAIN || errno == ENOBUFS ? DROPPED : FAILED;
}

/* The message where L.target says; the journal falls back to stderr. */
static enum sent
deliver(int prio, int errnum, const char *vm, uint32_t domid, uint64_t task,
    const char *file, int line, const char *func, const char *msg)
{
	enum sent r;

	switch (L.target) {
	case LOG_TARGET_JOURNAL:
		r = to_journal(prio, errnum, vm, domid, task, file, line, func,
		    msg);
		/* No journald (it is gone, or never was): stderr. */
		return r == FAILED ? to_stderr(prio, msg) : r;
	case LOG_TARGET_SYSLOG:
		return to_syslog(prio, msg);
	default:
		return to_stderr(prio, msg);
	}
}

/*
 * After messages were dropped, the first one delivered is followed by
 * one line that says how many: once, not per message.  Should that line
 * be dropped too, the count waits for the next delivery.
 */
static void
report_dropped(void)
{
	unsigned n = atomic_exchange(&L.unreported, 0);
	char msg[128];

	if (n == 0)
		return;
	snprintf(msg, sizeof(msg), "%u log messages dropped: %s was not "
	    "taking them (%llu since start)", n, target_names[L.target],
	    (unsigned long long)atomic_load(&L.dropped));
	if (deliver(LOG_WARNING, 0, LOG_NO_VM, LOG_AT, msg) != SENT)
		atomic_fetch_add(&L.unreported, n);
}

unsigned long long
log_dropped(void)
{
	return atomic_load(&L.dropped);
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
	switch (deliver(prio, errnum, vm, domid, task, file, line, func, msg)) {
	case SENT:
		report_dropped();
		break;
	case DROPPED:
		atomic_fetch_add(&L.dropped, 1);
		atomic_fetch_add(&L.unreported, 1);
		break;
	case FAILED:
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
