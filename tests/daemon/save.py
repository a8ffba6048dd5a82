#!/usr/bin/env python3
"""save.py - vm.save and vm.restore (vmctl save, restore) on hvsim.

A guest's memory, with a pattern written into it through hvsim, is
saved to a file (the guest and its record gone), restored (same name
and uuid, placed and populated again) and the pattern read back byte
for byte; a checkpoint leaves the guest running and its file restores
into a second hvsim+vmbuildd stack, as a guest moved between hosts.  A
truncated file and a corrupt checksum are refused naming the record and
its offset, leaving no domain; a target short of memory says so and
keeps nothing; a save into a pipe nobody reads is cancelled with the
guest left running; a Xen save (libxenguest's stream in Xen records)
is refused by name; the read-only socket may not save, and vmctl opens
the file with its user's rights.  With phantom memory only the
description travels.
"""
import os
import stat
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
CODES = proto_codes()
PAT_AT = (0x100000, 37 * MIB + 123, 95 * MIB)


def vmctl(h, *args, **kw):
    p = subprocess.run([VMCTL, "--socket", h.sock] + list(args),
                       capture_output=True, text=True, timeout=300, **kw)
    return p.returncode, p.stdout, p.stderr


def hv_copy(h, op, domid, gpa, data_or_len):
    g = HvGuest(h.hv_sock)
    try:
        if op == "guest_write":
            st, _ = g.call(op, struct.pack("<IIQ", domid, len(data_or_len),
                                           gpa) + data_or_len)
            return st
        st, body = g.call(op, struct.pack("<IIQ", domid, data_or_len, gpa))
        return body if st == 0 else None
    finally:
        g.close()


def pattern(i):
    return bytes((i * 7 + k * 13) & 0xff for k in range(8192))


def write_pattern(h, domid):
    return all(hv_copy(h, "guest_write", domid, a, pattern(i)) == 0
               for i, a in enumerate(PAT_AT))


def pattern_ok(h, domid):
    return all(hv_copy(h, "guest_read", domid, a, 8192) == pattern(i)
               for i, a in enumerate(PAT_AT))


def hv_domains(h):
    hv = Hv(h.hv_sock)
    st, rep = hv.call(HV_OPS["domain_list"], struct.pack("<II", 0, 1024))
    hv.close()
    return struct.unpack_from("<I", rep)[0]


tmp = tempfile.mkdtemp(prefix="vmbd-save.")
os.chmod(tmp, 0o755)
args = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
        "--backing", "real"]
a = Host(args)
a.start_daemon()
ca = a.client()
b = Host(args)
b.start_daemon()
cb = b.client()

# ------------------------------------------------------- save, restore
r = ca.call("vm.create", {"config": guest_cfg("sv1", 128, vcpus=2),
                          "wait": True})
ok("result" in r, "vm.create sv1 (128 MiB)", r)
info = ca.result("vm.info", {"vm": "sv1"})
uuid, dom1 = info["uuid"], info["id"]
ok(write_pattern(a, dom1), "a pattern written into guest memory (hvsim)")
f1 = os.path.join(tmp, "sv1.save")
rc, out, err = vmctl(a, "save", "sv1", f1)
ok(rc == 0 and "saved VM sv1" in out, "vmctl save sv1 FILE", out + err)
ok(os.path.getsize(f1) > 128 * MIB, "the file holds the guest's memory",
   os.path.getsize(f1) if os.path.exists(f1) else None)
ok(stat.S_IMODE(os.stat(f1).st_mode) == 0o600, "a new file is made 0600")
ok(not any(v["name"] == "sv1" for v in ca.result("vm.list")["vms"]),
   "saved: sv1 is no longer listed")
ok(a.record(uuid) is None, "saved: its state record is gone")
ok(hv_domains(a) == 0, "saved: hvsim has no domain left")
t = [x for x in ca.result("task.list")["tasks"] if x["kind"] == "vm.save"]
ok(t and t[-1]["state"] == "done" and
   t[-1]["progress"]["done"] == 128 * MIB, "the vm.save task is done, "
   "128 MiB written", t)

rc, out, err = vmctl(a, "restore", f1)
ok(rc == 0 and "restored VM" in out, "vmctl restore FILE", out + err)
info = ca.result("vm.info", {"vm": "sv1"})
ok(info["uuid"] == uuid and info["state"] == "running",
   "restored: same uuid, running", info)
ok(info.get("memory_bytes") == 128 * MIB, "restored: 128 MiB populated",
   info)
ok(pattern_ok(a, info["id"]), "restored: the pattern is byte-identical")
ok(a.record(uuid) is not None, "restored: a state record again")
ok(a.log_has("restoring sv1"), "the restore is logged")

# ---------------------------------------------- checkpoint, second host
f2 = os.path.join(tmp, "sv1.ckpt")
rc, out, err = vmctl(a, "save", "--checkpoint", "sv1", f2)
ok(rc == 0, "vmctl save --checkpoint", out + err)
info = ca.result("vm.info", {"vm": "sv1"})
ok(info["state"] == "running", "checkpoint: sv1 keeps running", info)
ok(pattern_ok(a, info["id"]), "checkpoint: its memory is untouched")
rc, out, err = vmctl(b, "restore", f2)
ok(rc == 0, "the checkpoint restores on a second stack", out + err)
ib = cb.result("vm.info", {"vm": "sv1"})
ok(ib["uuid"] == uuid and ib["state"] == "running",
   "second stack: same uuid, running", ib)
ok(pattern_ok(b, ib["id"]), "second stack: the pattern is byte-identical")
ok(cb.call("vm.destroy", {"vm": "sv1"}).get("result") is not None,
   "second stack: destroyed again")

# --------------------------------------------------- hostile streams
data = open(f2, "rb").read()
cut = os.path.join(tmp, "cut.save")
with open(cut, "wb") as f:
    f.write(data[:len(data) // 2])
rc, out, err = vmctl(b, "restore", cut)
ok(rc == 1 and "truncated" in err and "offset" in err and
   "record" in err, "a truncated file: refused naming record and offset",
   err)
bad = bytearray(data)
bad[len(data) // 3] ^= 0x55
badf = os.path.join(tmp, "bad.save")
with open(badf, "wb") as f:
    f.write(bad)
rc, out, err = vmctl(b, "restore", badf)
ok(rc == 1 and "checksum mismatch" in err and "offset" in err,
   "a corrupt byte: checksum mismatch naming the record", err)
junk = os.path.join(tmp, "junk.save")
with open(junk, "wb") as f:
    f.write(b"not a save stream at all\n" * 4)
rc, out, err = vmctl(b, "restore", junk)
ok(rc == 1 and "not a vmbuild save stream" in err, "not a stream", err)


def rec(rtype, payload):
    pad = b"\0" * (-len(payload) % 8)
    h = struct.pack("<IIII", rtype, len(payload), 0, 0)
    crc = zlib.crc32(payload, zlib.crc32(h)) & 0xffffffff
    return struct.pack("<IIII", rtype, len(payload), crc, 0) + payload + pad


# A Xen save (header flag bit 2, Xen records): hvsim cannot take it.
glen = struct.unpack_from("<I", data, 24 + 4)[0]
guest_rec = data[24:24 + 16 + glen + (-glen % 8)]
xenf = os.path.join(tmp, "xen.save")
with open(xenf, "wb") as f:
    f.write(data[:12] + struct.pack("<IQ", 4, 0) + guest_rec +
            rec(16, b"Xen stream v2 bytes") + rec(3, struct.pack("<QQ", 2, 0)))
rc, out, err = vmctl(b, "restore", xenf)
ok(rc == 1 and "flags 0x4" in err and
   "a Xen stream: this hypervisor cannot restore it" in err,
   "a Xen save on hvsim: refused by name before any build", err)
ok(cb.result("vm.list")["vms"] == [] and hv_domains(b) == 0,
   "no VM and no domain left by the failed restores")

# ------------------------------------------- target short of memory
r = cb.call("vm.create", {"config": guest_cfg("filler", 400),
                          "wait": True})
ok("result" in r, "a filler VM takes most of the second host", r)
rc, out, err = vmctl(b, "restore", f2)
ok(rc == 1 and str(CODES["E_NO_MEMORY"]) in err,
   "restore into a host short of memory: E_NO_MEMORY", err)
names = [v["name"] for v in cb.result("vm.list")["vms"]]
ok(names == ["filler"] and hv_domains(b) == 1,
   "nothing of the restore is left", names)

# ------------------------------------------------ cancel mid-save
fifo = os.path.join(tmp, "pipe")
os.mkfifo(fifo)
rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)   # never read
ev = a.client()
ev.result("events.subscribe", {"events": ["vm.state"]})
p = subprocess.Popen([VMCTL, "--socket", a.sock, "save", "sv1", fifo],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)


def save_task():
    for x in ca.result("task.list")["tasks"]:
        if (x["kind"] == "vm.save" and x["state"] == "running" and
                x["progress"]["total"] > 0):
            return x
    return None


task = wait_for(save_task, 60)
ok(task is not None, "a save into a pipe nobody reads stays running")
m = ev.event(lambda m: m.get("params", {}).get("state") == "saving", 60)
ok(m is not None and m["params"].get("vm") == "sv1",
   "a vm.state event says sv1 is saving", m)
ok(task is not None and task["progress"]["phase"] == "save" and
   task["progress"]["total"] == 128 * MIB, "the task shows its progress "
   "(phase save, of 128 MiB)", task)
r = ca.call("vm.destroy", {"vm": "sv1"})
ok(err_code(r) == CODES["E_BAD_STATE"], "vm.destroy while saving: busy",
   r)
rc, out, err = vmctl(a, "cancel", str(task["id"] if task else 0))
ok(rc == 0, "vmctl cancel TASK", out + err)
out, err = p.communicate(timeout=120)
ok(p.returncode == 1 and "cancelled" in err, "vmctl save: cancelled", err)
os.close(rfd)
info = ca.result("vm.info", {"vm": "sv1"})
ok(info["state"] == "running" and pattern_ok(a, info["id"]),
   "after the cancel the guest runs on, memory intact", info)
t = ca.result("task.get", {"task": task["id"]}) if task else {}
ok(t.get("state") == "cancelled", "the task says cancelled", t)

# ------------------------------------------------ access
ro = Client(a.sock.replace(".sock", "-ro.sock"))
with open(os.path.join(tmp, "ro.save"), "wb") as f:
    r = ro.call("vm.save", {"vm": "sv1", "fds": {"file": 0}},
                fds=[f.fileno()])
ok(err_code(r) == CODES["E_PERMISSION"], "vm.save on the read-only "
   "socket: refused", r)
r = ro.call("vm.restore", {"fds": {"file": 0}})
ok(err_code(r) == CODES["E_PERMISSION"], "vm.restore on the read-only "
   "socket: refused", r)
with open(f2, "rb") as f:
    r = ca.call("vm.save", {"vm": "sv1", "fds": {"file": 0}},
                fds=[f.fileno()])
ok(err_code(r) == -32602 and "not open for writing" in str(r),
   "a descriptor not open for writing is refused", r)
r = ca.call("vm.save", {"vm": "sv1"})
ok(err_code(r) == -32602, "vm.save without a descriptor: refused", r)
if os.geteuid() == 0:
    secret = os.path.join(tmp, "root-only")
    os.mkdir(secret, 0o700)
    rc, out, err = vmctl(a, "save", "sv1", os.path.join(secret, "x"),
                         user=65534, group=65534)
    ok(rc == 2 and "Permission denied" in err and
       not os.path.exists(os.path.join(secret, "x")),
       "a user who may not write FILE cannot save there", err)
else:
    skip("unprivileged save", "needs root to run vmctl as nobody")

# ------------------------------------------------ phantom: metadata
ph = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "4G",
           "--backing", "phantom"])
ph.start_daemon()
cp = ph.client()
r = cp.call("vm.create", {"config": guest_cfg("ph1", 2048), "wait": True})
ok("result" in r, "phantom: vm.create ph1 (2 GiB)", r)
f3 = os.path.join(tmp, "ph1.save")
rc, out, err = vmctl(ph, "save", "ph1", f3)
ok(rc == 0 and os.path.getsize(f3) < MIB,
   "phantom: only the description travels", os.path.getsize(f3))
rc, out, err = vmctl(ph, "restore", f3)
i = cp.result("vm.info", {"vm": "ph1"})
ok(rc == 0 and i.get("memory_bytes") == 2048 * MIB,
   "phantom: restored and populated again", out + err)

ok(ca.result("vm.info", {"vm": "sv1"})["state"] == "running",
   "sv1 still running at the end")
done()
