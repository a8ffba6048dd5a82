#!/bin/bash
# run.sh - benchmark 4: building a guest while memory is being scrubbed.
#
# A modelled 2-node host, one scrub worker per node, real memory.  Right
# before each timed build a large guest on node 0 is built and destroyed,
# so node 0's free memory is mostly dirty (its scrubber at work) while
# node 1's is clean.  Then a guest of BENCH_BUILDSCRUB_MIB (2048) is
# built, time to a running guest measured, three ways:
#   aware    scrub-aware placement (vmbuild's): it picks node 1, whose
#            clean memory covers the guest;
#   unaware  node 0, as a placement that counts dirty memory as free
#            (libxl's, by free memory) picks it; the populate scrubs
#            inline what the scrubber has not reached, calling its
#            blocks back;
#   wait     node 0, waiting for the scrubber (scrub_wait_ms) instead.
. "$(dirname "$0")/../lib/common.sh"

mib=${BENCH_BUILDSCRUB_MIB:-2048}
rounds=${BENCH_BUILDSCRUB_ROUNDS:-5}
node_mib=$((mib + 1024))
dirty_mib=$((node_mib - 256))
: >"$BENCH_RESULTS/buildscrub.jsonl"
echo "# buildscrub: $mib MiB guest right after $dirty_mib MiB freed on node 0 (2 nodes x $node_mib MiB)"
hv_start buildscrub --nodes 2 --cpus-per-node 1 --threads-per-core 1 \
    --mem-per-node "${node_mib}M" --backing real
"$BBIN/bench_populate" --hypervisor "sim:$HV_SOCK" --kernel "$KERNEL" \
    --sizes-mib "$mib" --clean --before "$dirty_mib:0" --label buildscrub \
    --variant aware:engine --variant unaware:engine:0 \
    --variant wait:engine:0:30000 --rounds "$rounds" \
    >>"$BENCH_RESULTS/buildscrub.jsonl" 2>"$RUN/buildscrub.log" ||
	bench_fail "bench_populate failed: $(tail -n 3 "$RUN/buildscrub.log")"
hv_stop
summarize buildscrub
