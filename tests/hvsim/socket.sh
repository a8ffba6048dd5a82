#!/bin/bash
# socket.sh - integration tests of hvsim over its socket.
#
# Starts five hvsim instances in a fresh directory (real memory with boot
# scrub; two small ones without background scrubbing, in batch and alloc
# flush mode; a phantom 8-node 2 TiB host; this machine's topology with
# inline scrubbing only and the boot scrub on) and runs the client program
# against them.  They are started, and killed on exit, by the tests'
# launcher (tests/harness/stack.sh).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/tap.sh"
. "$top/tests/harness/stack.sh"
hvsim=${HVSIM:-$top/${VMB_BUILD:-build}/bin/hvsim}	# HVSIM=... to test another build
export HVSIM=$hvsim
client=$top/${VMB_BUILD:-build}/tests/hvsim/socket_client
dir=$(mktemp -d)
cleanup() {
	stack_close
	# HVSIM_KEEP_LOGS=DIR keeps hvsim's stderr (e.g. sanitizer reports).
	[ -n "${HVSIM_KEEP_LOGS:-}" ] && cp "$dir"/*.log "$HVSIM_KEEP_LOGS"/
	rm -rf "$dir"
}
trap cleanup EXIT
stack_open "$dir" || bail "the stack's supervisor starts"

# start NAME ARGS...: hvsim on $dir/NAME.sock, once it serves.
start() {
	local name=$1; shift
	stack_hvsim --name "$name" -- "$@" || bail "hvsim ($name) starts"
	echo "$VMB_HV_PID" >"$dir/$name.pid"
}

start real --nodes 2 --cpus-per-node 4 --threads-per-core 2 \
	--mem-per-node 128M --backing real
start batch --nodes 2 --cpus-per-node 8 --threads-per-core 2 \
	--mem-per-node 128M --backing real --scrub-workers 0 --no-boot-scrub \
	--flush-mode batch --preempt-pages 16384
start alloc --nodes 2 --cpus-per-node 8 --threads-per-core 2 \
	--mem-per-node 128M --backing real --scrub-workers 0 --no-boot-scrub \
	--flush-mode alloc --preempt-pages 16384
start phantom --nodes 8 --cpus-per-node 16 --threads-per-core 2 \
	--mem-per-node 256G --backing phantom
start inline --topology host --mem-per-node 32M --backing real \
	--scrub-workers 0

"$client" "$dir" "$(cat "$dir/phantom.pid")"
rc=$?
# Every instance must still be alive after all the bad requests.
for s in real batch alloc phantom inline; do
	check "hvsim ($s) still running at the end" \
		kill -0 "$(cat "$dir/$s.pid")" 2>/dev/null ||
		diag "$(cat "$dir/$s.log")"
done
[ "$tap_failed" -eq 0 ] || rc=1
exit $rc
