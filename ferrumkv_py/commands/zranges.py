"""Sorted set range commands: ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES) ZRANGESTORE
ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE ZCOUNT ZLEXCOUNT
ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX, and the range bounds they parse.

Split from ``zsets.py`` (the single-member and pop commands), whose docstring gives the
reply and memory rules both follow.  Range bounds follow ``zslParseRange`` (``(``
exclusive, ``-inf``/``+inf``, no ERANGE check) and ``zslParseLexRange`` (``[x (x - +``).
Complexity: O(log n + m) for m members in the range (the ZSet's bisections).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..notify import NOTIFY_ZSET
from ..registry import command
from ..zset import LexRange, ScoreRange, ZSet, parse_lex_item
from ._stored import drop_notify
from ._util import bulk_array, parse_int, shrink, strtod
from .zsets import _cost, _read, _scored, _write, notify_shrunk

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
    pairs = [] if e is None else c.db.vals[e].select(by, rng, rev, offset, limit)
    if store is not None:
        return _store(c, store, pairs)
    if withscores:
        return _scored(c, pairs)
    return bulk_array([m for _, m in pairs])


def _store(c, dst: bytes, pairs: list) -> int:
    """ZRANGESTORE: write the pairs as a new sorted set (or delete dst if none)."""
    if not pairs:
        drop_notify(c, dst)     # an expired destination is a "del" too, as Redis
        return 0
    z = ZSet()
    for s, m in pairs:
        z.insert(m, s)
    z.mem += sum(_cost(m) for _, m in pairs)
    c.db.set(dst, z)
    c.ks.notify(c.db, NOTIFY_ZSET, b"zrangestore", dst)
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
    lo, hi = span_of(c.db.vals[e])
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


def _zremrange(c, key: bytes, span_of, event: bytes) -> int:
    e = _write(c, key)
    if e is None:
        return 0
    lo, hi = span_of(c.db.vals[e])
    gone = c.db.vals[e].delete_span(lo, hi)
    if gone:
        emptied = shrink(c, e, -sum(map(_cost, gone)))
        notify_shrunk(c, emptied, key, event)
    return len(gone)


@command("zremrangebyrank", 4, "write", first_key=1, group="sorted-set")
def zremrangebyrank(c, argv):
    """ZREMRANGEBYRANK key start stop
    Removes the members in a range of ranks; returns how many."""
    start, end = parse_int(argv[2]), parse_int(argv[3])
    return _zremrange(c, argv[1], lambda z: z.rank_span(start, end), b"zremrangebyrank")


@command("zremrangebyscore", 4, "write", first_key=1, group="sorted-set")
def zremrangebyscore(c, argv):
    """ZREMRANGEBYSCORE key min max
    Removes the members with a score in the range; returns how many."""
    rng = parse_score_range(argv[2], argv[3])
    return _zremrange(c, argv[1], lambda z: z.score_span(rng), b"zremrangebyscore")


@command("zremrangebylex", 4, "write", first_key=1, group="sorted-set")
def zremrangebylex(c, argv):
    """ZREMRANGEBYLEX key min max
    Removes the members between two strings; returns how many."""
    rng = parse_lex_range(argv[2], argv[3])
    return _zremrange(c, argv[1], lambda z: z.lex_span(rng), b"zremrangebylex")


# ---- random members and SCAN ----
