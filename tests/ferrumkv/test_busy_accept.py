"""Connections made while a script is busy (issue 26 row 7, busy_accept.py): accepted and
answered like the others (-BUSY; SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE, AUTH work),
then handed to the event loop with their state; and a refused EXEC ends its transaction
with Redis's EXECABORT text (issue 34, unit/multi "EXEC and script timeout")."""

from __future__ import annotations


import pytest
import redis

from ..conftest import RawConn, command_frame as cmd
from .diff_util import Pair
from .script_util import call_in_thread, send_until

BUSY = (b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL "
        b"or SHUTDOWN NOSAVE.\r\n")
LOOP = "while true do end"


def _run_in_thread(port, fn, out, password=None):
    return call_in_thread(port, fn, out, socket_timeout=30, password=password)


def _busy_server(make_server, **config):
    """A server, and a thread running a script that never ends, already busy (seen from a
    connection made before the script)."""
    s = make_server(busy_reply_threshold=50, **config)
    out = []
    t = _run_in_thread(s.port, lambda c: c.eval(LOOP, 0), out, config.get("requirepass"))
    first = RawConn(s.port)
    if config.get("requirepass"):
        first.send(cmd("AUTH", config["requirepass"]))
        first.read_reply()
    send_until(first, cmd("PING"), lambda r: r.startswith(b"-BUSY"))
    return s, t, out, first


def test_new_connection_is_answered_and_can_kill(make_server):
    s, t, out, first = _busy_server(make_server)
    new = RawConn(s.port)             # connected while the script is busy
    new.sock.settimeout(10)
    new.send(cmd("PING"))
    assert new.read_reply() == BUSY
    new.send(cmd("GET", "k") + b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n")  # half a SET: waits
    assert new.read_reply() == BUSY
    new2 = RawConn(s.port)
    new2.sock.settimeout(10)
    new2.send(cmd("SCRIPT", "KILL"))
    assert new2.read_reply() == b"+OK\r\n"
    t.join(20)
    assert isinstance(out[0], redis.ResponseError) and "Script killed" in str(out[0])
    # the new connection, handed to the loop: the rest of its SET completes the frame
    new.send(b"$1\r\nv\r\n")
    assert new.read_reply() == b"+OK\r\n"
    new.send(cmd("GET", "k"))
    assert new.read_reply() == b"$1\r\nv\r\n"
    new.send(cmd("CLIENT", "LIST"))
    listing = new.read_reply()
    host, port = new.sock.getsockname()[:2]
    assert listing.count(b" addr=%s:%d " % (host.encode(), port)) == 1   # one client
    for c in (first, new, new2):
        c.close()


def test_function_kill_from_a_new_connection(make_server):
    s = make_server(busy_reply_threshold=50)
    lib = "#!lua name=spin\nredis.register_function('spin', function() while true do end end)"
    setup = redis.Redis(port=s.port)
    setup.function_load(lib)
    out = []
    t = _run_in_thread(s.port, lambda c: c.fcall("spin", 0), out)
    first = RawConn(s.port)
    send_until(first, cmd("PING"), lambda r: r.startswith(b"-BUSY"))
    new = RawConn(s.port)
    new.sock.settimeout(10)
    new.send(cmd("FUNCTION", "KILL"))
    assert new.read_reply() == b"+OK\r\n"
    t.join(20)
    assert isinstance(out[0], redis.ResponseError)
    new.send(cmd("PING"))
    assert new.read_reply() == b"+PONG\r\n"
    setup.close()
    first.close()
    new.close()


def test_auth_then_kill_from_a_new_connection(make_server):
    s, t, out, first = _busy_server(make_server, requirepass="pw")
    new = RawConn(s.port)
    new.sock.settimeout(10)
    new.send(cmd("SCRIPT", "KILL"))
    assert new.read_reply() == b"-NOAUTH Authentication required.\r\n"
    new.send(cmd("AUTH", "pw"))
    assert new.read_reply() == b"+OK\r\n"
    new.send(cmd("SCRIPT", "KILL"))
    assert new.read_reply() == b"+OK\r\n"
    t.join(20)
    first.close()
    new.close()


def test_shutdown_nosave_from_a_new_connection(make_server):
    s, t, out, first = _busy_server(make_server)
    new = RawConn(s.port)
    new.sock.settimeout(10)
    new.send(cmd("SHUTDOWN", "NOSAVE"))
    assert new.closed(10)
    t.join(20)
    s.thread.join(20)
    assert not t.is_alive() and not s.thread.is_alive()
    first.close()
    new.close()


def test_exec_during_a_busy_script_aborts_the_transaction(make_server):
    """unit/multi "EXEC and script timeout": a command refused with BUSY dooms the
    transaction and EXEC itself, refused, ends it with EXECABORT ... BUSY."""
    s = make_server(busy_reply_threshold=50)
    r2 = RawConn(s.port)
    r2.send(cmd("SET", "xx", "1") + cmd("MULTI") + cmd("INCR", "xx"))
    assert [r2.read_reply() for _ in range(3)] == [b"+OK\r\n", b"+OK\r\n", b"+QUEUED\r\n"]
    out = []
    t = _run_in_thread(s.port, lambda c: c.eval(LOOP, 0), out)
    send_until(RawConn(s.port), cmd("PING"), lambda r: r.startswith(b"-BUSY"))
    r2.send(cmd("INCR", "xx") + cmd("EXEC"))
    assert r2.read_reply() == BUSY
    assert r2.read_reply() == b"-EXECABORT Transaction discarded because of: " + BUSY[1:]
    killer = RawConn(s.port)
    killer.send(cmd("SCRIPT", "KILL"))
    assert killer.read_reply() == b"+OK\r\n"
    t.join(20)
    r2.send(cmd("GET", "xx") + cmd("PING", "asdf"))
    assert r2.read_reply() == b"$1\r\n1\r\n"
    assert r2.read_reply() == b"$4\r\nasdf\r\n"     # no longer in MULTI
    r2.close()
    killer.close()


@pytest.mark.needs_redis
def test_refused_exec_as_redis(redis_server, server):
    """EXEC refused before it runs (arity, ACL): Redis's EXECABORT texts, in and out of
    MULTI, and the transaction is over."""
    pair = Pair(redis_server, server.port)
    try:
        for args in (["EXEC", "x"], ["MULTI"], ["SET", "a", "1"], ["EXEC", "x"], ["EXEC"],
                     ["ACL", "SETUSER", "u", "on", "nopass", "+multi", "+set", "-exec", "~*"],
                     ["AUTH", "u", "x"], ["MULTI"], ["SET", "a", "1"], ["EXEC"], ["EXEC"],
                     ["DISCARD"]):
            pair.same(args)
    finally:
        pair.close()
        cleanup = redis.Redis(port=redis_server)
        cleanup.acl_deluser("u")
        cleanup.flushall()
        cleanup.close()
