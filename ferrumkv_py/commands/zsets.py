"""Sorted set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK ZPOPMIN ZPOPMAX
ZRANDMEMBER ZSCAN; the range commands (ZRANGE and its family, ZCOUNT, ZLEXCOUNT,
ZREMRANGEBY*) are in ``zranges.py``.

The value is a :class:`~ferrumkv_py.zset.ZSet` (its module docstring explains the two
indexes and the range bisections).  Every change reports its exact memory delta
(``memory.zset_member_cost`` per member added or removed) through ``Database.grow``, and a
sorted set left empty is deleted.

Scores are read with C ``strtod`` rules (``util.parse_double``: ``0x10`` is 16, ``1e400``
is refused) and sent as Redis 7.0 does: a RESP3 double, or in RESP2 a bulk string of
``%.17g`` (``1.1`` -> ``1.1000000000000001``, ``inf``).  WITHSCORES replies are
``[member, score]`` pairs in RESP3 and a flat array in RESP2.
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError
from ..notify import NOTIFY_GENERIC, NOTIFY_ZSET
from ..registry import command
from ..resp import format_double
from ..zset import ZSet, score_text
from ._util import (EXACT_INT_DIGITS, bulk_array, parse_double, parse_pop_count,
                   parse_random_count, random_pick_reply, read_typed, scan_reply, shrink,
                   write_typed)

_EMPTY = bulk_array([])
_cost = memory.zset_member_cost
_MEMBER = memory.ZSET_MEMBER_OVERHEAD    # _cost(m) == _MEMBER + len(m)


def notify_shrunk(c, emptied: bool, key: bytes, event: bytes) -> None:
    """``event`` on the sorted set, then "del" if it was emptied (and so deleted)."""
    c.ks.notify(c.db, NOTIFY_ZSET, event, key)
    if emptied:
        c.ks.notify(c.db, NOTIFY_GENERIC, b"del", key)


def _read(c, key: bytes):
    return read_typed(c, key, ZSet)


def _write(c, key: bytes):
    return write_typed(c, key, ZSet)


def _scored(c, pairs) -> object:
    """(score, member) pairs as a WITHSCORES reply for this client's protocol."""
    if c.proto == 3:
        return [[m, s] for s, m in pairs]
    flat = []
    for s, m in pairs:
        flat.append(m)
        flat.append(format_double(s))
    return bulk_array(flat)


# ---- ZADD / ZINCRBY ----

_ZADD_FLAGS = {b"nx": "nx", b"xx": "xx", b"ch": "ch", b"incr": "incr", b"gt": "gt", b"lt": "lt"}


def _zadd(c, key: bytes, flags: set, args: list):
    """The shared body of ZADD and ZINCRBY (Redis zaddGenericCommand)."""
    if not args or len(args) % 2:
        raise CommandError(errors.SYNTAX)
    nx, xx, gt, lt, incr = ("nx" in flags, "xx" in flags, "gt" in flags, "lt" in flags,
                            "incr" in flags)
    if nx and xx:
        raise CommandError(errors.ZADD_XX_AND_NX)
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise CommandError(errors.ZADD_GT_LT_NX)
    if incr and len(args) > 2:
        raise CommandError(errors.ZADD_INCR_SINGLE_PAIR)
    pairs = [(parse_double(args[i]), args[i + 1]) for i in range(0, len(args), 2)]
    e = _write(c, key)
    if e is None:
        if xx:
            return None if incr else 0
        z = ZSet(len(pairs[0][1]))
    else:
        z = c.db.vals[e]
    added = updated = processed = delta = 0
    score = None
    for score, member in pairs:
        cur = z.score(member)
        if cur is None:
            if xx:
                continue
            z.insert(member, score)
            delta += _cost(member)
            added += 1
        else:
            if nx:
                continue
            if incr:
                score += cur
                if score != score:
                    raise CommandError(errors.ZSCORE_NAN)
            if (lt and score >= cur) or (gt and score <= cur):
                continue
            if score != cur:
                z.update(member, score)
                updated += 1
        processed += 1
    if e is None:
        z.mem += delta
        c.db.add(key, z)
    elif added or updated:
        c.db.grow(e, delta)
    if added or updated:
        c.ks.notify(c.db, NOTIFY_ZSET, b"zincr" if incr else b"zadd", key)
    if incr:
        return score if processed else None
    return added + updated if "ch" in flags else added


@command("zadd", -4, "write denyoom fast", first_key=1, group="sorted-set")
def zadd(c, argv):
    """ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
    Adds members or updates their scores; returns how many were added (or changed, CH).

    Complexity: O(log n) per member."""
    if len(argv) == 4:
        # ``ZADD key score member`` with a plain integer score (no flag is all digits) on
        # an existing sorted set without a TTL: _zadd's flag set, pair list and
        # Database.lookup_write / grow inline; no side effect before the checks, so
        # _zadd sees the keyspace unchanged.  ZADD -P 16 5.44 -> 3.83 us/command, 675 ->
        # 483 opcodes/command (command layer 439 -> 247, of which SortedList.add/remove
        # were ~110), bench/command_cost.py.  (parse_double's fast path: same test, float.)
        # The order is a ScoreOrder since (score_order.py: server CPU 6.3-7.6 -> 5.2-6.5 us).
        sc = argv[2]
        if sc.isdigit() and len(sc) <= EXACT_INT_DIGITS:
            db = c.db
            key = argv[1]
            e = db.find(key)
            if e is not None and not db.exp[e]:
                z = db.vals[e]
                if z.__class__ is ZSet:
                    db.touch(e)
                    ks = db.ks
                    m = argv[3]
                    score = float(sc)
                    cur = z.scores.get(m)
                    if cur is None:
                        z.insert(m, score)
                        delta = _MEMBER + len(m)
                        z.mem += delta
                        ks.used_memory += delta
                    elif score != cur:
                        z.update(m, score)
                    else:
                        return 0            # unchanged: no signal, as _zadd
                    if ks.watched:
                        ks.signal(db, key)
                    if ks.notify_flags:
                        ks.notify(db, NOTIFY_ZSET, b"zadd", key)
                    return 1 if cur is None else 0
    return _zadd_argv(c, argv)


def _zadd_argv(c, argv):
    """ZADD's general path: the flags, then :func:`_zadd`."""
    flags, i = set(), 2
    while i < len(argv) and argv[i].lower() in _ZADD_FLAGS:
        flags.add(_ZADD_FLAGS[argv[i].lower()])
        i += 1
    return _zadd(c, argv[1], flags, argv[i:])


@command("zincrby", 4, "write denyoom fast", first_key=1, group="sorted-set")
def zincrby(c, argv):
    """ZINCRBY key increment member
    Adds to a member's score (a new member starts at 0); returns the new score."""
    return _zadd(c, argv[1], {"incr"}, argv[2:])


@command("zrem", -3, "write fast", first_key=1, group="sorted-set")
def zrem(c, argv):
    """ZREM key member [member ...]
    Removes members; returns how many were there."""
    e = _write(c, argv[1])
    if e is None:
        return 0
    z = c.db.vals[e]
    gone = [m for m in argv[2:] if z.remove(m)]
    if gone:
        emptied = shrink(c, e, -sum(map(_cost, gone)))
        notify_shrunk(c, emptied, argv[1], b"zrem")
    return len(gone)


# ---- point reads ----

@command("zscore", 3, "readonly fast", first_key=1, group="sorted-set")
def zscore(c, argv):
    """ZSCORE key member
    Returns a member's score (a double), or null."""
    e = _read(c, argv[1])
    return None if e is None else c.db.vals[e].score(argv[2])


@command("zmscore", -3, "readonly fast", first_key=1, group="sorted-set")
def zmscore(c, argv):
    """ZMSCORE key member [member ...]
    Returns the score of each member (null where missing)."""
    e = _read(c, argv[1])
    if e is None:
        return [None] * (len(argv) - 2)
    get = c.db.vals[e].scores.get
    return [get(m) for m in argv[2:]]


@command("zcard", 2, "readonly fast", first_key=1, group="sorted-set")
def zcard(c, argv):
    """ZCARD key
    Returns the number of members (0 if the key does not exist)."""
    e = _read(c, argv[1])
    return 0 if e is None else len(c.db.vals[e])


def _rank(c, argv, rev: bool):
    e = _read(c, argv[1])
    if e is None:
        return None
    r = c.db.vals[e].rank(argv[2])
    if r is None or not rev:
        return r
    return len(c.db.vals[e]) - 1 - r


@command("zrank", 3, "readonly fast", first_key=1, group="sorted-set")
def zrank(c, argv):
    """ZRANK key member
    Returns a member's 0-based rank by ascending score, or null."""
    return _rank(c, argv, False)


@command("zrevrank", 3, "readonly fast", first_key=1, group="sorted-set")
def zrevrank(c, argv):
    """ZREVRANK key member
    Returns a member's 0-based rank by descending score, or null."""
    return _rank(c, argv, True)


def _zpop(c, argv, highest: bool):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = parse_pop_count(argv[2]) if len(argv) == 3 else None
    e = _write(c, argv[1])
    if e is None or count == 0:
        return _EMPTY
    popped = c.db.vals[e].pop(1 if count is None else count, highest)
    emptied = shrink(c, e, -sum(_cost(m) for m, _ in popped))
    if popped:
        notify_shrunk(c, emptied, argv[1], b"zpopmax" if highest else b"zpopmin")
    if count is None:
        m, s = popped[0]
        return [m, s]
    return _scored(c, [(s, m) for m, s in popped])


@command("zpopmin", -2, "write fast", first_key=1, group="sorted-set")
def zpopmin(c, argv):
    """ZPOPMIN key [count]
    Removes and returns the members with the lowest scores."""
    return _zpop(c, argv, False)


@command("zpopmax", -2, "write fast", first_key=1, group="sorted-set")
def zpopmax(c, argv):
    """ZPOPMAX key [count]
    Removes and returns the members with the highest scores."""
    return _zpop(c, argv, True)


@command("zrandmember", -2, "readonly", first_key=1, group="sorted-set")
def zrandmember(c, argv):
    """ZRANDMEMBER key [count [WITHSCORES]]
    Returns random members: distinct ones for count > 0, possibly repeated for count < 0.

    Complexity: O(log n) without a count, else O(n + |count|) (the members are copied)."""
    if len(argv) == 2:
        e = _read(c, argv[1])
        if e is None:
            return None
        z = c.db.vals[e]
        return z.order[int(c.ks.rng.random() * len(z))][1]
    count, withscores = parse_random_count(argv, b"withscores")
    e = _read(c, argv[1])
    if e is None:
        return _EMPTY
    z = c.db.vals[e]
    members = list(z.members())
    members.reverse()  # Redis walks a sorted set from the tail: a full pick comes out reversed
    return random_pick_reply(c, members, count, z.scores.get if withscores else None)


@command("zscan", -3, "readonly", first_key=1, group="sorted-set")
def zscan(c, argv):
    """ZSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates members and scores (here: all of them, with cursor 0)."""
    return scan_reply(c, argv, ZSet, lambda z: ((m, score_text(z, s)) for s, m in z.order))
