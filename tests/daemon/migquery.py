#!/usr/bin/env python3
"""migquery.py - the in-doubt query runs as who asked for the migration.

A real unprivileged member of the daemon's group (a throwaway group and
user, as access.py makes them; --group tells both daemons) migrates a
guest with vmctl migrate, its "ssh" a wrapper that notes its uid, gid
and groups and runs fakessh.py (see migkill.py).  The sending daemon is
killed once the receiver said DONE, and started again: its record says
the migration's end may have gone, so it asks the receiver with the
query vmctl migrate recorded (daemon/migresolve.c).  That query must run
as the member (its uid, gid and groups), not as the daemon's root; the
receiver answers "present" and the guest is destroyed here: it runs
once, on the receiver.
"""
import atexit
import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

group, member, _ = throwaway_accounts("vmbq", "migration query as its user")

VMCTL = os.path.join(BIN, "vmctl")
FAKESSH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "fakessh.py")
REC_STATUS = 4
ENV = {"PATH": BIN + ":" + os.environ.get("PATH", "")}
gid = grp.getgrnam(group).gr_gid
m_uid, m_gid = pwd.getpwnam(member).pw_uid, pwd.getpwnam(member).pw_gid

# Where the member writes: the wrapper's notes and fakessh's hold files.
tmp = tempfile.mkdtemp(prefix="vmbd-migquery.")
atexit.register(shutil.rmtree, tmp, True)
os.chmod(tmp, 0o1777)
notes = os.path.join(tmp, "ssh-ids")
wrapper = os.path.join(tmp, "ssh")
with open(wrapper, "w") as f:
    f.write('#!/bin/sh\necho "$(id -u) $(id -g) $(id -G) user=$USER :: $*" >> %s\n'
            'exec %s "$@"\n' % (notes, FAKESSH))
os.chmod(wrapper, 0o755)

args = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
        "--backing", "real"]
a = Host(args, ["--group", group])
b = Host(args, ["--group", group])
for h in (a, b):
    os.chmod(h.dir, 0o711)      # the member reaches the sockets
a.start_daemon(env=ENV)
b.start_daemon()
ca, cb = a.client(), b.client()


def where():
    out = []
    for name, c in (("a", ca), ("b", cb)):
        for v in c.result("vm.list")["vms"]:
            if v["name"] == "mg1":
                out.append((name, v["state"]))
    return out


r = ca.call("vm.create", {"config": guest_cfg("mg1", 64), "wait": True})
ok("result" in r, "vm.create mg1 on a (by root)", r)

hold = os.path.join(tmp, "after-done")
env = dict(os.environ, **ENV,
           FAKESSH_HOLD="up:%d:2:%s" % (REC_STATUS, hold))
p = subprocess.Popen([VMCTL, "--socket", a.sock, "migrate", "--ssh-command",
                      wrapper, "--remote-socket", b.sock, "mg1", "target"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True, env=env, user=m_uid, group=m_gid,
                     extra_groups=[gid])
held = wait_for(lambda: os.path.exists(hold + ".held") or
                p.poll() is not None, 300)
ok(held and os.path.exists(hold + ".held"),
   "the member's migration is held at DONE",
   None if p.poll() is None else p.communicate())
rec = a.record(ca.result("vm.info", {"vm": "mg1"})["uuid"]) or {}
mig = rec.get("migrating") or {}
ok(mig.get("uid") == m_uid and mig.get("gid") == m_gid,
   "a's record: the migration asked by uid %d gid %d" % (m_uid, m_gid), mig)
a.d.send_signal(signal.SIGKILL)
a.d.wait(60)
open(hold + ".go", "w").close()
out, err = p.communicate(timeout=600)
ok(p.returncode != 0, "vmctl migrate fails: its daemon died", out + err)
first = open(notes).read().splitlines()
ok(len(first) == 1 and first[0].split()[0] == str(m_uid),
   "the migration's ssh ran as the member", first)

a.start_daemon(env=ENV)
ca = a.client()
w = wait_for(lambda: where() == [("b", "running")], 400)
ok(w is not None, "a asked b, which runs mg1: destroyed on a, it runs once",
   where())
ok(a.log_has("runs it (the migration the daemon died in went through)"),
   "a's log: b answered that it runs it")
lines = open(notes).read().splitlines()
asked = [ln for ln in lines if "--query" in ln]
ok(len(asked) == 1, "the query ran once, through the recorded ssh", lines)
ids = asked[0].split("::")[0].split() if asked else []
ok(ids[:1] == [str(m_uid)], "the query ran as uid %d, not root" % m_uid,
   asked)
ok(ids[1:2] == [str(m_gid)] and str(gid) in ids[2:] and "0" not in ids[1:],
   "with the member's gid %d and groups (%d among them), no root group" %
   (m_gid, gid), asked)
ok(ids[-1:] == ["user=" + member], "and the member's environment (USER)",
   asked)
done()
