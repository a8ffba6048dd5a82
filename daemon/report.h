/*
 * report.h - the JSON shapes of host data, shared by methods and events.
 *
 * Fields the hypervisor does not report are null, never 0 (DESIGN.md).
 */
#ifndef VMBUILDD_REPORT_H
#define VMBUILDD_REPORT_H

#include <yajl/yajl_gen.h>

#include "vmbuild.h"

/* {"nodes":[{"node","total_bytes","free_bytes","dirty_bytes",...}]} */
void report_scrub(yajl_gen g, const struct vmb_scrub *s);
/* {"tlb_flushes":{...},"unshadow":{...},"populate":{...},"scrub":{...}} */
void report_counters(yajl_gen g, const struct vmb_counters *c);
/* host.info */
void report_host(yajl_gen g, const struct vmb_host *h);
/*
 * The build result of vm.info ("build"): phases, placement, populate;
 * with the daemon's own part: the CPU its threads were kept on for the
 * request (cpukeep.h; -1: not kept) and the steal share that decided it
 * (negative: not measured).
 */
struct report_keep {
	int	cpu;
	double	share_before;
};
void report_build(yajl_gen g, const struct vmb_build_result *r,
    enum vmb_populate_strategy strategy, const struct report_keep *keep);

#endif /* VMBUILDD_REPORT_H */
