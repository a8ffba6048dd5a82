/*
 * hvabi.h - the companion hypercall ABI of vmbuild.
 *
 * One header, shared by hvsim (hypervisor/sim), the Xen patch series
 * (hypervisor/xen), libvmbuild's backends and the tests.  It defines:
 *
 *   - the three companion hypercalls: batched populate, scrub progress and
 *     counters;
 *   - the domain operations a toolstack needs from hvsim (create, destroy,
 *     pause, unpause, list, max vCPUs, max memory, claims, access to guest
 *     memory for image loading), and the lifecycle a toolstack reacts to
 *     (a domain shutting down with a reason, the PV control node a
 *     shutdown request goes through, a wait for domain changes);
 *   - the framing hvsim uses to carry them on its Unix socket.
 *
 * Rules that keep it usable as a Xen hypercall buffer as well as a socket
 * payload: every struct is fixed-size, naturally aligned, has explicit
 * padding (which must be zero), and uses only fixed-width integer types.
 * Variable parts are trailing arrays whose length is given by a count field
 * in the fixed part.  A change of any layout bumps HV_ABI_VERSION.
 *
 * Errors are negative errno values, in hv_msg_hdr.status on the socket and
 * as the hypercall return value on Xen.
 */
#ifndef VMBUILD_HVABI_H
#define VMBUILD_HVABI_H

#include <stdint.h>

/*
 * 2: HV_OP_MAP only translates (no descriptor is passed: hvsim's memory is
 * its own anonymous mapping); guest memory is read and written with
 * HV_OP_GUEST_READ / HV_OP_GUEST_WRITE (HV_CAP_GUEST_COPY, was HV_CAP_MAP);
 * hv_shadow_workload_reply gained guest_writes; hv_scrub_reply and
 * hv_populate_reply carry the version (the Xen series returns them from
 * hypercalls, where no header carries it).  One version for both changes:
 * neither was released alone.
 */
#define HV_ABI_VERSION		2
#define HV_MSG_MAGIC		0x4d535648u	/* "HVSM" little-endian */

#define HV_PAGE_SHIFT		12
#define HV_PAGE_SIZE		(1u << HV_PAGE_SHIFT)
#define HV_MAX_ORDER		18		/* 1 GiB extents on x86 */
#define HV_ORDER_2M		9
#define HV_ORDER_1G		18

#define HV_MAX_NODES		64		/* as Xen's MAX_NUMNODES on x86 */
#define HV_MAX_CPUS		4096
#define HV_NAME_LEN		64		/* including the NUL */
#define HV_NODE_ANY		0xffffu

/* Bounds that a server enforces and a client must respect. */
#define HV_MAX_PAYLOAD		(1u << 20)	/* bytes after the header */
#define HV_MAX_EXTENTS		4096		/* extents per populate call */
#define HV_MAX_MAP_PAGES	65536		/* pages per map call (256 MiB) */
#define HV_MAX_COPY		(1u << 19)	/* bytes per guest read/write */
#define HV_MAX_LIST		1024		/* domains per list reply */

/* ------------------------------------------------------------------ */
/* Framing on hvsim's socket: a header, then `len` bytes of payload.   */

struct hv_msg_hdr {
	uint32_t magic;		/* HV_MSG_MAGIC */
	uint16_t version;	/* HV_ABI_VERSION; a mismatch is -EPROTO */
	uint16_t op;		/* enum hv_op */
	uint32_t len;		/* payload bytes following; <= HV_MAX_PAYLOAD */
	int32_t status;		/* reply only: 0 or -errno */
	uint64_t seq;		/* chosen by the client, echoed in the reply */
};

enum hv_op {
	HV_OP_HELLO = 1,	/* -> hv_hello_reply */
	HV_OP_HOST_INFO,	/* -> hv_host_info + nodes[] + cpus[] */
	HV_OP_DOMAIN_CREATE,	/* hv_domain_create -> hv_domain_create_reply */
	HV_OP_DOMAIN_DESTROY,	/* hv_domid */
	HV_OP_DOMAIN_PAUSE,	/* hv_domid */
	HV_OP_DOMAIN_UNPAUSE,	/* hv_domid */
	HV_OP_DOMAIN_LIST,	/* hv_domain_list -> hv_domain_list_reply + info[] */
	HV_OP_DOMAIN_MAX_VCPUS,	/* hv_domain_set */
	HV_OP_DOMAIN_MAX_MEM,	/* hv_domain_set (value in pages) */
	HV_OP_CLAIM,		/* hv_domain_set (pages; 0 cancels) */
	HV_OP_POPULATE,		/* hv_populate + extents[] -> hv_populate_reply */
	HV_OP_MAP,		/* hv_map -> hv_map_reply + mfns[] (translation) */
	HV_OP_SCRUB_PROGRESS,	/* -> hv_scrub_reply + nodes[] */
	HV_OP_COUNTERS,		/* -> hv_counters */
	HV_OP_SHADOW_WORKLOAD,	/* hv_shadow_workload -> hv_shadow_workload_reply */
	HV_OP_GUEST_READ,	/* hv_guest_copy -> len bytes */
	HV_OP_GUEST_WRITE,	/* hv_guest_copy + len bytes -> nothing */
	HV_OP_DOMAIN_SHUTDOWN,	/* hv_domain_shutdown (HV_CAP_LIFECYCLE) */
	HV_OP_DOMAIN_CONTROL,	/* hv_domain_control -> hv_domain_control_reply */
	HV_OP_DOMAIN_WATCH,	/* hv_domain_watch -> hv_domain_watch_reply */
	/* Everyday settings (HV_CAP_EVERYDAY): scheduler, name, the log. */
	HV_OP_DOMAIN_SCHED,	/* hv_domain_sched -> hv_domain_sched_reply */
	HV_OP_DOMAIN_RENAME,	/* hv_domain_rename */
	HV_OP_LOG_READ,		/* hv_log_read -> hv_log_reply + text */
	/* vCPUs (HV_CAP_VCPUS): online, hard and soft affinity. */
	HV_OP_DOMAIN_VCPU,	/* hv_domain_vcpu -> hv_domain_vcpu_reply */
	/* Log-dirty (HV_CAP_LOG_DIRTY): live migration's pre-copy. */
	HV_OP_DIRTY_LOG,	/* hv_dirty_log -> hv_dirty_log_reply + bits */
	HV_OP_MAX
};

/* Capabilities announced by HV_OP_HELLO. */
#define HV_CAP_POPULATE_BATCH	(1u << 0)
#define HV_CAP_SCRUB_PROGRESS	(1u << 1)
#define HV_CAP_COUNTERS		(1u << 2)
#define HV_CAP_GUEST_COPY	(1u << 3)	/* HV_OP_GUEST_READ/WRITE work */
#define HV_CAP_SHADOW		(1u << 4)	/* shadow paging model */
#define HV_CAP_CLAIMS		(1u << 5)
/* HV_OP_DOMAIN_SHUTDOWN, _CONTROL, _WATCH and HV_DOMSTATE_SHUTDOWN. */
#define HV_CAP_LIFECYCLE	(1u << 6)
/* hv_scrub_node.clean_1g_blocks is reported (it was `pad`, always 0). */
#define HV_CAP_SCRUB_BLOCKS	(1u << 7)
/* HV_OP_DOMAIN_SCHED, HV_OP_DOMAIN_RENAME and HV_OP_LOG_READ. */
#define HV_CAP_EVERYDAY		(1u << 8)
/* HV_OP_DOMAIN_VCPU. */
#define HV_CAP_VCPUS		(1u << 9)
/* HV_OP_DIRTY_LOG (with real backing only: phantom memory has no bytes). */
#define HV_CAP_LOG_DIRTY	(1u << 10)

enum hv_backing {
	HV_BACKING_REAL = 1,	/* memory is mapped; pages are real */
	HV_BACKING_PHANTOM = 2,	/* metadata only */
};

enum hv_flush_mode {
	HV_FLUSH_BATCH = 1,	/* one filter evaluation, <= 1 flush per batch */
	HV_FLUSH_ALLOC = 2,	/* filter per page, flush per extent (Xen < 4.8) */
};

/*
 * The model's node i is this machine's node i (hvsim --topology host), so
 * pinning a thread to the CPUs of host node i puts it next to the memory
 * of node i.  Without it the topology is synthetic: do not pin.
 */
#define HV_HELLO_TOPOLOGY_HOST	(1u << 0)

struct hv_hello_reply {
	uint32_t abi_version;
	uint32_t caps;		/* HV_CAP_* */
	uint32_t backing;	/* enum hv_backing */
	uint32_t flush_mode;	/* enum hv_flush_mode */
	uint32_t shadow_threshold;
	/*
	 * HV_HELLO_*.  This was `pad`, which had to be zero: the layout and
	 * size are unchanged and an old hypervisor reports no flag, so
	 * HV_ABI_VERSION stays the same.
	 */
	uint32_t flags;
	uint64_t boot_time_ns;	/* CLOCK_REALTIME when the hypervisor started */
	char	 name[HV_NAME_LEN];	/* implementation, e.g. "hvsim 0.1" */
};

/* ------------------------------------------------------------------ */
/* Host topology.                                                      */

struct hv_node_info {
	uint32_t node;
	uint32_t nr_cpus;
	uint64_t first_mfn;	/* node memory is [first_mfn, first_mfn+total) */
	uint64_t total_pages;
	uint64_t free_pages;	/* clean + dirty */
};

struct hv_cpu_info {
	uint32_t cpu;
	uint32_t node;
	uint32_t socket;
	uint32_t core;		/* host-wide core id; SMT siblings share it */
	uint32_t thread;	/* index within the core: 0 is the first sibling */
	uint32_t pad;
};

struct hv_host_info {
	uint32_t nr_nodes;	/* hv_node_info[nr_nodes] follows */
	uint32_t nr_cpus;	/* then hv_cpu_info[nr_cpus] */
	uint32_t threads_per_core;
	uint32_t cores_per_node;
	uint64_t total_pages;
	uint64_t free_pages;
	uint64_t outstanding_claims;	/* pages */
	uint64_t max_mfn;
};

/* ------------------------------------------------------------------ */
/* Domains.                                                            */

typedef uint32_t hv_domid_t;
#define HV_DOMID_INVALID	0x7ff4u	/* as Xen's DOMID_INVALID */
#define HV_DOMID_FIRST		1	/* 0 is the control domain */
#define HV_DOMID_MAX		0x7fefu	/* as Xen's DOMID_FIRST_RESERVED - 1 */

/* hv_domain_create.flags */
#define HV_DOMF_HVM		(1u << 0)
#define HV_DOMF_HAP		(1u << 1)	/* without it, an HVM domain is shadow-paged */

/* hv_domain_info.state */
enum hv_domain_state {
	HV_DOMSTATE_PAUSED = 1,	/* created domains start paused */
	HV_DOMSTATE_RUNNING = 2,
	HV_DOMSTATE_DYING = 3,
	/*
	 * Shut down (HV_OP_DOMAIN_SHUTDOWN): its vCPUs stopped for good,
	 * its memory kept until the toolstack destroys it, as Xen keeps a
	 * domain after SCHEDOP_shutdown.  The reason is in the flags.
	 */
	HV_DOMSTATE_SHUTDOWN = 4,
};

/*
 * Why a domain shut down: Xen's SHUTDOWN_* codes (public/sched.h), the
 * value a guest passes to SCHEDOP_shutdown.
 */
#define HV_SHUTDOWN_POWEROFF	0
#define HV_SHUTDOWN_REBOOT	1
#define HV_SHUTDOWN_SUSPEND	2
#define HV_SHUTDOWN_CRASH	3
#define HV_SHUTDOWN_WATCHDOG	4
#define HV_SHUTDOWN_SOFT_RESET	5
#define HV_SHUTDOWN_MAX		5

/*
 * hv_domain_info.flags holds, besides the HV_DOMF_* a domain was created
 * with, the reason of a domain in HV_DOMSTATE_SHUTDOWN in these bits, as
 * Xen's domain info flags carry it (XEN_DOMINF_shutdownshift): the
 * layout of hv_domain_info is unchanged.
 */
#define HV_DOMINF_SHUTDOWN_SHIFT	16
#define HV_DOMINF_SHUTDOWN_MASK		0xffu

struct hv_domid {
	hv_domid_t domid;
	uint32_t pad;
};

struct hv_domain_create {
	uint32_t flags;		/* HV_DOMF_* */
	uint32_t max_vcpus;
	uint64_t max_pages;
	uint8_t	 handle[16];	/* toolstack's UUID, returned by list */
	char	 name[HV_NAME_LEN];	/* informational; NUL-terminated */
};

struct hv_domain_create_reply {
	hv_domid_t domid;
	uint32_t pad;
};

struct hv_domain_set {
	hv_domid_t domid;
	uint32_t pad;
	uint64_t value;
};

struct hv_domain_list {
	hv_domid_t first_domid;	/* list domains with domid >= this */
	uint32_t max;		/* <= HV_MAX_LIST */
};

struct hv_domain_info {
	hv_domid_t domid;
	uint32_t state;		/* enum hv_domain_state */
	uint32_t flags;		/* HV_DOMF_* as created */
	uint32_t max_vcpus;
	uint64_t tot_pages;
	uint64_t max_pages;
	uint64_t outstanding_pages;	/* claim not yet populated */
	uint64_t created_ns;	/* CLOCK_REALTIME */
	uint8_t	 handle[16];
	char	 name[HV_NAME_LEN];
	uint64_t node_pages[HV_MAX_NODES];	/* tot_pages split by node */
};

struct hv_domain_list_reply {
	uint32_t nr;		/* hv_domain_info[nr] follows */
	uint32_t more;		/* 1 if domains past the last returned exist */
};

/* ------------------------------------------------------------------ */
/* Lifecycle (HV_CAP_LIFECYCLE).                                       */

/*
 * Shut a running or paused domain down with a reason (HV_SHUTDOWN_*):
 * what a guest does with SCHEDOP_shutdown, or a toolstack with
 * SCHEDOP_remote_shutdown.  hvsim runs no guest code, so a test plays
 * the guest with this op.  A domain already shut down keeps its first
 * reason (0 is returned, as Xen does); a dying one is -ESRCH.
 */
struct hv_domain_shutdown {
	hv_domid_t domid;
	uint32_t reason;	/* HV_SHUTDOWN_* */
};

/*
 * The PV control node of a domain, what Xen's xenstore holds under
 * /local/domain/N/control: the features the guest's drivers announced
 * (feature-poweroff, feature-reboot) and the request a toolstack posted
 * (control/shutdown), which the guest takes (acknowledges) before it
 * acts.  hvsim only stores them: the toolstack side posts and withdraws
 * requests, the guest side (a test) announces features and takes them.
 */
enum hv_control_op {
	HV_CONTROL_GET = 0,	/* change nothing */
	HV_CONTROL_REQUEST,	/* toolstack: post `value` (HV_SHUTDOWN_*) */
	HV_CONTROL_WITHDRAW,	/* toolstack: drop the request if not taken */
	HV_CONTROL_ANNOUNCE,	/* guest: features = `value` */
	HV_CONTROL_TAKE,	/* guest: take the request */
};
#define HV_CONTROL_FEATURE_POWEROFF	(1u << 0)
#define HV_CONTROL_FEATURE_REBOOT	(1u << 1)
#define HV_CONTROL_NONE		0xffffffffu	/* no request posted */

struct hv_domain_control {
	hv_domid_t domid;
	uint32_t op;		/* enum hv_control_op */
	uint32_t value;
	uint32_t pad;
};

struct hv_domain_control_reply {
	uint32_t features;	/* HV_CONTROL_FEATURE_* */
	uint32_t request;	/* posted and not taken, or HV_CONTROL_NONE */
	uint32_t before;	/* `request` as it was before this op */
	uint32_t pad;
};

/*
 * Wait until the set of domains or their lifecycle changed: created,
 * shut down or destroyed (what Xen's @introduceDomain and @releaseDomain
 * watches tell), that is until the domain generation exceeds `since`, or
 * `timeout_ms` passed (at most HV_WATCH_MAX_MS).  The reply is the
 * generation then; `since` 0 answers at once.  A toolstack keeps one
 * such call outstanding on a connection of its own and lists the
 * domains when it returns with a new generation.
 */
#define HV_WATCH_MAX_MS		30000

struct hv_domain_watch {
	uint64_t since;
	uint32_t timeout_ms;
	uint32_t pad;
};

struct hv_domain_watch_reply {
	uint64_t generation;
};

/* ------------------------------------------------------------------ */
/* Everyday settings (HV_CAP_EVERYDAY).                                */

/*
 * A domain's scheduling parameters, as Xen's credit2 keeps them: a
 * weight (1..65535, 256 by default) and a cap (percent of one CPU, 0:
 * none; at most 100 per vCPU).  hvsim runs no vCPUs: it keeps and
 * reports them.  `set` says which fields to change (none: only read).
 */
#define HV_SCHED_CREDIT2	6	/* Xen's XEN_SCHEDULER_CREDIT2 */
#define HV_SCHED_WEIGHT_DEFAULT	256
#define HV_SCHED_SET_WEIGHT	(1u << 0)
#define HV_SCHED_SET_CAP	(1u << 1)

struct hv_domain_sched {
	hv_domid_t domid;
	uint32_t set;		/* HV_SCHED_SET_* */
	uint32_t weight;
	uint32_t cap;
};

struct hv_domain_sched_reply {
	uint32_t scheduler;	/* HV_SCHED_CREDIT2 */
	uint32_t weight;	/* after the change */
	uint32_t cap;
	uint32_t pad;
};

/* A new name (informational, as at create; NUL-terminated). */
struct hv_domain_rename {
	hv_domid_t domid;
	uint32_t pad;
	char	 name[HV_NAME_LEN];
};

/*
 * hvsim's recent log lines, what Xen's console ring is to `xl dmesg`:
 * the last HV_LOG_RING bytes it logged, oldest first; HV_LOG_CLEAR
 * empties the ring after reading it.
 */
#define HV_LOG_RING		16384
#define HV_LOG_CLEAR		(1u << 0)

struct hv_log_read {
	uint32_t flags;		/* HV_LOG_* */
	uint32_t pad;
};

struct hv_log_reply {
	uint32_t len;		/* bytes of text following; <= HV_LOG_RING */
	uint32_t pad;
};

/* ------------------------------------------------------------------ */
/* vCPUs (HV_CAP_VCPUS).                                               */

/*
 * One vCPU of a domain: whether it is online and its hard and soft
 * affinity (bitmaps of HV_MAX_CPUS bits, CPU c at bit c % 64 of word
 * c / 64), what Xen keeps of a vCPU (XEN_DOMCTL_getvcpuinfo,
 * XEN_DOMCTL_{get,set}vcpuaffinity) and a toolstack changes with xl
 * vcpu-set and vcpu-pin.  hvsim runs no vCPU: it keeps and reports
 * them.  `set` says what to change (none: only read).  -EINVAL for a
 * vCPU at or beyond the domain's max_vcpus, an affinity naming a CPU
 * the host lacks or none at all, or an unknown bit of `set`; -EBUSY for
 * taking the domain's last online vCPU offline; -ESRCH for a domain
 * that is not there or dying.  A domain's vCPUs are created online,
 * each with every CPU of the host in both affinities.
 */
#define HV_VCPU_SET_ONLINE	(1u << 0)
#define HV_VCPU_SET_HARD	(1u << 1)
#define HV_VCPU_SET_SOFT	(1u << 2)
#define HV_CPUMAP_WORDS		(HV_MAX_CPUS / 64)

struct hv_domain_vcpu {
	hv_domid_t domid;
	uint32_t vcpu;
	uint32_t set;		/* HV_VCPU_SET_* */
	uint32_t online;	/* 0 or 1, with HV_VCPU_SET_ONLINE */
	uint64_t hard[HV_CPUMAP_WORDS];	/* with HV_VCPU_SET_HARD */
	uint64_t soft[HV_CPUMAP_WORDS];	/* with HV_VCPU_SET_SOFT */
};

struct hv_domain_vcpu_reply {
	uint32_t online;	/* this vCPU, after the change: 0 or 1 */
	uint32_t nr_online;	/* the domain's vCPUs online */
	uint64_t hard[HV_CPUMAP_WORDS];
	uint64_t soft[HV_CPUMAP_WORDS];
};

/* ------------------------------------------------------------------ */
/* Hypercall 1: batched populate.                                      */

/* hv_populate.flags */
#define HV_POPF_EXACT_NODE	(1u << 0)	/* fail an extent rather than fall back */
#define HV_POPF_ALLOW_DIRTY	(1u << 1)	/* take dirty pages, scrubbing inline */

struct hv_extent {
	uint64_t gfn;		/* aligned to 1 << order */
	uint8_t	 order;		/* 0, HV_ORDER_2M or HV_ORDER_1G */
	uint8_t	 pad;
	uint16_t node;		/* requested node, or HV_NODE_ANY */
	uint32_t pad2;
};

/*
 * Populate extents[start..nr_extents) of the request.  The hypervisor may
 * stop early (preemption); hv_populate_reply.next says where to continue.
 * A failed extent ends the call with status -ENOMEM (exact node could not
 * satisfy it) or -EINVAL (bad gfn/order/node); extents before `next` stay
 * populated, and the caller owns undoing them (by destroying the domain).
 */
struct hv_populate {
	hv_domid_t domid;
	uint32_t flags;		/* HV_POPF_* */
	uint32_t nr_extents;	/* hv_extent[nr_extents] follows; <= HV_MAX_EXTENTS */
	uint32_t start;		/* first extent to do */
};

struct hv_populate_stats {
	uint64_t extents_done;
	uint64_t pages_done;
	uint64_t pages_scrubbed_inline;
	uint64_t pages_fallback;	/* not on the requested node */
	uint64_t flushes_issued;
	uint64_t flushes_avoided;	/* the filter found no CPU to flush */
	uint64_t filter_evaluations;
	uint64_t elapsed_ns;
};

struct hv_populate_reply {
	uint32_t version;	/* HV_ABI_VERSION of this layout */
	uint32_t next;		/* index of the first extent not done */
	uint32_t preempted;	/* 1 if stopped before nr_extents (never on Xen) */
	uint32_t pad;
	struct hv_populate_stats stats;
};

/* ------------------------------------------------------------------ */
/* Guest memory: translation and copies (image loading).               */

/*
 * Translate gfn..gfn+nr of a domain to machine frames (-ENOENT if any is
 * not populated).  Nothing is mapped: a toolstack reads and writes guest
 * memory with HV_OP_GUEST_READ / HV_OP_GUEST_WRITE.
 */
struct hv_map {
	hv_domid_t domid;
	uint32_t nr;		/* <= HV_MAX_MAP_PAGES */
	uint64_t gfn;
};

struct hv_map_reply {
	uint32_t nr;		/* uint64_t mfn[nr] follows */
	uint32_t pad;
};

/*
 * Copy len bytes from or to guest-physical address gpa of a domain, as a
 * foreign mapping lets a toolstack do on Xen.  Every byte must be
 * populated (-ENOENT for a hole); -EOPNOTSUPP with phantom memory.  A
 * read's reply is the len bytes; a write's request carries them after
 * the struct.
 */
struct hv_guest_copy {
	hv_domid_t domid;
	uint32_t len;		/* 1..HV_MAX_COPY */
	uint64_t gpa;
};

/* ------------------------------------------------------------------ */
/* Log-dirty (HV_CAP_LOG_DIRTY).                                        */

/*
 * Which pages of a domain were written since the log was last cleaned,
 * what a live migration's pre-copy rounds send again (Xen's shadow op
 * ENABLE_LOGDIRTY / CLEAN / PEEK).  hvsim runs no guest code: a page is
 * dirty when it is written through this ABI (HV_OP_GUEST_WRITE).
 * ENABLE starts the log (every bit clear) over the domain's memory as
 * populated then, [0, end_gfn); DISABLE stops it; CLEAN and PEEK return
 * `nr` bits (a multiple of 64, at most HV_MAX_DIRTY_BITS) from `gfn` (a
 * multiple of 64), bits past end_gfn zero, and CLEAN clears what it
 * returned.  -ENOENT: CLEAN or PEEK without the log on; -EOPNOTSUPP
 * with phantom memory; -ESRCH for a domain that is not there.
 */
#define HV_DIRTY_DISABLE	0u
#define HV_DIRTY_ENABLE		1u
#define HV_DIRTY_CLEAN		2u
#define HV_DIRTY_PEEK		3u
#define HV_MAX_DIRTY_BITS	(1u << 22)	/* 512 KiB of bitmap a reply */

struct hv_dirty_log {
	hv_domid_t domid;
	uint32_t op;		/* HV_DIRTY_* */
	uint64_t gfn;		/* CLEAN, PEEK: the first bit */
	uint32_t nr;		/* CLEAN, PEEK: bits wanted */
	uint32_t pad;
};

struct hv_dirty_log_reply {
	uint64_t dirty;		/* bits set among those returned */
	uint64_t end_gfn;	/* the log covers [0, end_gfn) */
	uint32_t nr;		/* bits returned: uint64_t words[nr / 64] follow */
	uint32_t pad;
};

/* ------------------------------------------------------------------ */
/* Hypercall 2: scrub progress.                                        */

struct hv_scrub_node {
	uint32_t node;
	uint32_t workers;	/* scrub workers on this node (one per core) */
	uint64_t total_pages;
	uint64_t free_pages;	/* clean + dirty */
	uint64_t dirty_pages;	/* free and not yet scrubbed */
	uint64_t scrubbed_pages_total;	/* since boot, background + inline + boot */
	uint64_t rate_pages_per_sec;	/* over the last sampling window */
	uint32_t boot_scrub_done;
	/*
	 * Free 1 GiB blocks that are wholly clean (HV_CAP_SCRUB_BLOCKS):
	 * what a 1 GiB extent can take without scrubbing inline.  Clean
	 * pages are not enough: dirty pages inside the only free 1 GiB
	 * block are scrubbed inline however much is clean elsewhere.  This
	 * was `pad`, which had to be zero: the layout and size are
	 * unchanged, so HV_ABI_VERSION stays the same.
	 */
	uint32_t clean_1g_blocks;
};

struct hv_scrub_reply {
	uint32_t nr_nodes;	/* hv_scrub_node[nr_nodes] follows */
	uint32_t version;	/* HV_ABI_VERSION of this layout */
	uint64_t now_ns;	/* CLOCK_MONOTONIC (Xen: its system time) */
};

/* ------------------------------------------------------------------ */
/* Hypercall 3: counters.  All monotonic 64-bit.                       */

enum hv_flush_cause {
	HV_FLUSH_CAUSE_POPULATE = 0,
	HV_FLUSH_CAUSE_FREE,
	HV_FLUSH_CAUSE_OTHER,
	HV_FLUSH_CAUSE_MAX
};

enum hv_unshadow_reason {
	HV_UNSHADOW_WRITE_FLOOD = 0,	/* N consecutive emulated writes */
	HV_UNSHADOW_EARLY,		/* Xen's 2nd consecutive zero write */
	HV_UNSHADOW_OTHER,		/* teardown, page freed, ... */
	HV_UNSHADOW_REASON_MAX
};

enum hv_order_class {
	HV_ORDER_CLASS_4K = 0,
	HV_ORDER_CLASS_2M,
	HV_ORDER_CLASS_1G,
	HV_ORDER_CLASS_OTHER,
	HV_ORDER_CLASS_MAX
};

struct hv_counters {
	uint32_t version;	/* HV_ABI_VERSION of this layout */
	uint32_t pad;
	uint64_t tlb_flushes_issued[HV_FLUSH_CAUSE_MAX];
	uint64_t tlb_flushes_filtered[HV_FLUSH_CAUSE_MAX];	/* avoided */
	uint64_t tlb_filter_evaluations;	/* CPU-mask computations */
	uint64_t tlb_flush_cpu_ipis;	/* CPUs interrupted by flushes */
	uint64_t populate_calls;
	uint64_t populate_preemptions;
	uint64_t populate_extents[HV_ORDER_CLASS_MAX];
	uint64_t populate_pages[HV_ORDER_CLASS_MAX];	/* 4 KiB pages, by extent order */
	uint64_t populate_pages_fallback;
	uint64_t scrub_pages_boot;
	uint64_t scrub_pages_background;
	uint64_t scrub_pages_inline;
	uint64_t unshadow[HV_UNSHADOW_REASON_MAX];
	uint64_t emulated_pt_writes;
	uint64_t shadow_faults;
	uint64_t domains_created;
	uint64_t domains_destroyed;
};

/* ------------------------------------------------------------------ */
/* Shadow paging model (hvsim): drive the synthetic guest workload.    */

enum hv_shadow_pattern {
	HV_SHADOW_PT_UPDATE = 1,	/* ordinary PTE updates, tables stay tables */
	HV_SHADOW_IPERF = 2,	/* post 004: page-table pages become data pages */
	HV_SHADOW_FORK_EXIT = 3,	/* zero writes to dying L1s (early unshadow) */
};

struct hv_shadow_workload {
	hv_domid_t domid;	/* a running domain created without HV_DOMF_HAP */
	uint32_t pattern;	/* enum hv_shadow_pattern */
	uint64_t nr_writes;	/* emulated writes to run before replying */
};

struct hv_shadow_workload_reply {
	uint64_t emulated_writes;
	uint64_t unshadow[HV_UNSHADOW_REASON_MAX];
	uint64_t shadow_faults;	/* writes trapped because the page was shadowed */
	uint64_t elapsed_ns;
	uint64_t guest_writes;	/* all the guest wrote, trapped or not (ABI 2) */
};

/* ------------------------------------------------------------------ */
/* Fault injection (hvsim only; no hypercall of Xen).                  */

/*
 * A test makes hvsim fail, hang in, or crash at a given call of an op, to
 * see that the toolstack undoes and loses nothing.  hvsim answers this op
 * only when started with --fault-requests (else -EPERM).  Its number lies
 * outside enum hv_op, which numbers the hypercalls.
 *
 * hv_fault.op names the op (enum hv_op, or 0 with HV_FAULT_QUERY and
 * HV_FAULT_CLEAR); `nth` counts that op's calls from now on, over every
 * connection: 1 is the next one.  The reply gives every op's calls so far.
 */
#define HV_OP_FAULT		0x7f01	/* hv_fault -> hv_fault_reply */
#define HV_FAULT_MAX_OPS	32	/* ops counted in hv_fault_reply */

enum hv_fault_mode {
	HV_FAULT_QUERY = 0,	/* arm nothing, only report the counts */
	HV_FAULT_FAIL = 1,	/* the call fails with -error, doing nothing */
	HV_FAULT_HANG = 2,	/* the call is never answered */
	HV_FAULT_CRASH = 3,	/* hvsim dies (SIGKILL) instead of answering */
	HV_FAULT_CLEAR = 4,	/* forget every armed fault */
};

struct hv_fault {
	uint16_t op;		/* enum hv_op */
	uint16_t mode;		/* enum hv_fault_mode */
	int32_t	 error;		/* HV_FAULT_FAIL: a positive errno; 0: EIO */
	uint32_t nth;		/* >= 1 */
	uint32_t pad;
};

struct hv_fault_reply {
	uint64_t calls[HV_FAULT_MAX_OPS];	/* by op number, since start */
	uint64_t fired;		/* faults that went off */
	uint32_t armed;		/* faults waiting for their call */
	uint32_t pad;
};

/* ------------------------------------------------------------------ */
/* The companion hypercalls on Xen (hypervisor/xen).                   */

/*
 * On Xen, scrub progress, counters and the batched populate are the
 * series' XEN_SYSCTL_scrub_progress, XEN_SYSCTL_mm_stats and
 * XENMEM_populate_batch, with Xen's own typed structures (guest-handle
 * arrays, counts and Xen's time: the tools compute rates).  The xen
 * backend converts them to and from this file's layouts:
 * libvmbuild/xen/xen_series.h has its copy of them, which
 * hypervisor/xen/abi-check.c checks against the series.
 */

#endif /* VMBUILD_HVABI_H */
