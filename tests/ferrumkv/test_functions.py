"""FUNCTION / FCALL: differential against redis-server 7.0 (raw bytes, RESP2 and RESP3),
and end to end (redis-py, DUMP / RESTORE, busy functions and FUNCTION KILL)."""

from __future__ import annotations

import threading

import pytest
import redis

from ferrumkv_py.scripting import parse_resp
from tests.conftest import RawConn, ServerThread
from tests.conftest import command_frame as cmd
from tests.ferrumkv.script_util import send_until

LIB = ("#!lua name=mylib\n"
       "redis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\n"
       "redis.register_function{function_name='f2', callback=function(k, a) "
       "return redis.call('set', k[1], a[1]) end, flags={'no-writes'}, description='d'}\n"
       "redis.register_function('f3', function(k, a) return redis.call('incr', k[1]) end)\n"
       "redis.register_function('f4', function() error('oops') end)\n"
       "redis.register_function('f5', function() return undefined_name end)\n")

SEQUENCE = [
    ("FUNCTION", "LOAD", "return 1"), ("FUNCTION", "LOAD", LIB), ("FUNCTION", "LOAD", LIB),
    ("FUNCTION", "LOAD", "#!lua name=lib2\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=lib3\nredis.register_function('f1', function() end)"),
    ("FCALL", "f1", 1, "a", "b"), ("FCALL", "f2", 1, "fk", "v"), ("FCALL_RO", "f1", 1, "a"),
    ("FCALL_RO", "f2", 1, "fk", "v"), ("FCALL", "f3", 1, "fn:ctr"), ("FCALL", "f4", 0),
    ("FCALL", "f5", 0), ("FCALL", "nosuch", 0), ("FCALL", "f1", "x"), ("FCALL", "f1", 5, "a"),
    ("FCALL", "f1", -1),
    ("FUNCTION", "LOAD", "#!lua name=lib4\nredis.call('ping')"),
    ("FUNCTION", "LOAD", "#!lua name=lib5\nredis.register_function('bad name!', function() end)"),
    ("FUNCTION", "LOAD", "#!lua name=lib6 foo=bar\nx"), ("FUNCTION", "LOAD", "#!lua\nx"),
    ("FUNCTION", "LOAD", "#!lua name=lib7\nx=1"),
    ("FUNCTION", "LOAD", "#!lua name=lib8\nsyntax error"),
    ("FUNCTION", "LOAD", "#!lua name=bad-name\nreturn 1"),
    ("FUNCTION", "LOAD", "#!lua name=lib9\nredis.register_function('f9')"),
    ("FUNCTION", "LOAD", "#!lua name=lib9\nredis.register_function{function_name='f9'}"),
    ("FUNCTION", "LOAD", "#!lua name=lib9\nredis.register_function(1, function() end)"),
    ("FUNCTION", "LOAD", "#!lua name=libA\nredis.register_function(1, 2, 3)"),
    ("FUNCTION", "LOAD", "#!lua name=libB\nredis.register_function{function_name='b', "
                         "callback=function() end, foo=1}"),
    ("FUNCTION", "LOAD", "#!lua name=libC\nredis.register_function{function_name='c', "
                         "callback=function() end, flags={'bogus'}}"),
    ("FUNCTION", "LOAD", "#!lua name=libD\nredis.register_function('d', function() end) "
                         "redis.register_function('d', function() end)"),
    ("FUNCTION", "LOAD", "#!lua name=libE\nredis.register_function{function_name='e', "
                         "callback=1}"),
    ("FUNCTION", "LOAD", "#!lua name=libF\nredis.register_function('f', 1)"),
    ("FUNCTION", "LOAD", "REPLACE", LIB), ("FUNCTION", "LIST"),
    ("FUNCTION", "LIST", "LIBRARYNAME", "my*", "WITHCODE"), ("FUNCTION", "LIST", "BOGUS"),
    ("FUNCTION", "DELETE", "nosuch"), ("FUNCTION", "STATS"), ("FUNCTION", "KILL"),
    ("FUNCTION", "FLUSH", "BOGUS"), ("FUNCTION", "DELETE", "mylib"), ("FCALL", "f1", 0),
    ("FUNCTION", "LIST"),
]


def _unordered(reply: bytes):
    """A reply parsed, with every array's items sorted (order-free comparison)."""
    def norm(v):
        if isinstance(v, (list, tuple)):
            return ("list", sorted((norm(x) for x in v), key=repr))
        if isinstance(v, dict):
            return ("map", sorted(((norm(k), norm(x)) for k, x in v.items()), key=repr))
        return (type(v).__name__, v if not hasattr(v, "text") else v.text)
    return norm(parse_resp(reply)[0])


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_function_sequence_matches_redis(redis_server, proto):
    ours = ServerThread()
    try:
        replies = []
        for port in (ours.port, redis_server):
            c = RawConn(port)
            if proto == 3:
                c.send(cmd("HELLO", "3"))
                c.read_reply()
            c.send(cmd("FUNCTION", "FLUSH") + cmd("DEL", "fn:ctr", "fk"))
            c.read_reply()
            c.read_reply()
            got = []
            for args in SEQUENCE:
                c.send(cmd(*args))
                got.append(c.read_reply())
            replies.append(got)
            c.send(cmd("FUNCTION", "FLUSH"))
            c.read_reply()
            c.close()
        for args, a, b in zip(SEQUENCE, *replies):
            if args[:2] == ("FUNCTION", "LIST"):   # Redis lists in its dicts' hash order
                a, b = _unordered(a), _unordered(b)
            assert a == b, args
    finally:
        ours.stop()


def test_fcall_through_redis_py(r2):
    assert r2.function_load(LIB) == "mylib" or r2.function_load  # name comes back
    assert r2.fcall("f1", 1, "k", "v") == [b"k", b"v"]
    assert r2.fcall("f3", 1, "n") == 1
    assert r2.fcall("f3", 1, "n") == 2
    with pytest.raises(redis.ResponseError, match="Can not execute a script with write flag"):
        r2.fcall_ro("f3", 1, "n")
    pipe = r2.pipeline()
    pipe.fcall("f3", 1, "n")
    pipe.fcall("f1", 1, "a", "b")
    assert pipe.execute() == [3, [b"a", b"b"]]


def test_dump_restore_and_script_flush_keep_libraries(r2):
    r2.function_load(LIB)
    payload = r2.function_dump()
    r2.function_flush()
    with pytest.raises(redis.ResponseError, match="Function not found"):
        r2.fcall("f1", 0)
    assert r2.function_restore(payload)
    assert r2.fcall("f1", 1, "x", "y") == [b"x", b"y"]
    with pytest.raises(redis.ResponseError, match="already exists"):
        r2.function_restore(payload)                 # APPEND: mylib is there
    assert r2.function_restore(payload, "REPLACE")
    assert r2.function_restore(payload, "FLUSH")
    with pytest.raises(redis.ResponseError, match="payload version or checksum are wrong"):
        r2.function_restore(b"garbage")
    r2.script_flush()                                # a new VM: libraries compiled again
    assert r2.fcall("f1", 1, "x", "y") == [b"x", b"y"]
    stats = r2.function_stats()
    assert stats[stats.index(b"engines") + 1] == [b"LUA", [b"libraries_count", 1,
                                                           b"functions_count", 5]]


def test_busy_function_and_function_kill(make_server):
    s = make_server(busy_reply_threshold=50)
    c = redis.Redis(port=s.port)
    c.function_load("#!lua name=spin\n"
                    "redis.register_function{function_name='spin', "
                    "callback=function() while true do end end, flags={'no-writes'}}")
    other = RawConn(s.port)
    other.send(cmd("PING"))
    other.read_reply()
    out = []

    def run():
        try:
            out.append(c.fcall("spin", 0))
        except redis.ResponseError as e:
            out.append(e)
    t = threading.Thread(target=run)
    t.start()
    reply = send_until(other, cmd("GET", "x"), lambda r: r.startswith(b"-BUSY"))
    assert reply == (b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL "
                     b"or SHUTDOWN NOSAVE.\r\n")
    other.send(cmd("SCRIPT", "KILL"))
    assert other.read_reply() == reply
    other.send(cmd("FUNCTION", "STATS"))
    assert b"spin" in other.read_reply()
    other.send(cmd("FUNCTION", "KILL"))
    assert other.read_reply() == b"+OK\r\n"
    t.join(20)
    assert isinstance(out[0], redis.ResponseError)
    assert str(out[0]) == ("Script killed by user with SCRIPT KILL... script: spin, "
                           "on @user_function:2.")
    other.close()
    c.close()


def test_function_names_and_arguments_as_redis(r2):
    """Library and function names are case-insensitive as Redis 7.0's dicts; FUNCTION FLUSH /
    RESTORE with too many arguments, LIST LIBRARYNAME without a name, and RESTORE's own
    'already exists' text are Redis's (unit/functions)."""
    r2.execute_command("FUNCTION", "LOAD", "#!lua name=Lib1\n"
                       "redis.register_function('Fn', function() return 'hi' end)")
    assert r2.fcall("FN", 0) == b"hi" and r2.fcall("fn", 0) == b"hi"
    with pytest.raises(redis.ResponseError, match="Library 'lib1' already exists"):
        r2.execute_command("FUNCTION", "LOAD", "#!lua name=lib1\n"
                           "redis.register_function('g', function() return 1 end)")
    payload = r2.function_dump()
    with pytest.raises(redis.ResponseError, match="^Library Lib1 already exists$"):
        r2.function_restore(payload)
    for argv, text in ((("FLUSH", "sync", "extra"), "unknown subcommand or wrong number of "
                        "arguments for 'FLUSH'. Try FUNCTION HELP."),
                       (("RESTORE", "a", "b", "c"), "unknown subcommand or wrong number of "
                        "arguments for 'RESTORE'. Try FUNCTION HELP."),
                       (("LIST", "LIBRARYNAME"), "library name argument was not given")):
        with pytest.raises(redis.ResponseError) as e:
            r2.execute_command("FUNCTION", *argv)
        assert str(e.value) == text, argv
    r2.execute_command("FUNCTION", "DELETE", "LIB1")
    assert r2.execute_command("FUNCTION", "LIST") == []
