"""End-to-end through redis-py (RESP3 default and RESP2) and raw bytes: handshake, auth,
transactions, CLIENT / COMMAND / server commands, and a real process stopped by SHUTDOWN or
a signal."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.conftest import command_frame as mb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NO_RETRY = Retry(NoBackoff(), 0)  # redis-py retries auth and connect errors


# ---- a server process ----

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """``python -m ferrumkv_py --port P ...`` as a child process (killed by PID on exit)."""

    def __init__(self, *args: str):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ferrumkv_py", "--port", str(self.port), "--save", "",
             *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("server did not start: %r" % (self.proc.stderr.read(),))
                time.sleep(0.05)

    def wait(self, timeout: float = 20) -> tuple[int, str]:
        try:
            self.proc.wait(timeout)
        finally:
            self.stop()
        return self.proc.returncode, self.proc.stderr.read().decode()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def test_shutdown_command_stops_cleanly():
    p = Proc()
    c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    c.sendall(b"SET a 1\r\nSHUTDOWN\r\n")
    got = b""
    while chunk := c.recv(1024):
        got += chunk
    c.close()
    # as Redis 7.0: the process stops inside the batch, so no reply at all (not even SET's)
    assert got == b""
    code, err = p.wait()
    assert code == 0
    assert "User requested shutdown..." in err and "ready to exit, bye bye" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(sig):
    p = Proc()
    assert redis.Redis(port=p.port).ping()
    p.proc.send_signal(sig)
    code, err = p.wait()
    assert code == 0
    assert "Received %s scheduling shutdown..." % sig.name in err
    assert "ready to exit, bye bye" in err


def test_logfile_and_loglevel(tmp_path):
    log = tmp_path / "fkv.log"
    p = Proc("--logfile", str(log), "--loglevel", "verbose")
    p.proc.send_signal(signal.SIGTERM)
    code, err = p.wait()
    assert code == 0 and err == ""
    text = log.read_text()
    assert "Ready to accept connections" in text and "ready to exit" in text
    # Redis's line shape: "pid:M dd Mon yyyy hh:mm:ss.mmm * message" (* = notice)
    assert re.search(r"^\d+:M \d\d \w{3} \d{4} [\d:]{8}\.\d{3} \* Ready to accept", text, re.M)


def test_python_m_and_config_file(tmp_path):
    conf = tmp_path / "f.conf"
    conf.write_text("maxmemory 1mb\nmaxmemory-policy allkeys-lru\n")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "ferrumkv_py", str(conf), "--port",
                             str(port), "--maxmemory", "2mb", "--save", ""], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = redis.Redis(port=port)
                got = c.config_get("maxmemory*")
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        assert got["maxmemory"] == str(2 * 1024 * 1024)
        assert got["maxmemory-policy"] == "allkeys-lru"
        assert c.info("server")["config_file"] == str(conf)
    finally:
        proc.kill()
        proc.wait(10)


def test_bad_config_exits_1():
    out = subprocess.run([sys.executable, "-m", "ferrumkv_py", "--maxmemory", "lots"],
                         cwd=ROOT, capture_output=True, timeout=60)
    assert out.returncode == 1
    assert b"argument must be a memory value" in out.stderr


# ---- clients and handshakes ----

def test_resp3_default_and_resp2(server):
    r3 = redis.Redis(port=server.port)  # redis-py 8: HELLO 3 on connect
    r2 = redis.Redis(port=server.port, protocol=2)
    assert r3.set("k", "v") and r2.get("k") == b"v"
    assert r3.hset("h", mapping={"a": "1"}) == 1
    assert r3.hgetall("h") == {b"a": b"1"} == r2.hgetall("h")
    hello = r3.execute_command("HELLO", "3")
    assert hello[b"proto"] == 3 and hello[b"server"] == b"redis"
    assert hello[b"version"] == b"7.0.15" and hello[b"modules"] == []


def test_hello_raw_replies(raw):
    c = raw()
    c.send(b"HELLO 2\r\n")
    assert c.read_reply().startswith(b"*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
    c.send(b"HELLO 3\r\nGET nosuch\r\nHELLO 2\r\nGET nosuch\r\n")
    assert c.read_reply().startswith(b"%7\r\n")
    assert c.read_reply() == b"_\r\n"
    c.read_reply()
    assert c.read_reply() == b"$-1\r\n"
    c.send(b"HELLO 4\r\nHELLO x\r\nHELLO 3 FOO\r\n")
    assert c.read_reply() == b"-NOPROTO unsupported protocol version\r\n"
    assert c.read_reply() == b"-ERR Protocol version is not an integer or out of range\r\n"
    assert c.read_reply() == b"-ERR Syntax error in HELLO option 'FOO'\r\n"


def test_requirepass_flows(make_server):
    s = make_server(requirepass="secret")
    from tests.conftest import RawConn
    c = RawConn(s.port)
    c.send(b"PING\r\nGET\r\nAUTH wrong\r\nAUTH other secret\r\nHELLO 3\r\n")
    assert c.read_reply() == b"-NOAUTH Authentication required.\r\n"
    assert c.read_reply() == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert c.read_reply() == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.read_reply() == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.read_reply().startswith(b"-NOAUTH HELLO must be called with the client already "
                                     b"authenticated, otherwise the HELLO AUTH <user> <pass>")
    c.send(b"AUTH secret\r\nPING\r\nRESET\r\nPING\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"+PONG\r\n"
    assert c.read_reply() == b"+RESET\r\n"
    assert c.read_reply() == b"-NOAUTH Authentication required.\r\n"
    c.send(b"HELLO 3 AUTH default secret SETNAME me\r\nCLIENT GETNAME\r\n")
    assert c.read_reply().startswith(b"%7\r\n")
    assert c.read_reply() == b"$2\r\nme\r\n"
    # before AUTH, Redis 7 refuses big frames outright
    c2 = RawConn(s.port)
    c2.send(b"*11\r\n")
    assert c2.read_reply() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    assert c2.closed()
    ok = redis.Redis(port=s.port, password="secret")  # RESP3: HELLO 3 AUTH default secret
    assert ok.ping()
    ok2 = redis.Redis(port=s.port, password="secret", protocol=2)
    assert ok2.ping()
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=s.port, password="bad", retry=NO_RETRY).ping()


def test_clearing_requirepass_lets_waiting_clients_in(make_server):
    s = make_server(requirepass="pw")
    from tests.conftest import RawConn
    waiting, admin = RawConn(s.port), RawConn(s.port)
    waiting.send(b"PING\r\n")
    assert waiting.read_reply() == b"-NOAUTH Authentication required.\r\n"
    admin.send(b"AUTH pw\r\nCONFIG SET requirepass \"\"\r\n")
    assert admin.read_reply() == b"+OK\r\n" and admin.read_reply() == b"+OK\r\n"
    waiting.send(b"PING\r\n")
    assert waiting.read_reply() == b"+PONG\r\n"


def test_auth_without_password_configured(raw):
    c = raw()
    c.send(b"AUTH x\r\nAUTH default anything\r\nAUTH bob x\r\nHELLO 3 AUTH default y\r\n")
    assert c.read_reply() == (b"-ERR AUTH <password> called without any password configured "
                              b"for the default user. Are you sure your configuration is "
                              b"correct?\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == \
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    assert c.read_reply().startswith(b"%7\r\n")


def test_client_commands(server):
    a = redis.Redis(port=server.port, single_connection_client=True)
    b = redis.Redis(port=server.port, protocol=2, single_connection_client=True)
    assert a.client_setname("alpha") and a.client_getname() == "alpha"
    assert b.client_getname() is None
    aid, bid = a.client_id(), b.client_id()
    assert aid != bid
    listing = a.client_list()
    mine = [x for x in listing if int(x["id"]) == aid][0]
    assert mine["name"] == "alpha" and mine["cmd"] == "client|list" and mine["resp"] == "3"
    assert mine["lib-name"] == "redis-py"
    assert [x["id"] for x in a.client_list(client_id=[bid])] == [str(bid)]
    info = a.client_info()
    assert int(info["id"]) == aid and str(info["db"]) == "0"
    with pytest.raises(redis.ResponseError, match="Client names cannot contain spaces"):
        a.client_setname("a b")
    assert a.client_kill_filter(_id=bid) == 1
    assert bid not in [int(x["id"]) for x in a.client_list()]
    assert a.client_kill_filter(_id=999999) == 0
    with pytest.raises(redis.ResponseError, match="No such client"):
        a.execute_command("CLIENT", "KILL", "1.2.3.4:5")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        a.execute_command("CLIENT", "KILL", "MAXAGE", "0")
    assert a.execute_command("CLIENT", "SETINFO", "LIB-NAME", "x") == b"OK"


def test_client_kill_self_gets_reply_first(raw):
    c = raw()
    c.send(b"CLIENT ID\r\n")
    own = int(c.read_reply()[1:-2])
    c.send(b"CLIENT KILL ID %d SKIPME no\r\n" % own)
    assert c.read_reply() == b":1\r\n"
    assert c.closed()


def test_maxclients_reply(make_server):
    s = make_server(maxclients=1)
    from tests.conftest import RawConn
    first = RawConn(s.port)
    first.send(b"PING\r\n")
    assert first.read_reply() == b"+PONG\r\n"
    second = RawConn(s.port)
    assert second.read_reply() == b"-ERR max number of clients reached\r\n"
    assert second.closed()
    first.send(b"PING\r\n")
    assert first.read_reply() == b"+PONG\r\n"
    assert redis.Redis(port=s.port).info  # the fixture's clients are separate


# ---- transactions ----

def test_pipelines_with_and_without_transaction(r, r2):
    for client in (r, r2):
        with client.pipeline(transaction=True) as p:
            p.set("a", "1").incr("a").get("a").lpush("a", "x")
            res = p.execute(raise_on_error=False)
        assert res[:3] == [True, 2, b"2"] and isinstance(res[3], redis.ResponseError)
        with client.pipeline(transaction=False) as p:
            for i in range(100):
                p.set("k%d" % i, i)
            p.mget(["k%d" % i for i in range(100)])
            res = p.execute()
        assert res[-1] == [str(i).encode() for i in range(100)]


def test_watch_aborts_exec(server):
    r = redis.Redis(port=server.port)
    other = redis.Redis(port=server.port, protocol=2)
    r.set("w", "0")
    with r.pipeline() as p:
        p.watch("w")
        assert p.get("w") == b"0"
        other.set("w", "changed")
        p.multi()
        p.set("w", "mine")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("w") == b"changed"
    # unchanged watched key: EXEC runs
    with r.pipeline() as p:
        p.watch("w")
        p.multi()
        p.set("w", "mine")
        assert p.execute() == [True]


def test_transaction_errors_raw(raw):
    c = raw()
    c.send(b"MULTI\r\nMULTI\r\nWATCH a\r\nSHUTDOWN\r\nEXEC\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"-ERR MULTI calls can not be nested\r\n"
    assert c.read_reply() == b"-ERR WATCH inside MULTI is not allowed\r\n"
    assert c.read_reply() == b"-ERR Command not allowed inside a transaction\r\n"
    assert c.read_reply() == \
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    c.send(b"EXEC\r\nDISCARD\r\nMULTI\r\nPING\r\nDISCARD\r\nPING\r\n")
    assert c.read_reply() == b"-ERR EXEC without MULTI\r\n"
    assert c.read_reply() == b"-ERR DISCARD without MULTI\r\n"
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"+QUEUED\r\n"
    assert c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"+PONG\r\n"
    c.send(b"MULTI\r\nSET a 1\r\nAUTH x\r\nEXEC\r\n")
    assert [c.read_reply() for _ in range(4)][3].startswith(b"*2\r\n+OK\r\n-ERR AUTH")


def test_oom_inside_multi(make_server):
    s = make_server(maxmemory_policy="noeviction")
    c = redis.Redis(port=s.port, protocol=2)
    oom = "command not allowed when used memory > 'maxmemory'."
    c.set("a", "1")
    c.config_set("maxmemory", "1")
    with pytest.raises(redis.ResponseError, match="command not allowed"):
        c.set("b", "1")
    assert c.get("a") == b"1"  # reads are still served
    from tests.conftest import RawConn
    conn = RawConn(s.port)
    conn.send(b"MULTI\r\nGET a\r\nEXEC\r\n")
    assert conn.read_reply() == b"+OK\r\n"
    assert conn.read_reply() == b"-OOM " + oom.encode() + b"\r\n"
    assert conn.read_reply() == \
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"


# ---- server and connection commands ----

def test_select_swapdb_and_errors(r):
    r.set("x", "0")
    r.execute_command("SELECT", "5")
    r.set("x", "5")
    assert r.execute_command("SWAPDB", "0", "5") in (True, b"OK")
    assert r.get("x") == b"0"
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SELECT", "16")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.execute_command("SELECT", "x")
    with pytest.raises(redis.ResponseError, match="invalid first DB index"):
        r.execute_command("SWAPDB", "x", "1")
    with pytest.raises(redis.ResponseError, match="DB index is out of range"):
        r.execute_command("SWAPDB", "0", "99")


def test_ping_echo_time_quit(raw):
    c = raw()
    c.send(b"PING\r\nPING hi\r\nPING a b\r\nECHO x\r\nTIME\r\n")
    assert c.read_reply() == b"+PONG\r\n"
    assert c.read_reply() == b"$2\r\nhi\r\n"
    assert c.read_reply() == b"-ERR wrong number of arguments for 'ping' command\r\n"
    assert c.read_reply() == b"$1\r\nx\r\n"
    t = c.read_reply()
    parts = t.split(b"\r\n")
    assert parts[0] == b"*2" and abs(int(parts[2]) - time.time()) < 60
    c.send(b"QUIT\r\nPING\r\n")
    assert c.read_reply() == b"+OK\r\n"
    assert c.closed()


def test_command_introspection(r, raw):
    count = r.command_count()
    assert count == len(r.command())
    info = r.execute_command("COMMAND", "INFO", "get")
    assert info["get"]["arity"] == 2 and info["get"]["first_key_pos"] == 1
    assert r.command_getkeys("SET", "k", "v") == [b"k"]
    assert r.command_getkeys("MSET", "a", "1", "b", "2") == [b"a", b"b"]
    with pytest.raises(redis.ResponseError, match="Invalid command specified"):
        r.execute_command("COMMAND", "GETKEYS", "NOSUCH", "x")
    with pytest.raises(redis.ResponseError, match="The command has no key arguments"):
        r.execute_command("COMMAND", "GETKEYS", "PING", "x")
    names = r.command_list()
    tops = [n for n in names if b"|" not in n]      # LIST includes subcommands, as Redis
    assert b"get" in names and b"config|get" in names and len(tops) == count
    assert b"zrange" in r.command_list(pattern="zrange*")
    c = raw()
    c.send(b"COMMAND DOCS echo\r\n")
    assert c.read_reply() == (     # Redis 7.0.15's own docs (ferrumkv_py/data)
        b"*2\r\n$4\r\necho\r\n*10\r\n$7\r\nsummary\r\n$21\r\nEcho the given string\r\n"
        b"$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n$10\r\n"
        b"complexity\r\n$4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*4\r\n$4\r\nname\r\n"
        b"$7\r\nmessage\r\n$4\r\ntype\r\n$6\r\nstring\r\n")


def test_unknown_command_text(raw):
    c = raw()
    c.send(mb(b"NOSUCH", b"a", b"b" * 200))  # the quoted list is cut near 128 bytes
    assert c.read_reply() == (b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' '"
                              + b"b" * 124 + b"' \r\n")
    c.send(mb(b"NO\x00SUCH", b"\xff\xfe", b"x\x00y"))  # C strings: a NUL ends a word
    assert c.read_reply() == \
        b"-ERR unknown command 'NO', with args beginning with: '\xff\xfe' 'x' \r\n"
    c.send(mb(b"CLIENT", b"KILL", b"ADDR", b"\xff"))  # bytes that are not UTF-8 are fine
    assert c.read_reply() == b":0\r\n"


def test_info_and_dbsize_reflect_commands(r):
    for i in range(10):
        r.set("k%d" % i, i)
    assert r.dbsize() == 10
    assert r.info("keyspace")["db0"]["keys"] == 10
    assert r.flushall() and r.dbsize() == 0
