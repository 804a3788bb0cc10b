"""SAVE, BGSAVE, LASTSAVE: the persistence group, on ``Server.persistence``
(``persistence/saver.py``; the design is ``docs/persistence.md``).

Replies and errors as Redis 7.0's ``saveCommand`` / ``bgsaveCommand``: SAVE while a
background save runs is refused; BGSAVE while one runs is refused, BGSAVE SCHEDULE then
answers ``+Background saving scheduled`` only when the running job is not an RDB save
(we have no other background job, so it is refused the same way); BGSAVE inside MULTI is
scheduled for the cron, as Redis does while ``in_exec``.
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..resp import OK, Status


@command("save", 1, "admin noscript no_async_loading no_multi", group="server")
def save(c, argv):
    """SAVE
    Synchronously saves the dataset to disk."""
    p = c.server.persistence
    if p.in_progress():
        raise CommandError(errors.BGSAVE_IN_PROGRESS)
    if not p.save():
        raise CommandError("Error saving DB on disk, check the logs")
    return OK


@command("bgsave", -1, "admin noscript no_async_loading", group="server")
def bgsave(c, argv):
    """BGSAVE [SCHEDULE]
    Asynchronously saves the dataset to disk (a forkless snapshot)."""
    if len(argv) > 1 and not (len(argv) == 2 and argv[1].lower() == b"schedule"):
        raise CommandError(errors.SYNTAX)
    p = c.server.persistence
    if p.in_progress():
        raise CommandError(errors.BGSAVE_IN_PROGRESS)
    if c.in_exec:
        p.scheduled = True
        return Status(b"Background saving scheduled")
    if not p.bgsave():
        raise CommandError("Error saving DB on disk, check the logs")
    return Status(b"Background saving started")


@command("lastsave", 1, "fast loading stale", group="server")
def lastsave(c, argv):
    """LASTSAVE
    Returns the Unix timestamp of the last successful save to disk."""
    return c.server.persistence.lastsave
