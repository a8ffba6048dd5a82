# common.sh - shared by the benchmark scripts (sourced, not run).
#
# Each benchmark writes its raw figures as JSON lines to
# $BENCH_RESULTS/NAME.jsonl (scripts/run-bench sets it; a benchmark run
# alone writes to a temporary directory and says where) and prints a
# short summary.  Processes started here are stopped on exit, by the ids
# recorded when they were started, never by name.

set -u

BENCH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$BENCH_TOP/build/bin
BBIN=$BENCH_TOP/build/bench
HVSIM=${HVSIM:-$BIN/hvsim}
KERNEL=$BENCH_TOP/build/guest/hello.elf
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
RUN=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-bench.XXXXXX")
if [ -z "${BENCH_RESULTS:-}" ]; then
	BENCH_RESULTS=$RUN/results
	echo "# raw results in $BENCH_RESULTS (BENCH_RESULTS not set)"
fi
mkdir -p "$BENCH_RESULTS"
HV_PID=
PIDS=()

bench_fail() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

bench_cleanup() {
	local rc=$? p
	trap - EXIT
	stop_pid "$HV_PID"
	for p in "${PIDS[@]}"; do
		stop_pid "$p"
	done
	if [ "$rc" -ne 0 ]; then
		for f in "$RUN"/*.log; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
		done
	fi
	rm -rf "$RUN"
	exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# hv_start NAME HVSIM-OPTIONS...: start hvsim on $RUN/NAME.sock and wait
# until it serves (after its boot scrub when that runs before serving).
hv_start() {
	local name=$1 i
	shift
	stop_pid "$HV_PID"
	HV_SOCK=$RUN/hv-$name.sock
	HV_LOG=$RUN/hv-$name.log
	"$HVSIM" --socket "$HV_SOCK" "$@" >"$HV_LOG" 2>&1 &
	HV_PID=$!
	for i in $(seq 12000); do
		grep -q '^hvsim: serving' "$HV_LOG" && return 0
		kill -0 "$HV_PID" 2>/dev/null || bench_fail "hvsim exited: $(tail -n 3 "$HV_LOG")"
		sleep 0.05
	done
	bench_fail "hvsim does not serve after 600 s"
}

hv_stop() {
	stop_pid "$HV_PID"
	HV_PID=
}

# Available memory in MiB.
mem_avail_mib() {
	awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo
}

# summarize NAME: the summary of NAME.jsonl by bench/report.py.
summarize() {
	"$PYTHON" "$BENCH_TOP/bench/report.py" --summary "$1" "$BENCH_RESULTS"
}

# d_start [VMBUILDD-OPTIONS...]: vmbuildd on $RUN/control.sock against the
# running hvsim, metrics on a free loopback port ($METRICS).  The guest
# kernel's directory is an image directory, so that clients may name
# $KERNEL by path (vmbuildd opens no other file a client names).
D_PID=
d_start() {
	local i
	METRICS=127.0.0.1:$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	CONTROL=$RUN/control.sock
	"$BIN/vmbuildd" --foreground --hypervisor "sim:$HV_SOCK" \
	    --socket "$CONTROL" --state-dir "$RUN/state" --metrics "$METRICS" \
	    --image-dir "$(dirname "$KERNEL")" "$@" >>"$RUN/vmbuildd.log" 2>&1 &
	D_PID=$!
	PIDS+=("$D_PID")
	for i in $(seq 600); do
		"$BIN/vmctl" --socket "$CONTROL" --timeout 2 host >/dev/null 2>&1 &&
			return 0
		kill -0 "$D_PID" 2>/dev/null || bench_fail "vmbuildd exited: $(tail -n 3 "$RUN/vmbuildd.log")"
		sleep 0.1
	done
	bench_fail "vmbuildd does not answer"
}

d_stop() {
	stop_pid "$D_PID"
	D_PID=
}

# create_vms PREFIX FIRST N MIB: VMs PREFIX<FIRST>.. through the control
# socket, one client.
create_vms() {
	"$PYTHON" - "$CONTROL" "$KERNEL" "$@" <<'PY' || bench_fail "creating VMs failed"
import json, socket, sys
path, kernel, prefix, first, n, mib = sys.argv[1:7]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rwb")
for i in range(int(first), int(first) + int(n)):
    cfg = ('name = "%s%04d"\ntype = "pvh"\nmemory = %s\nvcpus = 1\n'
           'kernel = "%s"\n' % (prefix, i, mib, kernel))
    f.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": "vm.create",
                         "params": {"config": cfg, "wait": True}}) +
             "\n").encode())
    f.flush()
    r = json.loads(f.readline())
    if "result" not in r:
        sys.exit("vm.create %s%04d: %r" % (prefix, i, r))
PY
}
