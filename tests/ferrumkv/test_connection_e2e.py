"""End-to-end: handshake, dispatch rules, protocol errors, through redis-py and raw bytes."""

import redis
import pytest


def test_ping_resp3_and_resp2(r, r2):
    assert r.ping() is True
    assert r2.ping() is True
    assert r.execute_command("HELLO", "3")[b"proto"] == 3


def test_unknown_command_and_arity_keep_connection(raw):
    c = raw()
    c.send(b"*2\r\n$3\r\nFOO\r\n$3\r\nbar\r\n")
    assert c.read_reply() == b"-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
    c.send(b"*1\r\n$3\r\nGET\r\n")
    assert c.read_reply() == b"-ERR wrong number of arguments for 'get' command\r\n"
    c.send(b"PING\r\n")
    assert c.read_reply() == b"+PONG\r\n"


@pytest.mark.parametrize("payload,error", [
    (b"*abc\r\n", b"invalid multibulk length"),
    (b"*1\r\n$600000000\r\n", b"invalid bulk length"),
    (b"*1\r\n$-3\r\n", b"invalid bulk length"),
    (b'SET "a\r\n', b"unbalanced quotes in request"),
    (b"*1\r\n:5\r\n", b"expected '$', got ':'"),
    (b"x" * (64 * 1024 + 10), b"too big inline request"),
])
def test_protocol_errors_close_only_that_connection(raw, payload, error):
    bad, good = raw(), raw()
    bad.send(b"PING\r\n" + payload)
    assert bad.read_reply() == b"+PONG\r\n"
    assert bad.read_reply() == b"-ERR Protocol error: " + error + b"\r\n"
    assert bad.closed()
    good.send(b"*1\r\n$4\r\nPING\r\n")
    assert good.read_reply() == b"+PONG\r\n"


def test_pipeline_replies_in_order(raw):
    c = raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nECHO hi\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"$1\r\nv\r\n"
    assert c.read_reply() == b"$2\r\nhi\r\n"


def test_requirepass(make_server):
    s = make_server(requirepass="secret")
    c = redis.Redis(port=s.port, protocol=2)
    with pytest.raises(redis.AuthenticationError):
        c.ping()
    ok = redis.Redis(port=s.port, protocol=3, password="secret")
    assert ok.ping() is True
    bad = redis.Redis(port=s.port, protocol=3, password="nope")
    with pytest.raises(redis.AuthenticationError):
        bad.ping()


def test_maxclients(make_server):
    s = make_server(maxclients=2)
    a = redis.Redis(port=s.port, protocol=2, single_connection_client=True)
    b = redis.Redis(port=s.port, protocol=2, single_connection_client=True)
    a.ping(), b.ping()
    with pytest.raises(redis.ConnectionError, match="max number of clients reached"):
        redis.Redis(port=s.port, protocol=2, single_connection_client=True).ping()
    assert a.ping() and b.ping()


def test_transaction_pipeline(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", "1").get("a")
        assert p.execute() == [True, b"1"]
