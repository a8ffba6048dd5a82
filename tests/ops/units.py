#!/usr/bin/env python3
"""units.py - the systemd units, tmpfiles.d and sysusers.d files.

- systemd-analyze security rates vmbuildd.service (and hvsim.service) at
  4.0 or lower, and vmbuildd(8) states the score it really has;
- systemd-analyze verify passes on every unit in systemd/ (ExecStart on
  the built programs; Documentation=man: on the built pages);
- vmbuild-guests.service: a oneshot after vmbuildd, its stop's timeout
  above SHUTDOWN_TIMEOUT's default, /etc/default/vmbuild naming every
  setting of the helper with the helper's default;
- the ordering after Debian 12's xen.service and upstream's units, and
  the device list, are what the Xen backend needs;
- systemd-tmpfiles makes /run/vmbuild, systemd-sysusers group vmbuild,
  in a scratch root;
- vmbuildd works as the unit runs it, as root with an empty capability
  bounding set and no new privileges (setpriv): a build on hvsim
  succeeds, and a kernel only its owner may read is refused, because the
  daemon no longer overrides file permissions;
- every system call vmbuildd makes (strace) through a build, a pause, a
  destroy, a scrape, SIGHUP and SIGTERM is one the unit's
  SystemCallFilter= allows, its sockets are of the families
  RestrictAddressFamilies= allows, and it writes only where the unit
  lets it (ReadWritePaths=, StateDirectory=).
"""
import glob
import grp
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
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


def grp_exists(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


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
        text = text.replace("/usr/libexec/vmbuild/",
                            os.path.join(TOP, "scripts") + "/")
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

    # ------------------------------------------- vmbuild-guests.service
    gk = unit_keys(os.path.join(TOP, "systemd", "vmbuild-guests.service"))
    gs = gk["Service"]
    gafter = " ".join(gk["Unit"].get("After", [])).split()
    ok(gs.get("Type") == ["oneshot"] and
       gs.get("RemainAfterExit") == ["yes"] and
       gs.get("ExecStart") == ["/usr/libexec/vmbuild/vmbuild-guests start"]
       and gs.get("ExecStop") == ["/usr/libexec/vmbuild/vmbuild-guests stop"]
       and gs.get("EnvironmentFile") == ["-/etc/default/vmbuild"],
       "vmbuild-guests.service: a oneshot that stays active, start at "
       "boot, stop at shutdown, settings from /etc/default/vmbuild", gs)
    ok("vmbuildd.socket" in gk["Unit"].get("Wants", []) and
       "vmbuildd.socket" in gafter and "vmbuildd.service" in gafter,
       "vmbuild-guests.service: after vmbuildd (which outlives its stop)",
       gafter)
    # An upgrade restarts vmbuildd's units: a dependency that passes a
    # stop or restart on would run this unit's stop, the shutdown of
    # every guest, on an apt-get install.
    binding = [(k, v) for k in ("Requires", "BindsTo", "PartOf", "Requisite")
               for v in " ".join(gk["Unit"].get(k, [])).split()
               if v.startswith("vmbuildd")]
    ok(binding == [], "vmbuild-guests.service: no dependency on vmbuildd "
       "that passes a restart on (Wants= only)", binding)
    # Every setting the helper reads is in /etc/default/vmbuild with the
    # helper's default, and the stop's timeout covers SHUTDOWN_TIMEOUT.
    helper = open(os.path.join(TOP, "scripts", "vmbuild-guests")).read()
    dflt = open(os.path.join(TOP, "systemd", "vmbuild.default")).read()
    hd = dict(re.findall(r"^([A-Z_]+)=\$\{\1:-([^}]*)\}$", helper, re.M))
    dd = dict(re.findall(r"^#([A-Z_]+)=(\S*)$", dflt, re.M))
    hd.pop("VMCTL", None)
    ok(len(hd) == 6 and hd == dd,
       "/etc/default/vmbuild names every setting with its default",
       (hd, dd))
    tss = int(gs.get("TimeoutStopSec", ["0"])[0])
    ok(tss >= int(hd.get("SHUTDOWN_TIMEOUT", "1e9")) + 60,
       "TimeoutStopSec=%d: SHUTDOWN_TIMEOUT and a margin" % tss)

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
h.vmbuildd = wrapper            # Host.start_daemon runs this one
# A kernel only its owner (not root) may read, in an image directory the
# daemon opens itself (other paths it does not open at all: the client
# passes them as descriptors).
nobody = pwd.getpwnam("nobody")
kdir = tempfile.mkdtemp(prefix="vmbuild-kernel.")
os.chmod(kdir, 0o755)
kpath = os.path.join(kdir, "private.elf")
shutil.copy(KERNEL, kpath)
os.chown(kpath, nobody.pw_uid, nobody.pw_gid)
os.chmod(kpath, 0o600)
h.start_daemon(["--image-dir", kdir])
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

# That kernel: refused, where a daemon with CAP_DAC_OVERRIDE would have
# read it for whoever asked.
try:
    cfg = guest_cfg("private", 32).replace(KERNEL, kpath)
    r = c.call("vm.create", {"config": cfg, "wait": True})
    ok(err_code(r) in (E_CONFIG, E_IMAGE) and "private.elf" in json.dumps(r)
       and "ermission denied" in json.dumps(r),
       "a kernel only its owner may read is refused (no DAC override)", r)
finally:
    shutil.rmtree(kdir, ignore_errors=True)
c.close()
ok(h.stop_daemon() == 0, "and it stops cleanly")

# ------------------------------------------------ the system call filter
# The unit allows @system-service and denies @privileged.  vmbuildd is
# traced (strace -D: it keeps its pid, so signals reach it) through a
# build, a list, a pause, a destroy, a metrics scrape, SIGHUP and
# SIGTERM on hvsim; every system call it made must be one the filter
# lets through.


def expand(group, seen=None):
    seen = set() if seen is None else seen
    out = set()
    p = subprocess.run([sa, "syscall-filter", group], capture_output=True,
                       text=True)
    for line in p.stdout.splitlines()[1:]:
        w = line.strip()
        if not w or w.startswith("#"):
            continue
        if w.startswith("@"):
            if w not in seen:
                seen.add(w)
                out |= expand(w, seen)
        else:
            out.add(w)
    return out


strace = shutil.which("strace")
if strace is None:
    print("ok - system calls within SystemCallFilter # SKIP no strace")
    done()
k = unit_keys(svc)["Service"]
allowed, denied = set(), set()
for f in k.get("SystemCallFilter", []):
    for g in f.lstrip("~").split():
        (denied if f.startswith("~") else allowed).update(expand(g))
allowed -= denied
ok(len(allowed) > 100 and "ioctl" in allowed and "chown" not in allowed,
   "SystemCallFilter: %d system calls allowed" % len(allowed))
trace = os.path.join(h.dir, "vmbuildd.strace")
with open(wrapper, "w") as f:
    f.write("#!/bin/sh\nexec %s -D -f -qq -o %s %s \"$@\"\n" %
            (strace, trace, VMBUILDD))
port = free_port()
h.start_daemon(["--metrics", "127.0.0.1:%d" % port])
c = h.client()
r1 = c.call("vm.create", {"config": guest_cfg("traced", 32), "wait": True})
c.call("vm.list")
c.call("vm.pause", {"vm": "traced"})
c.call("vm.unpause", {"vm": "traced"})
with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                            timeout=30) as resp:
    scraped = resp.read()
h.d.send_signal(signal.SIGHUP)
c.call("host.scrub")
r2 = c.call("vm.destroy", {"vm": "traced"})
c.close()
rc = h.stop_daemon()
ok(r1 and "result" in r1 and r2 and "result" in r2 and scraped and rc == 0,
   "traced: build, list, pause, scrape, SIGHUP, destroy, SIGTERM", (r1, r2))
used, families, writes = set(), set(), set()
with open(trace, errors="replace") as f:
    for line in f:
        m = re.match(r"^\d+\s+([a-z_0-9]+)\((.*)$", line)
        if not m:
            continue
        name, rest = m.groups()
        used.add(name)
        if re.search(r"= -1 E", rest):
            continue
        if name == "socket":
            # strace -f: a call another thread interrupts ends later.
            rest = re.sub(r"\s*<unfinished \.\.\.>.*", ")", rest)
            families.add(rest.split(",")[0] + ("/" + rest.split(",")[2]
                                               .split(")")[0].strip()
                                               if "NETLINK" in rest else ""))
        elif name == "openat" and re.search(r"O_WRONLY|O_RDWR|O_CREAT", rest) \
                or name in ("mkdir", "rename", "unlink", "chmod", "rmdir"):
            writes.update(re.findall(r'"(/[^"]*)"', rest))
outside = sorted(used - allowed)
# The daemon's own socket (not under the unit: systemd passes it) is
# given to group vmbuild where that group exists.
if grp_exists("vmbuild"):
    outside = [s for s in outside if "chown" not in s]
# RestrictAddressFamilies=: the daemon's sockets.  glibc's getaddrinfo
# (AI_ADDRCONFIG, for the metrics address) also asks the kernel for the
# interfaces' addresses over NETLINK_ROUTE; refused under the unit, glibc
# then assumes IPv4 and IPv6 and goes on, so that one is expected.
fams = set(unit_keys(svc)["Service"]["RestrictAddressFamilies"][0].split())
odd = sorted(f for f in families
             if f not in fams and f != "AF_NETLINK/NETLINK_ROUTE")
ok(families and not odd, "sockets within RestrictAddressFamilies= (%s)" %
   ", ".join(sorted(families)), odd)
# ProtectSystem=strict: the daemon writes only its state directory and
# the socket's folder (the unit's /var/lib/vmbuild and /run/vmbuild).
allowed_dirs = (h.state + "/", os.path.dirname(h.sock) + "/")
stray = sorted(w for w in writes if not w.startswith(allowed_dirs) and
               not w.startswith("/dev/"))
ok(writes and not stray, "writes only in the state directory and the "
   "socket's folder (%d paths)" % len(writes), stray)
diag("system calls: " + " ".join(sorted(used)))
ok(len(used) > 20 and not outside,
   "vmbuildd used %d system calls, all within SystemCallFilter" %
   len(used), "outside the filter: %s" % outside)
done()
