"""Sorted sets: :class:`ZSet` and the score / lex range specs its queries take.

Structure
---------
A ZSet is two indexes over the same members, kept in step by every method::

    scores  dict   member -> score                 O(1) ZSCORE, membership
    order   ScoreOrder of (score, member) pairs    O(log n) insert, delete, rank, bisect

    ZADD z 1 b 1 a 2 c   ->   scores {b: 1, a: 1, c: 2}
                              order  [(1, a), (1, b), (2, c)]   rank 0 1 2

Pairs order by score, then by member bytes, which is Redis's skiplist order (ties broken
by ``memcmp``).  ``order`` (score_order.py) is a list of sorted sublists with the scores
as C doubles, so positional access (``order[i]``, rank of a pair) is O(log n) as a
skiplist's span counts are.

Redis 7.0 stores a small sorted set as a listpack and converts it to a skiplist for good
once it holds more than ``ZSET_MAX_LISTPACK_ENTRIES`` members or a member longer than
``ZSET_MAX_LISTPACK_VALUE`` bytes.  Two things a client can see depend on it, so
``listpack`` tracks the same one-way switch: OBJECT ENCODING, ZSCAN's score text, and
negative zero, which a listpack stores as the integer ``0`` while a skiplist keeps ``-0``.

Ranges
------
Score ranges (:class:`ScoreRange`) map to half-open position spans with two bisections:
``score > min`` is ``score >= nextafter(min, +inf)`` for doubles, so exclusive bounds need no
sentinel member.  Lex ranges (:class:`LexRange`) assume, as Redis does, that all members
share one score; then they bisect on ``(score, member)``.  When scores differ the result is
unspecified in Redis too; a listpack-sized set is then walked linearly the way Redis walks
a listpack, and a larger one is binary-searched the way a skiplist descends.

``mem`` is the modelled size (``memory.CONTAINER_BASE["zset"]`` plus one
``memory.zset_member_cost`` per member); commands keep it current through ``Database.grow``,
so the methods here never touch it.

Complexity: score/rank/remove/insert O(log n); a range of k members O(log n + k).
"""

from __future__ import annotations

import math

from . import memory
from .score_order import ScoreOrder
from .values import index_span

# Redis 7.0 defaults; the server's zset-max-listpack-* configs rebind these two names
# (config_redis.install), so read them as zset.NAME at call time, not imported copies.
ZSET_MAX_LISTPACK_ENTRIES = 128    # members; Redis 7.0 zset-max-listpack-entries
ZSET_MAX_LISTPACK_VALUE = 64       # bytes per member; Redis 7.0 zset-max-listpack-value

_INF = math.inf


class ScoreRange:
    """``min``/``max`` scores with exclusive flags (``(1.5`` is exclusive, ``1.5`` is not)."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo: float, hi: float, minex: bool = False, maxex: bool = False):
        self.min, self.max, self.minex, self.maxex = lo, hi, minex, maxex

    def empty(self) -> bool:
        """True when no score can be inside (Redis zslIsInRange's first test)."""
        return self.min > self.max or (self.min == self.max and (self.minex or self.maxex))

    def gte_min(self, score: float) -> bool:
        return score > self.min if self.minex else score >= self.min

    def lte_max(self, score: float) -> bool:
        return score < self.max if self.maxex else score <= self.max


class _Bound:
    """The lex range ends ``-`` (below every string) and ``+`` (above every string)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


LEX_MIN = _Bound("-")
LEX_MAX = _Bound("+")


def _lex_cmp(a, b) -> int:
    """Redis sdscmplex: compare members where ``LEX_MIN`` / ``LEX_MAX`` are the extremes."""
    if a is b:
        return 0
    if a is LEX_MIN or b is LEX_MAX:
        return -1
    if a is LEX_MAX or b is LEX_MIN:
        return 1
    return (a > b) - (a < b)


class LexRange:
    """A member range: ``min``/``max`` are bytes or LEX_MIN / LEX_MAX, with exclusive flags."""

    __slots__ = ("min", "max", "minex", "maxex")

    def __init__(self, lo, hi, minex: bool = False, maxex: bool = False):
        self.min, self.max, self.minex, self.maxex = lo, hi, minex, maxex

    def empty(self) -> bool:
        c = _lex_cmp(self.min, self.max)
        return c > 0 or (c == 0 and (self.minex or self.maxex))

    def gte_min(self, member: bytes) -> bool:
        c = _lex_cmp(member, self.min)
        return c > 0 if self.minex else c >= 0

    def lte_max(self, member: bytes) -> bool:
        c = _lex_cmp(member, self.max)
        return c < 0 if self.maxex else c <= 0


def parse_lex_item(b: bytes):
    """One ZRANGEBYLEX bound: ``(value, exclusive)``, or None if it is not ``- + [x (x``."""
    if b == b"-":
        return LEX_MIN, False
    if b == b"+":
        return LEX_MAX, False
    if b[:1] == b"(":
        return b[1:], True
    if b[:1] == b"[":
        return b[1:], False
    return None


# Redis 7.0 prints a stored score in two ways (ZSCAN shows which): a listpack keeps an
# integral score within +-LLONG_MAX/2 as an integer (double2ll), else the text d2string makes,
# which uses integer digits only within +-2**52 and "%.17g" beyond.
LISTPACK_INT_SCORE_MAX = float(2 ** 62 - 1)     # (double)(LLONG_MAX / 2)
D2STRING_INT_MIN = -4503599627370495.0          # -(2**52 - 1)
D2STRING_INT_MAX = 4503599627370496.0           # 2**52


def score_text(z: "ZSet", score: float) -> bytes:
    """A score as Redis 7.0 stores it in ``z``'s encoding (ZSCAN's reply text)."""
    if score != score:
        return b"nan"
    if z.listpack and -LISTPACK_INT_SCORE_MAX <= score <= LISTPACK_INT_SCORE_MAX \
            and score == int(score):
        return b"%d" % int(score)
    if score in (_INF, -_INF):
        return b"inf" if score > 0 else b"-inf"
    if score == 0.0:
        return b"-0" if math.copysign(1.0, score) < 0 else b"0"
    if D2STRING_INT_MIN < score < D2STRING_INT_MAX and score == int(score):
        return b"%d" % int(score)
    return b"%.17g" % score


class ZSet:
    """A sorted set value; see the module docstring for the two indexes."""

    __slots__ = ("scores", "order", "mem", "listpack")

    def __init__(self, first_member_len: int = 0):
        self.scores: dict[bytes, float] = {}
        self.order = ScoreOrder()
        self.mem = memory.CONTAINER_BASE["zset"]
        # Redis 7.0 ZADD creates a skiplist right away only for a long first member.
        self.listpack = (first_member_len <= ZSET_MAX_LISTPACK_VALUE
                         and ZSET_MAX_LISTPACK_ENTRIES > 0)

    def __len__(self) -> int:
        return len(self.scores)

    def __contains__(self, member) -> bool:
        return member in self.scores

    def members(self):
        """Every member in score order (``memory.recount`` walks this)."""
        return (m for _, m in self.order)

    @property
    def encoding(self) -> str:
        """What Redis 7.0's OBJECT ENCODING would say: ``listpack`` or ``skiplist``."""
        return "listpack" if self.listpack else "skiplist"

    # ---- updates (callers account memory) ----

    def score(self, member: bytes):
        """The member's score, or None.  Complexity: O(1)."""
        return self.scores.get(member)

    def insert(self, member: bytes, score: float) -> None:
        """Add a member known to be absent.  Complexity: O(log n)."""
        if self.listpack and (len(self.scores) >= ZSET_MAX_LISTPACK_ENTRIES
                              or len(member) > ZSET_MAX_LISTPACK_VALUE):
            self.listpack = False
        if self.listpack and score == 0.0:
            score = 0.0  # a listpack stores -0 as the integer 0
        self.scores[member] = score
        self.order.add((score, member))

    def update(self, member: bytes, score: float) -> None:
        """Change a present member's score.  Complexity: O(log n)."""
        old = self.scores[member]
        if score == old:
            return  # Redis leaves the stored score (even -0 vs 0) as it was
        if self.listpack and score == 0.0:
            score = 0.0
        self.order.remove((old, member))
        self.scores[member] = score
        self.order.add((score, member))

    def remove(self, member: bytes) -> bool:
        """Delete a member; False if absent.  Complexity: O(log n)."""
        score = self.scores.pop(member, None)
        if score is None:
            return False
        self.order.remove((score, member))
        return True

    def pop(self, count: int, highest: bool = False) -> list:
        """ZPOPMIN / ZPOPMAX: remove up to ``count`` (member, score) pairs from one end.

        Complexity: O(count log n).
        """
        order, scores = self.order, self.scores
        out = []
        for _ in range(min(count, len(order))):
            score, member = order.pop(-1 if highest else 0)
            del scores[member]
            out.append((member, score))
        return out

    def delete_span(self, lo: int, hi: int) -> list:
        """Remove the members at positions ``lo:hi``; returns them.  O((hi-lo) + log n)."""
        if lo >= hi:
            return []
        gone = [m for _, m in self.order.islice(lo, hi)]
        del self.order[lo:hi]
        scores = self.scores
        for m in gone:
            del scores[m]
        return gone

    def copy(self) -> "ZSet":
        """An independent copy with the same members, encoding and ``mem`` (COPY)."""
        z = ZSet()
        z.scores = dict(self.scores)
        z.order = self.order.copy()
        z.mem = self.mem
        z.listpack = self.listpack
        return z

    # ---- positions and ranges ----

    def rank(self, member: bytes):
        """0-based rank in ascending order, or None.  Complexity: O(log n)."""
        score = self.scores.get(member)
        if score is None:
            return None
        return self.order.index((score, member))

    def span(self, lo: int, hi: int, rev: bool = False) -> list:
        """(score, member) pairs at positions ``lo:hi``, reversed if asked.  O(log n + k)."""
        return list(self.order.islice(lo, hi, reverse=rev))

    def rank_span(self, start: int, end: int) -> tuple[int, int]:
        """Redis's rank rule (negative counts from the end, clamped): half-open positions.
        Complexity: O(1) (values.index_span)."""
        return index_span(len(self.order), start, end)

    def select(self, by: str, rng, rev: bool = False, offset: int = 0, limit: int = -1):
        """The (score, member) pairs of one ZRANGE, in reply order.

        ``by`` is "rank" (``rng`` = (start, stop), ranks from the top when ``rev``), "score"
        (a ScoreRange) or "lex" (a LexRange); LIMIT's ``offset`` skips, ``limit`` < 0 means
        no limit.  Complexity: O(log n + offset + k)."""
        n = len(self.order)
        if by == "rank":
            lo, hi = self.rank_span(*rng)
            return self.span(n - hi, n - lo, True) if rev else self.span(lo, hi)
        lo, hi = self.score_span(rng) if by == "score" else self.lex_span(rng, rev)
        if offset < 0:
            return []  # Redis skips "offset" members with a countdown that never ends
        if rev:
            hi -= offset
            lo = lo if limit < 0 else max(lo, hi - limit)
            return self.span(lo, hi, True) if hi > lo else []
        lo += offset
        hi = hi if limit < 0 else min(hi, lo + limit)
        return self.span(lo, hi) if hi > lo else []

    def score_span(self, r: ScoreRange) -> tuple[int, int]:
        """Half-open positions of the members whose score is in ``r``.  O(log n)."""
        order = self.order
        n = len(order)
        if r.empty() or n == 0:
            return 0, 0
        if r.minex:
            lo = n if r.min == _INF else order.bisect_left((math.nextafter(r.min, _INF),))
        else:
            lo = order.bisect_left((r.min,))
        if r.maxex:
            hi = order.bisect_left((r.max,))
        else:
            hi = n if r.max == _INF else order.bisect_left((math.nextafter(r.max, _INF),))
        return lo, max(lo, hi)

    def lex_span(self, r: LexRange, rev: bool = False) -> tuple[int, int]:
        """Half-open positions of the members a Redis lex walk returns for ``r``.

        Forward walks start at the first member >= min and stop at the first one > max;
        reverse walks start at the last member <= max (see the module docstring for
        mixed scores).  Complexity: O(log n) when all scores are equal (the defined case),
        O(n) for a listpack-sized set with mixed scores, O(log^2 n) otherwise.
        """
        order = self.order
        n = len(order)
        if n == 0 or r.empty() or not r.gte_min(order[-1][1]) or not r.lte_max(order[0][1]):
            return 0, 0
        if order[0][0] == order[-1][0]:
            return self._lex_bisect(r)
        if self.listpack:
            return self._lex_walk(r, rev)
        lo = self._first_true(lambda m: r.gte_min(m))
        hi = self._first_true(lambda m: not r.lte_max(m))
        return lo, max(lo, hi)

    def _lex_bisect(self, r: LexRange) -> tuple[int, int]:
        order = self.order
        s = order[0][0]
        if r.min is LEX_MIN:
            lo = 0
        else:
            lo = (order.bisect_right if r.minex else order.bisect_left)((s, r.min))
        if r.max is LEX_MAX:
            hi = len(order)
        else:
            hi = (order.bisect_left if r.maxex else order.bisect_right)((s, r.max))
        return lo, max(lo, hi)

    def _lex_walk(self, r: LexRange, rev: bool) -> tuple[int, int]:
        members = [m for _, m in self.order]
        n = len(members)
        if not rev:
            lo = next((i for i in range(n) if r.gte_min(members[i])), n)
            if lo == n or not r.lte_max(members[lo]):
                return 0, 0
            hi = lo
            while hi < n and r.lte_max(members[hi]):
                hi += 1
            return lo, hi
        last = next((i for i in range(n - 1, -1, -1) if r.lte_max(members[i])), -1)
        if last < 0 or not r.gte_min(members[last]):
            return 0, 0
        lo = last
        while lo > 0 and r.gte_min(members[lo - 1]):
            lo -= 1
        return lo, last + 1

    def _first_true(self, pred) -> int:
        """Binary search: the first position whose member satisfies a monotone ``pred``."""
        order = self.order
        lo, hi = 0, len(order)
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(order[mid][1]):
                hi = mid
            else:
                lo = mid + 1
        return lo

    # ---- invariants ----

    def _check(self) -> None:
        """Assert the two indexes agree, scores are not NaN, and the encoding rule holds."""
        order, scores = self.order, self.scores
        order._check()
        assert len(order) == len(scores), (len(order), len(scores))
        for score, member in order:
            assert scores[member] == score and scores[member] is not None
            assert score == score, "NaN score"
            if self.listpack:
                assert len(member) <= ZSET_MAX_LISTPACK_VALUE
                assert not (score == 0.0 and math.copysign(1.0, score) < 0), "-0 in listpack"
        if self.listpack:
            assert len(order) <= ZSET_MAX_LISTPACK_ENTRIES
