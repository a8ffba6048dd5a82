#!/usr/bin/env python3
"""everyday.py - the everyday commands xl has, on hvsim (issue 19):
vmctl sched (vm.sched_get/vm.sched_set), rename (vm.rename), uptime
(vm.uptime), dmesg (host.dmesg), cancel (task.cancel), and the config
keys cpu_weight and cap.  Checked for each: the result, vmctl's output,
the errors (bad values, names taken, no such task), the log and the
vm.changed event, that a change outlives a daemon restart (the VM's
record), and that the read-only socket refuses the changes and
host.dmesg (the hypervisor's ring may hold what it logged about any
guest: root's, as xl dmesg) but answers vm.sched_get and vm.uptime.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")

h = Host(["--nodes", "1", "--cpus-per-node", "4", "--mem-per-node", "1G",
          "--backing", "phantom"])
h.start_daemon()
c = h.client()
ro_sock = h.sock.replace(".sock", "-ro.sock")


def vmctl(*args):
    return subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                          capture_output=True, text=True, timeout=120)


def create(cfg):
    return c.call("vm.create", {"config": cfg, "wait": True})


# ---- config keys: cpu_weight and cap, set at build ----
r = create(guest_cfg("w1", vcpus=2, extra=("cpu_weight = 512",
                                           "cap = 150")))
ok(r and "result" in r, "a config with cpu_weight and cap builds", r)
s = c.result("vm.sched_get", {"vm": "w1"})
ok(s["weight"] == 512 and s["cap"] == 150 and s["scheduler"] == "credit2",
   "vm.sched_get: the config's weight and cap were set at build", s)
r = create(guest_cfg("w2", vcpus=1, extra=("cap = 150",)))
errs = ((r or {}).get("error") or {}).get("data", {}).get("errors", [])
ok(err_code(r) == 1003 and any("cap" in e and "1 vCPU" in e for e in errs),
   "cap above 100 per vCPU: refused, naming the key and why", r)
r = create(guest_cfg("w2", extra=("cpu_weight = 0",)))
ok(err_code(r) == 1003, "cpu_weight = 0: refused", r)

# ---- vm.sched_set, vmctl sched ----
c.result("events.subscribe", {"events": ["vm.changed"]})
p = vmctl("sched", "--weight", "1024", "w1")
ok(p.returncode == 0 and "1024" in p.stdout and "150" in p.stdout,
   "vmctl sched --weight: shows the new weight and the kept cap",
   p.stdout + p.stderr)
ev = c.event(lambda m: m.get("method") == "vm.changed", timeout=30)
ok(ev and ev["params"]["change"] == "sched" and
   ev["params"]["weight"] == 1024, "vm.changed told of the change", ev)
ok(h.log_has("w1: scheduler credit2: weight 1024, cap 150"),
   "the change is logged")
p = vmctl("sched", "w1")
ok(p.returncode == 0 and "1024" in p.stdout, "vmctl sched VM shows them",
   p.stdout)
p = vmctl("sched", "--json", "--cap", "0", "w1")
ok(p.returncode == 0 and json.loads(p.stdout)["cap"] == 0,
   "vmctl sched --cap 0 --json", p.stdout + p.stderr)
p = vmctl("sched", "--weight", "70000", "w1")
ok(p.returncode == 2 and "--weight" in p.stderr,
   "vmctl sched --weight 70000: a usage error", p.stderr)
r = c.call("vm.sched_set", {"vm": "w1", "cap": 201})
ok(err_code(r) == -32602 and "params.cap" in r["error"]["message"] and
   "2 vCPUs" in r["error"]["message"],
   "vm.sched_set cap 201 on 2 vCPUs: refused, naming params.cap", r)
r = c.call("vm.sched_set", {"vm": "w1", "weight": 0})
ok(err_code(r) == -32602 and "params.weight" in r["error"]["message"],
   "vm.sched_set weight 0: refused", r)
r = c.call("vm.sched_set", {"vm": "w1"})
ok(err_code(r) == -32602, "vm.sched_set without weight or cap: refused", r)
r = c.call("vm.sched_set", {"vm": "nosuch", "weight": 5})
ok(err_code(r) == 1001, "vm.sched_set of no VM: E_NO_SUCH_VM", r)
c.result("vm.sched_set", {"vm": "w1", "cap": 120})

# ---- vm.rename, vmctl rename ----
create(guest_cfg("r1"))
p = vmctl("rename", "r1", "r2")
ok(p.returncode == 0 and "renamed r1 to r2" in p.stdout,
   "vmctl rename", p.stdout + p.stderr)
ev = c.event(lambda m: m.get("method") == "vm.changed" and
             m["params"]["change"] == "rename", timeout=30)
ok(ev and ev["params"]["vm"] == "r2" and ev["params"]["old_name"] == "r1",
   "vm.changed told of the rename", ev)
ok(c.call("vm.info", {"vm": "r2"}).get("result", {}).get("name") == "r2"
   and err_code(c.call("vm.info", {"vm": "r1"})) == 1001,
   "the registry knows it by its new name only")
ok(h.log_has("r1 (domain") and h.log_has("renamed r2"), "logged")
r = c.call("vm.rename", {"vm": "r2", "new_name": "w1"})
ok(err_code(r) == 1008 and "w1" in r["error"]["message"],
   "a name taken: E_EXISTS", r)
r = c.call("vm.rename", {"vm": "r2", "new_name": "bad/name"})
ok(err_code(r) == -32602 and "params.new_name" in r["error"]["message"],
   "an invalid name: refused, saying why", r)
r = c.call("vm.rename", {"vm": "r2"})
ok(err_code(r) == -32602, "no new name: refused", r)

# ---- vm.uptime, vmctl uptime ----
u = c.result("vm.uptime")
names = {v["name"]: v for v in u["vms"]}
ok(set(names) == {"w1", "r2"} and all(
   v["uptime_seconds"] is not None and v["uptime_seconds"] >= 0
   for v in names.values()), "vm.uptime: every VM, with an uptime", u)
p = vmctl("uptime", "r2")
ok(p.returncode == 0 and "Uptime" in p.stdout and "r2" in p.stdout and
   "w1" not in p.stdout and ":" in p.stdout.splitlines()[-1],
   "vmctl uptime VM: one line, as xl uptime", p.stdout + p.stderr)
p = vmctl("uptime", "nosuch")
ok(p.returncode == 1, "vmctl uptime of no VM: exit 1", p.stderr)

# ---- host.dmesg, vmctl dmesg ----
p = vmctl("dmesg")
ok(p.returncode == 0 and "domain" in p.stdout and "renamed r2" in p.stdout,
   "vmctl dmesg: hvsim's log (its rename line)", p.stdout[-500:])
p = vmctl("dmesg", "--clear")
ok(p.returncode == 0 and "renamed r2" in p.stdout, "vmctl dmesg --clear")
d = c.result("host.dmesg")
ok("renamed r2" not in d["text"] and d["cleared"] is False,
   "after --clear the ring no longer holds it", d)
ok(h.log_has("message ring was cleared by uid"), "the clear is logged")

# ---- vmctl cancel, vmctl tasks ----
p = vmctl("cancel", "999999")
ok(p.returncode == 1 and "999999" in p.stderr, "vmctl cancel of no task",
   p.stderr)
p = vmctl("cancel", "x")
ok(p.returncode == 2, "vmctl cancel x: a usage error", p.stderr)
p = vmctl("tasks", "--json")
ok(p.returncode == 0 and json.loads(p.stdout) is not None, "vmctl tasks --json")
t = [x for x in json.loads(p.stdout).get("tasks", [])
     if x.get("state") != "running"]
if t:
    p = vmctl("cancel", str(t[0]["id"]))
    ok(p.returncode == 1 and "already ended" in p.stderr,
       "vmctl cancel of an ended task: says so", p.stderr)

# ---- the read-only socket ----
rc = Client(ro_sock)
for m, params in (("vm.sched_set", {"vm": "w1", "weight": 7}),
                  ("vm.rename", {"vm": "w1", "new_name": "zz"}),
                  ("host.dmesg", {}),
                  ("task.cancel", {"task": 1})):
    r = rc.call(m, params)
    ok(err_code(r) == 1000, "read-only socket: %s refused" % m, r)
ok("result" in rc.call("vm.sched_get", {"vm": "w1"}) and
   "result" in rc.call("vm.uptime"),
   "read-only socket: vm.sched_get and vm.uptime answer")
rc.close()

# ---- across a daemon restart ----
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
h.start_daemon()
c = h.client()
s = c.result("vm.sched_get", {"vm": "w1"})
ok(s["weight"] == 1024 and s["cap"] == 120,
   "after a daemon restart: the weight and cap set at run time", s)
info = c.result("vm.info", {"vm": "w1"})
ok(info["config"]["cpu_weight"] == 1024 and info["config"]["cap"] == 120,
   "vm.info's config has them (the record)", info["config"])
i2 = c.call("vm.info", {"vm": "r2"}).get("result")
ok(i2 and i2["name"] == "r2" and i2["config"]["name"] == "r2" and
   err_code(c.call("vm.info", {"vm": "r1"})) == 1001,
   "after a daemon restart: the new name", i2)
done()
