#!/usr/bin/env python3
"""protocol.py - vmbuildd's control protocol over the real socket.

Starts hvsim (2 nodes, real memory) and vmbuildd in a fresh temporary
directory and checks every method, the JSON-RPC error paths (malformed
JSON, wrong types, unknown methods, missing params), the limits
(oversized requests, too many connections), a client that sends half a
request and vanishes, one that disconnects in the middle of vm.create,
and peer-credential checks; after each, the daemon must keep serving.
"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

MAX_REQ = 65536
MAX_CONN = 12

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "512M",
          "--backing", "real"],
         ["--max-request", str(MAX_REQ), "--max-connections", str(MAX_CONN),
          "--max-tasks", "4", "--request-timeout", "2"])
h.start_daemon()
ok(any("READY=1" in n for n in h.notes), "vmbuildd sends READY=1")
ok(any("STATUS=" in n for n in h.notes), "vmbuildd sends STATUS=",
   h.notes)
mode = stat.S_IMODE(os.stat(h.sock).st_mode)
ok(mode == 0o660, "control socket has mode 0660 (%o)" % mode)

c = h.client()
ev = h.client()


def alive(what):
    """The daemon still answers, on a fresh connection."""
    try:
        x = h.client(timeout=30)
        r = x.call("server.hello")
        x.close()
        good = r is not None and r.get("result", {}).get("server") == \
            "vmbuildd"
    except OSError as e:
        good, r = False, e
    ok(good, "daemon still serves after " + what, r)


def expect_error(r, code, what, needle=None):
    good = err_code(r) == code
    if good and needle is not None:
        good = needle in r["error"].get("message", "")
    ok(good, "%s -> %d%s" % (what, code,
                             " (%s)" % needle if needle else ""), r)


# ---------------------------------------------------------------- methods
hello = c.result("server.hello")
methods = ["server.hello", "host.info", "host.scrub", "host.counters",
           "vm.create", "vm.list", "vm.info", "vm.destroy", "vm.pause",
           "vm.unpause", "vm.shutdown", "vm.reboot", "vm.console",
           "task.list", "task.get", "task.cancel", "events.subscribe",
           "vm.disk_attach", "vm.disk_detach", "vm.net_attach",
           "vm.net_detach",
           # A running VM's memory and vCPUs (resize.py).
           "vm.mem_set", "vm.mem_max", "vm.vcpu_set", "vm.vcpu_pin",
           "vm.vcpu_list",
           # Everyday settings (everyday.py), the dry run (check.sh).
           "vm.sched_get", "vm.sched_set", "vm.rename", "vm.uptime",
           "host.dmesg", "config.check",
           # A guest written to a stream and read back (save.py).
           "vm.save", "vm.restore",
           # A guest moved to another host (migrate.py).
           "vm.migrate_send"]
ok(sorted(hello["methods"]) == sorted(methods),
   "server.hello lists every method", hello["methods"])
ok(hello["protocol"] == 1 and hello["backend"] == "sim" and
   hello["peer"]["may_write"] is True,
   "server.hello: protocol 1, backend sim, root may write", hello)

hi = c.result("host.info")
ok(hi["nr_nodes"] == 2 and len(hi["nodes"]) == 2 and
   all(n["total_bytes"] == 512 * MIB for n in hi["nodes"]),
   "host.info: 2 nodes of 512 MiB", hi)

sc = h.wait_scrubbed(c)
ok(sc is not None, "host.scrub: boot scrub ends")
keys = {"node", "total_bytes", "free_bytes", "dirty_bytes",
        "scrubbed_bytes_total", "scrub_rate_bytes_per_second",
        "boot_scrub_done"}
ok(sc is not None and len(sc["nodes"]) == 2 and
   all(keys <= set(n) for n in sc["nodes"]),
   "host.scrub: per-node shape of DESIGN.md", sc)
free0 = sum(n["free_bytes"] for n in sc["nodes"]) if sc else None

cnt = c.result("host.counters")
ok(set(cnt) == {"tlb_flushes", "unshadow", "populate", "scrub"} and
   {"issued", "filtered", "filter_evaluations"} <= set(cnt["tlb_flushes"])
   and {"write_flood", "early", "other"} <= set(cnt["unshadow"]),
   "host.counters: groups and keys of DESIGN.md", cnt)

ok(c.result("vm.list") == {"vms": []}, "vm.list: empty at start")
ok(c.result("task.list") == {"tasks": []}, "task.list: empty at start")

sub = ev.result("events.subscribe")
ok(sorted(sub["events"]) == sorted(["task.progress", "task.done",
                                    "vm.state", "scrub.progress",
                                    "vm.changed"]),
   "events.subscribe: all events by default", sub)

# An empty list unsubscribes; a connection that did so and left must not
# be notified (a freed subscriber would crash the daemon).
u = h.client()
ok(u.result("events.subscribe", {"events": ["vm.state"]})["events"] ==
   ["vm.state"], "events.subscribe to one event")
ok(u.result("events.subscribe", {"events": []})["events"] == [],
   "events.subscribe with [] unsubscribes")
u.close()

# vm.create without waiting: a task, then task.done on the subscriber.
r = c.result("vm.create", {"config": guest_cfg("p1", 96), "wait": False})
ok(isinstance(r.get("task"), int) and r.get("vm") == "p1",
   "vm.create wait=false returns a task", r)
t1 = r.get("task")
done_ev = ev.event(lambda m: m["method"] == "task.done" and
                   m["params"]["id"] == t1)
ok(done_ev is not None and done_ev["params"]["state"] == "done",
   "task.done event for the build", done_ev)
ok(ev.event(lambda m: m["method"] == "vm.state" and
            m["params"]["vm"] == "p1", timeout=5) is not None,
   "vm.state event for the new VM")
# A quick build may send no task.progress at all; those sent must make
# sense: within the build's bytes, in one of its phases.
progs = [m["params"]["progress"] for m in ev.events
         if m["method"] == "task.progress" and m["params"]["task"] == t1]
ok(all(0 <= p["done"] <= p["total"] == 96 * MIB and p["unit"] == "bytes" and
       p["phase"] in ("place", "create", "claim", "populate", "load", "boot",
                      "done", "undo") for p in progs),
   "task.progress events of the build (%d) are within its bytes and "
   "phases" % len(progs), progs)
tg = c.result("task.get", {"task": t1})
ok(tg["state"] == "done" and tg["kind"] == "vm.create" and
   tg["progress"]["unit"] == "bytes" and
   tg["progress"]["done"] == tg["progress"]["total"] == 96 * MIB,
   "task.get: done, progress 96 MiB of 96 MiB", tg)
ok(any(t["id"] == t1 for t in c.result("task.list")["tasks"]),
   "task.list shows the task")

# vm.create waiting, relative kernel path resolved against config_path.
rel = guest_cfg("p2", 64).replace(KERNEL, os.path.basename(KERNEL))
r = c.call("vm.create", {"config": rel, "wait": True,
                         "config_path": os.path.join(os.path.dirname(KERNEL),
                                                     "p2.cfg")})
ok("result" in r and r["result"]["vm"]["name"] == "p2" and
   r["result"]["vm"]["state"] in ("running", "blocked"),
   "vm.create wait=true with a relative kernel path and config_path", r)

# vm.create from a JSON guest description.
r = c.call("vm.create", {"guest": {"name": "p3", "type": "pvh",
                                   "memory": 32, "vcpus": 2,
                                   "kernel": KERNEL}, "wait": True})
ok("result" in r and r["result"]["vm"]["vcpus"] == 2,
   "vm.create from a JSON guest description", r)

# Lists in a JSON guest (vnuma) and a guest left paused.
r = c.call("vm.create", {"guest": {"name": "p4", "type": "pvh",
                                   "memory": 64, "vcpus": 2,
                                   "kernel": KERNEL,
                                   "vnuma": [["pnode=0", "size=32",
                                              "vcpus=0"],
                                             ["pnode=1", "size=32",
                                              "vcpus=1"]]},
                         "paused": True, "wait": True})
ok("result" in r and sorted(r["result"]["vm"]["nodes"]) == [0, 1] and
   r["result"]["vm"]["state"] == "paused",
   "vm.create: JSON vnuma over both nodes, left paused", r)
r = c.call("vm.destroy", {"vm": "p4"})
ok("result" in r, "vm.destroy p4", r)

# max_event_channels is kept in the description vm.info shows (hvsim has
# no event channels: there it is only recorded); 1023 when not given.
r = c.call("vm.create", {"guest": {"name": "p5", "memory": 32,
                                   "kernel": KERNEL,
                                   "max_event_channels": 2048},
                         "wait": True})
cfg5 = c.result("vm.info", {"vm": "p5"})["config"] if "result" in r else {}
cfg3 = c.result("vm.info", {"vm": "p3"})["config"]
ok(cfg5.get("max_event_channels") == 2048 and
   cfg3.get("max_event_channels") == 1023,
   "vm.info: config.max_event_channels as given, else 1023", r)
r = c.call("vm.destroy", {"vm": "p5"})
ok("result" in r, "vm.destroy p5", r)

vl = c.result("vm.list")
names = sorted(v["name"] for v in vl["vms"])
ok(names == ["p1", "p2", "p3"], "vm.list: the three VMs", vl)
ok(all(set(v) == {"id", "name", "state", "type", "memory_bytes", "vcpus",
                  "nodes", "migration"}
       for v in vl["vms"]), "vm.list: exactly the keys of DESIGN.md", vl)
p1 = [v for v in vl["vms"] if v["name"] == "p1"][0]
ok(p1["memory_bytes"] == 96 * MIB and p1["nodes"],
   "vm.list: memory and nodes of p1", p1)

info = c.result("vm.info", {"vm": "p1"})
ok(info["name"] == "p1" and isinstance(info["placement_reason"], str) and
   info["build"]["phases"]["populate"] >= 0 and info["uuid"],
   "vm.info by name: placement reason and build phases", info)
# When each phase ran: the images read on a thread of their own, done
# before load began (load waits for them); every span within the
# build's total.  When that thread got to run is the machine's
# business: under load it started after place had ended.
b = info["build"]
tl = b["timeline"]
ok(set(tl) == set(b["phases"]) | {"images"} and
   tl["images"]["end_seconds"] <= tl["load"]["start_seconds"] and
   all(0 <= s["start_seconds"] <= s["end_seconds"] <= b["total_seconds"]
       for s in tl.values()) and
   b["images_wait_seconds"] >= 0 and b["devices_wait_seconds"] >= 0,
   "vm.info: the build's timeline, images beside the first phases", b)
# A plain ELF kernel is read, never kept unpacked (only bzImages are).
ok(b.get("kernel_cached") is False,
   "vm.info: kernel_cached false for an ELF kernel", b)
ok(info["config"]["memory_bytes"] == 96 * MIB and
   info["config"]["kernel"] == KERNEL and info["config"]["type"] == "pvh",
   "vm.info: the guest as configured", info.get("config"))
# One mapping of the description to JSON: vm.info's config is what
# the daemon's guestjson.c writes for the same xl.cfg (vmb-config-check),
# but for the uuid that the daemon chose.
cfg_file = os.path.join(h.dir, "p1.cfg")
with open(cfg_file, "w") as f:
    f.write(guest_cfg("p1", 96))
p = subprocess.run([os.path.join(BIN, "vmb-config-check"), cfg_file],
                   capture_output=True, text=True)
want = json.loads(p.stdout) if p.returncode == 0 else {}
got = dict(info["config"])
ok(want.pop("uuid", 0) is None and got.pop("uuid", None) == info["uuid"] and
   got == want, "vm.info: config is libvmbuild's JSON of the description",
   "%s\n%s" % (got, want))
info2 = c.result("vm.info", {"vm": p1["id"]})
ok(info2["name"] == "p1", "vm.info by domain id")

r = c.call("vm.pause", {"vm": "p1"})
ok("result" in r and r["result"]["state"] == "paused", "vm.pause", r)
expect_error(c.call("vm.pause", {"vm": "p1"}), E_BAD_STATE,
             "vm.pause of a paused VM")
r = c.call("vm.unpause", {"vm": "p1"})
ok("result" in r and r["result"]["state"] != "paused", "vm.unpause", r)
expect_error(c.call("vm.unpause", {"vm": "p1"}), E_BAD_STATE,
             "vm.unpause of a running VM")

# Application errors.
expect_error(c.call("vm.create", {"config": guest_cfg("p1")}), E_EXISTS,
             "vm.create of an existing name")
r = c.call("vm.create", {"config": guest_cfg("bad") + "bogus_key = 1\n",
                         "config_path": "/etc/bad.cfg"})
expect_error(r, E_CONFIG, "vm.create with an unknown key")
errs = (r.get("error", {}).get("data") or {}).get("errors") or []
ok(any("/etc/bad.cfg:6" in e and "bogus_key" in e for e in errs),
   "config errors name file:line and key", r)
expect_error(c.call("vm.create", {"config": guest_cfg("huge", 4096),
                                  "wait": True}),
             E_NO_MEMORY, "vm.create larger than the host")
expect_error(c.call("vm.info", {"vm": "nope"}), E_NO_SUCH_VM,
             "vm.info of an unknown VM")
expect_error(c.call("vm.destroy", {"vm": 4000}), E_NO_SUCH_VM,
             "vm.destroy of an unknown domain id")
expect_error(c.call("task.get", {"task": 99999}), E_NO_SUCH_TASK,
             "task.get of an unknown task")
expect_error(c.call("task.cancel", {"task": t1}), E_TASK_FINISHED,
             "task.cancel of a finished task")

# task.cancel of a running build: the create and the cancel leave in one
# write, so the cancel reaches the loop while the build has just started.
tnext = max(t["id"] for t in c.result("task.list")["tasks"]) + 1
big = {"jsonrpc": "2.0", "id": "mk", "method": "vm.create",
       "params": {"config": guest_cfg("cx", 700), "wait": True}}
cancel = {"jsonrpc": "2.0", "id": "cn", "method": "task.cancel",
          "params": {"task": tnext}}
c.send_raw((json.dumps(big) + "\n" + json.dumps(cancel) + "\n").encode())
rc_ = c.reply("cn")
rm = c.reply("mk")
if err_code(rc_) == E_TASK_FINISHED:
    diag("the build ended before the cancel arrived")
    ok("result" in rm, "vm.create that beat its cancel succeeded", rm)
    c.call("vm.destroy", {"vm": "cx"})
elif "result" in rm:
    # Asked while the build ran, the cancel came after its last point of
    # no return (a build of 1 ms here; a loaded machine's loop may read
    # the cancel late): the build stands, and says so consistently.
    diag("the cancel was asked after the build's last cancel point")
    ok("result" in rc_ and rc_["result"]["cancel_requested"],
       "task.cancel of a running build", rc_)
    ok(c.result("task.get", {"task": tnext})["state"] == "done",
       "task.get: a build the cancel came too late for is done", rm)
    ok(any(v["name"] == "cx" for v in c.result("vm.list")["vms"]),
       "a build the cancel came too late for is listed")
    c.call("vm.destroy", {"vm": "cx"})
else:
    ok("result" in rc_ and rc_["result"]["cancel_requested"],
       "task.cancel of a running build", rc_)
    expect_error(rm, E_CANCELLED, "the waiting vm.create reports the cancel")
    ok(c.result("task.get", {"task": tnext})["state"] == "cancelled",
       "task.get: state cancelled")
ok(all(v["name"] != "cx" for v in c.result("vm.list")["vms"]),
   "a cancelled build leaves no VM")

# ------------------------------------------------------ protocol errors
x = h.client()


def raw(data, what, code, needle=None):
    x.send_raw(data if isinstance(data, bytes) else data.encode())
    r = x.read_msg()
    expect_error(r, code, what, needle)
    return r


r = raw('{"jsonrpc":"2.0","id":1,\n', "malformed JSON", RPC_PARSE_ERROR)
ok(r is not None and r.get("id") is None, "parse error reply has id null")
raw("[1,2]\n", "a batch (array)", RPC_INVALID_REQUEST, "batch")
raw('"hello"\n', "a bare string", RPC_INVALID_REQUEST)
raw('{"jsonrpc":"2.0","id":2}\n', "no method", RPC_INVALID_REQUEST,
    "method is missing")
raw('{"jsonrpc":"2.0","id":3,"method":42}\n', "method not a string",
    RPC_INVALID_REQUEST, "method must be a string")
raw('{"jsonrpc":"1.0","id":4,"method":"vm.list"}\n', "jsonrpc 1.0",
    RPC_INVALID_REQUEST, "jsonrpc")
raw('{"jsonrpc":"2.0","id":{"a":1},"method":"vm.list"}\n', "id an object",
    RPC_INVALID_REQUEST, "id must be")
raw('{"jsonrpc":"2.0","id":5,"method":"vm.frobnicate"}\n', "unknown method",
    RPC_METHOD_NOT_FOUND, "vm.frobnicate")
raw('{"jsonrpc":"2.0","id":6,"method":"vm.list","params":[1]}\n',
    "params an array", RPC_INVALID_PARAMS, "params must be an object")
raw('{"jsonrpc":"2.0","id":7,"method":"vm.info"}\n', "vm.info without vm",
    RPC_INVALID_PARAMS, "params.vm")
raw('{"jsonrpc":"2.0","id":8,"method":"vm.info","params":{"vm":true}}\n',
    "vm.info with vm true", RPC_INVALID_PARAMS, "params.vm must be")
raw('{"jsonrpc":"2.0","id":9,"method":"vm.create","params":{"config":5}}\n',
    "vm.create with config 5", RPC_INVALID_PARAMS, "params.config must be a "
    "string")
raw(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "vm.create",
                "params": {"config": guest_cfg("w"), "wait": "yes"}}) + "\n",
    "vm.create with wait \"yes\"", RPC_INVALID_PARAMS, "params.wait")
raw(json.dumps({"jsonrpc": "2.0", "id": 20, "method": "vm.create",
                "params": {"config": guest_cfg("rel"),
                           "config_path": "cfg/rel.cfg"}}) + "\n",
    "vm.create with a relative config_path", RPC_INVALID_PARAMS, "absolute")
raw('{"jsonrpc":"2.0","id":11,"method":"vm.create","params":{}}\n',
    "vm.create without config or guest", RPC_INVALID_PARAMS, "params.config")
raw('{"jsonrpc":"2.0","id":12,"method":"task.get","params":{"task":"x"}}\n',
    "task.get with task \"x\"", RPC_INVALID_PARAMS, "params.task")
raw('{"jsonrpc":"2.0","id":13,"method":"task.get","params":{"task":-1}}\n',
    "task.get with task -1", RPC_INVALID_PARAMS, "params.task")
raw('{"jsonrpc":"2.0","id":14,"method":"events.subscribe",'
    '"params":{"events":["nope"]}}\n', "subscribe to an unknown event",
    RPC_INVALID_PARAMS, "nope")
raw(json.dumps({"jsonrpc": "2.0", "id": 15, "method": "vm.create",
                "params": {"guest": {"name": "g", "memory": 1.5}}}) + "\n",
    "guest memory 1.5", RPC_INVALID_PARAMS, "params.guest.memory")
raw("[" * 100 + "]" * 100 + "\n", "nesting 100 deep", RPC_PARSE_ERROR,
    "nesting")
raw(b'{"jsonrpc":"2.0","id":16,"method":"vm.\xff"}\n', "invalid UTF-8",
    RPC_PARSE_ERROR)
raw(b'{"jsonrpc":"2.0","id":17,\x00"method":"vm.list"}\n', "a NUL byte",
    RPC_PARSE_ERROR)
# A notification (no id) gets no reply: the next reply is for id 18.
x.send_raw(b'{"jsonrpc":"2.0","method":"vm.list"}\n'
           b'{"jsonrpc":"2.0","id":"s-18","method":"vm.list"}\n')
r = x.read_msg()
ok(r is not None and r.get("id") == "s-18",
   "a notification gets no reply; string ids are echoed", r)
x.send_raw(b'\r\n  \n{"jsonrpc":"2.0","id":19.5,"method":"task.list"}\r\n')
r = x.read_msg()
ok(r is not None and r.get("id") == 19.5 and "result" in r,
   "blank lines are skipped, CRLF accepted, number ids echoed", r)
# Pipelined requests beyond the in-flight limit (64) get E_BUSY; every
# request gets exactly one reply.
x.send_raw(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"host.info"}\n' % i
                    for i in range(1000, 1200)))
replies = [x.read_msg() for _ in range(200)]
ids = sorted(r["id"] for r in replies if r is not None)
busy = [r for r in replies if err_code(r) == E_BUSY]
ok(ids == list(range(1000, 1200)) and
   all("result" in r or err_code(r) == E_BUSY for r in replies) and busy,
   "200 pipelined requests: one reply each, E_BUSY past 64 in flight "
   "(%d busy)" % len(busy))
# Mutated requests (fixed seed): whatever they become, the daemon answers
# the request that follows them.
import random
rnd = random.Random(1234)
base = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "vm.info",
                   "params": {"vm": "p1", "wait": True, "task": 3}})
junk = []
for _ in range(500):
    b = bytearray(base.encode())
    for _ in range(rnd.randint(1, 6)):
        op = rnd.randint(0, 2)
        i = rnd.randrange(len(b))
        if op == 0:
            b[i] = rnd.randrange(1, 256)
        elif op == 1:
            del b[i]
        else:
            b.insert(i, rnd.choice(b'{}[]",:0\\ntf-'))
    junk.append(bytes(b).replace(b"\n", b" "))
x.send_raw(b"\n".join(junk) + b'\n{"jsonrpc":"2.0","id":"end",'
           b'"method":"server.hello"}\n')
last = None
for _ in range(1000):
    m = x.read_msg()
    if m is None or m.get("id") == "end":
        last = m
        break
ok(last is not None and "result" in last,
   "500 mutated requests, then a good one is answered", last)
x.close()
alive("malformed requests")

# ---------------------------------------------------------------- limits
y = h.client()
y.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"vm.list","params":{"x":"' +
           b"a" * (MAX_REQ + 10))
r = y.read_msg()
expect_error(r, E_REQUEST_TOO_LARGE, "request over --max-request")
ok(y.read_line() == b"", "the connection is closed after it")
y.close()
y = h.client()
pad = b"a" * (MAX_REQ - 100)
y.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"vm.list","params":{"x":"' +
           pad + b'"}}\n')
r = y.read_msg()
ok(r is not None and "result" in r, "a request just under the limit works")
y.close()
alive("an oversized request")

# Half a request, then gone: the connection must be cleaned up (a slot
# freed), checked below by filling every slot.
for _ in range(3):
    z = h.client()
    z.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"vm.li')
    z.close()
alive("clients that sent half a request and disconnected")

# Half a request, then silence: after --request-timeout (2 s here) the
# daemon answers -32600 and closes, so the slot is not held for ever.
z = h.client()
z.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"vm.li')
t0 = time.monotonic()
r = z.read_msg()
expect_error(r, -32600, "a stalled partial request times out")
ok(z.read_line() == b"", "the stalled connection is closed after it")
z.close()
q = h.client()
q.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"vm.list"}\n')
r = q.read_msg()
ok(r is not None and "result" in r, "a complete request is answered")
time.sleep(3)
q.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"server.hello"}\n')
r = q.read_msg()
ok(r is not None and r.get("id") == 2 and "result" in r,
   "an idle connection still works after the timeout period")
q.close()
alive("a stalled partial request")
ok(h.log_has("unfinished request"),
   "the daemon logs and drops the unfinished request")

# Too many connections: c and ev are open; fill the rest, one more is
# refused with E_BUSY, then a slot freed is usable again.
extra = []
for _ in range(MAX_CONN - 2):
    e = h.client()
    r = e.call("vm.list")
    extra.append(e)
ok(r is not None and "result" in r,
   "%d connections (the limit) are served" % MAX_CONN)
over = h.client()
r = over.read_msg()
expect_error(r, E_BUSY, "connection over --max-connections")
ok(over.read_line() == b"", "the refused connection is closed")
over.close()
extra.pop().close()
time.sleep(0.2)
alive("refusing a connection over the limit")
for e in extra:
    e.close()

# A client that disconnects in the middle of vm.create: the build goes on.
d = h.client()
d.send_raw((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "vm.create",
                        "params": {"config": guest_cfg("orphan", 256),
                                   "wait": True}}) + "\n").encode())
d.close()
orphan = None
for _ in range(600):
    vms = {v["name"]: v for v in c.result("vm.list")["vms"]}
    if "orphan" in vms and vms["orphan"]["state"] != "building":
        orphan = vms["orphan"]
        break
    time.sleep(0.05)
ok(orphan is not None and orphan["memory_bytes"] == 256 * MIB,
   "a build whose client disconnected completes and is listed", orphan)
alive("a client that disconnected mid-create")

# ------------------------------------------------------ peer credentials
# Let uid 65534 reach the socket, then check it may read but not write.
os.chmod(h.dir, 0o711)
os.chmod(h.sock, 0o666)
rfd, wfd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(rfd)
    out = {}
    try:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        u = Client(h.sock, 30)
        out["list"] = u.call("vm.list")
        out["destroy"] = u.call("vm.destroy", {"vm": "p1"})
        out["cancel"] = u.call("task.cancel", {"task": 1})
        for m in ("vm.shutdown", "vm.reboot", "vm.console"):
            out[m] = u.call(m, {"vm": "p1", "force": True})
    except Exception as e:  # report, do not crash the child
        out["exc"] = repr(e)
    os.write(wfd, json.dumps(out).encode())
    os._exit(0)
os.close(wfd)
data = b""
while True:
    b = os.read(rfd, 65536)
    if not b:
        break
    data += b
os.waitpid(pid, 0)
os.chmod(h.sock, 0o660)
out = json.loads(data or b"{}")
ok("result" in (out.get("list") or {}), "uid 65534 may call vm.list", out)
expect_error(out.get("destroy"), E_PERMISSION, "vm.destroy by uid 65534")
expect_error(out.get("cancel"), E_PERMISSION, "task.cancel by uid 65534")
for m in ("vm.shutdown", "vm.reboot", "vm.console"):
    expect_error(out.get(m), E_PERMISSION, m + " by uid 65534")
ok(any(v["name"] == "p1" for v in c.result("vm.list")["vms"]),
   "p1 survived the refused destroy")

# ------------------------------------------- domains made by someone else
# A second daemon on the same hvsim plays "another toolstack": its VM
# appears in the first daemon's list as foreign, and disappears with it.
other_sock = os.path.join(h.dir, "other.sock")
other_log = open(os.path.join(h.dir, "other.log"), "ab")
other = subprocess.Popen([VMBUILDD, "--foreground", "--metrics", "none",
                          "--hypervisor", "sim:" + h.hv_sock, "--socket",
                          other_sock, "--state-dir",
                          os.path.join(h.dir, "state-other"),
                          "--image-dir", os.path.dirname(KERNEL)],
                         stdout=other_log, stderr=other_log)
for _ in range(200):
    if os.path.exists(other_sock):
        break
    time.sleep(0.05)
time.sleep(0.2)
o = Client(other_sock)
r = o.call("vm.create", {"config": guest_cfg("ext", 16), "wait": True})
ok("result" in r, "another toolstack builds \"ext\"", r)
ext = None
for _ in range(100):
    ext = {v["name"]: v for v in c.result("vm.list")["vms"]}.get("ext")
    if ext is not None:
        break
    time.sleep(0.1)
ok(ext is not None, "the foreign domain appears in vm.list", ext)
ok(ext is not None and
   c.result("vm.info", {"vm": "ext"})["origin"] == "foreign",
   "vm.info says it is foreign")
ok(ev.event(lambda m: m["method"] == "vm.state" and
            m["params"]["vm"] == "ext", timeout=10) is not None,
   "vm.state event for the foreign domain")
o.result("vm.destroy", {"vm": "ext"})
gone = False
for _ in range(100):
    if "ext" not in {v["name"] for v in c.result("vm.list")["vms"]}:
        gone = True
        break
    time.sleep(0.1)
ok(gone, "and leaves vm.list when it is destroyed elsewhere")
o.close()
other.terminate()
other.wait(30)

# ------------------------------------------------- destroy and clean up
for name in ("p1", "p2", "p3", "orphan"):
    r = c.call("vm.destroy", {"vm": name})
    ok("result" in r and r["result"]["state"] == "destroyed",
       "vm.destroy " + name, r)
ok(c.result("vm.list") == {"vms": []}, "vm.list: empty after destroy")
ok(ev.event(lambda m: m["method"] == "vm.state" and
            m["params"]["state"] == "destroyed", timeout=10) is not None,
   "vm.state event for a destroy")
sc = h.wait_scrubbed(c)
free1 = sum(n["free_bytes"] for n in sc["nodes"]) if sc else None
ok(free1 == free0, "after destroy and scrub, free memory equals the start "
   "(%s vs %s)" % (free1, free0))
ok(ev.event(lambda m: m["method"] == "scrub.progress", timeout=10)
   is not None, "scrub.progress events while memory is dirty")
c.close()
ev.close()

h.d.send_signal(signal.SIGHUP)
alive("SIGHUP")
ok(h.log_has("SIGHUP"),
   "SIGHUP is logged")
rc = h.stop_daemon()
ok(rc == 0, "SIGTERM: clean exit (%s)" % rc)
ok(not os.path.exists(h.sock), "the socket is removed at exit")
done()
