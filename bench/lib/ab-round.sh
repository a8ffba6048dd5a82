#!/bin/bash
# ab-round.sh MODE - one round of bench/ab.sh on one build (HVSIM,
# VMBUILDD and AB_RPCLOAD name its programs): a fresh stack, the figures
# appended to $AB_OUT with $AB_TAG, the load average and, for smallvms,
# the CPU time vmbuildd and hvsim spent per create+destroy.
. "$(dirname "$0")/common.sh"

# tag LOAD: a JSON line from rpcload (stdin) with the round's tag.
tag() {
	sed "s/^{/{$AB_TAG,\"load\":$1,/"
}

# CPU time of vmbuildd and hvsim so far, in clock ticks.
cpu_ticks() {
	awk '{ s += $14 + $15 } END { print s }' "/proc/$D_PID/stat" \
	    "/proc/$HV_PID/stat"
}

case $1 in
smallvms)
	cat >"$RUN/small.cfg" <<EOC
type = "pvh"
memory = 128
vcpus = 1
kernel = "$KERNEL"
EOC
	hv_start phantom --nodes 2 --cpus-per-node 2 --threads-per-core 1 \
	    --mem-per-node 2G --backing phantom
	d_start
	"$BIN/vmctl" --socket "$CONTROL" scrub --wait --timeout 600 \
	    >/dev/null 2>&1 || bench_fail "boot scrub did not finish"
	for c in 1 4; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		t0=$(cpu_ticks)
		res=$("$AB_RPCLOAD" --socket "$CONTROL" --create-destroy \
		    "$RUN/small.cfg" --clients "$c" --seconds "$AB_SECS") ||
			bench_fail "rpcload failed"
		t1=$(cpu_ticks)
		n=$(sed 's/.*"requests":\([0-9]*\).*/\1/' <<<"$res")
		ms=$(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$(getconf CLK_TCK)" \
		    'BEGIN { printf "%.4f", n ? d * 1000 / hz / n : 0 }')
		sed "s/^{/{\"cpu_ms_per_pair\":$ms,/" <<<"$res" | tag "$load" \
		    >>"$AB_OUT"
	done
	;;
metrics)
	hv_start control --nodes 2 --cpus-per-node 4 --mem-per-node 64G \
	    --backing phantom
	d_start
	create_vms vm 0 10 8
	for c in 1 100; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		"$AB_RPCLOAD" --http "$METRICS" --gzip --clients "$c" \
		    --seconds "$AB_SECS" | tag "$load" >>"$AB_OUT" ||
			bench_fail "rpcload failed"
	done
	;;
esac
d_stop
hv_stop
