#!/usr/bin/env python3
"""hvmrestart.py - a restarted vmbuildd takes back the device models of
its HVM guests (issue 21).

vmbuildd runs tests/daemon/fixtures/fake-dm.py as the device model, as
hvm.py does.  The record of a built HVM guest names its device model
(pid, start time, QMP socket).  Checked:

- the record has "device_model" with the pid vm.info shows and that
  process's start time (/proc/PID/stat field 22), and its serial pty;
- vmbuildd killed (SIGKILL) and started again: the device model is
  taken back (vm.info shows the same pid; the log says so); killed
  then, its death is noticed: the guest is crashed and on_crash
  (destroy) applies;
- likewise, vm.destroy after the restart stops it (QMP quit): no
  process is left;
- a device model that dies while the daemon is down: at the next start
  the guest is crashed (said in the log) and on_crash applies;
- a record whose pid is now another process (a different start time) is
  not taken for its device model: that process is left alone.

When vmbuildd is killed, its device models are orphans: this test makes
itself their reaper (PR_SET_CHILD_SUBREAPER), so that what exits is
reaped here and "no process left" is checked without waiting for init.
"""
import ctypes
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

PR_SET_CHILD_SUBREAPER = 36

libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    bail("prctl(PR_SET_CHILD_SUBREAPER): errno %d" % ctypes.get_errno())

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
DAEMON_ARGS = fake_dm_args(h)
h.start_daemon(DAEMON_ARGS)
c = h.client()


def create(name, extra=()):
    cfg = "\n".join(['name = "%s"' % name, 'type = "hvm"', "memory = 64",
                     "vcpus = 1"] + list(extra)) + "\n"
    return c.call("vm.create", {"config": cfg, "wait": True})


def info(name):
    return c.call("vm.info", {"vm": name}).get("result")


def dm_pid(name):
    return ((info(name) or {}).get("device_model") or {}).get("pid")


def start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def exited(pid):
    """pid has exited: reaped here if it became our orphan, or gone."""
    def check():
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return True
        except ChildProcessError:
            pass
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
        except OSError:
            return True
    return wait_for(check, 30) is not None


def restart_daemon():
    """SIGKILL vmbuildd (its device models live on) and start it."""
    global c
    c.close()
    h.d.send_signal(signal.SIGKILL)
    h.d.wait()
    h.d = None
    h.start_daemon(DAEMON_ARGS)
    c = h.client()


# --- the record names the device model -------------------------------
r = create("keep1", ['on_crash = "destroy"', 'serial = "pty"'])
ok("result" in r, "keep1 built", r)
r = create("keep2")
ok("result" in r, "keep2 built", r)
vm1 = info("keep1") or {}
pid1, pid2 = dm_pid("keep1"), dm_pid("keep2")
ok(pid1 and pid2, "both have a device model", (pid1, pid2))
rec = h.record(vm1.get("uuid", "")) or {}
dm = rec.get("device_model") or {}
ok(dm.get("pid") == pid1 and dm.get("start_time") == start_time(pid1) and
   dm.get("qmp", "").startswith(h.state),
   "the record has the device model's pid, start time and QMP socket", rec)
tty1 = ((vm1.get("device_model") or {}).get("serial_tty")) or ""
ok(tty1.startswith("/dev/pts/") and dm.get("serial_tty") == tty1,
   "and its serial pty, as vm.info shows it", (tty1, dm))

# --- kill -9 the daemon, start it again: taken back ------------------
restart_daemon()
ok(dm_pid("keep1") == pid1 and dm_pid("keep2") == pid2,
   "after a restart, vm.info shows the same device models",
   (dm_pid("keep1"), dm_pid("keep2")))
ok(((info("keep1") or {}).get("device_model") or {}).get("serial_tty")
   == tty1, "and keep1's serial pty, from the record", info("keep1"))
ok(h.log_has("keep1: device model (pid %d, QMP" % pid1) and
   h.log_has("taken back"), "the log says they were taken back",
   h.log_tail())

# Its death is noticed: crashed, on_crash = destroy.
os.kill(pid1, signal.SIGKILL)
ok(exited(pid1), "keep1's device model is killed")
ok(h.log_has("keep1: device model (pid %d) died: the guest is crashed"
             % pid1, timeout=30),
   "the restarted daemon noticed its death", h.log_tail())
ok(wait_for(lambda: info("keep1") is None, 30) is not None,
   "keep1 is crashed and on_crash=destroy destroyed it", h.log_tail())

# Destroy after a restart stops it: no process left.
r = c.call("vm.destroy", {"vm": "keep2"})
ok("result" in r, "keep2 destroyed after the restart", r)
ok(exited(pid2), "its device model was stopped (no process left)")
ok(not h.log_has("keep2: device model (pid %d) died" % pid2, timeout=1),
   "stopping it was no crash", h.log_tail())

# --- a device model that dies while the daemon is down ---------------
r = create("lost1", ['on_crash = "destroy"'])
pid = dm_pid("lost1")
ok(pid, "lost1 has a device model", info("lost1"))
c.close()
h.d.send_signal(signal.SIGKILL)
h.d.wait()
h.d = None
if pid:
    os.kill(pid, signal.SIGKILL)
    ok(exited(pid), "lost1's device model killed while the daemon is down")
h.start_daemon(DAEMON_ARGS)
c = h.client()
ok(h.log_has("lost1: its device model (pid %d) is gone" % pid),
   "at start, the log says lost1's device model is gone", h.log_tail())
ok(wait_for(lambda: info("lost1") is None, 30) is not None,
   "lost1 is crashed and on_crash=destroy destroyed it", h.log_tail())

# --- a pid that is now another process is not taken ------------------
r = create("other1", ['on_crash = "preserve"'])
vm = info("other1") or {}
pid = dm_pid("other1")
c.close()
h.d.send_signal(signal.SIGKILL)
h.d.wait()
h.d = None
os.kill(pid, signal.SIGKILL)
exited(pid)
# Another process: its pid in the record, with its true start time + 1.
decoy = subprocess.Popen(["sleep", "600"])
path = os.path.join(h.state, vm["uuid"] + ".json")
rec = json.load(open(path))
rec["device_model"]["pid"] = decoy.pid
rec["device_model"]["start_time"] = start_time(decoy.pid) + 1
json.dump(rec, open(path, "w"))
h.start_daemon(DAEMON_ARGS)
c = h.client()
ok(h.log_has("other1: its device model (pid %d) is gone" % decoy.pid),
   "a pid with another start time is not its device model", h.log_tail())
ok(decoy.poll() is None, "that other process is left alone")
ok(wait_for(lambda: (info("other1") or {}).get("state") == "crashed", 30)
   is not None, "other1 is crashed (on_crash=preserve keeps it)",
   info("other1"))
decoy.kill()
decoy.wait()
r = c.call("vm.destroy", {"vm": "other1"})
ok("result" in r, "other1 destroyed", r)
done()
