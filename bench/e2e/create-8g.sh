#!/bin/bash
# create-8g.sh - create time of an 8 GiB VM: vmbuildd --populate engine
# (parallel, NUMA-local batches) against --populate libxl (libxl's
# meminit pattern: one extent per call, one node after the other), on
# hvsim with real memory (2 nodes x 6 GiB), in one run.
#
# Each round restarts vmbuildd with one strategy and creates the VM with
# `vmctl create` twice: "clean" (every free page scrubbed first) and
# "dirty" (right after destroying the previous 8 GiB VM, while the
# scrubber still has work).  It reads the daemon's build timings
# (`vmctl --json info`) each time.  The strategies alternate so that
# drift on a shared machine hits both alike.  Prints per-run times, the
# means and the ratio libxl / engine.
#
# Environment: BENCH_RUNS (default 3), BENCH_GUEST_MIB (8192),
# BENCH_NODE_MIB (6144), BENCH_WARMUP (1: an untimed build after each
# daemon start, see warm_up), BENCH_FLUSH_MODE (batch, or alloc: hvsim as Xen
# before 4.8, the flush filter evaluated for every page allocated).
# Besides times it prints the populate counts of each strategy (requests,
# pages scrubbed inline, flush filter evaluations, flushes issued).
set -euo pipefail

# The system's Python: a version manager's shim in PATH can cost a second
# a call on a loaded machine.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$top/build/bin
runs=${BENCH_RUNS:-3}
guest_mib=${BENCH_GUEST_MIB:-8192}
node_mib=${BENCH_NODE_MIB:-6144}
flush_mode=${BENCH_FLUSH_MODE:-batch}

run=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-bench.XXXXXX")
hv_sock=$run/hvsim.sock
export VMBUILD_SOCKET=$run/control.sock
hv_pid=
d_pid=

stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	trap - EXIT
	stop_pid "$d_pid"
	stop_pid "$hv_pid"
	if [ "$rc" -ne 0 ]; then
		for f in "$run"/*.log; do
			[ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
		done
	fi
	rm -rf "$run"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "create-8g: $*" >&2
	exit 1
}

for b in hvsim vmbuildd vmctl; do
	[ -x "$bin/$b" ] || fail "missing $bin/$b: run make"
done
avail_mib=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
need_mib=$((node_mib * 2 + 1024))
[ "$avail_mib" -ge "$need_mib" ] ||
	fail "needs $need_mib MiB available, the machine has $avail_mib"

"$bin/hvsim" --socket "$hv_sock" --nodes 2 --cpus-per-node 1 \
	--threads-per-core 1 --mem-per-node "${node_mib}M" --backing real \
	--flush-mode "$flush_mode" >"$run/hvsim.log" 2>&1 &
hv_pid=$!
for i in $(seq 600); do
	[ -S "$hv_sock" ] && break
	kill -0 "$hv_pid" || fail "hvsim exited"
	sleep 0.1
done

# A free loopback port for the daemon's metrics endpoint.
free_port() {
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start_daemon() {
	local i
	"$bin/vmbuildd" --hypervisor "sim:$hv_sock" \
		--socket "$VMBUILD_SOCKET" --state-dir "$run/state" \
		--metrics "127.0.0.1:$(free_port)" --foreground --populate "$1" \
		>>"$run/vmbuildd.log" 2>&1 &
	d_pid=$!
	for i in $(seq 300); do
		"$bin/vmctl" --timeout 2 host >/dev/null 2>&1 && return 0
		kill -0 "$d_pid" 2>/dev/null || fail "vmbuildd exited"
		sleep 0.1
	done
	fail "vmbuildd does not answer"
}

cat >"$run/big.cfg" <<EOF
name = "bench8g"
type = "pvh"
memory = $guest_mib
vcpus = 2
kernel = "$top/build/guest/hello.elf"
EOF

# One untimed create and destroy of the same VM after each daemon start,
# for both strategies alike: the daemon is long-running, and its first
# build also opens hypervisor connections and starts populate threads
# (~2-3 ms that later builds do not pay).  BENCH_WARMUP=0 measures that
# first build instead.
warm_up() {
	[ "${BENCH_WARMUP:-1}" = 1 ] || return 0
	"$bin/vmctl" create "$run/big.cfg" >/dev/null 2>>"$run/create.log" ||
		fail "warm-up create failed"
	"$bin/vmctl" destroy bench8g >/dev/null
	"$bin/vmctl" scrub --wait --timeout 600 >/dev/null 2>&1
}

results=$run/results
: >"$results"
start_daemon engine
"$bin/vmctl" scrub --wait --timeout 600 >/dev/null 2>&1

# measure SCENARIO STRATEGY: create the VM, record the times, destroy it.
measure() {
	local scenario=$1 strategy=$2 t0 t1 info
	t0=$(date +%s.%N)
	"$bin/vmctl" create "$run/big.cfg" >/dev/null 2>>"$run/create.log" ||
		fail "create ($scenario) with --populate $strategy failed"
	t1=$(date +%s.%N)
	info=$("$bin/vmctl" --json info bench8g)
	"$PYTHON" - "$scenario" "$strategy" "$t0" "$t1" "$info" >>"$results" <<'EOF'
import json, sys
sc, s = sys.argv[1], sys.argv[2]
t0, t1, info = float(sys.argv[3]), float(sys.argv[4]), json.loads(sys.argv[5])
b = info.get("build") or {}
ph = b.get("phases") or {}
pop = b.get("populate") or {}
print(json.dumps({"scenario": sc, "strategy": s, "wall": t1 - t0,
                  "build": b.get("total_seconds"),
                  "populate": ph.get("populate"),
                  "counts": {k: pop.get(k) for k in ("calls",
                      "pages_scrubbed_inline", "filter_evaluations",
                      "flushes_issued", "flushes_avoided")}}))
EOF
	tail -n 1 "$results" | "$PYTHON" -c '
import json, sys
r = json.loads(sys.stdin.read())
f = lambda x: "%.3f ms" % (x * 1e3) if x is not None else "n/a"
print("%-5s %-6s  vmctl create %s   build %s   populate %s" % (r["scenario"],
      r["strategy"], f(r["wall"]), f(r["build"]), f(r["populate"])))'
	"$bin/vmctl" destroy bench8g >/dev/null
}

# Two scenarios per round: "clean" (all free memory scrubbed before the
# create) and "dirty" (the create follows the destroy of the previous
# 8 GiB VM at once, so most free memory may still wait for the scrubber).
for r in $(seq "$runs"); do
	for strategy in engine libxl; do
		# Alternate the order from one round to the next.
		[ $((r % 2)) -eq 0 ] && strategy=$([ "$strategy" = engine ] &&
		    echo libxl || echo engine)
		stop_pid "$d_pid"
		start_daemon "$strategy"
		warm_up
		measure clean "$strategy"
		measure dirty "$strategy"
		"$bin/vmctl" scrub --wait --timeout 600 >/dev/null 2>&1
	done
done

"$PYTHON" - "$results" "$guest_mib" "$node_mib" "$flush_mode" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
print("guest %s MiB on hvsim 2 nodes x %s MiB real memory, flush mode %s, "
      "%d runs each" % (sys.argv[2], sys.argv[3], sys.argv[4], len(rows) // 4))
for sc in ("clean", "dirty"):
    for key, label in (("wall", "vmctl create (wall)"),
                       ("build", "daemon build total"),
                       ("populate", "populate phase")):
        m, med = {}, {}
        for s in ("engine", "libxl"):
            v = [r[key] for r in rows if r["scenario"] == sc
                 and r["strategy"] == s and r[key] is not None]
            m[s] = statistics.mean(v) if v else None
            med[s] = statistics.median(v) if v else None
        if m["engine"] and m["libxl"]:
            print("%-5s %-20s mean: engine %.3f ms  libxl %.3f ms  "
                  "libxl/engine %.2f   median: engine %.3f ms  libxl %.3f ms"
                  "  libxl/engine %.2f" % (sc, label, m["engine"] * 1e3,
                  m["libxl"] * 1e3, m["libxl"] / m["engine"],
                  med["engine"] * 1e3, med["libxl"] * 1e3,
                  med["libxl"] / med["engine"]
                  if med["engine"] else float("nan")))
        else:
            print("%-5s %-20s unavailable" % (sc, label))
    # Counts are exact: the median of each (null: the backend cannot say).
    for s in ("engine", "libxl"):
        c = [r["counts"] for r in rows if r["scenario"] == sc
             and r["strategy"] == s]
        med = lambda k: (statistics.median([x[k] for x in c])
                         if c and all(x[k] is not None for x in c) else None)
        print("%-5s %-6s populate counts (median): %s" % (sc, s, ", ".join(
            "%s %s" % (k, "unavailable" if med(k) is None else "%g" % med(k))
            for k in ("calls", "pages_scrubbed_inline", "filter_evaluations",
                      "flushes_issued", "flushes_avoided"))))
EOF
