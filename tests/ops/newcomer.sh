#!/bin/bash
# newcomer.sh - the messages a newcomer from xl meets in vmctl: an
# unknown command suggests the nearest, and xl's names for commands that
# mean the same (block-attach, network-attach...) are accepted.  Needs no
# daemon: the command table alone answers.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
vmctl=$top/${VMB_BUILD:-build}/bin/vmctl

err=$("$vmctl" lsit 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -qxF "vmctl: unknown command 'lsit'; did you mean 'list'?" <<<"$err"; then
	ok "lsit: did you mean 'list'?"
else
	not_ok "lsit: did you mean 'list'? (exit $rc)"; diag "$err"
fi
err=$("$vmctl" frobozz 2>&1 >/dev/null)
if grep -qxF "vmctl: unknown command 'frobozz'" <<<"$err"; then
	ok "frobozz: no suggestion when nothing is near"
else
	not_ok "frobozz: no suggestion when nothing is near"; diag "$err"
fi
err=$("$vmctl" help dsik-attach 2>&1 >/dev/null)
if grep -qF "did you mean 'disk-attach'?" <<<"$err"; then
	ok "help dsik-attach: did you mean 'disk-attach'?"
else
	not_ok "help dsik-attach suggests disk-attach"; diag "$err"
fi
for pair in block-attach:disk-attach block-detach:disk-detach \
    network-attach:net-attach network-detach:net-detach; do
	xl=${pair%%:*} ours=${pair#*:}
	out=$("$vmctl" "$xl" --help 2>&1); rc=$?
	if [ $rc -eq 0 ] && grep -q "usage: vmctl .* $ours " <<<"$out"; then
		ok "xl's $xl is vmctl $ours"
	else
		not_ok "xl's $xl is vmctl $ours (exit $rc)"; diag "$out"
	fi
done
tap_done
