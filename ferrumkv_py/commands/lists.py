"""List commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LRANGE LLEN LINDEX LSET LREM LTRIM
LINSERT LPOS LMOVE RPOPLPUSH.

A list is an :class:`~ferrumkv_py.keyspace.RList`, a ``collections.deque``: O(1) at both
ends, O(n/64) to reach the middle (it is a chain of 64-slot blocks).  Ranges are cut with
``itertools.islice`` from whichever end is closer, so ``LRANGE 0 99`` costs O(100) whatever
the list's length.  Every change reports its exact memory delta (``memory.list_elem_cost``)
through ``Database.grow``, and a list left empty is deleted, as in Redis.

Argument errors come before the key lookup where Redis parses first (LRANGE, LTRIM, LREM,
LPOS, LPOP's count) and after it where Redis looks up first (LINDEX, LSET).
"""

from __future__ import annotations

from itertools import islice

from .. import errors, memory
from ..errors import CommandError, WrongTypeError
from ..notify import NOTIFY_GENERIC, NOTIFY_LIST
from ..registry import command
from ..resp import NULL_ARRAY, OK
from ..values import RList, index_span
from ._util import (LLONG_MIN, bulk_array, parse_int, parse_pop_count, read_typed, shrink,
                   write_typed)

LIST_BASE = memory.CONTAINER_BASE["list"]
_ELEM = memory.LIST_ELEM_OVERHEAD    # memory.list_elem_cost(x) == _ELEM + len(x)
_EMPTY = bulk_array([])


def _cost(elems) -> int:
    """memory.list_elem_cost() summed, the lengths in C (239 -> 205 ns for one element,
    timeit; LPUSH -P 16 is ~2.2 us per command, bench/server_bench.py --parts dispatch)."""
    return memory.LIST_ELEM_OVERHEAD * len(elems) + sum(map(len, elems))


def _notify_pop(c, emptied: bool, key: bytes, event: bytes) -> None:
    """The pop-side events: ``event`` on the list, then "del" if it was emptied."""
    ks = c.ks
    ks.notify(c.db, NOTIFY_LIST, event, key)
    if emptied:                     # shrink() deleted the emptied list
        ks.notify(c.db, NOTIFY_GENERIC, b"del", key)


def _read(c, key: bytes):
    return read_typed(c, key, RList)


def _write(c, key: bytes):
    return write_typed(c, key, RList)


def _slice(d, lo: int, hi: int) -> list:
    """``list(d)[lo:hi]`` walking from the nearer end.  Complexity: O(min(lo, n-hi) + k)."""
    n = len(d)
    if lo <= n - hi:
        return list(islice(d, lo, hi))
    out = list(islice(reversed(d), n - hi, n - lo))
    out.reverse()
    return out


# ---- push ----

def _push(c, argv: list, left: bool, need_existing: bool) -> int:
    key, elems = argv[1], argv[2:]
    # write_typed() inline: one Python call fewer, ~0.1 us of LPUSH -P 16's ~2.2 us
    # (bench/server_bench.py --parts dispatch)
    e = c.db.lookup_write(key)
    if e is not None and c.db.vals[e].__class__ is not RList:
        raise WrongTypeError()
    if e is None:
        if need_existing:
            return 0
        v = RList()
        v.mem = LIST_BASE + _cost(elems)
        (v.extendleft if left else v.extend)(elems)
        c.db.add(key, v)
        c.ks.notify(c.db, NOTIFY_LIST, b"lpush" if left else b"rpush", key)
        return len(v)
    d = c.db.vals[e]
    (d.extendleft if left else d.extend)(elems)
    c.db.grow(e, _cost(elems))
    c.ks.notify(c.db, NOTIFY_LIST, b"lpush" if left else b"rpush", key)
    return len(d)


def _push_one(c, argv: list, left: bool):
    """``LPUSH/RPUSH key element`` onto an existing list without a TTL, inline (what
    redis-benchmark sends); None = take :func:`_push`, which sees the keyspace unchanged.

    Database.lookup_write (its touch() included) and grow folded in, one element's cost without a list.
    """
    db = c.db
    key = argv[1]
    e = db.find(key)
    if e is None or db.exp[e]:
        return None
    d = db.vals[e]
    if d.__class__ is not RList:
        return None
    db.touch(e)
    ks = db.ks
    x = argv[2]
    if left:
        d.appendleft(x)
    else:
        d.append(x)
    delta = _ELEM + len(x)
    d.mem += delta
    ks.used_memory += delta
    if ks.watched:
        ks.signal(db, key)
    if ks.notify_flags:
        ks.notify(db, NOTIFY_LIST, b"lpush" if left else b"rpush", key)
    return len(d)


@command("lpush", -3, "write denyoom fast", first_key=1, group="list")
def lpush(c, argv):
    """LPUSH key element [element ...]
    Prepends elements to a list, creating it if needed; returns the new length."""
    # _push_one: Database.lookup_write (its touch() included) and grow folded in, LPUSH -P 16 350 -> 319
    # opcodes/command, 2.00 -> ~1.5 us (inline in the handler: 16 opcodes fewer, within
    # the timing noise, so one copy serves LPUSH and RPUSH), bench/command_cost.py
    if len(argv) == 3:
        n = _push_one(c, argv, True)
        if n is not None:
            return n
    return _push(c, argv, True, False)


@command("rpush", -3, "write denyoom fast", first_key=1, group="list")
def rpush(c, argv):
    """RPUSH key element [element ...]
    Appends elements to a list, creating it if needed; returns the new length."""
    if len(argv) == 3:
        n = _push_one(c, argv, False)
        if n is not None:
            return n
    return _push(c, argv, False, False)


@command("lpushx", -3, "write denyoom fast", first_key=1, group="list")
def lpushx(c, argv):
    """LPUSHX key element [element ...]
    Prepends elements to an existing list only; returns the new length (0 if no list)."""
    return _push(c, argv, True, True)


@command("rpushx", -3, "write denyoom fast", first_key=1, group="list")
def rpushx(c, argv):
    """RPUSHX key element [element ...]
    Appends elements to an existing list only; returns the new length (0 if no list)."""
    return _push(c, argv, False, True)


# ---- pop ----

def _pop(c, argv: list, left: bool):
    if len(argv) > 3:
        raise CommandError(errors.WRONG_ARGS % argv[0].decode("utf-8", "replace").lower())
    count = parse_pop_count(argv[2]) if len(argv) == 3 else None
    e = _write(c, argv[1])
    if e is None:
        return None if count is None else NULL_ARRAY
    if count == 0:
        return _EMPTY
    d = c.db.vals[e]
    pop = d.popleft if left else d.pop
    if count is None:
        x = pop()
        emptied = shrink(c, e, -memory.list_elem_cost(x))
        _notify_pop(c, emptied, argv[1], b"lpop" if left else b"rpop")
        return x
    out = [pop() for _ in range(min(count, len(d)))]
    emptied = shrink(c, e, -_cost(out))
    _notify_pop(c, emptied, argv[1], b"lpop" if left else b"rpop")
    return bulk_array(out)


def _pop_one(c, key: bytes, left: bool):
    """``LPOP/RPOP key`` of a list without a TTL that keeps at least one element, inline;
    False = take :func:`_pop` (a missing key, a TTL, another type, the last element), which
    sees the keyspace unchanged.  Database.lookup_write and shrink() folded in.
    """
    db = c.db
    e = db.find(key)
    if e is None or db.exp[e]:
        return False
    d = db.vals[e]
    if d.__class__ is not RList or len(d) < 2:
        return False
    db.touch(e)
    ks = db.ks
    x = d.popleft() if left else d.pop()
    delta = _ELEM + len(x)
    d.mem -= delta
    ks.used_memory -= delta
    if ks.watched:
        ks.signal(db, key)
    if ks.notify_flags:
        ks.notify(db, NOTIFY_LIST, b"lpop" if left else b"rpop", key)
    return x


@command("lpop", -2, "write fast", first_key=1, group="list")
def lpop(c, argv):
    """LPOP key [count]
    Removes and returns the first element(s) of a list."""
    # _pop_one: LPOP -P 16 354 -> 304 opcodes/command, 1.80 -> ~1.4 us (one copy for
    # LPOP and RPOP, as _push_one), bench/command_cost.py
    if len(argv) == 2:
        x = _pop_one(c, argv[1], True)
        if x is not False:
            return x
    return _pop(c, argv, True)


@command("rpop", -2, "write fast", first_key=1, group="list")
def rpop(c, argv):
    """RPOP key [count]
    Removes and returns the last element(s) of a list."""
    if len(argv) == 2:
        x = _pop_one(c, argv[1], False)
        if x is not False:
            return x
    return _pop(c, argv, False)


# ---- reads ----

@command("lrange", 4, "readonly", first_key=1, group="list")
def lrange(c, argv):
    """LRANGE key start stop
    Returns the elements between two indexes (inclusive, negative counts from the end).

    Complexity: O(min(start, n - stop) + k) for k elements returned."""
    start, end = parse_int(argv[2]), parse_int(argv[3])
    e = _read(c, argv[1])
    if e is None:
        return _EMPTY
    lo, hi = index_span(len(c.db.vals[e]), start, end)
    return bulk_array(_slice(c.db.vals[e], lo, hi)) if hi > lo else _EMPTY


@command("llen", 2, "readonly fast", first_key=1, group="list")
def llen(c, argv):
    """LLEN key
    Returns the length of a list (0 if the key does not exist)."""
    e = _read(c, argv[1])
    return 0 if e is None else len(c.db.vals[e])


@command("lindex", 3, "readonly", first_key=1, group="list")
def lindex(c, argv):
    """LINDEX key index
    Returns the element at an index (negative counts from the end), or null."""
    e = _read(c, argv[1])
    if e is None:
        return None
    i = parse_int(argv[2])
    d = c.db.vals[e]
    return d[i] if -len(d) <= i < len(d) else None


@command("lpos", -3, "readonly", first_key=1, group="list")
def lpos(c, argv):
    """LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
    Returns the index of matching elements (from the head; RANK < 0 searches from the tail).

    Complexity: O(n) in the worst case, O(MAXLEN) with MAXLEN."""
    rank, count, maxlen = 1, None, 0
    i, n = 3, len(argv)
    while i < n:
        opt = argv[i].lower()
        if i + 1 >= n or opt not in (b"rank", b"count", b"maxlen"):
            raise CommandError(errors.SYNTAX)
        i += 1
        if opt == b"rank":
            rank = parse_int(argv[i])
            if rank == 0:
                raise CommandError(errors.LPOS_RANK_ZERO)
            if rank == LLONG_MIN:
                rank = -1  # Redis negates it in a C long, which wraps to itself: the 1st match
        elif opt == b"count":
            count = _non_negative(argv[i], errors.LPOS_COUNT_NEGATIVE)
        else:
            maxlen = _non_negative(argv[i], errors.LPOS_MAXLEN_NEGATIVE)
        i += 1
    e = _read(c, argv[1])
    if e is None:
        return None if count is None else []
    d, elem = c.db.vals[e], argv[2]
    size = len(d)
    seq = enumerate(d) if rank > 0 else ((size - 1 - j, x) for j, x in enumerate(reversed(d)))
    if maxlen:
        seq = islice(seq, maxlen)
    skip, want, found = abs(rank) - 1, count or size, []
    for idx, x in seq:
        if x == elem:
            if skip:
                skip -= 1
                continue
            found.append(idx)
            if len(found) >= want:
                break
    if count is None:
        return found[0] if found else None
    return found


def _non_negative(b: bytes, msg: str) -> int:
    v = parse_int(b, msg)
    if v < 0:
        raise CommandError(msg)
    return v


# ---- in-place edits ----

@command("lset", 4, "write denyoom", first_key=1, group="list")
def lset(c, argv):
    """LSET key index element
    Sets the element at an index."""
    e = _write(c, argv[1])
    if e is None:
        raise CommandError(errors.NO_SUCH_KEY)
    i = parse_int(argv[2])
    d = c.db.vals[e]
    if not -len(d) <= i < len(d):
        raise CommandError(errors.INDEX_OUT_OF_RANGE)
    old, d[i] = d[i], argv[3]
    c.db.grow(e, len(argv[3]) - len(old))
    c.ks.notify(c.db, NOTIFY_LIST, b"lset", argv[1])
    return OK


@command("lrem", 4, "write", first_key=1, group="list")
def lrem(c, argv):
    """LREM key count element
    Removes up to |count| occurrences (from the head if count > 0, the tail if < 0, all if 0).

    Complexity: O(n)."""
    count = parse_int(argv[2])
    e = _write(c, argv[1])
    if e is None:
        return 0
    d, elem = c.db.vals[e], argv[3]
    limit = abs(count) or len(d)
    kept, removed = [], 0
    for x in (d if count >= 0 else reversed(d)):
        if removed < limit and x == elem:
            removed += 1
        else:
            kept.append(x)
    if removed:
        if count < 0:
            kept.reverse()
        d.clear()
        d.extend(kept)
        emptied = shrink(c, e, -removed * memory.list_elem_cost(elem))
        _notify_pop(c, emptied, argv[1], b"lrem")
    return removed


@command("ltrim", 4, "write", first_key=1, group="list")
def ltrim(c, argv):
    """LTRIM key start stop
    Keeps only the elements between two indexes.

    Complexity: O(elements removed)."""
    start, end = parse_int(argv[2]), parse_int(argv[3])
    e = _write(c, argv[1])
    if e is None:
        return OK
    d = c.db.vals[e]
    lo, hi = index_span(len(d), start, end)
    head, tail = (lo, len(d) - hi) if hi > lo else (len(d), 0)
    gone = [d.popleft() for _ in range(head)] + [d.pop() for _ in range(tail)]
    emptied = shrink(c, e, -_cost(gone)) if gone else False
    _notify_pop(c, emptied, argv[1], b"ltrim")
    return OK


@command("linsert", 5, "write denyoom", first_key=1, group="list")
def linsert(c, argv):
    """LINSERT key BEFORE|AFTER pivot element
    Inserts an element next to the first occurrence of pivot; -1 if pivot is absent.

    Complexity: O(n)."""
    where = argv[2].lower()
    if where not in (b"before", b"after"):
        raise CommandError(errors.SYNTAX)
    e = _write(c, argv[1])
    if e is None:
        return 0
    d = c.db.vals[e]
    try:
        i = d.index(argv[3])
    except ValueError:
        return -1
    d.insert(i if where == b"before" else i + 1, argv[4])
    c.db.grow(e, memory.list_elem_cost(argv[4]))
    c.ks.notify(c.db, NOTIFY_LIST, b"linsert", argv[1])
    return len(d)


# ---- moves between lists ----

def _move(c, src: bytes, dst: bytes, from_left: bool, to_left: bool):
    db = c.db
    e = _write(c, src)
    if e is None:
        return None
    de = _write(c, dst)
    d = c.db.vals[e]
    x = d.popleft() if from_left else d.pop()
    cost = memory.list_elem_cost(x)
    push_ev = b"lpush" if to_left else b"rpush"
    pop_ev = b"lpop" if from_left else b"rpop"
    if de == e:
        (d.appendleft if to_left else d.append)(x)
        db.grow(e, 0)  # rotated in place: same memory, but the key changed
        c.ks.notify(db, NOTIFY_LIST, push_ev, dst)
        c.ks.notify(db, NOTIFY_LIST, pop_ev, src)
        return x
    emptied = shrink(c, e, -cost)         # before the push: it may take the freed slot
    if de is None:
        v = RList((x,))
        v.mem = LIST_BASE + cost
        db.add(dst, v)
    else:
        (c.db.vals[de].appendleft if to_left else c.db.vals[de].append)(x)
        db.grow(de, cost)
    c.ks.notify(db, NOTIFY_LIST, push_ev, dst)   # Redis: the push, then the pop (and del)
    _notify_pop(c, emptied, src, pop_ev)
    return x


def _side(b: bytes) -> bool:
    s = b.lower()
    if s not in (b"left", b"right"):
        raise CommandError(errors.SYNTAX)
    return s == b"left"


@command("lmove", 5, "write denyoom", first_key=1, last_key=2, group="list")
def lmove(c, argv):
    """LMOVE source destination LEFT|RIGHT LEFT|RIGHT
    Pops an element from one end of a list and pushes it to an end of another."""
    from_left, to_left = _side(argv[3]), _side(argv[4])
    return _move(c, argv[1], argv[2], from_left, to_left)


@command("rpoplpush", 3, "write denyoom", first_key=1, last_key=2, group="list")
def rpoplpush(c, argv):
    """RPOPLPUSH source destination
    Pops the last element of a list and pushes it to the head of another."""
    return _move(c, argv[1], argv[2], False, True)
