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
"""
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import time

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


def drain(sock, want, timeout=30):
    """Datagrams until one satisfies want(datagram) or time runs out."""
    got, end = [], time.monotonic() + timeout
    while time.monotonic() < end:
        sock.settimeout(max(0.05, end - time.monotonic()))
        try:
            d = sock.recv(1 << 20)
        except socket.timeout:
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
wrap = os.path.join(h.dir, "ns.sh")
with open(wrap, "w") as f:
    f.write("""#!/bin/sh
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
""" % {"j": jpath, "s": spath})
os.chmod(wrap, 0o755)
devlog = os.path.realpath("/dev/log") if os.path.lexists("/dev/log") else ""
ns_ok = (os.geteuid() == 0 and shutil.which("unshare") is not None and
         subprocess.run(["unshare", "--mount", wrap, "true"],
                        capture_output=True).returncode == 0)
syslog_ok = ns_ok and (devlog.startswith("/run/systemd/journal/") or
                       (os.path.exists("/dev/log") and
                        not os.path.islink("/dev/log")))
NS = ["unshare", "--mount", "--propagation", "private", wrap]
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
    raw = drain(jsock, lambda d: b"(domain %d) destroyed" % domid in d)
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
       b.get("CODE_FUNC") == "build_start" and
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
    drain(jsock, lambda d: False, 0.2)

    # --log-target journal, with stderr anything.
    h.start_daemon(prefix=NS, extra=["--log-target", "journal"])
    got = [parse_native(d) for d in drain(
        jsock, lambda d: b"MESSAGE=ready" in d)]
    ok(any(g.get("MESSAGE", "").startswith("ready") for g in got),
       "--log-target journal: entries in the journal without "
       "JOURNAL_STREAM")
    ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
    drain(jsock, lambda d: False, 0.2)
else:
    for name in ("journal: entries with fields", "--log-target journal"):
        skip(name, "needs root and unshare")

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
    got = drain(jsock, lambda d: False, 0.5)
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
        drain(ssock, lambda d: False, 0.2)
        os.kill(pid, signal.SIGHUP)
        got = drain(ssock, lambda d: b"SIGHUP" in d)
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
