#!/bin/bash
# run.sh - benchmark 3: hvsim's background scrubbers against this
# machine's limit.
#
# A modelled 2-node host with one core per node (so one scrub worker per
# node, as many as this machine has CPUs on most CI machines), real
# memory.  Each round frees BENCH_SCRUB_GIB (default 3) GiB of a domain's
# memory and times the scrubbers until nothing is dirty, then zeroes as
# many bytes (a buffer as large, in huge pages, each byte once) with
# non-temporal stores in the benchmark's own process, on as many threads
# as there are workers, on 1 and on 2 (bench_hv scrub).
# Node-local against remote zeroing is measured where this machine has
# two NUMA nodes; with one, the result says so.
. "$(dirname "$0")/../lib/common.sh"

gib=${BENCH_SCRUB_GIB:-3}
rounds=${BENCH_SCRUB_ROUNDS:-11}
node_mib=$((gib * 512 + 256))
: >"$BENCH_RESULTS/scrub.jsonl"
echo "# scrub: $gib GiB freed on hvsim 2 nodes x $node_mib MiB real memory, 1 worker per node"
hv_start scrub --nodes 2 --cpus-per-node 1 --threads-per-core 1 \
    --mem-per-node "${node_mib}M" --backing real
"$BBIN/bench_hv" scrub "$HV_SOCK" "$gib" "$rounds" \
    >>"$BENCH_RESULTS/scrub.jsonl" || bench_fail "bench_hv scrub failed"
hv_stop
summarize scrub
