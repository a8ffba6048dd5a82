#!/bin/bash
# run.sh - benchmark 6: the control plane.
#
# vmbuildd on hvsim with phantom memory, first with 10 domains, then with
# 1000: vm.list, host.scrub and a Prometheus scrape (GET /metrics) with
# 1, 10 and 100 clients, closed loop (bench/control/rpcload, one
# connection per client), against the floor: bench-echo, a minimal
# libevent server echoing lines on a Unix socket, like the control
# socket's framing.  With 1000 domains, a second floor: bench-echo
# answering every request with as many bytes as vm.list's reply (90 KB),
# from a buffer it never copies: what the socket costs for replies that
# big, whoever sends them.  BENCH_CONTROL_SECONDS (1) per figure,
# BENCH_CONTROL_ROUNDS (5) rounds interleaved; medians.
# The headline scrape figures ask for gzip, as Prometheus does.
. "$(dirname "$0")/../lib/common.sh"

secs=${BENCH_CONTROL_SECONDS:-1}
rounds=${BENCH_CONTROL_ROUNDS:-5}
out=$BENCH_RESULTS/control.jsonl
: >"$out"
hv_start control --nodes 2 --cpus-per-node 4 --mem-per-node 64G \
    --backing phantom
d_start
"$BBIN/bench-echo" "$RUN/echo.sock" >"$RUN/echo.log" 2>&1 &
PIDS+=($!)
for i in $(seq 100); do [ -S "$RUN/echo.sock" ] && break; sleep 0.05; done

load() {	# load LABEL CLIENTS rpcload-options...
	local label=$1 c=$2
	shift 2
	"$BBIN/rpcload" --clients "$c" --seconds "$secs" --label "$label" "$@" \
	    >>"$out" || bench_fail "rpcload $* failed"
}
have=0
for n in 10 1000; do
	echo "# control: $n domains"
	create_vms vm "$have" "$((n - have))" 8
	have=$n
	if [ "$n" = 1000 ]; then
		bytes=$("$BBIN/rpcload" --socket "$CONTROL" --seconds 0.2 |
		    sed -n 's/.*"reply_bytes":\([0-9]*\).*/\1/p')
		[ -n "$bytes" ] || bench_fail "no vm.list reply size"
		"$BBIN/bench-echo" "$RUN/blob.sock" "$bytes" \
		    >"$RUN/blob.log" 2>&1 &
		PIDS+=($!)
		for i in $(seq 100); do
			[ -S "$RUN/blob.sock" ] && break
			sleep 0.05
		done
	fi
	for r in $(seq "$rounds"); do
		for c in 1 10 100; do
			load "$n" "$c" --socket "$CONTROL" --method vm.list
			load "$n" "$c" --socket "$CONTROL" --method host.scrub
			load "$n" "$c" --http "$METRICS"
			load "$n" "$c" --http "$METRICS" --gzip
			load "$n" "$c" --socket "$RUN/echo.sock" --echo \
			    --method server.hello
			[ "$n" = 1000 ] && load "$n" "$c" \
			    --socket "$RUN/blob.sock" --any-reply
		done
	done
done
summarize control
