#!/usr/bin/env python3
"""vcpupin.py - the vCPUs of a running VM on hvsim, which keeps them
(HV_OP_DOMAIN_VCPU: online, hard and soft affinity per vCPU), as Xen
does: vmctl vcpu-set and vcpu-pin go to the hypervisor, and vcpu-list
reads it back from there, not from the daemon's record.

  - a build gives hvsim the vCPUs online (vcpus of maxvcpus) and the
    affinity of cpus= / cpus_soft=;
  - a pin of one vCPU is that vCPU's alone, in hvsim;
  - what another client sets in hvsim directly is what vcpu-list shows
    (recorded_only false);
  - a pin of one vCPU is kept in the VM's record (vcpu_pins), is shown
    after a daemon restart, and is set again on the domain a restart
    (on_reboot) builds; a pin of every vCPU then drops it;
  - hvsim refuses a vCPU past maxvcpus and a CPU the host lacks.
"""
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
WORDS = 64                      # HV_CPUMAP_WORDS
SET_ONLINE, SET_HARD, SET_SOFT = 1, 2, 4
REQ = struct.Struct("<IIII%dQ%dQ" % (WORDS, WORDS))
EINVAL = 22

# 2 nodes of 2 CPUs: CPUs 0-3.
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "1G",
          "--backing", "phantom"])
h.start_daemon()
c = h.client()


def vmctl(*args):
    p = subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def bits(cpus):
    m = [0] * WORDS
    for cpu in cpus:
        m[cpu // 64] |= 1 << (cpu % 64)
    return m


def cpus_of(words):
    return [w * 64 + b for w in range(WORDS) for b in range(64)
            if words[w] >> b & 1]


class HvVcpu(HvGuest):
    """Another client of hvsim, setting and reading vCPUs directly."""

    def vcpu(self, domid, vcpu, set_=0, online=0, hard=(), soft=()):
        """(status, online, nr_online, hard CPUs, soft CPUs)."""
        req = REQ.pack(domid, vcpu, set_, online,
                       *(bits(hard) + bits(soft)))
        st, body = self.call("domain_vcpu", req)
        if st != 0:
            return (st, None, None, None, None)
        on, nr = struct.unpack_from("<II", body)
        w = struct.unpack_from("<%dQ" % (2 * WORDS), body, 8)
        return (st, on, nr, cpus_of(w[:WORDS]), cpus_of(w[WORDS:]))


def vcpu_list(vm="vp1"):
    rc, out, err = vmctl("--json", "vcpu-list", vm)
    return json.loads(out) if rc == 0 else {"rc": rc, "err": err}


def vcpu(lst, v):
    vs = lst.get("vcpus", [])
    return vs[v] if v < len(vs) else {}


hv = HvVcpu(h.hv_sock)

# ------------------------------------------------- the build tells hvsim
r = c.call("vm.create", {"config": guest_cfg(
    "vp1", 256, vcpus=2, extra=["maxvcpus = 4", 'cpus = "0-2"',
                                'cpus_soft = "1"']), "wait": True})
ok("result" in r, "vp1 built: 2 of 4 vCPUs, cpus 0-2, cpus_soft 1", r)
domid = c.result("vm.info", {"vm": "vp1"})["id"]
got = [hv.vcpu(domid, v) for v in range(4)]
ok([g[1] for g in got] == [1, 1, 0, 0] and got[0][2] == 2,
   "hvsim has vCPUs 0-1 online, 2-3 offline", got)
ok(all(g[3] == [0, 1, 2] and g[4] == [1] for g in got),
   "hvsim has cpus= as every vCPU's hard affinity, cpus_soft= as soft",
   got)
lst = vcpu_list()
ok(lst.get("recorded_only") is False and
   [v["online"] for v in lst.get("vcpus", [])] ==
   [True, True, False, False] and
   vcpu(lst, 0).get("hard_affinity") == "0-2" and
   vcpu(lst, 0).get("soft_affinity") == "1",
   "vcpu-list reads hvsim: not recorded_only, 2 online, the affinity",
   lst)

# ------------------------------------------- vcpu-set, vcpu-pin go there
rc, out, err = vmctl("vcpu-set", "vp1", "3")
ok(rc == 0 and hv.vcpu(domid, 2)[1] == 1 and hv.vcpu(domid, 3)[1] == 0,
   "vcpu-set 3: hvsim has vCPU 2 online, 3 offline",
   (rc, err, hv.vcpu(domid, 2), hv.vcpu(domid, 3)))
rc, out, err = vmctl("vcpu-pin", "vp1", "1", "3", "2-3")
g1, g0 = hv.vcpu(domid, 1), hv.vcpu(domid, 0)
ok(rc == 0 and g1[3] == [3] and g1[4] == [2, 3] and g0[3] == [0, 1, 2] and
   g0[4] == [1], "vcpu-pin 1 3 2-3: vCPU 1's in hvsim, vCPU 0's unchanged",
   (rc, err, g0, g1))

# ------------------------- what another client set is what vcpu-list shows
st = hv.vcpu(domid, 2, SET_HARD | SET_SOFT, hard=[0, 3], soft=[2])[0]
lst = vcpu_list()
ok(st == 0 and vcpu(lst, 2).get("hard_affinity") == "0,3" and
   vcpu(lst, 2).get("soft_affinity") == "2",
   "vCPU 2 pinned in hvsim by another client: vcpu-list shows it", lst)
st = hv.vcpu(domid, 3, SET_ONLINE, online=1)[0]
lst = vcpu_list()
ok(st == 0 and vcpu(lst, 3).get("online") is True,
   "vCPU 3 brought online in hvsim: vcpu-list shows it online", lst)
ok(hv.vcpu(domid, 3, SET_ONLINE, online=0)[0] == 0, "vCPU 3 offline again")
ok(vcpu(vcpu_list(), 1).get("hard_affinity") == "3",
   "vcpu-list: vCPU 1 pinned to CPU 3", vcpu_list())

# ---------------------------------------------------- hvsim refuses too
ok(hv.vcpu(domid, 4)[0] == -EINVAL, "hvsim: vCPU 4 of 4 does not exist")
ok(hv.vcpu(domid, 0, SET_HARD, hard=[4])[0] == -EINVAL,
   "hvsim: CPU 4 of a 4-CPU host refused")
ok(hv.vcpu(domid, 0, SET_SOFT, soft=[])[0] == -EINVAL,
   "hvsim: an empty affinity refused")
ok(hv.vcpu(domid, 0)[3] == [0, 1, 2], "and nothing changed")
rc, out, err = vmctl("vcpu-pin", "vp1", "1", "4")
ok(rc == 1 and "params.hard" in err and "CPU 4" in err,
   "vmctl vcpu-pin to CPU 4: refused naming the parameter", (rc, err))

# ------------------------------------------- kept across a daemon restart
info = c.result("vm.info", {"vm": "vp1"})
rec = h.record(info["uuid"])
pins = rec.get("vcpu_pins") if rec else None
ok(pins == [{"vcpu": 1, "hard": "3", "soft": "2-3"}],
   "the record keeps vCPU 1's own pin (vcpu_pins)", rec)
c.close()
h.stop_daemon()
h.start_daemon()
c = h.client()
lst = vcpu_list()
ok(vcpu(lst, 1).get("hard_affinity") == "3" and
   vcpu(lst, 1).get("soft_affinity") == "2-3" and
   vcpu(lst, 0).get("hard_affinity") == "0-2",
   "after a daemon restart: vcpu-list still shows vCPU 1 pinned", lst)

# ----------------------------------- set again on a domain a restart builds
old = domid
ok(hv.shutdown(old, hv.REBOOT) == 0, "vp1's guest reboots")
i = wait_for(lambda: (lambda x: x if x and x["state"] == "running" and
                      x["id"] != old else None)(
    c.result("vm.info", {"vm": "vp1"})), 180)
domid = i["id"] if i else None
g1, g0 = hv.vcpu(domid, 1), hv.vcpu(domid, 0)
ok(i and g1[3] == [3] and g1[4] == [2, 3] and g0[3] == [0, 1, 2] and
   g0[4] == [1] and [hv.vcpu(domid, v)[1] for v in range(4)] ==
   [1, 1, 1, 0],
   "restarted (on_reboot): the new domain has vCPU 1's pin again, the "
   "others cpus=, 3 vCPUs online", (i, g0, g1))
rec = h.record(info["uuid"])
ok(rec and rec.get("vcpu_pins") == [{"vcpu": 1, "hard": "3",
                                       "soft": "2-3"}],
   "and its record still has the pin", rec)

# ------------------------------------------- a pin of all drops the one
rc, out, err = vmctl("vcpu-pin", "vp1", "all", "0-1")
rec = h.record(info["uuid"])
ok(rc == 0 and rec and rec.get("vcpu_pins") == [{"vcpu": 1, "hard": None,
                                                   "soft": "2-3"}] and
   rec["config"].get("cpus") == "0-1" and hv.vcpu(domid, 1)[3] == [0, 1],
   "vcpu-pin all 0-1: cpus= 0-1; vCPU 1 keeps only its soft pin",
   (rc, err, rec and rec.get("vcpu_pins")))

hv.close()
c.call("vm.destroy", {"vm": "vp1"})
done()
