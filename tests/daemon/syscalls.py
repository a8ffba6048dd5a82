#!/usr/bin/env python3
"""syscalls.py - system calls a small VM's create and destroy do not need.

On a small VM (128 MiB, phantom memory) vmbuildd's own work is mostly
system calls, and on a 2-CPU VM each costs microseconds: they are what
bench/smallvms measures.  vmbuildd is traced (strace -D -f: it keeps
its pid) through PAIRS sequential create+destroy pairs, its log going
to a regular file (the launcher's vmbuildd.log), and checked:

- no poll() on stderr before a log line: a regular file always takes a
  write (pipes, sockets and terminals are still asked first);
- no getppid()/gettid() for a VM's uuid: one getrandom() makes it
  (libuuid's generator made six system calls);
- the completion pipe is read once per wake, not until EAGAIN.

Counts, not times: the load of the machine does not change them.  The
system calls per pair are printed (diagnostic).
"""
import collections
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vmbdtest import *  # noqa: E402,F401,F403

PAIRS = 20

strace = shutil.which("strace")
if strace is None:
    print("1..0 # SKIP no strace")
    sys.exit(0)
# A sanitizer's runtime makes system calls of its own, and LeakSanitizer
# refuses to run under ptrace (the daemon's exit fails): counts of the
# plain build only.
if SANITIZER:
    print("1..0 # SKIP system calls counted on the plain build only "
          "(VMBD_SANITIZER=%s)" % SANITIZER)
    sys.exit(0)

h = Host(["--nodes", "2", "--cpus-per-node", "2", "--mem-per-node", "2G",
          "--backing", "phantom"])
trace = os.path.join(h.dir, "vmbuildd.strace")
h.start_daemon(prefix=[strace, "-D", "-f", "-q", "-o", trace])
c = h.client()
h.wait_scrubbed(c)
mark = os.path.getsize(trace)
for i in range(PAIRS):
    r = c.call("vm.create", {"config": guest_cfg("sc%d" % i, 128),
                             "wait": True})
    if r is None or "result" not in r:
        bail("vm.create sc%d: %r" % (i, r))
    r = c.call("vm.destroy", {"vm": "sc%d" % i})
    if r is None or "result" not in r:
        bail("vm.destroy sc%d: %r" % (i, r))
c.close()


def tracers():
    """The strace processes writing trace (detached by -D: not ours to
    wait for), by their command lines."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if os.path.basename(argv[0]) == b"strace" and \
                trace.encode() in argv:
            found.append(int(d))
    return found


tracer = tracers()
ok(h.stop_daemon() == 0, "vmbuildd stops cleanly under strace")
# strace writes what it traced until the daemon is gone, then exits: on
# a loaded machine it trails the daemon by a long way (a run here saw
# no exit line 120 s after the daemon's).  Wait for strace itself.
def running(t):
    """pid t exists and has not exited (a zombie no reaper took counts
    as exited)."""
    try:
        with open("/proc/%d/stat" % t) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


if not wait_for(lambda: not any(running(t) for t in tracer), timeout=600):
    bail("strace (pid %s) still runs 600 s after vmbuildd stopped" % tracer)

# What the daemon did from the first create on (strace -f: "PID call(").
with open(trace, errors="replace") as f:
    f.seek(mark)
    lines = f.read().splitlines()
calls = collections.Counter()
for line in lines:
    m = re.match(r"\d+\s+(?:<\.\.\. )?(\w+)", line)
    if m and "resumed>" not in line:
        calls[m.group(1)] += 1
diag("system calls per create+destroy: %.1f (%s)" % (
    sum(calls.values()) / PAIRS, ", ".join(
        "%s %.1f" % (k, v / PAIRS) for k, v in calls.most_common(12))))

polls = [x for x in lines if re.search(r"\bpoll\(\[\{fd=2, ", x)]
ok(not polls, "no poll() on stderr (a regular file) before a log line",
   "%d of them, e.g. %s" % (len(polls), polls[:1]))
stir = calls["getppid"] + calls["gettid"]
ok(stir == 0 and calls["getrandom"] >= PAIRS,
   "a VM's uuid is one getrandom(), no libuuid stirring",
   "getppid+gettid %d, getrandom %d for %d creates" % (
       stir, calls["getrandom"], PAIRS))
# The completion pipe is the one drained with 64-byte reads.
empty = [x for x in lines
         if re.search(r"\bread(\(\d+,| resumed>) ?0x[0-9a-f]+, 64\) = "
                      r"-1 EAGAIN", x)]
ok(len(empty) <= PAIRS // 4,
   "the completion pipe is read once a wake, not again until EAGAIN",
   "%d reads found it empty in %d pairs" % (len(empty), PAIRS))
done()
