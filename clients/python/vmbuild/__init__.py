"""vmbuild - client of vmbuildd, the vmbuild daemon.

    import vmbuild
    c = vmbuild.Client()                    # $VMBUILD_SOCKET or the default
    c.vm_list()["vms"]
    c.vm_create_file("guest.cfg", progress=lambda p: print(p["progress"]))
    try:
        c.vm_destroy("guest")
    except vmbuild.NoSuchVM:
        pass

Standard library only.  The protocol (JSON-RPC 2.0, one object per line
on a Unix socket) and the result shapes are in vmbuildd(8) and the
project's daemon/README.md.
"""
from .client import Client
from .connection import DEFAULT_SOCKET, SOCKET_ENV, default_socket
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors_all
from .events import EVENTS, Event, Subscription

__version__ = "0.1.0"
__all__ = ["Client", "Subscription", "Event", "EVENTS", "DEFAULT_SOCKET",
           "SOCKET_ENV", "default_socket"] + list(_errors_all)
