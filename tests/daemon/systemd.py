#!/usr/bin/env python3
"""systemd.py - vmbuildd's systemd integration without systemd running.

- the unit files pass systemd-analyze verify;
- socket activation: systemd-socket-activate opens the socket and
  starts vmbuildd on the first connection; the daemon serves on the
  passed descriptor (sd_listen_fds) and leaves the socket to its owner;
- READY=1, STATUS= and WATCHDOG=1 reach $NOTIFY_SOCKET.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M"])

# ------------------------------------------------------------ unit files
sa = shutil.which("systemd-analyze")
if sa is None:
    skip("systemd-analyze verify", "systemd-analyze not installed")
else:
    units = tempfile.mkdtemp(dir=h.dir)
    for u in ("vmbuildd.service", "vmbuildd.socket", "vmbuildd-ro.socket"):
        with open(os.path.join(TOP, "systemd", u)) as f:
            text = f.read().replace("/usr/sbin/vmbuildd", VMBUILDD)
        with open(os.path.join(units, u), "w") as f:
            f.write(text)
    # Documentation=man:... is checked against the pages make built.
    p = subprocess.run([sa, "verify", os.path.join(units, "vmbuildd.service"),
                        os.path.join(units, "vmbuildd.socket"),
                        os.path.join(units, "vmbuildd-ro.socket")],
                       capture_output=True, text=True,
                       env=dict(os.environ,
                                MANPATH=os.path.join(TOP, BUILD, "man")))
    ok(p.returncode == 0 and "vmbuildd" not in p.stderr,
       "systemd-analyze verify vmbuildd.service vmbuildd.socket "
       "vmbuildd-ro.socket", p.stdout + p.stderr)

# ----------------------------------------------------- socket activation
ssa = shutil.which("systemd-socket-activate")
if ssa is None:
    skip("socket activation", "systemd-socket-activate missing")
else:
    act = os.path.join(h.dir, "activated.sock")
    log = open(os.path.join(h.dir, "activated.log"), "ab")
    p = subprocess.Popen([ssa, "-l", act, VMBUILDD, "--foreground", "-v",
                          "--metrics", "none",
                          "--hypervisor", "sim:" + h.hv_sock,
                          "--socket", act, "--state-dir",
                          os.path.join(h.dir, "state-act")],
                         stdout=log, stderr=log)
    # The socket file exists from bind(), before listen(): retry a
    # refused connection for a while.
    r = None
    for _ in range(200):
        try:
            c = Client(act, 30)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            r = e
            time.sleep(0.05)
            continue
        try:
            r = c.call("server.hello")
        except OSError as e:
            r = e
        c.close()
        break
    ok(isinstance(r, dict) and "result" in r,
       "the first connection starts vmbuildd and is served", r)
    text = open(os.path.join(h.dir, "activated.log")).read()
    ok("socket passed by systemd" in text,
       "vmbuildd serves on the descriptor systemd passed", text[-2000:])
    p.terminate()
    rc = p.wait(30)
    ok(rc == 0, "SIGTERM: clean exit (%s)" % rc)
    ok(os.path.exists(act),
       "a socket-activated daemon leaves the socket to systemd")

    # Both sockets from systemd, told apart by name, whatever the order.
    ro = os.path.join(h.dir, "act2-ro.sock")
    ctl = os.path.join(h.dir, "act2.sock")
    log = open(os.path.join(h.dir, "activated2.log"), "ab")
    p = subprocess.Popen([ssa, "-l", ro, "-l", ctl, "--fdname=ro:control",
                          VMBUILDD, "--foreground", "-v", "--metrics",
                          "none", "--hypervisor", "sim:" + h.hv_sock,
                          "--socket", ctl, "--state-dir",
                          os.path.join(h.dir, "state-act2")],
                         stdout=log, stderr=log)
    seen = {}
    for path in (ro, ctl):
        for _ in range(200):
            try:
                c = Client(path, 30)
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.05)
                continue
            hello = c.result("server.hello")
            r = c.call("vm.destroy", {"vm": "nothing"})
            seen[path] = (hello["peer"]["read_only_socket"], err_code(r))
            c.close()
            break
    ok(seen.get(ro) == (True, E_PERMISSION) and
       seen.get(ctl) == (False, E_NO_SUCH_VM),
       "two sockets from systemd: the one named ro is read-only, the one "
       "named control is not", seen)
    p.terminate()
    ok(p.wait(30) == 0, "SIGTERM: clean exit")

# ------------------------------------------------- notify and watchdog
ns_path = os.path.join(h.dir, "notify.sock")
ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
ns.bind(ns_path)
ns.settimeout(30)
env = dict(os.environ, NOTIFY_SOCKET=ns_path, WATCHDOG_USEC="200000")
log = open(os.path.join(h.dir, "vmbuildd.log"), "ab")
d = subprocess.Popen([VMBUILDD, "--foreground", "--metrics", "none",
                      "--hypervisor",
                      "sim:" + h.hv_sock, "--socket", h.sock,
                      "--state-dir", h.state,
                      "--image-dir", os.path.dirname(KERNEL)],
                     stdout=log, stderr=log, env=env)
h.d = d
msgs = []
end = time.monotonic() + 30
try:
    while time.monotonic() < end:
        msgs.append(ns.recv(4096).decode())
        if sum(m.count("WATCHDOG=1") for m in msgs) >= 3:
            break
except socket.timeout:
    pass
joined = "\n".join(msgs)
ok("READY=1" in joined and "STATUS=" in joined, "READY=1 and STATUS=",
   joined)
ok(joined.count("WATCHDOG=1") >= 3,
   "WATCHDOG=1 about every half of WATCHDOG_USEC", joined)
c = h.client()
c.result("vm.create", {"config": guest_cfg("s1", 16), "wait": True})
msgs = []
try:
    while True:
        m = ns.recv(4096).decode()
        if "STATUS=" in m and "1 VMs" in m:
            msgs.append(m)
            break
except socket.timeout:
    pass
ok(msgs, "STATUS= follows the VMs")
# Many changes in a row (VMs created and destroyed):
# STATUS= never says the same thing twice in a row, and the last one
# says how things ended.  A thread reads the notify socket meanwhile
# (its queue may hold only 10 datagrams).  The last one read so far
# counts: the state reached may be the one systemd already has.
stat = [x for m in msgs for x in m.split("\n") if x.startswith("STATUS=")]
reading = threading.Event()


def read_status():
    while not reading.is_set():
        try:
            m = ns.recv(4096).decode()
        except socket.timeout:
            continue
        stat.extend(x for x in m.split("\n") if x.startswith("STATUS="))


ns.settimeout(0.2)
reader = threading.Thread(target=read_status)
reader.start()
for i in range(15):
    c.result("vm.create", {"config": guest_cfg("n%d" % i, 16), "wait": True})
    c.result("vm.destroy", {"vm": "n%d" % i})
final = "STATUS=1 VMs, 0 builds running, 1 clients"
end = time.monotonic() + 30
while time.monotonic() < end and (not stat or stat[-1] != final):
    time.sleep(0.05)
reading.set()
reader.join()
ns.settimeout(30)
ok(stat and stat[-1] == final, "the last STATUS= is the state reached "
   "(%s)" % final, stat[-5:])
rep = [a for a, b in zip(stat, stat[1:]) if a == b]
ok(not rep, "no STATUS= repeats the one before (%d read)" % len(stat), rep)
# Nobody reads the notify socket any more, and its queue is full (the
# test fills it: net.unix.max_dgram_qlen datagrams, 10 on some machines
# and 512 on others): the daemon must drop notifications, not block its
# loop on them.  A build and a destroy each send STATUS=.
filler = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
filled = 0
try:
    for _ in range(100000):
        filler.sendto(b"X=1", socket.MSG_DONTWAIT, ns_path)
        filled += 1
except BlockingIOError:
    pass
filler.close()
t0 = time.monotonic()
c.sock.settimeout(20)
try:
    r = c.call("vm.create", {"config": guest_cfg("s2", 16), "wait": True})
    r = r and "result" in r and c.call("vm.destroy", {"vm": "s2"})
    r = r and "result" in r and c.call("server.hello")
except OSError as e:
    r = None
    diag(repr(e))
c.sock.settimeout(60)
ok(r is not None and "result" in r,
   "with the notify queue full (%d datagrams), the daemon still builds, "
   "destroys and answers (%.3f s)" % (filled, time.monotonic() - t0))
c.close()
d.terminate()
try:
    rc = d.wait(30)
except subprocess.TimeoutExpired:
    d.kill()
    rc = d.wait()
h.d = None
ok(rc == 0, "SIGTERM: clean exit (%s)" % rc)

# ------------------------------------------- without --foreground
# The parent exits 0 once the daemon is ready (or 1 if it cannot start);
# the daemon goes on in the background.
# Its stdout and stderr are pipes here: once ready, the daemon lets go
# of them (it logs to syslog then), so reading them ends.
bglog = open(os.path.join(h.dir, "background.log"), "ab")
p = subprocess.run([VMBUILDD, "--metrics", "none", "--hypervisor",
                    "sim:" + h.hv_sock, "--socket", h.sock, "--state-dir",
                    h.state], capture_output=True, timeout=60)
ok(p.returncode == 0, "without --foreground the parent exits 0 when ready "
   "and the daemon lets go of its stdout and stderr (%s)" % p.returncode,
   p.stderr.decode(errors="replace"))
bg = None
try:
    c = h.client()
    bg = c.result("server.hello")["pid"]
    c.close()
except (OSError, RuntimeError) as e:
    diag(repr(e))
ok(bg is not None, "the background daemon serves (pid %s)" % bg)
if bg is not None:
    os.kill(bg, signal.SIGTERM)
    for _ in range(200):
        if not os.path.exists("/proc/%d" % bg):
            break
        time.sleep(0.05)
    ok(not os.path.exists("/proc/%d" % bg), "and stops on SIGTERM")
p = subprocess.run([VMBUILDD, "--metrics", "none", "--hypervisor",
                    "sim:" + os.path.join(h.dir, "nohv.sock"), "--socket",
                    h.sock, "--state-dir", h.state], stdout=bglog,
                   stderr=bglog, timeout=60)
ok(p.returncode == 1, "the parent exits 1 when the daemon cannot start "
   "(%s)" % p.returncode)

# ------------------------------------------------------ command line
p = subprocess.run([VMBUILDD, "--help"], capture_output=True, text=True)
ok(p.returncode == 0 and "--hypervisor" in p.stdout and
   "--max-request" in p.stdout, "--help")
for bad in (["--max-tasks", "0"], ["--populate", "fast"],
            ["--max-request", "12x"], ["--no-such-option"], ["extra"],
            ["--metrics", "9741"], ["--image-cache", "65537"],
            ["--keep-cpu", "sometimes"]):
    p = subprocess.run([VMBUILDD] + bad, capture_output=True, text=True)
    ok(p.returncode == 2 and p.stderr.strip(),
       "usage error for %s: exit 2 with a message" % " ".join(bad),
       p.stderr)
done()
