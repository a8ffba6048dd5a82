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
  FAKESSH_CUT_AFTER_DONE=1 pass the receiver's DONE on, then close the
                           answers' pipe before the receiver writes the
                           reply stream's end record (which then fails
                           with EPIPE there), as a sender that reads DONE
                           and goes at once may make it
  FAKESSH_LOG=FILE         what it saw, a line per record

A hold comes before a drop at the same record (hold, then drop).

FAKESSH_CUT_AFTER_DONE without a race: the answers' pipe holds one page;
once READY is read, the relay itself writes filler into it so that DONE
(24 bytes) fills the page to the last byte, and the end record's write
blocks (nothing merges into a full page, no page is free).  The relay
waits until the pipe holds the whole page, reads the filler and DONE but
its last byte (which the record's CRC gives), so the page is never
freed, passes DONE on and closes the pipe: the blocked write fails.
"""
import fcntl
import os
import struct
import subprocess
import sys
import termios
import threading
import time
import zlib

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
CUT = os.environ.get("FAKESSH_CUT_AFTER_DONE") == "1"
PAGE = 4096
REC_STATUS, STATUS_READY, STATUS_DONE = 4, 1, 2
DONE_LEN = REC + 8      # a DONE record: its header, verdict and errno
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
    """Hold, then drop at this record, as the environment says."""
    if HOLD and HOLD[0] == direction and HOLD[1] == rtype and \
            HOLD[2] == count:
        open(HOLD[3] + ".held", "w").close()
        log("hold %s type %d #%d" % (direction, rtype, count))
        end = time.monotonic() + 300
        while not os.path.exists(HOLD[3] + ".go") and \
                time.monotonic() < end:
            time.sleep(0.02)
    if DROP and DROP[0] == direction and DROP[1] == rtype and \
            DROP[2] == count:
        log("drop %s type %d #%d" % (direction, rtype, count))
        os._exit(0)


def pipe_bytes(fd):
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return struct.unpack("<i", buf)[0]


def cut_after_done(src, filler_fd, dst):
    """The answers (up) for FAKESSH_CUT_AFTER_DONE, see the top."""
    write_all(dst, read_exact(src, HDR))
    h = read_exact(src, REC)
    rtype, length = struct.unpack_from("<II", h)
    body = read_exact(src, length + (-length & 7))
    verdict = struct.unpack_from("<I", body)[0] if len(body) >= 4 else 0
    log("up type %d verdict %d len %d" % (rtype, verdict, length))
    if rtype != REC_STATUS or verdict != STATUS_READY:
        write_all(dst, h + body)
        log("cut: the first answer is not READY")
        os._exit(0)
    # Before READY goes: DONE cannot come before the sender has it.
    write_all(filler_fd, b"\0" * (PAGE - DONE_LEN))
    write_all(dst, h + body)
    end = time.monotonic() + 300
    while pipe_bytes(src) < PAGE and time.monotonic() < end:
        time.sleep(0.01)
    if pipe_bytes(src) < PAGE:
        log("cut: no DONE within 300 s")
        os._exit(0)
    read_exact(src, PAGE - DONE_LEN)
    h = read_exact(src, REC)
    rtype, length, crc = struct.unpack_from("<III", h)
    body = read_exact(src, 7)
    verdict = struct.unpack_from("<I", body)[0]
    if rtype != REC_STATUS or length != 8 or verdict != STATUS_DONE:
        log("cut: type %d verdict %d len %d where DONE was due" %
            (rtype, verdict, length))
        os._exit(0)
    zero = h[:8] + b"\0" * 8
    last = [b for b in range(256)
            if zlib.crc32(zero + body + bytes([b])) == crc]
    write_all(dst, h + body + bytes(last[:1]))
    os.close(src)
    os.close(filler_fd)
    log("cut up after DONE")


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
    for k in ("FAKESSH_DROP", "FAKESSH_HOLD", "FAKESSH_CUT_AFTER_DONE"):
        env.pop(k, None)
    up_r, up_w = os.pipe()
    if CUT:
        fcntl.fcntl(up_r, fcntl.F_SETPIPE_SZ, PAGE)
    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE,
                         stdout=up_w, env=env)
    down = threading.Thread(target=pump, args=(0, p.stdin.fileno(),
                                               "down"), daemon=True)
    down.start()
    if CUT:
        cut_after_done(up_r, up_w, 1)
    else:
        os.close(up_w)
        pump(up_r, 1, "up")
    rc = p.wait()
    log("exit %d" % rc)
    os._exit(rc & 0xff)


if __name__ == "__main__":
    sys.exit(main())
