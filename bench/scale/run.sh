#!/bin/bash
# run.sh - benchmark 2: post 000's experiment at scale.
#
# A 135 GiB, 12-vCPU guest re-created on a phantom 2 TiB host of 8 nodes x
# 16 cores x 2 threads (256 simulated CPUs, each a thread that a TLB flush
# really wakes): the engine and libxl's pattern on an hvsim in batch
# flush mode (the companion hypercall: one filter evaluation per call),
# and libxl's pattern on one in alloc mode (Xen before 4.8: the filter
# for every page allocated).  Every timed build reuses the pages of the
# guest built before it, so that they all need a flush.  Phantom memory:
# the populate is the hypervisor's metadata and flush work only.
#
# Environment: BENCH_SCALE_ROUNDS (default 3), BENCH_SCALE_ALLOC_ROUNDS
# (default 1).
. "$(dirname "$0")/../lib/common.sh"

rounds=${BENCH_SCALE_ROUNDS:-3}
arounds=${BENCH_SCALE_ALLOC_ROUNDS:-1}
host=(--nodes 8 --cpus-per-node 32 --threads-per-core 2
    --mem-per-node 256G --backing phantom --scrub-workers 8)
pop() {	# pop LABEL OPTIONS...
	"$BBIN/bench_populate" --hypervisor "sim:$HV_SOCK" --kernel "$KERNEL" \
	    --sizes-mib 138240 --vcpus 12 --clean --label "$@" \
	    >>"$BENCH_RESULTS/scale.jsonl" 2>>"$RUN/scale.log" ||
		bench_fail "bench_populate $1 failed: $(tail -n 3 "$RUN/scale.log")"
}
: >"$BENCH_RESULTS/scale.jsonl"
echo "# scale: 135 GiB, 12 vCPUs on a phantom 8 x 256 GiB host, 256 CPUs"
hv_start batch --flush-mode batch "${host[@]}"
pop batch --rounds "$rounds"
hv_start alloc --flush-mode alloc "${host[@]}"
# The warm-up build finds fresh memory (no flush needed): cheap here too.
pop alloc --strategies libxl --rounds "$arounds"
hv_stop
summarize scale
