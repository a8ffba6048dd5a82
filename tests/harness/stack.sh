# stack.sh - the shell's side of vmbstack.py (sourced, not run).
#
# A private hvsim + vmbuildd stack in a directory; everything is started
# by vmbstack.py's supervisor, a child of this shell, and stopped by the
# process ids recorded when it was started.
#
#   stack_open DIR            start the supervisor for DIR (which exists)
#   stack_hvsim [--name N] [--socket P] [--timeout S] [-- HVSIM-ARGS]
#                             hvsim, once it serves: VMB_HV_PID,
#                             VMB_HV_SOCK, VMB_HV_LOG
#   stack_daemon [--hv-socket P] [--socket P] [--state P]
#                [--metrics auto|none|ADDR] [--timeout S] [-- ARGS]
#                             vmbuildd, once it sent READY=1: VMB_D_PID,
#                             VMB_SOCK, VMB_STATE, VMB_METRICS, VMB_D_LOG
#   stack_stop [NAME|PID...]  stop those (all when none), prints who
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
	"$VMBSTACK_PYTHON" -S "$VMBSTACK" stop "$STACK_DIR" "$@"
}

stack_close() {
	[ -n "$STACK_PID" ] || return 0
	"$VMBSTACK_PYTHON" -S "$VMBSTACK" down "$STACK_DIR" >/dev/null ||
		kill -TERM "$STACK_PID" 2>/dev/null
	wait "$STACK_PID" 2>/dev/null
	STACK_PID=
	return 0
}
