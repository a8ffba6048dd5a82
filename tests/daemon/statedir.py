#!/usr/bin/env python3
"""statedir.py - one vmbuildd per state directory (issue 17).

A second vmbuildd started on a state directory another one uses would
reconcile it: destroy every domain whose record says "building" (the
first daemon's builds in progress) and drop their records.  The state
directory is locked (flock on <state>/lock, the holder's pid in it)
before anything touches the records or the hypervisor.  Checked, while
the first daemon's build is held in the middle of populating
(HoldProxy):

- the lock file holds the running daemon's pid;
- a second vmbuildd on the same state directory (its own socket) exits
  non-zero at once, its message naming the first one's pid, without
  READY=1 (systemd must not take it for started), without creating its
  socket, and without touching the build;
- released, the first daemon's build finishes: the domain runs and its
  record says "built";
- a daemonised vmbuildd (no --foreground) holds the lock in the process
  that keeps running: the lock names the pid server.hello gives, and a
  second daemonised one exits 1 from its parent, the message on stderr.
"""
import os
import signal
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

# hvsim preempts a populate after 8 units of work (a clean extent is one):
# the 32 extents of 2 MiB of a 64 MiB guest take several calls, so that
# HoldProxy can hold the continuation.
h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G",
          "--backing", "phantom", "--preempt-pages", "8"])
proxy = HoldProxy(os.path.join(h.dir, "hold.sock"), h.hv_sock)
h.hv_sock = proxy.path
h.start_daemon()
c = h.client()
lock = os.path.join(h.state, "lock")


def lock_pid():
    try:
        with open(lock) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def second(state, sock, foreground=True, timeout=60):
    """Run another vmbuildd on `state`: (exit status, output, notes it
    sent to its NOTIFY_SOCKET).  None as the status if it kept running
    (then it is killed)."""
    npath = os.path.join(h.dir, "notify2.sock")
    if os.path.exists(npath):
        os.unlink(npath)
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(npath)
    ns.setblocking(False)
    p = subprocess.Popen(
        [VMBUILDD, "--hypervisor", "sim:" + h.hv_sock, "--socket", sock,
         "--state-dir", state, "--metrics", "none", "--log-target",
         "stderr"] + (["--foreground"] if foreground else []),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, NOTIFY_SOCKET=npath))
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        rc = None
    notes = []
    while True:
        try:
            notes.append(ns.recv(4096).decode())
        except BlockingIOError:
            break
    ns.close()
    return rc, out, notes


ok(lock_pid() == h.d.pid, "the lock file holds the daemon's pid",
   (lock_pid(), h.d.pid))

# ------------------------------------ a second daemon while a build runs
proxy.arm()
r = c.result("vm.create", {"config": guest_cfg("held", 64), "wait": False})
task = r["task"]
ok(proxy.held.wait(60), "the first daemon's build is held in populate")
vm = c.result("vm.info", {"vm": "held"})
uuid = vm.get("uuid")
ok(uuid and (h.record(uuid) or {}).get("state") == "building",
   "its record says building", h.record(uuid) if uuid else vm)
uuid = uuid or "none"

sock2 = os.path.join(h.dir, "second.sock")
rc, out, notes = second(h.state, sock2)
ok(rc is not None and rc != 0, "a second vmbuildd on the same state "
   "directory exits non-zero (status %s)" % rc, out)
ok("in use by another vmbuildd (pid %d" % h.d.pid in out,
   "its message names the holder's pid %d" % h.d.pid, out)
ok(not any("READY=1" in n.split("\n") for n in notes),
   "it never says READY=1", notes)
ok(not os.path.exists(sock2), "and never creates its socket")
ok("reconcil" not in out and "destroying" not in out,
   "it reconciled nothing", out)
ok(lock_pid() == h.d.pid, "the lock still names the first daemon")

proxy.free()
d = wait_for(lambda: (lambda t: t if t["state"] != "running" else None)(
    c.result("task.get", {"task": task})), 120)
ok(d is not None and d["state"] == "done", "the held build, released, "
   "finishes", d)
i = c.call("vm.info", {"vm": "held"}).get("result", {})
ok(i.get("state") in ("running", "blocked") and i.get("uuid") == uuid,
   "its domain runs", i)
ok((h.record(uuid) or {}).get("state") == "built",
   "its record says built", h.record(uuid))
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# ---------------------------------------------- a daemonised vmbuildd
state2 = os.path.join(h.dir, "state2")
sock3 = os.path.join(h.dir, "third.sock")
rc, out, _ = second(state2, sock3, foreground=False)
ok(rc == 0, "a daemonised vmbuildd starts (its parent exits 0)", out)
c3 = Client(sock3)
pid = c3.result("server.hello")["pid"]
c3.close()
with open(os.path.join(state2, "lock")) as f:
    held = f.read().strip()
ok(held == str(pid), "its lock names the daemon's pid, not its parent's",
   (held, pid))
rc, out, _ = second(state2, os.path.join(h.dir, "fourth.sock"),
                    foreground=False)
ok(rc == 1 and "in use by another vmbuildd (pid %d" % pid in out,
   "a second daemonised one exits 1, naming it", (rc, out))
os.kill(pid, signal.SIGTERM)
ok(wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
            open("/proc/%d/stat" % pid).read().split()[2] == "Z", 60),
   "the daemonised one stops on SIGTERM")
rc, out, _ = second(state2, sock3, foreground=True, timeout=5)
ok(rc is None and "in use" not in out,
   "its lock went with it: a new daemon starts on that directory", out)
done()
