#!/usr/bin/env python3
"""prometheus.py - a real Prometheus server (Debian's prometheus) on
loopback, scraping a vmbuildd on hvsim every second with the rules of
contrib/prometheus loaded.

Through Prometheus's HTTP API: the target is up with no scrape error;
vmbuild_tlb_flushes_total is non-zero after a build (and was zero
before it: the flushes come with the running domain); the recording
rules evaluate; both rule groups are healthy and no alert fires.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from vmbdtest import *  # noqa: E402,F401,F403

RULES = os.path.join(TOP, "contrib", "prometheus", "vmbuild.rules.yml")
prom = shutil.which("prometheus")
promtool = shutil.which("promtool")
if prom is None or promtool is None:
    print("ok - Prometheus round trip # SKIP prometheus is not installed")
    done()

mport, pport = free_port(), free_port()
h = Host(["--nodes", "2", "--cpus-per-node", "2", "--threads-per-core", "1",
          "--mem-per-node", "256M"], ["--metrics", "127.0.0.1:%d" % mport])
h.start_daemon()

pdir = os.path.join(h.dir, "prometheus")
os.makedirs(pdir)
shutil.copy(RULES, pdir)
conf = os.path.join(pdir, "prometheus.yml")
with open(conf, "w") as f:
    f.write("""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [vmbuild.rules.yml]
scrape_configs:
  - job_name: vmbuild
    static_configs:
      - targets: ["127.0.0.1:%d"]
""" % mport)
p = subprocess.run([promtool, "check", "config", conf], capture_output=True,
                   text=True)
ok(p.returncode == 0, "promtool check config (with the rules)",
   p.stdout + p.stderr)

log = open(os.path.join(h.dir, "prometheus.log"), "ab")
server = subprocess.Popen(
    [prom, "--config.file=" + conf,
     "--storage.tsdb.path=" + os.path.join(pdir, "data"),
     "--web.listen-address=127.0.0.1:%d" % pport, "--log.level=warn"],
    stdout=log, stderr=log, cwd=pdir)
base = "http://127.0.0.1:%d" % pport


def stop_server():
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


atexit.register(stop_server)


def get(path, **params):
    url = base + path + ("?" + urllib.parse.urlencode(params) if params
                         else "")
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


def until(fn, what, timeout=90):
    """fn() until it returns something true; that value, or None."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            last = fn()
        except (OSError, ValueError, KeyError, IndexError) as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        if server.poll() is not None:
            break
        time.sleep(0.25)
    diag("%s: last %r" % (what, last))
    return None


def ready():
    with urllib.request.urlopen(base + "/-/ready", timeout=5) as r:
        return r.status == 200


if not until(ready, "ready"):
    with open(os.path.join(h.dir, "prometheus.log"), errors="replace") as f:
        bail("Prometheus did not start: %s" % f.read()[-1500:])
version = get("/api/v1/status/buildinfo")["data"]["version"]
ok(re.match(r"^2\.\d+\.\d+", version), "Prometheus %s listens on "
   "127.0.0.1:%d" % (version, pport))


def target_up():
    for t in get("/api/v1/targets")["data"]["activeTargets"]:
        if t["labels"].get("job") == "vmbuild" and t["health"] == "up":
            return t
    return None


t = until(target_up, "target up")
ok(t is not None and t["lastError"] == "",
   "the vmbuildd target is up, no scrape error", t)


def query(q):
    """The samples of an instant query: [(labels, float value)]."""
    r = get("/api/v1/query", query=q)
    return [(s["metric"], float(s["value"][1])) for s in r["data"]["result"]]


def flushes():
    s = query('sum(vmbuild_tlb_flushes_total{job="vmbuild"})')
    return s[0][1] if s else None


before = until(lambda: flushes() is not None and [flushes()],
               "vmbuild_tlb_flushes_total scraped")
before = before[0] if before else None
ok(before is not None, "vmbuild_tlb_flushes_total is in Prometheus "
   "before a build (%s)" % before)

c = h.client()
r = c.call("vm.create", {"config": guest_cfg("prom", 128), "wait": True})
ok(r is not None and "result" in r, "a build on hvsim", r)
built_at = time.time()


def grown():
    s = query('sum(vmbuild_tlb_flushes_total{job="vmbuild"})')
    if not s:
        return None
    v = s[0][1]
    return v if v > 0 and v > (before or 0) else None


after = until(grown, "vmbuild_tlb_flushes_total grows")
ok(after is not None and after > 0,
   "after the build Prometheus has vmbuild_tlb_flushes_total = %s "
   "(non-zero, was %s)" % (after, before))
by = query('sum by (cause, result) (vmbuild_tlb_flushes_total{job="vmbuild"})')
diag("by cause and result: " + ", ".join(
    "%s/%s=%g" % (m.get("cause"), m.get("result"), v) for m, v in by))

rate = until(lambda: query("instance:vmbuild_tlb_flushes_issued:rate5m"),
             "recording rule")
ok(rate and rate[0][0].get("instance") == "127.0.0.1:%d" % mport,
   "the recording rule instance:vmbuild_tlb_flushes_issued:rate5m "
   "evaluates (%s)" % (rate and rate[0][1]), rate)
clean = until(lambda: query("instance_node:vmbuild_node_clean_free_bytes"),
              "clean free bytes")
ok(clean and len(clean) == 2 and all(v > 0 for _, v in clean),
   "instance_node:vmbuild_node_clean_free_bytes for both nodes", clean)

groups = {g["name"]: g for g in get("/api/v1/rules")["data"]["groups"]}
ok(set(groups) == {"vmbuild.recording", "vmbuild.alerts"} and
   all(rule["health"] == "ok" for g in groups.values()
       for rule in g["rules"]),
   "both rule groups loaded and healthy (%d rules)" %
   sum(len(g["rules"]) for g in groups.values()),
   [(rule["name"], rule.get("lastError")) for g in groups.values()
    for rule in g["rules"] if rule["health"] != "ok"])
alerts = get("/api/v1/alerts")["data"]["alerts"]
ok(not [a for a in alerts if a["state"] == "firing"],
   "no alert fires on a healthy host", alerts)

# The first lines of a scrape, for the record.
with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                            timeout=10) as resp:
    diag("GET /metrics, first lines:\n" +
         "\n".join(resp.read().decode().splitlines()[:12]))
c.close()
stop_server()
ok(server.returncode == 0, "Prometheus stops cleanly (%s)" %
   server.returncode)
done()
