"""Hardening of configuration (issue 14, part A): every CONFIG SET value validated (Redis's
texts and bounds, checked against redis-server), all-or-nothing multi-parameter SET,
CONFIG REWRITE that reads back byte for byte, protected configs and file safety,
protected mode, constant-time AUTH, unsupported persistence switches refused."""

from __future__ import annotations

import os
import socket
import tempfile

import pytest
import redis

from ferrumkv_py import errors
from ferrumkv_py.conf_file import conf_line, format_memory_conf
from ferrumkv_py.conf_syntax import UnbalancedQuotes, repr_arg, split_args
from ferrumkv_py.config import SPECS, Config, ConfigError, format_value, protected_allowed
from ferrumkv_py.protected import denies, is_local_peer

from ..conftest import RawConn
from .conftest import err

FAILED = "CONFIG SET failed (possibly related to argument '%s') - %s"
BAD_VALUES = ["abc", "-1", "0", "1.5", "+1", "01", "1kb", "99999999999999999999999",
              "4294967296", "", " 1", "1 2", "\xff", "inf", "nan", "1e3", "0x10", "yes",
              "2147483647", "9223372036854775807", "-9223372036854775808", "1e-300"]
# Values some configs give meaning to (multi-word, percentages, flags, templates)
EXTRA_VALUES = {
    "oom-score-adj-values": ["0 200 800", "1 2 3", "-2001 0 0", "0 0 2001", "a b c", "1  2",
                             "0 0 0 0", " 1 2 3", "+1 2 3"],
    "latency-tracking-info-percentiles": ["50 99", "0x10", "100.5", "-0", "99.99999", "1  2",
                                          "1e2", "50 nan"],
    "shutdown-on-sigint": ["save", "nosave now", "save nosave", "default save", "NOW Force",
                           "force now save", "now  force"],
    "shutdown-on-sigterm": ["default", "Save"],
    "proc-title-template": ["{title}", "{{title}}", "{x}", "{title", "}", "a}}b", "{}",
                            "{title} {port} {tls-port} {unixsocket} {config-file}"],
    "cluster-announce-hostname": ["a.b-c", "a_b", "x" * 256, "x" * 255],
    "oom-score-adj": ["relative", "absolute", "RELATIVE"],
    "list-max-listpack-size": ["-5", "-6", "-2147483648", "-2147483649"],
    "hash-max-listpack-value": ["1kb", "1k", "1gb"],
    "slowlog-log-slower-than": ["-1", "-2"],
}


# ---- every value validated when set; INFO never fails ----

def test_litehit_capacities_is_validated(r):
    r.config_set("litehit-shadow", "yes")
    for bad in ("abc", "-5", "1.5", "1 x", " ".join(["1"] * 65)):
        assert err(r, "CONFIG", "SET", "litehit-capacities", bad) == FAILED % (
            "litehit-capacities", "argument must be up to 64 capacities in blocks, each an "
            "integer between 0 and 9223372036854775807")
        assert "litehit_shadow" in r.info("litehit")
    assert r.config_set("litehit-capacities", "10, 20  30") is True
    assert r.config_get("litehit-capacities") == {"litehit-capacities": "10 20 30"}
    info = r.info("litehit")
    assert "litehit_slot_20_hit_rate" in info


SETTABLE = [s for s in SPECS.values() if s.mutable and s.name not in ("port", "dir")]


@pytest.mark.parametrize("spec", SETTABLE, ids=[s.name for s in SETTABLE])
def test_info_survives_every_value(make_server, spec, tmp_path):
    """Each hostile value is refused with Redis's shape or stored; INFO works after each."""
    server = make_server(enable_protected_configs="yes", litehit_shadow="yes",
                         dir=str(tmp_path))
    r = redis.Redis(port=server.port, protocol=2, single_connection_client=True)
    try:
        for bad in BAD_VALUES:
            try:
                r.config_set(spec.name, bad)
            except redis.ResponseError as e:
                assert str(e).startswith("CONFIG SET failed (possibly related to argument '%s')"
                                         % spec.name), str(e)
            assert r.info("everything")["redis_version"]
            assert r.config_get("*")
            r.config_set(spec.name, format_value(spec, spec.default))
    finally:
        r.close()


@pytest.mark.needs_redis
def test_config_set_errors_match_redis_server(r2, redis_server):
    """For every config both servers have (except those that move sockets or files), the
    same hostile values get the same reply, byte for byte."""
    theirs = redis.Redis(port=redis_server, protocol=2)
    skip = {"port", "bind", "dir", "logfile", "requirepass", "maxclients", "save",
            "appendonly"}
    skip |= {s.name for s in SPECS.values()
             if not s.mutable or s.protected or s.compat == "switch"}
    common = set(r2.config_get("*")) & set(theirs.config_get("*")) - skip
    assert {"maxmemory", "hz", "timeout", "proto-max-bulk-len", "maxmemory-policy",
            "lfu-log-factor", "active-expire-effort", "protected-mode"} <= common
    mismatches = []
    try:
        for name in sorted(common):
            before = (r2.config_get(name)[name], theirs.config_get(name)[name])
            for bad in BAD_VALUES + EXTRA_VALUES.get(name, []):
                replies = []
                for c in (r2, theirs):
                    try:
                        replies.append(c.execute_command("CONFIG", "SET", name, bad))
                    except redis.ResponseError as e:
                        replies.append(str(e))
                if name == "maxmemory-policy" and isinstance(replies[0], str):
                    replies[0] = replies[0].replace(", allkeys-ahe, volatile-ahe", "")
                if replies[0] != replies[1]:    # (ours adds 2 AHE policies)
                    mismatches.append((name, bad, replies))
                elif replies[0] == b"OK" and r2.config_get(name) != theirs.config_get(name):
                    mismatches.append((name, bad, r2.config_get(name)))  # shown differently
                r2.config_set(name, before[0])
                theirs.config_set(name, before[1])
    finally:
        theirs.close()
    assert not mismatches, "\n".join(map(repr, mismatches))


@pytest.mark.needs_redis
@pytest.mark.parametrize("args", [
    ["hz", "abc", "dir", "/tmp"], ["dir", "/tmp", "hz", "abc"], ["Hz", "5", "HZ", "6"],
    ["nosuch", "1", "dir", "/tmp"], ["dir", "/tmp", "nosuch", "1"], ["DIR", "/tmp"],
    ["maxmemory", "1mb", "timeout", "-1"], ["databases", "3"],
    ["appendonly", "maybe"], ["save", "1"], ["save", "0 1"], ["save", "1 -1"],
])
def test_multi_set_errors_match_redis_server(r2, redis_server, args):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        ours = err(r2, "CONFIG", "SET", *args)
        assert ours == err(theirs, "CONFIG", "SET", *args)
    finally:
        theirs.close()
    assert r2.config_get("maxmemory") == {"maxmemory": "0"}


def test_multi_set_is_all_or_nothing(r2):
    assert err(r2, "CONFIG", "SET", "maxmemory-samples", "9", "litehit-capacities", "x") \
        .startswith(FAILED % ("litehit-capacities", ""))
    assert r2.config_get("maxmemory-samples") == {"maxmemory-samples": "5"}
    with socket.socket() as busy:          # a listener refuses: the earlier value goes back
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert err(r2, "CONFIG", "SET", "maxmemory", "5mb", "port",
                   str(busy.getsockname()[1])) == FAILED % ("port",
                                                            "Unable to listen on this port")
    assert r2.config_get("maxmemory") == {"maxmemory": "0"}


def test_set_many_restores_listeners_state():
    c = Config()
    seen = []
    c.on_change("hz", seen.append, call_now=False)

    def refuse(value):
        raise ValueError("no")
    c.on_change("timeout", refuse, call_now=False)
    with pytest.raises(ConfigError) as e:
        c.set_many([("hz", "20"), ("timeout", "5")])
    assert (e.value.name, e.value.msg) == ("timeout", "no")
    assert c["hz"] == 10 and c["timeout"] == 0 and seen == [20, 10]


# ---- persistence switches: save rules accepted, appendonly yes refused (no AOF yet) ----

def test_persistence_switches_are_refused(r2):
    assert err(r2, "CONFIG", "SET", "appendonly", "yes").startswith(
        FAILED % ("appendonly", "appendonly yes is not supported: ferrumkv keeps data in "
                                "memory only"))
    assert err(r2, "CONFIG", "SET", "save", "1") == FAILED % ("save", "Invalid save parameters")
    assert err(r2, "CONFIG", "SET", "save", "0 1") == FAILED % ("save", "Invalid save parameters")
    assert r2.config_set("save", "900 1  300 10") is True     # rules (persistence/)
    assert r2.config_get("save") == {"save": "900 1 300 10"}
    assert r2.config_set("save", "") is True and r2.config_set("appendonly", "no") is True
    assert r2.config_get("save") == {"save": ""}
    assert r2.config_get("appendonly") == {"appendonly": "no"}


# ---- protected configs and the files the server writes ----

def test_protected_configs_refused_by_default(r2, tmp_path):
    for name, value in (("dir", str(tmp_path)), ("litehit-trace-file", "t.jsonl"),
                        ("DIR", str(tmp_path))):
        assert err(r2, "CONFIG", "SET", name, value) == FAILED % (name,
                                                                  "can't set protected config")
    assert err(r2, "CONFIG", "SET", "enable-protected-configs", "yes") == FAILED % (
        "enable-protected-configs", "can't set immutable config")
    assert err(r2, "CONFIG", "SET", "logfile", "x") == FAILED % (
        "logfile", "can't set immutable config")


@pytest.mark.parametrize("setting,local,allowed", [
    ("no", True, False), ("yes", False, True), ("local", True, True), ("local", False, False)])
def test_protected_allowed(setting, local, allowed):
    assert protected_allowed(setting, local) is allowed


def test_local_setting_allows_loopback_clients(make_server, tmp_path):
    server = make_server(enable_protected_configs="local")
    r = redis.Redis(port=server.port, protocol=2)
    assert r.config_set("dir", str(tmp_path)) is True
    assert r.config_get("dir") == {"dir": str(tmp_path)}
    r.close()


@pytest.mark.parametrize("name", ["../x.jsonl", "/etc/passwd", "a/b", ".", ".."])
def test_trace_file_stays_inside_dir(make_server, tmp_path, name):
    server = make_server(enable_protected_configs="yes", dir=str(tmp_path))
    r = redis.Redis(port=server.port, protocol=2)
    assert err(r, "CONFIG", "SET", "litehit-trace-file", name) == FAILED % (
        "litehit-trace-file", "litehit-trace-file can't be a path, just a filename")
    r.close()


def test_fifo_trace_file_does_not_block(make_server, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    server = make_server(enable_protected_configs="yes", dir=str(tmp_path))
    r = redis.Redis(port=server.port, protocol=2, socket_timeout=10)
    assert r.config_set("litehit-shadow", "yes") is True
    assert err(r, "CONFIG", "SET", "litehit-trace-file", "pipe") == FAILED % (
        "litehit-trace-file", "Can't open the trace file: No such device or address")
    assert r.config_get("litehit-trace-file") == {"litehit-trace-file": ""}
    assert r.ping() and r.info("litehit")["litehit_shadow"] == 1
    os.symlink("/etc/passwd", tmp_path / "link")
    assert err(r, "CONFIG", "SET", "litehit-trace-file", "link").startswith(
        FAILED % ("litehit-trace-file", "Can't open the trace file"))
    os.mkfifo(tmp_path / "litehit_facts.csv.tmp")       # LITEHIT SAVE's temporary file
    with pytest.raises(redis.ResponseError):
        r.execute_command("LITEHIT", "SAVE")
    assert r.ping()
    r.close()


def test_rewrite_never_opens_a_fifo(server, r2, tmp_path):
    conf = tmp_path / "x.conf"
    conf.write_text("hz 10\n")
    os.mkfifo(str(conf) + ".tmp")
    server.call(lambda: setattr(server.server.config, "file", str(conf)))
    assert err(r2, "CONFIG", "REWRITE").startswith("Rewriting config file: ")
    assert r2.ping()


# ---- CONFIG REWRITE reads back as the same value ----

NASTY = "a \"quoted\" 'single' # not a comment\\ \n\r\t\x07\x08 end\udcff\udc80é"


def _roundtrip(config: Config, tmp_path) -> Config:
    conf = tmp_path / "rt.conf"
    conf.write_bytes(b"# header\n")
    config.file = str(conf)
    config.rewrite()
    text = conf.read_bytes()
    assert all(len(line) < 1000 for line in text.split(b"\n"))
    loaded = Config()
    loaded.load_file(str(conf))
    return loaded


def test_rewrite_round_trips_every_string_config(tmp_path):
    weird_dir = tmp_path / NASTY.replace("\n", "N").replace("\udcff", "x").replace("\udc80", "y")
    weird_dir.mkdir()
    values = {"requirepass": NASTY, "logfile": NASTY, "dir": str(weird_dir),
              "bind": "127.0.0.1 -::1 a\"b", "litehit-trace-file": NASTY.replace("/", ""),
              "aclfile": NASTY.replace("/", ""),
              "litehit-capacities": "1 22 333", "save": "",
              "notify-keyspace-events": "AKE",
              "latency-tracking-info-percentiles": "50 99.9 10",
              "client-output-buffer-limit":
                  "normal 1048576 524288 10 slave 0 0 0 pubsub 33554432 8388608 60"}
    strings = {s.name for s in SPECS.values() if s.type == "string" and not s.compat}
    assert strings <= set(values), strings - set(values)
    config = Config()
    for name, value in values.items():
        config.values[name] = value
    loaded = _roundtrip(config, tmp_path)
    for name in strings:
        assert loaded[name] == config[name], name


def test_rewrite_round_trips_every_config(tmp_path):
    config = Config()
    for spec in SPECS.values():
        if spec.compat == "switch":     # refuses all but its default (test_config_redis.py)
            continue
        if spec.type in ("int", "memory") and spec.hi is not None:
            config.values[spec.name] = int(spec.clamp[1] if spec.clamp else spec.hi)
        elif spec.type == "float":
            config.values[spec.name] = spec.lo + (spec.hi - spec.lo) / 3
    loaded = _roundtrip(config, tmp_path)
    for spec in SPECS.values():
        assert loaded[spec.name] == config[spec.name], spec.name


def test_sizes_are_written_as_redis_writes_them(server, r2, tmp_path):
    conf = tmp_path / "m.conf"
    conf.write_text("maxmemory 1\n")
    server.call(lambda: setattr(server.server.config, "file", str(conf)))
    r2.config_set("maxmemory", "67108864")
    r2.config_set("proto-max-bulk-len", str(3 * 1024 ** 3))
    r2.config_set("requirepass", "p w")
    assert r2.execute_command("CONFIG", "REWRITE") == b"OK"
    r2.execute_command("AUTH", "p w")
    lines = conf.read_text().splitlines()
    assert "maxmemory 64mb" in lines and "proto-max-bulk-len 3gb" in lines
    assert 'requirepass "p w"' in lines
    r2.config_set("requirepass", "")


@pytest.mark.parametrize("n,text", [(0, "0"), (1023, "1023"), (1024, "1kb"), (1536, "1536"),
                                    (3 * 1024 ** 2, "3mb"), (1024 ** 3, "1gb"),
                                    (1024 ** 3 + 1024, "1048577kb")])
def test_format_memory_conf(n, text):
    assert format_memory_conf(n) == text


@pytest.mark.parametrize("line,words", [
    (b"a b  c", [b"a", b"b", b"c"]), (b'"a b" c', [b"a b", b"c"]), (b'""', [b""]),
    (b'"\\x41\\n\\"\\\\"', [b'A\n"\\']), (b"'it\\'s'", [b"it's"]), (b'"\\q"', [b"q"]),
    (b"ab\"cd\"", [b"abcd"]), (b"'a\\nb'", [b"a\\nb"]), (b"\t x \t", [b"x"]),
    (b'"\\xZZ"', [b"xZZ"]),
])
def test_split_args_like_sdssplitargs(line, words):
    assert split_args(line) == words


@pytest.mark.parametrize("line", [b'"abc', b"'abc", b'"a"b', b"'a'b"])
def test_split_args_unbalanced(line):
    with pytest.raises(UnbalancedQuotes):
        split_args(line)


def test_repr_arg_reads_back_for_every_byte():
    value = bytes(range(256))
    assert split_args(repr_arg(value)) == [value]
    assert repr_arg(b'a"b\\\n\xff') == b'"a\\"b\\\\\\n\\xff"'


def test_conf_line_quotes_strings_as_redis(tmp_path):
    assert conf_line(SPECS["logfile"], "") == b'logfile ""'
    assert conf_line(SPECS["dir"], "/tmp") == b'dir "/tmp"'
    assert conf_line(SPECS["maxmemory"], 64 * 1024 ** 2) == b"maxmemory 64mb"
    assert conf_line(SPECS["bind"], "127.0.0.1 -::1") == b"bind 127.0.0.1 -::1"


# ---- protected mode ----

@pytest.mark.parametrize("peer,local", [
    (("127.0.0.1", 5), True), (("127.9.9.9", 5), True), (("::1", 5, 0, 0), True),
    (("192.0.2.7", 5), False), (("::ffff:127.0.0.1", 5, 0, 0), False),
    (("10.0.0.1", 5), False), ("/tmp/redis.sock", True), ("", True)])
def test_is_local_peer(peer, local):
    assert is_local_peer(peer) is local
    assert denies(True, "", peer) is (not local)
    assert denies(False, "", peer) is False and denies(True, "pw", peer) is False


FAR_SOURCE = "127.0.0.2"      # a loopback source address the test declares non-local


def _hello_from(source: str, port: int) -> bytes:
    """Connect from ``source`` to 127.0.0.1 and read first (a refused client gets the error
    at once, then EOF), else PING."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((source, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        s.settimeout(0.5)
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = None
        if data is not None:
            s.settimeout(10)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data
                data += chunk
        s.settimeout(10)
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        return s.recv(65536)
    finally:
        s.close()


def test_protected_mode_denies_non_loopback_clients(make_server, monkeypatch):
    """End to end over loopback only (no traffic to any other address): a client from
    127.0.0.2 is declared non-local, the server answers it as a remote peer."""
    import ferrumkv_py.protected as protected
    real = protected.is_local_peer
    monkeypatch.setattr(protected, "is_local_peer", lambda peer: real(peer) and not (
        isinstance(peer, tuple) and peer[0] == FAR_SOURCE))
    server = make_server()
    reply = _hello_from(FAR_SOURCE, server.port)     # closed by the server after the error
    assert reply == b"-" + errors.PROTECTED_MODE_DENIED.encode() + b"\r\n"
    assert _hello_from("127.0.0.1", server.port) == b"+PONG\r\n"
    r = redis.Redis(port=server.port, protocol=2)
    assert r.info("stats")["rejected_connections"] == 1
    r.config_set("requirepass", "pw")
    assert _hello_from(FAR_SOURCE, server.port).startswith(b"-NOAUTH")
    r2 = redis.Redis(port=server.port, protocol=2, password="pw")
    r2.config_set("requirepass", "")
    r2.config_set("protected-mode", "no")
    assert _hello_from(FAR_SOURCE, server.port) == b"+PONG\r\n"
    r.close()
    r2.close()


# ---- AUTH compares in constant time ----

def test_auth_uses_constant_time_compare(make_server, monkeypatch):
    from ferrumkv_py import acl as conncmds     # ACL users hold SHA-256 hex hashes
    calls = []
    real = conncmds.hmac.compare_digest

    def spy(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)
    monkeypatch.setattr(conncmds.hmac, "compare_digest", spy)
    server = make_server(requirepass="s3cret")
    conn = RawConn(server.port)
    for cmd, reply in (
            (b"AUTH wrong", b"-" + errors.WRONGPASS.encode() + b"\r\n"),
            (b"HELLO 3 AUTH default s3cre", b"-" + errors.WRONGPASS.encode() + b"\r\n"),
            (b"AUTH s3cret", b"+OK\r\n"),
            (b"AUTH default s3cret", b"+OK\r\n")):
        conn.send(cmd + b"\r\n")
        assert conn.read_reply() == reply
    conn.close()
    assert calls == [(64, 64)] * 4        # SHA-256 hex digests: lengths never leak


def test_defaults_documented_for_security():
    c = Config()
    assert c["bind"] == "127.0.0.1 -::1" and c["protected-mode"] is True
    assert c["enable-protected-configs"] == "no"
    assert SPECS["dir"].protected and SPECS["litehit-trace-file"].protected
    assert tempfile.gettempdir()
