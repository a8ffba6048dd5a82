/*
 * metrics.h - the Prometheus endpoint (text format 0.0.4, GET /metrics).
 *
 * A scrape never talks to the hypervisor: it renders a snapshot that the
 * loop refreshes every few seconds on a worker (counters, scrub
 * progress), plus what the loop itself knows (VMs, tasks, builds).
 * The per-VM series are kept as text from one scrape to the next until
 * the registry changes (vm_generation()); everything else is rendered
 * at each scrape.
 */
#ifndef VMBUILDD_METRICS_H
#define VMBUILDD_METRICS_H

#include <stdbool.h>

#include "vmbuild.h"

struct event_base;

/*
 * "ADDR:PORT" ("[v6]:PORT" too), at most max_conns clients at once, each
 * with request_timeout seconds to send a whole request; 0, or a
 * negative errno if bind fails.
 */
int metrics_init(struct event_base *base, const char *addr,
    unsigned max_conns, unsigned request_timeout);
/* HTTP clients connected now. */
unsigned metrics_connections(void);
void metrics_stop(void);
/* A build ended: state "done", "failed" or "cancelled". */
void metrics_build_done(const char *state, double seconds,
    const struct vmb_build_result *result);
/*
 * A save (restore false) or a restore ended: result "done", "failed" or
 * "cancelled"; `bytes` of stream written (a save's) or read.
 */
void metrics_stream_done(bool restore, const char *result, uint64_t bytes);
/* Stream bytes a restore read (counted as they are). */
void metrics_restore_bytes(uint64_t bytes);
/*
 * A migration this daemon sent ended: result "done", "failed" or
 * "cancelled", the stream's bytes sent, the downtime (pause to the
 * receiver's DONE; < 0: none, it did not complete).
 */
void metrics_migration_done(const char *result, uint64_t bytes,
    double downtime_s);
/* Stream bytes an incoming migration received. */
void metrics_migration_received(uint64_t bytes);

#endif /* VMBUILDD_METRICS_H */
