#!/usr/bin/env python3
"""migkill.py - the sending vmbuildd killed mid-migration (kill -9).

Two hvsim+vmbuildd stacks, fakessh.py as the "ssh" (see migrate.py).
The relay holds the stream at a record (FAKESSH_HOLD), the sending
daemon is killed there, the stream let go, the daemon started again:
its record said "migrating" (and from before the end record, "ending"),
so at start it resumes the guest itself (the end never went: before
READY, mid-memory, live mid-round) or asks the receiver with the query
vmctl migrate gave it (after DONE: the receiver runs it, destroyed
here).  A query that gets no answer leaves the guest paused and in
doubt (vm.list, vmctl list, vm.info, the log) until an operator says.
After each case the guest runs exactly once across both stacks, its
bytes intact, and nothing leaks: no other domain, no record, hvsim's
free memory back where it was.
"""
import os
import signal
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
FAKESSH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fakessh.py")
REC_MEMORY, REC_STATUS = 2, 4
PAT_AT = (0x100000, 37 * MIB + 123, 95 * MIB)
# The query a restarted daemon runs finds vmctl (fakessh.py runs it) here.
ENV = {"PATH": BIN + ":" + os.environ.get("PATH", "")}


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


def read_ok(h, domid):
    return all(hv_copy(h, "guest_read", domid, a, 8192) == pattern(i)
               for i, a in enumerate(PAT_AT))


def hv_domains(h):
    hv = Hv(h.hv_sock)
    st, rep = hv.call(HV_OPS["domain_list"], struct.pack("<II", 0, 1024))
    hv.close()
    return struct.unpack_from("<I", rep)[0]


def free_bytes(h, c):
    s = h.wait_scrubbed(c)
    return sum(n["free_bytes"] for n in s["nodes"]) if s else None


def migrate(src, dst, *opts, env=None, bg=False):
    argv = [VMCTL, "--socket", src.sock, "migrate", "--ssh-command",
            FAKESSH, "--remote-socket", dst.sock] + list(opts) + \
        ["mg1", "target"]
    e = dict(os.environ, FAKESSH_LOG=os.path.join(tmp, "fakessh.log"),
             **ENV, **(env or {}))
    if bg:
        return subprocess.Popen(argv, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=e)
    return subprocess.run(argv, capture_output=True, text=True, timeout=600,
                          env=e)


def where():
    out = []
    for name, c in (("a", ca), ("b", cb)):
        for v in c.result("vm.list")["vms"]:
            if v["name"] == "mg1":
                out.append((name, v["state"]))
    return out


def once_on(stack, what):
    """mg1 runs on `stack` only, its bytes there; the other has nothing
    (no VM, no domain, no record) and all its memory back."""
    other, oc = (b, cb) if stack is a else (a, ca)
    on = "a" if stack is a else "b"
    c = ca if stack is a else cb

    def settled():
        """The restarted daemon resumes the guest, then drops the
        migration from its record: running is seen before that ends."""
        rec = stack.record(uuid) or {}
        return (where() == [(on, "running")] and hv_domains(other) == 0 and
                other.record(uuid) is None and rec.get("migrating") is None
                and c.result("vm.info", {"vm": "mg1"}).get("migration")
                is None)
    w = wait_for(settled, 120)
    ok(w is not None, "%s: mg1 runs on %s only, nothing on the other" %
       (what, on), (where(), hv_domains(a), hv_domains(b)))
    info = c.result("vm.info", {"vm": "mg1"})
    rec = stack.record(uuid) or {}
    ok(read_ok(stack, info["id"]) and info.get("migration") is None and
       rec.get("migrating") is None, "%s: its bytes intact on %s, no "
       "migration in its record or vm.info" % (what, on),
       (info.get("migration"), rec.get("migrating")))
    ok(free_bytes(other, oc) == EMPTY and free_bytes(stack, c) == WITH,
       "%s: hvsim's free memory as before on both" % what,
       (free_bytes(a, ca), free_bytes(b, cb), EMPTY, WITH))


def kill_a_at(what, spec, *opts, between=None):
    """vmctl migrate a -> b held at `spec`, a's daemon killed there (then
    `between()`), the stream let go, a's daemon started again."""
    global ca
    hold = os.path.join(tmp, what.replace(" ", "-"))
    p = migrate(a, b, *opts, bg=True,
                env={"FAKESSH_HOLD": "%s:%s" % (spec, hold)})
    ok(wait_for(lambda: os.path.exists(hold + ".held"), 300) is not None,
       "%s: the stream is held" % what)
    a.d.send_signal(signal.SIGKILL)
    a.d.wait(60)
    if between:
        between()
    open(hold + ".go", "w").close()
    out, err = p.communicate(timeout=600)
    ok(p.returncode != 0, "%s: vmctl migrate fails (its daemon died)" %
       what, out + err)
    a.start_daemon(env=ENV)
    ca = a.client()


tmp = tempfile.mkdtemp(prefix="vmbd-migkill.")
args = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
        "--backing", "real"]
a = Host(args)
a.start_daemon(env=ENV)
ca = a.client()
b = Host(args)
b.start_daemon()
cb = b.client()
EMPTY = free_bytes(a, ca)

r = ca.call("vm.create", {"config": guest_cfg("mg1", 128), "wait": True})
ok("result" in r, "vm.create mg1 (128 MiB) on a", r)
info = ca.result("vm.info", {"vm": "mg1"})
uuid = info["uuid"]
ok(all(hv_copy(a, "guest_write", info["id"], x, pattern(i)) == 0
       for i, x in enumerate(PAT_AT)), "a pattern written into its memory")
WITH = free_bytes(a, ca)
ok(EMPTY and WITH and WITH < EMPTY, "free memory: empty and with mg1",
   (EMPTY, WITH))

# The end never went: a resumes the guest itself, nothing asked.
kill_a_at("before READY", "up:%d:1" % REC_STATUS)
once_on(a, "before READY")
kill_a_at("mid-memory", "down:%d:10" % REC_MEMORY)
ok(a.log_has("its end had not gone"), "mid-memory: a's log says why it "
   "resumes the guest")
once_on(a, "mid-memory")
kill_a_at("live mid-round", "down:%d:10" % REC_MEMORY, "--live")
once_on(a, "live mid-round")

# After DONE, b's daemon stopped before a starts again: nobody answers
# the query; mg1 stays paused on a, in doubt.
def stop_b():
    b.d.send_signal(signal.SIGTERM)
    b.d.wait(60)


kill_a_at("in doubt", "up:%d:2" % REC_STATUS, between=stop_b)
w = wait_for(lambda: (ca.result("vm.info", {"vm": "mg1"}).get("migration")
                      or {}).get("in_doubt") and
             a.log_has("in doubt: the migration to target", timeout=1), 400)
info = ca.result("vm.info", {"vm": "mg1"})
ok(w and info["state"] == "paused" and
   info["migration"]["target"] == "target",
   "in doubt: b could not be asked; mg1 stays paused on a, in doubt", info)
p = subprocess.run([VMCTL, "--socket", a.sock, "list"], capture_output=True,
                   text=True, timeout=60)
ok("paused (in doubt)" in p.stdout, "in doubt: vmctl list says so",
   p.stdout)
r = ca.call("vm.migrate_send", {"vm": "mg1", "fds": {"send": 0, "recv": 1}})
ok("error" in r and "in doubt" in r["error"]["message"],
   "in doubt: it may not migrate again", r)
b.start_daemon()
cb = b.client()
ok(hv_domains(a) == 1 and [s for n, s in where() if n == "b"] == ["running"],
   "in doubt: b runs it, a holds it paused: it runs once", where())
# The operator's verdict: b runs it.
r = ca.call("vm.destroy", {"vm": "mg1", "wait": True})
ok("result" in r, "in doubt: destroyed on a", r)
once_on(b, "in doubt")
p = migrate(b, a)
ok(p.returncode == 0, "back to a", p.stdout + p.stderr)
once_on(a, "back")

# After DONE: the receiver runs it; a asks it at start and destroys its
# own.
kill_a_at("after DONE", "up:%d:2" % REC_STATUS)
once_on(b, "after DONE")
ok(a.log_has("runs it (the migration the daemon died in went through)"),
   "after DONE: a's log says b answered that it runs it")
done()
