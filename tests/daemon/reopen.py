#!/usr/bin/env python3
"""reopen.py - a restart opens a VM's images with its creator's rights
(issue 17).

vmbuildd rebuilds a VM whose guest reboots (on_reboot="restart") from
its record, and opens its kernel by path again when it does not hold the
descriptor the kernel came as (a path of an image directory, or any
image after the daemon itself restarted).  As root that would load
whatever the path leads to by then: a member of the control group that
owns a directory of the image directory creates a VM from a kernel of
its own, then swaps a directory on the way for a symbolic link to the
image directory itself, where a root-only (0600) file of the same name
lies; the guest reboots and root would load that file into the guest.

Checked, with a real unprivileged member (as access.py):
- the swap then a reboot: the restart is refused, the log names the
  file and the member's uid, the domain is left shut down, and the
  root-only file is never opened (inotify on it);
- the same with the kernel passed as a descriptor, vmbuildd killed and
  started again before the reboot (no descriptor held);
- a root-created VM from that root-only file restarts, before and after;
- a member's VM whose kernel and disk are unchanged restarts, before
  and after; one whose disk image became a link to the root-only file
  is not restarted (root's hotplug script would attach it);
- a member's kernel replaced by another file of its own (a new inode)
  is refused too ("replaced since");
- a record of an older vmbuildd (no creator, not by root) restarts from
  a world-readable kernel, not from one only its owner may read.

Needs root (it creates a throwaway group and user).
"""
import atexit
import ctypes
import grp
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

group, member, _ = throwaway_accounts("vmbr", "reopen tests")

gid = grp.getgrnam(group).gr_gid
m_uid, m_gid = pwd.getpwnam(member).pw_uid, pwd.getpwnam(member).pw_gid
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else \
    sys.executable

# The image directory: a root-only kernel, and a directory of the
# member's where it keeps kernels of its own, each in a folder.
imgdir = tempfile.mkdtemp(prefix="vmbd-reopen-img.")
atexit.register(shutil.rmtree, imgdir, True)
os.chmod(imgdir, 0o755)
SECRET = os.path.join(imgdir, "secret.elf")
shutil.copy(KERNEL, SECRET)
os.chmod(SECRET, 0o600)
mine = os.path.join(imgdir, "m")


def member_file(folder, name="secret.elf", mode=0o644):
    """A kernel of the member's own, imgdir/m/folder/name."""
    d = os.path.join(mine, folder)
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, name)
    shutil.copy(KERNEL, p)
    for x in (mine, d, p):
        os.chown(x, m_uid, m_gid)
    os.chmod(d, 0o755)
    os.chmod(p, mode)
    return p


AS_MEMBER = dict(user=m_uid, group=m_gid, extra_groups=[gid],
                 capture_output=True, text=True, timeout=120)

CLIENT = r'''
import json, socket, sys, os
path, method, params, fdpath = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX); s.settimeout(120); s.connect(path)
line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                    "params": json.loads(params)}) + "\n").encode()
if fdpath:
    fd = os.open(fdpath, os.O_RDONLY)
    socket.send_fds(s, [line], [fd]); os.close(fd)
else:
    s.sendall(line)
buf = b""
while b"\n" not in buf:
    c = s.recv(65536)
    if not c: break
    buf += c
print(buf.partition(b"\n")[0].decode())
'''


def member_call(method, params, fdpath=""):
    p = subprocess.run([PYTHON, "-c", CLIENT, h.sock, method,
                        json.dumps(params), fdpath], **AS_MEMBER)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": {"message": p.stderr}}


def member_do(code):
    """Python `code` run as the member (what it may do to its files)."""
    p = subprocess.run([PYTHON, "-c", code], **AS_MEMBER)
    return p.returncode == 0, p.stderr


def swap_to_parent(folder):
    """As the member: imgdir/m/folder becomes a symbolic link to "..",
    so imgdir/m/folder/secret.elf is imgdir/secret.elf (root's)."""
    d = os.path.join(mine, folder)
    return member_do("import os; os.rename(%r, %r); os.symlink('..', %r)"
                     % (d, d + ".old", d))


# inotify on the root-only file: any open or read of it is seen.
IN_ACCESS, IN_OPEN = 0x1, 0x20
libc = ctypes.CDLL(None, use_errno=True)
ino_fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
if ino_fd < 0 or libc.inotify_add_watch(ino_fd, SECRET.encode(),
                                        IN_ACCESS | IN_OPEN) < 0:
    bail("inotify: %s" % os.strerror(ctypes.get_errno()))


def secret_touched():
    """Whether the root-only file was opened or read since last asked."""
    try:
        return len(os.read(ino_fd, 65536)) > 0
    except BlockingIOError:
        return False


h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "1G",
          "--backing", "phantom"],
         ["--group", group, "--image-dir", imgdir, "--restart-backoff", "0"])
os.chmod(h.dir, 0o755)
h.start_daemon()
c = h.client()
g = HvGuest(h.hv_sock)


def info(name):
    return c.call("vm.info", {"vm": name}).get("result")


def cfg(name, kernel, disk=None):
    extra = ["disk = [ 'vdev=xvdb,access=ro,target=%s' ]" % disk] if disk \
        else []
    return guest_cfg(name, 32, extra=extra).replace(
        'kernel = "%s"' % KERNEL, 'kernel = "%s"' % kernel)


def member_create(name, kernel, fd=False, disk=None):
    params = {"config": cfg(name, kernel, disk), "wait": True}
    if fd:
        params["fds"] = {"kernel": 0}
    r = member_call("vm.create", params, kernel if fd else "")
    if "result" not in r:
        bail("member's vm.create of %s: %r" % (name, r))
    return r["result"]["vm"]


def reboot_restarts(name, what):
    """The guest reboots; it is built again (a new domain, running)."""
    before = info(name)
    ok(before and g.shutdown(before["id"], g.REBOOT) == 0,
       "%s: the guest reboots" % what, before)
    after = wait_for(lambda: (lambda i: i if i and i["state"] == "running"
                              and i["id"] != before["id"] else None)(
                                  info(name)), 60)
    ok(after is not None, "%s: restarted (a new domain, running)" % what,
       info(name))


def reboot_refused(name, path, what, says, kind="kernel"):
    """The guest reboots; the restart is refused and logged, naming the
    file and the member's uid; the domain is left shut down."""
    before = info(name)
    ok(before and g.shutdown(before["id"], g.REBOOT) == 0,
       "%s: the guest reboots" % what, before)
    line = "%s: on_reboot=restart: %s %s" % (name, kind, path)
    ok(h.log_has(line, timeout=60),
       "%s: the restart is refused, logged with the file" % what,
       h.log_tail(n=30))
    text = [ln for ln in h.log_tail(n=None).splitlines() if line in ln]
    ok(text and all(s in text[-1] for s in says) and
       "left shut down" in text[-1],
       "%s: the log says why (%s) and that the domain is left shut down"
       % (what, ", ".join(says)), text)
    i = info(name)
    ok(i and i["state"] == "shutdown" and i["id"] == before["id"],
       "%s: the VM is listed, its domain shut down (not rebuilt)" % what, i)


# ------------------------------------------------ within one vmbuildd
swapped = member_file("a")
pinned = member_file("p", "k.elf")
unchanged = member_file("ok", "k.elf")
member_create("mv", swapped)
member_create("mpin", pinned)
disk = member_file("dk", "disk.img", mode=0o600)
swapdisk = member_file("dk2", "disk.img", mode=0o600)
member_create("mok", unchanged, disk=disk)
member_create("mdisk", unchanged, disk=swapdisk)
r = c.call("vm.create", {"config": cfg("rvm", SECRET), "wait": True})
ok("result" in r, "root creates rvm from the root-only kernel", r)
secret_touched()

ok(swap_to_parent("a")[0] and os.path.realpath(swapped) == SECRET,
   "the member swaps its kernel's folder for a link to the image "
   "directory: the path now leads to root's file")
reboot_refused("mv", swapped, "member's VM, path swapped",
               ("uid %d" % m_uid, "may not read"))
ok(not secret_touched(), "the root-only file was never opened")

ok(member_do("import shutil, os; shutil.copy(%r, %r); os.rename(%r, %r)"
             % (pinned, pinned + ".new", pinned + ".new", pinned))[0],
   "the member replaces its kernel by another file of its own")
reboot_refused("mpin", pinned, "member's VM, kernel replaced",
               ("replaced since",))
reboot_restarts("mok", "member's VM, kernel and disk unchanged")
ok(member_do("import os; os.unlink(%r); os.symlink(%r, %r)" %
             (swapdisk, SECRET, swapdisk))[0],
   "the member swaps its disk image for a link to the root-only file")
reboot_refused("mdisk", "xvdb", "member's VM, disk target swapped",
               ("uid %d may not read" % m_uid,), "disk")
reboot_restarts("rvm", "root's VM")
ok(secret_touched(), "(root's VM was built again from the root-only file)")

# --------------------------------- after vmbuildd is killed and started
fdk = member_file("b")
member_create("mfd", fdk, fd=True)
rec = h.record(info("mfd")["uuid"])
src = (rec or {}).get("source", {})
ok(src.get("creator", {}).get("uid") == m_uid and
   gid in src["creator"].get("groups", []) and "by_root" not in src and
   src.get("images", {}).get("kernel") == "%d:%d" % (
       os.stat(fdk).st_dev, os.stat(fdk).st_ino),
   "the record names the creator (uid, groups) and the kernel it sent",
   src)
legacy_ok = member_file("l1", "k.elf")
legacy_no = member_file("l2", "k.elf", mode=0o600)
member_create("mleg", legacy_ok)
member_create("mleg2", legacy_no)
legacy = [info("mleg")["uuid"], info("mleg2")["uuid"]]
for v in ("mv", "mpin", "mdisk"):
    c.call("vm.destroy", {"vm": v})
c.close()
h.stop_daemon(signal.SIGKILL)
# Records as an older vmbuildd wrote them: neither creator nor by_root.
for u in legacy:
    p = os.path.join(h.state, u + ".json")
    with open(p) as f:
        rec = json.load(f)
    for k in ("creator", "images", "by_root"):
        rec["source"].pop(k, None)
    with open(p, "w") as f:
        json.dump(rec, f)
ok(swap_to_parent("b")[0] and os.path.realpath(fdk) == SECRET,
   "while vmbuildd is down, the member swaps the folder of the kernel it "
   "sent as a descriptor")
h.start_daemon()
c = h.client()
secret_touched()
reboot_refused("mfd", fdk, "after a vmbuildd restart, kernel sent as a "
               "descriptor, path swapped", ("uid %d" % m_uid,
                                            "may not read"))
ok(not secret_touched(), "the root-only file was never opened")
reboot_restarts("mok", "after a vmbuildd restart, member's VM, unchanged")
reboot_restarts("rvm", "after a vmbuildd restart, root's VM")
reboot_restarts("mleg", "an older vmbuildd's record, a world-readable "
                "kernel")
reboot_refused("mleg2", legacy_no, "an older vmbuildd's record, a kernel "
               "only its owner may read", ("anyone", "may not read"))
ok("result" in c.call("server.hello"), "the daemon serves at the end")
g.close()
done()
