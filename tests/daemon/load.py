#!/usr/bin/env python3
"""load.py - 500 clients at once for a bounded time (issue 12).

CLIENTS (default 500) connections each send requests one after the
other for SECONDS (default 8): mostly reads (vm.list, vm.info,
host.info, host.scrub, task.list, server.hello), and creates and
destroys of small VMs (hvsim with phantom memory, so that builds cost
little).  Every request must be answered exactly once (by its id; an
error such as "too many tasks" is an answer).

Three such runs after a warm-up run like them.  What the daemon holds
is measured after each, once every client has gone and every VM is
destroyed:

  descriptors  back to the count after the warm-up (its fewest over
               a few looks), not more, not counting connections to
               hvsim (the sim backend keeps up to 16 of those idle,
               however many the load needed);
  RSS          within RSS_SLACK_MIB (default 6) of the warm-up's, after
               every run: memory not given back would add up run after
               run.  The load's peak is 40-55 MiB here; the daemon gives
               freed memory back once quiet (malloc_trim, main.c).  What
               stays is what a daemon keeps by design (the 256 finished
               tasks task.get answers, which the warm-up fills) and
               malloc's per-thread arenas: build threads come and go,
               each taking an arena the last one left.  Measured: 1200
               builds in a row settle within 1.3 MiB, then stay flat;
               eight runs of this test (RUNS=8 SECONDS=5) settled at
               +1.1, +1.1, +2.2, +3.4, +3.0, +3.2, +3.2, +3.9 MiB over
               a warm-up of 14.0 MiB (peaks 39-52 MiB): a drift that
               levels off, not a leak.  That was with malloc's default
               arenas; beside a QEMU on 2 CPUs the settled RSS then
               varied from 12 to 21 MiB, and CI's run at 405a4f3 failed
               on it.  vmbuildd now keeps 2 arenas (main.c): 9.6 to
               12.3 MiB settled in four runs beside CI's QEMU.
"""
import asyncio
import collections
import json
import os
import random
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

CLIENTS = int(os.environ.get("CLIENTS", "500"))
SECONDS = float(os.environ.get("SECONDS", "8"))
RSS_SLACK = int(os.environ.get("RSS_SLACK_MIB", "6")) * MIB

# CLIENTS connections at once: a soft descriptor limit of 1024 (or less)
# must not decide the test; raise it to what the hard limit allows.
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
_want = CLIENTS + 256
if _soft != resource.RLIM_INFINITY and _soft < _want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (
        _want if _hard == resource.RLIM_INFINITY else min(_want, _hard),
        _hard))

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "64G",
          "--backing", "phantom"],
         ["--max-connections", str(CLIENTS + 50), "--max-tasks", "64"])
h.start_daemon()
pid = h.d.pid
ctl = h.client()


def hv_peers():
    """Inodes of the daemon's sockets connected to hvsim (ss -x)."""
    out = subprocess.run(["ss", "-xn"], capture_output=True,
                         text=True).stdout
    peers = set()
    for ln in out.splitlines():
        f = ln.split()
        if len(f) >= 8 and f[4] == h.hv_sock:
            peers.add(f[7])
    return peers


def fds_without_hv():
    # hvsim's sockets as ss lists them before and after the look at the
    # descriptors: one the sim backend opened in between is still its.
    hvs = hv_peers()
    fds = os.listdir("/proc/%d/fd" % pid)
    hvs |= hv_peers()
    n = 0
    for fd in fds:
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", t)
        if m and m.group(1) in hvs:
            continue
        n += 1
    return n


class Stats:
    def __init__(self):
        self.sent = 0
        self.answers = collections.Counter()   # by id, over all clients
        self.codes = collections.Counter()
        self.dup = 0
        self.lost = 0
        self.extra = 0


async def client(k, deadline, st, seq):
    reader, writer = await asyncio.open_unix_connection(h.sock,
                                                        limit=1 << 24)
    mine = []
    rng = random.Random(k)

    async def call(method, params=None):
        rid = "%d-%d" % (k, seq[k])
        seq[k] += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        writer.write((json.dumps(req) + "\n").encode())
        st.sent += 1
        while True:
            line = await reader.readline()
            if not line:
                st.lost += 1
                return None
            m = json.loads(line)
            if "id" not in m:
                continue
            st.answers[m["id"]] += 1
            if m["id"] != rid:
                st.extra += 1
                continue
            st.codes["ok" if "result" in m else m["error"]["code"]] += 1
            return m

    while time.monotonic() < deadline:
        x = rng.random()
        if x < 0.03:
            name = "l%d-%d" % (k, seq[k])
            r = await call("vm.create", {"guest": {
                "name": name, "memory": 16, "kernel": KERNEL},
                "wait": True})
            if r is not None and "result" in r:
                mine.append(name)
        elif x < 0.05 and mine:
            await call("vm.destroy", {"vm": mine.pop()})
        elif x < 0.35:
            await call("vm.list")
        elif x < 0.50 and mine:
            await call("vm.info", {"vm": rng.choice(mine)})
        elif x < 0.65:
            await call("host.info")
        elif x < 0.80:
            await call("host.scrub")
        elif x < 0.90:
            await call("task.list")
        else:
            await call("server.hello")
    for name in mine:
        await call("vm.destroy", {"vm": name})
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass


async def run(seconds):
    st = Stats()
    seq = [0] * CLIENTS
    deadline = time.monotonic() + seconds
    t0 = time.monotonic()
    await asyncio.gather(*(client(k, deadline, st, seq)
                           for k in range(CLIENTS)))
    return st, time.monotonic() - t0


def settle(want_fds=None, want_rss=None):
    """No client, no task running, no VM: then what the daemon holds.
    The daemon trims its heap once quiet for 2 s, and closes connections
    as its loop gets to them: on a busy machine either can take longer,
    so with targets given, wait (bounded) until both are met."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if not ctl.result("vm.list")["vms"] and \
                all(t["state"] != "running"
                    for t in ctl.result("task.list")["tasks"]):
            break
        time.sleep(0.2)
    time.sleep(5)
    # A loaded machine may keep the daemon from being quiet long enough
    # to trim for a while: wait long (a leak still fails, only later).
    end = time.monotonic() + 120
    while True:
        rss, _, cpu = proc_stat(pid)
        fds = fds_without_hv()
        if want_fds is None or time.monotonic() > end or \
                (fds <= want_fds and rss <= want_rss):
            return rss, fds, cpu
        time.sleep(0.5)


def baseline():
    """The warm-up's figures, settled: the fewest descriptors over a
    few looks (a connection the loop has not closed yet, or one a
    refresh holds for a moment, is not part of what it keeps)."""
    rss, fds, cpu = settle()
    for _ in range(6):
        time.sleep(0.5)
        r, f = proc_stat(pid)[0], fds_without_hv()
        if f < fds:
            rss, fds = r, f
    return rss, fds, cpu


st, secs = asyncio.run(run(SECONDS))
rss0, fd0, _ = baseline()
diag("warm-up: %d requests in %.1f s; then RSS %.1f MiB, %d descriptors "
     "(without hvsim's)" % (st.sent, secs, rss0 / MIB, fd0))
rows = []
for i in range(int(os.environ.get("RUNS", "3"))):
    st, secs = asyncio.run(run(SECONDS))
    peak = proc_stat(pid)[0]
    rss, fds, _ = settle(fd0, rss0 + RSS_SLACK if MEMORY_FIGURES else
                         float("inf"))
    answered = sum(1 for v in st.answers.values() if v == 1)
    dup = sum(1 for v in st.answers.values() if v > 1)
    rows.append((st.sent, secs, peak, rss, fds))
    diag("run %d: %d clients, %d requests in %.1f s (%.0f/s), answers %s; "
         "RSS %.1f MiB at the end of the load, %.1f MiB settled; %d "
         "descriptors" % (i + 1, CLIENTS, st.sent, secs, st.sent / secs,
                          dict(st.codes), peak / MIB, rss / MIB, fds))
    ok(st.sent > 0 and answered == st.sent and dup == 0 and st.lost == 0
       and st.extra == 0, "run %d: all %d requests answered exactly once"
       % (i + 1, st.sent), "answered %d, twice %d, lost %d, foreign %d" %
       (answered, dup, st.lost, st.extra))
    # More is a leak; fewer is something the warm-up still held (CI's
    # run beside a QEMU counted 16 after the warm-up, 15 after a run).
    ok(fds <= fd0, "run %d: descriptors back to %d (%d)" % (i + 1, fd0,
                                                              fds))
    if fds < fd0:
        diag("run %d: %d descriptors, %d fewer than after the warm-up"
             % (i + 1, fds, fd0 - fds))
    if MEMORY_FIGURES:
        ok(rss <= rss0 + RSS_SLACK, "run %d: RSS back within %d MiB of the "
           "warm-up's %.1f MiB (%.1f; %.1f at the end of the load)" %
           (i + 1, RSS_SLACK / MIB, rss0 / MIB, rss / MIB, peak / MIB))
    else:
        skip("run %d: RSS back" % (i + 1), "RSS under %s" % SANITIZER)
ctl.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
