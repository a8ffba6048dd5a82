#!/usr/bin/env python3
"""recovery.py - an unlucky operator's day (issue 12): a hypervisor that
hangs, crashes and comes back, an undo that fails across a restart, a
domain list that fails at start, and state records that are not what
they should be.

  - a build blocked on a hypervisor that does not answer is interrupted
    by task.cancel (it ends "cancelled", not failed by the timeout, which
    is set far beyond the test's wait), and by SIGTERM, which finishes;
  - --hypervisor-timeout ends a call that never comes back;
  - a failed undo whose domain still will not go when the daemon is
    killed: the next start is not stopped by it (bug 7), lists the VM as
    "destroying", and destroys it once the hypervisor lets it;
  - a domain list that fails at start: the daemon starts from its
    records and reconciles once the hypervisor answers;
  - records whose uuid is not their file name, whose domid is out of
    range, too deep, not regular files, or whose name vm.create would
    refuse (issue 17: only its length was checked) are moved to
    quarantine/ in the state directory, each logged once with why,
    and listed by host.info and vmctl host, also after a restart;
  - hvsim crashes (its crash fault) and restarts under a running daemon:
    the daemon says the hypervisor is down, reconnects and reconciles.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

HVSIM_ARGS = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node",
              "256M", "--backing", "real", "--fault-requests"]
h = Host(HVSIM_ARGS, ["--hypervisor-timeout", "120"])
hv = Hv(h.hv_sock)
h.start_daemon()
c = h.client()


def free_bytes():
    return sum(n["free_bytes"] for n in c.result("host.scrub")["nodes"])


free0 = free_bytes()


def settle(names=(), timeout=60):
    """Wait until none of `names` (any VM if empty) is listed and every
    page is free again; True if so."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        vms = [v["name"] for v in c.result("vm.list")["vms"]]
        if not [n for n in vms if not names or n in names] and \
                free_bytes() == free0:
            return True
        time.sleep(0.1)
    return False


def records():
    return sorted(f for f in os.listdir(h.state) if f.endswith(".json"))


def task_done(ev, tid, timeout=60):
    return ev.event(lambda m: m.get("method") == "task.done" and
                    m["params"]["id"] == tid, timeout)


ev = h.client()
ev.result("events.subscribe", {"events": ["task.done", "task.progress"]})

# ----------------------------------------- cancel of a build that hangs
hv.clear()
hv.fault("populate", 1, HV_FAULT_HANG)
tid = c.result("vm.create", {"config": guest_cfg("hang", 64)})["task"]
ok(ev.event(lambda m: m.get("method") == "task.progress" and
            m["params"]["progress"]["phase"] == "populate", 30) is not None,
   "a build reaches populate, where hvsim does not answer")
time.sleep(0.5)
c.result("task.cancel", {"task": tid})
d = task_done(ev, tid, 30)
ok(d is not None and d["params"]["state"] == "cancelled",
   "task.cancel interrupts the build blocked on the hypervisor (it ends "
   "cancelled, not by the 120 s timeout)", d)
ok(settle(), "the cancelled build left no domain and no page behind")
ok(records() == [], "and no record", records())

# -------------------------------------------- SIGTERM while a build hangs
hv.fault("populate", 1, HV_FAULT_HANG)
tid = c.result("vm.create", {"config": guest_cfg("hang2", 64)})["task"]
ev.event(lambda m: m.get("method") == "task.progress" and
         m["params"]["progress"]["phase"] == "populate", 30)
time.sleep(0.5)
c.close()
ev.close()
rc = h.stop_daemon(timeout=60)
ok(rc == 0, "SIGTERM during a build blocked on the hypervisor finishes "
   "(exit %s)" % rc)
ok(records() == [], "the stopped build's record is gone (it was undone)",
   records())
hv.clear()

# --------------------------------------------------- --hypervisor-timeout
h.start_daemon(["--hypervisor-timeout", "2"])
c = h.client()
hv.fault("populate", 1, HV_FAULT_HANG)
r = c.call("vm.create", {"config": guest_cfg("slow", 64), "wait": True})
e = (r or {}).get("error", {})
ok(e.get("data", {}).get("phase") == "populate" and
   "timed out" in e.get("message", ""),
   "--hypervisor-timeout 2: a call never answered fails the build in "
   "populate", r)
ok(settle(), "and nothing is left")
r = c.call("vm.create", {"config": guest_cfg("after", 64), "wait": True})
ok(r is not None and "result" in r, "the next build works", r)
# vmctl destroy waits for the daemon's answer, which comes when the
# domain is gone (on Xen, devices included), longer than its --timeout
# (seen: a 30 s default cut short a destroy of a guest with a disk and
# a vif on a loaded Debian host).  A destroy hvsim never answers: the
# daemon's own limit (2 s here) answers it, and vmctl waits for that.
hv.fault("domain_destroy", 1, HV_FAULT_HANG)
p = subprocess.run([os.path.join(BIN, "vmctl"), "--socket", h.sock,
                    "--timeout", "1", "destroy", "after"],
                   capture_output=True, text=True, timeout=120)
ok(p.returncode == 1 and "timed out" in p.stderr and
   "no answer" not in p.stderr,
   "vmctl --timeout 1 destroy waits for the daemon's answer (here its "
   "--hypervisor-timeout's error), not for its --timeout",
   (p.returncode, p.stderr))
hv.clear()
c.call("vm.destroy", {"vm": "after"})
ok(settle(), "destroyed")

# --------------------- a failed undo across a restart (bugs 2 and 7)
# populate fails, and so does every destroy for a while: the VM stays,
# "destroying", with its record; the daemon is killed; its next start
# cannot destroy it either, and must start all the same.
hv.clear()
hv.fault("populate", 1)
for n in range(1, 41):
    hv.fault("domain_destroy", n)
r = c.call("vm.create", {"config": guest_cfg("stuck", 64), "wait": True})
e = (r or {}).get("error", {})
ok(e.get("data", {}).get("phase") == "populate" and
   "could not be destroyed" in e.get("message", ""),
   "bug 2: the error says the undo failed and will be retried", r)
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok(vms.get("stuck", {}).get("state") == "destroying" and
   vms["stuck"]["id"] is not None,
   "the half-built domain is listed as destroying, with its domid", vms)
ok(len(records()) == 1, "its record is kept", records())
r = c.call("vm.destroy", {"vm": "stuck"})
ok(err_code(r) == E_BAD_STATE and "being destroyed" in
   r["error"]["message"], "vm.destroy says it is being destroyed", r)
c.close()
h.d.send_signal(signal.SIGKILL)
h.d.wait()
h.d = None
t0 = time.monotonic()
h.start_daemon(["--hypervisor-timeout", "5"])
c = h.client()
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok(vms.get("stuck", {}).get("state") == "destroying",
   "bug 7: a restart that cannot destroy it starts all the same and "
   "lists it as destroying", vms)
hv.clear()
ok(settle(("stuck",)), "once the hypervisor lets it, the domain is "
   "destroyed and every page is free")
ok(records() == [], "and its record is gone", records())

# ------------------------------------------ the domain list fails at start
c.result("vm.create", {"config": guest_cfg("keep", 64), "wait": True})
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
# Both lists of a start fail: the domain watch's first snapshot
# (lifecycle_open) and the reconciliation's.
hv.fault("domain_list", 1)
hv.fault("domain_list", 2)
h.start_daemon()
c = h.client()
hello = c.result("server.hello")
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok("keep" in vms and hello.get("hypervisor_up") is False,
   "a failing domain list does not stop the start: the VM of the record "
   "is listed, and the hypervisor reported down", (hello, vms))
ok("reconciling once it answers" in h.log_tail(n=200),
   "the log says it will reconcile")
ok("domain events from the hypervisor" in h.log_tail(n=200) and
   "cannot watch domain events" not in h.log_tail(n=200),
   "the domain watch is on all the same (its first read lists again)")
up = False
for _ in range(100):
    if c.result("server.hello").get("hypervisor_up"):
        up = True
        break
    time.sleep(0.1)
vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
ok(up and vms.get("keep", {}).get("state") in ("running", "blocked"),
   "once it answers, the daemon reconciles (keep is %s)" %
   vms.get("keep", {}).get("state"))
c.call("vm.destroy", {"vm": "keep"})
ok(settle(), "destroyed")
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# ----------------------------------------------------------- bad records
good = {"version": 1, "name": "r", "state": "built", "domid": 7,
        "config_path": None, "created_at": 0, "config": None, "build": None}
bad = {}


def put(name, text):
    path = os.path.join(h.state, name)
    with open(path, "w") as f:
        f.write(text)
    bad[name] = path


u = ["%08x-0000-4000-8000-%012x" % (i, i) for i in range(1, 12)]
put(u[0] + ".json", json.dumps(dict(good, uuid=u[1])))
put(u[2] + ".json", json.dumps(dict(good, uuid=u[2], domid=0)))
put(u[3] + ".json", json.dumps(dict(good, uuid=u[3], domid=1 << 40)))
put(u[4] + ".json", '{"uuid":"%s","name":"deep","state":"built","x":%s}' %
    (u[4], "[" * 100000 + "]" * 100000))
put(u[5] + ".json", json.dumps(dict(good, uuid=u[5], state="weird")))
os.mkfifo(os.path.join(h.state, u[6] + ".json"))
bad[u[6] + ".json"] = os.path.join(h.state, u[6] + ".json")
# Names vm.create refuses (issue 17): only the length was checked.
put(u[7] + ".json", json.dumps(dict(good, uuid=u[7], name="a/b")))
put(u[8] + ".json", json.dumps(dict(good, uuid=u[8], name="x\ny")))
put(u[9] + ".json", json.dumps(dict(good, uuid=u[9], name="-opt")))
# And a sound record beside them: loaded (its domain is gone: dropped).
put(u[10] + ".json", json.dumps(dict(good, uuid=u[10], name="fine.vm-1")))
h.start_daemon()
c = h.client()
log = h.log_tail(n=300)
ok(c.result("vm.list") == {"vms": []}, "bad records name no VM")
quar = os.path.join(h.state, "quarantine")
whys = ((u[0], "its uuid is not its file name"),
        (u[2], "domid out of range"), (u[3], "domid out of range"),
        (u[4], "nesting deeper"), (u[5], "neither"),
        (u[6], "not a regular file"),
        (u[7], "invalid name: invalid character '/'"),
        (u[8], "invalid name: invalid character 0x0a"),
        (u[9], "invalid name: must not start with '-'"))
for name, why in whys:
    lines = [ln for ln in log.splitlines() if name in ln]
    ok(len(lines) == 1 and why in lines[0] and
       "moved to quarantine/%s.json" % name in lines[0],
       "record %s: one log line, why (%s) and where it went" %
       (name[:8], why), lines)
    ok(not os.path.lexists(os.path.join(h.state, name + ".json")) and
       os.path.lexists(os.path.join(quar, name + ".json")),
       "record %s: moved to quarantine/" % name[:8])
ok("fine.vm-1" in log and u[10] + ".json" not in os.listdir(quar) and
   not os.path.exists(bad[u[10] + ".json"]),
   "the sound record is loaded (and dropped: its domain is gone)")
info = c.result("host.info")
q = {e["file"]: e["reason"] for e in info.get("quarantined", [])}
ok(len(q) == len(whys) and
   all(why in q.get("quarantine/%s.json" % n, "") for n, why in whys),
   "host.info lists each quarantined record with why", info.get(
       "quarantined"))
VMCTL = os.path.join(BIN, "vmctl")
p = subprocess.run([VMCTL, "--socket", h.sock, "host"], capture_output=True,
                   text=True, timeout=60)
ok(p.returncode == 0 and "9 state records quarantined" in p.stdout and
   all("quarantine/%s.json: " % n in p.stdout for n, _ in whys) and
   "invalid character 0x0a" in p.stdout,
   "vmctl host shows them", p.stdout + p.stderr)
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
# A second start: nothing to log per record, still listed.
os.unlink(os.path.join(quar, u[2] + ".json"))
h.start_daemon()
c = h.client()
ok(sum(1 for ln in h.log_tail(n=None).splitlines() if u[3] in ln) == 1,
   "a quarantined record is logged once, not at every start")
q2 = {e["file"]: e["reason"] for e in c.result("host.info")["quarantined"]}
ok(len(q2) == len(whys) - 1 and "quarantine/%s.json" % u[2] not in q2 and
   "domid out of range" in q2.get("quarantine/%s.json" % u[3], ""),
   "after a restart host.info still lists them with why (one the "
   "operator removed is not)", q2)
shutil.rmtree(quar)

# ------------------------------------- hvsim crashes and comes back
c.result("vm.create", {"config": guest_cfg("h1", 64), "wait": True})
hv.fault("counters", 1, HV_FAULT_CRASH)
r = c.call("host.counters")
ok(r is not None and "error" in r, "a call that crashes hvsim gets an "
   "error", r)
h.hv.wait(30)
ok(h.hv.returncode == -signal.SIGKILL, "hvsim crashed (its crash fault)")
down = False
# The watch's lost connection makes the daemon list at once; the bound
# is only for a loaded machine.
for _ in range(300):
    if c.result("server.hello").get("hypervisor_up") is False:
        down = True
        break
    time.sleep(0.1)
ok(down, "the daemon reports the hypervisor down")
ok([v["name"] for v in c.result("vm.list")["vms"]] == ["h1"],
   "and still answers vm.list (states may be stale)")
r = c.call("vm.create", {"config": guest_cfg("nohv", 64), "wait": True})
ok(err_code(r) is not None, "a build fails while it is down", r)
h.start_hvsim(HVSIM_ARGS)
hv = Hv(h.hv_sock)
back = False
for _ in range(300):
    # The record goes after the registry entry (a state write of its
    # own): wait for both.
    if c.result("server.hello").get("hypervisor_up") and \
            c.result("vm.list") == {"vms": []} and records() == []:
        back = True
        break
    time.sleep(0.1)
ok(back, "hvsim back: the daemon reconnects and reconciles (its domains "
   "died with hvsim, h1 is forgotten)")
ok(records() == [], "h1's record is gone", records())
r = c.call("vm.create", {"config": guest_cfg("h2", 64), "wait": True})
ok(r is not None and "result" in r, "builds work again", r)
ok("answers again" in h.log_tail(n=200) and "does not answer" in
   h.log_tail(n=400), "the log says when it went down and came back")
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
