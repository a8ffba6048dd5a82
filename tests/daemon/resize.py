#!/usr/bin/env python3
"""resize.py - a running VM's memory and vCPUs through vmbuildd and
vmctl, on hvsim: vm.mem_set, vm.mem_max, vm.vcpu_set, vm.vcpu_pin and
vm.vcpu_list (vmctl mem-set, mem-max, vcpu-set, vcpu-pin, vcpu-list).

Each change succeeds within the VM's maxmem / maxvcpus and the host's
CPUs, and is refused otherwise naming the parameter; hvsim's max memory
for the domain follows (target or static max + 1 MiB, as libxl sets
it); the change is logged, told as a vm.changed event, kept in the VM's
record (a restarted daemon shows it) and refused on the read-only
socket.  maxmem above memory is accepted for a PVH guest, and vm.info
shows the vCPUs online beside maxvcpus.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
MIB = 1 << 20
E_PERMISSION = 1000
INVALID = -32602

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "1G"])
h.start_daemon()
c = h.client()


def vmctl(*args):
    p = subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def info(vm="rs1"):
    return c.result("vm.info", {"vm": vm})


def hv_max_bytes(vm="rs1"):
    return info(vm).get("max_memory_bytes")


# ---------------------------------------------------------- vm.create
cfg = guest_cfg("rs1", 256, vcpus=2, extra=["maxmem = 512",
                                              "maxvcpus = 4"])
r = c.call("vm.create", {"config": cfg, "wait": True})
ok("result" in r, "maxmem (512) above memory (256) is accepted for PVH", r)
i = info()
ok(i.get("vcpus") == 2 and i.get("maxvcpus") == 4,
   "vm.info: vcpus 2 online of maxvcpus 4", i)
ok(i.get("memory_target_bytes") == 256 * MIB and
   i.get("maxmem_bytes") == 512 * MIB,
   "vm.info: memory target 256 MiB, maxmem 512 MiB", i)
ok(i.get("memory_bytes") == 256 * MIB, "256 MiB populated", i)
rc, out, err = vmctl("list")
ok(rc == 0 and " 2 " in out.split("\n")[1] if len(out.split("\n")) > 1
   else False, "vmctl list: 2 vCPUs", out)

ev = h.client()
ev.result("events.subscribe", {"events": ["vm.changed"]})

# ------------------------------------------------------------ mem-set
rc, out, err = vmctl("mem-set", "rs1", "384m")
ok(rc == 0 and "384" in out, "vmctl mem-set rs1 384m", (rc, out, err))
i = info()
ok(i.get("memory_target_bytes") == 384 * MIB, "target now 384 MiB", i)
ok(hv_max_bytes() == 385 * MIB,
   "the domain's max memory: target + 1 MiB, as libxl enforces",
   hv_max_bytes())
m = ev.event(lambda m: m.get("method") == "vm.changed", timeout=60)
ok(m and m["params"].get("vm") == "rs1" and
   m["params"].get("change") == "memory" and
   m["params"].get("memory_target_bytes") == 384 * MIB,
   "vm.changed event with the new target", m)
ok(h.log_has("memory target of rs1 set by uid"), "mem-set logged")

rc, out, err = vmctl("mem-set", "rs1", "1g")
ok(rc == 1 and "params.memory_bytes" in err and "maxmem" in err,
   "mem-set above maxmem: refused naming the parameter", (rc, err))
rc, out, err = vmctl("mem-set", "rs1", "64")
ok(rc == 1 and "params.memory_bytes" in err and "128 MiB" in err,
   "mem-set below the floor: refused", (rc, err))
# A guest built below the floor may be given more, not less.
r = c.call("vm.create", {"config": guest_cfg("rs-small", 64, extra=[
    "maxmem = 128"]), "wait": True})
rc, out, err = vmctl("mem-set", "rs-small", "96m")
ok("result" in r and rc == 0 and
   info("rs-small").get("memory_target_bytes") == 96 * MIB,
   "a 64 MiB guest may be given 96 MiB (below the floor, but more)",
   (r, rc, err))
rc, out, err = vmctl("mem-set", "rs-small", "32m")
ok(rc == 1 and "128 MiB" in err, "and not ballooned down to 32 MiB",
   (rc, err))
ok("result" in c.call("vm.destroy", {"vm": "rs-small"}), "rs-small gone")
rc, out, err = vmctl("mem-set", "rs1", "12x")
ok(rc == 2 and "not a size" in err, "mem-set SIZE not a size: usage",
   (rc, err))
r = c.call("vm.mem_set", {"vm": "rs1", "memory_bytes": 300 * MIB + 1})
ok(err_code(r) == INVALID and "4 KiB" in r["error"]["message"],
   "vm.mem_set: not page-aligned", r)

# ------------------------------------------------------------ mem-max
rc, out, err = vmctl("mem-max", "rs1", "768")
ok(rc == 0, "vmctl mem-max rs1 768", (rc, out, err))
ok(info().get("maxmem_bytes") == 768 * MIB and
   hv_max_bytes() == 769 * MIB, "maxmem 768 MiB, domain max 769 MiB",
   info())
rc, out, err = vmctl("mem-max", "rs1", "200m")
ok(rc == 1 and "params.maxmem_bytes" in err and "target" in err,
   "mem-max below the target: refused", (rc, err))
rc, out, err = vmctl("mem-set", "rs1", "700m")
ok(rc == 0 and info().get("memory_target_bytes") == 700 * MIB,
   "mem-set up to the raised maxmem", (rc, err))

# ---------------------------------------------------------- vcpu-set
rc, out, err = vmctl("vcpu-set", "rs1", "3")
ok(rc == 0 and info().get("vcpus") == 3, "vmctl vcpu-set rs1 3",
   (rc, out, err, info().get("vcpus")))
m = ev.event(lambda m: m.get("method") == "vm.changed" and
             m["params"].get("change") == "vcpus", timeout=60)
ok(m and m["params"]["vcpus"] == 3, "vm.changed: vcpus", m)
rc, out, err = vmctl("vcpu-set", "rs1", "5")
ok(rc == 1 and "params.vcpus" in err and "maxvcpus (4)" in err,
   "vcpu-set beyond maxvcpus: refused", (rc, err))
rc, out, err = vmctl("vcpu-set", "rs1", "0")
ok(rc == 1 and "params.vcpus" in err, "vcpu-set 0: refused", (rc, err))

# ---------------------------------------------------------- vcpu-pin
rc, out, err = vmctl("vcpu-pin", "rs1", "all", "0-1", "2-3")
ok(rc == 0, "vmctl vcpu-pin rs1 all 0-1 2-3", (rc, out, err))
cf = info().get("config", {})
ok(cf.get("cpus") == "0-1" and cf.get("cpus_soft") == "2-3",
   "a pin of all vCPUs is the VM's cpus and cpus_soft", cf)
rc, out, err = vmctl("vcpu-pin", "rs1", "1", "9")
ok(rc == 1 and "CPU 9 does not exist" in err and "params.hard" in err,
   "vcpu-pin to a CPU the host lacks: refused", (rc, err))
rc, out, err = vmctl("vcpu-pin", "rs1", "4", "0")
ok(rc == 1 and "params.vcpu" in err and "vCPU 4 does not exist" in err,
   "vcpu-pin of a vCPU beyond maxvcpus: refused", (rc, err))
rc, out, err = vmctl("vcpu-pin", "rs1", "1", "nodes:1")
ok(rc == 0, "vcpu-pin of one vCPU to a node", (rc, err))

# --------------------------------------------------------- vcpu-list
rc, out, err = vmctl("--json", "vcpu-list", "rs1")
lst = json.loads(out) if rc == 0 else {}
vs = lst.get("vcpus", [])
ok(len(vs) == 4 and [v["online"] for v in vs] == [True] * 3 + [False] and
   vs[0]["hard_affinity"] == "0-1" and vs[0]["soft_affinity"] == "2-3",
   "vcpu-list --json: 4 vCPUs, 3 online, the affinity", lst)
rc, out, err = vmctl("vcpu-list")
ok(rc == 0 and out.count("rs1") == 4 and "offline" in out,
   "vcpu-list: every vCPU of every VM", (out, err))

# ------------------------------------------------- the read-only socket
ro = Client(h.sock.replace(".sock", "-ro.sock"))
for meth, p in (("vm.mem_set", {"memory_bytes": 256 * MIB}),
                ("vm.mem_max", {"maxmem_bytes": 768 * MIB}),
                ("vm.vcpu_set", {"vcpus": 2}),
                ("vm.vcpu_pin", {"vcpu": "all", "hard": "all"})):
    p["vm"] = "rs1"
    r = ro.call(meth, p)
    ok(err_code(r) == E_PERMISSION, "%s refused on the read-only socket"
       % meth, r)
r = ro.call("vm.vcpu_list", {"vm": "rs1"})
ok("result" in r, "vm.vcpu_list served on the read-only socket", r)
ro.close()
ok(info().get("memory_target_bytes") == 700 * MIB, "nothing changed", info())

# ------------------------------------------------ after a daemon restart
before = info()
rec = h.record(before["uuid"])
ok(rec and rec["config"].get("memory_bytes") == 700 * MIB and
   rec["config"].get("vcpus") == 3 and
   rec["config"].get("maxmem_bytes") == 768 * MIB,
   "the record has the target, maxmem and vcpus",
   rec and rec.get("config"))
ev.close()
c.close()
h.stop_daemon()
h.start_daemon()
c = h.client()
after = info()
ok(after.get("memory_target_bytes") == 700 * MIB and
   after.get("maxmem_bytes") == 768 * MIB and after.get("vcpus") == 3 and
   after["config"].get("cpus") == "0-1",
   "after a daemon restart: the same target, maxmem, vcpus, affinity",
   after)
r = c.call("vm.vcpu_set", {"vm": "rs1", "vcpus": 5})
ok(err_code(r) == INVALID, "after a restart maxvcpus still holds", r)

# ------------------------------- a reboot builds the VM at its new size
g = HvGuest(h.hv_sock)
old = after["id"]
ok(g.shutdown(old, g.REBOOT) == 0, "rs1's guest reboots")
i = wait_for(lambda: (lambda x: x if x and x["state"] == "running" and
                      x["id"] != old else None)(info()), 180)
ok(i and i.get("memory_bytes") == 700 * MIB and i.get("vcpus") == 3 and
   i.get("maxmem_bytes") == 768 * MIB and i.get("max_memory_bytes") ==
   768 * MIB and i["config"].get("cpus") == "0-1",
   "restarted (on_reboot): 700 MiB populated, 3 vCPUs online, maxmem "
   "768 MiB, cpus 0-1, as libxl keeps them", i)
g.close()

c.call("vm.destroy", {"vm": "rs1"})
done()
