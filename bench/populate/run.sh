#!/bin/bash
# run.sh - benchmark 1: populate, real memory, 2 nodes.
#
# Guests from 1 GiB up to the largest size this machine can hold (powers
# of two, then the largest), spread over both nodes of a modelled 2-node
# host (8 CPUs per node, 2 threads per core), built with libvmbuild in
# three variants: the engine and libxl's pattern on an hvsim in batch
# flush mode, and libxl's pattern on an hvsim in alloc mode (Xen before
# 4.8: the flush filter for every page).  Clean: every build waits until
# the background scrubbers are done.  Dirty: an hvsim without background
# scrubbing (--scrub-workers 0), every page of every build was freed by
# the one before and is zeroed inline.  Beside the dirty builds, the same
# bytes zeroed with non-temporal stores on 1 and on 2 threads, in the same
# rounds: this machine's limit.
#
# The four hvsim instances run one after the other (one at a time holds
# the memory); each starts as the last one exits, so that the memory it
# maps in is memory the kernel has just given back, not memory the VM's
# host must back again.
#
# The largest size is what MemAvailable allows (less 4 GiB for everyone
# else and the zeroing buffer), in whole GiB per node, at most
# BENCH_POPULATE_MAX_GIB (default 16: beyond, the figures say nothing new
# and make bench would outgrow its 20 minutes).  BENCH_POPULATE_ROUNDS
# (clean and dirty rounds, default 7), BENCH_POPULATE_ALLOC_ROUNDS (3).
. "$(dirname "$0")/../lib/common.sh"

cap=${BENCH_POPULATE_MAX_GIB:-16}
rounds=${BENCH_POPULATE_ROUNDS:-7}
arounds=${BENCH_POPULATE_ALLOC_ROUNDS:-3}
# The largest guest: what is available, less 3 GiB for everyone else
# and 1 GiB for the zeroing buffer, in whole GiB per node.
avail=$(mem_avail_mib)
max=$(( (avail / 1024 - 4) / 2 * 2 ))
[ "$max" -gt "$cap" ] && max=$cap
[ "$max" -ge 2 ] || bench_fail "needs at least 6 GiB available, the machine has $avail MiB"
sizes=
for ((s = 1; s < max; s *= 2)); do sizes+="$((s * 1024)),"; done
sizes+=$((max * 1024))
node_mib=$((max * 512 + 256))
echo "# populate: guests of ${sizes//,/ } MiB; hvsim 2 nodes x $node_mib MiB real memory ($avail MiB available)"

topo=(--nodes 2 --cpus-per-node 8 --threads-per-core 2
    --mem-per-node "${node_mib}M" --backing real)
pop() {	# pop LABEL MODE-OPTIONS...: builds against the running hvsim
	"$BBIN/bench_populate" --hypervisor "sim:$HV_SOCK" --kernel "$KERNEL" \
	    --sizes-mib "$sizes" --nodes 0-1 --label "$@" \
	    >>"$BENCH_RESULTS/populate.jsonl" 2>>"$RUN/populate.log" ||
		bench_fail "bench_populate $1 failed: $(tail -n 3 "$RUN/populate.log")"
}
: >"$BENCH_RESULTS/populate.jsonl"
t0=$(date +%s)
hv_start clean --flush-mode batch --scrub-workers 2 "${topo[@]}"
pop clean --clean --rounds "$rounds"
hv_start dirty --flush-mode batch --scrub-workers 0 "${topo[@]}"
pop dirty --dirty --nt --rounds "$rounds"
hv_start alloc-clean --flush-mode alloc --scrub-workers 2 "${topo[@]}"
pop alloc-clean --clean --strategies libxl --rounds "$arounds"
hv_start alloc-dirty --flush-mode alloc --scrub-workers 0 "${topo[@]}"
pop alloc-dirty --dirty --strategies libxl --rounds "$arounds"
hv_stop
echo "# populate: $(( $(date +%s) - t0 )) s"
summarize populate
