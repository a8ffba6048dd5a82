#!/usr/bin/env python3
"""killloop.py - kill -9 vmbuildd at random points, ROUNDS times.

Each round starts the daemon on the same state directory, checks that
nothing was lost, starts an operation (a create, waited for or not, a
destroy, a pause or an unpause; creates and destroys write and remove
state records), and kills the daemon with SIGKILL after a random delay
of 0 to 60 ms, which lands anywhere from before the request is read to
after the reply: in placement, populate, loading, state writes,
destroys.  Every round, once the daemon is up again:

  - the daemon lists exactly the domains hvsim has, each with its domid
    and none "foreign" (every domain of ours has its record), none
    building, and no record without its domain;
  - every domain holds the memory its config asks for (no half-built
    domain survives a restart);
  - hvsim's free memory plus what the domains hold is all its memory:
    no page lost.

ROUNDS (default 50; `make soak` runs 1000) and SEED (default: random,
printed) in the environment.
"""
import collections
import os
import random
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

ROUNDS = int(os.environ.get("ROUNDS", "50"))
SEED = int(os.environ.get("SEED", str(random.randrange(1 << 30))))
rng = random.Random(SEED)
diag("%d rounds, SEED=%d" % (ROUNDS, SEED))

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
          "--backing", "real"])
hv = None
total = None
points = collections.Counter()
actions = collections.Counter()
failures = []
serial = 0


def last_event(log_text, since):
    """Where the kill landed, from the daemon's last log lines."""
    lines = log_text[since:].strip().splitlines()
    for ln in reversed(lines):
        for key, name in (("undo domain", "undo"), ("build .*: domain",
                                                     "build done"),
                          ("state: ", "state write"),
                          ("destroyed", "destroy done"),
                          ("vm.destroy", "destroy"), ("vm.pause", "pause"),
                          ("vm.unpause", "unpause"),
                          ("building ", "building"),
                          ("vm.create", "create request"),
                          ("ready:", "idle")):
            if re.search(key, ln):
                return name
    return "start"


def check(c, rnd):
    """The invariants, once no VM is building or being destroyed."""
    end = time.monotonic() + 30
    while True:
        vms = c.result("vm.list")["vms"]
        info = [c.result("vm.info", {"vm": v["name"]}) for v in vms]
        hostinfo = c.result("host.info")
        held = sum(v["memory_bytes"] or 0 for v in vms)
        recs = sorted(f[:-5] for f in os.listdir(h.state)
                      if f.endswith(".json"))
        problems = []
        if any(v["state"] in ("building", "destroying") for v in vms):
            problems.append("building/destroying: %s" % vms)
        if any(i["origin"] != "vmbuildd" for i in info):
            problems.append("foreign (record lost): %s" %
                            [i["name"] for i in info
                             if i["origin"] != "vmbuildd"])
        if any(v["id"] is None for v in vms):
            problems.append("no domid: %s" % vms)
        if sorted(i["uuid"] for i in info) != recs:
            problems.append("records %s, VMs %s" %
                            (recs, sorted(i["uuid"] for i in info)))
        for i in info:
            want = (i.get("config") or {}).get("memory_bytes")
            if i["memory_bytes"] != want:
                problems.append("%s holds %s bytes of %s" %
                                (i["name"], i["memory_bytes"], want))
        if hostinfo["free_bytes"] + held != total:
            problems.append("free %d + held %d != total %d" %
                            (hostinfo["free_bytes"], held, total))
        if not problems or time.monotonic() > end:
            break
        time.sleep(0.1)
    if problems:
        failures.append((rnd, problems))
    return vms


def act(c, vms):
    """Start one operation without waiting for it."""
    global serial
    names = [v["name"] for v in vms]
    choices = ["create", "create-wait"]
    if names:
        choices += ["destroy", "pause", "unpause"]
    if len(names) > 6:
        choices = ["destroy", "pause", "unpause"]
    what = rng.choice(choices)
    actions[what] += 1
    if what.startswith("create"):
        serial += 1
        mem = rng.choice((16, 32, 64, 128))
        p = {"config": guest_cfg("k%d" % serial, mem, rng.choice((1, 2))),
             "wait": what == "create-wait"}
        if rng.random() < 0.3:
            p["paused"] = True
        req = {"jsonrpc": "2.0", "id": 1, "method": "vm.create",
               "params": p}
    else:
        req = {"jsonrpc": "2.0", "id": 1, "method": "vm." + what,
               "params": {"vm": rng.choice(names)}}
    c.send_raw((json.dumps(req) + "\n").encode())


log_path = os.path.join(h.dir, "vmbuildd.log")
for rnd in range(1, ROUNDS + 1):
    h.start_daemon()
    c = h.client()
    if total is None:
        total = c.result("host.info")["total_bytes"]
    vms = check(c, rnd)
    since = os.path.getsize(log_path)
    act(c, vms)
    time.sleep(rng.uniform(0, 0.060))
    h.d.send_signal(signal.SIGKILL)
    h.d.wait()
    h.d = None
    c.close()
    with open(log_path, errors="replace") as f:
        f.seek(since)
        points[last_event(f.read(), 0)] += 1
h.start_daemon()
c = h.client()
check(c, ROUNDS + 1)
for v in c.result("vm.list")["vms"]:
    c.call("vm.destroy", {"vm": v["name"]})
end = time.monotonic() + 30
while c.result("host.info")["free_bytes"] != total and \
        time.monotonic() < end:
    time.sleep(0.1)
ok(c.result("host.info")["free_bytes"] == total,
   "after the rounds and destroying every VM, all memory is free")
diag("operations started: %s" % dict(actions))
diag("where the kills landed (last log line): %s" % dict(points))
with open(log_path, errors="replace") as f:
    text = f.read()
diag("at the next start: %d half-built domains destroyed, %d builds "
     "interrupted before their domain existed, %d records of domains "
     "gone forgotten" % (len(re.findall(
         r"destroying .*: its build was interrupted", text)),
                         text.count("interrupted before the domain"),
                         text.count("no longer exists, forgetting")))
ok(not failures, "%d kill -9 rounds: every domain listed with its record, "
   "none half built, no page lost" % ROUNDS,
   "\n".join("round %d: %s" % f for f in failures[:10]))
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
