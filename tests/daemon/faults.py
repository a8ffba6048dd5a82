#!/usr/bin/env python3
"""faults.py - the fault matrix: every hypercall of a build fails once,
then every hypercall of the undo fails once (hvsim's HV_OP_FAULT).

The calls of one build are counted first, by op, with vmb-build (the
library alone: no daemon calls the hypervisor meanwhile), for a build
that succeeds and for one whose first populate fails (its undo).  Then,
through the daemon, each case arms one fault at one call and builds:

  build cases   call k of op fails: the build either fails, with an
                error naming its phase, or goes on (a call it can do
                without, such as scrub progress, or a call of the
                daemon's own refresh that took the fault);
  undo cases    the first populate fails, and call k of an op of the
                undo fails too: the daemon retries what the undo could
                not do (reap.c) until the domain is gone.

Every case ends with no domain left and every page free again, which is
waited for (the retry takes a moment) and then checked exactly.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

VMB_BUILD = os.path.join(BIN, "vmb-build")
PHASES = ("place", "create", "claim", "populate", "load", "boot")

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "256M",
          "--backing", "real", "--fault-requests"])
hv = Hv(h.hv_sock)
cfg = os.path.join(h.dir, "m.cfg")
with open(cfg, "w") as f:
    f.write(guest_cfg("m", 320, 2))


def counted_build(*faults):
    """Counts of calls by op for one vmb-build of cfg (faults armed).
    "hello" opens a connection, which depends on the caller's pool of
    connections, not on the build: it is left out (hvsim restarting
    under the daemon is recovery.py's)."""
    hv.clear()
    for op, nth in faults:
        hv.fault(op, nth)
    before = hv.counts()["calls"]
    p = subprocess.run([VMB_BUILD, "--hypervisor", "sim:" + h.hv_sock,
                        "--keep", cfg], capture_output=True, text=True,
                       timeout=120)
    after = hv.counts()["calls"]
    hv.clear()
    hv.destroy_all()
    return p.returncode, {op: after[op] - before[op] for op in after
                          if after[op] != before[op] and op != "hello"}


rc, build = counted_build()
ok(rc == 0 and build.get("populate", 0) >= 1 and
   build.get("domain_create") == 1, "a build's calls, counted: %s" % build)
# The claim is made once: a populate of the whole guest consumes it, and
# the domain read back says nothing is left to release.
ok(build.get("claim") == 1, "one claim call, no release of a claim "
   "consumed: %s" % build.get("claim"))
# Each vCPU's online state and affinity in one call (2 vCPUs).
ok(build.get("domain_vcpu") == 2, "one domain_vcpu call per vCPU: %s" %
   build.get("domain_vcpu"))
rc, failed = counted_build(("populate", 1))
ok(rc == 1, "with its first populate failing, vmb-build fails")
# The undo's calls: what the failing build made beyond its calls up to
# the populate, which are those of place (host_info, the first
# domain_list, scrub_progress), create, its platform (domain_vcpu: each
# vCPU's online state and affinity), claim (the first claim) and the
# populate calls (the node workers start theirs together).
prefix = {"host_info": build.get("host_info", 0), "domain_list": 1,
          "scrub_progress": build.get("scrub_progress", 0),
          "domain_create": 1, "domain_vcpu": build.get("domain_vcpu", 0),
          "claim": 1, "populate": build["populate"]}
undo = {op: failed.get(op, 0) - prefix.get(op, 0) for op in failed
        if failed.get(op, 0) > prefix.get(op, 0)}
ok(undo.get("domain_destroy") == 1 and undo.get("claim") == 1,
   "the undo's calls: %s" % undo)
# The daemon starts on an empty host.
h.start_daemon()
c = h.client()


def free_bytes():
    return sum(n["free_bytes"] for n in c.result("host.scrub")["nodes"])


free0 = free_bytes()


def settle(timeout=60):
    """Wait until no VM is left and every page is free; (vms, free)."""
    end = time.monotonic() + timeout
    while True:
        vms = c.result("vm.list")["vms"]
        free = free_bytes()
        if (not vms and free == free0) or time.monotonic() > end:
            return vms, free
        time.sleep(0.1)


outcomes = {}
bad = []


def run_case(label, faults, want_phase=None, strict=True):
    """Arm the faults, build, undo what stands, check what is left.
    strict=False: a build that failed elsewhere than want_phase is not
    counted against it (the caller tries again), what is left always."""
    hv.clear()
    fired0 = hv.counts()["fired"]
    for op, nth in faults:
        hv.fault(op, nth)
    r = c.call("vm.create", {"config": guest_cfg("m", 320, 2), "wait": True})
    fired = hv.counts()["fired"] - fired0
    hv.clear()
    if r is not None and "result" in r:
        outcome = "built"
        c.call("vm.destroy", {"vm": "m"})
    else:
        e = (r or {}).get("error", {})
        phase = e.get("data", {}).get("phase")
        outcome = "failed in %s" % phase
        if phase not in PHASES or ("phase %s" % phase) not in \
                e.get("message", ""):
            bad.append((label, "error does not name its phase", r))
        if strict and want_phase is not None and phase != want_phase:
            bad.append((label, "failed in %s, not %s" % (phase, want_phase),
                        r))
    vms, free = settle()
    if vms or free != free0:
        bad.append((label, "left %s, %d bytes not free" %
                    (vms, free0 - free), r))
    outcomes.setdefault(label.split(" ")[0], []).append(outcome)
    return outcome, fired


# ------------------------------------------------------------ build cases
ncases = 0
for op in sorted(build):
    for k in range(1, build[op] + 1):
        outcome, fired = run_case("%s call %d" % (op, k), [(op, k)])
        ncases += 1
        diag("build: %s call %d of %d fails -> %s" % (op, k, build[op],
                                                        outcome))
        # A populate's continuations depend on how much of the memory
        # it takes is dirty (hvsim preempts by work done): a later
        # call that this build did not need cannot fire.  Every other
        # counted call must.
        if not fired and not (op == "populate" and k > 1 and
                              outcome == "built"):
            bad.append(("%s call %d" % (op, k), "the fault never fired",
                        None))
for op, phase in (("domain_create", "create"), ("domain_vcpu", "create"),
                  ("claim", "claim"),
                  ("populate", "populate"), ("map", "load"),
                  ("domain_unpause", "boot")):
    if op in build:
        ok(any(o == "failed in " + phase for o in outcomes.get(op, [])),
           "a failing %s fails the build in phase %s" % (op, phase),
           outcomes.get(op))

# ------------------------------------------------------------- undo cases
nundo = 0
# The daemon lists domains on its own every 2 s: a domain_list fault may
# land on that list instead of the build's.  Such a case is tried again
# (what it left is checked every time).
for op in sorted(undo):
    for j in range(1, undo[op] + 1):
        nth = prefix.get(op, 0) + j
        for attempt in range(3):
            outcome, fired = run_case("undo-%s call %d" % (op, j),
                                      [("populate", 1), (op, nth)],
                                      want_phase="populate",
                                      strict=attempt == 2 or
                                      op != "domain_list")
            if outcome == "failed in populate":
                break
        nundo += 1
        diag("undo: populate fails, then %s call %d of the undo -> %s, "
             "cleaned up" % (op, j, outcome))
# The daemon's retry of an undo whose destroy failed, twice more (the
# library tries a transport error once on its own, not a refusal).
outcome, _ = run_case("undo-destroy-twice", [
    ("populate", 1), ("domain_destroy", 1), ("domain_destroy", 2)],
    want_phase="populate")
nundo += 1
ok(not bad, "%d build cases and %d undo cases: each ends with no domain "
   "left, every page free, and failures naming their phase" %
   (ncases, nundo), "\n".join("%s: %s: %s" % b for b in bad))
log = h.log_tail(n=100000)
ok("until it is gone" in log and "is destroyed" in log,
   "the daemon said it would retry a failed undo, and that it succeeded")
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
