#!/usr/bin/env python3
"""metrics.py - vmbuildd's Prometheus endpoint (GET /metrics).

The text passes promtool check metrics (when installed); the families
of DESIGN.md are there; VM counts, the create histogram and the build
counters follow builds; per-VM gauges (memory, vCPUs, CPU seconds,
state) labelled by name and id follow the VMs; the process_* families
of Prometheus' client libraries describe the daemon; no family counts
pages; other paths are 404, POST is 405, both with a text/plain body.
The per-VM series, kept between scrapes, follow every change of a VM
(ours, or the hypervisor's) on the very next scrape.  A client that
takes gzip (Accept-Encoding, as Prometheus sends it) gets the same
series as one gzip member whose CRC and length check; q=0 refuses it.
A bzImage kernel is unpacked by one build and found by the next
(vm.info's kernel_cached, vmctl info, the image cache's families).
"""
import lzma
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

port = free_port()
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M"],
         ["--metrics", "127.0.0.1:%d" % port])
h.start_daemon()
url = "http://127.0.0.1:%d/metrics" % port


def scrape():
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.headers.get("Content-Type"), r.read().decode()


def value(text, name, labels=""):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)),
                  text, re.M)
    return float(m.group(1)) if m else None


ctype, text = scrape()
ok(ctype.startswith("text/plain; version=0.0.4"), "content type 0.0.4",
   ctype)
promtool = shutil.which("promtool")
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True)
    ok(p.returncode == 0, "promtool check metrics", p.stdout + p.stderr)
else:
    skip("promtool check metrics", "promtool not installed")
for fam in ("vmbuild_build_info", "vmbuild_tlb_flushes_total",
            "vmbuild_unshadow_total", "vmbuild_scrub_dirty_bytes",
            "vmbuild_node_free_bytes", "vmbuild_scrub_clean_1g_bytes",
            "vmbuild_populate_bytes_total",
            "vmbuild_vm_create_duration_seconds", "vmbuild_vms",
            "vmbuild_image_cache_hits_total",
            "vmbuild_image_cache_misses_total", "vmbuild_image_cache_bytes"):
    ok("# TYPE %s " % fam in text, "family " + fam)
ok([value(text, f) for f in ("vmbuild_image_cache_hits_total",
                             "vmbuild_image_cache_misses_total",
                             "vmbuild_image_cache_bytes")] == [0, 0, 0],
   "image cache: nothing yet")
ok(value(text, "vmbuild_build_info",
         '{version="0.1.0",backend="sim"}') == 1, "build_info labels")
ok(value(text, "vmbuild_tlb_flushes_total",
         '{cause="populate",result="issued"}') is not None,
   "tlb_flushes_total{cause,result}")

c = h.client()
c.result("vm.create", {"config": guest_cfg("m1", 32), "wait": True})
c.result("vm.create", {"config": guest_cfg("m2", 32), "wait": True})
c.result("vm.pause", {"vm": "m2"})
_, text = scrape()
running = sum(value(text, "vmbuild_vms", '{state="%s"}' % s) or 0
              for s in ("running", "blocked"))
ok(running == 1 and value(text, "vmbuild_vms", '{state="paused"}') == 1,
   "vmbuild_vms by state (1 running, 1 paused)")
ok(value(text, "vmbuild_vm_create_duration_seconds_count") == 2 and
   value(text, "vmbuild_vm_create_duration_seconds_bucket",
         '{le="+Inf"}') == 2, "create histogram counts two builds")
ok(value(text, "vmbuild_vm_creates_total", '{result="done"}') == 2,
   "vm_creates_total{result=done} is 2")
ok(value(text, "vmbuild_vm_memory_bytes", '{name="m1",id="%d"}' %
         c.result("vm.info", {"vm": "m1"})["id"]) == 32 * MIB and
   value(text, "vmbuild_vm_vcpus", '{name="m2",id="%d"}' %
         c.result("vm.info", {"vm": "m2"})["id"]) == 1,
   "vmbuild_vm_memory_bytes and vmbuild_vm_vcpus per VM, by name and id")
m2 = c.result("vm.info", {"vm": "m2"})["id"]
states = {s: value(text, "vmbuild_vm_state",
                   '{name="m2",id="%d",state="%s"}' % (m2, s))
          for s in ("building", "paused", "running", "blocked", "shutdown",
                    "dying", "crashed")}
ok(states["paused"] == 1 and sum(states.values()) == 1,
   "vmbuild_vm_state is a state set: m2 is paused, and only that", states)
ok(value(text, "vmbuild_vm_cpu_seconds_total",
         '{name="m1",id="%d"}' % c.result("vm.info", {"vm": "m1"})["id"])
   == 0, "vmbuild_vm_cpu_seconds_total per VM (0: hvsim runs no guest "
   "code)")
ok(not re.search(r"^vmbuild_\w*pages", text, re.M),
   "no family counts pages")
proc = {f: value(text, f) for f in (
    "process_cpu_seconds_total", "process_resident_memory_bytes",
    "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
    "process_start_time_seconds")}
ok(all(v is not None and v > 0 for v in proc.values()) and
   proc["process_open_fds"] < proc["process_max_fds"] and
   proc["process_resident_memory_bytes"] <
   proc["process_virtual_memory_bytes"] and
   abs(proc["process_start_time_seconds"] -
       os.stat("/proc/%d" % h.d.pid).st_mtime) < 3600,
   "process_* families of the daemon", proc)
pop = sum(float(v) for v in re.findall(
    r'^vmbuild_populate_bytes_total\{node="\d+"\} (\S+)$', text, re.M))
ok(pop >= 64 * MIB, "populate_bytes_total covers both guests (%d)" % pop)
r = c.call("vm.create", {"config": guest_cfg("huge", 4096), "wait": True})
_, text = scrape()
ok(value(text, "vmbuild_vm_creates_total", '{result="failed"}') == 1,
   "a failed build is counted as failed")
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True)
    ok(p.returncode == 0, "promtool check metrics after builds",
       p.stdout + p.stderr)


# The per-VM series are rendered once per change of the registry and
# kept between scrapes: every change, by an operation of ours or by the
# hypervisor (a domain another toolstack made, shut down, destroyed),
# shows on the very next scrape, and what is host-wide stays live.
VM_FAMILIES = ("vmbuild_vm_memory_bytes", "vmbuild_vm_vcpus",
               "vmbuild_vm_cpu_seconds_total", "vmbuild_vm_state")


def vm_lines(text):
    return [ln for ln in text.splitlines()
            if ln.split("{")[0] in VM_FAMILIES]


def vm_state(text, name):
    """{state: value} of VM `name`'s state set, {} if it has none."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^vmbuild_vm_state\{name="%s",id="\d+",state="(\w+)"\} (\S+)$'
        % re.escape(name), text, re.M)}


def has_series(text, name):
    return any('{name="%s",' % name in ln for ln in vm_lines(text))


def vm_listed_state(name):
    for v in c.result("vm.list")["vms"]:
        if v["name"] == name:
            return v["state"]
    return None


def wait_listed(name, want, timeout=30):
    """Until vm.list shows VM `name` in state `want` (None: gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if vm_listed_state(name) == want:
            return True
        time.sleep(0.05)
    return False


_, t1 = scrape()
_, t2 = scrape()
ok(vm_lines(t1) == vm_lines(t2) and len(vm_lines(t1)) == 2 * 11,
   "two scrapes without a change: the same per-VM series (11 a VM)",
   len(vm_lines(t1)))
ok(value(t2, "vmbuild_metrics_scrapes_total") ==
   value(t1, "vmbuild_metrics_scrapes_total") + 1,
   "host-wide series stay live between cached scrapes (scrapes_total)")
c.result("vm.unpause", {"vm": "m2"})
_, text = scrape()
st = vm_state(text, "m2")
ok(st.get("paused") == 0 and st.get("running", 0) +
   st.get("blocked", 0) == 1 and
   value(text, "vmbuild_vms", '{state="paused"}') == 0,
   "vm.unpause shows on the next scrape", st)
c.result("vm.pause", {"vm": "m1"})
_, text = scrape()
ok(vm_state(text, "m1").get("paused") == 1,
   "vm.pause shows on the next scrape", vm_state(text, "m1"))
c.result("vm.unpause", {"vm": "m1"})
c.result("vm.create", {"config": guest_cfg("m3", 16), "wait": True})
m3 = c.result("vm.info", {"vm": "m3"})["id"]
_, text = scrape()
ok(value(text, "vmbuild_vm_memory_bytes", '{name="m3",id="%d"}' % m3)
   == 16 * MIB and sum(vm_state(text, "m3").values()) == 1,
   "a new VM has its series on the next scrape", vm_state(text, "m3"))
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=text,
                       capture_output=True, text=True)
    ok(p.returncode == 0, "promtool check metrics with 3 VMs",
       p.stdout + p.stderr)
c.result("vm.destroy", {"vm": "m3"})
_, text = scrape()
ok(not has_series(text, "m3") and len(vm_lines(text)) == 2 * 11,
   "a destroyed VM's series are gone on the next scrape")
g = HvGuest(h.hv_sock)
fid = g.create("outsider")
ok(fid is not None and wait_listed("outsider", "paused"),
   "a domain of another toolstack is listed")
_, text = scrape()
ok(vm_state(text, "outsider").get("paused") == 1,
   "... and has its series on the next scrape", vm_state(text, "outsider"))
ok(g.shutdown(fid, g.POWEROFF) == 0 and wait_listed("outsider", "shutdown"),
   "it shuts down by itself")
_, text = scrape()
ok(vm_state(text, "outsider").get("shutdown") == 1 and
   vm_state(text, "outsider").get("paused") == 0,
   "... which shows on the next scrape", vm_state(text, "outsider"))
ok(g.destroy(fid) == 0 and wait_listed("outsider", None),
   "its toolstack destroys it")
_, text = scrape()
ok(not has_series(text, "outsider"),
   "... and its series are gone on the next scrape")
g.close()


# libvmbuild's cache of unpacked kernels: the ELF kernels above were
# not counted; a bzImage (the test kernel in one, as the kernel's build
# lays it out) is unpacked by the first build and found by the second,
# which vm.info's kernel_cached and the three families say.  Its change
# time is now: the cache takes it once that is 2 s old (racily clean).
def bzimage(elf):
    xz = lzma.compress(elf, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    setup = bytearray(4 * 512)
    setup[0x1f1] = 3                        # setup sectors
    setup[0x202:0x206] = b"HdrS"
    setup[0x206:0x208] = b"\x0f\x02"        # boot protocol 2.15
    struct.pack_into("<II", setup, 0x248, 0, len(xz) + 4)
    return bytes(setup) + xz + struct.pack("<I", len(elf))


_, text = scrape()
ok(value(text, "vmbuild_image_cache_misses_total") == 0 and
   value(text, "vmbuild_image_cache_hits_total") == 0,
   "image cache: ELF kernels are neither hits nor misses")
with open(KERNEL, "rb") as f:
    elf = f.read()
bz_path = os.path.join(h.dir, "vmlinuz-test")
with open(bz_path, "wb") as f:
    f.write(bzimage(elf))
os.utime(bz_path, (1e9, 1e9))
time.sleep(2.2)
cached = []
for name in ("bz1", "bz2"):
    fd = os.open(bz_path, os.O_RDONLY)
    r = c.call("vm.create", {"config": guest_cfg(name, 16).replace(
        KERNEL, bz_path), "wait": True, "fds": {"kernel": 0}}, fds=[fd])
    os.close(fd)
    cached.append(r and "result" in r and
                  c.result("vm.info", {"vm": name})["build"].get(
                      "kernel_cached"))
ok(cached == [False, True], "a bzImage: unpacked by the first build, "
   "found unpacked by the second (kernel_cached)", cached)
_, text = scrape()
ok(value(text, "vmbuild_image_cache_hits_total") == 1 and
   value(text, "vmbuild_image_cache_misses_total") == 1 and
   value(text, "vmbuild_image_cache_bytes") == len(elf),
   "image cache: 1 hit, 1 miss, the unpacked kernel's bytes held",
   [ln for ln in text.splitlines() if "image_cache" in ln])
p = subprocess.run([os.path.join(BIN, "vmctl"), "--socket", h.sock, "info",
                    "bz2"], capture_output=True, text=True, timeout=60)
ok(p.returncode == 0 and re.search(r"^\s*kernel_cached:\s+yes$", p.stdout,
                                   re.M),
   "vmctl info shows kernel_cached", p.stdout + p.stderr)
for name in ("bz1", "bz2"):
    c.result("vm.destroy", {"vm": name})


def http_error(req):
    try:
        urllib.request.urlopen(req, timeout=30)
        return 200, None, ""
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()




def scrape_as(accept):
    req = urllib.request.Request(url, headers={"Accept-Encoding": accept})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers, r.read()


def families(text):
    return [ln for ln in text.splitlines() if ln.startswith("# ")]


hdrs, raw = scrape_as("deflate, gzip;q=0.5")
ok(hdrs.get("Content-Encoding") == "gzip" and
   "Accept-Encoding" in hdrs.get("Vary", ""),
   "Accept-Encoding: gzip: the scrape in gzip, Vary: Accept-Encoding",
   dict(hdrs))
d = zlib.decompressobj(16 + zlib.MAX_WBITS)
try:
    gz = d.decompress(raw).decode()
    whole = d.eof and not d.unused_data
except zlib.error as e:
    gz, whole = "", False
    diag("gzip: %s" % e)
_, plain = scrape()
ok(whole, "... one gzip member, its CRC and length right (%d bytes for %d)"
   % (len(raw), len(plain)))
ok(vm_lines(gz) == vm_lines(plain) and families(gz) == families(plain) and
   value(gz, "vmbuild_metrics_scrapes_total") + 1 ==
   value(plain, "vmbuild_metrics_scrapes_total"),
   "... the same families and per-VM series as the text, host-wide "
   "series live")
hdrs, raw = scrape_as("gzip;q=0, identity")
ok(hdrs.get("Content-Encoding") is None and
   families(raw.decode()) == families(plain),
   "Accept-Encoding: gzip;q=0: the scrape in text", dict(hdrs))

code, hdrs, body = http_error("http://127.0.0.1:%d/other" % port)
ok(code == 404 and hdrs.get("Content-Type", "").startswith("text/plain")
   and body.startswith("404 Not Found: ") and "/metrics" in body,
   "other paths: 404 in plain text (%s)" % code, body)
code, hdrs, body = http_error(urllib.request.Request(url, data=b"x",
                                                     method="POST"))
ok(code == 405 and hdrs.get("Allow") == "GET, HEAD" and
   hdrs.get("Content-Type", "").startswith("text/plain") and
   body.startswith("405 Method Not Allowed: "),
   "POST /metrics: 405 in plain text, Allow: GET, HEAD (%s)" % code, body)
with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"),
                            timeout=30) as r:
    ok(r.status == 200 and r.read() == b"", "HEAD /metrics: 200, no body")
ok(c.result("server.hello")["server"] == "vmbuildd",
   "the control socket still serves")


def scrapes_total_of(sock):
    """scrapes_total of the next reply on a kept-alive connection."""
    f = sock.makefile("rb")
    length = None
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
    body = f.read(length).decode() if length is not None else ""
    return value(body, "vmbuild_metrics_scrapes_total")


# Requests read in one round of the daemon's loop share one rendering:
# stopped (SIGSTOP), the daemon gets a request on each of five
# connections it already serves, then reads them all in one round when
# it goes on (SIGCONT).  Their replies are of one moment, scrapes_total
# included; a request of a later round shows the scrapes since.
conns = [socket.create_connection(("127.0.0.1", port), timeout=30)
         for _ in range(5)]
get = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
for s in conns:
    s.sendall(get)
    scrapes_total_of(s)
os.kill(h.d.pid, signal.SIGSTOP)


def stopped(pid):
    """Every thread of pid is stopped: kill() only queues SIGSTOP, and a
    daemon still running on the other CPU read the first request in a
    round of its own once (scrapes_total 22, then 23 for the rest)."""
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                    return False
    except OSError:
        return False
    return True


try:
    ok(wait_for(lambda: stopped(h.d.pid), 60) is not None,
       "the daemon is stopped (SIGSTOP) before the requests go")
    for s in conns:
        s.sendall(get)
finally:
    os.kill(h.d.pid, signal.SIGCONT)
together = [scrapes_total_of(s) for s in conns]
conns[0].sendall(get)
later = scrapes_total_of(conns[0])
ok(len(set(together)) == 1 and together[0] is not None and
   later == together[0] + 5,
   "scrapes read in one round get one rendering; the next round's is new",
   (together, later))
for s in conns:
    s.close()
# A second daemon asked for the same address must refuse to start.
p = subprocess.run([VMBUILDD, "--foreground", "--hypervisor",
                    "sim:" + h.hv_sock, "--socket",
                    os.path.join(h.dir, "second.sock"), "--state-dir",
                    os.path.join(h.dir, "state2"), "--metrics",
                    "127.0.0.1:%d" % port], capture_output=True, text=True,
                   timeout=60)
ok(p.returncode == 1 and "--metrics" in p.stderr,
   "a metrics address in use is fatal when asked for", p.stderr)
for n in ("m1", "m2"):
    c.result("vm.destroy", {"vm": n})
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
