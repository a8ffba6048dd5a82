#!/bin/bash
# tests/lab/companion/sim.sh OUT NODES CPUS_PER_NODE MEM_PER_NODE MB CFG_EXTRA
#
# The companion lab's build-and-destroy sequence (dom0.sh, mode numa) on
# hvsim, modelled to the lab's topology: NODES nodes of CPUS_PER_NODE CPUs
# (no SMT) and MEM_PER_NODE each, one scrub worker per node (Xen's idle
# loop lets one CPU at a time scrub a node), phantom memory (hvsim runs no
# guest code; only the accounting is compared, not the speed).  Writes the
# same CMPJSON lines as the lab's dom0 to OUT, for compare.py.
#
# Everything runs in OUT's directory (no /tmp), started by the tests'
# launcher (tests/harness/stack.sh), and is stopped on exit, by the
# process ids recorded when it was started.
set -uo pipefail

out=${1:?usage: sim.sh OUT NODES CPUS_PER_NODE MEM_PER_NODE MB CFG_EXTRA}
nodes=$2 cpn=$3 mem=$4 mb=$5 extra=${6:-}
top=$(cd "$(dirname "$0")/../../.." && pwd)
bin=$top/build/bin
run=$(cd "$(dirname "$out")" && pwd)/sim.run
rm -rf "$run" && mkdir -p "$run" || exit 1
export HVSIM=$bin/hvsim VMBUILDD=$bin/vmbuildd
. "$top/tests/harness/stack.sh"
trap stack_close EXIT
V="$bin/vmctl --socket $run/control.sock --timeout 60"

stack_open "$run" || exit 1
stack_hvsim --timeout 300 -- --nodes "$nodes" --cpus-per-node "$cpn" \
    --threads-per-core 1 --mem-per-node "$mem" --backing phantom \
    --scrub-workers "$nodes" ||
	{ echo "sim: hvsim did not start" >&2; cat "$run/hvsim.log" >&2; exit 1; }
mkdir -p "$run/state"
stack_daemon --metrics auto ||
	{ echo "sim: vmbuildd did not start" >&2; cat "$run/vmbuildd.log" >&2; exit 1; }

exec 3>"$out"
cap() {
	local n=$1 rc
	shift
	"$@" >"$run/cap.out" 2>"$run/cap.err"
	rc=$?
	echo "CMPJSON $n rc=$rc $(tr -d '\n' <"$run/cap.out")" >&3
	[ -s "$run/cap.err" ] && echo "CMPERR $n $(tr '\n' ' ' <"$run/cap.err")" >&3
	return $rc
}
cfg() {
	sed -e "s/^name = .*/name = \"$1\"/" -e "s/^memory = .*/memory = $mb/" \
	    -e "s|^kernel = .*|kernel = \"$top/build/guest/hello.elf\"|" \
	    "$top/tests/lab/hello.cfg" >"$run/$1.cfg"
	echo "extra = \"lab=$1 hold\"" >>"$run/$1.cfg"
	[ -n "$extra" ] && echo "$extra" >>"$run/$1.cfg"
	echo "$run/$1.cfg"
}
scrub_wait() {
	$V scrub --wait --timeout 600 >/dev/null || echo "sim: scrub --wait failed" >&2
	cap "scrub-$1" $V --json scrub
}

cap host $V --json host
scrub_wait boot
cap stats-0 $V --json stats
$V create "$(cfg cmp-a)" >/dev/null || { echo "sim: create cmp-a failed" >&2; exit 1; }
cap info-cmp-a $V --json info cmp-a
cap stats-1 $V --json stats
cap scrub-1 $V --json scrub
touch "$run/poll.on"
(
	while [ -f "$run/poll.on" ]; do
		echo "$(date +%s.%N) $($V --json scrub 2>/dev/null | tr -d '\n')"
		sleep 0.1
	done >"$run/poll"
) &
poll_pid=$!
$V destroy cmp-a >/dev/null || echo "sim: destroy cmp-a failed" >&2
cap scrub-dirty $V --json scrub
scrub_wait 2
rm -f "$run/poll.on"
wait $poll_pid
i=0
while read -r t j; do
	i=$((i + 1))
	echo "CMPJSON poll-$i rc=0 {\"t\":$t,\"scrub\":$j}" >&3
done <"$run/poll"
cap stats-2 $V --json stats
$V create "$(cfg cmp-b)" >/dev/null || { echo "sim: create cmp-b failed" >&2; exit 1; }
cap info-cmp-b $V --json info cmp-b
cap stats-3 $V --json stats
$V destroy cmp-b >/dev/null || echo "sim: destroy cmp-b failed" >&2
scrub_wait 4
cap stats-4 $V --json stats
exit 0
