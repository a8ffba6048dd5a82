#!/bin/bash
# run.sh - hvsim benchmarks (make bench).
#
# The same populate workload on a modelled 16-CPU host (2 nodes x 8 CPUs,
# 2 threads per core) with real memory, once with --flush-mode batch and
# once with --flush-mode alloc; then hvsim's background scrub against a
# plain non-temporal zeroing loop over the same pages; then a populate
# that must take dirty pages right after a destroy, against the same
# populate of clean memory and one thread's plain NT zeroing of the same
# bytes (after the boot scrub, and without one: memory never touched
# before); and a populate during the boot scrub.  Memory per node defaults
# to 3G (HVSIM_BENCH_MEM; 6 GiB of real memory in all), the dirty
# populate to 4 GiB (HVSIM_BENCH_DIRTY_GIB), the boot one to 2 GiB
# (HVSIM_BENCH_BOOT_GIB); the two-node populate of one domain to
# HVSIM_BENCH_DIRTY_GIB in all (bench_client par).  Prints the figures and their ratios, measured
# in this run.  HVSIM_BENCH_HVSIM runs another hvsim binary (to compare).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
hvsim=${HVSIM_BENCH_HVSIM:-$top/build/bin/hvsim}
client=$top/build/bench/hvsim/bench_client
mem=${HVSIM_BENCH_MEM:-3G}
dgib=${HVSIM_BENCH_DIRTY_GIB:-4}
bgib=${HVSIM_BENCH_BOOT_GIB:-2}
rounds=${HVSIM_BENCH_ROUNDS:-5}
dir=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

extra=
run() {	# run MODE CLIENT-ARGS...  ($extra: more hvsim options)
	local mode=$1; shift
	"$hvsim" --socket "$dir/$mode.sock" --nodes 2 --cpus-per-node 8 \
		--threads-per-core 2 --mem-per-node "$mem" --backing real \
		--flush-mode "$mode" $extra 2>"$dir/$mode.log" &
	pid=$!
	"$client" "$@" || { cat "$dir/$mode.log"; exit 1; }
	kill "$pid"; wait "$pid" 2>/dev/null; pid=
}

echo "# hvsim: 2 nodes x 8 CPUs (2 threads/core), $mem real memory per node"
b=$(run batch populate "$dir/batch.sock" "$rounds") || exit 1
echo "$b"
a=$(run alloc populate "$dir/alloc.sock" "$rounds") || exit 1
echo "$a"
s=$(run batch scrub "$dir/batch.sock") || exit 1
echo "$s"
d=$(run batch dirty "$dir/batch.sock" "$dgib" "$rounds") || exit 1
echo "$d"
# Without boot scrub nothing has touched the memory before: one round.
extra=--no-boot-scrub
u=$(run batch dirty "$dir/batch.sock" "$dgib" 1) || exit 1
extra=
echo "$u"
o=$(run batch boot "$dir/batch.sock" "$bgib") || exit 1
echo "$o"
# One domain on two nodes at once (engine) against node after node
# (libxl), on dirty memory: inline only, then with background workers.
extra="--scrub-workers 0"
p0=$(run batch par "$dir/batch.sock" "$((dgib / 2))" "$rounds") || exit 1
extra=
echo "$p0 (--scrub-workers 0)"
pw=$(run batch par "$dir/batch.sock" "$((dgib / 2))" "$rounds") || exit 1
echo "$pw (scrub workers)"

get() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
awk -v bg="$(get "$b" gibps)" -v ag="$(get "$a" gibps)" \
    -v be="$(get "$b" evaluations)" -v ae="$(get "$a" evaluations)" \
    -v bf="$(get "$b" flushes)" -v af="$(get "$a" flushes)" \
    -v gib="$(get "$b" gib)" \
    -v hs="$(get "$s" hvsim_gbps)" -v nt="$(get "$s" nt_gbps)" \
    -v n1="$(get "$s" nt1_gbps)" -v th="$(get "$s" nt_threads)" \
    -v nw="$(get "$s" ntw_gbps)" -v w="$(get "$s" hvsim_workers)" \
    -v dg="$(get "$d" gib)" -v ds="$(get "$d" dirty_s)" \
    -v cs="$(get "$d" clean_s)" -v ns="$(get "$d" nt1_s)" \
    -v di="$(get "$d" inline_pages)" -v db="$(get "$d" background_pages)" \
    -v us="$(get "$u" dirty_s)" -v uc="$(get "$u" clean_s)" \
    -v un="$(get "$u" nt1_s)" -v ui="$(get "$u" inline_pages)" \
    -v ub="$(get "$u" background_pages)" \
    -v og="$(get "$o" gib)" -v os="$(get "$o" populate_s)" \
    -v oi="$(get "$o" inline_pages)" -v ob="$(get "$o" boot_pages_meanwhile)" \
    -v of="$(get "$o" nt_first_touch_s)" -v ot="$(get "$o" nt_touched_s)" 'BEGIN {
	printf "populate (%s GiB, 2 MiB extents, best of rounds): batch %.2f GiB/s, " \
	    "alloc %.2f GiB/s, batch/alloc %.1fx\n", gib, bg, ag, bg / ag
	printf "filter evaluations: batch %d, alloc %d (%.0fx fewer); " \
	    "flushes: batch %d, alloc %d\n", be, ae, ae / (be ? be : 1), bf, af
	best = nt; bt = th
	if (n1 > best) { best = n1; bt = 1 }
	if (nw > best) { best = nw; bt = w }
	printf "scrub: hvsim %.2f GB/s (%d workers); plain NT loop %.2f GB/s " \
	    "(%d threads), %.2f (1 thread), %.2f (%d threads); " \
	    "hvsim/best plain = %.2f\n", hs, w, nt, th, n1, nw, w, hs / best
	printf "populate of %s GiB right after a destroy (dirty): %.3f s " \
	    "(%d pages inline, %d scrubbed in the background meanwhile); " \
	    "same populate on clean memory %.6f s; 1-thread NT zeroing of " \
	    "the same bytes %.3f s; dirty/clean %.0fx, dirty/NT %.2f\n", \
	    dg, ds, di, db, cs, ns, ds / cs, ds / ns
	printf "the same on memory never touched before (--no-boot-scrub, " \
	    "1 round): %.3f s (%d inline, %d background); clean %.6f s; " \
	    "NT %.3f s; dirty/clean %.0fx, dirty/NT %.2f\n", \
	    us, ui, ub, uc, un, us / uc, us / un
	printf "populate of %s GiB during the boot scrub: %.3f s (%d pages " \
	    "inline, %d by the boot scrub meanwhile); 1-thread NT zeroing " \
	    "of as many fresh memfd bytes %.3f s (first touch), %.3f s " \
	    "(again); populate/first-touch %.2f, populate/NT %.2f\n", \
	    og, os, oi, ob, of, ot, os / of, os / ot
}'
