#!/usr/bin/env python3
"""migssh.py - vmctl migrate over OpenSSH's ssh and sshd, as deployed.

The test starts Debian's sshd (openssh-server) itself, as root, on
127.0.0.1 and a free port, with a host key, an authorized_keys and a
configuration of its own in a temporary directory: no system file is
read or touched, no system sshd started.  Where /run/sshd (sshd's
privilege separation directory) or its user (sshd, which the package
adds) does not exist, sshd runs in a mount namespace of its own with a
private /run, or a copy of /etc/passwd with that user bind-mounted.  `vmctl migrate mg1 localhost
--ssh-command 'ssh -p PORT -i KEY -o ...' --remote-socket B` then moves
a guest between two hvsim+vmbuildd stacks and back; its bytes are read
back on each side.  Skipped (counted, with the reason) when not root or
without sshd; VMBUILD_SSHD names another sshd binary.
"""
import atexit
import os
import pwd
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMCTL = os.path.join(BIN, "vmctl")
SSHD = os.environ.get("VMBUILD_SSHD", "/usr/sbin/sshd")
PAT_AT = (0x100000, 37 * MIB + 123, 95 * MIB)


def pattern(i, n=8192):
    return bytes((i * 11 + k * 5) & 0xff for k in range(n))


def hv_rw(h, op, domid, gpa, data_or_len):
    g = HvGuest(h.hv_sock)
    try:
        if op == "guest_write":
            return g.call(op, struct.pack("<IIQ", domid, len(data_or_len),
                                          gpa) + data_or_len)[0]
        st, body = g.call(op, struct.pack("<IIQ", domid, data_or_len, gpa))
        return body if st == 0 else None
    finally:
        g.close()


def bytes_ok(h, c):
    domid = c.result("vm.info", {"vm": "mg1"})["id"]
    return all(hv_rw(h, "guest_read", domid, a, 8192) == pattern(i)
               for i, a in enumerate(PAT_AT))


def listed(c):
    return [v["state"] for v in c.result("vm.list")["vms"]
            if v["name"] == "mg1"]


why = None
if os.geteuid() != 0:
    why = "not root: sshd must run as root"
elif not os.access(SSHD, os.X_OK):
    why = "no sshd at %s (Debian's openssh-server)" % SSHD
elif not shutil.which("ssh") or not shutil.which("ssh-keygen"):
    why = "no ssh or ssh-keygen (Debian's openssh-client)"
if why:
    skip("vmctl migrate over OpenSSH's ssh and sshd", why)
    done()

tmp = tempfile.mkdtemp(prefix="vmbd-migssh.")
atexit.register(shutil.rmtree, tmp, True)
for key in ("host_key", "id"):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                    "migssh", "-f", os.path.join(tmp, key)], check=True)
shutil.copy(os.path.join(tmp, "id.pub"), os.path.join(tmp, "authorized_keys"))
port = free_port()
config = os.path.join(tmp, "sshd_config")
with open(config, "w") as f:
    f.write("\n".join([
        "Port %d" % port, "ListenAddress 127.0.0.1",
        "HostKey %s/host_key" % tmp,
        "AuthorizedKeysFile %s/authorized_keys" % tmp,
        "PidFile none", "StrictModes no", "UsePAM no",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes", "PermitRootLogin prohibit-password",
        "AllowUsers root", "X11Forwarding no", "AllowTcpForwarding no",
        # The session's vmctl: the one under test.
        "SetEnv PATH=%s:/usr/bin:/bin" % BIN, ""]))
argv = [SSHD, "-D", "-e", "-f", config]
steps = []
try:
    pwd.getpwnam("sshd")
except KeyError:
    uids = {u.pw_uid for u in pwd.getpwall()}
    uid = max(u for u in range(60000, 65534) if u not in uids)
    with open("/etc/passwd") as f, \
            open(os.path.join(tmp, "passwd"), "w") as g:
        g.write(f.read() + "sshd:x:%d:65534::/run/sshd:/usr/sbin/nologin\n"
                % uid)
    steps.append("mount --bind %s/passwd /etc/passwd" % tmp)
if not os.path.isdir("/run/sshd"):
    steps.append("mount -t tmpfs -o mode=0755 tmpfs /run && "
                 "mkdir -m 0755 /run/sshd")
if steps:
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            " && ".join(steps) + " && exec \"$@\"", "sh"] + argv
    # sshd -t wants the user too.
    p = subprocess.run(argv[:6] + [" && ".join(steps) + " && exec \"$@\"",
                                   "sh", SSHD, "-t", "-f", config],
                       capture_output=True, text=True)
else:
    p = subprocess.run([SSHD, "-t", "-f", config], capture_output=True,
                       text=True)
ok(p.returncode == 0, "sshd -t accepts the test's configuration", p.stderr)
log = open(os.path.join(tmp, "sshd.log"), "w")
sshd = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def stop_sshd():
    if sshd.poll() is None:
        sshd.terminate()
        try:
            sshd.wait(30)
        except subprocess.TimeoutExpired:
            sshd.kill()
            sshd.wait()


atexit.register(stop_sshd)


def listening():
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        return True
    except OSError:
        return sshd.poll() is not None


ok(wait_for(listening, 60) and sshd.poll() is None,
   "sshd listens on 127.0.0.1:%d" % port,
   open(os.path.join(tmp, "sshd.log")).read())
SSH = ("ssh -4 -F none -p %d -i %s/id -o IdentitiesOnly=yes -o BatchMode=yes "
       "-o UserKnownHostsFile=%s/known_hosts "
       "-o StrictHostKeyChecking=accept-new" % (port, tmp, tmp))

args = ["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
        "--backing", "real"]
a = Host(args)
a.start_daemon()
ca = a.client()
b = Host(args)
b.start_daemon()
cb = b.client()
r = ca.call("vm.create", {"config": guest_cfg("mg1", 128), "wait": True})
ok("result" in r, "vm.create mg1 (128 MiB) on a", r)
domid = ca.result("vm.info", {"vm": "mg1"})["id"]
ok(all(hv_rw(a, "guest_write", domid, x, pattern(i)) == 0
       for i, x in enumerate(PAT_AT)), "a pattern written into its memory")

for src, dst, cs, cd, what in ((a, b, ca, cb, "a to b"),
                               (b, a, cb, ca, "b to a")):
    p = subprocess.run([VMCTL, "--socket", src.sock, "migrate",
                        "--ssh-command", SSH, "--remote-socket", dst.sock,
                        "mg1", "localhost"], capture_output=True, text=True,
                       timeout=600)
    ok(p.returncode == 0 and "migrated VM mg1" in p.stdout,
       "%s over ssh: vmctl migrate mg1 localhost" % what,
       p.stdout + p.stderr + open(os.path.join(tmp, "sshd.log")).read())
    ok(wait_for(lambda: listed(cd) == ["running"] and listed(cs) == [], 60),
       "%s: mg1 runs on the target only" % what, (listed(cs), listed(cd)))
    ok(bytes_ok(dst, cd), "%s: its bytes are there, byte for byte" % what)
ok("Accepted publickey for root" in
   open(os.path.join(tmp, "sshd.log")).read(),
   "sshd's log shows the key logins")
done()
