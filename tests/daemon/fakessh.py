#!/usr/bin/env python3
"""fakessh.py HOST COMMAND... - ssh for migrate.py, on this machine.

Runs COMMAND here (HOST is ignored) with its stdin and stdout on pipes,
and relays bytes both ways as ssh does: killing this process drops the
connection for both ends.  The relay reads the migration streams
(vmbuild-stream(5)) going each way, record by record, so that a test can
act at a given record, deterministically:

  FAKESSH_DROP=DIR:TYPE:N  exit, dropping the connection, instead of
                           passing on the N-th record of TYPE (a number)
                           going DIR ("down": to the receiver, "up": its
                           answers); N 0: right after the stream header
  FAKESSH_HOLD=DIR:TYPE:N:PATH  before passing it on, create PATH.held
                           and wait until PATH.go exists (or 300 s)
  FAKESSH_LOG=FILE         what it saw, a line per record
"""
import os
import struct
import subprocess
import sys
import threading
import time

HDR = 24
REC = 16


def spec(name, n):
    v = os.environ.get(name)
    if not v:
        return None
    parts = v.split(":", n - 1)
    return (parts[0], int(parts[1]), int(parts[2])) + tuple(parts[3:])


DROP = spec("FAKESSH_DROP", 3)
HOLD = spec("FAKESSH_HOLD", 4)
LOG = os.environ.get("FAKESSH_LOG")
lock = threading.Lock()


def log(msg):
    if LOG:
        with lock, open(LOG, "a") as f:
            f.write(msg + "\n")


def read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


def act(direction, rtype, count):
    """Drop or hold at this record, as the environment says."""
    if DROP and DROP[0] == direction and DROP[1] == rtype and \
            DROP[2] == count:
        log("drop %s type %d #%d" % (direction, rtype, count))
        os._exit(0)
    if HOLD and HOLD[0] == direction and HOLD[1] == rtype and \
            HOLD[2] == count:
        open(HOLD[3] + ".held", "w").close()
        log("hold %s type %d #%d" % (direction, rtype, count))
        end = time.monotonic() + 300
        while not os.path.exists(HOLD[3] + ".go") and \
                time.monotonic() < end:
            time.sleep(0.02)


def pump(src, dst, direction):
    counts = {}
    try:
        head = read_exact(src, HDR)
        if len(head) == HDR:
            act(direction, 0, 0)
        write_all(dst, head)
        while len(head) == HDR:
            h = read_exact(src, REC)
            if len(h) < REC:
                write_all(dst, h)
                break
            rtype, length = struct.unpack_from("<II", h)
            body = read_exact(src, length + (-length & 7))
            counts[rtype] = counts.get(rtype, 0) + 1
            log("%s type %d #%d len %d" % (direction, rtype,
                                           counts[rtype], length))
            act(direction, rtype, counts[rtype])
            write_all(dst, h + body)
            if len(body) < length + (-length & 7):
                break
        # Anything after the stream (nothing, normally) as it comes.
        while True:
            chunk = os.read(src, 65536)
            if not chunk:
                break
            write_all(dst, chunk)
    except OSError as e:
        log("%s: %s" % (direction, e))
    try:
        os.close(dst)
    except OSError:
        pass


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: fakessh.py HOST COMMAND...\n")
        return 255
    env = dict(os.environ)
    for k in ("FAKESSH_DROP", "FAKESSH_HOLD"):
        env.pop(k, None)
    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)
    down = threading.Thread(target=pump, args=(0, p.stdin.fileno(),
                                               "down"), daemon=True)
    down.start()
    pump(p.stdout.fileno(), 1, "up")
    rc = p.wait()
    log("exit %d" % rc)
    os._exit(rc & 0xff)


if __name__ == "__main__":
    sys.exit(main())
