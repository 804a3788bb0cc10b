"""Blocking pops (ferrumkv_py/blocking.py, commands/blocking.py): LMPOP ZMPOP BLPOP BRPOP
BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP and CLIENT UNBLOCK.

Most tests are differential: the same script of blocking clients, pushes and checks runs on
redis-server 7.0 and on ferrumkv, and every client's received bytes are compared.  A barrier
(INFO blocked_clients reaching n) orders the steps, never a sleep.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from ferrumkv_py.commands.blocking import parse_timeout
from ferrumkv_py.errors import CommandError
from tests.conftest import RawConn
from tests.ferrumkv.diff_util import frame

BARRIER_POLLS = 1000        # INFO polls before a barrier gives up
BARRIER_POLL_S = 0.005


class Scenario:
    """``n`` raw clients (RESP ``proto``) plus a control connection on one server."""

    def __init__(self, port: int, n: int, proto: int = 2):
        self.ctl = RawConn(port)
        self.ctl.send(frame(["FLUSHALL"]))
        self.ctl.read_reply()
        self.c = [RawConn(port) for _ in range(n)]
        if proto == 3:
            for conn in self.c:
                conn.send(frame(["HELLO", "3"]))
                conn.read_reply()

    def send(self, i: int, *args) -> None:
        self.c[i].send(frame(args))

    def call(self, i: int, *args) -> bytes:
        self.send(i, *args)
        return self.c[i].read_reply()

    def ctl_call(self, *args) -> bytes:
        self.ctl.send(frame(args))
        return self.ctl.read_reply()

    def reply(self, i: int) -> bytes:
        return self.c[i].read_reply()

    def blocked(self) -> int:
        info = self.ctl_call("INFO", "clients").decode()
        return int(info.split("blocked_clients:")[1].split("\r\n")[0])

    def wait_blocked(self, n: int) -> None:
        for _ in range(BARRIER_POLLS):
            if self.blocked() == n:
                return
            time.sleep(BARRIER_POLL_S)
        raise AssertionError("never reached %d blocked clients" % n)

    def block(self, i: int, *args) -> None:
        """Send a blocking command and wait until the server counts one more blocked."""
        before = self.blocked()
        self.send(i, *args)
        self.wait_blocked(before + 1)

    def close(self) -> None:
        for conn in self.c + [self.ctl]:
            conn.close()


def differential(redis_port: int, our_port: int, n: int, script, proto: int = 2):
    """Run ``script(scenario) -> list of observations`` on both servers; compare."""
    results = []
    for port in (redis_port, our_port):
        sc = Scenario(port, n, proto)
        try:
            results.append(script(sc))
        finally:
            sc.ctl_call("CONFIG", "SET", "notify-keyspace-events", "")
            sc.close()
    real, ours = results
    assert ours == real
    return real


@pytest.fixture
def diff(redis_server, server):
    def run(n, script, proto=2):
        return differential(redis_server, server.port, n, script, proto)
    return run


# ---- timeouts as Redis parses them ----

@pytest.mark.parametrize("text,ms", [
    (b"0", 0), (b"1", 1000), (b"0.5", 500), (b"0.0001", 1), (b"1e-10", 1), (b"-0.0001", 0),
    (b"-0", 0), (b"0x10", 16000), (b"1e15", 10 ** 18), (b"0.001", 1), (b"2.5e-3", 3),
])
def test_parse_timeout(text, ms):
    assert parse_timeout(text) == ms


@pytest.mark.parametrize("text,msg", [
    (b"-1", "ERR timeout is negative"), (b"1e400", "ERR timeout is negative"),
    (b"inf", "ERR timeout is negative"), (b"-inf", "ERR timeout is negative"),
    (b"1e16", "ERR timeout is negative"), (b"9.3e15", "ERR timeout is negative"),
    (b"abc", "ERR timeout is not a float or out of range"),
    (b"nan", "ERR timeout is not a float or out of range"),
    (b" 1", "ERR timeout is not a float or out of range"),
    (b"1 ", "ERR timeout is not a float or out of range"),
    (b"", "ERR timeout is not a float or out of range"),
    (b"1e5000", "ERR timeout is not a float or out of range"),
])
def test_parse_timeout_errors(text, msg):
    with pytest.raises(CommandError) as e:
        parse_timeout(text)
    assert e.value.text == msg


def test_argument_errors_match_redis(diff):
    cases = [
        ["BLPOP", "k", "-1"], ["BLPOP", "k", "abc"], ["BLPOP", "k", "1e400"],
        ["BLPOP", "k", "inf"], ["BLPOP", "k", "nan"], ["BRPOP", "k"],
        ["BLMPOP", "abc", "0", "k", "left"], ["BLMPOP", "0", "0", "k", "left"],
        ["BLMPOP", "-1", "1", "k", "middle"], ["BLMPOP", "-1", "1", "k", "left"],
        ["BLMPOP", "0", "2", "k", "left"], ["LMPOP", "0", "k", "left"],
        ["LMPOP", "1", "k", "middle"], ["LMPOP", "1", "k", "left", "count", "0"],
        ["LMPOP", "1", "k", "left", "count", "-1"], ["LMPOP", "1", "k", "left", "count", "x"],
        ["LMPOP", "1", "k", "left", "count", "1", "count", "2"],
        ["LMPOP", "1", "k", "left", "foo"], ["LMPOP", "1", "k", "left", "count"],
        ["LMPOP", "2", "k", "left"], ["LMPOP", "-1", "k", "left"],
        ["LMPOP", "abc", "k", "left"], ["LMPOP", "99999999999999999999", "k", "left"],
        ["ZMPOP", "1", "k", "min", "count", "0"], ["ZMPOP", "1", "k", "left"],
        ["BZMPOP", "abc", "0", "k", "min"], ["BZMPOP", "1", "1", "k", "max", "count", "0"],
        ["BZPOPMIN", "k", "abc"], ["BZPOPMAX", "k", "-2"],
        ["BLMOVE", "a", "b", "middle", "left", "abc"], ["BLMOVE", "a", "b", "left", "left", "x"],
        ["BRPOPLPUSH", "a", "b", "-1"], ["BLMOVE", "a", "b", "left", "left"],
        ["CLIENT", "UNBLOCK", "abc"], ["CLIENT", "UNBLOCK", "1", "FOO"],
        ["CLIENT", "UNBLOCK", "99999"], ["CLIENT", "UNBLOCK", "1", "timeout", "x"],
        ["CLIENT", "UNBLOCK"],
    ]

    def script(sc):
        sc.call(0, "SET", "s", "x")
        out = [sc.call(0, *args) for args in cases]
        # WRONGTYPE before blocking, at the first key of another type
        out += [sc.call(0, "BLPOP", "nokey", "s", "0"), sc.call(0, "BZPOPMIN", "s", "0"),
                sc.call(0, "LMPOP", "2", "nokey", "s", "left"),
                sc.call(0, "ZMPOP", "1", "s", "max"),
                sc.call(0, "BLMOVE", "s", "d", "left", "left", "0")]
        return out
    diff(1, script)


# ---- immediate pops (nothing blocks) ----

@pytest.mark.parametrize("proto", [2, 3])
def test_immediate_replies_match_redis(diff, proto):
    def script(sc):
        sc.call(0, "RPUSH", "l", "a", "b", "c", "d")
        sc.call(0, "ZADD", "z", "1.5", "m", "2", "n", "3", "o", "4", "p")
        return [sc.call(0, *args) for args in [
            ["LMPOP", "2", "nokey", "l", "right", "count", "2"], ["LMPOP", "1", "l", "left"],
            ["LMPOP", "1", "nokey", "left"], ["ZMPOP", "1", "z", "max", "count", "2"],
            ["ZMPOP", "1", "z", "min"], ["ZMPOP", "1", "nokey", "min"],
            ["BLPOP", "nokey", "l", "0"], ["BZPOPMIN", "nokey", "z", "0"],
            ["LMPOP", "1", "l", "left", "count", "9"], ["EXISTS", "l"],
            ["RPUSH", "l", "x", "y"], ["BLMPOP", "0", "1", "l", "left", "count", "5"],
            ["RPUSH", "l", "x", "y"], ["BRPOPLPUSH", "l", "l2", "0"],
            ["BLMOVE", "l", "l2", "left", "right", "0"], ["LRANGE", "l2", "0", "-1"],
            ["ZADD", "z", "5", "q", "6", "r"],
            ["BZMPOP", "0", "1", "z", "max", "count", "10"], ["EXISTS", "z"],
            ["LMPOP", "1", "l", "left", "count", "9223372036854775807"],
        ]]
    diff(1, script, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_timeouts_and_multi_match_redis(diff, proto):
    def script(sc):
        out = [sc.call(0, *args) for args in [
            ["BLPOP", "q", "0.01"], ["BRPOP", "q", "q2", "0.02"], ["BZPOPMAX", "z", "0.01"],
            ["BLMPOP", "0.01", "1", "q", "left"], ["BZMPOP", "0.01", "2", "z", "z2", "min"],
            ["BRPOPLPUSH", "q", "d", "0.01"], ["BLMOVE", "q", "d", "left", "left", "0.01"],
            ["BLPOP", "q", "0.0001"],
        ]]
        # inside MULTI every blocking form answers at once, as its non-blocking form
        sc.call(0, "MULTI")
        for args in [["BLPOP", "q", "0"], ["BRPOPLPUSH", "q", "d", "0"],
                     ["BLMOVE", "q", "d", "left", "left", "0"], ["BZPOPMIN", "z", "0"],
                     ["BLMPOP", "0", "1", "q", "left"], ["BZMPOP", "0", "1", "z", "min"]]:
            out.append(sc.call(0, *args))
        out.append(sc.call(0, "EXEC"))
        # scripts too (the blocking xMPOP forms are allowed there; BLPOP is noscript)
        out.append(sc.call(0, "EVAL", "return redis.call('blmpop', 0, 1, 'q', 'left')", "0"))
        out.append(sc.call(0, "EVAL", "return redis.call('bzmpop', 0, 1, 'z', 'min')", "0"))
        out.append(sc.call(0, "EVAL", "return redis.pcall('blpop', 'q', 0)", "0"))
        out.append(sc.ctl_call("INFO", "clients").count(b"blocked_clients:0"))
        return out
    diff(1, script, proto)


# ---- wake-ups ----

def test_one_push_serves_several_clients_in_block_order(diff):
    def script(sc):
        sc.block(0, "BLPOP", "q", "0")
        sc.block(1, "BRPOP", "q", "0")
        sc.block(2, "BLPOP", "q", "0")
        push = sc.call(3, "RPUSH", "q", "1", "2")
        out = [push, sc.reply(0), sc.reply(1), sc.blocked(), sc.call(3, "LRANGE", "q", 0, -1)]
        out += [sc.call(3, "RPUSH", "q", "3"), sc.reply(2), sc.call(3, "EXISTS", "q")]
        return out
    diff(4, script)


def test_first_ready_key_serves_and_the_order_keys_became_ready(diff):
    def script(sc):
        sc.block(0, "BLPOP", "k1", "k2", "0")     # on both keys
        sc.block(1, "BLPOP", "k2", "0")
        sc.block(2, "BLPOP", "k1", "0")
        sc.call(3, "MULTI")
        sc.call(3, "RPUSH", "k2", "x")
        sc.call(3, "RPUSH", "k1", "y")
        sc.call(3, "RPUSH", "k1", "z")
        out = [sc.call(3, "EXEC"), sc.reply(0), sc.reply(2), sc.blocked()]
        out += [sc.call(3, "RPUSH", "k2", "w"), sc.reply(1)]
        return out
    diff(4, script)


def test_pipelined_commands_wait_for_the_blocked_one(diff):
    def script(sc):
        before = sc.blocked()
        sc.c[0].send(frame(["BLPOP", "q", "0"]) + frame(["PING"]) + frame(["LLEN", "q"]))
        sc.wait_blocked(before + 1)
        sc.send(0, "GET", "x")            # sent while blocked: runs after the wake-up
        out = [sc.call(1, "RPUSH", "q", "a", "b")]
        out += [sc.reply(0) for _ in range(4)]
        return out
    diff(2, script)


def test_blmove_chain_and_wrong_type_destination(diff):
    def script(sc):
        sc.block(0, "BLMOVE", "src", "mid", "LEFT", "RIGHT", "0")
        sc.block(1, "BRPOPLPUSH", "mid", "dst", "0")
        sc.block(2, "BLPOP", "dst", "0")
        out = [sc.call(3, "LPUSH", "src", "v"), sc.reply(0), sc.reply(1), sc.reply(2)]
        out += [sc.call(3, "EXISTS", "src", "mid", "dst")]
        # the destination became a string: WRONGTYPE to the waiter, the element stays
        sc.block(0, "BLMOVE", "src", "str", "LEFT", "RIGHT", "0")
        out += [sc.call(3, "SET", "str", "x"), sc.call(3, "LPUSH", "src", "e"), sc.reply(0),
                sc.call(3, "LRANGE", "src", 0, -1), sc.call(0, "PING")]
        # source and destination the same list
        sc.block(0, "BLMOVE", "same", "same", "LEFT", "RIGHT", "0")
        out += [sc.call(3, "RPUSH", "same", "1"), sc.reply(0),
                sc.call(3, "LRANGE", "same", 0, -1)]
        return out
    diff(4, script)


def test_type_changes_keep_waiters_of_the_other_type(diff):
    def script(sc):
        sc.block(0, "BLPOP", "k", "0")
        sc.block(1, "BZPOPMIN", "k", "0")
        out = [sc.call(2, "SET", "k", "str"), sc.blocked(), sc.call(2, "DEL", "k"),
               sc.call(2, "ZADD", "k", "1", "m"), sc.reply(1), sc.blocked(),
               sc.call(2, "SADD", "k", "s"), sc.call(2, "DEL", "k"),
               sc.call(2, "RPUSH", "k", "e"), sc.reply(0), sc.blocked()]
        # DEL and FLUSHALL of a waited key do nothing to its waiter
        sc.block(0, "BLPOP", "w", "0")
        out += [sc.call(2, "DEL", "w"), sc.call(2, "FLUSHALL"), sc.blocked(),
                sc.call(2, "RPUSH", "w", "after"), sc.reply(0)]
        return out
    diff(3, script)


@pytest.mark.parametrize("proto", [2, 3])
def test_sorted_set_and_count_wakeups(diff, proto):
    def script(sc):
        sc.block(0, "BZPOPMIN", "z1", "z2", "0")
        sc.block(1, "BZMPOP", "0", "1", "z2", "MAX", "COUNT", "2")
        sc.block(2, "BLMPOP", "0", "2", "l1", "l2", "RIGHT", "COUNT", "2")
        out = [sc.call(3, "ZADD", "z2", "1.5", "a", "2", "b", "3", "c"), sc.reply(0),
               sc.reply(1), sc.call(3, "ZRANGE", "z2", 0, -1, "WITHSCORES"),
               sc.call(3, "RPUSH", "l2", "x", "y", "z"), sc.reply(2)]
        sc.block(0, "BZPOPMAX", "zz", "0")
        out += [sc.call(3, "ZINCRBY", "zz", "2.5", "m"), sc.reply(0)]
        return out
    diff(4, script, proto)


def test_readiness_from_every_write_path(diff):
    """Keys made by SORT STORE, ZUNIONSTORE, RENAME, MOVE, COPY, RESTORE, LINSERT-free
    paths, SWAPDB, scripts and LMOVE all wake their waiters."""
    def script(sc):
        out = []
        sc.call(3, "RPUSH", "src", "3", "1", "2")
        sc.call(3, "ZADD", "zs", "1", "a")
        steps = [
            (("BLPOP", "sorted", "0"), ("SORT", "src", "STORE", "sorted")),
            (("BZPOPMIN", "zu", "0"), ("ZUNIONSTORE", "zu", "1", "zs")),
            (("BLPOP", "renamed", "0"), ("RENAME", "sorted", "renamed")),
            (("BLPOP", "copied", "0"), ("COPY", "src", "copied")),
            (("BLPOP", "lm", "0"), ("LMOVE", "src", "lm", "LEFT", "LEFT")),
            (("BLPOP", "lua", "0"), ("EVAL", "redis.call('rpush', KEYS[1], 'a', 'b') "
                                              "return redis.call('lpop', KEYS[1])", "1", "lua")),
            (("BLPOP", "rs", "0"), ("RPUSH", "rs", "r")),
        ]
        for wait, write in steps:
            sc.block(0, *wait)
            out += [sc.call(3, *write), sc.reply(0)]
        # RESTORE of a list made by this server and read back by redis-server, both ways
        dump = sc.call(3, "DUMP", "src")
        sc.block(0, "BLPOP", "restored", "0")
        body = dump.split(b"\r\n", 1)[1][:-2]
        out += [sc.call(3, "RESTORE", "restored", "0", body), sc.reply(0)]
        # MOVE into the waiter's database, SWAPDB bringing a list in
        sc.call(1, "SELECT", "1")
        sc.block(1, "BLPOP", "m", "0")
        sc.call(3, "RPUSH", "m", "moved")
        out += [sc.call(3, "MOVE", "m", "1"), sc.reply(1)]
        sc.call(3, "SELECT", "2")
        sc.call(3, "RPUSH", "sw", "swapped")
        sc.block(1, "BLPOP", "sw", "0")
        out += [sc.call(3, "SWAPDB", "1", "2"), sc.reply(1)]
        sc.call(3, "FLUSHALL")
        return out
    diff(4, script)


def test_keyspace_events_of_served_pops(diff):
    def script(sc):
        sc.ctl_call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sc.call(2, "PSUBSCRIBE", "__key*")
        sc.block(0, "BLPOP", "q", "0")
        sc.block(1, "BZPOPMAX", "z", "0")
        sc.call(3, "RPUSH", "q", "a", "b")
        sc.call(3, "ZADD", "z", "1", "m")
        out = [sc.reply(0), sc.reply(1)]
        sc.block(0, "BLMOVE", "s", "d", "RIGHT", "LEFT", "0")
        sc.call(3, "RPUSH", "s", "x")
        out.append(sc.reply(0))
        sc.call(3, "PUBLISH", "__keyend", "end")
        for _ in range(BARRIER_POLLS):
            out.append(sc.c[2].read_reply())
            if b"__keyend" in out[-1]:
                break
        return out
    diff(4, script)


# ---- CLIENT UNBLOCK, disconnects, INFO, CLIENT LIST ----

@pytest.mark.parametrize("proto", [2, 3])
def test_client_unblock(diff, proto):
    def script(sc):
        out = []
        sc.ctl_call("CONFIG", "RESETSTAT")
        ids = [sc.call(i, "CLIENT", "ID")[1:-2] for i in range(2)]
        sc.block(0, "BLPOP", "q", "10")
        out.append(sc.ctl_call("INFO", "clients").split(b"clients_in_timeout_table:")[1][:1])
        out += [sc.call(1, "CLIENT", "UNBLOCK", ids[0], "ERROR"), sc.reply(0),
                sc.call(1, "CLIENT", "UNBLOCK", ids[0], "ERROR"), sc.blocked()]
        sc.block(0, "BZPOPMIN", "z", "0")
        out += [sc.call(1, "CLIENT", "UNBLOCK", ids[0], "timeout"), sc.reply(0)]
        sc.block(0, "BRPOPLPUSH", "q", "d", "0")
        out += [sc.call(1, "CLIENT", "UNBLOCK", ids[0]), sc.reply(0), sc.call(0, "PING")]
        out.append(sc.ctl_call("INFO", "errorstats").count(b"errorstat_UNBLOCKED:count=1"))
        return out
    diff(2, script, proto)


def test_disconnected_waiter_is_removed(diff):
    def script(sc):
        sc.block(0, "BLPOP", "q", "0")
        sc.block(1, "BLPOP", "q", "0")
        sc.c[0].close()
        sc.wait_blocked(1)
        return [sc.call(2, "RPUSH", "q", "a", "b"), sc.reply(1),
                sc.call(2, "LRANGE", "q", 0, -1), sc.blocked()]
    diff(3, script)


def test_client_list_and_info(server, raw):
    a, b = raw(), raw()
    a.send(frame(["CLIENT", "ID"]))
    aid = a.read_reply()[1:-2].decode()
    a.send(frame(["BLPOP", "q", "5"]))
    sc_info = None
    for _ in range(BARRIER_POLLS):
        b.send(frame(["INFO", "clients"]))
        sc_info = b.read_reply()
        if b"blocked_clients:1" in sc_info:
            break
        time.sleep(BARRIER_POLL_S)
    assert b"clients_in_timeout_table:1" in sc_info
    b.send(frame(["CLIENT", "LIST", "ID", aid]))
    line = b.read_reply().decode()
    assert " flags=b " in line and " cmd=blpop " in line
    b.send(frame(["RPUSH", "q", "v"]))
    assert b.read_reply() == b":1\r\n"
    assert a.read_reply() == b"*2\r\n$1\r\nq\r\n$1\r\nv\r\n"
    b.send(frame(["INFO", "clients"]))
    info = b.read_reply()
    assert b"blocked_clients:0" in info and b"clients_in_timeout_table:0" in info


def test_idle_timeout_spares_blocked_clients(make_server):
    s = make_server(timeout=1)
    blocked = redis.Redis(port=s.port, socket_timeout=10)
    idle = RawConn(s.port)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", blocked.blpop(["q"], 2.5)))
    t.start()
    assert idle.closed(timeout=5)           # the idle client goes after ~1 s
    t.join(10)
    assert out["r"] is None                 # the blocked one reached its own timeout
    blocked.close()


# ---- redis-py, threads ----

def test_redis_py_blpop_in_a_thread(server, r):
    other = redis.Redis(port=server.port, protocol=2, socket_timeout=10)
    got = []
    threads = [threading.Thread(target=lambda: got.append(other.blpop(["jobs"], 5)))]
    threads[0].start()
    for _ in range(BARRIER_POLLS):
        if r.info("clients")["blocked_clients"] == 1:
            break
        time.sleep(BARRIER_POLL_S)
    assert r.lpush("jobs", "j1") == 1
    threads[0].join(10)
    assert got == [(b"jobs", b"j1")]
    assert r.exists("jobs") == 0
    assert other.brpoplpush("none", "d", 0.01) is None
    assert other.blmpop(0.01, 1, "none", direction="LEFT") is None
    other.close()


def test_watch_sees_the_served_pop(server, r, raw):
    a = raw()
    a.send(frame(["BLPOP", "q", "0"]))
    for _ in range(BARRIER_POLLS):
        if r.info("clients")["blocked_clients"] == 1:
            break
        time.sleep(BARRIER_POLL_S)
    w = redis.Redis(port=server.port, protocol=2, socket_timeout=10)
    p = w.pipeline()
    p.watch("q")
    r.rpush("q", "v")       # created and popped by the waiter before the reply
    assert a.read_reply() == b"*2\r\n$1\r\nq\r\n$1\r\nv\r\n"
    p.multi()
    p.set("x", 1)
    with pytest.raises(redis.WatchError):
        p.execute()
    w.close()


def test_many_waiters_and_timeouts_leave_no_state(server, r):
    """Blocked, timed out, served and disconnected clients leave nothing behind."""
    conns = [RawConn(server.port) for _ in range(30)]
    for i, conn in enumerate(conns):
        conn.send(frame(["BLPOP", "k%d" % (i % 3), "shared", "1" if i % 2 else "0"]))
    for _ in range(BARRIER_POLLS):
        if r.info("clients")["blocked_clients"] == 30:
            break
        time.sleep(BARRIER_POLL_S)
    server.call(server.server.blocking._check)
    for i, conn in enumerate(conns):
        if i % 2:
            assert conn.read_reply() == b"*-1\r\n"
    server.call(server.server.blocking._check)
    r.rpush("shared", *range(10))
    for i, conn in enumerate(conns):
        if not i % 2 and i < 20:
            assert conn.read_reply().startswith(b"*2\r\n$6\r\nshared")
    for conn in conns:
        conn.close()
    for _ in range(BARRIER_POLLS):
        if r.info("clients")["blocked_clients"] == 0:
            break
        time.sleep(BARRIER_POLL_S)
    b = server.server.blocking
    server.call(b._check)

    def state():
        return (b.blocked, b.timed, len(b.waiting), len(b.marks),
                [k for k in server.server.ks.watched if k[0] >= 0])
    assert server.call(state) == (0, 0, 0, 0, [])


def test_command_getkeys_and_info_match_redis(diff):
    def script(sc):
        return [sc.call(0, "COMMAND", "GETKEYS", *args) for args in [
            ["BLPOP", "a", "b", "0"], ["BRPOPLPUSH", "s", "d", "0"],
            ["BLMOVE", "s", "d", "left", "right", "0"], ["BZPOPMAX", "z1", "z2", "1"],
            ["LMPOP", "2", "a", "b", "left"], ["ZMPOP", "1", "z", "min", "count", "2"],
            ["BLMPOP", "0", "2", "a", "b", "left"], ["BZMPOP", "0", "1", "z", "max"],
            ["LMPOP", "3", "a", "left"],
        ]] + [sc.call(0, "COMMAND", "COUNT")[:1]]
    diff(1, script)


def test_held_bytes_count_toward_the_query_buffer_limit(make_server):
    s = make_server(client_query_buffer_limit="1mb")
    c, ctl = RawConn(s.port), RawConn(s.port)
    c.send(frame(["BLPOP", "q", "0"]))
    for _ in range(BARRIER_POLLS):
        ctl.send(frame(["INFO", "clients"]))
        if b"blocked_clients:1" in ctl.read_reply():
            break
        time.sleep(BARRIER_POLL_S)
    # a partial 2 MB SET held while blocked: the client is closed, the server stays up
    try:
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2097152\r\n" + b"x" * (1536 * 1024))
    except OSError:
        pass
    assert c.closed(timeout=5)
    ctl.send(frame(["INFO", "clients"]))
    assert b"blocked_clients:0" in ctl.read_reply()
    ctl.send(frame(["RPUSH", "q", "v"]))
    assert ctl.read_reply() == b":1\r\n"


def test_served_waiters_leave_the_timeout_heap(server, r):
    """Clients served long before their deadline do not pile up in the heap."""
    b = server.server.blocking
    conn = RawConn(server.port)
    for i in range(300):
        conn.send(frame(["BLPOP", "hq", "100"]))
        for _ in range(BARRIER_POLLS):
            if server.call(lambda: b.blocked) == 1:
                break
            time.sleep(BARRIER_POLL_S / 5)
        r.rpush("hq", i)
        assert conn.read_reply() == b"*2\r\n$2\r\nhq\r\n$%d\r\n%d\r\n" % (len(str(i)), i)
    heap, timed = server.call(lambda: (len(b.heap), b.timed))
    assert timed == 0 and heap <= 2 * 64 + 2
    conn.close()


def test_one_push_walks_only_the_waiters_it_serves(server, r):
    """A sorted-set waiter ahead of list waiters is skipped and keeps its place."""
    conns = [RawConn(server.port) for _ in range(40)]
    conns[0].send(frame(["BZPOPMIN", "k", "0"]))
    for conn in conns[1:]:
        conn.send(frame(["BLPOP", "k", "0"]))
    for _ in range(BARRIER_POLLS):
        if r.info("clients")["blocked_clients"] == 40:
            break
        time.sleep(BARRIER_POLL_S)
    assert r.rpush("k", *range(39)) == 39
    got = sorted(int(conn.read_reply().rsplit(b"\r\n", 2)[-2]) for conn in conns[1:])
    assert got == list(range(39))
    assert r.info("clients")["blocked_clients"] == 1
    assert r.zadd("k2", {"m": 1}) == 1 and r.exists("k") == 0
    assert r.zadd("k", {"m": 1}) == 1
    assert conns[0].read_reply() == b"*3\r\n$1\r\nk\r\n$1\r\nm\r\n$1\r\n1\r\n"
    for conn in conns:
        conn.close()


def test_huge_timeouts_and_client_kill(diff):
    def script(sc):
        out = []
        ids = [sc.call(i, "CLIENT", "ID")[1:-2] for i in range(2)]
        sc.block(0, "BLPOP", "q", "9000000000000000")     # 9e18 ms: still a valid deadline
        out += [sc.call(1, "CLIENT", "UNBLOCK", ids[0]), sc.reply(0)]
        sc.block(0, "BZPOPMIN", "z", "1e15")
        out += [sc.call(1, "CLIENT", "KILL", "ID", ids[0])]
        sc.wait_blocked(0)
        out += [sc.blocked(), sc.call(1, "ZADD", "z", "1", "m"), sc.call(1, "ZCARD", "z")]
        return out
    diff(2, script)


def _drain(conn: RawConn) -> bytes:
    """Every byte already waiting on the socket (replies of clients just served)."""
    conn.sock.setblocking(False)
    try:
        while True:
            try:
                chunk = conn.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            if not chunk:
                break
            conn.buf += chunk
    finally:
        conn.sock.setblocking(True)
        conn.sock.settimeout(5)
    out, conn.buf = conn.buf, b""
    return out


_BLOCKERS = [
    lambda rnd, k: ["BLPOP", *k, "0"], lambda rnd, k: ["BRPOP", *k, "0"],
    lambda rnd, k: ["BLMPOP", "0", len(k), *k, rnd.choice(["LEFT", "RIGHT"]),
                    "COUNT", rnd.randint(1, 3)],
    lambda rnd, k: ["BZPOPMIN", *k, "0"], lambda rnd, k: ["BZPOPMAX", *k, "0"],
    lambda rnd, k: ["BZMPOP", "0", len(k), *k, rnd.choice(["MIN", "MAX"])],
    lambda rnd, k: ["BLMOVE", k[0], rnd.choice("abcd"), "LEFT", "RIGHT", "0"],
]
_WRITES = [
    lambda rnd, k: ["RPUSH", k, *rnd.sample("uvwxyz", rnd.randint(1, 3))],
    lambda rnd, k: ["LPUSH", k, rnd.choice("uvw")],
    lambda rnd, k: ["ZADD", k, rnd.randint(1, 9), rnd.choice("mnop")],
    lambda rnd, k: ["DEL", k], lambda rnd, k: ["SET", k, "s"],
    lambda rnd, k: ["DEL", "a", "b", "c", "d"], lambda rnd, k: ["DEL", "a", "b", "c", "d"],
    lambda rnd, k: ["LMOVE", k, rnd.choice("abcd"), "RIGHT", "LEFT"],
    lambda rnd, k: ["EVAL", "redis.call('rpush', KEYS[1], 'e1', 'e2') "
                    "redis.call('zadd', KEYS[2], 5, 'zm') return 1", "2", k, rnd.choice("abcd")],
]


@pytest.mark.parametrize("seed,proto", [(1, 2), (6, 2), (7, 2), (8, 3), (12, 3)])
def test_random_scripts_of_waiters_and_writes_match_redis(diff, seed, proto):
    """Seeded random interleavings of blocking commands (several keys, both types, BLMOVE
    chains) and writes (also in MULTI and Lua) on keys a-d: after every write, the writer's
    reply, the blocked count and the bytes each client got are the same on both servers."""
    import random

    def script(sc):
        rnd = random.Random(seed)
        blocked = set()
        out = []
        for _ in range(60):
            idle = [i for i in range(5) if i not in blocked]
            if idle and rnd.random() < 0.45:
                i = rnd.choice(idle)
                keys = rnd.sample("abcd", rnd.randint(1, 3))
                args = rnd.choice(_BLOCKERS)(rnd, keys)
                before = sc.blocked()
                sc.send(i, *args)
                for _ in range(BARRIER_POLLS):      # blocks, or answers at once
                    if sc.blocked() == before + 1:
                        blocked.add(i)
                        break
                    got = _drain(sc.c[i])
                    if got:
                        out.append((i, args, got))
                        break
                    time.sleep(BARRIER_POLL_S)
                continue
            if rnd.random() < 0.2:
                sc.call(5, "MULTI")
                for _ in range(rnd.randint(2, 3)):
                    sc.call(5, *rnd.choice(_WRITES)(rnd, rnd.choice("abcd")))
                reply = sc.call(5, "EXEC")
            else:
                reply = sc.call(5, *rnd.choice(_WRITES)(rnd, rnd.choice("abcd")))
            out.append((reply, sc.blocked()))
            for i in sorted(blocked):
                got = _drain(sc.c[i])
                if got:
                    out.append((i, got))
                    blocked.discard(i)
        return out
    diff(6, script, proto)


def test_blocked_client_waits_through_a_busy_script(make_server):
    """During a busy script the server answers other clients (allow-busy commands); a blocked
    client's commands are not run out of order, they wait for its wake-up."""
    s = make_server(busy_reply_threshold=50)
    waiter, other = RawConn(s.port), RawConn(s.port)
    waiter.send(frame(["BLPOP", "q", "0"]))
    for _ in range(BARRIER_POLLS):
        other.send(frame(["INFO", "clients"]))
        if b"blocked_clients:1" in other.read_reply():
            break
        time.sleep(BARRIER_POLL_S)
    runner = redis.Redis(port=s.port, socket_timeout=20, retry_on_error=[])
    ended = []

    def run_script():
        try:
            runner.eval("redis.call('rpush', 'q', 'v') local i = 0 while true do i = i + 1 end",
                        0)
        except redis.RedisError as e:      # the connection goes with the shutdown
            ended.append(e)
    t = threading.Thread(target=run_script)
    t.start()
    for _ in range(BARRIER_POLLS):
        other.send(frame(["PING"]))
        if other.read_reply().startswith(b"-BUSY"):
            break
        time.sleep(BARRIER_POLL_S)
    waiter.send(frame(["PING"]))          # allow-busy? no: PING waits in any case
    other.send(frame(["SCRIPT", "KILL"]))
    assert other.read_reply() == b"-UNKILLABLE Sorry the script already executed write " \
        b"commands against the dataset. You can either wait the script termination or " \
        b"kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n"
    other.send(frame(["SHUTDOWN", "NOSAVE"]))
    assert waiter.closed(timeout=10)       # no reply was sent before the shutdown
    assert waiter.buf == b""
    t.join(20)
    assert ended and not t.is_alive()
    runner.close()


def test_console_writes_wake_waiters(make_server):
    from tests.conftest import free_port
    from tests.ferrumkv.test_console import command
    port = free_port()
    s = make_server(console_port=str(port))
    waiter, ctl = RawConn(s.port), RawConn(s.port)
    waiter.send(frame(["BLPOP", "q", "0"]))
    for _ in range(BARRIER_POLLS):
        ctl.send(frame(["INFO", "clients"]))
        if b"blocked_clients:1" in ctl.read_reply():
            break
        time.sleep(BARRIER_POLL_S)
    assert command(port, ["RPUSH", "q", "from-console"])[0] == 200
    assert waiter.read_reply() == b"*2\r\n$1\r\nq\r\n$12\r\nfrom-console\r\n"
