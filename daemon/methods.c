/*
 * methods.c - every control method, dispatched through one table.
 *
 * Handlers run on the loop.  Anything that talks to the hypervisor is
 * a job on the worker pool (hv_call below), answered when it is done;
 * vm.list, vm.info and the task methods answer from the loop's own
 * registry, so they cost no hypervisor round trip.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build.h"
#include "check.h"
#include "console.h"
#include "control.h"
#include "devices.h"
#include "dm.h"
#include "events.h"
#include "everyday.h"
#include "guestjson.h"
#include "images.h"
#include "json.h"
#include "methods.h"
#include "params.h"
#include "peer.h"
#include "proto.h"
#include "reap.h"
#include "resize.h"
#include "report.h"
#include "source.h"
#include "rpc.h"
#include "migrate.h"
#include "save.h"
#include "shutdown.h"
#include "state.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

/* ------------------------------------------------------------------ */
/* Hypervisor calls on the pool.                                       */

struct hv_call {
	struct job	job;
	struct call	*call;
	int		(*run)(struct hv_call *h);	/* worker */
	int		(*reply)(struct hv_call *h, yajl_gen g); /* loop */
	int		rc;
	struct vm	*vm;		/* marked busy while in flight */
	uint32_t	domid;
	bool		ours;
	uint8_t		uuid[16];
	struct vmb_domain dom;
	bool		have_dom;
	struct vmb_host	*host;
	struct vmb_scrub scrub;
	struct vmb_counters counters;
	/* Written once run() succeeded (an unpause ending a doubt), or NULL. */
	struct state_record *rec;
};

static void
hv_call_run(struct job *job)
{
	struct hv_call *h = (struct hv_call *)job;

	h->rc = h->run(h);
	if (h->rc == 0 && h->rec != NULL && state_write(h->rec) < 0)
		log_vm(LOG_WARNING, h->rec->name, h->domid, 0, "%s: its record "
		    "still says its migration is in doubt (see above)",
		    h->rec->name);
}

static void
hv_call_done(struct job *job)
{
	struct hv_call *h = (struct hv_call *)job;
	yajl_gen g = jg_new();
	int rc;

	if (h->vm != NULL)
		h->vm->busy = false;
	rc = h->reply(h, g);
	if (rc < 0)
		call_fail(h->call);
	else
		call_reply(h->call, g);
	yajl_gen_free(g);
	vmb_host_free(h->host);
	if (h->rec != NULL)
		state_record_done(h->rec);
	free(h->rec);
	free(h);
}

/* As hv_call_submit(), `rec` (taken, or NULL) written after run(). */
static int
hv_call_submit_rec(struct call *call, struct vm *vm,
    int (*run)(struct hv_call *), int (*reply)(struct hv_call *, yajl_gen),
    struct state_record *rec)
{
	struct hv_call *h = calloc(1, sizeof(*h));

	if (h == NULL) {
		if (rec != NULL)
			state_record_done(rec);
		free(rec);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	h->rec = rec;
	h->call = call;
	h->run = run;
	h->reply = reply;
	h->job.run = hv_call_run;
	h->job.done = hv_call_done;
	if (vm != NULL) {
		h->vm = vm;
		vm->busy = true;
		h->domid = vm->domid;
		h->ours = vm->ours;
		memcpy(h->uuid, vm->uuid, 16);
	}
	worker_submit(&h->job);
	return CALL_DEFERRED;
}

static int
hv_call_submit(struct call *call, struct vm *vm,
    int (*run)(struct hv_call *), int (*reply)(struct hv_call *, yajl_gen))
{
	return hv_call_submit_rec(call, vm, run, reply, NULL);
}

static int
hv_error(struct hv_call *h, const char *what)
{
	int code = build_errno_code(h->rc);

	if (h->rc == -EOPNOTSUPP)
		return call_error(h->call, E_UNAVAILABLE, h->rc,
		    "%s: the hypervisor does not report this", what);
	return call_error(h->call, code, h->rc, "%s: %s", what,
	    strerror(-h->rc));
}

/* ------------------------------------------------------------------ */
/* server.hello                                                        */

static const struct {
	uint32_t	bit;
	const char	*name;
} cap_names[] = {
	{ VMB_CAP_BATCH_POPULATE,	"batch_populate" },
	{ VMB_CAP_SCRUB_PROGRESS,	"scrub_progress" },
	{ VMB_CAP_COUNTERS,		"counters" },
	{ VMB_CAP_PERF_COUNTERS,	"perf_counters" },
	{ VMB_CAP_IMAGE_LOAD,		"image_load" },
	{ VMB_CAP_CLAIMS,		"claims" },
	{ VMB_CAP_SHADOW,		"shadow" },
	{ VMB_CAP_HAP,			"hap" },
	{ VMB_CAP_HOST_TOPOLOGY,	"host_topology" },
	{ VMB_CAP_DEVICES,		"devices" },
};

static int
m_server_hello(struct call *call, yajl_gen g)
{
	uint32_t caps = vmb_ctx_caps(vmbd.ctx);
	struct conn *c = call->conn;

	yajl_gen_map_open(g);
	jg_kv_str(g, "server", "vmbuildd");
	jg_kv_str(g, "version", VMB_VERSION);
	jg_kv_i64(g, "protocol", VMBUILD_PROTO_VERSION);
	jg_kv_str(g, "backend", vmb_ctx_backend(vmbd.ctx));
	jg_kv_str(g, "hypervisor", vmb_ctx_hypervisor(vmbd.ctx));
	jg_kv_str(g, "populate", vmb_populate_strategy_name(vmbd.strategy));
	jg_key(g, "capabilities");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
		if (caps & cap_names[i].bit)
			jg_str(g, cap_names[i].name);
	yajl_gen_array_close(g);
	jg_key(g, "methods");
	methods_gen_names(g);
	jg_key(g, "events");
	yajl_gen_array_open(g);
	for (uint32_t b = 1; b <= EVT_ALL; b <<= 1)
		jg_str(g, events_name(b));
	yajl_gen_array_close(g);
	jg_key(g, "limits");
	yajl_gen_map_open(g);
	jg_kv_u64(g, "max_request_bytes", vmbd.max_request);
	jg_kv_u64(g, "max_connections", vmbd.max_connections);
	jg_kv_u64(g, "max_tasks", vmbd.max_tasks);
	jg_kv_u64(g, "max_fds_per_request", RPC_MAX_FDS);
	jg_kv_u64(g, "image_dirs", images_ndirs());
	yajl_gen_map_close(g);
	jg_kv_bool(g, "hypervisor_up", vm_backend_up());
	jg_key(g, "peer");
	yajl_gen_map_open(g);
	jg_kv_i64(g, "pid", c->pid);
	jg_kv_u64(g, "uid", c->uid);
	jg_kv_u64(g, "gid", c->gid);
	jg_kv_bool(g, "may_write", c->can_write);
	jg_kv_bool(g, "read_only_socket", c->read_only);
	yajl_gen_map_close(g);
	jg_kv_i64(g, "pid", getpid());
	jg_kv_dbl(g, "uptime_seconds", now_real() - vmbd.started_at);
	yajl_gen_map_close(g);
	return 0;
}

/* ------------------------------------------------------------------ */
/* host.*                                                              */

static int
host_info_run(struct hv_call *h)
{
	return vmb_host_info(vmbd.ctx, &h->host);
}

static int
host_info_reply(struct hv_call *h, yajl_gen g)
{
	if (h->rc < 0)
		return hv_error(h, "host information");
	report_host(g, h->host);
	return 0;
}

static int
m_host_info(struct call *call, yajl_gen g)
{
	(void)g;
	return hv_call_submit(call, NULL, host_info_run, host_info_reply);
}

static int
host_scrub_run(struct hv_call *h)
{
	return vmb_scrub_progress(vmbd.ctx, &h->scrub);
}

static int
host_scrub_reply(struct hv_call *h, yajl_gen g)
{
	if (h->rc < 0)
		return hv_error(h, "scrub progress");
	report_scrub(g, &h->scrub);
	return 0;
}

static int
m_host_scrub(struct call *call, yajl_gen g)
{
	(void)g;
	return hv_call_submit(call, NULL, host_scrub_run, host_scrub_reply);
}

static int
host_counters_run(struct hv_call *h)
{
	return vmb_counters(vmbd.ctx, &h->counters);
}

static int
host_counters_reply(struct hv_call *h, yajl_gen g)
{
	if (h->rc < 0)
		return hv_error(h, "counters");
	report_counters(g, &h->counters);
	return 0;
}

static int
m_host_counters(struct call *call, yajl_gen g)
{
	(void)g;
	return hv_call_submit(call, NULL, host_counters_run,
	    host_counters_reply);
}

/* ------------------------------------------------------------------ */
/* vm.create                                                           */

/* The guest of params.guest; its warnings stay in *pdiags. */
static int
guest_from_json(struct call *call, yajl_val obj, const char *basedir,
    uint32_t flags, struct vmb_diags *pdiags, struct vmb_guest **ret)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *guest = NULL;
	const char *key = NULL, *why = NULL;
	int rc;

	rc = vmb_guest_new(&guest);
	if (rc < 0)
		return call_error(call, RPC_INTERNAL_ERROR, rc,
		    "cannot allocate a guest: %s", strerror(-rc));
	guest->flags = flags;
	rc = guestjson_keys(guest, obj, "request", &diags, &key, &why);
	if (rc < 0) {
		vmb_guest_free(guest);
		vmb_diags_done(&diags);
		return call_error(call, RPC_INVALID_PARAMS, 0,
		    "params.guest.%s: %s", key, why);
	}
	/* Paths are only named here; images.c decides what is opened. */
	if (diags.nr_errors == 0)
		(void)vmb_guest_check(guest, basedir, "request", 0, &diags);
	if (diags.nr_errors > 0) {
		config_error(call, &diags);
		vmb_guest_free(guest);
		vmb_diags_done(&diags);
		return -1;
	}
	*pdiags = diags;
	*ret = guest;
	return 0;
}

/*
 * The warnings of a configuration ("file:line: key: warning: ..."), for
 * the result of vm.create: every key it ignored is listed there.
 */
static int
config_warnings(const struct vmb_diags *diags, struct build_warnings *w)
{
	w->v = NULL;
	w->n = 0;
	if (diags->n > diags->nr_errors &&
	    !(w->v = calloc(diags->n - diags->nr_errors, sizeof(*w->v))))
		return -ENOMEM;
	for (size_t i = 0; i < diags->n; i++) {
		char buf[700];

		if (diags->v[i].severity != VMB_WARNING)
			continue;
		vmb_diag_format(&diags->v[i], buf, sizeof(buf));
		if (!(w->v[w->n] = strdup(buf)))
			return -ENOMEM;
		w->n++;
	}
	return 0;
}

/*
 * The VM's source (source.h) with who creates it: root, or the client's
 * uid and groups and the images it was found to be able to read (the
 * descriptors it sent, the paths images_prepare checked), which a
 * restart opens only with those rights and only if unchanged.
 */
static char *
create_source(struct call *call, const char *text, yajl_val gobj,
    const char *path, bool ignore, const struct image_req *images)
{
	struct source_owner o = { .by_root = call->conn->uid == 0 };
	char *source;

	if (!o.by_root && peer_cred_of(call->conn, &o.cred) < 0)
		return NULL;
	for (int i = 0; i < 2; i++) {
		o.dev[i] = images->dev[i];
		o.ino[i] = images->ino[i];
	}
	source = source_json(text, gobj, path, ignore, &o);
	peer_cred_done(&o.cred);
	return source;
}

static int
m_vm_create(struct call *call, yajl_gen g)
{
	const char *text = NULL, *path = NULL;
	struct vmb_diags diags = { 0 };
	struct vmb_guest *guest = NULL;
	struct image_req images;
	struct build_warnings warn = { 0 };
	char *dir = NULL, *basedir = NULL, *source = NULL;
	bool wait = false, paused = false, ignore = false;
	yajl_val gobj = NULL;
	uint32_t flags;
	int has_text, has_guest, rc;

	image_req_init(&images);

	if ((has_text = param_string(call, P_CONFIG, false, &text)) < 0 ||
	    param_string(call, P_CONFIG_PATH, false, &path) < 0 ||
	    (has_guest = param_object(call, P_GUEST, false, &gobj)) < 0 ||
	    param_bool(call, P_WAIT, &wait) < 0 ||
	    param_bool(call, P_PAUSED, &paused) < 0 ||
	    param_bool(call, P_IGNORE_UNSUPPORTED, &ignore) < 0)
		return -1;
	flags = ignore ? VMB_CONFIG_IGNORE_UNSUPPORTED : 0;
	if (has_text && has_guest)
		return call_error(call, RPC_INVALID_PARAMS, 0,
		    "give params.config or params.guest, not both");
	if (!has_text && !has_guest)
		return call_error(call, RPC_INVALID_PARAMS, 0,
		    "params.config (xl.cfg text) or params.guest (object) "
		    "is required");
	if (path != NULL && path[0] != '/')
		return call_error(call, RPC_INVALID_PARAMS, 0,
		    "params.config_path must be an absolute path (the daemon "
		    "does not know the client's working directory)");
	if (path != NULL) {
		dir = strdup(path);
		if (dir == NULL)
			return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
			    "out of memory");
		basedir = dirname(dir);
	}
	if (has_text) {
		/* No file is looked at: images.c decides what is opened. */
		rc = vmb_config_parse(text, strlen(text), path != NULL ? path :
		    "request", basedir, flags, &guest, &diags);
		if (rc < 0 && diags.nr_errors > 0)
			rc = config_error(call, &diags);
		else if (rc < 0)
			rc = call_error(call, E_CONFIG, rc,
			    "invalid configuration: %s", strerror(-rc));
	} else {
		rc = guest_from_json(call, gobj, basedir, flags, &diags,
		    &guest);
	}
	if (rc == 0 && config_warnings(&diags, &warn) < 0) {
		vmb_guest_free(guest);
		rc = call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	vmb_diags_done(&diags);
	/* The daemon is root: only disks its client may open. */
	if (rc == 0 && devices_check_guest(call, guest) < 0) {
		vmb_guest_free(guest);
		rc = -1;
	} else if (rc == 0 && images_prepare(call, guest, &images) < 0) {
		vmb_guest_free(guest);
		rc = -1;
	} else if (rc == 0 && (source = create_source(call, has_text ? text :
	    NULL, gobj, path, ignore, &images)) == NULL) {
		vmb_guest_free(guest);
		rc = call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	} else if (rc == 0) {
		rc = build_start(call, g, guest, &images, path, source, wait,
		    paused, &warn);
	}
	build_warnings_done(&warn);
	image_req_done(&images);
	free(source);
	free(dir);
	return rc;
}

/* ------------------------------------------------------------------ */
/* vm.list, vm.info and operations on one VM                          */

static int
m_vm_list(struct call *call, yajl_gen g)
{
	call->raw = vm_list_text(&call->raw_len, &call->raw_ref);
	if (call->raw != NULL)
		call->raw_put = vm_list_text_put;
	else
		vm_gen_list(g);
	return 0;
}

static int
m_vm_info(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);

	if (vm == NULL)
		return -1;
	vm_gen_info(g, vm);
	return 0;
}

static int
destroy_run(struct hv_call *h)
{
	int rc;

	/* An HVM guest's device model goes first, as libxl stops it. */
	dm_stop_domid(h->domid);
	rc = vmb_domain_destroy(vmbd.ctx, h->domid);

	if ((rc == 0 || rc == -ESRCH || rc == -ENOENT) && h->ours)
		(void)state_remove(h->uuid);
	return rc;
}

static int
destroy_reply(struct hv_call *h, yajl_gen g)
{
	struct vm *vm = h->vm;

	if (h->rc < 0 && h->rc != -ESRCH && h->rc != -ENOENT)
		return hv_error(h, "destroy");
	log_vm(LOG_INFO, vm->name, h->domid, 0, "%s (domain %u) destroyed",
	    vm->name, h->domid);
	if (h->rc == 0) {
		yajl_gen_map_open(g);
		jg_kv_str(g, "vm", vm->name);
		jg_kv_u64(g, "id", h->domid);
		jg_kv_str(g, "state", "destroyed");
		yajl_gen_map_close(g);
	}
	vm_remove(vm, true);
	events_scrub_kick();
	vmbd_status_changed();
	if (h->rc < 0)
		return call_error(h->call, E_NO_SUCH_VM, h->rc,
		    "domain %u no longer exists", h->domid);
	return 0;
}

static int
m_vm_destroy(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);

	(void)g;
	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return -1;
	return hv_call_submit(call, vm, destroy_run, destroy_reply);
}

static int
pause_run(struct hv_call *h)
{
	int rc = vmb_domain_pause(vmbd.ctx, h->domid);

	if (rc == 0)
		h->have_dom = vmb_domain_get(vmbd.ctx, h->domid, &h->dom) == 0;
	return rc;
}

static int
unpause_run(struct hv_call *h)
{
	int rc = vmb_domain_unpause(vmbd.ctx, h->domid);

	if (rc == 0)
		h->have_dom = vmb_domain_get(vmbd.ctx, h->domid, &h->dom) == 0;
	return rc;
}

static int
pause_reply(struct hv_call *h, yajl_gen g)
{
	if (h->rc < 0)
		return hv_error(h, h->vm->name);
	if (h->rec != NULL) {
		log_vm(LOG_NOTICE, h->vm->name, h->domid, 0, "%s unpaused: its "
		    "migration to %s is no longer in doubt", h->vm->name,
		    h->vm->migration.target);
		vm_set_migration(h->vm, NULL, false);
	}
	if (h->have_dom)
		vm_update(h->vm, &h->dom);
	vm_gen_summary(g, h->vm);
	return 0;
}

static int
m_vm_pause(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);

	(void)g;
	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return -1;
	if (vm->state == VM_PAUSED)
		return call_error(call, E_BAD_STATE, 0, "%s is already paused",
		    vm->name);
	if (vm_shutdown_reason(vm) != NULL)
		return call_error(call, E_BAD_STATE, 0, "%s is shut down (%s)",
		    vm->name, vm_shutdown_reason(vm));
	return hv_call_submit(call, vm, pause_run, pause_reply);
}

static int
m_vm_unpause(struct call *call, yajl_gen g)
{
	struct vm *vm = vm_param(call);
	struct state_record *rec = NULL;

	(void)g;
	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return -1;
	if (vm_state_is_domain(vm->state) && vm->state != VM_PAUSED)
		return call_error(call, E_BAD_STATE, 0, "%s is not paused "
		    "(it is %s)", vm->name, vm_state_name(vm));
	/* An operator's (or vmctl migrate's) verdict on a migration. */
	if (vm->migration.set && ((rec = calloc(1, sizeof(*rec))) == NULL ||
	    vm_record(vm, NULL, rec) < 0)) {
		free(rec);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of "
		    "memory");
	}
	if (rec != NULL)
		state_migration_done(&rec->migration);
	return hv_call_submit_rec(call, vm, unpause_run, pause_reply, rec);
}

/* ------------------------------------------------------------------ */
/* task.*                                                              */

static struct task *
task_param(struct call *call)
{
	const char *key = jv_get(call->params, P_TASK) != NULL ? P_TASK : "id";
	struct task *t;
	uint64_t id;

	if (param_u64(call, key, true, &id) < 0) {
		if (strcmp(key, "id") == 0)
			call_error(call, RPC_INVALID_PARAMS, 0,
			    "params.task (a task id) is required");
		return NULL;
	}
	t = task_find(id);
	if (t == NULL)
		call_error(call, E_NO_SUCH_TASK, 0, "no task %llu",
		    (unsigned long long)id);
	return t;
}

static int
m_task_list(struct call *call, yajl_gen g)
{
	(void)call;
	task_gen_list(g);
	return 0;
}

static int
m_task_get(struct call *call, yajl_gen g)
{
	struct task *t = task_param(call);

	if (t == NULL)
		return -1;
	task_gen(g, t);
	return 0;
}

static int
m_task_cancel(struct call *call, yajl_gen g)
{
	struct task *t = task_param(call);

	if (t == NULL)
		return -1;
	if (t->state != TASK_RUNNING)
		return call_error(call, E_TASK_FINISHED, 0,
		    "task %llu has already ended (%s)",
		    (unsigned long long)t->id, task_state_name(t->state));
	if (!t->cancel_requested && (t->build != NULL || t->cancel != NULL)) {
		t->cancel_requested = true;
		if (t->build != NULL)
			vmb_build_cancel(t->build);
		else
			t->cancel(t->cancel_arg);
		log_vm(LOG_NOTICE, t->vm, VMB_DOMID_INVALID, t->id, "task "
		    "%llu: cancel requested by uid %u",
		    (unsigned long long)t->id, (unsigned)call->conn->uid);
	}
	task_gen(g, t);
	return 0;
}

/* ------------------------------------------------------------------ */
/* events.subscribe                                                    */

static int
m_events_subscribe(struct call *call, yajl_gen g)
{
	yajl_val list = NULL;
	uint32_t mask = 0;
	int rc;

	rc = param_array(call, P_EVENTS, &list);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		mask = EVT_ALL;
	} else {
		for (size_t i = 0; i < list->u.array.len; i++) {
			yajl_val v = list->u.array.values[i];
			uint32_t bit;

			if (!YAJL_IS_STRING(v))
				return call_error(call, RPC_INVALID_PARAMS, 0,
				    "params.events[%zu] must be a string", i);
			bit = events_bit(v->u.string);
			if (bit == 0)
				return call_error(call, RPC_INVALID_PARAMS, 0,
				    "params.events[%zu]: unknown event "
				    "\"%.64s\"", i, v->u.string);
			mask |= bit;
		}
	}
	/*
	 * The reply goes out when this returns, before any event the
	 * subscription enables: those are sent from the loop, later.
	 */
	if (events_subscribe(call->conn, mask) < 0)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	yajl_gen_map_open(g);
	jg_key(g, "events");
	yajl_gen_array_open(g);
	for (uint32_t b = 1; b <= EVT_ALL; b <<= 1)
		if (mask & b)
			jg_str(g, events_name(b));
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	return 0;
}

/* ------------------------------------------------------------------ */

static const struct method methods[] = {
	{ M_SERVER_HELLO,	m_server_hello,		false },
	{ M_HOST_INFO,		m_host_info,		false },
	{ M_HOST_SCRUB,		m_host_scrub,		false },
	{ M_HOST_COUNTERS,	m_host_counters,	false },
	{ M_VM_CREATE,		m_vm_create,		true },
	{ M_VM_LIST,		m_vm_list,		false },
	{ M_VM_INFO,		m_vm_info,		false },
	{ M_VM_DESTROY,		m_vm_destroy,		true },
	{ M_VM_PAUSE,		m_vm_pause,		true },
	{ M_VM_UNPAUSE,		m_vm_unpause,		true },
	{ M_VM_SHUTDOWN,	m_vm_shutdown,		true },
	{ M_VM_REBOOT,		m_vm_reboot,		true },
	{ M_VM_CONSOLE,		m_vm_console,		true },
	{ M_TASK_LIST,		m_task_list,		false },
	{ M_TASK_GET,		m_task_get,		false },
	{ M_TASK_CANCEL,	m_task_cancel,		true },
	{ M_EVENTS_SUBSCRIBE,	m_events_subscribe,	false },
	{ M_VM_DISK_ATTACH,	m_vm_disk_attach,	true },
	{ M_VM_DISK_DETACH,	m_vm_disk_detach,	true },
	{ M_VM_NET_ATTACH,	m_vm_net_attach,	true },
	{ M_VM_NET_DETACH,	m_vm_net_detach,	true },
	/* Everyday settings (everyday.c); the console ring: root's. */
	{ M_VM_SCHED_GET,	m_vm_sched_get,		false },
	{ M_VM_SCHED_SET,	m_vm_sched_set,		true },
	{ M_VM_RENAME,		m_vm_rename,		true },
	{ M_VM_UPTIME,		m_vm_uptime,		false },
	{ M_HOST_DMESG,		m_host_dmesg,		true },
	/* A running VM's memory and vCPUs (resize.c). */
	{ M_VM_MEM_SET,		m_vm_mem_set,		true },
	{ M_VM_MEM_MAX,		m_vm_mem_max,		true },
	{ M_VM_VCPU_SET,	m_vm_vcpu_set,		true },
	{ M_VM_VCPU_PIN,	m_vm_vcpu_pin,		true },
	{ M_VM_VCPU_LIST,	m_vm_vcpu_list,		false },
	/* Save and restore (save.c). */
	{ M_VM_SAVE,		m_vm_save,		true },
	{ M_VM_RESTORE,		m_vm_restore,		true },
	{ M_VM_MIGRATE_SEND,	m_vm_migrate_send,	true },
	/* config.check: a dry run, changes nothing (check.c) */
	{ M_CONFIG_CHECK,	m_config_check,		false },
};

const struct method *
methods_find(const char *name)
{
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strcmp(methods[i].name, name) == 0)
			return &methods[i];
	return NULL;
}

void
methods_gen_names(yajl_gen g)
{
	yajl_gen_array_open(g);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		jg_str(g, methods[i].name);
	yajl_gen_array_close(g);
}
