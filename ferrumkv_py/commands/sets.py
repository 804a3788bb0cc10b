"""Set commands: SADD SREM SPOP SRANDMEMBER SMEMBERS SISMEMBER SMISMEMBER SCARD SMOVE
SINTER SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SINTERCARD SSCAN.

A set is an :class:`~ferrumkv_py.keyspace.RSet` (a Python ``set``).  Every change reports
its exact memory delta (``memory.set_member_cost`` per member) through ``Database.grow``; a
set left empty is deleted.  SMEMBERS, SPOP with a count and the algebra commands reply with
a RESP3 set (``RespSet``); SRANDMEMBER with a count replies with an array, as Redis 7.0.

Random members in O(1): the index
---------------------------------
A Python set has no random access, and SPOP / SRANDMEMBER must not cost O(n) per call
(redis-benchmark's SPOP test pops 100k times from one set).  The first SPOP or SRANDMEMBER
on a set builds ``s.index``, a :class:`SetIndex` kept in step by every later change::

    items  list   every member once, plus members removed since the last rebuild
    stale  set    the removed members still sitting in ``items``

    invariant: set(items) == s | stale,  s & stale == {},  no duplicates in items

    SREM x   -> stale.add(x)                    (O(1); x stays in items for now)
    SADD x   -> x in stale ? stale.discard(x) : items.append(x)
    draw     -> i = random index; if items[i] is stale, swap-remove it and draw again
    SPOP     -> draw, then swap-remove position i (items[i] = items[-1]; items.pop())

When ``stale`` outgrows the live members the index is rebuilt from the set, so at least
half the slots are live: a draw takes at most 2 tries on average, and the O(n) rebuild is
paid for by the n/2 removals before it.  Memory: one list slot per member, charged in
``memory.SET_MEMBER_OVERHEAD`` whether or not the index has been built.

Complexity: SADD/SREM O(1) per member; SPOP/SRANDMEMBER O(count) amortised (first call
O(n)); SINTER O(n * k) for the smallest set n of k sets; SUNION/SDIFF O(total members).
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError
from ..notify import NOTIFY_GENERIC, NOTIFY_SET
from ..registry import command
from ..resp import RespSet
from ..values import RSet
from ._randpick import draws_reply
from ._stored import drop_notify
from ._util import (LLONG_MAX, bulk_array, check_type, parse_int, parse_pop_count, read_typed,
                   scan_reply, shrink, write_typed)

SET_BASE = memory.CONTAINER_BASE["set"]
_MEMBER = memory.SET_MEMBER_OVERHEAD    # memory.set_member_cost(m) == _MEMBER + len(m)
INDEX_REBUILD_MIN_STALE = 64    # members: never rebuild an index for fewer stale slots
SRANDMEMBER_COPY_RATIO = 3      # count * 3 > size: sample a copy instead of drawing


class SetIndex:
    """Random access to a set's members; see the module docstring."""

    __slots__ = ("items", "stale")

    def __init__(self, members):
        self.items = list(members)
        self.stale: set = set()

    def draw(self, rand) -> int:
        """Position of a uniformly random live member.  O(1) expected."""
        items, stale = self.items, self.stale
        while True:
            i = int(rand() * len(items))
            if stale and items[i] in stale:
                stale.discard(items[i])
                self.take(i)
                continue
            return i

    def take(self, i: int) -> bytes:
        """Swap-remove position ``i``; returns the member that was there.  O(1)."""
        items = self.items
        m = items[i]
        last = items.pop()
        if i < len(items):
            items[i] = last
        return m

    def _check(self, s: set) -> None:
        items = self.items
        assert len(set(items)) == len(items), "duplicate in index"
        assert set(items) == s | self.stale, "index does not cover the set"
        assert not (s & self.stale), "a live member is marked stale"


def set_index(s: RSet) -> SetIndex:
    """The set's index, built on first use.  O(n) once, then O(1)."""
    idx = s.index
    if idx is None:
        idx = s.index = SetIndex(s)
    return idx


def _added(s: RSet, m: bytes) -> None:
    idx = s.index
    if idx is not None:
        if m in idx.stale:
            idx.stale.discard(m)
        else:
            idx.items.append(m)


def _removed(s: RSet, m: bytes) -> None:
    idx = s.index
    if idx is not None:
        stale = idx.stale
        stale.add(m)
        if len(stale) > INDEX_REBUILD_MIN_STALE and len(stale) > len(s):
            idx.items = list(s)
            idx.stale = set()


def new_set(members) -> RSet:
    """A fresh RSet holding ``members`` with its memory accounted."""
    s = RSet(members)
    s.mem = SET_BASE + sum(map(memory.set_member_cost, s))
    return s


def _read(c, key: bytes):
    return read_typed(c, key, RSet)


def _write(c, key: bytes):
    return write_typed(c, key, RSet)


# ---- single-set writes ----

@command("sadd", -3, "write denyoom fast", first_key=1, group="set")
def sadd(c, argv):
    """SADD key member [member ...]
    Adds members to a set, creating it if needed; returns how many were new."""
    if len(argv) == 3:
        # One member to an existing set without a TTL, Database.lookup_write and grow
        # inline (no side effect before the checks, so the general path below sees the
        # keyspace unchanged): SADD -P 16 2.09 -> 1.48 us/command, 344 -> 291
        # opcodes/command (command layer 126 -> 74), bench/command_cost.py
        db = c.db
        key = argv[1]
        e = db.find(key)
        if e is not None and not db.exp[e]:
            s = db.vals[e]
            if s.__class__ is RSet:
                db.touch(e)
                ks = db.ks
                m = argv[2]
                if m in s:
                    return 0
                s.add(m)
                if s.index is not None:
                    _added(s, m)
                delta = _MEMBER + len(m)
                s.mem += delta
                ks.used_memory += delta
                if ks.watched:
                    ks.signal(db, key)
                if ks.notify_flags:
                    ks.notify(db, NOTIFY_SET, b"sadd", key)
                return 1
    return _sadd(c, argv)


def _sadd(c, argv):
    """SADD's general path (any arity, a new key, a TTL, WRONGTYPE)."""
    e = _write(c, argv[1])
    if e is None:
        s = new_set(argv[2:])
        c.db.add(argv[1], s)
        c.ks.notify(c.db, NOTIFY_SET, b"sadd", argv[1])
        return len(s)
    s = c.db.vals[e]
    added = delta = 0
    for m in argv[2:]:
        if m not in s:
            s.add(m)
            if s.index is not None:
                _added(s, m)
            added += 1
            delta += memory.set_member_cost(m)
    if added:
        c.db.grow(e, delta)
        c.ks.notify(c.db, NOTIFY_SET, b"sadd", argv[1])
    return added


@command("srem", -3, "write fast", first_key=1, group="set")
def srem(c, argv):
    """SREM key member [member ...]
    Removes members from a set; returns how many were there."""
    e = _write(c, argv[1])
    if e is None:
        return 0
    s = c.db.vals[e]
    removed = delta = 0
    for m in argv[2:]:
        if m in s:
            s.discard(m)
            _removed(s, m)
            removed += 1
            delta -= memory.set_member_cost(m)
    if removed:
        emptied = shrink(c, e, delta)
        _notify_shrunk(c, emptied, argv[1], b"srem")
    return removed


def _notify_shrunk(c, emptied: bool, key: bytes, event: bytes) -> None:
    """``event`` on the set, then "del" if it was emptied (and so deleted)."""
    c.ks.notify(c.db, NOTIFY_SET, event, key)
    if emptied:
        c.ks.notify(c.db, NOTIFY_GENERIC, b"del", key)


@command("spop", -2, "write fast", first_key=1, group="set")
def spop(c, argv):
    """SPOP key [count]
    Removes and returns random members (a RESP3 set when a count is given).

    Complexity: O(count) amortised (see the module docstring)."""
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = parse_pop_count(argv[2]) if len(argv) == 3 else None
    e = _write(c, argv[1])
    if e is None:
        return None if count is None else RespSet()
    s = c.db.vals[e]
    if count is not None and count >= len(s):
        out = RespSet(s)
        c.db.unlink(e)
        _notify_shrunk(c, True, argv[1], b"spop")   # "spop" then "del"
        return out
    idx, rand = set_index(s), c.ks.rng.random
    popped = [idx.take(idx.draw(rand)) for _ in range(1 if count is None else count)]
    s.difference_update(popped)
    if popped:
        emptied = shrink(c, e, -sum(map(memory.set_member_cost, popped)))
        _notify_shrunk(c, emptied, argv[1], b"spop")
    return popped[0] if count is None else RespSet(popped)


@command("srandmember", -2, "readonly", first_key=1, group="set")
def srandmember(c, argv):
    """SRANDMEMBER key [count]
    Returns random members: distinct ones for count > 0, possibly repeated for count < 0.

    Complexity: O(|count|) expected; O(n) when count is close to the set's size."""
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = None
    if len(argv) == 3:
        count = parse_int(argv[2])
        if count < -LLONG_MAX:
            raise CommandError(errors.RANDOM_COUNT_RANGE)
    e = _read(c, argv[1])
    if e is None:
        return None if count is None else bulk_array([])
    s, rand = c.db.vals[e], c.ks.rng.random
    if count is None:
        idx = set_index(s)
        return idx.items[idx.draw(rand)]
    if count >= len(s):
        return bulk_array(list(s))
    if count < 0 and -count >= len(s):  # bounded, streamed (_randpick.py): O(n) <= O(|count|)
        return draws_reply(c, list(s), -count)
    if count * SRANDMEMBER_COPY_RATIO > len(s):
        return bulk_array(c.ks.rng.sample(list(s), count))
    idx = set_index(s)
    if count < 0:
        return bulk_array([idx.items[idx.draw(rand)] for _ in range(-count)])
    picked: dict = {}
    while len(picked) < count:
        picked[idx.items[idx.draw(rand)]] = None
    return bulk_array(list(picked))


@command("smove", 4, "write fast", first_key=1, last_key=2, group="set")
def smove(c, argv):
    """SMOVE source destination member
    Moves a member from one set to another; returns 1 if it was in the source."""
    src, dst = c.db.lookup_write(argv[1]), c.db.lookup_write(argv[2])
    if src is None:
        return 0
    check_type(c.db, src, RSet)
    if dst is not None:
        check_type(c.db, dst, RSet)
    m = argv[3]
    if src == dst:
        return int(m in c.db.vals[src])
    if m not in c.db.vals[src]:
        return 0
    c.db.vals[src].discard(m)
    _removed(c.db.vals[src], m)
    emptied = shrink(c, src, -memory.set_member_cost(m))
    _notify_shrunk(c, emptied, argv[1], b"srem")
    if dst is None:
        c.db.add(argv[2], new_set((m,)))
    elif m not in c.db.vals[dst]:
        c.db.vals[dst].add(m)
        _added(c.db.vals[dst], m)
        c.db.grow(dst, memory.set_member_cost(m))
    else:
        return 1
    c.ks.notify(c.db, NOTIFY_SET, b"sadd", argv[2])
    return 1


# ---- reads ----

@command("smembers", 2, "readonly", first_key=1, group="set")
def smembers(c, argv):
    """SMEMBERS key
    Returns every member of a set."""
    e = _read(c, argv[1])
    return RespSet() if e is None else RespSet(c.db.vals[e])


@command("sismember", 3, "readonly fast", first_key=1, group="set")
def sismember(c, argv):
    """SISMEMBER key member
    Returns 1 if the member is in the set, else 0."""
    e = _read(c, argv[1])
    return int(e is not None and argv[2] in c.db.vals[e])


@command("smismember", -3, "readonly fast", first_key=1, group="set")
def smismember(c, argv):
    """SMISMEMBER key member [member ...]
    Returns 1 or 0 for each member."""
    e = _read(c, argv[1])
    s = c.db.vals[e] if e is not None else ()
    return [int(m in s) for m in argv[2:]]


@command("scard", 2, "readonly fast", first_key=1, group="set")
def scard(c, argv):
    """SCARD key
    Returns the number of members of a set (0 if the key does not exist)."""
    e = _read(c, argv[1])
    return 0 if e is None else len(c.db.vals[e])


@command("sscan", -3, "readonly", first_key=1, group="set")
def sscan(c, argv):
    """SSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates the members of a set (here: all of them, with cursor 0)."""
    return scan_reply(c, argv, RSet, lambda s: ((m,) for m in s))


# ---- algebra ----

def _operands(c, keys: list) -> list:
    """Every key's set (None when missing), read in order with stats, type-checked."""
    out = []
    for k in keys:
        e = _read(c, k)
        out.append(None if e is None else c.db.vals[e])
    return out


def _inter(sets: list) -> set:
    if not sets or any(s is None for s in sets):
        return set()
    ordered = sorted(sets, key=len)
    return ordered[0].intersection(*ordered[1:])


def _union(sets: list) -> set:
    return set().union(*(s for s in sets if s is not None))


def _diff(sets: list) -> set:
    if not sets or sets[0] is None:
        return set()
    return sets[0].difference(*(s for s in sets[1:] if s is not None))


def _store(c, dst: bytes, result: set, event: bytes) -> int:
    if not result:
        drop_notify(c, dst)     # an expired destination is a "del" too, as Redis
        return 0
    c.db.set(dst, new_set(result))
    c.ks.notify(c.db, NOTIFY_SET, event, dst)
    return len(result)


@command("sinter", -2, "readonly", first_key=1, last_key=-1, group="set")
def sinter(c, argv):
    """SINTER key [key ...]
    Returns the members present in every set (a missing key is an empty set)."""
    return RespSet(_inter(_operands(c, argv[1:])))


@command("sunion", -2, "readonly", first_key=1, last_key=-1, group="set")
def sunion(c, argv):
    """SUNION key [key ...]
    Returns the members present in any set."""
    return RespSet(_union(_operands(c, argv[1:])))


@command("sdiff", -2, "readonly", first_key=1, last_key=-1, group="set")
def sdiff(c, argv):
    """SDIFF key [key ...]
    Returns the members of the first set that are in none of the others."""
    return RespSet(_diff(_operands(c, argv[1:])))


@command("sinterstore", -3, "write denyoom", first_key=1, last_key=-1, group="set")
def sinterstore(c, argv):
    """SINTERSTORE destination key [key ...]
    Stores SINTER's result in destination (deleted if empty); returns its size."""
    return _store(c, argv[1], _inter(_operands(c, argv[2:])), b"sinterstore")


@command("sunionstore", -3, "write denyoom", first_key=1, last_key=-1, group="set")
def sunionstore(c, argv):
    """SUNIONSTORE destination key [key ...]
    Stores SUNION's result in destination (deleted if empty); returns its size."""
    return _store(c, argv[1], _union(_operands(c, argv[2:])), b"sunionstore")


@command("sdiffstore", -3, "write denyoom", first_key=1, last_key=-1, group="set")
def sdiffstore(c, argv):
    """SDIFFSTORE destination key [key ...]
    Stores SDIFF's result in destination (deleted if empty); returns its size."""
    return _store(c, argv[1], _diff(_operands(c, argv[2:])), b"sdiffstore")


@command("sintercard", -3, "readonly movablekeys", group="set")
def sintercard(c, argv):
    """SINTERCARD numkeys key [key ...] [LIMIT limit]
    Returns the size of the intersection, counting no further than LIMIT (0 = no limit)."""
    numkeys = parse_int(argv[1], errors.NUMKEYS_NOT_POSITIVE)
    if numkeys < 1:
        raise CommandError(errors.NUMKEYS_NOT_POSITIVE)
    if numkeys > len(argv) - 2:
        raise CommandError(errors.NUMKEYS_TOO_MANY)
    limit, i = 0, 2 + numkeys
    while i < len(argv):
        if argv[i].lower() == b"limit" and i + 1 < len(argv):
            limit = parse_int(argv[i + 1], errors.LIMIT_NEGATIVE)
            if limit < 0:
                raise CommandError(errors.LIMIT_NEGATIVE)
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    n = len(_inter(_operands(c, argv[2:2 + numkeys])))
    return min(n, limit) if limit else n
