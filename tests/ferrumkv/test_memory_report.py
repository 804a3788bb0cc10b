"""MEMORY STATS / DOCTOR / MALLOC-STATS / PURGE / HELP and USAGE's SAMPLES option
(commands/memory_report.py, introspection.py), with redis-server's shapes and texts."""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py.commands import memory_report

from .conftest import err


def _stats(client) -> dict:
    raw = client.execute_command("MEMORY", "STATS")
    if isinstance(raw, list):
        raw = dict(zip(raw[::2], raw[1::2]))
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in raw.items()}


def test_memory_stats_fields_and_model(r2):
    empty = _stats(r2)
    assert "db.0" not in empty and empty["keys.count"] == 0
    r2.set("a", "x" * 100)
    r2.set("b", "y", ex=100)
    s = _stats(r2)
    info = r2.info("memory")
    assert s["total.allocated"] == info["used_memory"]
    assert s["startup.allocated"] == info["used_memory_startup"]
    assert s["keys.count"] == 2 and s["keys.bytes-per-key"] == info["used_memory"] // 2
    db0 = dict(zip(s["db.0"][::2], s["db.0"][1::2]))
    assert db0[b"overhead.hashtable.expires"] > 0 and db0[b"overhead.hashtable.main"] > 0
    assert 0 < float(s["dataset.percentage"]) <= 100
    assert s["dataset.bytes"] + db0[b"overhead.hashtable.main"] + \
        db0[b"overhead.hashtable.expires"] + s["clients.normal"] == s["total.allocated"]


def test_memory_stats_resp3_types(r):
    r.set("k", "v")
    s = r.execute_command("MEMORY", "STATS")
    assert isinstance(s[b"dataset.percentage"], float)
    assert isinstance(s[b"db.0"], dict) and isinstance(s[b"keys.count"], int)


@pytest.mark.needs_redis
def test_memory_stats_names_match_redis_server(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        theirs.set("h18:k", "v")
        r2.set("h18:k", "v")
        def names(client):          # db.N entries depend on what other tests left there
            return [k for k in _stats(client) if not k.startswith("db.") or k == "db.0"]
        assert names(r2) == names(theirs)
        for c in (r2, theirs):
            assert err(c, "MEMORY", "STATS", "x") == \
                "wrong number of arguments for 'memory|stats' command"
            assert err(c, "MEMORY", "USAGE", "h18:k", "SAMPLES", "-1") == "syntax error"
            assert err(c, "MEMORY", "USAGE", "h18:k", "SAMPLES", "x") == \
                "value is not an integer or out of range"
            assert err(c, "MEMORY", "USAGE", "h18:k", "SAMPLES") == "syntax error"
            assert c.execute_command("MEMORY", "USAGE", "h18:k", "SAMPLES", "0") > 0
            assert c.execute_command("MEMORY", "USAGE", "nokey", "samples", "5") is None
            assert c.execute_command("MEMORY", "PURGE") == b"OK"
        assert r2.execute_command("MEMORY", "HELP") == theirs.execute_command("MEMORY", "HELP")
        assert r2.execute_command("MEMORY", "DOCTOR") == memory_report.EMPTY_REPORT.encode()
        report = theirs.execute_command("MEMORY", "DOCTOR").decode()   # (shared server)
        assert report in (memory_report.EMPTY_REPORT, memory_report.HEALTHY_REPORT) or (
            report.startswith(memory_report.ISSUES_HEAD)
            and report.endswith(memory_report.ISSUES_TAIL))
        theirs.delete("h18:k")
    finally:
        theirs.close()


@pytest.mark.needs_redis
def test_memory_doctor_of_a_fresh_server_matches_redis(make_server):
    """Both fresh and small: the "empty" report.  (Fresh servers: a shared one's past peak,
    left by other tests, makes Redis report the peak instead.)"""
    from tests.conftest import run_redis_server
    gen = run_redis_server()
    port = next(gen)
    try:
        theirs = redis.Redis(port=port, protocol=2)
        ours = redis.Redis(port=make_server().port, protocol=2)
        assert ours.execute_command("MEMORY", "DOCTOR") == theirs.execute_command(
            "MEMORY", "DOCTOR")
        theirs.close()
        ours.close()
    finally:
        gen.close()


def test_doctor_rules(server, monkeypatch):
    base = {"peak": 0, "used": 64 << 20, "startup": 0, "clients": 0, "dbs": [],
            "overhead": 0, "keys": 1, "per_key": 0, "dataset": 0, "dataset_perc": 0.0,
            "peak_perc": 0.0, "rss": 64 << 20, "frag": 1.0, "frag_bytes": 0, "scripts": 0}
    cases = [({}, memory_report.HEALTHY_REPORT),
             ({"used": 1024, "rss": 0}, memory_report.EMPTY_REPORT),
             ({"peak": 200 << 20}, memory_report.PEAK_ISSUE),
             ({"frag": 2.0, "frag_bytes": 50 << 20}, memory_report.FRAG_ISSUE),
             ({"scripts": 1001}, memory_report.SCRIPTS_ISSUE)]
    for change, text in cases:
        monkeypatch.setattr(memory_report, "overhead", lambda s, c=change: {**base, **c})
        report = memory_report.doctor_report(server.server)
        assert text in report, change
        if text not in (memory_report.HEALTHY_REPORT, memory_report.EMPTY_REPORT):
            assert report.startswith(memory_report.ISSUES_HEAD)
            assert report.endswith(memory_report.ISSUES_TAIL)
        assert "Jemalloc" not in report        # advice this server can follow (issue 32)


def test_malloc_stats_and_purge(r2):
    text = r2.execute_command("MEMORY", "MALLOC-STATS").decode()
    assert text.startswith("___ Begin pymalloc statistics ___")
    assert "allocated blocks:" in text and text.endswith("___ End pymalloc statistics ___\n")
    assert r2.execute_command("MEMORY", "PURGE") == b"OK"
