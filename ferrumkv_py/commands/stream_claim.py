"""XCLAIM and XAUTOCLAIM: pending entries change owner.

Claiming moves a NACK from one consumer's PEL to another's (``stream.py`` keeps the group's
and the consumers' PELs in step), sets its delivery time (now, or IDLE / TIME) and counts a
delivery unless JUSTID (or sets RETRYCOUNT).  An ID whose entry was deleted from the stream
is dropped from the PEL when met (XAUTOCLAIM lists those IDs in its third reply).  FORCE
creates the NACK of an entry that exists but is pending nowhere.  Errors in
t_stream.c's words and order: XCLAIM checks the key and group before its arguments,
XAUTOCLAIM after them.

Complexity: XCLAIM O(log n + log p) per ID; XAUTOCLAIM at most COUNT * 10 PEL steps.
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..stream import Nack, id_text
from ._util import LLONG_MAX, parse_int
from .stream_groups import _text, create_consumer, nogroup
from .streams import account_quiet, entry_reply, interval_start, read_stream, strict_id

AUTOCLAIM_DEFAULT_COUNT = 100
AUTOCLAIM_ATTEMPTS_FACTOR = 10     # PEL entries looked at per entry claimed, at most
AUTOCLAIM_COUNT_MAX = LLONG_MAX // 16   # LONG_MAX / max(sizeof(streamID), attempts factor)


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
        raise nogroup(argv[1], argv[2])
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
    account_quiet(c, s, before)
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
        raise nogroup(argv[1], argv[2])
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
    account_quiet(c, s, before)
    return [cursor, claimed, deleted]
