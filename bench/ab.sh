#!/bin/bash
# ab.sh - two builds' figures side by side, rounds alternating.
#
#   bench/ab.sh OLD_DIR NEW_DIR smallvms|metrics [ROUNDS] [SECONDS]
#
# OLD_DIR and NEW_DIR are build directories (each with bin/hvsim,
# bin/vmbuildd and bench/rpcload, e.g. a copy of build/ taken before a
# change).  Each round runs the old stack, then the new one, each fresh:
#   smallvms  benchmark 5's phantom figures: 128 MiB guests created and
#             destroyed by 1 and by 4 clients, SECONDS (3) each, with the
#             CPU time vmbuildd and hvsim spent per create+destroy
#   metrics   benchmark 6's scrape: GET /metrics in gzip with AB_VMS (10;
#             the headline keys are taken at 1000) VMs, by 1 and by 100
#             clients, SECONDS (1) each
# ROUNDS (5).  Prints the raw JSON lines (with the round, the build and
# the load average at the time) to $BENCH_RESULTS/ab-MODE.jsonl, then
# medians with their spread and each round's new/old ratio: the
# machine's load moves between rounds, not within one pair.
set -u
old=$(cd "${1:?OLD_DIR}" && pwd) new=$(cd "${2:?NEW_DIR}" && pwd)
mode=${3:?smallvms|metrics} rounds=${4:-5}
case $mode in
smallvms) secs=${5:-3} ;;
metrics) secs=${5:-1} ;;
*) echo "ab.sh: no mode $mode" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
out=${BENCH_RESULTS:-$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-ab.XXXXXX")}/ab-$mode.jsonl
mkdir -p "$(dirname "$out")"
export BENCH_RESULTS=$(dirname "$out")
: >"$out"
for r in $(seq "$rounds"); do
	for v in old new; do
		dir=$old
		[ "$v" = new ] && dir=$new
		HVSIM=$dir/bin/hvsim VMBUILDD=$dir/bin/vmbuildd \
		    AB_RPCLOAD=$dir/bench/rpcload AB_TAG="\"build\":\"$v\",\"round\":$r" \
		    AB_OUT=$out AB_SECS=$secs AB_VMS=${AB_VMS:-10} \
		    bash "$top/bench/lib/ab-round.sh" "$mode" ||
			{ echo "ab.sh: round $r ($v) failed" >&2; exit 1; }
	done
done
echo "# raw: $out"
"${PYTHON:-python3}" - "$out" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for c in sorted({x["clients"] for x in rows}):
    med = {}
    for v in ("old", "new"):
        r = [x for x in rows if x["build"] == v and x["clients"] == c]
        rps = [x["rps"] for x in r]
        p99 = [x["p99_us"] / 1000 for x in r]
        med[v] = st.median(rps)
        cpu = [x["cpu_ms_per_pair"] for x in r if "cpu_ms_per_pair" in x]
        sc = [x["syscalls_per_pair"] for x in r if "syscalls_per_pair" in x]
        print("%3d clients %s: %.0f/s [%.0f..%.0f], p99 %.1f ms [%.1f..%.1f]"
              "%s%s, load %s" % (c, v, st.median(rps), min(rps), max(rps),
              st.median(p99), min(p99), max(p99),
              ", CPU %.3f ms a pair [%.3f..%.3f]" % (st.median(cpu),
              min(cpu), max(cpu)) if cpu else "",
              ", %.1f system calls a pair [%.1f..%.1f]" % (st.median(sc),
              min(sc), max(sc)) if sc else "",
              " ".join("%.1f" % x["load"] for x in r)))
    pairs = []
    for rd in sorted({x["round"] for x in rows}):
        o = [x for x in rows if x["build"] == "old" and x["clients"] == c
             and x["round"] == rd]
        n = [x for x in rows if x["build"] == "new" and x["clients"] == c
             and x["round"] == rd]
        if o and n:
            pairs.append(n[0]["rps"] / o[0]["rps"])
    print("    new/old rate by round %s: median %.2f" % (
        " ".join("%.2f" % p for p in pairs), st.median(pairs)))
PY
