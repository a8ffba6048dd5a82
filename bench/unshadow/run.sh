#!/bin/bash
# run.sh - benchmark 7: the unshadow heuristic (post 004) on hvsim's
# shadow model.
#
# The same workloads under three hvsim settings: --shadow-threshold 3
# (KVM's write-flooding detection, post 004's patch), 2, and "off"
# (1000000: no write-flood unshadow; Xen's own early unshadow on the 2nd
# consecutive zero write stays on in all three).  Workloads: post 004's
# iperf (page-table pages reused as network buffers), a process exiting
# (zero writes), ordinary page-table updates (where unshadowing is a
# mistake that costs a re-shadow).  Each runs BENCH_UNSHADOW_WRITES
# (200000) emulated writes; figures per guest write.
. "$(dirname "$0")/../lib/common.sh"

writes=${BENCH_UNSHADOW_WRITES:-200000}
rounds=${BENCH_UNSHADOW_ROUNDS:-3}
: >"$BENCH_RESULTS/unshadow.jsonl"
echo "# unshadow: $writes emulated writes per workload, thresholds 3, 2 and off"
for t in 3 2 1000000; do
	hv_start "t$t" --nodes 1 --cpus-per-node 2 --mem-per-node 1G \
	    --backing phantom --shadow-threshold "$t" --shadow-bg-writes 0
	"$BBIN/bench_hv" unshadow "$HV_SOCK" "$writes" "$rounds" \
	    >>"$BENCH_RESULTS/unshadow.jsonl" || bench_fail "bench_hv unshadow failed"
done
hv_stop
summarize unshadow
