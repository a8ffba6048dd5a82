#!/usr/bin/env python3
"""saving.py - the "saving" state of a VM (vmstate.c, save.c) on hvsim.

While vm.save runs the VM is "saving" in vm.list, vm.info, `vmctl list`
and the metrics' state set, and a vm.state event says so once; the
save's own pause of the domain does not show (no "paused" event, the
VM stays "saving").  Then it ends in the right state: a cancelled save
and a failed one (its reader went away) leave it in the state it was
in (running, or paused when it was paused), a checkpoint running, and
a save done removes it ("saved").  Saves into a pipe hold the save
where the test wants it, without timing: a pipe nobody reads stops the
stream once full.
"""
import os
import re
import select
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
port = free_port()
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
          "--backing", "real"], ["--metrics", "127.0.0.1:%d" % port])
h.start_daemon()
c = h.client()
ev = h.client()
ev.result("events.subscribe", {"events": ["vm.state"]})
tmp = tempfile.mkdtemp(prefix="vmbd-saving.")


def vmctl(*args):
    p = subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def scrape():
    url = "http://127.0.0.1:%d/metrics" % port
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def metric(text, name, labels):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    return float(m.group(1)) if m else None


def listed(name):
    for v in c.result("vm.list")["vms"]:
        if v["name"] == name:
            return v
    return None


def state_events(name):
    """The vm.state events of `name` queued so far, in order."""
    got = [m["params"]["state"] for m in ev.events
           if m.get("method") == "vm.state" and
           m["params"].get("vm") == name]
    ev.events = [m for m in ev.events
                 if not (m.get("method") == "vm.state" and
                         m["params"].get("vm") == name)]
    return got


def drain_events(name, until, timeout=60):
    """Events of `name` up to and including the first in state `until`."""
    m = ev.event(lambda m: m.get("method") == "vm.state" and
                 m["params"].get("vm") == name and
                 m["params"].get("state") == until, timeout)
    before = state_events(name)
    return before + ([until] if m else [])


def start_save(name):
    """vm.save into a pipe; (its read end, the task id)."""
    rfd, wfd = os.pipe()
    r = c.call("vm.save", {"vm": name, "fds": {"file": 0}}, fds=[wfd])
    os.close(wfd)
    ok("result" in r, "vm.save %s into a pipe: a task" % name, r)
    return rfd, r.get("result", {}).get("task")


def pipe_has_data(rfd, timeout=60):
    """The save has paused the domain and written: the pipe has bytes."""
    return bool(select.select([rfd], [], [], timeout)[0])


def task_state(tid, want, timeout=120):
    return wait_for(lambda: c.result("task.get", {"task": tid})["state"]
                    == want, timeout)


r = c.call("vm.create", {"config": guest_cfg("g1", 64), "wait": True})
ok("result" in r, "vm.create g1 (64 MiB, real memory)", r)
drain_events("g1", "running")

# ------------------------------------------------ saving, then cancel
rfd, tid = start_save("g1")
ok(pipe_has_data(rfd), "the save paused the guest and began its stream")
ev_saving = drain_events("g1", "saving")
ok(ev_saving == ["saving"], "one vm.state event: saving", ev_saving)
ok(listed("g1")["state"] == "saving", "vm.list: g1 is saving",
   listed("g1"))
ok(c.result("vm.info", {"vm": "g1"})["state"] == "saving",
   "vm.info: g1 is saving")
rc, out, err = vmctl("list")
ok(rc == 0 and re.search(r"\bg1\b.*\bsaving\b", out),
   "vmctl list shows g1 saving", out + err)
rc, out, err = vmctl("--json", "list")
ok(rc == 0 and '"saving"' in out, "vmctl --json list: saving", out)
text = scrape()
gid = listed("g1")["id"]
ok(metric(text, "vmbuild_vm_state",
          '{name="g1",id="%d",state="saving"}' % gid) == 1 and
   metric(text, "vmbuild_vm_state",
          '{name="g1",id="%d",state="running"}' % gid) == 0,
   "vmbuild_vm_state: saving 1, running 0")
ok(state_events("g1") == [], "no other vm.state event while it saves")
rc, out, err = vmctl("cancel", str(tid))
ok(rc == 0 and task_state(tid, "cancelled"), "cancelled", out + err)
os.close(rfd)
ends = drain_events("g1", "running")
ok(ends == ["running"], "cancelled: one vm.state event, running", ends)
ok(listed("g1")["state"] == "running", "cancelled: g1 is running again")

# ------------------------------------------------ failed: reader gone
rfd, tid = start_save("g1")
ok(pipe_has_data(rfd), "a second save began")
ok(listed("g1")["state"] == "saving", "saving again")
os.close(rfd)
ok(task_state(tid, "failed"), "the save fails once its reader is gone")
ends = drain_events("g1", "running")
ok(ends == ["saving", "running"], "failed: saving, then running", ends)
ok(listed("g1")["state"] == "running", "failed: g1 is running again")

# ------------------------------------------------ paused stays paused
ok("result" in c.call("vm.pause", {"vm": "g1"}), "vm.pause g1")
drain_events("g1", "paused")
rfd, tid = start_save("g1")
ok(pipe_has_data(rfd), "a save of the paused guest began")
ok(listed("g1")["state"] == "saving", "the paused guest is saving")
ok("result" in c.call("task.cancel", {"task": tid}) and
   task_state(tid, "cancelled"), "task.cancel")
os.close(rfd)
ends = drain_events("g1", "paused")
ok(ends == ["saving", "paused"], "cancelled: paused again, as it was", ends)
ok(listed("g1")["state"] == "paused", "g1 is paused, not running")
ok("result" in c.call("vm.unpause", {"vm": "g1"}), "vm.unpause g1")
drain_events("g1", "running")

# ------------------------------------------------ checkpoint, then save
f = os.path.join(tmp, "g1.ckpt")
rc, out, err = vmctl("save", "--checkpoint", "g1", f)
ok(rc == 0, "vmctl save --checkpoint", out + err)
ends = drain_events("g1", "running")
ok(ends == ["saving", "running"], "checkpoint: saving, then running",
   ends)
ok(listed("g1")["state"] == "running", "checkpoint: g1 runs on")
rc, out, err = vmctl("save", "g1", os.path.join(tmp, "g1.save"))
ok(rc == 0, "vmctl save", out + err)
ends = drain_events("g1", "saved")
ok(ends == ["saving", "saved"], "saved: saving, then saved", ends)
ok(listed("g1") is None, "saved: g1 is no longer listed")
done()
