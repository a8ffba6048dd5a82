#!/usr/bin/env python3
"""cpukeep.py - vmbuildd's --keep-cpu (daemon/cpukeep.c) on hvsim.

Where dom0's vCPUs wait for pCPUs, the daemon keeps every thread on one
CPU for a build's whole request.  hvsim runs the hypervisor's work on its
own threads (no VMB_CAP_CALLER_CPU), so auto never keeps there; always
and never are the operator's to choose:

  - --keep-cpu always: the build says the CPU (build.cpu_kept, one of the
    daemon's CPUs), the log says it, a device model spawned meanwhile runs
    on the daemon's own CPUs, and after the build every thread of the
    daemon has the CPUs it had before;
  - auto (the default) on hvsim: build.cpu_kept and
    build.cpu_wait_share_before are null (nothing sampled);
  - --keep-cpu never: null;
  - a mode that is none of these is a usage error naming the option.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403


def allowed(pid, tid=None):
    """A thread's (or the process's) Cpus_allowed_list, as a set."""
    path = "/proc/%d/task/%d/status" % (pid, tid) if tid else \
        "/proc/%d/status" % pid
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    out = set()
                    for part in line.split(":", 1)[1].strip().split(","):
                        a, _, b = part.partition("-")
                        out.update(range(int(a), int(b or a) + 1))
                    return out
    except OSError:
        return None
    return None


def threads(pid):
    try:
        return {int(t): allowed(pid, int(t))
                for t in os.listdir("/proc/%d/task" % pid)}
    except OSError:
        return {}


def build_of(c, name):
    return (c.result("vm.info", {"vm": name}) or {}).get("build") or {}


h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
dm_args = fake_dm_args(h)

# --- always ---------------------------------------------------------
h.start_daemon(["--keep-cpu", "always"] + dm_args)
c = h.client()
pid = h.d.pid
own = allowed(pid)
before = threads(pid)
r = c.call("vm.create", {"config": guest_cfg("k1", 32), "wait": True})
ok("result" in r, "a PVH guest is built with --keep-cpu always", r)
b = build_of(c, "k1")
ok(isinstance(b.get("cpu_kept"), int) and b["cpu_kept"] in own,
   "build.cpu_kept is one of the daemon's CPUs (%s)" % sorted(own), b)
ok("cpu_wait_share_before" in b and b["cpu_wait_share_before"] is None,
   "build.cpu_wait_share_before is null: always samples nothing", b)
ok(h.log_has("k1: the daemon's threads kept on CPU %s" % b.get("cpu_kept")),
   "the log says the CPU the build was kept on")
after = threads(pid)
ok(after and all(after[t] == before[t] for t in after if t in before) and
   all(s == own for t, s in after.items() if t not in before),
   "after the build every thread has its CPUs back (%s); one started "
   "meanwhile the process's" % sorted(own), (before, after))

hvm = "\n".join(['name = "k2"', 'type = "hvm"', "memory = 64",
                 "vcpus = 1"]) + "\n"
r = c.call("vm.create", {"config": hvm, "wait": True})
ok("result" in r, "an HVM guest is built with --keep-cpu always", r)
dms = fake_dm_procs(h.state)
ok(len(dms) == 1 and allowed(dms[0]) == own,
   "its device model, spawned while the build was kept, runs on the "
   "daemon's CPUs (%s)" % sorted(own),
   [(p, allowed(p)) for p in dms])
ok(isinstance(build_of(c, "k2").get("cpu_kept"), int),
   "the HVM build says its CPU too", build_of(c, "k2"))
for name in ("k1", "k2"):
    c.result("vm.destroy", {"vm": name})
h.stop_daemon()

# --- auto (default), never ------------------------------------------
for args, what in (([], "auto (the default)"),
                   (["--keep-cpu", "never"], "never")):
    h.start_daemon(args)
    c = h.client()
    r = c.call("vm.create", {"config": guest_cfg("k3", 32), "wait": True})
    b = build_of(c, "k3")
    ok("result" in r and "cpu_kept" in b and b["cpu_kept"] is None and
       b.get("cpu_wait_share_before", 0) is None,
       "%s on hvsim: build.cpu_kept and cpu_wait_share_before are null"
       % what, b)
    c.result("vm.destroy", {"vm": "k3"})
    h.stop_daemon()

p = subprocess.run([VMBUILDD, "--keep-cpu", "sometimes"],
                   capture_output=True, text=True)
ok(p.returncode == 2 and "--keep-cpu" in p.stderr and
   "sometimes" in p.stderr,
   "--keep-cpu sometimes: a usage error naming the option and the value",
   p.stderr)
done()
