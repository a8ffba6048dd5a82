/*
 * rpc.h - JSON-RPC 2.0 framing: requests in, replies and events out.
 *
 * rpc.c parses one line with yajl_tree, checks the envelope (jsonrpc,
 * id, method, params), looks the method up in the table main.c gives it
 * (methods.c's, rpc_set_methods: rpc.c calls nothing above it), checks
 * the peer's right to call it, and calls its handler with a struct call.
 *
 * A handler returns 0 after writing its result into the generator it is
 * given, a negative value after call_error(), or CALL_DEFERRED when it
 * keeps the call to answer later (call_reply()/call_fail(), from the
 * loop thread).  A deferred call holds a reference on its connection.
 */
#ifndef VMBUILDD_RPC_H
#define VMBUILDD_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "control.h"
#include "log.h"

#define CALL_DEFERRED	1
/*
 * Deferred calls one connection may have in flight: a client that
 * pipelines more gets E_BUSY instead of queueing unbounded work.
 */
#define RPC_MAX_INFLIGHT	64
/* Descriptors one request may carry (SCM_RIGHTS): kernel, ramdisk. */
#define RPC_MAX_FDS		2

struct call_file {
	char	*key;			/* "kernel", "ramdisk" */
	char	*path;
};

struct call {
	struct conn	*conn;		/* referenced */
	char		*id;		/* id as JSON text; NULL: no reply */
	bool		deferred;	/* counted in conn->inflight */
	const char	*method;	/* static name from the table */
	yajl_val	params;		/* an object; valid during dispatch only */
	const char	*raw;		/* result as JSON text instead of g */
	size_t		raw_len;
	/* raw_put(raw, raw_len, raw_ref) releases raw (NULL: static). */
	void		(*raw_put)(const void *, size_t, void *);
	void		*raw_ref;
	int		err_code;
	int		err_errno;	/* positive; 0 when none */
	char		err_msg[512];
	char		**err_list;	/* data.errors (E_CONFIG) */
	size_t		err_n;
	const char	*err_phase;	/* data.phase of a failed build; static */
	struct call_file *err_files;	/* data.files (E_IMAGE_FD) */
	size_t		err_nfiles;
	int		fds[RPC_MAX_FDS];	/* came with the request; -1: taken */
	size_t		nfds;
};

/* A control method: the table's entry (methods.c). */
struct method {
	const char	*name;
	/* 0 (result in g), -1 (error set) or CALL_DEFERRED. */
	int		(*fn)(struct call *call, yajl_gen g);
	bool		needs_write;	/* root or group vmbuild only */
};

/*
 * The method table's lookup (methods_find), set before the first
 * request; until then every method is unknown.
 */
void rpc_set_methods(const struct method *(*find)(const char *name));
/*
 * The control group's name and the control socket's path, for the words
 * of a refused change (control.c sets them; the strings must outlive
 * the daemon's loop).
 */
void rpc_set_access_names(const char *group, const char *control_path);

/*
 * One request line, with the descriptors that came with its bytes
 * (taken over: closed unless a method takes them).
 */
void rpc_handle_line(struct conn *c, const char *line, size_t len, int *fds,
    size_t nfds);
/* Request lines handled since start. */
uint64_t rpc_requests(void);
/* Send an error outside any call (id NULL writes null). */
void rpc_send_error(struct conn *c, const char *id, int code,
    const char *msg);
/* Send a notification to one connection. */
void rpc_send_event(struct conn *c, const char *name, const char *params,
    size_t params_len);

/* Record an error on the call; returns -1 for `return call_error(...)`. */
int call_error(struct call *call, int code, int errnum, const char *fmt,
    ...) LOG_FMT(4, 5);
/* data.phase: the build phase an error happened in (a static string). */
void call_error_phase(struct call *call, const char *phase);
/* Take the list for data.errors (strings are strdup'd). */
void call_error_list(struct call *call, char **list, size_t n);
/* Add {"key","path"} to data.files: a file to pass as a descriptor. */
int call_error_file(struct call *call, const char *key, const char *path);
/*
 * The descriptor the request carried at `index` (params.fds names them
 * by index), now the caller's; -1 if there is none.
 */
int call_take_fd(struct call *call, size_t index);
/* Answer a deferred call and free it. */
void call_reply(struct call *call, yajl_gen result);
/*
 * The same, the reply line carrying descriptor `fd` (duplicated; the
 * caller closes its own): 0, or a negative errno when it cannot be
 * sent (the call is freed either way).
 */
int call_reply_fd(struct call *call, yajl_gen result, int fd);
void call_fail(struct call *call);
/*
 * Answer a deferred call now with `result` and keep it, silent: its
 * later call_reply()/call_fail() only free it (vm.restore's "early").
 */
void call_answer_now(struct call *call, yajl_gen result);
void call_free(struct call *call);

/*
 * Parameter access.  Each returns 1 when the key is present and of the
 * type asked, 0 when absent (and not required), or -1 after setting a
 * -32602 error naming the key.
 */
int param_string(struct call *c, const char *key, bool required,
    const char **ret);
int param_bool(struct call *c, const char *key, bool *ret);
int param_u64(struct call *c, const char *key, bool required, uint64_t *ret);
int param_object(struct call *c, const char *key, bool required,
    yajl_val *ret);
int param_array(struct call *c, const char *key, yajl_val *ret);

#endif /* VMBUILDD_RPC_H */
