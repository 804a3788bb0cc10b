"""SRANDMEMBER / HRANDFIELD / ZRANDMEMBER with counts the client chooses (issue 26 row 9):
Redis's exact errors for the extreme counts, and a negative count's reply bounded by the
output-buffer limits before it is built, streamed otherwise (commands/_randpick.py)."""

from __future__ import annotations

import socket
import time

import pytest

from ..conftest import RawConn, command_frame
from .diff_util import Pair

SETUP = [["SADD", "s", "a", "b", "c"], ["HSET", "h", "a", "1", "b", "2", "c", "3"],
         ["ZADD", "z", "1", "a", "2.5", "b", "3", "c"]]
EXTREMES = ["-9223372036854775808", "-9223372036854775807", "9223372036854775807",
            "-4611686018427387904", "-4611686018427387903", "4611686018427387904",
            "4611686018427387903", "abc", "0", "-0", "+1"]


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_extreme_counts_as_redis(redis_server, server, proto):
    """Every extreme count, with and without the pair flag, on a present and a missing key,
    plus the syntax / count error order: the same bytes as redis-server (error or empty
    reply; the non-error replies here are deterministic: 0, empty key, or all items)."""
    pair = Pair(redis_server, server.port, proto)
    try:
        pair.same(["FLUSHALL"])
        for args in SETUP:
            pair.same(args)
        for key, cmd, flag in (("s", "SRANDMEMBER", None), ("h", "HRANDFIELD", "WITHVALUES"),
                               ("z", "ZRANDMEMBER", "WITHSCORES")):
            for k in (key, "missing"):
                for count in EXTREMES:
                    for extra in ([], [flag]) if flag else ([],):
                        if k == key and _huge_draws(count, bool(extra)):
                            continue    # a valid huge draw: ~GBs from both, not compared
                        real, ours = pair.run([cmd, k, count, *extra])
                        if real.startswith(b"-") or real in (b"*0\r\n",):
                            assert ours == real, (cmd, k, count, extra)
                    if flag:
                        pair.same([cmd, k, count, "NOSUCHFLAG"])
                        pair.same([cmd, k, count, flag, "extra"])
            pair.same([cmd, key, "abc", "foo"])     # the count is checked first
    finally:
        pair.same(["FLUSHALL"])
        pair.close()


def _huge_draws(count: str, pairs: bool) -> bool:
    try:
        n = int(count)
    except ValueError:
        return False
    bound = 2 ** 62 - 1 if pairs else 2 ** 63 - 1
    return -bound <= n < -1000


def _line(conn: RawConn) -> bytes:
    return conn.recv_line()[:-2]


def _read_array(conn: RawConn) -> list:
    head = _line(conn)
    assert head[:1] == b"*", head
    out = []
    for _ in range(int(head[1:])):
        line = _line(conn)
        if line[:1] == b"*":                   # RESP3 pair
            out.append(tuple(_bulk(conn, _line(conn)) for _ in range(int(line[1:]))))
        else:
            out.append(_bulk(conn, line))
    return out


def _bulk(conn: RawConn, line: bytes) -> bytes:
    if line[:1] == b"$":
        data = conn.recv_exact(int(line[1:]) + 2)
        return data[:-2]
    return line          # a RESP3 double (",2.5")


@pytest.mark.parametrize("proto", [2, 3])
def test_streamed_reply_is_exact(server, proto):
    """A reply past the streaming threshold: a PING before it and after it in the same
    read keep their order; every pick is an item, with its own value."""
    conn = RawConn(server.port)
    conn.sock.settimeout(30)
    if proto == 3:
        conn.send(command_frame("HELLO", "3"))
        conn.read_reply()
    for args in SETUP:
        conn.send(command_frame(*args))
        conn.read_reply()
    n = 100_000
    conn.send(command_frame("PING") + command_frame("SRANDMEMBER", "s", -n)
              + command_frame("HRANDFIELD", "h", -n, "WITHVALUES")
              + command_frame("ZRANDMEMBER", "z", -n, "WITHSCORES") + command_frame("PING"))
    assert _line(conn) == b"+PONG"
    picks = _read_array(conn)
    assert len(picks) == n and set(picks) == {b"a", b"b", b"c"}
    values = {b"a": b"1", b"b": b"2", b"c": b"3"}
    fields = _read_array(conn)
    if proto == 2:
        assert len(fields) == 2 * n
        fields = list(zip(fields[::2], fields[1::2]))
    assert len(fields) == n and all(values[f] == v for f, v in fields)
    scores = {b"a": b"1", b"b": b"2.5", b"c": b"3"}
    members = _read_array(conn)
    if proto == 2:
        members = list(zip(members[::2], members[1::2]))
        assert all(scores[m] == s for m, s in members)
    else:
        assert all(b"," + scores[m] == s for m, s in members)
    assert len(members) == n
    assert _line(conn) == b"+PONG"
    conn.close()


def test_inside_multi_the_reply_is_whole(server):
    """Inside MULTI (and scripts) nothing is streamed: EXEC's reply holds the picks."""
    conn = RawConn(server.port)
    conn.sock.settimeout(30)
    conn.send(command_frame("SADD", "s", "a", "b"))
    conn.read_reply()
    conn.send(command_frame("MULTI") + command_frame("SRANDMEMBER", "s", -10_000)
              + command_frame("EXEC"))
    assert _line(conn) == b"+OK"
    assert _line(conn) == b"+QUEUED"
    assert _line(conn) == b"*1"
    assert len(_read_array(conn)) == 10_000
    conn.send(command_frame("EVAL", "return #redis.call('srandmember', KEYS[1], -20000)",
                            1, "s"))
    assert conn.read_reply() == b":20000\r\n"
    conn.close()


def test_over_the_hard_limit_closes_before_building(make_server):
    """With a hard output limit, a reply that cannot fit closes the client at once (Redis
    closes it once its buffer passes the limit): nothing is drawn, the server stays small
    and answers the others; the disconnection is counted."""
    srv = make_server(client_output_buffer_limit="normal 1mb 0 0")
    conn = RawConn(srv.port)
    conn.send(command_frame("HSET", "h", "a", "1"))
    conn.read_reply()
    drawn = []
    from ferrumkv_py.commands import _randpick
    real = _randpick._frame
    srv.call(setattr, _randpick, "_frame", lambda *a: drawn.append(1) or real(*a))
    try:
        conn.send(command_frame("HRANDFIELD", "h", -10_000_000_000, "WITHVALUES"))
        assert conn.closed()
    finally:
        srv.call(setattr, _randpick, "_frame", real)
    assert len(drawn) <= 1          # the one item's frame, never a draw
    other = RawConn(srv.port)
    other.send(command_frame("INFO", "stats"))
    info = other.read_reply()
    assert b"client_output_buffer_limit_disconnections:1" in info
    other.close()


def test_a_reader_that_stops_is_closed_mid_stream(make_server):
    """Picks larger than the smallest item pass the up-front bound: a client that reads
    nothing is closed once its unsent bytes pass the hard limit, mid-stream; the others
    are answered and the disconnection is counted."""
    srv = make_server(client_output_buffer_limit="normal 8mb 0 0")
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(command_frame("SADD", "s", "a", "x" * 100_000))
    s.recv(16)
    # at least 20,000 x 7 bytes (under 8 MB: not refused up front); ~1 GB if all were sent
    s.sendall(command_frame("SRANDMEMBER", "s", -20_000))
    other = RawConn(srv.port)
    other.sock.settimeout(30)
    other.send(command_frame("PING"))
    assert other.read_reply() == b"+PONG\r\n"
    for _ in range(100):          # bounded: the close comes within the stream's writes
        other.send(command_frame("INFO", "stats"))
        if b"client_output_buffer_limit_disconnections:1" in other.read_reply():
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the reader was never closed")
    other.close()
    s.close()


@pytest.mark.parametrize("slow_path", [False, True])
def test_stream_yields_to_other_clients(server, slow_path):
    """A streamed reply to a client that does not read waits for it (STREAM_BUFFER_BYTES)
    instead of stalling the loop: another client is answered meanwhile, and the
    streaming client's next command waits for the end of its reply.  ``slow_path``: the
    client is an ACL-limited user, so its commands take Client.call."""
    # 42 MB of 7-byte frames: more than the socket buffers (a few MB each way on
    # loopback) and STREAM_BUFFER_BYTES hold, so the stream cannot end unread
    draws = 6_000_000
    a = socket.create_connection(("127.0.0.1", server.port))
    a.settimeout(30)
    if slow_path:
        a.sendall(command_frame("ACL", "SETUSER", "lim", "on", "nopass", "+@all", "~s",
                                "~after") + command_frame("AUTH", "lim", "x"))
        assert a.recv(16) == b"+OK\r\n+OK\r\n"
    a.sendall(command_frame("SADD", "s", "a", "b", "c"))
    assert a.recv(16) == b":3\r\n"
    a.sendall(command_frame("SRANDMEMBER", "s", -draws) + command_frame("SET", "after", "1"))
    b = RawConn(server.port)
    b.sock.settimeout(30)
    b.send(command_frame("PING"))
    assert b.read_reply() == b"+PONG\r\n"
    b.send(command_frame("EXISTS", "after"))
    assert b.read_reply() == b":0\r\n"      # held behind the unread reply
    want = len(b"*%d\r\n" % draws) + draws * 7 + len(b"+OK\r\n")
    got = bytearray()
    while len(got) < want:
        chunk = a.recv(1 << 20)
        assert chunk, "closed"
        got += chunk
    assert got.startswith(b"*%d\r\n$1\r\n" % draws) and got.endswith(b"\r\n+OK\r\n")
    assert len(got) == want
    b.send(command_frame("EXISTS", "after"))
    assert b.read_reply() == b":1\r\n"
    b.send(command_frame("INFO", "commandstats"))
    assert b"cmdstat_srandmember:calls=1," in b.read_reply()
    a.close()
    b.close()
