"""Consumer group commands: XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER HELP),
XACK, XPENDING (XCLAIM and XAUTOCLAIM are in ``stream_claim.py``).

A group's PEL maps each delivered, unacknowledged ID to a NACK (delivery time, delivery
count, owner), and each consumer's PEL holds the same NACK objects for the IDs it owns
(``stream.py`` keeps both in step: ``add_nack`` / ``drop_nack``).

Times are the keyspace's cached clock (``ks.now_ms``, one read per batch of commands),
where Redis reads mstime(): the same to the millisecond for a command, and a ManualClock in
tests.  Propagation (Redis rewrites these as XCLAIM ... FORCE JUSTID LASTID) is not done
yet: the server has no replication or AOF.

Complexity: XACK O(log p) per ID; XPENDING's summary O(consumers), its range form
O(log p + k); XGROUP O(1) but DESTROY / DELCONSUMER, O(their pending entries).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..notify import NOTIFY_STREAM
from ..registry import command
from ..resp import NULL_ARRAY, OK, Status
from ..stream import INVALID_ENTRIES_READ, id_text
from ._util import parse_int
from .streams import (account_quiet, interval_end, interval_start, parse_id, read_stream,
                      stream_ready, strict_id, write_stream)



def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def nogroup(key: bytes, group: bytes) -> CommandError:
    return CommandError(errors.STREAM_NOGROUP % (_text(key), _text(group)))


# ---- XGROUP ----

@command("xgroup", -2, "", group="stream")
def xgroup(c, argv):
    """XGROUP subcommand [arguments ...]
    Manages the consumer groups of a stream."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (_text(argv[1]), "XGROUP"))


def _group_options(argv: list, create: bool):
    """CREATE / SETID trailing options: (mkstream, entries_read), Redis's errors."""
    mkstream, entries_read = False, INVALID_ENTRIES_READ
    i, n = 5, len(argv)
    while i < n:
        opt = argv[i].lower()
        if create and opt == b"mkstream":
            mkstream = True
            i += 1
        elif opt == b"entriesread" and i + 1 < n:
            entries_read = parse_int(argv[i + 1])
            if entries_read < 0 and entries_read != INVALID_ENTRIES_READ:
                raise CommandError(errors.XGROUP_ENTRIESREAD)
            i += 2
        else:
            raise _subcommand_syntax(argv)
    return mkstream, entries_read


def _subcommand_syntax(argv: list) -> CommandError:
    """Redis addReplySubcommandSyntaxError: the subcommand as the client spelled it."""
    return CommandError(errors.SUBCOMMAND_SYNTAX % (_text(argv[1]), "XGROUP"))


def _need_group(c, argv: list):
    """(slot, stream, group) for SETID / CREATECONSUMER / DELCONSUMER (DESTROY's group may
    be missing)."""
    e, s = write_stream(c, argv[2])
    if s is None:
        raise CommandError(errors.XGROUP_NEEDS_KEY)
    return e, s, s.groups.get(argv[3])


def _missing_group(argv: list) -> CommandError:
    return CommandError(errors.XGROUP_NOGROUP % (_text(argv[3]), _text(argv[2])))


@command("create", -5, "write denyoom", first_key=2, parent="xgroup")
def xgroup_create(c, argv):
    """XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
    Creates a consumer group."""
    mkstream, entries_read = _group_options(argv, True)
    key = argv[2]
    e, s = write_stream(c, key)
    if s is None and not mkstream:
        raise CommandError(errors.XGROUP_NEEDS_KEY)
    if len(argv) > 8:
        raise _subcommand_syntax(argv)
    if argv[4] == b"$":
        last = s.last_id if s is not None else 0
    else:
        last = strict_id(argv[4])
    if s is None:
        from ..stream import Stream
        s = Stream()
        e = c.db.add(key, s)
    before = s.mem
    if s.add_group(argv[3], last, entries_read) is None:
        raise CommandError(errors.BUSYGROUP)
    account_quiet(c, s, before)
    c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-create", key)
    return OK


@command("setid", -5, "write", first_key=2, parent="xgroup")
def xgroup_setid(c, argv):
    """XGROUP SETID key group id|$ [ENTRIESREAD entries-read]
    Sets the last delivered ID of a consumer group."""
    _, entries_read = _group_options(argv, False)
    e, s, g = _need_group(c, argv)
    if g is None:
        raise _missing_group(argv)
    if len(argv) not in (5, 7):
        raise _subcommand_syntax(argv)
    g.last_id = s.last_id if argv[4] == b"$" else parse_id(argv[4])[0]
    g.entries_read = entries_read
    c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-setid", argv[2])
    return OK


@command("destroy", 4, "write", first_key=2, parent="xgroup")
def xgroup_destroy(c, argv):
    """XGROUP DESTROY key group
    Destroys a consumer group; returns 1 if it existed."""
    e, s, g = _need_group(c, argv)
    if g is None:
        return 0
    before = s.mem
    s.drop_group(argv[3])
    account_quiet(c, s, before)
    c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-destroy", argv[2])
    stream_ready(c, argv[2])     # its blocked XREADGROUP clients get NOGROUP
    return 1


def create_consumer(c, e, s, g, name: bytes, key: bytes, notify: bool = True):
    """The consumer ``name`` of group ``g``, created (with its event) if missing; its seen
    time is refreshed either way (Redis streamLookupConsumer / streamCreateConsumer)."""
    now = c.ks.now_ms
    consumer = g.consumers.get(name)
    if consumer is not None:
        consumer.seen_time = now
        return consumer
    consumer = s.add_consumer(g, name, now)
    if notify:
        c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-createconsumer", key)
    return consumer


@command("createconsumer", 5, "write denyoom", first_key=2, parent="xgroup")
def xgroup_createconsumer(c, argv):
    """XGROUP CREATECONSUMER key group consumer
    Creates a consumer in a group; returns 1 if it was created."""
    e, s, g = _need_group(c, argv)
    if g is None:
        raise _missing_group(argv)
    before = s.mem
    if s.add_consumer(g, argv[4], c.ks.now_ms) is None:
        return 0
    account_quiet(c, s, before)
    c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-createconsumer", argv[2])
    return 1


@command("delconsumer", 5, "write", first_key=2, parent="xgroup")
def xgroup_delconsumer(c, argv):
    """XGROUP DELCONSUMER key group consumer
    Deletes a consumer; returns how many entries it had pending."""
    e, s, g = _need_group(c, argv)
    if g is None:
        raise _missing_group(argv)
    consumer = g.consumers.get(argv[4])
    if consumer is None:
        return 0
    before = s.mem
    pending = s.drop_consumer(g, consumer)
    account_quiet(c, s, before)
    c.ks.notify(c.db, NOTIFY_STREAM, b"xgroup-delconsumer", argv[2])
    return pending


XGROUP_HELP = (
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
)


def help_reply(name: str, lines: tuple) -> list:
    """Redis addReplyHelp: a title line, the lines, then HELP."""
    return [Status(x.encode()) for x in (
        "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" % name, *lines,
        "HELP", "    Prints this help.")]


@command("help", 2, "loading stale", parent="xgroup")
def xgroup_help(c, argv):
    """XGROUP HELP
    Lists the XGROUP subcommands."""
    return help_reply("XGROUP", XGROUP_HELP)


# ---- XACK ----

@command("xack", -4, "write fast", first_key=1, group="stream")
def xack(c, argv):
    """XACK key group id [id ...]
    Acknowledges pending entries of a group; returns how many were pending."""
    e, s = read_stream(c, argv[1])
    g = s.groups.get(argv[2]) if s is not None else None
    if g is None:
        return 0
    ids = [strict_id(b) for b in argv[3:]]
    before = s.mem
    acked = sum(1 for i in ids if s.drop_nack(g, i))
    if acked:
        account_quiet(c, s, before)
    return acked


# ---- XPENDING ----

@command("xpending", -3, "readonly", first_key=1, group="stream")
def xpending(c, argv):
    """XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
    Returns the pending entries of a group: a summary, or the entries in a range."""
    n = len(argv)
    if n != 3 and not 6 <= n <= 9:
        raise CommandError(errors.SYNTAX)
    min_idle = 0
    if n >= 6:
        at = 3
        if argv[3].lower() == b"idle":
            min_idle = parse_int(argv[4])
            if n < 8:
                raise CommandError(errors.SYNTAX)
            at = 5
        count = max(parse_int(argv[at + 2]), 0)
        start = interval_start(argv[at])
        end = interval_end(argv[at + 1])
        consumer_name = argv[at + 3] if at + 3 < n else None
    e, s = read_stream(c, argv[1])
    g = s.groups.get(argv[2]) if s is not None else None
    if g is None:
        raise nogroup(argv[1], argv[2])
    if n == 3:
        if not g.pel:
            return [0, None, None, NULL_ARRAY]
        owners = [[name, b"%d" % len(cons.pel)]
                  for name, cons in sorted(g.consumers.items()) if cons.pel]
        return [len(g.pel), id_text(g.pel.keys()[0]), id_text(g.pel.keys()[-1]), owners]
    pel = g.pel
    if consumer_name is not None:
        consumer = g.consumers.get(consumer_name)
        if consumer is None:
            return []
        pel = consumer.pel
    now = c.ks.now_ms
    out = []
    if count:
        for i in pel.irange(start, end):
            nack = pel[i]
            idle = now - nack.delivery_time
            if min_idle and idle < min_idle:
                continue
            out.append([id_text(i), nack.consumer.name, max(idle, 0), nack.delivery_count])
            if len(out) >= count:
                break
    return out
