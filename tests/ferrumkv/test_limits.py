"""Client limits (limits.py): query buffer, output buffer classes, maxclients, timeout."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
import redis

from ferrumkv_py import limits
from ferrumkv_py.config import Config, ConfigError

MB = 1024 * 1024


def _recv_until_closed(s: socket.socket, limit_s: float = 10.0) -> bytes:
    s.settimeout(limit_s)
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return buf
            buf += chunk
    except (ConnectionResetError, socket.timeout):
        return buf


# ---- client-output-buffer-limit: syntax, as redis-server 7.0.15 answers ----

@pytest.mark.parametrize("raw,msg", [
    ("normal 1 2", limits.OBUF_WRONG_ARGS),
    ("foo 1 2 3", limits.OBUF_BAD_CLASS),
    ("master 1 2 3", limits.OBUF_BAD_CLASS),
    ("normal 1x 2 3", limits.OBUF_BAD_VALUE),
    ("normal 1mb 2 -3", limits.OBUF_BAD_VALUE),
    ("normal 1 2 3s", limits.OBUF_BAD_VALUE),
])
def test_obuf_config_errors(raw, msg):
    c = Config()
    with pytest.raises(ConfigError) as info:
        c.set("client-output-buffer-limit", raw)
    assert info.value.msg == msg
    assert c["client-output-buffer-limit"] == limits.OBUF_DEFAULT


def test_obuf_config_sets_only_named_classes():
    c = Config()
    c.set("client-output-buffer-limit", "replica 1mb 2k 3")
    assert c["client-output-buffer-limit"] == \
        "normal 0 0 0 slave 1048576 2000 3 pubsub 33554432 8388608 60"
    c.set("client-output-buffer-limit", "normal 10 20 30 pubsub 1 1 1")
    assert c["client-output-buffer-limit"] == "normal 10 20 30 slave 1048576 2000 3 pubsub 1 1 1"
    c.set("client-output-buffer-limit", "")
    assert c["client-output-buffer-limit"] == "normal 10 20 30 slave 1048576 2000 3 pubsub 1 1 1"


@pytest.mark.needs_redis
def test_obuf_config_differential(server, redis_server):
    """Same replies as redis-server for sets and errors (limits kept large: the
    redis-server fixture is shared, its defaults are restored after)."""
    ours = redis.Redis(port=server.port, protocol=2)
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        for raw in ("replica 1mb 2k 3", "normal 10mb 20mb 30 pubsub 1gb 1gb 1",
                    "normal 1 2", "master 1 2 3", "normal 1x 2 3", "normal 1gb 2gb +3",
                    "Normal 0 0 0 REPLICA 0 0 0"):
            got = []
            for r in (ours, theirs):
                try:
                    got.append(("ok", r.config_set("client-output-buffer-limit", raw),
                                r.config_get("client-output-buffer-limit")))
                except redis.ResponseError as e:
                    got.append(("err", str(e)))
            assert got[0] == got[1], raw
    finally:
        for r in (ours, theirs):
            r.config_set("client-output-buffer-limit", limits.OBUF_DEFAULT)
            r.close()


# ---- client-output-buffer-limit: enforcement ----

def test_hard_limit_closes_a_client_asking_for_big_replies(make_server):
    """One read asking for 200 replies of 1 MB under a 4 MB hard limit: the client is
    closed and counted, and the server never builds the 200 MB reply."""
    s = make_server(client_output_buffer_limit="normal 4mb 0 0")
    r = redis.Redis(port=s.port)
    r.set("big", b"x" * MB)
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 200)
    time.sleep(0.5)
    got = _recv_until_closed(sock)
    sock.close()
    assert len(got) < 200 * MB // 4
    assert r.info("stats")["client_output_buffer_limit_disconnections"] == 1
    assert r.ping()


def test_no_limit_by_default_for_normal_clients(server):
    r = redis.Redis(port=server.port)
    r.set("big", b"x" * MB)
    p = r.pipeline(transaction=False)
    for _ in range(8):
        p.get("big")
    assert [len(v) for v in p.execute()] == [MB] * 8
    assert r.info("stats")["client_output_buffer_limit_disconnections"] == 0


def test_soft_limit_closes_after_its_seconds(make_server):
    """Over the soft limit (not the hard one) for longer than soft_seconds: closed by the
    cron's check; a client that reads its replies in time is not."""
    s = make_server(client_output_buffer_limit="normal 0 256kb 1")
    r = redis.Redis(port=s.port)
    r.set("big", b"x" * MB)
    sock = socket.create_connection(("127.0.0.1", s.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    # 16 MB of replies: the kernel's send buffer autotunes up to tcp_wmem's maximum (4 MB
    # here), and with 4 replies it once took them all, leaving the server nothing unsent
    sock.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 16)
    deadline = time.time() + 10
    while time.time() < deadline and \
            r.info("stats")["client_output_buffer_limit_disconnections"] == 0:
        time.sleep(0.2)
    sock.close()
    assert r.info("stats")["client_output_buffer_limit_disconnections"] == 1


def test_pubsub_class_is_a_client_attribute(server):
    """The pub/sub code switches a client's class with set_obuf_class (limits follow)."""
    r = redis.Redis(port=server.port)
    r.client_setname("sub")

    def switch():
        c = next(c for c in server.server.clients.values() if c.name == b"sub")
        c.set_obuf_class("pubsub")
        return c.obuf_early, c.timeout_exempt()
    early, exempt = server.call(switch)
    assert early == 8388608 and exempt


# ---- client-query-buffer-limit ----

def test_query_buffer_limit_closes_the_client(make_server, caplog):
    s = make_server(client_query_buffer_limit="1mb")
    r = redis.Redis(port=s.port)
    sock = socket.create_connection(("127.0.0.1", s.port))
    # a 4 MB bulk (proto-max-bulk-len allows it) arriving in pieces: closed past 1 MB
    sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (4 * MB))
    sent = 0
    try:
        for _ in range(64):
            sock.sendall(b"y" * 65536)
            sent += 65536
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = _recv_until_closed(sock)
    sock.close()
    assert got == b""                                       # no reply, just the close
    assert r.info("stats")["client_query_buffer_limit_disconnections"] == 1
    assert r.exists("k") == 0
    assert any("Closing client that reached max query buffer length" in m
               for m in caplog.messages)


def test_query_buffer_limit_bounds(server):
    r = redis.Redis(port=server.port)
    with pytest.raises(redis.ResponseError) as info:
        r.config_set("client-query-buffer-limit", "100")
    assert str(info.value) == ("CONFIG SET failed (possibly related to argument "
                               "'client-query-buffer-limit') - argument must be between "
                               "1048576 and 9223372036854775807 inclusive")
    assert r.config_get("client-query-buffer-limit") == {
        "client-query-buffer-limit": "1073741824"}


# ---- maxclients and the descriptor limit ----

def test_maxclients_lowered_to_rlimit():
    """In a child process (a hard limit cannot be raised again): with 256 descriptors,
    maxclients 10000 becomes 224, with Redis's log lines; a server started there says so."""
    code = (
        "import logging, resource, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
        "from ferrumkv_py import limits\n"
        "print('allowed', limits.adjust_open_files_limit(10000))\n"
        "print('small', limits.adjust_open_files_limit(100))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60).stdout
    assert "allowed 224" in out and "small 100" in out
    assert ("Current maximum open files is 256. maxclients has been reduced to 224 to "
            "compensate for low ulimit. If you need higher maxclients increase "
            "'ulimit -n'.") in out
    assert "You requested maxclients of 10000 requiring at least 10032 max file " \
        "descriptors." in out


def test_maxclients_error_is_written_before_the_close(make_server):
    s = make_server(maxclients=1)
    keep = socket.create_connection(("127.0.0.1", s.port))
    keep.sendall(b"PING\r\n")
    assert keep.recv(100) == b"+PONG\r\n"
    extra = socket.create_connection(("127.0.0.1", s.port))
    assert _recv_until_closed(extra) == b"-ERR max number of clients reached\r\n"
    extra.close()
    keep.close()


# ---- timeout ----

def test_timeout_closes_idle_clients_inside_multi(make_server):
    s = make_server(timeout=1, hz=50)
    idle = socket.create_connection(("127.0.0.1", s.port))
    idle.sendall(b"MULTI\r\n")
    assert idle.recv(100) == b"+OK\r\n"
    assert _recv_until_closed(idle, 10) == b""
    idle.close()


def test_config_set_maxclients_beyond_rlimit_is_refused():
    """In a child process with 256 descriptors (a hard limit cannot be raised again):
    CONFIG SET maxclients 10000 answers Redis's updateMaxclients text, 100 is accepted."""
    code = (
        "import resource, socket, redis, sys\n"
        "sys.path.insert(0, '.')\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))\n"
        "from tests.conftest import ServerThread\n"
        "s = ServerThread(maxclients=100)\n"
        "r = redis.Redis(port=s.port)\n"
        "try:\n"
        "    r.config_set('maxclients', '10000')\n"
        "except redis.ResponseError as e:\n"
        "    print('ERR', e)\n"
        "print(r.config_get('maxclients'), r.config_set('maxclients', '150'))\n"
        "print(r.info('clients')['client_recent_max_input_buffer'])\n"
        "s.stop()\n")
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=root).stdout
    assert ("ERR CONFIG SET failed (possibly related to argument 'maxclients') - The "
            "operating system is not able to handle the specified number of clients, try "
            "with 224") in out
    assert "{'maxclients': '100'} True" in out
