#!/bin/bash
# tests/lab/judge.sh CONSOLE [QEMU_RC QEMU_SECS] - judge a lab console log.
#
# Exit 0 only if dom0 reported LAB-RESULT PASS and Xen's own console shows
# the hello guest greeting from its domain ("(dN) ... hello from domain N").
# Prints the timings as a summary; on failure, which step failed and the
# console tail.  Usable on its own to re-read build/lab/console.log.
set -uo pipefail
log=${1:?usage: judge.sh CONSOLE [QEMU_RC QEMU_SECS]}
qrc=${2:-?}
qsecs=${3:-?}
# Serial lines may end in CRs (dom0's hvc0 gives "\r\r\n"): read a clean copy.
clean=$(mktemp)
trap 'rm -f "$clean"' EXIT
tr -d '\r' < "$log" > "$clean"

# Seconds (host clock, from QEMU start) of the first line matching $1.
at() { grep -m1 -E "$1" "$clean" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }
# secs= of a dom0 MARK step, or "-".
mark() {
	local v
	v=$(grep -E "MARK step=$1 " "$clean" | tail -n 1 | sed -n 's/.* rc=\([0-9]*\) secs=\([0-9.]*\).*/\2 (rc \1)/p')
	echo "${v:--}"
}

# secs of a step as a bare number, or "-".
num() { mark "$1" | awk '{ print ($2 == "(rc" && $3 != "0)") ? $1 "!" : $1 }'; }
# Seconds from the start of a create step to the tagged guest's hello line
# on Xen's serial console (host clock): what a user waits for.
first_light() {
	local b id h
	b=$(at "MARK begin step=$2\$")
	id=$(grep -m1 -E "^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: cmdline: lab=$1( |\$)" "$clean" |
	    sed -n 's/^\[[ 0-9.]*\] (d\([0-9]*\)).*/\1/p')
	[ -n "$b" ] && [ -n "$id" ] || { echo -; return; }
	h=$(at "^\[[ 0-9.]*\] \(d$id\).*vmbuild-guest: hello from domain")
	[ -n "$h" ] || { echo -; return; }
	awk -v a="$b" -v b="$h" 'BEGIN { printf "%.2f", b - a }'
}
row() { printf '%-40s %10s %10s\n' "$@"; }
# The domain id the dom0 script gave the Linux guest of toolstack $1.
linux_id() { sed -n "s/^.*LINUX tool=$1 domid=\([0-9]*\) .*/\1/p" "$clean" | tail -n 1; }
# The vmbuild-linux line domain $1 printed on its console, as dom0 read
# it from xenconsoled's log of that domain.
linux_said() {
	[ -n "$1" ] && grep -E "LINUX tool=[a-z]+ domid=$1 vmbuild-linux: domid=" "$clean" | head -n 1 |
	    sed 's/.*\(vmbuild-linux: .*\)/\1/'
}
# Seconds from the start of step $2 to the guest's line ($1: tool).
linux_light() {
	local v
	v=$(grep -E "MARK step=run-$1-linux rc=0" "$clean" | tail -n 1 | sed -n 's/.* secs=\([0-9.]*\).*/\1/p')
	[ -n "$v" ] && [ "$(num $2)" != - ] || { echo -; return; }
	awk -v a="$v" -v b="$(num $2 | tr -d '!')" 'BEGIN { printf "%.2f", a + b }'
}

echo "===== lab summary ($log) ====="
echo "qemu: exit $qrc after ${qsecs}s$([ "$qrc" = 124 ] && echo ' (HARD TIMEOUT)')"
row "seconds (from QEMU start)" "" ""
row "  xen first line" "$(at '\(XEN\)')" ""
row "  dom0 init running (boot)" "$(at 'MARK dom0-init')" ""
row "  dom0 done" "$(at 'MARK dom0-done')" ""
row "  xenstored+init-dom0+xenconsoled" "$(num xen-daemons)" ""
row "  xl info" "$(num xl-info)" ""
row "seconds per step (! = failed)" "xl" "vmbuild"
row "  create small (command returns)" "$(num xl-create-small)" "$(num vmb-create-small)"
row "  create small -> guest hello on Xen" "$(first_light xl-small xl-create-small)" "$(first_light vmb-small vmb-create-small)"
row "  create big (command returns)" "$(num xl-create-big)" "$(num vmb-create-big)"
row "  create big -> guest hello on Xen" "$(first_light xl-big xl-create-big)" "$(first_light vmb-big vmb-create-big)"
row "  destroy small (after its poweroff)" "$(num xl-destroy-small)" "$(num vmb-destroy-small)"
row "  destroy big (running)" "$(num xl-destroy-big)" "$(num vmb-destroy-big)"
row "  vmctl host / list / info" "" "$(num vmctl-host)/$(num vmctl-list)/$(num vmctl-info)"
xl_id=$(linux_id xl) vmb_id=$(linux_id vmb)
row "  create Linux (command returns)" "$(num xl-create-linux)" "$(num vmb-create-linux)"
row "  create Linux -> its line on console" "$(linux_light xl xl-create-linux)" "$(linux_light vmb vmb-create-linux)"
row "  destroy Linux (running)" "$(num xl-destroy-linux)" "$(num vmb-destroy-linux)"
row "  vmctl console: a command answered" "" "$(num vmb-console-linux)"
row "  vmbuildd killed -9, started again" "" "$(num vmbuildd-restart)"
row "  vmctl shutdown --wait (off + reaped)" "" "$(num vmb-shutdown-linux)"
row "  hello, on_poweroff=restart: 2nd hello" "" "$(grep -E 'MARK step=run-vmb-again ' "$clean" | tail -n 1 | sed -n 's/.* secs=\([0-9.]*\).*/\1/p')"
echo "Linux guest, xl:      $(linux_said "$xl_id")"
echo "Linux guest, vmbuild: $(linux_said "$vmb_id")"
# Its devices (a disk, a vif on dom0's bridge), hot-plug on vmbuild's.
dev_said() { grep -E "LINUXDEV tool=$1 " "$clean" | tail -n 1 | sed 's/.*\(vmbuild-linux-dev: .*\)/\1/'; }
row "  create Linux -> its devices line" "$(num dev-xl-linux)" "$(num dev-vmb-linux)"
row "  dom0 pings the guest (3 pings)" "$(num ping-xl-linux)" "$(num ping-vmb-linux)"
row "  disk-attach / disk-detach (running)" "$(num xl-disk-attach)/$(num xl-disk-detach)" "$(num vmb-disk-attach)/$(num vmb-disk-detach)"
row "  net-attach / net-detach (running)" "$(num xl-net-attach)/$(num xl-net-detach)" "$(num vmb-net-attach)/$(num vmb-net-detach)"
echo "Linux devices, xl:      $(dev_said xl)"
echo "Linux devices, vmbuild: $(dev_said vmb)"
# The running guest resized (mem-set, vcpu-set, vcpu-pin, sched), as it saw it.
resize_said() { grep -E "vmbuild-linux-resize: .* tool=$1\$" "$clean" | tail -n 1 | sed 's/.*\(vmbuild-linux-resize: .*\) tool=.*/\1/'; }
row "  mem-set / vcpu-set / vcpu-pin / sched" "$(num xl-mem-set)/$(num xl-vcpu-set)/$(num xl-vcpu-pin)/$(num xl-sched)" "$(num vmb-mem-set)/$(num vmb-vcpu-set)/$(num vmb-vcpu-pin)/$(num vmb-sched)"
echo "Linux resized, xl:      $(resize_said xl)"
echo "Linux resized, vmbuild: $(resize_said vmb)"
grep -E 'package [a-z]' "$clean" | sed 's/^\[[ 0-9.]*\] //' 
# issue 22: xl and vmbuild side by side (tests/lab/xenbench.sh's records,
# read by bench/xen-results.py), and the host's load that run.sh saw.
grep -E '^\[[ 0-9.]*\] LAB-HOST ' "$clean" | tail -n 1 | sed 's/^\[[ 0-9.]*\] LAB-HOST /host (QEMU start, end): /'
python3 "$(dirname "$0")/../../bench/xen-results.py" --summary "$log"
grep -E '^\[[ 0-9.]*\]   vmctl-(scrub|stats)\| ' "$clean" | sed 's/^\[[ 0-9.]*\]   /reported by vmbuild: /'
# How vmbuild populated each guest (calls and extents by order), from vmctl info.
for i in vmctl-info vmctl-info-big; do
	grep -qE "^\[[ 0-9.]*\]   $i\| " "$clean" || continue
	echo "vmbuild populate ($i): $(grep -E "^\[[ 0-9.]*\]   $i\| +(memory_bytes|calls|4k|2m|1g|total_seconds|populate): +[0-9]" "$clean" |
	    sed "s/^\[[ 0-9.]*\]   $i| *//; s/: */=/; s/ MiB/MiB/; s/ GiB/GiB/; s/ ms/ms/; s/ s\$/s/" | awk '!seen[$0]++' | tr '\n' ' ')"
done
sizes=$(grep -E '^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: RAM ' "$clean" | sed -n 's/.*RAM \([0-9]*\) MiB.*/\1/p' | sort -nu | tr '\n' ' ')
echo "guest sizes seen (MiB): ${sizes:-none}"
grep -E '^\[[ 0-9.]*\] (INFO|LAB-SKIP|LAB-EMU) ' "$clean" | sed 's/^\[[ 0-9.]*\] //'
# Guest lines as Xen's serial console printed them (not dom0's echoes).
grep -E '^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: (hello|RAM|touched|cmdline)' "$clean" | sed 's/^\[[ 0-9.]*\] /  /'

ok=1
result=$(grep -E 'LAB-RESULT ' "$clean" | tail -n 1 | sed 's/.*LAB-RESULT //')
if [ -z "$result" ]; then
	ok=0
	last=$(grep -E 'MARK |LAB-FAIL ' "$clean" | tail -n 1 | sed 's/^\[[ 0-9.]*\] //')
	echo "FAIL: dom0 never reported a result (timeout, panic or crash); last mark: ${last:-none}"
	grep -E 'LAB-FAIL ' "$clean" | sed 's/^\[[ 0-9.]*\] /  /'
	grep -m3 -E 'Panic on CPU|Kernel panic|FATAL|Xen BUG|Attempted to kill init' "$clean" | sed 's/^/  /'
elif [ "${result%% *}" != PASS ]; then
	ok=0
	echo "FAIL: dom0 steps failed: ${result#*failed=}"
	grep -E 'LAB-FAIL ' "$clean" | sed 's/^\[[ 0-9.]*\] /  /'
fi
# The hello guests' checks, unless the run skipped them (LAB_HELLO=0: a
# lab of other steps, e.g. make check-xen-hvm).
hello=${LAB_HELLO:-1}
# Xen's own console must show the guest greeting from its own domain id.
if [ "$hello" != 0 ] && ! grep -E '^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: hello from domain [0-9]+' "$clean" |
    sed -n 's/.*(d\([0-9]*\)).*hello from domain \([0-9]*\).*/\1 \2/p' |
    awk '$1 == $2 { found = 1 } END { exit !found }'; then
	ok=0
	echo "FAIL: no '(dN) vmbuild-guest: hello from domain N' line on Xen's console"
fi
# vmbuild itself must have built guests that ran: for each of its guests,
# the create step succeeded and Xen's console shows that guest's hello from
# its own domain id (an xl guest's greeting does not count).  Only
# LAB_VMBUILD=off, or LAB_STEPS without vmbuild (both passed on by run.sh),
# lifts this.
if [ "$hello" != 0 ] && [ "${LAB_VMBUILD:-require}" != off ] && [[ " ${LAB_STEPS:-vmbuild} " == *" vmbuild "* ]]; then
	for g in vmb-small:vmb-create-small vmb-big:vmb-create-big; do
		tag=${g%%:*} step=${g#*:}
		if ! grep -qE "MARK step=$step rc=0 " "$clean"; then
			ok=0
			echo "FAIL: vmbuild step $step did not succeed"
			continue
		fi
		id=$(grep -m1 -E "^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: cmdline: lab=$tag( |\$)" "$clean" |
		    sed -n 's/^\[[ 0-9.]*\] (d\([0-9]*\)).*/\1/p')
		if [ -z "$id" ] || ! grep -qE "^\[[ 0-9.]*\] \(d$id\).*vmbuild-guest: hello from domain $id\b" "$clean"; then
			ok=0
			echo "FAIL: no hello on Xen's console from the guest vmbuild built ($tag)"
		fi
	done
fi
# The Linux guest: what Linux saw, from Xen's console, for the domain each
# toolstack built: >= 95% of its RAM, 2 CPUs, 2 nodes; xl and vmbuild alike.
linux_check() {	# TOOL ID -> prints "memtotal cpus nodes" or fails
	local line mem want
	line=$(linux_said "$2")
	if [ -z "$line" ] || ! echo "$line" | grep -q "domid=$2 "; then
		echo "FAIL: no 'vmbuild-linux: domid=$2' line from the Linux guest $1 built" >&2
		return 1
	fi
	mem=$(echo "$line" | sed -n 's/.*memtotal_kib=\([0-9]*\).*/\1/p')
	want=$(( ${LAB_LINUX_MB:-4608} * 1024 * 95 / 100 ))
	if [ "${mem:-0}" -lt $want ] || ! echo "$line" | grep -q ' cpus=2 nodes=2$'; then
		echo "FAIL: the Linux guest $1 built saw too little: $line (want memtotal_kib >= $want, cpus=2, nodes=2)" >&2
		return 1
	fi
	echo "$line" | sed 's/.*memtotal_kib=\([0-9]*\) cpus=\([0-9]*\) nodes=\([0-9]*\)/\1 \2 \3/'
}
if [[ " ${LAB_STEPS:-linux} " == *" linux "* ]]; then
	seen_vmb="" seen_xl=""
	if [ "${LAB_VMBUILD:-require}" != off ] && [[ " ${LAB_STEPS:-vmbuild} " == *" vmbuild "* ]]; then
		seen_vmb=$(linux_check vmbuild "$vmb_id" 2>&1) || { ok=0; echo "$seen_vmb"; seen_vmb=""; }
	fi
	if [[ " ${LAB_STEPS:-xl} " == *" xl "* ]]; then
		seen_xl=$(linux_check xl "$xl_id" 2>&1) || { ok=0; echo "$seen_xl"; seen_xl=""; }
	fi
	if [ -n "$seen_vmb" ] && [ -n "$seen_xl" ] && [ "$seen_vmb" != "$seen_xl" ]; then
		ok=0
		echo "FAIL: the same Linux guest saw different things: xl '$seen_xl', vmbuild '$seen_vmb' (memtotal_kib cpus nodes)"
	fi
fi
# Both Linux guests saw their disk and their network.
if [[ " ${LAB_STEPS:-linux} " == *" linux "* ]]; then
	for t in xl vmb; do
		[ $t = vmb ] && { [ "${LAB_VMBUILD:-require}" = off ] || [[ " ${LAB_STEPS:-vmbuild} " != *" vmbuild "* ]]; } && continue
		[ $t = xl ] && [[ " ${LAB_STEPS:-xl} " != *" xl "* ]] && continue
		if ! dev_said $t | grep -q 'vmbuild-linux-dev: disk=ok net=ok$'; then
			ok=0
			echo "FAIL: the Linux guest $t built did not say 'disk=ok net=ok': $(dev_said $t)"
		fi
	done
fi
# The grub, hvm and grubhvm steps: each toolstack's guest said its line
# (dom0-init.sh's GRUB and HVM lines): booted from its disk through GRUB
# for Xen PVH; the HVM guest with its disk and NIC working when it had
# them (LAB_HVM_DEV=1, the default); from the disk when booted from it.
# line_judge STEP LINE WANT: for each toolstack of the run, the last
# line starting with LINE (printf, %s the tool) must match WANT.
line_judge() {
	local t l h
	[[ " ${LAB_STEPS:-} " == *" $1 "* ]] || return 0
	for t in xl vmb; do
		[ $t = vmb ] && { [ "${LAB_VMBUILD:-require}" = off ] || [[ " ${LAB_STEPS:-vmbuild} " != *" vmbuild "* ]]; } && continue
		[ $t = xl ] && [[ " ${LAB_STEPS:-xl} " != *" xl "* ]] && continue
		l=$(printf "$2" $t)
		h=$(grep -E "$l" "$clean" | tail -n 1)
		echo "$1 $t: ${h#*"${l%% *} "}"
		if ! echo "$h" | grep -qE "$3"; then
			ok=0
			echo "FAIL: the $1 guest $t built did not say '$3'"
		fi
	done
}
# The migrate step (two hosts, make check-xen-migrate): each toolstack's
# line says ok=yes: its live migration succeeded, the guest counted on
# on host B under the boot id it had on A (not booted again), and A's
# pings of it came back after the migration.
if [[ " ${LAB_STEPS:-} " == *" migrate "* ]]; then
	for t in xl vmbuild; do
		[ $t = vmbuild ] && { [ "${LAB_VMBUILD:-require}" = off ] || [[ " ${LAB_STEPS} " != *" vmbuild "* ]]; } && continue
		[ $t = xl ] && [[ " ${LAB_STEPS} " != *" xl "* ]] && continue
		l=$(grep -E "vmbuild-migrate: downtime_ms=.* tool=$t " "$clean" | tail -n 1 | sed 's/^.*\(vmbuild-migrate: \)/\1/')
		echo "${l:-vmbuild-migrate: tool=$t: no line}"
		if ! echo "$l" | grep -q ' ok=yes '; then
			ok=0
			echo "FAIL: the $t migration did not happen with the guest counting on on host B and answering pings"
		fi
	done
fi
line_judge grub "GRUB tool=%s " "vmbuild-grub: domid=[0-9]+ memtotal_kib=[0-9]+ booted_from=xvda\$"
hvm="vmbuild-hvm: domid=[0-9]+ memtotal_kib=[0-9]+ cpus=[0-9]+ nodes=[0-9]+"
if [ "${LAB_HVM_DEV:-1}" = 1 ]; then
	line_judge hvm "HVM tool=%s domid=" "$hvm disk=ok net=ok\$"
else
	line_judge hvm "HVM tool=%s domid=" "$hvm disk=no net=no\$"
fi
line_judge grubhvm "HVM tool=%s boot=disk " "$hvm .*booted_from=disk\$"
if [ $ok = 1 ]; then
	echo "lab: PASS"
	exit 0
fi
echo "----- console tail ($log) -----"
tail -n 80 "$log"
echo "lab: FAILED"
exit 1
