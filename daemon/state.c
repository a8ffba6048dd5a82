/*
 * state.c - records in the state directory (see state.h).
 *
 * File name: <uuid>.json.  The uuid, not the name or the domid, is the
 * key: it is chosen by the daemon before the domain exists, and the
 * hypervisor keeps it, so a record and its domain can always be matched.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "state.h"

#define STATE_RECORD_MAX	(1u << 20)

/* The lock file in the state directory (see state_lock). */
#define STATE_LOCK		"lock"

/* Quarantined records listed by host.info, at most. */
#define STATE_QUARANTINE_LIST	64

static char *state_dir;
static int lock_fd = -1;	/* held while the daemon runs */

/* Records in quarantine/ (found at start, or moved there then). */
static struct {
	struct quarantined {
		char	file[300];	/* relative to the state directory */
		char	reason[200];
	}	v[STATE_QUARANTINE_LIST];
	size_t	n;
} Q;

static int
mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The pid in a held lock file, as text ("unknown" if none yet). */
static void
lock_holder(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);
	char *end;

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (buf[0] == '\0' || strtol(buf, &end, 10) <= 0 || *end != '\0')
		snprintf(buf, len, "unknown");
}

/*
 * One daemon per state directory: a second one would reconcile, and so
 * destroy the first one's builds in progress ("building" records).  An
 * flock(2) on <dir>/lock, taken before anything reads the records or
 * asks the hypervisor, held until the process exits (the kernel drops it
 * then, so a crash leaves no stale lock).  The descriptor is O_CLOEXEC:
 * hotplug scripts and other children do not keep the lock.  Taken after
 * daemonize(), so the pid written in it is the daemon's.
 */
static int
state_lock(const char *dir)
{
	char path[4200], pid[32];
	int fd, rc;

	snprintf(path, sizeof(path), "%s/%s", dir, STATE_LOCK);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		rc = -errno;
		log_errx("state directory lock %s: %s", path, strerror(-rc));
		return rc;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		if (rc == -EWOULDBLOCK) {
			lock_holder(fd, pid, sizeof(pid));
			log_errx("state directory %s is in use by another "
			    "vmbuildd (pid %s, holding %s); not starting",
			    dir, pid, path);
		} else {
			log_errx("cannot lock %s: %s", path, strerror(-rc));
		}
		close(fd);
		return rc;
	}
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0)
		log_warn("cannot write the pid into %s", path);
	lock_fd = fd;
	return 0;
}

int
state_init(const char *dir)
{
	int rc;

	rc = mkdir_p(dir, 0700);
	if (rc < 0) {
		log_errx("state directory %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (access(dir, W_OK | X_OK) < 0) {
		rc = -errno;
		log_errx("state directory %s is not writable: %s", dir,
		    strerror(errno));
		return rc;
	}
	if ((rc = state_lock(dir)) < 0)
		return rc;
	state_dir = strdup(dir);
	return state_dir == NULL ? -ENOMEM : 0;
}

static void
state_path(char *buf, size_t len, const uint8_t uuid[16], const char *suffix)
{
	char u[VMB_UUID_STRLEN];

	vmb_uuid_to_str(uuid, u);
	snprintf(buf, len, "%s/%s.json%s", state_dir, u, suffix);
}

static int
write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/* The record's text and its newline, in one write when it can. */
static int
write_record(int fd, const char *text, size_t len)
{
	struct iovec iov[2] = { { (void *)text, len }, { "\n", 1 } };
	ssize_t n;
	int rc;

	do
		n = writev(fd, iov, 2);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n == len + 1)
		return 0;
	/* Short: the rest as write_all does (n <= len here). */
	rc = write_all(fd, text + n, len - n);
	return rc < 0 ? rc : write_all(fd, "\n", 1);
}

/*
 * Put tmp in path's place, atomically.  A rename() over an existing
 * file makes ext4 (auto_da_alloc) start writing the new file out at
 * once: a forced writeback at every record update (building, then
 * built), and the destroy's unlink() then waits for that I/O, 0.15 ms
 * of each small VM's create and destroy here.  An exchange replaces as
 * atomically and starts no I/O; the old record, now at tmp, goes before
 * it was ever written.  A .tmp left by a crash in between is removed at
 * the next start, as any other.  (The new record is then no more
 * durable across a power loss than a VM's first one always was, and
 * records describe domains, which a power loss ends.)  A new VM's first
 * record ("building", `fresh`) is renamed without replacing: one call
 * where trying the exchange first made two.  Where there is nothing to
 * exchange with, or the file system cannot, rename().
 */
static int
state_replace(const char *tmp, const char *path, bool fresh)
{
	/* A new VM's first record has nothing to exchange with (mostly). */
	if (fresh && renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
	    RENAME_NOREPLACE) == 0)
		return 0;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		(void)unlink(tmp);
		return 0;
	}
	return rename(tmp, path) < 0 ? -errno : 0;
}

/* "migrating": null, or what struct state_migration holds. */
static void
state_gen_migration(yajl_gen g, const struct state_migration *m)
{
	jg_key(g, "migrating");
	if (!m->set) {
		yajl_gen_null(g);
		return;
	}
	yajl_gen_map_open(g);
	jg_kv_str(g, "target", m->target);
	jg_kv_str(g, "phase", m->ending ? "ending" : "sending");
	jg_kv_bool(g, "was_paused", m->was_paused);
	jg_kv_str(g, "query", m->query);
	jg_kv_u64(g, "uid", m->uid);
	jg_kv_u64(g, "gid", m->gid);
	yajl_gen_map_close(g);
}

int
state_write(const struct state_record *rec)
{
	char path[4200], tmp[4200], u[VMB_UUID_STRLEN];
	yajl_val build = NULL, config = NULL, source = NULL;
	const char *text;
	yajl_gen g;
	size_t len;
	int fd = -1, rc;

	g = jg_new();
	if (g == NULL)
		return -ENOMEM;
	vmb_uuid_to_str(rec->uuid, u);
	yajl_gen_map_open(g);
	jg_kv_i64(g, "version", 1);
	jg_kv_str(g, "uuid", u);
	jg_kv_str(g, "name", rec->name);
	jg_kv_str(g, "state", rec->built ? "built" : "building");
	if (rec->domid == VMB_DOMID_INVALID)
		jg_kv_null(g, "domid");
	else
		jg_kv_u64(g, "domid", rec->domid);
	jg_kv_str(g, "config_path", rec->config_path);
	jg_kv_dbl(g, "created_at", rec->created_at);
	if (rec->config_json != NULL)
		config = jv_parse(rec->config_json, strlen(rec->config_json),
		    JSON_MAX_DEPTH, NULL, 0);
	jg_key(g, "config");
	jg_tree(g, config);
	if (rec->build_json != NULL)
		build = jv_parse(rec->build_json, strlen(rec->build_json),
		    JSON_MAX_DEPTH, NULL, 0);
	jg_key(g, "build");
	jg_tree(g, build);
	if (rec->source_json != NULL)
		source = jv_parse(rec->source_json, strlen(rec->source_json),
		    JSON_MAX_DEPTH, NULL, 0);
	jg_key(g, "source");
	jg_tree(g, source);
	jg_kv_bool(g, "restart", rec->restart);
	jg_key(g, "restart_times");
	yajl_gen_array_open(g);
	for (unsigned i = 0; i < rec->nrestart_times; i++)
		jg_dbl(g, rec->restart_times[i]);
	yajl_gen_array_close(g);
	jg_key(g, "vcpu_pins");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < rec->npins; i++) {
		yajl_gen_map_open(g);
		jg_kv_u64(g, "vcpu", rec->pins[i].vcpu);
		jg_kv_str(g, "hard", rec->pins[i].hard);
		jg_kv_str(g, "soft", rec->pins[i].soft);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	state_gen_migration(g, &rec->migration);
	jg_key(g, "device_model");
	if (rec->dm.pid > 0) {
		yajl_gen_map_open(g);
		jg_kv_u64(g, "pid", (uint64_t)rec->dm.pid);
		jg_kv_u64(g, "start_time", rec->dm.start_time);
		jg_kv_str(g, "qmp", rec->dm.qmp);
		if (rec->dm.serial_tty[0])
			jg_kv_str(g, "serial_tty", rec->dm.serial_tty);
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	yajl_gen_map_close(g);
	text = jg_text(g, &len);

	state_path(path, sizeof(path), rec->uuid, "");
	state_path(tmp, sizeof(tmp), rec->uuid, ".tmp");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_record(fd, text, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	fd = -1;
	if (rc == 0)
		rc = state_replace(tmp, path, !rec->built && !rec->restart);
	if (rc < 0)
		(void)unlink(tmp);
out:
	if (rc < 0)
		log_warnx("state: cannot write %s: %s", path, strerror(-rc));
	yajl_tree_free(build);
	yajl_tree_free(config);
	yajl_tree_free(source);
	yajl_gen_free(g);
	return rc;
}

int
state_remove(const uint8_t uuid[16])
{
	char path[4200];

	state_path(path, sizeof(path), uuid, "");
	if (unlink(path) < 0 && errno != ENOENT) {
		int rc = -errno;

		log_warn("state: cannot remove %s", path);
		return rc;
	}
	return 0;
}

void
state_record_done(struct state_record *rec)
{
	free(rec->config_path);
	free(rec->build_json);
	free(rec->config_json);
	free(rec->source_json);
	rec->config_path = rec->build_json = rec->config_json = NULL;
	rec->source_json = NULL;
	state_pins_free(rec->pins, rec->npins);
	rec->pins = NULL;
	rec->npins = 0;
	state_migration_done(&rec->migration);
}

int
state_migration_copy(struct state_migration *dst,
    const struct state_migration *src)
{
	*dst = *src;
	dst->query = NULL;
	if (src->query != NULL && (dst->query = strdup(src->query)) == NULL)
		return -ENOMEM;
	return 0;
}

void
state_migration_done(struct state_migration *m)
{
	free(m->query);
	memset(m, 0, sizeof(*m));
}

/*
 * "migrating": a migration the daemon died in, or left in doubt.  What
 * cannot be read in it counts as the worst case, the end record gone
 * to an unknown receiver: the guest is then never resumed here without
 * an operator (never run twice), and the record is kept.
 */
static void
state_migration_parse(yajl_val v, struct state_record *rec)
{
	struct state_migration *m = &rec->migration;
	yajl_val t = jv_get(v, "target"), ph = jv_get(v, "phase"),
	    q = jv_get(v, "query"), uid = jv_get(v, "uid"),
	    gid = jv_get(v, "gid");

	if (v == NULL || YAJL_IS_NULL(v))
		return;
	m->set = true;
	m->ending = !YAJL_IS_STRING(ph) || strcmp(ph->u.string, "sending");
	m->was_paused = YAJL_IS_TRUE(jv_get(v, "was_paused"));
	if (YAJL_IS_STRING(t))
		snprintf(m->target, sizeof(m->target), "%s", t->u.string);
	if (YAJL_IS_STRING(q) && YAJL_IS_INTEGER(uid) && YAJL_IS_INTEGER(gid) &&
	    YAJL_GET_INTEGER(uid) >= 0 && YAJL_GET_INTEGER(uid) < UINT32_MAX &&
	    YAJL_GET_INTEGER(gid) >= 0 && YAJL_GET_INTEGER(gid) < UINT32_MAX) {
		m->query = strdup(q->u.string);
		m->uid = (uint32_t)YAJL_GET_INTEGER(uid);
		m->gid = (uint32_t)YAJL_GET_INTEGER(gid);
	}
	if (!YAJL_IS_OBJECT(v) || (m->ending && m->query == NULL))
		log_warnx("state: %s: its migration to %s cannot be asked "
		    "about: it stays in doubt", rec->name,
		    m->target[0] ? m->target : "an unknown host");
}

void
state_pins_free(struct state_pin *pins, uint32_t n)
{
	for (uint32_t i = 0; pins != NULL && i < n; i++) {
		free(pins[i].hard);
		free(pins[i].soft);
	}
	free(pins);
}

/* A pin into v[*m], its lists copied; one with no list is left out. */
static int
pin_put(struct state_pin *v, uint32_t *m, uint32_t vcpu, const char *hard,
    const char *soft)
{
	struct state_pin *p = &v[*m];

	if (hard == NULL && soft == NULL)
		return 0;
	p->vcpu = vcpu;
	if ((hard != NULL && (p->hard = strdup(hard)) == NULL) ||
	    (soft != NULL && (p->soft = strdup(soft)) == NULL)) {
		free(p->hard);
		p->hard = NULL;
		return -ENOMEM;
	}
	(*m)++;
	return 0;
}

int
state_pins_copy(const struct state_pin *src, uint32_t n,
    struct state_pin **ret)
{
	struct state_pin *v = n ? calloc(n, sizeof(*v)) : NULL;
	uint32_t m = 0;
	int rc = n && v == NULL ? -ENOMEM : 0;

	for (uint32_t i = 0; rc == 0 && i < n; i++)
		rc = pin_put(v, &m, src[i].vcpu, src[i].hard, src[i].soft);
	if (rc < 0) {
		state_pins_free(v, m);
		return rc;
	}
	*ret = v;
	return 0;
}

int
state_pins_set(struct state_pin **pins, uint32_t *n, uint32_t vcpu,
    const char *hard, const char *soft)
{
	struct state_pin *v = calloc(*n + 1, sizeof(*v));
	bool all = vcpu == VMB_VCPU_ALL, placed = all;
	uint32_t m = 0;
	int rc = v == NULL ? -ENOMEM : 0;

	/* A new list, in vCPU order, swapped in only once it is whole. */
	for (uint32_t i = 0; rc == 0 && i <= *n; i++) {
		const struct state_pin *o = i < *n ? &(*pins)[i] : NULL;
		bool same = o != NULL && o->vcpu == vcpu;

		if (!placed && (o == NULL || o->vcpu >= vcpu)) {
			placed = true;
			rc = pin_put(v, &m, vcpu, hard ? hard : same ? o->hard :
			    NULL, soft ? soft : same ? o->soft : NULL);
			if (same)
				continue;
		}
		if (rc == 0 && o != NULL)
			rc = pin_put(v, &m, o->vcpu, all && hard ? NULL :
			    o->hard, all && soft ? NULL : o->soft);
	}
	if (rc < 0) {
		state_pins_free(v, m);
		return rc;
	}
	state_pins_free(*pins, *n);
	*pins = m ? v : NULL;
	if (m == 0)
		free(v);
	*n = m;
	return 0;
}

const struct state_pin *
state_pin_find(const struct state_pin *pins, uint32_t n, uint32_t vcpu)
{
	for (uint32_t i = 0; i < n; i++)
		if (pins[i].vcpu == vcpu)
			return &pins[i];
	return NULL;
}

/*
 * A record file's text: regular, not through a symbolic link, bounded.
 * 0; -EINVAL (with why) for a file that can never be a record, to move
 * aside; another -errno for one that could not be read now.
 */
static int
read_file(const char *path, char **ret, size_t *ret_len, const char **why)
{
	char *buf = NULL;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		*why = "a symbolic link";
		return errno == ELOOP ? -EINVAL : -errno;
	}
	rc = -EINVAL;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		goto out;
	}
	if (st.st_size > STATE_RECORD_MAX) {
		*why = "larger than 1 MiB";
		goto out;
	}
	buf = calloc(1, st.st_size + 1);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (read(fd, buf, st.st_size) != st.st_size) {
		rc = -EIO;
		free(buf);
		goto out;
	}
	*ret = buf;
	*ret_len = (size_t)st.st_size;
	rc = 0;
out:
	close(fd);
	return rc;
}

/* An object of a record back to text (NULL when not an object). */
static char *
tree_text(yajl_val v)
{
	yajl_gen g;

	if (!YAJL_IS_OBJECT(v) || (g = jg_new()) == NULL)
		return NULL;
	jg_tree(g, v);
	return jg_finish(g);
}

/* The restart history (lifecycle.c): times, oldest first, bounded. */
static const char *
state_restarts(yajl_val v, struct state_record *rec)
{
	if (v == NULL || YAJL_IS_NULL(v))
		return NULL;
	if (!YAJL_IS_ARRAY(v) || v->u.array.len > STATE_RESTARTS_MAX)
		return "restart_times is not an array of at most 32 times";
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!YAJL_IS_NUMBER(v->u.array.values[i]))
			return "restart_times holds something else than times";
		rec->restart_times[i] = YAJL_GET_DOUBLE(v->u.array.values[i]);
	}
	rec->nrestart_times = v->u.array.len;
	return NULL;
}

/* A CPU list of a pin: a string, or null for none; else `bad`. */
static bool
pin_list(yajl_val v, const char **ret)
{
	*ret = NULL;
	if (v == NULL || YAJL_IS_NULL(v))
		return true;
	if (!YAJL_IS_STRING(v) || !v->u.string[0] ||
	    strlen(v->u.string) >= VMB_CPULIST_LEN)
		return false;
	*ret = v->u.string;
	return true;
}

/*
 * The pins of single vCPUs (vm.vcpu_pin), ascending; NULL or why the
 * list is not one.  Absent in records of an older vmbuildd.
 */
static const char *
state_pins(yajl_val v, struct state_record *rec)
{
	struct state_pin *p;
	uint32_t m = 0;

	if (v == NULL || YAJL_IS_NULL(v))
		return NULL;
	if (!YAJL_IS_ARRAY(v) || v->u.array.len > VMB_MAX_VCPUS)
		return "vcpu_pins is not an array of at most 256 pins";
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val e = v->u.array.values[i], n = jv_get(e, "vcpu");
		const char *hard, *soft;

		if (!YAJL_IS_INTEGER(n) || YAJL_GET_INTEGER(n) < 0 ||
		    YAJL_GET_INTEGER(n) >= VMB_MAX_VCPUS ||
		    (i > 0 && YAJL_GET_INTEGER(n) <= YAJL_GET_INTEGER(jv_get(
		    v->u.array.values[i - 1], "vcpu"))) ||
		    !pin_list(jv_get(e, "hard"), &hard) ||
		    !pin_list(jv_get(e, "soft"), &soft))
			return "vcpu_pins holds something else than pins of "
			    "vCPUs in ascending order";
	}
	/* Checked: only memory can fail now, which is no fault of the file. */
	p = v->u.array.len ? calloc(v->u.array.len, sizeof(*p)) : NULL;
	for (size_t i = 0; p != NULL && i < v->u.array.len; i++) {
		yajl_val e = v->u.array.values[i];
		const char *hard, *soft;

		(void)pin_list(jv_get(e, "hard"), &hard);
		(void)pin_list(jv_get(e, "soft"), &soft);
		if (pin_put(p, &m, (uint32_t)YAJL_GET_INTEGER(jv_get(e,
		    "vcpu")), hard, soft) < 0) {
			state_pins_free(p, m);
			p = NULL;
			m = 0;
		}
	}
	if (p == NULL && v->u.array.len > 0)
		log_warnx("state: %s: out of memory for its vcpu_pins: they "
		    "are not known", rec->name);
	rec->pins = p;
	rec->npins = m;
	return NULL;
}

/*
 * The device model (dm.c takes it back): {pid, start_time, qmp} and
 * its serial pty when it has one (a record of an earlier vmbuild has
 * none: vmctl console asks the device model), null or absent for none;
 * NULL or why it is not one.
 */
static const char *
state_dm(yajl_val v, struct state_record *rec)
{
	yajl_val pid = jv_get(v, "pid"), start = jv_get(v, "start_time");
	yajl_val qmp = jv_get(v, "qmp"), tty = jv_get(v, "serial_tty");

	if (v == NULL || YAJL_IS_NULL(v))
		return NULL;
	if (!YAJL_IS_INTEGER(pid) || YAJL_GET_INTEGER(pid) <= 1 ||
	    YAJL_GET_INTEGER(pid) > INT32_MAX || !YAJL_IS_INTEGER(start) ||
	    YAJL_GET_INTEGER(start) < 0 || !YAJL_IS_STRING(qmp) ||
	    qmp->u.string[0] != '/' ||
	    strlen(qmp->u.string) >= sizeof(rec->dm.qmp))
		return "device_model is not {pid, start_time, qmp}";
	if (tty != NULL && (!YAJL_IS_STRING(tty) ||
	    strncmp(tty->u.string, "/dev/pts/", 9) != 0 ||
	    strlen(tty->u.string) >= sizeof(rec->dm.serial_tty)))
		return "device_model's serial_tty is not a /dev/pts/ path";
	if (tty != NULL)
		snprintf(rec->dm.serial_tty, sizeof(rec->dm.serial_tty), "%s",
		    tty->u.string);
	rec->dm.pid = (int)YAJL_GET_INTEGER(pid);
	rec->dm.start_time = (unsigned long long)YAJL_GET_INTEGER(start);
	snprintf(rec->dm.qmp, sizeof(rec->dm.qmp), "%s", qmp->u.string);
	return NULL;
}

/* 0, or -EINVAL with why a record is refused. */
static int
state_check(const char *file_uuid, yajl_val root, struct state_record *rec,
    char *why, size_t len)
{
	const char *w = NULL;
	char nwhy[120];
	uint8_t fu[16];
	yajl_val v;

	v = jv_get(root, "uuid");
	if (!YAJL_IS_STRING(v) || vmb_uuid_from_str(v->u.string, rec->uuid) < 0)
		w = "no valid uuid";
	/* state_remove() deletes <uuid>.json: another name would stay. */
	else if (vmb_uuid_from_str(file_uuid, fu) < 0 ||
	    memcmp(fu, rec->uuid, 16))
		w = "its uuid is not its file name";
	if (w == NULL && !YAJL_IS_STRING(v = jv_get(root, "name")))
		w = "no name";
	/* As vm.create checks a name: it reaches logs, tables, metrics. */
	if (w == NULL && vmb_name_check(v->u.string, nwhy, sizeof(nwhy)) < 0) {
		snprintf(why, len, "invalid name: %s", nwhy);
		return -EINVAL;
	}
	if (w == NULL)
		snprintf(rec->name, sizeof(rec->name), "%s", v->u.string);
	v = jv_get(root, "state");
	if (w == NULL && (!YAJL_IS_STRING(v) || (strcmp(v->u.string,
	    "built") && strcmp(v->u.string, "building"))))
		w = "state is neither \"built\" nor \"building\"";
	if (w == NULL)
		rec->built = strcmp(v->u.string, "built") == 0;
	v = jv_get(root, "domid");
	if (w == NULL && YAJL_IS_INTEGER(v)) {
		long long d = YAJL_GET_INTEGER(v);

		/* Domain 0 is the control domain; none of ours. */
		if (d <= 0 || d >= VMB_DOMID_INVALID)
			w = "domid out of range";
		else
			rec->domid = (uint32_t)d;
	} else if (w == NULL && v != NULL && !YAJL_IS_NULL(v)) {
		w = "domid is not an integer";
	}
	if (w == NULL)
		w = state_restarts(jv_get(root, "restart_times"), rec);
	/* Before the pins: the last, which allocate. */
	if (w == NULL)
		w = state_dm(jv_get(root, "device_model"), rec);
	if (w == NULL)
		w = state_pins(jv_get(root, "vcpu_pins"), rec);
	if (w == NULL)
		return 0;
	snprintf(why, len, "%s", w);
	return -EINVAL;
}

int
state_parse(const char *name, const char *text, size_t len,
    struct state_record *rec, char *why, size_t whylen)
{
	char err[128], file_uuid[VMB_UUID_STRLEN];
	yajl_val root, v;
	size_t nlen = strlen(name);

	memset(rec, 0, sizeof(*rec));
	rec->domid = VMB_DOMID_INVALID;
	root = jv_parse(text, len, JSON_MAX_DEPTH, err, sizeof(err));
	if (root == NULL) {
		snprintf(why, whylen, "not JSON (%s)", err);
		return -EINVAL;
	}
	snprintf(file_uuid, sizeof(file_uuid), "%.*s",
	    nlen > 5 ? (int)(nlen - 5) : 0, name);
	if (state_check(file_uuid, root, rec, why, whylen) < 0) {
		yajl_tree_free(root);
		memset(rec, 0, sizeof(*rec));
		return -EINVAL;
	}
	v = jv_get(root, "config_path");
	if (YAJL_IS_STRING(v))
		rec->config_path = strdup(v->u.string);
	v = jv_get(root, "created_at");
	if (YAJL_IS_NUMBER(v))
		rec->created_at = YAJL_GET_DOUBLE(v);
	rec->build_json = tree_text(jv_get(root, "build"));
	rec->config_json = tree_text(jv_get(root, "config"));
	rec->source_json = tree_text(jv_get(root, "source"));
	rec->restart = YAJL_IS_TRUE(jv_get(root, "restart"));
	state_migration_parse(jv_get(root, "migrating"), rec);
	yajl_tree_free(root);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Quarantine.                                                         */

/* A quarantined record, for host.info; `file` is relative to state_dir. */
static void
quarantine_note(const char *file, const char *reason)
{
	struct quarantined *q;

	if (Q.n >= STATE_QUARANTINE_LIST)
		return;
	q = &Q.v[Q.n++];
	snprintf(q->file, sizeof(q->file), "%s", file);
	snprintf(q->reason, sizeof(q->reason), "%s", reason);
}

/*
 * Move a record that can never be loaded to quarantine/, so that it is
 * not read (and logged) at every start again, with <file>.why beside it
 * saying why.  A name taken there gets a suffix .1, .2... (the record of
 * the same uuid quarantined before is kept).  Logged once, here.
 */
static void
state_quarantine(const char *name, const char *why)
{
	char src[4200], dst[4400], rel[300], note[4500];
	int rc = -EEXIST, fd;

	snprintf(src, sizeof(src), "%s/%s", state_dir, name);
	snprintf(dst, sizeof(dst), "%s/%s", state_dir, STATE_QUARANTINE);
	if (mkdir(dst, 0700) < 0 && errno != EEXIST)
		rc = -errno;
	for (int i = 0; rc == -EEXIST && i < 100; i++) {
		snprintf(rel, sizeof(rel), i ? "%s/%s.%d" : "%s/%s",
		    STATE_QUARANTINE, name, i);
		snprintf(dst, sizeof(dst), "%s/%s", state_dir, rel);
		rc = renameat2(AT_FDCWD, src, AT_FDCWD, dst,
		    RENAME_NOREPLACE) < 0 ? -errno : 0;
	}
	if (rc < 0) {
		log_warnx("state: %s: %s; skipped, and cannot be moved to "
		    "%s/: %s", name, why, STATE_QUARANTINE, strerror(-rc));
		return;
	}
	log_warnx("state: %s: %s; not a record this daemon can use: moved "
	    "to %s", name, why, rel);
	quarantine_note(rel, why);
	snprintf(note, sizeof(note), "%s.why", dst);
	fd = open(note, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd < 0 || write_all(fd, why, strlen(why)) < 0)
		log_warn("state: cannot write %s", note);
	if (fd >= 0)
		close(fd);
}

/* What an earlier start quarantined: the list host.info shows. */
static void
quarantine_scan(void)
{
	char path[4400], why[200], rel[300];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", state_dir, STATE_QUARANTINE);
	d = opendir(path);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		ssize_t n = -1;
		int fd;

		if (de->d_name[0] == '.' || (len > 4 &&
		    !strcmp(de->d_name + len - 4, ".why")))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s.why", state_dir,
		    STATE_QUARANTINE, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd >= 0) {
			n = read(fd, why, sizeof(why) - 1);
			close(fd);
		}
		why[n > 0 ? n : 0] = '\0';
		snprintf(rel, sizeof(rel), "%s/%s", STATE_QUARANTINE,
		    de->d_name);
		quarantine_note(rel, n > 0 ? why : "unknown (no .why file)");
	}
	closedir(d);
	if (Q.n > 0)
		log_notice("state: %zu records in %s/%s (vmctl host lists "
		    "them)", Q.n, state_dir, STATE_QUARANTINE);
}

void
state_gen_quarantined(yajl_gen g)
{
	char path[4400];
	struct stat st;

	yajl_gen_array_open(g);
	for (size_t i = 0; i < Q.n; i++) {
		/* One the operator has removed since is not listed. */
		snprintf(path, sizeof(path), "%s/%s", state_dir, Q.v[i].file);
		if (lstat(path, &st) < 0)
			continue;
		yajl_gen_map_open(g);
		jg_kv_str(g, "file", Q.v[i].file);
		jg_kv_str(g, "reason", Q.v[i].reason);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

/* One directory entry: a record into recs[*n], or moved aside. */
static void
state_load_one(const char *name, struct state_record *rec, size_t *n)
{
	char path[4200], why[200];
	const char *rwhy = NULL;
	size_t len = strlen(name), tlen = 0;
	char *text = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", state_dir, name);
	if (len < 5 || strcmp(name + len - 4, ".tmp") == 0) {
		/* A write interrupted by a crash: never renamed. */
		if (len >= 5)
			(void)unlink(path);
		return;
	}
	if (strcmp(name + len - 5, ".json") != 0)
		return;
	rc = read_file(path, &text, &tlen, &rwhy);
	if (rc == -EINVAL) {
		state_quarantine(name, rwhy);
		return;
	}
	if (rc < 0) {
		/* Perhaps not for ever (EIO, ENOMEM): left where it is. */
		log_warnx("state: cannot read %s, skipped: %s", path,
		    strerror(-rc));
		return;
	}
	if (state_parse(name, text, tlen, rec, why, sizeof(why)) == 0)
		(*n)++;
	else
		state_quarantine(name, why);
	free(text);
}

int
state_load_all(struct state_record **ret_recs, size_t *ret_n)
{
	struct state_record *recs = NULL, *nr;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	quarantine_scan();
	d = opendir(state_dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		nr = realloc(recs, (n + 1) * sizeof(*recs));
		if (nr == NULL)
			break;
		recs = nr;
		state_load_one(de->d_name, &recs[n], &n);
	}
	closedir(d);
	*ret_recs = recs;
	*ret_n = n;
	return 0;
}
