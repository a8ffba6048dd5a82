#!/usr/bin/env python3
"""forcefall.py - vm.shutdown --force when the request path fails.

A guest owns the nodes a shutdown request goes through (on Xen its
control/ directory in xenstore, which it can make fail, e.g. by making
every transaction on it conflict).  On hvsim the request path is
HV_OP_DOMAIN_CONTROL; a fault armed on it (EAGAIN, as a conflicting
transaction gives) stands in for such a guest.  Checked:

- with force, any error of the request path falls back to the
  hypervisor's shutdown (forced, the domain shut down), and the log says
  why;
- without force, the error is reported and nothing is forced.
"""
import errno
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "1G",
          "--backing", "phantom", "--fault-requests"])
h.start_daemon()
c = h.client()
hv = Hv(h.hv_sock)
g = HvGuest(h.hv_sock)


def create(name, *extra):
    r = c.call("vm.create", {"config": guest_cfg(name, 64, extra=extra),
                             "wait": True})
    if "result" not in r:
        bail("create %s: %r" % (name, r))
    return r["result"]["vm"]


def state(name):
    r = c.call("vm.info", {"vm": name})
    return r.get("result", {}).get("state")


vm = create("pv", 'on_poweroff = "preserve"')
ok(wait_for(lambda: state("pv") == "running"), "pv runs")
# The guest listens for requests: only the path to it fails.
g.control(vm["id"], g.ANNOUNCE, g.F_POWEROFF)

hv.fault("domain_control", 1, HV_FAULT_FAIL, errno.EAGAIN)
r = c.call("vm.shutdown", {"vm": "pv"})
ok(err_code(r) == E_HYPERVISOR and "poweroff request" in
   r["error"]["message"] and state("pv") == "running",
   "without force: the request's error, the VM left running", r)

hv.fault("domain_control", 1, HV_FAULT_FAIL, errno.EAGAIN)
r = c.call("vm.shutdown", {"vm": "pv", "force": True, "timeout": 30})
res = r.get("result", {})
ok(res.get("forced") is True and res.get("state") == "shutdown" and
   res.get("action") == "preserve",
   "force, the request path failing (EAGAIN): shut down from the "
   "hypervisor at once", r)
ok(h.log_has("the poweroff request failed"), "the log says why",
   h.log_tail())
ok("result" in c.call("vm.destroy", {"vm": "pv"}), "pv destroyed")
g.close()
hv.close()
done()
