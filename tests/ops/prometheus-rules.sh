#!/bin/bash
# prometheus-rules.sh - contrib/prometheus: promtool check rules on the
# rules, promtool test rules on their unit tests (each alert where it
# must fire and where it must not).
set -u
dir=$(cd "$(dirname "$0")/../../contrib/prometheus" && pwd)
if ! command -v promtool >/dev/null; then
	echo "ok 1 - promtool # SKIP prometheus is not installed"
	exit 0
fi
n=0 failed=0
for cmd in "check rules vmbuild.rules.yml" "test rules vmbuild.rules.test.yml"; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	if out=$(cd "$dir" && promtool $cmd 2>&1); then
		echo "ok $n - promtool $cmd"
	else
		failed=$((failed + 1))
		echo "not ok $n - promtool $cmd"
	fi
	sed 's/^/# /' <<<"$out"
done
echo "1..$n"
[ "$failed" -eq 0 ]
