#!/usr/bin/env python3
"""counters.py - every companion counter of libvmbuild/counters.def shows
up in host.counters, in /metrics and in `vmctl stats` (table and --json).

The list comes from the table itself (build/tests/lib/test_counters
--list: group, key, metric, labels), so a counter added there is checked
here without editing this file.
"""
import os
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

LIST = os.path.join(TOP, BUILD, "tests", "lib", "test_counters")

p = subprocess.run([LIST, "--list"], capture_output=True, text=True)
rows = [line.split("\t") for line in p.stdout.splitlines()]
ok(p.returncode == 0 and len(rows) > 0 and all(len(r) == 4 for r in rows),
   "the table lists its counters (%d)" % len(rows), p.stdout + p.stderr)

port = free_port()
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M"],
         ["--metrics", "127.0.0.1:%d" % port])
h.start_daemon()
c = h.client()
c.result("vm.create", {"config": guest_cfg("c1", 32), "wait": True})


def lookup(tree, group, key):
    v = tree.get(group) if isinstance(tree, dict) else None
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


counters = c.result("host.counters")
missing = ["%s.%s" % (g, k) for g, k, _, _ in rows
           if not is_count(lookup(counters, g, k))]
ok(not missing, "host.counters has every counter as a count",
   "missing: %s\n%s" % (missing, counters))
groups = []
for g, _, _, _ in rows:
    if g not in groups:
        groups.append(g)
ok(list(counters) == groups, "host.counters has the table's groups, in "
   "its order", list(counters))

with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                            timeout=30) as r:
    text = r.read().decode()
missing = []
for g, k, metric, labels in rows:
    if metric == "-":
        continue    # a sum: Prometheus sums the labelled series
    series = metric + ("{%s}" % labels if labels else "")
    if not re.search(r"^%s \d+$" % re.escape(series), text, re.M) or \
            "# TYPE %s counter\n" % metric not in text:
        missing.append(series)
ok(not missing, "/metrics has every counter as a series of a counter "
   "family", "missing: %s" % missing)

env = dict(os.environ, VMBUILD_SOCKET=h.sock)
p = subprocess.run([os.path.join(BIN, "vmctl"), "stats", "--interval", "0"],
                   capture_output=True, text=True, env=env, timeout=60)
seen, group = set(), None
for line in p.stdout.splitlines()[1:]:
    f = line.split()
    if f and f[0] in groups:
        group, f = f[0], f[1:]
    if len(f) >= 2 and re.fullmatch(r"\d+", f[1]):
        seen.add((group, f[0]))
missing = ["%s %s" % (g, k) for g, k, _, _ in rows if (g, k) not in seen]
ok(p.returncode == 0 and not missing, "vmctl stats shows every counter "
   "with its value", "missing: %s\n%s%s" % (missing, p.stdout, p.stderr))

p = subprocess.run([os.path.join(BIN, "vmctl"), "--json", "stats"],
                   capture_output=True, text=True, env=env, timeout=60)
try:
    js = json.loads(p.stdout)
except ValueError:
    js = {}
missing = ["%s.%s" % (g, k) for g, k, _, _ in rows
           if not is_count(lookup(js, g, k))]
ok(p.returncode == 0 and not missing, "vmctl --json stats has every counter",
   "missing: %s\n%s%s" % (missing, p.stdout, p.stderr))
done()
