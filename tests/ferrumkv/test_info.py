"""INFO: every section parses with redis-py, section selection follows Redis 7.0."""

from __future__ import annotations

import re

import pytest

from ferrumkv_py import info

DEFAULT = ["server", "clients", "memory", "persistence", "stats", "replication", "cpu",
           "modules", "errorstats", "cluster", "keyspace"]


def headers(text: bytes) -> list[str]:
    return [line[2:] for line in text.decode().split("\r\n") if line.startswith("# ")]


@pytest.fixture
def info_raw(raw):
    """``info_raw("keyspace", ...)`` -> the INFO text as bytes, read off a RESP2 socket."""
    conn = raw()

    def call(*args):
        words = [b"INFO"] + [a.encode() for a in args]
        conn.send(b"*%d\r\n" % len(words)
                  + b"".join(b"$%d\r\n%b\r\n" % (len(w), w) for w in words))
        reply = conn.read_reply()
        assert reply.startswith(b"$")
        return reply[reply.index(b"\r\n") + 2:-2]
    return call


@pytest.mark.parametrize("name", sorted(info.SECTIONS))
def test_every_section_parses(r, info_raw, name):
    r.set("k", "v")
    r.expire("k", 100)
    r.get("k")
    parsed = r.info(name)
    assert isinstance(parsed, dict)
    assert headers(info_raw(name)) == [info.TITLES.get(name, name.capitalize())]


def test_lines_end_in_crlf_and_fields_are_name_colon_value(info_raw):
    text = info_raw("everything").decode()
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    for line in text.split("\r\n"):
        assert line == "" or line.startswith("# ") or re.match(r"^[a-z_0-9]+:\S*", line), line


def test_default_all_everything(info_raw):
    default = headers(info_raw())
    assert set(h.lower() for h in default) >= set(DEFAULT)
    assert "Commandstats" not in default
    everything = headers(info_raw("everything"))
    assert "Commandstats" in everything and set(default) <= set(everything)
    assert headers(info_raw("all")) == everything
    assert headers(info_raw("default")) == default


def test_several_sections_in_redis_order(info_raw):
    got = headers(info_raw("keyspace", "SERVER", "cpu", "nosuch"))
    assert got == ["Server", "CPU", "Keyspace"]
    assert info_raw("nosuch") == b""


def test_fields_scrapers_read(r):
    r.set("a", "1")
    r.get("a")
    r.get("b")
    r.set("t", "1", ex=100)
    stats = r.info("stats")
    assert stats["keyspace_hits"] == 1 and stats["keyspace_misses"] == 1
    for field in ("expired_keys", "evicted_keys", "total_commands_processed",
                  "total_connections_received", "instantaneous_ops_per_sec",
                  "total_net_input_bytes", "total_net_output_bytes", "expired_stale_perc",
                  "expired_time_cap_reached_count", "total_eviction_exceeded_time",
                  "total_error_replies"):
        assert field in stats, field
    mem = r.info("memory")
    for field in ("used_memory", "used_memory_human", "maxmemory", "maxmemory_policy",
                  "mem_not_counted_for_evict", "mem_allocator"):
        assert field in mem, field
    assert mem["maxmemory_policy"] == "noeviction"
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 2 and ks["db0"]["expires"] == 1 and ks["db0"]["avg_ttl"] > 0
    server = r.info("server")
    assert server["redis_version"] == "7.0.15" and server["redis_mode"] == "standalone"
    assert len(server["run_id"]) == 40
    clients = r.info("clients")
    assert clients["connected_clients"] >= 1 and clients["maxclients"] == 10000
    assert r.info("replication")["role"] == "master"
    assert "used_cpu_user" in r.info("cpu")


def test_commandstats_and_errorstats(r):
    r.set("a", "1")
    r.get("a")
    with pytest.raises(Exception):
        r.execute_command("NOSUCH")
    with pytest.raises(Exception):
        r.execute_command("GET")
    with pytest.raises(Exception):
        r.execute_command("INCR", "a", "b")
    r.lpush("l", "x")
    with pytest.raises(Exception):
        r.execute_command("INCR", "l")
    cs = r.info("commandstats")
    assert cs["cmdstat_get"]["calls"] == 1
    assert cs["cmdstat_get"]["rejected_calls"] == 1
    assert cs["cmdstat_incr"]["failed_calls"] == 1
    assert set(cs["cmdstat_set"]) >= {"calls", "usec", "usec_per_call", "rejected_calls",
                                      "failed_calls"}
    es = r.info("errorstats")
    assert es["errorstat_ERR"]["count"] >= 3
    assert es["errorstat_WRONGTYPE"]["count"] == 1
    assert r.info("stats")["total_error_replies"] == sum(v["count"] for v in es.values())


def test_resp2_and_resp3_both_parse(r, r2, raw):
    assert r.info()["redis_version"] == r2.info()["redis_version"]
    conn = raw()
    conn.send(b"HELLO 3\r\nINFO server\r\n")
    assert conn.read_reply().startswith(b"%7\r\n")
    assert conn.read_reply().startswith(b"=")  # RESP3 verbatim string, as Redis


def test_peak_memory_is_a_stat_that_info_reads(make_server):
    """used_memory_peak keeps the high-water mark after a delete, CONFIG RESETSTAT restarts
    it from what is used now, and INFO writes nothing into the keyspace."""
    import redis
    s = make_server()
    r = redis.Redis(port=s.port, protocol=2)
    r.set("big", "x" * 200_000)
    high = r.info("memory")["used_memory_peak"]
    assert high >= 200_000
    r.delete("big")
    mem = r.info("memory")
    assert mem["used_memory_peak"] == high > mem["used_memory"]
    r.config_resetstat()
    assert r.info("memory")["used_memory_peak"] < high
    assert not hasattr(s.server.ks, "peak_memory")


def test_memory_fields_keep_redis_arithmetic(r):
    """What dashboards compute from INFO memory holds here (docs/info-fields.md): startup
    <= used, dataset + overhead = used, fragmentation = rss / (used + baseline) with the
    baseline the process's RSS when the server became ready."""
    def check():
        m = r.info("memory")
        assert 0 == m["used_memory_startup"] <= m["used_memory"]
        assert m["used_memory_dataset"] + m["used_memory_overhead"] == m["used_memory"]
        assert m["rss_baseline"] > 0 and m["total_system_memory"] > m["rss_baseline"]
        ratio = m["used_memory_rss"] / (m["used_memory"] + m["rss_baseline"])
        assert m["mem_fragmentation_ratio"] == pytest.approx(ratio, abs=0.02)
        assert m["mem_fragmentation_bytes"] == pytest.approx(
            m["used_memory_rss"] - m["used_memory"] - m["rss_baseline"], abs=1 << 20)
        return m
    empty = check()
    assert empty["used_memory_dataset"] == empty["used_memory_overhead"] == 0
    r.mset({"k%d" % i: "v" * 100 for i in range(2000)})
    for i in range(0, 2000, 2):
        r.expire("k%d" % i, 100)
    full = check()
    assert full["used_memory_overhead"] > 0 and full["used_memory_dataset"] > 0
    assert float(full["used_memory_dataset_perc"].rstrip("%")) == pytest.approx(
        100 * full["used_memory_dataset"] / full["used_memory"], abs=0.01)
