# lib.sh - shared by the end-to-end tests (sourced, not run).
#
# Starts hvsim and vmbuildd in a fresh mktemp -d directory (through
# tests/harness/stack.sh, the tests' one launcher), runs vmctl against
# them, and prints TAP (tests/tap.sh).  Everything started here is killed
# on exit (trap), by the process ids recorded when it was started.

set -u
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../harness/stack.sh"

E2E_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=$E2E_TOP/${VMB_BUILD:-build}/bin
export HVSIM=${HVSIM:-$BIN/hvsim}
export VMBUILDD=${VMBUILDD:-$BIN/vmbuildd}
VMCTL=${VMCTL:-$BIN/vmctl}
CONFIGS=$E2E_TOP/configs
GUEST_KERNEL=$E2E_TOP/${VMB_BUILD:-build}/guest/hello.elf
# The system's Python: a version manager's shim in PATH can cost a second
# a call on a loaded machine, and the tests call it often.
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}

RUN=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-e2e.XXXXXX")
HV_SOCK=$RUN/hvsim.sock
SOCK=$RUN/control.sock
STATE=$RUN/state
HV_PID=
D_PID=
export VMBUILD_SOCKET=$SOCK

# Kill one process we started, gently first.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

e2e_cleanup() {
	local rc=$?
	stack_close
	if [ "$tap_failed" -gt 0 ] || [ "${E2E_KEEP:-0}" = 1 ]; then
		for f in "$RUN"/*.log; do
			[ -f "$f" ] || continue
			echo "# --- last lines of $(basename "$f")"
			tail -n 30 "$f" | sed 's/^/#   /'
		done
	fi
	[ "${E2E_KEEP:-0}" = 1 ] || rm -rf "$RUN"
	exit $rc
}
trap e2e_cleanup EXIT
trap 'exit 130' INT TERM
stack_open "$RUN" || exit 1

# start_hvsim ARGS...: hvsim on $HV_SOCK (log: its name .log); waits
# until it serves.
start_hvsim() {
	HV_PID=
	stack_hvsim --name "$(basename "$HV_SOCK" .sock)" --socket "$HV_SOCK" \
	    --timeout 120 -- "$@" || return 1
	HV_PID=$VMB_HV_PID
}

# start_daemon ARGS...: vmbuildd on hvsim, metrics on a free loopback
# port, so that tests running side by side do not fight over the default
# 9741; waits until it sent READY=1.
start_daemon() {
	D_PID=
	mkdir -p "$STATE"
	stack_daemon --hv-socket "$HV_SOCK" --socket "$SOCK" --state "$STATE" \
	    --metrics auto -- "$@" || return 1
	D_PID=$VMB_D_PID
}

# proto_code NAME: an error code of daemon/proto.h, e.g. E_NO_SUCH_VM.
proto_code() {
	awk -v n="$1" '$1 == "#define" && $2 == n { print $3; f = 1 }
	    END { exit !f }' "$E2E_TOP/daemon/proto.h"
}

# py EXPR < JSON: evaluate a Python expression over the parsed input `j`.
py() {
	"$PYTHON" -S -c "import json, sys; j = json.load(sys.stdin); print($1)"
}

# Total free and dirty bytes over all nodes, from vmctl --json scrub.
free_bytes() {
	"$VMCTL" --json scrub | py 'sum(n["free_bytes"] for n in j["nodes"])'
}

dirty_bytes() {
	"$VMCTL" --json scrub | py 'sum(n["dirty_bytes"] for n in j["nodes"])'
}

# Write an xl.cfg file: write_cfg FILE NAME MEMORY_MIB [EXTRA LINE...]
write_cfg() {
	local f=$1 name=$2 mem=$3
	shift 3
	{
		echo "name = \"$name\""
		echo "type = \"pvh\""
		echo "memory = $mem"
		echo "vcpus = 1"
		echo "kernel = \"$GUEST_KERNEL\""
		for l in "$@"; do echo "$l"; done
	} >"$f"
}

need_binaries() {
	local b
	for b in "$HVSIM" "$VMBUILDD" "$VMCTL" "$GUEST_KERNEL"; do
		[ -e "$b" ] || bail "missing $b (run make)"
	done
}

