"""XREAD and XREADGROUP, with their blocking forms.

Both read, for each named stream, the entries after an ID: an explicit ID, ``$`` (XREAD:
the stream's last ID now, so only what is added later) or ``>`` (XREADGROUP: the entries
never delivered to the group).  XREADGROUP with ``>`` delivers new entries, moving the
group's last delivered ID and read counter (``Stream.advance``) and adding each entry to
the group's and the consumer's PEL unless NOACK; with an explicit ID it replays the
consumer's own pending entries from that ID (an entry deleted since is ``[id, nil]``).

The reply lists the streams that had something, in argument order: RESP2 an array of
``[key, entries]``, RESP3 a map key -> entries; nothing at all is a null array.

Blocking (``BLOCK ms``, 0 = forever), Redis 7.0's rules kept:

* The client blocks on every named key through ``blocking.py`` (a ``Stream`` waiter), with
  the ID it waits past per key (``$`` resolved now; ``>`` read from the group when served)
  and COUNT (1000 when none was given, Redis's XREAD_BLOCKED_DEFAULT_COUNT).
* XADD and XGROUP DESTROY mark the key ready (``Blocking.signal_stream``); a waiter is
  served when the stream's last ID is past its ID, with a one-stream reply.  A group that
  is gone answers ``-NOGROUP the consumer group this client was blocked on no longer
  exists``.
* Deleting the key (DEL, FLUSHALL, expiry ...), or replacing it with a value of another
  type, answers the XREADGROUP waiters ``-UNBLOCKED the stream key no longer exists``;
  XREAD waiters keep waiting.
* Inside MULTI/EXEC (and a script without BLOCK) the command answers at once; a script's
  XREAD BLOCK is refused ("... is not allowed with BLOCK option from scripts").

Complexity: O(log n + k) per stream for k entries returned (plus O(log p) per PEL change).
"""

from __future__ import annotations

from .. import errors
from ..blocking import NOT_READY, may_block
from ..errors import CommandError
from ..registry import COMMANDS, command
from ..resp import NULL_ARRAY, Raw, encode
from ..stream import MAX_ID, Nack, Stream, id_text
from ._util import parse_int
from .stream_groups import create_consumer
from .streams import account_quiet, entries_reply, read_stream, strict_id

XREAD_BLOCKED_DEFAULT_COUNT = 1000


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


class ReadArgs:
    __slots__ = ("timeout", "count", "keys", "ids", "group", "consumer", "noack")


def _parse(c, argv: list, grouped: bool) -> ReadArgs:
    """Options in Redis's order and words (xreadCommand).  Complexity: O(len(argv))."""
    a = ReadArgs()
    a.timeout, a.count, a.group, a.consumer, a.noack = -1, 0, None, None, False
    streams_at = 0
    i, n = 1, len(argv)
    while i < n:
        more = n - i - 1
        opt = argv[i].lower()
        if opt == b"block" and more:
            if getattr(c, "is_script", False):
                raise CommandError(errors.XREAD_BLOCK_IN_SCRIPT % _text(argv[0]))
            i += 1
            a.timeout = parse_int(argv[i], errors.TIMEOUT_NOT_INT)
            if a.timeout < 0:
                raise CommandError(errors.TIMEOUT_NEGATIVE)
        elif opt == b"count" and more:
            i += 1
            a.count = max(parse_int(argv[i]), 0)
        elif opt == b"streams" and more:
            streams_at = i + 1
            if (n - streams_at) % 2:
                raise CommandError(errors.XREAD_UNBALANCED)
            break
        elif opt == b"group" and more >= 2:
            if not grouped:
                raise CommandError(errors.XREAD_GROUP_OPTION)
            a.group, a.consumer = argv[i + 1], argv[i + 2]
            i += 2
        elif opt == b"noack":
            if not grouped:
                raise CommandError(errors.XREAD_NOACK_OPTION)
            a.noack = True
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if not streams_at:
        raise CommandError(errors.SYNTAX)
    if grouped and a.group is None:
        raise CommandError(errors.XREADGROUP_MISSING_GROUP)
    half = (n - streams_at) // 2
    a.keys = argv[streams_at:streams_at + half]
    a.ids = []
    for key, raw in zip(a.keys, argv[streams_at + half:]):
        e, s = read_stream(c, key)
        if a.group is not None and (s is None or a.group not in s.groups):
            raise CommandError(errors.XREADGROUP_NOGROUP % (_text(key), _text(a.group)))
        if raw == b"$":
            if grouped:
                raise CommandError(errors.XREADGROUP_DOLLAR)
            a.ids.append(s.last_id if s is not None else 0)
        elif raw == b">":
            if not grouped:
                raise CommandError(errors.XREAD_GT_ID)
            a.ids.append(MAX_ID)
        else:
            a.ids.append(strict_id(raw))
    return a


def _deliver(c, e, s: Stream, key: bytes, a: ReadArgs, start: int, count: int,
             history: bool) -> list:
    """The entries one stream gives this call (with the group's bookkeeping)."""
    if a.group is None:
        return entries_reply(s.range(start, MAX_ID, False, count))
    g = s.groups[a.group]
    before = s.mem
    consumer = create_consumer(c, e, s, g, a.consumer, key)
    now = c.ks.now_ms
    out = []
    if history:
        for i in consumer.pel.irange(start):
            if count and len(out) >= count:
                break
            fv = s.get(i)
            if fv is None:
                out.append([id_text(i), NULL_ARRAY])
                continue
            nack = consumer.pel[i]
            nack.delivery_time = now
            nack.delivery_count += 1
            out.append([id_text(i), list(fv)])
    else:
        out = s.range(start, MAX_ID, False, count)
        for i, fv in out:
            if i > g.last_id:
                s.advance(g, i)
            if a.noack:
                continue
            nack = g.pel.get(i)
            if nack is None:
                s.add_nack(g, i, Nack(consumer, now))
            else:                      # delivered before (XGROUP SETID moved back): re-own
                if nack.consumer is not None:
                    nack.consumer.pel.pop(i, None)
                nack.consumer = consumer
                nack.delivery_time = now
                nack.delivery_count = 1
                consumer.pel[i] = nack
        out = entries_reply(out)
    account_quiet(c, s, before)
    return out


def _reply(c, served: list):
    """RESP2 ``[[key, entries], ...]``; RESP3 a map written out, so a key named twice
    appears twice, as Redis writes it."""
    if c.proto == 3:
        parts = [b"%%%d\r\n" % len(served)]
        for key, entries in served:
            parts.append(b"$%d\r\n%b\r\n" % (len(key), key))
            parts.append(encode(entries, 3))
        return Raw(b"".join(parts))
    return [[key, entries] for key, entries in served]


def _read(c, argv: list, grouped: bool):
    a = _parse(c, argv, grouped)
    served = []
    for key, gt in zip(a.keys, a.ids):
        e, s = read_stream(c, key)
        if s is None:
            continue
        history = False
        if a.group is not None:
            g = s.groups[a.group]
            if gt != MAX_ID:
                history = True
            elif s.length and s.last_live() > g.last_id:
                gt = g.last_id
            else:
                continue
        elif not s.length or s.last_live() <= gt:
            continue
        served.append((key, _deliver(c, e, s, key, a, gt + 1, a.count, history)))
    if served:
        return _reply(c, served)
    if a.timeout == -1 or not may_block(c):
        return NULL_ARRAY
    count = a.count or XREAD_BLOCKED_DEFAULT_COUNT
    waits = dict(zip(a.keys, a.ids))
    db = c.db
    seen = {}                    # key -> the value it held when last looked at
    for key in a.keys:
        e = db.peek(key)
        seen[key] = db.vals[e] if e is not None else None

    def serve(cl, key):
        e = cl.db.lookup_notouch(key)
        s = cl.db.vals[e] if e is not None else None
        if s is None or s.__class__ is not Stream:
            if a.group is not None:
                raise CommandError(errors.XREADGROUP_DELETED)
            seen[key] = s
            return NOT_READY
        # Redis signals a stream key on XADD, XGROUP DESTROY and when a value is added or
        # replaced (RENAME, RESTORE, MKSTREAM ...): a write in place that added nothing
        # (XACK, XGROUP SETID ...) serves nobody
        if s is seen[key] and (cl.db.id, key) not in cl.server.blocking.xready:
            return NOT_READY
        seen[key] = s
        gt = waits[key]
        if a.group is not None:
            g = s.groups.get(a.group)
            if g is None:
                raise CommandError(errors.XREADGROUP_GROUP_GONE)
            gt = g.last_id
        if s.last_id <= gt:
            return NOT_READY
        return _reply(cl, [(key, _deliver(cl, e, s, key, a, gt + 1, count, False))])

    return c.server.blocking.block(c, a.keys, Stream, serve, a.timeout)


@command("xread", -4, "readonly blocking movablekeys", group="stream")
def xread(c, argv):
    """XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
    Returns the entries after the given IDs of one or more streams, optionally blocking."""
    return _read(c, argv, False)


@command("xreadgroup", -7, "write blocking movablekeys", group="stream")
def xreadgroup(c, argv):
    """XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
    Reads entries for a consumer of a group: new ones (>) or its pending history."""
    return _read(c, argv, True)


def xread_keys(argv: list) -> list:
    """Redis xreadGetKeys: the keys after the first STREAMS option (half the words that
    follow it), none when the call is malformed.  Complexity: O(len(argv))."""
    pos = -1
    i, n = 1, len(argv)
    while i < n:
        arg = argv[i].lower()
        if arg == b"block" or arg == b"count":
            i += 1
        elif arg == b"group":
            i += 2
        elif arg == b"streams":
            pos = i
            break
        elif arg != b"noack":
            break
        i += 1
    num = n - pos - 1
    if pos == -1 or num == 0 or num % 2:
        return []
    return argv[pos + 1:pos + 1 + num // 2]


COMMANDS[b"xread"].getkeys = xread_keys
COMMANDS[b"xreadgroup"].getkeys = xread_keys
COMMANDS[b"xread"].keyspace_read = True   # a read of keys (CLIENT TRACKING remembers them)
