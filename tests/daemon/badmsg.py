#!/usr/bin/env python3
"""badmsg.py - what `vmctl events` does with a message from the daemon
that is not JSON, against a fake daemon on a private socket.

In the Xen lab a `vmctl --json events` subscriber once died on a
malformed message, cause unknown: the suspect was a non-finite double,
for which yajl writes nothing (tests/daemon/test_json.c shows what that
makes of a map: `{"done":1,"rate"}` when the value was the map's last).
vmctl must say what it refused (yajl's reason and the line's start) and
exit non-zero, after printing every good message before it; the daemon
now writes null there, which vmctl takes as any other value.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import BIN, ok, done, diag  # noqa: E402

VMCTL = os.path.join(BIN, "vmctl")
GOOD = {"jsonrpc": "2.0", "method": "task.progress",
        "params": {"task": 1, "progress": {"done": 1, "total": 2,
                                           "rate_bytes_per_second": None}}}
# What yajl made of {"done":1,"rate":NaN} before the daemon wrote null.
BAD = b'{"jsonrpc":"2.0","method":"task.progress","params":{"done":1,"rate"}}'


def fake_daemon(srv, lines):
    """Answer the subscribe, send `lines`, keep the connection open."""
    conn, _ = srv.accept()
    f = conn.makefile("rb")
    req = json.loads(f.readline())
    reply = {"jsonrpc": "2.0", "id": req["id"], "result": {}}
    conn.sendall(json.dumps(reply).encode() + b"\n")
    for line in lines:
        conn.sendall(line + b"\n")
    # vmctl's exit ends the test; the socket closes with it.
    conn.recv(1)
    conn.close()


def run(lines):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "control.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        t = threading.Thread(target=fake_daemon, args=(srv, lines),
                             daemon=True)
        t.start()
        # Bounded: vmctl must stop at the bad line, not wait for more.
        p = subprocess.run([VMCTL, "--socket", path, "--json", "events"],
                           capture_output=True, timeout=60)
        srv.close()
        return p


p = run([json.dumps(GOOD).encode(), BAD])
out = p.stdout.decode(errors="replace")
err = p.stderr.decode(errors="replace")
diag("vmctl: rc=%d stderr: %s" % (p.returncode, err.strip()))
ok(p.returncode != 0, "vmctl events exits non-zero on a message that is "
   "not JSON")
ok('"rate_bytes_per_second":null' in out.replace(" ", ""),
   "the good message before it, with null for the rate, was printed")
ok("not JSON" in err and "colon" in err,
   "vmctl says the message is not JSON, with yajl's reason")
ok("%d bytes" % len(BAD) in err and '{"jsonrpc":"2.0","method":'
   '"task.progress","params":{"done":1,"rate"}}' in err,
   "vmctl shows the message's length and its start")
ok("malformed reply" in err, "and which daemon sent it")
done()
