"""events.subscribe as an iterator, on a connection of its own so that
the client's other calls do not mix with the notifications.
"""
import collections

from .connection import Connection

Event = collections.namedtuple("Event", "name params")
Event.__doc__ = """One notification: name ("task.progress", "task.done",
"vm.state", "scrub.progress") and params (a dict, see daemon/README.md)."""

EVENTS = ("task.progress", "task.done", "vm.state", "scrub.progress")


class Subscription:
    """Notifications of vmbuildd, from events.subscribe.

        with client.events_subscribe(["vm.state"]) as sub:
            for ev in sub:                  # blocks; ends with an error
                print(ev.name, ev.params)   # when the daemon goes away

    `events` is the list the daemon confirmed.  next_event(timeout)
    returns None when nothing came within `timeout` seconds.  call()
    sends a request on the same connection (e.g. task.get after
    subscribing, so that nothing falls between the two).
    """

    def __init__(self, path=None, events=None, timeout=30.0):
        self._conn = Connection(path, timeout)
        params = {"events": list(events)} if events is not None else None
        try:
            result = self._conn.call("events.subscribe", params)
        except BaseException:
            self._conn.close()
            raise
        self.events = result.get("events", []) if isinstance(result, dict) \
            else []

    def call(self, method, params=None):
        return self._conn.call(method, params)

    def next_event(self, timeout=None):
        """The next notification; None after `timeout` seconds.

        timeout None blocks until one comes.
        """
        q = self._conn.notifications
        while True:
            if q:
                msg = q.popleft()
            else:
                if timeout is None:
                    msg = self._read_blocking()
                else:
                    msg = self._conn.read_message(timeout=timeout)
                    if msg is None:
                        return None
                if "id" in msg:
                    continue    # a late reply to a call()
            params = msg.get("params")
            return Event(msg.get("method"),
                         params if isinstance(params, dict) else {})

    def _read_blocking(self):
        while True:
            msg = self._conn.read_message(timeout=3600)
            if msg is not None:
                return msg

    def __iter__(self):
        return self

    def __next__(self):
        return self.next_event()

    def close(self):
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
