# common.sh - shared by the benchmark scripts (sourced, not run).
#
# Each benchmark writes its raw figures as JSON lines to
# $BENCH_RESULTS/NAME.jsonl (scripts/run-bench sets it; a benchmark run
# alone writes to a temporary directory and says where) and prints a
# short summary.  hvsim and vmbuildd are started by the tests' launcher
# (tests/harness/stack.sh); they and the processes a benchmark adds to
# PIDS are stopped on exit, by the ids recorded when they were started,
# never by name.

set -u

BENCH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$BENCH_TOP/build/bin
BBIN=$BENCH_TOP/build/bench
export HVSIM=${HVSIM:-$BIN/hvsim}
export VMBUILDD=${VMBUILDD:-$BIN/vmbuildd}
KERNEL=$BENCH_TOP/build/guest/hello.elf
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
RUN=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-bench.XXXXXX")
if [ -z "${BENCH_RESULTS:-}" ]; then
	BENCH_RESULTS=$RUN/results
	echo "# raw results in $BENCH_RESULTS (BENCH_RESULTS not set)"
fi
mkdir -p "$BENCH_RESULTS"
. "$BENCH_TOP/tests/harness/stack.sh"
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
	for p in "${PIDS[@]}"; do
		stop_pid "$p"
	done
	stack_close
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
stack_open "$RUN" || bench_fail "the stack's supervisor does not start"

# hv_start NAME HVSIM-OPTIONS...: start hvsim on $RUN/NAME.sock and wait
# until it serves (after its boot scrub when that runs before serving).
hv_start() {
	local name=$1
	shift
	hv_stop
	stack_hvsim --name "hv-$name" --timeout 600 -- "$@" ||
		bench_fail "hvsim $name does not serve"
	HV_PID=$VMB_HV_PID HV_SOCK=$VMB_HV_SOCK HV_LOG=$VMB_HV_LOG
}

hv_stop() {
	[ -z "$HV_PID" ] || stack_stop "$HV_PID"
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
	stack_daemon --hv-socket "$HV_SOCK" --socket "$RUN/control.sock" \
	    --state "$RUN/state" --metrics auto -- \
	    --image-dir "$(dirname "$KERNEL")" "$@" ||
		bench_fail "vmbuildd does not start"
	D_PID=$VMB_D_PID CONTROL=$VMB_SOCK METRICS=$VMB_METRICS
}

d_stop() {
	[ -z "$D_PID" ] || stack_stop "$D_PID"
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
