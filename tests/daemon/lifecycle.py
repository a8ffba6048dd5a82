#!/usr/bin/env python3
"""lifecycle.py - what vmbuildd does when a guest shuts down, on hvsim.

hvsim runs no guest code, so the test plays the guest's part through
hvsim's socket (HvGuest): it shuts domains down with a reason, as a
guest's SCHEDOP_shutdown does, announces the PV control features and
takes shutdown requests, as a guest's drivers do.  Checked:

- domain events: a shutdown is seen and announced (vm.state with its
  reason and the action), and the on_* action is applied: destroy,
  restart (a new domain, the same VM and uuid, a "vm.restart" task),
  preserve; suspend is always preserved; a domain of no toolstack's
  appears and is left to its toolstack;
- the rate limit on restarts of a guest that keeps rebooting;
- vm.shutdown and vm.reboot: refused for a guest without PV control,
  reported (E_TIMEOUT, the request withdrawn, the VM left running) for
  one that does not answer, forced from the hypervisor with force,
  answered when the guest takes the request; refused for a paused or
  shut-down VM; without wait, the request is posted and left;
- vm.console on hvsim: a clear error, at once (no console, no hang);
- vmctl shutdown, reboot, console and create -c;
- a daemon killed and started again picks the lifecycle settings up
  from its records: a shutdown while it was down is acted on at start,
  a later one as configured; a restart it left half done (its record
  says "restart", the domain gone) is finished.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")

# No wait between restarts (--restart-backoff 0): the reboot loop below
# checks the limit; crashloop.py checks the waits.
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "2G",
          "--backing", "phantom"], ["--restart-backoff", "0"])
h.start_daemon()
c = h.client()
ev = h.client()
ev.result("events.subscribe", {"events": ["vm.state"]})
g = HvGuest(h.hv_sock)


def vmctl(*args, stdin=None, timeout=60):
    p = subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                       input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def create(name, *extra):
    r = c.call("vm.create", {"config": guest_cfg(name, 64, extra=extra),
                             "wait": True})
    if "result" not in r:
        bail("create %s: %r" % (name, r))
    # Its own events (building, running) are not the ones looked for.
    state_ev(name, "running")
    return r["result"]["vm"]


def state_ev(name, state, timeout=30):
    """The next vm.state event of VM `name` in `state` (its params);
    the VM's events before it are dropped."""
    while True:
        m = ev.event(lambda m: m.get("method") == "vm.state" and
                     m["params"]["vm"] == name, timeout)
        if m is None:
            return None
        if m["params"]["state"] == state:
            return m["params"]


def info(name):
    r = c.call("vm.info", {"vm": name})
    return r.get("result")


def listed(name):
    return any(v["name"] == name for v in c.result("vm.list")["vms"])


record = h.record


hello = c.result("server.hello")
ok({"vm.shutdown", "vm.reboot", "vm.console"} <= set(hello["methods"]),
   "server.hello lists vm.shutdown, vm.reboot and vm.console",
   hello["methods"])
ok("domain events from the hypervisor" in h.log_tail(n=200),
   "the daemon watches hvsim's domain events (refresh only every 10 s)",
   h.log_tail())

# ------------------------------------------------------------- on_poweroff
vm = create("off")
ok(vm["lifecycle"] == {"on_poweroff": "destroy", "on_reboot": "restart",
                       "on_crash": "destroy", "on_watchdog": "destroy",
                       "on_soft_reset": "restart", "restarts": 0},
   "vm.info's lifecycle: xl's defaults", vm.get("lifecycle"))
ok(g.shutdown(vm["id"], g.POWEROFF) == 0, "the guest powers off")
s = state_ev("off", "shutdown")
ok(s == {"vm": "off", "id": vm["id"], "state": "shutdown",
         "reason": "poweroff", "action": "destroy"},
   "vm.state: shut down, reason poweroff, action destroy", s)
s = state_ev("off", "destroyed")
ok(s is not None and s["reason"] == "poweroff" and s["action"] == "destroy",
   "vm.state: destroyed by on_poweroff", s)
ok(not listed("off") and record(vm["uuid"]) is None,
   "the VM and its record are gone")

# ---------------------------------------------------------------- on_reboot
vm = create("rb")
ok(g.shutdown(vm["id"], g.REBOOT) == 0, "the guest reboots")
s = state_ev("rb", "shutdown")
ok(s is not None and s["reason"] == "reboot" and s["action"] == "restart",
   "vm.state: shut down, reason reboot, action restart", s)
s = state_ev("rb", "building")
ok(s is not None and s["action"] == "restart", "vm.state: building again",
   s)
s = state_ev("rb", "running")
vm2 = info("rb")
ok(s is not None and vm2 and vm2["id"] != vm["id"] and
   vm2["uuid"] == vm["uuid"] and vm2["state"] == "running" and
   vm2["lifecycle"]["restarts"] == 1,
   "restarted: a new domain, the same VM and uuid, 1 restart", vm2)
tasks = [t for t in c.result("task.list")["tasks"] if t["vm"] == "rb"]
ok([t["kind"] for t in tasks] == ["vm.create", "vm.restart"] and
   tasks[-1]["state"] == "done" and tasks[-1]["domid"] == vm2["id"],
   "the restart is a vm.restart task", tasks)
rec = record(vm["uuid"])
ok(rec and rec["domid"] == vm2["id"] and rec["restart"] is False and
   rec["state"] == "built" and "config" in rec["source"],
   "its record: the new domain, no restart pending, the source kept", rec)

# --------------------------------------------------- preserve, crash, suspend
vm = create("cr", 'on_crash = "preserve"', 'on_watchdog = "restart"')
ok(g.shutdown(vm["id"], g.CRASH) == 0, "the guest crashes")
s = state_ev("cr", "crashed")
ok(s is not None and s["reason"] == "crash" and s["action"] == "preserve",
   "vm.state: crashed, action preserve", s)
time.sleep(0.5)
i = info("cr")
ok(i and i["state"] == "crashed" and i["shutdown_reason"] == "crash" and
   i["id"] == vm["id"] and i["memory_bytes"] == 64 << 20,
   "on_crash=preserve: the domain stays, crashed, its memory kept", i)
ok(err_code(c.call("vm.pause", {"vm": "cr"})) == E_BAD_STATE and
   err_code(c.call("vm.shutdown", {"vm": "cr"})) == E_BAD_STATE,
   "pause and shutdown of a crashed VM: E_BAD_STATE")
ok("result" in c.call("vm.destroy", {"vm": "cr"}),
   "a preserved VM is destroyed on demand")

vm = create("sus", 'on_poweroff = "restart"')
ok(g.shutdown(vm["id"], g.SUSPEND) == 0, "the guest suspends")
s = state_ev("sus", "shutdown")
ok(s is not None and s["reason"] == "suspend" and s["action"] == "preserve",
   "a suspended domain is left as it is (there is no on_suspend)", s)
c.call("vm.destroy", {"vm": "sus"})

vm = create("wd", 'on_watchdog = "preserve"', 'on_soft_reset = "destroy"')
ok(g.shutdown(vm["id"], g.WATCHDOG) == 0 and
   (state_ev("wd", "shutdown") or {}).get("action") == "preserve",
   "on_watchdog=preserve")
c.call("vm.destroy", {"vm": "wd"})
vm = create("sr", 'on_soft_reset = "destroy"')
ok(g.shutdown(vm["id"], g.SOFT_RESET) == 0 and
   (state_ev("sr", "destroyed") or {}).get("reason") == "soft_reset",
   "on_soft_reset=destroy")

# A domain no toolstack of ours built: seen, and left to its own.
fid = g.create("stranger")
s = state_ev("stranger", "paused")
ok(s is not None and s["id"] == fid, "a foreign domain appears (event)", s)
ok(g.shutdown(fid, g.POWEROFF) == 0 and
   state_ev("stranger", "shutdown") == {"vm": "stranger", "id": fid,
                                         "state": "shutdown",
                                         "reason": "poweroff",
                                         "action": None},
   "a foreign domain that shuts down is left to its toolstack")
time.sleep(0.3)
ok(listed("stranger"), "still listed, shut down")
g.destroy(fid)
ok(state_ev("stranger", "destroyed") is not None,
   "its destroy by someone else is seen (event)")

# A guest that keeps rebooting is restarted 10 times, then left.
vm = create("loop")
for n in range(11):
    i = wait_for(lambda: (lambda x: x if x and x["state"] == "running"
                          else None)(info("loop")))
    if not i:
        break
    g.shutdown(i["id"], g.REBOOT)
    s = state_ev("loop", "shutdown")
s = s or {}
i = info("loop")
ok(n == 10 and s.get("action") == "preserve" and i and
   i["state"] == "shutdown" and i["lifecycle"]["restarts"] == 10,
   "a guest rebooting in a loop: 10 restarts, then left shut down", (n, s, i))
ok("restarted too often" in h.log_tail(n=400), "and the log says why")
c.call("vm.destroy", {"vm": "loop"})

# ---------------------------------------------------- vm.shutdown, vm.reboot
vm = create("pv")
r = c.call("vm.shutdown", {"vm": "pv", "wait": True})
ok(err_code(r) == E_UNAVAILABLE and "feature-poweroff" in
   r["error"]["message"], "a guest without PV control: refused, says why",
   r)
ok(info("pv")["state"] == "running", "and left running")
ok(err_code(c.call("vm.shutdown", {"vm": "pv", "timeout": 0})) ==
   RPC_INVALID_PARAMS and
   err_code(c.call("vm.shutdown", {"vm": "pv", "timeout": "x"})) ==
   RPC_INVALID_PARAMS, "timeout out of range or not a number: -32602")

g.control(vm["id"], g.ANNOUNCE, g.F_POWEROFF | g.F_REBOOT)
t0 = time.monotonic()
r = c.call("vm.shutdown", {"vm": "pv", "wait": True, "timeout": 1})
ok(err_code(r) == E_TIMEOUT and "did not take" in r["error"]["message"] and
   "withdrawn" in r["error"]["message"],
   "a guest that does not answer: E_TIMEOUT, the request withdrawn", r)
st = g.control(vm["id"], g.GET)
ok(st[0] == 0 and st[2] == g.NONE and info("pv")["state"] == "running",
   "no request left posted, the VM still running", st)

# The guest takes the request but never shuts down.
def take_only():
    wait_for(lambda: g.control(vm["id"], g.GET)[2] != g.NONE, 10)
    g.control(vm["id"], g.TAKE)

th = threading.Thread(target=take_only)
th.start()
r = c.call("vm.shutdown", {"vm": "pv", "wait": True, "timeout": 2})
th.join()
ok(err_code(r) == E_TIMEOUT and "took the poweroff request" in
   r["error"]["message"], "a guest that takes it and hangs: E_TIMEOUT", r)

r = c.call("vm.shutdown", {"vm": "pv"})
ok(r.get("result", {}).get("state") == "requested" and
   g.control(vm["id"], g.GET)[2] == g.POWEROFF,
   "without wait: the request is posted and left for the guest", r)
g.control(vm["id"], g.WITHDRAW)

# The guest answers: takes the request, then shuts down.
def answer(domid, want):
    def run():
        if wait_for(lambda: g.control(domid, g.GET)[2] == want, 20):
            g.control(domid, g.TAKE)
            time.sleep(0.2)
            g.shutdown(domid, want)
    t = threading.Thread(target=run)
    t.start()
    return t

th = answer(vm["id"], g.REBOOT)
r = c.call("vm.reboot", {"vm": "pv", "wait": True, "timeout": 30})
th.join()
res = r.get("result", {})
ok(res.get("state") == "running" and res.get("reason") == "reboot" and
   res.get("action") == "restart" and res.get("forced") is False and
   res.get("new_id") not in (None, vm["id"]) and res.get("id") == vm["id"],
   "vm.reboot --wait: answered, restarted, the new domain", r)
pv = info("pv")
# The new domain's guest announces its features again, as a new boot.
g.control(pv["id"], g.ANNOUNCE, g.F_POWEROFF)
th = answer(pv["id"], g.POWEROFF)
r = c.call("vm.shutdown", {"vm": "pv", "wait": True, "timeout": 30})
th.join()
res = r.get("result", {})
ok(res.get("state") == "destroyed" and res.get("reason") == "poweroff" and
   res.get("action") == "destroy" and not listed("pv"),
   "vm.shutdown --wait: answered, on_poweroff destroyed it", r)

# force: a guest without PV control, one that does not answer.
vm = create("stuck", 'on_poweroff = "preserve"')
r = c.call("vm.shutdown", {"vm": "stuck", "force": True})
res = r.get("result", {})
ok(res.get("forced") is True and res.get("state") == "shutdown" and
   res.get("action") == "preserve",
   "force, no PV control: shut down from the hypervisor at once, "
   "on_poweroff=preserve applied", r)
c.call("vm.destroy", {"vm": "stuck"})
vm = create("mute")
g.control(vm["id"], g.ANNOUNCE, g.F_REBOOT)
r = c.call("vm.reboot", {"vm": "mute", "force": True, "timeout": 1})
res = r.get("result", {})
ok(res.get("forced") is True and res.get("reason") == "reboot" and
   res.get("state") == "running" and res.get("action") == "restart",
   "force, no answer within the timeout: forced reboot, restarted", r)
# The registry learns the new domain's state from its next list (the
# restart's build leaves it paused for a moment): wait for "running".
for _ in range(100):
    if c.result("vm.info", {"vm": "mute"}).get("state") == "running":
        break
    time.sleep(0.1)
c.result("vm.pause", {"vm": "mute"})
r = c.call("vm.shutdown", {"vm": "mute"})
ok(err_code(r) == E_BAD_STATE and "paused" in r["error"]["message"],
   "shutdown of a paused VM without force: E_BAD_STATE", r)
c.call("vm.destroy", {"vm": "mute"})

# ---------------------------------------------------------------- console
vm = create("con")
t0 = time.monotonic()
r = c.call("vm.console", {"vm": "con"})
ok(err_code(r) == E_UNAVAILABLE and "runs no guest code" in
   r["error"]["message"], "vm.console on hvsim: E_UNAVAILABLE, says why", r)
rc, out, err = vmctl("console", "con", stdin="")
ok(rc == 1 and "runs no guest code" in err,
   "vmctl console on hvsim: exit 1 with the reason, no hang", (rc, err))
ok(err_code(c.call("vm.console", {"vm": "nosuch"})) == E_NO_SUCH_VM,
   "vm.console of an unknown VM: E_NO_SUCH_VM")
cfg = os.path.join(h.dir, "cc.cfg")
with open(cfg, "w") as f:
    f.write(guest_cfg("cc", 64))
rc, out, err = vmctl("create", "-c", cfg, stdin="")
ok(rc == 1 and "created VM" in out and "runs no guest code" in err and
   listed("cc"), "vmctl create -c: created, then the console's error",
   (rc, out, err))

# ------------------------------------------------------------------- vmctl
rc, out, err = vmctl("shutdown", "con")
ok(rc == 1 and "feature-poweroff" in err and "code 1009" in err,
   "vmctl shutdown of a guest without PV control: exit 1", (rc, err))
i = info("con")
g.control(i["id"], g.ANNOUNCE, g.F_POWEROFF)
rc, out, err = vmctl("shutdown", "--wait", "--timeout", "1", "con")
ok(rc == 1 and "did not take the poweroff request within 1 s" in err,
   "vmctl shutdown --wait of a mute guest: reported, exit 1", (rc, err))
rc, out, err = vmctl("shutdown", "--timeout", "1", "con")
ok(rc == 2 and "--timeout goes with --wait" in err,
   "vmctl shutdown --timeout without --wait: usage error", (rc, err))
rc, out, err = vmctl("shutdown", "--wait", "--force", "--timeout", "1",
                     "con")
ok(rc == 0 and "powered off (shut down from the hypervisor)" in out and
   "on_poweroff: destroyed" in out and not listed("con"),
   "vmctl shutdown --wait --force: forced, destroyed", (rc, out, err))
i = info("cc")
g.control(i["id"], g.ANNOUNCE, g.F_REBOOT)
th = answer(i["id"], g.REBOOT)
rc, out, err = vmctl("--json", "reboot", "--wait", "cc")
th.join()
j = json.loads(out) if rc == 0 else {}
ok(rc == 0 and j.get("action") == "restart" and j.get("new_id"),
   "vmctl --json reboot --wait: restarted", (rc, out, err))
rc, out, err = vmctl("reboot", "nosuch")
ok(rc == 1 and "code 1001" in err, "vmctl reboot of an unknown VM: exit 1",
   (rc, err))

# --------------------------- a restart from the descriptor it came with
# The daemon opens no file a client names outside --image-dir: a VM whose
# kernel came as a descriptor is restarted from that descriptor, which
# the daemon keeps while the VM is listed.
outside = os.path.join(h.dir, "elsewhere")
os.makedirs(outside, exist_ok=True)
kpath = os.path.join(outside, "hello.elf")
shutil.copy(KERNEL, kpath)
kfd = os.open(kpath, os.O_RDONLY)
r = c.call("vm.create", {"config": guest_cfg("fdvm", 64).replace(
    'kernel = "%s"' % KERNEL, 'kernel = "%s"' % kpath), "wait": True,
    "fds": {"kernel": 0}}, fds=[kfd])
os.close(kfd)
ok("result" in r, "vm.create of fdvm, its kernel (outside --image-dir) "
   "passed as a descriptor", r)
f1 = r["result"]["vm"] if "result" in r else {"id": -1}
state_ev("fdvm", "running")
ok(g.shutdown(f1["id"], g.REBOOT) == 0 and state_ev("fdvm", "running") and
   info("fdvm")["id"] != f1["id"],
   "fdvm reboots: built again from the descriptor the daemon kept")

# ----------------------------------------------- a daemon killed, restarted
a = create("keep-off", 'on_poweroff = "preserve"', 'on_reboot = "destroy"')
b = create("keep-rb")
d = create("half")
h.stop_daemon(signal.SIGKILL)
# While it is down: keep-off reboots (on_reboot=destroy), and half is
# left as a daemon that died in the middle of its restart leaves it.
g.shutdown(a["id"], g.REBOOT)
rec = record(d["uuid"])
rec["restart"] = True
with open(os.path.join(h.state, d["uuid"] + ".json"), "w") as f:
    json.dump(rec, f)
g.shutdown(d["id"], g.REBOOT)
g.destroy(d["id"])
h.start_daemon()
c = h.client()
ev = h.client()
ev.result("events.subscribe", {"events": ["vm.state"]})
ok(wait_for(lambda: not listed("keep-off")),
   "restarted daemon: a shutdown while it was down is acted on "
   "(keep-off rebooted: on_reboot=destroy)")
i = wait_for(lambda: (lambda x: x if x and x["state"] == "running" and
                      x["id"] != d["id"] else None)(info("half")))
ok(i and i["uuid"] == d["uuid"],
   "a restart the killed daemon left half done is finished", i)
i = info("keep-rb")
ok(i and i["lifecycle"]["on_reboot"] == "restart" and i["id"] == b["id"],
   "the lifecycle settings come from the record", i)
ok(g.shutdown(b["id"], g.REBOOT) == 0 and state_ev("keep-rb", "running"),
   "and are applied: keep-rb reboots and is restarted")
ok(info("keep-rb")["id"] != b["id"], "with a new domain")
f2 = info("fdvm")
ok(f2 and g.shutdown(f2["id"], g.REBOOT) == 0 and
   wait_for(lambda: (info("fdvm") or {}).get("state") == "shutdown") and
   info("fdvm")["id"] == f2["id"],
   "the restarted daemon does not hold fdvm's descriptor: not restarted, "
   "left shut down (its domain kept)", info("fdvm"))
ok("came as a descriptor" in h.log_tail(n=400), "and the log says why")
ok("result" in c.call("vm.destroy", {"vm": "fdvm"}), "fdvm destroyed")
ok(g.shutdown(info("keep-rb")["id"], g.POWEROFF) == 0 and
   state_ev("keep-rb", "destroyed"), "then powers off: destroyed")

alive = c.call("server.hello")
ok(alive and "result" in alive, "the daemon serves at the end")
g.close()
done()
