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
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "state.h"

#define STATE_RECORD_MAX	(1u << 20)

/* The lock file in the state directory (see state_lock). */
#define STATE_LOCK		"lock"

static char *state_dir;
static int lock_fd = -1;	/* held while the daemon runs */

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
 * records describe domains, which a power loss ends.)  Where there is
 * nothing to exchange with, or the file system cannot, rename().
 */
static int
state_replace(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		(void)unlink(tmp);
		return 0;
	}
	return rename(tmp, path) < 0 ? -errno : 0;
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
	yajl_gen_map_close(g);
	text = jg_text(g, &len);

	state_path(path, sizeof(path), rec->uuid, "");
	state_path(tmp, sizeof(tmp), rec->uuid, ".tmp");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_all(fd, text, len);
	if (rc == 0)
		rc = write_all(fd, "\n", 1);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	fd = -1;
	if (rc == 0)
		rc = state_replace(tmp, path);
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
}

/* A record file: regular, not through a symbolic link, bounded. */
static char *
read_file(const char *path, size_t *ret_len)
{
	char *buf = NULL;
	struct stat st;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > STATE_RECORD_MAX) {
		errno = EINVAL;
		goto out;
	}
	buf = calloc(1, st.st_size + 1);
	if (buf != NULL && read(fd, buf, st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	*ret_len = (size_t)st.st_size;
out:
	close(fd);
	return buf;
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

/* Why a record is refused, or NULL when it is sound. */
static const char *
state_check(const char *file_uuid, yajl_val root, struct state_record *rec)
{
	uint8_t fu[16];
	yajl_val v;

	v = jv_get(root, "uuid");
	if (!YAJL_IS_STRING(v) || vmb_uuid_from_str(v->u.string, rec->uuid) < 0)
		return "no valid uuid";
	/* state_remove() deletes <uuid>.json: another name would stay. */
	if (vmb_uuid_from_str(file_uuid, fu) < 0 || memcmp(fu, rec->uuid, 16))
		return "its uuid is not its file name";
	v = jv_get(root, "name");
	if (!YAJL_IS_STRING(v) || v->u.string[0] == '\0' ||
	    strlen(v->u.string) >= VMB_NAME_LEN)
		return "no valid name";
	strcpy(rec->name, v->u.string);
	v = jv_get(root, "state");
	if (!YAJL_IS_STRING(v) || (strcmp(v->u.string, "built") &&
	    strcmp(v->u.string, "building")))
		return "state is neither \"built\" nor \"building\"";
	rec->built = strcmp(v->u.string, "built") == 0;
	v = jv_get(root, "domid");
	if (YAJL_IS_INTEGER(v)) {
		long long d = YAJL_GET_INTEGER(v);

		/* Domain 0 is the control domain; none of ours. */
		if (d <= 0 || d >= VMB_DOMID_INVALID)
			return "domid out of range";
		rec->domid = (uint32_t)d;
	} else if (v != NULL && !YAJL_IS_NULL(v)) {
		return "domid is not an integer";
	}
	return NULL;
}

int
state_parse(const char *name, const char *text, size_t len,
    struct state_record *rec)
{
	char err[128], file_uuid[VMB_UUID_STRLEN];
	const char *why;
	yajl_val root, v;
	size_t nlen = strlen(name);

	memset(rec, 0, sizeof(*rec));
	rec->domid = VMB_DOMID_INVALID;
	root = jv_parse(text, len, JSON_MAX_DEPTH, err, sizeof(err));
	if (root == NULL) {
		log_warnx("state: %s: not JSON (%s), skipped", name, err);
		return -EINVAL;
	}
	snprintf(file_uuid, sizeof(file_uuid), "%.*s",
	    nlen > 5 ? (int)(nlen - 5) : 0, name);
	why = state_check(file_uuid, root, rec);
	if (why != NULL) {
		log_warnx("state: %s: %s; not a vmbuildd record, skipped (and "
		    "kept)", name, why);
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
	yajl_tree_free(root);
	return 0;
}

int
state_load_all(struct state_record **ret_recs, size_t *ret_n)
{
	struct state_record *recs = NULL, *nr;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	d = opendir(state_dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char path[4200];
		size_t len = strlen(de->d_name), tlen = 0;
		char *text;

		if (len < 5 || strcmp(de->d_name + len - 4, ".tmp") == 0) {
			/* A write interrupted by a crash: never renamed. */
			if (len >= 5) {
				snprintf(path, sizeof(path), "%s/%s",
				    state_dir, de->d_name);
				(void)unlink(path);
			}
			continue;
		}
		if (strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", state_dir, de->d_name);
		text = read_file(path, &tlen);
		if (text == NULL) {
			log_warn("state: cannot read %s, skipped", path);
			continue;
		}
		nr = realloc(recs, (n + 1) * sizeof(*recs));
		if (nr == NULL) {
			free(text);
			break;
		}
		recs = nr;
		if (state_parse(de->d_name, text, tlen, &recs[n]) == 0)
			n++;
		free(text);
	}
	closedir(d);
	*ret_recs = recs;
	*ret_n = n;
	return 0;
}
