#!/usr/bin/env python3
"""connlimits.py - no local user can lock root out of the daemon (issue 17,
part 3).

300 connections to the read-only socket (0666) that send nothing used to
take every slot of one limit shared by both sockets, for ever: root then
got "too many connections" on the control socket.  Now:

  - each socket has its own limit (--max-connections for the control
    socket, --max-ro-connections for the read-only one), so the read-only
    socket's clients never take the control socket's slots;
  - one uid has at most --max-user-connections on both together (root
    excepted), subscribers included;
  - a connection with nothing going on is closed after --idle-timeout,
    counted from the accept; subscribers of events.subscribe idle by
    design and are kept.

Needs root: the flooding clients run as other uids (nobody, and a uid of
no account, so nothing is left behind); each connects and hands its
sockets to the test (SCM_RIGHTS), so that the test holds connections
whose peer credentials are that uid's.
"""
import grp
import os
import pwd
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

if os.geteuid() != 0:
    skip("connection limits", "need root to run clients as other uids")
    done()

NOBODY = pwd.getpwnam("nobody").pw_uid
NOGROUP = grp.getgrgid(pwd.getpwnam("nobody").pw_gid).gr_gid


def unused_uid():
    uid = 61000 + os.getpid() % 2000
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


OTHER = unused_uid()
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else \
    sys.executable
CONNECT = r'''
import socket, sys
path, n, back = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
back = socket.socket(fileno=back)
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    socks.append(s)
for i in range(0, n, 100):
    socket.send_fds(back, [b"x"], [s.fileno() for s in socks[i:i + 100]])
'''


class Peer:
    """A connection made by another uid, held here."""

    def __init__(self, sock):
        self.sock = sock
        self.sock.setblocking(False)
        self.buf = b""
        self.closed = False

    def poll(self):
        """Take what has arrived; note the end (EOF or reset, a client
        the daemon dropped may see either)."""
        while not self.closed:
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.closed = True
            self.buf += chunk

    def said(self, text):
        self.poll()
        return text.encode() in self.buf

    def silent_open(self):
        self.poll()
        return not self.closed and self.buf == b""

    def call(self, method, params=None, timeout=60):
        """A request on the connection, its reply (the test sends it: the
        peer credentials are the uid's that connected)."""
        req = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            req["params"] = params
        self.sock.setblocking(True)
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall((json.dumps(req) + "\n").encode())
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return None
                self.buf += chunk
        except OSError:
            return None
        finally:
            self.sock.setblocking(False)
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def close(self):
        self.sock.close()


def connect_as(uid, gid, path, n):
    """n connections to path made by a process of uid/gid."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    p = subprocess.Popen([PYTHON, "-I", "-c", CONNECT, path, str(n),
                          str(theirs.fileno())], user=uid, group=gid,
                         extra_groups=[], pass_fds=[theirs.fileno()],
                         cwd="/", stderr=subprocess.PIPE)
    theirs.close()
    mine.settimeout(60)
    peers = []
    try:
        while len(peers) < n:
            _, fds, _, _ = socket.recv_fds(mine, 1, 100)
            if not fds:
                break
            peers.extend(Peer(socket.socket(fileno=fd)) for fd in fds)
    except OSError:
        pass
    err = p.communicate(timeout=60)[1]
    mine.close()
    if len(peers) != n:
        bail("uid %d made %d of %d connections to %s: %s" %
             (uid, len(peers), n, path, err.decode(errors="replace")))
    return peers


def root_call(path, method, params=None):
    """The reply to one request of root's on a new connection to path;
    what went wrong when there is none (a refused connection may be
    closed before the request is sent)."""
    try:
        c = Client(path)
        try:
            return c.call(method, params)
        finally:
            c.close()
    except OSError as e:
        return repr(e)


def served(r):
    return isinstance(r, dict) and "result" in r


def count(peers, pred):
    return sum(1 for p in peers if pred(p))


def wait_count(peers, pred, want, timeout=60):
    """Whether `want` peers satisfy pred within timeout seconds."""
    return wait_for(lambda: count(peers, pred) == want, timeout) is not None


HV = ["--nodes", "1", "--cpus-per-node", "1", "--threads-per-core", "1",
      "--mem-per-node", "256M", "--backing", "phantom"]

# --------------------------------- the attack of the issue, with defaults
h = Host(HV)
os.chmod(h.dir, 0o755)
h.start_daemon()
ro = h.sock.replace(".sock", "-ro.sock")
flood = connect_as(NOBODY, NOGROUP, ro, 300)
PER_UID = 32
refused = "too many connections from uid %d (limit %d a user)" % (NOBODY,
                                                                  PER_UID)
ok(wait_count(flood, lambda p: p.said(refused), 300 - PER_UID),
   "300 silent connections of one user to the read-only socket: %d are "
   "refused, saying why" % (300 - PER_UID),
   "%d refused; one reply: %r" % (count(flood, lambda p: p.said(refused)),
                                  [p.buf for p in flood if p.buf][:1]))
ok(count(flood, Peer.silent_open) == PER_UID, "the first %d are taken and "
   "held open" % PER_UID)
r = root_call(h.sock, "vm.list")
ok(served(r), "root is served on the control socket meanwhile", r)
r = root_call(ro, "server.hello")
ok(served(r), "and on the read-only socket", r)
other = connect_as(OTHER, OTHER, ro, 1)[0]
r = other.call("vm.list")
ok(r is not None and "result" in r, "another user still gets in", r)
other.close()
ok(h.log_has("refused: " + refused), "the log says whose connections are "
   "refused and why")
for p in flood:
    p.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# ----------------------------- separate limits per socket, subscribers count
MAX_RO, PER_UID = 6, 4
h = Host(HV, ["--max-ro-connections", str(MAX_RO), "--max-user-connections",
              str(PER_UID), "--group", grp.getgrgid(NOGROUP).gr_name])
os.chmod(h.dir, 0o755)
h.start_daemon()
ro = h.sock.replace(".sock", "-ro.sock")
subs = connect_as(OTHER, OTHER, ro, PER_UID)
rs = [p.call("events.subscribe", {"events": ["vm.state"]}) for p in subs]
ok(all(r is not None and "result" in r for r in rs),
   "%d subscribers of one user on the read-only socket" % PER_UID, rs)
extra = connect_as(OTHER, OTHER, ro, 1)
ok(wait_count(extra, lambda p: p.said("too many connections from uid %d "
                                      "(limit %d a user)" % (OTHER,
                                                             PER_UID)), 1),
   "one more from that user is refused: subscribers count against the "
   "user's limit", extra[0].buf)
flood = connect_as(NOBODY, NOGROUP, ro, 4)
full = "too many connections to the read-only socket (limit %d)" % MAX_RO
ok(wait_count(flood, lambda p: p.said(full), 2) and
   count(flood, Peer.silent_open) == 2,
   "another user fills the read-only socket (%d): the rest are refused "
   "with --max-ro-connections" % MAX_RO, [p.buf for p in flood])
r = root_call(h.sock, "vm.list")
ok(served(r), "root is served on the control socket, whose slots the "
   "read-only socket's clients cannot take", r)
member = connect_as(OTHER + 1, NOGROUP, h.sock, 1)[0]
r = member.call("vm.pause", {"vm": "nosuch"})
ok(err_code(r) == E_NO_SUCH_VM, "and so is a member of the group (a write "
   "method is tried: not found, not refused)", r)
member.close()
for p in subs + extra + flood:
    p.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# --------------------------------------------------------- idle timeout
IDLE = 2
h = Host(HV, ["--idle-timeout", str(IDLE)])
os.chmod(h.dir, 0o755)
h.start_daemon()
ro = h.sock.replace(".sock", "-ro.sock")
sub = connect_as(OTHER, OTHER, ro, 1)[0]
r = sub.call("events.subscribe", {"events": ["vm.state"]})
ok(r is not None and "result" in r, "a subscriber on the read-only socket",
   r)
silent = connect_as(NOBODY, NOGROUP, ro, 3)
talked = connect_as(NOBODY, NOGROUP, ro, 1)[0]
r = talked.call("server.hello")
ok(r is not None and "result" in r, "a client that makes a request")
idled = "idle for %d s, closing" % IDLE
ok(wait_count(silent + [talked], lambda p: p.said(idled) and p.closed, 4),
   "the connections that send nothing, and the one that sent nothing "
   "more, are closed after --idle-timeout (%d s), saying why" % IDLE,
   [(p.buf, p.closed) for p in silent + [talked]])
ok(h.log_has("did nothing for %d s, closing" % IDLE), "and the log says so")
ok(sub.silent_open(), "the subscriber, idle as long, is kept", sub.buf)
c = h.client()
c.result("vm.create", {"guest": {"name": "ev", "memory": 16,
                                 "kernel": KERNEL}, "wait": True})
c.close()
sub.sock.setblocking(True)
sub.sock.settimeout(60)
line = b""
try:
    while b"\n" not in sub.buf:
        chunk = sub.sock.recv(65536)
        if not chunk:
            break
        sub.buf += chunk
    line = sub.buf.split(b"\n", 1)[0]
except OSError:
    pass
ok(b'"vm.state"' in line, "and gets its events", line)
sub.close()
for p in silent + [talked]:
    p.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
