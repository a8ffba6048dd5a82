#!/bin/bash
# demo.sh - the vmbuild demo (`make demo` runs it after deps and build).
#
# Starts hvsim (a modelled 2-node host backed by real memory, sized to
# fit this machine) and vmbuildd in a temporary runtime directory (by
# the tests' launcher, tests/harness/stack.sh),
# creates the example VMs of configs/, shows `vmctl list`, their metrics,
# `vmctl scrub` and `vmctl stats`, destroys one VM and shows the scrub
# catching up.
# Everything it started is stopped on exit, also on Ctrl-C and errors.
#
# Environment: DEMO_KEEP=1 keeps the runtime directory (logs, state);
# DEMO_MEM_PER_NODE=SIZE in MiB overrides the sizing.
set -euo pipefail

# The system's Python: a version manager's shim in PATH can cost a second
# a call on a loaded machine.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/build/bin
hvsim=$bin/hvsim
vmbuildd=$bin/vmbuildd
vmctl=$bin/vmctl
export HVSIM=$hvsim VMBUILDD=$vmbuildd
. "$top/tests/harness/stack.sh"

run=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-demo.XXXXXX")
hv_sock=$run/hvsim.sock
export VMBUILD_SOCKET=$run/control.sock
hv_pid=
d_pid=

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
step() {
	printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"
}

say() {
	printf '    %s\n' "$*"
}

# Stop one process we started: TERM, then KILL after 10 s.
stop_pid() {
	local pid=$1 name=$2
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	say "stopping $name (pid $pid)"
	stack_stop "$pid" || true
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	set +e
	step "Cleaning up"
	stop_pid "$d_pid" vmbuildd
	stop_pid "$hv_pid" hvsim
	stack_close
	if [ "$rc" -ne 0 ]; then
		for f in "$run"/*.log; do
			[ -f "$f" ] || continue
			echo "--- last lines of $f"
			tail -n 20 "$f"
		done
	fi
	if [ "${DEMO_KEEP:-0}" = 1 ]; then
		say "kept $run (logs, state)"
	else
		rm -rf "$run"
	fi
	[ "$rc" -eq 0 ] && step "Demo done" || echo "demo failed (exit $rc)" >&2
	exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "interrupted" >&2; exit 130' INT TERM
stack_open "$run" || fail "the launcher did not start (see $run/stack.log)"

fail() {
	echo "demo: $*" >&2
	exit 1
}

for b in "$hvsim" "$vmbuildd" "$vmctl" "$top/build/guest/hello.elf"; do
	[ -e "$b" ] || fail "missing $b: run make first"
done

# Real memory: two nodes, each at most 1 GiB and at most a quarter of
# what the machine has available, so the demo fits next to other work.
avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
per_node=$((avail_kib / 1024 / 8))
[ "$per_node" -gt 1024 ] && per_node=1024
per_node=${DEMO_MEM_PER_NODE:-$per_node}
[ "$per_node" -ge 768 ] ||
	fail "only $((avail_kib / 1024)) MiB available; the demo needs 6 GiB"

step "Starting hvsim: 2 nodes x $per_node MiB of real memory, boot scrub on"
say "runtime directory: $run"
stack_hvsim --socket "$hv_sock" --timeout 300 -- --nodes 2 \
	--cpus-per-node 2 --threads-per-core 1 --mem-per-node "${per_node}M" \
	--backing real || fail "hvsim did not start (see $run/hvsim.log)"
hv_pid=$VMB_HV_PID
say "hvsim pid $hv_pid listening on $hv_sock (it runs no guest code)"

step "Starting vmbuildd on hvsim"
stack_daemon --socket "$VMBUILD_SOCKET" --state "$run/state" \
	--metrics auto --timeout 60 ||
	fail "vmbuildd did not start (see $run/vmbuildd.log)"
d_pid=$VMB_D_PID port=${VMB_METRICS##*:}
say "vmbuildd pid $d_pid, control socket $VMBUILD_SOCKET"
say "metrics: curl -s http://127.0.0.1:$port/metrics"

step "vmctl host"
"$vmctl" host

step "vmctl scrub --wait (the boot scrub zeroes all free memory first)"
"$vmctl" scrub --wait --timeout 120

step "Creating the example VMs from configs/"
for cfg in "$top"/configs/*.cfg; do
	say "vmctl create configs/$(basename "$cfg")"
	"$vmctl" create "$cfg"
done

step "vmctl list"
"$vmctl" list

step "vmctl info numa2"
"$vmctl" info numa2 || true

step "Their metrics (GET /metrics: per VM, by name and domain id)"
"$PYTHON" - "http://127.0.0.1:$port/metrics" <<'EOF'
import re, sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=30).read().decode()
for line in text.splitlines():
    if re.match(r"vmbuild_vm_(memory_bytes|vcpus)\{", line) or \
            re.match(r"vmbuild_vm_state\{.*\} 1$", line) or \
            re.match(r"vmbuild_populate_bytes_total\{", line):
        print("    " + line)
EOF

step "vmctl stats (counters, and rates over 1 s)"
"$vmctl" stats

victim=$("$vmctl" --json list | "$PYTHON" -c '
import json, sys
vms = json.load(sys.stdin)["vms"]
print(max(vms, key=lambda v: v["memory_bytes"] or 0)["name"] if vms else "")')
[ -n "$victim" ] || fail "no VM to destroy"
scrubbed() {
	"$vmctl" --json scrub | "$PYTHON" -c '
import json, sys
print(sum(n["scrubbed_bytes_total"] or 0 for n in json.load(sys.stdin)["nodes"]))'
}

step "vmctl destroy $victim: its memory becomes dirty and is scrubbed"
before=$(scrubbed)
"$vmctl" destroy "$victim"

step "vmctl scrub (right after the destroy)"
"$vmctl" scrub

step "vmctl scrub --wait (until no node has dirty memory)"
"$vmctl" scrub --wait --timeout 120
after=$(scrubbed)
say "hvsim's scrubbers zeroed $(( (after - before) >> 20 )) MiB since the destroy" \
	"(one worker per core, node-local)"

step "vmctl list"
"$vmctl" list

step "vmctl top --iterations 1 (rates over 1 s)"
"$vmctl" top --iterations 1
