#!/bin/bash
# config-golden.sh - golden tests of the xl.cfg parser.
#
# For each configs/tests/NAME.cfg, build/bin/vmb-config-check must print
# NAME.json on stdout (the parsed description; the test directory's
# absolute path written as @DIR@) and exit 0, or, without NAME.json,
# exit 1.  Its diagnostics on stderr must equal NAME.err (empty when
# there is no NAME.err).  NAME.args, when there is one, holds options
# given before the file (--ignore-unsupported).  One TAP line per config.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
check=$top/${VMB_BUILD:-build}/bin/vmb-config-check
dir=$top/configs/tests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$dir" || exit 1
n=0
for cfg in *.cfg; do
	name=${cfg%.cfg}
	n=$((n + 1))
	args=$(cat "$name.args" 2>/dev/null)
	"$check" $args "$cfg" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	sed -i "s|$dir|@DIR@|g" "$tmp/out" "$tmp/err"
	good=1
	if [ -f "$name.json" ]; then
		[ $rc -eq 0 ] || { diag "$cfg: exit $rc, expected 0"; good=0; }
		diff -u "$name.json" "$tmp/out" | sed 's/^/# /' | grep . && good=0
	else
		[ $rc -eq 1 ] || { diag "$cfg: exit $rc, expected 1"; good=0; }
		[ -s "$tmp/out" ] && { diag "$cfg: unexpected output"; good=0; }
	fi
	if [ -f "$name.err" ]; then
		diff -u "$name.err" "$tmp/err" | sed 's/^/# /' | grep . && good=0
	elif [ -s "$tmp/err" ]; then
		diag "$cfg: unexpected diagnostics:"
		diag "$(cat "$tmp/err")"
		good=0
	fi
	if [ $good -eq 1 ]; then ok "config $cfg"; else not_ok "config $cfg"; fi
done
# The example configs must parse too (their kernel is built by make).
cd "$top/configs" || exit 1
for cfg in *.cfg; do
	if [ ! -e "$top/build/guest/hello.elf" ]; then
		skip "example $cfg" "build/guest/hello.elf not built"
		continue
	fi
	if "$check" "$cfg" >/dev/null 2>"$tmp/err" && [ ! -s "$tmp/err" ]; then
		ok "example $cfg"
	else
		not_ok "example $cfg"
		diag "$(cat "$tmp/err")"
	fi
done
[ $n -gt 0 ] || not_ok "no configs in $dir"
tap_done
