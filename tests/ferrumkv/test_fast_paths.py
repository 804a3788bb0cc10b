"""The inline fast paths of INCR/DECR, LPUSH/RPUSH, LPOP/RPOP, SADD, HSET and ZADD (issue 7)
against their commands' general paths, and parse_int's fast path against string2ll.

Each fast path is a copy of what the general path does for the common arity; the
differential test replays one random workload twice, in-process, through the handlers (fast
paths on) and through the general functions, and asserts the same replies and errors, the
same keys, values, LRU/LFU metadata and TTLs, the same used_memory (``Keyspace._check``),
the same WATCH signals and keyspace statistics, and the same set index (SPOP/SRANDMEMBER).
"""

from __future__ import annotations

import random

import pytest

from ferrumkv_py import errors
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.commands import hashes, lists, sets, strings, zsets
from ferrumkv_py.commands._util import LLONG_MAX, LLONG_MIN, parse_int
from ferrumkv_py.errors import CommandError
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.values import RSet
from ferrumkv_py.zset import ZSet


def _string2ll(b: bytes):
    """The pre-fast-path parse_int, as the reference (None = refused)."""
    if not b or len(b) > 20:
        return None
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or (s[:1] == b"0" and len(s) > 1) or b == b"-0":
        return None
    v = int(b)
    return v if LLONG_MIN <= v <= LLONG_MAX else None


@pytest.mark.parametrize("text", [
    b"", b"0", b"00", b"01", b"-0", b"-01", b"+1", b" 1", b"1 ", b"1_0", b"-", b"7",
    b"123456789012345678", b"999999999999999999", b"1000000000000000000",
    b"9223372036854775807", b"9223372036854775808", b"-9223372036854775808",
    b"-9223372036854775809", b"99999999999999999999", b"\xd9\xa1", b"1\x00", b"0x10"])
def test_parse_int_fast_path_is_string2ll(text):
    want = _string2ll(text)
    if want is None:
        with pytest.raises(CommandError):
            parse_int(text)
    else:
        got = parse_int(text)
        assert got == want and got.__class__ is int


def test_parse_int_random_digits():
    rng = random.Random(7)
    for _ in range(5000):
        text = bytes(rng.choice(b"0123456789-+ ") for _ in range(rng.randint(1, 21)))
        want = _string2ll(text)
        try:
            got = parse_int(text)
        except CommandError:
            got = None
        assert got == want, text


class _Client:
    """What the handlers read from a client: the database, the keyspace, the protocol."""

    def __init__(self, ks):
        self.ks = ks
        self.db = ks.dbs[0]
        self.proto = 2
        self.dirty_cas = False


def _general(name: str):
    """The general path each fast path stands in for."""
    return {
        "incr": lambda c, a: strings._incr(c, a[1], 1),
        "decr": lambda c, a: strings._incr(c, a[1], -1),
        "lpush": lambda c, a: lists._push(c, a, True, False),
        "rpush": lambda c, a: lists._push(c, a, False, False),
        "lpop": lambda c, a: lists._pop(c, a, True),
        "rpop": lambda c, a: lists._pop(c, a, False),
        "sadd": sets._sadd,
        "hset": lambda c, a: hashes._set_fields(c, a[1], a[2:]),
        "zadd": zsets._zadd_argv,
    }[name]


_HANDLERS = {"incr": strings.incr, "decr": strings.decr, "lpush": lists.lpush,
             "rpush": lists.rpush, "lpop": lists.lpop, "rpop": lists.rpop, "sadd": sets.sadd,
             "hset": hashes.hset, "zadd": zsets.zadd}


def _world(lfu: bool):
    ks = Keyspace(databases=1, clock=ManualClock(1_000_000), rng=random.Random(3))
    if lfu:
        ks.lfu_on = True
        ks.lfu_touch = lambda counter, last_ms, now_ms: min(255, counter + 1 + now_ms % 3)
    c = _Client(ks)
    watcher = _Client(ks)
    return ks, c, watcher


_FAMILY = {"incr": b"k", "decr": b"k", "lpush": b"l", "rpush": b"l", "lpop": b"l",
           "rpop": b"l", "sadd": b"s", "hset": b"h", "zadd": b"z"}
_WEIGHTS = {"incr": 2, "decr": 1, "lpush": 3, "rpush": 2, "lpop": 2, "rpop": 1, "sadd": 3,
            "hset": 3, "zadd": 3}


def _op(rng) -> list:
    name = rng.choices(sorted(_WEIGHTS), [_WEIGHTS[n] for n in sorted(_WEIGHTS)])[0]
    # mostly a key of the command's own type, sometimes any key (WRONGTYPE, fallbacks)
    family = _FAMILY[name] if rng.random() < 0.9 else rng.choice(b"klshz")
    key = b"%c%d" % (family[0] if isinstance(family, bytes) else family, rng.randrange(6))
    small = lambda: b"m%d" % rng.randrange(40)   # noqa: E731
    if name in ("incr", "decr"):
        return [name.upper().encode(), key]
    if name in ("lpush", "rpush"):
        return [name.encode(), key] + [small() for _ in range(rng.choice((1, 1, 1, 2)))]
    if name in ("lpop", "rpop"):
        return [name.encode(), key] + ([b"%d" % rng.randrange(3)] if rng.random() < .1
                                       else [])
    if name == "sadd":
        return [b"sadd", key] + [small() for _ in range(rng.choice((1, 1, 1, 3)))]
    if name == "hset":
        n = rng.choice((1, 1, 1, 2))
        return [b"hset", key] + [x for _ in range(n) for x in (small(), small()[:2])]
    score = rng.choice([b"%d" % rng.randrange(50), b"0", b"-3", b"1.5", b"007", b"nx",
                        b"%d" % 10 ** 15, b"123456789012345"])
    args = [score, small() * rng.choice((1, 1, 1, 20))]
    if score == b"nx":
        args = [b"nx", b"%d" % rng.randrange(50), small()]
    return [b"zadd", key] + args


def _setup(ks, rng):
    """Odd values the fast paths must hand over: counters at the int64 edge, non-canonical
    numbers, a TTL, an expired key, a persisted TTL, keys of every type."""
    db = ks.dbs[0]
    db.add(b"k0", b"9223372036854775806")
    db.add(b"k5", b"1")
    db.add(b"k1", b"007")
    e = db.add(b"k2", b"999999999999999999")
    db.set_expire(e, ks.now_ms + 50_000)
    e = db.add(b"k3", b"-5")
    db.set_expire(e, ks.now_ms + 5)
    e = db.add(b"k4", b"41")
    db.set_expire(e, ks.now_ms + 5)
    db.persist(e)


def _snapshot(ks):
    db = ks.dbs[0]
    out = {}
    for key, e in db.items():
        v = db.vals[e]
        if isinstance(v, ZSet):
            v._check()
            val = ("zset", list(v.order), v.listpack, v.mem)
        elif isinstance(v, RSet):
            idx = v.index
            if idx is not None:
                idx._check(v)
            val = ("set", sorted(v), v.mem,
                   None if idx is None else (sorted(idx.items), sorted(idx.stale)))
        elif isinstance(v, bytes):
            val = v
        else:
            val = (type(v).__name__, list(v.items()) if isinstance(v, dict) else list(v),
                   v.mem)
        out[key] = (val, db.lru[e], db.lfu[e], db.exp[e])
    return out, ks.used_memory, ks.hits, ks.misses, ks.expired_keys


def _run(fn, c, argv):
    try:
        return fn(c, argv)
    except CommandError as e:
        return ("error", e.text)


@pytest.mark.parametrize("seed,lfu", [(1, False), (2, True), (3, False), (4, True)])
def test_fast_paths_match_general_paths(seed, lfu):
    rng = random.Random(seed)
    (ks1, c1, w1), (ks2, c2, w2) = _world(lfu), _world(lfu)
    for ks in (ks1, ks2):
        _setup(ks, random.Random(seed))
    for step in range(3000):
        argv = _op(rng)
        name = argv[0].decode().lower()
        if step % 50 == 0:                 # time passes: the short TTLs run out
            dt = rng.randrange(1, 4)
            for ks in (ks1, ks2):
                ks.clock.advance(dt)
                ks.refresh_time()
        if step % 7 == 0:                  # WATCH the key about to be written
            for ks, w in ((ks1, w1), (ks2, w2)):
                w.dirty_cas = False
                ks.watched = {(0, argv[1]): {w}}
        if step % 97 == 0:                 # an SRANDMEMBER builds a set's index
            for c in (c1, c2):
                e = c.db.find(argv[1])
                if e is not None and isinstance(c.db.vals[e], RSet):
                    sets.set_index(c.db.vals[e])
        if step % 211 == 0:                # a TTL on a container
            ttl = rng.randrange(1, 200)
            for ks in (ks1, ks2):
                e = ks.dbs[0].find(argv[1])
                if e is not None and ks.dbs[0].exp[e] == 0:
                    ks.dbs[0].set_expire(e, ks.now_ms + ttl)
        r1 = _run(_HANDLERS[name], c1, argv)
        r2 = _run(_general(name), c2, argv)
        assert r1 == r2, (step, argv)
        assert w1.dirty_cas == w2.dirty_cas, (step, argv)
        ks1.watched = ks2.watched = {}
        assert _snapshot(ks1) == _snapshot(ks2), (step, argv)
        if step % 100 == 0:
            ks1._check()
            ks2._check()
    ks1._check()


def _one(ks, *argv):
    c = _Client(ks)
    return _HANDLERS[argv[0].decode()](c, list(argv))


def test_fast_paths_replies_and_errors():
    ks, c, _ = _world(False)
    db = ks.dbs[0]
    assert _one(ks, b"incr", b"n") == 1 and _one(ks, b"incr", b"n") == 2
    assert db.vals[db.find(b"n")] == b"2"
    db.add(b"big", b"999999999999999999")
    assert _one(ks, b"incr", b"big") == 10 ** 18
    db.add(b"max", b"9223372036854775807")
    with pytest.raises(CommandError) as info:
        _one(ks, b"incr", b"max")
    assert errors.OVERFLOW in info.value.text
    db.add(b"zero", b"01")
    with pytest.raises(CommandError):
        _one(ks, b"incr", b"zero")
    assert _one(ks, b"lpush", b"l", b"a") == 1 and _one(ks, b"lpush", b"l", b"b") == 2
    assert _one(ks, b"rpush", b"l", b"c") == 3
    assert list(db.vals[db.find(b"l")]) == [b"b", b"a", b"c"]
    assert _one(ks, b"lpop", b"l") == b"b" and _one(ks, b"rpop", b"l") == b"c"
    assert _one(ks, b"lpop", b"l") == b"a" and db.find(b"l") is None   # the last one
    for name, argv in ((b"lpush", (b"x",)), (b"lpop", ()), (b"sadd", (b"m",)),
                       (b"hset", (b"f", b"v")), (b"zadd", (b"1", b"m"))):
        with pytest.raises(CommandError) as info:   # WRONGTYPE on the string "n"
            _one(ks, name, b"n", *argv)
        assert info.value.text.startswith("WRONGTYPE")
    with pytest.raises(CommandError) as info:
        _one(ks, b"incr", b"s") if _one(ks, b"sadd", b"s", b"m") else None
    assert info.value.text.startswith("WRONGTYPE")
    assert _one(ks, b"sadd", b"s", b"m") == 0 and _one(ks, b"sadd", b"s", b"n") == 1
    assert _one(ks, b"hset", b"h", b"f", b"v") == 1
    assert _one(ks, b"hset", b"h", b"f", b"vv") == 0 and db.vals[db.find(b"h")][b"f"] == b"vv"
    assert _one(ks, b"zadd", b"z", b"5", b"a") == 1 and _one(ks, b"zadd", b"z", b"3", b"a") == 0
    assert _one(ks, b"zadd", b"z", b"3", b"b") == 1
    assert list(db.vals[db.find(b"z")].order) == [(3.0, b"a"), (3.0, b"b")]
    ks._check()


def test_zadd_fast_path_leaves_listpack_like_redis():
    ks, _, _ = _world(False)
    for i in range(129):
        _one(ks, b"zadd", b"z", b"%d" % i, b"m%d" % i)
        assert ks.dbs[0].vals[ks.dbs[0].find(b"z")].listpack == (i < 128)
    _one(ks, b"zadd", b"y", b"1", b"a")
    _one(ks, b"zadd", b"y", b"2", b"x" * 65)
    assert not ks.dbs[0].vals[ks.dbs[0].find(b"y")].listpack
    ks._check()


def test_fast_paths_signal_watch_like_redis():
    ks, _, w = _world(False)
    _one(ks, b"sadd", b"s", b"m")
    _one(ks, b"zadd", b"z", b"1", b"m")
    _one(ks, b"hset", b"h", b"f", b"v")
    for argv, dirty in (((b"sadd", b"s", b"m"), False),       # nothing added
                        ((b"sadd", b"s", b"n"), True),
                        ((b"zadd", b"z", b"1", b"m"), False),  # same score
                        ((b"zadd", b"z", b"2", b"m"), True),
                        ((b"hset", b"h", b"f", b"v"), True),   # same value: Redis signals
                        ((b"lpush", b"s2", b"x"), True)):
        w.dirty_cas = False
        ks.watched = {(0, argv[1]): {w}}
        _one(ks, *argv)
        assert w.dirty_cas is dirty, argv
    ks._check()
