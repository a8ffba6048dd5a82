# tap.sh - TAP lines for the shell tests of tests/ops (sourced, not run).
#   ok NAME, not_ok NAME, check NAME COMMAND... (ok when it succeeds),
#   done_tap (the plan; exits 0 when nothing failed).
tap_n=0
tap_failed=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok() { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name"; fi; }
done_tap() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; exit; }
