"""SLOWLOG, LATENCY, INFO latencystats and MONITOR (ops.py, slowlog.py, latency.py,
monitor.py, commands/operators.py): redis-py, raw bytes, and redis-server side by side."""

from __future__ import annotations

import re
import socket
import time

import pytest
import redis

from ferrumkv_py.latency import LATENCY_TS_LEN, LatencyMonitor, histogram_reply, bucket_of
from ferrumkv_py.monitor import repr_bytes
from ferrumkv_py.slowlog import SlowLog, entry_args

from tests.conftest import RawConn
from .conftest import err

# a script that runs until 3 ms have passed by the server's own clock (no sleeps)
BUSY_3MS = ("local s = redis.call('TIME') repeat local n = redis.call('TIME') until "
            "(n[1] - s[1]) * 1000000 + (n[2] - s[2]) >= 3000")


def _log_all(r):
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()


def _entries(r, count=-1):
    return r.execute_command("SLOWLOG", "GET", count)


# ---- SLOWLOG ----

def test_slowlog_entry_fields(server, r2):
    r2.client_setname("me")
    _log_all(r2)
    r2.set("k", "v")
    e = _entries(r2)
    assert [x[3] for x in e] == [[b"SET", b"k", b"v"], [b"SLOWLOG", b"RESET"]]
    eid, unix_s, us, args, peer, name = e[0]
    assert eid == e[1][0] + 1
    assert abs(unix_s - time.time()) < 60 and us >= 0
    assert re.fullmatch(rb"127\.0\.0\.1:\d+", peer)
    assert name == b"me"


def test_slowlog_off_threshold_and_len(server, r2):
    r2.config_set("slowlog-log-slower-than", -1)
    r2.slowlog_reset()
    r2.set("k", "v")
    assert r2.slowlog_len() == 0
    r2.config_set("slowlog-log-slower-than", 10 ** 12)   # nothing takes 11 days
    r2.set("k", "v")
    assert r2.slowlog_len() == 0
    r2.config_set("slowlog-log-slower-than", 0)
    r2.set("k", "v")
    assert r2.slowlog_len() == 2       # CONFIG SET itself, then SET


def test_slowlog_max_len_and_get_counts(server, r2):
    _log_all(r2)
    r2.config_set("slowlog-max-len", 3)
    for i in range(6):
        r2.set("k%d" % i, i)
    e = _entries(r2)
    assert [x[3][1] for x in e] == [b"k5", b"k4", b"k3"]
    assert r2.slowlog_len() == 3
    assert len(_entries(r2, 1)) == 1
    assert len(r2.execute_command("SLOWLOG", "GET")) == 3
    assert _entries(r2, 0) == []
    assert [x[3][:2] for x in _entries(r2, 2)] == [[b"SLOWLOG", b"GET"]] * 2
    for bad in ("-2", "x", "1.5"):
        assert err(r2, "SLOWLOG", "GET", bad) == "count should be greater than or equal to -1"
    assert err(r2, "SLOWLOG", "GET", 1, 2) == ("unknown subcommand or wrong number of "
                                               "arguments for 'GET'. Try SLOWLOG HELP.")
    r2.config_set("slowlog-max-len", 0)
    r2.set("a", "b")
    assert r2.slowlog_len() == 0


def test_slowlog_cuts_arguments():
    log = SlowLog(4)
    argv = [b"RPUSH", b"l"] + [b"%d" % i for i in range(40)]
    assert entry_args(argv)[-1] == b"... (11 more arguments)"
    assert len(entry_args(argv)) == 32
    assert len(entry_args(argv[:32])) == 32 and entry_args(argv[:32])[-1] == b"29"
    big = b"a" * 200
    assert entry_args([b"SET", b"k", big])[2] == b"a" * 128 + b"... (72 more bytes)"
    assert entry_args([b"SET", b"k", b"a" * 128])[2] == b"a" * 128
    log.push([b"x"], 1, 2, "p:1", b"")
    assert log.get(-1) == [[0, 1, 2, [b"x"], b"p:1", b""]]


def _cmd(c: RawConn, *argv) -> bytes:
    argv = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
    c.send(b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in argv))
    return c.read_reply()


def test_slowlog_redacts_secrets(make_server):
    s = make_server(requirepass="pw")
    c = RawConn(s.port)
    _cmd(c, "AUTH", "pw")
    _cmd(c, "CONFIG", "SET", "slowlog-log-slower-than", "0")
    _cmd(c, "SLOWLOG", "RESET")
    assert _cmd(c, "AUTH", "default", "pw") == b"+OK\r\n"
    assert _cmd(c, "AUTH", "wrong").startswith(b"-WRONGPASS")
    _cmd(c, "HELLO", 2, "AUTH", "default", "pw", "SETNAME", "nm")
    _cmd(c, "CONFIG", "SET", "requirepass", "pw")
    _cmd(c, "CONFIG", "SET", "slowlog-log-slower-than", "-1")   # (not logged itself)
    c.close()
    r = redis.Redis(port=s.port, password="pw", protocol=2)
    args = [x[3] for x in reversed(_entries(r, 4))]
    assert args == [[b"AUTH", b"(redacted)", b"(redacted)"], [b"AUTH", b"(redacted)"],
                    [b"HELLO", b"2", b"AUTH", b"(redacted)", b"(redacted)", b"SETNAME", b"nm"],
                    [b"CONFIG", b"SET", b"requirepass", b"(redacted)"]]
    r.close()


def test_slowlog_exec_and_script_commands(server, r2):
    _log_all(r2)
    p = r2.pipeline(transaction=True)
    p.set("a", "b")
    p.execute()
    r2.eval("redis.call('set', 'x', 'y')", 0)
    got = [(x[3], x[4]) for x in reversed(_entries(r2))][1:]
    addr = got[0][1]
    # EXEC is not logged (skip_slowlog), the commands it ran are; a script's commands are
    # logged with the Lua client's "?:0", as Redis does
    # (EVAL is logged once it has finished, after its commands)
    assert got == [([b"MULTI"], addr), ([b"SET", b"a", b"b"], addr),
                   ([b"set", b"x", b"y"], b"?:0"),
                   ([b"EVAL", b"redis.call('set', 'x', 'y')", b"0"], addr)]


def test_slowlog_failed_commands_are_logged(server, r2):
    _log_all(r2)
    r2.set("s", "abc")
    with pytest.raises(redis.ResponseError):
        r2.execute_command("INCR", "s")
    with pytest.raises(redis.ResponseError):
        r2.execute_command("NOSUCH")      # rejected before running: not logged
    assert [x[3] for x in _entries(r2, 2)] == [[b"INCR", b"s"], [b"SET", b"s", b"abc"]]


def test_slowlog_resp3_and_help(server, r):
    _log_all(r)
    r.set("k", "v")
    assert r.execute_command("SLOWLOG", "GET", 1)[0][3] == [b"SET", b"k", b"v"]
    assert err(r, "SLOWLOG", "FOO") == "unknown subcommand 'FOO'. Try SLOWLOG HELP."
    assert err(r, "SLOWLOG") == "wrong number of arguments for 'slowlog' command"


@pytest.mark.needs_redis
def test_slowlog_replies_match_redis(server, redis_server):
    ours = RawConn(server.port)
    theirs = RawConn(redis_server)
    try:
        for cmd in (b"*2\r\n$7\r\nSLOWLOG\r\n$4\r\nHELP\r\n",
                    b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$2\r\n-5\r\n",
                    b"*4\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$1\r\n1\r\n$1\r\n1\r\n",
                    b"*2\r\n$7\r\nSLOWLOG\r\n$3\r\nFOO\r\n",
                    b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nLEN\r\n$1\r\nx\r\n",
                    b"*3\r\n$7\r\nLATENCY\r\n$4\r\nHELP\r\n$1\r\nx\r\n",
                    b"*2\r\n$7\r\nLATENCY\r\n$4\r\nHELP\r\n",
                    b"*3\r\n$7\r\nLATENCY\r\n$7\r\nHISTORY\r\n$6\r\nnosuch\r\n",
                    b"*3\r\n$7\r\nLATENCY\r\n$5\r\nRESET\r\n$6\r\nnosuch\r\n",
                    b"*2\r\n$9\r\nHISTOGRAM\r\n$6\r\nnosuch\r\n",
                    b"*3\r\n$7\r\nLATENCY\r\n$9\r\nHISTOGRAM\r\n$6\r\nnosuch\r\n"):
            ours.send(cmd)
            theirs.send(cmd)
            assert ours.read_reply() == theirs.read_reply(), cmd
        # an entry's shape: six fields, typed as Redis types them
        for c in (ours, theirs):
            c.send(b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$23\r\nslowlog-log-slower-than"
                   b"\r\n$1\r\n0\r\n")
            assert c.read_reply() == b"+OK\r\n"
            c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
            c.read_reply()
        shapes = []
        for c in (ours, theirs):
            c.send(b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$1\r\n1\r\n")
            reply = c.read_reply()
            shapes.append(re.sub(rb":\d+\r\n", b":N\r\n",
                                 re.sub(rb"\$\d+\r\n127\.0\.0\.1:\d+\r\n", b"$P\r\n", reply)))
            c.send(b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$23\r\nslowlog-log-slower-than"
                   b"\r\n$5\r\n10000\r\n")
            c.read_reply()
            c.send(b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n")     # (a shared server)
            c.read_reply()
        assert shapes[0] == shapes[1]
    finally:
        ours.close()
        theirs.close()


# ---- LATENCY monitor ----

def test_latency_monitor_unit():
    m = LatencyMonitor()
    m.add("command", 5, 100)
    m.add("command", 9, 100)     # same second: the sample is raised, not added
    m.add("command", 2, 101)
    assert m.history("command") == [[100, 9], [101, 2]]
    assert m.latest() == [[b"command", 101, 2, 9]]
    for t in range(LATENCY_TS_LEN + 10):
        m.add("fast-command", 1, 1000 + t)
    assert len(m.history("fast-command")) == LATENCY_TS_LEN
    assert m.history("fast-command")[0] == [1010, 1]
    assert m.reset(["command", "nosuch"]) == 1
    assert m.reset(None) == 1 and m.latest() == []
    assert "no latency spike" in m.doctor(10, 0)
    assert "Latency monitoring is disabled" in m.doctor(0, 0)


def test_latency_events_from_commands(server, r2):
    r2.execute_command("LATENCY", "RESET")
    r2.eval(BUSY_3MS, 0)
    assert r2.execute_command("LATENCY", "LATEST") == []      # threshold 0: off
    r2.config_set("latency-monitor-threshold", 1)
    r2.eval(BUSY_3MS, 0)
    latest = r2.execute_command("LATENCY", "LATEST")
    events = {e[0]: e for e in latest}      # EVAL is not a fast command
    name, when, ms, worst = events[b"command"]
    assert ms >= 3 and worst >= ms and abs(when - time.time()) < 60
    hist = r2.execute_command("LATENCY", "HISTORY", "command")
    assert hist == [[when, ms]]
    doc = r2.execute_command("LATENCY", "DOCTOR")
    assert b"1. command: 1 latency spikes" in doc
    assert r2.execute_command("LATENCY", "RESET", "command", "x") == 1
    assert r2.execute_command("LATENCY", "LATEST") == []


def test_latency_fast_command_event(server, r2):
    r2.config_set("latency-monitor-threshold", 1)
    server.call(lambda: server.server.ops.after_command(
        _FakeClient(), __import__("ferrumkv_py.registry", fromlist=["x"]).COMMANDS[b"get"],
        [b"GET", b"k"], 7_000_000))
    assert r2.execute_command("LATENCY", "LATEST")[0][0] == b"fast-command"
    assert r2.execute_command("LATENCY", "HISTORY", "fast-command")[0][1] == 7


class _FakeClient:
    addr = "1.2.3.4:5"
    name = b""


# ---- histograms and INFO latencystats ----

def test_histogram_buckets_unit():
    counts = [0] * 65
    for ns in (500, 1000, 1500, 3000, 40_000, 5 * 10 ** 9):
        counts[bucket_of(ns)] += 1
    rep = histogram_reply(counts)
    assert rep[b"calls"] == 6
    # Redis's edges (1024 ns doubling, as hdr_iter_log_init prints them), cumulative
    # (< 1024 ns: the first edge; 5 s is clamped to Redis's 1 s maximum)
    assert rep[b"histogram_usec"] == {1: 2, 2: 3, 4: 4, 66: 5, 1082130: 6}


def test_latency_histogram_command(server, r, r2):
    r2.set("k", "v")
    r2.get("k")
    r2.get("k")
    h = r2.execute_command("LATENCY", "HISTOGRAM", "get", "nosuch", "GET")
    assert list(h.keys()) if isinstance(h, dict) else h[0] == b"get"
    assert h[1][:2] == [b"calls", 2] and h[1][2] == b"histogram_usec"
    buckets = h[1][3]
    assert buckets[-1] == 2 and all(isinstance(x, int) for x in buckets)
    h3 = r.execute_command("LATENCY", "HISTOGRAM", "config")
    assert all(k.startswith(b"config|") for k in h3)   # a container: its subcommands
    h3 = r.execute_command("LATENCY", "HISTOGRAM")
    assert h3[b"set"][b"calls"] == 1 and h3[b"get"][b"calls"] == 2
    r.config_set("latency-tracking", "no")
    r2.get("k")
    assert r.execute_command("LATENCY", "HISTOGRAM", "get")[b"get"][b"calls"] == 2


def test_info_latencystats(server, r2):
    r2.set("k", "v")
    c = RawConn(server.port)
    reply = _cmd(c, "INFO", "latencystats")
    text = reply[reply.index(b"\r\n") + 2:].decode()
    assert text.startswith("# Latencystats\r\n")
    line = [x for x in text.split("\r\n") if x.startswith("latency_percentiles_usec_set:")]
    assert re.fullmatch(r"latency_percentiles_usec_set:p50=\d+\.\d{3},p99=\d+\.\d{3},"
                        r"p99\.9=\d+\.\d{3}", line[0])
    assert b"Latencystats" not in _cmd(c, "INFO")    # not a default section
    r2.config_set("latency-tracking-info-percentiles", "50.0 99.90 1e1")
    assert r2.config_get("latency-tracking-info-percentiles") == {
        "latency-tracking-info-percentiles": "50 99.9 10"}
    assert re.search(rb"latency_percentiles_usec_set:p50=[\d.]+,p99\.9=[\d.]+,p10=[\d.]+\r",
                     _cmd(c, "INFO", "latencystats"))
    assert "should sit between [0.0,100.0]" in err(
        r2, "CONFIG", "SET", "latency-tracking-info-percentiles", "50 101")
    assert "Invalid latency-tracking-info-percentiles parameters" in err(
        r2, "CONFIG", "SET", "latency-tracking-info-percentiles", "abc")
    r2.config_set("latency-tracking-info-percentiles", "")
    assert b"latency_percentiles_usec_set:\r\n" in _cmd(c, "INFO", "latencystats")
    c.close()


# ---- MONITOR ----

def test_repr_bytes_is_sdscatrepr():
    assert repr_bytes(b"abc") == b'"abc"'
    assert repr_bytes(b'a"b\\c\n\r\t\x07\x08') == b'"a\\"b\\\\c\\n\\r\\t\\a\\b"'
    assert repr_bytes(b"\x00\x01\xff ~") == b'"\\x00\\x01\\xff ~"'


def _monitor(port) -> RawConn:
    m = RawConn(port)
    m.send(b"*1\r\n$7\r\nMONITOR\r\n")
    assert m.read_reply() == b"+OK\r\n"
    return m


def _norm(line: bytes) -> bytes:
    """A MONITOR line with its time and client port masked."""
    line = re.sub(rb"^\+\d+\.\d{6} ", b"+T ", line)
    return re.sub(rb"^\+T \[(\d+) 127\.0\.0\.1:\d+\]", rb"+T [\1 ADDR]", line)


MONITOR_SCRIPT = [
    [b"SET", b"a b", b'x"y\x01\xff\n'],
    [b"AUTH", b"nopass"],
    [b"HELLO", b"2", b"AUTH", b"default", b"x", b"SETNAME", b"n"],
    [b"MULTI"], [b"SET", b"a", b"b"], [b"EXEC"],
    [b"EVAL", b"redis.call('set','x','y')", b"0"],
    [b"CONFIG", b"GET", b"maxmemory"],
    [b"CLIENT", b"LIST"],
    [b"SLOWLOG", b"LEN"],
    [b"SELECT", b"3"], [b"GET", b"x"], [b"SELECT", b"0"],
    [b"PING"], [b"INCR", b"a b"], [b"NOSUCH"], [b"GET"],
    [b"ECHO", b"done"],
]


def _run_script(port) -> list:
    m = _monitor(port)
    c = RawConn(port)
    for argv in MONITOR_SCRIPT:
        c.send(b"*%d\r\n" % len(argv) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                  for a in argv))
        c.read_reply()
    lines = []
    while True:
        line = m.recv_line()
        lines.append(_norm(line))
        if b'"ECHO"' in line:
            break
    m.close()
    c.send(b"*4\r\n$3\r\nDEL\r\n$3\r\na b\r\n$1\r\na\r\n$1\r\nx\r\n")  # (a shared server)
    c.read_reply()
    return lines


@pytest.mark.needs_redis
def test_monitor_lines_match_redis(server, redis_server):
    ours = _run_script(server.port)
    theirs = _run_script(redis_server)
    assert ours == theirs
    assert b'+T [0 lua] "set" "x" "y"\r\n' in ours
    assert b'+T [3 ADDR] "SELECT" "3"\r\n' in ours


def test_monitor_with_redis_py(server, r2):
    with r2.monitor() as m:
        other = redis.Redis(port=server.port, protocol=2)
        other.set("k", "v")
        other.close()
        seen = []
        while not seen or seen[-1]["command"] != "SET k v":
            seen.append(m.next_command())
        assert seen[-1]["db"] == 0 and seen[-1]["client_type"] == "tcp"


def test_monitor_not_its_own_commands_and_quit(server):
    m = _monitor(server.port)
    m.send(b"*1\r\n$4\r\nPING\r\n")
    assert m.read_reply() == b"+PONG\r\n"      # a monitor still gets its replies
    c = RawConn(server.port)
    c.send(b"*2\r\n$4\r\nECHO\r\n$1\r\nz\r\n")
    c.read_reply()
    assert m.recv_line().endswith(b'] "ECHO" "z"\r\n')   # not its own PING
    m.send(b"*1\r\n$7\r\nMONITOR\r\n")         # a second MONITOR: no reply, as Redis
    m.send(b"*1\r\n$4\r\nQUIT\r\n")
    assert m.read_reply() == b"+OK\r\n"
    assert m.closed()
    c.send(b"*2\r\n$4\r\nECHO\r\n$1\r\nw\r\n")
    assert c.read_reply() == b"$1\r\nw\r\n"
    assert server.call(lambda: len(server.server.ops.monitors)) == 0
    assert server.call(lambda: any(x.slow_path for x in server.server.clients.values())) \
        is False
    c.close()


def test_monitor_shown_in_client_list(server, r2):
    m = _monitor(server.port)
    lines = r2.execute_command("CLIENT", "LIST").decode().splitlines()
    assert any(" flags=O " in x for x in lines)
    m.close()


# ---- CLIENT PAUSE / UNPAUSE ----

def _silent(c: RawConn, wait_s: float = 0.2) -> bool:
    """Nothing arrives on ``c`` for ``wait_s`` (the command is still postponed)."""
    c.sock.settimeout(wait_s)
    try:
        data = c.sock.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        return True
    finally:
        c.sock.settimeout(5)
    return not data


def test_client_pause_write_holds_writes_not_reads(server):
    admin, w = RawConn(server.port), RawConn(server.port)
    try:
        assert _cmd(admin, "CLIENT", "PAUSE", 100000, "WRITE") == b"+OK\r\n"
        # reads answer; a pipelined write and everything after it waits, in order
        assert _cmd(w, "GET", "k") == b"$-1\r\n"
        w.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
        assert _silent(w)
        assert _cmd(admin, "GET", "k") == b"$-1\r\n"            # not written yet
        other = RawConn(server.port)
        other.send(b"*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n")
        assert _silent(other)                                   # may_replicate: held
        # PUBLISH and PFCOUNT are may_replicate in 7.0.15 (hidden in COMMAND INFO): held
        pub = RawConn(server.port)
        pub.send(b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$1\r\nm\r\n")
        assert _silent(pub)
        # held clients count as blocked, as Redis blocks them (BLOCKED_POSTPONE)
        info = _cmd(admin, "INFO", "clients")
        assert b"blocked_clients:3\r\n" in info, info
        listing = _cmd(admin, "CLIENT", "LIST")
        assert listing.count(b" flags=b ") == 3, listing
        assert _cmd(admin, "EVAL_RO", "return 1", 0) == b":1\r\n"   # read-only: runs
        assert _cmd(admin, "CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert w.read_reply() == b"+OK\r\n"
        assert w.read_reply() == b"$1\r\nv\r\n"
        assert other.read_reply() == b":1\r\n"
        assert pub.read_reply() == b":0\r\n"
        other.close()
        pub.close()
        assert _cmd(w, "SET", "k", "2") == b"+OK\r\n"           # reads again afterwards
    finally:
        admin.close()
        w.close()


def test_client_pause_all_and_timeout(server):
    admin, c = RawConn(server.port), RawConn(server.port)
    try:
        assert _cmd(admin, "CLIENT", "PAUSE", 300) == b"+OK\r\n"   # ALL by default
        c.send(b"*1\r\n$4\r\nPING\r\n")
        assert c.read_reply() == b"+PONG\r\n"   # answered once the 300 ms have passed
        assert server.call(lambda: server.server.ops.pause_type) is None
    finally:
        admin.close()
        c.close()


def test_client_pause_exec_with_writes_and_merge(server):
    admin, c = RawConn(server.port), RawConn(server.port)
    try:
        _cmd(admin, "CLIENT", "PAUSE", 300, "WRITE")
        _cmd(admin, "CLIENT", "PAUSE", 10, "ALL")      # stricter kind, later end kept
        assert server.call(lambda: server.server.ops.pause_type) == "all"
        # under ALL even CLIENT UNPAUSE waits (as in Redis): it runs when the 300 ms end
        assert _cmd(admin, "CLIENT", "UNPAUSE") == b"+OK\r\n"
        _cmd(admin, "CLIENT", "PAUSE", 100000, "WRITE")
        assert _cmd(c, "MULTI") == b"+OK\r\n"
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n1\r\n")
        assert _silent(c)       # Redis postpones a write even when it would be queued
        _cmd(admin, "CLIENT", "UNPAUSE")
        assert c.read_reply() == b"+QUEUED\r\n"
        _cmd(admin, "CLIENT", "PAUSE", 100000, "WRITE")
        c.send(b"*1\r\n$4\r\nEXEC\r\n")
        assert _silent(c)
        _cmd(admin, "CLIENT", "UNPAUSE")
        assert c.read_reply() == b"*1\r\n+OK\r\n"
    finally:
        admin.close()
        c.close()


@pytest.mark.needs_redis
def test_client_pause_errors_match_redis(server, redis_server):
    cases = [["CLIENT", "PAUSE", "abc"], ["CLIENT", "PAUSE", "-1"],
             ["CLIENT", "PAUSE", "10", "foo"], ["CLIENT", "PAUSE", "10", "write", "x"],
             ["CLIENT", "UNPAUSE", "x"], ["CLIENT", "REPLY", "foo"],
             ["CLIENT", "NO-EVICT", "maybe"], ["CLIENT", "NO-EVICT", "on", "x"],
             ["CLIENT", "KILL", "1.2.3.4:5"], ["CLIENT", "KILL", "ID", "0"],
             ["CLIENT", "KILL", "ID", "abc"], ["CLIENT", "KILL", "USER", "nosuch"],
             ["CLIENT", "KILL", "TYPE", "foo"], ["CLIENT", "KILL", "TYPE", "master"],
             ["CLIENT", "KILL", "ADDR", "1.2.3.4:5", "ID"], ["CLIENT", "KILL", "MAXAGE", "1"],
             ["CLIENT", "KILL", "SKIPME", "maybe"], ["CLIENT", "KILL", "ID", "999999"],
             ["CLIENT", "PAUSE", "0", "WRITE"], ["CLIENT", "UNPAUSE"],
             ["CLIENT", "NO-EVICT", "off"]]
    ours, theirs = RawConn(server.port), RawConn(redis_server)
    try:
        for cmd in cases:
            assert _cmd(ours, *cmd) == _cmd(theirs, *cmd), cmd
    finally:
        ours.close()
        theirs.close()


def test_pause_suspends_active_expiry(server, r2):
    r2.set("t", "v", px=1)
    r2.client_pause(100000, all=False)
    time.sleep(0.01)
    server.call(server.server.cron)
    assert r2.dbsize() == 1             # still there: the cron expired nothing
    r2.execute_command("CLIENT", "UNPAUSE")
    server.call(server.server.cron)
    assert r2.dbsize() == 0


def test_pause_reads_see_expired_keys_missing_but_leave_them(server, r2):
    """Redis's expireIfNeeded while paused: an expired key reads as missing, is not
    deleted (that would be a write) and counts no expiry until the pause ends."""
    base = r2.info("stats")["expired_keys"]
    r2.set("a", "v", px=5)
    r2.set("b", "v", px=5)
    r2.client_pause(100000, all=False)
    time.sleep(0.02)
    assert r2.get("a") is None and r2.exists("b") == 0 and r2.ttl("a") == -2
    assert r2.info("stats")["expired_keys"] == base
    assert r2.dbsize() == 2                      # both still stored
    r2.execute_command("CLIENT", "UNPAUSE")
    assert r2.get("a") is None and r2.get("b") is None
    assert r2.info("stats")["expired_keys"] == base + 2


def test_pause_lets_no_writes_scripts_run(server, r2):
    """A script's flags are its command's (Redis getCommandFlags): EVAL / EVALSHA of a
    no-writes script and FCALL of a no-writes function run during a WRITE pause; a
    script without a shebang, or that may write, waits."""
    body = "#!lua flags=no-writes\nreturn 'ro'"
    sha = r2.script_load(body)
    r2.function_load("#!lua name=lib\nredis.register_function{function_name='f', "
                     "callback=function() return 'fn' end, flags={'no-writes'}}\n"
                     "redis.register_function('w', function() return 'w' end)", replace=True)
    admin = RawConn(server.port)
    try:
        assert _cmd(admin, "CLIENT", "PAUSE", 100000, "WRITE") == b"+OK\r\n"
        assert _cmd(admin, "EVAL", body, 0) == b"$2\r\nro\r\n"
        assert _cmd(admin, "EVALSHA", sha, 0) == b"$2\r\nro\r\n"
        assert _cmd(admin, "FCALL", "f", 0) == b"$2\r\nfn\r\n"
        waiting = RawConn(server.port)
        waiting.send(b"*3\r\n$5\r\nFCALL\r\n$1\r\nw\r\n$1\r\n0\r\n")
        assert _silent(waiting)
        assert _cmd(admin, "CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert waiting.read_reply() == b"$1\r\nw\r\n"
        waiting.close()
    finally:
        admin.close()


# ---- CLIENT REPLY / NO-EVICT ----

def test_client_reply_off_skip_on(server):
    c = RawConn(server.port)
    try:
        c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n"
               b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n"
               b"*1\r\n$4\r\nNOPE\r\n"                       # errors are silenced too
               b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$2\r\nON\r\n")
        assert c.read_reply() == b"+OK\r\n"                  # only ON's reply
        c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n"
               b"*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
               b"*2\r\n$4\r\nECHO\r\n$1\r\nz\r\n")
        assert c.read_reply() == b"$1\r\nz\r\n"              # GET's reply was skipped
        assert _cmd(c, "GET", "a") == b"$1\r\n1\r\n"
    finally:
        c.close()


def test_client_no_evict_flag(server, r2):
    assert r2.execute_command("CLIENT", "NO-EVICT", "on") == b"OK"
    assert " flags=e " in r2.execute_command("CLIENT", "INFO").decode()
    r2.execute_command("CLIENT", "NO-EVICT", "off")
    assert " flags=N " in r2.execute_command("CLIENT", "INFO").decode()


def test_client_kill_user_and_filters(server, r2):
    other = RawConn(server.port)
    try:
        _cmd(other, "CLIENT", "SETNAME", "victim")
        assert r2.execute_command("CLIENT", "KILL", "USER", "default", "SKIPME", "yes") == 1
        assert other.closed()
    finally:
        other.close()


# ---- LATENCY GRAPH ----

def test_latency_graph_is_redis_sparkline():
    from ferrumkv_py.latency import graph
    m = LatencyMonitor()
    for t, ms in ((100, 500), (101, 101), (102, 300), (103, 200)):
        m.add("command", ms, t)
    # worked by hand from sparkline.c: 12 steps over 101..500 -> steps 11, 0, 5, 2
    assert graph("command", m.events["command"], 110) == (
        "command - high 500 ms, low 101 ms (all time high 500 ms)\n" + "-" * 80 + "\n"
        "#   \n|   \n| # \n|_|#\n    \n1987\n0sss\ns   \n")
    for t in range(85):          # more than 80 samples: a second block after a blank line
        m.add("x", 1 + t % 3, 1000 + t * 60)
    text = graph("x", m.events["x"], 1000 + 85 * 60)
    blocks = text.split("\n\n")
    assert len(blocks) == 2 and len(blocks[1].splitlines()[0]) == 5


def test_latency_graph_command(server, r, r2):
    assert err(r2, "LATENCY", "GRAPH", "command") == "No samples available for event 'command'"
    server.call(lambda: server.server.ops.latency.add("command", 12, int(time.time())))
    text = r2.execute_command("LATENCY", "GRAPH", "command").decode()
    assert text.startswith("command - high 12 ms, low 12 ms (all time high 12 ms)\n")
    assert isinstance(r.execute_command("LATENCY", "GRAPH", "command"), (bytes, str))


def test_reset_leaves_monitor_and_reply_off(server):
    m = _monitor(server.port)
    assert _cmd(m, "RESET") == b"+RESET\r\n"
    c = RawConn(server.port)
    _cmd(c, "PING")
    assert _cmd(m, "ECHO", "x") == b"$1\r\nx\r\n"      # no MONITOR line came first
    m.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
    assert _cmd(m, "RESET") == b"+RESET\r\n"
    assert _cmd(m, "PING") == b"+PONG\r\n"
    m.close()
    c.close()


@pytest.mark.needs_redis
def test_monitor_inside_exec_is_refused_as_redis(server, redis_server):
    for port in (server.port, redis_server):
        c = RawConn(port)
        _cmd(c, "MULTI")
        assert _cmd(c, "MONITOR") == b"+QUEUED\r\n"
        assert _cmd(c, "EXEC") == (b"*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING "
                                   b"client\r\n")
        c.close()


def test_resetstat_clears_histograms(server, r2):
    r2.set("k", "v")
    assert b"set" in r2.execute_command("LATENCY", "HISTOGRAM", "set")
    r2.config_resetstat()
    assert r2.execute_command("LATENCY", "HISTOGRAM", "set") == []


def test_huge_pause_then_unpause(server):
    c = RawConn(server.port)
    assert _cmd(c, "CLIENT", "PAUSE", "9223372036854775807", "WRITE") == b"+OK\r\n"
    assert _cmd(c, "GET", "x") == b"$-1\r\n"
    assert _cmd(c, "CLIENT", "UNPAUSE") == b"+OK\r\n"
    assert _cmd(c, "SET", "x", "1") == b"+OK\r\n"
    c.close()


def test_redact_unit():
    from ferrumkv_py.registry import COMMANDS, lookup
    from ferrumkv_py.slowlog import redact
    hello = COMMANDS[b"hello"]
    assert redact(hello, [b"HELLO", b"x", b"AUTH", b"u", b"p"]) == [
        b"HELLO", b"x", b"AUTH", b"(redacted)", b"(redacted)"]
    assert redact(hello, [b"HELLO", b"3", b"SETNAME", b"auth", b"AUTH", b"u", b"p"]) == [
        b"HELLO", b"3", b"SETNAME", b"auth", b"AUTH", b"(redacted)", b"(redacted)"]
    cfg_set = lookup(b"config").subcommands["set"]
    assert redact(cfg_set, [b"CONFIG", b"SET", b"hz", b"5", b"REQUIREPASS", b"s"]) == [
        b"CONFIG", b"SET", b"hz", b"5", b"REQUIREPASS", b"(redacted)"]
    assert redact(COMMANDS[b"get"], [b"GET", b"auth"]) == [b"GET", b"auth"]


def _mask_ints(reply: bytes) -> bytes:
    return re.sub(rb":\d+\r\n", b":N\r\n", reply)


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_histogram_and_latencystats_shapes_match_redis(server, redis_server, proto):
    shapes = []
    for port in (server.port, redis_server):
        c = RawConn(port)
        _cmd(c, "HELLO", proto)
        _cmd(c, "CONFIG", "RESETSTAT")
        _cmd(c, "ECHO", "x")
        hist = _cmd(c, "LATENCY", "HISTOGRAM", "echo", "nosuch")
        info = _cmd(c, "INFO", "latencystats")
        lines = {re.sub(r"=\d+\.\d{3}", "=X", x)
                 for x in info[info.index(b"\r\n") + 2:].decode().removeprefix("txt:")
                 .split("\r\n")
                 if "_echo:" in x or x.startswith("#")}
        shapes.append((_mask_ints(hist), lines))
        c.close()
    assert shapes[0] == shapes[1]
    assert shapes[0][1] == {"# Latencystats", "latency_percentiles_usec_echo:p50=X,p99=X,"
                                                "p99.9=X"}


def test_slowlog_through_redis_py_parser(server, r2):
    _log_all(r2)
    r2.client_setname("who")
    got = r2.slowlog_get(1)[0]
    assert got["command"] == b"CLIENT SETNAME who" and got["client_name"] == b"who"
    assert got["client_address"].startswith(b"127.0.0.1:") and got["duration"] >= 0


def test_client_list_counts_unparsed_input(server, r2):
    c = RawConn(server.port)
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n12345")    # a partial frame waits
    time.sleep(0.1)
    lines = r2.execute_command("CLIENT", "LIST").decode().splitlines()
    qbufs = [int(re.search(r" qbuf=(\d+) ", x).group(1)) for x in lines]
    assert max(qbufs) > 0 and all(re.search(r" omem=\d+ tot-mem=\d+ ", x) for x in lines)
    c.close()


@pytest.mark.needs_redis
@pytest.mark.parametrize("sub", ["LIST", "INFO"])
def test_client_list_of_itself_counts_its_read(server, redis_server, sub):
    """While its read runs, a client's query buffer holds that read (Redis trims it after
    the read's last command): CLIENT LIST / INFO on itself shows qbuf=26, as redis-server
    does (unit/introspection's CLIENT LIST / CLIENT INFO)."""
    found = []
    for port in (server.port, redis_server):
        c = RawConn(port)
        c.send(b"*2\r\n$6\r\nCLIENT\r\n$%d\r\n%s\r\n" % (len(sub), sub.encode()))
        found.append(re.search(rb" qbuf=(\d+) ", c.read_reply()).group(1))
        c.close()
    assert found[0] == found[1] == b"%d" % (4 + 4 + 8 + 4 + len(sub) + 2)


def test_add_latency_threshold(server, r2):
    ops = server.server.ops
    server.call(lambda: ops.add_latency("expire-cycle", 5_000_000))    # off: nothing
    assert r2.execute_command("LATENCY", "LATEST") == []
    r2.config_set("latency-monitor-threshold", 5)
    server.call(lambda: ops.add_latency("expire-cycle", 4_999_999))
    server.call(lambda: ops.add_latency("eviction-cycle", 5_000_000))
    assert [e[0] for e in r2.execute_command("LATENCY", "LATEST")] == [b"eviction-cycle"]


def test_pause_spares_monitors_and_forgets_gone_clients(server):
    m = _monitor(server.port)
    admin, gone = RawConn(server.port), RawConn(server.port)
    try:
        _cmd(admin, "CLIENT", "PAUSE", 100000, "ALL")
        assert _cmd(m, "PING") == b"+PONG\r\n"        # a monitor is never paused
        gone.send(b"*3\r\n$3\r\nSET\r\n$1\r\ng\r\n$1\r\n1\r\n")
        assert _silent(gone)
        gone.close()
        deadline = time.time() + 5
        while time.time() < deadline and server.call(lambda: len(server.server.ops.held)):
            time.sleep(0.01)
        assert server.call(lambda: len(server.server.ops.held)) == 0
        server.call(server.server.ops.unpause)
        assert _cmd(admin, "EXISTS", "g") == b":0\r\n"  # the gone client's SET never ran
    finally:
        m.close()
        admin.close()


def test_held_client_reads_on_and_runs_in_order(server):
    admin, c = RawConn(server.port), RawConn(server.port)
    try:
        _cmd(admin, "CLIENT", "PAUSE", 100000, "WRITE")
        c.send(b"*3\r\n$4\r\nSADD\r\n$1\r\ns\r\n$1\r\na\r\n")
        assert _silent(c)
        # more commands, in two reads (one cut mid-frame), arrive during the pause
        c.send(b"*3\r\n$4\r\nSADD\r\n$1\r\ns\r\n$1\r\nb\r\n*2\r\n$5\r\nSCARD\r\n")
        time.sleep(0.05)
        c.send(b"$1\r\ns\r\n")
        assert _silent(c)
        _cmd(admin, "CLIENT", "UNPAUSE")
        assert [c.read_reply() for _ in range(3)] == [b":1\r\n", b":1\r\n", b":2\r\n"]
        assert _cmd(c, "SCARD", "s") == b":2\r\n"
    finally:
        admin.close()
        c.close()


def test_pause_suspends_eviction(server, r2):
    for i in range(50):
        r2.set("e%d" % i, "x" * 100)
    r2.config_set("maxmemory-policy", "allkeys-random")
    r2.client_pause(100000, all=False)
    try:
        r2.config_set("maxmemory", 1)            # would evict everything at once
        server.call(server.server.cron)
        assert r2.dbsize() == 50
        assert r2.get("e1") == b"x" * 100        # reads are not refused for memory
    finally:
        r2.execute_command("CLIENT", "UNPAUSE")
    server.call(server.server.cron)
    assert r2.dbsize() < 50
    r2.config_set("maxmemory", 0)


def _blocked_call_in_slowlog(port: int) -> list:
    """BLPOP blocks, the slowlog is reset, a push serves it: what the slowlog shows."""
    admin, b = RawConn(port), RawConn(port)
    try:
        _cmd(admin, "DEL", "slowlog:l")     # redis_server is shared by the session
        _cmd(admin, "CONFIG", "SET", "slowlog-log-slower-than", 0)
        b.send(b"*3\r\n$5\r\nBLPOP\r\n$9\r\nslowlog:l\r\n$1\r\n0\r\n")
        assert _silent(b)
        _cmd(admin, "SLOWLOG", "RESET")
        _cmd(admin, "LPUSH", "slowlog:l", "x")
        assert b.read_reply() == b"*2\r\n$9\r\nslowlog:l\r\n$1\r\nx\r\n"
        log = redis.Redis(port=port).slowlog_get()
        _cmd(admin, "CONFIG", "SET", "slowlog-log-slower-than", 10000)
        # the reading connection's own set-up (HELLO, CLIENT SETINFO) is not the point
        return [e["command"] for e in log
                if not e["command"].startswith((b"HELLO", b"CLIENT SETINFO"))]
    finally:
        admin.close()
        b.close()


@pytest.mark.needs_redis
def test_a_blocked_call_is_logged_when_served(server, redis_server):
    """Redis logs a blocked command when it is served (updateStatsOnUnblock), not when it
    blocks: unit/slowlog's 'Rewritten commands are logged as their original command'."""
    ours = _blocked_call_in_slowlog(server.port)
    assert ours == _blocked_call_in_slowlog(redis_server)
    assert ours[0] == b"BLPOP slowlog:l 0"
