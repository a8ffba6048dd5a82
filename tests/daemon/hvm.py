#!/usr/bin/env python3
"""hvm.py - HVM guests on hvsim (issue 21): the build, the device model's
supervision, and undo.

vmbuildd runs tests/daemon/fixtures/fake-dm.py as the device model (no
QEMU), the test kernel as hvmloader (an ELF it starts at its entry) and
a file of its own as the BIOS.  The fake device model misbehaves by the
guest's name (see its docstring).  Checked, each without timing
assumptions (bounded waits for conditions):

- create: type "hvm" built; the firmware loaded (image_loaded, the
  entry); vm.info has the type, the layout (VGA hole, MMIO hole at
  0xf0000000) and the device model's pid; the device model got
  -xen-domid, -machine xenfv, QMP, -no-shutdown, -nodefaults,
  -display none, the card's VRAM, the boot order;
- the device model killed: the guest is crashed and on_crash applies
  (destroy: the VM is gone; restart: a new domain with a new device
  model);
- destroy stops the device model and it is reaped (no process, no
  zombie);
- a device model that fails to start, one that dies mid-build, one
  that cannot tell its serial port's pty (QMP query-chardev), and a
  missing BIOS: the build fails naming why, and nothing is left (no
  domain in hvsim, no VM, no process);
- vmctl save (and --checkpoint) and migrate of an HVM guest are refused
  by name before anything is done: it runs on with its device model;
- device_model_override is refused by name.
"""
import os
import signal
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
h.start_daemon(fake_dm_args(h) + ["--ovmf", h.path("no-such-ovmf.fd")])
c = h.client()
hv = Hv(h.hv_sock)


def hvm_cfg(name, extra=()):
    return "\n".join(['name = "%s"' % name, 'type = "hvm"', "memory = 64",
                      "vcpus = 2"] + list(extra)) + "\n"


def create(name, extra=()):
    return c.call("vm.create", {"config": hvm_cfg(name, extra),
                                "wait": True})


def info(name):
    return c.call("vm.info", {"vm": name}).get("result")


def alive(pid):
    """The process exists and is not a zombie (not yet reaped)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pid):
    """The process is reaped: no /proc entry, not even a zombie."""
    return wait_for(lambda: not os.path.exists("/proc/%d" % pid),
                    30) is not None


def hv_domains():
    """hvsim's domains but 0 (HV_OP_DOMAIN_LIST)."""
    st, rep = hv.call(HV_OPS["domain_list"], struct.pack("<II", 0, 1024))
    nr = struct.unpack_from("<I", rep)[0]
    size = (len(rep) - 8) // nr if nr else 0
    return [d for d in (struct.unpack_from("<I", rep, 8 + i * size)[0]
                        for i in range(nr)) if d != 0]


def dm_procs():
    """Live device models this daemon started."""
    return fake_dm_procs(h.state)


# --- create ---------------------------------------------------------
r = create("hv1", ['vga = "stdvga"', 'boot = "dc"', 'serial = "pty"'])
ok("result" in r, "an HVM guest is built", r)
vm = info("hv1")
ok(vm and vm.get("type") == "hvm", "vm.info says type hvm", vm)
lay = (vm or {}).get("layout") or {}
ok(lay.get("vga_hole_start") == 0xa0000 and lay.get("vga_hole_end") ==
   0xc0000 and lay.get("mmio_hole_start") == 0xf0000000 and
   lay.get("lowmem_end") == 48 << 20 and
   lay.get("populated_bytes") == (48 << 20) - 0x20000,
   "vm.info has the HVM layout (stdvga's 16 MiB of VRAM carved out of "
   "memory as libxl does, the VGA hole unpopulated)", lay)
ok(vm and vm.get("memory_bytes") == (48 << 20) - 0x20000,
   "the domain holds the memory less the VRAM and the VGA hole", vm)
b = (vm or {}).get("build") or {}
ok(b.get("image_loaded") is True and b.get("entry"),
   "hvmloader and the BIOS were loaded into guest memory", b)
dm = (vm or {}).get("device_model") or {}
pid = dm.get("pid")
ok(pid and alive(pid), "a device model runs for it", dm)
argv = open(os.path.join(h.state, "dm-%d.qmp.argv" % vm["id"])).read() \
    .split("\n") if vm else []
for want in (["-xen-domid", str(vm["id"])], ["-machine", "xenfv"],
             ["-no-shutdown"], ["-nodefaults"], ["-display", "none"],
             ["-device", "VGA,vgamem_mb=16"], ["-boot", "order=dc"],
             ["-serial", "pty"], ["-name", "hv1"], ["-m", "48"]):
    ok(any(argv[i:i + len(want)] == want for i in range(len(argv))),
       "the device model got %s" % " ".join(want), argv)
ok(any("server=on" in a and os.path.join(h.state, "dm-") in a
       for a in argv), "QMP on a private socket in the state dir", argv)

# --- destroy stops and reaps it -------------------------------------
r = c.call("vm.destroy", {"vm": "hv1"})
ok("result" in r, "destroy", r)
ok(pid and gone(pid), "destroy stopped the device model and it was "
   "reaped (no process, no zombie)")

# --- the device model dies: crashed, on_crash applies ---------------
r = create("hv2", ['on_crash = "destroy"'])
vm = info("hv2") or {}
pid = (vm.get("device_model") or {}).get("pid")
ok(pid, "hv2 has a device model", vm)
if pid:
    os.kill(pid, signal.SIGKILL)
    ok(h.log_has("hv2: device model (pid %d) died" % pid, timeout=30),
       "its death is noticed", h.log_tail())
    ok(gone(pid), "the dead device model is reaped")
    ok(wait_for(lambda: info("hv2") is None, 30) is not None,
       "the guest is crashed and on_crash=destroy destroyed it",
       h.log_tail())
r = create("hv3", ['on_crash = "restart"'])
vm = info("hv3") or {}
pid = (vm.get("device_model") or {}).get("pid")
if pid:
    os.kill(pid, signal.SIGKILL)
    again = wait_for(lambda: (lambda i: i if i and i.get("id") != vm["id"]
                              and (i.get("device_model") or {}).get("pid")
                              else None)(info("hv3")), 60)
    ok(again is not None, "on_crash=restart: a new domain with a new "
       "device model", h.log_tail())
    ok(h.log_has("hv3 (domain %d) shut down (crash)" % vm["id"]),
       "the domain was crashed when its device model died")
    r = c.call("vm.destroy", {"vm": "hv3"})
    ok("result" in r, "hv3 destroyed", r)
else:
    ok(False, "hv3 has a device model", vm)

# --- failures undo everything ---------------------------------------
ok(wait_for(lambda: hv_domains() == [], 30) is not None,
   "no domain in hvsim before the failures", hv_domains())
for name, extra, why in (
        ("dmfail1", [], "exited before it answered on QMP"),
        ("dmdie1", [], "died during the build"),
        ("dmnopty1", ['serial = "pty"'], "does not tell its serial port's "
         "pty"),
        ("nobios", ['bios = "ovmf"'], "no-such-ovmf.fd")):
    r = create(name, extra)
    msg = (r.get("error") or {}).get("message", "")
    ok("error" in r and why in msg, "%s: the build fails: %s" % (name, why),
       r)
    ok(info(name) is None, "%s: no VM left" % name)
    ok(hv_domains() == [], "%s: no domain left in hvsim" % name,
       hv_domains())
    ok(wait_for(lambda: dm_procs() == [], 30) is not None,
       "%s: no device model process left" % name, dm_procs())

# --- save and migration refused before anything is done ------------
# Its device model's state would have to be in the stream: not written,
# so not started (a save that destroyed the guest into a file no restore
# takes would lose it).
r = create("hvs", ['serial = "pty"'])
ok("result" in r, "hvs built", r)
pid = ((info("hvs") or {}).get("device_model") or {}).get("pid")
for args in (["save", "hvs", h.path("hvs.save")],
             ["save", "--checkpoint", "hvs", h.path("hvs.ckpt")],
             ["migrate", "hvs", "127.0.0.1"]):
    p = subprocess.run([os.path.join(BIN, "vmctl"), "--socket", h.sock]
                       + args, capture_output=True, text=True, timeout=60)
    ok(p.returncode != 0 and "HVM guest" in p.stderr and
       "does not save or migrate" in p.stderr,
       "vmctl %s of an HVM guest: refused by name" % args[0], p)
    vm = info("hvs") or {}
    ok(vm.get("state") in ("running", "blocked") and
       (vm.get("device_model") or {}).get("pid") == pid and
       not os.path.exists(args[-1]),
       "it runs on, its device model too, no file written", vm)
c.call("vm.destroy", {"vm": "hvs"})

# --- device_model_override refused ----------------------------------
r = create("ovr", ['device_model_override = "/bin/true"'])
ok("error" in r and "device_model_override" in
   (r.get("error") or {}).get("message", ""),
   "device_model_override is refused by name", r)
done()
