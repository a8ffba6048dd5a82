#!/usr/bin/env python3
"""hostile.py - vmbuildd against a hostile local client (issue 12).

Each case reproduces a way the daemon failed before, and checks that it
now refuses and goes on: bracket bombs hidden by comments, NUL in method
names, guest images (FIFOs, device nodes, files outside the image
directories, symbolic links out of them), descriptors passed with
requests (SCM_RIGHTS), a bad kernel reported as a hypervisor error, and
pipelining clients that never read.  After each hostile request the
daemon must still be alive and answer, and at the end it holds no
descriptor more than it did at the start.
"""
import atexit
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

images = tempfile.mkdtemp(prefix="vmbd-images.")
os.chmod(images, 0o755)
atexit.register(shutil.rmtree, images, True)
outside = tempfile.mkdtemp(prefix="vmbd-outside.")
atexit.register(shutil.rmtree, outside, True)

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
          "--backing", "real"], ["--image-dir", images])
h.start_daemon()
pid = h.d.pid
c = h.client()
rss0, fds0, _ = proc_stat(pid)


def fd_targets(p):
    """What the daemon's descriptors are, sockets left out."""
    out = []
    for fd in os.listdir("/proc/%d/fd" % p):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (p, fd))
        except OSError:
            continue
        if not t.startswith("socket:"):
            out.append(t)
    return out


targets0 = fd_targets(pid)


def alive(what):
    r = c.call("server.hello")
    ok(h.d.poll() is None and r is not None and "result" in r,
       "the daemon lives and answers after %s" % what, r)


def raw(line, fds=(), timeout=30):
    """One request line on a new connection; its reply (or None)."""
    s = Client(h.sock, timeout)
    try:
        s.send_raw(line + b"\n", fds)
        return s.read_msg()
    except OSError:
        return None
    finally:
        s.close()


# ----------------------------------------------------- JSON the parser refuses
n = 300000
bomb = b'/*"*/' + b"[" * n + b"]" * n + b'/*"*/'
r = raw(bomb)
ok(err_code(r) == RPC_PARSE_ERROR, "bug 1: comment-hidden bracket bomb is a "
   "parse error", r)
alive("the comment-hidden bomb")
r = raw(b"[" * n + b"]" * n)
ok(err_code(r) == RPC_PARSE_ERROR and "deeper than" in r["error"]["message"],
   "a bare bracket bomb names the nesting limit", r)


def nested(depth):
    # The request object is level 1; "x" holds depth - 1 more levels.
    inner = "[" * (depth - 1) + "]" * (depth - 1)
    return ('{"jsonrpc":"2.0","id":1,"method":"server.hello","x":%s}'
            % inner).encode()


r = raw(nested(64))
ok(r is not None and "result" in r, "64 levels are served", r)
r = raw(nested(65))
ok(err_code(r) == RPC_PARSE_ERROR, "65 levels are refused", r)
r = raw(b'{"jsonrpc":"2.0","id":1,"method":"server.hello","x":"' +
        b"[" * 100000 + b'"}')
ok(r is not None and "result" in r, "brackets inside a string do not count",
   r)
r = raw(b'{"jsonrpc":"2.0","id":1,/* c */"method":"server.hello"}')
ok(err_code(r) == RPC_PARSE_ERROR, "comments are not JSON", r)
r = raw(b'{"jsonrpc":"2.0","id":1,"method":"server.hello"} // c')
ok(err_code(r) == RPC_PARSE_ERROR, "a trailing comment is not JSON", r)
deep = json.loads("[" * 10 + "1" + "]" * 10)
r = c.call("vm.create", {"guest": {"name": "deep", "memory": 16,
                                   "kernel": KERNEL, "vnuma": deep}})
ok(err_code(r) == RPC_INVALID_PARAMS and "nested" in r["error"]["message"],
   "lists of a guest description are bounded too", r)
alive("deep guest lists")
# libxlutil leaks the token it stops on at a syntax error: a quoted value
# is bounded before it gets there.
r = c.call("vm.create", {"config": 'name = "big"\nx = ["' + "a" * 500000 +
                         '" $ ]\n'})
ok(err_code(r) == E_CONFIG and "at most 4096" in r["error"]["message"],
   "a quoted config value of 500000 bytes is refused before parsing", r)

# ------------------------------------------------------------------- NUL
r = raw(b'{"jsonrpc":"2.0","id":2,"method":"vm.list\\u0000junk"}')
ok(r is not None and "error" in r and "result" not in r,
   "bug 8: method \"vm.list\\u0000junk\" is not served as vm.list", r)
r = raw(b'{"jsonrpc":"2.0","id":3,"method":"vm.info",'
        b'"params":{"vm":"a\\u0000b"}}')
ok(err_code(r) == RPC_PARSE_ERROR, "a NUL in a parameter is refused", r)
r = raw(b'{"jsonrpc":"2.0","id":4,"method":"server.hello",'
        b'"params":{"k\\u0000":1}}')
ok(err_code(r) == RPC_PARSE_ERROR, "a NUL in a key is refused", r)
alive("NUL characters")

# ----------------------------------------------------------- image paths
fifo_out = os.path.join(outside, "fifo")
os.mkfifo(fifo_out)
fifo_in = os.path.join(images, "fifo")
os.mkfifo(fifo_in)
os.symlink("/etc/passwd", os.path.join(images, "passwd-link"))
os.symlink("/dev/null", os.path.join(images, "null-link"))
os.mkdir(os.path.join(images, "subdir"))
os.symlink(outside, os.path.join(images, "out-dir"))
shutil.copy(KERNEL, os.path.join(outside, "hello.elf"))
shutil.copy(KERNEL, os.path.join(images, "hello.elf"))
os.chmod(os.path.join(images, "hello.elf"), 0o644)
with open(os.path.join(images, "not-elf"), "wb") as f:
    f.write(b"#!/bin/sh\necho not a kernel\n" * 10)


def cfg(name, kernel, extra=()):
    return guest_cfg(name, 16).replace('kernel = "%s"' % KERNEL,
                                       'kernel = "%s"' % kernel) + \
        "".join(x + "\n" for x in extra)


def create(name, kernel, fds=(), params=None, extra=()):
    p = {"config": cfg(name, kernel, extra), "wait": True}
    p.update(params or {})
    t = time.monotonic()
    r = c.call("vm.create", p, fds=fds)
    return r, time.monotonic() - t


# Outside the image directories: refused without a look at the file.
msgs = {}
for what, path in (("a FIFO", fifo_out), ("/etc/shadow", "/etc/shadow"),
                   ("a file that does not exist", "/nonexistent/k.elf"),
                   ("a readable kernel", os.path.join(outside, "hello.elf"))):
    r, _ = create("outside", path)
    ok(err_code(r) == E_IMAGE_FD and
       r["error"]["data"]["files"] == [{"key": "kernel", "path": path}],
       "bug 5: %s outside the image directories is refused, naming the "
       "file to pass as a descriptor" % what, r)
    msgs[what] = (r or {}).get("error", {}).get("message", "").replace(path,
                                                                      "P")
ok(len(set(msgs.values())) == 1, "the refusal is the same whether the file "
   "exists or not (nothing is revealed)", msgs)
r, _ = create("rd", os.path.join(images, "hello.elf"),
              extra=['ramdisk = "/etc/shadow"'])
ok(err_code(r) == E_IMAGE_FD and r["error"]["data"]["files"] ==
   [{"key": "ramdisk", "path": "/etc/shadow"}],
   "ramdisk = \"/etc/shadow\" is refused as well", r)
# A sibling whose name starts with the image directory's (…/img-x for
# …/img) is not below it: a path is below a directory only at a '/'.
sibling = images + "-x"
os.mkdir(sibling, 0o755)
atexit.register(shutil.rmtree, sibling, True)
shutil.copy(KERNEL, os.path.join(sibling, "hello.elf"))
for name, path in (("sibling", os.path.join(sibling, "hello.elf")),
                   ("sibling-dir", sibling),
                   ("prefix", images + "hello.elf")):
    r, _ = create(name, path)
    ok(err_code(r) == E_IMAGE_FD and
       r["error"]["data"]["files"] == [{"key": "kernel", "path": path}],
       "%s: a path that only starts with the image directory's name is "
       "outside it (E_IMAGE_FD)" % path.replace(images, "IMG"), r)
r, _ = create("rel", "relative/k.elf")
ok(err_code(r) == E_IMAGE_FD, "a relative path without config_path is "
   "refused", r)

# Inside: only regular files, not through a final symbolic link.
for name, path, why in (
        ("fifo", fifo_in, "not a regular file"),
        ("passwd", os.path.join(images, "passwd-link"), "symbolic link"),
        ("null", os.path.join(images, "null-link"), "symbolic link"),
        ("dir", os.path.join(images, "subdir"), "not a regular file"),
        ("escape", os.path.join(images, "subdir", "..", "..", "etc",
                                "passwd"), "out of the image directory"),
        ("outdir", os.path.join(images, "out-dir", "hello.elf"),
         "out of the image directory"),
        ("missing", os.path.join(images, "nope.elf"), "no such file"),
        ("notelf", os.path.join(images, "not-elf"), "not an ELF file")):
    r, secs = create(name, path)
    e = (r or {}).get("error", {})
    ok(e.get("code") == E_IMAGE and why in e.get("message", "") and
       e.get("data", {}).get("phase") == "load",
       "image dir, %s: E_IMAGE in phase load, \"%s\"" % (name, why), r)
alive("hostile image paths")
r, _ = create("indir", os.path.join(images, "hello.elf"))
ok(r is not None and "result" in r, "a kernel in an image directory builds",
   r)
c.call("vm.destroy", {"vm": "indir"})

# ------------------------------------------------------------ descriptors


def fd_create(name, files, params):
    opened = [os.open(f, m) for f, m in files]
    try:
        return create(name, "/client/kernel.elf", fds=opened,
                      params=params)[0]
    finally:
        for fd in opened:
            os.close(fd)


r = fd_create("byfd", [(KERNEL, os.O_RDONLY)], {"fds": {"kernel": 0}})
ok(r is not None and "result" in r and
   r["result"]["vm"]["config"]["kernel"] == "/client/kernel.elf",
   "a kernel passed as a descriptor builds (the path only names it)", r)
c.call("vm.destroy", {"vm": "byfd"})
rd = os.path.join(outside, "initrd")
with open(rd, "wb") as f:
    f.write(os.urandom(64 * 1024))
opened = [os.open(KERNEL, os.O_RDONLY), os.open(rd, os.O_RDONLY)]
r = c.call("vm.create", {"config": cfg("withrd", "/k", [
    'ramdisk = "/client/initrd"']), "wait": True,
    "fds": {"kernel": 0, "ramdisk": 1}}, fds=opened)
for fd in opened:
    os.close(fd)
ok(r is not None and "result" in r, "kernel and ramdisk as descriptors", r)
c.call("vm.destroy", {"vm": "withrd"})

rfd, wfd = os.pipe()
r = create("pipe", "/k", fds=[rfd], params={"fds": {"kernel": 0}})[0]
ok(err_code(r) == E_IMAGE and "not a regular file" in r["error"]["message"],
   "bug 5: a pipe passed as the kernel is refused at once", r)
os.close(rfd)
os.close(wfd)
for what, files, why in (
        ("/dev/null", [("/dev/null", os.O_RDONLY)], "not a regular file"),
        ("an O_PATH descriptor", [(KERNEL, os.O_PATH)], "not open for "
         "reading"),
        ("a write-only descriptor", [(os.path.join(outside, "w"),
                                      os.O_WRONLY | os.O_CREAT)],
         "not open for reading")):
    r = fd_create("fdbad", files, {"fds": {"kernel": 0}})
    ok(err_code(r) == E_IMAGE and why in r["error"]["message"],
       "%s as the kernel: %s" % (what, why), r)
r = fd_create("noidx", [(KERNEL, os.O_RDONLY)], {"fds": {"kernel": 1}})
ok(err_code(r) == RPC_INVALID_PARAMS, "params.fds naming a descriptor that "
   "did not come is refused", r)
r = fd_create("norq", [(KERNEL, os.O_RDONLY)],
              {"fds": {"kernel": 0, "ramdisk": 0}})
ok(err_code(r) == RPC_INVALID_PARAMS, "params.fds.ramdisk for a guest "
   "without ramdisk is refused", r)
r = fd_create("nofds", [], {"fds": {"kernel": 0}})
ok(err_code(r) == RPC_INVALID_PARAMS, "params.fds without descriptors is "
   "refused", r)
with open(os.path.join(outside, "not-elf"), "wb") as f:
    f.write(b"MZ" + b"\0" * 4096)
r = fd_create("notelf", [(os.path.join(outside, "not-elf"), os.O_RDONLY)],
              {"fds": {"kernel": 0}})
e = (r or {}).get("error", {})
ok(e.get("code") == E_IMAGE and e.get("data", {}).get("phase") == "load" and
   "not an ELF file" in e.get("message", ""), "bug 8: a bad kernel is E_IMAGE "
   "(%d) in phase load, not a hypervisor error (%d)" % (E_IMAGE,
                                                          E_HYPERVISOR), r)
# More descriptors than the daemon keeps for a connection: refused and
# the connection closed, nothing kept.
s = Client(h.sock)
many = [os.open(KERNEL, os.O_RDONLY) for _ in range(8)]
s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"server.hello"}\n', many)
r = s.read_msg()
for fd in many:
    os.close(fd)
ok(err_code(r) == RPC_INVALID_REQUEST and "descriptors" in
   r["error"]["message"] and s.read_msg() is None,
   "8 descriptors with one request: refused, connection closed", r)
s.close()
# Descriptors on the read-only socket are closed, never used.
ro = Client(h.sock.replace(".sock", "-ro.sock"))
kfd = os.open(KERNEL, os.O_RDONLY)
ro.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "vm.create",
                        "params": {"config": cfg("ro", "/k"),
                                   "fds": {"kernel": 0}}}).encode() + b"\n",
            [kfd])
os.close(kfd)
r = ro.read_msg()
ok(err_code(r) == E_PERMISSION, "vm.create with a descriptor on the "
   "read-only socket is refused", r)
ro.close()
alive("hostile descriptors")

# ------------------------------------------------ clients that do not read
# Bug 4: pipelining clients that never read their replies made the daemon
# queue without bound.  Now a client's requests are not read while 1 MiB
# of its replies waits, so the daemon's memory stays put however much
# they send; every request is still answered, once.
for i in range(20):
    c.result("vm.create", {"guest": {"name": "pad%02d" % i, "memory": 16,
                                     "kernel": KERNEL}, "wait": True})
nreq, nclients = 20000, 4
line = b'{"jsonrpc":"2.0","id":%d,"method":"vm.list"}\n'
reply_len = len(json.dumps(c.result("vm.list")))
nvms = len(c.result("vm.list")["vms"])
rss_a, _, _ = proc_stat(pid)
pipes = []
for k in range(nclients):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(h.sock)
    s.setblocking(False)
    pipes.append(s)
sent = [0] * nclients
t_end = time.monotonic() + 20
while time.monotonic() < t_end and min(sent) < nreq:
    progress = False
    for k, s in enumerate(pipes):
        while sent[k] < nreq:
            try:
                s.send(line % (sent[k] + 1))
            except BlockingIOError:
                break
            sent[k] += 1
            progress = True
    if not progress:
        time.sleep(0.2)
        if all(x == sent[0] for x in sent):
            break
time.sleep(1)
rss_b, _, _ = proc_stat(pid)
diag("%d clients sent %s requests without reading (replies of %d bytes, "
     "%.0f MiB unread) before their sends blocked; daemon RSS %.1f -> "
     "%.1f MiB" % (nclients, sent, reply_len, sum(sent) * reply_len / MIB,
                   rss_a / MIB, rss_b / MIB))
ok(max(sent) < nreq, "the daemon stopped reading the clients' requests "
   "(they could send %d of %d)" % (max(sent), nreq))
if MEMORY_FIGURES:
    ok(rss_b - rss_a < 32 * MIB, "bug 4: the daemon's memory stays bounded "
       "while clients pipeline without reading (+%.1f MiB)" %
       ((rss_b - rss_a) / MIB))
else:
    skip("bug 4: the daemon's memory stays bounded", "RSS under %s" %
         SANITIZER)
alive("pipelining clients")

# The list changes while replies carrying its cached text are queued
# (by reference, not copied): those must still go out whole, with the
# list as it was, and later ones with the new list.
c.result("vm.create", {"guest": {"name": "pad20", "memory": 16,
                                 "kernel": KERNEL}, "wait": True})
sizes = set()


def drain(k, s, counts):
    s.setblocking(True)
    s.settimeout(60)
    buf, seen = b"", {}
    try:
        while sum(seen.values()) < sent[k]:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for ln in lines:
                m = json.loads(ln)
                seen[m["id"]] = seen.get(m["id"], 0) + 1
                if "result" in m:
                    sizes.add(len(m["result"]["vms"]))
    except OSError:
        pass
    counts[k] = seen


counts = [None] * nclients
ths = [threading.Thread(target=drain, args=(k, s, counts))
       for k, s in enumerate(pipes)]
for t in ths:
    t.start()
for t in ths:
    t.join(120)
okall = all(cnt is not None and len(cnt) == sent[k] and
            set(cnt.values()) == {1} for k, cnt in enumerate(counts))
ok(okall, "every pipelined request is answered exactly once",
   [(sent[k], len(cnt or {})) for k, cnt in enumerate(counts)])
ok(sizes and sizes <= {nvms, nvms + 1}, "queued vm.list replies are "
   "whole, of the list before or after it changed (%d or %d VMs)" %
   (nvms, nvms + 1), sorted(sizes))
for s in pipes:
    s.close()
for i in range(21):
    c.call("vm.destroy", {"vm": "pad%02d" % i})

# ------------------------------------------------------------- at the end
time.sleep(0.5)
_, fds1, _ = proc_stat(pid)
kept = sorted(set(fd_targets(pid)) - set(targets0))
ok(kept == [], "no descriptor a client passed or the daemon opened is "
   "kept (only sockets may be new)", kept)
# Idle connections to hvsim (at most 16 in the backend's pool) may be
# more than at the start; nothing else.
ok(fds1 <= fds0 + 16, "descriptors: %d at the start, %d now" % (fds0, fds1))
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# ------------------------------------------- all clients' output, bounded
# --max-output 1 MiB: four clients that do not read pile up replies
# (each stopped at 1 MiB of its own) until all output passes the bound;
# the biggest are dropped, and a client that reads is served throughout.
hb = Host(["--nodes", "1", "--cpus-per-node", "1", "--threads-per-core",
           "1", "--mem-per-node", "1G", "--backing", "phantom"],
          ["--max-output", str(1 << 20)])
hb.start_daemon()
cb = hb.client()
for i in range(30):
    cb.result("vm.create", {"guest": {"name": "o%02d" % i, "memory": 4,
                                      "kernel": KERNEL}, "wait": True})
greedy = []
for k in range(4):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(hb.sock)
    s.setblocking(False)
    try:
        for i in range(3000):
            s.send(b'{"jsonrpc":"2.0","id":%d,"method":"vm.list"}\n' % i)
    except BlockingIOError:
        pass
    greedy.append(s)
time.sleep(2)
dropped = 0
for s in greedy:
    s.setblocking(True)
    s.settimeout(5)
    got = b""
    try:
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                dropped += 1
                break
            got += chunk
    except ConnectionResetError:
        # Dropped with replies unread: the peer may see a reset, not EOF.
        dropped += 1
    except socket.timeout:
        pass
    s.close()
ok(dropped >= 1, "--max-output: %d of the 4 clients that did not read were "
   "dropped" % dropped)
ok("limit 1048576), closing it" in hb.log_tail(n=500),
   "the log names the client dropped and the limit")
ok(cb.call("vm.list") is not None and hb.d.poll() is None,
   "a client that reads is served all along")
cb.close()
ok(hb.stop_daemon() == 0, "SIGTERM: clean exit")

# --------------------------------------------- a --metrics that cannot bind
# Bug 8: it used to leave a stale control socket behind.
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
sock2 = os.path.join(h.dir, "second.sock")
p = subprocess.run([VMBUILDD, "--foreground", "--hypervisor",
                    "sim:" + h.hv_sock, "--socket", sock2, "--state-dir",
                    os.path.join(h.dir, "st2"), "--metrics",
                    "127.0.0.1:%d" % busy.getsockname()[1]],
                   capture_output=True, text=True, timeout=60)
ok(p.returncode == 1 and "--metrics" in p.stderr, "--metrics on a port in "
   "use: exit 1, saying why", p.stderr)
ok(not os.path.exists(sock2) and
   not os.path.exists(sock2.replace(".sock", "-ro.sock")),
   "and no socket file is left behind")
busy.close()
done()
