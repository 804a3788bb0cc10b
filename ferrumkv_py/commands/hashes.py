"""Hash commands: HSET HSETNX HMSET HGET HMGET HGETALL HDEL HLEN HEXISTS HSTRLEN HINCRBY
HINCRBYFLOAT HKEYS HVALS HRANDFIELD HSCAN.

A hash is an :class:`~ferrumkv_py.keyspace.RHash` (a dict of field -> value bytes).  Each
change reports its exact memory delta (``memory.hash_field_cost`` per field, or the change
in value length on an overwrite) through ``Database.grow``; a hash left empty is deleted.

HINCRBYFLOAT computes in C ``long double`` as Redis does (``util.parse_long_double``,
``long_double_add``, ``format_long_double_human``), so ``0.1`` then ``0.2`` gives ``0.3``
and not ``0.30000000000000004``.

HRANDFIELD and HSCAN copy the field list (a dict has no random access): O(n) per call.
HSCAN returns every match in one reply with cursor 0, which Redis also does for small
(listpack) hashes and which meets SCAN's guarantees trivially.
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError
from ..notify import NOTIFY_GENERIC, NOTIFY_HASH
from ..registry import command
from ..resp import OK
from ..values import RHash
from ._longdouble import LD_INF, format_long_double_human, long_double_add, parse_long_double
from ._util import (LLONG_MAX, LLONG_MIN, bulk_array, parse_int, parse_random_count,
                   random_pick_reply, read_typed, scan_reply, shrink, write_typed)

HASH_BASE = memory.CONTAINER_BASE["hash"]
_FIELD = memory.HASH_FIELD_OVERHEAD  # memory.hash_field_cost(f, v) == _FIELD + len(f) + len(v)
_EMPTY = bulk_array([])


def _read(c, key: bytes):
    return read_typed(c, key, RHash)


def _write(c, key: bytes):
    return write_typed(c, key, RHash)


def _set_fields(c, key: bytes, pairs: list, only_new: bool = False) -> int:
    """Write field/value pairs (``pairs`` = f1, v1, f2, v2...); returns fields added."""
    e = _write(c, key)
    h = c.db.vals[e] if e is not None else RHash()
    added = delta = 0
    for i in range(0, len(pairs), 2):
        f, v = pairs[i], pairs[i + 1]
        old = h.get(f)
        if old is None:
            added += 1
            delta += memory.hash_field_cost(f, v)
        elif only_new:
            continue
        else:
            delta += len(v) - len(old)
        h[f] = v
    if e is None:
        h.mem = HASH_BASE + delta
        c.db.add(key, h)
    elif delta or added or not only_new:
        c.db.grow(e, delta)
    if added or not only_new:
        c.ks.notify(c.db, NOTIFY_HASH, b"hset", key)
    return added


def _put(c, key: bytes, e, field: bytes, value: bytes) -> None:
    """Set one field; ``e`` is the hash's slot from this command's lookup, or None."""
    if e is None:
        h = RHash()
        h[field] = value
        h.mem = HASH_BASE + memory.hash_field_cost(field, value)
        c.db.add(key, h)
        return
    h = c.db.vals[e]
    old = h.get(field)
    h[field] = value
    c.db.grow(e, memory.hash_field_cost(field, value) if old is None else len(value) - len(old))


# ---- writes ----

@command("hset", -4, "write denyoom fast", first_key=1, group="hash")
def hset(c, argv):
    """HSET key field value [field value ...]
    Sets fields of a hash, creating it if needed; returns how many fields were new."""
    if len(argv) == 4:
        # One field of an existing hash without a TTL, Database.lookup_write and grow
        # inline (no side effect before the checks, so _set_fields sees the keyspace
        # unchanged): HSET -P 16 2.45 -> 1.88 us/command, 419 -> 335 opcodes/command
        # (command layer 183 -> 99), bench/command_cost.py
        db = c.db
        key = argv[1]
        e = db.find(key)
        if e is not None and not db.exp[e]:
            h = db.vals[e]
            if h.__class__ is RHash:
                db.touch(e)
                ks = db.ks
                f = argv[2]
                v = argv[3]
                old = h.get(f)
                h[f] = v
                if old is None:
                    delta = _FIELD + len(f) + len(v)
                else:
                    delta = len(v) - len(old)
                h.mem += delta
                ks.used_memory += delta
                if ks.watched:     # signalled even when the value is unchanged, as Redis
                    ks.signal(db, key)
                if ks.notify_flags:
                    ks.notify(db, NOTIFY_HASH, b"hset", key)
                return 1 if old is None else 0
    if len(argv) % 2:
        raise CommandError(errors.WRONG_ARGS % "hset")
    return _set_fields(c, argv[1], argv[2:])


@command("hmset", -4, "write denyoom fast", first_key=1, group="hash")
def hmset(c, argv):
    """HMSET key field value [field value ...]
    Sets fields of a hash (the pre-4.0 spelling of HSET that replies OK)."""
    if len(argv) % 2:
        raise CommandError(errors.WRONG_ARGS % "hmset")
    _set_fields(c, argv[1], argv[2:])
    return OK


@command("hsetnx", 4, "write denyoom fast", first_key=1, group="hash")
def hsetnx(c, argv):
    """HSETNX key field value
    Sets a field only if it does not exist yet; returns 1 if it was set."""
    return _set_fields(c, argv[1], argv[2:], only_new=True)


@command("hdel", -3, "write fast", first_key=1, group="hash")
def hdel(c, argv):
    """HDEL key field [field ...]
    Deletes fields; returns how many existed.  The hash goes when its last field does."""
    e = _write(c, argv[1])
    if e is None:
        return 0
    h = c.db.vals[e]
    removed = delta = 0
    for f in argv[2:]:
        v = h.pop(f, None)
        if v is not None:
            removed += 1
            delta -= memory.hash_field_cost(f, v)
    if removed:
        emptied = shrink(c, e, delta)
        c.ks.notify(c.db, NOTIFY_HASH, b"hdel", argv[1])
        if emptied:
            c.ks.notify(c.db, NOTIFY_GENERIC, b"del", argv[1])
    return removed


@command("hincrby", 4, "write denyoom fast", first_key=1, group="hash")
def hincrby(c, argv):
    """HINCRBY key field increment
    Adds an integer to a field (a missing field counts as 0); returns the new value."""
    incr = parse_int(argv[3])
    e = _write(c, argv[1])
    old = c.db.vals[e].get(argv[2]) if e is not None else None
    value = 0
    if old is not None:
        try:
            value = parse_int(old)
        except CommandError:
            raise CommandError(errors.HASH_NOT_INT) from None
    value += incr
    if not LLONG_MIN <= value <= LLONG_MAX:
        raise CommandError(errors.OVERFLOW)
    _put(c, argv[1], e, argv[2], b"%d" % value)
    c.ks.notify(c.db, NOTIFY_HASH, b"hincrby", argv[1])
    return value


@command("hincrbyfloat", 4, "write denyoom fast", first_key=1, group="hash")
def hincrbyfloat(c, argv):
    """HINCRBYFLOAT key field increment
    Adds a float to a field in long double precision; returns the new value as a string."""
    incr = parse_long_double(argv[3])
    if incr is LD_INF:
        raise CommandError(errors.NAN_OR_INFINITY)
    e = _write(c, argv[1])
    old = c.db.vals[e].get(argv[2]) if e is not None else None
    value = incr
    if old is not None:
        value = long_double_add(parse_long_double(old, errors.HASH_NOT_FLOAT), incr)
        if value is LD_INF:
            raise CommandError(errors.INCR_FLOAT_NAN)
    text = format_long_double_human(value)
    _put(c, argv[1], e, argv[2], text)
    c.ks.notify(c.db, NOTIFY_HASH, b"hincrbyfloat", argv[1])
    return text


# ---- reads ----

@command("hget", 3, "readonly fast", first_key=1, group="hash")
def hget(c, argv):
    """HGET key field
    Returns the value of a field, or null."""
    e = _read(c, argv[1])
    return None if e is None else c.db.vals[e].get(argv[2])


@command("hmget", -3, "readonly fast", first_key=1, group="hash")
def hmget(c, argv):
    """HMGET key field [field ...]
    Returns the values of several fields (null for each missing one)."""
    e = _read(c, argv[1])
    if e is None:
        return [None] * (len(argv) - 2)
    get = c.db.vals[e].get
    return [get(f) for f in argv[2:]]


@command("hgetall", 2, "readonly", first_key=1, group="hash")
def hgetall(c, argv):
    """HGETALL key
    Returns every field and value (a map in RESP3, a flat array in RESP2)."""
    e = _read(c, argv[1])
    return {} if e is None else dict(c.db.vals[e])


@command("hkeys", 2, "readonly", first_key=1, group="hash")
def hkeys(c, argv):
    """HKEYS key
    Returns every field of a hash."""
    e = _read(c, argv[1])
    return _EMPTY if e is None else bulk_array(list(c.db.vals[e]))


@command("hvals", 2, "readonly", first_key=1, group="hash")
def hvals(c, argv):
    """HVALS key
    Returns every value of a hash."""
    e = _read(c, argv[1])
    return _EMPTY if e is None else bulk_array(list(c.db.vals[e].values()))


@command("hlen", 2, "readonly fast", first_key=1, group="hash")
def hlen(c, argv):
    """HLEN key
    Returns the number of fields of a hash (0 if the key does not exist)."""
    e = _read(c, argv[1])
    return 0 if e is None else len(c.db.vals[e])


@command("hexists", 3, "readonly fast", first_key=1, group="hash")
def hexists(c, argv):
    """HEXISTS key field
    Returns 1 if the field exists, else 0."""
    e = _read(c, argv[1])
    return int(e is not None and argv[2] in c.db.vals[e])


@command("hstrlen", 3, "readonly fast", first_key=1, group="hash")
def hstrlen(c, argv):
    """HSTRLEN key field
    Returns the length of a field's value (0 if missing)."""
    e = _read(c, argv[1])
    v = None if e is None else c.db.vals[e].get(argv[2])
    return 0 if v is None else len(v)


@command("hrandfield", -2, "readonly", first_key=1, group="hash")
def hrandfield(c, argv):
    """HRANDFIELD key [count [WITHVALUES]]
    Returns random fields: distinct ones for count > 0, possibly repeated for count < 0.

    Complexity: O(n + |count|) (the field list is copied: a dict has no random access)."""
    if len(argv) == 2:
        e = _read(c, argv[1])
        if e is None:
            return None
        keys = list(c.db.vals[e])
        return keys[int(c.ks.rng.random() * len(keys))]
    count, withvalues = parse_random_count(argv, b"withvalues")
    e = _read(c, argv[1])
    if e is None:
        return _EMPTY
    h = c.db.vals[e]
    return random_pick_reply(c, list(h), count, h.get if withvalues else None)


@command("hscan", -3, "readonly", first_key=1, group="hash")
def hscan(c, argv):
    """HSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates the fields and values of a hash (here: all of them, with cursor 0)."""
    return scan_reply(c, argv, RHash, lambda h: h.items())
