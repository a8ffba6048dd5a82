#!/usr/bin/env python3
"""restart.py - vmbuildd's state directory and reconciliation.

kill -9 the daemon in the middle of populating a large guest (caught by
stopping it with SIGSTOP on a task.progress event and checking that its
record still says "building"), restart it on the same state directory:
the half-built domain is destroyed, the VM built before the crash is
listed under its name, and after the scrub hvsim's free memory is what
it was at the start.  Then a clean restart (SIGTERM) keeps the VMs too.
SIGTERM during a build, and what may be done to a VM being built, are
checked on a build held in the middle of populating by a relay between
vmbuildd and hvsim (HoldProxy): they cannot be skipped because the
build was quicker.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403



def log_wait(text, timeout=60):
    """Wait until vmbuildd's log holds text; False on timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(os.path.join(h.dir, "vmbuildd.log"), errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


def records():
    out = {}
    for p in glob.glob(os.path.join(h.state, "*.json")):
        with open(p) as f:
            j = json.load(f)
        out[j["name"]] = j
    return out


# The large guest lives on a phantom host (metadata only, 2 x 512 GiB)
# in --flush-mode alloc, where populating pages that were owned before
# evaluates the flush filter page by page, as Xen did before 4.8: a
# build of 800 GiB then takes a second or more, long enough to be caught
# by a progress event.  A warm-up build and destroy first makes every
# page "previously owned".
NODE_GIB = 512
big_mib = 800 * 1024
killed = None
for attempt in range(3):
    h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node",
              "%dG" % NODE_GIB, "--backing", "phantom", "--flush-mode",
              "alloc"], ["--populate", "libxl"])
    h.start_daemon()
    c = h.client()
    sc = h.wait_scrubbed(c)
    if sc is None:
        bail("boot scrub ends")
    free0 = sum(n["free_bytes"] for n in sc["nodes"])
    r = c.call("vm.create", {"config": guest_cfg("warm", big_mib,
                                                 extra=['cpus = "nodes:0-1"']),
                             "wait": True})
    if "result" not in r:
        bail("warm-up build: %r" % r)
    c.call("vm.destroy", {"vm": "warm"})
    h.wait_scrubbed(c)
    r = c.call("vm.create", {"config": guest_cfg("keep", 64), "wait": True})
    keep_uuid = r["result"]["vm"]["uuid"] if "result" in r else None
    keep_rec = records().get("keep", {}).get("state")
    ev = h.client()
    ev.result("events.subscribe", {"events": ["task.progress", "task.done"]})
    r = c.call("vm.create", {"config": guest_cfg("big", big_mib,
                                                 extra=['cpus = "nodes:0-1"']),
                             "wait": False})
    if "result" not in r:
        bail("vm.create of the large guest: %r" % r)
    m = ev.event(lambda m: m["method"] == "task.done" or
                 (m["method"] == "task.progress" and
                  m["params"]["progress"]["phase"] == "populate" and
                  0 < m["params"]["progress"]["done"] <
                  m["params"]["progress"]["total"]))
    if m is not None and m["method"] == "task.progress":
        # Freeze the daemon, then look at the record it left on disk.
        h.d.send_signal(signal.SIGSTOP)
        rec = records().get("big")
        if rec is not None and rec["state"] == "building":
            h.d.send_signal(signal.SIGKILL)
            h.d.wait()
            h.d = None
            p = m["params"]["progress"]
            killed = (p["done"], p["total"])
            break
        h.d.send_signal(signal.SIGCONT)
    diag("attempt %d: the build ended before the kill; again on a fresh "
         "hvsim" % attempt)
    ev.close()
    c.close()
    h.cleanup()
    h = None

ok(free0 == 2 * NODE_GIB * 1024 * MIB, "free memory at start: %d" % free0)
ok(keep_uuid is not None, "a first VM is built")
ok(keep_rec == "built", "its record says built")
ok(killed is not None, "vmbuildd killed -9 mid-populate (%s of %s bytes)" %
   killed if killed else "vmbuildd killed -9 mid-populate")
if killed is None:
    done()
# Read again now that the process is gone: what a restart will find.
rec = records().get("big") or {}
ok(rec.get("state") == "building",
   "the record of the interrupted build says building", rec)
ok(rec.get("uuid") and rec.get("config", {}).get("memory_bytes") ==
   big_mib * MIB and rec.get("domid") is None,
   "it holds the uuid and the config summary, written before the domain",
   rec)
big = "big"
# From here on vmbuildd talks to hvsim through the relay.
proxy = HoldProxy(os.path.join(h.dir, "hold.sock"), h.hv_sock)
h.hv_sock = proxy.path

t = h.start_daemon()
c = h.client()
hello = c.result("server.hello")
ok(hello["pid"] == h.d.pid and hello["backend"] == "sim",
   "vmbuildd restarts on the same state directory (ready in %.2f s)" % t,
   hello)
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok(big not in vms and len(vms) == 1, "no half-built domain is listed", vms)
ok("keep" in vms, "the VM built before the crash is listed by name", vms)
info = c.result("vm.info", {"vm": "keep"})
ok(info["uuid"] == keep_uuid and info["origin"] == "vmbuildd" and
   info["build"] is not None and
   info["config"]["memory_bytes"] == 64 * MIB,
   "vm.info after restart: same uuid, config and build result from the "
   "record", info)
ok(big not in records() and set(records()) == {"keep"},
   "the interrupted build's record is gone", records())
log = open(os.path.join(h.dir, "vmbuildd.log")).read()
ok("build was interrupted" in log, "the restart says what it destroyed")

sc = h.wait_scrubbed(c)
free1 = sum(n["free_bytes"] for n in sc["nodes"]) if sc else None
ok(free1 == free0 - 64 * MIB,
   "after scrub, free memory is the start less the surviving VM "
   "(%s vs %s)" % (free1, free0 - 64 * MIB))

# A clean restart keeps everything.
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
h.start_daemon()
c = h.client()
vms = [v["name"] for v in c.result("vm.list")["vms"]]
ok(vms == ["keep"], "after a clean restart the VM is still listed", vms)
r = c.call("vm.create", {"config": guest_cfg("again", 64), "wait": True})
ok("result" in r, "the restarted daemon builds", r)
for n in ("keep", "again"):
    r = c.call("vm.destroy", {"vm": n})
    ok("result" in r, "destroy " + n, r)
ok(records() == {}, "no record left after destroy", records())

# SIGTERM in the middle of a build: the build is cancelled and undone
# before the daemon exits.  The relay holds the build in populate until
# the daemon has said it cancels.
proxy.arm()
r = c.call("vm.create", {"config": guest_cfg("term", big_mib,
                                             extra=['cpus = "nodes:0-1"']),
                         "wait": False})
ok("result" in r and proxy.held.wait(60),
   "the build of term is held in the middle of populating", r)
rec = records().get("term")
ok(rec is not None and rec["state"] == "building",
   "its record says building", rec)
h.d.send_signal(signal.SIGTERM)
ok(log_wait("stopping (cancelling 1 running builds)"),
   "SIGTERM during a build: the daemon cancels the running build",
   h.log_tail())
proxy.free()
try:
    rc = h.d.wait(60)
except subprocess.TimeoutExpired:
    h.d.kill()
    rc = h.d.wait()
h.d = None
ok(rc == 0, "SIGTERM during a build: clean exit (%s)" % rc)
log = open(os.path.join(h.dir, "vmbuildd.log")).read()
ok("(vm.create term) cancelled" in log,
   "the running build was cancelled", log[-1500:])
ok("build of term cancelled (in phase populate)" in log,
   "the cancel names phase populate, not undo", log[-1500:])
ok(records() == {}, "the cancelled build left no record", records())
h.start_daemon()
c = h.client()
ok(c.result("vm.list") == {"vms": []}, "no domain after the restart")
sc = h.wait_scrubbed(c)
free2 = sum(n["free_bytes"] for n in sc["nodes"]) if sc else None
ok(free2 == free0, "no page lost: free memory equals the start (%s vs %s)"
   % (free2, free0))
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# --max-tasks 1: a second build while one runs is refused with E_BUSY;
# a VM being built cannot be destroyed or paused; progress only grows.
h.start_daemon(["--max-tasks", "1"])
c = h.client()
ev = h.client()
ev.result("events.subscribe", {"events": ["task.progress", "task.done"]})
proxy.arm()
r = c.result("vm.create", {"config": guest_cfg("slow", big_mib,
                                               extra=['cpus = "nodes:0-1"'])})
slow = r["task"]
held = proxy.held.wait(60)
ok(held and c.result("task.get", {"task": slow})["state"] == "running",
   "the slow build is held in the middle of populating")
expect = c.call("vm.create", {"config": guest_cfg("second", 16)})
ok(err_code(expect) == E_BUSY and "limit 1" in
   expect["error"]["message"], "a build over --max-tasks -> E_BUSY",
   expect)
r = c.call("vm.destroy", {"vm": "slow"})
ok(err_code(r) == E_BAD_STATE, "vm.destroy of a VM being built -> "
   "E_BAD_STATE", r)
r = c.call("vm.pause", {"vm": "slow"})
ok(err_code(r) == E_BAD_STATE, "vm.pause of a VM being built -> "
   "E_BAD_STATE", r)
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok(vms.get("slow", {}).get("state") == "building",
   "vm.list shows the VM as building", vms)
c.result("task.cancel", {"task": slow})
proxy.free()
fin = ev.event(lambda m: m["method"] == "task.done" and
               m["params"]["id"] == slow)
# In the order the phases run (libvmbuild/build.c); each phase counts
# its own units from 0, so the cancel's undo starts again at 0 (CI's
# loaded ASan run at ec28a79 saw its tick: [0, 1073741824, 0]).
PHASES = ["place", "create", "claim", "populate", "load", "devices", "boot",
          "done", "undo"]
prog = [(PHASES.index(e["params"]["progress"]["phase"]),
         e["params"]["progress"]["done"]) for e in ev.events
        if e["method"] == "task.progress"]
ok(prog == sorted(prog), "task.progress never goes back: phases go "
   "forward, and a phase's count grows", prog)
ok(fin is not None and fin["params"]["state"] == "cancelled",
   "the slow build ends cancelled (%s)" % (fin and fin["params"]["state"]))
t = c.result("task.get", {"task": slow})
ok("cancelled (in phase populate)" in
   ((t.get("error") or {}).get("message") or ""),
   "the cancelled task names phase populate, not undo", t)
ok(c.result("vm.list") == {"vms": []}, "no VM left")
ok(records() == {}, "no record left", records())
r = c.call("vm.create", {"config": guest_cfg("second", 16), "wait": True})
ok("result" in r, "after the slow build another one runs", r)
c.call("vm.destroy", {"vm": "second"})
c.close()
ev.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# A failed build names the step that failed, and why: not the phase of
# the last progress report, which is the undo's once the domain existed
# (a 1 MiB guest fails to load after create, claim and populate).  Real
# memory, so that the image is really loaded.
# A FIFO in an image directory is refused as "not a regular file" (it is
# never opened for reading, so it cannot hang the build).
images = os.path.join(tempfile.mkdtemp(prefix="vmbd-images."))
fifo = os.path.join(images, "k.fifo")
os.mkfifo(fifo)
hr = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
           "--backing", "real"], ["--image-dir", images])
hr.start_daemon()
c = hr.client()
fifocfg = guest_cfg("fifo", 16).replace('kernel = "%s"' % KERNEL,
                                        'kernel = "%s"' % fifo)
for name, cfg, phase, why in (
        ("tiny", guest_cfg("tiny", 1), "load", "the image needs "),
        ("fifo", fifocfg, "load", "kernel %s: not a regular file" % fifo),
        ("node5", guest_cfg("node5", 16, extra=['cpus = "nodes:5"']),
         "place", "node 5 does not exist (the host has 2 nodes)"),
        ("huge", guest_cfg("huge", 1024), "place", "do not fit")):
    r = c.call("vm.create", {"config": cfg, "wait": True})
    msg = r.get("error", {}).get("message", "")
    ok(("build of %s failed in phase %s: " % (name, phase)) in msg and
       why in msg, "%s: the error names phase %s and says why" %
       (name, phase), r)
    ok(r.get("error", {}).get("data", {}).get("phase") == phase,
       "%s: error.data.phase is %s" % (name, phase), r)
    t = [x for x in c.result("task.list")["tasks"] if x["vm"] == name]
    ok(len(t) == 1 and t[0]["error"]["message"] == msg,
       "%s: the task's error is the same" % name, t)
ok(c.result("vm.list") == {"vms": []}, "no VM left by the failed builds")
c.close()
ok(hr.stop_daemon() == 0, "SIGTERM: clean exit")
shutil.rmtree(images, ignore_errors=True)
done()
