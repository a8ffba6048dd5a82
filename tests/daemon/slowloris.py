#!/usr/bin/env python3
"""slowloris.py - slow HTTP clients cannot stall Prometheus (issue 17,
part 4).

As many clients as --max-metrics-connections, each sending its request
one byte at a time, used to hold the endpoint for ever: evhttp's timeout
starts again at each byte, and at the limit the listener stopped
accepting, so a scrape waited in the backlog.  Now a client must send
its whole request within --metrics-request-timeout seconds of connecting
(however it trickles), and at the limit a new client is taken and the
one whose request began first is shed.
"""
import os
import select
import socket
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

LIMIT, DEADLINE = 8, 3
HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4000


class Slow:
    """A client that sends one byte of its request at a time."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sent = 0
        self.closed = None      # how the daemon ended it

    def trickle(self):
        """One more byte, unless the daemon closed the connection: EOF,
        a reset, or a refused send (EPIPE) all say so."""
        if self.closed:
            return
        try:
            r, _, _ = select.select([self.sock], [], [], 0)
            if r and not self.sock.recv(4096):
                self.closed = "EOF"
                return
            self.sock.send(HEAD[self.sent % len(HEAD):][:1])
            self.sent += 1
        except (ConnectionResetError, BrokenPipeError) as e:
            self.closed = type(e).__name__


port = free_port()
h = Host(["--nodes", "1", "--cpus-per-node", "1", "--threads-per-core", "1",
          "--mem-per-node", "64M", "--backing", "phantom"],
         ["--metrics", "127.0.0.1:%d" % port, "--max-metrics-connections",
          str(LIMIT), "--metrics-request-timeout", str(DEADLINE)])
h.start_daemon()
slow = [Slow(port) for _ in range(LIMIT)]
stop = threading.Event()


def trickler():
    # Every slow client sends a byte each half second until the end:
    # more often than any per-byte timeout.
    while not stop.is_set():
        for s in slow:
            s.trickle()
        stop.wait(0.5)


t = threading.Thread(target=trickler, daemon=True)
t.start()
t0 = time.monotonic()
text, err = None, None
try:
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=30) as r:
        text = r.read().decode()
except OSError as e:
    err = repr(e)
ok(text is not None and "vmbuild_build_info" in text,
   "%d clients trickling their requests byte by byte: a new scrape is "
   "still served (in %.1f s)" % (LIMIT, time.monotonic() - t0), err)
ok(wait_for(lambda: all(s.closed for s in slow), 120) is not None,
   "every slow client is closed, though it kept sending (the whole request "
   "is due %d s after the connect)" % DEADLINE,
   [(s.sent, s.closed) for s in slow])
stop.set()
t.join(10)
ok(h.log_has("sent no whole request within %d s" % DEADLINE),
   "the log says so")
text = None
try:
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=30) as r:
        text = r.read().decode()
except OSError as e:
    err = repr(e)
m = [ln for ln in (text or "").splitlines()
     if ln.startswith("vmbuild_metrics_connections ")]
ok(m and int(m[0].split()[1]) <= LIMIT, "scrapes go on, the endpoint "
   "counting its clients (%s)" % m, err)
for s in slow:
    s.sock.close()
ok(h.stop_daemon() == 0, "SIGTERM: clean exit")
done()
