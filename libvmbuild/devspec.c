/*
 * devspec.c - xl's device specifications: disk= items
 * (xl-disk-configuration(5)), vif= items (xl-network-configuration(5)),
 * vbd numbers (xen-vbd-interface(7)), MACs, and their copies.
 *
 * Disk specifications go through Xen's own parser, libxlutil's
 * xlu_disk_parse (config.c reads whole files with libxlutil for the
 * same reason): positional, key=value, flags and the deprecated forms
 * parse exactly as xl parses them.  What it accepts and vmbuild cannot
 * serve (qcow2, cdroms, qdisk, driver domains, COLO) is refused by
 * vmb_disk_check with the reason.  xl parses vif= items itself
 * (xl_parse.c), so they are parsed here, stricter: an unknown item is
 * an error where xl only warns.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxlutil.h>

#include "vmb_internal.h"

#define SPEC_MAX	4096	/* as other strings of a config */

/* ------------------------------------------------------------------ */
/* vbd numbers                                                         */

/*
 * "<prefix><letters>[<partition>]": letters name the disk in bijective
 * base 26 (a..z, aa..), the partition has no leading zero.  Returns
 * false unless it matches within the limits.
 */
static bool
vdev_letters(const char *s, const char *prefix, uint32_t max_disk,
    uint32_t max_part, uint32_t *disk, uint32_t *part)
{
	size_t pl = strlen(prefix);
	const char *p = s + pl;
	uint64_t d = 0;
	unsigned long n;
	char *end;

	if (strncmp(s, prefix, pl) != 0 || !(*p >= 'a' && *p <= 'z'))
		return false;
	for (; *p >= 'a' && *p <= 'z'; p++) {
		d = d * 26 + (uint64_t)(*p - 'a' + 1);
		if (d - 1 > max_disk)
			return false;
	}
	*disk = (uint32_t)(d - 1);
	*part = 0;
	if (*p == '\0')
		return true;
	if (*p < '1' || *p > '9')
		return false;
	errno = 0;
	n = strtoul(p, &end, 10);
	if (*end != '\0' || errno || n > max_part)
		return false;
	*part = (uint32_t)n;
	return true;
}

int
vmb_vdev_number(const char *vdev, uint32_t *ret_devid)
{
	uint32_t disk, part;
	unsigned long n;
	char *end;
	int used = -1;

	if (!vdev || !ret_devid || !*vdev)
		return -EINVAL;
	/* Xen virtual disks: d<disk>p<partition>, or xvd<letters>. */
	if ((sscanf(vdev, "d%up%u%n", &disk, &part, &used) == 2 &&
	    used == (int)strlen(vdev) && isdigit((unsigned char)vdev[1]) &&
	    disk < (1u << 20) && part < 256) ||
	    vdev_letters(vdev, "xvd", (1u << 20) - 1, 255, &disk, &part)) {
		*ret_devid = disk <= 15 && part <= 15 ?
		    202u << 8 | disk << 4 | part : 1u << 28 | disk << 8 | part;
		return 0;
	}
	/* The number itself (hex, decimal, octal), as the deprecated form. */
	if (isdigit((unsigned char)vdev[0])) {
		errno = 0;
		n = strtoul(vdev, &end, 0);
		if (*end != '\0' || errno || n > INT_MAX)
			return -EINVAL;
		*ret_devid = (uint32_t)n;
		return 0;
	}
	/* IDE: disks 0-1 on 3, 2-3 on 22; SCSI: 8. */
	if (vdev_letters(vdev, "hd", 3, 63, &disk, &part)) {
		*ret_devid = (disk < 2 ? 3u : 22u) << 8 | (disk & 1) << 6 | part;
		return 0;
	}
	if (vdev_letters(vdev, "sd", 15, 15, &disk, &part)) {
		*ret_devid = 8u << 8 | disk << 4 | part;
		return 0;
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------ */
/* Hotplug scripts                                                     */

/*
 * script= of a disk or a vif: a name looked up in the hotplug script
 * directory (no '/', not "." or "..", printable), or an absolute path.
 * The library runs what its caller gives; vmbuildd takes a path from
 * a root client only (vmbuildd(8)).
 */
static bool
script_ok(const char *s)
{
	if (!*s || strlen(s) > 255)
		return false;
	for (const char *p = s; *p; p++)
		if (!isgraph((unsigned char)*p))
			return false;
	if (s[0] == '/')
		return true;
	return !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* ------------------------------------------------------------------ */
/* disk=                                                               */

void
vmb_disk_done(struct vmb_disk *d)
{
	if (!d)
		return;
	free(d->target);
	free(d->script);
	free(d->spec);
	memset(d, 0, sizeof(*d));
}

/* libxlutil's report ("where: config parsing error ...") as errors. */
static void
report_errors(const char *report, const char *where, int line,
    struct vmb_diags *diags)
{
	const char *p = report, *marker = "config parsing error in ";
	size_t wl = strlen(where);
	int n = 0;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > wl + 2 && !strncmp(p, where, wl) && p[wl] == ':') {
			p += wl + 2;
			len -= wl + 2;
		}
		if (len > strlen(marker) && !strncmp(p, marker, strlen(marker))) {
			p += strlen(marker);
			len -= strlen(marker);
		}
		if (len) {
			vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
			    "%.*s", (int)(len > 200 ? 200 : len), p);
			n++;
		}
		p = nl ? nl + 1 : NULL;
	}
	if (n == 0)
		vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
		    "cannot parse the disk specification");
}

static const char *const formats[] = {
	[VMB_DISK_RAW] = "raw", [VMB_DISK_QCOW] = "qcow",
	[VMB_DISK_QCOW2] = "qcow2", [VMB_DISK_VHD] = "vhd",
	[VMB_DISK_QED] = "qed", [VMB_DISK_EMPTY] = "empty",
};

/*
 * A backend other than phy, in the user's terms: which disk, which image
 * format, what serves it under xl (QEMU), and what vmbuild takes.
 */
static int
backend_refused(const libxl_device_disk *x, const char *spec,
    const char *where, int line, struct vmb_diags *diags)
{
	const char *backend = libxl_disk_backend_to_string(x->backend);
	const char *format = x->format == LIBXL_DISK_FORMAT_UNKNOWN ? NULL :
	    libxl_disk_format_to_string(x->format);
	const char *vdev = x->vdev ? x->vdev : "?";

	if (!backend)
		backend = "?";
	if (format && x->format != LIBXL_DISK_FORMAT_RAW)
		return vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
		    "%s: a %s image on backendtype=%s needs QEMU, which "
		    "vmbuild does not run: give a raw image (qemu-img convert "
		    "-O raw) or a block device, backendtype=phy, in \"%.80s\"",
		    vdev, format, backend, spec);
	return vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
	    "%s: backendtype=%s needs QEMU, which vmbuild does not run: "
	    "use backendtype=phy (dom0's blkback: raw images and block "
	    "devices) in \"%.100s\"", vdev, backend, spec);
}

/*
 * What libxlutil parsed into ours.  Everything that vmbuild does not
 * serve is remembered by value (format, cdrom) or refused here when it
 * has no place in a struct vmb_disk (other backends, virtio, COLO).
 */
static int
disk_from_xl(const libxl_device_disk *x, const char *spec, const char *where,
    int line, struct vmb_disk *d, struct vmb_diags *diags)
{
	const char *why = NULL;

	if (x->backend_domname && strcmp(x->backend_domname, "0") &&
	    strcmp(x->backend_domname, "Domain-0"))
		why = "backend=: driver domains are not supported (dom0 "
		    "serves every disk)";
	else if (x->backend != LIBXL_DISK_BACKEND_UNKNOWN &&
	    x->backend != LIBXL_DISK_BACKEND_PHY)
		return backend_refused(x, spec, where, line, diags);
	else if (x->specification != LIBXL_DISK_SPECIFICATION_UNKNOWN &&
	    x->specification != LIBXL_DISK_SPECIFICATION_XEN)
		why = "specification=: only xen (PV blkfront) is supported";
	else if (libxl_defbool_is_default(x->colo_enable) == 0 &&
	    libxl_defbool_val(x->colo_enable))
		why = "colo: COLO replication is not supported";
	if (why)
		return vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
		    "%s in \"%.200s\"", why, spec);
	d->line = line;
	if ((x->pdev_path && *x->pdev_path &&
	    !(d->target = strdup(x->pdev_path))) ||
	    (x->script && !(d->script = strdup(x->script))) ||
	    !(d->spec = strdup(spec)))
		return -ENOMEM;
	snprintf(d->vdev, sizeof(d->vdev), "%s", x->vdev ? x->vdev : "");
	switch (x->format) {
	case LIBXL_DISK_FORMAT_QCOW:	d->format = VMB_DISK_QCOW; break;
	case LIBXL_DISK_FORMAT_QCOW2:	d->format = VMB_DISK_QCOW2; break;
	case LIBXL_DISK_FORMAT_VHD:	d->format = VMB_DISK_VHD; break;
	case LIBXL_DISK_FORMAT_QED:	d->format = VMB_DISK_QED; break;
	case LIBXL_DISK_FORMAT_EMPTY:	d->format = VMB_DISK_EMPTY; break;
	default:			d->format = VMB_DISK_RAW; break;
	}
	d->readonly = !x->readwrite;
	d->cdrom = x->is_cdrom != 0;
	d->direct_io_safe = x->direct_io_safe;
	/* libxl's defaults: discard on a writable disk, trusted backends. */
	d->discard = libxl_defbool_is_default(x->discard_enable) ?
	    !d->readonly : libxl_defbool_val(x->discard_enable);
	d->trusted = libxl_defbool_is_default(x->trusted) ? true :
	    libxl_defbool_val(x->trusted);
	if (vmb_vdev_number(d->vdev, &d->devid) != 0)
		return vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
		    "vdev \"%s\" is not a virtual disk name (xvda, xvdb2, "
		    "d1p2, hdc, sdb, ...) in \"%.200s\"", d->vdev, spec);
	return 0;
}

int
vmb_disk_parse(const char *spec, const char *where, int line,
    struct vmb_disk *ret_disk, struct vmb_diags *diags)
{
	struct vmb_disk d = { 0 };
	libxl_device_disk x;
	XLU_Config *cfg = NULL;
	char *report = NULL;
	size_t report_len = 0;
	FILE *rep;
	int rc;

	if (!spec || !ret_disk)
		return -EINVAL;
	if (!where)
		where = "request";
	if (strlen(spec) >= SPEC_MAX)
		return vmb__diag_add(diags, VMB_ERROR, where, line, "disk",
		    "specification too long (at most %d characters)",
		    SPEC_MAX - 1);
	libxl_device_disk_init(&x);
	rep = open_memstream(&report, &report_len);
	if (rep)
		cfg = xlu_cfg_init(rep, where);
	if (!cfg) {
		rc = -ENOMEM;
		goto out;
	}
	rc = xlu_disk_parse(cfg, 1, &spec, &x);
	fflush(rep);
	if (rc) {
		report_errors(report ? report : "", where, line, diags);
		rc = -EINVAL;
		goto out;
	}
	rc = disk_from_xl(&x, spec, where, line, &d, diags);
	if (rc == 0) {
		*ret_disk = d;
		memset(&d, 0, sizeof(d));
	}
out:
	vmb_disk_done(&d);
	libxl_device_disk_dispose(&x);
	if (cfg)
		xlu_cfg_destroy(cfg);
	if (rep)
		fclose(rep);
	free(report);
	return rc;
}

int
vmb_disk_ide_index(const struct vmb_disk *d)
{
	const char *p = !strncmp(d->vdev, "hd", 2) ? d->vdev + 2 :
	    !strncmp(d->vdev, "xvd", 3) ? d->vdev + 3 : NULL;

	if (p == NULL || p[0] < 'a' || p[0] > 'd' || p[1] != '\0')
		return -1;
	/*
	 * qemu-xen has no read-only IDE disk: a read-only xvd disk is its
	 * PV backend's only (as later libxl leaves every xvd disk); a
	 * read-only hd disk is refused (emulated_refused).
	 */
	if (d->vdev[0] == 'x' && d->readonly && !d->cdrom)
		return -1;
	return p[0] - 'a';
}

int
vmb_disk_ahci_index(const struct vmb_disk *d)
{
	const char *p = !strncmp(d->vdev, "hd", 2) ? d->vdev + 2 :
	    !strncmp(d->vdev, "xvd", 3) ? d->vdev + 3 : NULL;

	/* A CD-ROM stays on the IDE bus; a read-only disk is PV only. */
	if (p == NULL || p[0] < 'a' || p[0] > 'f' || p[1] != '\0' ||
	    d->cdrom || d->readonly)
		return -1;
	return p[0] - 'a';
}

/*
 * An HVM guest's disk as its device model takes it (libxl_dm.c of Xen
 * 4.17 for qemu-xen: the first four IDE units, CD-ROMs among them, no
 * read-only IDE disk); NULL, or why not.
 */
static const char *
emulated_refused(const struct vmb_disk *d)
{
	int unit = vmb_disk_ide_index(d);

	if (!strncmp(d->vdev, "sd", 2))
		return "emulated SCSI disks are not supported (hda-hdd and "
		    "xvda-xvdd are the device model's IDE disks, other xvd "
		    "names PV disks)";
	if (unit < 0 && d->cdrom)
		return "an emulated CD-ROM drive is one of the first four IDE "
		    "units: hda-hdd (or xvda-xvdd)";
	if (unit < 0 && d->format == VMB_DISK_QCOW2)
		return "a qcow2 image is read by the device model only: give "
		    "it as one of the first four IDE disks, hda-hdd (or "
		    "xvda-xvdd)";
	if (unit >= 0 && !d->cdrom && d->readonly)
		return "qemu-xen does not emulate a read-only IDE disk (as "
		    "libxl refuses it): give it rw, as a CD-ROM "
		    "(devtype=cdrom), or as a PV disk (xvdX)";
	if (unit >= 0 && d->target && strchr(d->target, ','))
		return "the device model's -drive cannot take a path with ','";
	return NULL;
}

int
vmb_disk_check(struct vmb_disk *d, const char *basedir, const char *where,
    struct vmb_diags *diags)
{
	return vmb__disk_check(d, VMB_GUEST_PVH, basedir, where, diags);
}

int
vmb__disk_check(struct vmb_disk *d, enum vmb_guest_type type,
    const char *basedir, const char *where, struct vmb_diags *diags)
{
	bool hvm = type == VMB_GUEST_HVM;
	char *joined = NULL, *real = NULL;
	const char *why;
	struct stat st;
	int rc = 0;

	if (!d)
		return -EINVAL;
	if (!where)
		where = "request";
#define DERR(...) vmb__diag_add(diags, VMB_ERROR, where, d->line, "disk", \
	__VA_ARGS__)
	if (hvm && (why = emulated_refused(d)) != NULL)
		return DERR("%s: %s", d->vdev, why);
	if (d->cdrom && !hvm)
		return DERR("%s: CD-ROM drives are not supported (a PVH guest "
		    "has no emulated drive; give the image as a read-only "
		    "disk)", d->vdev);
	/* An HVM guest's empty drive: a CD-ROM with no disc in it. */
	if (d->cdrom && (!d->target || d->format == VMB_DISK_EMPTY))
		return 0;
	if (d->format != VMB_DISK_RAW && !(hvm && d->format == VMB_DISK_QCOW2))
		return DERR("%s: format %s is not supported (only raw images "
		    "and block devices%s: qcow, qcow2, vhd and qed need qemu's "
		    "qdisk backend)", d->vdev, formats[d->format], hvm ?
		    ", and qcow2 on an HVM guest's emulated disk" : "");
	if (!d->target)
		return DERR("%s: no target (an image file or a block device)",
		    d->vdev);
	/* As libxl: a name is looked up in the script directory. */
	if (d->script && !script_ok(d->script))
		return DERR("%s: script \"%.64s\": a name in the hotplug "
		    "script directory (/etc/xen/scripts; no '/', not \"..\") "
		    "or an absolute path", d->vdev, d->script);
	/*
	 * A script= disk's target is the script's to interpret (an iSCSI
	 * name, say).  vmbuildd checks its client's rights on every
	 * target whatever the script (devices.c).
	 */
	if (d->script && strcmp(d->script, "block") != 0)
		return 0;
	if (d->target[0] != '/' && basedir && *basedir &&
	    asprintf(&joined, "%s/%s", basedir, d->target) < 0)
		return -ENOMEM;
	real = realpath(joined ? joined : d->target, NULL);
	if (!real || stat(real, &st) != 0) {
		rc = DERR("%s: cannot use \"%s\": %s", d->vdev, d->target,
		    strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		rc = DERR("%s: \"%s\" is neither a file nor a block device",
		    d->vdev, d->target);
		goto out;
	}
	/*
	 * This process's own rights: the daemon, root without
	 * CAP_DAC_OVERRIDE under systemd, checks a client's separately.
	 */
	if (access(real, d->readonly ? R_OK : R_OK | W_OK) != 0) {
		rc = DERR("%s: this process (uid %u, gid %u) cannot %s \"%s\": "
		    "%s; the image must be open to it as well as to the "
		    "client (vmbuildd(8), DEVICES)", d->vdev,
		    (unsigned)geteuid(), (unsigned)getegid(), d->readonly ?
		    "read" : "read and write", d->target, strerror(errno));
		goto out;
	}
	free(d->target);
	d->target = real;
	real = NULL;
out:
#undef DERR
	free(real);
	free(joined);
	return rc;
}

/* ------------------------------------------------------------------ */
/* vif=                                                                */

void
vmb_nic_done(struct vmb_nic *n)
{
	if (!n)
		return;
	free(n->ip);
	free(n->script);
	free(n->gatewaydev);
	free(n->spec);
	memset(n, 0, sizeof(*n));
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	for (int i = 0; i < 6; i++) {
		if (!isxdigit((unsigned char)s[0]) ||
		    !isxdigit((unsigned char)s[1]) || s[2] != (i < 5 ? ':' : 0))
			return -EINVAL;
		mac[i] = (uint8_t)strtoul((char[]){ s[0], s[1], 0 }, NULL, 16);
		s += 3;
	}
	return 0;
}

/* An interface name: what the kernel takes (dev_valid_name). */
static bool
ifname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= VMB_IFNAME_LEN || !strcmp(s, ".") ||
	    !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s) ||
		    !isprint((unsigned char)*s))
			return false;
	return true;
}

/* Items of an HVM guest or a driver domain: not supported for PVH. */
static const struct {
	const char *key;
	const char *why;
} nic_unsupported[] = {
	{ "model", "an emulated NIC model is for HVM guests; a PVH guest "
	    "gets a PV vif" },
	{ "accel", "obsolete" },
	{ "forwarddev", "COLO is not supported" },
};

/* One "key=value" or flag of a vif spec into n; a diagnostic if bad. */
static int
nic_item(struct vmb_nic *n, const char *item, uint32_t flags,
    const char *where, int line, struct vmb_diags *diags)
{
	const char *eq = strchr(item, '='), *val = eq ? eq + 1 : "";
	size_t klen = eq ? (size_t)(eq - item) : strlen(item);
	char key[32];
	char *end;
	unsigned long u;

#define NERR(...) vmb__diag_add(diags, VMB_ERROR, where, line, "vif", \
	__VA_ARGS__)
	if (klen == 0 || klen >= sizeof(key))
		return NERR("\"%.64s\" is not key=value", item);
	memcpy(key, item, klen);
	key[klen] = '\0';
	if (!eq && (!strcmp(key, "trusted") || !strcmp(key, "untrusted"))) {
		n->trusted = key[0] == 't';
		return 0;
	}
	if (!eq)
		return NERR("\"%.64s\" is not key=value", item);
	if (!strcmp(key, "mac")) {
		if (parse_mac(val, n->mac))
			return NERR("mac \"%.32s\": expected six hex pairs "
			    "separated by ':'", val);
		if (n->mac[0] & 1)
			return NERR("mac %.32s is a multicast address", val);
		n->mac_set = true;
	} else if (!strcmp(key, "bridge") || !strcmp(key, "vifname")) {
		if (!ifname_ok(val))
			return NERR("%s \"%.32s\" is not an interface name (1 "
			    "to %d characters, no '/', ':' or space)", key,
			    val, VMB_IFNAME_LEN - 1);
		snprintf(key[0] == 'b' ? n->bridge : n->vifname,
		    VMB_IFNAME_LEN, "%s", val);
	} else if (!strcmp(key, "ip")) {
		free(n->ip);
		if (!(n->ip = strdup(val)))
			return -ENOMEM;
	} else if (!strcmp(key, "script")) {
		if (!script_ok(val))
			return NERR("script \"%.64s\": a name in the hotplug "
			    "script directory (/etc/xen/scripts; no '/', not "
			    "\"..\") or an absolute path", val);
		free(n->script);
		if (!(n->script = strdup(val)))
			return -ENOMEM;
	} else if (!strcmp(key, "gatewaydev") || !strcmp(key, "netdev")) {
		if (!ifname_ok(val))
			return NERR("%s \"%.32s\" is not an interface name",
			    key, val);
		free(n->gatewaydev);
		if (!(n->gatewaydev = strdup(val)))
			return -ENOMEM;
	} else if (!strcmp(key, "mtu") || !strcmp(key, "devid")) {
		errno = 0;
		u = strtoul(val, &end, 10);
		if (!isdigit((unsigned char)*val) || *end || errno ||
		    (key[0] == 'm' ? u < 68 || u > 65535 : u >= 1u << 16))
			return NERR("%s \"%.32s\": expected %s", key, val,
			    key[0] == 'm' ? "68 to 65535" : "0 to 65535");
		if (key[0] == 'm')
			n->mtu = (uint32_t)u;
		else
			n->devid = (uint32_t)u;
	} else if (!strcmp(key, "rate")) {
		libxl_device_nic x;
		XLU_Config *cfg = NULL;
		char *report = NULL;
		size_t report_len = 0;
		FILE *rep;
		int rc = ENOMEM;

		/* libxlutil's parser of xl's rate syntax ("10Mb/s@20ms"). */
		libxl_device_nic_init(&x);
		if ((rep = open_memstream(&report, &report_len)) != NULL)
			cfg = xlu_cfg_init(rep, where);
		if (cfg)
			rc = xlu_vif_parse_rate(cfg, val, &x);
		if (!rc) {
			n->rate_bytes = x.rate_bytes_per_interval;
			n->rate_usecs = x.rate_interval_usecs;
		}
		libxl_device_nic_dispose(&x);
		if (cfg)
			xlu_cfg_destroy(cfg);
		if (rep)
			fclose(rep);
		free(report);
		if (rc == ENOMEM)
			return -ENOMEM;
		if (rc)
			return NERR("rate \"%.32s\": expected RATE/s[@INTERVAL] "
			    "(e.g. 10Mb/s, 1MB/s@20ms)", val);
	} else if (!strcmp(key, "type")) {
		if (!strcmp(val, "ioemu") && !(flags & VMB__NIC_HVM))
			goto unsupported;
		if (strcmp(val, "vif") != 0 && strcmp(val, "ioemu") != 0)
			return NERR("type \"%.32s\": expected vif%s", val,
			    flags & VMB__NIC_HVM ? " or ioemu" : "");
		n->vif_only = val[0] == 'v';
	} else if (!strcmp(key, "model") && (flags & VMB__NIC_HVM)) {
		if (strcmp(val, "e1000") && strcmp(val, "rtl8139"))
			return NERR("model \"%.32s\": e1000 or rtl8139 (the "
			    "NICs qemu-xen emulates that vmbuild offers)", val);
		snprintf(n->model, sizeof(n->model), "%s", val);
	} else if (!strcmp(key, "backend")) {
		if (strcmp(val, "0") && strcmp(val, "Domain-0"))
			goto unsupported;
	} else {
		for (size_t i = 0; i < sizeof(nic_unsupported) /
		    sizeof(nic_unsupported[0]); i++)
			if (!strcmp(key, nic_unsupported[i].key))
				goto unsupported;
		if (!strncmp(key, "colo_", 5))
			goto unsupported;
		return NERR("unknown item \"%.32s\" (mac, bridge, ip, script, "
		    "vifname, gatewaydev, mtu, rate, devid, type, backend, "
		    "trusted, untrusted)", key);
	}
	return 0;
unsupported:
	if (flags & VMB_CONFIG_IGNORE_UNSUPPORTED)
		return vmb__diag_add(diags, VMB_WARNING, where, line, "vif",
		    "%s=%.32s: not supported, ignored", key, val);
	return NERR("%s=%.32s: not supported%s", key, val, !strcmp(key,
	    "type") ? " (an emulated NIC is for HVM guests)" :
	    !strcmp(key, "backend") ? " (driver domains: dom0 serves every "
	    "vif)" : !strcmp(key, "model") ? " (an emulated NIC model is "
	    "for HVM guests; a PVH guest gets a PV vif)" : "");
#undef NERR
}

int
vmb_nic_parse(const char *spec, uint32_t devid, uint32_t flags,
    const char *where, int line, struct vmb_nic *ret_nic,
    struct vmb_diags *diags)
{
	struct vmb_nic n = { .devid = devid, .trusted = true, .line = line };
	char *copy = NULL, *save = NULL, *tok;
	int rc = 0, r;

	if (!spec || !ret_nic)
		return -EINVAL;
	if (!where)
		where = "request";
	if (strlen(spec) >= SPEC_MAX)
		return vmb__diag_add(diags, VMB_ERROR, where, line, "vif",
		    "specification too long (at most %d characters)",
		    SPEC_MAX - 1);
	snprintf(n.bridge, sizeof(n.bridge), "xenbr0");	/* xl's default */
	if (!(copy = strdup(spec)) || !(n.spec = strdup(spec))) {
		rc = -ENOMEM;
		goto out;
	}
	for (tok = strtok_r(copy, ",", &save); tok;
	    tok = strtok_r(NULL, ",", &save)) {
		char *e;

		while (isspace((unsigned char)*tok))
			tok++;
		e = tok + strlen(tok);
		while (e > tok && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (!*tok)
			continue;
		r = nic_item(&n, tok, flags, where, line, diags);
		if (r == -ENOMEM) {
			rc = r;
			goto out;
		}
		if (r)
			rc = r;
	}
	/* libxl's for an HVM guest: an emulated NIC too, rtl8139. */
	if ((flags & VMB__NIC_HVM) && n.vif_only)
		n.model[0] = '\0';
	else if ((flags & VMB__NIC_HVM) && n.model[0] == '\0')
		snprintf(n.model, sizeof(n.model), "rtl8139");
	if (rc == 0) {
		*ret_nic = n;
		memset(&n, 0, sizeof(n));
	}
out:
	vmb_nic_done(&n);
	free(copy);
	return rc;
}

/*
 * Xen's OUI and 23 bits of an FNV-1a hash of the UUID and the devid
 * (the top bit of the fourth byte clear, as libxl's random MACs).
 */
void
vmb_nic_mac(const uint8_t uuid[16], const struct vmb_nic *nic,
    uint8_t mac[6])
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (nic->mac_set) {
		memcpy(mac, nic->mac, 6);
		return;
	}
	for (int i = 0; i < 16; i++)
		h = (h ^ uuid[i]) * 0x100000001b3ull;
	for (int i = 0; i < 4; i++)
		h = (h ^ (nic->devid >> (8 * i) & 0xff)) * 0x100000001b3ull;
	mac[0] = 0x00;
	mac[1] = 0x16;
	mac[2] = 0x3e;
	mac[3] = (uint8_t)(h >> 40) & 0x7f;
	mac[4] = (uint8_t)(h >> 32);
	mac[5] = (uint8_t)(h >> 24);
}

/* ------------------------------------------------------------------ */
/* Names and copies, for the daemon's JSON form of a guest             */

const char *
vmb_disk_format_name(enum vmb_disk_format format)
{
	return (unsigned)format < sizeof(formats) / sizeof(formats[0]) ?
	    formats[format] : "unknown";
}

int
vmb_disk_format_parse(const char *name, enum vmb_disk_format *ret)
{
	for (size_t f = 0; name && f < sizeof(formats) / sizeof(formats[0]);
	    f++)
		if (!strcmp(name, formats[f])) {
			*ret = (enum vmb_disk_format)f;
			return 0;
		}
	return -EINVAL;
}

int
vmb_mac_parse(const char *s, uint8_t mac[6])
{
	return s && strlen(s) == 17 ? parse_mac(s, mac) : -EINVAL;
}

static int
dup_or_null(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

int
vmb_disk_copy(const struct vmb_disk *src, struct vmb_disk *d)
{
	*d = *src;
	d->target = d->script = d->spec = NULL;
	if (dup_or_null(src->target, &d->target) ||
	    dup_or_null(src->script, &d->script) ||
	    dup_or_null(src->spec, &d->spec)) {
		vmb_disk_done(d);
		return -ENOMEM;
	}
	return 0;
}

int
vmb_nic_copy(const struct vmb_nic *src, struct vmb_nic *n)
{
	*n = *src;
	n->ip = n->script = n->gatewaydev = n->spec = NULL;
	if (dup_or_null(src->ip, &n->ip) ||
	    dup_or_null(src->script, &n->script) ||
	    dup_or_null(src->gatewaydev, &n->gatewaydev) ||
	    dup_or_null(src->spec, &n->spec)) {
		vmb_nic_done(n);
		return -ENOMEM;
	}
	return 0;
}
