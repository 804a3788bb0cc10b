"""Keyspace notifications: the flag string, and the events of every write command, compared
message for message with redis-server 7.0 over random command sequences; expiry (lazy,
active), eviction (every policy), ``new`` and ``keymiss``; nothing published when off."""

from __future__ import annotations

import random
import time

import pytest
import redis

from ferrumkv_py import notify
from ferrumkv_py.notify import flags_to_string, string_to_flags
from tests.conftest import run_redis_server
from tests.ferrumkv.container_diff import split_elements
from tests.ferrumkv.events_diff import PONG2, PONG3, Conn

KEYS = ["a", "b", "c", "d"]
SHORT_TTL_WAIT_S = 0.004   # after a 1 ms TTL: lazy expiry then finds the key past due
PEXPIRE_SHORT_MS = "2"     # not 1: test_notify_families.PEXPIRE_SHORT_MS says why
STEPS = 600                # commands per random sequence
VALS = ["x", "y", "1", "7"]


def _cmd(rng: random.Random) -> list:
    """One random write (or read) command over four shared key names, so types collide."""
    k, k2 = rng.choice(KEYS), rng.choice(KEYS)
    v, m = rng.choice(VALS), rng.choice(VALS)
    n = str(rng.randint(-1, 3))
    table = [
        ["SET", k, v], ["SET", k, v, "EX", "100"], ["SET", k, v, "PX", "1"],
        ["SET", k, v, rng.choice(["NX", "XX", "GET", "KEEPTTL"])], ["SETNX", k, v],
        ["SETEX", k, "100", v], ["PSETEX", k, "1", v], ["GETEX", k, "EX", "100"],
        ["GETEX", k, "PERSIST"], ["GETEX", k, "PXAT", "1"], ["GETDEL", k], ["GETSET", k, v],
        ["MSET", k, v, k2, m], ["MSETNX", k, v, k2, m], ["INCR", k], ["DECR", k],
        ["INCRBY", k, n], ["DECRBY", k, n], ["INCRBYFLOAT", k, "1.5"], ["APPEND", k, v],
        ["SETRANGE", k, n if n != "-1" else "0", rng.choice(["zz", ""])], ["GET", k],
        ["MGET", k, k2], ["DEL", k, k2], ["UNLINK", k], ["RENAME", k, k2],
        ["RENAMENX", k, k2], ["COPY", k, k2], ["COPY", k, k2, "REPLACE"], ["MOVE", k, "1"],
        ["EXPIRE", k, "100"], ["EXPIRE", k, "50", rng.choice(["NX", "XX", "GT", "LT"])],
        ["PEXPIRE", k, PEXPIRE_SHORT_MS], ["EXPIREAT", k, "1"], ["PERSIST", k], ["EXISTS", k],
        ["TYPE", k], ["TTL", k],
        ["LPUSH", k, v, m], ["RPUSH", k, v], ["LPUSHX", k, v], ["RPUSHX", k, v],
        ["LPOP", k], ["RPOP", k, n if n != "-1" else "2"], ["LSET", k, "0", v],
        ["LREM", k, "0", v], ["LTRIM", k, "0", n], ["LINSERT", k, "BEFORE", v, m],
        ["LMOVE", k, k2, "LEFT", "RIGHT"], ["RPOPLPUSH", k, k2], ["LRANGE", k, "0", "-1"],
        ["HSET", k, v, m], ["HSET", k, v, m, m, v], ["HSETNX", k, v, m], ["HDEL", k, v, m],
        ["HINCRBY", k, v, "2"], ["HINCRBYFLOAT", k, v, "0.5"], ["HMSET", k, v, m],
        ["SADD", k, v, m], ["SREM", k, v], ["SPOP", k, rng.choice(["0", "9"])],
        ["SMOVE", k, k2, v], ["SINTERSTORE", k, k2, k], ["SUNIONSTORE", k2, k],
        ["SDIFFSTORE", k, k2],
        ["ZADD", k, n, v], ["ZADD", k, rng.choice(["NX", "XX", "GT", "LT", "CH"]), n, v],
        ["ZADD", k, "INCR", n, v], ["ZINCRBY", k, n, v], ["ZREM", k, v, m], ["ZPOPMIN", k],
        ["ZPOPMAX", k, rng.choice(["0", "2"])], ["ZREMRANGEBYRANK", k, "0", "0"],
        ["ZREMRANGEBYSCORE", k, "0", "2"], ["ZREMRANGEBYLEX", k, "-", "+"],
        ["ZRANGESTORE", k2, k, "0", "-1"],
    ]
    return rng.choice(table)


class Side:
    """One server: a RESP2 commander, a RESP2 and a RESP3 subscriber on both patterns."""

    def __init__(self, port: int):
        self.c = Conn(port)
        self.s2, self.s3 = Conn(port), Conn(port)
        self.s3.cmd("HELLO", "3")
        for s in (self.s2, self.s3):
            s.cmd_frames(2, "PSUBSCRIBE", "__keyspace@*__:*", "__keyevent@*__:*")

    def run(self, args: list) -> tuple:
        reply = self.c.cmd(*args)
        if args[0] == "SPOP" and reply[:1] == b"*":   # all members: order is the set's
            head, items = split_elements(reply)
            reply = head + b"".join(sorted(items))
        return reply, self.s2.drain(PONG2), self.s3.drain(PONG3)

    def close(self):
        for x in (self.c, self.s2, self.s3):
            x.close()


@pytest.fixture(scope="module")
def redis_debug():
    """A redis-server 7.0 of this module's own that allows DEBUG (to stop active expiry)."""
    yield from run_redis_server("--enable-debug-command", "yes")


@pytest.fixture
def no_active_expire(monkeypatch):
    """Lazy expiry only (a key's expiry must not depend on when a cron tick lands)."""
    monkeypatch.setattr("ferrumkv_py.server.active_expire_cycle", lambda *a, **k: 0)


@pytest.mark.needs_redis
@pytest.mark.parametrize("classes,seed", [("KEA", 1), ("KEA", 2), ("KEAn", 3), ("KEm", 7),
                                          ("KEAnm", 8), ("Kgl$", 4), ("Eshz", 5), ("KEx", 6)])
def test_random_sequences_publish_what_redis_publishes(server, redis_debug,
                                                       no_active_expire, classes, seed):
    redis_server = redis_debug
    rc = redis.Redis(port=redis_server)
    rc.flushall()
    rc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    for port in (server.port, redis_server):
        redis.Redis(port=port).config_set("notify-keyspace-events", classes)
    ours = Side(server.port)
    real = Side(redis_server)
    rng = random.Random(seed)
    published = 0
    try:
        for step in range(STEPS):
            args = _cmd(rng)
            got, want = ours.run(args), real.run(args)
            assert got == want, (step, args)
            if args[0] in ("PSETEX", "PEXPIRE") or "PX" in args:
                time.sleep(SHORT_TTL_WAIT_S)   # both real clocks pass the 1 ms deadline
            published += len(got[1])
    finally:
        ours.close()
        real.close()
        rc.config_set("notify-keyspace-events", "")
        rc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        rc.flushall()
        rc.close()
    assert published > 10   # the sequences did exercise the notifications


@pytest.mark.needs_redis
def test_config_flag_strings_match_redis(server, redis_server):
    cases = ["", "KEA", "AKEmn", "nKE", "Elg$mx", "nd", "tdnesKhE", "EKgggm", "g$lshzxetd",
             "Ax", "a", "KE ", "m", "KEAx", "$$$E"]

    def run(port):
        r = redis.Redis(port=port, decode_responses=True)
        out = []
        for s in cases:
            try:
                r.config_set("notify-keyspace-events", s)
                out.append(r.config_get("notify-keyspace-events"))
            except redis.ResponseError as e:
                out.append(str(e))
        r.config_set("notify-keyspace-events", "")
        r.close()
        return out
    ours = run(server.port)
    assert ours == run(redis_server)
    assert ours[1] == {"notify-keyspace-events": "AKE"}


def test_flag_parsing_units():
    assert flags_to_string(string_to_flags("Elg$mx")) == "g$lxEm"
    assert flags_to_string(string_to_flags("AKEmn")) == "AKEm"   # n is inside A's letters
    assert string_to_flags("A") == notify.NOTIFY_ALL
    assert not string_to_flags("A") & (notify.NOTIFY_KEY_MISS | notify.NOTIFY_NEW)
    with pytest.raises(ValueError, match="Invalid event class character"):
        string_to_flags("KEq")


def test_nothing_published_when_off_or_without_k_and_e(server, monkeypatch):
    fired = []
    monkeypatch.setattr(server.server.notifier, "fire", lambda *a: fired.append(a))
    r = redis.Redis(port=server.port)
    r.set("k", "v")
    r.lpush("l", "a")
    r.config_set("notify-keyspace-events", "A")     # classes but neither K nor E
    r.set("k", "v")
    assert server.server.ks.notify_flags == 0
    assert fired == []
    r.config_set("notify-keyspace-events", "K$")
    r.set("k", "v")
    r.lpush("l", "b")   # class l is off
    assert fired == [(0, b"set", b"k")]
    r.close()


@pytest.mark.parametrize("cmd", [["LMOVE", "src", "dst", "LEFT", "RIGHT"],
                                 ["RPOPLPUSH", "src", "dst"], ["SMOVE", "src", "dst", "x"]])
def test_a_move_that_empties_its_source_into_a_new_key_fires_del(server, monkeypatch, cmd):
    """The source's last element moves to a new destination: the source's slot is freed
    and the destination takes it at once, and the source's "del" still fires."""
    fired = []
    monkeypatch.setattr(server.server.notifier, "fire", lambda *a: fired.append(a))
    r = redis.Redis(port=server.port)
    r.config_set("notify-keyspace-events", "E$lsg")
    if cmd[0] == "SMOVE":
        r.sadd("src", "x")
    else:
        r.rpush("src", "x")
    fired.clear()
    r.execute_command(*cmd)
    assert (0, b"del", b"src") in fired and r.exists("src") == 0
    assert [e for e in fired if e[2] == b"src"][-1] == (0, b"del", b"src")
    r.close()


def _frames(conn) -> list:
    return conn.drain()


def test_lazy_and_active_expiry_and_keymiss(server, clock):
    r = redis.Redis(port=server.port)
    r.config_set("notify-keyspace-events", "Exm")
    sub = Conn(server.port)
    sub.cmd("PSUBSCRIBE", "__keyevent@0__:*")
    r.set("lazy", "1", px=100)
    r.set("active", "1", px=100)
    r.get("nothere")
    server.call(clock.advance, 200)
    assert r.get("lazy") is None          # lazy: "expired", then the read's "keymiss"
    server.call(server.server.cron)       # active expiry finds the other one
    frames = _frames(sub)
    assert frames == [
        b"*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n$22\r\n__keyevent@0__:keymiss"
        b"\r\n$7\r\nnothere\r\n",
        b"*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n$22\r\n__keyevent@0__:expired"
        b"\r\n$4\r\nlazy\r\n",
        b"*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n$22\r\n__keyevent@0__:keymiss"
        b"\r\n$4\r\nlazy\r\n",
        b"*4\r\n$8\r\npmessage\r\n$16\r\n__keyevent@0__:*\r\n$22\r\n__keyevent@0__:expired"
        b"\r\n$6\r\nactive\r\n"]
    sub.close()
    r.close()


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random",
                                    "volatile-lru", "volatile-lfu", "volatile-random",
                                    "volatile-ttl", "allkeys-ahe", "volatile-ahe"])
def test_every_eviction_policy_publishes_evicted(make_server, policy):
    srv = make_server(maxmemory_policy=policy)
    r = redis.Redis(port=srv.port)
    r.config_set("notify-keyspace-events", "Ee")
    sub = Conn(srv.port)
    sub.cmd("SUBSCRIBE", "__keyevent@0__:evicted")
    for i in range(200):
        r.set("key:%d" % i, "v" * 100, ex=1000)
    r.config_set("maxmemory", str(srv.server.ks.used_memory // 2))
    r.set("trigger", "x", ex=1000)
    evicted = [f for f in sub.drain() if b"evicted" in f]
    gone = 201 - r.dbsize()
    assert gone > 0 and len(evicted) == gone == r.info("stats")["evicted_keys"]
    assert evicted[0].startswith(b"*3\r\n$7\r\nmessage\r\n$22\r\n__keyevent@0__:evicted\r\n")
    sub.close()
    r.close()
