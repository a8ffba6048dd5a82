/*
 * unsupported.c - the keys xl knows that vmbuild does not implement,
 * and what setting one does.  vmbuild.cfg(5) lists them (KEYS NOT
 * SUPPORTED; tests/ops/man.sh checks it against the table below).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
	{ "nomigrate",		"0",	"vmbuild's CPUID policy is libxl's "
	    "for a migratable guest" },
	{ "pool",		"Pool-0", "guests run in Xen's default "
	    "cpupool" },
	{ "driver_domain",	"0",	"vmbuild builds no driver domains" },
	{ "claim_mode",		"1",	"vmbuild always claims memory first" },
	{ "autoballoon",	"0",	"vmbuild never balloons dom0 down" },
	{ "vfb",		NULL,	"needs a device model" },
	{ "vkb",		NULL,	"needs a device model" },
	{ "stdvga",		"0",	"HVM only" },
	{ "apic",		NULL,	"HVM only" },
	{ "pae",		NULL,	"HVM only" },
	{ "nestedhvm",		"0",	"HVM only" },
	{ "xen_platform_pci",	NULL,	"HVM only" },
	{ "usb",		"0",	"needs a device model" },
	{ "usbdevice",		NULL,	"needs a device model" },
	{ "usbctrl",		NULL,	NULL },
	{ "usbdev",		NULL,	NULL },
	{ "sdl",		"0",	"needs a device model" },
	{ "vnclisten",		NULL,	"needs a device model" },
	{ "vncpasswd",		NULL,	"needs a device model" },
	{ "vncdisplay",		NULL,	"needs a device model" },
	{ "vncunused",		NULL,	"needs a device model" },
	{ "keymap",		NULL,	"needs a device model" },
	{ "soundhw",		NULL,	"needs a device model" },
	{ "spice",		NULL,	"needs a device model" },
	{ "device_model_args",	NULL,	"vmbuild runs no device model" },
	{ "pci",		NULL,	"no PCI passthrough" },
	{ "dtdev",		NULL,	"no device passthrough" },
	{ "irqs",		NULL,	"no device passthrough" },
	{ "iomem",		NULL,	"no device passthrough" },
	{ "ioports",		NULL,	"no device passthrough" },
	{ "rdm",		NULL,	"no device passthrough" },
	{ "e820_host",		"0",	"the host's memory map is only for PCI "
	    "passthrough, which vmbuild does not do" },
	/* but "grub" (set_bootloader) */
	{ "bootloader",		NULL,	"pygrub is not run: a PVH guest boots its "
	    "disk with bootloader = \"grub\" (GRUB for Xen PVH, "
	    "grub-xen-host), an HVM guest through its BIOS" },
	{ "bootloader_args",	NULL,	"give the kernel itself" },
	{ "seclabel",		NULL,	"no XSM labels" },
	{ "channel",		NULL,	NULL },
	{ "p9",			NULL,	NULL },
	{ "tee",		NULL,	NULL },
	{ "device_tree",	NULL,	"Arm only" },
	{ "firmware",		NULL,	"the kernel is loaded directly" },
	{ "acpi_firmware",	NULL,	NULL },
	{ "smbios_firmware",	NULL,	NULL },
	{ "vtpm",		NULL,	NULL },
	{ "vdispl",		NULL,	NULL },
	{ "vsnd",		NULL,	NULL },
	{ "vscsi",		NULL,	NULL },
	{ "console",		NULL,	NULL },
	/* The rest of xl.cfg(5)'s keys (Xen 4.21), and xl's older names. */
	{ "device_model",	NULL,	"vmbuild runs no device model" },
	{ "device_model_args_hvm", NULL, "vmbuild runs no device model" },
	{ "device_model_args_pv", NULL,	"vmbuild runs no device model" },
	{ "device_model_user",	NULL,	"vmbuild runs no device model" },
	{ "device_model_stubdomain_override", NULL, "vmbuild runs no device "
	    "model" },
	{ "device_model_stubdomain_seclabel", NULL, "vmbuild runs no device "
	    "model" },
	{ "dm_restrict",	"0",	"vmbuild runs no device model" },
	{ "stubdomain_kernel",	NULL,	"vmbuild runs no device model" },
	{ "stubdomain_ramdisk",	NULL,	"vmbuild runs no device model" },
	{ "stubdomain_cmdline",	NULL,	"vmbuild runs no device model" },
	{ "stubdomain_memory",	NULL,	"vmbuild runs no device model" },
	{ "passthrough",	"disabled", "no device passthrough" },
	{ "gfx_passthru",	"0",	"no device passthrough" },
	{ "pci_permissive",	"0",	"no PCI passthrough" },
	{ "pci_msitranslate",	NULL,	"no PCI passthrough" },
	{ "pci_power_mgmt",	"0",	"no PCI passthrough" },
	{ "pci_seize",		"0",	"no PCI passthrough" },
	{ "rdm_mem_boundary",	NULL,	"no device passthrough" },
	{ "bios_path_override",	NULL,	"HVM only: a PVH kernel is loaded "
	    "directly" },
	{ "firmware_override",	NULL,	"the kernel is loaded directly" },
	{ "smbios",		NULL,	"HVM only" },
	{ "acpi_s3",		NULL,	"HVM only" },
	{ "acpi_s4",		NULL,	"HVM only" },
	{ "acpi_laptop_slate",	NULL,	"HVM only" },
	{ "hvm_pirq",		NULL,	"HVM only" },
	{ "ms_vm_genid",	NULL,	"HVM only" },
	{ "nx",			NULL,	"HVM only" },
	{ "vpt_align",		NULL,	"HVM only" },
	{ "xen_platform_pci_bar_uc", NULL, "HVM only" },
	{ "mca_caps",		NULL,	"HVM only" },
	{ "nographic",		NULL,	"needs a device model" },
	{ "opengl",		NULL,	"needs a device model" },
	{ "display",		NULL,	"needs a device model" },
	{ "xauthority",		NULL,	"needs a device model" },
	{ "vncviewer",		NULL,	"needs a device model" },
	{ "vkb_device",		NULL,	"needs a device model" },
	{ "usbversion",		NULL,	"needs a device model" },
	{ "spicehost",		NULL,	"needs a device model" },
	{ "spiceport",		NULL,	"needs a device model" },
	{ "spicetls_port",	NULL,	"needs a device model" },
	{ "spicedisable_ticketing", NULL, "needs a device model" },
	{ "spicepasswd",	NULL,	"needs a device model" },
	{ "spiceagent_mouse",	NULL,	"needs a device model" },
	{ "spicevdagent",	NULL,	"needs a device model" },
	{ "spice_clipboard_sharing", NULL, "needs a device model" },
	{ "spiceusbredirection", NULL,	"needs a device model" },
	{ "spice_image_compression", NULL, "needs a device model" },
	{ "spice_streaming_video", NULL, "needs a device model" },
	{ "cpuid",		NULL,	"vmbuild applies libxl's default CPUID "
	    "policy" },
	{ "msr_relaxed",	"0",	"vmbuild applies libxl's default MSR "
	    "policy" },
	{ "vpmu",		NULL,	"Xen's default is used" },
	{ "altp2m",		NULL,	NULL },
	{ "altp2mhvm",		NULL,	"HVM only" },
	{ "altp2m_count",	NULL,	NULL },
	{ "oos",		NULL,	"HVM only" },
	{ "max_grant_version",	NULL,	"Xen's default is used" },
	{ "vmtrace_buf_kb",	NULL,	NULL },
	{ "vendor_device",	NULL,	"HVM only" },
	{ "pvshim",		"0",	"PV only" },
	{ "pvshim_path",	NULL,	"PV only" },
	{ "pvshim_cmdline",	NULL,	"PV only" },
	{ "pvshim_extra",	NULL,	"PV only" },
	{ "pvcalls",		NULL,	NULL },
	{ "vuart",		NULL,	"Arm only" },
	{ "gic_version",	NULL,	"Arm only" },
	{ "nr_spis",		NULL,	"Arm only" },
	{ "sve",		NULL,	"Arm only" },
	{ "arm_sci",		NULL,	"Arm only" },
	{ "trap_unmapped_accesses", NULL, "Arm only" },
	{ "virtio",		NULL,	"no virtio devices" },
	{ "llc_colors",		NULL,	"no cache colouring" },
	{ "init_seclabel",	NULL,	"no XSM labels" },
	{ "bootloader_restrict", NULL,	"give the kernel itself" },
	{ "bootloader_user",	NULL,	"give the kernel itself" },
	{ "xenstore_feature_mask", NULL, NULL },
	{ "xenstore_quota",	NULL,	NULL },
	{ "xend_suspend_evtchn_compat", NULL, "PV only" },
	{ "vif2",		NULL,	"use vif" },
	{ "period",		NULL,	"the SEDF scheduler was removed from Xen" },
	{ "slice",		NULL,	"the SEDF scheduler was removed from Xen" },
	{ "latency",		NULL,	"the SEDF scheduler was removed from Xen" },
	{ "extratime",		NULL,	"the SEDF scheduler was removed from Xen" },
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

/*
 * bootloader = "grub": a PVH guest's kernel is Debian's GRUB for Xen PVH,
 * which reads the guest's own /boot/grub/grub.cfg.  (xl runs pygrub in
 * dom0 for it, which vmbuild does not.)
 */
static int
set_bootloader(struct vmb_guest *g, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags)
{
	char *path;

	if (g->type == VMB_GUEST_HVM)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line,
		    "bootloader", "an HVM guest boots its disk through its "
		    "BIOS (bios =): no bootloader");
	if (g->keys_given & (1ull << VMB_KEY_KERNEL))
		return vmb__diag_add(diags, VMB_ERROR, where, v->line,
		    "bootloader", "kernel (line %d) is given already: "
		    "bootloader = \"grub\" is kernel = \"%s\"; give one of "
		    "them", g->key_line[VMB_KEY_KERNEL], VMB_GRUB_PVH_PATH);
	if ((path = strdup(VMB_GRUB_PVH_PATH)) == NULL)
		return -ENOMEM;
	free(g->kernel);
	g->kernel = path;
	g->keys_set |= 1ull << VMB_KEY_KERNEL;
	g->keys_given |= 1ull << VMB_KEY_KERNEL;
	g->key_line[VMB_KEY_KERNEL] = v->line;
	g->grub_line = v->line ? v->line : -1;
	return 0;
}

/* An xl key vmbuild does not implement: refused, or ignored on request. */
int
vmb__unsupported_set(struct vmb_guest *g, const struct vmb__unsupported *u,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	char why[160] = "";

	if (!strcmp(u->key, "bootloader") && v->type == VMB_VALUE_STRING &&
	    !strcmp(v->u.s, "grub"))
		return set_bootloader(g, v, where, diags);
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
