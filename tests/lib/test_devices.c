/*
 * test_devices.c - which of a guest's disks the build offers the PV
 * block backend (libvmbuild/device.c), against a backend whose device
 * ops only record what they were asked.
 *
 * As libxl gives an HVM guest's disks: a raw disk both to the device
 * model and to blkback, a qcow2 image and a CD-ROM (with a disc or
 * without) to the device model only.  The undo takes away exactly what
 * the setup offered.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmb_internal.h"

#define MAXREC	16

static struct {
	uint32_t	added[MAXREC], removed[MAXREC];	/* kind << 16 | devid */
	unsigned	nadded, nremoved;
	pthread_mutex_t	lock;
} rec = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int
fake_add(void *priv, uint32_t domid, const struct vmb_dev *v, char *why,
    size_t len)
{
	(void)priv;
	(void)domid;
	(void)why;
	(void)len;
	pthread_mutex_lock(&rec.lock);
	if (rec.nadded < MAXREC)
		rec.added[rec.nadded++] = (uint32_t)v->kind << 16 | v->devid;
	pthread_mutex_unlock(&rec.lock);
	return 0;
}

static int
fake_remove(void *priv, uint32_t domid, enum vmb_device_kind kind,
    uint32_t devid, bool force, uint32_t ms, char *why, size_t len)
{
	(void)priv;
	(void)domid;
	(void)force;
	(void)ms;
	(void)why;
	(void)len;
	pthread_mutex_lock(&rec.lock);
	if (rec.nremoved < MAXREC)
		rec.removed[rec.nremoved++] = (uint32_t)kind << 16 | devid;
	pthread_mutex_unlock(&rec.lock);
	return 0;
}

static const struct vmb_backend_ops fake_ops = {
	.name = "fake",
	.device_add = fake_add,
	.device_remove = fake_remove,
};

static bool
has(const uint32_t *v, unsigned n, enum vmb_device_kind kind, uint32_t devid)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == ((uint32_t)kind << 16 | devid))
			return true;
	return false;
}

/* hda raw, hdb qcow2, hdc a CD-ROM with an ISO, hdd an empty one, xvde raw. */
static struct vmb_guest *
hvm_guest(void)
{
	static const struct {
		const char *vdev;
		enum vmb_disk_format fmt;
		bool cdrom;
		const char *target;
	} d[] = {
		{ "hda", VMB_DISK_RAW, false, "/srv/root.img" },
		{ "hdb", VMB_DISK_QCOW2, false, "/srv/data.qcow2" },
		{ "hdc", VMB_DISK_RAW, true, "/srv/install.iso" },
		{ "hdd", VMB_DISK_EMPTY, true, NULL },
		{ "xvde", VMB_DISK_RAW, false, "/srv/pv.img" },
	};
	struct vmb_guest *g = NULL;

	assert_int_equal(vmb_guest_new(&g), 0);
	g->type = VMB_GUEST_HVM;
	g->nr_disks = sizeof(d) / sizeof(d[0]);
	g->disks = calloc(g->nr_disks, sizeof(*g->disks));
	assert_non_null(g->disks);
	for (uint32_t i = 0; i < g->nr_disks; i++) {
		snprintf(g->disks[i].vdev, sizeof(g->disks[i].vdev), "%s",
		    d[i].vdev);
		g->disks[i].devid = 768 + 64 * i;
		g->disks[i].format = d[i].fmt;
		g->disks[i].cdrom = d[i].cdrom;
		g->disks[i].readonly = d[i].cdrom;
		g->disks[i].target = d[i].target ? strdup(d[i].target) : NULL;
	}
	g->nr_nics = 1;
	g->nics = calloc(1, sizeof(*g->nics));
	assert_non_null(g->nics);
	g->nics[0].devid = 0;
	return g;
}

static void
test_pv_offer(void **state)
{
	struct vmb_ctx ctx = { .ops = &fake_ops, .hotplug_ms = 1000 };
	static const uint8_t uuid[16] = { 1 };
	struct vmb_guest *g = hvm_guest();
	uint32_t nd = 0, nn = 0;
	char why[256] = "";

	(void)state;
	assert_int_equal(vmb__tpool_new(&ctx.pool), 0);
	assert_int_equal(vmb__devices_setup(&ctx, 7, uuid, g, &nd, &nn, NULL, NULL, why,
	    sizeof(why)), 0);
	/* The raw disks and the vif; not the qcow2 image, not the CD-ROMs. */
	assert_int_equal(rec.nadded, 3);
	assert_true(has(rec.added, rec.nadded, VMB_DEVICE_DISK, 768));
	assert_true(has(rec.added, rec.nadded, VMB_DEVICE_DISK, 768 + 256));
	assert_true(has(rec.added, rec.nadded, VMB_DEVICE_NIC, 0));
	assert_false(has(rec.added, rec.nadded, VMB_DEVICE_DISK, 768 + 64));
	assert_false(has(rec.added, rec.nadded, VMB_DEVICE_DISK, 768 + 128));
	assert_false(has(rec.added, rec.nadded, VMB_DEVICE_DISK, 768 + 192));
	/* The undo takes away what was offered, and nothing else. */
	vmb__devices_undo(&ctx, 7, g, nd, nn);
	assert_int_equal(rec.nremoved, 3);
	for (unsigned i = 0; i < rec.nadded; i++)
		assert_true(has(rec.removed, rec.nremoved,
		    (enum vmb_device_kind)(rec.added[i] >> 16),
		    rec.added[i] & 0xffff));
	vmb__tpool_free(ctx.pool);
	vmb_guest_free(g);
}

static void
test_disk_pv(void **state)
{
	struct vmb_disk d = { .format = VMB_DISK_RAW };

	(void)state;
	assert_true(vmb__disk_pv(&d));
	d.format = VMB_DISK_QCOW2;
	assert_false(vmb__disk_pv(&d));
	d.format = VMB_DISK_RAW;
	d.cdrom = true;
	assert_false(vmb__disk_pv(&d));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pv_offer),
		cmocka_unit_test(test_disk_pv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
