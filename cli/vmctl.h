/*
 * vmctl.h - private header of vmctl, the command-line client of vmbuildd.
 *
 * vmctl talks JSON-RPC 2.0 (daemon/proto.h) over the daemon's Unix
 * socket.  Each command is a row of the table in commands.c; its handler
 * parses its own options and returns a VMCTL_EXIT_* code.  Prototypes are
 * grouped by the file that defines them.
 */
#ifndef VMCTL_H
#define VMCTL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "../daemon/json.h"	/* yajl helpers shared with vmbuildd */
#include "../daemon/proto.h"	/* the control protocol */

/* Options that come before the command, shared by every handler. */
struct vmctl {
	const char *socket;	/* --socket, $VMBUILD_SOCKET or the default */
	bool	json;		/* --json: machine output on stdout */
	int	timeout_ms;	/* how long to wait for any one reply */
	const char *prog;	/* argv[0] basename, for messages */
};

struct vmctl_cmd {
	const char *name;
	/* argv[0] is the command name; returns a VMCTL_EXIT_* code. */
	int	(*handler)(struct vmctl *ctl, const struct vmctl_cmd *cmd,
		    int argc, char **argv);
	const char *usage;	/* arguments after the name */
	const char *summary;	/* one line, for `vmctl --help` */
	const char *help;	/* the options, for `vmctl COMMAND --help` */
};

/* commands.c */
extern const struct vmctl_cmd vmctl_cmds[];
const struct vmctl_cmd *vmctl_cmd_find(const char *name);
const char *vmctl_cmd_nearest(const char *name);
void vmctl_usage_all(FILE *out, const char *prog);

/* main.c */
void vmctl_cmd_help(const struct vmctl_cmd *cmd, bool to_stderr);
int vmctl_usage_error(const struct vmctl_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vmctl_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Options every command takes: --json ('j') and --help ('h'), listed in
 * each handler's long options with VMCTL_COMMON_OPTS.  Handlers pass any
 * option character they do not know here: it returns -1 when parsing
 * goes on, or the exit code to return (0 after --help, 2 after a usage
 * error).
 */
#define VMCTL_COMMON_OPTS \
	{ "json", no_argument, NULL, 'j' }, \
	{ "help", no_argument, NULL, 'h' }
int vmctl_opt_common(struct vmctl *ctl, const struct vmctl_cmd *cmd, int c);
/*
 * Check that exactly `n` operands follow the options: -1 if so, else the
 * usage exit code after saying what is wrong.
 */
int vmctl_operands(const struct vmctl_cmd *cmd, int argc, char **argv, int n);

/* client.c: one connection to the daemon. */
struct vmc_client;

struct vmc_error {
	long long code;		/* JSON-RPC error code; 0 when none */
	char	message[512];
	yajl_val data;		/* error.data, or NULL; owned by the holder */
};

/*
 * Results of client calls: 0, VMC_RPC_ERROR (the daemon answered with an
 * error, described in the struct vmc_error) or a negative errno for the
 * transport (connect failed, timeout, connection closed, bad reply).
 */
#define VMC_RPC_ERROR	1

int vmc_connect(const char *path, int timeout_ms, struct vmc_client **ret);
void vmc_close(struct vmc_client *c);
/* A generator already inside the "params" object of a new request. */
yajl_gen vmc_request(struct vmc_client *c, const char *method);
/*
 * Send the request started by vmc_request() and wait for its reply;
 * notifications read meanwhile are queued for vmc_next_event().
 * *ret_result (freed with yajl_tree_free) is set on success.
 */
int vmc_call(struct vmc_client *c, yajl_gen params, yajl_val *ret_result,
    struct vmc_error *err);
/*
 * vmc_call() with descriptors sent with the request's first byte
 * (SCM_RIGHTS, at most 2): the request's params.fds names them by index.
 */
int vmc_call_fds(struct vmc_client *c, yajl_gen params, const int *fds,
    size_t nfds, yajl_val *ret_result, struct vmc_error *err);
/* params.fds as {keys[i]: i}, the files vmc_call_fds sends (none: nothing). */
void vmc_gen_fds(yajl_gen params, const char *const *keys, size_t nfds);
/* vmc_request + vmc_call with empty params. */
int vmc_call0(struct vmc_client *c, const char *method, yajl_val *ret_result,
    struct vmc_error *err);
/*
 * Next notification: 0 with *ret_msg set, -ETIMEDOUT after timeout_ms
 * (negative: wait for ever), -EINTR when a signal arrived, or another
 * negative errno when the connection failed.
 */
int vmc_next_event(struct vmc_client *c, int timeout_ms, yajl_val *ret_msg);
void vmc_error_done(struct vmc_error *err);
/*
 * The descriptor the daemon passed with its last reply (vm.console),
 * now the caller's; -1 when none came.
 */
int vmc_take_fd(struct vmc_client *c);
/*
 * Report a client failure on stderr and turn it into an exit code:
 * VMCTL_EXIT_ERROR for daemon errors, VMCTL_EXIT_UNREACHABLE otherwise.
 */
int vmc_report(struct vmctl *ctl, const char *what, int rc,
    const struct vmc_error *err);
/*
 * Connect as the global options say; a control socket we may not open
 * (EACCES: not in the group) falls back to the read-only socket beside
 * it.  Reports and returns an exit code.
 */
int vmc_open(struct vmctl *ctl, struct vmc_client **ret);

/* json.c: reading yajl trees, writing with yajl_gen. */
yajl_val jget(yajl_val v, const char *key);	/* object member or NULL */
yajl_val jpath(yajl_val v, ...);		/* keys, NULL-terminated */
const char *jstr(yajl_val v, const char *key);	/* NULL unless a string */
bool jnum(yajl_val v, const char *key, double *ret);
bool ju64(yajl_val v, const char *key, uint64_t *ret);
bool jbool(yajl_val v, const char *key, bool *ret);
/* Scalar as text ("-" when missing or null), into buf. */
const char *jtext(yajl_val v, const char *key, char *buf, size_t len);
/* Generators: jg_str, jg_kv_*, jg_tree and jg_kv_tree of ../daemon/json.h. */
yajl_gen jgen_new(bool pretty);
/* Print what g holds on stdout with a newline, and free g. */
void jgen_print(yajl_gen g);
/* Print a tree on stdout as one JSON document. */
void jprint(yajl_val v, bool pretty);

/* fmt.c: human output. */
const char *fmt_size(uint64_t bytes, char *buf, size_t len);
const char *fmt_rate(double bytes_per_sec, char *buf, size_t len);
const char *fmt_count_rate(double per_sec, char *buf, size_t len);
/* Durations in the unit their size calls for (ns ... s, min, h, d). */
const char *fmt_seconds(double seconds, char *buf, size_t len);
const char *fmt_ns(uint64_t ns, char *buf, size_t len);
const char *fmt_pct(double done, double total, char *buf, size_t len);
/* Aligned text tables: add rows of cells, then print. */
struct table;
struct table *table_new(int ncols, const char *const *headers);
/* Right-align column `col` (numbers). */
void table_right(struct table *t, int col);
void table_add(struct table *t, ...);	/* ncols strings */
void table_print(struct table *t, FILE *out, const char *indent);
void table_free(struct table *t);
/* Print a JSON value as indented "key: value" lines (sizes humanised). */
void fmt_tree(yajl_val v, int indent);
/* One "key: value" line, the value column at `width`. */
void fmt_kv(const char *key, yajl_val v, int width);

/* progress.c: a progress display for create and scrub --wait. */
struct progress;
struct progress_info {
	const char *phase;
	uint64_t done, total;
	const char *unit;	/* "bytes" (or NULL) are humanised */
	bool	bar;		/* done/total mean something: draw them */
	bool	have_rate;	/* rate was measured by the caller ... */
	double	rate;		/* ... units per second; else measured here */
	const char *note;	/* what holds it up, short, or NULL */
	/* A sentence said once, on a line of its own, when it changes. */
	const char *explain;
};
struct progress *progress_new(bool tty);
void progress_show(struct progress *p, const struct progress_info *in);
/* progress_show with a bar, measuring the rate here. */
void progress_update(struct progress *p, const char *phase, uint64_t done,
    uint64_t total, const char *unit);
/* Leave the line: newline after a bar, nothing for plain lines. */
void progress_end(struct progress *p);
void progress_free(struct progress *p);

/* signals: main.c sets this on SIGINT/SIGTERM for long-running views. */
extern volatile int vmctl_interrupted;
void vmctl_catch_signals(void);

/* Handlers: cmd_vm.c, cmd_host.c, cmd_watch.c. */
/* cmd_vm.c, for cmd_check.c: a config file's text; its images opened. */
int vmctl_read_file(const char *path, char **ret_text, size_t *ret_len);
/*
 * With `why` (kernel, ramdisk), an image that cannot be opened is told
 * there and skipped; without, it is an error (VMCTL_EXIT_USAGE).
 */
#define VMCTL_WHY_LEN	320
int vmctl_open_images(const char *cfg, yajl_val files, int *fds,
    const char **keys, size_t *ret_n, char why[2][VMCTL_WHY_LEN]);
/* cmd_check.c: config.check of `path` (vmctl check, create --dry-run). */
int vmctl_check_config(struct vmctl *ctl, const char *path, bool ignore);
int cmd_check(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_create(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_list(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_info(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_destroy(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_pause(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_unpause(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
/* cmd_dev.c */
int cmd_disk_attach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_disk_detach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_net_attach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_net_detach(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_host(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_scrub(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_stats(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_top(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_events(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_tasks(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_help(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
/* cmd_everyday.c: sched, rename, uptime, dmesg, cancel. */
int cmd_sched(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_rename(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_uptime(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_dmesg(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_cancel(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
/*
 * cmd_vm.c: follow task `tid` to its end (a progress bar on a terminal),
 * then `done` prints what it made; a failure is reported as `what`'s.
 */
typedef void vmctl_task_done_fn(struct vmctl *ctl, yajl_val task,
    double seconds);
int vmctl_follow_task(struct vmctl *ctl, struct vmc_client *c, long long tid,
    const char *what, vmctl_task_done_fn *done);
/* Subscribe c to task.progress and task.done (before starting a task). */
int vmctl_subscribe_tasks(struct vmctl *ctl, struct vmc_client *c,
    const char *what);
/* cmd_save.c: save, restore. */
int cmd_save(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_restore(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
/* cmd_migrate.c: migrate, migrate-receive. */
int cmd_migrate(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_migrate_receive(struct vmctl *ctl, const struct vmctl_cmd *cmd,
    int argc, char **argv);
/* cmd_vm.c: P_VM, a domain id when VM is all digits, else a name. */
void gen_vm_ref(yajl_gen g, const char *vm);
/* cmd_life.c: shutdown, reboot, console; create -c attaches with it. */
int cmd_shutdown(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_reboot(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_console(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int vmctl_console_attach(struct vmctl *ctl, const char *vm);
/* cmd_resize.c: a running VM's memory and vCPUs. */
int cmd_mem_set(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_mem_max(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_vcpu_set(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_vcpu_pin(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);
int cmd_vcpu_list(struct vmctl *ctl, const struct vmctl_cmd *cmd, int argc,
    char **argv);

#endif /* VMCTL_H */
