#!/usr/bin/python3 -S
"""hvproxy.py - a relay between vmbuildd and hvsim that freezes mid-build.

    hvproxy.py LISTEN_PATH HVSIM_PATH SIGNAL_FILE

Relays hvsim's framing (hypervisor/include/vmbuild/hvabi.h: a 24-byte
header {magic u32, version u16, op u16, len u32, status i32, seq u64},
then `len` bytes; descriptors passed with a reply are relayed too).
After the reply to the first HV_OP_POPULATE call has gone back to the
daemon, it stops relaying anything and creates SIGNAL_FILE: the domain
then exists with part of its memory populated, and the test can kill
the daemon in the middle of a build at a known point, however fast
populating is on this machine.
"""
import array
import os
import socket
import struct
import sys
import threading

HDR = struct.Struct("<IHHIiQ")
HV_OP_POPULATE = 11
MAX_PAYLOAD = 1 << 20

frozen = threading.Event()


def recv_exact(sock, n, fds=None):
    buf = bytearray()
    while len(buf) < n:
        if fds is None:
            chunk = sock.recv(n - len(buf))
        else:
            chunk, anc, _, _ = sock.recvmsg(n - len(buf), socket.CMSG_SPACE(16 * 4))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array("i")
                    a.frombytes(data[: len(data) - len(data) % a.itemsize])
                    fds.extend(a)
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def relay(client, path, signal_file):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(path)
        while True:
            hdr = recv_exact(client, HDR.size)
            _, _, op, length, _, _ = HDR.unpack(hdr)
            if length > MAX_PAYLOAD:
                return
            req = recv_exact(client, length)
            if frozen.is_set():
                threading.Event().wait()  # hold the daemon for ever
            server.sendall(hdr + req)
            fds = []
            rhdr = recv_exact(server, HDR.size, fds)
            rlen = HDR.unpack(rhdr)[3]
            rep = recv_exact(server, rlen, fds) if rlen else b""
            anc = []
            if fds:
                anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
            client.sendmsg([rhdr + rep], anc)
            for fd in fds:
                os.close(fd)
            if op == HV_OP_POPULATE and not frozen.is_set():
                frozen.set()
                with open(signal_file, "w") as f:
                    f.write("frozen after the first populate call\n")
    except (EOFError, OSError):
        pass
    finally:
        client.close()
        server.close()


def main():
    listen, target, signal_file = sys.argv[1:4]
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(listen)
    lsock.listen(64)
    while True:
        client, _ = lsock.accept()
        threading.Thread(target=relay, args=(client, target, signal_file),
                         daemon=True).start()


if __name__ == "__main__":
    main()
