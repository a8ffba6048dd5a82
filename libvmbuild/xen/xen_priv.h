/*
 * xen_priv.h - state shared by the files of the xen backend
 * (backend_xen.c, xen_boot.c, xen_xs.c, xen_life.c, xen_companion.c).
 *
 * Nothing outside those files includes this header: the rest of
 * libvmbuild sees only vmb_backend_xen through backend.h.
 */
#ifndef VMBUILD_XEN_PRIV_H
#define VMBUILD_XEN_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include <xenctrl.h>
#include <xenforeignmemory.h>
#include <xencall.h>
#include <xenstore.h>
#include <xentoollog.h>

#include "backend.h"
#include "xen_series.h"

/*
 * Special pages of a PVH domain, as libxenguest lays them out in Xen
 * 4.17 (xg_dom_x86.c): X86_HVM_NR_SPECIAL_PAGES frames ending at
 * X86_HVM_END_SPECIAL_REGION, inside the MMIO hole below 4 GiB (layout.c
 * keeps RAM out of it), RESERVED in the guest's memory map.
 */
#define XEN_SPECIAL_PAGING	0
#define XEN_SPECIAL_ACCESS	1
#define XEN_SPECIAL_SHARING	2
#define XEN_SPECIAL_BUFIOREQ	3
#define XEN_SPECIAL_XENSTORE	4
#define XEN_SPECIAL_IOREQ	5
#define XEN_SPECIAL_IDENT_PT	6
#define XEN_SPECIAL_CONSOLE	7
#define XEN_SPECIAL_NR		8
#define XEN_SPECIAL_END		0xff000u	/* gfn, exclusive */
#define XEN_SPECIAL_GFN(x)	(XEN_SPECIAL_END - XEN_SPECIAL_NR + (x))

/*
 * An HVM guest's ioreq server pages (xg_dom_x86.c's NR_IOREQ_SERVER_PAGES),
 * just below the special pages; hvmloader's reserved region starts here.
 */
#define XEN_IOREQ_SERVER_NR	8
#define XEN_IOREQ_SERVER_GFN(x)	(XEN_SPECIAL_GFN(0) - XEN_IOREQ_SERVER_NR + (x))

/* ACPI tables (xen_acpi.c): at the bottom of the MMIO hole, as libxl. */
#define XEN_ACPI_BASE		0xfc000000ull
#define XEN_ACPI_MAX_PAGES	16	/* libxl's NUM_ACPI_PAGES */

/* What the companion hypervisor answered when probed at open. */
#define XEN_COMP_SCRUB		(1u << 0)
#define XEN_COMP_COUNTERS	(1u << 1)
#define XEN_COMP_POPULATE	(1u << 2)

struct xen_be {
	xentoollog_logger logger;	/* first: the libraries call back with it */
	xc_interface	*xch;
	xenforeignmemory_handle *fmem;
	xencall_handle	*xcall;		/* companion sysctls; NULL if unusable */
	struct xs_handle *xsh;
	/*
	 * A second connection to xenstored's socket for xen_xs.c's own
	 * transactions, their requests pipelined (xen_xswire.c); NULL:
	 * none (xenstored in a domain, or the connection failed), and
	 * those transactions go through xsh one request at a time.
	 */
	struct xen_xsw	*xsw;
	pthread_mutex_t	xs_lock;	/* serialises every use of xsh and xsw */
	uint32_t	caps;		/* VMB_CAP_* */
	uint32_t	companion;	/* XEN_COMP_* */
	unsigned	nr_perfc_desc;	/* perf counters, when compiled in */
	/* Scrub rates, from the last samples of XEN_SYSCTL_scrub_progress. */
	pthread_mutex_t	scrub_lock;
	struct xen_scrub_rate scrub_rate[HV_MAX_NODES];
	bool		have_hap;	/* hardware-assisted paging available */
	uint32_t	gnttab_version;	/* the highest Xen offers, as libxl */
	bool		debug;		/* VMBUILD_XEN_DEBUG set: libraries log to stderr */
	unsigned	unmapping;	/* xen_xcrestore's unmap threads running (atomic) */
	char		describe[128];
};

/*
 * An errno for a failed libxenctrl call (which returns -1 and sets
 * errno); here, not in one of the files, so that none depends on another
 * for it.
 */
static inline int
xen_errno(void)
{
	return errno > 0 ? errno : EIO;
}

/* backend_xen.c: add `got` extents of `order` on `node` to stats. */
void xen_count(struct vmb_populate_stats *stats, uint32_t order,
    uint32_t node, long got);

/* xen_companion.c */
void xen_companion_probe(struct xen_be *be);
int xen_companion_scrub(struct xen_be *be, struct vmb_scrub *ret_scrub);
int xen_companion_counters(struct xen_be *be, struct vmb_counters *ret_cnt);
int xen_perfc_counters(struct xen_be *be, struct vmb_counters *ret_cnt);
int xen_companion_populate(struct xen_be *be, uint32_t domid, uint32_t flags,
    const struct vmb_extent *ext, size_t nr,
    struct vmb_populate_stats *stats, size_t *ret_done);

/*
 * xen_xs.c: every function takes be->xs_lock itself.
 *
 * One transaction (xen_xs_transaction): `fill` writes into it, retried
 * from scratch when another writer won; the first failure sticks in
 * tx->err and makes later writes no-ops.
 */
#define XS_PATH_MAX	256

struct xs_tx {
	struct xs_handle *h;
	xs_transaction_t t;
	struct xen_xsw *w;	/* pipelined (t is w's), or NULL: h's */
	int	err;		/* first -errno */
	struct xs_permissions ro[2];	/* dom0 owns, the domain reads */
	struct xs_permissions rw[1];	/* the domain owns */
	struct xs_permissions no[1];	/* dom0 only */
	struct xs_permissions be[2];	/* a backend domain owns, the domain reads */
};
typedef void xs_fill_fn(struct xs_tx *tx, const void *arg);
int xen_xs_transaction(struct xen_be *be, uint32_t domid, xs_fill_fn *fill,
    const void *arg);
/* base/rel = value (NULL: a directory), perms NULL: the parent's. */
void xen_xs_tx_write(struct xs_tx *tx, const char *base, const char *rel,
    const char *value, struct xs_permissions *perms, unsigned nperms);

/*
 * The rest of a transaction's calls, pipelined or not: an rm (flags
 * XSW_IGNORE_*: which failures do not fail the transaction) and a read
 * (NULL with errno set when there is nothing: never tx->err).
 */
void xen_xs_tx_rm(struct xs_tx *tx, const char *path, unsigned flags);
char *xen_xs_tx_read(struct xs_tx *tx, const char *path, unsigned *len);

/*
 * xen_xswire.c: a transaction's requests pipelined on a socket (see
 * there).  Requests queue (write, mkdir, rm, set_perms, read) and go
 * at the next flush, which reads every reply: its return is the first
 * failure (-errno) of a request whose flags do not excuse it, -EPIPE or
 * -EPROTO when the connection is lost (then useless).  start and end
 * are a flush of their own; end: -EAGAIN when another writer won.
 */
#define XSW_IGNORE_ERR		(1u << 0)	/* no failure counts */
#define XSW_IGNORE_ENOENT	(1u << 1)	/* ENOENT does not count */
#define XSW_PERMS_MAX		8
struct xen_xsw;
int xen_xsw_connect(const char *path, struct xen_xsw **ret);
int xen_xsw_adopt(int fd, struct xen_xsw **ret);	/* tests: a socketpair */
void xen_xsw_free(struct xen_xsw *w);
uint64_t xen_xsw_round_trips(const struct xen_xsw *w);	/* flushes so far */
int xen_xsw_start(struct xen_xsw *w, uint32_t *ret_tx);
int xen_xsw_end(struct xen_xsw *w, uint32_t tx, bool abort);
void xen_xsw_write(struct xen_xsw *w, uint32_t tx, const char *path,
    const void *value, size_t len);
void xen_xsw_mkdir(struct xen_xsw *w, uint32_t tx, const char *path);
void xen_xsw_rm(struct xen_xsw *w, uint32_t tx, const char *path,
    unsigned flags);
void xen_xsw_set_perms(struct xen_xsw *w, uint32_t tx, const char *path,
    const struct xs_permissions *perms, unsigned nperms);
void xen_xsw_read(struct xen_xsw *w, uint32_t tx, const char *path);
/* The last request's reply in *ret_last (a read's value) and outcome. */
int xen_xsw_flush(struct xen_xsw *w, char **ret_last, unsigned *ret_len,
    int *ret_last_err);

int xen_xs_domain_make(struct xen_be *be, uint32_t domid,
    const struct vmb_dom_config *cfg);
struct xen_xs_boot {
	uint32_t domid;
	uint64_t static_max_kb;
	uint64_t target_kb;
	uint32_t vcpus, max_vcpus;
	uint32_t store_port, console_port;
	uint32_t store_domid, console_domid;	/* xenstored's, xenconsoled's */
	uint64_t store_gfn, console_gfn;
};
int xen_xs_domain_boot(struct xen_be *be, const struct xen_xs_boot *xb);
void xen_xs_domain_boot_undo(struct xen_be *be, const struct xen_xs_boot *xb);
int xen_xs_introduce(struct xen_be *be, uint32_t domid, uint64_t store_gfn,
    uint32_t store_port);
void xen_xs_domain_remove(struct xen_be *be, uint32_t domid);
/* An HVM guest's device model entries (backend op dm_store). */
int xen_xs_dm_store(void *priv, uint32_t domid, const struct vmb_guest *g);
/* Its pid and serial pty, once it runs (backend op dm_running). */
int xen_xs_dm_running(void *priv, uint32_t domid,
    const struct vmb_dm_info *info);
void xen_xs_read_name(struct xen_be *be, uint32_t domid, char *buf,
    size_t len);
/*
 * Post `cmd` ("poweroff", "reboot") on control/shutdown if the guest
 * announced control/feature-<cmd> (else -EOPNOTSUPP): 0.  With
 * `withdraw`, take it back if still posted: 1, or 0 if the guest took it.
 */
int xen_xs_control(struct xen_be *be, uint32_t domid, const char *cmd,
    bool withdraw);
/*
 * console/tty as xenconsoled wrote it; -ENOENT while there is none,
 * -EACCES if a domain other than dom0 and xenconsoled's may write it
 * (or the console directory, or the domain's).
 */
int xen_xs_console_tty(struct xen_be *be, uint32_t domid, char *buf,
    size_t len);

/* xen_life.c: the lifecycle ops (backend.h). */
int xen_shutdown_request(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason);
int xen_shutdown_withdraw(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason);
int xen_shutdown(void *priv, uint32_t domid, enum vmb_shutdown_reason reason);
int xen_console_open(void *priv, uint32_t domid, int *ret_fd, char *ret_path,
    size_t path_len);
/* xen_everyday.c: the backend's everyday ops (backend.h). */
int xen_sched(void *priv, uint32_t domid, uint32_t weight, uint32_t cap,
    struct vmb_sched *ret);
int xen_rename(void *priv, uint32_t domid, const char *name);
int xen_start_time(void *priv, uint32_t domid, double *ret_time);
int xen_dmesg(void *priv, bool clear, char **ret_text, size_t *ret_len);
int xen_watch_open(void *priv, void **ret_w);
int xen_watch_fd(void *w);
int xen_watch_drain(void *w);
void xen_watch_close(void *w);

/* xen_hotplug.c: one hotplug script, as libxl runs it (see there). */
struct xen_hotplug {
	const char *script;	/* absolute path */
	const char *action;	/* add, remove (vbd); online, offline (vif) */
	const char *kind;	/* "vbd", "vif" */
	uint32_t domid, devid;
	const char *vif;	/* vifDOMID.DEVID for a vif, else NULL */
	const char *netdev;	/* a vif's gatewaydev, or NULL */
};
/*
 * Run it, at most timeout_ms (then its process group is killed:
 * -ETIMEDOUT); *ret_status as waitpid() gives it, out[] the end of what
 * it wrote on stdout and stderr.
 */
int xen_hotplug_run(const struct xen_hotplug *h, uint32_t timeout_ms,
    int *ret_status, char *out, size_t out_len);

/* xen_dev.c: the device ops (backend.h) and teardown at destroy. */
/* xen_blk.c: Xen's block script's add, done here (see there). */
int xen_blk_attach(struct xen_be *be, uint32_t domid, const char *bepath,
    const struct vmb_disk *disk, const char *name, char *why, size_t why_len);
/* xen_vif.c: vif-bridge online, done here; -EAGAIN: run the script. */
int xen_vif_online(struct xen_be *be, uint32_t domid, const char *bepath,
    const char *fepath, const struct vmb_nic *nic, const char *vif,
    const char *name, char *why, size_t why_len);
int xen_device_add(void *priv, uint32_t domid, const struct vmb_dev *dev,
    char *why, size_t why_len);
int xen_device_remove(void *priv, uint32_t domid, enum vmb_device_kind kind,
    uint32_t devid, bool force, uint32_t close_ms, char *why,
    size_t why_len);
/* Every device of a domain being destroyed, forced, all at once. */
void xen_devices_destroy(struct xen_be *be, uint32_t domid);

/*
 * xen_save.c: save and restore through libxenguest (backend.h's native
 * ops); xen_suspend_wait asks the guest to suspend and waits, at most
 * suspend_ms (0: a minute), for it (0), the request taken back if it
 * does not (-ETIMEDOUT, or -ECANCELED when cancel_fd turns readable).
 */
int xen_suspend_wait(struct xen_be *be, uint32_t domid, int cancel_fd,
    uint32_t suspend_ms, char *why, size_t len);
int xen_save_native(void *priv, uint32_t domid, int fd, int cancel_fd,
    uint32_t suspend_ms, struct vmb_native_live *live, char *why,
    size_t len);
int xen_resume_native(void *priv, uint32_t domid, char *why, size_t len);
/*
 * The pages a live save sent while the guest ran, from libxenguest's
 * precopy count (total_written): its first round counts as the whole
 * p2m (first: every pfn up to the guest's highest, the MMIO hole below
 * 4 GiB included), of which only the populated pages (populated, the
 * domain's tot_pages; 0: unknown) went.
 */
uint64_t xen_live_pages(uint64_t total_written, uint64_t first,
    uint64_t populated);
int xen_restore_native(void *priv, uint32_t domid, int fd,
    const struct vmb_boot *boot, char *why, size_t len);
/* The same, the stream read by vmbuild (xen_xcrestore.c) into a domain
 * the build populated: backend.h's restore_engine. */
int xen_restore_engine(void *priv, uint32_t domid, int fd,
    const struct vmb_boot *boot, char *why, size_t len);

/*
 * xen_xcrestore.c: a libxc stream (x86 HVM) applied to domain domid,
 * whose RAM the build populated (what else the stream holds is
 * populated on demand), as xc_domain_restore would: the event channels
 * are the caller's, the store and console pfns the stream's.
 */
struct xen_xcrestore_args {
	uint64_t pfn_limit;		/* every pfn of the stream below it */
	uint32_t store_port, store_domid;
	uint32_t console_port, console_domid;
	/*
	 * The RAM the build populated (vmb_guest_ram_layout; all 0: not
	 * known): a pfn there that the stream says is not the guest's
	 * (XTAB: ballooned out on the source) is given back at the end.
	 */
	struct vmb_ram_layout ram;
};
int xen_xcrestore(struct xen_be *be, xc_interface *xch, uint32_t domid,
    int fd, const struct xen_xcrestore_args *a, uint64_t *ret_store_gfn,
    uint64_t *ret_console_gfn, char *why, size_t len);

/* xen_boot.c */
int xen_boot(void *priv, uint32_t domid, const struct vmb_boot *boot);

/* xen_resize.c: a running domain's memory and vCPUs (backend.h's ops). */
int xen_max_mem(void *priv, uint32_t domid, uint64_t pages);
int xen_mem_note(void *priv, uint32_t domid, bool static_max, uint64_t kib);
int xen_vcpu_online(void *priv, uint32_t domid, uint32_t max,
    uint32_t online);
int xen_vcpu_affinity(void *priv, uint32_t domid, uint32_t vcpu,
    const uint64_t *hard, const uint64_t *soft);
int xen_vcpu_info(void *priv, uint32_t domid, uint32_t vcpu,
    struct vmb_vcpu_info *ret, uint64_t *hard, uint64_t *soft);

/* xen_platform.c: the platform op (vNUMA, affinity, CPUID, TSC, params). */
int xen_platform(void *priv, uint32_t domid, const struct vmb_platform *p);

/* xen_firmware.c: the firmware op (special pages, ACPI tables). */
int xen_firmware(void *priv, uint32_t domid, const struct vmb_platform *p,
    struct vmb_firmware *ret);

/*
 * xen_hvm.c: an HVM guest's parameters, memory map and hvm_info_table
 * (the pure parts first, for tests/xenbe).
 */
struct xen_hvm_setting {
	uint32_t index;		/* HVM_PARAM_* */
	uint64_t value;
};
#define XEN_HVM_MAX_PARAMS	8
/* The HVM params libxl sets at create, in its order: their number. */
size_t xen_hvm_params(const struct vmb_guest *g, struct xen_hvm_setting *out);
/* The RTC's offset from UTC (seconds), `gmtoff` the host's local one. */
int32_t xen_hvm_time_offset(const struct vmb_guest *g, long gmtoff);
int xen_hvm_params_set(struct xen_be *be, uint32_t domid,
    const struct vmb_guest *g);
/*
 * The memory map hvmloader gets from Xen, of the build's `in`: its RAM,
 * low RAM from 1 MiB; the number of entries, and the ends of low RAM
 * (below 4 GiB) and high RAM (0: none).
 */
int xen_hvm_memmap(const struct vmb_memmap_entry *in, uint32_t n,
    struct e820entry *out, uint32_t cap, uint64_t *ret_low,
    uint64_t *ret_high);
struct xen_hvm_info {
	uint64_t lowmem_end, highmem_end;	/* bytes; high 0: none */
	uint32_t nr_vcpus;			/* maxvcpus */
	uint32_t online;			/* vCPUs 0..online-1 */
};
/* The page HVM_INFO_PFN holds, the table at HVM_INFO_OFFSET. */
void xen_hvm_info_fill(const struct xen_hvm_info *hi, uint8_t *page);
int xen_hvm_info_load(struct xen_be *be, uint32_t domid,
    const struct xen_hvm_info *hi);
int xen_hvm_ioreq_pages(struct xen_be *be, uint32_t domid);
void xen_hvm_ioreq_pages_undo(struct xen_be *be, uint32_t domid);

/* xen_acpi.c */
struct xen_acpi_cfg {
	uint64_t base;			/* guest-physical address of the tables */
	uint32_t nr_vcpus;		/* one LAPIC each (maxvcpus) */
	uint32_t online;		/* vCPUs 0..online-1 enabled at boot */
	const struct vmb_layout *layout;	/* SRAT, SLIT if nr_vnodes */
};
struct xen_acpi_out {
	uint64_t rsdp;			/* guest-physical address of the RSDP */
	size_t	bytes;			/* of the buffer used */
	size_t	pages;			/* populated (xen_acpi_load) */
};
/* The tables into buf, as the guest will see them at cfg->base. */
int xen_acpi_build(const struct xen_acpi_cfg *cfg, uint8_t *buf, size_t len,
    struct xen_acpi_out *out);
uint8_t xen_acpi_checksum(const uint8_t *p, size_t len);
int xen_acpi_load(struct xen_be *be, uint32_t domid,
    const struct vmb_layout *layout, uint32_t online,
    struct xen_acpi_out *out);

/*
 * The domain ids of xenstored and xenconsoled, as libxl reads them
 * (/tool/xenstored/domid, /tool/xenconsoled/domid; 0 when absent).
 */
void xen_xs_tool_domids(struct xen_be *be, uint32_t *store, uint32_t *console);

#endif /* VMBUILD_XEN_PRIV_H */
