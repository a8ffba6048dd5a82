#!/bin/bash
# ab-round.sh MODE - one round of bench/ab.sh on one build (HVSIM,
# VMBUILDD and AB_RPCLOAD name its programs): a fresh stack, the figures
# appended to $AB_OUT with $AB_TAG, the load average and, for smallvms,
# the CPU time and system calls vmbuildd and hvsim spent per
# create+destroy.
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

# System calls of vmbuildd and hvsim (every thread) while rpcload runs,
# counted by perf (raw_syscalls:sys_enter) where it may: a figure the
# machine's load does not move, unlike the rate and, less, the CPU time.
SYS_PID=
sys_start() {
	SYS_PID=
	command -v perf >/dev/null 2>&1 || return 0
	perf stat -x, -e raw_syscalls:sys_enter -p "$D_PID,$HV_PID" \
	    -o "$RUN/sys.csv" >/dev/null 2>&1 &
	SYS_PID=$!
	sleep 0.2	# perf attaches (a count taken late is only lower)
}

# sys_per N: '"syscalls_per_pair":X,' for N pairs, or nothing.
sys_per() {
	[ -n "$SYS_PID" ] || return 0
	kill -INT "$SYS_PID" 2>/dev/null
	wait "$SYS_PID" 2>/dev/null
	awk -F, -v n="$1" '$3 == "raw_syscalls:sys_enter" && $1 ~ /^[0-9]+$/ &&
	    n > 0 { printf "\"syscalls_per_pair\":%.1f,", $1 / n }' \
	    "$RUN/sys.csv" 2>/dev/null
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
		sys_start
		t0=$(cpu_ticks)
		res=$("$AB_RPCLOAD" --socket "$CONTROL" --create-destroy \
		    "$RUN/small.cfg" --clients "$c" --seconds "$AB_SECS") ||
			bench_fail "rpcload failed"
		t1=$(cpu_ticks)
		n=$(sed 's/.*"requests":\([0-9]*\).*/\1/' <<<"$res")
		ms=$(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$(getconf CLK_TCK)" \
		    'BEGIN { printf "%.4f", n ? d * 1000 / hz / n : 0 }')
		sc=$(sys_per "$n")
		sed "s/^{/{\"cpu_ms_per_pair\":$ms,$sc/" <<<"$res" |
		    tag "$load" >>"$AB_OUT"
	done
	;;
metrics)
	hv_start control --nodes 2 --cpus-per-node 4 --mem-per-node 64G \
	    --backing phantom
	d_start
	create_vms vm 0 "$AB_VMS" 8
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
