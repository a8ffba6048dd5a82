/*
 * check.c - config.check: what vm.create would do with a configuration
 * on this host, doing none of it (vmctl check, vmctl create --dry-run).
 *
 * The configuration is parsed and checked as vm.create does, then
 * against the client (the disk targets it may open, the scripts it may
 * name: devices.c), its images (read from the descriptors it passed, or
 * from an image directory, as a build reads them) and the host (the
 * nodes vnuma and cpus= name, the placement, the bridges:
 * vmb_guest_dry_run).  Every problem is one {file, line, key, message}
 * of "errors", all at once; nothing is claimed, created or populated.
 *
 * Allowed on the read-only socket: it changes nothing, opens no file a
 * client names (images come as its descriptors, disk targets are only
 * looked at with the client's rights, peer.c) and tells a client
 * nothing about the host that host.info does not.
 */
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "check.h"
#include "devices.h"
#include "guestjson.h"
#include "images.h"
#include "json.h"
#include "params.h"
#include "proto.h"
#include "rpc.h"
#include "vmbuildd.h"
#include "worker.h"

struct check_job {
	struct job	job;
	struct call	*call;
	char		*where;		/* config_path, or "request" */
	struct vmb_guest *guest;	/* NULL: the text did not parse */
	struct image_req images;
	struct vmb_diags diags;
	struct vmb_dry_run dr;
	int		rc;		/* of reading the host's state */
};

static void
check_job_free(struct check_job *j)
{
	vmb_dry_run_done(&j->dr);
	vmb_diags_done(&j->diags);
	image_req_done(&j->images);
	vmb_guest_free(j->guest);
	free(j->where);
	free(j);
}

static void
gen_diags(yajl_gen g, const struct vmb_diags *d, enum vmb_severity sev)
{
	yajl_gen_array_open(g);
	for (size_t i = 0; i < d->n; i++) {
		const struct vmb_diag *x = &d->v[i];

		if (x->severity != sev)
			continue;
		yajl_gen_map_open(g);
		jg_kv_str(g, "file", x->file);
		jg_kv_i64(g, "line", x->line);
		jg_kv_str(g, "key", x->key);
		jg_kv_str(g, "message", x->msg);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

/* Where the guest would go, and each node's free memory as it was read. */
static void
gen_placement(yajl_gen g, const struct vmb_dry_run *dr)
{
	const struct vmb_placement *p = &dr->placement;

	if (!dr->placed) {
		yajl_gen_null(g);
		return;
	}
	yajl_gen_map_open(g);
	jg_key(g, "nodes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < p->nr_nodes; i++)
		jg_u64(g, p->nodes[i]);
	yajl_gen_array_close(g);
	jg_key(g, "node_bytes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < p->nr_nodes; i++)
		jg_u64(g, p->node_bytes[i]);
	yajl_gen_array_close(g);
	jg_kv_str(g, "reason", p->reason);
	jg_key(g, "free_bytes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; dr->host && i < dr->host->nr_nodes; i++)
		jg_u64(g, dr->host->nodes[i].free_bytes);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

static void
check_reply(struct check_job *j, yajl_gen g)
{
	yajl_gen_map_open(g);
	jg_kv_bool(g, "ok", j->diags.nr_errors == 0);
	jg_key(g, "errors");
	gen_diags(g, &j->diags, VMB_ERROR);
	jg_key(g, "warnings");
	gen_diags(g, &j->diags, VMB_WARNING);
	/* An invalid guest is only as far as it was read: not shown. */
	jg_key(g, "config");
	if (j->guest != NULL && j->diags.nr_errors == 0)
		guestjson_gen(g, j->guest);
	else
		yajl_gen_null(g);
	jg_key(g, "placement");
	gen_placement(g, &j->dr);
	yajl_gen_map_close(g);
}

static void
check_run(struct job *job)
{
	struct check_job *j = (struct check_job *)job;
	char why[512] = "";

	if (images_open(&j->images, j->guest, why, sizeof(why)) < 0) {
		/* The image directory's file: the build would fail so. */
		(void)vmb_diags_add(&j->diags, VMB_ERROR, j->where,
		    j->guest->key_line[VMB_KEY_KERNEL], "kernel", why);
		return;
	}
	j->rc = vmb_guest_dry_run(vmbd.ctx, j->guest, j->images.fd[0],
	    j->images.fd[1], j->where, &j->diags, &j->dr);
}

static void
check_done(struct job *job)
{
	struct check_job *j = (struct check_job *)job;
	yajl_gen g = jg_new();

	if (j->rc < 0) {
		call_error(j->call, build_errno_code(j->rc), j->rc, "cannot "
		    "read the host's state: %s", strerror(-j->rc));
		call_fail(j->call);
	} else {
		check_reply(j, g);
		call_reply(j->call, g);
	}
	yajl_gen_free(g);
	check_job_free(j);
}

/* The text parsed as vm.create parses it, every diagnostic kept. */
static int
check_parse(struct call *call, struct check_job *j, bool ignore)
{
	const char *text = NULL, *path = NULL;
	char *dir;

	if (param_string(call, P_CONFIG, true, &text) < 0 ||
	    param_string(call, P_CONFIG_PATH, false, &path) < 0)
		return -1;
	if (path != NULL && path[0] != '/')
		return call_error(call, RPC_INVALID_PARAMS, 0,
		    "params.config_path must be an absolute path (the daemon "
		    "does not know the client's working directory)");
	if (!(j->where = strdup(path != NULL ? path : "request")) ||
	    !(dir = strdup(j->where)))
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	(void)vmb_config_parse(text, strlen(text), j->where,
	    path != NULL ? dirname(dir) : NULL,
	    VMB_CONFIG_KEEP_INVALID | (ignore ? VMB_CONFIG_IGNORE_UNSUPPORTED :
	    0), &j->guest, &j->diags);
	free(dir);
	return 0;
}

/*
 * The images the client says it could not open (P_IMAGE_ERRORS): each is
 * an error of its key, and no image is looked at.  1 when there were
 * any, 0 when none, -1 (replied) for a malformed parameter.
 */
static int
check_image_errors(struct call *call, struct check_job *j)
{
	static const enum vmb_key keys[2] = { VMB_KEY_KERNEL, VMB_KEY_RAMDISK };
	yajl_val errs = NULL;
	int n = 0;

	if (param_object(call, P_IMAGE_ERRORS, false, &errs) < 0)
		return -1;
	for (int i = 0; errs != NULL && i < 2; i++) {
		const char *name = i == 0 ? "kernel" : "ramdisk";
		yajl_val why = jv_get(errs, name);

		if (why == NULL)
			continue;
		if (!YAJL_IS_STRING(why) || strlen(why->u.string) > 512)
			return call_error(call, RPC_INVALID_PARAMS, 0,
			    "params.%s.%s: a string of at most 512 bytes",
			    P_IMAGE_ERRORS, name);
		(void)vmb_diags_add(&j->diags, VMB_ERROR, j->where,
		    j->guest->key_line[keys[i]], name, why->u.string);
		n++;
	}
	return n > 0;
}

int
m_config_check(struct call *call, yajl_gen g)
{
	struct check_job *j = calloc(1, sizeof(*j));
	bool ignore = false;
	int skip;

	if (j == NULL)
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	image_req_init(&j->images);
	if (param_bool(call, P_IGNORE_UNSUPPORTED, &ignore) < 0 ||
	    check_parse(call, j, ignore) < 0) {
		check_job_free(j);
		return -1;
	}
	/*
	 * Not parsed at all: nothing to look at on the host.  A guest with
	 * errors goes on (VMB_CONFIG_KEEP_INVALID), so that what the host
	 * and the client would refuse is reported with them, at once.
	 */
	if (j->guest == NULL) {
		check_reply(j, g);
		check_job_free(j);
		return 0;
	}
	devices_check_diags(call->conn, j->guest, j->where, &j->diags);
	if ((skip = check_image_errors(call, j)) < 0 || (!skip &&
	    images_prepare(call, j->guest, &j->images) < 0)) {
		check_job_free(j);
		return -1;
	}
	j->call = call;
	j->job.run = check_run;
	j->job.done = check_done;
	worker_submit(&j->job);
	return CALL_DEFERRED;
}
