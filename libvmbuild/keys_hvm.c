/*
 * keys_hvm.c - the keys of an HVM guest (type = "hvm", or builder =
 * "hvm" as xl reads it): their setter, and their check with the whole
 * guest (vmb__hvm_check, from vmb_guest_check).  kernel, ramdisk and
 * cmdline of an HVM guest are the device model's (direct kernel boot).
 *
 * Each key is honoured or refused by name.  Honoured: bios (the
 * firmware loaded with hvmloader), mmio_hole (the layout), vga,
 * videoram, serial, vnc, boot, acpi (the device model's command line,
 * daemon/dm.c), device_model_version ("qemu-xen", the only one Debian
 * ships), device_model_override (vmbuildd refuses it: it runs the
 * device model it was started with).  shadow_memory, viridian, hpet,
 * localtime and rtc_timeoffset are the Xen HVM build's (HVM params, the
 * paging pool, the time offset: xen/xen_hvm.c), kept in the description;
 * hvsim runs no guest code that would see them.  Values vmbuild cannot
 * honour are refused with the
 * reason.  On a PVH guest these keys are refused as before, unless the
 * value is what a PVH guest has anyway (acpi = 1, viridian = 0, ...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* An xl boolean: 0 or 1 (or the strings xl takes). */
static int
get_bool(const struct vmb__key *k, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags, bool *ret)
{
	if (v->type == VMB_VALUE_INT && (v->u.i == 0 || v->u.i == 1)) {
		*ret = v->u.i == 1;
		return 0;
	}
	if (v->type == VMB_VALUE_STRING && v->u.s && (!strcmp(v->u.s, "0") ||
	    !strcmp(v->u.s, "1"))) {
		*ret = v->u.s[0] == '1';
		return 0;
	}
	if (k->key == VMB_KEY_VIRIDIAN && v->type == VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "lists of enlightenment groups are not supported (0 or 1: "
		    "1 is xl's default groups)");
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
	    "expected 0 or 1");
}

/* `s` is one of the NULL-ended `names`. */
static bool
one_of(const char *s, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(s, *names))
			return true;
	return false;
}

/* The keys whose value is one of a few names, and what to say of others. */
static const char *const vga_names[] = { "cirrus", "stdvga", "none", NULL };
static const char *const bios_names[] = { "seabios", "ovmf", NULL };
static const char *const dm_names[] = { "qemu-xen", NULL };
static const char *const hd_names[] = { "ide", "ahci", NULL };
static const struct choice {
	enum vmb_key key;
	const char *const *names;
	const char *hint;
} choices[] = {
	{ VMB_KEY_VGA, vga_names, "cirrus, stdvga or none" },
	{ VMB_KEY_BIOS, bios_names, "seabios or ovmf" },
	{ VMB_KEY_DEVICE_MODEL_VERSION, dm_names, "qemu-xen" },
	{ VMB_KEY_HDTYPE, hd_names, "ide or ahci" },
};

/* vga, bios, device_model_version, hdtype: a name vmbuild knows, or why not. */
static int
set_choice(struct vmb_guest *g, const struct vmb__key *k, const char *s,
    int line, const char *where, struct vmb_diags *diags)
{
	const struct choice *c = NULL;

	for (size_t i = 0; i < sizeof(choices) / sizeof(choices[0]); i++)
		if (choices[i].key == k->key)
			c = &choices[i];
	if (c == NULL)
		return -EINVAL;		/* not a key of this table */
	if (one_of(s, c->names)) {
		/* The key's field in the guest, a char array (keys.def). */
		snprintf((char *)g + k->offset, k->size, "%s", s);
		return 0;
	}
	if (!strcmp(s, "qxl"))
		return vmb__diag_add(diags, VMB_ERROR, where, line, k->name,
		    "\"qxl\" is not supported (it needs SPICE, which vmbuild "
		    "does not set up): cirrus, stdvga or none");
	if (!strcmp(s, "rombios") || !strcmp(s, "qemu-xen-traditional"))
		return vmb__diag_add(diags, VMB_ERROR, where, line, k->name,
		    "\"%s\" is not supported (qemu-xen-traditional is not in "
		    "Debian's Xen): %s", s, c->hint);
	return vmb__diag_add(diags, VMB_ERROR, where, line, k->name,
	    "unknown value \"%.32s\" (%s)", s, c->hint);
}

/* serial: a string or xl's list of one; the PTY vmctl console opens. */
static int
set_serial(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const struct vmb_value *one = v;
	const char *s;
	int rc;

	if (v->type == VMB_VALUE_LIST) {
		if (v->u.list.n != 1)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "one serial port only (got %zu)",
			    v->u.list.n);
		one = &v->u.list.v[0];
	}
	rc = vmb__get_string(k, one, where, diags, &s);
	if (rc)
		return rc;
	if (strcmp(s, "pty") && strcmp(s, "none"))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "\"%.32s\" is not supported (\"pty\", the console vmctl "
		    "console opens, or \"none\")", s);
	snprintf(g->hvm.serial, sizeof(g->hvm.serial), "%s", s);
	return 0;
}

/* boot: an order of c (disk), d (cdrom), n (network), a (floppy). */
static int
set_boot(struct vmb_guest *g, const struct vmb__key *k, const char *s,
    int line, const char *where, struct vmb_diags *diags)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(g->hvm.boot) || strspn(s, "acdn") != n)
		return vmb__diag_add(diags, VMB_ERROR, where, line, k->name,
		    "bad boot order \"%.16s\" (letters of c: disk, d: cdrom, "
		    "n: network, a: floppy)", s);
	for (size_t i = 0; i < n; i++)
		if (strchr(s + i + 1, s[i]))
			return vmb__diag_add(diags, VMB_ERROR, where, line,
			    k->name, "boot order \"%s\" names '%c' twice", s,
			    s[i]);
	snprintf(g->hvm.boot, sizeof(g->hvm.boot), "%s", s);
	return 0;
}

static int
set_string_key(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	char *c;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (k->key == VMB_KEY_BOOT)
		return set_boot(g, k, s, v->line, where, diags);
	if (k->key != VMB_KEY_DEVICE_MODEL_OVERRIDE)
		return set_choice(g, k, s, v->line, where, diags);
	if (s[0] != '/')
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "must be an absolute path");
	if (!(c = strdup(s)))
		return -ENOMEM;
	free(g->hvm.dm_override);
	g->hvm.dm_override = c;
	return 0;
}

int
vmb__set_hvm(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	bool *flag = k->key == VMB_KEY_VIRIDIAN ? &g->hvm.viridian :
	    k->key == VMB_KEY_ACPI ? &g->hvm.acpi : k->key == VMB_KEY_HPET ?
	    &g->hvm.hpet : k->key == VMB_KEY_LOCALTIME ? &g->hvm.localtime :
	    k->key == VMB_KEY_VNC ? &g->hvm.vnc : NULL;
	long long x;
	int rc;

	if (flag)
		return get_bool(k, v, where, diags, flag);
	switch (k->key) {
	case VMB_KEY_SHADOW_MEMORY:
		rc = vmb__get_int(k, v, 1, 1 << 20, where, diags, &x);
		if (!rc)
			g->hvm.shadow_mib = (uint32_t)x;
		return rc;
	case VMB_KEY_RTC_TIMEOFFSET:
		/* libxl's is a uint32; a negative offset wraps as there. */
		rc = vmb__get_int(k, v, INT32_MIN, UINT32_MAX, where, diags, &x);
		if (!rc)
			g->hvm.rtc_timeoffset = (uint32_t)x;
		return rc;
	case VMB_KEY_VIDEORAM:
		rc = vmb__get_int(k, v, 1, 1024, where, diags, &x);
		if (!rc)
			g->hvm.videoram_mib = (uint32_t)x;
		return rc;
	case VMB_KEY_MMIO_HOLE:
		rc = vmb__get_int(k, v, VMB_HVM_MMIO_HOLE_MIN_MIB,
		    VMB_HVM_MMIO_HOLE_MAX_MIB, where, diags, &x);
		if (!rc)
			g->hvm.mmio_hole_bytes = (uint64_t)x * VMB_MIB;
		return rc;
	case VMB_KEY_SERIAL:
		return set_serial(g, k, v, where, diags);
	default:
		return set_string_key(g, k, v, where, diags);
	}
}

/* builder = "hvm": an HVM guest; xl's other builders build PV guests. */
int
vmb__set_builder(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *s;
	int rc = vmb__get_string(k, v, where, diags, &s);

	if (rc)
		return rc;
	if (!strcmp(s, "hvm")) {
		g->type = VMB_GUEST_HVM;
		return 0;
	}
	if (!strcmp(s, "generic") || !strcmp(s, "linux"))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "builder \"%s\" builds a PV guest, which vmbuild does not "
		    "do: type = \"pvh\" for a PVH kernel, \"hvm\" for an HVM "
		    "guest", s);
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
	    "unknown builder \"%.32s\" (\"hvm\"; or type = \"pvh\")", s);
}

/* Is key k's value on a PVH guest what a PVH guest has anyway? */
static bool
pvh_same(const struct vmb_guest *g, enum vmb_key k)
{
	switch (k) {
	case VMB_KEY_ACPI:		return g->hvm.acpi;
	case VMB_KEY_VIRIDIAN:		return !g->hvm.viridian;
	case VMB_KEY_LOCALTIME:		return !g->hvm.localtime;
	case VMB_KEY_RTC_TIMEOFFSET:	return g->hvm.rtc_timeoffset == 0;
	case VMB_KEY_VNC:		return !g->hvm.vnc;
	default:			return false;
	}
}

/* The smallest HVM guest: hvmloader at 1 MiB, the BIOS below it. */
#define HVM_MIN_MEMORY	(4 * VMB_MIB)

/*
 * The HVM keys with the whole guest: on a PVH guest refused (a warning
 * under VMB_CONFIG_IGNORE_UNSUPPORTED); on an HVM guest what only
 * holds together (videoram for the card, no kernel).  Returns the
 * number of errors added.
 */
int
vmb__hvm_check(struct vmb_guest *g, const char *where,
    struct vmb_diags *diags)
{
	bool ignore = g->flags & VMB_CONFIG_IGNORE_UNSUPPORTED;
	uint32_t min_vram;
	int errors = 0;

	if (g->type != VMB_GUEST_HVM) {
		for (int k = VMB_KEY_HVM_FIRST; k < VMB_KEY_MAX; k++) {
			if (!(g->keys_set >> k & 1) || pvh_same(g, k))
				continue;
			/* xl sets a time offset for PV guests too. */
			bool clock = k == VMB_KEY_LOCALTIME ||
			    k == VMB_KEY_RTC_TIMEOFFSET;

			vmb__diag_add(diags, ignore ? VMB_WARNING : VMB_ERROR,
			    where, g->key_line[k], vmb__keys[k].name,
			    "not supported%s (%s)", ignore ? ", ignored" : "",
			    clock ? "only 0 for a PVH guest: its wallclock is "
			    "UTC: vmbuild sets no time offset" : "HVM only: "
			    "type = \"hvm\" for an HVM guest");
			errors += !ignore;
		}
		return errors;
	}
	/*
	 * Direct kernel boot goes through the device model (-kernel,
	 * -initrd, -append, as xl does): its ramdisk and command line only
	 * with a kernel.
	 */
	for (int k = VMB_KEY_KERNEL + 1; k <= VMB_KEY_ROOT; k++)
		if ((g->keys_set >> k & 1) && !g->kernel) {
			vmb__diag_add(diags, VMB_ERROR, where, g->key_line[k],
			    vmb__keys[k].name, "only with kernel (an HVM guest "
			    "without one boots from its disk through its "
			    "firmware)");
			errors++;
		}
	/* The card's VRAM comes out of memory= (layout.c, as libxl). */
	if ((g->keys_set >> VMB_KEY_MEMORY & 1) && g->memory_bytes <
	    HVM_MIN_MEMORY + (uint64_t)vmb_hvm_videoram_mib(g) * VMB_MIB) {
		vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_MEMORY], "memory", "an HVM guest needs "
		    "at least %llu MiB (hvmloader and its BIOS) besides its "
		    "%u MiB of videoram", (unsigned long long)(HVM_MIN_MEMORY /
		    VMB_MIB), vmb_hvm_videoram_mib(g));
		errors++;
	}
	/* qemu-xen's smallest VRAM for the card, as xl checks it. */
	min_vram = !strcmp(g->hvm.vga, "stdvga") ? 16 : 8;
	if (g->hvm.videoram_mib && strcmp(g->hvm.vga, "none") &&
	    g->hvm.videoram_mib < min_vram) {
		vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_VIDEORAM], "videoram", "vga = \"%s\" "
		    "needs at least %u MiB", g->hvm.vga, min_vram);
		errors++;
	}
	return errors;
}
