#!/usr/bin/env python3
"""crashloop.py - a guest that keeps crashing is not restarted for ever
(issue 17), on hvsim.

Restarts (on_crash="restart" & co.) are limited to 10 within a sliding
hour, with a growing wait between them (0, then 1, 2, 4... s, at most
--restart-backoff), and the times are kept in the VM's record, so that a
daemon restart resets nothing.  The test plays the guest (HvGuest) and
asserts on the daemon's decisions (its log line for each crash, the
record's restart_times), not on how long anything took:

- with --restart-backoff 1: 0 s before the first restart, 1 s before
  each later one; 5 restarts, a daemon restart, 5 more (the history
  read back from the record), then the 11th crash is left crashed, with
  a log line saying why;
- the wait grows: a record holding 6 recent restarts (and 3 older than
  the window, which do not count) waits 32 s; one holding 9 waits the
  cap (--restart-backoff 60); a VM destroyed while it waits is gone,
  and nothing is restarted.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

h = Host(["--nodes", "1", "--cpus-per-node", "2", "--mem-per-node", "2G",
          "--backing", "phantom"], ["--restart-backoff", "1"])
h.start_daemon()
c = h.client()
g = HvGuest(h.hv_sock)


def info(name):
    return c.call("vm.info", {"vm": name}).get("result")


def create(name):
    r = c.call("vm.create", {"config": guest_cfg(
        name, 64, extra=['on_crash = "restart"']), "wait": True})
    if "result" not in r:
        bail("create %s: %r" % (name, r))
    return r["result"]["vm"]


def running(name, not_id=None):
    """vm.info of `name` once running on a domain other than not_id."""
    return wait_for(lambda: (lambda i: i if i and i["state"] in
                             ("running", "blocked") and i["id"] != not_id
                             else None)(info(name)), 60)


def times(uuid):
    return (h.record(uuid) or {}).get("restart_times")


def crash(name, n, wait):
    """Crash `name`; True if the daemon decided a restart after `wait` s
    with n earlier restarts, and did it."""
    i = running(name)
    if not i:
        return False
    g.shutdown(i["id"], g.CRASH)
    line = "%s (domain %d) shut down (crash): restart in %d s (%d earlier " \
        "restarts within 3600 s" % (name, i["id"], wait, n)
    return h.log_has(line, timeout=60) and \
        running(name, i["id"]) is not None


vm = create("cl")
uuid = vm["uuid"]
ok(times(uuid) == [], "a new VM's record: no restart times", h.record(uuid))
for n in range(5):
    ok(crash("cl", n, 0 if n == 0 else 1),
       "crash %d: restarted after %d s (%d earlier)" %
       (n + 1, 0 if n == 0 else 1, n), h.log_tail(n=10))
    t = wait_for(lambda: (lambda x: x if x and len(x) == n + 1 else None)(
        times(uuid)), 30)
    ok(t is not None, "the record holds %d restart times" % (n + 1),
       times(uuid))
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
h.start_daemon()
c = h.client()
ok(len(times(uuid) or []) == 5, "after a daemon restart the record still "
   "holds the 5", times(uuid))
for n in range(5, 10):
    ok(crash("cl", n, 1), "crash %d: restarted after 1 s (%d earlier, "
       "counted across the daemon restart)" % (n + 1, n), h.log_tail(n=10))
ok(wait_for(lambda: len(times(uuid) or []) == 10, 30),
   "the record holds 10 restart times", times(uuid))
i = running("cl")
g.shutdown(i["id"], g.CRASH)
ok(h.log_has("cl (domain %d) shut down (crash): not restarted, left shut "
             "down: it was restarted too often (10 times within the last "
             "3600 s" % i["id"], timeout=60),
   "the 11th crash within the hour: not restarted, the log says why",
   h.log_tail(n=10))
j = wait_for(lambda: (lambda x: x if x and x["state"] == "crashed" else None)(
    info("cl")), 30)
ok(j is not None and j["id"] == i["id"] and
   j["lifecycle"]["restarts"] == 5,
   "the VM is left crashed on its domain (5 restarts by this daemon)", j)
ok(len(times(uuid) or []) == 10, "and its record keeps the 10 times")
c.call("vm.destroy", {"vm": "cl"})

# ----------------------------------------- the wait grows, to the cap
b6 = create("b6")
b9 = create("b9")
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
now = time.time()
for v, recent in ((b6, 6), (b9, 9)):
    rec = h.record(v["uuid"])
    # Three older than the window: forgotten, not counted.
    rec["restart_times"] = [now - 4000 - k for k in (2, 1, 0)] + \
        [now - 60 * (recent - k) for k in range(recent)]
    with open(os.path.join(h.state, v["uuid"] + ".json"), "w") as f:
        json.dump(rec, f)
h.start_daemon(["--restart-backoff", "60"])
c = h.client()
for v, recent, wait in ((b6, 6, 32), (b9, 9, 60)):
    g.shutdown(v["id"], g.CRASH)
    ok(h.log_has("%s (domain %d) shut down (crash): restart in %d s (%d "
                 "earlier restarts within 3600 s" % (v["name"], v["id"],
                                                     wait, recent),
                 timeout=60),
       "%s, %d restarts in the window: waits %d s" %
       (v["name"], recent, wait), h.log_tail(n=10))
i = info("b6")
ok(i and i["state"] == "crashed" and i["id"] == b6["id"],
   "while it waits the VM is crashed, on its old domain", i)
r = c.call("vm.destroy", {"vm": "b6"})
ok(r and "result" in r and info("b6") is None,
   "a VM destroyed while it waits to restart is gone", r)
r = c.call("vm.destroy", {"vm": "b9"})
ok(r and "result" in r and c.result("vm.list") == {"vms": []},
   "nothing is left", c.result("vm.list"))
ok("result" in c.call("server.hello"), "the daemon serves at the end")
g.close()
c.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
