#!/usr/bin/env python3
"""units.py - the systemd units, tmpfiles.d and sysusers.d files.

- systemd-analyze security rates vmbuildd.service (and hvsim.service) at
  4.0 or lower, and vmbuildd(8) states the score it really has;
- systemd-analyze verify passes on every unit in systemd/ (ExecStart on
  the built programs; Documentation=man: on the built pages);
- the ordering after Debian 12's xen.service and upstream's units, and
  the device list, are what the Xen backend needs;
- systemd-tmpfiles makes /run/vmbuild, systemd-sysusers group vmbuild,
  in a scratch root;
- vmbuildd works as the unit runs it, as root with an empty capability
  bounding set and no new privileges (setpriv): a build on hvsim
  succeeds, and a kernel only its owner may read is refused, because the
  daemon no longer overrides file permissions.
"""
import glob
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
import vmbdtest  # noqa: E402
from vmbdtest import *  # noqa: E402,F401,F403

MAX_EXPOSURE = 4.0
UNITS = sorted(glob.glob(os.path.join(TOP, "systemd", "*.service")) +
               glob.glob(os.path.join(TOP, "systemd", "*.socket")))
MANPATH = os.path.join(TOP, "build", "man")
sa = shutil.which("systemd-analyze")


def exposure(unit):
    p = subprocess.run([sa, "security", "--offline=true", unit],
                       capture_output=True, text=True)
    m = re.search(r"exposure level for \S+: ([0-9.]+)", p.stdout)
    return (float(m.group(1)) if m else None), p.stdout + p.stderr


def unit_keys(path):
    """Section -> key -> list of values (systemd allows repeated keys)."""
    out = {}
    sect = None
    text = open(path).read().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            sect = out.setdefault(line.strip("[]"), {})
            continue
        k, _, v = line.partition("=")
        sect.setdefault(k.strip(), []).append(v.strip())
    return out


if sa is None:
    bail("systemd-analyze is not installed")

# ------------------------------------------------------------ security
svc = os.path.join(TOP, "systemd", "vmbuildd.service")
score, text = exposure(svc)
diag("systemd-analyze security --offline=true systemd/vmbuildd.service: "
     "%s" % score)
ok(score is not None and score <= MAX_EXPOSURE,
   "vmbuildd.service exposure %s <= %.1f" % (score, MAX_EXPOSURE), text)
page = open(os.path.join(TOP, "man", "vmbuildd.8.scd")).read()
m = re.search(r"rates it ([0-9.]+)", page)
ok(m is not None and score is not None and float(m.group(1)) == score,
   "vmbuildd(8) states the score the unit has (%s)" %
   (m.group(1) if m else "none"))
hv_score, text = exposure(os.path.join(TOP, "systemd", "hvsim.service"))
ok(hv_score is not None and hv_score <= MAX_EXPOSURE,
   "hvsim.service exposure %s <= %.1f" % (hv_score, MAX_EXPOSURE), text)

# -------------------------------------------------------------- verify
tmp = tempfile.mkdtemp(prefix="vmbuild-units.")
try:
    for u in UNITS:
        with open(u) as f:
            text = f.read()
        text = text.replace("/usr/sbin/vmbuildd",
                            os.path.join(BIN, "vmbuildd"))
        text = text.replace("/usr/sbin/hvsim", os.path.join(BIN, "hvsim"))
        with open(os.path.join(tmp, os.path.basename(u)), "w") as f:
            f.write(text)
    copies = [os.path.join(tmp, os.path.basename(u)) for u in UNITS]
    p = subprocess.run([sa, "verify"] + copies, capture_output=True,
                       text=True, env=dict(os.environ, MANPATH=MANPATH))
    names = [os.path.basename(u) for u in UNITS]
    ok(p.returncode == 0 and not any(n in p.stdout + p.stderr
                                     for n in names),
       "systemd-analyze verify " + " ".join(names), p.stdout + p.stderr)

    # ----------------------------------------------------- the unit's content
    k = unit_keys(svc)
    after = " ".join(k["Unit"].get("After", [])).split()
    ok(all(u in after for u in ("vmbuildd.socket", "xen.service",
                                "xenstored.service", "proc-xen.mount")),
       "ordered after xen.service (Debian 12), xenstored.service and "
       "proc-xen.mount (upstream)", after)
    ok("xenstored.service" not in " ".join(k["Unit"].get("Requires", []) +
                                           k["Unit"].get("Wants", [])),
       "nothing requires a xenstored.service (Debian 12 has none)")
    devs = [d.split()[0] for d in k["Service"].get("DeviceAllow", [])]
    need = ["/dev/xen/privcmd", "/dev/xen/hypercall", "/dev/xen/xenbus",
            "/dev/xen/evtchn", "/dev/xen/gntdev"]
    ok(k["Service"].get("DevicePolicy") == ["closed"] and
       all(d in devs for d in need) and
       all(d.startswith("/dev/xen/") for d in devs),
       "devices: closed policy, only Xen's (%s)" % " ".join(devs))
    ok(k["Service"].get("CapabilityBoundingSet") == [""],
       "empty capability bounding set")
    ok("ReadWritePaths" in k["Service"] and
       "/run/vmbuild" in k["Service"]["ReadWritePaths"],
       "/run/vmbuild writable")
    ok(k["Service"].get("ProcSubset") is None,
       "no ProcSubset=pid (it would hide /proc/xen)")

    # ----------------------------------------------- tmpfiles and sysusers
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "etc"))
    p = subprocess.run(["systemd-tmpfiles", "--create", "--root=" + root,
                        os.path.join(TOP, "systemd", "vmbuild.tmpfiles")],
                       capture_output=True, text=True)
    st = os.stat(os.path.join(root, "run", "vmbuild")) if os.path.isdir(
        os.path.join(root, "run", "vmbuild")) else None
    ok(p.returncode == 0 and st is not None and
       stat.S_IMODE(st.st_mode) == 0o755,
       "systemd-tmpfiles makes /run/vmbuild 0755", p.stdout + p.stderr)
    p = subprocess.run(["systemd-sysusers", "--root=" + root,
                        os.path.join(TOP, "systemd", "vmbuild.sysusers")],
                       capture_output=True, text=True)
    group = open(os.path.join(root, "etc", "group")).read() \
        if os.path.exists(os.path.join(root, "etc", "group")) else ""
    ok(p.returncode == 0 and re.search(r"^vmbuild:x:\d+:", group, re.M),
       "systemd-sysusers makes group vmbuild", p.stdout + p.stderr + group)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# ------------------------------------- the daemon without capabilities
setpriv = shutil.which("setpriv")
if setpriv is None or os.geteuid() != 0:
    print("ok - vmbuildd without capabilities # SKIP needs root and setpriv")
    done()
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M"])
wrapper = os.path.join(h.dir, "vmbuildd-nocaps")
with open(wrapper, "w") as f:
    f.write("#!/bin/sh\n# As vmbuildd.service runs it: root, no capabilities.\n"
            "exec %s --no-new-privs --bounding-set=-all --inh-caps=-all "
            "--ambient-caps=-all %s \"$@\"\n" % (setpriv, VMBUILDD))
os.chmod(wrapper, 0o755)
vmbdtest.VMBUILDD = wrapper     # Host.start_daemon runs this one
h.start_daemon()
status = open("/proc/%d/status" % h.d.pid).read()
capeff = re.search(r"^CapEff:\s*(\S+)", status, re.M).group(1)
capbnd = re.search(r"^CapBnd:\s*(\S+)", status, re.M).group(1)
ok(int(capeff, 16) == 0 and int(capbnd, 16) == 0,
   "vmbuildd runs with no capabilities (CapEff %s, CapBnd %s)" %
   (capeff, capbnd))
c = h.client()
r = c.call("vm.create", {"config": guest_cfg("nocaps", 32), "wait": True})
ok(r is not None and "result" in r,
   "a build on hvsim works without capabilities", r)

# A kernel only its owner (not root) may read: refused, where a daemon
# with CAP_DAC_OVERRIDE would have read it for whoever asked.
nobody = pwd.getpwnam("nobody")
kdir = tempfile.mkdtemp(prefix="vmbuild-kernel.")
try:
    os.chmod(kdir, 0o755)
    kpath = os.path.join(kdir, "private.elf")
    shutil.copy(KERNEL, kpath)
    os.chown(kpath, nobody.pw_uid, nobody.pw_gid)
    os.chmod(kpath, 0o600)
    cfg = guest_cfg("private", 32).replace(KERNEL, kpath)
    r = c.call("vm.create", {"config": cfg, "wait": True})
    ok(err_code(r) == E_CONFIG and "private.elf" in json.dumps(r),
       "a kernel only its owner may read is refused (no DAC override)", r)
finally:
    shutil.rmtree(kdir, ignore_errors=True)
c.close()
ok(h.stop_daemon() == 0, "and it stops cleanly")
done()
