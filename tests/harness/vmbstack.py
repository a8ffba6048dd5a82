#!/usr/bin/python3
"""vmbstack - a private vmbuild stack for tests, benchmarks and the demo.

One way to start hvsim and vmbuildd in a directory of their own, wait
until they are ready, and stop them again by the process ids recorded
when they were started (never by name).  Python imports the Stack class
(tests/daemon/vmbdtest.py's Host is one); shell scripts use the command
line, through tests/harness/stack.sh.

Files in the stack's directory:
    NAME.sock, NAME.log   hvsim instance NAME ("hvsim" unless named)
    control.sock          vmbuildd's control socket
    state/                vmbuildd's state directory
    vmbuildd.log          vmbuildd's stdout and stderr (appended)
    notify.sock           the NOTIFY_SOCKET vmbuildd's READY=1 comes on
    stack.sock            the supervisor's socket (command line only)

Ready means: hvsim has logged "hvsim: serving" (after hv_init, so after
a boot scrub that runs before serving); vmbuildd has sent READY=1 on
NOTIFY_SOCKET, as systemd would have it.  Logs are appended to and only
the part written since the start is searched, so a restart in the same
directory waits for its own line.

Command line (DIR exists; each command prints shell assignments):
    vmbstack.py serve DIR
        the supervisor: the parent of everything started in DIR, so that
        the caller's shell can reap it; runs until `down`, SIGTERM or
        its parent's death, and stops what it started on the way out.
    vmbstack.py hvsim DIR [--name N] [--socket P] [--timeout S] [-- ARGS]
        VMB_HV_PID, VMB_HV_SOCK, VMB_HV_LOG
    vmbstack.py daemon DIR [--hv-socket P] [--socket P] [--state P]
                           [--metrics auto|none|ADDR] [--timeout S] [-- ARGS]
        VMB_D_PID, VMB_SOCK, VMB_STATE, VMB_METRICS ("" for none),
        VMB_D_LOG, VMB_READY_SECONDS
    vmbstack.py stop DIR [--signal SIG] [NAME|PID ...]
        stop those ("vmbuildd", an hvsim name, a pid), or all, daemons
        first: SIG (TERM), SIGKILL after 10 s; one line "NAME PID STATUS"
        each, STATUS as the shell's $? has it (137: SIGKILL)
    vmbstack.py down DIR                    stop all, end the supervisor
A command fails (exit 1, the reason on stderr, nothing on stdout) when
the program exits or is not ready within its timeout.
"""
import argparse
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# VMB_BUILD=build/asan (make asan etc.): the binaries of a variant build.
BUILD = os.environ.get("VMB_BUILD", "build")
BIN = os.path.join(TOP, BUILD, "bin")
HVSIM = os.environ.get("HVSIM", os.path.join(BIN, "hvsim"))
VMBUILDD = os.environ.get("VMBUILDD", os.path.join(BIN, "vmbuildd"))
HVSIM_READY = b"hvsim: serving"
DAEMON = "vmbuildd"


class StackError(Exception):
    """A program of the stack did not start, or not in time."""


def free_port():
    """A free TCP port on loopback."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def last_line(text, log):
    """The last line a program wrote (bytes), and where the rest is."""
    lines = text.decode(errors="replace").strip().splitlines()
    return "%s(see %s)" % (lines[-1] + " " if lines else "", log)


def exit_text(rc):
    return "killed by signal %d" % -rc if rc < 0 else "status %d" % rc


class Stack:
    """hvsim instances and one vmbuildd in one directory.

    hv, d: the Popen of the last hvsim and of vmbuildd (None when not
    started or stopped); hv_sock, sock, state: their paths; notes: the
    sd_notify messages of the last daemon start, up to READY=1.  A
    caller may stop or replace hv and d itself (and set them to None).
    """

    def __init__(self, dir=None, prefix="vmbstack.", hvsim=None,
                 vmbuildd=None):
        if dir is None:
            dir = tempfile.mkdtemp(prefix=prefix)
        self.dir = dir
        self.hvsim = hvsim or HVSIM
        self.vmbuildd = vmbuildd or VMBUILDD
        self.hv_sock = self.path("hvsim.sock")
        self.sock = self.path("control.sock")
        self.state = self.path("state")
        self.hv = None
        self.d = None
        self.notes = []
        self.metrics = None
        self.procs = []   # [name, Popen] started and not stopped yet

    def path(self, name):
        return os.path.join(self.dir, name)

    def _spawn(self, name, argv, log, env=None, cwd=None):
        # subprocess.Popen looked up at each call: a test may wrap it
        # (tests/daemon/flood.py limits vmbuildd's descriptors that way).
        with open(log, "ab") as f:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                 stderr=f, env=env, cwd=cwd)
        self.procs.append([name, p])
        return p

    @staticmethod
    def _log_size(log):
        try:
            return os.path.getsize(log)
        except OSError:
            return 0

    @staticmethod
    def _log_since(log, offset):
        try:
            with open(log, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def start_hvsim(self, args=(), name="hvsim", sock=None, env=None,
                    cwd=None, timeout=600):
        """Start hvsim NAME on sock (DIR/NAME.sock) and wait until it
        serves; its Popen (also self.hv)."""
        sock = sock or self.path(name + ".sock")
        log = self.path(name + ".log")
        offset = self._log_size(log)
        p = self._spawn(name, [self.hvsim, "--socket", sock] + list(args),
                        log, env, cwd)
        self.hv = p
        if name == "hvsim":
            self.hv_sock = sock
        what = "hvsim" if name == "hvsim" else "hvsim " + name
        end = time.monotonic() + timeout
        while HVSIM_READY not in self._log_since(log, offset):
            rc = p.poll()
            if rc is not None:
                raise StackError("%s exited with %s before serving: %s" %
                                 (what, exit_text(rc),
                                  last_line(self._log_since(log, offset),
                                            log)))
            if time.monotonic() > end:
                raise StackError("%s does not serve after %d s (see %s)" %
                                 (what, timeout, log))
            time.sleep(0.05)
        return p

    def _daemon_once(self, argv, env, cwd, log, timeout):
        """Start vmbuildd once; (Popen, None when it sent READY=1 or its
        exit status when it exited first)."""
        notify = self.path("notify.sock")
        if os.path.exists(notify):
            os.unlink(notify)
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            ns.bind(notify)
            env = dict(env if env is not None else os.environ,
                       NOTIFY_SOCKET=notify)
            p = self.d = self._spawn(DAEMON, argv, log, env, cwd)
            self.notes = []
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                # Asked before reading, so that a message sent just
                # before it exited is still read.
                rc = p.poll()
                ns.settimeout(0 if rc is not None else 0.2)
                try:
                    msg = ns.recv(4096).decode(errors="replace")
                except (socket.timeout, BlockingIOError):
                    if rc is not None:
                        return p, rc
                    continue
                self.notes.append(msg)
                if "READY=1" in msg.split("\n"):
                    return p, None
            raise StackError("vmbuildd sent no READY=1 in %d s (see %s)" %
                             (timeout, log))
        finally:
            ns.close()

    def start_daemon(self, args=(), prefix=(), env=None, cwd=None,
                     hv_sock=None, sock=None, state=None, metrics="none",
                     timeout=60):
        """Start vmbuildd on hvsim's socket and wait for READY=1; the
        seconds that took.  metrics: "none", "auto" (a free loopback
        port, taken again if another process binds it first) or an
        address; ignored when args has --metrics.  prefix runs vmbuildd
        under another program (which must exec it), env replaces the
        environment (None: this one)."""
        hv_sock = hv_sock or self.hv_sock
        self.sock = sock or self.sock
        self.state = state or self.state
        log = self.path(DAEMON + ".log")
        args = list(args)
        t0 = time.monotonic()
        for attempt in range(3):
            extra = []
            self.metrics = None
            if "--metrics" not in args:
                self.metrics = ("127.0.0.1:%d" % free_port()
                                if metrics == "auto" else metrics)
                extra = ["--metrics", self.metrics]
            offset = self._log_size(log)
            p, rc = self._daemon_once(
                list(prefix) + [self.vmbuildd, "--hypervisor",
                                "sim:" + hv_sock, "--socket", self.sock,
                                "--state-dir", self.state, "--foreground"] +
                args + extra, env, cwd, log, timeout)
            if rc is None:
                return time.monotonic() - t0
            self.d = None
            said = self._log_since(log, offset)
            # The free port was taken between free_port() and the bind.
            if not (metrics == "auto" and extra and
                    b"Address already in use" in said):
                break
        raise StackError("vmbuildd exited with %s before READY=1: %s" %
                         (exit_text(rc), last_line(said, log)))

    @staticmethod
    def stop_proc(p, sig=signal.SIGTERM, timeout=10):
        """Send sig to p, wait up to timeout seconds, then SIGKILL; its
        exit status."""
        if p.poll() is None:
            p.send_signal(sig)
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait()

    def stop_daemon(self, sig=signal.SIGTERM, timeout=60):
        """Stop vmbuildd; its exit status (None when none runs)."""
        if self.d is None:
            return None
        rc = self.stop_proc(self.d, sig, timeout)
        self.d = None
        return rc

    def stop(self, which=(), timeout=10, sig=signal.SIGTERM):
        """Stop the processes named (a name or a pid each), all when
        none is: daemons first, then hvsim; sig first, SIGKILL after
        timeout seconds.  [(name, pid, status)]."""
        want = [str(w) for w in which]
        # hv and d as the caller may have replaced them.
        procs = self.procs + [[n, p] for n, p in ((DAEMON, self.d),
                                                  ("hvsim", self.hv))
                              if p is not None and
                              all(p is not e[1] for e in self.procs)]
        picked = [e for e in procs
                  if not want or e[0] in want or str(e[1].pid) in want]
        picked.sort(key=lambda e: e[0] != DAEMON)
        done = []
        for name, p in picked:
            done.append((name, p.pid, self.stop_proc(p, sig, timeout)))
            if p is self.d:
                self.d = None
            if p is self.hv:
                self.hv = None
        # Reported: forgotten (a process that ended by itself stays
        # until then, with its status).
        self.procs = [e for e in self.procs if e not in picked]
        return done

    def log_tail(self, name=DAEMON + ".log", n=30):
        try:
            with open(self.path(name), errors="replace") as f:
                return f.read() if n is None else \
                    "".join(f.readlines()[-n:])
        except OSError:
            return ""


# ------------------------------------------------------------ command line
def assignments(pairs):
    return "".join("%s=%s\n" % (k, shlex.quote(str(v))) for k, v in pairs)


def handle(stack, req):
    """One supervisor request: the text for the caller's stdout (raises
    StackError when it cannot be done)."""
    op = req["op"]
    env, cwd = req.get("env"), req.get("cwd")
    if op == "hvsim":
        sock = req.get("socket") or stack.path(req["name"] + ".sock")
        p = stack.start_hvsim(req["args"], req["name"], sock, env, cwd,
                              req["timeout"])
        return assignments([("VMB_HV_PID", p.pid), ("VMB_HV_SOCK", sock),
                            ("VMB_HV_LOG", stack.path(req["name"] + ".log"))])
    if op == "daemon":
        if stack.d is not None and stack.d.poll() is None:
            raise StackError("vmbuildd runs already (pid %d)" % stack.d.pid)
        secs = stack.start_daemon(req["args"], (), env, cwd,
                                  req.get("hv_socket"), req.get("socket"),
                                  req.get("state"), req["metrics"],
                                  req["timeout"])
        return assignments([("VMB_D_PID", stack.d.pid),
                            ("VMB_SOCK", stack.sock),
                            ("VMB_STATE", stack.state),
                            ("VMB_METRICS", stack.metrics
                             if stack.metrics not in (None, "none") else ""),
                            ("VMB_D_LOG", stack.path(DAEMON + ".log")),
                            ("VMB_READY_SECONDS", "%.3f" % secs)])
    if op in ("stop", "down"):
        sig = req.get("signal") or "TERM"
        sig = int(sig) if sig.isdigit() else \
            signal.Signals["SIG" + sig.upper().removeprefix("SIG")]
        which = req.get("which", ())
        done = stack.stop(which, sig=sig)
        if which and not done:
            raise StackError("no %s in this stack" % " or ".join(which))
        # As the shell has it: 128 + the signal that killed it.
        return "".join("%s %d %d\n" % (n, pid, 128 - rc if rc < 0 else rc)
                       for n, pid, rc in done)
    raise StackError("unknown request %r" % op)


def serve(dir):
    """The supervisor loop: requests on DIR/stack.sock, one at a time."""
    stack = Stack(dir)
    path = stack.path("stack.sock")
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *a: sys.exit(129))
    if os.path.exists(path):
        os.unlink(path)
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path + ".new")
    ls.listen(16)
    ls.settimeout(0.2)
    os.rename(path + ".new", path)   # there only once it listens
    try:
        while True:
            try:
                conn, _ = ls.accept()
            except socket.timeout:
                # A reaped child is no zombie; an orphaned stack no leak.
                for e in stack.procs:
                    e[1].poll()
                if os.getppid() != parent:
                    return 1
                continue
            with conn, conn.makefile("rwb") as f:
                req = json.loads(f.readline())
                try:
                    rep = {"ok": True, "out": handle(stack, req)}
                except (StackError, OSError) as e:
                    rep = {"ok": False, "error": str(e)}
                f.write((json.dumps(rep) + "\n").encode())
                f.flush()
            if req["op"] == "down":
                return 0
    finally:
        stack.stop()
        ls.close()
        for f in (path, stack.path("notify.sock")):
            if os.path.exists(f):
                os.unlink(f)


def request(dir, req, timeout):
    """Send one request to DIR's supervisor; its reply."""
    path = os.path.join(dir, "stack.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        s.close()
        raise StackError("no supervisor at %s (%s; vmbstack.py serve %s "
                         "first)" % (path, e.strerror, dir))
    s.settimeout(timeout + 120)
    with s, s.makefile("rwb") as f:
        f.write((json.dumps(dict(req, env=dict(os.environ),
                                 cwd=os.getcwd())) + "\n").encode())
        f.flush()
        line = f.readline()
    if not line:
        raise StackError("the supervisor of %s went away" % dir)
    return json.loads(line)


def main(argv):
    ap = argparse.ArgumentParser(prog="vmbstack.py", description=(
        "A private hvsim + vmbuildd stack (see the module's docstring)."))
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("serve").add_argument("dir")
    hv = sub.add_parser("hvsim")
    hv.add_argument("dir")
    hv.add_argument("--name", default="hvsim")
    hv.add_argument("--socket")
    hv.add_argument("--timeout", type=float, default=600)
    d = sub.add_parser("daemon")
    d.add_argument("dir")
    d.add_argument("--hv-socket")
    d.add_argument("--socket")
    d.add_argument("--state")
    d.add_argument("--metrics", default="auto")
    d.add_argument("--timeout", type=float, default=60)
    st = sub.add_parser("stop")
    st.add_argument("dir")
    st.add_argument("--signal", default="TERM")
    st.add_argument("which", nargs="*")
    sub.add_parser("down").add_argument("dir")
    # The program's arguments follow "--", whatever they look like
    # (argparse's own handling of "--" varies between versions).
    args = []
    if "--" in argv:
        args = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    # Names after an option are left over by argparse: stop's too.
    a, more = ap.parse_known_args(argv)
    if more and a.cmd != "stop":
        ap.error("unrecognized arguments: %s" % " ".join(more))
    if more:
        a.which += more
    a.args = args
    if a.cmd == "serve":
        return serve(a.dir)
    req = {k: v for k, v in vars(a).items() if k not in ("cmd", "dir")}
    req["op"] = a.cmd
    try:
        rep = request(a.dir, req, getattr(a, "timeout", 60))
    except (StackError, OSError) as e:
        rep = {"ok": False, "error": str(e)}
    if not rep["ok"]:
        print("vmbstack: %s: %s" % (a.cmd, rep["error"]), file=sys.stderr)
        return 1
    sys.stdout.write(rep["out"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
