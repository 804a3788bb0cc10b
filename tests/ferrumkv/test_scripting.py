"""EVAL / EVALSHA / SCRIPT end to end: redis-py's Lock and scripts, raw bytes, busy scripts,
SCRIPT KILL, read-only and OOM rules, the sandbox."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from tests.conftest import RawConn
from tests.conftest import command_frame as cmd
from tests.ferrumkv.script_util import call_in_thread, send_until


# ---- redis-py: Lock, register_script, pipelines ----

def test_lock_acquire_extend_reacquire_release(r2):
    lock = r2.lock("lk", timeout=10)
    assert lock.acquire(blocking=False)
    assert 9000 < r2.pttl("lk") <= 10000
    assert lock.extend(20)
    assert 20000 < r2.pttl("lk") <= 30000
    assert lock.reacquire()
    assert 9000 < r2.pttl("lk") <= 10000
    lock.release()
    assert r2.exists("lk") == 0
    lock.local.token = b"stale"       # the server-side script checks the token
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lock.release()


def test_lock_contention_between_clients(server):
    a = redis.Redis(port=server.port)
    b = redis.Redis(port=server.port)
    la, lb = a.lock("res", timeout=5), b.lock("res", timeout=5)
    assert la.acquire(blocking=False)
    assert not lb.acquire(blocking=False)
    lb.local.token = b"not-the-owner"
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lb.release()            # b does not own it: the release script refuses
    lb.local.token = b"not-the-owner"
    with pytest.raises(redis.exceptions.LockNotOwnedError):
        lb.extend(5)
    lb.local.token = None
    assert la.owned() and not lb.owned()
    la.release()
    assert lb.acquire(blocking=False)
    lb.release()
    a.close()
    b.close()


def test_lock_blocking_acquire_waits_for_release(server):
    a = redis.Redis(port=server.port)
    b = redis.Redis(port=server.port)
    la = a.lock("blk", timeout=10)
    assert la.acquire()
    got = []

    def waiter():
        lb = b.lock("blk", timeout=10, blocking_timeout=10, sleep=0.01)
        got.append(lb.acquire())
        lb.release()
    t = threading.Thread(target=waiter)
    t.start()
    time.sleep(0.1)
    assert not got          # still waiting while a holds the lock
    la.release()
    t.join(10)
    assert got == [True]
    a.close()
    b.close()


def test_register_script_and_pipeline(r2):
    incr_by = r2.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert incr_by(keys=["n"], args=[5]) == 5
    r2.script_flush()
    assert incr_by(keys=["n"], args=[2]) == 7   # NOSCRIPT -> redis-py loads it again
    r2.script_flush()
    pipe = r2.pipeline()
    incr_by(keys=["n"], args=[1], client=pipe)
    pipe.get("n")
    incr_by(keys=["m"], args=[3], client=pipe)
    assert pipe.execute() == [8, b"8", 3]


def test_resp3_client(r):
    assert r.eval("return {1, 'a', {ok='s'}, false}", 0) == [1, b"a", b"s", None]
    assert r.eval("redis.setresp(3) return {double=1.5}", 0) == 1.5
    assert r.eval("redis.setresp(3) return {map={a=1}}", 0) == {b"a": 1}
    assert r.eval("redis.setresp(3) return {set={x=true}}", 0) == [b"x"]
    assert r.eval("redis.setresp(3) return true", 0) is True


# ---- raw bytes ----

def test_raw_replies(raw):
    c = raw()
    c.send(cmd("EVAL", "return {1, 'two', {3}, nil, 5}", 0))
    assert c.read_reply() == b"*3\r\n:1\r\n$3\r\ntwo\r\n*1\r\n:3\r\n"
    c.send(cmd("EVAL", "return redis.call('get', KEYS[1])", 1, "nokey"))
    assert c.read_reply() == b"$-1\r\n"
    c.send(cmd("SCRIPT", "LOAD", "return ARGV[1]"))
    sha = c.read_reply().split(b"\r\n")[1]
    c.send(cmd("EVALSHA", sha, 0, "x") + cmd("EVALSHA", sha.upper(), 0, "y"))
    assert c.read_reply() == b"$1\r\nx\r\n"
    assert c.read_reply() == b"$1\r\ny\r\n"
    c.send(cmd("EVALSHA", "0" * 40, 0))
    assert c.read_reply() == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"


def test_select_inside_script_keeps_caller_db(r2):
    r2.set("k", "db0")
    assert r2.eval("redis.call('select', 1) redis.call('set', 'k', 'db1') "
                   "return redis.call('get', 'k')", 0) == b"db1"
    assert r2.get("k") == b"db0"
    r2.execute_command("SELECT", 1)
    assert r2.get("k") == b"db1"


def test_script_in_multi_and_watch(r2):
    pipe = r2.pipeline(transaction=True)
    pipe.eval("return redis.call('incr', KEYS[1])", 1, "ctr")
    pipe.eval("return redis.call('incr', KEYS[1])", 1, "ctr")
    assert pipe.execute() == [1, 2]
    # a script's write invalidates another client's WATCH
    other = redis.Redis(port=r2.connection_pool.connection_kwargs["port"])
    with other.pipeline() as p:
        p.watch("ctr")
        r2.eval("return redis.call('set', KEYS[1], 'x')", 1, "ctr")
        p.multi()
        p.get("ctr")
        with pytest.raises(redis.WatchError):
            p.execute()
    other.close()


def test_script_flush_and_exists(r2):
    sha = r2.script_load("return 1")
    assert r2.script_exists(sha, "0" * 40) == [True, False]
    assert r2.script_flush("ASYNC")
    assert r2.script_exists(sha) == [False]
    with pytest.raises(redis.exceptions.NoScriptError):
        r2.evalsha(sha, 0)


def test_read_only_rules(r2):
    with pytest.raises(redis.ResponseError, match="Write commands are not allowed from "
                                                  "read-only scripts"):
        r2.eval_ro("return redis.call('set', 'a', 'b')", 0)
    assert r2.eval_ro("#!lua flags=no-writes\nreturn redis.call('get', 'a')", 0) is None
    with pytest.raises(redis.ResponseError, match=r"Can not execute a script with write "
                                                  r"flag using \*_ro command"):
        r2.eval_ro("#!lua\nreturn 1", 0)
    with pytest.raises(redis.ResponseError, match="not allowed from script"):
        r2.eval("return redis.call('multi')", 0)
    assert r2.exists("a") == 0


def test_oom_rules(make_server):
    s = make_server()
    c = redis.Redis(port=s.port)
    c.set("k", "v")
    c.config_set("maxmemory-policy", "noeviction")
    c.config_set("maxmemory", 1)
    try:
        with pytest.raises(redis.ResponseError) as e:
            c.eval("return redis.call('set', 'k', 'w')", 0)
        assert str(e.value).startswith(
            "command not allowed when used memory > 'maxmemory'. script:")
        assert c.eval("return redis.call('get', 'k')", 0) == b"v"
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            c.eval("#!lua\nreturn redis.call('get', 'k')", 0)   # may write: denyoom
        assert c.eval("#!lua flags=no-writes\nreturn redis.call('get', 'k')", 0) == b"v"
        assert c.eval("#!lua flags=allow-oom\nreturn redis.call('set', 'k', 'w')", 0) == b"OK"
        # once a script has written, later denyoom commands are allowed (no half scripts)
        assert c.eval("redis.call('del', 'k') return redis.call('set', 'k', 'z')", 0) == b"OK"
    finally:
        c.config_set("maxmemory", 0)
        c.close()


def test_config_alias(r2):
    r2.config_set("lua-time-limit", 1234)
    assert r2.config_get("busy-reply-threshold") == {"busy-reply-threshold": "1234"}
    r2.config_set("busy-reply-threshold", 4321)
    assert r2.config_get("lua-time-limit") == {"lua-time-limit": "4321"}


def test_sandbox(r2):
    for script in ("loadstring('x = 1')()", "return loadstring('return os')()",
                   "setmetatable(_G, nil) x = 1", "rawset(_G, 'x', 1)",
                   "getmetatable(redis.call).__call = nil",
                   "local f = coroutine.wrap(function() y = 2 end) f()"):
        with pytest.raises(redis.ResponseError):
            r2.eval(script, 0)
    # globals did not change for the next script
    with pytest.raises(redis.ResponseError, match="nonexistent global variable 'x'"):
        r2.eval("return x", 0)
    assert r2.eval("return type(redis.call)", 0) == b"userdata"
    assert r2.eval("local t = {} for k in pairs(string) do t[#t + 1] = k end return #t", 0) > 10
    assert r2.eval("local co = coroutine.create(function(a) coroutine.yield(a + 1) end) "
                   "local ok, v = coroutine.resume(co, 41) return v", 0) == 42


def test_deep_and_hostile_replies(r2):
    deep = "local t = {} local c = t for i = 1, %d do c[1] = {} c = c[1] end return t"
    reply = r2.eval(deep % 100, 0)
    for _ in range(100):
        reply = reply[0]
    assert reply == []
    with pytest.raises(redis.ResponseError, match="reached lua stack limit"):
        r2.eval(deep % 300000, 0)
    assert r2.eval("return 1", 0) == 1          # the VM is still fine


def test_many_keys_and_args(r2):
    keys = ["k%d" % i for i in range(300)]
    assert r2.eval("return #KEYS + #ARGV * 1000", 300, *keys, *range(250)) == 250300


# ---- busy scripts ----

def _eval_in_thread(port, script, out):
    return call_in_thread(port, lambda c: c.eval(script, 0), out, socket_timeout=30)


def _wait_busy(c):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            c.ping()
        except redis.exceptions.BusyLoadingError:
            raise
        except redis.ResponseError as e:
            if "Redis is busy running a script" in str(e):
                return str(e)
            raise
        time.sleep(0.02)
    raise AssertionError("the server never became busy")


def test_busy_script_and_script_kill(make_server):
    s = make_server(busy_reply_threshold=50)
    other = RawConn(s.port)
    other.send(cmd("PING"))
    assert other.read_reply() == b"+PONG\r\n"
    out = []
    t = _eval_in_thread(s.port, "local i = 0 while true do i = i + 1 end", out)
    reply = send_until(other, cmd("GET", "x"), lambda r: r.startswith(b"-BUSY"))
    assert reply == (b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL "
                     b"or SHUTDOWN NOSAVE.\r\n")
    other.send(cmd("FUNCTION", "KILL"))
    assert other.read_reply() == reply
    other.send(cmd("SHUTDOWN"))
    assert other.read_reply().startswith(b"-BUSY")
    other.send(cmd("MULTI") + cmd("SET", "a", "1") + cmd("EXEC"))
    assert other.read_reply() == b"+OK\r\n"
    assert other.read_reply().startswith(b"-BUSY")   # the queued SET
    # EXEC has no allow-busy flag: refused, it ends the transaction (Redis execCommandAbort)
    assert other.read_reply() == b"-EXECABORT Transaction discarded because of: " + reply[1:]
    other.send(cmd("DISCARD"))
    assert other.read_reply() == b"-ERR DISCARD without MULTI\r\n"
    other.send(cmd("SCRIPT", "KILL"))
    assert other.read_reply() == b"+OK\r\n"
    t.join(20)
    assert len(out) == 1 and isinstance(out[0], redis.ResponseError)
    assert str(out[0]).startswith("Script killed by user with SCRIPT KILL... script:")
    other.send(cmd("SCRIPT", "KILL"))
    assert other.read_reply() == b"-NOTBUSY No scripts in execution right now.\r\n"
    other.send(cmd("SET", "after", "1"))
    assert other.read_reply() == b"+OK\r\n"
    other.close()


def test_kill_cannot_be_caught_by_pcall(make_server):
    s = make_server(busy_reply_threshold=50)
    other = redis.Redis(port=s.port)
    other.ping()
    out = []
    t = _eval_in_thread(s.port, "while true do pcall(function() while true do end end) end", out)
    _wait_busy(other)
    assert other.script_kill()
    t.join(20)
    assert isinstance(out[0], redis.ResponseError) and "Script killed" in str(out[0])
    other.close()


def test_unkillable_after_write_then_shutdown_nosave(make_server):
    s = make_server(busy_reply_threshold=50)
    other = RawConn(s.port)
    other.send(cmd("PING"))
    other.read_reply()
    out = []
    t = _eval_in_thread(s.port, "redis.call('set', 'w', '1') while true do end", out)
    reply = send_until(other, cmd("SCRIPT", "KILL"), lambda r: not r.startswith(b"-NOTBUSY"))
    assert reply.startswith(b"-UNKILLABLE Sorry the script already executed write commands")
    other.send(cmd("SHUTDOWN", "NOSAVE"))
    assert other.closed(10)
    t.join(20)
    assert not t.is_alive() and isinstance(out[0], redis.ConnectionError)
    other.close()
