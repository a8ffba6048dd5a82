/*
 * device.c - a guest's disks and vifs on the backend: the build's
 * devices phase (all of them, side by side, before the first unpause,
 * as libxl adds them in domcreate) and hot-plug on a running domain (xl
 * block-attach, network-attach, block-detach, network-detach).
 *
 * The backend does the work (xen/xen_dev.c); a backend without device
 * ops (hvsim, which has no I/O) leaves the devices recorded in the
 * guest description only, and every call here succeeds.
 *
 * Not every disk is the PV block backend's (vmb__disk_pv): an HVM
 * guest's CD-ROM and qcow2 image are its device model's only.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* The limits: the script's as configured, the backend's a quarter. */
static void
dev_limits(struct vmb_ctx *ctx, struct vmb_dev *v, uint32_t connect_ms)
{
	v->hotplug_ms = ctx->hotplug_ms;
	v->initwait_ms = ctx->hotplug_ms / 4;
	v->close_ms = ctx->hotplug_ms / 4;
	v->connect_ms = connect_ms;
	v->hotplug_scripts = ctx->hotplug_scripts;
}

static void
dev_disk(struct vmb_ctx *ctx, struct vmb_dev *v, const struct vmb_disk *disk,
    uint32_t connect_ms)
{
	memset(v, 0, sizeof(*v));
	v->kind = VMB_DEVICE_DISK;
	v->devid = disk->devid;
	v->disk = disk;
	dev_limits(ctx, v, connect_ms);
}

static void
dev_nic(struct vmb_ctx *ctx, struct vmb_dev *v, const uint8_t uuid[16],
    const struct vmb_nic *nic, uint32_t connect_ms)
{
	memset(v, 0, sizeof(*v));
	v->kind = VMB_DEVICE_NIC;
	v->devid = nic->devid;
	v->nic = nic;
	vmb_nic_mac(uuid, nic, v->mac);
	dev_limits(ctx, v, connect_ms);
}

/*
 * The devices of a build are set up side by side, as libxl's multidev
 * does: each waits for its backend and its hotplug script (forks of a
 * shell script: seconds each, tens of seconds on a loaded dom0), and a
 * guest with a disk and a vif paid the sum of both.  At most
 * DEV_PARALLEL at a time, on the context's thread pool; the backend's
 * device ops take its xenstore lock themselves.
 */
#define DEV_PARALLEL	16

/*
 * The caller's `visible` hook: called once, when every device's entries
 * are written (or the device is done with, failed or not), so that the
 * build may unpause the guest while the slow part (the backend to
 * InitWait, the hotplug scripts) goes on.
 */
struct dev_gate {
	atomic_size_t	pending;	/* devices not yet entered */
	void		(*visible)(void *arg);
	void		*arg;
};

struct dev_job {
	struct vmb_ctx	*ctx;
	uint32_t	domid;
	struct vmb_dev	v;
	bool		remove;		/* undo: take it away (force) */
	int		rc;
	char		why[256];
	struct dev_gate	*gate;		/* setup only; NULL: none */
	atomic_bool	entered;	/* counted in the gate */
	struct vmb_dev_times times;	/* the backend's, for the log */
};

bool
vmb__disk_pv(const struct vmb_disk *d)
{
	/*
	 * As libxl 4.17 gives an HVM guest's disks (libxl_dm.c, and
	 * libxl__device_disk_set_backend): a raw disk both to the device
	 * model and to blkback, whose PV drivers take it over; a qcow2
	 * image to QEMU only (blkback reads raw; libxl's PV path for it
	 * is QEMU's qdisk, which vmbuild does not run); a CD-ROM emulated
	 * only (a drive with or without a disc, not a block device).
	 */
	return !d->cdrom && d->format == VMB_DISK_RAW;
}

/* The device's entries are there, or it is done with: count it once. */
static void
dev_entered(void *arg)
{
	struct dev_job *j = arg;

	if (!j->gate || atomic_exchange(&j->entered, true))
		return;
	if (atomic_fetch_sub(&j->gate->pending, 1) == 1 && j->gate->visible)
		j->gate->visible(j->gate->arg);
}

static void
dev_job_run(void *arg)
{
	struct dev_job *j = arg;
	const struct vmb_backend_ops *ops = j->ctx->ops;

	j->rc = 0;
	if (j->v.kind == VMB_DEVICE_DISK && !vmb__disk_pv(j->v.disk))
		goto out;	/* the device model's only: nothing here */
	if (j->remove) {
		j->rc = ops->device_remove(j->ctx->priv, j->domid, j->v.kind,
		    j->v.devid, true, j->ctx->hotplug_ms / 4, j->why,
		    sizeof(j->why));
	} else {
		uint64_t t0 = vmb__now_ns();

		j->v.entered = dev_entered;
		j->v.entered_arg = j;
		j->v.times = &j->times;
		j->rc = ops->device_add(j->ctx->priv, j->domid, &j->v, j->why,
		    sizeof(j->why));
		/* Where a slow create's devices spent it, per device. */
		if (j->rc == 0)
			vmb__log(j->ctx, "domain %u: %s %s%s: up in %.2f s "
			    "(entries %.2f, backend %.2f, hotplug script "
			    "%.2f s)", j->domid, j->v.kind == VMB_DEVICE_DISK ?
			    "disk" : "vif", j->v.kind == VMB_DEVICE_DISK ?
			    j->v.disk->vdev : "on ", j->v.kind ==
			    VMB_DEVICE_DISK ? "" : j->v.nic->bridge,
			    (vmb__now_ns() - t0) / 1e9,
			    j->times.entries_ns / 1e9,
			    j->times.initwait_ns / 1e9,
			    j->times.script_ns / 1e9);
	}
out:
	dev_entered(j);
}

/* Run the jobs, DEV_PARALLEL at a time; one of each wave on this thread. */
static void
dev_jobs_run(struct vmb_ctx *ctx, struct dev_job *jobs, size_t n)
{
	struct vmb__task tasks[DEV_PARALLEL];

	for (size_t at = 0; at < n; at += DEV_PARALLEL) {
		size_t k = n - at < DEV_PARALLEL ? n - at : DEV_PARALLEL;

		for (size_t i = 1; i < k; i++) {
			memset(&tasks[i - 1], 0, sizeof(tasks[i - 1]));
			tasks[i - 1].fn = dev_job_run;
			tasks[i - 1].arg = &jobs[at + i];
		}
		/* No thread to be had: one after the other, here. */
		if (vmb__tpool_run(ctx->pool, tasks, k - 1, dev_job_run,
		    &jobs[at]) != 0)
			for (size_t i = 0; i < k; i++)
				dev_job_run(&jobs[at + i]);
	}
}

/* The guest's disks, then its vifs, as jobs (NULL: out of memory). */
static struct dev_job *
dev_jobs(struct vmb_ctx *ctx, uint32_t domid, const uint8_t uuid[16],
    const struct vmb_guest *g, uint32_t nr_disks, uint32_t nr_nics,
    bool remove)
{
	struct dev_job *jobs = calloc((size_t)nr_disks + nr_nics + 1,
	    sizeof(*jobs));

	if (!jobs)
		return NULL;
	for (uint32_t i = 0; i < nr_disks; i++)
		dev_disk(ctx, &jobs[i].v, &g->disks[i], 0);
	for (uint32_t i = 0; i < nr_nics; i++) {
		if (uuid)
			dev_nic(ctx, &jobs[nr_disks + i].v, uuid, &g->nics[i],
			    0);
		else {
			jobs[nr_disks + i].v.kind = VMB_DEVICE_NIC;
			jobs[nr_disks + i].v.devid = g->nics[i].devid;
		}
	}
	for (size_t i = 0; i < (size_t)nr_disks + nr_nics; i++) {
		jobs[i].ctx = ctx;
		jobs[i].domid = domid;
		jobs[i].remove = remove;
	}
	return jobs;
}

int
vmb__devices_setup(struct vmb_ctx *ctx, uint32_t domid,
    const uint8_t uuid[16], const struct vmb_guest *g, uint32_t *ret_disks,
    uint32_t *ret_nics, void (*visible)(void *arg), void *visible_arg,
    char *why, size_t why_len)
{
	size_t n = (size_t)g->nr_disks + g->nr_nics;
	struct dev_gate gate = { .visible = visible, .arg = visible_arg };
	struct dev_job *jobs;
	int rc = 0;

	*ret_disks = *ret_nics = 0;
	if (!ctx->ops->device_add || n == 0) {
		if (visible)
			visible(visible_arg);
		return 0;
	}
	jobs = dev_jobs(ctx, domid, uuid, g, g->nr_disks, g->nr_nics, false);
	if (!jobs) {
		if (visible)
			visible(visible_arg);
		return -ENOMEM;
	}
	atomic_init(&gate.pending, n);
	for (size_t i = 0; i < n; i++)
		jobs[i].gate = &gate;
	/* Every one tried: undo takes them all (see vmb__devices_undo). */
	*ret_disks = g->nr_disks;
	*ret_nics = g->nr_nics;
	dev_jobs_run(ctx, jobs, n);
	/* The first failure in the guest's order names the build's. */
	for (size_t i = 0; i < n; i++)
		if (jobs[i].rc) {
			rc = jobs[i].rc;
			vmb__why(why, why_len, "%s", jobs[i].why);
			break;
		}
	free(jobs);
	return rc;
}

/*
 * A device whose setup failed took itself back: its removal finds no
 * backend and does nothing, so undo may be given every device tried.
 */
void
vmb__devices_undo(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *g, uint32_t nr_disks, uint32_t nr_nics)
{
	struct dev_job *jobs;

	if (!ctx->ops->device_remove || nr_disks + nr_nics == 0)
		return;
	jobs = dev_jobs(ctx, domid, NULL, g, nr_disks, nr_nics, true);
	if (jobs) {
		dev_jobs_run(ctx, jobs, (size_t)nr_disks + nr_nics);
		free(jobs);
		return;
	}
	/* No memory for the jobs: one by one, last first. */
	while (nr_nics > 0) {
		nr_nics--;
		(void)ctx->ops->device_remove(ctx->priv, domid, VMB_DEVICE_NIC,
		    g->nics[nr_nics].devid, true, ctx->hotplug_ms / 4, NULL, 0);
	}
	while (nr_disks > 0) {
		nr_disks--;
		if (!vmb__disk_pv(&g->disks[nr_disks]))
			continue;
		(void)ctx->ops->device_remove(ctx->priv, domid,
		    VMB_DEVICE_DISK, g->disks[nr_disks].devid, true,
		    ctx->hotplug_ms / 4, NULL, 0);
	}
}

int
vmb_disk_attach(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_disk *disk, uint32_t timeout_ms, char *why,
    size_t why_len)
{
	struct vmb_dev v;

	if (!ctx || !disk || !disk->target || domid == 0 ||
	    domid >= VMB_DOMID_INVALID)
		return -EINVAL;
	if (!ctx->ops->device_add)
		return 0;
	dev_disk(ctx, &v, disk, timeout_ms);
	return ctx->ops->device_add(ctx->priv, domid, &v, why, why_len);
}

int
vmb_nic_attach(struct vmb_ctx *ctx, uint32_t domid, const uint8_t uuid[16],
    const struct vmb_nic *nic, uint32_t timeout_ms, char *why,
    size_t why_len)
{
	struct vmb_dev v;

	if (!ctx || !nic || !uuid || domid == 0 || domid >= VMB_DOMID_INVALID)
		return -EINVAL;
	if (!ctx->ops->device_add)
		return 0;
	dev_nic(ctx, &v, uuid, nic, timeout_ms);
	return ctx->ops->device_add(ctx->priv, domid, &v, why, why_len);
}

int
vmb_device_detach(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_device_kind kind, uint32_t devid, bool force, char *why,
    size_t why_len)
{
	if (!ctx || domid == 0 || domid >= VMB_DOMID_INVALID ||
	    (kind != VMB_DEVICE_DISK && kind != VMB_DEVICE_NIC))
		return -EINVAL;
	if (!ctx->ops->device_remove)
		return 0;
	return ctx->ops->device_remove(ctx->priv, domid, kind, devid, force,
	    ctx->hotplug_ms / 4, why, why_len);
}
