#!/bin/bash
# run.sh - benchmark 5: small VMs through vmbuildd.
#
# Create and destroy 128 MiB guests (hello.elf, 1 vCPU) as fast as one
# client can (sequential), and with 4 clients at once, for
# BENCH_SMALLVMS_SECONDS (3) each, BENCH_SMALLVMS_ROUNDS (5) rounds
# interleaved.  The client is bench/control/rpcload --create-destroy:
# it speaks JSON-RPC on the control socket itself (vm.create with "wait":
# true, then vm.destroy), no vmctl process per call.  Twice: on hvsim
# with phantom memory (the toolstack's own cost: the hypervisor's memory
# work is metadata) and with real memory (2 nodes x 2 GiB: every VM's
# 128 MiB must be scrubbed again before it is reused, by hvsim's
# background scrubbers or inline).
. "$(dirname "$0")/../lib/common.sh"

secs=${BENCH_SMALLVMS_SECONDS:-3}
rounds=${BENCH_SMALLVMS_ROUNDS:-5}
: >"$BENCH_RESULTS/smallvms.jsonl"
cat >"$RUN/small.cfg" <<EOC
type = "pvh"
memory = 128
vcpus = 1
kernel = "$KERNEL"
EOC
for backing in phantom real; do
	echo "# smallvms: 128 MiB guests, hvsim 2 nodes x 2 GiB $backing memory"
	hv_start "$backing" --nodes 2 --cpus-per-node 2 --threads-per-core 1 \
	    --mem-per-node 2G --backing "$backing"
	d_start
	# Measure the steady state, not the boot scrub mapping memory in.
	"$BIN/vmctl" --socket "$CONTROL" scrub --wait --timeout 600 >/dev/null 2>&1 ||
		bench_fail "boot scrub did not finish"
	for r in $(seq "$rounds"); do
		for c in 1 4; do
			"$BBIN/rpcload" --socket "$CONTROL" --create-destroy \
			    "$RUN/small.cfg" --clients "$c" --seconds "$secs" \
			    --label "$backing" >>"$BENCH_RESULTS/smallvms.jsonl" ||
				bench_fail "rpcload failed"
		done
	done
	d_stop
done
hv_stop
summarize smallvms
