#!/bin/bash
# exit-codes.sh - vmctl's documented exit codes, and config errors that
# name file:line.
#
#   0 success, 1 the daemon reported an error, 2 usage, 3 cannot reach
#   the daemon.
. "$(dirname "$0")/lib.sh"

# expect CODE NAME COMMAND...: the command exits with CODE.
expect() {
	local want=$1 name=$2 rc
	shift 2
	"$@" >"$RUN/out" 2>"$RUN/err"
	rc=$?
	if [ "$rc" -eq "$want" ]; then
		ok "$name (exit $rc)"
	else
		not_ok "$name (exit $rc, want $want)"
		diag "$(cat "$RUN/err")"
	fi
}

need_binaries

# --- without a daemon ---------------------------------------------------
expect 0 "vmctl --help" "$VMCTL" --help
check "--help documents the exit codes" grep -q 'cannot reach' "$RUN/out"
for c in create list info destroy pause unpause host scrub stats top \
    events tasks; do
	expect 0 "vmctl $c --help" "$VMCTL" "$c" --help
done
expect 2 "no command is a usage error" "$VMCTL"
expect 2 "unknown command is a usage error" "$VMCTL" frobnicate
expect 2 "unknown option is a usage error" "$VMCTL" list --frob
expect 2 "missing operand is a usage error" "$VMCTL" info
expect 2 "extra operand is a usage error" "$VMCTL" list extra
expect 2 "bad --timeout is a usage error" "$VMCTL" --timeout abc list
expect 2 "unreadable config file is a usage error" \
	"$VMCTL" create "$RUN/does-not-exist.cfg"
expect 3 "no daemon at the socket" "$VMCTL" --socket "$RUN/none.sock" list
check "it says it cannot reach the daemon" grep -q 'cannot reach' "$RUN/err"

# A socket that accepts but never answers: vmctl gives up, it does not hang.
"$PYTHON" -S -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4)
c, _ = s.accept()
time.sleep(30)' "$RUN/mute.sock" &
mute=$!
for i in $(seq 50); do [ -S "$RUN/mute.sock" ] && break; sleep 0.1; done
expect 3 "a daemon that never answers times out" \
	"$VMCTL" --socket "$RUN/mute.sock" --timeout 1 list
kill "$mute" 2>/dev/null
wait "$mute" 2>/dev/null

# --- with a daemon ------------------------------------------------------
start_hvsim --nodes 2 --cpus-per-node 1 --threads-per-core 1 \
	--mem-per-node 128M --backing real || bail "hvsim starts"
start_daemon || bail "vmbuildd starts and answers"
expect 0 "vmctl list with a daemon" "$VMCTL" list
expect 1 "unknown VM by name is a daemon error" "$VMCTL" info no-such-vm
check "the daemon's code is on stderr" \
	grep -q "code $(proto_code E_NO_SUCH_VM)" "$RUN/err"
expect 1 "unknown VM by id is a daemon error" "$VMCTL" destroy 4000
expect 1 "unknown VM in pause" "$VMCTL" pause no-such-vm

# Broken configs: the daemon's errors name file:line.
cat >"$RUN/bad.cfg" <<EOF
name = "bad"
vcpus = 1
memory = "lots"
kernel = "$GUEST_KERNEL"
EOF
bad=$(realpath "$RUN/bad.cfg")
expect 1 "create with a bad value is a daemon error" "$VMCTL" create "$bad"
check "the error names $bad:3" grep -q "$bad:3" "$RUN/err"
diag "$(cat "$RUN/err")"

printf 'name = "syntax"\nmemory = 64\nvcpus = = 2\n' >"$RUN/syntax.cfg"
syn=$(realpath "$RUN/syntax.cfg")
expect 1 "create with a syntax error is a daemon error" \
	"$VMCTL" create "$syn"
check "the syntax error names $syn:3" grep -q "$syn:3" "$RUN/err"
diag "$(cat "$RUN/err")"

# Each error said once: the message, then every file:line of the list.
two=$(realpath "$E2E_TOP/configs/tests/unknown-key.cfg")
expect 1 "create with two errors is a daemon error" "$VMCTL" create "$two"
check "each of the two errors is said once, the code once" test \
	"$(grep -c "$two:2: memroy" "$RUN/err"):$(grep -c "$two:4: frobnicate" \
	"$RUN/err"):$(grep -c "code $(proto_code E_CONFIG)" "$RUN/err")" = 1:1:1
check "the first line says what failed and how many errors" grep -qx \
	"vmctl: create: invalid configuration (2 errors) (code $(proto_code E_CONFIG))" \
	<(head -n 1 "$RUN/err")
diag "$(cat "$RUN/err")"

n=$("$VMCTL" --json list | py 'len(j["vms"])')
check "failed creates left no VM ($n)" test "$n" = 0

# The daemon goes away: 3 again.
stop_pid "$D_PID"
D_PID=
expect 3 "daemon stopped" "$VMCTL" list

# Dirty memory that no scrub worker serves (hvsim --scrub-workers 0, inline
# scrubbing only): scrub --wait says so at once with 1, instead of waiting
# for a stall.
stop_pid "$HV_PID"
HV_PID=
HV_SOCK=$RUN/hvsim-inline.sock SOCK=$RUN/control-inline.sock
VMBUILD_SOCKET=$SOCK
STATE=$RUN/state-inline
start_hvsim --nodes 2 --cpus-per-node 1 --threads-per-core 1 \
	--mem-per-node 128M --scrub-workers 0 || bail "hvsim (inline only) starts"
start_daemon || bail "vmbuildd on inline-only hvsim starts and answers"
write_cfg "$RUN/inline.cfg" inline 64
expect 0 "create on an inline-only hvsim" "$VMCTL" create "$RUN/inline.cfg"
expect 0 "destroy it" "$VMCTL" destroy inline
expect 1 "scrub --wait with dirty memory and no scrub workers" \
	"$VMCTL" scrub --wait
check "it says no node scrubs that memory" grep -q "no scrub workers" "$RUN/err"
diag "$(cat "$RUN/err")"
tap_done
