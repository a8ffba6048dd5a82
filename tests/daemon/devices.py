#!/usr/bin/env python3
"""devices.py - disks and vifs through vmbuildd, on hvsim.

hvsim has no I/O: the devices of vm.create and of the hot-plug methods
(vm.disk_attach, vm.disk_detach, vm.net_attach, vm.net_detach) are
checked exactly as on Xen and recorded in the VM's configuration, which
vm.info shows and a restarted daemon reads back (MACs included: the
same after a restart).  Keys vmbuild does not implement are refused
naming the key, or listed in the result's "warnings" with
ignore_unsupported, and `vmctl create --ignore-unsupported` prints
them.  The daemon is root: a client of group vmbuild (uid 65534 here)
gets only the images it could open itself.  Group vmbuild exists only
inside the daemon's own mount namespace (a copy of /etc/group bound over
it), so the test changes nothing on the machine.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
GID = 64999         # group vmbuild, in the daemon's namespace only
NOBODY = 65534

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "512M"])

# Group vmbuild with GID, for the daemon's eyes only.
group = os.path.join(h.dir, "group")
with open("/etc/group") as f:
    text = f.read()
with open(group, "w") as f:
    f.write(text + ("" if text.endswith("\n") else "\n") +
            "vmbuild:x:%d:\n" % GID)
PREFIX = []
if shutil.which("unshare") and os.geteuid() == 0:
    PREFIX = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'mount --bind "$0" /etc/group && exec "$@"', group]
h.start_daemon(prefix=PREFIX)
c = h.client()

# Images: one the unprivileged client may read, one only root may, one
# in a directory it may not enter, one it may read and write.
os.chmod(h.dir, 0o755)
imgs = {}
for name, mode in (("pub.img", 0o644), ("root.img", 0o600),
                   ("rw.img", 0o666)):
    p = os.path.join(h.dir, name)
    with open(p, "wb") as f:
        f.truncate(1 << 20)
    os.chmod(p, mode)
    imgs[name] = p
closed = os.path.join(h.dir, "closed")
os.mkdir(closed, 0o700)
with open(os.path.join(closed, "x.img"), "wb") as f:
    f.truncate(1 << 20)
os.chmod(os.path.join(closed, "x.img"), 0o666)
imgs["closed"] = os.path.join(closed, "x.img")


def info(vm):
    return c.result("vm.info", {"vm": vm})


def devs(vm):
    cfg = info(vm).get("config", {})
    return cfg.get("disks"), cfg.get("vifs")


# ------------------------------------------------------------ vm.create
cfg = guest_cfg("dev1", 64, extra=[
    "disk = [ '%s,raw,xvda,rw', 'vdev=xvdb,access=ro,target=%s' ]"
    % (imgs["rw.img"], imgs["pub.img"]),
    "vif = [ '', 'bridge=br1,mac=00:16:3e:01:02:03,ip=10.0.0.2' ]"])
r = c.call("vm.create", {"config": cfg, "config_path":
                         os.path.join(h.dir, "dev1.cfg"), "wait": True})
ok("result" in r and r["result"].get("warnings") == [],
   "vm.create with two disks and two vifs: no warnings", r)
disks, vifs = devs("dev1")
ok([(d["vdev"], d["devid"], d["target"], d["access"]) for d in disks or []]
   == [("xvda", 51712, imgs["rw.img"], "rw"),
       ("xvdb", 51728, imgs["pub.img"], "ro")],
   "vm.info: config.disks as written (vdev, vbd, target, access)", disks)
ok(vifs is not None and len(vifs) == 2 and vifs[0]["bridge"] == "xenbr0" and
   vifs[0]["mac"].startswith("00:16:3e:") and vifs[0]["script"] ==
   "vif-bridge" and vifs[1]["mac"] == "00:16:3e:01:02:03" and
   vifs[1]["bridge"] == "br1" and vifs[1]["ip"] == "10.0.0.2",
   "vm.info: config.vifs: default bridge xenbr0, a MAC in 00:16:3e, "
   "bridge=, mac=, ip= as written", vifs)
mac0 = vifs[0]["mac"] if vifs else None
hello = c.result("server.hello")
ok("devices" not in hello.get("capabilities", []),
   "hvsim: no 'devices' capability (recorded only)", hello)

# ---------------------------------------------------- unsupported keys
for key in ("sdl = 1", 'vfb = [ "vnc=1" ]', 'pci = [ "01:00.0" ]'):
    r = c.call("vm.create", {"config": guest_cfg("uns", 32, extra=[key]),
                             "config_path": "/x/uns.cfg"})
    k = key.split()[0]
    ok(err_code(r) == E_CONFIG and "uns.cfg:6: %s: not supported" % k in
       r["error"]["message"],
       "%s refused: file:line: key: not supported" % k, r)
r = c.call("vm.create", {"config": guest_cfg("uns", 32, extra=[
    "sdl = 1", "soundhw = 'hda'"]), "config_path": "/x/uns.cfg",
    "ignore_unsupported": True, "wait": True})
w = (r.get("result") or {}).get("warnings")
ok(w is not None and len(w) == 2 and
   w[0].startswith("/x/uns.cfg:6: sdl: warning: not supported, ignored") and
   w[1].startswith("/x/uns.cfg:7: soundhw: warning: not supported"),
   "ignore_unsupported: built, every ignored key in the result's warnings",
   r)
r = c.call("vm.create", {"config": guest_cfg("uns2", 32, extra=[
    "disk = [ '%s,qcow2,xvda,rw' ]" % imgs["pub.img"]]),
    "ignore_unsupported": True})
ok(err_code(r) == E_CONFIG and "qcow2 is not supported" in
   r["error"]["message"], "a qcow2 disk is refused even with "
   "ignore_unsupported (a disk is never dropped)", r)

p = subprocess.run([VMCTL, "--socket", h.sock, "create",
                    "--ignore-unsupported", "/dev/stdin"],
                   input=guest_cfg("uns3", 32, extra=["vnc = 1"]),
                   capture_output=True, text=True, timeout=120)
ok(p.returncode == 0 and "vnc: warning: not supported, ignored" in p.stderr,
   "vmctl create --ignore-unsupported prints the ignored key", p.stderr)
p = subprocess.run([VMCTL, "--socket", h.sock, "create", "/dev/stdin"],
                   input=guest_cfg("uns4", 32, extra=["vnc = 1"]),
                   capture_output=True, text=True, timeout=120)
ok(p.returncode != 0 and "vnc: not supported" in p.stderr,
   "vmctl create refuses vnc naming it", p.stderr)

# ------------------------------------------------------------- hot-plug
r = c.call("vm.disk_attach", {"vm": "dev1", "disk":
                              imgs["pub.img"] + ",raw,xvdc,ro"})
res = r.get("result") or {}
ok(res.get("devid") == 51744 and res.get("state") == "attached" and
   res.get("recorded_only") is True and res.get("disk", {}).get("vdev") ==
   "xvdc", "vm.disk_attach on hvsim: recorded only", r)
ok([d["vdev"] for d in devs("dev1")[0]] == ["xvda", "xvdb", "xvdc"],
   "vm.info shows the attached disk", devs("dev1")[0])
rec = h.record(c.result("vm.info", {"vm": "dev1"})["uuid"]) or {}
ok(isinstance(rec.get("source"), dict) and "config" in rec["source"],
   "the record rewritten for the hot-plug keeps what a restart rebuilds "
   "from (its source)", sorted(rec))
r = c.call("vm.disk_attach", {"vm": "dev1", "disk":
                              imgs["pub.img"] + ",raw,xvdc,ro"})
ok(err_code(r) == E_EXISTS, "vm.disk_attach of a vdev it has: E_EXISTS", r)
r = c.call("vm.disk_attach", {"vm": "dev1", "disk": "rel.img,raw,xvdd,ro"})
ok(err_code(r) in (RPC_INVALID_PARAMS, E_CONFIG),
   "vm.disk_attach of a relative path is refused", r)
r = c.call("vm.disk_attach", {"vm": "dev1", "disk":
                              imgs["pub.img"] + ",raw,hdc:cdrom,ro"})
ok(err_code(r) == E_CONFIG and "CD-ROM" in r["error"]["message"],
   "vm.disk_attach of a CD-ROM: refused clearly", r)
r = c.call("vm.disk_attach", {"vm": "nosuch", "disk":
                              imgs["pub.img"] + ",raw,xvdd,ro"})
ok(err_code(r) == E_NO_SUCH_VM, "vm.disk_attach to no such VM", r)
r = c.call("vm.disk_detach", {"vm": "dev1", "disk": "xvdc"})
ok((r.get("result") or {}).get("state") == "detached",
   "vm.disk_detach xvdc", r)
ok([d["vdev"] for d in devs("dev1")[0]] == ["xvda", "xvdb"],
   "vm.info no longer shows it", devs("dev1")[0])
r = c.call("vm.disk_detach", {"vm": "dev1", "disk": "xvdc"})
ok(err_code(r) == E_NO_SUCH_DEVICE, "vm.disk_detach of a disk it lacks: "
   "E_NO_SUCH_DEVICE", r)
r = c.call("vm.disk_detach", {"vm": "dev1", "disk": 51728})
ok((r.get("result") or {}).get("state") == "detached",
   "vm.disk_detach by vbd number", r)

r = c.call("vm.net_attach", {"vm": "dev1", "vif": "bridge=br2"})
res = r.get("result") or {}
ok(res.get("devid") == 2 and res.get("vif", {}).get("bridge") == "br2" and
   res["vif"]["mac"].startswith("00:16:3e:"),
   "vm.net_attach: the lowest free devid, a MAC in 00:16:3e", r)
mac2 = res.get("vif", {}).get("mac")
r = c.call("vm.net_attach", {"vm": "dev1", "vif": "mac=00:16:3e:01:02:03"})
ok(err_code(r) == E_EXISTS, "vm.net_attach of a MAC it has: E_EXISTS", r)
r = c.call("vm.net_attach", {"vm": "dev1", "vif": "model=e1000"})
ok(err_code(r) == E_CONFIG and "model" in r["error"]["message"],
   "vm.net_attach with model= (HVM): not supported", r)
r = c.call("vm.net_detach", {"vm": "dev1", "vif": "00:16:3e:01:02:03"})
ok((r.get("result") or {}).get("state") == "detached",
   "vm.net_detach by MAC", r)
ok([v["devid"] for v in devs("dev1")[1]] == [0, 2],
   "vm.info: vifs 0 and 2 left", devs("dev1")[1])

# ------------------------------------------ the same after a restart
before = devs("dev1")
c.close()
h.stop_daemon()
h.start_daemon(prefix=PREFIX)
c = h.client()
after = devs("dev1")
ok(after == before and after[1][0]["mac"] == mac0 and
   after[1][1]["mac"] == mac2,
   "after a daemon restart: the same disks and vifs, the same MACs",
   (before, after))

# ------------------------------------ a client of group vmbuild, not root
os.chmod(h.dir, 0o755)
os.chmod(h.sock, 0o666)


def as_nobody(calls):
    """Run (method, params) calls as uid 65534, gid vmbuild; replies."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        out = []
        try:
            os.setgroups([])
            os.setgid(GID)
            os.setuid(NOBODY)
            u = Client(h.sock, 60)
            for m, params in calls:
                out.append(u.call(m, params))
        except Exception as e:  # report, do not crash the child
            out.append({"exc": repr(e)})
        os.write(wfd, json.dumps(out).encode())
        os._exit(0)
    os.close(wfd)
    data = b""
    while True:
        b = os.read(rfd, 65536)
        if not b:
            break
        data += b
    os.waitpid(pid, 0)
    return json.loads(data or b"[]")


if not PREFIX:
    skip("image access of a non-root client", "needs root and unshare(1)")
else:
    out = as_nobody([
        ("server.hello", None),
        ("vm.disk_attach", {"vm": "dev1", "disk":
                            imgs["root.img"] + ",raw,xvdd,ro"}),
        ("vm.disk_attach", {"vm": "dev1", "disk":
                            imgs["pub.img"] + ",raw,xvdd,rw"}),
        ("vm.disk_attach", {"vm": "dev1", "disk":
                            imgs["closed"] + ",raw,xvdd,ro"}),
        ("vm.disk_attach", {"vm": "dev1", "disk":
                            imgs["pub.img"] + ",raw,xvdd,ro"}),
        ("vm.create", {"config": guest_cfg("nob", 32, extra=[
            "disk = [ '%s,raw,xvda,ro' ]" % imgs["root.img"]])}),
    ])
    out += [{}] * (6 - len(out))
    ok((out[0].get("result") or {}).get("peer", {}).get("may_write") is True,
       "uid 65534 of group vmbuild may write", out[0])
    ok(err_code(out[1]) == RPC_INVALID_PARAMS and "may not read " +
       imgs["root.img"] in out[1]["error"]["message"],
       "uid 65534: a root-only image is refused (it could not read it)",
       out[1])
    ok(err_code(out[2]) == RPC_INVALID_PARAMS and "may not read and write"
       in out[2]["error"]["message"],
       "uid 65534: rw of an image it may only read is refused", out[2])
    ok(err_code(out[3]) == RPC_INVALID_PARAMS and "may not enter " + closed
       in out[3]["error"]["message"],
       "uid 65534: an image in a directory it may not enter is refused",
       out[3])
    ok((out[4].get("result") or {}).get("state") == "attached",
       "uid 65534: ro of an image it may read is attached", out[4])
    ok(err_code(out[5]) == RPC_INVALID_PARAMS and "may not read" in
       out[5]["error"]["message"] and
       not any(v["name"] == "nob" for v in c.result("vm.list")["vms"]),
       "uid 65534: vm.create with a root-only disk is refused, no VM", out[5])
os.chmod(h.sock, 0o660)

r = c.call("vm.destroy", {"vm": "dev1"})
ok("result" in r, "vm.destroy of the VM with devices", r)
done()
