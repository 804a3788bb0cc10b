"""Argument parsing shared by the command families, with Redis's exact error texts."""

from __future__ import annotations

import math
import re

from .. import errors
from ..errors import CommandError, WrongTypeError
from ..globmatch import glob_match, glob_matcher  # noqa: F401  (re-exported)
from ..resp import Raw, bulk_array  # noqa: F401  (bulk_array: re-exported, resp.py owns it)
from ._longdouble import (LD_INF, format_long_double_human, long_double_add,  # noqa: F401
                         parse_long_double)  # (re-exported: commands/strings.py)

LLONG_MIN = -(2 ** 63)
LLONG_MAX = 2 ** 63 - 1


def parse_int(b: bytes, msg: str = errors.NOT_INT) -> int:
    """Redis string2ll: a 64-bit signed decimal without spaces, '+' or leading zeros."""
    # Fast path: 1-18 ASCII digits, no leading zero, always fits in int64 (bytes.isdigit
    # is ASCII-only and False for b""): parse_int(b"12345") 332 -> 192 ns (timeit, with
    # the call), a negative number 361 -> 378 ns
    if b.isdigit() and len(b) < 19 and (b[0] != 48 or len(b) == 1):
        return int(b)
    if not b or len(b) > 20:
        raise CommandError(msg)
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or (s[:1] == b"0" and len(s) > 1) or b == b"-0":
        raise CommandError(msg)
    v = int(b)
    if v < LLONG_MIN or v > LLONG_MAX:
        raise CommandError(msg)
    return v


def parse_float(b: bytes, msg: str = errors.NOT_FLOAT) -> float:
    """Redis string2ld / strtod for scores and increments: no spaces, no NaN."""
    if not b or b[:1].isspace() or b[-1:].isspace():
        raise CommandError(msg)
    try:
        v = float(b)
    except ValueError:
        raise CommandError(msg) from None
    if math.isnan(v):
        raise CommandError(msg)
    return v


def check_type(db, e: int, cls) -> None:
    """Raise WRONGTYPE unless the value in slot ``e`` of ``db`` is of class ``cls``."""
    if db.vals[e].__class__ is not cls:
        raise WrongTypeError()


# ---- C number parsing: strtod as Redis sees it (sorted set scores) ----
#
# Redis reads scores with the C library's strtod, which is not Python's float(): it
# accepts hex floats ("0x10" = 16) and rejects "1_000"; it reports a
# literal that does not fit (1e400, 1e-400) through errno ERANGE.  The regex below is the
# grammar glibc accepts; the caller decides what counts as an error, as each Redis call
# site does (getDoubleFromObject refuses ERANGE, zslParseRange does not).

_STRTOD_RE = re.compile(
    rb"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:"
    rb"(?P<inf>inf(?:inity)?)|(?P<nan>nan(?:\([0-9a-z_]*\))?)|"
    rb"0x(?P<hex>[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?|"
    rb"(?P<dec>[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)", re.I)
_NONZERO_HEX = re.compile(rb"[1-9a-f]", re.I)
EXACT_INT_DIGITS = 15     # decimal digits every double holds exactly (DBL_DIG)


def strtod(b: bytes) -> tuple[float, int, bool]:
    """C ``strtod`` on bytes: ``(value, bytes consumed, erange)``.

    ``consumed`` is 0 when no number starts the string (C leaves ``eptr`` at the start).
    ``erange`` is True when the literal overflows to +-inf or underflows to zero.
    Complexity: O(len(b)).
    """
    m = _STRTOD_RE.match(b)
    if m is None:
        return 0.0, 0, False
    text = m.group(0).lstrip(b" \t\n\v\f\r")
    neg = m.group("sign") == b"-"
    if m.group("inf") is not None:
        return (-math.inf if neg else math.inf), m.end(), False
    if m.group("nan") is not None:
        return math.nan, m.end(), False
    mant = m.group("hex") if m.group("hex") is not None else m.group("dec")
    try:
        v = float.fromhex(text.decode()) if m.group("hex") is not None else float(text)
    except OverflowError:
        v = -math.inf if neg else math.inf
    erange = math.isinf(v) or (v == 0.0 and _NONZERO_HEX.search(mant) is not None)
    return v, m.end(), erange


def parse_double(b: bytes, msg: str = errors.NOT_FLOAT) -> float:
    """Redis ``getDoubleFromObject``: the whole argument is one finite-or-inf C double.

    Refused: empty, leading space, trailing bytes, a literal out of double range, NaN.
    Complexity: O(len(b)).
    """
    # Plain integers of up to 15 digits are exact doubles, the same in float() and strtod:
    # skip the grammar (ZADD -P 16 -17% CPU per command, bench/server_bench.py --parts
    # dispatch, where redis-benchmark sends integer scores).
    if b.isdigit() and len(b) <= EXACT_INT_DIGITS:
        return float(b)
    v, n, erange = strtod(b)
    if n == 0 or n != len(b) or b[:1] in b" \t\n\v\f\r" or erange or v != v:
        raise CommandError(msg)
    return v




# ---- container helpers: random picks with a count, and the one-reply xSCAN ----

ULONG_MAX = 2 ** 64 - 1
RANDOM_PAIRS_MAX = LLONG_MAX // 2   # Redis's LONG_MAX/2 bound on a count WITHVALUES/WITHSCORES
_CURSOR_RE = re.compile(rb"[+-]?[0-9]+\Z")


def random_pick_reply(c, items: list, count: int, value_of=None):
    """HRANDFIELD / ZRANDMEMBER with a count: the reply for ``items`` (a list copy).

    count >= 0: that many distinct items (all of them if count >= len); count < 0: |count|
    draws with repetition.  With ``value_of`` each item comes with its value: [item, value]
    pairs in RESP3, a flat item, value, ... array in RESP2.
    Complexity: O(len(items) + |count|).
    """
    rng = c.ks.rng
    n = len(items)
    if count < 0:   # bounded by the output limits before anything is built (_randpick.py)
        from ._randpick import draws_reply
        return draws_reply(c, items, -count, value_of)
    picked = items if count >= n else rng.sample(items, count)
    if value_of is None:
        return bulk_array(picked)
    if c.proto == 3:
        return [[x, value_of(x)] for x in picked]
    flat = []
    for x in picked:
        flat.append(x)
        flat.append(value_of(x))
    return flat


def parse_random_count(argv: list, flag: bytes) -> tuple[int, bool]:
    """HRANDFIELD / ZRANDMEMBER ``key count [WITHVALUES|WITHSCORES]``: ``(count, flag
    given)``, with Redis's errors in Redis's order (the count's range, then the syntax, then
    with the flag a count beyond +-LONG_MAX/2, whose doubled reply length would overflow:
    ``value is out of range``).  ``flag`` is the lower-case option name.  Complexity: O(1)."""
    count = parse_int(argv[2])
    if count < -LLONG_MAX:
        raise CommandError(errors.RANDOM_COUNT_RANGE)
    with_flag = len(argv) >= 4
    if with_flag and (argv[3].lower() != flag or len(argv) > 4):
        raise CommandError(errors.SYNTAX)
    if with_flag and not -RANDOM_PAIRS_MAX <= count <= RANDOM_PAIRS_MAX:
        raise CommandError(errors.OUT_OF_RANGE)
    return count, with_flag


def parse_pop_count(b: bytes) -> int:
    """The ``count`` of LPOP / RPOP / SPOP / ZPOPMIN / ZPOPMAX: an integer >= 0, else
    "value is out of range, must be positive".  Complexity: O(len(b))."""
    count = parse_int(b, errors.NOT_POSITIVE)
    if count < 0:
        raise CommandError(errors.NOT_POSITIVE)
    return count


def parse_scan_cursor(b: bytes) -> int:
    """Redis parseScanCursorOrReply (strtoul): digits with an optional sign, no spaces."""
    if _CURSOR_RE.match(b) is None:
        raise CommandError(errors.INVALID_CURSOR)
    v = int(b)
    if abs(v) > ULONG_MAX:
        raise CommandError(errors.INVALID_CURSOR)
    return v % (ULONG_MAX + 1)


def scan_reply(c, argv: list, cls, entries):
    """HSCAN / SSCAN / ZSCAN ``key cursor [MATCH pattern] [COUNT count]`` in one reply.

    ``entries(value)`` yields tuples whose first item is what MATCH tests (field, member)
    and whose items are all sent (field and value; member and score text).  Every match is
    returned at once with cursor 0: a full pass satisfies SCAN's guarantees (each element
    present throughout is returned), as Redis's own reply for small encodings does.
    Complexity: O(n) for a container of n elements.
    """
    parse_scan_cursor(argv[2])
    e = c.db.lookup_read(argv[1])
    if e is None:
        return [b"0", []]
    check_type(c.db, e, cls)
    pattern, i, n = None, 3, len(argv)
    while i < n:
        opt = argv[i].lower()
        if opt == b"count" and i + 1 < n:
            if parse_int(argv[i + 1]) < 1:
                raise CommandError(errors.SYNTAX)
        elif opt == b"match" and i + 1 < n:
            pattern = argv[i + 1]
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    match = glob_matcher(pattern, subjects=len(c.db.vals[e])) if pattern is not None else None
    out = []
    for t in entries(c.db.vals[e]):
        if match is None or match(t[0]):
            out.extend(t)
    return [b"0", out]


def read_typed(c, key: bytes, cls):
    """Read lookup (keyspace stats, touch) that raises WRONGTYPE unless the value is a ``cls``."""
    e = c.db.lookup_read(key)
    if e is not None and c.db.vals[e].__class__ is not cls:
        raise WrongTypeError()
    return e


def write_typed(c, key: bytes, cls):
    """Write-path lookup (no stats) that raises WRONGTYPE unless the value is a ``cls``."""
    e = c.db.lookup_write(key)
    if e is not None and c.db.vals[e].__class__ is not cls:
        raise WrongTypeError()
    return e


def shrink(c, e, delta_bytes: int) -> bool:
    """A container lost elements: account ``delta_bytes`` (< 0) and delete it if empty.
    Returns True when it deleted the key (its slot may then be reused by the next add: the
    caller decides its "del" event from this, not from the slot)."""
    c.db.grow(e, delta_bytes)
    if not c.db.vals[e]:
        c.db.unlink(e)
        return True
    return False
