/*
 * migresolve.c - migrations a killed daemon left half done (migrate.h).
 *
 * A VM's record says "migrating" from before its stream starts until
 * the outcome is known (state.h, migrate.c).  At the next start:
 *   - phase "sending": the end record never went, and a receiver keeps
 *     a guest only with it, so the guest is this host's: log-dirty off,
 *     unpaused (unless it was paused before), the marker dropped;
 *   - phase "ending": the receiver may run it.  Asked as vmctl migrate
 *     asks it (migrate-receive --query, by the command recorded, run as
 *     who asked for the migration): "present UUID" destroys the guest
 *     here, "absent" resumes it here; anything else (no command, no
 *     answer, another uuid) leaves it paused and in doubt (vm.list,
 *     vm.info, the log) until an operator destroys or unpauses it.
 * The VM is busy meanwhile: nothing else may run or move it.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "log.h"
#include "migrate.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define ASK_TIMEOUT_S	360	/* the query waits up to 300 s for a build */
#define ASK_OUTPUT	4096	/* bytes of its output read, at most */
#define ASK_GROUPS	64

enum verdict { V_UNKNOWN, V_PRESENT, V_ABSENT };

struct fix_job {
	struct job	job;
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	uint32_t	domid;
	struct state_migration m;
	struct state_record rec;	/* its record without the marker */
	enum verdict	verdict;
	int		rc;
	char		why[400];
};

/*
 * The query's environment (HOME, USER, LOGNAME of `uid`, the daemon's
 * PATH) into env (4 strings and NULL, in bufs) and groups, for a uid
 * not the daemon's: -1 if it has no passwd entry.
 */
static int
ask_identity(uint32_t uid, char *env[5], char bufs[4][1024],
    gid_t *groups, int *ngroups)
{
	struct passwd pw, *res = NULL;
	const char *path = getenv("PATH");
	char pwbuf[2048];

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0 ||
	    res == NULL)
		return -1;
	snprintf(bufs[0], 1024, "HOME=%s", pw.pw_dir);
	snprintf(bufs[1], 1024, "USER=%s", pw.pw_name);
	snprintf(bufs[2], 1024, "LOGNAME=%s", pw.pw_name);
	snprintf(bufs[3], 1024, "PATH=%s", path != NULL ? path :
	    "/usr/local/bin:/usr/bin:/bin");
	for (int i = 0; i < 4; i++)
		env[i] = bufs[i];
	env[4] = NULL;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, ngroups) < 0)
		*ngroups = 0;
	return 0;
}

/* Run the query as uid/gid; its output (stdout and stderr) into out. */
static int
ask_run(struct fix_job *fj, char *out, size_t cap)
{
	extern char **environ;
	char bufs[4][1024], *env[5] = { NULL }, **envp = environ;
	char *argv[] = { "sh", "-c", fj->m.query, NULL };
	gid_t groups[ASK_GROUPS];
	int ngroups = ASK_GROUPS, p[2], devnull, n = 0;
	bool other = fj->m.uid != geteuid();
	time_t end = time(NULL) + ASK_TIMEOUT_S;
	pid_t pid;

	if (other && (geteuid() != 0 || ask_identity(fj->m.uid, env, bufs,
	    groups, &ngroups) < 0)) {
		snprintf(fj->why, sizeof(fj->why), "the daemon cannot run its "
		    "query as uid %u", fj->m.uid);
		return -EPERM;
	}
	if (other)
		envp = env;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid = fork();
	if (pid == 0) {
		/* Async-signal-safe calls only: the daemon has threads. */
		(void)setsid();
		if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(p[1], 1) < 0 ||
		    dup2(p[1], 2) < 0 || (other && (setgroups(ngroups,
		    groups) < 0 || setgid(fj->m.gid) < 0 ||
		    setuid(fj->m.uid) < 0)))
			_exit(126);
		execve("/bin/sh", argv, envp);
		_exit(127);
	}
	close(p[1]);
	if (devnull >= 0)
		close(devnull);
	if (pid < 0) {
		close(p[0]);
		return -errno;
	}
	while ((size_t)n + 1 < cap && time(NULL) < end) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t r;

		if (poll(&pf, 1, 1000) <= 0)
			continue;
		r = read(p[0], out + n, cap - 1 - n);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			break;
		n += r > 0 ? (int)r : 0;
	}
	out[n] = '\0';
	close(p[0]);
	/* Its process group (setsid): an ssh that does not go is ended. */
	(void)kill(-pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* The receiver's answer to the query: present (our uuid), absent. */
static enum verdict
fix_ask(struct fix_job *fj)
{
	char out[ASK_OUTPUT], u[VMB_UUID_STRLEN], *line, *save = NULL;
	int rc;

	if (fj->m.query == NULL) {
		snprintf(fj->why, sizeof(fj->why), "no way to ask %s was "
		    "recorded", fj->m.target[0] ? fj->m.target : "the receiver");
		return V_UNKNOWN;
	}
	rc = ask_run(fj, out, sizeof(out));
	if (rc < 0) {
		if (!fj->why[0])
			snprintf(fj->why, sizeof(fj->why), "cannot run its "
			    "query: %s", strerror(-rc));
		return V_UNKNOWN;
	}
	vmb_uuid_to_str(fj->uuid, u);
	/* ssh may say things first (known hosts...): the answer's line. */
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "present ", 8) && !strcmp(line + 8, u))
			return V_PRESENT;
		if (!strcmp(line, "absent"))
			return V_ABSENT;
		snprintf(fj->why, sizeof(fj->why), "it answered \"%.200s\"",
		    line);
	}
	if (!fj->why[0])
		snprintf(fj->why, sizeof(fj->why), "%s did not answer",
		    fj->m.target);
	return V_UNKNOWN;
}

/* The guest is this host's: as it was before the migration. */
static int
fix_resume(struct fix_job *fj)
{
	struct vmb_domain dom;
	int rc;

	(void)vmb_guest_dirty_log(vmbd.ctx, fj->domid, VMB_DIRTY_DISABLE, 0, 0,
	    NULL, NULL, NULL);
	rc = vmb_domain_get(vmbd.ctx, fj->domid, &dom);
	/* Xen's own stream suspended it (migrate.c, mig_native). */
	if (rc == 0 && dom.state == VMB_DOM_SHUTDOWN &&
	    dom.shutdown_reason == VMB_SHUTDOWN_SUSPEND &&
	    vmb_native_stream(vmbd.ctx)) {
		char why[200];

		rc = vmb_guest_resume_native(vmbd.ctx, fj->domid, why,
		    sizeof(why));
		if (rc < 0) {
			snprintf(fj->why, sizeof(fj->why), "cannot resume "
			    "domain %u: %s", fj->domid, why);
			return rc;
		}
		if (fj->m.was_paused)
			rc = vmb_domain_pause(vmbd.ctx, fj->domid);
	} else if (rc == 0 && !fj->m.was_paused &&
	    dom.state == VMB_DOM_PAUSED)
		rc = vmb_domain_unpause(vmbd.ctx, fj->domid);
	if (rc < 0) {
		snprintf(fj->why, sizeof(fj->why), "cannot unpause domain %u: "
		    "%s", fj->domid, strerror(-rc));
		return rc;
	}
	return state_write(&fj->rec);
}

static void
fix_run(struct job *job)
{
	struct fix_job *fj = (struct fix_job *)job;

	fj->verdict = fj->m.ending ? fix_ask(fj) : V_ABSENT;
	if (fj->verdict == V_ABSENT) {
		fj->rc = fix_resume(fj);
	} else if (fj->verdict == V_PRESENT) {
		fj->rc = vmb_domain_destroy(vmbd.ctx, fj->domid);
		if (fj->rc == 0 || fj->rc == -ESRCH)
			fj->rc = state_remove(fj->uuid);
	}
}

static void
fix_done(struct job *job)
{
	struct fix_job *fj = (struct fix_job *)job;
	struct vm *vm = vm_find_uuid(fj->uuid);

	if (vm != NULL)
		vm->busy = false;
	if (fj->verdict == V_PRESENT && fj->rc == 0) {
		log_vm(LOG_NOTICE, fj->name, fj->domid, 0, "%s: %s runs it (the "
		    "migration the daemon died in went through): domain %u "
		    "destroyed here", fj->name, fj->m.target, fj->domid);
		if (vm != NULL) {
			vm_announce(vm, "migrated", NULL, NULL);
			vm_remove(vm, false);
			events_scrub_kick();
		}
	} else if (fj->verdict == V_ABSENT && fj->rc == 0) {
		log_vm(LOG_NOTICE, fj->name, fj->domid, 0, "%s: the migration "
		    "to %s the daemon died in did not go through (%s): it "
		    "goes on here", fj->name, fj->m.target[0] ? fj->m.target :
		    "another host", fj->m.ending ? "it is not there" :
		    "the stream never ended");
		if (vm != NULL)
			vm_set_migration(vm, NULL, false);
	} else {
		log_vm(LOG_WARNING, fj->name, fj->domid, 0, "%s: in doubt: the "
		    "migration to %s the daemon died in may have gone through "
		    "(%s%s%s); domain %u stays paused here: destroy it if %s "
		    "runs it, else unpause it", fj->name, fj->m.target[0] ?
		    fj->m.target : "another host", fj->why, fj->rc < 0 ? "; " :
		    "", fj->rc < 0 ? strerror(-fj->rc) : "", fj->domid,
		    fj->m.target[0] ? fj->m.target : "it");
	}
	vm_refresh_kick();
	vmbd_status_changed();
	state_migration_done(&fj->m);
	state_record_done(&fj->rec);
	free(fj);
}

static void
fix_start(struct vm *vm)
{
	struct fix_job *fj;
	int rc;

	if (!vm->ours || !vm->migration.set || vm->busy || !vm->have_dom)
		return;
	fj = calloc(1, sizeof(*fj));
	if (fj == NULL || state_migration_copy(&fj->m, &vm->migration) < 0 ||
	    vm_record(vm, NULL, &fj->rec) < 0) {
		log_vm(LOG_ERR, vm->name, vm->domid, 0, "%s: out of memory to "
		    "resolve its migration: it stays in doubt", vm->name);
		goto fail;
	}
	state_migration_done(&fj->rec.migration);
	memcpy(fj->uuid, vm->uuid, 16);
	snprintf(fj->name, sizeof(fj->name), "%s", vm->name);
	fj->domid = vm->domid;
	fj->job.run = fix_run;
	fj->job.done = fix_done;
	log_vm(LOG_NOTICE, vm->name, vm->domid, 0, "%s was migrating to %s "
	    "when the daemon stopped (%s): %s", vm->name, vm->migration.target[0]
	    ? vm->migration.target : "an unknown host", vm->migration.ending ?
	    "its end may have gone" : "its end had not gone",
	    vm->migration.ending ? "asking the receiver" : "it goes on here");
	rc = worker_spawn(&fj->job);
	if (rc < 0) {
		log_vm(LOG_ERR, vm->name, vm->domid, 0, "%s: cannot start a "
		    "thread to resolve its migration (%s): it stays in doubt",
		    vm->name, strerror(-rc));
		goto fail;
	}
	vm->busy = true;
	return;
fail:
	if (fj != NULL) {
		state_migration_done(&fj->m);
		state_record_done(&fj->rec);
		free(fj);
	}
}

void
migrate_resolve_pending(void)
{
	vm_foreach(fix_start);
}
