#!/bin/bash
# crash.sh - kill -9 vmbuildd in the middle of a build and restart it:
# no half-built domain remains, and no page is lost (after the scrub,
# the hypervisor's free memory is what it was at the start).
#
# The guest takes most of the host's memory and is populated the libxl
# way (--populate libxl: one extent per call, node after node).  The
# daemon reaches hvsim through hvproxy.py, which stops relaying after
# the first populate call: the kill lands with the domain created and
# partly populated, however fast populating is on this machine.
. "$(dirname "$0")/lib.sh"

need_binaries
MEM_PER_NODE_MIB=${E2E_CRASH_MEM_MIB:-512}
PROXY_SOCK=$RUN/proxy.sock
FROZEN=$RUN/frozen
P_PID=

stop_proxy() {
	stop_pid "$P_PID"
	P_PID=
}
trap 'stop_proxy; e2e_cleanup' EXIT

require "hvsim starts" start_hvsim --nodes 2 --cpus-per-node 1 \
	--threads-per-core 1 --mem-per-node "${MEM_PER_NODE_MIB}M" --backing real
"$PYTHON" -S "$(dirname "$0")/hvproxy.py" "$PROXY_SOCK" "$HV_SOCK" "$FROZEN" \
	>"$RUN/proxy.log" 2>&1 &
P_PID=$!
for i in $(seq 100); do [ -S "$PROXY_SOCK" ] && break; sleep 0.1; done
require "hvproxy listens" test -S "$PROXY_SOCK"

# The first daemon goes through the proxy; the restarted one does not.
real_hv_sock=$HV_SOCK
HV_SOCK=$PROXY_SOCK
require "vmbuildd (--populate libxl) starts through the proxy" \
	start_daemon --populate libxl
HV_SOCK=$real_hv_sock
"$VMCTL" scrub --wait --timeout 60 >/dev/null 2>&1 || bail "boot scrub ends"
free0=$(free_bytes)
check "free memory known at start ($free0 bytes)" test "$free0" -gt 0

guest_mib=$((MEM_PER_NODE_MIB * 2 * 85 / 100))
write_cfg "$RUN/big.cfg" e2e-big "$guest_mib" 'cpus = "nodes:0-1"'
# vmctl follows the build; it must not hang when the daemon dies.
timeout 60 "$VMCTL" create "$RUN/big.cfg" >"$RUN/create.out" \
	2>"$RUN/create.err" &
c_pid=$!
for i in $(seq 300); do [ -e "$FROZEN" ] && break; sleep 0.1; done
check "the build reached populate and is held there" test -e "$FROZEN"
st=$("$VMCTL" --timeout 5 --json tasks 2>/dev/null | py "' '.join(
	'%s %s %d %d' % (x['state'], x['progress']['phase'],
	x['progress']['done'], x['progress']['total'])
	for x in j['tasks'] if x['vm'] == 'e2e-big')")
diag "task at the kill: $st"
read -r state phase done total <<<"$st"
check "the task is running, in populate ($st)" \
	test "$state $phase" = "running populate"

stack_stop --signal KILL "$D_PID"
rc=$VMB_STATUS
D_PID=
check "vmbuildd killed with SIGKILL mid-build (status $rc)" test "$rc" -eq 137
wait "$c_pid"
rc=$?
check "the following vmctl create exits 3 (daemon lost), not hangs ($rc)" \
	test "$rc" -eq 3
diag "$(cat "$RUN/create.err" | tr '\r' '\n' | tail -n 2)"
stop_proxy

require "vmbuildd restarts on the same state directory" \
	start_daemon --populate libxl
list=$("$VMCTL" --json list)
diag "after restart: $list"
n=$(py 'len([v for v in j["vms"] if v["name"] == "e2e-big"])' <<<"$list")
check "no half-built domain remains ($n)" test "$n" = 0
all=$(py 'len(j["vms"])' <<<"$list")
check "no domain at all is left ($all)" test "$all" = 0

"$VMCTL" scrub --wait --timeout 120 >/dev/null 2>&1
check "scrub --wait ends" test $? -eq 0
free1=$(free_bytes)
check "no page lost: free memory equals the start ($free1 vs $free0)" \
	test "$free1" = "$free0"

# And the restarted daemon still builds, the same guest in full.
"$VMCTL" create "$RUN/big.cfg" >"$RUN/out" 2>"$RUN/err"
check "the restarted daemon creates the big VM" test $? -eq 0
diag "$(cat "$RUN/out" "$RUN/err")"
"$VMCTL" destroy e2e-big >"$RUN/out" 2>"$RUN/err"
check "and destroys it" test $? -eq 0
diag "$(cat "$RUN/out" "$RUN/err")"
n=$("$VMCTL" --json list | py 'len(j["vms"])')
check "no domain is left ($n)" test "$n" = 0
tap_done
