# tap.sh - the TAP helper of the shell tests (sourced, not run).
#
# Numbered "ok N - NAME" / "not ok N - NAME" lines, "# " diagnostics and
# the plan "1..N" at the end, as scripts/run-tests counts them.  A check
# is a command that can fail: `check NAME COMMAND...` and `require NAME
# COMMAND...` run it and say ok or not ok; `ok`/`not_ok` are for a
# result the caller computed.  TAP_OFFSET=N starts the numbers after N
# lines another program printed.

tap_n=${TAP_OFFSET:-0}
tap_failed=0

ok() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $*"
}

not_ok() {
	tap_n=$((tap_n + 1))
	tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $*"
}

# skip NAME REASON: counted as skipped, not passed.
skip() {
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
}

diag() {
	sed 's/^/# /' <<<"$*"
}

# bail REASON: stop the test program here, as a failure.
bail() {
	not_ok "$*"
	echo "1..$tap_n"
	exit 1
}

# check NAME COMMAND...: ok when the command succeeds; returns its
# success, so that `check ... || diag ...` can say more.
check() {
	local name=$1
	shift
	if "$@"; then
		ok "$name"
		return 0
	fi
	not_ok "$name"
	return 1
}

# require NAME COMMAND...: as check, but what follows needs it: a
# failure ends the program.
require() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else bail "$name"; fi
}

# The plan; the status says whether everything passed.
tap_done() {
	echo "1..$tap_n"
	[ "$tap_failed" -eq 0 ]
}
