#!/bin/bash
# tests/lab/debhost/judge.sh CONSOLE [QEMU_RC QEMU_SECS] - judge a debhost
# lab console log (build/debhost/console.log): every check lab-checks
# runs must have printed `debhost: NAME ok`.  Prints the checks' lines,
# the info lines they asked to show, the boot's timings and, last,
#     vmbuild-host: systemd=yes|no socket_activated=... prometheus=...
# (issue 24's summary).  The log holds two boots: lab-checks reboots the
# host once (vmbuild-guests at shutdown and boot).
# Exit 0 only when every check passed.
set -uo pipefail
log=${1:?usage: judge.sh CONSOLE [QEMU_RC QEMU_SECS]}
qrc=${2:-?}
qsecs=${3:-?}
CHECKS="xen security socket first-call alice-create bob-reads bob-denied
	bob-create-denied journal reload restart-after-crash watchdog
	prometheus alice-destroy devices-dropin linux upgrade guests-unit
	guests-shutdown guests-boot linux-destroy"
clean=$(mktemp)
trap 'rm -f "$clean"' EXIT
# dom0's console (hvc0) ends lines in CRs; QEMU's lines carry the time.
tr -d '\r' < "$log" > "$clean"
at() { grep -m1 -E "$1" "$clean" | sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p'; }
# The result of check $1: ok, FAIL or missing.
result() {
	local r
	r=$(grep -E "debhost: $1 (ok|FAIL)( |\$)" "$clean" | tail -n 1 |
	    sed -n "s/.*debhost: $1 \(ok\|FAIL\).*/\1/p")
	echo "${r:-missing}"
}
yn() {		# yes when every named check is ok
	local c
	for c in "$@"; do [ "$(result "$c")" = ok ] || { echo no; return; }; done
	echo yes
}

grep -E 'debhost-info\| ' "$clean" | sed 's/^\[[ 0-9.]*\] //'
echo
grep -E 'debhost(-emu)?: ' "$clean" | sed 's/^\[[ 0-9.]*\] //; s/^.*\(debhost\(-emu\)\{0,1\}: \)/\1/'
echo
printf '%-46s %s\n' "qemu exit / wall seconds" "$qrc / $qsecs" \
    "Xen loads dom0's kernel (s from QEMU start)" "$(at 'Dom0 kernel:')" \
    "systemd starts (s)" "$(at 'systemd\[1\]|Welcome to')" \
    "lab-checks begin (s)" "$(at 'debhost: begin')" \
    "reboot asked (s)" "$(at 'debhost: reboot')" \
    "second boot's checks begin (s)" "$(at 'debhost: boot2')" \
    "lab-checks end (s)" "$(at 'debhost: end')" \
    "guests' triple faults set aside (debhost-emu)" "$(grep -c 'debhost-emu: ' "$clean")"
bad=""
for c in $CHECKS; do
	[ "$(result "$c")" = ok ] || bad="$bad $c=$(result "$c")"
done
sysd=no
grep -qE 'debhost: begin' "$clean" && grep -qE 'systemd\[1\]|Welcome to' "$clean" && sysd=yes
echo "vmbuild-host: systemd=$sysd socket_activated=$(yn socket first-call) journal_fields=$(yn journal) restart_after_crash=$(yn restart-after-crash) watchdog=$(yn watchdog) upgrade_kept_guest=$(yn linux upgrade) prometheus=$(yn prometheus)"
if [ -z "$bad" ]; then
	echo "debhost lab: PASS"
	exit 0
fi
echo "debhost lab: FAILED:$bad"
echo "--- console tail"
tail -n 40 "$clean"
exit 1
