#!/usr/bin/env python3
"""hvmdevices.py - an HVM guest's devices on its device model's command
line, as libxl 4.17 builds it for qemu-xen (issue 21); its serial
console; direct kernel boot.

vmbuildd runs tests/daemon/fixtures/fake-dm.py as the device model: it
records its arguments (QMP-SOCKET.argv), reads the descriptors it is
given for -kernel and -initrd (QMP-SOCKET.fds: size and SHA-256), and
with -serial pty opens a pty it reports through QMP query-chardev.
Checked:

- a raw disk (hda), a qcow2 disk (hdb), an ISO CD-ROM (hdc), and a PV
  only disk (xvde): -drive if=ide,index=N,media=disk,format=raw|qcow2,
  cache=writeback for the disks, -drive if=none,readonly=on,... with
  -device ide-cd for the CD-ROM, nothing for xvde;
- e1000 and rtl8139 NICs (model=, and rtl8139 by default) with
  -netdev type=tap,ifname=vifD.N-emu,script=no,downscript=no; a
  type=vif NIC has none;
- vnc = 1: -vnc unix:STATE/vnc-DOMID.sock; serial = "pty": -serial pty;
  boot: -boot order=...;
- vm.console: the pty the device model reports (query-chardev), handed
  over as a descriptor the guest's serial output is read from; and a
  clear error for a guest without a serial port;
- direct kernel boot: -kernel, -initrd by /dev/fd/3 and /dev/fd/4 (the
  images vmbuildd opened), whose content is the kernel's and ramdisk's;
  -append with the command line;
- hdtype = "ahci": one -device ahci,id=ahci0, each of the first six
  read-write disks an ide-hd on its port (xvde too), the CD-ROM still an
  ide-cd, no if=ide disk; another hdtype refused by name;
- refused by name: a read-only IDE disk, a qcow2 disk not emulated, an
  emulated SCSI disk, an unknown NIC model, a ramdisk without a kernel;
  and, on a PVH guest, model= and devtype=cdrom as before.
"""
import hashlib
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
files = {}
for name, size in (("disk.raw", 1 << 20), ("disk.qcow2", 1 << 16),
                   ("cd.iso", 1 << 16), ("pv.raw", 1 << 20)):
    files[name] = h.path(name)
    with open(files[name], "wb") as f:
        f.write(os.urandom(64) * (size // 64))
h.start_daemon(fake_dm_args(h))
c = h.client()
IMG_DIR = os.path.dirname(KERNEL)


def create(name, extra=()):
    cfg = "\n".join(['name = "%s"' % name, 'type = "hvm"', "memory = 64",
                     "vcpus = 1"] + list(extra)) + "\n"
    return c.call("vm.create", {"config": cfg, "wait": True})


def info(name):
    return c.call("vm.info", {"vm": name}).get("result")


def argv_of(vm):
    with open(os.path.join(h.state, "dm-%d.qmp.argv" % vm["id"])) as f:
        return f.read().split("\n")


def has(argv, *want):
    return any(argv[i:i + len(want)] == list(want) for i in range(len(argv)))


def error(r):
    return (r.get("error") or {}).get("message", "")


# --- disks, NICs, VNC, serial, boot ----------------------------------
r = create("dev1", [
    'disk = [ "format=raw,vdev=hda,access=rw,target=%s",' % files["disk.raw"],
    '  "format=qcow2,vdev=hdb,access=rw,target=%s",' % files["disk.qcow2"],
    '  "format=raw,vdev=hdc,access=ro,devtype=cdrom,target=%s",' %
    files["cd.iso"],
    '  "format=raw,vdev=xvde,access=rw,target=%s" ]' % files["pv.raw"],
    'vif = [ "model=e1000,mac=00:16:3e:00:00:01,bridge=xenbr0",',
    '  "mac=00:16:3e:00:00:02", "type=vif,mac=00:16:3e:00:00:03" ]',
    "vnc = 1", 'serial = "pty"', 'boot = "dc"'])
ok("result" in r, "an HVM guest with disks, NICs, VNC and serial is built",
   r)
vm = info("dev1") or {}
d = vm.get("id")
argv = argv_of(vm) if d else []
for want in (
        ["-drive", "file=%s,if=ide,index=0,media=disk,format=raw,"
         "cache=writeback" % files["disk.raw"]],
        ["-drive", "file=%s,if=ide,index=1,media=disk,format=qcow2,"
         "cache=writeback" % files["disk.qcow2"]],
        ["-drive", "if=none,readonly=on,id=ide-5632,file=%s,format=raw" %
         files["cd.iso"],
         "-device", "ide-cd,id=ide-5632,drive=ide-5632,bus=ide.1,unit=0"],
        ["-device", "e1000,id=nic0,netdev=net0,mac=00:16:3e:00:00:01"],
        ["-netdev", "type=tap,id=net0,ifname=vif%s.0-emu,br=xenbr0,"
         "script=no,downscript=no" % d],
        ["-device", "rtl8139,id=nic1,netdev=net1,mac=00:16:3e:00:00:02"],
        ["-netdev", "type=tap,id=net1,ifname=vif%s.1-emu,br=xenbr0,"
         "script=no,downscript=no" % d],
        ["-vnc", "unix:%s/vnc-%s.sock" % (h.state, d)],
        ["-display", "none"], ["-serial", "pty"], ["-boot", "order=dc"]):
    ok(has(argv, *want), "the device model got %s" % " ".join(want), argv)
ok(not any(files["pv.raw"] in a for a in argv),
   "xvde (not one of the first four) is the PV backend's only", argv)
ok(not any("nic2" in a or "net2" in a for a in argv),
   "type=vif: no emulated NIC", argv)
ok("-kernel" not in argv, "no kernel: no -kernel", argv)

# --- the serial console through the device model's pty ---------------
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(60)
s.connect(h.sock)
s.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "vm.console",
                       "params": {"vm": "dev1"}}) + "\n").encode())
msg, fds, _, _ = socket.recv_fds(s, 65536, 1)
rep = json.loads(msg.split(b"\n")[0])
tty = (rep.get("result") or {}).get("tty", "")
ok(len(fds) == 1 and tty.startswith("/dev/pts/"),
   "vm.console hands over the pty the device model reported", rep)
if fds:
    ok(os.ttyname(fds[0]) == tty, "the descriptor is that pty",
       (os.ttyname(fds[0]), tty))
    os.set_blocking(fds[0], False)
    got = wait_for(lambda: (lambda b: b if b"fake-dm serial0" in b
                            else None)(os.read(fds[0], 4096)
                                       if os.isatty(fds[0]) else b""), 30)
    ok(got is not None, "the guest's serial output is read from it")
    for fd in fds:
        os.close(fd)
s.close()
# The pty as the device model told it at its start: what the build wrote
# to serial/0/tty for xl console (on Xen) and vm.info shows.
dm = (info("dev1") or {}).get("device_model") or {}
ok(tty and dm.get("serial_tty") == tty,
   "vm.info's device_model.serial_tty is the pty vm.console opens", dm)
r = create("noserial")
ok("result" in r, "a guest without a serial port", r)
dm = (info("noserial") or {}).get("device_model") or {}
ok("serial_tty" in dm and dm["serial_tty"] is None and dm.get("pid"),
   "a guest without a serial port: its device model runs, serial_tty "
   "null", dm)
r = c.call("vm.console", {"vm": "noserial"})
ok("error" in r and "no serial" in error(r),
   "vm.console of a guest without a serial port: a clear error", r)
for name in ("dev1", "noserial"):
    c.call("vm.destroy", {"vm": name})

# --- direct kernel boot ----------------------------------------------
ramdisk = os.path.join(IMG_DIR, "hvmdevices-initrd.%d" % os.getpid())
with open(ramdisk, "wb") as f:
    f.write(b"initrd" * 1000)
try:
    r = create("kboot", ['kernel = "%s"' % KERNEL,
                         'ramdisk = "%s"' % ramdisk,
                         'cmdline = "console=ttyS0 root=/dev/sda1"'])
finally:
    os.unlink(ramdisk)
ok("result" in r, "an HVM guest with kernel, ramdisk and cmdline", r)
vm = info("kboot") or {}
argv = argv_of(vm) if vm else []
ok(has(argv, "-kernel", "/dev/fd/3") and has(argv, "-initrd", "/dev/fd/4")
   and has(argv, "-append", "console=ttyS0 root=/dev/sda1"),
   "-kernel, -initrd by descriptor, -append with the command line", argv)
fds = {}
if vm:
    for line in open(os.path.join(h.state, "dm-%d.qmp.fds" % vm["id"])):
        opt, size, sha = line.split()
        fds[opt] = (int(size), sha)
kdata = open(KERNEL, "rb").read()
ok(fds.get("-kernel") == (len(kdata), hashlib.sha256(kdata).hexdigest()),
   "the device model read the kernel through its descriptor", fds)
idata = b"initrd" * 1000
ok(fds.get("-initrd") == (len(idata), hashlib.sha256(idata).hexdigest()),
   "and the ramdisk", fds)
c.call("vm.destroy", {"vm": "kboot"})

# --- hdtype = "ahci" ---------------------------------------------------
r = create("ahci1", [
    'hdtype = "ahci"',
    'disk = [ "format=raw,vdev=hda,access=rw,target=%s",' % files["disk.raw"],
    '  "format=qcow2,vdev=hdb,access=rw,target=%s",' % files["disk.qcow2"],
    '  "format=raw,vdev=hdc,access=ro,devtype=cdrom,target=%s",' %
    files["cd.iso"],
    '  "format=raw,vdev=xvde,access=rw,target=%s" ]' % files["pv.raw"]])
ok("result" in r, "an HVM guest with hdtype = \"ahci\" is built", r)
vm = info("ahci1") or {}
argv = argv_of(vm) if vm else []
ok(vm.get("config", {}).get("hdtype") == "ahci",
   "vm.info's config has hdtype", vm.get("config"))
for want in (
        ["-device", "ahci,id=ahci0"],
        ["-drive", "file=%s,if=none,id=ahcidisk-0,format=raw,"
         "cache=writeback" % files["disk.raw"],
         "-device", "ide-hd,bus=ahci0.0,unit=0,drive=ahcidisk-0"],
        ["-drive", "file=%s,if=none,id=ahcidisk-1,format=qcow2,"
         "cache=writeback" % files["disk.qcow2"],
         "-device", "ide-hd,bus=ahci0.1,unit=0,drive=ahcidisk-1"],
        # xvde is the fifth disk: an AHCI port, as libxl gives six.
        ["-drive", "file=%s,if=none,id=ahcidisk-4,format=raw,"
         "cache=writeback" % files["pv.raw"],
         "-device", "ide-hd,bus=ahci0.4,unit=0,drive=ahcidisk-4"],
        # A CD-ROM stays an IDE unit.
        ["-device", "ide-cd,id=ide-5632,drive=ide-5632,bus=ide.1,unit=0"]):
    ok(has(argv, *want), "ahci: the device model got %s" % " ".join(want),
       argv)
ok(argv.count("ahci,id=ahci0") == 1, "one AHCI controller", argv)
ok(not any("if=ide" in a for a in argv), "ahci: no disk on the IDE bus",
   argv)
c.call("vm.destroy", {"vm": "ahci1"})
r = create("ahci2", ['hdtype = "sata"'])
ok("error" in r and "hdtype" in json.dumps(r) and "ide or ahci" in
   json.dumps(r), "hdtype = \"sata\": refused by name with the values", r)

# --- refused by name --------------------------------------------------
for name, extra, why in (
        ("ro1", ['disk = [ "format=raw,vdev=hda,access=ro,target=%s" ]' %
                 files["disk.raw"]], "read-only IDE disk"),
        ("q1", ['disk = [ "format=qcow2,vdev=xvde,access=rw,target=%s" ]' %
                files["disk.qcow2"]], "qcow2 image is read by the device "
         "model only"),
        ("sd1", ['disk = [ "format=raw,vdev=sda,access=rw,target=%s" ]' %
                 files["disk.raw"]], "emulated SCSI disks are not "
         "supported"),
        ("m1", ['vif = [ "model=virtio-net" ]'], "e1000 or rtl8139"),
        ("rd1", ['ramdisk = "%s"' % KERNEL], "only with kernel")):
    r = create(name, extra)
    ok("error" in r and why in json.dumps(r), "%s: refused: %s" % (name, why),
       r)
pvh = "\n".join(['name = "pvh1"', 'type = "pvh"', 'kernel = "%s"' % KERNEL,
                 "memory = 64", 'vif = [ "model=e1000" ]']) + "\n"
r = c.call("vm.create", {"config": pvh, "wait": True})
ok("error" in r and "an emulated NIC model is for HVM guests" in
   json.dumps(r), "a PVH guest's model= is refused as before", r)
done()
