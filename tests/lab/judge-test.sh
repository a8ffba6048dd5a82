#!/bin/bash
# judge-test.sh - tests/lab/judge.sh's verdicts on the hvm and grub steps
# and on a run without the hello guests (LAB_HELLO=0, make check-xen-hvm),
# from a console excerpt (judge-logs/hvm-grub.log) and copies of it with
# one line spoiled.  No QEMU.  TAP on stdout.
set -u
cd "$(dirname "$0")/../.." || exit 2
. tests/tap.sh
log=tests/lab/judge-logs/hvm-grub.log
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
judge() {	# judge LOG [VAR=VALUE...]: judge.sh's last line
	local l=$1
	shift
	env LAB_STEPS="xl vmbuild hvm grub" LAB_HELLO=0 "$@" \
	    tests/lab/judge.sh "$l" 0 1 > "$tmp/out" 2>&1
	echo "rc=$? $(tail -n 1 "$tmp/out")"
}
spoil() {	# spoil SED-EXPR: a copy of the excerpt with it applied
	sed "$1" "$log" > "$tmp/spoiled.log"
	echo "$tmp/spoiled.log"
}
is() { [ "$1" = "$2" ] || { diag "got '$1', want '$2'"; return 1; }; }

check "both toolstacks' hvm and grub lines, no hello guests: PASS" \
    is "$(judge "$log")" "rc=0 lab: PASS"
check "the hello guests are wanted unless LAB_HELLO=0" \
    is "$(judge "$log" LAB_HELLO=1)" "rc=1 lab: FAILED"
check "vmbuild's HVM guest without its network: FAILED" \
    is "$(judge "$(spoil '/HVM tool=vmb/s/net=ok/net=no/')")" "rc=1 lab: FAILED"
grep -q "FAIL: the hvm guest vmb built did not say '.*disk=ok net=ok" "$tmp/out"
check "  ... and it says which guest and what it wanted" [ $? = 0 ]
check "xl's HVM line missing: FAILED" \
    is "$(judge "$(spoil '/HVM tool=xl/d')")" "rc=1 lab: FAILED"
check "a guest without devices passes with LAB_HVM_DEV=0 only" \
    is "$(judge "$(spoil '/HVM tool=/s/disk=ok net=ok/disk=no net=no/')" LAB_HVM_DEV=0)" "rc=0 lab: PASS"
check "vmbuild's GRUB guest not from xvda: FAILED" \
    is "$(judge "$(spoil '/GRUB tool=vmb/s/booted_from=xvda/booted_from=/')")" "rc=1 lab: FAILED"
check "dom0's own verdict counts: LAB-RESULT FAIL" \
    is "$(judge "$(spoil 's/LAB-RESULT PASS/LAB-RESULT FAIL failed=x/')")" "rc=1 lab: FAILED"
check "the grubhvm step wants booted_from=disk" \
    is "$(judge "$log" LAB_STEPS="xl vmbuild grubhvm")" "rc=1 lab: FAILED"
tap_done
