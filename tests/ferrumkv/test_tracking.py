"""Client-side caching: CLIENT TRACKING's invalidations (RESP3 push, RESP2 redirect to
``__redis__:invalidate``), BCAST / PREFIX / NOLOOP / OPTIN / OPTOUT, flush, expiry and
eviction, the error texts and TRACKINGINFO against redis-server 7.0, and redis-py 8's
client-side cache against the server."""

from __future__ import annotations

import time

import pytest
import redis
import redis.connection
from redis.cache import CacheConfig

from tests.ferrumkv.events_diff import PONG2, PONG3, Conn

INV = b">2\r\n$10\r\ninvalidate\r\n"


def _inv(*keys) -> bytes:
    return INV + b"*%d\r\n" % len(keys) + b"".join(b"$%d\r\n%s\r\n" % (len(k), k)
                                                    for k in keys)


def _script(port: int) -> list:
    """A tracking session over three connections; every reply and pushed frame, in order."""
    t, w, rd = Conn(port), Conn(port), Conn(port)
    out = []
    t.cmd("HELLO", "3")
    rid = int(rd.cmd("CLIENT", "ID")[1:-2])
    rd.cmd("SUBSCRIBE", "__redis__:invalidate")
    steps = [
        (t, ("CLIENT", "TRACKING", "ON")), (t, ("SET", "tk", "1")), (t, ("GET", "tk")),
        (w, ("SET", "tk", "2")), (t, ("PING",)), (t, ("GET", "tk")), (t, ("MGET", "tk", "u")),
        (t, ("SET", "tk", "3")),                     # own write: push after the reply
        (t, ("PING",)), (t, ("CLIENT", "TRACKINGINFO")), (t, ("CLIENT", "GETREDIR")),
        (t, ("GET", "tk")), (w, ("FLUSHDB",)), (t, ("PING",)), (t, ("GET", "x")),
        (t, ("FLUSHALL",)),                          # own flush: null after the reply
        (t, ("CLIENT", "TRACKING", "ON", "NOLOOP")), (t, ("GET", "y")), (t, ("SET", "y", "1")),
        (t, ("CLIENT", "TRACKING", "ON", "BCAST")),  # cannot switch mode while on
        (t, ("CLIENT", "TRACKING", "OFF")), (t, ("CLIENT", "TRACKINGINFO")),
        (t, ("CLIENT", "TRACKING", "ON", "REDIRECT", str(rid), "BCAST", "PREFIX", "p:",
             "PREFIX", "q")),
        (t, ("CLIENT", "TRACKINGINFO")), (t, ("CLIENT", "GETREDIR")),
        (w, ("MSET", "p:1", "a", "q", "b", "z", "c")), (rd, ("PING",)),
        (t, ("SET", "p:2", "x")), (rd, ("PING",)),
        (t, ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "p")),   # overlaps p:
        (t, ("CLIENT", "TRACKING", "OFF")),
        (t, ("CLIENT", "TRACKING", "ON", "OPTIN")), (t, ("GET", "o1")),
        (t, ("CLIENT", "CACHING", "YES")), (t, ("GET", "o2")), (t, ("CLIENT", "TRACKINGINFO")),
        (w, ("MSET", "o1", "1", "o2", "2")), (t, ("PING",)),
        (t, ("CLIENT", "CACHING", "NO")),
        (t, ("CLIENT", "TRACKING", "ON", "OPTOUT")),
        (t, ("CLIENT", "TRACKING", "OFF")),
        (t, ("CLIENT", "TRACKING", "ON", "OPTOUT")), (t, ("GET", "o3")),
        (t, ("CLIENT", "CACHING", "NO")), (t, ("GET", "o4")),
        (w, ("MSET", "o3", "1", "o4", "2")), (t, ("PING",)),
        (t, ("CLIENT", "CACHING", "YES")), (t, ("CLIENT", "CACHING", "MAYBE")),
        (t, ("CLIENT", "TRACKING", "OFF")),
        (t, ("CLIENT", "TRACKING", "ON", "PREFIX", "a")),
        (t, ("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN")),
        (t, ("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT")),
        (t, ("CLIENT", "TRACKING", "ON", "REDIRECT", "999999")),
        (t, ("CLIENT", "TRACKING", "ON", "REDIRECT", "x")),
        (t, ("CLIENT", "TRACKING", "ON", "REDIRECT", str(rid), "REDIRECT", str(rid))),
        (t, ("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a")),
        (t, ("CLIENT", "TRACKING", "MAYBE")), (t, ("CLIENT", "TRACKING", "ON", "FOO")),
        (t, ("CLIENT", "CACHING", "YES")),
        (t, ("CLIENT", "TRACKING", "ON", "REDIRECT", str(rid))),
        (w, ("HSET", "h", "f", "v")), (t, ("GET", "h")), (w, ("DEL", "h")),   # WRONGTYPE
        (rd, ("PING",)),                             # reads remember keys even on errors
        (t, ("GET", "r1")),
        (w, ("SET", "r1", "v")), (rd, ("PING",)),
    ]
    for conn, args in steps:
        pong = PONG3 if conn is t else PONG2
        if args == ("PING",):
            out.append(conn.drain(pong))
        else:
            reply = conn.cmd(*args)
            if args[-1] in ("TRACKINGINFO", "GETREDIR"):
                reply = reply.replace(b":%d\r\n" % rid, b":<rid>\r\n")
            out.append(reply)
            if conn is t and args[0] in ("SET", "FLUSHALL"):
                out.append(t.drain(pong))
    # the redirect target goes away: RESP3 clients hear "tracking-redir-broken"
    rd.close()
    time.sleep(0.05)
    out.append(w.cmd("SET", "r1", "w"))
    frames = t.drain(PONG3)                    # r1 was already invalidated: nothing
    out.append(t.cmd("GET", "r1"))
    out.append(w.cmd("SET", "r1", "x"))
    frames += [b"--"] + t.drain(PONG3)
    out.append([f.replace(b":%d\r\n" % rid, b":<rid>\r\n") for f in frames])
    out.append(t.cmd("CLIENT", "TRACKINGINFO").replace(b":%d\r\n" % rid, b":<rid>\r\n"))
    for c in (t, w):
        c.cmd("FLUSHALL")
        c.close()
    return out


@pytest.mark.needs_redis
def test_tracking_session_matches_redis(server, redis_server):
    ours = _script(server.port)
    assert ours == _script(redis_server)
    assert [_inv(b"tk")] in ours and [b">2\r\n$10\r\ninvalidate\r\n_\r\n"] in ours


def test_resp3_invalidation_bytes(server):
    t, w = Conn(server.port), Conn(server.port)
    t.cmd("HELLO", "3")
    assert t.cmd("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    t.cmd("GET", "tk")
    w.cmd("SET", "tk", "2")
    assert t.read_reply() == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ntk\r\n"
    w.cmd("SET", "tk", "3")     # announced once until read again
    t.cmd("GET", "tk")
    w.cmd("FLUSHALL")
    assert t.drain(PONG3) == [b">2\r\n$10\r\ninvalidate\r\n_\r\n"]
    info = redis.Redis(port=server.port).info()
    assert info["tracking_clients"] == 1 and info["tracking_total_keys"] == 0
    t.close()
    w.close()


def test_expiry_and_eviction_invalidate(server, clock):
    t, w = Conn(server.port), Conn(server.port)
    t.cmd("HELLO", "3")
    t.cmd("CLIENT", "TRACKING", "ON")
    w.cmd("SET", "e1", "v", "PX", "100")
    w.cmd("SET", "e2", "v", "PX", "100")
    t.cmd("MGET", "e1", "e2", "ev")
    info = redis.Redis(port=server.port).info("stats")
    assert (info["tracking_total_keys"], info["tracking_total_items"]) == (3, 3)
    server.call(clock.advance, 200)
    assert w.cmd("GET", "e1") == b"$-1\r\n"        # lazy expiry
    server.call(server.server.cron)                # active expiry
    w.cmd("SET", "ev", "x" * 1000)
    w.cmd("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    w.cmd("CONFIG", "SET", "maxmemory", "1")       # evicts everything
    w.cmd("CONFIG", "SET", "maxmemory", "0")
    assert sorted(t.drain(PONG3)) == sorted([_inv(b"e1"), _inv(b"e2"), _inv(b"ev")])
    t.close()
    w.close()


def test_table_limit_invalidates_oldest_keys(server):
    t = Conn(server.port)
    t.cmd("HELLO", "3")
    t.cmd("CONFIG", "SET", "tracking-table-max-keys", "2")
    t.cmd("CLIENT", "TRACKING", "ON")
    t.cmd("GET", "k1")
    t.cmd("GET", "k2")
    assert t.cmd("GET", "k3") == b"_\r\n"
    assert t.read_reply() == _inv(b"k1")     # the oldest key leaves the table, announced
    assert redis.Redis(port=server.port).info()["tracking_total_keys"] == 2
    t.cmd("CONFIG", "SET", "tracking-table-max-keys", "1000000")
    t.close()


def test_disconnect_and_reset_drop_tracking(server):
    r = redis.Redis(port=server.port)
    t = Conn(server.port)
    t.cmd("HELLO", "3")
    t.cmd("CLIENT", "TRACKING", "ON", "BCAST")
    assert r.info()["tracking_clients"] == 1
    assert b"flags=tB" in r.execute_command("CLIENT", "LIST", "ID", t.cmd("CLIENT", "ID")[1:-2])
    t.cmd("RESET")
    assert r.info()["tracking_clients"] == 0 and r.info()["tracking_total_prefixes"] == 0
    t.cmd("HELLO", "3")
    t.cmd("CLIENT", "TRACKING", "ON")
    t.cmd("GET", "a")
    t.close()
    deadline = time.time() + 5
    while r.info()["tracking_clients"] and time.time() < deadline:
        time.sleep(0.01)
    assert r.info()["tracking_clients"] == 0
    assert server.server.ks.invalidate is None        # the write paths skip tracking again
    r.set("a", "1")
    r.close()


@pytest.fixture
def csc_allowed(monkeypatch):
    """redis-py 8 refuses client-side caching unless HELLO announces Redis >= 7.4 (it
    refuses Redis 7.0.15 itself); the protocol it needs is 7.0's, so lower its gate."""
    monkeypatch.setattr(redis.connection.CacheProxyConnection, "MIN_ALLOWED_VERSION",
                        "7.0.0")


def test_redis_py_client_side_cache_sees_invalidations(server, csc_allowed):
    r = redis.Redis(port=server.port, protocol=3, cache_config=CacheConfig())
    w = redis.Redis(port=server.port, protocol=3)
    r.set("ck", "1")
    assert r.get("ck") == b"1"
    assert r.get("ck") == b"1"
    cache = r.get_cache()
    assert cache.size == 1
    w.set("ck", "2")
    deadline = time.time() + 5
    got = r.get("ck")
    while got != b"2" and time.time() < deadline:
        time.sleep(0.01)
        got = r.get("ck")
    assert got == b"2"
    w.flushdb()
    deadline = time.time() + 5
    while r.get("ck") is not None and time.time() < deadline:
        time.sleep(0.01)
    assert r.get("ck") is None
    r.close()
    w.close()


def test_prefix_overlap_checks_match_a_naive_search():
    from ferrumkv_py.tracking import _first_overlap, _later_clashes, _trie
    import random

    def overlap(a, b):
        return a.startswith(b) or b.startswith(a)
    rng = random.Random(7)
    for _ in range(2000):
        ps = [bytes(rng.choice(b"ab") for _ in range(rng.randint(0, 4)))
              for _ in range(rng.randint(0, 7))]
        want = [next((j for j in range(i + 1, len(ps)) if overlap(ps[i], ps[j])), None)
                for i in range(len(ps))]
        assert _later_clashes(ps) == want, ps
        existing = sorted({bytes(rng.choice(b"ab") for _ in range(rng.randint(0, 4)))
                           for _ in range(rng.randint(0, 5))})
        p = bytes(rng.choice(b"ab") for _ in range(rng.randint(0, 4)))
        assert _first_overlap(_trie(existing), p) == next(
            (e for e in existing if overlap(e, p)), None), (existing, p)


def test_many_prefixes_one_clash_at_the_end(server):
    t = Conn(server.port)
    t.cmd("HELLO", "3")
    args = ["CLIENT", "TRACKING", "ON", "BCAST"]
    for i in range(20000):
        args += ["PREFIX", "p%06d:" % i]
    assert t.cmd(*args) == b"+OK\r\n"
    assert redis.Redis(port=server.port).info()["tracking_total_prefixes"] == 20000
    assert t.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "zz", "PREFIX", "p019999:x") \
        == (b"-ERR Prefix 'p019999:x' overlaps with an existing prefix 'p019999:'. Prefixes "
            b"for a single client must not overlap.\r\n")
    t.close()


@pytest.mark.needs_redis
def test_client_help_tracking_lines_match_redis(server, redis_server):
    def lines(port):
        return redis.Redis(port=port, protocol=2, decode_responses=True).execute_command(
            "CLIENT", "HELP")
    ours, theirs = lines(server.port), lines(redis_server)
    for head in ("CACHING", "GETREDIR", "TRACKING (ON", "TRACKINGINFO"):
        i = next(k for k, x in enumerate(ours) if x.startswith(head))
        j = next(k for k, x in enumerate(theirs) if x.startswith(head))
        n = 3 if head == "TRACKING (ON" else 2
        assert ours[i:i + n] == theirs[j:j + n]


def _bcast_script(port: int) -> list:
    t, w = Conn(port), Conn(port)
    t.cmd("HELLO", "3")
    out = [t.cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "k", "PREFIX", "j", "NOLOOP")]
    out.append(w.cmd("MSET", "k1", "a", "k2", "b", "x", "c", "j9", "d"))
    out.append(t.drain(PONG3))
    out.append(t.cmd("SET", "k3", "v"))            # its own change: left out (NOLOOP)
    out.append(t.drain(PONG3))
    out.append(w.cmd("SET", "k1", "z"))
    out.append(t.drain(PONG3))
    out.append(t.cmd("SET", "k1", "y"))            # changed last by itself: left out
    out.append(w.cmd("DEL", "k2"))
    out.append(t.drain(PONG3))
    out.append(t.cmd("CLIENT", "TRACKING", "ON", "BCAST"))   # adds the "" prefix
    out.append(t.cmd("CLIENT", "TRACKINGINFO"))
    out.append(w.cmd("SET", "zz", "1"))
    out.append(t.drain(PONG3))
    out.append(t.cmd("MULTI"))
    out.append(t.cmd("CLIENT", "TRACKING", "OFF"))
    out.append(t.cmd("EXEC"))
    out.append(w.cmd("SET", "k1", "again"))
    out.append(t.drain(PONG3))
    w.cmd("FLUSHALL")
    t.close()
    w.close()
    return out


@pytest.mark.needs_redis
def test_bcast_noloop_session_matches_redis(server, redis_server):
    ours = _bcast_script(server.port)
    assert ours == _bcast_script(redis_server)
    assert ours[2] == [_inv(b"j9"), _inv(b"k1", b"k2")]   # prefixes in byte order
    assert ours[9] == [_inv(b"k2")]                         # k1: changed last by itself


def test_readme_recipe_for_redis_py(server):
    """README's recipe for client-side caching from redis-py 8, whose cache_config= asks for
    Redis 7.4: CLIENT TRACKING on a RESP3 connection and the parser's invalidation handler."""
    import redis
    r = redis.Redis(port=server.port, protocol=3, single_connection_client=True,
                    socket_timeout=10)
    writer = redis.Redis(port=server.port, socket_timeout=10)
    invalidated = []
    r.connection._parser.set_invalidation_push_handler(
        lambda push: invalidated.extend(push[1] or [None]))
    assert r.execute_command("CLIENT", "TRACKING", "ON") == b"OK"
    writer.set("user:1", "ann")
    assert r.get("user:1") == b"ann"                # now tracked for this connection
    writer.set("user:1", "bob")
    assert r.ping() and invalidated == [b"user:1"]  # the push arrived before PING's reply
    writer.flushall()
    r.ping()
    assert invalidated == [b"user:1", None]         # FLUSHALL invalidates everything
    r.close()
    writer.close()


def _script_tracking(port: int) -> list:
    """What a tracking client learns from scripts: a script's read makes its declared keys
    tracked (not the key it read); a script without a read, and EVAL_RO's own call,
    track nothing (unit/tracking's 'Tracking only occurs for scripts ...')."""
    t, w = Conn(port), Conn(port)
    try:
        t.cmd("HELLO", "3")
        t.cmd("CLIENT", "TRACKING", "ON")
        steps = [
            ("EVAL", "redis.call('set', 'k3{t}', 'bar')", 2, "k1{t}", "k2{t}"),
            ("EVAL", "return redis.call('get', 'k3{t}')", 2, "k1{t}", "k2{t}"),
            ("EVAL_RO", "return redis.call('ping')", 1, "k4{t}"),
            ("EVAL_RO", "return redis.call('get', 'k5{t}')", 1, "k6{t}")]
        out = []
        for step in steps:
            out.append(t.cmd(*step))
            w.cmd("MSET", "k1{t}", "1", "k2{t}", "2", "k3{t}", "3", "k4{t}", "4",
                  "k5{t}", "5", "k6{t}", "6")
            out.append(t.drain(PONG3))
        return out
    finally:
        t.close()
        w.close()


@pytest.mark.needs_redis
def test_scripts_track_their_declared_keys_as_redis(server, redis_server):
    ours = _script_tracking(server.port)
    assert ours == _script_tracking(redis_server)
    assert ours[3] == [_inv(b"k1{t}"), _inv(b"k2{t}")] and ours[5] == []
