/*
 * device.c - a guest's disks and vifs on the backend: the build's
 * devices phase (all of them, before the first unpause, as libxl adds
 * them in domcreate) and hot-plug on a running domain (xl
 * block-attach, network-attach, block-detach, network-detach).
 *
 * The backend does the work (xen/xen_dev.c); a backend without device
 * ops (hvsim, which has no I/O) leaves the devices recorded in the
 * guest description only, and every call here succeeds.
 */
#include <errno.h>
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

int
vmb__devices_setup(struct vmb_ctx *ctx, uint32_t domid,
    const uint8_t uuid[16], const struct vmb_guest *g, uint32_t *ret_disks,
    uint32_t *ret_nics, char *why, size_t why_len)
{
	const struct vmb_backend_ops *ops = ctx->ops;
	struct vmb_dev v;
	int rc;

	*ret_disks = *ret_nics = 0;
	if (!ops->device_add)
		return 0;
	for (uint32_t i = 0; i < g->nr_disks; i++) {
		dev_disk(ctx, &v, &g->disks[i], 0);
		rc = ops->device_add(ctx->priv, domid, &v, why, why_len);
		if (rc)
			return rc;
		*ret_disks = i + 1;
	}
	for (uint32_t i = 0; i < g->nr_nics; i++) {
		dev_nic(ctx, &v, uuid, &g->nics[i], 0);
		rc = ops->device_add(ctx->priv, domid, &v, why, why_len);
		if (rc)
			return rc;
		*ret_nics = i + 1;
	}
	return 0;
}

void
vmb__devices_undo(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *g, uint32_t nr_disks, uint32_t nr_nics)
{
	const struct vmb_backend_ops *ops = ctx->ops;

	if (!ops->device_remove)
		return;
	while (nr_nics > 0) {
		nr_nics--;
		(void)ops->device_remove(ctx->priv, domid, VMB_DEVICE_NIC,
		    g->nics[nr_nics].devid, true, ctx->hotplug_ms / 4, NULL, 0);
	}
	while (nr_disks > 0) {
		nr_disks--;
		(void)ops->device_remove(ctx->priv, domid, VMB_DEVICE_DISK,
		    g->disks[nr_disks].devid, true, ctx->hotplug_ms / 4, NULL, 0);
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
