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

/* The HVM keys of xl.cfg(5) that vmbuild's HVM guests do not have. */
#define WHY_HVM	"not implemented for HVM guests"
/* What xl gives the device model that vmbuild does not (dm.c). */
#define WHY_DM	"not given to the device model: only vnc = 1 and serial"
/* VNC is a Unix socket in vmbuildd's state directory (dm.c). */
#define WHY_VNC	"VNC only on a local socket (vnc = 1)"

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
	{ "vfb",		NULL,	"no PV framebuffer: an HVM guest has vnc = 1" },
	{ "vkb",		NULL,	"no PV keyboard: an HVM guest has vnc = 1" },
	{ "stdvga",		"0",	"vga = \"stdvga\" is the key" },
	{ "apic",		"1",	"an HVM guest always has its local "
	    "APIC emulated" },
	{ "pae",		"1",	"an HVM guest always has PAE (libxl's "
	    "CPUID policy)" },
	{ "nestedhvm",		"0",	WHY_HVM },
	{ "xen_platform_pci",	"1",	"an HVM guest always has the Xen "
	    "platform device (machine xenfv)" },
	{ "usb",		"0",	WHY_DM },
	{ "usbdevice",		NULL,	WHY_DM },
	{ "usbctrl",		NULL,	NULL },
	{ "usbdev",		NULL,	NULL },
	{ "sdl",		"0",	WHY_DM },
	{ "vnclisten",		NULL,	WHY_VNC },
	{ "vncpasswd",		NULL,	WHY_VNC },
	{ "vncdisplay",		NULL,	WHY_VNC },
	{ "vncunused",		NULL,	WHY_VNC },
	{ "keymap",		NULL,	WHY_DM },
	{ "soundhw",		NULL,	WHY_DM },
	{ "spice",		NULL,	WHY_DM },
	{ "device_model_args",	NULL,	"the device model's arguments are "
	    "libxl's, fixed by the guest's keys" },
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
	{ "firmware",		NULL,	"a PVH kernel is loaded directly "
	    "(or bootloader = \"grub\"); an HVM guest's BIOS is bios =" },
	{ "acpi_firmware",	NULL,	NULL },
	{ "smbios_firmware",	NULL,	NULL },
	{ "vtpm",		NULL,	NULL },
	{ "vdispl",		NULL,	NULL },
	{ "vsnd",		NULL,	NULL },
	{ "vscsi",		NULL,	NULL },
	{ "console",		NULL,	NULL },
	/* The rest of xl.cfg(5)'s keys (Xen 4.21), and xl's older names. */
	{ "device_model",	NULL,	"the device model is vmbuildd's "
	    "--device-model (Debian's qemu-system-xen)" },
	{ "device_model_args_hvm", NULL, "the device model's arguments are "
	    "libxl's, fixed by the guest's keys" },
	{ "device_model_args_pv", NULL,	"a PVH guest has no device model" },
	{ "device_model_user",	NULL,	"the device model's user is "
	    "vmbuildd's --dm-user" },
	{ "device_model_stubdomain_override", NULL, "no stub domains: the "
	    "device model runs in dom0" },
	{ "device_model_stubdomain_seclabel", NULL, "no stub domains: the "
	    "device model runs in dom0" },
	{ "dm_restrict",	"0",	"the device model drops root for "
	    "vmbuildd's --dm-user; not confined further" },
	{ "stubdomain_kernel",	NULL,	"no stub domains: the device model "
	    "runs in dom0" },
	{ "stubdomain_ramdisk",	NULL,	"no stub domains: the device model "
	    "runs in dom0" },
	{ "stubdomain_cmdline",	NULL,	"no stub domains: the device model "
	    "runs in dom0" },
	{ "stubdomain_memory",	NULL,	"no stub domains: the device model "
	    "runs in dom0" },
	{ "passthrough",	"disabled", "no device passthrough" },
	{ "gfx_passthru",	"0",	"no device passthrough" },
	{ "pci_permissive",	"0",	"no PCI passthrough" },
	{ "pci_msitranslate",	NULL,	"no PCI passthrough" },
	{ "pci_power_mgmt",	"0",	"no PCI passthrough" },
	{ "pci_seize",		"0",	"no PCI passthrough" },
	{ "rdm_mem_boundary",	NULL,	"no device passthrough" },
	{ "bios_path_override",	NULL,	"the BIOS is Debian's, chosen by "
	    "bios = \"seabios\" or \"ovmf\"" },
	{ "firmware_override",	NULL,	"hvmloader is Debian's (xen-utils)" },
	{ "smbios",		NULL,	WHY_HVM },
	{ "acpi_s3",		NULL,	WHY_HVM },
	{ "acpi_s4",		NULL,	WHY_HVM },
	{ "acpi_laptop_slate",	NULL,	WHY_HVM },
	{ "hvm_pirq",		NULL,	WHY_HVM },
	{ "ms_vm_genid",	NULL,	WHY_HVM },
	{ "nx",			NULL,	WHY_HVM },
	{ "vpt_align",		NULL,	WHY_HVM },
	{ "xen_platform_pci_bar_uc", NULL, WHY_HVM },
	{ "mca_caps",		NULL,	WHY_HVM },
	{ "nographic",		NULL,	WHY_DM },
	{ "opengl",		NULL,	WHY_DM },
	{ "display",		NULL,	WHY_DM },
	{ "xauthority",		NULL,	WHY_DM },
	{ "vncviewer",		NULL,	WHY_DM },
	{ "vkb_device",		NULL,	WHY_DM },
	{ "usbversion",		NULL,	WHY_DM },
	{ "spicehost",		NULL,	WHY_DM },
	{ "spiceport",		NULL,	WHY_DM },
	{ "spicetls_port",	NULL,	WHY_DM },
	{ "spicedisable_ticketing", NULL, WHY_DM },
	{ "spicepasswd",	NULL,	WHY_DM },
	{ "spiceagent_mouse",	NULL,	WHY_DM },
	{ "spicevdagent",	NULL,	WHY_DM },
	{ "spice_clipboard_sharing", NULL, WHY_DM },
	{ "spiceusbredirection", NULL,	WHY_DM },
	{ "spice_image_compression", NULL, WHY_DM },
	{ "spice_streaming_video", NULL, WHY_DM },
	{ "cpuid",		NULL,	"vmbuild applies libxl's default CPUID "
	    "policy" },
	{ "msr_relaxed",	"0",	"vmbuild applies libxl's default MSR "
	    "policy" },
	{ "vpmu",		NULL,	"Xen's default is used" },
	{ "altp2m",		NULL,	NULL },
	{ "altp2mhvm",		NULL,	WHY_HVM },
	{ "altp2m_count",	NULL,	NULL },
	{ "oos",		NULL,	WHY_HVM },
	{ "max_grant_version",	NULL,	"Xen's default is used" },
	{ "vmtrace_buf_kb",	NULL,	NULL },
	{ "vendor_device",	NULL,	WHY_HVM },
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
