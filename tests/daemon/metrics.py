#!/usr/bin/env python3
"""metrics.py - vmbuildd's Prometheus endpoint (GET /metrics).

The text passes promtool check metrics (when installed); the families
of DESIGN.md are there; VM counts, the create histogram and the build
counters follow builds; per-VM gauges (memory, vCPUs, CPU seconds,
state) labelled by name and id follow the VMs; the process_* families
of Prometheus' client libraries describe the daemon; no family counts
pages; other paths are 404, POST is 405, both with a text/plain body.
"""
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

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
            "vmbuild_node_free_bytes", "vmbuild_populate_bytes_total",
            "vmbuild_vm_create_duration_seconds", "vmbuild_vms"):
    ok("# TYPE %s " % fam in text, "family " + fam)
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



def http_error(req):
    try:
        urllib.request.urlopen(req, timeout=30)
        return 200, None, ""
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


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
