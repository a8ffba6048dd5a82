#!/usr/bin/env python3
"""migrate.py - vmctl migrate between two hvsim+vmbuildd stacks.

The "ssh" is fakessh.py: it runs `vmctl migrate-receive` here, against
the second stack's socket (--remote-socket), and relays the bytes as
ssh does, so that killing it drops the connection; it can drop it or
hold the stream at a given record (FAKESSH_DROP, FAKESSH_HOLD), which
makes every fault land in its phase without any sleep.

A pattern written into the guest through hvsim is read back on the
target; a live migration with writes made while round 1 is held shows
more than one round and the later writes on the target; a target
without room refuses before anything is paused; the connection dropped
before READY, mid-memory, before the end and before DONE, the receiving
daemon killed mid-stream and a cancel all leave the guest running on
the source only, and no domain on the target; the read-only socket may
not migrate.  After every case the guest exists exactly once.
"""
import errno
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403
sys.path.insert(0, os.path.join(TOP, "clients", "python"))
import vmbuild  # noqa: E402

VMCTL = os.path.join(BIN, "vmctl")
FAKESSH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fakessh.py")
CODES = proto_codes()
REC_GUEST, REC_MEMORY, REC_END, REC_STATUS = 1, 2, 3, 4
PAT_AT = (0x100000, 37 * MIB + 123, 95 * MIB)
LIVE_AT = [(5 * MIB + 16384 + i * 64 * 4096) for i in range(300)]


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


def pattern(i, n=8192):
    return bytes((i * 7 + k * 13) & 0xff for k in range(n))


def write_at(h, domid, spots, n=8192, salt=0):
    return all(hv_copy(h, "guest_write", domid, a, pattern(i + salt, n)) == 0
               for i, a in enumerate(spots))


def read_ok(h, domid, spots, n=8192, salt=0):
    return all(hv_copy(h, "guest_read", domid, a, n) == pattern(i + salt, n)
               for i, a in enumerate(spots))


def hv_domains(h):
    hv = Hv(h.hv_sock)
    st, rep = hv.call(HV_OPS["domain_list"], struct.pack("<II", 0, 1024))
    hv.close()
    return struct.unpack_from("<I", rep)[0]


def migrate(src, dst, vm, *opts, env=None, bg=False):
    argv = [VMCTL, "--socket", src.sock, "migrate", "--ssh-command",
            FAKESSH, "--remote-socket", dst.sock] + list(opts) + \
        [vm, "target"]
    e = dict(os.environ, PATH=BIN + ":" + os.environ.get("PATH", ""),
             FAKESSH_LOG=os.path.join(tmp, "fakessh.log"), **(env or {}))
    if bg:
        return subprocess.Popen(argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=e)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                       env=e)
    return p.returncode, p.stdout, p.stderr


def where(vm):
    """[(stack name, state)] of every stack listing vm."""
    out = []
    for name, c in (("a", ca), ("b", cb)):
        for v in c.result("vm.list")["vms"]:
            if v["name"] == vm:
                out.append((name, v["state"]))
    return out


def once_on(stack, vm, uuid, what, others=0):
    """The guest exists exactly once: running on `stack`, nothing on the
    other (no VM, no record, no domain but its `others`)."""
    other = b if stack is a else a
    on = "a" if stack is a else "b"
    w = wait_for(lambda: where(vm) == [(on, "running")] and
                 hv_domains(other) == others and
                 other.record(uuid) is None, 60)
    ok(w is not None, "%s: %s runs on %s only, nothing on the other" %
       (what, vm, on), (where(vm), hv_domains(a), hv_domains(b)))


def last_task(c, kind):
    t = [x for x in c.result("task.list")["tasks"] if x["kind"] == kind]
    return t[-1] if t else None


tmp = tempfile.mkdtemp(prefix="vmbd-migrate.")
args = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
        "--backing", "real"]
a = Host(args)
METRICS_A = "127.0.0.1:%d" % vmbstack.free_port()
a.start_daemon(["--metrics", METRICS_A])
ca = a.client()
b = Host(args)
b.start_daemon()
cb = b.client()

# ------------------------------------------------------------ round trip
r = ca.call("vm.create", {"config": guest_cfg("mg1", 128, vcpus=2),
                          "wait": True})
ok("result" in r, "vm.create mg1 (128 MiB) on a", r)
info = ca.result("vm.info", {"vm": "mg1"})
uuid = info["uuid"]
ok(write_at(a, info["id"], PAT_AT), "a pattern written into its memory")

# hvsim's log-dirty, what the live rounds read (HV_OP_DIRTY_LOG).
def dirty_log(h, domid, op, gfn=0, nr=0):
    hv = Hv(h.hv_sock)
    try:
        st, rep = hv.call(HV_OPS["dirty_log"],
                          struct.pack("<IIQII", domid, op, gfn, nr, 0))
    finally:
        hv.close()
    if st != 0:
        return st, None, None, b""
    dirty, end, n = struct.unpack_from("<QQI", rep)
    return st, dirty, end, rep[24:24 + n // 8]


dom = info["id"]
st, _, _, _ = dirty_log(a, dom, 2, 0, 64)
ok(st == -errno.ENOENT, "log-dirty: CLEAN before ENABLE is -ENOENT", st)
st, _, end, _ = dirty_log(a, dom, 1)
ok(st == 0 and end == 128 * MIB // 4096, "log-dirty: ENABLE over the "
   "populated memory", (st, end))
ok(write_at(a, dom, [0x2000 * 4096 + 10], 4096 + 1),
   "log-dirty: 4097 bytes written at gfn 0x2000 + 10 bytes")
st, dirty, _, bits = dirty_log(a, dom, 3, 0x2000, 64)
ok(st == 0 and dirty == 2 and bits[0] == 0x3 and not any(bits[1:]),
   "log-dirty: PEEK shows the two pages written", (st, dirty, bits))
st, dirty, _, _ = dirty_log(a, dom, 2, 0x2000, 64)
st2, dirty2, _, _ = dirty_log(a, dom, 3, 0x2000, 64)
ok(st == 0 and dirty == 2 and st2 == 0 and dirty2 == 0,
   "log-dirty: CLEAN returns them and clears them", (dirty, dirty2))
st, _, _, _ = dirty_log(a, dom, 2, 3, 64)
ok(st == -errno.EINVAL, "log-dirty: an unaligned window is -EINVAL", st)
st, _, _, _ = dirty_log(a, dom, 0)
ok(st == 0 and dirty_log(a, dom, 3, 0, 64)[0] == -errno.ENOENT,
   "log-dirty: DISABLE stops it")
ok(write_at(a, dom, PAT_AT), "the pattern written again")

# b's vm.state events of mg1: the guest arrives running.
evb = b.client()
evb.result("events.subscribe", {"events": ["vm.state"]})
rc, out, err = migrate(a, b, "mg1")
ok(rc == 0 and "migrated VM mg1" in out, "vmctl migrate mg1 target", out + err)
# Once vmctl migrate is back, b says running, not the paused the domain
# was in before the receiver unpaused it (a refresh later mended it).
st = cb.result("vm.info", {"vm": "mg1"})["state"]
ev = evb.event(lambda m: m.get("method") == "vm.state" and
               m["params"]["vm"] == "mg1" and
               m["params"]["state"] not in ("building", "migrating"), 60)
ok(st == "running" and ev and ev["params"]["state"] == "running",
   "on b, mg1 is running as soon as vmctl migrate is back, and its first "
   "state after the build is running", (st, ev))
m = re.search(r"vmbuild-migrate: downtime_ms=(\d+) total_s=\S+ pages=(\d+) "
              r"rounds=(\d+)", out)
ok(m and int(m.group(2)) == 128 * MIB // 4096 and m.group(3) == "1",
   "one round, every page of 128 MiB sent", out)
diag(m.group(0) if m else out)
once_on(b, "mg1", uuid, "migrated")
info = cb.result("vm.info", {"vm": "mg1"})
ok(info["uuid"] == uuid and info.get("memory_bytes") == 128 * MIB,
   "on b: same uuid, 128 MiB populated by the engine", info)
ok(read_ok(b, info["id"], PAT_AT), "on b: the pattern is byte-identical")
ok(b.record(uuid) is not None, "on b: a state record")
ok(a.log_has("mg1 migrated: downtime_ms="), "the sender logs the figures")
t = last_task(ca, "vm.migrate_send")
ok(t and t["state"] == "done" and t["migration"]["rounds"] == 1,
   "the vm.migrate_send task is done, its figures in it", t)
ok(last_task(cb, "vm.restore")["state"] == "done",
   "the receiving vm.restore task is done")

# ------------------------------------------------------------------ live
# Round 1 is held at its 20th memory record while the test writes 300
# pages (more than the 256 a round may leave): round 2 must send them,
# then the guest is paused with nothing dirty.
info = cb.result("vm.info", {"vm": "mg1"})
hold = os.path.join(tmp, "live")
p = migrate(b, a, "mg1", "--live", bg=True,
            env={"FAKESSH_HOLD": "down:%d:20:%s" % (REC_MEMORY, hold)})
w = wait_for(lambda: os.path.exists(hold + ".held"), 300)
ok(w is not None, "live: round 1 held at its 20th memory record")
ok(write_at(b, info["id"], LIVE_AT, 4096, salt=50),
   "live: 300 pages written while round 1 is under way")
open(hold + ".go", "w").close()
out, err = p.communicate(timeout=600)
ok(p.returncode == 0, "vmctl migrate --live", out + err)
m = re.search(r"vmbuild-migrate: downtime_ms=(\d+) total_s=\S+ pages=(\d+) "
              r"rounds=(\d+)", out)
ok(m and int(m.group(3)) > 1 and int(m.group(2)) >= 128 * MIB // 4096 + 300,
   "live: more than one round, the written pages sent again", out)
diag(m.group(0) if m else out)
once_on(a, "mg1", uuid, "live")
info = ca.result("vm.info", {"vm": "mg1"})
ok(read_ok(a, info["id"], LIVE_AT, 4096, salt=50) and
   read_ok(a, info["id"], PAT_AT),
   "live: the pages written during round 1 and the old pattern are there")


# ------------------------------------------------- faults, each in its phase
def fault_case(what, env, expect):
    rc, out, err = migrate(a, b, "mg1", env=env)
    ok(rc != 0 and expect in err, "%s: vmctl migrate fails (%s)" %
       (what, expect), out + err)
    once_on(a, "mg1", uuid, what)
    info = ca.result("vm.info", {"vm": "mg1"})
    ok(read_ok(a, info["id"], PAT_AT), "%s: its memory intact" % what)


fault_case("dropped after the header", {"FAKESSH_DROP": "down:0:0"},
           "before it said ready")
fault_case("dropped before READY",
           {"FAKESSH_DROP": "up:%d:1" % REC_STATUS}, "before it said ready")
fault_case("dropped mid-memory",
           {"FAKESSH_DROP": "down:%d:10" % REC_MEMORY}, "the guest goes on")
fault_case("dropped before the end",
           {"FAKESSH_DROP": "down:%d:1" % REC_END}, "before it said done")

# DONE lost: the sender, which sent everything, cannot know; vmctl asks
# the receiver (migrate-receive --query), which runs it: destroyed here.
rc, out, err = migrate(a, b, "mg1",
                       env={"FAKESSH_DROP": "up:%d:2" % REC_STATUS})
ok(rc == 0 and "answered that it runs mg1" in err, "DONE lost: vmctl asks "
   "the receiver, which runs it", out + err)
once_on(b, "mg1", uuid, "DONE lost")
t = last_task(ca, "vm.migrate_send")
ok(t["state"] == "failed" and t["error"]["code"] == CODES["E_MIGRATE_DOUBT"],
   "DONE lost: the task says the outcome was unknown", t)
info = cb.result("vm.info", {"vm": "mg1"})
ok(read_ok(b, info["id"], PAT_AT), "DONE lost: its memory intact on b")
# Back with the Python client (vm_migrate_send runs the same "ssh").
os.environ["PATH"] = BIN + ":" + os.environ["PATH"]
pyc = vmbuild.Client(b.sock, timeout=300)
t = pyc.vm_migrate_send("mg1", "target", ssh_command=FAKESSH,
                        remote_socket=a.sock)
ok(t["state"] == "done" and t["migration"]["pages"] == 128 * MIB // 4096,
   "and back to a with the Python client's vm_migrate_send", t)
pyc.close()
once_on(a, "mg1", uuid, "back")

# The sender reads DONE and closes before the receiver's reply stream
# ends (fakessh.py FAKESSH_CUT_AFTER_DONE: the end record's write fails
# with EPIPE there, every time): DONE went, so the guest is b's.
rc, out, err = migrate(a, b, "mg1", env={"FAKESSH_CUT_AFTER_DONE": "1"})
ok(rc == 0 and "migrated VM mg1" in out, "closed after DONE: vmctl "
   "migrate succeeds", out + err)
ok(b.log_has("the sender closed the connection after DONE"),
   "closed after DONE: the receiver's end record failed, and it says so")
once_on(b, "mg1", uuid, "closed after DONE")
info = cb.result("vm.info", {"vm": "mg1"})
ok(read_ok(b, info["id"], PAT_AT), "closed after DONE: its memory on b")
rc, out, err = migrate(b, a, "mg1")
ok(rc == 0, "and back to a", out + err)
once_on(a, "mg1", uuid, "back again")

# Two migrations at once, the first one's DONE lost while the second,
# started after it, still runs: vmctl resolves its own task, not the
# last one (it asked task.list for the last vm.migrate_send, which was
# the other's, running, and left mg2 paused on a and running on b).
for n in ("mg2", "mg3"):
    r = ca.call("vm.create", {"config": guest_cfg(n, 32), "wait": True})
    ok("result" in r, "vm.create %s on a" % n, r)
uuid2 = ca.result("vm.info", {"vm": "mg2"})["uuid"]
uuid3 = ca.result("vm.info", {"vm": "mg3"})["uuid"]
h2, h3 = os.path.join(tmp, "two-2"), os.path.join(tmp, "two-3")
p2 = migrate(a, b, "mg2", bg=True, env={
    "FAKESSH_HOLD": "up:%d:2:%s" % (REC_STATUS, h2),
    "FAKESSH_DROP": "up:%d:2" % REC_STATUS})
ok(wait_for(lambda: os.path.exists(h2 + ".held"), 300) is not None,
   "two: mg2's DONE held")
p3 = migrate(a, b, "mg3", bg=True,
             env={"FAKESSH_HOLD": "down:%d:2:%s" % (REC_MEMORY, h3)})
ok(wait_for(lambda: os.path.exists(h3 + ".held"), 300) is not None,
   "two: mg3's migration under way, its task the last")
open(h2 + ".go", "w").close()
out, err = p2.communicate(timeout=600)
ok(p2.returncode == 0 and "answered that it runs mg2" in err,
   "two: mg2's vmctl resolves its own task: b runs it", out + err)
open(h3 + ".go", "w").close()
out, err = p3.communicate(timeout=600)
ok(p3.returncode == 0, "two: mg3 migrated", out + err)
once_on(b, "mg2", uuid2, "two: mg2", others=1)
once_on(b, "mg3", uuid3, "two: mg3", others=1)
for n in ("mg2", "mg3"):
    cb.call("vm.destroy", {"vm": n, "wait": True})

# The receiving daemon killed while it writes the memory.
hold = os.path.join(tmp, "kill")
p = migrate(a, b, "mg1", bg=True,
            env={"FAKESSH_HOLD": "down:%d:5:%s" % (REC_MEMORY, hold)})
ok(wait_for(lambda: os.path.exists(hold + ".held"), 300) is not None,
   "receiver killed: the stream is mid-memory")
b.d.send_signal(signal.SIGKILL)
b.d.wait(60)
open(hold + ".go", "w").close()
out, err = p.communicate(timeout=600)
ok(p.returncode != 0 and "the guest goes on here" in err,
   "receiver killed: vmctl migrate fails", out + err)
b.start_daemon()
cb = b.client()
once_on(a, "mg1", uuid, "receiver killed")

# Target without room: refused at placement, nothing paused here.
r = ca.call("vm.create", {"config": guest_cfg("big", 320), "wait": True})
ok("result" in r, "vm.create big (320 MiB) on a", r)
r = cb.call("vm.create", {"config": guest_cfg("fill", 320), "wait": True})
ok("result" in r, "b filled with a 320 MiB guest", r)
rc, out, err = migrate(a, b, "big")
ok(rc != 0 and "the receiver failed" in err, "target out of memory: "
   "refused by the receiver", out + err)
ok(where("big") == [("a", "running")] and hv_domains(b) == 1,
   "target out of memory: big runs on a, b has only its own guest",
   (where("big"), hv_domains(b)))
ok(all(x["kind"] != "vm.migrate_send" or x["state"] != "running"
       for x in ca.result("task.list")["tasks"]), "no migration left running")
cb.call("vm.destroy", {"vm": "fill", "wait": True})
ca.call("vm.destroy", {"vm": "big", "wait": True})

# Cancel while round 1 is held.
hold = os.path.join(tmp, "cancel")
p = migrate(a, b, "mg1", bg=True,
            env={"FAKESSH_HOLD": "down:%d:3:%s" % (REC_MEMORY, hold)})
ok(wait_for(lambda: os.path.exists(hold + ".held"), 300) is not None,
   "cancel: the stream is held")
t = last_task(ca, "vm.migrate_send")
r = ca.call("task.cancel", {"task": t["id"]})
ok("result" in r, "task.cancel of the migration", r)
open(hold + ".go", "w").close()
out, err = p.communicate(timeout=600)
ok(p.returncode != 0 and "cancelled" in err, "cancel: vmctl migrate says "
   "so", out + err)
ok(last_task(ca, "vm.migrate_send")["state"] == "cancelled",
   "cancel: the task says cancelled")
once_on(a, "mg1", uuid, "cancelled")

# ----------------------------------------------------------- read-only
ro = Client(a.sock.replace(".sock", "-ro.sock"))
rp, wp = os.pipe()
r = ro.call("vm.migrate_send", {"vm": "mg1", "fds": {"send": 1, "recv": 0}},
            fds=[rp, wp])
ok(err_code(r) == CODES["E_PERMISSION"], "vm.migrate_send on the "
   "read-only socket: refused", r)
r = ro.call("vm.restore", {"incoming": True, "fds": {"file": 0, "reply": 1}},
            fds=[rp, wp])
ok(err_code(r) == CODES["E_PERMISSION"], "vm.restore incoming on the "
   "read-only socket: refused", r)
os.close(rp)
os.close(wp)
p = subprocess.run(
    [VMCTL, "--socket", a.sock.replace(".sock", "-ro.sock"), "migrate",
     "--ssh-command", FAKESSH, "--remote-socket", b.sock, "mg1", "target"],
    capture_output=True, text=True, timeout=300,
    env=dict(os.environ, PATH=BIN + ":" + os.environ["PATH"]))
ok(p.returncode != 0 and "read-only socket" in p.stderr,
   "vmctl migrate on the read-only socket fails", p.stderr)
once_on(a, "mg1", uuid, "read-only")

# ------------------------------------------------------------- metrics
# a sent: 3 done (mg1 there, closed after DONE, mg3), 5 drops (mg2's
# DONE lost too), the killed receiver and no room failed, 1 cancelled;
# b sent the live one and mg1 back.
text = urllib.request.urlopen("http://%s/metrics" % METRICS_A,
                              timeout=60).read().decode()
for line in ('vmbuild_migrations_total{result="done"} 3',
             'vmbuild_migrations_total{result="failed"} 8',
             'vmbuild_migrations_total{result="cancelled"} 1',
             'vmbuild_migration_downtime_seconds_count 3'):
    ok(line in text, "metrics: " + line,
       [x for x in text.splitlines() if "migration" in x])
ok(re.search(r'vmbuild_migration_bytes_total\{direction="sent"\} [1-9]',
             text) and
   re.search(r'vmbuild_migration_bytes_total\{direction="received"\} '
             r'[1-9]', text), "metrics: bytes sent and received counted")
once_on(a, "mg1", uuid, "at the end")
done()
