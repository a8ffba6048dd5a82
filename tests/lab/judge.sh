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

# Seconds (host clock, from QEMU start) of the first line matching $1.
at() { grep -m1 -E "$1" "$log" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }
# secs= of a dom0 MARK step, or "-".
mark() {
	local v
	v=$(grep -E "MARK step=$1 " "$log" | tail -n 1 | sed -n 's/.* rc=\([0-9]*\) secs=\([0-9.]*\).*/\2 (rc \1)/p')
	echo "${v:--}"
}

echo "===== lab summary ($log) ====="
echo "qemu: exit $qrc after ${qsecs}s$([ "$qrc" = 124 ] && echo ' (HARD TIMEOUT)')"
printf '%-34s %s\n' "xen first line" "$(at '\(XEN\)')s"
printf '%-34s %s\n' "dom0 init running (boot)" "$(at 'MARK dom0-init')s"
printf '%-34s %s\n' "xenstored+init-dom0+xenconsoled" "$(mark xen-daemons)"
printf '%-34s %s\n' "xl info" "$(mark xl-info)"
for who in xl vmb; do
	tool=$([ $who = xl ] && echo xl || echo vmctl)
	printf '%-34s %s\n' "$tool create small" "$(mark $who-create-small)"
	printf '%-34s %s\n' "$tool small: create->poweroff line" "$(mark run-$who-small)"
	printf '%-34s %s\n' "$tool create big" "$(mark $who-create-big)"
	printf '%-34s %s\n' "$tool big: create->holding line" "$(mark run-$who-big)"
	[ $who = vmb ] && printf '%-34s %s\n' "vmctl destroy small (shut down)" "$(mark vmb-destroy-small)"
	printf '%-34s %s\n' "$tool destroy big (running)" "$(mark $who-destroy-big)"
done
printf '%-34s %s\n' "vmctl host / list / info" "$(mark vmctl-host) / $(mark vmctl-list) / $(mark vmctl-info)"
printf '%-34s %s\n' "dom0 done" "$(at 'MARK dom0-done')s"
grep -E '^\[[ 0-9.]*\] (INFO|LAB-SKIP) ' "$log" | sed 's/^\[[ 0-9.]*\] //'
# Guest lines as Xen's serial console printed them (not dom0's echoes).
grep -E '^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: (hello|RAM|touched|cmdline)' "$log" | sed 's/^\[[ 0-9.]*\] /  /'

ok=1
result=$(grep -E 'LAB-RESULT ' "$log" | tail -n 1 | sed 's/.*LAB-RESULT //')
if [ -z "$result" ]; then
	ok=0
	last=$(grep -E 'MARK |LAB-FAIL ' "$log" | tail -n 1 | sed 's/^\[[ 0-9.]*\] //')
	echo "FAIL: dom0 never reported a result (timeout, panic or crash); last mark: ${last:-none}"
	grep -m3 -E 'Panic on CPU|Kernel panic|FATAL|Xen BUG|Attempted to kill init' "$log" | sed 's/^/  /'
elif [ "${result%% *}" != PASS ]; then
	ok=0
	echo "FAIL: dom0 steps failed: ${result#*failed=}"
	grep -E 'LAB-FAIL ' "$log" | sed 's/^\[[ 0-9.]*\] /  /'
fi
# Xen's own console must show the guest greeting from its own domain id.
if ! grep -E '^\[[ 0-9.]*\] \(d[0-9]+\).*vmbuild-guest: hello from domain [0-9]+' "$log" |
    sed -n 's/.*(d\([0-9]*\)).*hello from domain \([0-9]*\).*/\1 \2/p' |
    awk '$1 == $2 { found = 1 } END { exit !found }'; then
	ok=0
	echo "FAIL: no '(dN) vmbuild-guest: hello from domain N' line on Xen's console"
fi
if [ $ok = 1 ]; then
	echo "lab: PASS"
	exit 0
fi
echo "----- console tail ($log) -----"
tail -n 80 "$log"
echo "lab: FAILED"
exit 1
