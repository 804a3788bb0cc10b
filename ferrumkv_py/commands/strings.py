"""String commands."""

from __future__ import annotations

from ..registry import command
from ..resp import OK
from .util import check_type


@command("get", 2, "readonly fast", first_key=1, group="string")
def get(c, argv):
    """GET key
    Returns the string value of a key."""
    e = c.db.lookup_read(argv[1])
    if e is None:
        return None
    check_type(e, bytes)
    return e.value


@command("set", -3, "write denyoom", first_key=1, group="string")
def set_(c, argv):
    """SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
    Sets the string value of a key."""
    c.db.set(argv[1], argv[2])
    return OK
