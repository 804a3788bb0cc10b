"""Differential tests: the Redis policies' observable behaviour, ferrumkv against redis-server.

Each test sends the same commands to both servers and compares the raw reply bytes.  The real
server is the shared session ``redis_server``: its maxmemory settings are saved before each
test and restored after, and only keys named ``evdiff:*`` are created (and deleted).  The
tiny ``maxmemory`` values used here keep a real server over its limit whatever it holds, so
denyoom commands are refused; the only policies used with it are noeviction (deletes nothing)
and volatile-* (may delete other tests' leftover TTL keys, which is harmless).

Known, intended differences (asserted as such): ferrumkv accepts ``allkeys-ahe`` and
``volatile-ahe`` (so the list in the invalid-policy error names them too).
"""

from __future__ import annotations

import pytest

from tests.conftest import RawConn
from tests.conftest import command_frame as resp

pytestmark = pytest.mark.needs_redis

REDIS_POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                  "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction")
KNOBS = ("maxmemory", "maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity",
         "lfu-log-factor", "lfu-decay-time")


class Side:
    """One server: send a command, get the raw reply bytes."""

    def __init__(self, port: int):
        self.conn = RawConn(port)

    def __call__(self, *args) -> bytes:
        self.conn.send(resp(*args))
        return self.conn.read_reply()

    def config_get(self, name: str) -> bytes:
        reply = self(b"CONFIG", b"GET", name)
        return reply.split(b"\r\n")[-2]        # the value of a 2-element array


class Pair:
    def __init__(self, ours: Side, real: Side):
        self.ours, self.real = ours, real

    def both(self, *args) -> tuple:
        return self.ours(*args), self.real(*args)

    def same(self, *args) -> bytes:
        a, b = self.both(*args)
        assert a == b, (args, a, b)
        return a


@pytest.fixture
def pair(server, redis_server):
    ours, real = Side(server.port), Side(redis_server)
    saved = {name: real.config_get(name) for name in KNOBS}
    p = Pair(ours, real)
    try:
        yield p
    finally:
        real(b"CONFIG", b"SET", b"maxmemory", b"0")
        keys = real(b"KEYS", b"evdiff:*").split(b"\r\n")[2::2]
        if keys:
            real(b"DEL", *keys)
        for name, value in saved.items():
            real(b"CONFIG", b"SET", name, value)
        ours.conn.close()
        real.conn.close()


def oom_err() -> bytes:
    return b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"


# ---- CONFIG round trips and errors ----

@pytest.mark.parametrize("name,values", [
    ("maxmemory-policy", REDIS_POLICIES),
    ("maxmemory-samples", ("1", "5", "10", "64")),
    ("maxmemory-eviction-tenacity", ("0", "10", "55", "100")),
    ("lfu-log-factor", ("0", "1", "10", "100")),
    ("lfu-decay-time", ("0", "1", "7")),
    ("maxmemory", ("1mb", "100kb", "3gb", "2k", "1000", "0")),
])
def test_config_set_get_round_trips(pair, name, values):
    for value in values:
        pair.same(b"CONFIG", b"SET", name, value)
        pair.same(b"CONFIG", b"GET", name)
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"0")


@pytest.mark.parametrize("name,value", [
    ("maxmemory-samples", "0"), ("maxmemory-samples", "-3"), ("maxmemory-samples", "abc"),
    ("maxmemory-eviction-tenacity", "101"), ("maxmemory-eviction-tenacity", "-1"),
    ("lfu-log-factor", "-1"), ("lfu-log-factor", "x"), ("lfu-decay-time", "-1"),
    ("maxmemory", "12xb"), ("maxmemory", "abc"),
])
def test_config_set_errors_match(pair, name, value):
    reply = pair.same(b"CONFIG", b"SET", name, value)
    assert reply.startswith(b"-ERR CONFIG SET failed")


def test_invalid_policy_error_lists_ahe_too(pair):
    ours, real = pair.both(b"CONFIG", b"SET", b"maxmemory-policy", b"lru-ish")
    assert real.startswith(b"-ERR CONFIG SET failed (possibly related to argument "
                           b"'maxmemory-policy') - argument(s) must be one of the following: ")
    assert ours == real[:-2] + b", allkeys-ahe, volatile-ahe\r\n"
    ours, real = pair.both(b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-ahe")
    assert ours == b"+OK\r\n" and real.startswith(b"-ERR CONFIG SET failed")
    pair.ours(b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction")


def test_policy_names_are_case_insensitive(pair):
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"ALLKEYS-LRU")
    pair.same(b"CONFIG", b"GET", b"maxmemory-policy")


# ---- OOM ----

def load(pair, n=20, ttl_every=0):
    for i in range(n):
        args = [b"SET", b"evdiff:%d" % i, b"v" * 50]
        if ttl_every and i % ttl_every == 0:
            args += [b"EX", b"1000"]
        pair.same(*args)


def test_noeviction_oom_refuses_writes_serves_reads(pair):
    load(pair)
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction")
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"1")
    for cmd in ([b"SET", b"evdiff:new", b"x"], [b"SET", b"evdiff:1", b"x"],
                [b"INCR", b"evdiff:n"], [b"APPEND", b"evdiff:1", b"x"],
                [b"MSET", b"evdiff:a", b"1", b"evdiff:b", b"2"], [b"SETNX", b"evdiff:z", b"1"]):
        assert pair.same(*cmd) == oom_err()
    assert pair.same(b"GET", b"evdiff:1") == b"$50\r\n" + b"v" * 50 + b"\r\n"
    pair.same(b"EXISTS", b"evdiff:1", b"evdiff:new")
    pair.same(b"EXPIRE", b"evdiff:2", b"100")            # not denyoom
    pair.same(b"DEL", b"evdiff:3")                       # not denyoom
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"0")
    for i in range(20):
        pair.same(b"GET", b"evdiff:%d" % i)              # nothing was lost


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random",
                                    "volatile-ttl"])
def test_volatile_evicts_only_ttl_keys_then_refuses(pair, policy):
    load(pair, 20, ttl_every=4)                          # evdiff:0,4,8,12,16 have TTLs
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", policy)
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"1")
    assert pair.same(b"SET", b"evdiff:new", b"x") == oom_err()
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"0")
    for i in range(20):
        got = pair.same(b"EXISTS", b"evdiff:%d" % i)
        assert got == (b":0\r\n" if i % 4 == 0 else b":1\r\n")


def test_oom_inside_multi(pair):
    load(pair, 5)
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"noeviction")
    pair.same(b"CONFIG", b"SET", b"maxmemory", b"1")
    pair.same(b"MULTI")
    pair.same(b"SET", b"evdiff:m", b"1")
    pair.same(b"EXEC")


# ---- OBJECT FREQ / IDLETIME ----

def test_object_freq_and_idletime_errors_follow_the_policy(pair):
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lru")
    load(pair, 2)
    err_freq = pair.same(b"OBJECT", b"FREQ", b"evdiff:1")
    assert err_freq.startswith(b"-ERR An LFU maxmemory policy is not selected")
    pair.same(b"OBJECT", b"IDLETIME", b"evdiff:1")
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-lfu")
    err_idle = pair.same(b"OBJECT", b"IDLETIME", b"evdiff:1")
    assert err_idle.startswith(b"-ERR An LFU maxmemory policy is selected, idle time")
    pair.same(b"OBJECT", b"FREQ", b"evdiff:missing")     # null before the policy check
    pair.same(b"OBJECT", b"IDLETIME", b"evdiff:missing")
    pair.same(b"OBJECT", b"FREQ")
    pair.same(b"OBJECT", b"FREQ", b"a", b"b")
    pair.same(b"OBJECT", b"NOPE", b"evdiff:1")


def test_object_freq_counts_like_redis_with_log_factor_zero(pair):
    pair.same(b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu")
    pair.same(b"CONFIG", b"SET", b"lfu-log-factor", b"0")
    pair.same(b"SET", b"evdiff:f", b"v")                 # created under LFU: counter 5
    assert pair.same(b"OBJECT", b"FREQ", b"evdiff:f") == b":5\r\n"
    for _ in range(30):
        pair.same(b"GET", b"evdiff:f")
    assert pair.same(b"OBJECT", b"FREQ", b"evdiff:f") == b":35\r\n"
    pair.same(b"SET", b"evdiff:f", b"w")                 # overwrite keeps (and bumps) it
    pair.same(b"OBJECT", b"FREQ", b"evdiff:f")
