"""Keyspace notifications shared by the commands that store a computed result.

Redis's STORE forms (BITOP, ZUNIONSTORE/ZINTERSTORE/ZDIFFSTORE, GEORADIUS... STORE,
GEOSEARCHSTORE, SORT ... STORE) and RESTORE ... REPLACE remove the destination with
``dbDelete``, which does not look at the TTL: a destination whose TTL has passed but that no
lookup has expired yet is simply deleted, and the command publishes ``del`` (not
``expired``).  :func:`drop` does the same through the keyspace's ``unlink``.
"""

from __future__ import annotations

from ..notify import NOTIFY_GENERIC


def drop(db, key: bytes) -> bool:
    """Redis dbDelete: remove ``key`` even if its TTL has passed; True if it was there.
    Publishes nothing (the caller decides).  O(1)."""
    e = db.find(key)
    if e is None:
        return False
    db.unlink(e)
    return True


def drop_notify(c, key: bytes) -> None:
    """An empty STORE result: delete the destination and publish ``del`` if it existed."""
    if drop(c.db, key):
        c.ks.notify(c.db, NOTIFY_GENERIC, b"del", key)
