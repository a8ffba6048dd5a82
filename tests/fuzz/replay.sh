#!/bin/bash
# replay.sh - run every fuzz target once over its seed corpus
# (tests/fuzz/corpus/TARGET), under ASan and UBSan: each input that ever
# made a target fail is in there, so this is their regression test.
# Prints TAP.  The targets are built by `make check` (tests/fuzz/build.mk).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
bin=$top/${VMB_BUILD:-build}/fuzz
export LSAN_OPTIONS=suppressions=$top/tests/fuzz/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1
log=$(mktemp)
# A failing input is written here (libFuzzer's artifact), not into the
# tree; its name is in the log lines printed below.
art=$(mktemp -d)
trap 'rm -rf "$log" "$art"' EXIT
for t in rpc config loader state hvsim http stream xcstream cpuwait xswire; do
	n=$(ls "$top/tests/fuzz/corpus/$t" | wc -l)
	if [ ! -x "$bin/fuzz_$t" ]; then
		not_ok "fuzz_$t replays its corpus (not built: $bin/fuzz_$t)"
		continue
	fi
	# -runs=0: execute the corpus once and stop.
	if "$bin/fuzz_$t" -runs=0 -close_fd_mask=3 -rss_limit_mb=4096 \
	    -artifact_prefix="$art/" \
	    "$top/tests/fuzz/corpus/$t" >"$log" 2>&1; then
		ok "fuzz_$t: $n corpus inputs replayed, no crash, no leak"
	else
		not_ok "fuzz_$t: a corpus input fails"
		grep -E "ERROR|SUMMARY|runtime error|Test unit" "$log" |
		    head -10 | sed 's/^/# /'
	fi
done
tap_done
