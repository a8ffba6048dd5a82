#!/usr/bin/env python3
"""grubpvh.py - bootloader = "grub": a PVH guest booted through Debian's
GRUB for Xen PVH (grub-xen-host), which then reads the guest's own
/boot/grub/grub.cfg (issue 21).

On hvsim GRUB does not run; what is checked is that the real binary is
what the build loads: vm.create with bootloader = "grub" builds, the
image is loaded, and the entry point is the one GRUB's PVH note
(XEN_ELFNOTE_PHYS32_ENTRY, read here from the file) names; vm.info's
config has GRUB's path as the kernel.  Refused by name: bootloader =
"grub" with a kernel too, on an HVM guest, and bootloader = "pygrub"
(with a pointer to "grub").

Skipped where grub-xen-host is not installed (scripts/deps.sh installs
it for the check group).
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

GRUB = "/usr/lib/grub-xen/grub-i386-xen_pvh.bin"
if not os.path.exists(GRUB):
    skip("bootloader = grub", "%s missing (grub-xen-host)" % GRUB)
    done()


def pvh_entry(path):
    """The PHYS32_ENTRY note (type 18, owner "Xen") of an ELF file."""
    data = open(path, "rb").read()
    cls = data[4]
    if cls == 1:
        phoff, = struct.unpack_from("<I", data, 28)
        phentsize, phnum = struct.unpack_from("<HH", data, 42)
    else:
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        ph = phoff + i * phentsize
        if cls == 1:
            ptype, off, _, _, size = struct.unpack_from("<IIIII", data, ph)
        else:
            ptype, _, off, _, _, size = struct.unpack_from("<IIQQQQ",
                                                           data, ph)
        if ptype != 4:      # PT_NOTE
            continue
        pos = off
        while pos + 12 <= off + size:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            desc = pos + 12 + ((namesz + 3) & ~3)
            if name == b"Xen" and ntype == 18:
                return struct.unpack_from("<I" if descsz == 4 else "<Q",
                                          data, desc)[0]
            pos = desc + ((descsz + 3) & ~3)
    return None


h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
disk = h.path("disk.raw")
with open(disk, "wb") as f:
    f.truncate(1 << 20)
h.start_daemon(["--image-dir", os.path.dirname(GRUB)])
c = h.client()


def cfg(name, extra):
    return "\n".join(['name = "%s"' % name, "memory = 128"] + extra) + "\n"


want = pvh_entry(GRUB)
ok(want is not None, "GRUB's PVH note names an entry point (0x%x)" %
   (want or 0))
r = c.call("vm.create", {"config": cfg("grub1", [
    'type = "pvh"', 'bootloader = "grub"',
    'disk = [ "format=raw,vdev=xvda,access=rw,target=%s" ]' % disk]),
    "wait": True})
ok("result" in r, "a PVH guest with bootloader = \"grub\" is built", r)
vm = c.call("vm.info", {"vm": "grub1"}).get("result") or {}
b = vm.get("build") or {}
ok(b.get("image_loaded") is True, "GRUB was loaded into guest memory", b)
ok(b.get("entry") == want, "the entry point is GRUB's PVH entry (0x%x)" %
   (want or 0), b)
ok((vm.get("config") or {}).get("kernel") == GRUB,
   "its kernel is GRUB for Xen PVH", vm.get("config"))
c.call("vm.destroy", {"vm": "grub1"})

for name, extra, why in (
        ("both", ['type = "pvh"', 'kernel = "%s"' % GRUB,
                  'bootloader = "grub"'], "give one of them"),
        ("both2", ['type = "pvh"', 'bootloader = "grub"',
                   'kernel = "%s"' % GRUB], "give one of them"),
        ("hvmgrub", ['type = "hvm"', 'bootloader = "grub"'],
         "an HVM guest boots its disk through its BIOS"),
        ("py", ['type = "pvh"', 'bootloader = "pygrub"'],
         'bootloader = \\"grub\\"')):
    r = c.call("vm.create", {"config": cfg(name, extra), "wait": True})
    ok("error" in r and why in json.dumps(r), "%s: refused: %s" %
       (name, why), r)
done()
