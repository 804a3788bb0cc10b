"""The rest of Redis 7.0's configs (ferrumkv_py/config_redis.py): CONFIG GET * lists what
redis-server lists, aliases hold one value, switches for missing machinery are refused with
a reason, and the encoding thresholds drive OBJECT ENCODING as on redis-server."""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py import cli, zset
from ferrumkv_py.config import SPECS, Config, ConfigError
from ferrumkv_py.config import _check_percentiles as check_percentiles
from ferrumkv_py.config_checks import check_proc_title, string2d

from .conftest import err

FAILED = "CONFIG SET failed (possibly related to argument '%s') - %s"
# CONFIG GET * names ferrumkv has and redis-server 7.0.15 has not: its own knobs
OURS_ONLY = {"ahe-controller", "ahe-feedback", "ahe-alpha-init", "ahe-step", "ahe-window",
             "ahe-probation",
             "litehit-shadow", "litehit-shadow-mode", "litehit-block-bytes",
             "litehit-capacities", "litehit-trace-file", "litehit-shadow-sample",
             "litehit-window-seconds", "litehit-shadow-maxmemory", "console-port"}


@pytest.mark.needs_redis
def test_config_get_star_names_match_redis_server(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        their_names = set(theirs.config_get("*"))
    finally:
        theirs.close()
    ours = set(r2.config_get("*"))
    assert ours - their_names == OURS_ONLY
    assert their_names - ours == set()
    assert len(their_names) >= 190


def test_every_redis_config_is_known_with_its_alias(r2):
    got = r2.config_get("*")
    assert got["slave-read-only"] == got["replica-read-only"] == "yes"
    assert got["list-max-ziplist-size"] == got["list-max-listpack-size"] == "-2"
    assert got["enable-debug-command"] == "no" and got["tls-port"] == "0"
    assert r2.config_set("slave-read-only", "no") is True
    assert r2.config_get("replica-read-only") == {"replica-read-only": "no"}
    assert r2.config_set("hash-max-listpack-entries", "7") is True
    assert r2.config_get("hash-max-ziplist-entries") == {"hash-max-ziplist-entries": "7"}
    # both names in one CONFIG SET: applied in order, the last wins (as redis-server)
    assert r2.execute_command("CONFIG", "SET", "replica-read-only", "no",
                              "slave-read-only", "yes") == b"OK"
    assert r2.config_get("replica-read-only") == {"replica-read-only": "yes"}


def test_rewrite_writes_an_alias_once(server, r2, tmp_path):
    conf = tmp_path / "a.conf"
    conf.write_text("port 0\n")
    server.call(lambda: setattr(server.server.config, "file", str(conf)))
    r2.config_set("slave-read-only", "no")
    r2.config_set("zset-max-ziplist-entries", "7")
    assert r2.execute_command("CONFIG", "REWRITE") == b"OK"
    lines = conf.read_text().splitlines()
    assert "replica-read-only no" in lines and "zset-max-listpack-entries 7" in lines
    assert not any(line.startswith(("slave-read-only", "zset-max-ziplist")) for line in lines)
    loaded = cli.build_config([str(conf)])
    assert loaded["slave-read-only"] is False and loaded["zset-max-ziplist-entries"] == 7


@pytest.mark.needs_redis
def test_names_redis_7_0_does_not_have(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        for name in ("set-max-listpack-entries", "set-max-listpack-value",
                     "list-max-ziplist-entries", "lua-replicate-commands"):
            assert r2.config_get(name) == theirs.config_get(name) == {}
            assert err(r2, "CONFIG", "SET", name, "1") == err(theirs, "CONFIG", "SET", name, "1")
    finally:
        theirs.close()


def test_alias_rollback_keeps_both_names_equal():
    c = Config()
    with pytest.raises(ConfigError):
        c.set_many([("slave-priority", "5"), ("timeout", "-1")])
    assert c["replica-priority"] == c["slave-priority"] == 100
    c.set("slave-priority", "5")
    assert c["replica-priority"] == 5


SWITCHES = [  # (name, value that would turn missing machinery on, reason)
    ("tls-port", "6390", "ferrumkv has no TLS listener (only 0 is accepted)"),
    ("tls-cert-file", "/tmp/x.pem", 'ferrumkv has no TLS listener (only "" is accepted)'),
    ("tls-replication", "yes", "ferrumkv has no TLS listener (only no is accepted)"),
    ("min-replicas-to-write", "1", "ferrumkv has no replication: every write would be "
                                   "refused (only 0 is accepted)"),
    ("min-slaves-to-write", "2", "ferrumkv has no replication: every write would be "
                                 "refused (only 0 is accepted)"),
    ("maxmemory-clients", "10%", "client eviction is not supported (only 0 is accepted)"),
    ("activedefrag", "yes", "Active defragmentation cannot be enabled: it requires a Redis "
                            "server compiled with a modified Jemalloc like the one shipped by "
                            "default with the Redis source distribution"),
]


@pytest.mark.parametrize("name,value,reason", SWITCHES, ids=[s[0] for s in SWITCHES])
def test_switches_are_refused_with_a_reason(r2, name, value, reason):
    before = r2.config_get(name)[name]
    assert err(r2, "CONFIG", "SET", name, value) == FAILED % (name, reason)
    assert r2.config_get(name) == {name: before}
    assert r2.config_set(name, before) is True       # the value that keeps it off is fine


def test_switches_refused_at_startup_and_type_errors_come_first():
    for args, reason in ((["--cluster-enabled", "yes"], "ferrumkv has no cluster mode"),
                         (["--daemonize", "yes"], "ferrumkv does not fork"),
                         (["--replicaof", "10.0.0.1", "6379"], "ferrumkv has no replication"),
                         (["--unixsocket", "/tmp/s"], "ferrumkv listens on TCP only")):
        with pytest.raises(ConfigError) as e:
            cli.build_config(args)
        assert reason in e.value.msg, args
    with pytest.raises(ConfigError) as e:
        cli.build_config(["--tls-port", "70000"])
    assert e.value.msg == "argument must be between 0 and 65535 inclusive"
    config = cli.build_config(["--cluster-enabled", "no", "--slaveof", ""])
    assert config["cluster-enabled"] is False and config["replicaof"] == ""


def test_value_parsers_follow_redis():
    assert check_percentiles("50 99 99.9") == "50 99 99.9"
    assert check_percentiles("0x10 1e-300 100") == "16 0 100"
    assert check_percentiles("") == ""
    for bad in ("nan", " 1", "1_0", "abc", "1 "):
        with pytest.raises(ValueError, match="Invalid latency"):
            check_percentiles(bad)
    assert string2d("inf") == float("inf") and string2d("-0x1p3") == -8.0
    assert check_proc_title("{{title}}") and check_proc_title("a}b")
    for bad in ("{title}", "{server-mode}{title}", "{nope}", "{title", "", "{}"):
        with pytest.raises(ValueError):
            check_proc_title(bad)


def test_every_row_has_redis_shape():
    for spec in SPECS.values():
        if spec.alias_of:
            other = SPECS[spec.alias_of]
            assert other.alias_of == spec.name and other.default == spec.default, spec.name
            assert (other.type, other.lo, other.hi) == (spec.type, spec.lo, spec.hi)


# ---- encoding thresholds drive OBJECT ENCODING ----

ENCODING_SCRIPT = [  # (config changes, commands); OBJECT ENCODING of each key after each step
    ({"hash-max-listpack-entries": "2", "set-max-intset-entries": "2",
      "zset-max-listpack-entries": "2"},
     [("HSET", "h", "a", "1", "b", "2"), ("SADD", "s", "1", "2"), ("ZADD", "z", "1", "a", "2", "b")]),
    ({}, [("HSET", "h", "c", "3"), ("SADD", "s", "3"), ("ZADD", "z", "3", "c")]),
    ({"hash-max-ziplist-value": "3", "zset-max-ziplist-value": "3"},
     [("HSET", "h2", "f", "abcd"), ("ZADD", "z2", "1", "abcd"), ("ZADD", "z3", "1", "abc")]),
    ({"zset-max-listpack-entries": "0", "hash-max-listpack-entries": "0",
      "set-max-intset-entries": "0"},
     [("ZADD", "z4", "1", "a"), ("HSET", "h3", "f", "v"), ("SADD", "s2", "1")]),
    ({"zset-max-listpack-entries": "128", "zset-max-listpack-value": "64"},
     [("ZUNIONSTORE", "z5", "1", "z3"), ("RPUSH", "l", "a")]),
]
KEYS = ["h", "s", "z", "h2", "z2", "z3", "z4", "h3", "s2", "z5", "l"]
DEFAULTS = {"hash-max-listpack-entries": "512", "hash-max-listpack-value": "64",
            "set-max-intset-entries": "512", "zset-max-listpack-entries": "128",
            "zset-max-listpack-value": "64"}


def _run_encodings(client) -> list:
    seen = []
    try:
        for changes, cmds in ENCODING_SCRIPT:
            for name, value in changes.items():
                client.config_set(name, value)
            for cmd in cmds:
                client.execute_command(*cmd)
            seen.append([client.object("encoding", k) for k in KEYS])
    finally:
        client.delete(*KEYS)
        for name, value in DEFAULTS.items():
            client.config_set(name, value)
    return seen


def test_thresholds_drive_object_encoding(r2):
    seen = _run_encodings(r2)
    assert seen[0][:3] == [b"listpack", b"intset", b"listpack"]
    assert seen[1][:3] == [b"hashtable", b"hashtable", b"skiplist"]
    assert seen[2][3:6] == [b"hashtable", b"skiplist", b"listpack"]
    assert seen[3][6:9] == [b"skiplist", b"hashtable", b"hashtable"]
    assert zset.ZSET_MAX_LISTPACK_ENTRIES == 128 and zset.ZSET_MAX_LISTPACK_VALUE == 64


@pytest.mark.needs_redis
def test_thresholds_match_redis_server(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        assert _run_encodings(r2) == _run_encodings(theirs)
    finally:
        theirs.close()
