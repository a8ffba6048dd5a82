#!/usr/bin/env python3
"""journal.py - where vmbuildd's messages go, and what they carry.

- Under systemd, when stderr is the journal's stream (JOURNAL_STREAM
  names its device and inode), and with --log-target journal: entries in
  systemd's native protocol with PRIORITY, MESSAGE, SYSLOG_IDENTIFIER,
  CODE_FILE/CODE_LINE/CODE_FUNC, and VMBUILD_VM, VMBUILD_DOMID and
  VMBUILD_TASK for messages about a VM; nothing on stderr.
- Otherwise (JOURNAL_STREAM names another stream, or is unset): one
  line per message on stderr, "<PRIO>message".
- Without --foreground: the parent exits once the daemon is ready; the
  daemon then holds no terminal (no controlling tty, not a session
  leader, stdin, stdout and stderr on /dev/null), keeps serving after
  the terminal it was started from closes, and logs to syslog.

No journald runs here (nor in CI): the daemon runs in a private mount
namespace where /run/systemd/journal/socket and dev-log (which /dev/log
points to on a systemd host) are sockets this test binds.  That needs
root and unshare(1); without them those checks are skipped.

The test's sockets are read all the time, by a thread each, as journald
reads its own: a datagram socket's queue holds as few as
net.unix.max_dgram_qlen datagrams (10 on some machines).  A journal
that is never read (a stalled journald) must not stop the daemon: the
control socket keeps answering, and vmbuild_log_dropped_total counts
what was lost.
"""
import os
import pty
import queue
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403


def parse_native(data):
    """Fields of one datagram of the native protocol: KEY=VALUE lines, or
    KEY, a newline, a 64-bit little-endian length and the binary value."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            k, v = line.split(b"=", 1)
            i = nl + 1
        else:
            k = line
            (n,) = struct.unpack("<Q", data[nl + 1:nl + 9])
            v = data[nl + 9:nl + 9 + n]
            i = nl + 9 + n + 1
        fields[k.decode()] = v.decode(errors="replace")
    return fields


class Reader:
    """Reads a datagram socket from a thread of its own, all the time, so
    that the sender never finds its queue full; get() takes what came."""

    def __init__(self, sock):
        self.sock, self.q = sock, queue.Queue()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                self.q.put(self.sock.recv(1 << 20))
            except OSError:
                return

    def get(self, timeout):
        try:
            return self.q.get(timeout=max(0.01, timeout))
        except queue.Empty:
            return None


def drain(reader, want, timeout=30):
    """Datagrams until one satisfies want(datagram) or time runs out."""
    got, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        d = reader.get(end - time.monotonic())
        if d is None:
            break
        got.append(d)
        if want(d):
            break
    return got


h = Host(["--nodes", "1", "--cpus-per-node", "2", "--threads-per-core",
          "1", "--mem-per-node", "256M", "--backing", "phantom"])
log_path = os.path.join(h.dir, "vmbuildd.log")

# ------------------------------------------------ the sockets in a namespace
jpath = os.path.join(h.dir, "journal.sock")
spath = os.path.join(h.dir, "devlog.sock")
jsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
jsock.bind(jpath)
ssock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
ssock.bind(spath)
jread, sread = Reader(jsock), Reader(ssock)
# A journal and a syslog that take nothing: bound, never read.
stalled_socks = {n: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
           for n in ("journal", "syslog")}
for n, sk in stalled_socks.items():
    sk.bind(os.path.join(h.dir, "stalled-%s.sock" % n))
NS_SCRIPT = """#!/bin/sh
# Run "$@" where journald's sockets are the test's: a tmpfs over
# /run/systemd (or /run) in this private mount namespace, and /dev/log
# there too when it is a socket of its own.
set -e
if [ -d /run/systemd ]; then
	mount -t tmpfs -o mode=0755 tmpfs /run/systemd
else
	mount -t tmpfs -o mode=0755 tmpfs /run
	mkdir /run/systemd
fi
mkdir /run/systemd/journal
ln -s %(j)s /run/systemd/journal/socket
ln -s %(s)s /run/systemd/journal/dev-log
if [ -S /dev/log ] && [ ! -L /dev/log ]; then
	mount --bind %(s)s /dev/log
fi
exec "$@"
"""


def ns_wrapper(name, j, s):
    """A script that runs "$@" with journald's sockets at j and s."""
    path = os.path.join(h.dir, name)
    with open(path, "w") as f:
        f.write(NS_SCRIPT % {"j": j, "s": s})
    os.chmod(path, 0o755)
    return path


wrap = ns_wrapper("ns.sh", jpath, spath)
wrap_stalled = ns_wrapper("ns-stalled.sh",
                          stalled_socks["journal"].getsockname(),
                          stalled_socks["syslog"].getsockname())
devlog = os.path.realpath("/dev/log") if os.path.lexists("/dev/log") else ""
ns_ok = (os.geteuid() == 0 and shutil.which("unshare") is not None and
         subprocess.run(["unshare", "--mount", wrap, "true"],
                        capture_output=True).returncode == 0)
syslog_ok = ns_ok and (devlog.startswith("/run/systemd/journal/") or
                       (os.path.exists("/dev/log") and
                        not os.path.islink("/dev/log")))
NS = ["unshare", "--mount", "--propagation", "private", wrap]
NS_STALLED = NS[:-1] + [wrap_stalled]
if not ns_ok:
    diag("no private mount namespace here (needs root and unshare): "
         "the journal and syslog checks are skipped")


def log_text():
    with open(log_path, errors="replace") as f:
        return f.read()


# ------------------------------------------- JOURNAL_STREAM is our stderr
if ns_ok:
    open(log_path, "ab").close()
    st = os.stat(log_path)
    h.start_daemon(prefix=NS,
                   env={"JOURNAL_STREAM": "%d:%d" % (st.st_dev, st.st_ino)})
    c = h.client()
    r = c.result("vm.create", {"config": guest_cfg("j1", 32), "wait": True})
    domid = r["vm"]["id"]
    task = r["task"]
    bad = c.call("vm.create", {"config": guest_cfg("j2", 1 << 20),
                               "wait": True})
    c.result("vm.destroy", {"vm": "j1"})
    c.close()
    raw = drain(jread, lambda d: b"(domain %d) destroyed" % domid in d)
    got = [parse_native(d) for d in raw]
    msgs = [g.get("MESSAGE", "") for g in got]
    building = [g for g in got if "building j1" in g.get("MESSAGE", "")]
    ok(len(building) == 1, "journal: an entry for the build's start",
       "\n".join(msgs))
    b = building[0] if building else {}
    ok(b.get("PRIORITY") == "6" and b.get("SYSLOG_IDENTIFIER") ==
       "vmbuildd" and b.get("VMBUILD_VM") == "j1" and
       b.get("VMBUILD_TASK") == str(task) and "VMBUILD_DOMID" not in b,
       "journal: PRIORITY=6, SYSLOG_IDENTIFIER, VMBUILD_VM and "
       "VMBUILD_TASK (no domain yet)", b)
    # One value per field: libsystemd must not add a location of its own.
    ok(all(d.count(b"\nCODE_FILE=") + d.startswith(b"CODE_FILE=") == 1
           for d in raw),
       "journal: one CODE_FILE per entry")
    ok(b.get("CODE_FILE", "").endswith("daemon/build.c") and
       b.get("CODE_FUNC") == "build_task_start" and
       b.get("CODE_LINE", "").isdigit(),
       "journal: CODE_FILE, CODE_LINE, CODE_FUNC where it was said", b)
    built = [g for g in got if g.get("MESSAGE", "").startswith("j1: domain")]
    ok(len(built) == 1 and built[0].get("VMBUILD_DOMID") == str(domid) and
       built[0].get("VMBUILD_TASK") == str(task),
       "journal: the built VM's entry has VMBUILD_DOMID=%d" % domid,
       built)
    failed = [g for g in got if g.get("VMBUILD_VM") == "j2" and
              "failed" in g.get("MESSAGE", "")]
    ok(err_code(bad) is not None and len(failed) == 1 and
       failed[0].get("PRIORITY") == "4",
       "journal: a failed build is a warning (PRIORITY=4) about j2",
       failed or msgs)
    gone = [g for g in got if "destroyed" in g.get("MESSAGE", "")]
    ok(len(gone) == 1 and gone[0].get("VMBUILD_DOMID") == str(domid) and
       gone[0].get("VMBUILD_VM") == "j1", "journal: destroy names the VM "
       "and its domain", gone)
    plain = [g for g in got if "VMBUILD_VM" not in g and
             g.get("MESSAGE", "").startswith("ready")]
    ok(len(plain) == 1 and plain[0].get("PRIORITY") == "5",
       "journal: a message about no VM has no VMBUILD_ fields (ready, "
       "PRIORITY=5)", msgs)
    ok("building j1" not in log_text(), "journal: nothing of it on stderr")
    ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
    drain(jread, lambda d: False, 0.2)

    # --log-target journal, with stderr anything.
    h.start_daemon(prefix=NS, extra=["--log-target", "journal"])
    got = [parse_native(d) for d in drain(
        jread, lambda d: b"MESSAGE=ready" in d)]
    ok(any(g.get("MESSAGE", "").startswith("ready") for g in got),
       "--log-target journal: entries in the journal without "
       "JOURNAL_STREAM")
    ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
    drain(jread, lambda d: False, 0.2)
else:
    for name in ("journal: entries with fields", "--log-target journal"):
        skip(name, "needs root and unshare")


def dropped_total(port):
    """vmbuild_log_dropped_total of the daemon's /metrics, or None."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=30) as r:
            text = r.read().decode()
    except OSError as e:
        diag("metrics: %r" % e)
        return None
    for ln in text.splitlines():
        if ln.startswith("vmbuild_log_dropped_total "):
            return float(ln.split()[1])
    return None


def stalled(target):
    """--log-target `target` where it takes nothing (journald or the
    syslog daemon stalled, their queues full): the daemon keeps
    answering, counts what it drops, and says so once it can log again.
    Each request is logged (-v: "conn N: server.hello")."""
    port = free_port()
    start = len(log_text()) if os.path.exists(log_path) else 0
    h.start_daemon(prefix=NS_STALLED, extra=[
        "--log-target", target, "--metrics", "127.0.0.1:%d" % port])
    answered, n = 0, 200
    try:
        c = h.client(timeout=20)
        for _ in range(n):
            c.result("server.hello")
            answered += 1
        c.close()
    except (OSError, RuntimeError) as e:
        diag("request %d: %r" % (answered + 1, e))
    ok(answered == n, "%s takes nothing: the control socket answers all "
       "%d requests (%d)" % (target, n, answered))
    before = dropped_total(port)
    ok("server.hello" not in log_text()[start:],
       "%s takes nothing: nothing of it on stderr" % target)
    ok(before is not None and before > 0,
       "%s takes nothing: vmbuild_log_dropped_total counts the messages "
       "dropped (%s)" % (target, before))
    # journald catches up: what it still holds is read, then the next
    # message is followed by the count of those dropped.
    sk = stalled_socks[target]
    sk.setblocking(False)
    try:
        while True:
            sk.recv(1 << 20)
    except BlockingIOError:
        pass
    sk.setblocking(True)
    reader = Reader(sk)
    c = h.client(timeout=20)
    got = []
    for _ in range(10):
        c.result("server.hello")
        got += drain(reader, lambda d: b"log messages dropped" in d, 3)
        if any(b"log messages dropped" in d for d in got):
            break
    c.close()
    said = [d.decode(errors="replace") for d in got
            if b"log messages dropped" in d]
    m = re.search(r"(\d+) log messages dropped: %s was not taking them "
                  r"\((\d+) since start\)" % target, said[0]) \
        if len(said) == 1 else None
    ok(m and int(m.group(1)) > 0 and int(m.group(2)) >= before,
       "%s takes messages again: one line says how many were dropped" %
       target, said or got[-3:])
    ok(h.stop_daemon() == 0, "SIGTERM: clean exit")


if ns_ok:
    stalled("journal")
else:
    skip("a journal that takes nothing", "needs root and unshare")
if syslog_ok:
    stalled("syslog")
else:
    skip("a syslog that takes nothing", "needs root, unshare and /dev/log")

# ----------------------------------- JOURNAL_STREAM names another stream
before = len(log_text()) if os.path.exists(log_path) else 0
h.start_daemon(prefix=NS if ns_ok else (),
               env={"JOURNAL_STREAM": "1:1"})
c = h.client()
c.result("vm.create", {"config": guest_cfg("s1", 32), "wait": True})
c.result("vm.destroy", {"vm": "s1"})
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
text = log_text()[before:]
ok("<6>task " in text and "building s1" in text and "<5>ready" in text,
   "another stream in JOURNAL_STREAM: lines on stderr with their level",
   text[-2000:])
if ns_ok:
    got = drain(jread, lambda d: False, 0.5)
    ok(not got, "and nothing in the journal", got[:3])

# ------------------------------------------------------ daemonised
# Started from a terminal (a pty) without --foreground; the parent exits
# once the daemon is ready, then the terminal closes.
master, slave = pty.openpty()
p = subprocess.Popen((NS if syslog_ok else []) + [
    VMBUILDD, "--metrics", "none", "--hypervisor", "sim:" + h.hv_sock,
    "--socket", h.sock, "--state-dir", h.state],
    stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
os.close(slave)
try:
    rc = p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
    rc = p.wait()
ok(rc == 0, "without --foreground the parent exits 0 once ready (%s)" % rc)
os.close(master)        # the terminal is gone
pid = None
try:
    c = h.client()
    pid = c.result("server.hello")["pid"]
    c.close()
except (OSError, RuntimeError) as e:
    diag(repr(e))
ok(pid is not None, "the daemon serves after its terminal closed (pid %s)"
   % pid)
if pid is not None:
    fds = {n: os.readlink("/proc/%d/fd/%d" % (pid, n)) for n in (0, 1, 2)}
    ok(all(v == "/dev/null" for v in fds.values()),
       "stdin, stdout and stderr are /dev/null", fds)
    with open("/proc/%d/stat" % pid) as f:
        stat = f.read().rsplit(")", 1)[1].split()
    # Fields 6 (session) and 7 (tty_nr), counted from 1 with pid first.
    ok(int(stat[3]) != pid and int(stat[4]) == 0,
       "no controlling terminal, and no session leader that could get one "
       "(session %s, tty %s)" % (stat[3], stat[4]))
    if syslog_ok:
        drain(sread, lambda d: False, 0.2)
        os.kill(pid, signal.SIGHUP)
        got = drain(sread, lambda d: b"SIGHUP" in d)
        line = [d.decode(errors="replace") for d in got if b"SIGHUP" in d]
        # <30>: facility daemon (3) * 8 + info (6).
        ok(len(line) == 1 and line[0].startswith("<30>") and
           ("vmbuildd[%d]:" % pid) in line[0],
           "then messages go to syslog (facility daemon, tag vmbuildd)",
           line or got[:3])
    else:
        skip("then messages go to syslog",
             "needs root, unshare and /dev/log")
    os.kill(pid, signal.SIGTERM)
    for _ in range(400):
        if not os.path.exists("/proc/%d" % pid):
            break
        time.sleep(0.05)
    ok(not os.path.exists("/proc/%d" % pid), "and stops on SIGTERM")

p = subprocess.run([VMBUILDD, "--log-target", "kmsg"], capture_output=True,
                   text=True)
ok(p.returncode == 2 and "--log-target" in p.stderr,
   "--log-target kmsg: usage error", p.stderr)
done()
