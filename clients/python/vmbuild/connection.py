"""One JSON-RPC 2.0 connection to vmbuildd: a Unix stream socket carrying
one JSON object per line.  Replies are matched to requests by id;
notifications (events) that arrive meanwhile are queued.
"""
import array
import collections
import json
import os
import socket
import time

from .errors import ConnectionFailed, ProtocolError, Timeout, \
    error_from_reply

DEFAULT_SOCKET = "/run/vmbuild/control.sock"
SOCKET_ENV = "VMBUILD_SOCKET"
MAX_LINE = 64 << 20      # longest reply line accepted (bytes)
MAX_QUEUED = 4096        # notifications kept while waiting for a reply


def default_socket():
    """$VMBUILD_SOCKET, else /run/vmbuild/control.sock (as vmctl)."""
    return os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


class Connection:
    """Not thread-safe: use one per thread."""

    def __init__(self, path=None, timeout=30.0):
        self.path = path or default_socket()
        self.timeout = timeout
        self._sock = None
        self._buf = b""
        self._next_id = 1
        self._fd = None         # the last descriptor the daemon passed
        self.notifications = collections.deque()

    def open(self):
        if self._sock is not None:
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
        except OSError as e:
            s.close()
            raise ConnectionFailed("cannot reach vmbuildd at %s: %s" %
                                   (self.path, e.strerror or e)) from e
        self._sock, self._buf = s, b""

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._buf = b""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def take_fd(self):
        """The descriptor the daemon passed with its last reply
        (vm.console), now the caller's; None when none came."""
        fd, self._fd = self._fd, None
        return fd

    def _recv(self):
        """recv() that keeps a descriptor passed with the bytes."""
        data, anc, _, _ = self._sock.recvmsg(1 << 16,
                                             socket.CMSG_SPACE(4 * 4))
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds = array.array("i")
                fds.frombytes(raw[:len(raw) - len(raw) % fds.itemsize])
                for fd in fds:
                    if self._fd is not None:
                        os.close(self._fd)
                    self._fd = fd
        return data

    def fileno(self):
        return self._sock.fileno() if self._sock else -1

    def _lost(self, why):
        self.close()
        return ConnectionFailed("connection to vmbuildd at %s lost: %s" %
                                (self.path, why))

    def send(self, method, params=None, fds=()):
        """Send a request; returns its id.  fds: open descriptors sent
        with the request's first bytes (SCM_RIGHTS), which params name
        by index (params["fds"])."""
        self.open()
        rid = self._next_id
        self._next_id += 1
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        data = (json.dumps(req, separators=(",", ":")) + "\n").encode()
        try:
            if fds:
                # The descriptors go with the first bytes of the line,
                # the rest follows: the daemon ties them to this request.
                sent = socket.send_fds(self._sock, [data], list(fds))
                data = data[sent:]
            if data:
                self._sock.sendall(data)
        except socket.timeout as e:
            raise self._timeout(method) from e
        except OSError as e:
            raise self._lost(e) from e
        return rid

    def _timeout(self, what):
        self.close()
        return Timeout("vmbuildd at %s did not answer %s within %g s" %
                       (self.path, what, self.timeout))

    def read_message(self, timeout=None, what="a request"):
        """The next message; None if `timeout` (s) passes first.

        timeout None waits up to the connection's timeout and then
        raises Timeout; a number waits that long and returns None.
        """
        end = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_LINE:
                raise self._lost("a reply line over %d bytes" % MAX_LINE)
            if end is not None:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._sock.settimeout(left)
            try:
                chunk = self._recv()
            except socket.timeout as e:
                if end is not None:
                    return None
                raise self._timeout(what) from e
            except OSError as e:
                raise self._lost(e) from e
            finally:
                if end is not None and self._sock is not None:
                    self._sock.settimeout(self.timeout)
            if not chunk:
                raise self._lost("the daemon closed it")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError as e:
            self.close()
            raise ProtocolError("not JSON from vmbuildd: %r" %
                                line[:200]) from e
        if not isinstance(msg, dict):
            self.close()
            raise ProtocolError("not a JSON-RPC message: %r" % line[:200])
        return msg

    def wait_reply(self, rid, method):
        """The result of request `rid`; raises its error."""
        while True:
            msg = self.read_message(what=method)
            if "id" not in msg:
                if len(self.notifications) < MAX_QUEUED:
                    self.notifications.append(msg)
                continue
            if msg.get("id") != rid:
                continue        # a reply to a request given up on
            if "error" in msg:
                raise error_from_reply(msg["error"], method)
            if "result" not in msg:
                raise ProtocolError("%s: reply without result: %r" %
                                    (method, msg))
            return msg["result"]

    def call(self, method, params=None, fds=(), timeout=None):
        """A request and its result.  fds: descriptors sent with the
        request (see send); timeout (s) replaces the connection's for
        this one reply (an answer that comes when the guest has done
        something)."""
        if timeout is None:
            return self.wait_reply(self.send(method, params, fds), method)
        saved, self.timeout = self.timeout, max(self.timeout, timeout)
        try:
            rid = self.send(method, params, fds)
            self._sock.settimeout(self.timeout)
            return self.wait_reply(rid, method)
        finally:
            self.timeout = saved
            if self._sock is not None:
                self._sock.settimeout(saved)
