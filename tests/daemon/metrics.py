#!/usr/bin/env python3
"""metrics.py - vmbuildd's Prometheus endpoint (GET /metrics).

The text passes promtool check metrics (when installed); the families
of DESIGN.md are there; VM counts, the create histogram and the build
counters follow builds; other paths are 404, POST is 405.
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

try:
    urllib.request.urlopen("http://127.0.0.1:%d/other" % port, timeout=30)
    code = 200
except urllib.error.HTTPError as e:
    code = e.code
ok(code == 404, "other paths: 404 (%s)" % code)
try:
    urllib.request.urlopen(urllib.request.Request(url, data=b"x",
                                                  method="POST"), timeout=30)
    code = 200
except urllib.error.HTTPError as e:
    code = e.code
ok(code == 405, "POST /metrics: 405 (%s)" % code)
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
