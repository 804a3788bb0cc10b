"""Keyspace notifications: ``notify-keyspace-events`` and the messages a change publishes.

A command that changes a key calls ``Keyspace.notify(db, NOTIFY_<class>, b"<event>", key)``
(Redis's ``notifyKeyspaceEvent``).  When the event's class is enabled it publishes, through
the ordinary pub/sub delivery (``pubsub.py``)::

    K  __keyspace@<db>__:<key>    message <event>
    E  __keyevent@<db>__:<event>  message <key>

Cost when off: ``Keyspace.notify`` tests one attribute, ``ks.notify_flags``, which is 0
unless K or E *and* some class are enabled; the hottest write paths test it inline before
calling.  The classes and their letters are Redis 7.0's; ``A`` is ``g$lshzxetd`` (not ``m``
or ``n``).  CONFIG SET parses any order and repetition and CONFIG GET renders the canonical
string (``"Elg$mx"`` -> ``"g$lxEm"``), as :func:`flags_to_string` / :func:`string_to_flags`.

Complexity: a notification is two PUBLISHes (see ``pubsub.py``).
"""

from __future__ import annotations

NOTIFY_KEYSPACE = 1 << 0    # K
NOTIFY_KEYEVENT = 1 << 1    # E
NOTIFY_GENERIC = 1 << 2     # g: DEL, EXPIRE, RENAME...
NOTIFY_STRING = 1 << 3      # $
NOTIFY_LIST = 1 << 4        # l
NOTIFY_SET = 1 << 5         # s
NOTIFY_HASH = 1 << 6        # h
NOTIFY_ZSET = 1 << 7        # z
NOTIFY_EXPIRED = 1 << 8     # x
NOTIFY_EVICTED = 1 << 9     # e
NOTIFY_STREAM = 1 << 10     # t
NOTIFY_KEY_MISS = 1 << 11   # m
NOTIFY_LOADED = 1 << 12     # (modules only, no letter)
NOTIFY_MODULE = 1 << 13     # d
NOTIFY_NEW = 1 << 14        # n
NOTIFY_ALL = (NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH
              | NOTIFY_ZSET | NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)

_LETTERS = {"g": NOTIFY_GENERIC, "$": NOTIFY_STRING, "l": NOTIFY_LIST, "s": NOTIFY_SET,
            "h": NOTIFY_HASH, "z": NOTIFY_ZSET, "x": NOTIFY_EXPIRED, "e": NOTIFY_EVICTED,
            "t": NOTIFY_STREAM, "d": NOTIFY_MODULE, "n": NOTIFY_NEW, "K": NOTIFY_KEYSPACE,
            "E": NOTIFY_KEYEVENT, "m": NOTIFY_KEY_MISS, "A": NOTIFY_ALL}
_CLASS_ORDER = "g$lshzxetdn"    # rendered when not all of A is on
INVALID_CLASS = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def string_to_flags(text: str) -> int:
    """Redis keyspaceEventsStringToFlags; ValueError (Redis's text) on an unknown letter."""
    flags = 0
    for ch in text:
        bit = _LETTERS.get(ch)
        if bit is None:
            raise ValueError(INVALID_CLASS)
        flags |= bit
    return flags


def flags_to_string(flags: int) -> str:
    """Redis keyspaceEventsFlagsToString: ``A`` or the classes, then K, E, m."""
    if flags & NOTIFY_ALL == NOTIFY_ALL:
        out = "A"
    else:
        out = "".join(ch for ch in _CLASS_ORDER if flags & _LETTERS[ch])
    for ch in "KEm":
        if flags & _LETTERS[ch]:
            out += ch
    return out


class Notifier:
    """Applies the config to the keyspace and publishes the notifications."""

    def __init__(self, server):
        self.server = server
        self.flags = 0
        server.ks.notifier = self
        server.config.on_change("notify-keyspace-events", self._set)

    def _set(self, value: str) -> None:
        flags = string_to_flags(value)
        self.flags = flags
        self.server.config.values["notify-keyspace-events"] = flags_to_string(flags)
        # Nothing can be published without K or E: the keyspace then sees "off".
        self.server.ks.notify_flags = (flags if flags & (NOTIFY_KEYSPACE | NOTIFY_KEYEVENT)
                                       else 0)

    def fire(self, dbid: int, event: bytes, key: bytes) -> None:
        """Publish one event (the class test was done by ``Keyspace.notify``)."""
        publish = self.server.pubsub.publish
        flags = self.flags
        if flags & NOTIFY_KEYSPACE:
            publish(b"__keyspace@%d__:%b" % (dbid, key), event)
        if flags & NOTIFY_KEYEVENT:
            publish(b"__keyevent@%d__:%b" % (dbid, event), key)
