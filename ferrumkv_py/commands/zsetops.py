"""Sorted-set algebra: ZUNION ZINTER ZDIFF (WITHSCORES), ZUNIONSTORE ZINTERSTORE ZDIFFSTORE
(WEIGHTS, AGGREGATE SUM|MIN|MAX) and ZINTERCARD (LIMIT).

Inputs may be sorted sets or plain sets (every member of a set scores 1); a missing key is
an empty input.  The computation follows Redis's zunionInterDiffGenericCommand so that
floating-point results match to the bit:

* union and intersection visit the inputs from the smallest to the largest (a stable sort
  by size, as glibc's merge-sort qsort leaves ties), so each member's scores are combined
  in the same order as Redis combines them;
* a weighted score that is NaN (``0 * inf``) counts as 0, and a SUM that becomes NaN
  (``inf + -inf``) is reset to 0; MIN / MAX ignore a NaN operand;
* the difference keeps the first input's members (and scores, unweighted) that no other
  input holds.

Results are ordered by (score, member bytes), as a sorted set is; RESP3 WITHSCORES replies
are [member, score] pairs.

Complexity: union O(N) + O(M log M) for N input members and M results; intersection
O(n * k) for the smallest input's n members and k inputs; difference O(N).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError, WrongTypeError
from ..notify import NOTIFY_ZSET
from ..registry import command
from ..values import RSet
from .. import zset as _zset   # thresholds read at call time (CONFIG SET changes them)
from ..zset import ZSet
from ._stored import drop_notify
from ._util import bulk_array, parse_double, parse_int
from .zsets import _cost, _scored

_SUM, _MIN, _MAX = "sum", "min", "max"
_STORE_EVENTS = {"union": b"zunionstore", "inter": b"zinterstore", "diff": b"zdiffstore"}
_AGGREGATES = {b"sum": _SUM, b"min": _MIN, b"max": _MAX}


class _Input:
    """One operand: ``scores`` maps member -> score (None for a missing key)."""

    __slots__ = ("value", "weight")

    def __init__(self, value):
        self.value = value
        self.weight = 1.0

    def __len__(self) -> int:
        return 0 if self.value is None else len(self.value)

    def items(self):
        """(member, score) pairs; a plain set's members score 1."""
        v = self.value
        if v is None:
            return ()
        if v.__class__ is ZSet:
            return ((m, s) for s, m in v.order)
        return ((m, 1.0) for m in v)

    def get(self, member: bytes):
        v = self.value
        if v is None:
            return None
        if v.__class__ is ZSet:
            return v.scores.get(member)
        return 1.0 if member in v else None


def _aggregate(target: float, val: float, how: str) -> float:
    """Redis zunionInterAggregate."""
    if how is _SUM:
        target = target + val
        return 0.0 if target != target else target
    if how is _MIN:
        return val if val < target else target
    return val if val > target else target


def _parse(c, argv, numkeys_at: int, op: str, store: bool, card: bool):
    """Parse in Redis's order: numkeys, the key lookups (WRONGTYPE), then the options.
    Returns (inputs, aggregate, withscores, limit)."""
    setnum = parse_int(argv[numkeys_at])
    if setnum < 1:
        raise CommandError(errors.ZSETOP_NO_KEYS % argv[0].decode("utf-8", "replace").lower())
    if setnum > len(argv) - (numkeys_at + 1):
        raise CommandError(errors.SYNTAX)
    srcs = []
    j = numkeys_at + 1
    for key in argv[j:j + setnum]:
        e = c.db.lookup_read(key)
        if e is not None and c.db.vals[e].__class__ is not ZSet and c.db.vals[e].__class__ is not RSet:
            raise WrongTypeError()
        srcs.append(_Input(None if e is None else c.db.vals[e]))
    j += setnum
    how, withscores, limit = _SUM, False, 0
    n = len(argv)
    while j < n:
        remaining = n - j
        opt = argv[j].lower()
        if op != "diff" and not card and remaining >= setnum + 1 and opt == b"weights":
            for i in range(setnum):
                srcs[i].weight = parse_double(argv[j + 1 + i], errors.ZSETOP_WEIGHT)
            j += setnum + 1
        elif op != "diff" and not card and remaining >= 2 and opt == b"aggregate":
            how = _AGGREGATES.get(argv[j + 1].lower())
            if how is None:
                raise CommandError(errors.SYNTAX)
            j += 2
        elif not store and not card and opt == b"withscores":
            withscores = True
            j += 1
        elif card and remaining >= 2 and opt == b"limit":
            limit = parse_int(argv[j + 1], errors.LIMIT_NEGATIVE)
            if limit < 0:
                raise CommandError(errors.LIMIT_NEGATIVE)
            j += 2
        else:
            raise CommandError(errors.SYNTAX)
    return srcs, how, withscores, limit


def _lookup(src: _Input):
    """A member -> score-or-None function for one input (a plain set's members score 1)."""
    v = src.value
    if v.__class__ is ZSet:
        return v.scores.get
    return lambda m: 1.0 if m in v else None


def _inter(srcs: list, how: str) -> dict:
    """Intersection as {member: score}, combining scores in Redis's operand order."""
    srcs = sorted(srcs, key=len)
    first = srcs[0]
    out = {}
    if len(first) == 0:
        return out
    # (same object as the first input, lookup, weight) per other input, bound once
    rest = [(src.value is first.value, _lookup(src), src.weight) for src in srcs[1:]]
    w0 = first.weight
    sum_ = how is _SUM
    for member, s in list(first.items()):
        score = w0 * s
        if score != score:
            score = 0.0
        for same, get, w in rest:
            if same:
                v = s * w
            else:
                v = get(member)
                if v is None:
                    break
                v *= w
            if sum_:
                score += v
                if score != score:
                    score = 0.0
            else:
                score = _aggregate(score, v, how)
        else:
            out[member] = score
    return out


def _union(srcs: list, how: str) -> dict:
    out = {}
    for src in sorted(srcs, key=len):
        w = src.weight
        for member, s in src.items():
            score = w * s
            if score != score:
                score = 0.0
            cur = out.get(member)
            out[member] = score if cur is None else _aggregate(cur, score, how)
    return out


def _diff(srcs: list) -> dict:
    first, rest = srcs[0], srcs[1:]
    return {m: s for m, s in first.items() if all(src.get(m) is None for src in rest)}


def _compute(srcs: list, op: str, how: str) -> dict:
    if op == "union":
        return _union(srcs, how)
    if op == "inter":
        return _inter(srcs, how)
    return _diff(srcs)


def _generic(c, argv, op: str, store: bool):
    numkeys_at = 2 if store else 1
    srcs, how, withscores, _ = _parse(c, argv, numkeys_at, op, store, False)
    result = _compute(srcs, op, how)
    pairs = sorted((s, m) for m, s in result.items())
    if store:
        return store_built(c, argv[1], pairs, _STORE_EVENTS[op])
    if withscores:
        return _scored(c, pairs)
    return bulk_array([m for _, m in pairs])


def store_built(c, dst: bytes, pairs: list, event: bytes) -> int:
    """Write (score, member) pairs as a new sorted set at ``dst`` (deleted when empty), the
    way Redis stores a result it built as a skiplist: the encoding is chosen once for the
    whole result (zsetConvertToListpackIfNeeded), so a ``-0`` score survives in a result
    that is a skiplist.  Publishes ``event`` (class z), or ``del`` when an empty result
    removed the key.  Returns the size.  Complexity: O(m log m)."""
    if not pairs:
        drop_notify(c, dst)
        return 0
    z = ZSet(max(len(m) for _, m in pairs))
    if len(pairs) > _zset.ZSET_MAX_LISTPACK_ENTRIES:
        z.listpack = False
    for s, m in pairs:
        z.insert(m, s)
    z.mem += sum(_cost(m) for _, m in pairs)
    c.db.set(dst, z)
    c.ks.notify(c.db, NOTIFY_ZSET, event, dst)
    return len(pairs)


# ---- commands ----

@command("zunion", -3, "readonly movablekeys", group="sorted-set")
def zunion(c, argv):
    """ZUNION numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
    Returns the union of sorted sets (and sets)."""
    return _generic(c, argv, "union", False)


@command("zinter", -3, "readonly movablekeys", group="sorted-set")
def zinter(c, argv):
    """ZINTER numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
    Returns the intersection of sorted sets (and sets)."""
    return _generic(c, argv, "inter", False)


@command("zdiff", -3, "readonly movablekeys", group="sorted-set")
def zdiff(c, argv):
    """ZDIFF numkeys key [key ...] [WITHSCORES]
    Returns the members of the first sorted set that no other input holds."""
    return _generic(c, argv, "diff", False)


@command("zunionstore", -4, "write denyoom movablekeys", first_key=1, group="sorted-set")
def zunionstore(c, argv):
    """ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]
    Stores the union in destination (deleted if empty); returns its size."""
    return _generic(c, argv, "union", True)


@command("zinterstore", -4, "write denyoom movablekeys", first_key=1, group="sorted-set")
def zinterstore(c, argv):
    """ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]
    Stores the intersection in destination (deleted if empty); returns its size."""
    return _generic(c, argv, "inter", True)


@command("zdiffstore", -4, "write denyoom movablekeys", first_key=1, group="sorted-set")
def zdiffstore(c, argv):
    """ZDIFFSTORE destination numkeys key [key ...]
    Stores the difference in destination (deleted if empty); returns its size."""
    return _generic(c, argv, "diff", True)


@command("zintercard", -3, "readonly movablekeys", group="sorted-set")
def zintercard(c, argv):
    """ZINTERCARD numkeys key [key ...] [LIMIT limit]
    Returns the size of the intersection, counting no further than LIMIT (0 = no limit)."""
    srcs, _, _, limit = _parse(c, argv, 1, "inter", False, True)
    # Only the count matters (Redis stops counting at LIMIT, whatever the order), so the
    # members are intersected as hash sets in C rather than looked up one by one.
    keysets = [() if s.value is None else
               (s.value.scores.keys() if s.value.__class__ is ZSet else s.value) for s in srcs]
    keysets.sort(key=len)
    n = len(set(keysets[0]).intersection(*keysets[1:])) if keysets[0] else 0
    return min(n, limit) if limit else n

