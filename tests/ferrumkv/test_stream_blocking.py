"""Blocking XREAD / XREADGROUP on raw connections: served by XADD, timeouts, CLIENT UNBLOCK,
MULTI and scripts, and Redis 7.0's answers when the key or the group goes while a client
waits.  Each waiting client is checked to be blocked (CLIENT LIST / INFO) before the write
that should serve it, so no test depends on timing."""

from __future__ import annotations

import time

import pytest

from tests.conftest import command_frame


def _send(conn, *args) -> None:
    conn.send(command_frame(*args))


def _call(conn, *args) -> bytes:
    _send(conn, *args)
    return conn.read_reply()


def _wait_blocked(ctl, n: int = 1) -> None:
    deadline = time.time() + 10
    while time.time() < deadline:
        info = _call(ctl, "INFO", "clients")
        if b"blocked_clients:%d\r\n" % n in info:
            return
        time.sleep(0.01)
    raise AssertionError("client never blocked")


@pytest.fixture
def conns(raw):
    return raw(), raw()


def test_xread_block_served_by_xadd(conns):
    waiter, ctl = conns
    _call(ctl, "XADD", "s", "1-0", "a", "1")
    _send(waiter, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    _wait_blocked(ctl)
    _call(ctl, "XADD", "other", "1-0", "x", "y")            # another key: still waiting
    _call(ctl, "XADD", "s", "2-0", "b", "2")
    assert waiter.read_reply() == (b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n"
                                   b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n")
    _wait_blocked(ctl, 0)


def test_xread_block_resp3_map_and_count(conns):
    waiter, ctl = conns
    _call(waiter, "HELLO", "3")
    _send(waiter, "XREAD", "COUNT", "1", "BLOCK", "0", "STREAMS", "s", "0")
    _wait_blocked(ctl)
    _call(ctl, "MULTI")
    _call(ctl, "XADD", "s", "1-0", "a", "1")
    _call(ctl, "XADD", "s", "2-0", "b", "2")
    _call(ctl, "EXEC")
    assert waiter.read_reply() == (b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n"
                                   b"*2\r\n$1\r\na\r\n$1\r\n1\r\n")


def test_timeout_and_client_unblock(conns):
    waiter, ctl = conns
    assert _call(waiter, "XREAD", "BLOCK", "1", "STREAMS", "s", "$") == b"*-1\r\n"
    wid = int(_call(waiter, "CLIENT", "ID")[1:-2])
    _send(waiter, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    _wait_blocked(ctl)
    assert _call(ctl, "CLIENT", "UNBLOCK", str(wid)) == b":1\r\n"
    assert waiter.read_reply() == b"*-1\r\n"
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "CLIENT", "UNBLOCK", str(wid), "ERROR")
    assert waiter.read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"


def test_xreadgroup_block_creates_pel_entries(conns):
    waiter, ctl = conns
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "XACK", "s", "g", "1-0")                    # a write, not new data
    _call(ctl, "XADD", "s", "7-0", "f", "v")
    assert b"7-0" in waiter.read_reply()
    assert _call(ctl, "XPENDING", "s", "g") == (b"*4\r\n:1\r\n$3\r\n7-0\r\n$3\r\n7-0\r\n"
                                                b"*1\r\n*2\r\n$5\r\nalice\r\n$1\r\n1\r\n")


def test_key_deleted_unblocks_xreadgroup_not_xread(raw):
    group_waiter, plain_waiter, ctl = raw(), raw(), raw()
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(group_waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _send(plain_waiter, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    _wait_blocked(ctl, 2)
    _call(ctl, "DEL", "s")
    assert group_waiter.read_reply() == b"-UNBLOCKED the stream key no longer exists\r\n"
    _wait_blocked(ctl, 1)
    _call(ctl, "XADD", "s", "1-0", "a", "b")
    assert b"1-0" in plain_waiter.read_reply()


def test_key_replaced_by_another_type(raw):
    waiter, ctl = raw(), raw()
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "SET", "s", "now a string")
    assert waiter.read_reply() == b"-UNBLOCKED the stream key no longer exists\r\n"


def test_group_destroyed_while_blocked(conns):
    waiter, ctl = conns
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    assert _call(ctl, "XGROUP", "DESTROY", "s", "g") == b":1\r\n"
    assert waiter.read_reply() == \
        b"-NOGROUP the consumer group this client was blocked on no longer exists\r\n"


def test_multi_and_scripts_do_not_block(conns):
    c, _ = conns
    _call(c, "MULTI")
    _call(c, "XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    assert _call(c, "EXEC") == b"*1\r\n*-1\r\n"
    reply = _call(c, "EVAL", "return redis.call('XREAD','BLOCK','0','STREAMS','s','$')", "0")
    assert reply.startswith(b"-ERR XREAD command is not allowed with BLOCK option from "
                            b"scripts")
    assert _call(c, "EVAL", "return redis.call('XREAD','STREAMS','s','0')", "0") == \
        b"$-1\r\n"        # a Lua nil: the null array converted


def test_errors_of_block_and_count(conns):
    c, _ = conns
    assert _call(c, "XREAD", "BLOCK", "x", "STREAMS", "s", "$") == \
        b"-ERR timeout is not an integer or out of range\r\n"
    assert _call(c, "XREAD", "BLOCK", "-1", "STREAMS", "s", "$") == \
        b"-ERR timeout is negative\r\n"
    assert _call(c, "XREAD", "COUNT", "x", "STREAMS", "s", "$") == \
        b"-ERR value is not an integer or out of range\r\n"


def test_flushall_unblocks_xreadgroup(raw):
    waiter, ctl = raw(), raw()
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "FLUSHALL")
    assert waiter.read_reply() == b"-UNBLOCKED the stream key no longer exists\r\n"


def test_setid_back_does_not_serve_until_xadd(conns):
    waiter, ctl = conns
    _call(ctl, "XADD", "s", "1-0", "a", "1")
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "XGROUP", "SETID", "s", "g", "0")      # entries behind the group now
    _call(ctl, "XACK", "s", "g", "1-0")
    _wait_blocked(ctl, 1)                             # Redis serves only on XADD
    _call(ctl, "XADD", "s", "2-0", "b", "2")
    reply = waiter.read_reply()
    assert b"1-0" in reply and b"2-0" in reply


def test_a_failed_blocked_call_counts_in_commandstats(conns):
    waiter, ctl = conns
    _call(ctl, "CONFIG", "RESETSTAT")
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "XGROUP", "DESTROY", "s", "g")
    assert waiter.read_reply().startswith(b"-NOGROUP")
    stats = _call(ctl, "INFO", "commandstats")
    line = [x for x in stats.split(b"\r\n") if x.startswith(b"cmdstat_xreadgroup:")][0]
    assert line.startswith(b"cmdstat_xreadgroup:calls=1,")
    assert line.endswith(b",rejected_calls=0,failed_calls=1")
    assert b"errorstat_NOGROUP:count=1" in _call(ctl, "INFO", "errorstats")


def test_rename_of_a_stream_serves_the_waiter(conns):
    waiter, ctl = conns
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "XGROUP", "CREATE", "s2", "g", "$", "MKSTREAM")
    _call(ctl, "XADD", "s2", "100", "f1", "v1")
    _call(ctl, "RENAME", "s2", "s")          # s2 had its own group g: served from it
    assert waiter.read_reply() == (b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$5\r\n100-0\r\n"
                                   b"*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n")


def test_expiry_unblocks_xreadgroup(conns):
    """The key expires in the background (active expiry, no command runs afterwards): the
    waiter is answered on the next loop turn, as Redis's beforeSleep does."""
    waiter, ctl = conns
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "PEXPIRE", "s", "50")
    waiter.sock.settimeout(10)
    assert waiter.read_reply() == b"-UNBLOCKED the stream key no longer exists\r\n"


@pytest.mark.parametrize("replacement", [None, "list"])
def test_swapdb_taking_the_stream_away(conns, replacement):
    """Redis's stream-cgroups 'swapped DB' cases (external:skip there): the waiter's
    database gets no stream, or a list, under the key."""
    waiter, ctl = conns
    _call(ctl, "SELECT", "4")
    if replacement:
        _call(ctl, "LPUSH", "s", "e1")
    _call(ctl, "SELECT", "9")
    _call(ctl, "XADD", "s", "666", "f", "v")
    _call(ctl, "XGROUP", "CREATE", "s", "g", "$")
    _call(waiter, "SELECT", "9")
    _send(waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">")
    _wait_blocked(ctl)
    _call(ctl, "SWAPDB", "4", "9")
    assert waiter.read_reply() == b"-UNBLOCKED the stream key no longer exists\r\n"
