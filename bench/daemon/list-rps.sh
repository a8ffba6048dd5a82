#!/bin/bash
# list-rps.sh - requests per second of vm.list with 100 VMs.
#
# Starts hvsim (2 nodes x 1 GiB, real memory) and vmbuildd in a fresh
# temporary directory, then measures with vmbd-rpcload (closed loop,
# 1 and 4 connections, SECONDS_PER_RUN each, medians of ROUNDS rounds):
#   server.hello          (baseline: framing and dispatch only)
#   vm.list with 0 VMs
#   vm.list with 100 VMs  (100 x 8 MiB guests built through vm.create)
#   GET /metrics          (one Prometheus scrape, kept-alive HTTP/1.1)
# and prints each figure and its ratio to the baseline of the same run.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$top/build/bin}
HVSIM=${HVSIM:-$BIN/hvsim}
VMBUILDD=${VMBUILDD:-$BIN/vmbuildd}
RPCLOAD=${RPCLOAD:-$BIN/vmbd-rpcload}
KERNEL=$top/build/guest/hello.elf
NVMS=${NVMS:-100}
SECS=${SECONDS_PER_RUN:-2}

run=$(mktemp -d "${TMPDIR:-/tmp}/vmbd-bench.XXXXXX")
hv_pid= d_pid=
cleanup() {
	[ -n "$d_pid" ] && kill "$d_pid" 2>/dev/null && wait "$d_pid" 2>/dev/null
	[ -n "$hv_pid" ] && kill "$hv_pid" 2>/dev/null && wait "$hv_pid" 2>/dev/null
	rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for b in "$HVSIM" "$VMBUILDD" "$RPCLOAD" "$KERNEL"; do
	[ -e "$b" ] || { echo "missing $b (run make bench)"; exit 1; }
done
"$HVSIM" --socket "$run/hv.sock" --nodes 2 --cpus-per-node 2 \
	--mem-per-node 1G --backing real >"$run/hvsim.log" 2>&1 &
hv_pid=$!
for _ in $(seq 300); do [ -S "$run/hv.sock" ] && break; sleep 0.05; done
mport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$VMBUILDD" --foreground --metrics "127.0.0.1:$mport" --hypervisor "sim:$run/hv.sock" \
	--socket "$run/c.sock" --state-dir "$run/state" \
	--image-dir "$(dirname "$KERNEL")" >"$run/d.log" 2>&1 &
d_pid=$!
for _ in $(seq 300); do [ -S "$run/c.sock" ] && break; sleep 0.05; done
[ -S "$run/c.sock" ] || { echo "vmbuildd did not start"; cat "$run/d.log"; exit 1; }

# measure METHOD CLIENTS: show the load client's line, return the rps.
exec 3>&1
measure() {
	local out
	if [ "$1" = scrape ]; then
		out=$("$RPCLOAD" --http "127.0.0.1:$mport" --clients "$2" \
			--seconds "$SECS")
	else
		out=$("$RPCLOAD" --socket "$run/c.sock" --method "$1" \
			--clients "$2" --seconds "$SECS")
	fi || { echo "load failed: $out" >&2; exit 1; }
	echo "  $out" >&3
	sed -n 's/.* rps=\([0-9]*\) .*/\1/p' <<<"$out"
}

# Rounds interleave the figures, and each is the median of its rounds,
# so that a burst of noise on this shared machine hits both alike.
ROUNDS=${ROUNDS:-3}
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "no VMs ($ROUNDS rounds):"
h=() e=()
for _ in $(seq "$ROUNDS"); do
	h+=("$(measure server.hello 1)")
	e+=("$(measure vm.list 1)")
done
empty1=$(echo "${e[*]}" | median)

python3 - "$run/c.sock" "$KERNEL" "$NVMS" <<'PY' || exit 1
import json, socket, sys
path, kernel, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rwb")
for i in range(n):
    cfg = 'name = "b%03d"\ntype = "pvh"\nmemory = 8\nvcpus = 1\n' \
          'kernel = "%s"\n' % (i, kernel)
    f.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": "vm.create",
                         "params": {"config": cfg, "wait": True}}) +
             "\n").encode())
    f.flush()
    r = json.loads(f.readline())
    if "result" not in r:
        sys.exit("vm.create b%03d: %r" % (i, r))
f.write(b'{"jsonrpc":"2.0","id":"l","method":"vm.list"}\n')
f.flush()
vms = json.loads(f.readline())["result"]["vms"]
print("created %d VMs; vm.list reply holds %d" % (n, len(vms)))
if len(vms) != n:
    sys.exit(1)
PY

echo "$NVMS VMs ($ROUNDS rounds):"
h1=() h4=() l1=() l4=() m1=()
for _ in $(seq "$ROUNDS"); do
	h1+=("$(measure server.hello 1)")
	l1+=("$(measure vm.list 1)")
	m1+=("$(measure scrape 1)")
	h4+=("$(measure server.hello 4)")
	l4+=("$(measure vm.list 4)")
done
hello1=$(echo "${h1[*]}" | median)
hello4=$(echo "${h4[*]}" | median)
list1=$(echo "${l1[*]}" | median)
list4=$(echo "${l4[*]}" | median)
scrape1=$(echo "${m1[*]}" | median)

awk -v h1="$hello1" -v h4="$hello4" -v e1="$empty1" -v l1="$list1" \
    -v l4="$list4" -v m1="$scrape1" -v n="$NVMS" 'BEGIN {
	printf "vm.list, %d VMs, 1 client:  %d requests/s (%.2f of server.hello, %.2f of an empty list)\n", n, l1, l1 / h1, l1 / e1
	printf "vm.list, %d VMs, 4 clients: %d requests/s (%.2f of server.hello with 4 clients)\n", n, l4, l4 / h4
	printf "GET /metrics, %d VMs, 1 client: %d scrapes/s, %.0f us each (%.2f of vm.list)\n", n, m1, 1e6 / m1, m1 / l1
}'
