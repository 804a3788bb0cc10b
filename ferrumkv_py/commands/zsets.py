"""Sorted set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK ZCOUNT
ZLEXCOUNT ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES) ZRANGESTORE ZRANGEBYSCORE
ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE ZPOPMIN ZPOPMAX ZREMRANGEBYRANK
ZREMRANGEBYSCORE ZREMRANGEBYLEX ZRANDMEMBER ZSCAN.

The value is a :class:`~ferrumkv_py.zset.ZSet` (its module docstring explains the two
indexes and the range bisections).  Every change reports its exact memory delta
(``memory.zset_member_cost`` per member added or removed) through ``Database.grow``, and a
sorted set left empty is deleted.

Scores are read with C ``strtod`` rules (``util.parse_double``: ``0x10`` is 16, ``1e400``
is refused) and sent as Redis 7.0 does: a RESP3 double, or in RESP2 a bulk string of
``%.17g`` (``1.1`` -> ``1.1000000000000001``, ``inf``).  WITHSCORES replies are
``[member, score]`` pairs in RESP3 and a flat array in RESP2.  Range bounds follow
``zslParseRange`` (``(`` exclusive, ``-inf``/``+inf``, no ERANGE check) and
``zslParseLexRange`` (``[x (x - +``).
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError
from ..registry import command
from ..resp import format_double
from ..zset import LexRange, ScoreRange, ZSet, parse_lex_item, score_text
from .util import (EXACT_INT_DIGITS, LLONG_MAX, bulk_array, parse_double, parse_int,
                   parse_pop_count, parse_random_count, random_pick_reply, read_typed,
                   scan_reply, shrink, strtod, write_typed)

_EMPTY = bulk_array([])
_cost = memory.zset_member_cost
_MEMBER = memory.ZSET_MEMBER_OVERHEAD    # _cost(m) == _MEMBER + len(m)


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
        z = e.value
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
        # are ~110), bench/command_cost.py.  (parse_double's fast path: same test, float.)
        sc = argv[2]
        if sc.isdigit() and len(sc) <= EXACT_INT_DIGITS:
            db = c.db
            key = argv[1]
            e = db.data.get(key)
            if e is not None and e.exp <= 0:
                z = e.value
                if z.__class__ is ZSet:
                    ks = db.ks
                    if ks.lfu_on:
                        e.lfu = ks.lfu_touch(e.lfu, e.lru, ks.now_ms)
                    e.lru = ks.now_ms
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
    z = e.value
    gone = [m for m in argv[2:] if z.remove(m)]
    if gone:
        shrink(c, e, -sum(map(_cost, gone)))
    return len(gone)


# ---- point reads ----

@command("zscore", 3, "readonly fast", first_key=1, group="sorted-set")
def zscore(c, argv):
    """ZSCORE key member
    Returns a member's score (a double), or null."""
    e = _read(c, argv[1])
    return None if e is None else e.value.score(argv[2])


@command("zmscore", -3, "readonly fast", first_key=1, group="sorted-set")
def zmscore(c, argv):
    """ZMSCORE key member [member ...]
    Returns the score of each member (null where missing)."""
    e = _read(c, argv[1])
    if e is None:
        return [None] * (len(argv) - 2)
    get = e.value.scores.get
    return [get(m) for m in argv[2:]]


@command("zcard", 2, "readonly fast", first_key=1, group="sorted-set")
def zcard(c, argv):
    """ZCARD key
    Returns the number of members (0 if the key does not exist)."""
    e = _read(c, argv[1])
    return 0 if e is None else len(e.value)


def _rank(c, argv, rev: bool):
    e = _read(c, argv[1])
    if e is None:
        return None
    r = e.value.rank(argv[2])
    if r is None or not rev:
        return r
    return len(e.value) - 1 - r


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


# ---- range parsing ----

def _score_bound(b: bytes):
    ex = b[:1] == b"("
    text = (b[1:] if ex else b).split(b"\0", 1)[0]   # strtod stops at NUL, as C does
    v, n, _ = strtod(text)
    if n != len(text) or v != v:
        raise CommandError(errors.MIN_MAX_NOT_FLOAT)
    return v, ex


def parse_score_range(lo: bytes, hi: bytes) -> ScoreRange:
    """Redis zslParseRange: ``1.5``, ``(1.5`` (exclusive), ``-inf``, ``+inf``."""
    (a, aex), (b, bex) = _score_bound(lo), _score_bound(hi)
    return ScoreRange(a, b, aex, bex)


def parse_lex_range(lo: bytes, hi: bytes) -> LexRange:
    """Redis zslParseLexRange: ``[a`` inclusive, ``(a`` exclusive, ``-`` and ``+``."""
    a, b = parse_lex_item(lo), parse_lex_item(hi)
    if a is None or b is None:
        raise CommandError(errors.MIN_MAX_NOT_STRING)
    return LexRange(a[0], b[0], a[1], b[1])


# ---- ZRANGE and its older spellings ----

def _zrange(c, argv: list, first: int, by: str | None, rev: bool | None, store: bytes | None):
    """Redis zrangeGenericCommand.  ``argv[first]`` is the source key, then min and max;
    ``by`` / ``rev`` are None when the options may choose them (ZRANGE, ZRANGESTORE)."""
    withscores, offset, limit = False, 0, -1
    j, n = first + 3, len(argv)
    while j < n:
        opt = argv[j].lower()
        if store is None and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and n - j - 1 >= 2:
            offset, limit = parse_int(argv[j + 1]), parse_int(argv[j + 2])
            j += 2
        elif opt == b"rev" and rev is None:
            rev = True
        elif opt in (b"bylex", b"byscore") and by is None:
            by = opt[2:].decode()
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    by, rev = by or "rank", bool(rev)
    if limit != -1 and by == "rank":
        raise CommandError(errors.ZRANGE_LIMIT_NEEDS_BY)
    if withscores and by == "lex":
        raise CommandError(errors.ZRANGE_BYLEX_WITHSCORES)
    lo, hi = argv[first + 1], argv[first + 2]
    if rev and by != "rank":
        lo, hi = hi, lo
    if by == "rank":
        rng = (parse_int(lo), parse_int(hi))
    elif by == "score":
        rng = parse_score_range(lo, hi)
    else:
        rng = parse_lex_range(lo, hi)
    e = _read(c, argv[first])
    pairs = [] if e is None else e.value.select(by, rng, rev, offset, limit)
    if store is not None:
        return _store(c, store, pairs)
    if withscores:
        return _scored(c, pairs)
    return bulk_array([m for _, m in pairs])


def _store(c, dst: bytes, pairs: list) -> int:
    """ZRANGESTORE: write the pairs as a new sorted set (or delete dst if none)."""
    if not pairs:
        c.db.delete(dst)
        return 0
    z = ZSet()
    for s, m in pairs:
        z.insert(m, s)
    z.mem += sum(_cost(m) for _, m in pairs)
    c.db.set(dst, z)
    return len(pairs)


@command("zrange", -4, "readonly", first_key=1, group="sorted-set")
def zrange(c, argv):
    """ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
    Returns members in a range of ranks, scores or members.

    Complexity: O(log n + k) for k members (plus the LIMIT offset)."""
    return _zrange(c, argv, 1, None, None, None)


@command("zrangestore", -5, "write denyoom", first_key=1, last_key=2, group="sorted-set")
def zrangestore(c, argv):
    """ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
    Stores a ZRANGE result in dst (deleted if empty); returns its size."""
    return _zrange(c, argv, 2, None, None, argv[1])


# The pre-6.2 spellings are ZRANGE with the BY / REV choice fixed:
# (name, by, rev, syntax line, summary) -> handler(c, argv) = _zrange(c, argv, 1, by, rev).
_OLD_RANGE_COMMANDS = (
    ("zrevrange", "rank", True, "ZREVRANGE key start stop [WITHSCORES]",
     "Returns members in a range of ranks, highest score first."),
    ("zrangebyscore", "score", False, "ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]",
     "Returns members with a score in [min, max], lowest first."),
    ("zrevrangebyscore", "score", True,
     "ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]",
     "Returns members with a score in [min, max], highest first."),
    ("zrangebylex", "lex", False, "ZRANGEBYLEX key min max [LIMIT offset count]",
     "Returns members between two strings (for members sharing one score)."),
    ("zrevrangebylex", "lex", True, "ZREVRANGEBYLEX key max min [LIMIT offset count]",
     "Returns members between two strings, in reverse order."),
)


def _old_range_handler(name: str, by: str, rev: bool, syntax: str, summary: str):
    def handler(c, argv):
        return _zrange(c, argv, 1, by, rev, None)
    handler.__name__ = name
    handler.__doc__ = syntax + "\n" + summary
    return command(name, -4, "readonly", first_key=1, group="sorted-set")(handler)


for _spec in _OLD_RANGE_COMMANDS:
    _old_range_handler(*_spec)


def _zcount(c, key: bytes, span_of) -> int:
    """How many members ``span_of(zset)`` covers; 0 for a missing key."""
    e = _read(c, key)
    if e is None:
        return 0
    lo, hi = span_of(e.value)
    return hi - lo


@command("zcount", 4, "readonly fast", first_key=1, group="sorted-set")
def zcount(c, argv):
    """ZCOUNT key min max
    Counts members with a score in the range.  Complexity: O(log n)."""
    rng = parse_score_range(argv[2], argv[3])
    return _zcount(c, argv[1], lambda z: z.score_span(rng))


@command("zlexcount", 4, "readonly fast", first_key=1, group="sorted-set")
def zlexcount(c, argv):
    """ZLEXCOUNT key min max
    Counts members between two strings.  Complexity: O(log n) for one shared score."""
    rng = parse_lex_range(argv[2], argv[3])
    return _zcount(c, argv[1], lambda z: z.lex_span(rng))


# ---- removals by position ----

def _zpop(c, argv, highest: bool):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = parse_pop_count(argv[2]) if len(argv) == 3 else None
    e = _write(c, argv[1])
    if e is None or count == 0:
        return _EMPTY
    popped = e.value.pop(1 if count is None else count, highest)
    shrink(c, e, -sum(_cost(m) for m, _ in popped))
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


def _zremrange(c, key: bytes, span_of) -> int:
    e = _write(c, key)
    if e is None:
        return 0
    lo, hi = span_of(e.value)
    gone = e.value.delete_span(lo, hi)
    if gone:
        shrink(c, e, -sum(map(_cost, gone)))
    return len(gone)


@command("zremrangebyrank", 4, "write", first_key=1, group="sorted-set")
def zremrangebyrank(c, argv):
    """ZREMRANGEBYRANK key start stop
    Removes the members in a range of ranks; returns how many."""
    start, end = parse_int(argv[2]), parse_int(argv[3])
    return _zremrange(c, argv[1], lambda z: z.rank_span(start, end))


@command("zremrangebyscore", 4, "write", first_key=1, group="sorted-set")
def zremrangebyscore(c, argv):
    """ZREMRANGEBYSCORE key min max
    Removes the members with a score in the range; returns how many."""
    rng = parse_score_range(argv[2], argv[3])
    return _zremrange(c, argv[1], lambda z: z.score_span(rng))


@command("zremrangebylex", 4, "write", first_key=1, group="sorted-set")
def zremrangebylex(c, argv):
    """ZREMRANGEBYLEX key min max
    Removes the members between two strings; returns how many."""
    rng = parse_lex_range(argv[2], argv[3])
    return _zremrange(c, argv[1], lambda z: z.lex_span(rng))


# ---- random members and SCAN ----

@command("zrandmember", -2, "readonly", first_key=1, group="sorted-set")
def zrandmember(c, argv):
    """ZRANDMEMBER key [count [WITHSCORES]]
    Returns random members: distinct ones for count > 0, possibly repeated for count < 0.

    Complexity: O(log n) without a count, else O(n + |count|) (the members are copied)."""
    if len(argv) == 2:
        e = _read(c, argv[1])
        if e is None:
            return None
        z = e.value
        return z.order[int(c.ks.rng.random() * len(z))][1]
    count, withscores = parse_random_count(argv, b"withscores")
    e = _read(c, argv[1])
    if e is None:
        return _EMPTY
    z = e.value
    members = list(z.members())
    members.reverse()  # Redis walks a sorted set from the tail: a full pick comes out reversed
    return random_pick_reply(c, members, count, z.scores.get if withscores else None)


@command("zscan", -3, "readonly", first_key=1, group="sorted-set")
def zscan(c, argv):
    """ZSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates members and scores (here: all of them, with cursor 0)."""
    return scan_reply(c, argv, ZSet, lambda z: ((m, score_text(z, s)) for s, m in z.order))
