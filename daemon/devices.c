/*
 * devices.c - hot-plug on a running VM: vm.disk_attach, vm.disk_detach,
 * vm.net_attach, vm.net_detach (xl block-attach, block-detach,
 * network-attach, network-detach), and the check that a client may
 * use the disks it names (here and in vm.create).
 *
 * A handler checks on the loop what it can (the VM, the specification,
 * the client's rights to the image, a free device number), then the
 * library does the work on a thread of its own: it may take up to a
 * minute (backend to InitWait, the hotplug script, the guest's frontend
 * connecting), and the worker pool serves quick calls.  The VM is busy
 * meanwhile.  On success the thread writes the VM's record with the
 * device added or taken out of its configuration (config.disks,
 * config.vifs: what vm.info shows and a restarted daemon reads back),
 * undoing the attach if the record cannot be written; the loop then
 * swaps the VM's configuration.  On hvsim, which has no I/O, the
 * library does nothing and the device is only recorded.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "control.h"
#include "devices.h"
#include "guestjson.h"
#include "json.h"
#include "log.h"
#include "params.h"
#include "peer.h"
#include "proto.h"
#include "rpc.h"
#include "source.h"
#include "state.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define CONNECT_TIMEOUT_DEFAULT	30	/* s for the guest's frontend */
#define CONNECT_TIMEOUT_MAX	600

/* A name in the hotplug script directory: no '/', not "." or "..". */
static bool
script_name_ok(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/*
 * script= of a device (`what` "disk xvdb", "vif 1"): the root daemon
 * runs it, so a client other than root names one in the hotplug script
 * directory, and only root may give an absolute path (vmbuildd(8)).
 * false with the reason in why.
 */
static bool
script_ok(const struct conn *c, const char *what, const char *script,
    char *why, size_t why_len)
{
	if (!script || script_name_ok(script) ||
	    (c->uid == 0 && script[0] == '/'))
		return true;
	snprintf(why, why_len, "%s: script \"%.64s\": %s", what, script,
	    script[0] == '/' ? "only root may give a hotplug script by path; "
	    "name one of the hotplug script directory (/etc/xen/scripts)" :
	    "a name in the hotplug script directory (no '/', not \".\" or "
	    "\"..\")");
	return false;
}

static int
check_script(struct call *call, const char *what, const char *script)
{
	char why[512];

	if (script_ok(call->conn, what, script, why, sizeof(why)))
		return 0;
	return call_error(call, RPC_INVALID_PARAMS, EACCES, "%s", why);
}

/*
 * A disk a client may have: its script (script_ok) and its target,
 * which a client other than root must be able to open itself (for
 * writing too unless read-only) whatever the script: a script is run
 * by root with the target.  Root's own non-block script may take a
 * target that is no path of this host (an iSCSI name).  false with the
 * reason ("disk xvdb: ...") in why.
 */
static bool
disk_ok(const struct conn *c, const struct vmb_disk *d, char *why,
    size_t why_len)
{
	char what[VMB_VDEV_LEN + 8], err[400];

	snprintf(what, sizeof(what), "disk %s", d->vdev);
	if (!script_ok(c, what, d->script, why, why_len))
		return false;
	if (c->uid == 0 && d->script && strcmp(d->script, "block"))
		return true;
	if (!d->target || d->target[0] != '/') {
		snprintf(why, why_len, "%s: target \"%.200s\" is not an "
		    "absolute path (the daemon attaches only files and "
		    "devices its client may open)", what,
		    d->target ? d->target : "");
		return false;
	}
	if (peer_may_use(c, d->target, !d->readonly, NULL, err,
	    sizeof(err)) < 0) {
		snprintf(why, why_len, "%s: %s (the daemon attaches only what "
		    "its client may open)", what, err);
		return false;
	}
	return true;
}

static int
check_disk(struct call *call, const struct vmb_disk *d)
{
	char why[700];

	if (disk_ok(call->conn, d, why, sizeof(why)))
		return 0;
	return call_error(call, RPC_INVALID_PARAMS, EACCES, "%s", why);
}

static int
check_nic(struct call *call, const struct vmb_nic *n)
{
	char what[32];

	snprintf(what, sizeof(what), "vif %u", n->devid);
	return check_script(call, what, n->script);
}

int
devices_check_guest(struct call *call, const struct vmb_guest *guest)
{
	for (uint32_t i = 0; i < guest->nr_disks; i++)
		if (check_disk(call, &guest->disks[i]) < 0)
			return -1;
	for (uint32_t i = 0; i < guest->nr_nics; i++)
		if (check_nic(call, &guest->nics[i]) < 0)
			return -1;
	return 0;
}

/* Whether a device's line has an error already (one reason per disk). */
static bool
line_refused(const struct vmb_diags *diags, int line)
{
	for (size_t i = 0; line > 0 && i < diags->n; i++)
		if (diags->v[i].severity == VMB_ERROR &&
		    diags->v[i].line == line)
			return true;
	return false;
}

void
devices_check_diags(const struct conn *c, const struct vmb_guest *guest,
    const char *where, struct vmb_diags *diags)
{
	char what[32], why[700];

	for (uint32_t i = 0; i < guest->nr_disks; i++)
		if (!line_refused(diags, guest->disks[i].line) &&
		    !disk_ok(c, &guest->disks[i], why, sizeof(why)))
			(void)vmb_diags_add(diags, VMB_ERROR, where,
			    guest->disks[i].line, "disk", why);
	for (uint32_t i = 0; i < guest->nr_nics; i++) {
		snprintf(what, sizeof(what), "vif %u", guest->nics[i].devid);
		if (!script_ok(c, what, guest->nics[i].script, why,
		    sizeof(why)))
			(void)vmb_diags_add(diags, VMB_ERROR, where,
			    guest->nics[i].line, "vif", why);
	}
}

/*
 * A script by path (root's) hot-plugged into a VM that a client other
 * than root created: a restart of the VM could not tell who gave the
 * path (source_parse runs none a root client did not give), so it is
 * refused now rather than then.
 */
static int
check_vm_scripts(struct call *call, const struct vm *vm, const char *script)
{
	if (!script || script[0] != '/' || !vm->source ||
	    source_by_root(vm->source))
		return 0;
	return call_error(call, RPC_INVALID_PARAMS, EACCES, "script \"%.64s\": "
	    "%s was created by a client other than root: its devices name "
	    "hotplug scripts of the script directory only", script, vm->name);
}

/* ------------------------------------------------------------------ */
/* The VM's devices                                                    */

/* The VM's disk with that vbd number or (name) vdev, or NULL. */
static const struct vmb_disk *
find_disk(const struct vm *vm, const char *name, long long devid)
{
	for (uint32_t i = 0; vm->guest && i < vm->guest->nr_disks; i++) {
		const struct vmb_disk *d = &vm->guest->disks[i];

		if ((devid >= 0 && d->devid == devid) ||
		    (name && !strcasecmp(d->vdev, name)))
			return d;
	}
	return NULL;
}

/* The VM's vif with that devid or (name) MAC, or NULL. */
static const struct vmb_nic *
find_nic(const struct vm *vm, const char *name, long long devid)
{
	uint8_t mac[6];
	char s[18];

	for (uint32_t i = 0; vm->guest && i < vm->guest->nr_nics; i++) {
		const struct vmb_nic *n = &vm->guest->nics[i];

		if (devid >= 0 && n->devid == devid)
			return n;
		if (name == NULL)
			continue;
		vmb_nic_mac(vm->uuid, n, mac);
		snprintf(s, sizeof(s), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
		    mac[1], mac[2], mac[3], mac[4], mac[5]);
		if (!strcasecmp(s, name))
			return n;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The job                                                             */

struct dev_job {
	struct job	job;
	struct call	*call;
	struct vm	*vm;
	bool		attach;
	enum vmb_device_kind kind;
	struct vmb_disk	disk;
	struct vmb_nic	nic;
	uint32_t	devid;
	char		label[VMB_VDEV_LEN + 8];	/* "xvdb", "vif 1" */
	bool		force;
	uint32_t	timeout_ms;
	uint32_t	domid;
	uint8_t		uuid[16];
	struct vmb_guest *guest;	/* the VM's guest once it succeeded */
	struct state_record rec;	/* the record to write on success */
	/* results */
	int		rc;
	bool		record_failed;
	char		why[512];
};

static void
dev_job_free(struct dev_job *j)
{
	vmb_disk_done(&j->disk);
	vmb_nic_done(&j->nic);
	vmb_guest_free(j->guest);
	state_record_done(&j->rec);
	free(j);
}

static void
dev_run(struct job *job)
{
	struct dev_job *j = (struct dev_job *)job;

	if (j->attach && j->kind == VMB_DEVICE_DISK)
		j->rc = vmb_disk_attach(vmbd.ctx, j->domid, &j->disk,
		    j->timeout_ms, j->why, sizeof(j->why));
	else if (j->attach)
		j->rc = vmb_nic_attach(vmbd.ctx, j->domid, j->uuid, &j->nic,
		    j->timeout_ms, j->why, sizeof(j->why));
	else
		j->rc = vmb_device_detach(vmbd.ctx, j->domid, j->kind,
		    j->devid, j->force, j->why, sizeof(j->why));
	/* Detaching what the backend no longer has: drop it from the record. */
	if (!j->attach && j->rc == -ENOENT)
		j->rc = 0;
	if (j->rc != 0 || !j->rec.config_json)
		return;
	if (state_write(&j->rec) < 0) {
		j->record_failed = true;
		if (j->attach) {
			(void)vmb_device_detach(vmbd.ctx, j->domid, j->kind,
			    j->devid, true, NULL, 0);
			j->rc = -EIO;
		}
	}
}

static void
dev_done(struct job *job)
{
	struct dev_job *j = (struct dev_job *)job;
	struct vm *vm = vm_find_uuid(j->uuid);
	const char *what = j->kind == VMB_DEVICE_DISK ? "disk" : "vif";
	yajl_gen g;

	if (vm)
		vm->busy = false;
	if (j->rc != 0) {
		if (!j->why[0])
			snprintf(j->why, sizeof(j->why), "%s %s: %s", what,
			    j->label, strerror(-j->rc));
		log_vm(LOG_WARNING, j->vm->name, j->domid, 0, "%s %s %s: %s",
		    j->attach ? "attach of" : "detach of", what, j->label,
		    j->record_failed ? "cannot write the record" : j->why);
		call_error(j->call, j->rc == -EEXIST ? E_EXISTS :
		    j->rc == -ENOENT ? E_NO_SUCH_DEVICE : E_HYPERVISOR, j->rc,
		    "%s", j->record_failed ? "cannot write the VM's record; "
		    "the device was taken back" : j->why);
		call_fail(j->call);
		dev_job_free(j);
		return;
	}
	/* The record on disk has it: so does the VM's guest. */
	if (vm && j->guest) {
		vmb_guest_free(vm->guest);
		vm->guest = j->guest;
		j->guest = NULL;
	}
	if (j->record_failed)
		log_vm(LOG_WARNING, j->vm->name, j->domid, 0, "detach of %s %s: "
		    "cannot rewrite the record; a restarted daemon will still "
		    "list it", what, j->label);
	log_vm(LOG_INFO, j->vm->name, j->domid, 0, "%s %s %s", what, j->label,
	    j->attach ? "attached" : "detached");
	g = jg_new();
	yajl_gen_map_open(g);
	jg_kv_str(g, "vm", j->vm->name);
	jg_kv_u64(g, "id", j->domid);
	jg_key(g, what);
	if (j->attach && j->kind == VMB_DEVICE_DISK) {
		guestjson_gen_disk(g, &j->disk);
	} else if (j->attach) {
		guestjson_gen_nic(g, j->uuid, &j->nic);
	} else {
		jg_str(g, j->label);
	}
	jg_kv_u64(g, "devid", j->devid);
	jg_kv_str(g, "state", j->attach ? "attached" : "detached");
	/* hvsim has no I/O: the device is in the record, nowhere else. */
	jg_kv_bool(g, "recorded_only",
	    !(vmb_ctx_caps(vmbd.ctx) & VMB_CAP_DEVICES));
	yajl_gen_map_close(g);
	call_reply(j->call, g);
	yajl_gen_free(g);
	dev_job_free(j);
}

/* The VM to change: ours, built, running or paused, and idle. */
static struct vm *
dev_vm(struct call *call)
{
	struct vm *vm = vm_param(call);

	if (vm == NULL || vm_check_idle(call, vm) < 0)
		return NULL;
	if (!vm->ours || vm->domid == VMB_DOMID_INVALID) {
		call_error(call, E_BAD_STATE, 0, "%s was not built by vmbuildd: "
		    "its devices are not vmbuild's to change", vm->name);
		return NULL;
	}
	if (vm->state == VM_DYING || vm->state == VM_SHUTDOWN ||
	    vm->state == VM_CRASHED) {
		call_error(call, E_BAD_STATE, 0, "%s is %s", vm->name,
		    vm_state_name(vm));
		return NULL;
	}
	return vm;
}

static struct dev_job *
dev_job_new(struct call *call, struct vm *vm, bool attach,
    enum vmb_device_kind kind)
{
	struct dev_job *j = calloc(1, sizeof(*j));

	if (!j) {
		call_error(call, RPC_INTERNAL_ERROR, ENOMEM, "out of memory");
		return NULL;
	}
	j->call = call;
	j->vm = vm;
	j->attach = attach;
	j->kind = kind;
	j->domid = vm->domid;
	memcpy(j->uuid, vm->uuid, 16);
	j->timeout_ms = CONNECT_TIMEOUT_DEFAULT * 1000;
	return j;
}

/*
 * The VM's guest with the job's device added or taken out, into
 * j->guest; 0, -ENOSPC or -ENOMEM.  A guest of a record before
 * hot-plug has that device list from now on (guestjson.h).
 */
static int
dev_job_guest(struct dev_job *j)
{
	struct vmb_guest *g = j->guest;
	int rc;

	g->flags &= ~(j->kind == VMB_DEVICE_DISK ? GUESTJSON_NO_DISKS :
	    GUESTJSON_NO_VIFS);
	if (j->kind == VMB_DEVICE_DISK)
		rc = j->attach ? vmb_guest_add_disk(g, &j->disk) :
		    vmb_guest_remove_disk(g, j->devid);
	else
		rc = j->attach ? vmb_guest_add_nic(g, &j->nic) :
		    vmb_guest_remove_nic(g, j->devid);
	return rc == -ENOENT ? 0 : rc;
}

/* The record as it will be once the job succeeds; then spawn it. */
static int
dev_job_start(struct call *call, struct dev_job *j)
{
	struct vm *vm = j->vm;
	int rc;

	if (vm->guest == NULL) {
		dev_job_free(j);
		return call_error(call, E_BAD_STATE, 0, "%s: its configuration "
		    "could not be read from its record: its devices are not "
		    "known", vm->name);
	}
	if ((rc = vmb_guest_copy(vm->guest, &j->guest)) == 0 &&
	    (rc = dev_job_guest(j)) == -ENOSPC) {
		rc = call_error(call, E_BAD_STATE, ENOSPC, "%s has as many "
		    "%s as it may", vm->name, j->kind == VMB_DEVICE_DISK ?
		    "disks" : "vifs");
		dev_job_free(j);
		return rc;
	}
	if (rc < 0 || vm_record(vm, j->guest, &j->rec) < 0) {
		dev_job_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, ENOMEM,
		    "out of memory");
	}
	j->job.run = dev_run;
	j->job.done = dev_done;
	vm->busy = true;
	if (worker_spawn(&j->job) < 0) {
		vm->busy = false;
		dev_job_free(j);
		return call_error(call, RPC_INTERNAL_ERROR, EAGAIN,
		    "cannot start a thread");
	}
	return CALL_DEFERRED;
}

/* params.timeout: seconds for the guest to connect its frontend. */
static int
param_timeout(struct call *call, struct dev_job *j)
{
	uint64_t t;
	int rc = param_u64(call, P_TIMEOUT, false, &t);

	if (rc < 0)
		return -1;
	if (rc > 0 && t > CONNECT_TIMEOUT_MAX)
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s: at "
		    "most %d seconds", P_TIMEOUT, CONNECT_TIMEOUT_MAX);
	if (rc > 0)
		j->timeout_ms = (uint32_t)t * 1000;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The methods                                                         */

int
m_vm_disk_attach(struct call *call, yajl_gen g)
{
	struct vmb_diags diags = { 0 };
	struct dev_job *j;
	const char *spec;
	struct vm *vm;

	(void)g;
	if (param_string(call, P_DISK, true, &spec) < 0 ||
	    (vm = dev_vm(call)) == NULL || !(j = dev_job_new(call, vm, true,
	    VMB_DEVICE_DISK)))
		return -1;
	if (param_timeout(call, j) < 0)
		goto fail;
	/* The daemon has no working directory of the client's. */
	if (vmb_disk_parse(spec, "request", 0, &j->disk, &diags) != 0 ||
	    vmb_disk_check(&j->disk, NULL, "request", &diags) != 0) {
		config_error(call, &diags);
		goto fail;
	}
	if (j->disk.target[0] != '/') {
		call_error(call, RPC_INVALID_PARAMS, 0, "params.disk: the "
		    "target must be an absolute path");
		goto fail;
	}
	if (check_disk(call, &j->disk) < 0 ||
	    check_vm_scripts(call, vm, j->disk.script) < 0)
		goto fail;
	if (find_disk(vm, NULL, j->disk.devid)) {
		call_error(call, E_EXISTS, EEXIST, "%s has a disk with vbd %u "
		    "already (%s)", vm->name, j->disk.devid, j->disk.vdev);
		goto fail;
	}
	j->devid = j->disk.devid;
	snprintf(j->label, sizeof(j->label), "%s", j->disk.vdev);
	vmb_diags_done(&diags);
	return dev_job_start(call, j);
fail:
	vmb_diags_done(&diags);
	dev_job_free(j);
	return -1;
}

int
m_vm_net_attach(struct call *call, yajl_gen g)
{
	struct vmb_diags diags = { 0 };
	struct dev_job *j;
	const char *spec = "";
	uint32_t devid = 0;
	struct vm *vm;
	uint8_t mac[6];
	char macs[18];

	(void)g;
	if (param_string(call, P_VIF, false, &spec) < 0 ||
	    (vm = dev_vm(call)) == NULL || !(j = dev_job_new(call, vm, true,
	    VMB_DEVICE_NIC)))
		return -1;
	if (param_timeout(call, j) < 0)
		goto fail;
	/* As xl: the lowest devid free, unless devid= says. */
	while (find_nic(vm, NULL, devid))
		devid++;
	if (vmb_nic_parse(spec ? spec : "", devid, 0, "request", 0, &j->nic,
	    &diags) != 0) {
		config_error(call, &diags);
		goto fail;
	}
	if (check_nic(call, &j->nic) < 0 ||
	    check_vm_scripts(call, vm, j->nic.script) < 0)
		goto fail;
	if (find_nic(vm, NULL, j->nic.devid)) {
		call_error(call, E_EXISTS, EEXIST, "%s has a vif %u already",
		    vm->name, j->nic.devid);
		goto fail;
	}
	j->devid = j->nic.devid;
	snprintf(j->label, sizeof(j->label), "%u", j->devid);
	vmb_nic_mac(vm->uuid, &j->nic, mac);
	snprintf(macs, sizeof(macs), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0],
	    mac[1], mac[2], mac[3], mac[4], mac[5]);
	if (find_nic(vm, macs, -1)) {
		call_error(call, E_EXISTS, EEXIST, "%s has a vif with that MAC "
		    "already", vm->name);
		goto fail;
	}
	vmb_diags_done(&diags);
	return dev_job_start(call, j);
fail:
	vmb_diags_done(&diags);
	dev_job_free(j);
	return -1;
}

/*
 * disk-detach: params.disk a vdev ("xvdb") or a vbd number; net-detach:
 * params.vif a devid or a MAC.  Either as a string or an integer.
 */
static int
detach(struct call *call, enum vmb_device_kind kind)
{
	const char *key = kind == VMB_DEVICE_DISK ? P_DISK : P_VIF;
	yajl_val v = jv_get(call->params, key);
	const struct vmb_disk *disk = NULL;
	const struct vmb_nic *nic = NULL;
	const char *s = NULL;
	long long devid = -1;
	struct dev_job *j;
	struct vm *vm;
	uint32_t num;
	bool force = false;

	if (YAJL_IS_INTEGER(v)) {
		devid = YAJL_GET_INTEGER(v);
	} else if (YAJL_IS_STRING(v)) {
		s = v->u.string;
		if (kind == VMB_DEVICE_DISK && vmb_vdev_number(s, &num) == 0)
			devid = num;
		else if (kind == VMB_DEVICE_NIC && s[0] >= '0' && s[0] <= '9' &&
		    strspn(s, "0123456789") == strlen(s))
			devid = strtoll(s, NULL, 10);
	} else {
		return call_error(call, RPC_INVALID_PARAMS, 0, "params.%s is "
		    "required: %s", key, kind == VMB_DEVICE_DISK ? "a vdev "
		    "(\"xvdb\") or a vbd number" : "a devid or a MAC");
	}
	if (param_bool(call, P_FORCE, &force) < 0 ||
	    (vm = dev_vm(call)) == NULL)
		return -1;
	if (kind == VMB_DEVICE_DISK)
		disk = find_disk(vm, s, devid);
	else
		nic = find_nic(vm, s, devid);
	if (!disk && !nic)
		return call_error(call, E_NO_SUCH_DEVICE, ENOENT, "%s has no "
		    "%s %s", vm->name, kind == VMB_DEVICE_DISK ? "disk" : "vif",
		    s ? s : "with that number");
	if (!(j = dev_job_new(call, vm, false, kind)))
		return -1;
	j->devid = disk ? disk->devid : nic->devid;
	j->force = force;
	if (disk)
		snprintf(j->label, sizeof(j->label), "%s", disk->vdev);
	else
		snprintf(j->label, sizeof(j->label), "%u", j->devid);
	return dev_job_start(call, j);
}

int
m_vm_disk_detach(struct call *call, yajl_gen g)
{
	(void)g;
	return detach(call, VMB_DEVICE_DISK);
}

int
m_vm_net_detach(struct call *call, yajl_gen g)
{
	(void)g;
	return detach(call, VMB_DEVICE_NIC);
}
