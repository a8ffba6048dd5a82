#!/usr/bin/env python3
"""devreboot.py - a restarted VM keeps the devices it has, on hvsim.

xl keeps a domain's current devices across a reboot; so does vmbuildd:
a lifecycle restart (on_reboot, on_crash, ... = "restart") builds the
new domain with the disks and vifs of the VM's configuration (vm.info's
config.disks and config.vifs, which hot-plug keeps current), not those
of the description it was created from.  hvsim has no I/O, so the
devices are what the build is given and what it records (vm.info's
config comes from libvmbuild's description of the guest it built).
hvsim runs no guest code: the test reboots and crashes the guest through
hvsim's socket (HvGuest), as lifecycle.py does.  Checked:

- xl.cfg text: a disk and a vif attached, an original disk and vif
  detached (the detached disk's image deleted), the guest reboots: the
  new domain has exactly the current disks and vifs, MACs included;
  a second reboot (the record written by the restart) keeps them;
- a guest object (params.guest) the same, on_crash=restart;
- vmbuildd killed (-9) while the restart's build is held in the middle
  of populating (HoldProxy: the record says "restart", the old domain
  is gone): the next vmbuildd finishes the restart with the current
  devices;
- a VM whose attached disk's image is gone is not rebuilt: its domain
  stays shut down, its record does not say "restart", the log says
  why;
- a record whose configuration has no device lists (a vmbuildd from
  before hot-plug): the description's devices;
- hotplug scripts by absolute path (root's): restarted as given when
  the source says root created the VM, not rebuilt when it does not.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

# Several populate calls per build (libxl's way), so that HoldProxy can
# hold one in the middle.
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "4G",
          "--backing", "phantom"], ["--populate", "libxl"])
g = HvGuest(h.hv_sock)
proxy = HoldProxy(os.path.join(h.dir, "hold.sock"), h.hv_sock)
h.hv_sock = proxy.path
h.start_daemon()
c = h.client()

imgs = {}
for n in ("a", "b", "c", "d", "e", "f"):
    p = os.path.join(h.dir, n + ".img")
    with open(p, "wb") as f:
        f.truncate(1 << 20)
    imgs[n] = p


def info(name):
    r = c.call("vm.info", {"vm": name})
    return r.get("result")


def devs(name):
    i = info(name) or {}
    cfg = i.get("config") or {}
    return cfg.get("disks"), cfg.get("vifs")


record = h.record


def running_again(name, old_id, timeout=60):
    """vm.info once the VM runs in a domain other than old_id."""
    return wait_for(lambda: (lambda i: i if i and i["state"] == "running"
                             and i["id"] != old_id else None)(info(name)),
                    timeout)


def call_ok(method, params):
    r = c.call(method, params)
    if "result" not in r:
        bail("%s %r: %r" % (method, params, r))
    return r["result"]


# ------------------------------------------------ xl.cfg text, a reboot
r = c.call("vm.create", {"config": guest_cfg("rd", 64, extra=[
    "disk = [ '%s,raw,xvda,rw', '%s,raw,xvdb,ro' ]" % (imgs["a"],
                                                       imgs["b"]),
    "vif = [ '', 'bridge=br1,mac=00:16:3e:0a:0b:0c' ]"]),
    "config_path": os.path.join(h.dir, "rd.cfg"), "wait": True})
ok("result" in r, "vm.create rd: disks xvda, xvdb; vifs 0, 1", r)
rd = r.get("result", {}).get("vm", {})
call_ok("vm.disk_attach", {"vm": "rd", "disk": imgs["c"] + ",raw,xvdc,rw"})
call_ok("vm.net_attach", {"vm": "rd", "vif": "bridge=br2,mtu=9000,"
                          "rate=10Mb/s@20ms,ip=10.0.0.9"})
call_ok("vm.disk_detach", {"vm": "rd", "disk": "xvdb"})
call_ok("vm.net_detach", {"vm": "rd", "vif": 0})
os.unlink(imgs["b"])
now = devs("rd")
ok([d["vdev"] for d in now[0]] == ["xvda", "xvdc"] and
   [v["devid"] for v in now[1]] == [1, 2] and now[1][1]["bridge"] == "br2"
   and now[1][1]["rate"] is not None and now[1][1]["mtu"] == 9000,
   "hot-plug: disks xvda, xvdc; vifs 1, 2 (br2, rate, mtu)", now)

ok(g.shutdown(rd["id"], g.REBOOT) == 0, "rd's guest reboots")
i = running_again("rd", rd["id"])
ok(i is not None and i["uuid"] == rd["uuid"],
   "rd restarted: a new domain, the same uuid", i)
after = devs("rd")
ok(after == now, "the new domain has exactly the current disks and vifs "
   "(the detached ones, xvdb and vif 0, stay out; MACs the same)",
   (now, after))
rec = record(rd["uuid"]) or {}
ok(rec.get("restart") is False and rec.get("domid") == (i or {}).get("id")
   and (rec.get("config") or {}).get("disks") == now[0] and
   (rec.get("config") or {}).get("vifs") == now[1],
   "its record: the new domain, with the current devices", rec)
ok("config" in (rec.get("source") or {}) and "xvdb" in
   rec["source"]["config"],
   "the source stays the text it was created from (xvdb in it)", rec)

# Again, from the record the restart wrote.
call_ok("vm.disk_attach", {"vm": "rd", "disk": imgs["d"] + ",raw,xvdd,ro"})
now = devs("rd")
old = i["id"] if i else -1
ok(g.shutdown(old, g.REBOOT) == 0, "rd's guest reboots again")
i = running_again("rd", old)
ok(i is not None and devs("rd") == now and
   [d["vdev"] for d in now[0]] == ["xvda", "xvdc", "xvdd"],
   "the second restart too: xvda, xvdc and the new xvdd", devs("rd"))

# ----------------------------------------- a guest object, on_crash
r = c.call("vm.create", {"guest": {
    "name": "obj", "type": "pvh", "memory": 64, "kernel": KERNEL,
    "on_crash": "restart", "disk": ["%s,raw,xvda,ro" % imgs["e"]],
    "vif": ["bridge=br5"]}, "wait": True})
ok("result" in r, "vm.create obj from a guest object", r)
obj = r.get("result", {}).get("vm", {})
call_ok("vm.disk_detach", {"vm": "obj", "disk": "xvda"})
call_ok("vm.net_attach", {"vm": "obj", "vif": "mac=00:16:3e:00:00:07"})
now = devs("obj")
ok(g.shutdown(obj["id"], g.CRASH) == 0, "obj's guest crashes")
i = running_again("obj", obj["id"])
after = devs("obj")
ok(i is not None and after == now and after[0] == [] and
   [v["devid"] for v in after[1]] == [0, 1] and
   after[1][1]["mac"] == "00:16:3e:00:00:07",
   "on_crash=restart: no disk, vifs 0 and 1 (the attached MAC)",
   (now, after))

# ------------------------- vmbuildd killed between the record and the build
i = info("rd")
now = devs("rd")
proxy.arm()
ok(g.shutdown(i["id"], g.REBOOT) == 0, "rd's guest reboots (build held)")
held = proxy.held.wait(60)
rec = record(rd["uuid"]) or {}
ok(held and rec.get("restart") is True and
   (rec.get("config") or {}).get("disks") == now[0] and
   (rec.get("config") or {}).get("vifs") == now[1],
   "the restart's build is held in populate; the record says restart, "
   "with the current devices", rec)
h.stop_daemon(signal.SIGKILL)
proxy.free()
ok(g.destroy(i["id"]) != 0, "the old domain was gone before the build")
h.start_daemon()
c = h.client()
j = running_again("rd", i["id"])
ok(j is not None and j["uuid"] == rd["uuid"],
   "the next vmbuildd finishes the restart", j)
ok(devs("rd") == now, "with exactly the current disks and vifs",
   (now, devs("rd")))
ok(len([v for v in c.result("vm.list")["vms"] if v["name"] == "rd"]) == 1,
   "one rd listed")

# ------------------------------------- an attached disk's image is gone
r = c.call("vm.create", {"config": guest_cfg("gone", 64), "wait": True})
gone = r.get("result", {}).get("vm", {})
call_ok("vm.disk_attach", {"vm": "gone", "disk": imgs["f"] +
                           ",raw,xvdb,rw"})
os.unlink(imgs["f"])
ok(g.shutdown(gone["id"], g.REBOOT) == 0, "gone's guest reboots")
i = wait_for(lambda: (lambda x: x if x and x["state"] == "shutdown"
                      else None)(info("gone")))
time.sleep(0.5)
i = info("gone")
rec = record(gone["uuid"]) or {}
ok(i and i["state"] == "shutdown" and i["id"] == gone["id"] and
   rec.get("restart") is False,
   "an attached disk's image gone: not rebuilt, the domain left shut "
   "down, the record not saying restart", (i, rec))
ok(wait_for(lambda: "xvdb: cannot use" in h.log_tail(n=100) and
            "left shut down" in h.log_tail(n=100), 10),
   "the log says why", h.log_tail())
ok("result" in c.call("vm.destroy", {"vm": "gone"}),
   "gone is destroyed on demand")

# ----------------------- a record of a vmbuildd before hot-plug existed
# Its configuration has no device lists: the description's stand.
r = c.call("vm.create", {"config": guest_cfg("older", 64, extra=[
    "disk = [ '%s,raw,xvda,ro' ]" % imgs["a"], "vif = [ 'bridge=br7' ]"]),
    "wait": True})
older = r.get("result", {}).get("vm", {})
c.close()
h.stop_daemon()
rec = record(older["uuid"])
del rec["config"]["disks"], rec["config"]["vifs"]
with open(os.path.join(h.state, older["uuid"] + ".json"), "w") as f:
    json.dump(rec, f)
h.start_daemon()
c = h.client()
ok(g.shutdown(older["id"], g.REBOOT) == 0, "older's guest reboots")
i = running_again("older", older["id"])
d, v = devs("older")
ok(i is not None and [x["vdev"] for x in d or []] == ["xvda"] and
   [x["bridge"] for x in v or []] == ["br7"],
   "a record without device lists: restarted with the description's",
   (i, d, v))

# ----------------------------------- hotplug scripts by path at a restart
# Root may give a script by absolute path; the VM's source records that
# root created it, and its restart runs the same.  A record that does not
# say so (an older vmbuildd's, where any member could give a path) is
# not rebuilt: no path that no root client gave is run as root.
r = c.call("vm.create", {"config": guest_cfg("scr", 64, extra=[
    "on_reboot = 'restart'",
    "disk = [ 'vdev=xvda,access=ro,script=/etc/xen/scripts/block,"
    "target=%s' ]" % imgs["a"],
    "vif = [ 'bridge=br8,script=/etc/xen/scripts/vif-bridge' ]"]),
    "wait": True})
ok("result" in r, "root: vm.create with scripts by absolute path", r)
scr = r.get("result", {}).get("vm", {})
ok((record(scr["uuid"]) or {}).get("source", {}).get("by_root") is True,
   "its source records that root created it")
ok(g.shutdown(scr["id"], g.REBOOT) == 0, "scr's guest reboots")
i = running_again("scr", scr["id"])
ok(i is not None and devs("scr")[0][0]["script"] ==
   "/etc/xen/scripts/block", "restarted, its scripts as root gave them",
   (i, devs("scr")))
c.close()
h.stop_daemon()
rec = record(scr["uuid"])
del rec["source"]["by_root"]
with open(os.path.join(h.state, scr["uuid"] + ".json"), "w") as f:
    json.dump(rec, f)
h.start_daemon()
c = h.client()
ok(g.shutdown(i["id"], g.REBOOT) == 0, "scr's guest reboots, its record "
   "not saying root created it")
ok(wait_for(lambda: "no root client created the VM" in h.log_tail(n=100)
            and "left shut down" in h.log_tail(n=100), 30),
   "not rebuilt: a script by path of a VM no root client created is not "
   "run; the log says why", h.log_tail())
i2 = info("scr")
ok(i2 and i2["state"] == "shutdown" and i2["id"] == i["id"],
   "the domain is left shut down", i2)

for n in ("rd", "obj", "older", "scr"):
    ok("result" in c.call("vm.destroy", {"vm": n}), "destroy " + n)
# The build the kill -9 interrupted left no domain behind (one would be
# listed, as not ours).
ok(wait_for(lambda: c.result("vm.list")["vms"] == []),
   "no domain left", c.result("vm.list"))
g.close()
done()
