"""vmbdtest - shared by the daemon's protocol tests (imported, not run).

Starts hvsim and vmbuildd in a fresh mktemp -d directory (Host, on
tests/harness/vmbstack.py's Stack, the one launcher of the tests, the
benchmarks and the demo), talks JSON-RPC to the daemon over its socket,
and prints TAP.  Everything started here is killed on exit, by the
process ids recorded when it was started.  vmbuildd's readiness is
observed through sd_notify: the launcher plays systemd's part with a
NOTIFY_SOCKET of its own, so READY=1 is tested too.
HoldProxy, a relay between vmbuildd and hvsim, holds a build in the
middle of populating (used by restart.py and tests/ops).
"""
# The tests take these modules through `from vmbdtest import *` too.
import array
import atexit
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess  # noqa: F401
import sys
import tempfile  # noqa: F401
import threading
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "harness"))
import vmbstack  # noqa: E402
# VMB_BUILD=build/asan (make asan etc.): the binaries of a variant build.
BUILD = os.environ.get("VMB_BUILD", "build")
BIN = os.path.join(TOP, BUILD, "bin")
# make asan/tsan: memory figures mean nothing there (ASan keeps freed
# memory in quarantine, TSan shadows everything); tests skip them.
SANITIZER = os.environ.get("VMBD_SANITIZER", "")
MEMORY_FIGURES = SANITIZER not in ("asan", "tsan")
HVSIM = os.environ.get("HVSIM", os.path.join(BIN, "hvsim"))
VMBUILDD = os.environ.get("VMBUILDD", os.path.join(BIN, "vmbuildd"))
KERNEL = os.path.join(TOP, BUILD, "guest", "hello.elf")
MIB = 1 << 20



def proto_codes(path=os.path.join(TOP, "daemon", "proto.h")):
    """The error codes of daemon/proto.h, by their names there."""
    codes = {}
    with open(path) as f:
        for m in re.finditer(r"^#define\s+((?:RPC|E)_[A-Z_]+)\s+(-?\d+)\b",
                             f.read(), re.M):
            codes[m.group(1)] = int(m.group(2))
    return codes


# RPC_PARSE_ERROR ... E_BAD_STATE, as the daemon has them.
globals().update(proto_codes())


HVABI_H = os.path.join(TOP, "hypervisor", "include", "vmbuild", "hvabi.h")
# hvabi.h's struct hv_msg_hdr: magic u32, version u16, op u16, len u32,
# status i32, seq u64.
HV_HDR = struct.Struct("<IHHIiQ")
HV_MAGIC = 0x4d535648


def hv_ops(path=HVABI_H):
    """enum hv_op of hvabi.h: {"populate": 11, ...} (HV_OP_ in lower
    case), numbered as C numbers them."""
    with open(path) as f:
        body = re.search(r"enum hv_op \{(.*?)\};", f.read(), re.S).group(1)
    ops, n = {}, 0
    for m in re.finditer(r"^\s*HV_OP_([A-Z_0-9]+)(?:\s*=\s*(\d+))?,", body,
                         re.M):
        n = int(m.group(2)) if m.group(2) else n + 1
        if m.group(1) != "MAX":
            ops[m.group(1).lower()] = n
    return ops


def hv_define(name, path=HVABI_H):
    """The value of a numeric #define of hvabi.h (HV_ABI_VERSION, ...)."""
    with open(path) as f:
        return int(re.search(r"^#define\s+%s\s+(0x[0-9a-fA-F]+|\d+)" % name,
                             f.read(), re.M).group(1), 0)


HV_OPS = hv_ops()


def hv_op(name):
    """The number of an op named as in HV_OPS or as in C: "populate",
    "HV_OP_POPULATE"."""
    return HV_OPS[name.lower().removeprefix("hv_op_")]


HV_ABI_VERSION = hv_define("HV_ABI_VERSION")
HV_OP_FAULT = hv_define("HV_OP_FAULT")
HV_FAULT_QUERY, HV_FAULT_FAIL, HV_FAULT_HANG, HV_FAULT_CRASH, \
    HV_FAULT_CLEAR = range(5)


class Hv:
    """One connection to hvsim, for its fault requests (--fault-requests)."""

    HDR = HV_HDR

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        # hvsim binds its socket before it listens: on a busy machine
        # the file can be there a moment before connections are taken.
        for tries in range(100):
            try:
                self.sock.connect(path)
                break
            except ConnectionRefusedError:
                if tries == 99:
                    raise
                time.sleep(0.05)
        self.seq = 0
        self.call(HV_OPS["hello"], b"")

    def close(self):
        self.sock.close()

    def _read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("hvsim closed the connection")
            buf += chunk
        return buf

    def call(self, op, payload):
        """(status, reply payload) of one request."""
        self.seq += 1
        self.sock.sendall(self.HDR.pack(HV_MAGIC, HV_ABI_VERSION, op,
                                        len(payload), 0, self.seq) + payload)
        magic, ver, rop, n, status, seq = self.HDR.unpack(
            self._read(self.HDR.size))
        return status, self._read(n)

    def fault(self, op, nth=1, mode=HV_FAULT_FAIL, errno_=0):
        """Arm a fault at call `nth` from now of op (a name); the counts."""
        st, rep = self.call(HV_OP_FAULT, struct.pack(
            "<HHiII", hv_op(op) if op else 0, mode, errno_, nth, 0))
        if st != 0:
            raise RuntimeError("fault request: status %d" % st)
        calls = struct.unpack_from("<32Q", rep)
        fired, armed = struct.unpack_from("<QI", rep, 256)
        return {"calls": {name: calls[n] for name, n in HV_OPS.items()},
                "fired": fired, "armed": armed}

    def counts(self):
        return self.fault(None, 1, HV_FAULT_QUERY)

    def destroy_all(self):
        """Destroy every domain but 0 (HV_OP_DOMAIN_LIST, _DESTROY)."""
        st, rep = self.call(HV_OPS["domain_list"], struct.pack("<II", 0,
                                                              1024))
        nr = struct.unpack_from("<I", rep)[0]
        size = (len(rep) - 8) // nr if nr else 0
        for i in range(nr):
            domid = struct.unpack_from("<I", rep, 8 + i * size)[0]
            if domid != 0:
                self.call(HV_OPS["domain_destroy"],
                          struct.pack("<II", domid, 0))
        return nr

    def clear(self):
        return self.fault(None, 1, HV_FAULT_CLEAR)


def proc_stat(pid):
    """RSS (bytes), open descriptors, CPU seconds of a process."""
    with open("/proc/%d/status" % pid) as f:
        rss = int(re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
                  .group(1)) * 1024
    nfd = len(os.listdir("/proc/%d/fd" % pid))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return rss, nfd, cpu

_n = 0
_failed = 0


def ok(cond, name, detail=None):
    """One TAP line; `detail` is shown as a comment when it fails."""
    global _n, _failed
    _n += 1
    if cond:
        print("ok %d - %s" % (_n, name), flush=True)
    else:
        _failed += 1
        print("not ok %d - %s" % (_n, name), flush=True)
        if detail is not None:
            for line in str(detail).splitlines()[:20]:
                print("#   " + line, flush=True)
    return cond


def raises(exc, fn, *args, **kwargs):
    """The exception of type `exc` fn(*args, **kwargs) raised, or None
    when it returned (other exceptions propagate): ok(raises(...), ...)
    asserts that a call fails the way it must."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        return e
    return None


def skip(name, why):
    """One TAP line counted as skipped: the check could not run here."""
    global _n
    _n += 1
    print("ok %d - %s # SKIP %s" % (_n, name, why), flush=True)


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line, flush=True)


def done():
    print("1..%d" % _n, flush=True)
    sys.exit(1 if _failed else 0)


def bail(msg):
    ok(False, msg)
    done()


def throwaway_accounts(prefix, what, outsiders=0):
    """A throwaway system group and a member of it, plus `outsiders`
    users in no group, named PREFIX<pid>, PREFIX<pid>m, PREFIX<pid>o...,
    removed at exit: (group, member, [outsider...]).  Skips the test
    (`what`) unless run as root with shadow's tools."""
    if os.geteuid() != 0:
        skip(what, "needs root to create a group and users")
        done()
    for tool in ("groupadd", "useradd", "userdel", "groupdel"):
        if shutil.which(tool) is None:
            skip(what, "%s missing" % tool)
            done()
    tag = "%s%d" % (prefix, os.getpid() % 100000)
    group, member = tag, tag + "m"
    others = [tag + "o" + ("%d" % i if i else "") for i in range(outsiders)]

    def run(*cmd):
        return subprocess.run(cmd, capture_output=True, text=True)

    def cleanup():
        for u in [member] + others:
            run("userdel", u)
        run("groupdel", group)

    atexit.register(cleanup)
    cleanup()
    rs = [run("groupadd", "--system", group),
          run("useradd", "--system", "--no-create-home", "--shell",
              "/usr/sbin/nologin", "--groups", group, member)]
    rs += [run("useradd", "--system", "--no-create-home", "--shell",
               "/usr/sbin/nologin", u) for u in others]
    if any(r.returncode for r in rs):
        bail("cannot create the throwaway accounts: %s" %
             "".join(r.stderr for r in rs))
    return group, member, others


def wait_for(pred, timeout=30):
    """pred()'s first true value, asked every 50 ms; None after timeout
    seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return None


free_port = vmbstack.free_port


FAKE_DM = os.path.join(TOP, "tests", "daemon", "fixtures", "fake-dm.py")


def fake_dm_args(h):
    """vmbuildd's options for HVM guests on hvsim: fixtures/fake-dm.py
    as the device model, the test kernel as hvmloader, 64 KiB of NOPs
    (bios.bin in h's directory) as SeaBIOS."""
    bios = h.path("bios.bin")
    with open(bios, "wb") as f:
        f.write(b"\x90" * 65536)
    return ["--device-model", FAKE_DM, "--hvmloader", KERNEL,
            "--seabios", bios]


def fake_dm_procs(state):
    """Live device models (fake-dm.py, not zombies' empty command lines)
    that the daemon of state directory `state` started, by pid."""
    out = []
    for p in os.listdir("/proc"):
        try:
            cmd = open("/proc/%s/cmdline" % p, "rb").read()
        except OSError:
            continue
        args = cmd.split(b"\0")
        if p.isdigit() and FAKE_DM.encode() in args[:2] and \
                b"-xen-domid" in args and state.encode() in cmd:
            out.append(int(p))
    return out


def guest_cfg(name, mem_mib=64, vcpus=1, extra=()):
    lines = ['name = "%s"' % name, 'type = "pvh"', "memory = %d" % mem_mib,
             "vcpus = %d" % vcpus, 'kernel = "%s"' % KERNEL]
    lines.extend(extra)
    return "\n".join(lines) + "\n"


class Client:
    """One connection to vmbuildd; notifications are queued."""

    def __init__(self, path, timeout=60):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.events = []        # notifications not yet taken by event()
        self.heard = []         # every notification, in arrival order
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send_raw(self, data, fds=()):
        """Send bytes; descriptors go with the first byte (SCM_RIGHTS)."""
        if fds:
            n = socket.send_fds(self.sock, [data], list(fds))
            data = data[n:]
        if data:
            self.sock.sendall(data)

    def read_line(self):
        """One line as bytes; b"" at EOF."""
        while b"\n" not in self.buf:
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                line, self.buf = self.buf, b""
                return line
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def read_msg(self):
        line = self.read_line()
        if not line:
            return None
        return json.loads(line)

    def reply(self, want_id=None):
        """The next reply (skipping and queueing notifications)."""
        while True:
            m = self.read_msg()
            if m is None:
                return None
            if "id" not in m:
                self.events.append(m)
                self.heard.append(m)
                continue
            if want_id is None or m.get("id") == want_id:
                return m

    def call(self, method, params=None, fds=(), **kw):
        rid = self.next_id
        self.next_id += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        req.update(kw)
        self.send_raw((json.dumps(req) + "\n").encode(), fds)
        return self.reply(rid)

    def result(self, method, params=None):
        r = self.call(method, params)
        if r is None or "result" not in r:
            raise RuntimeError("%s: %r" % (method, r))
        return r["result"]

    def event(self, pred=lambda m: True, timeout=60):
        """Next queued or incoming notification matching pred."""
        end = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.events):
                if pred(m):
                    return self.events.pop(i)
            left = end - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                m = self.read_msg()
            except socket.timeout:
                return None
            finally:
                self.sock.settimeout(60)
            if m is None:
                return None
            self.events.append(m)
            self.heard.append(m)


def err_code(r):
    if r is None or "error" not in r:
        return None
    return r["error"].get("code")


class Host(vmbstack.Stack):
    """hvsim + vmbuildd in a temporary directory (tests/harness/
    vmbstack.py's Stack): a failed start bails out, everything is
    stopped at exit, and the logs are shown when a check failed."""

    def __init__(self, hvsim_args=(), daemon_args=()):
        super().__init__(prefix="vmbd-test.", hvsim=HVSIM, vmbuildd=VMBUILDD)
        self.daemon_args = list(daemon_args)
        self.keep = os.environ.get("VMBD_KEEP") == "1"
        atexit.register(self.cleanup)
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))
        for b in (HVSIM, VMBUILDD, KERNEL):
            if not os.path.exists(b):
                bail("missing %s (run make)" % b)
        self.start_hvsim(hvsim_args)

    def start_hvsim(self, args=()):
        try:
            return super().start_hvsim(args)
        except vmbstack.StackError as e:
            bail(str(e))

    def start_daemon(self, extra=(), prefix=(), env=None):
        """Start vmbuildd; returns the seconds until READY=1.  `prefix`
        runs it under another program (which must exec it), `env` adds
        to its environment."""
        args = self.daemon_args + list(extra)
        # The test kernel may be named by path: its folder is an image
        # directory (other files come as descriptors, see send_raw).
        # VMBD_NO_IMAGE_DIR=1 leaves the option out, to run a test
        # against a daemon from before it existed.
        try:
            return super().start_daemon(
                ["-v"] + args +
                ([] if os.environ.get("VMBD_NO_IMAGE_DIR") else
                 ["--image-dir", os.path.dirname(KERNEL)]),
                prefix, dict(os.environ, **(env or {})), metrics="none",
                timeout=120)
        except vmbstack.StackError as e:
            bail(str(e))

    def client(self, timeout=60):
        return Client(self.sock, timeout)

    def record(self, uuid):
        """The VM's state record (parsed), or None."""
        try:
            with open(os.path.join(self.state, uuid + ".json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def log_has(self, text, name="vmbuildd.log", timeout=10):
        """Whether text shows up in the log within timeout seconds.  The
        daemon handles signals and idle timers from its event loop, so
        their log lines may trail a reply the test already has."""
        def seen():
            return text in self.log_tail(name, n=None)
        return wait_for(seen, timeout) is not None

    def cleanup(self):
        self.stop(timeout=10)
        self.d = self.hv = None
        if _failed:
            for name in ("vmbuildd.log", "hvsim.log"):
                diag("--- last lines of " + name)
                diag(self.log_tail(name))
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def wait_scrubbed(self, c, timeout=120):
        """host.scrub once no node has dirty memory; None on timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            s = c.result("host.scrub")
            if all((n["dirty_bytes"] or 0) == 0 for n in s["nodes"]):
                return s
            time.sleep(0.1)
        return None


class HoldProxy:
    """Relays vmbuildd <-> hvsim (hvabi.h framing: a 24-byte header
    {magic u32, version u16, op u16, len u32, status i32, seq u64}, then
    len bytes; descriptors passed with replies are relayed).  While
    armed, every populate request after the first is held until free():
    the domain exists, part of it is populated, and the build waits.
    Other requests go through (libvmbuild uses one connection per call
    in flight, so the daemon keeps answering)."""

    HDR = HV_HDR
    OP_POPULATE = HV_OPS["populate"]

    def __init__(self, path, target):
        self.path, self.target = path, target
        self.lock = threading.Lock()
        self.armed = False
        self.seen = 0
        self.held = threading.Event()
        self.release = threading.Event()
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        self.lsock.listen(64)
        threading.Thread(target=self.accept, daemon=True).start()

    def arm(self):
        with self.lock:
            self.release.clear()
            self.held.clear()
            self.seen = 0
            self.armed = True

    def free(self):
        with self.lock:
            self.armed = False
            self.release.set()

    def accept(self):
        while True:
            client, _ = self.lsock.accept()
            threading.Thread(target=self.relay, args=(client,),
                             daemon=True).start()

    @staticmethod
    def recv_exact(sock, n, fds=None):
        buf = bytearray()
        while len(buf) < n:
            if fds is None:
                chunk = sock.recv(n - len(buf))
            else:
                chunk, anc, _, _ = sock.recvmsg(n - len(buf),
                                                socket.CMSG_SPACE(64))
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and \
                            kind == socket.SCM_RIGHTS:
                        a = array.array("i")
                        a.frombytes(data[:len(data) - len(data) % 4])
                        fds.extend(a)
            if not chunk:
                raise EOFError
            buf += chunk
        return bytes(buf)

    def relay(self, client):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.connect(self.target)
            while True:
                hdr = self.recv_exact(client, self.HDR.size)
                op, length = self.HDR.unpack(hdr)[2:4]
                req = self.recv_exact(client, length) if length else b""
                if op == self.OP_POPULATE:
                    with self.lock:
                        hold = self.armed and self.seen > 0
                        self.seen += 1
                    if hold:
                        self.held.set()
                        self.release.wait()
                server.sendall(hdr + req)
                fds = []
                rhdr = self.recv_exact(server, self.HDR.size, fds)
                rlen = self.HDR.unpack(rhdr)[3]
                rep = self.recv_exact(server, rlen, fds) if rlen else b""
                anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                        array.array("i", fds).tobytes())] if fds else []
                client.sendmsg([rhdr + rep], anc)
                for fd in fds:
                    os.close(fd)
        except (EOFError, OSError):
            pass
        finally:
            client.close()
            server.close()


class HvGuest:
    """Plays a guest's part on hvsim, which runs no guest code: what a
    guest does with SCHEDOP_shutdown (HV_OP_DOMAIN_SHUTDOWN) and with
    its PV control node (HV_OP_DOMAIN_CONTROL: announce features, take
    the toolstack's request).  Speaks hvabi.h's framing."""

    HDR = HV_HDR
    MAGIC = HV_MAGIC
    VERSION = HV_ABI_VERSION
    POWEROFF, REBOOT, SUSPEND, CRASH, WATCHDOG, SOFT_RESET = range(6)
    GET, REQUEST, WITHDRAW, ANNOUNCE, TAKE = range(5)
    F_POWEROFF, F_REBOOT = 1, 2
    NONE = 0xffffffff

    def __init__(self, path):
        self.ops = HV_OPS
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.seq = 0

    def call(self, op, payload):
        self.seq += 1
        self.sock.sendall(self.HDR.pack(self.MAGIC, self.VERSION,
                                        hv_op(op), len(payload), 0,
                                        self.seq) + payload)
        hdr = HoldProxy.recv_exact(self.sock, self.HDR.size)
        status, length = self.HDR.unpack(hdr)[4], self.HDR.unpack(hdr)[3]
        body = HoldProxy.recv_exact(self.sock, length) if length else b""
        return status, body

    def shutdown(self, domid, reason):
        """The guest shuts down with `reason`: 0 or -errno."""
        return self.call("domain_shutdown",
                         struct.pack("<II", domid, reason))[0]

    def control(self, domid, op, value=0):
        """(status, features, request, before) of the control node."""
        st, body = self.call("domain_control",
                             struct.pack("<IIII", domid, op, value, 0))
        if st != 0:
            return (st, None, None, None)
        return (st,) + struct.unpack("<III", body[:12])

    def create(self, name, handle=b"\0" * 16):
        """A domain of no toolstack's (a "foreign" one): its domid."""
        req = struct.pack("<IIQ16s64s", 3, 1, 16384, handle,
                          name.encode())
        st, body = self.call("domain_create", req)
        return struct.unpack("<I", body[:4])[0] if st == 0 else None

    def destroy(self, domid):
        return self.call("domain_destroy",
                         struct.pack("<II", domid, 0))[0]

    def close(self):
        self.sock.close()
