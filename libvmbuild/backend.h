/*
 * backend.h - the hypervisor backend ops table (private to libvmbuild).
 *
 * The core (config, placement, populate engine, loader) calls only these
 * ops; everything specific to hvsim lives in sim/ and everything
 * specific to Xen in xen/.  Same error convention as vmbuild.h:
 * 0 or a negative errno.  Every op may be called from several threads at
 * once, populate in particular (one worker per node).
 */
#ifndef VMBUILD_BACKEND_H
#define VMBUILD_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "vmbuild.h"

struct vmb_dom_config {
	char	name[VMB_NAME_LEN];
	uint8_t	uuid[16];
	bool	hvm;
	bool	hap;		/* decided by the build (vmb__paging_mode) */
	uint32_t max_vcpus;
	/* max_event_channels= (Xen's max_evtchn_port); 0: libxl's 1023 */
	uint32_t max_evtchn_port;
	/* max_grant_frames=, max_maptrack_frames=; 0: Xen's default */
	uint32_t max_grant_frames;
	uint32_t max_maptrack_frames;
	uint64_t max_pages;	/* 4 KiB pages */
	uint64_t target_pages;	/* pages that will be populated */
	/*
	 * An HVM guest with a device model: every emulated device (Xen's
	 * emulation flags); its shadow_memory= (MiB; 0: sized as libxl).
	 */
	bool	dm;
	uint32_t paging_mib;
	uint32_t nr_nodes;	/* placement: the nodes the domain may use */
	uint32_t nodes[VMB_MAX_NODES];
};

struct vmb_extent {
	uint64_t gfn;
	uint32_t order;		/* 0, 9 or 18 */
	uint32_t node;		/* host node; VMB_NODE_ANY for any */
};
#define VMB_NODE_ANY		0xffffu

/* populate flags */
#define VMB_POPF_EXACT_NODE	(1u << 0)
#define VMB_POPF_ALLOW_DIRTY	(1u << 1)

/*
 * Progress within one populate op: the backend calls fn(arg, done) as
 * the hypervisor gets through the op's extents (after each hypercall or
 * continuation), `done` of them being populated so far.
 */
struct vmb__popstep {
	void	(*fn)(void *arg, size_t done);
	void	*arg;
};

/*
 * The guest-physical layout (layout.c): RAM below the MMIO hole that
 * starts at VMB_MMIO_HOLE_START, the rest from 4 GiB up, as libxl lays
 * out a PVH guest; each range on one host node and one virtual node.
 */
#define VMB_MMIO_HOLE_START	0xfc000000ull
#define VMB_4GIB		(1ull << 32)
/* One range splits at the MMIO hole, one (HVM) at the VGA hole. */
#define VMB_MAX_RANGES		(VMB_MAX_NODES + 2)
/*
 * An HVM guest (libxl__build_hvm, xc_dom_x86.c meminit_hvm): the MMIO
 * hole starts at 4 GiB less mmio_hole (default 0xf0000000), and the
 * legacy VGA hole [0xa0000, 0xc0000) is left unpopulated: its 32 pages
 * count in the guest's address space, not in its memory.  Its RAM is
 * memory= less the card's video RAM (vmb__layout_ram), which the device
 * model populates.
 */
#define VMB_VGA_HOLE_START	0xa0000ull
#define VMB_VGA_HOLE_END	0xc0000ull

struct vmb__range {
	uint64_t gfn;
	uint64_t pages;
	uint32_t node;		/* host node */
	uint32_t vnode;		/* virtual node (0 without vNUMA) */
};

struct vmb_layout {
	bool	hvm;		/* an HVM guest's: the VGA hole is left out */
	uint64_t hole_start;	/* the MMIO hole: [hole_start, 4 GiB) */
	uint64_t populated;	/* bytes the ranges hold */
	uint64_t lowmem_end;	/* RAM is [0, lowmem_end) ... */
	uint64_t highmem_end;	/* ... and [4 GiB, highmem_end); 0: none */
	uint32_t nr_ranges;	/* in populate order */
	struct vmb__range ranges[VMB_MAX_RANGES];
	/*
	 * The NUMA topology the guest is told (vNUMA): vnuma= as written,
	 * or one vnode per node the guest was placed on; 0: none.
	 */
	uint32_t nr_vnodes;
	uint32_t vnode_pnode[VMB_MAX_VNODES];
	uint8_t	vdistance[VMB_MAX_VNODES][VMB_MAX_VNODES];
	uint32_t nr_vcpus;	/* maxvcpus */
	uint8_t	vcpu_vnode[VMB_MAX_VCPUS];
};

/* One entry of the guest's memory map; types as in the E820. */
#define VMB_E820_RAM		1
#define VMB_E820_RESERVED	2
#define VMB_E820_ACPI		3
#define VMB_MEMMAP_MAX		16

struct vmb_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/*
 * What the guest needs besides its RAM and its image, set up by the
 * backend's firmware op before the image is loaded: pages it placed in
 * the MMIO hole (special pages, ACPI tables), for the memory map, and
 * where the ACPI RSDP is (0: no ACPI).
 */
struct vmb_firmware {
	uint32_t nr_regions;
	struct vmb_memmap_entry regions[VMB_MEMMAP_MAX / 2];
	uint64_t rsdp;
};

/*
 * Platform settings applied right after create, before any memory is
 * populated (libxl__build_pre): vNUMA, vCPU affinity, CPUID, TSC, HVM
 * parameters.  CPU bitmaps have VMB_MAX_CPUS bits; hard NULL: any CPU.
 * soft[v] is the soft affinity of the vCPUs of vnode v (soft[0] for all
 * when the layout has no vnodes, or cpus_soft= gives one for all).
 */
struct vmb_platform {
	const struct vmb_guest *guest;
	const struct vmb_layout *layout;
	const uint64_t *hard;
	const uint64_t *soft[VMB_MAX_VNODES];
	bool	soft_per_vnode;
};

/* What the loader hands the backend to start the guest. */
struct vmb_boot {
	uint64_t entry;		/* PVH 32-bit entry, guest physical */
	uint64_t start_info;	/* guest physical address of hvm_start_info */
	uint32_t vcpus;
	uint64_t memory_bytes;	/* populated RAM */
	const struct vmb_guest *guest;
	/* The memory map the start info carries, for XENMEM_memory_map. */
	uint32_t nr_memmap;
	struct vmb_memmap_entry memmap[VMB_MEMMAP_MAX];
};

/*
 * One device for the backend's device_add (device.c fills it): a disk
 * or a nic of the guest's description, the MAC it gets (vmb_nic_mac),
 * and how long each step may take.
 */
#define VMB_DEV_INITWAIT_MS	10000	/* libxl's LIBXL_INIT_TIMEOUT */
#define VMB_DEV_HOTPLUG_MS	40000	/* LIBXL_HOTPLUG_TIMEOUT */
#define VMB_DEV_CLOSE_MS	10000	/* LIBXL_DESTROY_TIMEOUT */

struct vmb_dev {
	enum vmb_device_kind kind;
	uint32_t devid;
	const struct vmb_disk *disk;	/* VMB_DEVICE_DISK */
	const struct vmb_nic *nic;	/* VMB_DEVICE_NIC */
	uint8_t	mac[6];			/* VMB_DEVICE_NIC */
	uint32_t initwait_ms;		/* backend to InitWait */
	uint32_t hotplug_ms;		/* the hotplug script */
	uint32_t connect_ms;		/* both ends Connected; 0: no wait */
	uint32_t close_ms;		/* on failure: backend to Closed */
	/* A device without script=: run Xen's script, not the builtin. */
	bool	hotplug_scripts;
	/*
	 * device_add calls entered(entered_arg), if set, once the
	 * device's entries are written (the guest can find it), before
	 * its backend and hotplug script are waited for.  A backend that
	 * does not may leave it uncalled: the caller counts the device
	 * at device_add's return then (device.c).
	 */
	void	(*entered)(void *arg);
	void	*entered_arg;
	/*
	 * Where device_add's time went, when not NULL: filled by a backend
	 * that can tell (0: that step was not taken), for the caller's log.
	 */
	struct vmb_dev_times {
		uint64_t entries_ns;	/* the xenstore transaction */
		uint64_t initwait_ns;	/* the backend to InitWait */
		uint64_t script_ns;	/* the hotplug script */
		uint64_t connect_ns;	/* both ends to Connected */
	} *times;
};

struct vmb_backend_ops {
	const char *name;		/* "sim", "xen" */
	/* arg: what followed "sim:" (a socket path), or NULL. */
	int	(*open)(const char *arg, void **ret_priv);
	void	(*close)(void *priv);
	uint32_t (*caps)(void *priv);	/* VMB_CAP_* */
	const char *(*describe)(void *priv);

	int	(*host_info)(void *priv, struct vmb_host **ret_host);
	int	(*scrub)(void *priv, struct vmb_scrub *ret_scrub);
	/*
	 * What placement reads: host_info, domain_list and scrub (whose
	 * own failure is *ret_scrub_rc, not the call's) in one go, where
	 * the hypervisor can answer them in one round trip (NULL: the
	 * three calls, vmb__host_state).
	 */
	int	(*host_state)(void *priv, struct vmb_host **ret_host,
		    struct vmb_domain **ret_domains, size_t *ret_nr,
		    struct vmb_scrub *ret_scrub, int *ret_scrub_rc);
	/*
	 * domain_list without the domains' names (each name ""), for
	 * vmb__host_state: placement reads only their memory, vCPUs and
	 * nodes.  Where a name is a round trip of its own (xenstore, on
	 * dom0 vCPUs that may wait behind the guests'), a host full of
	 * guests paid one per guest in every build's place phase.  NULL:
	 * domain_list.
	 */
	int	(*domain_usage)(void *priv, struct vmb_domain **ret_domains,
		    size_t *ret_nr);
	int	(*counters)(void *priv, struct vmb_counters *ret_counters);

	int	(*domain_create)(void *priv, const struct vmb_dom_config *cfg,
		    uint32_t *ret_domid);
	int	(*domain_destroy)(void *priv, uint32_t domid);
	int	(*domain_pause)(void *priv, uint32_t domid);
	int	(*domain_unpause)(void *priv, uint32_t domid);
	int	(*domain_list)(void *priv, struct vmb_domain **ret_domains,
		    size_t *ret_nr);
	/* The control domain (dom0); NULL when the hypervisor has none. */
	int	(*control_domain)(void *priv, struct vmb_domain *ret_domain);

	/* Claim `pages` for the domain (0 releases the claim). */
	int	(*claim)(void *priv, uint32_t domid, uint64_t pages);
	/*
	 * Populate `nr` extents in as many hypervisor calls as the backend
	 * needs (the engine chooses the batch, the backend only carries it).
	 * Adds to `stats`.  *ret_done: extents done, also on failure.
	 * `step` (may be NULL) hears of the extents done as calls return.
	 */
	int	(*populate)(void *priv, uint32_t domid, uint32_t flags,
		    const struct vmb_extent *ext, size_t nr,
		    struct vmb_populate_stats *stats, size_t *ret_done,
		    const struct vmb__popstep *step);

	/* Map gfn..gfn+nr writable into this process; NULL ops: no loading. */
	int	(*map)(void *priv, uint32_t domid, uint64_t gfn, size_t nr,
		    void **ret_addr);
	void	(*unmap)(void *priv, void *addr, size_t nr);
	/*
	 * Or, where guest memory cannot be mapped into this process (hvsim):
	 * copy `len` bytes of `src` (NULL: zeroes) to guest-physical `paddr`.
	 * The loader uses it when present.
	 */
	int	(*write)(void *priv, uint32_t domid, uint64_t paddr,
		    const void *src, uint64_t len);
	/* The reverse, for a save (NULL or -EOPNOTSUPP: no bytes to read). */
	int	(*read)(void *priv, uint32_t domid, uint64_t paddr, void *dst,
		    uint64_t len);
	/*
	 * Log-dirty for a live migration (NULL: -EOPNOTSUPP), as
	 * vmb_guest_dirty_log() describes it.
	 */
	int	(*dirty_log)(void *priv, uint32_t domid, unsigned op,
		    uint64_t gfn, uint32_t nr, uint64_t *bits,
		    uint64_t *ret_dirty, uint64_t *ret_end);

	/*
	 * The hypervisor's own save stream (NULL: none, the core reads and
	 * writes the memory), each blocking until done (native.c runs them
	 * on a thread of their own and carries the bytes; see
	 * vmb_guest_save_native).  save_native: suspend the guest (at most
	 * suspend_ms, a readable cancel_fd stops the wait), write its
	 * stream to fd, and leave it suspended; a failure resumes it.
	 * With `live` (vmbuild.h), the memory goes in rounds while the
	 * guest runs, and the suspend comes last.
	 * resume_native: a suspended guest runs on (a checkpoint, or a
	 * save that failed after).  restore_native: read the stream from
	 * fd into the domain (created and claimed, not populated), then set
	 * it up as boot does (event channels, xenstore), paused.  They say
	 * why in `why`.
	 */
	int	(*save_native)(void *priv, uint32_t domid, int fd,
		    int cancel_fd, uint32_t suspend_ms,
		    struct vmb_native_live *live, char *why, size_t why_len);
	int	(*resume_native)(void *priv, uint32_t domid, char *why,
		    size_t why_len);
	int	(*restore_native)(void *priv, uint32_t domid, int fd,
		    const struct vmb_boot *boot, char *why, size_t why_len);
	/*
	 * As restore_native, into a domain the build populated as for a
	 * fresh create (NULL: the backend has no such restore); what the
	 * stream holds beyond it is populated on demand.
	 */
	int	(*restore_engine)(void *priv, uint32_t domid, int fd,
		    const struct vmb_boot *boot, char *why, size_t why_len);

	/*
	 * Right after create (NULL: nothing to do): vNUMA, affinity, CPUID
	 * and the other platform settings.  Undone by destroying the domain.
	 */
	int	(*platform)(void *priv, uint32_t domid,
		    const struct vmb_platform *platform);
	/*
	 * After populate, before the image is loaded (NULL: nothing): pages
	 * outside RAM (special pages, ACPI tables), reported in *ret.
	 * Undone by destroying the domain.
	 */
	int	(*firmware)(void *priv, uint32_t domid,
		    const struct vmb_platform *platform, struct vmb_firmware *ret);
	/*
	 * After the image is loaded: whatever else the hypervisor needs
	 * before the first unpause (event channels, memory map, vCPU
	 * context, xenstore).
	 */
	int	(*boot)(void *priv, uint32_t domid, const struct vmb_boot *boot);
	/*
	 * An HVM guest's entries for its device model, written before it
	 * starts as libxl writes them for qemu-xen (NULL: a hypervisor
	 * without a store, hvsim).  Removed with the domain's entries.
	 */
	int	(*dm_store)(void *priv, uint32_t domid,
		    const struct vmb_guest *guest);
	/*
	 * Once it runs (NULL: nothing): its process and its serial port's
	 * pty where libxl writes them, image/device-model-pid and
	 * serial/0/tty (xl console finds the pty there).  Removed with the
	 * domain's entries.
	 */
	int	(*dm_running)(void *priv, uint32_t domid,
		    const struct vmb_dm_info *info);

	/*
	 * Devices; NULL where the hypervisor has no I/O (hvsim): devices
	 * are then only recorded.  device_add sets one up completely or
	 * takes back what it did, saying why (naming the device) in `why`;
	 * -EEXIST when the domain has it.  device_remove tears one down:
	 * asks the guest first unless `force`, forces after close_ms;
	 * -ENOENT when there is none.  domain_destroy tears down every
	 * device the domain has.
	 */
	int	(*device_add)(void *priv, uint32_t domid,
		    const struct vmb_dev *dev, char *why, size_t why_len);
	int	(*device_remove)(void *priv, uint32_t domid,
		    enum vmb_device_kind kind, uint32_t devid, bool force,
		    uint32_t close_ms, char *why, size_t why_len);
	/* Bound each later call to `ms` (0: none); NULL: not applicable. */
	void	(*set_timeout)(void *priv, unsigned ms);

	/*
	 * Lifecycle (NULL: not supported, -EOPNOTSUPP).  shutdown_request
	 * posts VMB_SHUTDOWN_POWEROFF or _REBOOT on the guest's PV control
	 * node after checking the guest announced it (-EOPNOTSUPP if not);
	 * shutdown_withdraw takes it back if the guest has not taken it
	 * (1) or says it has (0); shutdown stops the domain from the
	 * hypervisor with a reason.
	 */
	int	(*shutdown_request)(void *priv, uint32_t domid,
		    enum vmb_shutdown_reason reason);
	int	(*shutdown_withdraw)(void *priv, uint32_t domid,
		    enum vmb_shutdown_reason reason);
	int	(*shutdown)(void *priv, uint32_t domid,
		    enum vmb_shutdown_reason reason);
	/* The guest's PV console opened (vmb_console_open). */
	int	(*console_open)(void *priv, uint32_t domid, int *ret_fd,
		    char *ret_path, size_t path_len);
	/*
	 * Everyday settings (NULL: not supported, -EOPNOTSUPP): see
	 * vmb_domain_sched and the others in vmbuild.h.
	 */
	int	(*sched)(void *priv, uint32_t domid, uint32_t weight,
		    uint32_t cap, struct vmb_sched *ret);
	int	(*rename)(void *priv, uint32_t domid, const char *name);
	int	(*start_time)(void *priv, uint32_t domid, double *ret_time);
	int	(*dmesg)(void *priv, bool clear, char **ret_text,
		    size_t *ret_len);
	/*
	 * A source of domain events: its descriptor becomes readable when
	 * something may have changed; watch_drain consumes that and says
	 * whether anything did fire (1) or not (0).  The core (watch.c)
	 * lists the domains and tells what changed.
	 */
	int	(*watch_open)(void *priv, void **ret_w);
	int	(*watch_fd)(void *w);
	int	(*watch_drain)(void *w);
	void	(*watch_close)(void *w);

	/*
	 * A running guest's size (resize.c; NULL: nothing to tell the
	 * guest, the caller records it).  max_mem sets the hypervisor's
	 * limit (pages); mem_note writes memory/target or, with
	 * `static_max`, memory/static-max (KiB); vcpu_online the
	 * availability of vCPUs 0..max-1; vcpu_affinity pins one vCPU
	 * (hard or soft NULL: leave it); vcpu_info reads one back.
	 */
	int	(*max_mem)(void *priv, uint32_t domid, uint64_t pages);
	int	(*mem_note)(void *priv, uint32_t domid, bool static_max,
		    uint64_t kib);
	int	(*vcpu_online)(void *priv, uint32_t domid, uint32_t max,
		    uint32_t online);
	int	(*vcpu_affinity)(void *priv, uint32_t domid, uint32_t vcpu,
		    const uint64_t *hard, const uint64_t *soft);
	int	(*vcpu_info)(void *priv, uint32_t domid, uint32_t vcpu,
		    struct vmb_vcpu_info *ret, uint64_t *hard, uint64_t *soft);
};

extern const struct vmb_backend_ops vmb_backend_sim;
extern const struct vmb_backend_ops vmb_backend_xen;

#endif /* VMBUILD_BACKEND_H */
