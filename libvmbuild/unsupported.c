/*
 * unsupported.c - the keys xl knows that vmbuild does not implement,
 * and what setting one does.  vmbuild.cfg(5) lists them (KEYS NOT
 * SUPPORTED; tests/ops/man.sh checks it against the table below).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "vmb_internal.h"

/*
 * Keys xl knows that vmbuild does not implement: refused, "not
 * supported" (a warning under VMB_CONFIG_IGNORE_UNSUPPORTED).  Where
 * one value is what vmbuild does anyway (`same`: xl's value written as
 * a string, an integer's in decimal), that value is accepted: it is
 * honoured, not dropped.  `why` is for vmbuild.cfg(5) and the message.
 */
static const struct vmb__unsupported {
	const char *key;
	const char *same;	/* the value vmbuild honours, or NULL */
	const char *why;
} xl_unsupported[] = {
	{ "acpi",		"1",	"PVH guests always get ACPI tables" },
	{ "nomigrate",		"0",	"vmbuild's CPUID policy is libxl's "
	    "for a migratable guest" },
	{ "pool",		"Pool-0", "guests run in Xen's default "
	    "cpupool" },
	{ "driver_domain",	"0",	"vmbuild builds no driver domains" },
	{ "claim_mode",		"1",	"vmbuild always claims memory first" },
	{ "autoballoon",	"0",	"vmbuild never balloons dom0 down" },
	{ "builder",		NULL,	"use type=\"pvh\"" },
	{ "serial",		NULL,	"a PVH guest has no emulated UART; "
	    "its console is the PV console" },
	{ "vfb",		NULL,	"needs a device model" },
	{ "vkb",		NULL,	"needs a device model" },
	{ "vga",		NULL,	"HVM only" },
	{ "videoram",		NULL,	"HVM only" },
	{ "stdvga",		NULL,	"HVM only" },
	{ "boot",		NULL,	"HVM only" },
	{ "localtime",		NULL,	"HVM only" },
	{ "apic",		NULL,	"HVM only" },
	{ "pae",		NULL,	"HVM only" },
	{ "hpet",		NULL,	"HVM only" },
	{ "viridian",		NULL,	"HVM only" },
	{ "nestedhvm",		NULL,	NULL },
	{ "xen_platform_pci",	NULL,	"HVM only" },
	{ "usb",		NULL,	"needs a device model" },
	{ "usbdevice",		NULL,	"needs a device model" },
	{ "usbctrl",		NULL,	NULL },
	{ "usbdev",		NULL,	NULL },
	{ "sdl",		NULL,	"needs a device model" },
	{ "vnc",		NULL,	"needs a device model" },
	{ "vnclisten",		NULL,	"needs a device model" },
	{ "vncpasswd",		NULL,	"needs a device model" },
	{ "vncdisplay",		NULL,	"needs a device model" },
	{ "vncunused",		NULL,	"needs a device model" },
	{ "keymap",		NULL,	"needs a device model" },
	{ "soundhw",		NULL,	"needs a device model" },
	{ "spice",		NULL,	"needs a device model" },
	{ "device_model_version", NULL,	"vmbuild runs no device model" },
	{ "device_model_override", NULL, "vmbuild runs no device model" },
	{ "device_model_args",	NULL,	"vmbuild runs no device model" },
	{ "pci",		NULL,	"no PCI passthrough" },
	{ "dtdev",		NULL,	"no device passthrough" },
	{ "irqs",		NULL,	"no device passthrough" },
	{ "iomem",		NULL,	"no device passthrough" },
	{ "ioports",		NULL,	"no device passthrough" },
	{ "rdm",		NULL,	"no device passthrough" },
	{ "e820_host",		NULL,	"no device passthrough" },
	{ "root",		NULL,	"write root= in cmdline" },
	{ "bootloader",		NULL,	"give the kernel itself" },
	{ "bootloader_args",	NULL,	"give the kernel itself" },
	{ "shadow_memory",	NULL,	"vmbuild sizes the paging pool" },
	{ "seclabel",		NULL,	"no XSM labels" },
	{ "channel",		NULL,	NULL },
	{ "p9",			NULL,	NULL },
	{ "tee",		NULL,	NULL },
	{ "max_grant_frames",	NULL,	"Xen's default is used" },
	{ "max_maptrack_frames", NULL,	"Xen's default is used" },
	{ "device_tree",	NULL,	"Arm only" },
	{ "firmware",		NULL,	"the kernel is loaded directly" },
	{ "acpi_firmware",	NULL,	NULL },
	{ "smbios_firmware",	NULL,	NULL },
	{ "vtpm",		NULL,	NULL },
	{ "vdispl",		NULL,	NULL },
	{ "vsnd",		NULL,	NULL },
	{ "vscsi",		NULL,	NULL },
	{ "console",		NULL,	NULL },
};

const struct vmb__unsupported *
vmb__unsupported_find(const char *key)
{
	for (size_t i = 0; i < sizeof(xl_unsupported) /
	    sizeof(xl_unsupported[0]); i++)
		if (!strcmp(key, xl_unsupported[i].key))
			return &xl_unsupported[i];
	return NULL;
}

/* Is `v` the value vmbuild honours for this key anyway? */
static bool
unsupported_same(const struct vmb__unsupported *u, const struct vmb_value *v)
{
	char num[24];

	if (!u->same)
		return false;
	if (v->type == VMB_VALUE_STRING)
		return !strcmp(v->u.s, u->same) ||
		    (!strcmp(u->same, "0") && !strcmp(v->u.s, "off"));
	if (v->type == VMB_VALUE_INT) {
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return !strcmp(num, u->same);
	}
	return false;
}

/* An xl key vmbuild does not implement: refused, or ignored on request. */
int
vmb__unsupported_set(struct vmb_guest *g, const struct vmb__unsupported *u,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	char why[160] = "";

	if (unsupported_same(u, v))
		return 0;
	if (u->same)
		snprintf(why, sizeof(why), " (only %s: %s)", u->same, u->why);
	else if (u->why)
		snprintf(why, sizeof(why), " (%s)", u->why);
	if (g->flags & VMB_CONFIG_IGNORE_UNSUPPORTED)
		return vmb__diag_add(diags, VMB_WARNING, where, v->line, u->key,
		    "not supported, ignored%s", why);
	return vmb__diag_add(diags, VMB_ERROR, where, v->line, u->key,
	    "not supported%s", why);
}
