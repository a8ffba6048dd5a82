/*
 * cmd_save.c - vmctl save and vmctl restore.
 *
 * vmctl opens the file itself, with the rights of whoever runs it, and
 * passes the descriptor with the request (SCM_RIGHTS): the daemon, root,
 * opens no path a client names.  A save that does not complete leaves
 * no file behind: vmctl removes the file it created (the daemon has
 * truncated it already).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmctl.h"

int
vmctl_subscribe_tasks(struct vmctl *ctl, struct vmc_client *c,
    const char *what)
{
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	yajl_gen g;
	int rc;

	g = vmc_request(c, M_EVENTS_SUBSCRIBE);
	if (g) {
		jg_str(g, P_EVENTS);
		yajl_gen_array_open(g);
		jg_str(g, E_TASK_PROGRESS);
		jg_str(g, E_TASK_DONE);
		yajl_gen_array_close(g);
	}
	rc = vmc_call(c, g, &res, &err);
	/* Without events, vmctl_follow_task polls task.get instead. */
	if (rc < 0)
		rc = vmc_report(ctl, what, rc, &err);
	else
		rc = VMCTL_EXIT_OK;
	vmc_error_done(&err);
	yajl_tree_free(res);
	return rc;
}

static void
print_saved(struct vmctl *ctl, yajl_val task, double secs)
{
	char name[128];

	if (ctl->json) {
		jprint(task, false);
		return;
	}
	jtext(task, "vm", name, sizeof(name));
	printf("saved VM %s in %.2f s\n", name, secs);
}

static void
print_restored(struct vmctl *ctl, yajl_val task, double secs)
{
	char id[32], name[128];

	if (ctl->json) {
		jprint(task, false);
		return;
	}
	jtext(task, "domid", id, sizeof(id));
	jtext(task, "vm", name, sizeof(name));
	printf("restored VM %s (%s) in %.2f s\n", id, name, secs);
}

/* Start the task (the request in g, `fd` passed with it), follow it. */
static int
run_task(struct vmctl *ctl, struct vmc_client *c, yajl_gen g, int fd,
    const char *what, vmctl_task_done_fn *done)
{
	struct vmc_error err = { 0 };
	yajl_val res = NULL;
	double tid;
	int rc;

	rc = vmc_call_fds(c, g, &fd, 1, &res, &err);
	if (rc != 0)
		rc = vmc_report(ctl, what, rc, &err);
	else if (!jnum(res, P_TASK, &tid))
		rc = vmc_report(ctl, what, -EPROTO, &err);
	else
		rc = vmctl_follow_task(ctl, c, (long long)tid, what, done);
	vmc_error_done(&err);
	yajl_tree_free(res);
	return rc;
}

int
cmd_save(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "checkpoint", no_argument, NULL, 'c' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	bool checkpoint = false, created = false;
	const char *vm, *path;
	struct stat st;
	int ch, fd = -1, rc;
	yajl_gen g;

	while ((ch = getopt_long(argc, argv, "jhc", opts, NULL)) != -1) {
		if (ch == 'c')
			checkpoint = true;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 2)) >= 0)
		return rc;
	vm = argv[optind];
	path = argv[optind + 1];
	/* A FIFO or an existing file is used as it is; a new one made 0600. */
	if (stat(path, &st) < 0 && errno == ENOENT)
		created = true;
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
	    (created || S_ISREG(st.st_mode) ? O_TRUNC : 0), 0600);
	if (fd < 0) {
		vmctl_warnx("save: %s: %s", path, strerror(errno));
		return VMCTL_EXIT_USAGE;
	}
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	if ((rc = vmctl_subscribe_tasks(ctl, c, "save")) != VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, M_VM_SAVE);
	if (g) {
		gen_vm_ref(g, vm);
		jg_kv_bool(g, P_CHECKPOINT, checkpoint);
		jg_str(g, P_FDS);
		yajl_gen_map_open(g);
		jg_kv_i64(g, "file", 0);
		yajl_gen_map_close(g);
	}
	rc = run_task(ctl, c, g, fd, "save", print_saved);
out:
	/* No partial stream: the file we made goes if the save did not. */
	if (rc != VMCTL_EXIT_OK && created)
		(void)unlink(path);
	if (fd >= 0)
		close(fd);
	vmc_close(c);
	return rc;
}

int
cmd_restore(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv)
{
	static const struct option opts[] = {
		{ "paused", no_argument, NULL, 'p' },
		VMCTL_COMMON_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct vmc_client *c = NULL;
	bool paused = false;
	const char *path;
	int ch, fd = -1, rc;
	yajl_gen g;

	while ((ch = getopt_long(argc, argv, "jhp", opts, NULL)) != -1) {
		if (ch == 'p')
			paused = true;
		else if ((rc = vmctl_opt_common(ctl, cmd, ch)) >= 0)
			return rc;
	}
	if ((rc = vmctl_operands(cmd, argc, argv, 1)) >= 0)
		return rc;
	path = argv[optind];
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		vmctl_warnx("restore: %s: %s", path, strerror(errno));
		return VMCTL_EXIT_USAGE;
	}
	if ((rc = vmc_open(ctl, &c)) != VMCTL_EXIT_OK)
		goto out;
	if ((rc = vmctl_subscribe_tasks(ctl, c, "restore")) != VMCTL_EXIT_OK)
		goto out;
	g = vmc_request(c, M_VM_RESTORE);
	if (g) {
		jg_kv_bool(g, P_PAUSED, paused);
		/* The task at once: its progress from phase "read" on. */
		jg_kv_bool(g, P_EARLY, true);
		jg_str(g, P_FDS);
		yajl_gen_map_open(g);
		jg_kv_i64(g, "file", 0);
		yajl_gen_map_close(g);
	}
	rc = run_task(ctl, c, g, fd, "restore", print_restored);
out:
	close(fd);
	vmc_close(c);
	return rc;
}
