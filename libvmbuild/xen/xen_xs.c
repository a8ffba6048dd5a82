/*
 * xen_xs.c - the xenstore entries a toolstack owes a domain, written the
 * way libxl writes them for a minimal PVH domain (libxl__domain_make,
 * libxl__build_post, the primary console), and removed at destroy.
 *
 * Two steps, each one transaction retried on EAGAIN:
 *   - at create: /local/domain/N and /vm/<uuid> (owned by dom0, readable
 *     by the domain), /libxl/N (dom0's only: the domain type, as libxl
 *     has it, so xl and its tools read a vmbuild domain as PVH), name,
 *     vm, domid, and the directories and control nodes the guest may
 *     write; and dom0's libxl/disable_udev (the hotplug scripts are
 *     vmbuild's to run, not udev's);
 *   - at boot: memory, store and console rings and ports, the primary
 *     console as a device (its frontend, xenconsoled's backend directory
 *     and libxl's copy under /libxl/N/device/console/0, as
 *     libxl__device_console_add writes them), vCPU availability and the
 *     start time; then xs_introduce_domain.
 * Besides, the PV control node (control/shutdown, as xl shutdown and
 * reboot use it; the guest's own, so never in a transaction) and the
 * console's pty (console/tty, which xenconsoled writes and xl console
 * reads; trusted only if no guest may write it).
 *
 * What a guest may write (its frontends, control/, data/...) never
 * names a script, a path or a domain here or in xen_dev.c: those come
 * from dom0's own nodes (/libxl/N, the backend directories) or from
 * the request; tests/xenbe checks every read of a guest's node.
 * The handle is shared by worker threads: every function holds
 * be->xs_lock for its whole use of it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "xen_priv.h"

#define XS_RETRIES	16	/* transactions lost to concurrent writers */
/* libxl's LIBXL_XENCONSOLE_LIMIT and _PROTOCOL. */
#define XS_CONSOLE_LIMIT	1048576
#define XS_CONSOLE_PROTOCOL	"vt100"
#define XS_STATE_INITIALISING	"1"	/* XenbusStateInitialising */

static void
tx_fail(struct xs_tx *tx)
{
	if (tx->err == 0)
		tx->err = -(errno > 0 ? errno : EIO);
}

static void __attribute__((format(printf, 3, 4)))
tx_path(struct xs_tx *tx, char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, XS_PATH_MAX, fmt, ap);
	va_end(ap);
	if ((n < 0 || n >= XS_PATH_MAX) && tx->err == 0)
		tx->err = -ENAMETOOLONG;
}

/* Write `value` at base/rel with perms (NULL: inherit from the parent). */
static void
tx_write(struct xs_tx *tx, const char *base, const char *rel,
    const char *value, struct xs_permissions *perms, unsigned nperms)
{
	char path[XS_PATH_MAX];

	if (tx->err != 0)
		return;
	tx_path(tx, path, "%s%s%s", base, rel[0] ? "/" : "", rel);
	if (tx->err != 0)
		return;
	if (tx->w != NULL) {
		/* Queued: a failure shows at the next flush. */
		if (value == NULL)
			xen_xsw_mkdir(tx->w, (uint32_t)tx->t, path);
		else
			xen_xsw_write(tx->w, (uint32_t)tx->t, path, value,
			    strlen(value));
		if (perms != NULL)
			xen_xsw_set_perms(tx->w, (uint32_t)tx->t, path, perms,
			    nperms);
		return;
	}
	if (value == NULL) {
		if (!xs_mkdir(tx->h, tx->t, path))
			tx_fail(tx);
	} else if (!xs_write(tx->h, tx->t, path, value, strlen(value)))
		tx_fail(tx);
	if (tx->err == 0 && perms != NULL &&
	    !xs_set_permissions(tx->h, tx->t, path, perms, nperms))
		tx_fail(tx);
}

/* Remove path; flags XSW_IGNORE_*: which failures do not count. */
static void
tx_rm(struct xs_tx *tx, const char *path, unsigned flags)
{
	if (tx->err != 0)
		return;
	if (tx->w != NULL) {
		xen_xsw_rm(tx->w, (uint32_t)tx->t, path, flags);
		return;
	}
	if (!xs_rm(tx->h, tx->t, path) && !(flags & XSW_IGNORE_ERR) &&
	    !(errno == ENOENT && (flags & XSW_IGNORE_ENOENT)))
		tx_fail(tx);
}

/*
 * Read path (NULL and errno when it is not there, or the transaction
 * failed already).  Pipelined, what is queued goes first: its failure
 * is tx->err.
 */
static char *
tx_read(struct xs_tx *tx, const char *path, unsigned *len)
{
	char *v = NULL;
	int rc, last = 0;

	if (tx->err != 0) {
		errno = -tx->err;
		return NULL;
	}
	if (tx->w == NULL)
		return xs_read(tx->h, tx->t, path, len);
	xen_xsw_read(tx->w, (uint32_t)tx->t, path);
	rc = xen_xsw_flush(tx->w, &v, len, &last);
	if (rc != 0) {
		tx->err = rc;
		errno = -rc;
		return NULL;
	}
	if (v == NULL)
		errno = last ? -last : EIO;
	return v;
}

static void __attribute__((format(printf, 4, 5)))
tx_writef(struct xs_tx *tx, const char *base, const char *rel,
    const char *fmt, ...)
{
	char value[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(value)) {
		if (tx->err == 0)
			tx->err = -EOVERFLOW;
		return;
	}
	tx_write(tx, base, rel, value, NULL, 0);
}

static void
tx_init(struct xs_tx *tx, struct xen_be *be, uint32_t domid)
{
	memset(tx, 0, sizeof(*tx));
	tx->h = be->xsh;
	tx->ro[0].id = 0;
	tx->ro[0].perms = XS_PERM_NONE;
	tx->ro[1].id = domid;
	tx->ro[1].perms = XS_PERM_READ;
	tx->rw[0].id = domid;
	tx->rw[0].perms = XS_PERM_NONE;
	tx->no[0].id = 0;
	tx->no[0].perms = XS_PERM_NONE;
}

/*
 * One try of `fill` in a transaction on be->xsw, its requests
 * pipelined: start, fill (a flush at each read it makes), end (with
 * the rest).  A failure of the connection itself (-EPIPE, -EPROTO)
 * is the caller's to handle: xenstored dropped what it had of the
 * transaction with the connection.
 */
static int
xs_try_wire(struct xen_be *be, uint32_t domid, xs_fill_fn *fill,
    const void *arg)
{
	struct xs_tx tx;
	uint32_t t;
	int rc;

	tx_init(&tx, be, domid);
	tx.w = be->xsw;
	rc = xen_xsw_start(tx.w, &t);
	if (rc)
		return rc;
	tx.t = t;
	fill(&tx, arg);
	rc = tx.err;
	if (rc == -EPIPE || rc == -EPROTO)
		return rc;
	if (rc) {
		(void)xen_xsw_end(tx.w, t, true);
		return rc;
	}
	/* The end flushes what is still queued, and aborts if it fails. */
	return xen_xsw_end(tx.w, t, false);
}

/*
 * Run `fill` in a transaction, retrying when another writer won:
 * pipelined on be->xsw where there is one and `wire` allows it (the
 * fill makes its calls through tx_write, tx_rm and tx_read), else
 * through libxenstore.  A connection that fails is dropped for good,
 * and this transaction run again through libxenstore.
 */
static int
xs_run_as(struct xen_be *be, uint32_t domid, xs_fill_fn *fill,
    const void *arg, bool wire)
{
	struct xs_tx tx;
	int i, rc = -EAGAIN;

	pthread_mutex_lock(&be->xs_lock);
	for (i = 0; wire && be->xsw != NULL && i < XS_RETRIES; i++) {
		rc = xs_try_wire(be, domid, fill, arg);
		if (rc == -EPIPE || rc == -EPROTO) {
			if (be->logger.vmessage != NULL)	/* tests have none */
				xtl_log(&be->logger, XTL_WARN, -1, "xenstore",
				    "the pipelined connection failed (%s): "
				    "one request at a time from now",
				    strerror(-rc));
			xen_xsw_free(be->xsw);
			be->xsw = NULL;
			break;
		}
		if (rc != -EAGAIN)
			goto out;
	}
	if (wire && be->xsw != NULL)
		goto out;	/* lost every try to other writers */
	for (i = 0, rc = -EAGAIN; i < XS_RETRIES; i++) {
		tx_init(&tx, be, domid);
		tx.t = xs_transaction_start(be->xsh);
		if (tx.t == XBT_NULL) {
			rc = -(errno > 0 ? errno : EIO);
			break;
		}
		fill(&tx, arg);
		if (tx.err != 0) {
			(void)xs_transaction_end(be->xsh, tx.t, true);
			rc = tx.err;
			break;
		}
		if (xs_transaction_end(be->xsh, tx.t, false)) {
			rc = 0;
			break;
		}
		if (errno != EAGAIN) {
			rc = -(errno > 0 ? errno : EIO);
			break;
		}
	}
out:
	pthread_mutex_unlock(&be->xs_lock);
	return rc;
}

static int
xs_run(struct xen_be *be, uint32_t domid, xs_fill_fn *fill, const void *arg)
{
	return xs_run_as(be, domid, fill, arg, true);
}

struct make_arg {
	uint32_t domid;
	const struct vmb_dom_config *cfg;
};

static void
fill_make(struct xs_tx *tx, const void *varg)
{
	const struct make_arg *a = varg;
	static const char *const rw_nodes[] = {
		"device/suspend/event-channel", "data", "drivers", "feature",
		"attr", "error", "control/shutdown", "control/feature-poweroff",
		"control/feature-reboot", "control/feature-suspend",
		"control/sysrq",
	};
	static const char *const ro_dirs[] = {
		"cpu", "memory", "device", "control",
	};
	char dom[XS_PATH_MAX], vm[XS_PATH_MAX], lx[XS_PATH_MAX], uuid[VMB_UUID_STRLEN];
	size_t i;

	vmb_uuid_to_str(a->cfg->uuid, uuid);
	tx_path(tx, dom, "/local/domain/%u", a->domid);
	tx_path(tx, vm, "/vm/%s", uuid);
	tx_path(tx, lx, "/libxl/%u", a->domid);
	if (tx->err != 0)
		return;
	/* Leftovers of an earlier domain with this id or uuid go first. */
	tx_rm(tx, dom, XSW_IGNORE_ERR);
	tx_rm(tx, vm, XSW_IGNORE_ERR);
	tx_rm(tx, lx, XSW_IGNORE_ERR);

	tx_write(tx, dom, "", NULL, tx->ro, 2);
	tx_write(tx, vm, "", NULL, tx->ro, 2);
	tx_write(tx, lx, "", NULL, tx->no, 1);
	tx_write(tx, lx, "device", NULL, tx->no, 1);
	tx_write(tx, lx, "type", a->cfg->hvm ? "hvm" : "pvh", NULL, 0);
	/*
	 * vmbuild runs the hotplug scripts itself (xen_dev.c): the ones a
	 * dom0 with Xen's udev rules would start too exit at once when they
	 * find this, which libxl wrote here (relative to dom0's home) with
	 * every domain while Xen shipped those rules.  dom0's own tree: no
	 * guest can take it away.
	 */
	tx_write(tx, "/local/domain/0/libxl", "disable_udev", "1", NULL, 0);
	tx_write(tx, dom, "vm", vm, NULL, 0);
	tx_write(tx, dom, "name", a->cfg->name, NULL, 0);
	tx_writef(tx, dom, "domid", "%u", a->domid);
	tx_write(tx, vm, "name", a->cfg->name, NULL, 0);
	tx_write(tx, vm, "uuid", uuid, NULL, 0);
	for (i = 0; i < sizeof(ro_dirs) / sizeof(ro_dirs[0]); i++)
		tx_write(tx, dom, ro_dirs[i], NULL, tx->ro, 2);
	for (i = 0; i < sizeof(rw_nodes) / sizeof(rw_nodes[0]); i++)
		tx_write(tx, dom, rw_nodes[i], "", tx->rw, 1);
	tx_write(tx, dom, "control/platform-feature-multiprocessor-suspend",
	    "1", tx->ro, 2);
	tx_write(tx, dom, "control/platform-feature-xs_reset_watches", "1",
	    tx->ro, 2);
}

int
xen_xs_domain_make(struct xen_be *be, uint32_t domid,
    const struct vmb_dom_config *cfg)
{
	struct make_arg a = { domid, cfg };

	return xs_run(be, domid, fill_make, &a);
}

/*
 * The primary console as a device, as libxl__device_console_add and
 * libxl__device_generic_add write it: the frontend (what xenconsoled
 * reads: ring-ref, port, type, limit; it writes tty), which for console
 * 0 only the backend may write ("which we don't want the guest fiddling
 * with"); xenconsoled's backend directory; and libxl's copy of the
 * backend entries under /libxl/N/device/console/0, which xl reads back
 * (and libxl__devices_destroy removes the backend by).
 */
static void
fill_console(struct xs_tx *tx, const struct xen_xs_boot *b, const char *dom)
{
	char front[XS_PATH_MAX], back[XS_PATH_MAX], lx[XS_PATH_MAX];
	const char *bdir[] = { back, lx };

	tx->be[0].id = b->console_domid;
	tx->be[0].perms = XS_PERM_NONE;
	tx->be[1].id = b->domid;
	tx->be[1].perms = XS_PERM_READ;
	tx_path(tx, front, "%s/console", dom);
	tx_path(tx, back, "/local/domain/%u/backend/console/%u/0",
	    b->console_domid, b->domid);
	tx_path(tx, lx, "/libxl/%u/device/console/0", b->domid);
	if (tx->err != 0)
		return;
	tx_rm(tx, back, XSW_IGNORE_ERR);
	tx_rm(tx, lx, XSW_IGNORE_ERR);
	tx_write(tx, lx, "", NULL, tx->no, 1);
	tx_write(tx, lx, "frontend", front, NULL, 0);
	tx_write(tx, lx, "backend", back, NULL, 0);
	tx_write(tx, front, "", NULL, tx->be, 2);
	tx_write(tx, front, "backend", back, NULL, 0);
	tx_writef(tx, front, "backend-id", "%u", b->console_domid);
	tx_writef(tx, front, "limit", "%d", XS_CONSOLE_LIMIT);
	tx_write(tx, front, "type", "xenconsoled", NULL, 0);
	tx_write(tx, front, "output", "pty", NULL, 0);
	tx_write(tx, front, "tty", "", NULL, 0);
	tx_writef(tx, front, "port", "%u", b->console_port);
	tx_writef(tx, front, "ring-ref", "%" PRIu64, b->console_gfn);
	tx_write(tx, back, "", NULL, tx->be, 2);
	tx_write(tx, back, "frontend", front, NULL, 0);
	for (size_t i = 0; i < sizeof(bdir) / sizeof(bdir[0]); i++) {
		tx_writef(tx, bdir[i], "frontend-id", "%u", b->domid);
		tx_write(tx, bdir[i], "online", "1", NULL, 0);
		tx_write(tx, bdir[i], "state", XS_STATE_INITIALISING, NULL, 0);
		tx_write(tx, bdir[i], "protocol", XS_CONSOLE_PROTOCOL, NULL, 0);
	}
}

static void
fill_boot(struct xs_tx *tx, const void *varg)
{
	const struct xen_xs_boot *b = varg;
	char dom[XS_PATH_MAX], path[XS_PATH_MAX], rel[64], *vm;
	struct timeval tv;
	unsigned len;
	uint32_t i;

	tx_path(tx, dom, "/local/domain/%u", b->domid);
	if (tx->err != 0)
		return;
	tx_writef(tx, dom, "memory/static-max", "%" PRIu64, b->static_max_kb);
	tx_writef(tx, dom, "memory/target", "%" PRIu64, b->target_kb);
	tx_writef(tx, dom, "memory/videoram", "%d", 0);
	tx_writef(tx, dom, "store/port", "%u", b->store_port);
	tx_writef(tx, dom, "store/ring-ref", "%" PRIu64, b->store_gfn);
	fill_console(tx, b, dom);
	for (i = 0; i < b->max_vcpus && tx->err == 0; i++) {
		snprintf(rel, sizeof(rel), "cpu/%u/availability", i);
		tx_write(tx, dom, rel, i < b->vcpus ? "online" : "offline",
		    NULL, 0);
	}
	tx_path(tx, path, "%s/vm", dom);
	if (tx->err != 0)
		return;
	vm = tx_read(tx, path, &len);
	if (vm == NULL) {
		tx_fail(tx);
		return;
	}
	gettimeofday(&tv, NULL);
	tx_writef(tx, vm, "start_time", "%lld.%02ld", (long long)tv.tv_sec,
	    (long)(tv.tv_usec / 10000));
	free(vm);
}

int
xen_xs_domain_boot(struct xen_be *be, const struct xen_xs_boot *xb)
{
	return xs_run(be, xb->domid, fill_boot, xb);
}

/*
 * The console's backend directory (in the console daemon's domain), as
 * libxl's copy under /libxl/N names it: dom0's own tree, which the guest
 * cannot write, checked to be the directory this layout writes.
 */
static void
remove_console_backend(struct xs_tx *tx, uint32_t domid)
{
	char path[XS_PATH_MAX], want[64], *back;
	unsigned len, cd;
	int n = -1;

	tx_path(tx, path, "/libxl/%u/device/console/0/backend", domid);
	if (tx->err != 0)
		return;
	back = tx_read(tx, path, &len);
	if (back == NULL)
		return;
	snprintf(want, sizeof(want), "/backend/console/%u/0", domid);
	if (sscanf(back, "/local/domain/%u%n", &cd, &n) == 1 && n > 0 &&
	    strcmp(back + n, want) == 0) {
		back[strlen(back) - 2] = '\0';	/* .../console/N */
		tx_rm(tx, back, XSW_IGNORE_ENOENT);
	}
	free(back);
	tx_path(tx, path, "/libxl/%u/device/console", domid);
	tx_rm(tx, path, XSW_IGNORE_ENOENT);
}

static void
fill_boot_undo(struct xs_tx *tx, const void *varg)
{
	const struct xen_xs_boot *b = varg;
	static const char *const rel[] = {
		"store", "console", "memory/static-max", "memory/target",
		"memory/videoram",
	};
	char path[XS_PATH_MAX];
	size_t i;
	uint32_t c;

	for (i = 0; i < sizeof(rel) / sizeof(rel[0]) && tx->err == 0; i++) {
		tx_path(tx, path, "/local/domain/%u/%s", b->domid, rel[i]);
		tx_rm(tx, path, XSW_IGNORE_ENOENT);
	}
	for (c = 0; c < b->max_vcpus && tx->err == 0; c++) {
		tx_path(tx, path, "/local/domain/%u/cpu/%u", b->domid, c);
		tx_rm(tx, path, XSW_IGNORE_ENOENT);
	}
	remove_console_backend(tx, b->domid);
}

/* Take back what xen_xs_domain_boot wrote (the create-time entries stay). */
void
xen_xs_domain_boot_undo(struct xen_be *be, const struct xen_xs_boot *xb)
{
	(void)xs_run(be, xb->domid, fill_boot_undo, xb);
}

int
xen_xs_introduce(struct xen_be *be, uint32_t domid, uint64_t store_gfn,
    uint32_t store_port)
{
	int rc = 0;

	pthread_mutex_lock(&be->xs_lock);
	if (!xs_introduce_domain(be->xsh, domid, store_gfn, store_port))
		rc = -(errno > 0 ? errno : EIO);
	pthread_mutex_unlock(&be->xs_lock);
	return rc;
}

static void
fill_remove(struct xs_tx *tx, const void *varg)
{
	const uint32_t *domid = varg;
	char dom[XS_PATH_MAX], path[XS_PATH_MAX], *vm;
	unsigned len;

	tx_path(tx, dom, "/local/domain/%u", *domid);
	tx_path(tx, path, "%s/vm", dom);
	if (tx->err != 0)
		return;
	remove_console_backend(tx, *domid);
	vm = tx_read(tx, path, &len);
	/* Only what this layout wrote: never a path outside /vm/. */
	if (vm != NULL && strncmp(vm, "/vm/", 4) == 0 && strlen(vm) > 4)
		tx_rm(tx, vm, XSW_IGNORE_ERR);
	free(vm);
	tx_rm(tx, dom, XSW_IGNORE_ENOENT);
	tx_path(tx, path, "/libxl/%u", *domid);
	tx_rm(tx, path, XSW_IGNORE_ENOENT);
	/* Its device model's directory in dom0's tree (xen_xs_dm_store). */
	tx_path(tx, path, "/local/domain/0/device-model/%u", *domid);
	tx_rm(tx, path, XSW_IGNORE_ENOENT);
}

struct dm_arg {
	uint32_t domid;
	const struct vmb_guest *g;
};

/* Below this much RAM under 4 GiB libxl tells hvmloader the hole. */
#define XS_BELOW_4G_MMIO_START	0xf0000000ull	/* HVM_BELOW_4G_MMIO_START */

/*
 * What libxl 4.17 writes for an HVM guest's qemu-xen, before spawning
 * it: hvmloader's firmware choice and no memory relocation
 * (libxl__spawn_local_dm), dom0's device-model/DOMID directory QEMU
 * writes its state to, /libxl/DOMID/dm-version (store_libxl_entry);
 * and libxl__build_post's HVM entries: platform/ (acpi, acpi_s3,
 * acpi_s4 and acpi_laptop_slate at libxl's defaults, the MMIO hole's
 * size when mmio_hole= asks for a larger one, the device model), and
 * the /vm entries rtc/timeoffset (no timeoffset= key: empty) and
 * image/ostype.  All inherit their parents' permissions, as libxl's.
 */
static void
fill_dm(struct xs_tx *tx, const void *varg)
{
	const struct dm_arg *a = varg;
	const struct vmb_hvm *h = &a->g->hvm;
	char dom[XS_PATH_MAX], vm[XS_PATH_MAX], lx[XS_PATH_MAX];
	char dm[XS_PATH_MAX], uuid[VMB_UUID_STRLEN];

	vmb_uuid_to_str(a->g->uuid, uuid);
	tx_path(tx, dom, "/local/domain/%u", a->domid);
	tx_path(tx, vm, "/vm/%s", uuid);
	tx_path(tx, lx, "/libxl/%u", a->domid);
	tx_path(tx, dm, "/local/domain/0/device-model/%u", a->domid);
	tx_write(tx, dom, "hvmloader/bios", h->bios, NULL, 0);
	tx_write(tx, dom, "hvmloader/allow-memory-relocate", "0", NULL, 0);
	tx_write(tx, dm, "", NULL, NULL, 0);
	tx_write(tx, lx, "dm-version", "qemu_xen", NULL, 0);
	tx_write(tx, dom, "platform/acpi", h->acpi ? "1" : "0", NULL, 0);
	tx_write(tx, dom, "platform/acpi_s3", "1", NULL, 0);
	tx_write(tx, dom, "platform/acpi_s4", "1", NULL, 0);
	tx_write(tx, dom, "platform/acpi_laptop_slate", "0", NULL, 0);
	if (h->mmio_hole_bytes != 0 &&
	    (1ull << 32) - h->mmio_hole_bytes <= XS_BELOW_4G_MMIO_START)
		tx_writef(tx, dom, "platform/mmio_hole_size", "%llu",
		    (unsigned long long)h->mmio_hole_bytes);
	tx_write(tx, dom, "platform/device-model", "qemu_xen", NULL, 0);
	tx_write(tx, vm, "rtc/timeoffset", "", NULL, 0);
	tx_write(tx, vm, "image/ostype", "hvm", NULL, 0);
}

int
xen_xs_dm_store(void *priv, uint32_t domid, const struct vmb_guest *g)
{
	struct dm_arg a = { domid, g };

	if (g == NULL || g->type != VMB_GUEST_HVM)
		return -EINVAL;
	return xs_run(priv, domid, fill_dm, &a);
}

struct dm_running_arg {
	uint32_t domid;
	const struct vmb_dm_info *info;
};

/*
 * What libxl 4.17 writes once qemu-xen runs: its pid
 * (libxl__spawn_local_dm) and, from QMP's query-chardev, serial port
 * 0's pty (device_model_postconfig_chardev): xl console and xenconsole
 * --type serial open the pty they read there.
 */
static void
fill_dm_running(struct xs_tx *tx, const void *varg)
{
	const struct dm_running_arg *a = varg;
	char dom[XS_PATH_MAX];

	tx_path(tx, dom, "/local/domain/%u", a->domid);
	tx_writef(tx, dom, "image/device-model-pid", "%d", a->info->pid);
	if (a->info->serial_tty[0] != '\0')
		tx_write(tx, dom, "serial/0/tty", a->info->serial_tty, NULL, 0);
}

int
xen_xs_dm_running(void *priv, uint32_t domid, const struct vmb_dm_info *info)
{
	struct dm_running_arg a = { domid, info };

	if (info == NULL || info->pid <= 0)
		return -EINVAL;
	return xs_run(priv, domid, fill_dm_running, &a);
}

/*
 * Remove the domain's entries and tell xenstored to let it go; a domain
 * that was never introduced or has no entries is not an error here.
 */
void
xen_xs_domain_remove(struct xen_be *be, uint32_t domid)
{
	(void)xs_run(be, domid, fill_remove, &domid);
	pthread_mutex_lock(&be->xs_lock);
	(void)xs_release_domain(be->xsh, domid);
	pthread_mutex_unlock(&be->xs_lock);
}

void
xen_xs_read_name(struct xen_be *be, uint32_t domid, char *buf, size_t len)
{
	char path[XS_PATH_MAX];
	char *name;
	unsigned n;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/local/domain/%u/name", domid);
	pthread_mutex_lock(&be->xs_lock);
	name = xs_read(be->xsh, XBT_NULL, path, &n);
	pthread_mutex_unlock(&be->xs_lock);
	if (name == NULL)
		return;
	snprintf(buf, len, "%s", name);
	free(name);
}

/* One /tool/NAME/domid, as libxl reads it; 0 when absent or not a number. */
static uint32_t
tool_domid(struct xen_be *be, const char *path)
{
	unsigned len;
	char *v, *end;
	unsigned long id = 0;

	v = xs_read(be->xsh, XBT_NULL, path, &len);
	if (v != NULL) {
		id = strtoul(v, &end, 10);
		if (end == v || *end != '\0' || id >= DOMID_FIRST_RESERVED)
			id = 0;
	}
	free(v);
	return (uint32_t)id;
}

void
xen_xs_tool_domids(struct xen_be *be, uint32_t *store, uint32_t *console)
{
	pthread_mutex_lock(&be->xs_lock);
	*store = tool_domid(be, "/tool/xenstored/domid");
	*console = tool_domid(be, "/tool/xenconsoled/domid");
	pthread_mutex_unlock(&be->xs_lock);
}

/* The transaction helpers above, for xen_dev.c. */
int
xen_xs_transaction(struct xen_be *be, uint32_t domid, xs_fill_fn *fill,
    const void *arg)
{
	/* xen_dev.c's fills call libxenstore on tx->h themselves. */
	return xs_run_as(be, domid, fill, arg, false);
}

void
xen_xs_tx_write(struct xs_tx *tx, const char *base, const char *rel,
    const char *value, struct xs_permissions *perms, unsigned nperms)
{
	tx_write(tx, base, rel, value, perms, nperms);
}

void
xen_xs_tx_rm(struct xs_tx *tx, const char *path, unsigned flags)
{
	tx_rm(tx, path, flags);
}

char *
xen_xs_tx_read(struct xs_tx *tx, const char *path, unsigned *len)
{
	return tx_read(tx, path, len);
}

/*
 * Post `cmd` on control/shutdown, as libxl__domain_pvcontrol does, once
 * the guest has announced it listens (control/feature-<cmd> = 1, which
 * Linux's xenbus shutdown watcher writes): libxl posts blindly and waits
 * a minute for an acknowledgement that will never come from a guest
 * without the driver.  Or withdraw it, if still posted.
 *
 * Both nodes are the guest's own (it may write them at any time), so
 * they are read and written one call at a time, outside a transaction:
 * in one, a guest rewriting them in a loop could make every attempt
 * conflict (EAGAIN) and so refuse its own shutdown.  A single write is
 * atomic; what is lost is only that a withdrawal racing the guest's
 * own acknowledgement may say "still posted" (1) for a request the guest
 * took a moment before.
 */
int
xen_xs_control(struct xen_be *be, uint32_t domid, const char *cmd,
    bool withdraw)
{
	char feature[XS_PATH_MAX], path[XS_PATH_MAX], *v;
	unsigned len;
	int rc = 0;

	if (snprintf(path, sizeof(path), "/local/domain/%u/control/shutdown",
	    domid) >= (int)sizeof(path) || snprintf(feature, sizeof(feature),
	    "/local/domain/%u/control/feature-%s", domid, cmd) >=
	    (int)sizeof(feature))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&be->xs_lock);
	v = xs_read(be->xsh, XBT_NULL, withdraw ? path : feature, &len);
	if (v == NULL && errno != ENOENT)
		rc = -(errno > 0 ? errno : EIO);
	else if (withdraw)
		rc = v != NULL && strcmp(v, cmd) == 0;
	else if (v == NULL || strcmp(v, "1") != 0)
		rc = -EOPNOTSUPP;
	if ((withdraw && rc == 1) || (!withdraw && rc == 0)) {
		const char *value = withdraw ? "" : cmd;

		if (!xs_write(be->xsh, XBT_NULL, path, value, strlen(value)))
			rc = -(errno > 0 ? errno : EIO);
	}
	pthread_mutex_unlock(&be->xs_lock);
	free(v);
	return rc;
}

/*
 * May only dom0 and the console daemon's domain write the node at path
 * (its owner one of them, and no one else granted write), and so is
 * what it says theirs?  0, -EACCES, or -errno (-ENOENT: not there).
 */
static int
console_node_trusted(struct xen_be *be, const char *path, uint32_t domid,
    uint32_t console_domid)
{
	struct xs_permissions *p;
	unsigned n, i;
	int rc = 0;

	p = xs_get_permissions(be->xsh, XBT_NULL, path, &n);
	if (p == NULL)
		return -(errno > 0 ? errno : EIO);
#define TRUSTED(id) ((id) != domid && ((id) == 0 || (id) == console_domid))
	if (n == 0 || !TRUSTED(p[0].id) || (p[0].perms & XS_PERM_WRITE))
		rc = -EACCES;
	for (i = 1; i < n && rc == 0; i++)
		if ((p[i].perms & XS_PERM_WRITE) && !TRUSTED(p[i].id))
			rc = -EACCES;
#undef TRUSTED
	free(p);
	return rc;
}

/*
 * The console's pty, as xenconsoled wrote it (console/tty): -ENOENT
 * while there is none yet.  The layout above lets only the console's
 * backend write the console directory, but a domain another toolstack
 * built may have it writable by the guest, whose tty could then name
 * any device of the host: the domain's directory, the console's and
 * the tty node must each be writable by dom0 and xenconsoled's domain
 * only (-EACCES), or the value is not read.
 */
int
xen_xs_console_tty(struct xen_be *be, uint32_t domid, char *buf, size_t len)
{
	char path[3][XS_PATH_MAX], *v = NULL;
	uint32_t cd;
	unsigned n;
	int rc = 0;

	snprintf(path[0], sizeof(path[0]), "/local/domain/%u", domid);
	snprintf(path[1], sizeof(path[1]), "/local/domain/%u/console", domid);
	snprintf(path[2], sizeof(path[2]), "/local/domain/%u/console/tty",
	    domid);
	pthread_mutex_lock(&be->xs_lock);
	cd = tool_domid(be, "/tool/xenconsoled/domid");
	for (size_t i = 0; i < 3 && rc == 0; i++)
		rc = console_node_trusted(be, path[i], domid, cd);
	if (rc == 0)
		v = xs_read(be->xsh, XBT_NULL, path[2], &n);
	pthread_mutex_unlock(&be->xs_lock);
	if (rc == 0 && (v == NULL || v[0] == '\0'))
		rc = -ENOENT;
	else if (rc == 0 && (size_t)snprintf(buf, len, "%s", v) >= len)
		rc = -ENAMETOOLONG;
	free(v);
	return rc;
}
