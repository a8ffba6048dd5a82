#!/usr/bin/env python3
"""access.py - who may do what (issue 12): every write method tried by an
unprivileged peer and by a member of the daemon's group, on the control
socket and on the read-only socket; the read methods by everyone; and
hvsim's socket against a user that is not its own.

Needs root: it creates a throwaway group and two users (useradd/groupadd
with names of its own, --group tells the daemon which group counts), runs
clients as them, and removes them at exit.  The group is not "vmbuild",
so that a machine's real group is never touched.
"""
import atexit
import grp
import json
import os
import pwd
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

group, member, (other,) = throwaway_accounts("vmbt", "access tests", 1)
gid = grp.getgrnam(group).gr_gid
m_uid, m_gid = pwd.getpwnam(member).pw_uid, pwd.getpwnam(member).pw_gid
o_uid, o_gid = pwd.getpwnam(other).pw_uid, pwd.getpwnam(other).pw_gid

# An image directory with a kernel anyone may read and one only root may.
imgdir = tempfile.mkdtemp(prefix="vmbd-acc-img.")
atexit.register(shutil.rmtree, imgdir, True)
os.chmod(imgdir, 0o755)
for n, mode in (("pub.elf", 0o644), ("secret.elf", 0o600)):
    shutil.copy(KERNEL, os.path.join(imgdir, n))
    os.chmod(os.path.join(imgdir, n), mode)

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
          "--backing", "real"], ["--group", group, "--image-dir", imgdir])
os.chmod(h.dir, 0o755)
h.start_daemon()
ro_sock = h.sock.replace(".sock", "-ro.sock")
root = h.client()
# A kernel the users may read, to pass as a descriptor.
kernel = os.path.join(h.dir, "hello.elf")
shutil.copy(KERNEL, kernel)
os.chmod(kernel, 0o644)
ok(stat.S_IMODE(os.stat(h.sock).st_mode) == 0o660 and
   os.stat(h.sock).st_gid == gid, "the control socket is 0660, group %s" %
   group)
ok(stat.S_IMODE(os.stat(ro_sock).st_mode) == 0o666,
   "the read-only socket is 0666")

# Something for the write methods to act on: a VM and a finished task.
root.result("vm.create", {"config": guest_cfg("target", 32), "wait": True})
task = max(t["id"] for t in root.result("task.list")["tasks"])

CLIENT = r'''
import json, socket, sys, os
path, reqs = sys.argv[1], json.loads(sys.argv[2])
out = []
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(path)
except OSError as e:
    print(json.dumps({"connect": e.errno})); sys.exit(0)
buf = b""
for i, (method, params, fdpath) in enumerate(reqs):
    line = (json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                        "params": params}) + "\n").encode()
    if fdpath:
        fd = os.open(fdpath, os.O_RDONLY)
        socket.send_fds(s, [line], [fd]); os.close(fd)
    else:
        s.sendall(line)
    m = None
    while True:
        while b"\n" not in buf:
            c = s.recv(65536)
            if not c: break
            buf += c
        ln, _, buf = buf.partition(b"\n")
        m = json.loads(ln) if ln else None
        if m is None or m.get("id") == i:
            break
    out.append(m)
print(json.dumps({"replies": out}))
'''


# The users' clients run the system's Python (a version manager's may
# live in root's home), and a copy of vmctl (the tree may too).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else \
    sys.executable


def as_user(uid, gid_, groups, path, reqs):
    """Replies to reqs [(method, params, fd path or None)] from a client
    running as uid/gid with supplementary `groups`."""
    p = subprocess.run([PYTHON, "-c", CLIENT, path, json.dumps(reqs)],
                       user=uid, group=gid_, extra_groups=groups,
                       capture_output=True, text=True, timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": p.stderr}


READS = [("server.hello", {}, None), ("host.info", {}, None),
         ("host.scrub", {}, None), ("host.counters", {}, None),
         ("vm.list", {}, None), ("vm.info", {"vm": "target"}, None),
         ("task.list", {}, None), ("task.get", {"task": task}, None),
         ("events.subscribe", {"events": ["vm.state"]}, None)]
cfg = guest_cfg("mine", 32).replace('kernel = "%s"' % KERNEL,
                                    'kernel = "%s"' % kernel)
# config.check (issue 19): a dry run changes nothing, so anyone may; the
# kernel comes as the client's descriptor, as vm.create's.
READS.append(("config.check", {"config": cfg, "fds": {"kernel": 0}},
              kernel))
WRITES = [("vm.create", {"config": cfg, "wait": True,
                         "fds": {"kernel": 0}}, kernel),
          ("vm.pause", {"vm": "target"}, None),
          ("vm.unpause", {"vm": "target"}, None),
          ("task.cancel", {"task": task}, None),
          # Lifecycle (issue 8): the guest's power and its terminal.
          ("vm.shutdown", {"vm": "target"}, None),
          ("vm.reboot", {"vm": "target"}, None),
          ("vm.console", {"vm": "target"}, None),
          ("vm.destroy", {"vm": "mine"}, None)]


def codes(res):
    return [(r or {}).get("error", {}).get("code") for r in
            res.get("replies", [])]


def check_reads(who, res):
    ok(res.get("replies") and all(r and "result" in r for r in
                                  res["replies"][:len(READS)]),
       "%s: every read method is served" % who, res)


def messages(res):
    return [(r or {}).get("error", {}).get("message", "") for r in
            res.get("replies", [])]


def check_refused(who, res, why, says=()):
    """Every write refused with E_PERMISSION, its message naming the
    method and saying why in the operator's terms (`says`)."""
    cs = codes(res)[len(READS):]
    ms = messages(res)[len(READS):]
    ok(len(cs) == len(WRITES) and all(c == E_PERMISSION for c in cs),
       "%s: every write method is refused (%s)" % (who, why), res)
    ok(len(ms) == len(WRITES) and
       all(m.startswith(w[0] + " ") and all(x in m for x in says)
           for m, w in zip(ms, WRITES)),
       "%s: each refusal names its method and says %s" % (who, says), ms)


# ------------------------------------------------- an unprivileged peer
res = as_user(o_uid, o_gid, [], h.sock, READS)
ok(res.get("connect") == 13, "unprivileged: the control socket cannot be "
   "opened (EACCES)", res)
res = as_user(o_uid, o_gid, [], ro_sock, READS + WRITES)
check_reads("unprivileged, read-only socket", res)
check_refused("unprivileged, read-only socket", res, "E_PERMISSION",
              ("needs root or group %s" % group,
               "this is the read-only socket", h.sock))
ok((res.get("replies") or [{}])[len(READS) - 1].get("result", {})
   .get("ok") is True, "unprivileged, read-only socket: config.check "
   "passes with the kernel as a descriptor", res)
os.chmod(h.sock, 0o666)
res = as_user(o_uid, o_gid, [], h.sock, READS + WRITES)
check_reads("unprivileged, control socket opened to all", res)
check_refused("unprivileged, control socket opened to all", res,
              "the credentials decide, not the socket's mode",
              ("needs root or group %s" % group,
               "uid %d is in neither" % o_uid))
os.chmod(h.sock, 0o660)

# ------------------------------------------------------ a group member
res = as_user(m_uid, m_gid, [gid], ro_sock, READS + WRITES)
check_reads("member, read-only socket", res)
check_refused("member, read-only socket", res, "read-only",
              ("this is the read-only socket",))
res = as_user(m_uid, m_gid, [gid], h.sock, READS + WRITES)
check_reads("member", res)
cs = codes(res)[len(READS):]
ok(cs == [None, None, None, E_TASK_FINISHED, E_UNAVAILABLE, E_UNAVAILABLE,
          E_UNAVAILABLE, None],
   "member: vm.create (kernel passed as a descriptor), vm.pause, "
   "vm.unpause, task.cancel (of an ended task: E_TASK_FINISHED, not "
   "E_PERMISSION), vm.shutdown, vm.reboot and vm.console (hvsim's "
   "guest has no PV control node and no console: E_UNAVAILABLE, not "
   "E_PERMISSION) and vm.destroy are all allowed", res)
# Listed in /etc/group but without the group in its process: it cannot
# open a 0660 socket; through one opened to all, the listing counts.
os.chmod(h.sock, 0o666)
res = as_user(m_uid, m_gid, [], h.sock, [("vm.pause", {"vm": "target"},
                                          None),
                                         ("vm.unpause", {"vm": "target"},
                                          None)])
ok(codes(res) == [None, None], "member listed in /etc/group only: "
   "allowed", res)
os.chmod(h.sock, 0o660)
# The group only in the process (SO_PEERGROUPS), not in /etc/group's
# list: `other` is not listed, so only peer_in_group lets it write.
ok(other not in grp.getgrnam(group).gr_mem and o_gid != gid,
   "(%s is not listed in /etc/group for %s)" % (other, group))
res = as_user(o_uid, o_gid, [gid], h.sock, [("vm.pause", {"vm": "target"},
                                             None),
                                            ("vm.unpause", {"vm": "target"},
                                             None)])
ok(codes(res) == [None, None], "a user with the group as a supplementary "
   "group of its process only (not in /etc/group): allowed", res)

# ------------------------------------- devices: hotplug scripts, targets
# The daemon is root and runs a device's hotplug script with its target:
# a member names a script of the script directory, never a path, and
# gets only targets it could open itself, whatever the script (issue 17).
pub = os.path.join(h.dir, "pub.img")
secret = os.path.join(h.dir, "secret.img")
for p_, mode in ((pub, 0o644), (secret, 0o600)):
    with open(p_, "wb") as f:
        f.truncate(1 << 20)
    os.chmod(p_, mode)
# (target= takes the rest of an xl disk spec: it comes last.)
BAD_DISKS = [
    ("script=/etc/xen/scripts/block, target /etc/shadow",
     "vdev=xvdc,access=ro,script=/etc/xen/scripts/block,target=/etc/shadow",
     "only root"),
    ("script=/tmp/x.sh", "vdev=xvdc,access=ro,script=/tmp/x.sh,target=%s"
     % pub, "only root"),
    ("script=block, a root-only target",
     "vdev=xvdc,access=ro,script=block,target=%s" % secret, "may not read"),
    ("script=block-iscsi (a name), a root-only target",
     "vdev=xvdc,access=ro,script=block-iscsi,target=%s" % secret,
     "may not read"),
    ("script=../x", "vdev=xvdc,access=ro,script=../x,target=%s" % pub,
     "script"),
    ("script=block, rw on a read-only target",
     "vdev=xvdc,access=rw,script=block,target=%s" % pub,
     "may not read and write")]
BAD_VIFS = [("vif script=/tmp/x.sh", "bridge=br0,script=/tmp/x.sh",
             "only root"),
            ("vif script=../x", "bridge=br0,script=../x", "script"),
            ("vif script=..", "bridge=br0,script=..", "script")]
GOOD_DISK = "vdev=xvdc,access=ro,script=block,target=%s" % pub
GOOD_VIF = "bridge=br0,script=vif-bridge"


def dev_cfg(name, disk=None, vif=None):
    extra = ["disk = [ '%s' ]" % disk] if disk else []
    extra += ["vif = [ '%s' ]" % vif] if vif else []
    return guest_cfg(name, 16, extra=extra).replace(
        'kernel = "%s"' % KERNEL, 'kernel = "%s"' % kernel)


def dev_reqs():
    """(label, request, None if it should pass else a word of the
    refusal) for create and hot-plug."""
    out = []
    for i, (what, spec, why) in enumerate(BAD_DISKS):
        out.append(("vm.create, disk " + what, ("vm.create", {
            "config": dev_cfg("bad%d" % i, disk=spec), "wait": True,
            "fds": {"kernel": 0}}, kernel), why))
        out.append(("vm.disk_attach, " + what, ("vm.disk_attach", {
            "vm": "target", "disk": spec}, None), why))
    for i, (what, spec, why) in enumerate(BAD_VIFS):
        out.append(("vm.create, " + what, ("vm.create", {
            "config": dev_cfg("badv%d" % i, vif=spec), "wait": True,
            "fds": {"kernel": 0}}, kernel), why))
        out.append(("vm.net_attach, " + what, ("vm.net_attach", {
            "vm": "target", "vif": spec}, None), why))
    out.append(("vm.create, script=block on a readable image", ("vm.create", {
        "config": dev_cfg("good", disk=GOOD_DISK, vif=GOOD_VIF),
        "wait": True, "fds": {"kernel": 0}}, kernel), None))
    out.append(("vm.disk_attach, script=block on a readable image",
                ("vm.disk_attach", {"vm": "target", "disk": GOOD_DISK},
                 None), None))
    out.append(("vm.net_attach, script=vif-bridge", ("vm.net_attach", {
        "vm": "target", "vif": GOOD_VIF}, None), None))
    return out


DEVS = dev_reqs()
res = as_user(m_uid, m_gid, [gid], ro_sock, [r for _, r, _ in DEVS])
cs = codes(res)
ok(len(cs) == len(DEVS) and all(c == E_PERMISSION for c in cs),
   "member, read-only socket: every device request is refused", res)
res = as_user(m_uid, m_gid, [gid], h.sock, [r for _, r, _ in DEVS])
replies = res.get("replies") or []
ok(len(replies) == len(DEVS), "member: a reply to every device request",
   res)
for (what, _, why), r in zip(DEVS, replies):
    if why is None:
        ok(r and "result" in r, "member, %s: accepted" % what, r)
    else:
        ok(r and "error" in r and "result" not in r and
           r["error"].get("code") != E_PERMISSION and
           why in r["error"].get("message", ""),
           "member, %s: refused (\"%s\")" % (what, why), r)
ok(all("/etc/shadow" not in json.dumps(d) for d in
       root.result("vm.info", {"vm": "target"})["config"]["disks"]),
   "target has no disk of /etc/shadow")
root.call("vm.destroy", {"vm": "good"})
root.call("vm.disk_detach", {"vm": "target", "disk": "xvdc"})
root.call("vm.net_detach", {"vm": "target", "vif": 0})
# Root may give a script by path (vmbuildd(8)), on a VM root created.
r = root.call("vm.disk_attach", {"vm": "target", "disk":
                                 "vdev=xvdc,access=ro,script=/etc/xen/"
                                 "scripts/block,target=%s" % secret})
ok("result" in r, "root: a script by absolute path is accepted", r)
root.call("vm.disk_detach", {"vm": "target", "disk": "xvdc"})
res = as_user(m_uid, m_gid, [gid], h.sock, [("vm.create", {
    "config": dev_cfg("mvm"), "wait": True, "fds": {"kernel": 0}}, kernel)])
ok(codes(res) == [None], "member: a VM of its own", res)
r = root.call("vm.disk_attach", {"vm": "mvm", "disk":
                                 "vdev=xvdc,access=ro,script=/etc/xen/"
                                 "scripts/block,target=%s" % pub})
ok(err_code(r) == RPC_INVALID_PARAMS and "root" in
   r["error"]["message"], "root: no script by path on a member's VM (its "
   "restart could not tell who gave it)", r)
r = root.call("vm.net_attach", {"vm": "mvm", "vif": "script=/bin/true"})
ok(err_code(r) == RPC_INVALID_PARAMS, "nor a vif's", r)
root.call("vm.destroy", {"vm": "mvm"})

# ------------------------------------------ images of an image directory
IMGS = [("vm.create", {"config": guest_cfg("ipub", 16).replace(
            KERNEL, os.path.join(imgdir, "pub.elf")), "wait": True}, None),
        ("vm.create", {"config": guest_cfg("isec", 16).replace(
            KERNEL, os.path.join(imgdir, "secret.elf")), "wait": True},
         None)]
res = as_user(m_uid, m_gid, [gid], h.sock, IMGS)
rs = res.get("replies") or [None, None]
ok(rs[0] and "result" in rs[0], "member: a world-readable kernel of the "
   "image directory loads", res)
ok(rs[1] and (rs[1].get("error") or {}).get("code") == E_IMAGE and
   "may not read" in rs[1]["error"].get("message", ""),
   "member: a root-only (0600) kernel of the image directory is refused "
   "(E_IMAGE, the client may not read it)", res)
r = root.call("vm.create", IMGS[1][1])
ok("result" in r, "root loads it", r)
for n in ("ipub", "isec"):
    root.call("vm.destroy", {"vm": n})

# --------------------------------------------------------- root, vmctl
rr = Client(ro_sock)
r = rr.call("vm.destroy", {"vm": "target"})
ok(err_code(r) == E_PERMISSION, "root on the read-only socket may not "
   "write either", r)
rr.close()
VMCTL = os.path.join(h.dir, "vmctl")
shutil.copy(os.path.join(BIN, "vmctl"), VMCTL)
os.chmod(VMCTL, 0o755)
p = subprocess.run([VMCTL, "--socket", h.sock, "--json", "list"],
                   user=o_uid, group=o_gid, extra_groups=[],
                   capture_output=True, text=True, timeout=60)
ok(p.returncode == 0 and "target" in p.stdout, "vmctl list as an "
   "unprivileged user falls back to the read-only socket", p.stderr)
p = subprocess.run([VMCTL, "--socket", h.sock, "destroy", "target"],
                   user=o_uid, group=o_gid, extra_groups=[],
                   capture_output=True, text=True, timeout=60)
ok(p.returncode == 1 and "read-only socket" in p.stderr,
   "vmctl destroy there is refused with the reason (exit 1)", p.stderr)
p = subprocess.run([VMCTL, "--socket", h.sock, "list"],
                   user=m_uid, group=m_gid, extra_groups=[gid],
                   capture_output=True, text=True, timeout=60)
ok(p.returncode == 0, "vmctl as a member uses the control socket")
cfgp = os.path.join(h.dir, "mine2.cfg")
with open(cfgp, "w") as f:
    f.write(cfg.replace('"mine"', '"mine2"'))
os.chmod(cfgp, 0o644)
p = subprocess.run([VMCTL, "--socket", h.sock, "create", cfgp],
                   user=m_uid, group=m_gid, extra_groups=[gid],
                   capture_output=True, text=True, timeout=120)
ok(p.returncode == 0, "vmctl create as a member: it opens the kernel "
   "itself and passes it", p.stderr)
root.call("vm.destroy", {"vm": "mine2"})
root.call("vm.destroy", {"vm": "target"})
root.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")

# --------------------------------------------------------- hvsim's socket
ok(stat.S_IMODE(os.stat(h.hv_sock).st_mode) == 0o600,
   "bug 6: hvsim's socket is 0600")
HVSIM_PROBE = r'''
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect", e.errno); sys.exit(0)
try:
    s.sendall(struct.pack("<IHHIiQ", 0x4d535648, int(sys.argv[2]), 1, 0, 0, 1))
    print("reply", len(s.recv(4096)))
except (BrokenPipeError, ConnectionResetError):
    print("reply", 0)
'''
p = subprocess.run([PYTHON, "-c", HVSIM_PROBE, h.hv_sock,
                    str(HV_ABI_VERSION)],
                   user=o_uid, group=o_gid, extra_groups=[],
                   capture_output=True, text=True, timeout=60)
ok(p.stdout.split() == ["connect", "13"], "another user cannot open it",
   p.stdout + p.stderr)
os.chmod(h.hv_sock, 0o666)
p = subprocess.run([PYTHON, "-c", HVSIM_PROBE, h.hv_sock,
                    str(HV_ABI_VERSION)],
                   user=o_uid, group=o_gid, extra_groups=[],
                   capture_output=True, text=True, timeout=60)
ok(p.stdout.split() == ["reply", "0"], "opened to all, hvsim still "
   "refuses the peer by its credentials (closed, no reply)",
   p.stdout + p.stderr)
ok("uid %d refused" % o_uid in h.log_tail("hvsim.log") or
   "refused" in h.log_tail("hvsim.log"), "and says so")
# Created under a umask of 0: still 0600 from the first moment.
sock2 = os.path.join(h.dir, "hv2.sock")
hv2 = subprocess.Popen([HVSIM, "--socket", sock2, "--nodes", "1",
                        "--mem-per-node", "64M", "--backing", "phantom"],
                       preexec_fn=lambda: os.umask(0),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(100):
    if os.path.exists(sock2):
        break
    time.sleep(0.05)
ok(os.path.exists(sock2) and stat.S_IMODE(os.stat(sock2).st_mode) == 0o600,
   "hvsim started with umask 000 binds its socket 0600")
hv = Hv(sock2)
st, _ = hv.call(HV_OP_FAULT, struct.pack("<HHiII", 0, 0, 0, 1, 0))
ok(st == -1, "fault requests are refused (EPERM) without --fault-requests")
hv.close()
hv2.terminate()
hv2.wait()
done()
