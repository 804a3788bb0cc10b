"""GET's read path (issue 15): Database.lookup_value against Database.lookup_read, the touch
rule's one home, and GET run inline by the dispatcher (client.py) against Redis.

``lookup_value`` is lookup_read and the value read in one call; it must behave exactly as
lookup_read: lazy expiry (and the "expired" event), hit/miss counters, the AHE miss hook,
the keymiss event and the touch (LRU clock, LFU hook).  The dispatcher runs GET without its
handler; the replies, errors, stats and events must be those of the handler and of Redis.
"""

from __future__ import annotations

import inspect
import random
import socket

import pytest

from ferrumkv_py import keyspace
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.notify import NOTIFY_ALL, NOTIFY_KEY_MISS, NOTIFY_NEW

from ..conftest import RawConn, command_frame, run_redis_server


class _Recorder:
    """Stands in for the Notifier: keeps every event fired."""

    def __init__(self):
        self.events = []

    def fire(self, dbid, event, key):
        self.events.append((dbid, event, key))


def _world(lfu: bool, notify: bool):
    ks = Keyspace(databases=2, clock=ManualClock(1_000_000), rng=random.Random(5))
    misses_seen = []
    ks.miss_hook = misses_seen.append
    if lfu:
        ks.lfu_on = True
        ks.lfu_touch = lambda counter, last_ms, now_ms: min(255, counter + 1 + now_ms % 3)
    rec = _Recorder()
    if notify:
        ks.notify_flags = NOTIFY_ALL | NOTIFY_KEY_MISS | NOTIFY_NEW
        ks.notifier = rec
    return ks, misses_seen, rec


def _state(ks, misses_seen, rec):
    db = ks.dbs[0]
    cols = {key: (db.vals[s], db.lru[s], db.lfu[s], db.exp[s]) for key, s in db.items()}
    return (cols, ks.hits, ks.misses, ks.expired_keys, ks.used_memory, list(misses_seen),
            list(rec.events))


@pytest.mark.parametrize("seed,lfu,notify", [(1, False, False), (2, True, False),
                                             (3, False, True), (4, True, True)])
def test_lookup_value_is_lookup_read(seed, lfu, notify):
    """A random read workload with TTLs that run out, keys added and deleted, through
    lookup_value in one keyspace and lookup_read + vals[] in another: same results, same
    columns, counters, miss-hook calls and events after every step."""
    rng = random.Random(seed)
    a, b = _world(lfu, notify), _world(lfu, notify)
    for step in range(3000):
        key = b"k%d" % rng.randrange(12)
        op = rng.random()
        dt = rng.randrange(0, 30) if step % 40 == 0 else 0
        ttl = rng.randrange(0, 40)
        for ks, _, _ in (a, b):
            db = ks.dbs[0]
            ks.clock.advance(dt)
            ks.refresh_time()
            if op < 0.15:
                db.set(key, b"v%d" % step)
            elif op < 0.2:
                s = db.find(key)
                if s is not None:
                    db.set_expire(s, ks.now_ms + ttl)
            elif op < 0.23:
                db.delete(key)
            elif op < 0.25:
                s = db.find(key)
                if s is not None:
                    db.persist(s)
        if op >= 0.25:
            got = a[0].dbs[0].lookup_value(key)
            s = b[0].dbs[0].lookup_read(key)
            want = None if s is None else b[0].dbs[0].vals[s]
            assert got == want, (step, key)
        assert _state(*a) == _state(*b), (step, key)
    a[0]._check()
    assert a[0].hits and a[0].misses and a[0].expired_keys


def test_read_lookups_without_ttls_skip_exp_but_still_expire():
    """With no key holding a TTL exp[] is not read (lookup_value, lookup_notouch, peek); a
    TTL makes them read it again."""
    ks, _, _ = _world(False, False)
    db = ks.dbs[0]
    db.add(b"a", b"1")
    assert db.lookup_value(b"a") == b"1" and ks.hits == 1
    s = db.add(b"b", b"2")
    db.set_expire(s, ks.now_ms + 10)
    assert db.peek(b"a") is not None and db.lookup_notouch(b"a") is not None
    ks.clock.advance(11)
    ks.refresh_time()
    assert db.peek(b"b") is None and db.find(b"b") == s      # peek: no side effect
    assert db.lookup_value(b"b") is None and ks.expired_keys == 1 and ks.misses == 1
    assert db.lookup_value(b"a") == b"1" and not db.vslots
    s = db.add(b"c", b"3")
    db.set_expire(s, ks.now_ms + 1)
    ks.clock.advance(2)
    ks.refresh_time()
    assert db.lookup_notouch(b"c", True) is None and ks.expired_keys == 2   # EXISTS-style
    assert db.lookup_notouch(b"a", True) is not None and not db.vslots
    ks._check()


def test_touch_rule_is_the_same_in_every_read_path():
    """touch(), lookup_read and lookup_value make the same LFU hook call and leave the same
    counter and clock (the lookups hold touch() inline)."""
    results = []
    for path in ("touch", "lookup_read", "lookup_value"):
        ks, _, _ = _world(False, False)
        seen = []
        ks.lfu_on = True
        ks.lfu_touch = lambda c, last, now, seen=seen: seen.append((c, last, now)) or c + 3
        db = ks.dbs[0]
        s = db.add(b"a", b"1")
        ks.clock.advance(9)
        ks.refresh_time()
        if path == "touch":
            db.touch(s)
        else:
            getattr(db, path)(b"a")
        results.append((seen, db.lfu[s], db.lru[s]))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == [(5, 1_000_000, 1_000_009)] and results[0][1] == 8


def test_lfu_hook_is_called_only_from_the_touch_rule():
    """The LFU hook is called by Database.touch and by the lookups that hold it inline,
    marked ``touch(), inline``; nothing else in the keyspace calls it."""
    callers = {name for name, fn in vars(keyspace.Database).items()
               if callable(fn) and "lfu_touch(" in inspect.getsource(fn)}
    assert callers == {"touch", "lookup_read", "lookup_value"}
    for name in ("lookup_read", "lookup_value"):
        assert "touch(), inline" in inspect.getsource(getattr(keyspace.Database, name))


# ---- GET through the dispatcher (inline) ----

def _exchange(port: int, frames: list, replies: int) -> bytes:
    """Send every frame in one write (one read of the server: the inline path) and read
    ``replies`` replies back as raw bytes."""
    c = RawConn(port)
    try:
        c.send(b"".join(frames))
        return b"".join(c.read_reply() for _ in range(replies))
    finally:
        c.close()


_BIG = b"y" * 5000          # past the dispatcher's table of bulk headers


def _script() -> list:
    return [["SET", "s", "hello"], ["GET", "s"], ["GET", "nokey"], ["RPUSH", "l", "x"],
            ["GET", "l"], ["SET", "e", ""], ["GET", "e"], ["SET", "big", _BIG], ["GET", "big"],
            ["get", "s"], ["GeT", "s"], ["GET"], ["GET", "s", "t"], ["MGET", "s", "l", "no"],
            ["SET", "t", "1", "PXAT", "1"], ["GET", "t"]]


@pytest.fixture(scope="module")
def own_redis():
    """A redis-server of this module's own: the session one's state (configs, keys) is
    whatever earlier tests left."""
    yield from run_redis_server()


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_get_inline_replies_as_redis(own_redis, server, proto):
    """A pipelined batch of GET hits, misses, WRONGTYPE, empty and big values, arity errors
    and a key set already expired: byte for byte what redis-server sends (lazy expiry on
    GET is timed, so test_get_inline_counts_stats_and_fires_keymiss covers it)."""
    frames = [command_frame("HELLO", proto), command_frame("FLUSHALL")] + [
        command_frame(*a) for a in _script()]
    frames.append(command_frame("FLUSHALL"))
    n = len(frames)
    ours = _exchange(server.port, frames, n)
    theirs = _exchange(own_redis, frames, n)
    # HELLO's map names the server and version: compare what follows it
    cut = lambda raw: raw[raw.index(b"+OK\r\n"):]   # noqa: E731  (the first SET's reply)
    assert cut(ours) == cut(theirs)
    assert b"-WRONGTYPE Operation against a key holding the wrong kind of value" in ours
    assert (b"_\r\n" if proto == 3 else b"$-1\r\n") in ours
    assert b"$5000\r\n" + _BIG + b"\r\n" in ours


def test_get_inline_counts_stats_and_fires_keymiss(server, r2):
    """The inline GET counts keyspace hits/misses, calls and failed calls as the handler
    did, fires keymiss, expires lazily and touches (OBJECT IDLETIME back to 0)."""
    r2.config_set("notify-keyspace-events", "Em")
    sub = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        sub.sendall(command_frame("SUBSCRIBE", "__keyevent@0__:keymiss"))
        got = b""
        while got.count(b"\r\n") < 6:
            got += sub.recv(4096)
        frames = [command_frame("SET", "a", "1"), command_frame("LPUSH", "l", "x"),
                  command_frame("SET", "t", "v", "PX", "1")]
        _exchange(server.port, frames, 3)
        import time
        time.sleep(0.01)
        server.call(lambda: server.server.ks.dbs[0].set_access(
            server.server.ks.dbs[0].find(b"a"), server.server.ks.now_ms - 5000))
        r2.config_resetstat()
        frames = [command_frame("GET", k) for k in ("a", "a", "missing", "l", "t")]
        out = _exchange(server.port, frames, 5)
        assert out.startswith(b"$1\r\n1\r\n$1\r\n1\r\n$-1\r\n-WRONGTYPE")
        assert out.endswith(b"$-1\r\n")
        info = r2.info("stats")
        # WRONGTYPE is a hit (Redis: lookupKeyRead found it)
        assert (info["keyspace_hits"], info["keyspace_misses"]) == (3, 2)
        assert info["expired_keys"] == 1
        cmd = r2.info("commandstats")["cmdstat_get"]
        assert (cmd["calls"], cmd["failed_calls"]) == (5, 1)
        assert r2.object("idletime", "a") == 0
        got = b""
        while got.count(b"keymiss") < 2:
            got += sub.recv(4096)
        assert b"$7\r\nmissing\r\n" in got and b"$1\r\nt\r\n" in got
    finally:
        sub.close()


def test_get_inline_touches_lfu_counter(make_server):
    """Under allkeys-lfu a GET hit runs the Morris increment (OBJECT FREQ grows)."""
    import redis
    s = make_server(maxmemory_policy="allkeys-lfu", lfu_log_factor=0)
    r = redis.Redis(port=s.port, socket_timeout=10)
    try:
        r.set("k", "v")
        before = r.object("freq", "k")
        _exchange(s.port, [command_frame("GET", "k")] * 50, 50)
        assert r.object("freq", "k") == before + 50    # factor 0: every hit counts
    finally:
        r.close()


def test_get_inside_multi_and_after_rename(server, r2):
    """GET queued in MULTI (the call() path) and GET of a renamed key read the same value
    as the inline path."""
    r2.set("x", "1")
    p = r2.pipeline(transaction=True)
    p.get("x").rename("x", "y").get("x").get("y")
    assert p.execute() == [b"1", True, None, b"1"]
    assert r2.get("y") == b"1" and r2.get("x") is None
