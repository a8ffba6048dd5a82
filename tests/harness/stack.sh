# stack.sh - the shell's side of vmbstack.py (sourced, not run).
#
# A private hvsim + vmbuildd stack in a directory; everything is started
# by vmbstack.py's supervisor, a child of this shell, and stopped by the
# process ids recorded when it was started.
#
#   stack_open DIR            start the supervisor for DIR (which exists);
#                             HVSIM and VMBUILDD (exported) name the
#                             programs, default build/bin's
#   stack_hvsim [--name N] [--socket P] [--timeout S] [-- HVSIM-ARGS]
#                             hvsim, once it serves: VMB_HV_PID,
#                             VMB_HV_SOCK, VMB_HV_LOG
#   stack_daemon [--hv-socket P] [--socket P] [--state P]
#                [--metrics auto|none|ADDR] [--timeout S] [-- ARGS]
#                             vmbuildd, once it sent READY=1: VMB_D_PID,
#                             VMB_SOCK, VMB_STATE, VMB_METRICS, VMB_D_LOG
#   stack_stop [--signal SIG] [NAME|PID...]
#                             stop those (all when none): VMB_STOPPED,
#                             lines "NAME PID STATUS"; VMB_STATUS, the
#                             last one's status as $? has it
#   stack_close               stop everything, end the supervisor
# Each returns non-zero, the reason on stderr, when it fails.

VMBSTACK=${VMBSTACK:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/vmbstack.py}
VMBSTACK_PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
STACK_DIR=
STACK_PID=

stack_open() {
	STACK_DIR=$1
	# Its own log: a supervisor holding the caller's stdout would keep
	# a pipe reading it open.
	"$VMBSTACK_PYTHON" -S "$VMBSTACK" serve "$STACK_DIR" \
	    </dev/null >>"$STACK_DIR/stack.log" 2>&1 &
	STACK_PID=$!
	# Its socket is renamed into place once it listens.
	local i
	for i in $(seq 1200); do
		[ -S "$STACK_DIR/stack.sock" ] && return 0
		kill -0 "$STACK_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "stack: the supervisor did not start: $(tail -n 3 "$STACK_DIR/stack.log")" >&2
	kill -TERM "$STACK_PID" 2>/dev/null || true
	STACK_PID=
	return 1
}

# stack_call COMMAND ARGS...: run a command, eval its assignments.
stack_call() {
	local out
	[ -n "$STACK_PID" ] || { echo "stack: stack_open first" >&2; return 1; }
	out=$("$VMBSTACK_PYTHON" -S "$VMBSTACK" "$1" "$STACK_DIR" "${@:2}") ||
		return 1
	eval "$out"
}

stack_hvsim() {
	stack_call hvsim "$@"
}

stack_daemon() {
	stack_call daemon "$@"
}

stack_stop() {
	[ -n "$STACK_PID" ] || return 0
	VMB_STOPPED=$("$VMBSTACK_PYTHON" -S "$VMBSTACK" stop "$STACK_DIR" \
	    "$@") || return 1
	VMB_STATUS=$(tail -n 1 <<<"$VMB_STOPPED" | cut -d' ' -f3)
}

stack_close() {
	[ -n "$STACK_PID" ] || return 0
	# A supervisor that got the caller's SIGTERM too stops on its own.
	if kill -0 "$STACK_PID" 2>/dev/null &&
	    ! "$VMBSTACK_PYTHON" -S "$VMBSTACK" down "$STACK_DIR" >/dev/null; then
		kill -TERM "$STACK_PID" 2>/dev/null || true
	fi
	wait "$STACK_PID" 2>/dev/null || true
	STACK_PID=
	return 0
}
