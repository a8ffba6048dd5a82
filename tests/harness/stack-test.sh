#!/bin/bash
# stack-test.sh - the stack launcher (vmbstack.py through stack.sh), as
# the shell tests, the benchmarks and the demo use it: hvsim and
# vmbuildd start and are ready, a failed start says why at once, a
# stopped process is reaped and its status told, everything is stopped
# at the end, also when the caller dies without cleaning up.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
. "$top/tests/harness/stack.sh"
export HVSIM=${HVSIM:-$top/${VMB_BUILD:-build}/bin/hvsim}
export VMBUILDD=${VMBUILDD:-$top/${VMB_BUILD:-build}/bin/vmbuildd}
VMCTL=$top/${VMB_BUILD:-build}/bin/vmctl
dir=$(mktemp -d "${TMPDIR:-/tmp}/vmbstack-test.XXXXXX")
cleanup() {
	stack_close
	[ "$tap_failed" -eq 0 ] || tail -n 5 "$dir"/*.log "$dir"/orphan/*.log |
	    sed 's/^/# /'
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
PHANTOM=(--nodes 1 --cpus-per-node 2 --threads-per-core 1
    --mem-per-node 1G --backing phantom)

quiet() {
	"$@" >/dev/null
}

# gone PID: no such process, or only its zombie (a parent that does not
# reap, as some containers' init).
gone() {
	[ ! -e "/proc/$1" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat")" = Z ]
}

# wait_gone PID...: true once every PID is gone, within 60 s.
wait_gone() {
	local i p left
	for i in $(seq 600); do
		left=0
		for p in "$@"; do gone "$p" || left=1; done
		[ "$left" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

require "stack_open starts the supervisor" stack_open "$dir"
check "its socket is there" test -S "$dir/stack.sock"

err=$(stack_hvsim --name bad -- --nodes 1 --cpus-per-node 1 2>&1)
check "hvsim with bad options: stack_hvsim fails" test $? -ne 0
check "and says hvsim's reason and where its log is ($err)" \
	grep -q "cannot be split.*$dir/bad.log" <<<"$err"

require "stack_hvsim starts hvsim" stack_hvsim -- "${PHANTOM[@]}"
check "VMB_HV_PID ($VMB_HV_PID) runs" kill -0 "$VMB_HV_PID"
check "VMB_HV_SOCK is DIR/hvsim.sock" test "$VMB_HV_SOCK" = "$dir/hvsim.sock"
check "it serves when stack_hvsim returns" grep -q '^hvsim: serving' \
	"$VMB_HV_LOG"
hv=$VMB_HV_PID

require "stack_daemon starts vmbuildd" stack_daemon -- -v
d=$VMB_D_PID
check "VMB_D_PID ($d) runs" kill -0 "$d"
check "it answers at once on VMB_SOCK" \
	quiet "$VMCTL" --socket "$VMB_SOCK" --timeout 5 host
check "its metrics on a free port, VMB_METRICS ($VMB_METRICS)" \
	grep -q "metrics on http://$VMB_METRICS/metrics" "$VMB_D_LOG"
err=$(stack_daemon 2>&1)
check "a second vmbuildd in the stack is refused ($err)" \
	grep -q "runs already (pid $d)" <<<"$err"

stack_stop --signal KILL vmbuildd
check "stack_stop --signal KILL: status 137 ($VMB_STATUS)" \
	test "$VMB_STATUS" = 137
check "the stopped vmbuildd is reaped, no zombie" test ! -e "/proc/$d"
require "vmbuildd starts again on the same state" stack_daemon
check "the new one answers" \
	quiet "$VMCTL" --socket "$VMB_SOCK" --timeout 5 host
check "stack_stop of a name the stack lacks fails" \
	eval '! stack_stop nosuch 2>/dev/null'

d=$VMB_D_PID
sup=$STACK_PID
stack_close
check "stack_close stops vmbuildd, hvsim and the supervisor" \
	wait_gone "$d" "$hv" "$sup"
check "and removes the supervisor's socket" test ! -e "$dir/stack.sock"

# A caller killed before its cleanup: the supervisor sees its parent go
# and stops what it started.
mkdir "$dir/orphan"
{
	(
		stack_open "$dir/orphan" && stack_hvsim -- "${PHANTOM[@]}" &&
			echo "$STACK_PID $VMB_HV_PID" >"$dir/orphan/pids"
		kill -KILL "$BASHPID"
	)
} 2>/dev/null
read -r sup hv <"$dir/orphan/pids" 2>/dev/null
check "a caller killed by SIGKILL: its stack was running" test -n "${hv:-}"
check "the supervisor stops hvsim and ends" wait_gone "${sup:-0}" "${hv:-0}"
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
