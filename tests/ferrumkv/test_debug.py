"""DEBUG (commands/debug.py, digest.py): the enable-debug-command gate, and the subcommands
compared byte for byte with a redis-server started with DEBUG enabled."""

from __future__ import annotations

import re

import pytest
import redis

from ferrumkv_py.errors import DEBUG_NOT_ALLOWED

from ..conftest import RawConn, run_redis_server
from .conftest import err


@pytest.fixture(scope="module")
def redis_debug():
    yield from run_redis_server("--enable-debug-command", "yes")


@pytest.fixture
def dbg(make_server):
    return make_server(enable_debug_command="yes")


def _raw(port: int, commands: list, proto: int = 2) -> list:
    conn = RawConn(port)
    try:
        if proto == 3:
            conn.send(b"HELLO 3\r\n")
            conn.read_reply()
        out = []
        for cmd in commands:
            conn.send(b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a)
                                                        for a in cmd))
            out.append(_read(conn))
        return out
    finally:
        conn.close()


def _read(conn) -> bytes:
    """One reply with what precedes it: an attribute map (``|``) or a push (``>``) is
    followed by the real reply, which is read too."""
    line = conn.recv_line()
    if line[:1] == b"|":
        n = int(line[1:-2])
        return line + b"".join(conn.read_reply() for _ in range(2 * n)) + _read(conn)
    conn.buf = line + conn.buf
    reply = conn.read_reply()
    if reply[:1] == b">":
        reply += conn.read_reply()
    return reply


def test_refused_by_default_with_redis_text(r2):
    assert err(r2, "DEBUG", "SLEEP", "0") == DEBUG_NOT_ALLOWED
    assert err(r2, "DEBUG", "HELP") == DEBUG_NOT_ALLOWED
    assert r2.config_get("enable-debug-command") == {"enable-debug-command": "no"}
    assert err(r2, "CONFIG", "SET", "enable-debug-command", "yes").endswith(
        "can't set immutable config")


@pytest.mark.needs_redis
def test_refusal_matches_redis_server(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        for args in (("DEBUG", "SLEEP", "0"), ("DEBUG", "nope"), ("DEBUG",)):
            assert err(r2, *args) == err(theirs, *args), args
    finally:
        theirs.close()


@pytest.mark.needs_redis
def test_refused_before_queueing_in_multi(server, redis_server):
    """Inside MULTI the refusal comes when DEBUG is sent and dooms the transaction."""
    script = [[b"MULTI"], [b"SET", b"h18:k", b"v"], [b"DEBUG", b"SLEEP", b"0"], [b"EXEC"],
              [b"GET", b"h18:k"]]
    assert _raw(server.port, script) == _raw(redis_server, script)
    assert _raw(server.port, script)[2].startswith(b"-ERR DEBUG command not allowed")


def test_local_allows_loopback(make_server):
    server = make_server(enable_debug_command="local")
    c = redis.Redis(port=server.port, protocol=2)
    try:
        assert c.execute_command("DEBUG", "SLEEP", "0") == b"OK"
    finally:
        c.close()


SAME = [  # replies that must equal redis-server's byte for byte
    [b"SET", b"k1", b"hello"], [b"SET", b"n", b"12"], [b"RPUSH", b"l", b"a", b"b", b"c"],
    [b"HSET", b"h", b"f", b"v", b"g", b"w"], [b"SADD", b"s", b"1", b"2", b"x"],
    [b"ZADD", b"z", b"1.5", b"a", b"2", b"b", b"0.1", b"c", b"1e100", b"d", b"-0", b"e"],
    [b"SET", b"e", b"v", b"EX", b"100"], [b"SELECT", b"2"], [b"SET", b"other", b"db"],
    [b"SELECT", b"0"],
    [b"DEBUG", b"DIGEST"], [b"DEBUG", b"DIGEST-VALUE", b"k1", b"nokey", b"l", b"h", b"s",
                            b"z", b"e", b"n"],
    [b"DEBUG", b"DIGEST-VALUE"],
    [b"DEBUG", b"OBJECT", b"nokey"], [b"DEBUG", b"LISTPACK", b"k1"],
    [b"DEBUG", b"LISTPACK", b"h"], [b"DEBUG", b"LISTPACK", b"z"], [b"DEBUG", b"LISTPACK", b"l"],
    [b"DEBUG", b"QUICKLIST", b"l"], [b"DEBUG", b"QUICKLIST", b"l", b"1"],
    [b"DEBUG", b"QUICKLIST", b"h"], [b"DEBUG", b"QUICKLIST", b"nokey"],
    [b"DEBUG", b"SET-ACTIVE-EXPIRE", b"x"], [b"DEBUG", b"SET-ACTIVE-EXPIRE", b"1"],
    [b"DEBUG", b"SET-ACTIVE-EXPIRE", b"0", b"1"],
    [b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"0"],
    [b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"5gb"],
    [b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"x"],
    [b"DEBUG", b"QUICKLIST-PACKED-THRESHOLD", b"1gb"],
    [b"DEBUG", b"CHANGE-REPL-ID"], [b"DEBUG", b"SLEEP", b"0"], [b"DEBUG", b"SLEEP", b"x"],
    [b"DEBUG", b"SLEEP", b"-1"], [b"DEBUG", b"SLEEP"], [b"DEBUG", b"nope"],
    [b"DEBUG", b"JMAP"], [b"DEBUG", b"LOG", b"hi"],   # (STRINGMATCH-TEST: seconds in Redis)
    [b"DEBUG", b"OBJECT"], [b"DEBUG", b"DIGEST", b"x"],
    [b"DEBUG", b"POPULATE", b"3"], [b"DEBUG", b"POPULATE", b"2", b"p", b"12"],
    [b"DEBUG", b"POPULATE", b"2", b"q", b"3"], [b"DEBUG", b"POPULATE", b"-1"],
    [b"DEBUG", b"POPULATE", b"x"], [b"DEBUG", b"POPULATE", b"1", b"k", b"-1"],
    [b"MGET", b"key:0", b"key:2", b"p:1", b"q:0"], [b"DEBUG", b"DIGEST"],
] + [[b"DEBUG", b"PROTOCOL", t] for t in (
    b"string", b"integer", b"double", b"bignum", b"null", b"array", b"set", b"map",
    b"attrib", b"push", b"verbatim", b"true", b"false", b"nope", b"TRUE")]


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_subcommands_match_redis_server(dbg, redis_debug, proto):
    theirs_client = redis.Redis(port=redis_debug, protocol=2)
    theirs_client.flushall()
    theirs_client.close()
    ours, theirs = _raw(dbg.port, SAME, proto), _raw(redis_debug, SAME, proto)
    diffs = [(cmd, a, b) for cmd, a, b in zip(SAME, ours, theirs) if a != b]
    assert not diffs, "\n".join(map(repr, diffs))


OBJECT_LINE = re.compile(rb"\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\w+) "
                         rb"serializedlength:(\d+) lru:\d+ lru_seconds_idle:(\d+)(.*)\r\n")


@pytest.mark.needs_redis
def test_object_line_matches_redis_server(dbg, redis_debug):
    setup = [[b"FLUSHALL"], [b"SET", b"k1", b"hello"], [b"SET", b"n", b"12"],
             [b"SET", b"big", b"x" * 100], [b"RPUSH", b"l", b"a", b"b", b"c"],
             [b"HSET", b"h", b"f", b"v"], [b"ZADD", b"z", b"1", b"a"]]
    probe = [[b"DEBUG", b"OBJECT", k] for k in (b"k1", b"n", b"big", b"l", b"h", b"z")]
    ours = _raw(dbg.port, setup + probe)[len(setup):]
    theirs = _raw(redis_debug, setup + probe)[len(setup):]
    for a, b in zip(ours, theirs):
        ma, mb = OBJECT_LINE.match(a), OBJECT_LINE.match(b)
        assert ma and mb, (a, b)
        assert ma.group(1, 2, 3, 5) == mb.group(1, 2, 3, 5), (a, b)


def test_set_active_expire_stops_the_cycle(dbg):
    c = redis.Redis(port=dbg.port, protocol=2)
    try:
        assert c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"OK"
        assert dbg.call(lambda: dbg.server.active_expire_enabled) is False
        c.set("gone", "v", px=1)
        dbg.call(lambda: dbg.server.cron())
        assert dbg.call(lambda: len(dbg.server.ks.dbs[0])) == 1   # not reclaimed
        assert c.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1") == b"OK"
        assert dbg.call(lambda: dbg.server.active_expire_enabled) is True
    finally:
        c.close()


def test_reload_round_trips_and_loadaof_refused_clearly(dbg):
    c = redis.Redis(port=dbg.port, protocol=2)
    try:
        assert "no RDB or AOF file" in err(c, "DEBUG", "LOADAOF")
        c.set("k", "v")
        c.rpush("l", "a", "b")
        digest = c.execute_command("DEBUG", "DIGEST")
        assert c.execute_command("DEBUG", "RELOAD") == b"OK"    # save, empty, load
        assert c.execute_command("DEBUG", "DIGEST") == digest
        assert "only supports" in err(c, "DEBUG", "RELOAD", "BOGUS")
        assert "not supported" in err(c, "DEBUG", "RELOAD", "MERGE")
        assert c.get("k") == b"v"          # nothing lost
    finally:
        c.close()


def test_stringmatch_test_and_help(dbg):
    c = redis.Redis(port=dbg.port, protocol=2)
    try:
        assert c.execute_command("DEBUG", "STRINGMATCH-TEST") == \
            b"Apparently Redis did not crash: test passed"
        lines = c.execute_command("DEBUG", "HELP")
        assert lines[0].startswith(b"DEBUG <subcommand>") and lines[-1] == b"    Prints this help."
        assert c.execute_command("DEBUG", "PROTOCOL", "double") == b"3.141"
    finally:
        c.close()
