"""Exceptions of the vmbuild client.

VmbuildError is the root.  DaemonError is an error the daemon answered
(JSON-RPC code, message and data), with one subclass per code of
daemon/proto.h; ConnectionFailed is a daemon that cannot be reached or
stopped answering; ProtocolError is a reply that is not JSON-RPC.
"""
import re

__all__ = [
    "VmbuildError", "ConnectionFailed", "Timeout", "ProtocolError",
    "DaemonError", "ParseError", "InvalidRequest", "MethodNotFound",
    "InvalidParams", "InternalError", "PermissionDenied", "NoSuchVM",
    "NoSuchTask", "ConfigError", "NoMemory", "HypervisorError", "Busy",
    "Cancelled", "VMExists", "Unavailable", "RequestTooLarge",
    "TaskFinished", "BadState", "BadImage", "ImageDescriptors",
    "GuestTimeout", "NoSuchDevice", "BadStream", "MigrateFailed",
    "MigrateDoubt", "Diagnostic",
    "error_from_reply",
]


class VmbuildError(Exception):
    """Anything that went wrong talking to vmbuildd."""


class ConnectionFailed(VmbuildError):
    """The daemon cannot be reached, or the connection was lost."""


class Timeout(ConnectionFailed):
    """No reply within the client's timeout."""


class ProtocolError(VmbuildError):
    """The daemon sent something that is not a JSON-RPC reply."""


class Diagnostic:
    """One configuration error: "file:line: key: message" taken apart.

    file, key and message are strings ("" when absent), line an int (0
    when absent).  str() gives the daemon's text back.
    """

    _RE = re.compile(r"^(?:(?P<file>.+?):(?:(?P<line>\d+):)? )?"
                     r"(?:(?P<key>[A-Za-z_][A-Za-z0-9_]*): )?"
                     r"(?P<message>.*)$", re.S)

    __slots__ = ("text", "file", "line", "key", "message")

    def __init__(self, text):
        self.text = text
        m = self._RE.match(text)
        self.file = m.group("file") or ""
        self.line = int(m.group("line") or 0)
        self.key = m.group("key") or ""
        self.message = m.group("message")

    def __str__(self):
        return self.text

    def __repr__(self):
        return "Diagnostic(file=%r, line=%d, key=%r, message=%r)" % (
            self.file, self.line, self.key, self.message)


class DaemonError(VmbuildError):
    """An error reply of vmbuildd.

    code     the JSON-RPC or application code (int)
    message  the daemon's message
    data     the error's data object ({} when there is none)
    phase    the build phase that failed (vm.create), or None
    errno, errno_name   the system error behind it, or None
    errors   configuration errors as Diagnostic objects (E_CONFIG)
    file, line, key     those of the first configuration error, or None
    method   the method that failed, task the task object (when known)
    """

    code = None
    proto = None    # the code's name in daemon/proto.h

    def __init__(self, code, message, data=None, method=None, task=None):
        super().__init__("%s (code %d)" % (message, code))
        self.code = code
        self.message = message
        self.data = data if isinstance(data, dict) else {}
        self.method = method
        self.task = task
        self.phase = self.data.get("phase")
        self.errno = self.data.get("errno")
        self.errno_name = self.data.get("errno_name")
        self.errors = [Diagnostic(e) for e in self.data.get("errors", [])
                       if isinstance(e, str)]
        first = self.errors[0] if self.errors else None
        self.file = first.file if first else None
        self.line = first.line if first else None
        self.key = first.key if first else None


def _code(proto, code, name, doc):
    """The class of error `code`, which daemon/proto.h calls `proto`
    (tests/harness/proto-errors.py holds the two together)."""
    cls = type(name, (DaemonError,), {"__doc__": doc})
    cls.code = code
    cls.proto = proto
    return cls


# One line of daemon/proto.h each: its name there, the code, the class.
ParseError = _code("RPC_PARSE_ERROR", -32700, "ParseError",
                   "The request was not JSON.")
InvalidRequest = _code("RPC_INVALID_REQUEST", -32600, "InvalidRequest",
                       "Not a JSON-RPC request.")
MethodNotFound = _code("RPC_METHOD_NOT_FOUND", -32601, "MethodNotFound",
                       "No such method.")
InvalidParams = _code("RPC_INVALID_PARAMS", -32602, "InvalidParams",
                      "A parameter is missing or of the wrong type.")
InternalError = _code("RPC_INTERNAL_ERROR", -32603, "InternalError",
                      "The daemon failed.")
PermissionDenied = _code("E_PERMISSION", 1000, "PermissionDenied",
                         "Only root and group vmbuild may do this.")
NoSuchVM = _code("E_NO_SUCH_VM", 1001, "NoSuchVM",
                 "No VM of that name or id.")
NoSuchTask = _code("E_NO_SUCH_TASK", 1002, "NoSuchTask",
                   "No task of that id.")
ConfigError = _code("E_CONFIG", 1003, "ConfigError",
                    "Invalid configuration; .errors lists every error.")
NoMemory = _code("E_NO_MEMORY", 1004, "NoMemory",
                 "The host cannot hold the guest.")
HypervisorError = _code("E_HYPERVISOR", 1005, "HypervisorError",
                        "The hypervisor refused or failed.")
Busy = _code("E_BUSY", 1006, "Busy",
             "A limit was reached (tasks, connections, requests).")
Cancelled = _code("E_CANCELLED", 1007, "Cancelled",
                  "The task was cancelled.")
VMExists = _code("E_EXISTS", 1008, "VMExists", "A VM of that name exists.")
Unavailable = _code("E_UNAVAILABLE", 1009, "Unavailable",
                    "The hypervisor does not report this.")
RequestTooLarge = _code("E_REQUEST_TOO_LARGE", 1010, "RequestTooLarge",
                        "The request is over the daemon's size limit.")
TaskFinished = _code("E_TASK_FINISHED", 1011, "TaskFinished",
                     "The task has already ended.")
BadState = _code("E_BAD_STATE", 1012, "BadState",
                 "The VM is not in a state that allows this.")
BadImage = _code("E_IMAGE", 1013, "BadImage",
                 "A kernel or ramdisk cannot be used (not a PVH image, "
                 "too large, not a regular file).")
ImageDescriptors = _code("E_IMAGE_FD", 1014, "ImageDescriptors",
                         "The daemon opens no file a client names outside "
                         "its image directories: pass data['files'] as "
                         "descriptors (vm_create does).")
GuestTimeout = _code("E_TIMEOUT", 1015, "GuestTimeout",
                     "The guest did not do what was asked in time.")
NoSuchDevice = _code("E_NO_SUCH_DEVICE", 1016, "NoSuchDevice",
                     "The VM has no such disk or network interface.")
BadStream = _code("E_STREAM", 1017, "BadStream",
                  "A save stream is truncated, corrupt or not one "
                  "(data says which record, at which offset).")
MigrateFailed = _code("E_MIGRATE", 1018, "MigrateFailed",
                      "A migration failed: the guest stays on this host.")
MigrateDoubt = _code("E_MIGRATE_DOUBT", 1019, "MigrateDoubt",
                     "The receiver's answer was lost: the guest is paused "
                     "here until the target is asked (vmctl migrate "
                     "does).")

_BY_CODE = {cls.code: cls for cls in (
    ParseError, InvalidRequest, MethodNotFound, InvalidParams,
    InternalError, PermissionDenied, NoSuchVM, NoSuchTask, ConfigError,
    NoMemory, HypervisorError, Busy, Cancelled, VMExists, Unavailable,
    RequestTooLarge, TaskFinished, BadState, BadImage, ImageDescriptors,
    GuestTimeout, NoSuchDevice, BadStream, MigrateFailed, MigrateDoubt)}


def error_from_reply(error, method=None, task=None):
    """The DaemonError (subclass) for a JSON-RPC error object."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return ProtocolError("%s: malformed error %r" % (method, error))
    code = error["code"]
    cls = _BY_CODE.get(code, DaemonError)
    return cls(code, str(error.get("message", "")), error.get("data"),
               method=method, task=task)
