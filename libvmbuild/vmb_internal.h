/*
 * vmb_internal.h - what the parts of libvmbuild share among themselves.
 *
 * Not installed, not part of the API; tests include it to reach the pure
 * functions (placement, extent splitting, ELF parsing) without a
 * hypervisor.  Internal symbols carry the vmb__ prefix.
 */
#ifndef VMB_INTERNAL_H
#define VMB_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "backend.h"
#include "vmbuild.h"

#define VMB_PAGE_SHIFT		12
#define VMB_PAGE_SIZE		(1ull << VMB_PAGE_SHIFT)
#define VMB_MIB			(1ull << 20)
#define VMB_GIB			(1ull << 30)

/* ctx.c */
struct vmb__tpool;
struct vmb__imgcache;

struct vmb_ctx {
	const struct vmb_backend_ops *ops;
	void	*priv;
	uint32_t caps;
	pthread_mutex_t log_lock;
	vmb_log_fn *log_fn;
	void	*log_user;
	struct vmb__tpool *pool;	/* populate threads */
	unsigned hotplug_ms;		/* devices: the hotplug script's limit */
	bool	hotplug_scripts;	/* no builtin attach (default off) */
	bool	restore_engine;		/* native restore: ours (default off) */
	struct vmb__imgcache *imgcache;	/* unpacked kernels (imgcache.c) */
};

/* tpool.c: threads that outlive a build (see there). */
struct vmb__task {
	void	(*fn)(void *arg);
	void	*arg;
	size_t	*remaining;		/* the pool's */
	struct vmb__task *next;		/* the pool's */
};

int vmb__tpool_new(struct vmb__tpool **ret_pool);
/*
 * Run n tasks on the pool's threads and self_fn(self_arg), if not NULL,
 * on the calling thread; return when all are done.  -EAGAIN (nothing
 * run) when the pool has no thread and cannot start one.
 */
int vmb__tpool_run(struct vmb__tpool *pool, struct vmb__task *tasks,
    size_t n, void (*self_fn)(void *), void *self_arg);
/*
 * One task started without waiting; *remaining is 0 once it is done
 * (vmb__tpool_wait).  -EAGAIN (not started) as vmb__tpool_run.
 */
int vmb__tpool_start(struct vmb__tpool *pool, struct vmb__task *task,
    size_t *remaining);
void vmb__tpool_wait(struct vmb__tpool *pool, size_t *remaining);
void vmb__tpool_free(struct vmb__tpool *pool);

void vmb__log(struct vmb_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * ctx.c: the cancel descriptor of the build this thread works for (-1:
 * none), set by the build's thread and its populate workers.  Backends
 * whose calls can wait on a hypervisor watch it (the sim backend passes
 * it to hvclient), so that a cancel interrupts a call that would
 * otherwise wait for its timeout.
 */
int vmb__cancel_fd(void);
void vmb__set_cancel_fd(int fd);

/*
 * host.c: what placement reads (vmb_host_info, vmb_domain_list, and
 * vmb_scrub_progress, whose own failure is *ret_scrub_rc), in one round
 * trip where the backend can (its host_state op).  On failure nothing
 * is left to free.
 */
int vmb__host_state(struct vmb_ctx *ctx, struct vmb_host **ret_host,
    struct vmb_domain **ret_domains, size_t *ret_nr,
    struct vmb_scrub *ret_scrub, int *ret_scrub_rc);

/* counters.c */
struct hv_counters;
/*
 * A reply of `len` bytes to the hypervisor's counters call into *ret,
 * the groups in `have` being real; -EPROTO for a foreign layout.
 */
int vmb__counters_from_hv(const struct hv_counters *h, size_t len,
    uint32_t have, struct vmb_counters *ret);
/* Fill the sums of counters.def from the counters they add up. */
void vmb__counters_sum(struct vmb_counters *c);

/* diag.c */
/* printf into why[len] (both may be 0/NULL): why a step failed. */
void vmb__why(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds one diagnostic; returns -EINVAL for errors, 0 for warnings. */
int vmb__diag_add(struct vmb_diags *diags, enum vmb_severity sev,
    const char *file, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/*
 * keys.c: the keys of keys.def as a table, in that order, indexed by
 * enum vmb_key: the parser's, and what guest.c (copy, free),
 * guest_check.c and vmb_key_desc() know of each key.
 */
enum vmb__key_kind { VMB__KIND_SIZE, VMB__KIND_COUNT, VMB__KIND_STRING,
	VMB__KIND_LIST, VMB__KIND_ENUM, VMB__KIND_DEVICE };

struct vmb__key;
/* A key's setter: checks the value, adds a diagnostic naming k->name. */
typedef int vmb__key_set_fn(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags);

struct vmb__key {
	const char *name;		/* xl.cfg's */
	enum vmb_key key;
	enum vmb__key_kind kind;
	const char *unit;		/* "" for none */
	const char *def;		/* default as in xl.cfg; NULL none */
	bool	daemon;			/* vmbuildd acts on it */
	vmb__key_set_fn *set;
	const char *json;		/* member of the JSON form; NULL none */
	enum vmb_key_form form;
	const char *man;		/* its line in vmbuild.cfg(5) */
	size_t	offset, size;		/* of its field in struct vmb_guest */
	bool	owned;			/* the field is a char * the guest owns */
};
extern const struct vmb__key vmb__keys[VMB_KEY_MAX];

/* keys.c: the defaults of keys.def, set into a new guest. */
int vmb__keys_default(struct vmb_guest *g);
/* keys.c: value access for the setters, each adding a diagnostic. */
const char *vmb__value_type_name(const struct vmb_value *v);
int vmb__get_string(const struct vmb__key *k, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags, const char **ret);
/*
 * keys.c: an integer value of key `k` in [min, max] (a string of digits
 * too, as xl takes memory="512"); 0, or an error added to diags.
 */
int vmb__get_int(const struct vmb__key *k, const struct vmb_value *v,
    long long min, long long max, const char *where,
    struct vmb_diags *diags, long long *ret);
/* keys_list.c: the list keys' setters. */
vmb__key_set_fn vmb__set_vnuma, vmb__set_disks, vmb__set_vifs;
/* keys_hvm.c: the HVM keys, builder=, and their check with the guest. */
vmb__key_set_fn vmb__set_hvm, vmb__set_builder;
int vmb__hvm_check(struct vmb_guest *g, const char *where,
    struct vmb_diags *diags);
/* keys.c, keys_list.c: sizes in MiB are at most this (16 TiB). */
#define VMB_MEMORY_MAX_MIB	(16ull << 20)

/*
 * unsupported.c: xl's keys vmbuild does not implement: the entry for
 * `key` (NULL when it is none of them), and what setting one does (an
 * error, a warning under VMB_CONFIG_IGNORE_UNSUPPORTED, nothing for
 * the value vmbuild honours anyway).
 */
struct vmb__unsupported;
const struct vmb__unsupported *vmb__unsupported_find(const char *key);
int vmb__unsupported_set(struct vmb_guest *g,
    const struct vmb__unsupported *u, const struct vmb_value *v,
    const char *where, struct vmb_diags *diags);

/* guest.c */
/* "0-3,5" into a bitmap of `nbits`; -EINVAL on syntax, -ERANGE past nbits. */
int vmb__parse_ranges(const char *s, uint64_t *bits, unsigned nbits);

/*
 * xl's CPU list (cpus=, cpus_soft=): comma-separated items "all", "N",
 * "N-M", "node:N", "nodes:N-M", each may start with "^" (take away what
 * earlier items gave).  Items are applied in order.
 */
struct vmb__cpus_item {
	bool	neg, node, all;
	unsigned lo, hi;
};
#define VMB_CPUS_ITEMS_MAX	64
/* Returns the number of items, -EINVAL, -ERANGE or -E2BIG. */
int vmb__cpus_parse(const char *s, struct vmb__cpus_item *items, size_t cap);
/*
 * The CPUs (a VMB_MAX_CPUS bitmap) a CPU list names on `host`; -EINVAL
 * with `why` when it names CPUs or nodes the host does not have, or none.
 */
int vmb__cpus_resolve(const char *key, const char *s,
    const struct vmb_host *host, uint64_t *bits, char *why, size_t why_len);

/*
 * placement.c: choose nodes for the guest from the host, the scrubber's
 * view (NULL: all free memory is clean) and the existing domains; a pure
 * function.  -ENOMEM when nothing fits.
 */
int vmb__place(const struct vmb_host *host, const struct vmb_scrub *scrub,
    const struct vmb_domain *domains, size_t nr_domains,
    const struct vmb_guest *guest, struct vmb_placement *ret_placement);
/*
 * Free memory of `node` that is surely clean: the lower of the host's
 * and the scrubber's free counts, less the scrubber's dirty count; the
 * host's free count when `scrub` (may be NULL) has no dirty counts.
 */
uint64_t vmb__clean_bytes(const struct vmb_host *host,
    const struct vmb_scrub *scrub, uint32_t node);
/* The same; on failure, says why in `why` (may be NULL) for the user. */
int vmb__place_why(const struct vmb_host *host, const struct vmb_scrub *scrub,
    const struct vmb_domain *domains, size_t nr_domains,
    const struct vmb_guest *guest, struct vmb_placement *ret_placement,
    char *why, size_t why_len);

/* populate.c */
#define VMB_EXT_ORDER_1G	18
#define VMB_EXT_ORDER_2M	9
/*
 * A batch bounds the work of one request: progress is reported and a
 * cancel seen between batches.  2 GiB is about half a second of inline
 * scrubbing on the machines measured (hvsim, 2-4 GB/s per node), and
 * lets 1 GiB extents share a request (256 MiB made every 1 GiB extent a
 * request of its own: as many calls as the libxl pattern).
 */
#define VMB_BATCH_BYTES_DEFAULT	(2u << 30)
#define VMB_BATCH_SPLIT_MIN	(1ull << 30)
/*
 * Memory not known to be clean is scrubbed inline by the request that
 * takes it, on the CPU that makes it: a 256 MiB batch is still some 60
 * ms of that (4 GB/s), far above what a thread and a call cost, so such
 * a job is cut finer, for as many workers as there are CPUs to run them
 * (populate.c, dirty_inflight).
 */
#define VMB_BATCH_SPLIT_MIN_DIRTY	(256ull << 20)
#define VMB_INFLIGHT_DEFAULT	2
#define VMB_INFLIGHT_MAX	16
#define VMB_BATCH_EXTENTS_MAX	4096	/* HV_MAX_EXTENTS: one call per batch */

/*
 * Split [gfn, gfn+pages) into extents of the largest orders its alignment
 * allows.  Writes at most `cap` extents to `out` (may be NULL with cap 0)
 * and returns how many the range needs.
 */
size_t vmb__split_extents(uint64_t gfn, uint64_t pages, uint32_t node,
    struct vmb_extent *out, size_t cap);

/*
 * cpuwait.c: the steal time of this process's CPUs (see there); the
 * public part (struct vmb_cpuwait, vmb_cpuwait_sample, _share and
 * VMB_CPUWAIT_SERIAL) is in vmbuild.h.
 *
 * Below this many ticks (USER_HZ, 100 a second) wanted between two
 * samples, a share is no measurement: 0.2 s of CPU time.
 */
#define VMB_CPUWAIT_MIN_TICKS	20
/* The CPUs in `set` from a /proc/stat file; -ENODATA without steal. */
int vmb__cpuwait_read(const char *path, const cpu_set_t *set,
    struct vmb_cpuwait *ret);

/* layout.c */
/*
 * The guest-physical layout of `guest` placed by `placement` (see
 * backend.h).  -EINVAL if the vnuma sizes or the placement do not add
 * up to the guest's memory; -E2BIG past the guest-physical limit.
 */
int vmb__layout_plan(const struct vmb_guest *guest,
    const struct vmb_placement *placement, struct vmb_layout *ret);
/* Only the ranges of vmb__layout_plan(); returns how many. */
int vmb__layout(const struct vmb_guest *guest,
    const struct vmb_placement *placement, struct vmb__range *ranges);
/*
 * The guest's RAM, in bytes of address space (the VGA hole included):
 * memory= less an HVM guest's video RAM, which its device model
 * populates (libxl's mem_size).
 */
uint64_t vmb__layout_ram(const struct vmb_layout *layout);
/*
 * The guest's memory map: the layout's RAM and the firmware's regions
 * (may be NULL), sorted by address; -EINVAL if they overlap or do not
 * fit in `cap` entries.  Returns the number of entries.
 */
int vmb__memmap(const struct vmb_layout *layout,
    const struct vmb_firmware *fw, struct vmb_memmap_entry *out, size_t cap);

/*
 * device.c: the build's devices phase.  Sets up the guest's disks and
 * vifs on the backend, side by side (nothing on one without device
 * ops); the first failure in the guest's order is the one returned.
 * *ret_disks and *ret_nics say how many were tried, for undo.
 */
/* Is the disk the PV block backend's too (not its device model's only)? */
bool vmb__disk_pv(const struct vmb_disk *d);
/*
 * visible(visible_arg), if not NULL, is called once (from any thread)
 * when every device's entries are written or the device is done with:
 * the guest can find its devices from then on.
 */
int vmb__devices_setup(struct vmb_ctx *ctx, uint32_t domid,
    const uint8_t uuid[16], const struct vmb_guest *guest,
    uint32_t *ret_disks, uint32_t *ret_nics, void (*visible)(void *arg),
    void *visible_arg, char *why, size_t why_len);
/* Tear down the first nr_disks disks and nr_nics vifs, side by side. */
void vmb__devices_undo(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *guest, uint32_t nr_disks, uint32_t nr_nics);

/* platform.c: build steps (see there); `why` says what failed. */
int vmb__step_paging(const struct vmb_guest *guest, uint32_t caps,
    bool *ret_hap, char *why, size_t why_len);
int vmb__step_platform(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *guest, const struct vmb_layout *layout,
    const struct vmb_placement *placement, const struct vmb_host *host,
    char *why, size_t why_len);
int vmb__step_firmware(struct vmb_ctx *ctx, uint32_t domid,
    const struct vmb_guest *guest, const struct vmb_layout *layout,
    struct vmb_firmware *ret_fw, struct vmb_memmap_entry *memmap,
    uint32_t *ret_nr, char *why, size_t why_len);

struct vmb__populate_job {
	const struct vmb_backend_ops *ops;
	void	*priv;
	uint32_t domid;
	const struct vmb__range *ranges;	/* from vmb__layout() */
	uint32_t nr_ranges;
	const struct vmb_host *host;	/* for pinning; may be NULL */
	bool	host_topology;		/* host is this machine: may pin */
	enum vmb_populate_strategy strategy;
	struct vmb__tpool *pool;	/* engine: runs its workers */
	uint32_t batch_bytes;		/* engine: bytes per batch (upper bound) */
	uint32_t inflight;		/* engine: batches in flight per node */
	/*
	 * The placed nodes' clean memory covers the guest (scrub progress
	 * at placement): the populate is expected to scrub nothing inline.
	 */
	bool	clean;
	/*
	 * Engine, when inflight is 0: the share of their wanted time this
	 * process's CPUs waited for a pCPU before the populate (cpuwait.c),
	 * negative when not measured.  At VMB_CPUWAIT_SERIAL or more, one
	 * worker per node, a lone one kept on its CPU (serial says so).
	 */
	double	cpu_wait;
	atomic_bool *cancel;
	vmb_progress_fn *progress;
	void	*user;
	struct vmb_ctx *ctx;		/* for debug logging; may be NULL */
	/* outputs */
	struct vmb_populate_stats stats;
	uint32_t workers_pinned;	/* engine workers pinned to node CPUs */
	uint32_t workers;
	/*
	 * For cpu_wait: one worker per node, and a populate that ran on
	 * the calling thread alone kept it on its CPU meanwhile.
	 */
	bool	serial;
	struct vmb_worker_profile profile;	/* engine workers' times */
};

/* Populate the ranges. */
int vmb__populate(struct vmb__populate_job *job);

/* loader.c */
#define VMB_XEN_ELFNOTE_PHYS32_ENTRY	18
#define VMB_HVM_START_MAGIC		0x336ec578u

struct vmb__elf_seg {
	uint64_t paddr;
	uint64_t offset;
	uint64_t filesz;
	uint64_t memsz;
};

#define VMB_ELF_MAX_SEGS	16

struct vmb__elf {
	bool	is64;
	uint64_t entry;			/* PVH PHYS32 entry */
	uint32_t nr_segs;
	struct vmb__elf_seg segs[VMB_ELF_MAX_SEGS];
	uint64_t low, high;		/* [low, high): guest-physical extent */
};

/* bzimage.c: the ELF inside an x86 bzImage (xz or gzip payload). */
bool vmb__is_bzimage(const void *image, size_t len);
/* *ret is malloc'd; `why` says what is wrong with the image. */
int vmb__bzimage_unpack(const void *image, size_t len, uint8_t **ret,
    size_t *ret_len, char *why, size_t why_len);

/*
 * imgcache.c: unpacked kernels, by the identity of the file each came
 * from (see there).  An entry is shared, read-only, by the cache and
 * the images that use it; each holds a reference.
 */
struct vmb__imgent;
/* The window in which a file's timestamps are too recent to be trusted. */
#define VMB_IMGCACHE_RACY_NS	(2ull * 1000000000)
int vmb__imgcache_new(uint64_t max_bytes, struct vmb__imgcache **ret);
void vmb__imgcache_free(struct vmb__imgcache *c);
/* Bound the bytes held (0: off, and what is held is let go). */
void vmb__imgcache_set_max(struct vmb__imgcache *c, uint64_t max_bytes);
/* For tests: the racy window (default VMB_IMGCACHE_RACY_NS); 0: none. */
void vmb__imgcache_set_racy_ns(struct vmb__imgcache *c, uint64_t ns);
void vmb__imgcache_stats(struct vmb__imgcache *c,
    struct vmb_image_cache_stats *ret);
/*
 * The kernel unpacked from the file `st` (fstat of the descriptor the
 * caller has open) describes, with a reference for the caller; NULL
 * when it is not held (c may be NULL).
 */
struct vmb__imgent *vmb__imgcache_get(struct vmb__imgcache *c,
    const struct stat *st);
/*
 * Offer `data` (malloc'd, `len` bytes), unpacked from the file `st`
 * described when the caller began to read it at `read_ns`
 * (CLOCK_REALTIME); counts a miss.  When the cache keeps it: an entry
 * that owns `data`, with a reference for the caller.  NULL when it does
 * not (off, too large, timestamps too recent, the file's kernel already
 * there, no memory): `data` is still the caller's.  c may be NULL.
 */
struct vmb__imgent *vmb__imgcache_put(struct vmb__imgcache *c,
    const struct stat *st, uint64_t read_ns, uint8_t *data, size_t len);
const uint8_t *vmb__imgent_data(const struct vmb__imgent *e, size_t *ret_len);
void vmb__imgent_unref(struct vmb__imgent *e);

/* Parse and check an ELF image held in memory. */
int vmb__elf_parse(const void *image, size_t len, struct vmb__elf *ret_elf);
/* The same; ehdr_entry: without the PVH note, start at e_entry. */
int vmb__elf_parse_as(const void *image, size_t len, bool ehdr_entry,
    struct vmb__elf *ret_elf);

struct vmb__image;

/*
 * Read and check kernel (and ramdisk) before anything is created: from
 * kernel_fd and ramdisk_fd where they are >= 0, else from the guest's
 * paths (opened without blocking, not through a final symbolic link).
 * Only regular files are read.
 */
int vmb__image_open(const struct vmb_guest *guest, struct vmb__image **ret);
/* The same; on failure, says why in `why` (may be NULL) for the user. */
int vmb__image_open_why(const struct vmb_guest *guest, int kernel_fd,
    int ramdisk_fd, struct vmb__image **ret, char *why, size_t why_len);
/*
 * The same, a bzImage kernel's ELF taken from `cache` (may be NULL)
 * when it holds that file's, and put there once unpacked.
 */
int vmb__image_open_cache(struct vmb__imgcache *cache,
    const struct vmb_guest *guest, int kernel_fd, int ramdisk_fd,
    struct vmb__image **ret, char *why, size_t why_len);
/* Did the image's kernel come from the cache? */
bool vmb__image_cached(const struct vmb__image *img);
/* The kernel's ELF, as it will be loaded (tests compare it). */
const uint8_t *vmb__image_kernel(const struct vmb__image *img,
    size_t *ret_len);
void vmb__image_free(struct vmb__image *img);
/* An HVM guest's: hvmloader, and the BIOS as its "firmware" module. */
int vmb__firmware_open(const char *hvmloader, const char *bios,
    struct vmb__image **ret, char *why, size_t why_len);
uint64_t vmb__image_entry(const struct vmb__image *img);
/*
 * Write the image, ramdisk, command line and start info into the first
 * `mem_bytes` of the domain's memory.  -EOPNOTSUPP when the backend
 * cannot map guest memory.  Fills *ret_boot on success.
 */
int vmb__image_load(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img, uint64_t mem_bytes,
    struct vmb_boot *ret_boot);
int vmb__image_load_why(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img, uint64_t mem_bytes,
    struct vmb_boot *ret_boot, char *why, size_t why_len);
/*
 * The same into a guest laid out by layout.c: everything goes below
 * `load_limit` (the end of RAM below the MMIO hole); the start info
 * carries `memmap` and the ACPI RSDP (0: none); *ret_boot gets the map.
 */
struct vmb__load_env {
	uint64_t load_limit;
	uint64_t ram_bytes;		/* all of the guest's RAM */
	const struct vmb_memmap_entry *memmap;
	uint32_t nr_memmap;
	uint64_t rsdp;
};
int vmb__image_load_env(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img,
    const struct vmb__load_env *env, struct vmb_boot *ret_boot, char *why,
    size_t why_len);

/* Time */
uint64_t vmb__now_ns(void);

/*
 * vmb_nic_parse's flags: the vif is an HVM guest's (model= and
 * type=ioemu are its emulated NIC's); keys_list.c sets it.
 */
#define VMB__NIC_HVM	(1u << 30)
/* vmb_disk_check() for a guest of `type` (an HVM guest's emulated disks). */
int vmb__disk_check(struct vmb_disk *disk, enum vmb_guest_type type,
    const char *basedir, const char *where, struct vmb_diags *diags);

#endif /* VMB_INTERNAL_H */
