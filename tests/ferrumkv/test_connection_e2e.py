"""End-to-end: handshake, dispatch rules, protocol errors, through redis-py and raw bytes."""

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
import pytest

NO_RETRY = Retry(NoBackoff(), 0)  # redis-py retries auth and connect errors


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
    c = redis.Redis(port=s.port, protocol=2, retry=NO_RETRY)
    with pytest.raises(redis.AuthenticationError):
        c.ping()
    ok = redis.Redis(port=s.port, protocol=3, password="secret")
    assert ok.ping() is True
    bad = redis.Redis(port=s.port, protocol=3, password="nope", retry=NO_RETRY)
    with pytest.raises(redis.AuthenticationError):
        bad.ping()


def test_maxclients(make_server):
    s = make_server(maxclients=2)
    a = redis.Redis(port=s.port, protocol=2, single_connection_client=True)
    b = redis.Redis(port=s.port, protocol=2, single_connection_client=True)
    a.ping(), b.ping()
    with pytest.raises(redis.ConnectionError, match="max number of clients reached"):
        redis.Redis(port=s.port, protocol=2, single_connection_client=True,
                    retry=NO_RETRY).ping()
    assert a.ping() and b.ping()


def test_transaction_pipeline(r):
    with r.pipeline(transaction=True) as p:
        p.set("a", "1").get("a")
        assert p.execute() == [True, b"1"]


def test_huge_multibulk_count_does_not_stall_the_server(raw):
    """'*2000000000' is a valid header to Redis (it waits for the arguments); it must cost
    nothing up front (hiredis would allocate a 16 GB list), and others keep being served."""
    bad, good = raw(), raw()
    bad.send(b"PING\r\n*2000000000\r\n$4\r\nPING\r\n")
    assert bad.read_reply() == b"+PONG\r\n"
    for _ in range(3):
        good.send(b"PING\r\n")
        assert good.read_reply() == b"+PONG\r\n"
    assert not bad.closed(timeout=0.2)


def test_bulk_split_across_many_reads(raw):
    c = raw()
    value = b"v" * 300_000
    frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%b\r\n" % (len(value), value)
    for i in range(0, len(frame), 7001):
        c.send(frame[i:i + 7001])
    assert c.read_reply() == b"+OK\r\n"
    c.send(b"STRLEN k\r\n")
    assert c.read_reply() == b":300000\r\n"


def test_oversized_bulk_refused_before_its_payload(make_server):
    """A bulk longer than proto-max-bulk-len is refused as soon as its header arrives."""
    s = make_server(proto_max_bulk_len="1mb")
    from tests.conftest import RawConn
    c = RawConn(s.port)
    c.send(b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % (1024 * 1024 + 1))
    assert c.read_reply() == b"-ERR Protocol error: invalid bulk length\r\n"
    assert c.closed()
