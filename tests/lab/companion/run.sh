#!/bin/bash
# tests/lab/companion/run.sh - `make check-xen-companion`: the companion
# hypercalls in a real Xen (hypervisor/xen's series), booted with the lab's
# recipe (tests/lab/run.sh and its settings), cross-checked with hvsim.
#
# Four lab runs, each in its own LAB_DIR under $CMP_DIR (the .debs are
# shared with `make check-xen` in build/lab/debs), then hvsim, then the
# judgement (compare.py):
#
#   numa        build/xen/xen.gz on two NUMA nodes (4 CPUs, 2 x 3 GiB): boot
#               scrub, a 512 MiB guest built and destroyed, one re-built over
#               its pages (dom0.sh, CMP_MODE=numa)
#   shadow      build/xen/xen-perfc.gz without HAP (-cpu ...,-npt) and
#               shadow-flood=3 on Xen's line (the heuristic is off by
#               default): the hello guest rewrites its page tables
#               (ptwrite=N); Xen's perf counters are the reference; then
#               shadow-flood=0 at runtime; then the series' test of its
#               first patch, tools/tests/populate-flush (a perf counter)
#   shadow-off  build/xen/xen.gz without HAP, shadow-flood=0 on Xen's line
#   stock       Debian's Xen: the same commands must answer "unavailable"
#   sim         the numa sequence on hvsim, modelled to the numa run's
#               topology (sim.sh)
#
# Settings: CMP_DIR (build/lab-companion), CMP_RUNS (the runs above, in
# order), CMP_XEN and CMP_XEN_PERFC (build/xen/xen.gz, xen-perfc.gz),
# CMP_LIVE (a directory with the series' test-mm-stats and the patched
# libxenctrl it needs, from hypervisor/xen/check-4.17.sh: the numa run
# runs it; unset, it is not run: CI builds no patched tools),
# CMP_MB (512), CMP_PTWRITE (1000 rounds), CMP_SCRUB_TIMEOUT (900 s),
# CMP_TIMEOUT (per run, 1500 s), CMP_DIRTY (1: the numa run ends with
# the dirty-memory sequence of tests/lab/xenbench.sh, xl against vmbuild,
# some 45 s a guest under TCG, ten guests with LAB_DIRTY_ONECPU=3; 0:
# not).  Exit 0 only when every run passed the lab's own judge and every
# check of compare.py passed; its last line is
#   companion: scrubbed_bytes=N filter_evaluations=N flushes_issued=N
#   batches=N write_flood=N early=N
set -uo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$top" || exit 2
here=tests/lab/companion
CMP_DIR=${CMP_DIR:-build/lab-companion}
CMP_RUNS=${CMP_RUNS:-numa shadow shadow-off stock sim}
CMP_MB=${CMP_MB:-512}
CMP_PTWRITE=${CMP_PTWRITE:-1000}
CMP_SCRUB_TIMEOUT=${CMP_SCRUB_TIMEOUT:-900}
CMP_TIMEOUT=${CMP_TIMEOUT:-1500}
CMP_XEN=${CMP_XEN:-build/xen/xen.gz}
CMP_XEN_PERFC=${CMP_XEN_PERFC:-build/xen/xen-perfc.gz}
t_start=${EPOCHREALTIME/./}

log() {
	local d=$(( (${EPOCHREALTIME/./} - t_start) / 100000 ))
	printf '[companion %d.%ds] %s\n' $((d / 10)) $((d % 10)) "$*" >&2
}

for f in $CMP_XEN $CMP_XEN_PERFC build/bin/vmbuildd \
    build/bin/vmctl build/bin/hvsim build/guest/hello.elf; do
	[ -f "$f" ] || { log "missing $f (make all; make -C hypervisor/xen stock perfc)"; exit 2; }
done
mkdir -p "$CMP_DIR" || exit 2
status=$CMP_DIR/status
: > "$status"

# The series' own test of its first patch (tools/tests/populate-flush),
# as the 4.17 series has it: the source taken from its patch, built
# against Debian's libxenctrl (it needs nothing the series adds), run by
# the shadow run, whose Xen (xen-perfc.gz) has the perf counter it reads.
pf=$CMP_DIR/test-populate-flush
pfp=$(grep -l '^+++ b/tools/tests/populate-flush/test-populate-flush.c$' \
    $(sed -e '/^#/d' -e '/^[[:space:]]*$/d' -e 's|^|hypervisor/xen/|' hypervisor/xen/series))
[ -n "$pfp" ] || { log "no patch of the series adds tools/tests/populate-flush"; exit 2; }
python3 - "$pfp" tools/tests/populate-flush/test-populate-flush.c > "$pf.c" <<'EOF' ||
import re, sys
lines = open(sys.argv[1]).read().split('\n')
i = lines.index('+++ b/' + sys.argv[2])
n = int(re.match(r'@@ -0,0 \+1,(\d+) @@', lines[i + 1]).group(1))
body = lines[i + 2:i + 2 + n]
assert all(l.startswith('+') for l in body), 'not a new file'
print('\n'.join(l[1:] for l in body))
EOF
    { log "$pfp: no new file tools/tests/populate-flush/test-populate-flush.c in it"; exit 2; }
gcc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$pf" "$pf.c" -lxenctrl ||
    { log "test-populate-flush from $pfp does not build"; exit 2; }

# lab NAME MODE KEY=VALUE...: one boot through tests/lab/run.sh.
lab() {
	local name=$1 mode=$2 dir=$CMP_DIR/$1 t0 rc extra
	shift 2
	mkdir -p "$dir"
	cat > "$dir/companion.conf" <<EOF
CMP_MODE=$mode
CMP_MB=$CMP_MB
CMP_SHADOW_MB=128
CMP_PTWRITE=$CMP_PTWRITE
CMP_SCRUB_TIMEOUT=$CMP_SCRUB_TIMEOUT
CMP_RUNTIME_OFF=${CMP_RUNTIME_OFF:-0}
CMP_CFG_EXTRA='${CMP_CFG_EXTRA:-}'
CMP_DIRTY=${CMP_DIRTY:-1}
CMP_LIVE=$([ -n "${CMP_LIVE:-}" ] && echo 1 || echo 0)
EOF
	extra="$here/dom0.sh:/etc/lab/steps/companion.sh"
	extra="$extra $dir/companion.conf:/etc/lab/steps/companion.conf"
	extra="$extra $CMP_DIR/root/usr/lib/xen-4.17/bin/xenperf:/usr/lib/xen-4.17/bin/xenperf"
	extra="$extra $pf:/usr/lib/xen-4.17/bin/test-populate-flush"
	[ -z "${CMP_LIVE:-}" ] || extra="$extra $CMP_LIVE/test-mm-stats:/opt/live/test-mm-stats
	    $CMP_LIVE/libxenctrl.so.4.17:/opt/live/libxenctrl.so.4.17"
	log "run $name: $*"
	t0=${EPOCHREALTIME/./}
	env LAB_DIR="$dir" LAB_DEBS=build/lab/debs LAB_ROOT="$CMP_DIR/root" \
	    LAB_STEPS=companion \
	    LAB_TESTS= LAB_TIMEOUT="$CMP_TIMEOUT" \
	    LAB_EXTRA_FILES="$extra" \
	    "$@" tests/lab/run.sh > "$dir/run.log" 2>&1
	rc=$?
	echo "$name rc=$rc secs=$(( (${EPOCHREALTIME/./} - t0) / 1000000 ))" >> "$status"
	log "run $name: rc=$rc ($(tail -n 1 "$dir/run.log"))"
	[ $rc = 0 ] || tail -n 40 "$dir/run.log" | sed "s/^/  $name| /" >&2
	return $rc
}

failed=""
for r in $CMP_RUNS; do
	case $r in
	numa)
		CMP_CFG_EXTRA='cpus = "nodes:1"' lab numa numa \
		    LAB_XEN=$CMP_XEN LAB_SMP=4 LAB_MEM=6144 LAB_NUMA=2 ;;
	shadow)
		CMP_CFG_EXTRA='hap = 0' CMP_RUNTIME_OFF=1 lab shadow shadow \
		    LAB_XEN=$CMP_XEN_PERFC LAB_CPU=max,-smap,-rdtscp,-npt \
		    LAB_XEN_EXTRA=shadow-flood=3 ;;
	shadow-off)
		CMP_CFG_EXTRA='hap = 0' lab shadow-off shadow \
		    LAB_XEN=$CMP_XEN LAB_CPU=max,-smap,-rdtscp,-npt \
		    LAB_XEN_EXTRA=shadow-flood=0 ;;
	stock)
		lab stock stock ;;
	sim)
		# The numa run's topology: nodes, CPUs per node, memory per node.
		topo=$(sed -n 's/^.*CMPJSON host rc=0 //p' "$CMP_DIR/numa/console.log" 2>/dev/null |
		    tr -d '\r' | python3 -c 'import json, sys
j = json.load(sys.stdin); n = j["nodes"]
mib = min(x["total_bytes"] for x in n) >> 20
print(len(n), max(x["nr_cpus"] for x in n), "%dM" % (mib - mib % 2))' 2>/dev/null)
		[ -n "$topo" ] || { log "sim: no host record from the numa run; modelling 2 x 2 CPUs x 3G"; topo="2 2 3072M"; }
		log "sim: hvsim $topo (nodes, CPUs per node, memory per node)"
		t0=${EPOCHREALTIME/./}
		$here/sim.sh "$CMP_DIR/sim.log" $topo "$CMP_MB" 'cpus = "nodes:1"' \
		    > "$CMP_DIR/sim.out" 2>&1
		rc=$?
		echo "sim rc=$rc secs=$(( (${EPOCHREALTIME/./} - t0) / 1000000 ))" >> "$status"
		[ $rc = 0 ] || { cat "$CMP_DIR/sim.out" >&2; false; } ;;
	*)
		log "unknown run $r"; false ;;
	esac || failed="$failed $r"
done
log "runs done in $(( (${EPOCHREALTIME/./} - t_start) / 1000000 ))s:$(sed 's/^/ /' "$status" | tr '\n' ';')"
[ -z "$failed" ] || log "runs that failed the lab's judge:$failed"
python3 "$here/compare.py" "$CMP_DIR" | tee "$CMP_DIR/report.txt"
crc=${PIPESTATUS[0]}
[ -z "$failed" ] && [ "$crc" = 0 ]
