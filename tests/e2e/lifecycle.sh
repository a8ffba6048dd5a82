#!/bin/bash
# lifecycle.sh - end to end: hvsim + vmbuildd + vmctl.
#
# Two VMs created with `vmctl create`, spread over the two nodes of a
# modelled host with real memory; list (and its --json shape), info,
# pause, unpause, destroy; after destroy and `vmctl scrub --wait`, the
# hypervisor's free memory is what it was at the start.
. "$(dirname "$0")/lib.sh"

need_binaries
require "hvsim starts (2 nodes, real memory)" \
	start_hvsim --nodes 2 --cpus-per-node 2 --threads-per-core 1 \
	--mem-per-node 256M --backing real
# -v: the log says when the events subscription below is in place.
require "vmbuildd starts and answers vmctl" start_daemon -v

# The boot scrub must be over before "free at start" means anything.
"$VMCTL" scrub --wait --timeout 60 >/dev/null 2>&1 || bail "boot scrub ends"
free0=$(free_bytes)
check "free memory known at start ($free0 bytes)" test "$free0" -gt 0

# Each VM is pinned to one node, so together they use both.
write_cfg "$RUN/a.cfg" e2e-a 96 'cpus = "nodes:0"'
write_cfg "$RUN/b.cfg" e2e-b 96 'cpus = "nodes:1"'
out=$("$VMCTL" create "$RUN/a.cfg" 2>"$RUN/create-a.err")
check "vmctl create a.cfg" test $? -eq 0
diag "$out"
check "create prints the new VM's name" grep -q 'e2e-a' <<<"$out"
check "create shows progress on stderr (not a terminal: lines)" \
	grep -q '96 MiB of 96 MiB' "$RUN/create-a.err"
"$VMCTL" create "$RUN/b.cfg" >/dev/null 2>&1
check "vmctl create b.cfg" test $? -eq 0

list=$("$VMCTL" --json list)
check "vmctl --json list" test $? -eq 0
shape=$(py '
all(set(v) == {"id", "name", "state", "type", "memory_bytes", "vcpus", "nodes"}
    and isinstance(v["nodes"], list) for v in j["vms"])
and set(j) == {"vms"}' <<<"$list")
check "list --json has exactly the documented shape" test "$shape" = True
names=$(py 'sorted(v["name"] for v in j["vms"])' <<<"$list")
check "both VMs are listed ($names)" test "$names" = "['e2e-a', 'e2e-b']"
nodes=$(py 'sorted(set(n for v in j["vms"] for n in v["nodes"]))' \
	<<<"$list")
check "the two VMs use both nodes ($nodes)" test "$nodes" = "[0, 1]"
mem=$(py '[v["memory_bytes"] for v in j["vms"] if v["name"] == "e2e-a"][0]' \
	<<<"$list")
check "memory_bytes of e2e-a is 96 MiB ($mem)" test "$mem" = $((96 << 20))
"$VMCTL" list >"$RUN/list.txt"
check "human list has a header and both VMs" \
	grep -qE '^ *ID +NAME' "$RUN/list.txt"

# On a terminal (a pty from script(1)), create draws a bar in place.
write_cfg "$RUN/c.cfg" e2e-c 32
out=$(script -qec "$VMCTL create $RUN/c.cfg" /dev/null)
check "create on a terminal exits 0" test $? -eq 0
check "create on a terminal draws a progress bar redrawn in place" \
	grep -q $'\r.*\\[#*\\.*\\]' <<<"$out"
"$VMCTL" destroy e2e-c >/dev/null 2>&1
check "vmctl destroy e2e-c" test $? -eq 0

# --no-wait: a task id at once; the build goes on in the daemon.
write_cfg "$RUN/d.cfg" e2e-d 32
out=$("$VMCTL" --json create --no-wait "$RUN/d.cfg")
check "create --no-wait exits 0" test $? -eq 0
task=$(py 'j["task"]' <<<"$out")
check "create --no-wait prints a task id ($task)" test -n "$task"
for i in $(seq 100); do
	st=$("$VMCTL" --json tasks | py "[x['state'] for x in j['tasks']
	    if x['id'] == $task]")
	[ "$st" = "['running']" ] || break
	sleep 0.1
done
check "the task ends done ($st)" test "$st" = "['done']"
"$VMCTL" destroy e2e-d >/dev/null 2>&1
check "vmctl destroy e2e-d" test $? -eq 0

# Events: a subscriber sees the state changes below.
"$VMCTL" --json events >"$RUN/events.json" 2>"$RUN/events.err" &
ev_pid=$!
# Subscribed once the daemon has read the request (its debug line): no
# fixed sleep, which a busy machine can overrun.
for i in $(seq 300); do
	grep -q ': events.subscribe$' "$RUN/vmbuildd.log" && break
	sleep 0.1
done

state() {
	"$VMCTL" --json info "$1" | py 'j["state"]'
}
info=$("$VMCTL" info e2e-a)
check "vmctl info e2e-a" test $? -eq 0
check "info shows the placement reason" grep -qi 'reason' <<<"$info"
# Units by value, one value per line: "key: value" or "- item", nothing
# split over lines, no "0.0 ms".
check "info: every line is a key or a list item" test -z \
	"$(grep -vE '^ *([A-Za-z0-9_.]+:( .*)?|- .*)$' <<<"$info")"
check "info: durations in units their size calls for" grep -qE \
	'^    populate: +[0-9.]+ (ns|µs|ms|s)$' <<<"$info"
check "info: cpu_time_seconds with a unit" grep -qE \
	'^cpu_time_seconds: +[0-9.]+ (ns|µs|ms|s|min)' <<<"$info"
check "info: addresses in hex" grep -qE '^  entry: +0x[0-9a-f]+$' <<<"$info"
check "info: no 0.0 with a smaller unit" test -z "$(grep -E ' 0\.0+ ' <<<"$info")"
s0=$(state e2e-a)
"$VMCTL" pause e2e-a >/dev/null
check "vmctl pause" test $? -eq 0
s1=$(state e2e-a)
check "state after pause is paused (was $s0)" test "$s1" = paused
"$VMCTL" pause e2e-a >/dev/null 2>&1
check "pausing a paused VM is a daemon error (exit 1)" test $? -eq 1
"$VMCTL" unpause e2e-a >/dev/null
check "vmctl unpause" test $? -eq 0
s2=$(state e2e-a)
check "state after unpause is not paused ($s2)" test "$s2" != paused

# The subscriber prints (and flushes) each event as it reads it: wait
# for the pause's and the unpause's before stopping it.
for i in $(seq 300); do
	[ "$(grep -c '"vm.state"' "$RUN/events.json")" -ge 2 ] && break
	sleep 0.1
done
kill -TERM "$ev_pid"
wait "$ev_pid"
check "vmctl events stops on SIGTERM with exit 0" test $? -eq 0
n=$("$PYTHON" -S -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("method") == "vm.state":
        n += 1
print(n)' "$RUN/events.json")
check "vmctl events saw vm.state notifications ($n)" test "$n" -ge 2

top=$("$VMCTL" top --iterations 2 --delay 0.2)
check "vmctl top --iterations 2 prints two snapshots" \
	test "$(grep -c '^NODE' <<<"$top")" -eq 2

id_b=$("$VMCTL" --json info e2e-b | py 'j["id"]')
"$VMCTL" destroy e2e-a >/dev/null
check "vmctl destroy by name" test $? -eq 0
"$VMCTL" destroy "$id_b" >/dev/null
check "vmctl destroy by id ($id_b)" test $? -eq 0
n=$("$VMCTL" --json list | py 'len(j["vms"])')
check "no VM left after destroy ($n)" test "$n" = 0

"$VMCTL" scrub --wait --timeout 60 >"$RUN/scrub.txt" 2>&1
check "vmctl scrub --wait ends" test $? -eq 0
check "dirty memory is 0 after scrub --wait" test "$(dirty_bytes)" = 0
free1=$(free_bytes)
check "free memory equals the start ($free1 vs $free0)" test "$free1" = "$free0"
shape=$("$VMCTL" --json scrub | py '
all(set(n) == {"node", "total_bytes", "free_bytes", "dirty_bytes",
    "scrubbed_bytes_total", "scrub_rate_bytes_per_second",
    "boot_scrub_done"} for n in j["nodes"]) and len(j["nodes"]) == 2')
check "scrub --json has exactly the documented shape" test "$shape" = True
check "vmctl scrub shows the clean 1 GiB blocks column" \
    grep -q "CLEAN 1G" <("$VMCTL" scrub)
shape=$("$VMCTL" --json stats | py '
{"issued", "filtered", "filter_evaluations"} <= set(j["tlb_flushes"])
and {"write_flood", "early", "other"} <= set(j["unshadow"])
and "populate" in j and "scrub" in j')
check "stats --json has the documented groups and keys" test "$shape" = True
tap_done
