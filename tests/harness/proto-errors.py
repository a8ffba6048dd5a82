#!/usr/bin/env python3
"""proto-errors.py - the Python client's error classes against the
daemon's error codes.

clients/python/vmbuild/errors.py spells daemon/proto.h's codes again
(one _code line each, with the name proto.h gives it).  Checked: every
RPC_* and E_* code of proto.h has its class, with the same number; no
class names a code proto.h lacks or gives another number; the reply of
each code comes back as its class; __all__ exports every class.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "daemon"))
from vmbdtest import TOP, ok, done, proto_codes  # noqa: E402

sys.path.insert(0, os.path.join(TOP, "clients", "python"))
from vmbuild import errors  # noqa: E402

codes = proto_codes()
ok(len(codes) >= 20, "daemon/proto.h has its error codes (%d)" % len(codes))
classes = [c for c in vars(errors).values()
           if isinstance(c, type) and issubclass(c, errors.DaemonError) and
           c.code is not None]
by_proto = {getattr(c, "proto", None): c for c in classes}

for name, code in sorted(codes.items(), key=lambda kv: kv[1]):
    c = by_proto.get(name)
    ok(c is not None and c.code == code,
       "proto.h's %s (%d) is errors.%s with that code" %
       (name, code, c.__name__ if c else "?"),
       "no class names %s" % name if c is None else
       "errors.%s has code %d" % (c.__name__, c.code))
for c in classes:
    proto = getattr(c, "proto", None)
    ok(proto is not None and codes.get(proto) == c.code,
       "errors.%s (%s, %d) is in proto.h with that code" %
       (c.__name__, proto, c.code),
       "proto.h has %s = %r" % (proto, codes.get(proto)))
    e = errors.error_from_reply({"code": c.code, "message": "m"})
    ok(type(e) is c, "a reply with code %d is errors.%s" % (c.code,
                                                              c.__name__),
       repr(e))
    ok(c.__name__ in errors.__all__, "__all__ exports %s" % c.__name__)
ok(len(by_proto) == len(classes), "one class per proto.h name")
done()
