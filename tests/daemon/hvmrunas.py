#!/usr/bin/env python3
"""hvmrunas.py - whom an HVM guest's device model runs as (dm.c, -runas).

As libxl 4.17 restricts qemu-xen (libxl__domain_get_device_model_uid):
vmbuildd --dm-user auto (the default) gives -runas the uid of
xen-qemuuser-range-base plus the domid, else xen-qemuuser-shared, else
runs it as root and says so in its log; --dm-user required refuses the
build then, naming the users it looked for, and leaves nothing behind;
--dm-user USER runs it as USER, as device_model_user= does.  A user
that does not exist, or root, is refused when the daemon starts.  On
hvsim, with tests/daemon/fixtures/fake-dm.py as the device model, which
writes down the arguments it got.

The auto and required cases need a machine without Xen's qemu users
(they are skipped where they exist); --dm-user USER needs root, to make
a throwaway user.
"""
import atexit
import os
import pwd
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403


def has_user(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G"])
DM_ARGS = fake_dm_args(h)


def start(*extra):
    h.start_daemon(DM_ARGS + list(extra))
    return h.client()


def create(c, name):
    cfg = "\n".join(['name = "%s"' % name, 'type = "hvm"', "memory = 64",
                     "vcpus = 1"]) + "\n"
    return c.call("vm.create", {"config": cfg, "wait": True})


def dm_argv(c, name):
    vm = c.call("vm.info", {"vm": name}).get("result") or {}
    p = os.path.join(h.state, "dm-%s.qmp.argv" % vm.get("id"))
    return open(p).read().split("\n") if os.path.exists(p) else []


def runas(argv):
    return argv[argv.index("-runas") + 1] if "-runas" in argv else None


xen_users = [u for u in ("xen-qemuuser-shared", "xen-qemuuser-range-base")
             if has_user(u)]
if xen_users:
    skip("auto and required", "this machine has %s" % ", ".join(xen_users))
else:
    c = start()
    r = create(c, "ra1")
    ok("result" in r, "auto, no Xen qemu user: the guest is built", r)
    ok(runas(dm_argv(c, "ra1")) is None, "no -runas: its device model runs "
       "as root", dm_argv(c, "ra1"))
    ok(h.log_has("device model runs as root"), "the log says so")
    ok("result" in c.call("vm.destroy", {"vm": "ra1"}), "destroyed")
    h.stop_daemon()

    c = start("--dm-user", "required")
    before = sorted(f for f in os.listdir(h.state) if f.endswith(".argv"))
    r = create(c, "ra2")
    msg = (r.get("error") or {}).get("message", "")
    ok("error" in r and "xen-qemuuser-shared" in msg and
       "xen-qemuuser-range-base" in msg and "--dm-user required" in msg,
       "--dm-user required: refused, naming the users it looked for", r)
    ok(c.result("vm.list")["vms"] == [], "nothing left of the refused build")
    after = sorted(f for f in os.listdir(h.state) if f.endswith(".argv"))
    ok(after == before, "no device model was started", (before, after))
    h.stop_daemon()

for bad in ("no-such-user-vmbt", "root"):
    p = subprocess.run([h.vmbuildd, "--hypervisor", "sim:" + h.hv_sock,
                        "--socket", h.path("bad.sock"), "--state-dir",
                        h.path("badstate"), "--foreground", "--dm-user",
                        bad], capture_output=True, text=True, timeout=60)
    ok(p.returncode == 2 and "--dm-user" in p.stderr and bad in p.stderr,
       "--dm-user %s: refused at start" % bad, p.stderr)

if os.geteuid() != 0 or shutil.which("useradd") is None:
    skip("--dm-user USER", "needs root and useradd")
    done()
user = "vmbq%d" % (os.getpid() % 100000)
subprocess.run(["userdel", user], capture_output=True)
atexit.register(subprocess.run, ["userdel", user], capture_output=True)
r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", user], capture_output=True, text=True)
if r.returncode:
    bail("cannot create a throwaway user: %s" % r.stderr)
c = start("--dm-user", user)
r = create(c, "ra3")
ok("result" in r, "--dm-user %s: the guest is built" % user, r)
ok(runas(dm_argv(c, "ra3")) == user, "its device model got -runas %s" %
   user, dm_argv(c, "ra3"))
ok("result" in c.call("vm.destroy", {"vm": "ra3"}), "destroyed")
done()
