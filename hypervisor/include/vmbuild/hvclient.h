/*
 * hvclient.h - client side of hvsim's socket (hypervisor/lib/hvclient.c).
 *
 * A connection carries one call at a time; it is not thread-safe.
 * Threads that populate in parallel open one connection each.  A call
 * may be several requests sent together (hvc_calls): hvsim answers
 * them in order, each as if it came alone, in one round trip.
 *
 * Error convention: every function returns 0 or a negative errno, either a
 * transport error (-ECONNRESET, -EPIPE, -EPROTO for a malformed reply, ...)
 * or the status the hypervisor put in its reply.  Output arguments named
 * ret_* are written only on success.
 */
#ifndef VMBUILD_HVCLIENT_H
#define VMBUILD_HVCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "vmbuild/hvabi.h"

struct hvc;

/* A reply that takes longer than this is -ETIMEDOUT (hvc_set_timeout). */
#define HVC_DEFAULT_TIMEOUT_MS	60000

/*
 * Connect to hvsim at `path` and check the ABI version (HV_OP_HELLO),
 * within HVC_DEFAULT_TIMEOUT_MS.
 */
int hvc_open(const char *path, struct hvc **ret_conn);
/* NULL-tolerant. */
void hvc_close(struct hvc *conn);

/*
 * Bound every later call (send and reply together) to `timeout_ms`;
 * <= 0 waits for ever.  A call that times out fails with -ETIMEDOUT and
 * leaves the connection broken (its stream position is unknown).
 */
void hvc_set_timeout(struct hvc *conn, int timeout_ms);
/*
 * While a call waits, also watch `fd` (-1: none): once it is readable,
 * the call gets HVC_CANCEL_GRACE_MS more to be answered, then fails
 * with -ECANCELED and the connection is broken.  For a build that is
 * cancelled while the hypervisor does not answer.
 */
#define HVC_CANCEL_GRACE_MS	2000
void hvc_set_cancel_fd(struct hvc *conn, int fd);

/* The hello reply received by hvc_open. */
const struct hv_hello_reply *hvc_hello(const struct hvc *conn);

/*
 * One raw call: send `op` with `req_len` bytes of `req`, receive at most
 * `rep_cap` bytes into `rep`.  *ret_len gets the reply's payload length;
 * if ret_fd is not NULL it gets a descriptor passed with the reply, or -1
 * (the caller closes it).  A reply larger than rep_cap is -EMSGSIZE, and
 * the connection stays usable.
 */
int hvc_call(struct hvc *conn, uint16_t op, const void *req, size_t req_len,
    void *rep, size_t rep_cap, size_t *ret_len, int *ret_fd);

/*
 * One op as hvops.def describes it: the request must have the op's size
 * (at least its fixed part when an array follows) and `rep_cap` the
 * reply's (at least its fixed part when an array follows), else -EINVAL
 * without a call; a successful reply of another size is -EPROTO.
 * *ret_len (if not NULL) gets the reply's length, also when the call
 * failed (a failed populate says how far it got), 0 if none came.  Also
 * for HV_OP_FAULT.
 */
int hvc_op(struct hvc *conn, uint16_t op, const void *req, size_t req_len,
    void *rep, size_t rep_cap, size_t *ret_len);

/*
 * Several ops in one round trip: every request is sent at once, then
 * the replies are read in order.  Each element is what hvc_op takes
 * (op, request, reply buffer; sizes checked the same way); its rc and
 * rep_len get that op's outcome (rep_len as hvc_op's *ret_len).  Returns
 * 0 when every reply came, whatever their status, or the transport error
 * that broke the connection (the elements' rc are then not to be
 * trusted).  At most HVC_CALLS_MAX requests.
 */
#define HVC_CALLS_MAX	8
struct hvc_req {
	uint16_t op;
	const void *req;
	size_t	req_len;
	void	*rep;
	size_t	rep_cap;
	size_t	rep_len;	/* out */
	int	rc;		/* out */
};
int hvc_calls(struct hvc *conn, struct hvc_req *v, size_t n);

/*
 * Typed helpers over hvc_op.  Variable-sized replies are malloc'd; the caller frees
 * them with free().
 */
int hvc_host_info(struct hvc *conn, struct hv_host_info **ret_info);
/* Pointers into a reply of hvc_host_info. */
struct hv_node_info *hvc_host_nodes(struct hv_host_info *info);
struct hv_cpu_info *hvc_host_cpus(struct hv_host_info *info);

int hvc_domain_create(struct hvc *conn, const struct hv_domain_create *req,
    hv_domid_t *ret_domid);
int hvc_domain_op(struct hvc *conn, uint16_t op, hv_domid_t domid);
int hvc_domain_set(struct hvc *conn, uint16_t op, hv_domid_t domid,
    uint64_t value);
/* All domains, following `more` until the end. */
int hvc_domain_list(struct hvc *conn, struct hv_domain_info **ret_info,
    uint32_t *ret_nr);

/*
 * Populate all `nr` extents, continuing after preemption; `stats`
 * accumulates.  On failure *ret_done (if not NULL) gets the number of
 * extents populated before the failing one.
 */
int hvc_populate(struct hvc *conn, hv_domid_t domid, uint32_t flags,
    const struct hv_extent *ext, uint32_t nr,
    struct hv_populate_stats *stats, uint32_t *ret_done);
/*
 * The same, telling step(arg, done) how many of the `nr` extents are
 * populated after every reply that got further (each continuation), so
 * that a long populate shows progress as the hypervisor makes it.
 */
int hvc_populate_step(struct hvc *conn, hv_domid_t domid, uint32_t flags,
    const struct hv_extent *ext, uint32_t nr,
    struct hv_populate_stats *stats, uint32_t *ret_done,
    void (*step)(void *arg, uint32_t done), void *arg);
/*
 * Populate requests this connection has sent so far: one per slice of
 * HV_MAX_EXTENTS and one per continuation after a preemption, counted
 * as they are made (failed ones too).
 */
uint64_t hvc_populate_calls(const struct hvc *conn);

/* Machine frames of gfn..gfn+nr (-ENOENT at a hole). */
int hvc_map(struct hvc *conn, hv_domid_t domid, uint64_t gfn, uint32_t nr,
    uint64_t *mfns);
/*
 * Read or write `len` bytes of a domain's memory at guest-physical `gpa`,
 * in as many calls of at most HV_MAX_COPY as needed.  On failure part of
 * a write may have been done.
 */
int hvc_guest_read(struct hvc *conn, hv_domid_t domid, uint64_t gpa,
    void *buf, size_t len);
int hvc_guest_write(struct hvc *conn, hv_domid_t domid, uint64_t gpa,
    const void *buf, size_t len);

/*
 * Log-dirty (HV_OP_DIRTY_LOG): op HV_DIRTY_*; CLEAN and PEEK copy nr
 * bits from gfn into `bits` (nr / 64 words).  *ret_dirty: bits set among
 * them; *ret_end: the log covers [0, *ret_end).  Either may be NULL.
 */
int hvc_dirty_log(struct hvc *conn, hv_domid_t domid, uint32_t op,
    uint64_t gfn, uint32_t nr, uint64_t *bits, uint64_t *ret_dirty,
    uint64_t *ret_end);

int hvc_scrub_progress(struct hvc *conn, struct hv_scrub_reply **ret_reply);
struct hv_scrub_node *hvc_scrub_nodes(struct hv_scrub_reply *reply);

/*
 * What placement reads, in one round trip (hvc_calls): hvc_host_info's
 * reply, hvc_domain_list's (a list longer than one reply is continued
 * in more calls) and hvc_scrub_progress's, whose failure alone is
 * *ret_scrub_rc (*ret_scrub then NULL), not the call's.
 */
int hvc_host_state(struct hvc *conn, struct hv_host_info **ret_info,
    struct hv_domain_info **ret_doms, uint32_t *ret_nr,
    struct hv_scrub_reply **ret_scrub, int *ret_scrub_rc);

int hvc_counters(struct hvc *conn, struct hv_counters *ret_counters);

int hvc_shadow_workload(struct hvc *conn, const struct hv_shadow_workload *req,
    struct hv_shadow_workload_reply *ret_reply);

/* Lifecycle (HV_CAP_LIFECYCLE): shut a domain down with a reason. */
int hvc_domain_shutdown(struct hvc *conn, hv_domid_t domid, uint32_t reason);
/* Its PV control node: op and value as struct hv_domain_control. */
int hvc_domain_control(struct hvc *conn, hv_domid_t domid, uint32_t op,
    uint32_t value, struct hv_domain_control_reply *ret_reply);
/*
 * Wait (up to timeout_ms, at most HV_WATCH_MAX_MS) until the domain
 * generation exceeds `since`; the connection is busy meanwhile.
 */
int hvc_domain_watch(struct hvc *conn, uint64_t since, uint32_t timeout_ms,
    uint64_t *ret_generation);

#endif /* VMBUILD_HVCLIENT_H */
