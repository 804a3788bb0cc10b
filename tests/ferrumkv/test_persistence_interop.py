"""RDB files both ways with Debian's redis-server 7.0.15 (persistence/, docs/persistence.md):
our SAVE passes ``redis-check-rdb`` and redis-server loads it with the same DEBUG DIGEST;
we start from redis-server's SAVE with the same digest.  The keyspace holds every type at
each encoding size Redis 7.0 writes (int / short / long / LZF strings; lists of one and of
many quicklist nodes; listpack and hashtable hashes; intset and hashtable sets; listpack
and skiplist sorted sets with special scores), TTLs, and keys in all 16 databases.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time

import pytest
import redis

from tests.conftest import ServerThread, run_redis_server

pytestmark = pytest.mark.needs_redis

LOAD_WAIT_S = 30


def populate(r: redis.Redis) -> None:
    rng = random.Random(28)
    for db in range(16):
        c = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=db)
        c.set("db", db)
        c.close()
    r.set("int", "12345")
    r.set("neg", "-9000000000")
    r.set("short", "hello")
    r.set("raw", "r" * 60)
    r.set("lzf", "abc" * 400)
    r.set("random", bytes(rng.getrandbits(8) for _ in range(300)))
    r.set("empty", "")
    r.set("ttl", "v", px=500_000)
    r.rpush("list:small", "a", "1", "-5", "x" * 70)
    r.rpush("list:nodes", *[("e%d" % i) * 30 for i in range(2000)])
    r.rpush("list:ints", *range(-300, 300))
    r.expire("list:small", 1000)
    r.hset("hash:lp", mapping={"f1": "v1", "f2": "22", "n": "-3"})
    r.hset("hash:longval", mapping={"f": "v" * 100})
    r.hset("hash:many", mapping={"f%d" % i: "v%d" % i for i in range(600)})
    r.sadd("set:intset", 1, 2, 3, -70000, 2 ** 40)
    r.sadd("set:bigints", *range(700))
    r.sadd("set:str", "a", "b", "c")
    r.zadd("z:lp", {"a": 1, "b": 2.5, "c": -3.25, "inf": float("inf"),
                    "ninf": float("-inf"), "big": 1e300})
    r.zadd("z:skip", {"m%d" % i: i / 7 for i in range(300)})
    r.zadd("z:longmember", {"m" * 80: 1})
    r.pexpire("z:skip", 800_000)
    r.pfadd("hll", *["e%d" % i for i in range(100)])
    r.setbit("bits", 1000, 1)


def digest(port: int) -> bytes:
    c = redis.Redis(port=port)
    try:
        return c.execute_command("DEBUG", "DIGEST")
    finally:
        c.close()


def wait_loaded(port: int) -> None:
    c = redis.Redis(port=port)
    deadline = time.monotonic() + LOAD_WAIT_S
    try:
        while c.info("persistence")["loading"]:
            assert time.monotonic() < deadline, "still loading"
            time.sleep(0.05)
    finally:
        c.close()


def check_rdb(path: str) -> str:
    exe = shutil.which("redis-check-rdb")
    if exe is None:
        pytest.skip("redis-check-rdb not installed")
    out = subprocess.run([exe, path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_our_file_loads_in_redis_server_and_back(tmp_path):
    ours_dir = tmp_path / "ours"
    ours_dir.mkdir()
    s = ServerThread(dir=str(ours_dir), enable_debug_command="yes")
    try:
        r = redis.Redis(port=s.port)
        populate(r)
        want = digest(s.port)
        assert r.save() is True
        r.close()
    finally:
        s.stop()
    report = check_rdb(str(ours_dir / "dump.rdb"))
    assert "RDB looks OK" in report and "Checksum OK" in report

    gen = run_redis_server("--dir", str(ours_dir), "--enable-debug-command", "yes")
    port = next(gen)
    try:
        wait_loaded(port)
        assert digest(port) == want
        c = redis.Redis(port=port)
        assert 499_000 < c.pttl("ttl") <= 500_000
        assert c.object("encoding", "hash:lp") == b"listpack"
        assert c.object("encoding", "set:intset") == b"intset"
        assert c.object("encoding", "z:skip") == b"skiplist"
        total = sum(v["keys"] for k, v in c.info("keyspace").items())
        # and redis-server's own SAVE of the same data (over our file) comes back to us
        before = os.stat(ours_dir / "dump.rdb").st_ino
        assert c.save() is True
        assert os.stat(ours_dir / "dump.rdb").st_ino != before     # a new file
        c.close()
    finally:
        gen.close()

    s = ServerThread(dir=str(ours_dir), enable_debug_command="yes")
    try:
        wait_loaded(s.port)
        assert digest(s.port) == want
        info = redis.Redis(port=s.port).info("persistence")
        assert info["rdb_last_load_keys_loaded"] == total == 16 + 22
    finally:
        s.stop()


def test_bgsave_file_without_checksum(tmp_path):
    s = ServerThread(dir=str(tmp_path), enable_debug_command="yes", rdbchecksum="no")
    try:
        r = redis.Redis(port=s.port)
        populate(r)
        want = digest(s.port)
        assert r.bgsave() is True
        deadline = time.monotonic() + LOAD_WAIT_S
        while r.info("persistence")["rdb_bgsave_in_progress"]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert r.info("persistence")["rdb_last_bgsave_status"] == "ok"
    finally:
        s.stop()
    with open(tmp_path / "dump.rdb", "rb") as f:
        assert f.read()[-8:] == bytes(8)           # rdbchecksum no: a zero CRC
    check_rdb(str(tmp_path / "dump.rdb"))
    gen = run_redis_server("--dir", str(tmp_path), "--enable-debug-command", "yes")
    port = next(gen)
    try:
        wait_loaded(port)
        assert digest(port) == want
    finally:
        gen.close()


def test_lfu_counters_and_idle_times_survive(tmp_path):
    s = ServerThread(dir=str(tmp_path), maxmemory_policy="allkeys-lfu")
    try:
        r = redis.Redis(port=s.port)
        r.set("hot", "v")
        r.set("cold", "v")
        for _ in range(200):
            r.get("hot")
        freq = r.object("freq", "hot")
        assert freq > r.object("freq", "cold")
        r.save()
    finally:
        s.stop()
    gen = run_redis_server("--dir", str(tmp_path), "--maxmemory-policy", "allkeys-lfu")
    port = next(gen)
    try:
        wait_loaded(port)
        c = redis.Redis(port=port)
        assert c.object("freq", "hot") == freq
    finally:
        gen.close()
    s = ServerThread(dir=str(tmp_path), maxmemory_policy="allkeys-lfu")
    try:
        wait_loaded(s.port)
        assert redis.Redis(port=s.port).object("freq", "hot") == freq
    finally:
        s.stop()


def test_streams_cross_in_rdb_files_both_ways(tmp_path):
    """A stream with a consumer group and a pending entry: redis-server's SAVE loads here,
    our SAVE loads in redis-server, DEBUG DIGEST and XINFO STREAM FULL equal both ways."""
    theirs_dir = tmp_path
    gen = run_redis_server("--dir", str(theirs_dir), "--enable-debug-command", "yes")
    port = next(gen)
    try:
        c = redis.Redis(port=port)
        c.set("plain", "v")
        for i in range(1, 6):
            c.xadd("events", {"a": str(i)}, id="%d-0" % i)
        c.xgroup_create("events", "g", id="0")
        c.xreadgroup("g", "alice", {"events": ">"}, count=2)
        c.xdel("events", "4-0")
        digest = c.execute_command("DEBUG", "DIGEST")
        info = c.xinfo_stream("events", full=True)
        c.save()
    finally:
        gen.close()
    s = ServerThread(dir=str(theirs_dir), enable_debug_command="yes")
    try:
        deadline = time.monotonic() + LOAD_WAIT_S
        r = redis.Redis(port=s.port)
        while r.info("persistence")["loading"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert r.execute_command("DEBUG", "DIGEST") == digest
        mine = r.xinfo_stream("events", full=True)
        for k in ("length", "entries", "last-generated-id", "max-deleted-entry-id",
                  "entries-added"):
            assert mine[k] == info[k], k
        os.remove(theirs_dir / "dump.rdb")
        r.save()                                    # ours, where redis-server's was
    finally:
        s.stop()
    gen = run_redis_server("--dir", str(theirs_dir), "--enable-debug-command", "yes")
    port = next(gen)
    try:
        c = redis.Redis(port=port)
        assert c.execute_command("DEBUG", "DIGEST") == digest
        assert c.xpending("events", "g")["pending"] == 2
    finally:
        gen.close()


LIB = ("#!lua name=persisted\n"
       "redis.register_function('echo1', function(keys, args) return args[1] end)")


def test_function_libraries_travel_as_function2_records(tmp_path):
    s = ServerThread(dir=str(tmp_path))
    try:
        r = redis.Redis(port=s.port)
        assert r.function_load(LIB) == b"persisted"
        r.save()
    finally:
        s.stop()
    assert "function" in check_rdb(str(tmp_path / "dump.rdb")).lower()
    gen = run_redis_server("--dir", str(tmp_path))
    port = next(gen)
    try:
        wait_loaded(port)
        c = redis.Redis(port=port)
        assert c.fcall("echo1", 0, "hi") == b"hi"
        c.save()                                  # redis-server's FUNCTION2 record
    finally:
        gen.close()
    s = ServerThread(dir=str(tmp_path))
    try:
        wait_loaded(s.port)
        assert redis.Redis(port=s.port).fcall("echo1", 0, "back") == b"back"
    finally:
        s.stop()
