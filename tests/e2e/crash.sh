#!/bin/bash
# crash.sh - kill -9 vmbuildd in the middle of a build and restart it:
# no half-built domain remains, and no page is lost (after the scrub,
# the hypervisor's free memory is what it was at the start).
#
# The guest takes most of the host's memory and the daemon populates it
# the slow way (--populate libxl: one extent per call, one node after
# the other), so that the kill lands while memory is being populated.
. "$(dirname "$0")/lib.sh"

need_binaries
MEM_PER_NODE_MIB=${E2E_CRASH_MEM_MIB:-1024}
start_hvsim --nodes 2 --cpus-per-node 1 --mem-per-node "${MEM_PER_NODE_MIB}M" \
	--backing real || bail "hvsim starts"
start_daemon --populate libxl || bail "vmbuildd starts and answers"
ok "hvsim and vmbuildd (--populate libxl) start"
"$VMCTL" scrub --wait --timeout 60 >/dev/null || bail "boot scrub ends"
free0=$(free_bytes)
check "free memory known at start ($free0 bytes)" test "$free0" -gt 0

guest_mib=$((MEM_PER_NODE_MIB * 2 * 85 / 100))
write_cfg "$RUN/big.cfg" e2e-big "$guest_mib" 'cpus = "nodes:0-1"'
out=$("$VMCTL" --json create --no-wait "$RUN/big.cfg")
check "create --no-wait returns a task" test $? -eq 0
task=$(py 'j["task"]' <<<"$out")
diag "task $task: ${guest_mib} MiB guest"

# Watch the task; kill the daemon once memory is partly populated.
killed=
st=
for i in $(seq 3000); do
	t=$("$VMCTL" --json tasks 2>/dev/null) || break
	st=$(py "' '.join('%s %s %d %d' % (x['state'], x['progress']['phase'],
	    x['progress']['done'], x['progress']['total'])
	    for x in j['tasks'] if x['id'] == $task)" <<<"$t")
	read -r state phase done total <<<"$st"
	[ -z "$st" ] || [ "$state" = running ] || break
	if [ "$phase" = populate ] && [ "$done" -gt 0 ] &&
	    [ "$done" -lt "$total" ]; then
		kill -KILL "$D_PID"
		wait "$D_PID" 2>/dev/null
		killed="$done of $total bytes populated"
		break
	fi
done
D_PID=
check "the daemon was killed in the middle of populate (${killed:-$st})" \
	test -n "$killed"

start_daemon --populate libxl || bail "vmbuildd restarts"
ok "vmbuildd restarts on the same state directory"
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

# And the restarted daemon still builds.
write_cfg "$RUN/small.cfg" e2e-small 64
"$VMCTL" create "$RUN/small.cfg" >/dev/null 2>&1
check "the restarted daemon creates a VM" test $? -eq 0
"$VMCTL" destroy e2e-small >/dev/null 2>&1
check "and destroys it" test $? -eq 0
e2e_done
