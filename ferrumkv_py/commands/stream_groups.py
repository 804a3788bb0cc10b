"""Consumer group commands: XGROUP (CREATE SETID DESTROY CREATECONSUMER DELCONSUMER HELP),
XACK, XPENDING, XCLAIM, XAUTOCLAIM.

A group's PEL maps each delivered, unacknowledged ID to a NACK (delivery time, delivery
count, owner), and each consumer's PEL holds the same NACK objects for the IDs it owns
(``stream.py`` keeps both in step: ``add_nack`` / ``drop_nack``).  Claiming moves a NACK
from one consumer's PEL to another's; an ID whose entry was deleted from the stream is
dropped from the PEL when XCLAIM or XAUTOCLAIM meets it.

Times are the keyspace's cached clock (``ks.now_ms``, one read per batch of commands),
where Redis reads mstime(): the same to the millisecond for a command, and a ManualClock in
tests.  Propagation (Redis rewrites these as XCLAIM ... FORCE JUSTID LASTID) is not done
yet: the server has no replication or AOF.

Complexity: XACK O(log p) per ID; XPENDING's summary O(consumers), its range form
O(log p + k); XCLAIM O(log n + log p) per ID; XAUTOCLAIM O(COUNT * 10) PEL steps at most.
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..notify import NOTIFY_STREAM
from ..registry import command
from ..resp import NULL_ARRAY, OK, Status
from ..stream import INVALID_ENTRIES_READ, Nack, id_text
from ._util import LLONG_MAX, parse_int
from .streams import (account, entry_reply, interval_end, interval_start, read_stream,
                      stream_ready, strict_id, parse_id, write_stream)

AUTOCLAIM_DEFAULT_COUNT = 100
AUTOCLAIM_ATTEMPTS_FACTOR = 10     # PEL entries looked at per entry claimed, at most
AUTOCLAIM_COUNT_MAX = LLONG_MAX // 16   # LONG_MAX / max(sizeof(streamID), attempts factor)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _nogroup(key: bytes, group: bytes) -> CommandError:
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
    account(c, e, s, before)
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
    account(c, e, s, s.mem)
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
    account(c, e, s, before)
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
    account(c, e, s, before)
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
    account(c, e, s, before)
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
        account(c, e, s, before)
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
        raise _nogroup(argv[1], argv[2])
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


# ---- XCLAIM XAUTOCLAIM ----

def _claim(c, s, g, consumer, i: int, nack, when: int, retry: int, justid: bool):
    """Give ``nack`` (entry ``i``) to ``consumer``; the entry's reply (or its ID)."""
    if nack.consumer is not consumer:
        if nack.consumer is not None:
            nack.consumer.pel.pop(i, None)
        consumer.pel[i] = nack
        nack.consumer = consumer
    nack.delivery_time = when
    if retry >= 0:
        nack.delivery_count = retry
    elif not justid:
        nack.delivery_count += 1
    return id_text(i) if justid else entry_reply(i, s.get(i))


@command("xclaim", -6, "write fast", first_key=1, group="stream")
def xclaim(c, argv):
    """XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
    Changes the owner of pending entries; returns the entries claimed."""
    e, s = read_stream(c, argv[1])
    g = s.groups.get(argv[2]) if s is not None else None
    if g is None:
        raise _nogroup(argv[1], argv[2])
    min_idle = max(parse_int(argv[4], errors.XCLAIM_MIN_IDLE), 0)
    ids = []
    j, n = 5, len(argv)
    while j < n:
        try:
            ids.append(strict_id(argv[j]))
        except CommandError:
            break
        j += 1
    now = c.ks.now_ms
    when, retry, force, justid, last = -1, -1, False, False, 0
    while j < n:
        more = n - 1 - j
        opt = argv[j].lower()
        if opt == b"force":
            force = True
        elif opt == b"justid":
            justid = True
        elif opt == b"idle" and more:
            j += 1
            when = now - parse_int(argv[j], errors.XCLAIM_IDLE)
        elif opt == b"time" and more:
            j += 1
            when = parse_int(argv[j], errors.XCLAIM_TIME)
        elif opt == b"retrycount" and more:
            j += 1
            retry = parse_int(argv[j], errors.XCLAIM_RETRYCOUNT)
        elif opt == b"lastid" and more:
            j += 1
            last = strict_id(argv[j])
        else:
            raise CommandError(errors.XCLAIM_UNKNOWN_OPTION % _text(argv[j]))
        j += 1
    before = s.mem
    if last > g.last_id:
        g.last_id = last
    if when == -1 or when < 0 or when > now:
        when = now
    consumer = None
    out = []
    for i in ids:
        nack = g.pel.get(i)
        if s.get(i) is None:
            if nack is not None:
                s.drop_nack(g, i)
            continue
        if force and nack is None:
            nack = Nack(None, now)
            s.add_nack(g, i, nack)
        if nack is None:
            continue
        if nack.consumer is not None and min_idle and now - nack.delivery_time < min_idle:
            continue
        if consumer is None:
            consumer = create_consumer(c, e, s, g, argv[3], argv[1])
        out.append(_claim(c, s, g, consumer, i, nack, when, retry, justid))
    account(c, e, s, before)
    return out


@command("xautoclaim", -6, "write fast", first_key=1, group="stream")
def xautoclaim(c, argv):
    """XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
    Claims pending entries idle for long enough, scanning from an ID; returns the next
    cursor, the entries claimed and the IDs deleted meanwhile."""
    min_idle = max(parse_int(argv[4], errors.XAUTOCLAIM_MIN_IDLE), 0)
    start = interval_start(argv[5])
    count, justid = AUTOCLAIM_DEFAULT_COUNT, False
    j, n = 6, len(argv)
    while j < n:
        opt = argv[j].lower()
        if opt == b"count" and n - 1 - j:
            try:
                count = parse_int(argv[j + 1], errors.XAUTOCLAIM_COUNT)
            except CommandError:
                raise CommandError(errors.XAUTOCLAIM_COUNT) from None
            if not 1 <= count <= AUTOCLAIM_COUNT_MAX:
                raise CommandError(errors.XAUTOCLAIM_COUNT)
            j += 1
        elif opt == b"justid":
            justid = True
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    e, s = read_stream(c, argv[1])
    g = s.groups.get(argv[2]) if s is not None else None
    if g is None:
        raise _nogroup(argv[1], argv[2])
    before = s.mem
    now = c.ks.now_ms
    attempts = count * AUTOCLAIM_ATTEMPTS_FACTOR
    consumer = None
    claimed, deleted = [], []
    pel = g.pel
    it = pel.irange(start)
    nxt = next(it, None)
    while attempts and count and nxt is not None:
        attempts -= 1
        i = nxt
        nack = pel[i]
        if s.get(i) is None:
            s.drop_nack(g, i)
            deleted.append(id_text(i))
            count -= 1
            it = pel.irange(i)           # the PEL changed: seek again
            nxt = next(it, None)
            continue
        nxt = next(it, None)
        if min_idle and now - nack.delivery_time < min_idle:
            continue
        if consumer is None:
            consumer = create_consumer(c, e, s, g, argv[3], argv[1])
        claimed.append(_claim(c, s, g, consumer, i, nack, now, -1, justid))
        count -= 1
    cursor = id_text(nxt) if nxt is not None else b"0-0"
    account(c, e, s, before)
    return [cursor, claimed, deleted]
