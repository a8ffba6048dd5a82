#!/bin/bash
# hypervisor/xen/cost/run.sh TREE [BOOTS] - what the series' always-on
# counters cost populate_physmap, measured in the lab (QEMU, TCG).
#
# TREE: a Debian 4.17 tree with the whole series applied and built in
# place (check-4.17.sh's OUT/debian).  Its xen.gz is build A (counters
# on); build B is the same tree with mm_stat_add() compiled to nothing
# (xen/include/xen/mm-stats.h, put back afterwards).  Each build is then
# booted BOOTS times (default 2), alternately, through tests/lab/run.sh,
# and bench-populate runs in dom0; its lines are printed per boot.
# Needs build/lab/debs and build/lab/root (make check-xen), and no other
# lab running: the figures are times.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)
tree=$(cd "${1:?usage: run.sh TREE [BOOTS]}" && pwd)
boots=${2:-2}
out=$top/build/xen/cost
h=$tree/xen/include/xen/mm-stats.h
mkdir -p "$out"
gcc -O2 -Wall -Werror -o "$out/bench-populate" "$here/bench-populate.c" -lxenctrl
printf '%s\n' 'echo "MARK begin step=cost"' \
    '/usr/local/bin/bench-populate 2>&1 | sed "s/^/COST| /"' \
    'echo "MARK step=cost rc=0 secs=0"' > "$out/cost.sh"
make -s -C "$tree/xen" -j"$(nproc)" && cp "$tree/xen/xen.gz" "$out/xen-A.gz"
cp "$h" "$out/mm-stats.h.orig"
trap 'cp "$out/mm-stats.h.orig" "$h"' EXIT
sed -i 's|^#define mm_stat_add(item, n) .*|#define mm_stat_add(item, n) ((void)(item), (void)(n))|' "$h"
grep -q '((void)(item), (void)(n))' "$h" || { echo "run.sh: mm_stat_add not found in $h"; exit 1; }
make -s -C "$tree/xen" -j"$(nproc)" && cp "$tree/xen/xen.gz" "$out/xen-B.gz"
cp "$out/mm-stats.h.orig" "$h"
cd "$top"
for n in $(seq "$boots"); do
	for v in A B; do
		env LAB_DIR="$out/lab-$v$n" LAB_DEBS=build/lab/debs \
		    LAB_ROOT=build/lab/root LAB_STEPS=cost LAB_TESTS= LAB_XEN="$out/xen-$v.gz" \
		    LAB_EXTRA_FILES="$out/cost.sh:/etc/lab/steps/cost.sh $out/bench-populate:/usr/local/bin/bench-populate" \
		    tests/lab/run.sh > "$out/lab-$v$n.log" 2>&1 || true
		echo "== build $v (counters $([ $v = A ] && echo on || echo off)), boot $n"
		grep -a 'COST|' "$out/lab-$v$n.log" | sed 's/^.*COST| //'
	done
done
