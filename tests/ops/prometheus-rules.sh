#!/bin/bash
# prometheus-rules.sh - contrib/prometheus: promtool check rules on the
# rules, promtool test rules on their unit tests (each alert where it
# must fire and where it must not).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
if ! command -v promtool >/dev/null; then
	echo "ok 1 - promtool # SKIP prometheus is not installed"
	exit 0
fi
cd "$top/contrib/prometheus" || exit 1
for cmd in "check rules vmbuild.rules.yml" "test rules vmbuild.rules.test.yml"; do
	# shellcheck disable=SC2086
	if out=$(promtool $cmd 2>&1); then
		ok "promtool $cmd"
	else
		not_ok "promtool $cmd"
	fi
	sed 's/^/# /' <<<"$out"
done
tap_done; exit
