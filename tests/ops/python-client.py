#!/usr/bin/env python3
"""python-client.py - the Python client (clients/python) against a live
vmbuildd on hvsim.

It installs with pip from the local tree without the network (into a
venv that sees Debian's setuptools); it has one method per JSON-RPC
method the daemon lists; builds are followed with progress callbacks;
errors arrive as exceptions with the code and the data (phase, file,
line, key); events come through an iterator; a lost daemon is
ConnectionFailed and the same client works again once it is back.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from vmbdtest import *  # noqa: E402,F401,F403

CLIENT_DIR = os.path.join(TOP, "clients", "python")
sys.path.insert(0, CLIENT_DIR)
import vmbuild  # noqa: E402

# libxl's pattern populates in many calls (four 2 MiB extents each), so
# that progress moves during a build and the relay can hold one midway;
# the engine populates clean memory in one request.
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "512M"],
         daemon_args=["--populate", "libxl"])
proxy = HoldProxy(os.path.join(h.dir, "hold.sock"), h.hv_sock)
h.hv_sock = proxy.path          # the daemon talks to hvsim through it

# ----------------------------------------------------------- pip install
# Debian's python3 (with python3-setuptools and python3-wheel), not a
# version manager's one that PATH may hold; a copy of the tree, so that
# setuptools' build/ and *.egg-info do not land in the source.
py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
    else sys.executable
src = os.path.join(h.dir, "client-src")
shutil.copytree(CLIENT_DIR, src,
                ignore=shutil.ignore_patterns("__pycache__", "build",
                                              "*.egg-info"))
venv = os.path.join(h.dir, "venv")
p = subprocess.run([py, "-m", "venv", "--system-site-packages", venv],
                   capture_output=True, text=True)
if p.returncode != 0:
    ok(False, "python3 -m venv", p.stdout + p.stderr)
else:
    vpy = os.path.join(venv, "bin", "python")
    p = subprocess.run([vpy, "-m", "pip", "install", "--no-index",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--no-cache-dir", src],
                       capture_output=True, text=True, cwd=h.dir)
    ok(p.returncode == 0, "pip install --no-index --no-build-isolation "
       "clients/python", p.stdout[-1500:] + p.stderr[-1500:])
    p = subprocess.run([vpy, "-c", "import vmbuild, sys; "
                        "print(vmbuild.__file__, vmbuild.__version__)"],
                       capture_output=True, text=True, cwd="/")
    ok(p.returncode == 0 and p.stdout.startswith(venv) and
       p.stdout.split()[1] == vmbuild.__version__,
       "the installed package imports from the venv (%s)" % p.stdout.strip(),
       p.stderr)
    p = subprocess.run([vpy, "-m", "pip", "show", "-f", "vmbuild"],
                       capture_output=True, text=True)
    ok("Name: vmbuild" in p.stdout and "vmbuild/client.py" in p.stdout,
       "pip show lists the package and its files", p.stdout + p.stderr)

# -------------------------------------------------------- the daemon
h.start_daemon()
c = vmbuild.Client(h.sock, timeout=60)
hello = c.server_hello()
methods = set(hello["methods"])
mine = {m.replace(".", "_") for m in methods}
ok(all(callable(getattr(c, m, None)) for m in mine),
   "a Client method for each of the daemon's %d methods" % len(methods),
   sorted(m for m in mine if not hasattr(c, m)))
public = {n for n in dir(vmbuild.Client) if not n.startswith("_") and
          "_" in n and n.split("_")[0] in
          ("server", "host", "vm", "task", "events")}
extra = public - mine - {"vm_create_file", "wait_task"}
ok(not extra, "no method for a JSON method the daemon lacks", extra)
ok(isinstance(c.host_info()["nodes"], list) and
   isinstance(c.host_scrub()["nodes"], list) and
   "tlb_flushes" in c.host_counters(), "host_info, host_scrub, host_counters")
ok(c.vm_list() == {"vms": []}, "vm_list() on an empty host")
# The lifecycle methods: hvsim runs no guest code (no console), and a
# guest that announced no PV control cannot be asked to shut down.
c.vm_create(config=guest_cfg("py0", 64), wait=True)
try:
    c.vm_console("py0")
    ok(False, "vm_console on hvsim raises Unavailable")
except vmbuild.Unavailable as e:
    ok("runs no guest code" in str(e), "vm_console on hvsim raises "
       "Unavailable", e)
try:
    c.vm_shutdown("py0", wait=True, timeout=1)
    ok(False, "vm_shutdown of a guest without PV control raises Unavailable")
except vmbuild.Unavailable as e:
    ok("feature-poweroff" in str(e), "vm_shutdown of a guest without PV "
       "control raises Unavailable", e)
r = c.vm_reboot("py0", force=True)
ok(r["forced"] and r["action"] == "restart" and r["new_id"] and
   r["reason"] == "reboot", "vm_reboot(force=True): restarted", r)
ok(issubclass(vmbuild.GuestTimeout, vmbuild.DaemonError) and
   vmbuild.GuestTimeout.code == 1015, "GuestTimeout is code 1015")
c.vm_destroy("py0")

# A build followed with progress callbacks.  The relay holds the build
# after its first populate call, so that progress events come however
# fast this machine populates; the callback frees it once it has seen
# the build in the middle of populating.
seen = []


def on_progress(params):
    seen.append(params)
    p = params["progress"]
    if p["phase"] == "populate" and 0 < p["done"] < p["total"]:
        proxy.free()


spread = ['cpus = "nodes:0-1"']
proxy.arm()
r = c.vm_create(config=guest_cfg("py1", 512, 2, spread), progress=on_progress,
                timeout=120)
proxy.free()
ok(r["task"]["state"] == "done" and r["vm"]["name"] == "py1" and
   r["vm"]["vcpus"] == 2, "vm_create(progress=...) returns the task and "
   "vm.info once built", r)
prog = [s["progress"] for s in seen]
ok(any(x["phase"] == "populate" and 0 < x["done"] < x["total"]
       for x in prog) and
   all(0 <= x["done"] <= x["total"] and x["unit"] == "bytes"
       for x in prog) and all(s["vm"] == "py1" for s in seen),
   "the callback saw the build in the middle of populating (%d calls)" %
   len(prog), seen[-5:])

# A held build: wait_task gives up after its timeout; a cancelled build
# raises Cancelled with the task and the phase it was in.
proxy.arm()
r = c.vm_create(config=guest_cfg("held", 512, 1, spread))
ok(proxy.held.wait(60), "a build held in the middle of populating")
ok(raises(vmbuild.Timeout, c.wait_task, r["task"], timeout=1),
   "wait_task(timeout=1) on a held build raises Timeout")
ok(c.task_cancel(r["task"])["cancel_requested"] is True, "task_cancel()")
proxy.free()
try:
    c.wait_task(r["task"], timeout=120)
    ok(False, "a cancelled build raises Cancelled")
except vmbuild.Cancelled as e:
    ok(e.code == 1007 and e.task["state"] == "cancelled" and
       e.phase == "populate", "a cancelled build raises Cancelled, with "
       "the task and phase %s" % e.phase, repr(e))

# wait=False, then wait_task.
r = c.vm_create(config=guest_cfg("py2", 64))
ok(set(r) >= {"task", "vm", "uuid"} and r["vm"] == "py2",
   "vm_create() returns at once with the task id", r)
t = c.wait_task(r["task"], timeout=120)
ok(t["state"] == "done" and t["id"] == r["task"], "wait_task() until done")
ok(c.task_get(r["task"])["state"] == "done", "task_get()")
ok(any(x["id"] == r["task"] for x in c.task_list()["tasks"]), "task_list()")

# wait=True, and from a file.
cfgfile = os.path.join(h.dir, "py3.cfg")
with open(cfgfile, "w") as f:
    f.write(guest_cfg("py3", 64))
r = c.vm_create_file(cfgfile, wait=True)
ok(r["vm"]["name"] == "py3" and r["vm"]["config_path"] == cfgfile and
   r["task"]["state"] == "done",
   "vm_create_file(wait=True): the task and vm.info", r)
names = sorted(v["name"] for v in c.vm_list()["vms"])
ok(names == ["py1", "py2", "py3"], "vm_list() sees the three VMs", names)
ok(c.vm_info("py1")["name"] == "py1" and
   c.vm_info(c.vm_info("py2")["id"])["name"] == "py2",
   "vm_info() by name and by domain id")

# A kernel outside the daemon's image directories: the daemon asks for
# it as a descriptor (1014) and the client opens it with its own rights.
own = os.path.join(h.dir, "own-kernel.elf")
shutil.copyfile(KERNEL, own)
r = c.vm_create(config=guest_cfg("py4", 64).replace(KERNEL, own), wait=True)
ok(r["task"]["state"] == "done" and r["vm"]["name"] == "py4",
   "vm_create() passes a kernel outside --image-dir as a descriptor", r)
c.vm_destroy("py4")
try:
    c.vm_create(config=guest_cfg("py5", 64).replace(KERNEL, "/dev/zero"),
                wait=True)
    ok(False, "a device node as kernel is refused")
except OSError as e:
    ok("not a regular file" in str(e),
       "a device node as kernel is refused by the client, unopened "
       "by the daemon", e)

# Errors carry the code and the data.
bad = os.path.join(h.dir, "bad.cfg")
with open(bad, "w") as f:
    f.write('name = "bad"\nmemroy = 64\nkernel = "%s"\n' % KERNEL)
try:
    c.vm_create_file(bad, wait=True)
    ok(False, "a config error raises ConfigError")
except vmbuild.ConfigError as e:
    d = e.errors[0] if e.errors else None
    ok(e.code == 1003 and d is not None and d.file == bad and
       d.line == 2 and d.key == "memroy" and "unknown key" in d.message and
       (e.file, e.line, e.key) == (bad, 2, "memroy"),
       "ConfigError: code 1003, file, line, key and message of each error",
       "%r %r" % (e, e.errors))
try:
    c.vm_info("nope")
    ok(False, "NoSuchVM")
except vmbuild.NoSuchVM as e:
    ok(e.code == 1001 and isinstance(e, vmbuild.DaemonError),
       "vm_info of an unknown VM raises NoSuchVM (1001)")
try:
    c.vm_create(config=guest_cfg("py1", 32), wait=True)
    ok(False, "VMExists")
except vmbuild.VMExists as e:
    ok(e.code == 1008, "a second VM of the same name raises VMExists")
try:
    c.vm_create(config=guest_cfg("huge", 8192), wait=True)
    ok(False, "NoMemory")
except vmbuild.NoMemory as e:
    ok(e.code == 1004 and e.phase in ("place", "claim", "populate"),
       "a build that cannot fit raises NoMemory with its phase (%s)" %
       e.phase, repr(e))
seen = []
try:
    c.vm_create(config=guest_cfg("huge", 8192), progress=seen.append)
    ok(False, "NoMemory (followed)")
except vmbuild.NoMemory as e:
    ok(e.code == 1004 and e.task is not None and
       e.task["state"] == "failed" and e.phase is not None,
       "followed with progress: NoMemory with the task and phase (%s)" %
       e.phase, repr(e))
c.vm_pause("py2")
try:
    c.vm_pause("py2")
    ok(False, "BadState")
except vmbuild.BadState as e:
    ok(e.code == 1012, "pausing a paused VM raises BadState (1012)")
c.vm_unpause("py2")
try:
    c.task_cancel(t["id"])
    ok(False, "TaskFinished")
except vmbuild.TaskFinished as e:
    ok(e.code == 1011, "cancelling a finished task raises TaskFinished")
try:
    c.call("no.such", {})
    ok(False, "MethodNotFound")
except vmbuild.MethodNotFound as e:
    ok(e.code == -32601, "an unknown method raises MethodNotFound")
ok(raises(TypeError, c.vm_info, ["x"]),
   "a VM that is neither a name nor an id is refused locally")

# Events through the iterator.
with c.events_subscribe(["vm.state"]) as sub:
    ok(sub.events == ["vm.state"], "events_subscribe() confirms the events",
       sub.events)
    c.vm_destroy("py3")
    got = None
    while True:
        ev = sub.next_event(timeout=30)
        if ev is None:
            break
        if ev.name == "vm.state" and ev.params.get("vm") == "py3" and \
                ev.params.get("state") == "destroyed":
            got = ev
            break
    ok(got is not None, "the iterator yields vm.state destroyed for py3",
       got)

# A daemon that is gone, and back.
h.stop_daemon()
ok(raises(vmbuild.ConnectionFailed, c.vm_list),
   "a stopped daemon raises ConnectionFailed")
h.start_daemon()
ok(sorted(v["name"] for v in c.vm_list()["vms"]) == ["py1", "py2"],
   "the same client works again once the daemon is back")
c.close()

try:
    vmbuild.Client(os.path.join(h.dir, "none.sock")).vm_list()
    ok(False, "no socket")
except vmbuild.ConnectionFailed as e:
    ok("none.sock" in str(e), "no socket: ConnectionFailed naming it")

# A server that accepts and never answers: Timeout, not a hang.
mute = os.path.join(h.dir, "mute.sock")
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(mute)
ls.listen(1)
held = []
threading.Thread(target=lambda: held.append(ls.accept()),
                 daemon=True).start()
ok(raises(vmbuild.Timeout, vmbuild.Client(mute, timeout=0.5).server_hello),
   "a daemon that does not answer raises Timeout")
ls.close()
done()
