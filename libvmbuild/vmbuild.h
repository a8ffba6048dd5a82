/*
 * vmbuild.h - libvmbuild, the domain-building library of vmbuild.
 *
 * Parts: guest configuration (xl.cfg syntax and a key/value interface for
 * other front ends), scrub-aware NUMA placement, the populate engine,
 * image loading, and hypervisor backends ("sim" for hvsim, "xen").
 *
 * Error convention, for every function here: return 0 (or a count where
 * documented) on success and a negative errno on failure.  Outputs named
 * ret_* are written only on success, with one exception: vmb_build_run()
 * writes its result on failure too (domid, failed_phase and error).  The library never exits and never
 * logs above debug level: debug messages go to the function given to
 * vmb_ctx_set_log(), if any.  Configuration errors are not logged at all:
 * they are returned in a struct vmb_diags, each naming file, line and key.
 *
 * Threads: a struct vmb_ctx may be used from several threads at once.
 * A struct vmb_build is run by one thread; vmb_build_cancel() may be
 * called from any other.
 *
 * Memory: structures returned through ret_* pointers are malloc'd and
 * freed with the matching vmb_*_free(); all vmb_*_free() accept NULL.
 */
#ifndef VMBUILD_H
#define VMBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VMB_VERSION		"0.1.0"

#define VMB_MAX_NODES		64
#define VMB_MAX_VNODES		16
#define VMB_MAX_VCPUS		256
/*
 * max_event_channels: the toolstack itself takes two ports (xenstore,
 * console); no guest can use more than the FIFO ABI's 2^17 - 1.
 */
#define VMB_MIN_EVENT_CHANNELS	2
#define VMB_MAX_EVENT_CHANNELS	131071
/* max_grant_frames, max_maptrack_frames: a sanity bound; Xen has its own. */
#define VMB_MAX_GRANT_FRAMES	65536
#define VMB_NAME_LEN		64	/* including the NUL */
#define VMB_DOMID_INVALID	0x7ff4u

/* ------------------------------------------------------------------ */
/* Diagnostics: configuration errors and warnings.                     */

enum vmb_severity { VMB_ERROR = 0, VMB_WARNING = 1 };

struct vmb_diag {
	enum vmb_severity severity;
	char	file[256];	/* config file name, or "request" */
	int	line;		/* 1-based; 0 when unknown */
	char	key[64];	/* offending key; "" when none */
	char	msg[256];	/* why */
};

struct vmb_diags {
	struct vmb_diag *v;
	size_t	n;
	size_t	nr_errors;
};

/* Format one diagnostic as "file:line: key: msg" (or shorter). */
void vmb_diag_format(const struct vmb_diag *d, char *buf, size_t len);
/* Frees the array, not the struct. */
void vmb_diags_done(struct vmb_diags *diags);
/*
 * Add one diagnostic found by the caller (vmbuildd's checks against the
 * host and the client): -EINVAL for an error, 0 for a warning.
 */
int vmb_diags_add(struct vmb_diags *diags, enum vmb_severity sev,
    const char *file, int line, const char *key, const char *msg);

/* ------------------------------------------------------------------ */
/* UUIDs (libuuid): "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".            */

#define VMB_UUID_STRLEN		37	/* including the NUL */

/* A random (version 4) UUID. */
void vmb_uuid_new(uint8_t uuid[16]);
/* The 36-character form, either case; -EINVAL for anything else. */
int vmb_uuid_from_str(const char *s, uint8_t ret_uuid[16]);
/*
 * A guest's name as the configuration's "name" takes it: 1 to
 * VMB_NAME_LEN - 1 letters, digits, '-', '_' and '.', not starting with
 * '-' or '.'.  0, or -EINVAL with why in `why` (`len` bytes).
 */
int vmb_name_check(const char *name, char *why, size_t len);
/* Lower case. */
void vmb_uuid_to_str(const uint8_t uuid[16], char buf[VMB_UUID_STRLEN]);
/* All zero: no UUID. */
bool vmb_uuid_is_null(const uint8_t uuid[16]);
/*
 * The Levenshtein distance of two names, for "did you mean" (a key of
 * the configuration, a command of vmctl); names of 31 characters or
 * more are far (99).  Self-contained (editdist.c): vmctl, which links
 * nothing else of the library, compiles that file in.
 */
size_t vmb_edit_distance(const char *a, const char *b);

/* ------------------------------------------------------------------ */
/* Guest description.                                                  */

enum vmb_guest_type { VMB_GUEST_PVH = 0, VMB_GUEST_HVM, VMB_GUEST_PV };

/*
 * The keys of the key/value interface, defined once in keys.def (xl
 * name, field, kind, unit, default, JSON member, man-page line), to
 * remember where each was set.
 */
enum vmb_key {
#define VMB_KEY(id, xl, field, kind, unit, def, daemon, set, json, form, man) \
	VMB_KEY_##id,
#include "keys.def"
#undef VMB_KEY
	VMB_KEY_MAX
};
/* Keys from this one on are an HVM guest's (struct vmb_hvm). */
#define VMB_KEY_HVM_FIRST	VMB_KEY_BUILDER

/*
 * Why a domain shut down: Xen's SHUTDOWN_* codes, in their order (the
 * guest's SCHEDOP_shutdown, or a toolstack's remote shutdown).
 */
enum vmb_shutdown_reason {
	VMB_SHUTDOWN_POWEROFF = 0,
	VMB_SHUTDOWN_REBOOT,
	VMB_SHUTDOWN_SUSPEND,
	VMB_SHUTDOWN_CRASH,
	VMB_SHUTDOWN_WATCHDOG,
	VMB_SHUTDOWN_SOFT_RESET,
	VMB_SHUTDOWN_NR
};

/* "poweroff", "reboot", "suspend", "crash", "watchdog", "soft_reset". */
const char *vmb_shutdown_reason_name(enum vmb_shutdown_reason reason);

/*
 * What the toolstack does with a domain that shut down (xl.cfg's
 * on_poweroff, on_reboot, on_crash, on_watchdog, on_soft_reset): destroy
 * it, destroy it and build it again from the same description, or leave
 * it as it is (shut down, its memory kept) for someone to look at.
 * xl's rename-restart, coredump-* and soft-reset are refused.
 */
enum vmb_action {
	VMB_ACTION_DESTROY = 0,
	VMB_ACTION_RESTART,
	VMB_ACTION_PRESERVE,
};

/* "destroy", "restart", "preserve". */
const char *vmb_action_name(enum vmb_action action);
/* The reverse; -EINVAL for another name. */
int vmb_action_parse(const char *name, enum vmb_action *ret_action);

/* tsc_mode= (Xen's TSC modes; native_paravirt was removed in 4.12). */
enum vmb_tsc_mode { VMB_TSC_DEFAULT = 0, VMB_TSC_ALWAYS_EMULATE = 1,
	VMB_TSC_NATIVE = 2 };
/* timer_mode= (HVMPTM_*); the default is no_delay_for_missed_ticks. */
enum vmb_timer_mode { VMB_TIMER_DELAY_FOR_MISSED_TICKS = 0,
	VMB_TIMER_NO_DELAY_FOR_MISSED_TICKS = 1,
	VMB_TIMER_NO_MISSED_TICKS_PENDING = 2,
	VMB_TIMER_ONE_MISSED_TICK_PENDING = 3 };

struct vmb_vnode {
	uint32_t pnode;		/* host node */
	uint64_t size_bytes;
	uint64_t vcpus[VMB_MAX_VCPUS / 64];	/* bitmap of vCPUs */
	/* vdistances= to vnode 0, 1, ...; all 0: 10 local, 20 remote */
	uint8_t	distances[VMB_MAX_VNODES];
};

/*
 * Devices: xl's disk= and vif= (xl-disk-configuration(5),
 * xl-network-configuration(5)).  On Xen, dom0's blkback and netback
 * serve them, set up by the hotplug scripts in /etc/xen/scripts as
 * libxl runs them; on hvsim, which has no I/O, they are only recorded.
 */
#define VMB_MAX_DISKS		64
#define VMB_MAX_NICS		32
#define VMB_VDEV_LEN		32	/* "xvda", "d536p37", ... */
#define VMB_IFNAME_LEN		16	/* IFNAMSIZ */

enum vmb_disk_format { VMB_DISK_RAW = 0, VMB_DISK_QCOW, VMB_DISK_QCOW2,
	VMB_DISK_VHD, VMB_DISK_QED, VMB_DISK_EMPTY };

struct vmb_disk {
	char	*target;	/* image file or block device */
	char	vdev[VMB_VDEV_LEN];	/* as written: "xvda", "hdc", "d1p2" */
	uint32_t devid;		/* the vbd number (xen-vbd-interface(7)) */
	enum vmb_disk_format format;
	bool	readonly;
	bool	cdrom;		/* devtype=cdrom (refused at validation) */
	bool	discard;	/* advertise discard; default: not readonly */
	bool	trusted;	/* default true */
	bool	direct_io_safe;
	char	*script;	/* script=; NULL: "block" */
	char	*spec;		/* the specification as written */
	int	line;		/* where it was written; 0 unknown */
};

struct vmb_nic {
	uint32_t devid;		/* its index in vif=, or devid= */
	uint8_t	mac[6];		/* mac=, valid when mac_set */
	bool	mac_set;	/* else derived at build (vmb_nic_mac) */
	bool	trusted;	/* default true */
	char	bridge[VMB_IFNAME_LEN];		/* default "xenbr0" */
	char	vifname[VMB_IFNAME_LEN];	/* "": vifDOMID.DEVID */
	char	*ip;		/* ip=, for the script; NULL if none */
	char	*script;	/* script=; NULL: "vif-bridge" */
	char	*gatewaydev;	/* gatewaydev= (netdev=); NULL if none */
	uint32_t mtu;		/* 0: the bridge's */
	uint64_t rate_bytes;	/* rate=: bytes per interval; 0 none */
	uint32_t rate_usecs;	/* rate=: the interval */
	char	*spec;		/* the specification as written */
	int	line;
	/*
	 * An HVM guest's emulated NIC beside its vif (xl's type=ioemu, the
	 * default for an HVM guest): "e1000" or "rtl8139" (model=, default
	 * rtl8139); "" for a vif only (type=vif, and every PVH guest's).
	 */
	char	model[16];
	bool	vif_only;	/* type=vif: no emulated NIC */
};

/*
 * The IDE unit (0-3) an HVM guest's device model emulates a disk as, as
 * libxl 4.17 does for qemu-xen: hd[a-d] and xvd[a-d], whole disks (a
 * read-only xvd disk not: qemu-xen has no read-only IDE disk); -1 for a
 * disk served by its PV backend only.
 */
int vmb_disk_ide_index(const struct vmb_disk *disk);
/*
 * With hdtype = "ahci": the AHCI port (0-5) of a disk, as libxl 4.17
 * gives qemu-xen the first six, hd[a-f] and xvd[a-f]; -1 for a CD-ROM
 * (it stays an IDE unit) or a read-only disk (PV only: qemu-xen has no
 * read-only AHCI disk either).
 */
int vmb_disk_ahci_index(const struct vmb_disk *disk);

/*
 * An HVM guest's own keys (type = "hvm"), as xl.cfg(5) names them; each
 * holds its default (keys.def) until written.
 */
#define VMB_HVM_MMIO_HOLE_DEFAULT (256ull << 20)	/* libxl: 0xf0000000 up */
#define VMB_HVM_MMIO_HOLE_MIN_MIB 256	/* xl's bounds of mmio_hole */
#define VMB_HVM_MMIO_HOLE_MAX_MIB 3840
struct vmb_hvm {
	uint32_t shadow_mib;	/* shadow_memory=; 0: vmbuild sizes it */
	bool	viridian;	/* Hyper-V enlightenments */
	bool	acpi;
	bool	hpet;
	bool	localtime;	/* the RTC runs in the host's local time */
	bool	vnc;		/* VNC on a local socket of vmbuildd's */
	uint32_t rtc_timeoffset;	/* seconds, as libxl's (uint32) */
	char	vga[8];		/* "cirrus", "stdvga", "none" */
	uint32_t videoram_mib;	/* 0: the card's default */
	char	bios[8];	/* "seabios", "ovmf" */
	uint64_t mmio_hole_bytes;	/* 0: VMB_HVM_MMIO_HOLE_DEFAULT */
	char	dm_version[16];	/* "qemu-xen" */
	char	*dm_override;	/* device_model_override=; NULL none */
	char	serial[32];	/* "pty", "none"; "" none */
	char	boot[8];	/* boot order, of c (disk), d (cdrom), n */
	char	hdtype[8];	/* "ide", "ahci": the emulated disks' controller */
};

struct vmb_guest {
	char	name[VMB_NAME_LEN];
	enum vmb_guest_type type;
	uint64_t memory_bytes;	/* populated at build */
	uint64_t maxmem_bytes;	/* >= memory_bytes */
	uint32_t vcpus;
	uint32_t maxvcpus;	/* >= vcpus */
	/*
	 * The highest event channel port the guest may use (xl's
	 * max_event_channels, default 1023 as libxl's): Xen's
	 * max_evtchn_port at domain creation.
	 */
	uint32_t max_event_channels;
	/*
	 * max_grant_frames, max_maptrack_frames: the guest's grant table
	 * and maptrack sizes at domain creation; 0 leaves Xen's default.
	 */
	uint32_t max_grant_frames;
	uint32_t max_maptrack_frames;
	/*
	 * cpu_weight= and cap= (keys_set says whether each was written):
	 * the scheduler's weight (1..65535) and cap (percent of one CPU,
	 * 0: none, at most 100 per vCPU), set at build as xl does.
	 */
	uint32_t cpu_weight;
	uint32_t cap;
	/*
	 * hap=1/0 (keys_set says whether it was written): HAP or shadow
	 * paging.  Unset, the build takes HAP where the host has it, else
	 * shadow paging, as libxl does.
	 */
	bool	hap;
	char	*kernel;	/* absolute path after validation */
	char	*ramdisk;	/* NULL if none */
	char	*cmdline;	/* NULL if none */
	char	*root;	/* root=, until vmb_guest_check puts it in cmdline */
	/*
	 * bootloader = "grub": its line (kernel is then Debian's GRUB for
	 * Xen PVH, VMB_GRUB_PVH_PATH, which boots the guest's own disk);
	 * 0 when not written.
	 */
	int	grub_line;
	char	*cpus;		/* as written, e.g. "nodes:0-1"; NULL if none */
	char	*cpus_soft;	/* soft affinity, same syntax; NULL if none */
	enum vmb_tsc_mode tsc_mode;
	enum vmb_timer_mode timer_mode;
	/*
	 * on_poweroff & co., by reason: xl's defaults unless written
	 * (destroy; restart for reboot).  A suspended domain is always
	 * left as it is: on[VMB_SHUTDOWN_SUSPEND] is PRESERVE and has no key.
	 */
	enum vmb_action on[VMB_SHUTDOWN_NR];
	uint64_t node_mask;	/* nodes allowed by cpus="nodes:..."; 0 = any */
	uint32_t nr_vnodes;
	struct vmb_vnode vnodes[VMB_MAX_VNODES];
	uint8_t	uuid[16];	/* all zero: generated at build */
	uint32_t nr_disks;
	struct vmb_disk *disks;	/* nr_disks, in the order written */
	uint32_t nr_nics;
	struct vmb_nic *nics;
	struct vmb_hvm hvm;	/* type = "hvm" only */
	char	*source;	/* file the description came from, or NULL */
	uint32_t flags;		/* VMB_CONFIG_* the keys were read with */
	uint64_t keys_set;	/* bitmap of 1 << enum vmb_key */
	/* Keys written, valid or not: a bad value is not also "missing". */
	uint64_t keys_given;
	int	key_line[VMB_KEY_MAX];	/* line each key was set on; 0 unknown */
};

/* A value of the key/value interface, as xl.cfg or JSON give it. */
enum vmb_value_type { VMB_VALUE_STRING, VMB_VALUE_INT, VMB_VALUE_LIST };

struct vmb_value {
	enum vmb_value_type type;
	int	line;		/* where it was written; 0 when unknown */
	union {
		const char *s;
		long long i;
		struct {
			const struct vmb_value *v;
			size_t	n;
		} list;
	} u;
};

int vmb_guest_new(struct vmb_guest **ret_guest);
void vmb_guest_free(struct vmb_guest *guest);
int vmb_guest_copy(const struct vmb_guest *src, struct vmb_guest **ret_guest);

/*
 * How keys are read (guest->flags, and the flags of vmb_config_parse).
 * An xl key vmbuild does not implement (pci, vfb, sdl, vnc, usb, ...) is
 * an error, "not supported", unless VMB_CONFIG_IGNORE_UNSUPPORTED makes
 * it a warning naming it: never dropped without a word.
 */
#define VMB_CONFIG_IGNORE_UNSUPPORTED	(1u << 8)	/* apart from VMB_CHECK_* */

/*
 * Set one key (the xl.cfg names of keys.def: name, type, memory, maxmem,
 * vcpus, maxvcpus, max_event_channels, hap, kernel, ramdisk, cmdline,
 * extra, cpus, cpus_soft, tsc_mode, timer_mode, on_poweroff, on_reboot,
 * on_crash, on_watchdog, on_soft_reset, vnuma, uuid, disk, vif).
 * Sizes are in MiB as in xl.cfg.  An unknown key or a bad value adds a
 * diagnostic (file `where`, the value's line) and returns -EINVAL; an
 * unsupported key too, unless guest->flags has
 * VMB_CONFIG_IGNORE_UNSUPPORTED (then a warning and 0).
 */
int vmb_guest_set(struct vmb_guest *guest, const char *key,
    const struct vmb_value *value, const char *where, struct vmb_diags *diags);
/*
 * Put `n` disks (vifs) in place of the guest's, which are freed; the
 * array (malloc'd, NULL when n is 0) and what it points to are the
 * guest's now.  For a caller that holds devices read some other way
 * than from disk= and vif= (vmbuildd's restart: from the VM's current
 * configuration); vmb_guest_check() checks them as any.
 */
void vmb_guest_take_disks(struct vmb_guest *guest, struct vmb_disk *disks,
    uint32_t n);
void vmb_guest_take_nics(struct vmb_guest *guest, struct vmb_nic *nics,
    uint32_t n);

/*
 * Check the description as a whole (mandatory keys, memory <= maxmem,
 * vnuma sizes, kernel readable) and fill defaults.  Relative kernel and
 * ramdisk paths are taken relative to `basedir` (NULL: the current
 * directory).  Returns -EINVAL with diagnostics when invalid.
 */
int vmb_guest_validate(struct vmb_guest *guest, const char *basedir,
    const char *where, struct vmb_diags *diags);
/*
 * The same with flags: without VMB_CHECK_FILES the kernel and ramdisk
 * paths are only made absolute (joined to basedir), and no file is
 * looked at, for a caller that opens none of the paths it is given
 * (vmbuildd: clients pass their images as descriptors).
 * vmb_guest_validate() is vmb_guest_check() with VMB_CHECK_FILES.
 */
#define VMB_CHECK_FILES		(1u << 0)
int vmb_guest_check(struct vmb_guest *guest, const char *basedir,
    const char *where, unsigned flags, struct vmb_diags *diags);

/*
 * The keys of keys.def as a table, for a caller that shows or reads a
 * guest in a form of its own (vmbuildd's JSON, daemon/guestjson.c):
 * libvmbuild writes no JSON.  MEMBER and FORM are keys.def's JSON and
 * FORM columns; the field is at `offset` in struct vmb_guest, `size`
 * bytes (vmb_guest_field); `owned`: a char * the guest owns (free and
 * strdup it).  NULL for a key past VMB_KEY_MAX.
 */
enum vmb_key_form { VMB_FORM_STRING, VMB_FORM_NUMBER, VMB_FORM_BOOL,
	VMB_FORM_TYPE, VMB_FORM_ACTION, VMB_FORM_UUID, VMB_FORM_VNUMA,
	VMB_FORM_DISKS, VMB_FORM_VIFS };

struct vmb_key_desc {
	const char *xl;		/* its name in xl.cfg */
	const char *member;	/* its member in the JSON form; NULL none */
	enum vmb_key_form form;
	size_t	offset, size;	/* of its field in struct vmb_guest */
	bool	owned;
};
const struct vmb_key_desc *vmb_key_desc(enum vmb_key key);
/* Key `key`'s field in g (vmb_key_desc()->size bytes). */
void *vmb_guest_field(struct vmb_guest *g, enum vmb_key key);
const void *vmb_guest_field_const(const struct vmb_guest *g,
    enum vmb_key key);

/*
 * The video memory an HVM guest's device model gets: videoram=, else
 * libxl's default for its vga (stdvga 16 MiB, cirrus 8); 0 for none.
 */
uint32_t vmb_hvm_videoram_mib(const struct vmb_guest *guest);

/*
 * Where a guest's RAM lies, as a build lays it out (layout.c): RAM is
 * [0, lowmem_end) less the VGA hole [vga_start, vga_end) of an HVM
 * guest (both 0 for PVH), then [4 GiB, highmem_end) (0: none); the MMIO
 * hole is [hole_start, 4 GiB); `populated` bytes hold memory.
 */
struct vmb_ram_layout {
	uint64_t lowmem_end, highmem_end, hole_start;
	uint64_t vga_start, vga_end;
	uint64_t populated;
};
int vmb_guest_ram_layout(const struct vmb_guest *guest,
    struct vmb_ram_layout *ret);

/* "pvh", "hvm", "pv"; the reverse -EINVAL for another name. */
const char *vmb_guest_type_name(enum vmb_guest_type type);
int vmb_guest_type_parse(const char *name, enum vmb_guest_type *ret_type);
/* A CPU or node list, "0-3,5", into a bitmap of nbits; -EINVAL if bad. */
int vmb_ranges_parse(const char *s, uint64_t *bits, unsigned nbits);

/*
 * Parse xl.cfg syntax: a file, or text held in memory (`where` names it
 * in diagnostics; relative paths are resolved against `basedir`).  On
 * failure, *diags holds every error found, not just the first.
 */
int vmb_config_parse_file(const char *path, struct vmb_guest **ret_guest,
    struct vmb_diags *diags);
int vmb_config_parse_text(const char *text, size_t len, const char *where,
    const char *basedir, struct vmb_guest **ret_guest,
    struct vmb_diags *diags);
/*
 * vmb_config_parse_text() with flags: vmb_guest_check()'s
 * (VMB_CHECK_FILES) and how keys are read (VMB_CONFIG_*).  With
 * VMB_CONFIG_NO_CHECK the keys are only read: the caller changes the
 * description (vmbuildd: a restart puts in the devices the VM has now)
 * and calls vmb_guest_check() itself.
 */
#define VMB_CONFIG_NO_CHECK		(1u << 9)
/*
 * With VMB_CONFIG_KEEP_INVALID, an invalid configuration (-EINVAL,
 * errors in diags) still returns the description as far as it was read,
 * for a caller that goes on to report what else is wrong (vmbuildd's
 * config.check, with vmb_guest_dry_run); it must not be built.
 */
#define VMB_CONFIG_KEEP_INVALID		(1u << 10)
int vmb_config_parse(const char *text, size_t len, const char *where,
    const char *basedir, unsigned flags, struct vmb_guest **ret_guest,
    struct vmb_diags *diags);
/* vmb_config_parse_file() with those flags. */
int vmb_config_load(const char *path, unsigned flags,
    struct vmb_guest **ret_guest, struct vmb_diags *diags);

/*
 * One disk specification in xl's syntax (xl-disk-configuration(5),
 * parsed by Xen's own libxlutil): positional "target,format,vdev,access",
 * key=value, flags and the deprecated prefixes ("phy:", "file:", ...).
 * What vmbuild cannot serve (qcow2, cdrom, other backends) is refused
 * by vmb_disk_check(), not here.  `where` and `line` name it in
 * diagnostics; the key is "disk".  Free with vmb_disk_done().
 */
int vmb_disk_parse(const char *spec, const char *where, int line,
    struct vmb_disk *ret_disk, struct vmb_diags *diags);
/*
 * Can vmbuild serve it: raw format, a disk not a cdrom, a vdev it knows,
 * a target that exists (a regular file or a block device; relative
 * paths are made absolute against basedir) and that this process may
 * read (and write, for a read-write disk).  A disk is never dropped:
 * --ignore-unsupported does not apply to these errors.
 */
int vmb_disk_check(struct vmb_disk *disk, const char *basedir,
    const char *where, struct vmb_diags *diags);
void vmb_disk_done(struct vmb_disk *disk);
/*
 * The vbd number of a vdev name ("xvda" 51712, "xvdq" 268439552, "hdc",
 * "sdb3", "d1p2", or the number itself), as xen-vbd-interface(7);
 * -EINVAL for anything else.
 */
int vmb_vdev_number(const char *vdev, uint32_t *ret_devid);

/*
 * One vif specification (xl-network-configuration(5)): comma-separated
 * mac=, bridge=, ip=, script=, vifname=, gatewaydev=, mtu=, rate=,
 * devid=, type=vif, backend=0, trusted/untrusted.  `devid` is its index
 * in vif= (devid= overrides it).  Keys of HVM guests and driver domains
 * (model=, type=ioemu, backend=other) are refused as not supported,
 * unless `flags` has VMB_CONFIG_IGNORE_UNSUPPORTED.
 */
int vmb_nic_parse(const char *spec, uint32_t devid, uint32_t flags,
    const char *where, int line, struct vmb_nic *ret_nic,
    struct vmb_diags *diags);
void vmb_nic_done(struct vmb_nic *nic);
/*
 * The MAC the nic gets: mac= as written, else one in Xen's OUI
 * 00:16:3e derived from the domain's UUID and the devid, so that a VM
 * keeps its MACs as long as its UUID (a restarted daemon, a re-created
 * VM with uuid=).
 */
void vmb_nic_mac(const uint8_t uuid[16], const struct vmb_nic *nic,
    uint8_t ret_mac[6]);

/* "raw", "qcow", ...; the reverse -EINVAL for another name. */
const char *vmb_disk_format_name(enum vmb_disk_format format);
int vmb_disk_format_parse(const char *name, enum vmb_disk_format *ret);
/* "00:16:3e:12:34:56" into mac; -EINVAL if it is not one. */
int vmb_mac_parse(const char *s, uint8_t ret_mac[6]);
/* Deep copies of one device into *ret (0 or -ENOMEM). */
int vmb_disk_copy(const struct vmb_disk *src, struct vmb_disk *ret);
int vmb_nic_copy(const struct vmb_nic *src, struct vmb_nic *ret);
/*
 * Hot-plug: a copy of `disk` (`nic`) appended to the guest's, or the
 * one with that devid taken out (-ENOENT: none).  -ENOSPC past
 * VMB_MAX_DISKS (VMB_MAX_NICS).
 */
int vmb_guest_add_disk(struct vmb_guest *g, const struct vmb_disk *disk);
int vmb_guest_remove_disk(struct vmb_guest *g, uint32_t devid);
int vmb_guest_add_nic(struct vmb_guest *g, const struct vmb_nic *nic);
int vmb_guest_remove_nic(struct vmb_guest *g, uint32_t devid);

/* ------------------------------------------------------------------ */
/* Context and backends.                                               */

struct vmb_ctx;

/* Capabilities of the backend and hypervisor behind a context. */
#define VMB_CAP_BATCH_POPULATE	(1u << 0)	/* companion populate hypercall */
#define VMB_CAP_SCRUB_PROGRESS	(1u << 1)
#define VMB_CAP_COUNTERS	(1u << 2)	/* companion counters */
#define VMB_CAP_PERF_COUNTERS	(1u << 3)	/* Xen perf counters */
#define VMB_CAP_IMAGE_LOAD	(1u << 4)	/* guest memory can be mapped */
#define VMB_CAP_CLAIMS		(1u << 5)
#define VMB_CAP_SHADOW		(1u << 6)	/* shadow paging */
#define VMB_CAP_HAP		(1u << 8)	/* hardware-assisted paging */
/*
 * The host's nodes and CPUs are the ones this process runs on (hvsim
 * with --topology host): populate workers may be pinned to a node's
 * CPUs.  Without it the topology is modelled, and CPU numbers that
 * happen to match this machine's mean nothing.  Never set on Xen: the
 * toolstack runs on dom0's vCPUs, not on the host's CPUs.
 */
#define VMB_CAP_HOST_TOPOLOGY	(1u << 7)
/*
 * Disks and vifs are set up (Xen: blkback, netback, hotplug scripts);
 * without it (hvsim, which has no I/O) they are only recorded.
 */
#define VMB_CAP_DEVICES		(1u << 9)
/*
 * HVM guests (type = "hvm") are built: hvsim.  Not yet on Xen, whose
 * backend refuses them (a build fails "hvm: not yet on Xen").
 */
#define VMB_CAP_HVM		(1u << 10)
/*
 * The hypervisor's work for a request runs on the CPU that makes it (a
 * Xen hypercall, on dom0's vCPU), not on a CPU of its own (hvsim's
 * threads): how long this process's CPUs wait for physical ones is the
 * populate's business (vmb_build_result.cpu_wait).
 */
#define VMB_CAP_CALLER_CPU	(1u << 11)

/*
 * How long this process's CPUs wait for physical ones (cpuwait.c): the
 * steal time of /proc/stat, in clock ticks added over `cpus` CPUs.  A
 * sample of the calling thread's CPUs (its affinity) is 0, -ENODATA
 * where the kernel reports no steal, or a negative errno.  The share
 * between two samples is the steal over the time wanted (run + steal),
 * idle left out; -ENODATA when the samples are not of the same CPUs or
 * less than 0.2 s of CPU time was wanted between them.
 */
struct vmb_cpuwait {
	uint64_t run;		/* user, nice, system, irq, softirq */
	uint64_t steal;
	uint32_t cpus;		/* 0: nothing read */
};
/*
 * At or above this share of their wanted time spent waiting, the
 * populate engine runs one worker per node (populate.c): a vCPU that
 * waits that long shares its pCPU with a guest that is busy, and the
 * lab measured more workers slower than one then (tests/lab/README.md).
 */
#define VMB_CPUWAIT_SERIAL	0.33
int vmb_cpuwait_sample(struct vmb_cpuwait *ret);
int vmb_cpuwait_share(const struct vmb_cpuwait *a,
    const struct vmb_cpuwait *b, double *ret_share);

/*
 * Open a backend: "sim:PATH" (hvsim's socket), "xen", or "auto" (xen if
 * /dev/xen/privcmd or /proc/xen/privcmd opens, else -ENODEV).
 */
int vmb_ctx_open(const char *hypervisor, struct vmb_ctx **ret_ctx);
void vmb_ctx_free(struct vmb_ctx *ctx);
const char *vmb_ctx_backend(const struct vmb_ctx *ctx);	/* "sim", "xen" */
uint32_t vmb_ctx_caps(const struct vmb_ctx *ctx);
/* Human description of the hypervisor, e.g. "hvsim 0.1 (real, batch)". */
const char *vmb_ctx_hypervisor(const struct vmb_ctx *ctx);

typedef void vmb_log_fn(void *user, const char *msg);
void vmb_ctx_set_log(struct vmb_ctx *ctx, vmb_log_fn *fn, void *user);
/*
 * Bound each hypervisor call to `ms` milliseconds (0: no bound), where
 * the backend can (sim: every request; xen: not applicable).  A call
 * that takes longer fails with -ETIMEDOUT.  Default: 30 s (sim).
 */
void vmb_ctx_set_timeout(struct vmb_ctx *ctx, unsigned ms);
/*
 * How long a device's hotplug script may run when it is set up (default
 * 40 s, libxl's LIBXL_HOTPLUG_TIMEOUT); the backend is waited for to
 * reach InitWait, and to close when one is taken back, a quarter of it
 * (libxl's 10 s).  For hosts whose scripts are slow (iSCSI, DRBD, a
 * loaded dom0).
 */
void vmb_ctx_set_hotplug_timeout(struct vmb_ctx *ctx, unsigned ms);
/*
 * A disk or vif whose spec names no script: attached by the backend
 * itself as Xen's block or vif-bridge script would (xen_blk.c,
 * xen_vif.c), true by default, or by running /etc/xen/scripts/block or
 * vif-bridge (false).  A device with script= always runs its script.
 */
void vmb_ctx_set_builtin_hotplug(struct vmb_ctx *ctx, bool on);
/*
 * The kernels unpacked from bzImages are kept, by the identity of the
 * file they came from (device, inode, size, modification and change
 * times, from fstat of the descriptor the build reads), so that builds
 * from the same file unpack it once.  The cache is looked at only once
 * the file is open for the build (by the caller's descriptor, or the
 * guest's path): it never gives an image the caller could not read.
 * At most `bytes` of unpacked kernels, the least recently used given up
 * first; a kernel larger than that is not kept.  0 turns the cache off
 * and frees what it holds.  Default VMB_IMAGE_CACHE_DEFAULT.
 */
#define VMB_IMAGE_CACHE_DEFAULT	(256ull << 20)
void vmb_ctx_set_image_cache(struct vmb_ctx *ctx, uint64_t bytes);

struct vmb_image_cache_stats {
	uint64_t hits;		/* kernels found unpacked */
	uint64_t misses;	/* bzImages unpacked while the cache was on */
	uint64_t bytes;		/* of unpacked kernels held now */
	uint64_t entries;	/* kernels held now */
	uint64_t max_bytes;	/* the bound (0: off) */
};
/* Since the context was opened; hits and misses never go back. */
int vmb_image_cache_stats(struct vmb_ctx *ctx,
    struct vmb_image_cache_stats *ret_stats);

/* ------------------------------------------------------------------ */
/* Host.                                                               */

struct vmb_cpu {
	uint32_t cpu, node, socket, core, thread;
};

struct vmb_node {
	uint32_t node;
	uint32_t nr_cpus;
	uint64_t total_bytes;
	uint64_t free_bytes;	/* clean + dirty */
};

struct vmb_host {
	uint32_t nr_nodes;
	uint32_t nr_cpus;
	uint32_t threads_per_core;
	uint32_t cores_per_node;
	uint64_t total_bytes;
	uint64_t free_bytes;
	uint64_t claimed_bytes;	/* outstanding claims */
	struct vmb_node nodes[VMB_MAX_NODES];
	struct vmb_cpu *cpus;	/* nr_cpus entries */
};

int vmb_host_info(struct vmb_ctx *ctx, struct vmb_host **ret_host);
void vmb_host_free(struct vmb_host *host);

/* Scrub progress.  `have` says which fields the hypervisor reports. */
#define VMB_SCRUB_HAVE_DIRTY	(1u << 0)
#define VMB_SCRUB_HAVE_SCRUBBED	(1u << 1)
#define VMB_SCRUB_HAVE_RATE	(1u << 2)
#define VMB_SCRUB_HAVE_BOOT	(1u << 3)
/* clean_1g_bytes: free memory in wholly clean 1 GiB blocks. */
#define VMB_SCRUB_HAVE_BLOCKS	(1u << 4)

struct vmb_scrub_node {
	uint32_t node;
	uint32_t workers;
	uint64_t total_bytes;
	uint64_t free_bytes;
	uint64_t dirty_bytes;
	uint64_t scrubbed_bytes_total;
	uint64_t rate_bytes_per_sec;
	/*
	 * Of the clean memory, what is in free 1 GiB blocks without a dirty
	 * page: only that serves 1 GiB extents without inline scrubbing.
	 */
	uint64_t clean_1g_bytes;
	bool	boot_scrub_done;
};

struct vmb_scrub {
	uint32_t have;		/* VMB_SCRUB_HAVE_* */
	uint32_t nr_nodes;
	struct vmb_scrub_node nodes[VMB_MAX_NODES];
};

/* -EOPNOTSUPP when the hypervisor reports nothing per node. */
int vmb_scrub_progress(struct vmb_ctx *ctx, struct vmb_scrub *ret_scrub);

/*
 * The companion counters: host-wide and monotonic, defined once in
 * counters.def (one entry each: group, JSON key, metric, unit, help,
 * and the field of the hypervisor's struct hv_counters it comes from).
 * `have` says which groups the hypervisor reports: a counter of a group
 * whose bit is clear is unknown, never 0.
 */
#define VMB_CNT_HAVE_FLUSH	(1u << 0)
#define VMB_CNT_HAVE_POPULATE	(1u << 1)
#define VMB_CNT_HAVE_SCRUB	(1u << 2)
#define VMB_CNT_HAVE_SHADOW	(1u << 3)

enum vmb_counter {
#define VMB_COUNTER(id, group, key, metric, labels, unit, hv, help) \
	VMB_CNT_##id,
#define VMB_COUNTER_SUM(id, group, key, first, last, help) VMB_CNT_##id,
#include "counters.def"
#undef VMB_COUNTER
#undef VMB_COUNTER_SUM
	VMB_COUNTER_MAX
};

struct vmb_counter_info {
	const char *group;	/* member of host.counters, e.g. "unshadow" */
	uint32_t have;		/* the group's VMB_CNT_HAVE_* bit */
	const char *key;	/* member of the group; "a.b": b of object a */
	const char *metric;	/* Prometheus family; NULL for a sum */
	const char *labels;	/* within the family, e.g. "reason=\"early\"" */
	const char *unit;	/* what one count is; NULL for a sum */
	const char *help;
	/* A sum of the counters sum_first..sum_last, or both 0. */
	enum vmb_counter sum_first, sum_last;
};

/* The entry of counters.def for `c`; NULL when out of range. */
const struct vmb_counter_info *vmb_counter_info(enum vmb_counter c);
/*
 * What one count of `c` is in the base unit of its metric: a counter of
 * memory (unit "pages") is exported in bytes, 4096 per count,
 * *ret_unit "bytes"; any other counts events, 1 per count, *ret_unit its
 * unit.  0 for a sum or out of range.  ret_unit may be NULL.
 */
uint64_t vmb_counter_metric_scale(enum vmb_counter c, const char **ret_unit);

struct vmb_counters {
	uint32_t have;			/* VMB_CNT_HAVE_* */
	uint64_t v[VMB_COUNTER_MAX];	/* by enum vmb_counter */
};

int vmb_counters(struct vmb_ctx *ctx, struct vmb_counters *ret_counters);

/* ------------------------------------------------------------------ */
/* Domains.                                                            */

enum vmb_domain_state {
	VMB_DOM_PAUSED = 0,
	VMB_DOM_RUNNING,
	VMB_DOM_BLOCKED,
	VMB_DOM_SHUTDOWN,	/* shut down, not yet destroyed */
	VMB_DOM_DYING,
	VMB_DOM_CRASHED,
};

const char *vmb_domain_state_name(enum vmb_domain_state state);

struct vmb_domain {
	uint32_t domid;
	enum vmb_domain_state state;
	/* Why it shut down, when state is SHUTDOWN or CRASHED. */
	enum vmb_shutdown_reason shutdown_reason;
	uint8_t	uuid[16];
	char	name[VMB_NAME_LEN];	/* as the hypervisor knows it; may be "" */
	bool	hap;
	uint32_t vcpus;
	uint64_t memory_bytes;		/* populated */
	uint64_t max_memory_bytes;
	uint64_t outstanding_bytes;	/* claimed, not yet populated */
	uint64_t cpu_time_ns;
	uint32_t nr_nodes;		/* host nodes described in node_bytes */
	uint64_t node_bytes[VMB_MAX_NODES];
};

/* Every domain but the control domain; *ret_domains may be NULL when 0. */
int vmb_domain_list(struct vmb_ctx *ctx, struct vmb_domain **ret_domains,
    size_t *ret_nr);
/*
 * The control domain (Xen's Domain-0), for display beside the others as
 * `xl list` shows it; it is not a domain to build, destroy or pause.
 * -EOPNOTSUPP where the hypervisor has none (hvsim models none).
 */
int vmb_control_domain(struct vmb_ctx *ctx, struct vmb_domain *ret_domain);
int vmb_domain_get(struct vmb_ctx *ctx, uint32_t domid,
    struct vmb_domain *ret_domain);
int vmb_domain_destroy(struct vmb_ctx *ctx, uint32_t domid);
int vmb_domain_pause(struct vmb_ctx *ctx, uint32_t domid);
int vmb_domain_unpause(struct vmb_ctx *ctx, uint32_t domid);

/*
 * Everyday settings of a running domain, as xl sched-credit(2), rename,
 * uptime and dmesg.  -EOPNOTSUPP where the backend has no such call.
 *
 * The scheduler's parameters: credit and credit2 have the same two, a
 * weight (1..65535) and a cap (percent of one CPU, 0: none, at most
 * 100 per vCPU).  vmb_domain_sched sets those not VMB_SCHED_KEEP (the
 * domain's pool's scheduler decides which call) and reads them back
 * into *ret (may be NULL); -ENOTSUP under another scheduler.
 */
#define VMB_SCHED_KEEP		UINT32_MAX
#define VMB_SCHED_WEIGHT_MAX	65535
#define VMB_SCHED_WEIGHT_DEFAULT 256	/* Xen's, credit and credit2 */
struct vmb_sched {
	char	scheduler[16];	/* "credit", "credit2" */
	uint32_t weight;
	uint32_t cap;
};
int vmb_domain_sched(struct vmb_ctx *ctx, uint32_t domid, uint32_t weight,
    uint32_t cap, struct vmb_sched *ret);
/*
 * Check a weight and a cap (VMB_SCHED_KEEP: not given) for a domain of
 * `vcpus` vCPUs as xl does: -EINVAL with the reason in why.
 */
int vmb_sched_check(uint32_t weight, uint32_t cap, uint32_t vcpus,
    char *why, size_t why_len);
/* The name the hypervisor (xenstore) gives the domain; checked by vmb_name_check. */
int vmb_domain_rename(struct vmb_ctx *ctx, uint32_t domid, const char *name);
/* When the domain was started (Unix time, as xl uptime reads it). */
int vmb_domain_start_time(struct vmb_ctx *ctx, uint32_t domid,
    double *ret_time);
/*
 * The hypervisor's recent messages (Xen's console ring, hvsim's log),
 * NUL-terminated, in *ret_text to free(); `clear` empties the ring.
 */
int vmb_dmesg(struct vmb_ctx *ctx, bool clear, char **ret_text,
    size_t *ret_len);

/*
 * Devices of a running (or paused) domain: hot-plug, as `xl
 * block-attach` and `network-attach` do.  On Xen: the xenstore entries
 * libxl writes, the backend followed to InitWait, the hotplug script
 * (block, vif-bridge) run as libxl runs it, then, when timeout_ms is
 * not 0, the front and back ends followed to Connected (4): a guest
 * without PV drivers never gets there.  Any failure takes everything
 * back and says why (naming the device) in `why`.  On a hypervisor
 * without I/O (hvsim) nothing is set up: 0, the caller records it.
 *
 * Detach: the backend is asked to close (online 0, state Closing) and
 * followed to Closed for up to 10 s; after that, or at once with
 * `force`, the frontend is taken away from the guest.  The hotplug
 * script then runs with remove/offline (loop devices are released)
 * and the entries go.  -ENOENT when the domain has no such device.
 */
enum vmb_device_kind { VMB_DEVICE_DISK = 0, VMB_DEVICE_NIC };

int vmb_disk_attach(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_disk *disk, uint32_t timeout_ms, char *why,
    size_t why_len);
int vmb_nic_attach(struct vmb_ctx *ctx, uint32_t domid,
    const uint8_t uuid[16], const struct vmb_nic *nic, uint32_t timeout_ms,
    char *why, size_t why_len);
int vmb_device_detach(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_device_kind kind, uint32_t devid, bool force, char *why,
    size_t why_len);

/* ------------------------------------------------------------------ */
/* Running guests: memory and vCPUs (xl mem-set, mem-max, vcpu-*).      */

/*
 * What libxl adds to a domain's max memory over its target or static
 * max (LIBXL_MAXMEM_CONSTANT, 1 MiB), so the guest can map a few pages
 * past its RAM.
 */
#define VMB_MAXMEM_SLACK	(1ull << 20)
/*
 * No guest is ballooned down below this (libxl's dom0 floor, for any
 * guest): the daemon's rule; one built smaller may be given more.
 */
#define VMB_MEM_FLOOR		(128ull << 20)

/*
 * The balloon target, as xl mem-set (libxl_set_memory_target with
 * enforce): the domain's max memory becomes target + VMB_MAXMEM_SLACK,
 * and on Xen memory/target (KiB) tells the guest's balloon driver.  The
 * caller checks target <= the static max (the guest's maxmem).
 */
int vmb_domain_set_target(struct vmb_ctx *ctx, uint32_t domid,
    uint64_t target_bytes);
/*
 * The static max, as xl mem-max (libxl_domain_setmaxmem): the domain's
 * max memory becomes max + VMB_MAXMEM_SLACK, and on Xen
 * memory/static-max (KiB) says it.  The caller checks max >= target.
 */
int vmb_domain_set_maxmem(struct vmb_ctx *ctx, uint32_t domid,
    uint64_t max_bytes);
/*
 * vCPUs 0..online-1 online, the others up to maxvcpus offline, as xl
 * vcpu-set does for a PV or PVH guest: on Xen, cpu/N/availability in
 * xenstore, which the guest's vCPU hotplug driver watches.  hvsim runs
 * no guest code and has no such node: nothing to tell (0), the caller
 * records it.
 */
int vmb_domain_set_vcpus(struct vmb_ctx *ctx, uint32_t domid,
    uint32_t maxvcpus, uint32_t online);

#define VMB_VCPU_ALL		UINT32_MAX
#define VMB_MAX_CPUS		4096	/* bits of a CPU bitmap */
#define VMB_CPULIST_LEN		512
/*
 * Pin `vcpu` (VMB_VCPU_ALL: each of 0..maxvcpus-1) as xl vcpu-pin: hard
 * and soft affinity in xl's CPU list syntax ("all", "0-3,^2",
 * "nodes:1"), NULL or "-" to leave one as it is.  The lists are checked
 * against the host first: -EINVAL with `why` naming a CPU or node the
 * host lacks.  On Xen xc_vcpu_setaffinity; hvsim has no scheduler: 0
 * after the check, the caller records it.
 */
int vmb_vcpu_pin(struct vmb_ctx *ctx, uint32_t domid, uint32_t maxvcpus,
    uint32_t vcpu, const char *hard, const char *soft, char *why,
    size_t why_len);

struct vmb_vcpu_info {
	uint32_t vcpu;
	bool	online;
	bool	running;
	bool	blocked;
	int32_t	cpu;			/* where it last ran; -1 unknown */
	uint64_t cpu_time_ns;
	char	hard[VMB_CPULIST_LEN];	/* "0-3,5"; "all" for every CPU */
	char	soft[VMB_CPULIST_LEN];
};
/*
 * One vCPU as xl vcpu-list shows it (xc_vcpu_getinfo, getaffinity).
 * -EOPNOTSUPP where the hypervisor keeps no such state (hvsim).
 */
int vmb_vcpu_info(struct vmb_ctx *ctx, uint32_t domid, uint32_t vcpu,
    struct vmb_vcpu_info *ret);
/* A size as xl takes it ("512m", "2g", "1048576k"; plain: MiB). */
int vmb_size_parse(const char *s, uint64_t *ret_bytes);

/* ------------------------------------------------------------------ */
/* Lifecycle: shutdown, domain events, console.                        */

/*
 * Ask the guest to power off or reboot (VMB_SHUTDOWN_POWEROFF or
 * _REBOOT), as xl shutdown and xl reboot do: the request goes to the
 * guest's PV control node (xenstore's control/shutdown), which the
 * guest's drivers watch; the domain shuts down when the guest is done.
 * -EOPNOTSUPP when the guest does not announce that it listens
 * (control/feature-poweroff or feature-reboot), or the hypervisor has
 * no such node; -EINVAL for another reason.
 */
int vmb_domain_shutdown_request(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason);
/*
 * Withdraw a request the guest has not taken (it was not acted upon):
 * 1 when it was still there (now withdrawn), 0 when the guest took it.
 */
int vmb_domain_shutdown_withdraw(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason);
/*
 * Shut the domain down from the hypervisor, without asking the guest
 * (Xen's SCHEDOP_remote_shutdown): its vCPUs stop, its memory stays, and
 * it is seen as shut down with `reason`, as if the guest had done it.
 */
int vmb_domain_shutdown(struct vmb_ctx *ctx, uint32_t domid,
    enum vmb_shutdown_reason reason);

/*
 * The guest's PV console, open for reading and writing as `xl console`
 * opens it: the pseudo-terminal xenconsoled made for it, found in
 * xenstore (console/tty), waited for up to a few seconds after a build.
 * *ret_fd is close-on-exec and not the caller's controlling terminal;
 * *ret_path (may be NULL) gets its name.  -EOPNOTSUPP where guests have
 * no console (hvsim runs no guest code); -ENOENT when no console daemon
 * made one; -EPERM when xenstore names something that is not a
 * pseudo-terminal (it is never opened).
 */
int vmb_console_open(struct vmb_ctx *ctx, uint32_t domid, int *ret_fd,
    char *ret_path, size_t path_len);

/*
 * Domain events: a descriptor that becomes readable when domains appear,
 * shut down or go away (on Xen, xenstore's @introduceDomain and
 * @releaseDomain watches; on hvsim, its domain watch), for an event loop
 * to watch, and a read function that says what changed since the last
 * read (or since vmb_watch_open, which takes the first snapshot; when
 * that list fails, the first read says every domain is new).
 * vmb_watch_read() may block for a hypervisor call: the daemon runs it
 * off its loop.  Not thread-safe: one reader at a time.
 */
enum vmb_domain_event_type {
	VMB_EVENT_NEW = 0,	/* a domain appeared */
	VMB_EVENT_CHANGED,	/* its state changed (shut down, crashed...) */
	VMB_EVENT_GONE,		/* it no longer exists (dom: as last seen) */
};

struct vmb_domain_event {
	enum vmb_domain_event_type type;
	struct vmb_domain dom;
};

struct vmb_watch;

/* -EOPNOTSUPP when the hypervisor tells no domain events. */
int vmb_watch_open(struct vmb_ctx *ctx, struct vmb_watch **ret_watch);
int vmb_watch_fd(const struct vmb_watch *watch);
/*
 * Consume what made the descriptor readable and, when something may
 * have changed, list the domains: *ret_events (malloc'd, NULL when
 * *ret_nr is 0) says what changed.  Calling it when the descriptor is
 * not readable is harmless (nothing changed: 0 events).
 */
int vmb_watch_read(struct vmb_watch *watch,
    struct vmb_domain_event **ret_events, size_t *ret_nr);
void vmb_watch_free(struct vmb_watch *watch);

/* ------------------------------------------------------------------ */
/* Placement.                                                          */

/*
 * Where a build put the guest (vmb_build_result): vnuma and
 * cpus="nodes:..." requests first; otherwise nodes whose free clean
 * memory covers the guest, then fewer nodes, then less loaded CPUs.
 */
struct vmb_placement {
	uint32_t nr_nodes;
	uint32_t nodes[VMB_MAX_NODES];		/* chosen host nodes */
	uint64_t node_bytes[VMB_MAX_NODES];	/* guest memory on nodes[i] */
	char	reason[512];			/* why, for `vmctl info` */
};

/* ------------------------------------------------------------------ */
/* Building.                                                           */

/* An HVM guest's device model as it runs (vmb_build_opts.dm_start). */
#define VMB_DM_TTY_LEN	64
struct vmb_dm_info {
	int	pid;				/* its process */
	char	serial_tty[VMB_DM_TTY_LEN];	/* serial port 0's pty, or "" */
};

enum vmb_populate_strategy {
	VMB_POPULATE_ENGINE = 0,	/* parallel NUMA-local batches */
	VMB_POPULATE_LIBXL,		/* libxl's meminit_hvm pattern */
};

const char *vmb_populate_strategy_name(enum vmb_populate_strategy s);
int vmb_populate_strategy_parse(const char *name,
    enum vmb_populate_strategy *ret_strategy);

struct vmb_build_opts {
	enum vmb_populate_strategy strategy;
	uint32_t batch_bytes_max;	/* 0: default */
	uint32_t batches_in_flight;	/* per node; 0: our CPUs per node */
	bool	start_paused;		/* leave the domain paused */
	/*
	 * Unpause a PVH guest only after its hotplug scripts have ended,
	 * as xl does.  By default it runs once its devices' entries are
	 * written, while the scripts go on (its frontends wait for their
	 * backends); the build ends, and fails with a device that fails,
	 * when they are done either way.
	 */
	bool	unpause_after_hotplug;
	/*
	 * When the chosen nodes' clean memory does not cover the guest and
	 * the hypervisor is scrubbing in the background, wait up to this
	 * long for it (re-placing as memory turns clean) rather than have
	 * the populate scrub inline.  0: do not wait.
	 */
	uint32_t scrub_wait_ms;
	/*
	 * A restore: the load phase calls this in place of loading the
	 * kernel (which is not read), the domain populated and paused, to
	 * write the saved memory (vmb_guest_memory_write); the build is
	 * undone if it fails.  It should look at vmb_build_cancelled().
	 * 0, or a negative errno with the reason in `why`.
	 */
	int	(*restore)(void *user, uint32_t domid, char *why, size_t len);
	void	*restore_user;
	/*
	 * The restore populates the domain itself (libxenguest's, a Xen
	 * stream): the build claims the memory but does not populate it,
	 * and reads the domain back after the restore.
	 */
	bool	restore_populates;
	/*
	 * An HVM guest's firmware (NULL: Debian's, VMB_HVMLOADER_PATH and
	 * the others below), read from the build's start beside placement.
	 */
	const char *hvmloader;
	const char *seabios;
	const char *ovmf;
	/*
	 * An HVM guest's device model, the caller's to run (vmbuildd):
	 * dm_start once the devices are set up, the domain populated and
	 * loaded (as libxl spawns it), saying what runs in *ret (the build
	 * writes it where xl looks: backend op dm_running); dm_check just
	 * before the first unpause, to see it still runs; dm_stop in the
	 * undo when it was started (it must stop and reap it).  0 or a
	 * negative errno with the reason in `why`; NULL dm_start: no device
	 * model is run.
	 */
	int	(*dm_start)(void *user, uint32_t domid,
		    struct vmb_dm_info *ret, char *why, size_t len);
	int	(*dm_check)(void *user, uint32_t domid, char *why, size_t len);
	void	(*dm_stop)(void *user, uint32_t domid);
	void	*dm_user;
};

/* GRUB built for Xen PVH (Debian's grub-xen-host): bootloader = "grub". */
#define VMB_GRUB_PVH_PATH	"/usr/lib/grub-xen/grub-i386-xen_pvh.bin"

/* Debian's firmware for HVM guests (xen-utils-4.17, seabios, ovmf). */
#define VMB_HVMLOADER_PATH	"/usr/lib/xen-4.17/boot/hvmloader"
#define VMB_SEABIOS_PATH	"/usr/share/seabios/bios-256k.bin"
#define VMB_OVMF_PATH		"/usr/share/ovmf/OVMF.fd"

/*
 * The phases of a build, in the order they run: build.c's phases[] has
 * one entry (a function and its undo) for every value before
 * VMB_PHASE_DONE, so a new phase is a value here and an entry there.
 */
enum vmb_build_phase {
	VMB_PHASE_PLACE = 0,
	VMB_PHASE_CREATE,
	VMB_PHASE_CLAIM,
	VMB_PHASE_POPULATE,
	VMB_PHASE_LOAD,
	VMB_PHASE_DEVICES,
	VMB_PHASE_BOOT,
	VMB_PHASE_DONE,
	VMB_PHASE_UNDO,		/* rolling back after failure or cancel */
};

const char *vmb_build_phase_name(enum vmb_build_phase phase);

/* Dirty memory in a build's way (struct vmb_progress). */
enum vmb_progress_scrub {
	VMB_PROGRESS_SCRUB_NONE = 0,
	/* place: waiting for the background scrubber (opts.scrub_wait_ms) */
	VMB_PROGRESS_SCRUB_WAIT,
	/* populate: the hypervisor scrubs dirty pages as it hands them out */
	VMB_PROGRESS_SCRUB_INLINE,
};

struct vmb_progress {
	enum vmb_build_phase phase;
	uint32_t domid;		/* VMB_DOMID_INVALID until created */
	uint64_t done;		/* bytes populated so far */
	uint64_t total;		/* bytes to populate */
	/*
	 * When dirty memory holds the build up (scrub != NONE): the nodes
	 * it is placed on (bit N for node N), how much free memory they
	 * have still to be scrubbed, and their scrub rate (0: not
	 * reported), as last sampled (at most a second ago while the build
	 * reports progress).  While the populate scrubs inline, 0 dirty
	 * bytes means the background scrubber has done the rest: the pages
	 * the populate took dirty are still being zeroed.
	 */
	enum vmb_progress_scrub scrub;
	uint64_t scrub_nodes;
	uint64_t scrub_dirty_bytes;
	uint64_t scrub_rate_bytes_per_sec;
	/*
	 * The work running beside `phase` on threads of its own
	 * (VMB_ALONGSIDE_*): a report comes from each when it starts and
	 * ends, its phase and done those of the build's main line; it may
	 * arrive after the main line's report of its next phase.
	 */
	uint32_t alongside;
};

/* struct vmb_progress's alongside. */
#define VMB_ALONGSIDE_IMAGES	0x1u	/* reading and unpacking the images */
#define VMB_ALONGSIDE_DEVICES	0x2u	/* setting the devices up */

/*
 * Called from the building thread and from populate workers; must be
 * thread-safe and quick.  Called at least at every phase change.
 */
typedef void vmb_progress_fn(void *user, const struct vmb_progress *progress);

/* Extent orders, as populate statistics count them. */
enum vmb_order_class { VMB_ORDER_4K = 0, VMB_ORDER_2M, VMB_ORDER_1G,
	VMB_ORDER_OTHER, VMB_ORDER_CLASS_MAX };

struct vmb_populate_stats {
	/*
	 * Populate hypercalls made, counted as they are made: on hvsim
	 * each continuation after a preemption is a request of its own.
	 */
	uint64_t calls;
	uint64_t extents[VMB_ORDER_CLASS_MAX];
	uint64_t pages_scrubbed_inline;
	uint64_t pages_fallback;
	uint64_t flushes_issued;
	uint64_t flushes_avoided;
	uint64_t filter_evaluations;
	uint64_t node_bytes[VMB_MAX_NODES];
	uint64_t extents_split;		/* retried as smaller orders (no room) */
	/*
	 * Time the hypervisor spent in the populate requests, by its own
	 * clock, continuations added up (VMB_POPSTAT_HAVE_HV_TIME): against
	 * the workers' wall time (vmb_worker_profile.busy_ns), what was
	 * spent waiting outside it - for a CPU, on a busy host.
	 */
	uint64_t hv_ns;
	/*
	 * Which of the hypervisor-side counts above the backend knows
	 * (VMB_POPSTAT_HAVE_*); a count whose bit is clear is unknown, not
	 * zero: stock Xen reports nothing about scrubbing or flushes.
	 * calls, extents, node_bytes and extents_split are always known
	 * (the library counts them).
	 */
	uint32_t have;
};

#define VMB_POPSTAT_HAVE_SCRUBBED_INLINE	0x1u	/* pages_scrubbed_inline */
#define VMB_POPSTAT_HAVE_FALLBACK	0x2u	/* pages_fallback */
#define VMB_POPSTAT_HAVE_FLUSHES	0x4u	/* flushes_issued, flushes_avoided */
#define VMB_POPSTAT_HAVE_FILTER		0x8u	/* filter_evaluations */
#define VMB_POPSTAT_HAVE_HV_TIME	0x10u	/* hv_ns */

/* A stretch of a build: nanoseconds from its start. */
struct vmb_span {
	uint64_t start_ns;
	uint64_t end_ns;
};

struct vmb_build_result {
	uint32_t domid;
	uint8_t	uuid[16];
	struct vmb_placement placement;
	struct vmb_populate_stats populate;
	bool	image_loaded;	/* false when the backend cannot map memory */
	uint64_t entry;		/* guest physical entry point */
	uint64_t start_info;	/* guest physical hvm_start_info; 0 if not loaded */
	uint32_t workers;	/* populate threads used */
	uint32_t workers_pinned;	/* of which pinned to their node's CPUs */
	/*
	 * With VMB_CAP_CALLER_CPU: the share of the time this process's
	 * CPUs wanted to run that they waited for a physical CPU instead
	 * (their steal time), from the build's start to its populate, when
	 * known (cpu_wait_known: /proc/stat has steal, and enough time
	 * passed).  From VMB_CPUWAIT_SERIAL (a third) on, the engine ran one
	 * worker per node unless opts.batches_in_flight said otherwise, and
	 * a populate on the building thread alone kept that thread on its
	 * CPU: workers_serial.
	 */
	double	cpu_wait;
	bool	cpu_wait_known;
	bool	workers_serial;
	/*
	 * Where populate's time went, worker by worker (0 when it ran on
	 * the building thread alone): the longest worker is the phase's
	 * critical path, busy / longest the parallelism it got.
	 */
	struct vmb_worker_profile {
		uint64_t longest_ns;	/* the slowest worker, start to end */
		uint64_t longest_bytes;	/* what that worker populated */
		uint64_t shortest_ns;	/* the quickest worker */
		uint64_t busy_ns;	/* all workers' times, added */
	} worker_profile;
	uint64_t scrub_wait_ns;	/* of phase place: waiting for the scrubber */
	/*
	 * The build runs three lines of work side by side: the main line
	 * (place, create, claim, populate, load, boot); reading and
	 * unpacking the images, from the start until load needs them; and
	 * the devices, from the moment the domain exists until boot needs
	 * them.  Each has its span (from the build's start: a phase that
	 * did not run has 0, 0), so they overlap and their lengths
	 * (phase_ns) add up to more than total_ns.  The waits are the main
	 * line's, for the other two: what they cost the build.
	 */
	uint64_t phase_ns[VMB_PHASE_DONE];	/* each phase's span, its length */
	struct vmb_span phase_span[VMB_PHASE_DONE];
	struct vmb_span images_span;	/* the images: kernel and ramdisk */
	uint64_t images_wait_ns;	/* load waited for the images */
	/* The kernel came unpacked from the context's image cache. */
	bool	kernel_cached;
	uint64_t devices_wait_ns;	/* boot waited for the devices */
	uint64_t total_ns;
	/*
	 * Where and why the build failed, written on failure as well (see
	 * vmb_build_run()): the step that failed, not the last progress
	 * report, which is VMB_PHASE_UNDO once rollback starts.  A bad
	 * kernel or ramdisk fails in VMB_PHASE_LOAD although it is read
	 * from the build's start, and devices in VMB_PHASE_DEVICES whenever
	 * they fail: the first failure of the three lines is the build's
	 * (and stops the others).  On success: VMB_PHASE_DONE and "".
	 */
	enum vmb_build_phase failed_phase;
	char	error[256];	/* e.g. "kernel /x: not an ELF file" */
	/*
	 * On failure: the kernel or ramdisk cannot be used (not a regular
	 * file, not a PVH ELF, too large, does not fit the guest's memory),
	 * a problem of the guest's images, not of the hypervisor.
	 */
	bool	bad_image;
	/*
	 * On failure: 0 when the undo is complete (no domain of this build
	 * is left), else the undo's error.  Then a domain may still exist:
	 * leftover_domid if it is known (else VMB_DOMID_INVALID, e.g. a
	 * create whose reply was lost), with the build's uuid either way;
	 * the caller must destroy it later (vmb_domain_destroy).
	 */
	int	undo_rc;
	uint32_t leftover_domid;
	/*
	 * On success: the domain as the populate's check read it back
	 * (memory and nodes), in the state the build left it (running, or
	 * paused with start_paused); cpu_time_ns is that of the check.  A
	 * caller that shows the new domain needs no list of its own.
	 */
	bool	have_domain;
	struct vmb_domain domain;
};

struct vmb_build;

int vmb_build_new(struct vmb_ctx *ctx, const struct vmb_guest *guest,
    const struct vmb_build_opts *opts, vmb_progress_fn *progress, void *user,
    struct vmb_build **ret_build);
/*
 * Read the kernel (and ramdisk) from these descriptors instead of
 * opening the guest's paths, which then only name them in messages: for
 * a caller that opens nothing a client names (vmbuildd).  The build
 * keeps duplicates (the caller may close its own); ramdisk_fd -1 for
 * none.  Only regular files are accepted.
 */
int vmb_build_set_images(struct vmb_build *build, int kernel_fd,
    int ramdisk_fd);
/*
 * Build the domain; blocks.  On any failure, or -ECANCELED after
 * vmb_build_cancel(), everything done is undone (the domain is destroyed,
 * no page stays allocated) before it returns, unless the undo itself
 * fails: then undo_rc says so.  Unlike other ret_* outputs, *ret_result
 * is then written too: domid VMB_DOMID_INVALID (never a stale or zero
 * domid), failed_phase, error, bad_image, undo_rc and leftover_domid say
 * where and why and what is left; its other fields are zero.
 */
int vmb_build_run(struct vmb_build *build, struct vmb_build_result *ret_result);
/*
 * Cancel from another thread: seen between phases and between populate
 * requests, and a hypervisor call that waits (sim backend) returns at
 * once.
 */
void vmb_build_cancel(struct vmb_build *build);
/* Has vmb_build_cancel() been called? */
bool vmb_build_cancelled(const struct vmb_build *build);
void vmb_build_free(struct vmb_build *build);

/*
 * A dry run of a build (vmctl check, vmctl create --dry-run): the
 * images read from kernel_fd/ramdisk_fd (-1: the guest's paths) as the
 * build reads them, the nodes vnuma and cpus= name against the host,
 * the placement the build would choose now, the bridges of the vifs
 * (on Xen; a warning on hvsim, which has none).  Nothing is claimed,
 * created or populated.  Problems of the guest are diagnostics (file
 * `where`, the key's line); the return is a negative errno only when
 * the host's state could not be read.  `placed`: placement is valid.
 */
struct vmb_dry_run {
	bool	placed;
	struct vmb_placement placement;
	struct vmb_host *host;	/* as it was read; vmb_dry_run_done */
};
int vmb_guest_dry_run(struct vmb_ctx *ctx, const struct vmb_guest *g,
    int kernel_fd, int ramdisk_fd, const char *where,
    struct vmb_diags *diags, struct vmb_dry_run *ret);
void vmb_dry_run_done(struct vmb_dry_run *dr);

/* ------------------------------------------------------------------ */
/* Save streams (vmbuild-stream(5)) and guest memory.                   */

/*
 * The guest-physical RAM a guest of `memory_bytes` has as builds lay it
 * out ([0, hole) and, past the MMIO hole, from 4 GiB up): the number of
 * ranges (1 or 2) in start[i]..end[i] (end exclusive).
 */
int vmb_guest_ram(uint64_t memory_bytes, uint64_t start[2], uint64_t end[2]);
/*
 * Copy guest memory out of or into a domain, as a foreign mapping does
 * on Xen (hvsim: HV_OP_GUEST_READ / _WRITE).  -EOPNOTSUPP where the
 * backend cannot (hvsim's phantom memory), -ENOENT for a hole.
 */
int vmb_guest_memory_read(struct vmb_ctx *ctx, uint32_t domid, uint64_t gpa,
    void *buf, size_t len);
int vmb_guest_memory_write(struct vmb_ctx *ctx, uint32_t domid, uint64_t gpa,
    const void *buf, size_t len);

/*
 * Log-dirty: which pages of a domain were written since the log was last
 * cleaned (a live migration's pre-copy rounds).  ENABLE starts it over
 * the memory populated now, every bit clear; DISABLE stops it; CLEAN
 * and PEEK copy `nr` bits (a multiple of 64, at most VMB_DIRTY_MAX_BITS)
 * from `gfn` (a multiple of 64) into `bits`, CLEAN clearing them.
 * *ret_dirty: bits set among those; *ret_end: the log covers
 * [0, *ret_end) (either may be NULL).  -EOPNOTSUPP where the backend
 * has no log (phantom memory), -ENOENT for CLEAN or PEEK with it off.
 */
#define VMB_DIRTY_DISABLE	0u
#define VMB_DIRTY_ENABLE	1u
#define VMB_DIRTY_CLEAN		2u
#define VMB_DIRTY_PEEK		3u
#define VMB_DIRTY_MAX_BITS	(1u << 22)
int vmb_guest_dirty_log(struct vmb_ctx *ctx, uint32_t domid, unsigned op,
    uint64_t gfn, uint32_t nr, uint64_t *bits, uint64_t *ret_dirty,
    uint64_t *ret_end);

/*
 * The hypervisor's own save and restore (Xen: libxenguest's
 * xc_domain_save and xc_domain_restore, stream v2), where the backend
 * has them (vmb_native_stream): the guest's memory and state travel as
 * that stream, which vmbuild frames as Xen records (or, to and from a
 * regular file, carries inline: `direct` below), rather than as memory
 * records.  Each call runs the backend's saver or restorer on a thread
 * of its own with a pipe between it and the caller's put or get.
 *
 * Save: the guest is asked to suspend (at most suspend_ms; 0: 60 s, as
 * libxl waits), its stream handed to put() piece by piece; then with
 * `resume` (a checkpoint) it runs again, else it stays suspended for
 * the caller to destroy.  A failure or a cancel (cancel_fd readable)
 * resumes it.  Restore: into a domain created and claimed, not
 * populated (the restorer populates), the pieces from get() (0: the
 * end); then what a boot does for a built guest (event channels,
 * xenstore, the console), the domain left paused.  0, or a negative
 * errno with `why` naming the step (empty when put or get failed: the
 * caller knows why).
 */
/*
 * A live save (a migration): the guest's memory goes while it runs,
 * round after round of the pages it wrote since (log-dirty), until a
 * round leaves at most dirty_pages or max_rounds were made; then it is
 * suspended and the rest goes.  Out: the rounds made (the last, after
 * the suspend, included), the pages sent in all, and when the guest
 * was suspended (CLOCK_MONOTONIC ns; 0: never) — a downtime's start.
 */
struct vmb_native_live {
	uint32_t max_rounds;
	uint64_t dirty_pages;
	uint32_t rounds;
	uint64_t pages;
	uint64_t suspended_ns;
};

struct vmb_native_io {
	int	(*put)(void *user, const void *buf, size_t len);
	ssize_t	(*get)(void *user, void *buf, size_t len);
	void	*user;
	int	cancel_fd;	/* -1: none */
	uint32_t suspend_ms;
	bool	resume;
	uint64_t bytes;		/* out: of the hypervisor's stream */
	/*
	 * Out, a save's: nanoseconds its pump waited for the hypervisor's
	 * saver (the guest's suspend, libxenguest mapping and writing
	 * pages) and spent in put (our stream's writes): where a slow save
	 * spends its time.
	 */
	uint64_t wait_ns, put_ns;
	char	why[256];
	/*
	 * direct: `fd`, a regular file, is the backend's to write or read
	 * from its offset on (no put or get, no pipe: the inline stream,
	 * VMB_STREAM_F_XEN_INLINE); `progress` (or NULL) hears the bytes
	 * moved so far every 200 ms, `cancelled` (or NULL) is asked as
	 * often besides cancel_fd.  The file's offset ends after what the
	 * backend moved, `bytes`.
	 */
	bool	direct;
	int	fd;
	void	(*progress)(void *user, uint64_t bytes);
	bool	(*cancelled)(void *user);
	/* A save's: live (NULL: the guest is suspended first, as xl save). */
	struct vmb_native_live *live;
};
bool vmb_native_stream(struct vmb_ctx *ctx);
/*
 * Who reads a native restore's stream (Xen: libxc's stream v2/v3 of a
 * PVH guest).  VMB_NATIVE_RESTORE_LIBXENGUEST (the default):
 * xc_domain_restore, which populates the guest's memory itself as the
 * stream comes, into a domain the build created and claimed but did not
 * populate.  VMB_NATIVE_RESTORE_ENGINE: vmbuild's own reader
 * (xen_xcrestore.c), into a domain whose RAM the build populated through
 * the populate engine as for a fresh create; the special pages and
 * anything else the stream holds beyond it are populated on demand.
 * -EOPNOTSUPP: the backend has no such reader.
 * vmb_native_restore_populates: whether the restore populates (true:
 * build with vmb_build_opts.restore_populates), as set.
 */
enum vmb_native_restore {
	VMB_NATIVE_RESTORE_LIBXENGUEST,
	VMB_NATIVE_RESTORE_ENGINE,
};
int vmb_ctx_set_native_restore(struct vmb_ctx *ctx,
    enum vmb_native_restore how);
bool vmb_native_restore_populates(struct vmb_ctx *ctx);
/*
 * How many threads the engine's restore from a file reads the guest's
 * pages on: VMBUILD_RESTORE_READERS from the environment (0 to 16; 0:
 * none, all read in order by the build's thread), else one per online
 * CPU but one, at most 4.  -EINVAL: the variable holds anything else.
 */
int vmb_restore_readers(void);
int vmb_guest_save_native(struct vmb_ctx *ctx, uint32_t domid,
    struct vmb_native_io *io);
int vmb_guest_restore_native(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *guest, struct vmb_native_io *io);
/* A guest left suspended by a save resumed (its save failed after). */
int vmb_guest_resume_native(struct vmb_ctx *ctx, uint32_t domid, char *why,
    size_t why_len);

#define VMB_STREAM_MAGIC	"\x89VMB\r\n\x1a\n"
#define VMB_STREAM_VERSION	1
#define VMB_STREAM_HDR		24	/* magic, version, flags, reserved */
#define VMB_STREAM_REC_HDR	16	/* type, length, crc32, reserved */
#define VMB_STREAM_F_MEMORY	0x1u	/* memory records carry the bytes */
#define VMB_STREAM_F_REPLY	0x2u	/* a migration's back channel */
#define VMB_STREAM_F_XEN	0x4u	/* the guest's state in Xen records */
#define VMB_STREAM_F_XEN_INLINE	0x8u	/* ... as libxc's stream, inline */
#define VMB_STREAM_F_ALL	0xfu
#define VMB_STREAM_MAX_GUEST	(1u << 20)	/* the guest description */
#define VMB_STREAM_PAGE		4096u		/* bytes of a page (gfn units) */
#define VMB_STREAM_MAX_PAGES	1024u		/* per memory record (4 MiB) */
#define VMB_STREAM_MAX_REC	(16u << 20)	/* any other record */
#define VMB_STREAM_GFN_BITS	40
#define VMB_STREAM_MAX_GFN	(1ull << VMB_STREAM_GFN_BITS)

/* Record types; VMB_REC_OPTIONAL: a reader that does not know it skips it. */
#define VMB_REC_GUEST		1u	/* the guest description (text) */
#define VMB_REC_MEMORY		2u	/* u64 gfn, u64 count, count pages */
#define VMB_REC_END		3u	/* u64 records before it, u64 pages */
#define VMB_REC_STATUS		4u	/* u32 verdict, u32 errno, text */
#define VMB_REC_XEN		16u	/* a piece of libxc's stream v2 */
#define VMB_REC_XEN_INLINE	17u	/* libxc's stream v2 follows, unframed */
#define VMB_STREAM_MAX_XEN	(1u << 20)	/* bytes per Xen record */
#define VMB_REC_OPTIONAL	0x80000000u

/*
 * A migration's receiver answers on a reply stream (VMB_STREAM_F_REPLY:
 * status records, then the end): READY once the guest is placed and its
 * memory claimed, DONE once it runs there, FAILED (with errno and why)
 * for anything that stops it.
 */
#define VMB_STATUS_READY	1u
#define VMB_STATUS_DONE		2u
#define VMB_STATUS_FAILED	3u
#define VMB_STATUS_MAX_TEXT	1024u

/* "guest", "memory", "end", "status", "xen", "xen-inline", "unknown". */
const char *vmb_stream_rec_name(uint32_t type);

struct vmb_stream_out {
	int	fd;
	int	cancel_fd;	/* readable: stop waiting for a full pipe; -1 */
	uint64_t offset;	/* bytes written */
	uint64_t records;	/* records written */
	uint64_t pages;		/* pages in memory records */
};

/*
 * Write the header; then the guest record, memory records, the end.
 * `fd` may be non-blocking: a write that would block waits until it can
 * go on or `cancel_fd` (-1: none) turns readable (-ECANCELED).
 */
int vmb_stream_begin(struct vmb_stream_out *o, int fd, uint32_t flags,
    int cancel_fd);
int vmb_stream_put_guest(struct vmb_stream_out *o, const char *text,
    size_t len);
int vmb_stream_put_memory(struct vmb_stream_out *o, uint64_t gfn,
    uint32_t count, const void *pages);
/*
 * A piece (1 byte to VMB_STREAM_MAX_XEN) of the hypervisor's own stream
 * (Xen: libxc's stream v2), in a stream begun with VMB_STREAM_F_XEN:
 * the pieces, in order, are that stream as libxenguest wrote it.
 */
int vmb_stream_put_xen(struct vmb_stream_out *o, const void *buf,
    size_t len);
/*
 * In a stream begun with VMB_STREAM_F_XEN_INLINE: the record that says
 * the hypervisor's own stream follows as it is, unframed, up to its own
 * end (libxc's END record), as libxl's stream v2 carries libxc's; the
 * caller then has the backend write it to o->fd (vmb_native_io.direct)
 * and counts its bytes in with vmb_stream_inline_done().  No checksum
 * covers those bytes: libxenguest checks its stream as it reads it.
 */
int vmb_stream_put_xen_inline(struct vmb_stream_out *o);
void vmb_stream_out_inline_done(struct vmb_stream_out *o, uint64_t bytes);
int vmb_stream_finish(struct vmb_stream_out *o);
/* A status record (a reply stream's): VMB_STATUS_*, errno, text or NULL. */
int vmb_stream_put_status(struct vmb_stream_out *o, uint32_t verdict,
    uint32_t err, const char *text);

/* Read up to len bytes: the count, 0 at the end, or a negative errno. */
typedef ssize_t vmb_stream_read_fn(void *user, void *buf, size_t len);

struct vmb_stream_in {
	vmb_stream_read_fn *read;
	void	*user;
	uint32_t version;
	uint32_t flags;		/* VMB_STREAM_F_* of the header */
	uint64_t offset;	/* bytes consumed */
	uint64_t index;		/* records read */
	uint64_t pages;		/* pages in memory records read */
	bool	ended;
	/*
	 * The xen-inline record was returned: the hypervisor's stream is
	 * next, for the caller to have read (vmb_stream_inline_done); once
	 * read, `inline_seen`.
	 */
	bool	inline_pending, inline_seen;
	uint8_t	*buf;
	size_t	cap;
	char	why[256];	/* names the record and its offset */
};

/* One record; data/pages point into the reader's buffer until the next. */
struct vmb_stream_rec {
	uint32_t type;
	uint32_t len;
	uint64_t offset;	/* where its header starts */
	const uint8_t *data;	/* the payload */
	uint64_t gfn;		/* memory: */
	uint32_t count;
	const uint8_t *pages;
	uint32_t verdict;	/* status: VMB_STATUS_*, */
	uint32_t err;		/* an errno (0: none) */
	char	text[VMB_STATUS_MAX_TEXT + 1];	/* and why, NUL-ended */
};

/* Read and check the header: 0, or a negative errno with in->why. */
int vmb_stream_open(struct vmb_stream_in *in, vmb_stream_read_fn *read_fn,
    void *user);
/*
 * The next record, checked (bounds, checksum, order): 1, 0 after the end
 * record when nothing follows it, or a negative errno (-EBADMSG for a
 * truncated or corrupt stream) with in->why naming the record and its
 * offset.  Optional records of unknown types are returned for the
 * caller to skip.
 */
int vmb_stream_next(struct vmb_stream_in *in, struct vmb_stream_rec *ret);
/*
 * After a xen-inline record: the hypervisor's stream, `bytes` long, was
 * read from the reader's descriptor by someone else (the restorer); the
 * records go on after it.
 */
void vmb_stream_inline_done(struct vmb_stream_in *in, uint64_t bytes);
void vmb_stream_in_done(struct vmb_stream_in *in);

#endif /* VMBUILD_H */
