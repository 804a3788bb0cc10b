"""SAVE / BGSAVE / LASTSAVE / SHUTDOWN / -MISCONF / -LOADING through redis-py and real
processes (persistence/saver.py, commands/persistence.py).  Crash tests kill -9 a server
during BGSAVE and check the previous file is intact; a corrupted file refuses to start."""

from __future__ import annotations

import datetime
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.conftest import ServerThread, free_port
from tests.ferrumkv.conftest import err

ROOT = pathlib.Path(__file__).resolve().parents[2]
WAIT_S = 60          # hang guards only


def wait_bgsave(r: redis.Redis) -> dict:
    deadline = time.monotonic() + WAIT_S
    while True:
        info = r.info("persistence")
        if not info["rdb_bgsave_in_progress"]:
            return info
        assert time.monotonic() < deadline
        time.sleep(0.01)


def wait_loaded(r: redis.Redis) -> None:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            if not r.info("persistence")["loading"]:
                return
        except redis.ConnectionError:
            pass
        assert time.monotonic() < deadline
        time.sleep(0.02)


# ---- redis-py's own tests (test_commands.py) and the commands' replies ----

def test_redis_py_lastsave_and_bgsave(r):
    assert isinstance(r.lastsave(), datetime.datetime)
    assert r.bgsave()
    wait_bgsave(r)
    assert r.bgsave(True)                   # BGSAVE SCHEDULE, nothing running: started
    wait_bgsave(r)


def test_save_bgsave_lastsave_info(server, r):
    before = r.info("persistence")
    assert before["rdb_saves"] == 0 and before["rdb_bgsave_in_progress"] == 0
    for k in ("loading", "async_loading", "current_cow_peak", "current_cow_size",
              "current_fork_perc", "current_save_keys_processed", "current_save_keys_total",
              "rdb_changes_since_last_save", "rdb_last_save_time", "rdb_last_bgsave_status",
              "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_last_cow_size",
              "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded", "aof_enabled",
              "aof_rewrite_in_progress", "aof_last_write_status", "module_fork_in_progress"):
        assert k in before, k
    r.set("a", 1)
    r.set("b", 2)
    assert r.info("persistence")["rdb_changes_since_last_save"] == 2
    assert r.save() is True
    info = r.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] == 1
    assert info["rdb_last_save_time"] == int(r.lastsave().timestamp())
    assert os.path.exists(os.path.join(server.server.config["dir"], "dump.rdb"))
    assert "syntax error" in err(r, "BGSAVE", "NOW")
    assert "wrong number" in err(r, "SAVE", "x")
    p = r.pipeline(transaction=True)
    p.bgsave()
    assert p.execute() == [b"Background saving scheduled"]   # inside EXEC: the cron's job
    server.call(server.server.persistence.cron)
    wait_bgsave(r)
    assert r.info("persistence")["rdb_saves"] == 2


def test_bgsave_keeps_the_cut_through_a_flushall(make_server):
    s = make_server(enable_debug_command="yes")
    r = redis.Redis(port=s.port)
    r.execute_command("DEBUG", "POPULATE", "50000", "key", "50")
    r.rpush("list", *range(1000))
    want = r.execute_command("DEBUG", "DIGEST")
    assert r.bgsave()
    r.lpush("list", "after")                # in-place change of a key the walk may not
    r.flushall()                            # have reached; then every key goes
    r.set("new", "after the cut")
    info = wait_bgsave(r)
    assert info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_last_cow_size"] > 0
    assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert r.execute_command("DEBUG", "DIGEST") == want


def test_misconf_after_a_failed_bgsave(tmp_path):
    d = tmp_path / "gone"
    d.mkdir()
    s = ServerThread(dir=str(d))
    try:
        r = redis.Redis(port=s.port)
        r.config_set("save", "3600 1")
        shutil.rmtree(d)                      # the temp file cannot be created
        assert "Error saving DB on disk" in err(r, "BGSAVE")
        assert r.info("persistence")["rdb_last_bgsave_status"] == "err"
        assert err(r, "SET", "k", "v").startswith("MISCONF Redis is configured to save RDB")
        assert err(r, "PING").startswith("MISCONF")             # as Redis 7.0
        assert r.get("k") is None                                # reads are served
        r.config_set("stop-writes-on-bgsave-error", "no")
        assert r.set("k", "v") is True
        r.config_set("stop-writes-on-bgsave-error", "yes")
        assert err(r, "SET", "k", "v").startswith("MISCONF")
        d.mkdir()                                                # space is back
        assert r.bgsave()
        assert wait_bgsave(r)["rdb_last_bgsave_status"] == "ok"
        assert r.set("k", "v2") is True and r.ping() is True
    finally:
        s.stop()


def test_loading_answers_loading(server):
    p = server.server.persistence
    # redis-py retries on -LOADING by default: this client reports the first answer
    r = redis.Redis(port=server.port, retry=Retry(NoBackoff(), 0))

    def gate(on):
        p.loading = on
        server.server.persistence_gate_changed()
    server.call(gate, True)
    try:
        for cmd in (("GET", "k"), ("SET", "k", "v"), ("PING",)):
            with pytest.raises(redis.BusyLoadingError,
                               match="^Redis is loading the dataset in memory$"):
                r.execute_command(*cmd)         # redis-py maps -LOADING to this class
        assert r.info("persistence")["loading"] == 1              # INFO has "loading"
        assert isinstance(r.lastsave(), datetime.datetime)
    finally:
        server.call(gate, False)
    assert r.set("k", "v") is True


# ---- real processes: SHUTDOWN, SIGTERM, kill -9, a corrupted file ----

class Proc:
    def __init__(self, d, *args):
        self.port = free_port()
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ferrumkv_py", "--port", str(self.port), "--dir", str(d),
             "--enable-debug-command", "yes", *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.r = redis.Redis(port=self.port, socket_timeout=WAIT_S)   # SAVE of 100k keys
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                self.r.info("persistence")
                break
            except redis.ConnectionError:
                if self.p.poll() is not None:
                    return                    # exited: the caller looks at why
                assert time.monotonic() < deadline
                time.sleep(0.05)
        wait_loaded(self.r)

    def wait(self) -> tuple:
        out, errs = self.p.communicate(timeout=WAIT_S)
        return self.p.returncode, errs.decode()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.communicate(timeout=WAIT_S)


def test_shutdown_saves_and_the_restart_loads(tmp_path):
    a = Proc(tmp_path)                        # the default save rules
    try:
        a.r.set("k", "v")
        a.r.rpush("l", 1, 2, 3)
        a.r.set("t", "x", px=600_000)
        want = a.r.execute_command("DEBUG", "DIGEST")
        a.r.shutdown()
        code, log = a.wait()
        assert code == 0 and "Saving the final RDB snapshot" in log
        assert "Data is saved to %s" % (tmp_path / "dump.rdb") in log
    finally:
        a.kill()
    b = Proc(tmp_path)
    try:
        assert b.r.execute_command("DEBUG", "DIGEST") == want
        assert 0 < b.r.pttl("t") <= 600_000
        b.r.set("after", "1")
        b.p.send_signal(signal.SIGTERM)       # SIGTERM saves too
        code, log = b.wait()
        assert code == 0 and "DB saved on disk" in log
    finally:
        b.kill()
    c = Proc(tmp_path, "--save", "")
    try:
        assert c.r.get("after") == b"1"
        c.r.set("lost", "1")
        c.r.shutdown()                    # no save rules: nothing saved
        c.wait()
    finally:
        c.kill()
    d = Proc(tmp_path, "--save", "")
    try:
        assert d.r.get("lost") is None and d.r.get("after") == b"1"
        d.r.set("saved", "1")
        d.r.shutdown(save=True)           # SHUTDOWN SAVE forces it
        d.wait()
    finally:
        d.kill()
    e = Proc(tmp_path, "--save", "")
    try:
        assert e.r.get("saved") == b"1"
        e.r.shutdown(nosave=True)
        e.wait()
    finally:
        e.kill()


def test_a_failed_save_aborts_shutdown_unless_force(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    a = Proc(d)
    try:
        a.r.set("k", "v")
        shutil.rmtree(d)
        assert err(a.r, "SHUTDOWN") == "Errors trying to SHUTDOWN. Check logs."
        assert a.r.get("k") == b"v"                     # still serving
        a.r.shutdown(force=True)
        code, log = a.wait()
        assert code == 0 and "Error trying to save the DB, can't exit" in log
    finally:
        a.kill()


def test_kill_9_during_bgsave_leaves_the_previous_file(tmp_path):
    a = Proc(tmp_path, "--save", "")
    try:
        a.r.execute_command("DEBUG", "POPULATE", "100000", "key", "100")
        assert a.r.save() is True
        old = (tmp_path / "dump.rdb").read_bytes()
        a.r.set("changed", "1")
        assert a.r.bgsave()
        running = a.r.info("persistence")["rdb_bgsave_in_progress"]
    finally:
        a.p.send_signal(signal.SIGKILL)
        a.wait()
    now = (tmp_path / "dump.rdb").read_bytes()
    if running:
        assert now == old                    # the walk had not finished: untouched
    out = subprocess.run(["redis-check-rdb", str(tmp_path / "dump.rdb")],
                         capture_output=True, text=True, timeout=WAIT_S) \
        if shutil.which("redis-check-rdb") else None
    assert out is None or out.returncode == 0, out.stdout
    b = Proc(tmp_path, "--save", "")
    try:
        assert b.r.dbsize() in (100000, 100001)
    finally:
        b.kill()


VALUE = bytes(range(100))      # no repeats: stored as it is, not LZF-compressed


def test_a_corrupted_file_refuses_to_start(tmp_path):
    a = Proc(tmp_path, "--save", "")
    try:
        a.r.set("k", VALUE)
        a.r.save()
    finally:
        a.kill()
    path = tmp_path / "dump.rdb"
    data = bytearray(path.read_bytes())
    data[data.index(VALUE) + 50] ^= 0xFF        # inside the (uncompressible) value
    path.write_bytes(bytes(data))
    b = Proc(tmp_path, "--save", "")
    code, log = b.wait()
    assert code == 1
    assert "Fatal error loading the DB" in log and "checksum" in log.lower()
    path.write_bytes(bytes(data[:40]))          # truncated
    c = Proc(tmp_path, "--save", "")
    code, log = c.wait()
    assert code == 1 and "Short read or corrupt RDB file" in log


def test_ahe_alpha_survives_a_reload(make_server):
    s = make_server(enable_debug_command="yes", maxmemory="100mb",
                    maxmemory_policy="allkeys-ahe")
    r = redis.Redis(port=s.port)
    r.set("k", "v")
    ctl = s.server.evictor.controller
    s.call(setattr, ctl, "theta", 1.25)
    assert r.save() is True
    s.call(setattr, ctl, "theta", -2.0)
    assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert s.call(getattr, ctl, "theta") == 1.25
    with open(os.path.join(s.server.config["dir"], "dump.rdb"), "rb") as f:
        assert b"ferrumkv-ahe-theta" in f.read()


def test_shutdown_while_loading_does_not_save(make_server):
    s = make_server(save="3600 1")
    p = s.server.persistence

    def loading_shutdown():
        p.loading = True              # as while the file loads: nothing must be written
        return p.shutdown_save(True, False)
    assert s.call(loading_shutdown) is True
    assert not os.path.exists(os.path.join(s.server.config["dir"], "dump.rdb"))
    s.call(setattr, p, "loading", False)


WRITES = [
    ("LPUSH", "l{i}", "x"), ("RPOP", "l{i}"), ("LSET", "l{i}", "0", "y"), ("LTRIM", "l{i}", "1", "-1"),
    ("HSET", "h{i}", "f0", "new"), ("HDEL", "h{i}", "f1"), ("HINCRBY", "h{i}", "n", "3"),
    ("SADD", "s{i}", "m-new"), ("SREM", "s{i}", "m0"), ("SPOP", "s{i}"),
    ("ZADD", "z{i}", "7", "zz"), ("ZINCRBY", "z{i}", "2", "z0"), ("ZREM", "z{i}", "z1"),
    ("ZPOPMIN", "z{i}"), ("INCR", "n{i}"), ("APPEND", "k{i}", "+"), ("SETRANGE", "k{i}", "2", "ab"),
    ("SETBIT", "k{i}", "3", "1"), ("PFADD", "p{i}", "e-new"), ("EXPIRE", "k{i}", "5000"),
    ("PERSIST", "t{i}"), ("DEL", "k{i}"), ("UNLINK", "h{i}"), ("RENAME", "s{i}", "ren{i}"),
    ("MOVE", "z{i}", "1"), ("COPY", "l{i}", "cp{i}"), ("LMOVE", "l{i}", "l{j}", "LEFT", "RIGHT"),
    ("SINTERSTORE", "s{j}", "s{i}", "s{j}"), ("ZUNIONSTORE", "z{j}", "2", "z{i}", "z{j}"),
    ("GETDEL", "n{i}"), ("GETEX", "t{i}", "PERSIST"), ("SORT", "l{i}", "ALPHA", "STORE", "l{j}"),
    ("MSET", "k{i}", "m1", "k{j}", "m2"), ("SET", "k{i}", "plain"),
    ("EVAL", "redis.call('RPUSH', KEYS[1], 'lua') return 1", "1", "l{i}"),
    ("SWAPDB", "0", "1"), ("HSETNX", "h{i}", "g", "v"), ("SMOVE", "s{i}", "s{j}", "m2"),
]


def test_bgsave_keeps_the_cut_through_every_kind_of_write(make_server, monkeypatch):
    """A walk slowed to a few keys per slice, and a burst of writes of every family (in
    place, deletes, renames, moves, stores, scripts, SWAPDB) sent right after BGSAVE: the
    file holds the data set as it was at the cut (DEBUG DIGEST before the BGSAVE equals
    the digest after loading the file).  A command that changed a key without the hook
    would show here."""
    from ferrumkv_py.persistence import saver, snapshot
    monkeypatch.setattr(saver, "SLICE_BUDGET_NS", 1)          # a slice: one clock read ...
    monkeypatch.setattr(snapshot, "SLICE_KEYS_PER_CLOCK", 1)  # ... after one slot
    s = make_server(enable_debug_command="yes")
    r = redis.Redis(port=s.port)
    n = 60
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.rpush("l%d" % i, *range(i % 7 + 1))
        p.hset("h%d" % i, mapping={"f0": 1, "f1": 2, "n": 5})
        p.sadd("s%d" % i, "m0", "m1", "m2", i)
        p.zadd("z%d" % i, {"z0": 1, "z1": 2, "z2": i})
        p.set("k%d" % i, "value%d" % i)
        p.set("n%d" % i, i)
        p.set("t%d" % i, "ttl", px=10_000_000)
        p.pfadd("p%d" % i, "a", "b")
    p.execute()
    want = r.execute_command("DEBUG", "DIGEST")
    p = r.pipeline(transaction=False)
    p.bgsave()                  # the cut, then the first writes in the same read
    for round_ in range(3):
        for i in range(n):
            j = (i * 7 + round_) % n
            for cmd in WRITES:
                p.execute_command(*[a.format(i=i, j=j) for a in cmd])
    p.execute(raise_on_error=False)
    info = wait_bgsave(r)
    assert info["rdb_last_bgsave_status"] == "ok"
    assert r.execute_command("DEBUG", "DIGEST") != want     # the writes did change things
    assert r.execute_command("DEBUG", "RELOAD", "NOSAVE") == b"OK"
    assert r.execute_command("DEBUG", "DIGEST") == want


def test_sigterm_during_a_bgsave_abandons_it_and_saves(tmp_path):
    """SIGTERM while a BGSAVE walks: the background save is abandoned (Redis kills its
    child), the final save is made and the restart loads it, a stream included (after the
    merge of streams and persistence this raised in the signal handler and the server
    kept running)."""
    a = Proc(tmp_path)
    try:
        pipe = a.r.pipeline(transaction=False)
        for i in range(200_000):            # a walk that lasts past the signal
            pipe.set("k%d" % i, "v" * 20)
        pipe.execute()
        a.r.xadd("events", {"f": "v"}, id="1-0")
        want = a.r.execute_command("DEBUG", "DIGEST")
        assert a.r.bgsave()
        a.p.send_signal(signal.SIGTERM)
        code, log = a.wait()
        assert code == 0 and "Killing it!" in log and "DB saved on disk" in log, log
    finally:
        a.kill()
    b = Proc(tmp_path, "--save", "")
    try:
        assert b.r.execute_command("DEBUG", "DIGEST") == want
        assert b.r.xlen("events") == 1
    finally:
        b.kill()
