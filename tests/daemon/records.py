#!/usr/bin/env python3
"""records.py - state records written before the guest was one struct.

tests/daemon/fixtures/record-before-guestjson.json is the record a
vmbuildd wrote (main at 8590a21, when the daemon kept a VM's
configuration as a JSON tree and libvmbuild wrote it) for a guest with
every kind of member: vnuma, cpus, escaped cmdline, two disks, two
vifs (a derived MAC and a given one, rate, mtu, vifname, gatewaydev,
untrusted).  Today's vmbuildd keeps a struct vmb_guest read from the
record (daemon/guestjson.c).  Checked, on hvsim:

- loaded by a restarted vmbuildd, vm.info's config is the record's
  config, member for member, in the same order;
- its lifecycle actions are the record's (on_poweroff=preserve,
  on_crash=restart);
- a disk detached: the record's config is the old one without it;
- the guest crashes: restarted with the record's remaining disk and
  both vifs, MACs as before.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fixtures", "record-before-guestjson.json")
with open(FIXTURE) as f:
    text = f.read()
old = json.loads(text)
UUID = old["uuid"]
OLD_KERNEL = old["config"]["kernel"]
OLD_IMG = old["config"]["disks"][0]["target"]

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "4G",
          "--backing", "phantom"])
g = HvGuest(h.hv_sock)
h.start_daemon()
c = h.client()
img = os.path.join(h.dir, "a.img")
with open(img, "wb") as f:
    f.truncate(1 << 20)
# The fixture's paths are of the machine that wrote it: ours in place.
text = text.replace(OLD_KERNEL, KERNEL).replace(OLD_IMG, img)
rec = json.loads(text)


# Keys vmbuild learnt after the fixture was written: vm.info shows them
# at their defaults; every other member is the record's, in its order.
ADDED = {"max_grant_frames": 0, "max_maptrack_frames": 0,
         "cpu_weight": 256, "cap": 0}


def compact(v):
    if isinstance(v, dict):
        v = {k: x for k, x in v.items()
             if k not in ADDED or x != ADDED[k]}
    return json.dumps(v, separators=(",", ":"))


def info():
    return c.call("vm.info", {"vm": "fixture"}).get("result")


# A domain for the record: the VM created from the record's own source.
r = c.call("vm.create", {"config": rec["source"]["config"], "wait": True})
vm = r.get("result", {}).get("vm", {})
ok(vm.get("uuid") == UUID, "the fixture's guest is built", r)
c.close()
h.stop_daemon()
rec["domid"] = vm.get("id")
with open(os.path.join(h.state, UUID + ".json"), "w") as f:
    json.dump(rec, f, separators=(",", ":"))
h.start_daemon()
c = h.client()

i = info()
ok(i is not None and compact(i["config"]) == compact(rec["config"]),
   "vm.info's config is the old record's, member for member",
   (i or {}).get("config"))
ok(i is not None and i["lifecycle"]["on_poweroff"] == "preserve" and
   i["lifecycle"]["on_crash"] == "restart",
   "its lifecycle actions are the record's", (i or {}).get("lifecycle"))

r = c.call("vm.disk_detach", {"vm": "fixture", "disk": "xvdb"})
want = json.loads(compact(rec["config"]))
want["disks"] = [d for d in want["disks"] if d["vdev"] != "xvdb"]
now = h.record(UUID) or {}
ok("result" in r and compact(now.get("config")) == compact(want),
   "xvdb detached: the record's config is the old one without it",
   (r, now.get("config")))

ok(g.shutdown(vm["id"], g.CRASH) == 0, "the guest crashes")
i = wait_for(lambda: (lambda x: x if x and x["state"] == "running" and
                      x["id"] != vm["id"] else None)(info()))
ok(i is not None and compact(i["config"]["disks"]) ==
   compact(want["disks"]) and compact(i["config"]["vifs"]) ==
   compact(want["vifs"]),
   "restarted with the record's disk and vifs, MACs as before",
   (i or {}).get("config"))

ok("result" in c.call("vm.destroy", {"vm": "fixture"}), "destroy fixture")
c.close()
h.cleanup()
done()
