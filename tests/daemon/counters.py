#!/usr/bin/env python3
"""counters.py - every companion counter of libvmbuild/counters.def shows
up in host.counters, in /metrics (memory in bytes) and in `vmctl stats`
(table and --json).

The list comes from the table itself (build/tests/lib/test_counters
--list: group, key, metric, labels, scale), so a counter added there is
checked here without editing this file.
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

LIST = os.path.join(TOP, BUILD, "tests", "lib", "test_counters")

p = subprocess.run([LIST, "--list"], capture_output=True, text=True)
rows = [line.split("\t") for line in p.stdout.splitlines()]
ok(p.returncode == 0 and len(rows) > 0 and all(len(r) == 5 for r in rows),
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


t_read = time.monotonic()
counters = c.result("host.counters")
missing = ["%s.%s" % (g, k) for g, k, _, _, _ in rows
           if not is_count(lookup(counters, g, k))]
ok(not missing, "host.counters has every counter as a count",
   "missing: %s\n%s" % (missing, counters))
groups = []
for g, _, _, _, _ in rows:
    if g not in groups:
        groups.append(g)
ok(list(counters) == groups, "host.counters has the table's groups, in "
   "its order", list(counters))

# A scrape renders the daemon's snapshot (refreshed every 2 s): wait for
# one taken after the counts above were read (both clocks are
# CLOCK_MONOTONIC), so that its values lie between them and the next.
for _ in range(300):
    t_scrape = time.monotonic()
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=30) as r:
        text = r.read().decode()
    age = re.search(r"^vmbuild_snapshot_age_seconds (\S+)$", text, re.M)
    if age and t_scrape - float(age.group(1)) > t_read:
        break
    time.sleep(0.1)
after = c.result("host.counters")
missing, wrong = [], []
for g, k, metric, labels, scale in rows:
    if metric == "-":
        continue    # a sum: Prometheus sums the labelled series
    series = metric + ("{%s}" % labels if labels else "")
    m = re.search(r"^%s (\d+)$" % re.escape(series), text, re.M)
    if not m or "# TYPE %s counter\n" % metric not in text:
        missing.append(series)
        continue
    # In the metric's unit (pages are bytes there), between the counts
    # read before and after the scrape.
    v, scale = int(m.group(1)), int(scale)
    if v % scale or not (lookup(counters, g, k) * scale <= v <=
                         lookup(after, g, k) * scale):
        wrong.append("%s %d (scale %d, counts %s..%s)" % (
            series, v, scale, lookup(counters, g, k), lookup(after, g, k)))
ok(not missing, "/metrics has every counter as a series of a counter "
   "family", "missing: %s" % missing)
ok(not wrong, "/metrics has each counter's value in its metric's unit "
   "(memory in bytes)", "\n".join(wrong))
ok(not re.search(r"^vmbuild_\w*pages", text, re.M),
   "no family counts pages")

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
missing = ["%s %s" % (g, k) for g, k, _, _, _ in rows if (g, k) not in seen]
ok(p.returncode == 0 and not missing, "vmctl stats shows every counter "
   "with its value", "missing: %s\n%s%s" % (missing, p.stdout, p.stderr))

p = subprocess.run([os.path.join(BIN, "vmctl"), "--json", "stats"],
                   capture_output=True, text=True, env=env, timeout=60)
try:
    js = json.loads(p.stdout)
except ValueError:
    js = {}
missing = ["%s.%s" % (g, k) for g, k, _, _, _ in rows
           if not is_count(lookup(js, g, k))]
ok(p.returncode == 0 and not missing, "vmctl --json stats has every counter",
   "missing: %s\n%s%s" % (missing, p.stdout, p.stderr))
done()
