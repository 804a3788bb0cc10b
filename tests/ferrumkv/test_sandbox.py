"""The Lua sandbox's guarantees (scripting/sandbox.py lists them), one test each, with the
rows of issue 26 they close, and a seeded fuzz run of hostile scripts.

Tests that could freeze or crash a server on a regression run it as a separate process
(``server_process``), so pytest itself survives and the server is stopped by its PID.
Byte-exact texts are compared with redis-server 7.0.15 in test_scripting_diff.py
(``SANDBOX``); here they are checked without it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import redis

from tests.conftest import RawConn, free_port
from tests.conftest import command_frame as cmd
from tests.ferrumkv.script_util import call_in_thread, send_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUSY_MS = 50                 # busy-reply-threshold of the process servers
REPLY_GUARD_S = 20           # a reply that never comes is a frozen server (hang guard)
FUZZ_BUDGET_S = 20           # the fuzz run's time budget
FUZZ_SEED = 26               # the fuzz generator's seed (issue 26)
PY_MARKERS = (b"Traceback", b"lupa", b"<python>", b"object is not", b"_LuaTable",
              b"_LuaObject", b"LuaError", b"bytes-like", b"internal error in a scripting",
              b"argument must be", b"NoneType", b"bound method", b"ferrumkv_py")


@contextlib.contextmanager
def server_process(*args: str):
    """A ferrumkv_py server process on a free port; yields (port, proc); killed by PID.
    No save rules and a directory of its own: nothing is loaded from, or left in, the
    checkout."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="fkv-sandbox-")
    proc = subprocess.Popen([sys.executable, "-m", "ferrumkv_py", "--port", str(port),
                             "--save", "", "--dir", data_dir, *args],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.05)
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        shutil.rmtree(data_dir, ignore_errors=True)


def client(port: int) -> redis.Redis:
    return redis.Redis(port=port, protocol=2, socket_timeout=REPLY_GUARD_S)


def eval_in_thread(port: int, script, out: list, *args) -> threading.Thread:
    return call_in_thread(port, lambda c: c.eval(script, 0, *args), out, protocol=2,
                          socket_timeout=REPLY_GUARD_S)


def busy_then_kill(port: int, script, kill=("SCRIPT", "KILL")) -> redis.RedisError:
    """Run ``script`` (which must become busy); another client must get -BUSY, then kill it.
    The script's error."""
    other = RawConn(port)
    other.send(cmd("PING"))
    assert other.read_reply() == b"+PONG\r\n"
    out: list = []
    t = eval_in_thread(port, script, out)
    send_until(other, cmd("PING"), lambda r: r.startswith(b"-BUSY"))
    other.send(cmd(*kill))
    assert other.read_reply() == b"+OK\r\n"
    t.join(REPLY_GUARD_S)
    assert not t.is_alive()
    other.send(cmd("PING"))
    assert other.read_reply() == b"+PONG\r\n"
    other.close()
    return out[0]


# ---- 1. no binary chunks (issue 26 row 1) ----

def test_binary_chunks_refused_everywhere(r2):
    dumped = "string.dump(function() return 1 end)"
    with pytest.raises(redis.ResponseError, match="attempt to call a nil value"):
        r2.eval("return loadstring(%s)()" % dumped, 0)
    assert r2.eval("return select(2, loadstring(%s))" % dumped, 0) == \
        b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"
    assert r2.eval("local d, n = %s, 0 return select(2, load(function() n = n + 1 "
                   "if n == 1 then return d end end))" % dumped, 0) == \
        b"(load):1: unexpected symbol near 'char(27)'"
    with pytest.raises(redis.ResponseError) as e:
        r2.eval(b"\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00", 0)
    assert str(e.value) == ("Error compiling script (new function): user_script:1: "
                            "unexpected symbol near 'char(27)'")
    with pytest.raises(redis.ResponseError) as e:
        r2.execute_command("FUNCTION", "LOAD", b"#!lua name=bin\n\x1bLuaQ\x00")
    assert str(e.value) == ("Error compiling function: user_function:2: "
                            "unexpected symbol near 'char(27)'")
    # text chunks still load, and run sandboxed
    assert r2.eval("return loadstring('return 1 + 1')()", 0) == 2
    with pytest.raises(redis.ResponseError, match="Attempt to modify a readonly table"):
        r2.eval("loadstring('x = 1')()", 0)


# ---- 2. no coroutine while a library loads (row 2) ----

CO_LIB = ("#!lua name=colib\nlocal co = coroutine.wrap(function() "
          "redis.register_function('cofn', function() return 1 end) end) co()")
PLAIN_LIB = "#!lua name=plain\nredis.register_function('plainfn', function() return 7 end)"


def test_function_load_sees_only_redis():
    """The load-time globals are `redis` alone (Redis 7.0.15): a library cannot reach a
    coroutine to register from, so no callback stays bound to a dead Lua thread.  The
    rounds below crashed the server (a use-after-free at FUNCTION DELETE) before."""
    with server_process() as (port, proc):
        c = client(port)
        for _ in range(3):
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command("FUNCTION", "LOAD", "REPLACE", CO_LIB)
            assert str(e.value) == ("Error registering functions: ERR user_function:2: Script "
                                    "attempted to access nonexistent global variable "
                                    "'coroutine'")
            c.execute_command("FUNCTION", "LOAD", "REPLACE", PLAIN_LIB)
            assert c.fcall("plainfn", 0) == 7
            c.execute_command("FUNCTION", "DELETE", "plain")
            c.eval("local t = {} for i = 1, 20000 do t[i] = string.rep('A', 64) .. i end "
                   "collectgarbage('collect') return 1", 0)
        for name in ("string", "type", "pcall", "getmetatable", "loadstring"):
            with pytest.raises(redis.ResponseError,
                               match="nonexistent global variable '%s'" % name):
                c.execute_command("FUNCTION", "LOAD", "REPLACE",
                                  "#!lua name=l\nlocal x = %s" % name)
        # the callbacks see the full globals once loaded
        c.execute_command("FUNCTION", "LOAD", "REPLACE", "#!lua name=later\n"
                          "redis.register_function('later', function() "
                          "return type(coroutine.create) end)")
        assert c.fcall("later", 0) == b"function"
        assert c.ping() and proc.poll() is None
        c.close()


# ---- 3. read-only library tables and metatables (row 3) ----

def test_string_metatable_read_only_across_acl_users(r2, server):
    r2.execute_command("ACL", "SETUSER", "low", "on", ">lowpw", "~low:*", "+eval")
    r2.set("secret", "s3cr3t")
    low = redis.Redis(port=server.port, username="low", password="lowpw", protocol=2)
    attacks = [
        "getmetatable('').__index.upper = function(s) redis.call('copy', 'secret', 'low:loot') "
        "return s end",
        "getmetatable('').__index = {upper = function(s) return 'pwned' end}",
        "rawset(getmetatable('').__index, 'upper', function() return 'pwned' end)",
        "rawset(getmetatable(''), '__index', {})",
        "string.upper = function() return 'pwned' end",
        "rawset(string, 'upper', 1)",
        "setmetatable(getmetatable(''), nil)",
        "getmetatable('').__metatable = nil",
        "local mt = getmetatable('') mt.__newindex = 1",
    ]
    for script in attacks:
        with pytest.raises(redis.ResponseError, match="readonly table|protected metatable"):
            low.eval(script, 0)
    # the admin's next script, and the server's own string helpers, are untouched
    assert r2.eval("return ('x'):upper()", 0) == b"X"
    assert r2.eval("return string.format('%d', 5) .. ('ab'):rep(2)", 0) == b"5abab"
    assert r2.eval("return getmetatable('').__index == string", 0) == 1
    assert r2.exists("low:loot") == 0
    for lib in ("string", "math", "table", "coroutine", "redis", "bit", "cjson", "cmsgpack",
                "struct", "_G"):
        with pytest.raises(redis.ResponseError, match="readonly table"):
            r2.eval("%s.x = 1" % lib, 0)
        # no metatable, as Redis; _G's is Redis's protecting one, read-only too
        assert r2.eval("return getmetatable(%s)" % lib, 0) == (None if lib != "_G" else [])
    with pytest.raises(redis.ResponseError, match="readonly table"):
        r2.eval("getmetatable(_G).__index = {}", 0)
    low.close()


# ---- 4. the count hook wherever Lua runs (row 4) ----

def test_metamethods_never_run_from_python():
    """struct and cmsgpack take a script's values as plain values: a __tostring that
    loops forever is an argument error at once (it froze the server for good before)."""
    with server_process() as (port, proc):
        c = client(port)
        loop = "setmetatable({}, {__tostring = function() while true do end end})"
        for script, text in [
                ("return struct.pack('s', %s)" % loop,
                 "bad argument #2 to 'pack' (string expected, got table)"),
                ("return struct.unpack('i', %s)" % loop,
                 "bad argument #2 to 'unpack' (string expected, got table)"),
                ("return struct.pack('i', %s)" % loop,
                 "bad argument #2 to 'pack' (number expected, got table)"),
                ("return cmsgpack.unpack(%s)" % loop,
                 "bad argument #1 to 'unpack' (string expected, got table)")]:
            with pytest.raises(redis.ResponseError) as e:
                c.eval(script, 0)
            assert str(e.value).startswith("user_script:1: " + text)
        # a table whose __index loops is packed from its own keys (nothing calls __index)
        assert c.eval("return cmsgpack.pack(setmetatable({1, 2}, {__index = function() "
                      "while true do end end}))", 0) == b"\x92\x01\x02"
        assert proc.poll() is None
        c.close()


@pytest.mark.parametrize("script", [
    # all the time is inside one library call: Lua inside an API coroutine (cjson) ...
    "return #cjson.decode('[' .. string.rep('1,', 3000000) .. '1]')",
    # ... and Python (cmsgpack: a 4-million element array made by string.rep)
    "return #cmsgpack.unpack('\\221\\0\\61\\9\\0' .. string.rep('\\1', 4000000))",
    # a loop inside a coroutine inside a pcall
    "local co = coroutine.wrap(function() pcall(function() while true do end end) end) co()",
])
def test_busy_and_kill_inside_library_calls(script):
    with server_process("--busy-reply-threshold", str(BUSY_MS)) as (port, proc):
        err = busy_then_kill(port, script)
        assert isinstance(err, redis.ResponseError)
        assert "Script killed by user with SCRIPT KILL" in str(err)
        assert proc.poll() is None


def test_kill_during_redis_call_is_the_kill_error():
    """A kill seen while redis.call builds its reply (the hook fires in the reply helpers
    Python calls) ends the script with the kill error, not a library fault (unit/scripting
    'Timedout script does not cause a false dead client' got the fault on its 2nd run)."""
    with server_process("--busy-reply-threshold", str(BUSY_MS)) as (port, proc):
        for _ in range(6):
            err = busy_then_kill(port, "while 1 do redis.call('ping') end")
            assert str(err).startswith("Script killed by user with SCRIPT KILL..."), err


def test_coroutine_kept_by_a_library_stays_hooked():
    """debug.sethook's table is purged after runs that made many coroutines; a coroutine a
    FUNCTION library keeps in an upvalue is hooked again on its next resume."""
    lib = ("#!lua name=keeper\nlocal co\n"
           "redis.register_function{function_name='setup', callback=function() "
           "co = coroutine.wrap(function(spin) while true do if spin then while true do end "
           "end spin = coroutine.yield(1) end end) return co(false) end, "
           "flags={'no-writes'}}\n"
           "redis.register_function{function_name='spin', callback=function() "
           "return co(true) end, flags={'no-writes'}}")
    with server_process("--busy-reply-threshold", str(BUSY_MS)) as (port, proc):
        c = client(port)
        c.execute_command("FUNCTION", "LOAD", lib)
        assert c.fcall("setup", 0) == 1
        c.eval("for i = 1, 1000 do coroutine.wrap(function() end)() end return 1", 0)
        c.eval("return 1", 0)     # the purge runs before this one
        other = RawConn(port)
        out: list = []

        def run():
            try:
                out.append(client(port).fcall("spin", 0))
            except redis.RedisError as e:
                out.append(e)
        t = threading.Thread(target=run)
        t.start()
        send_until(other, cmd("PING"), lambda r: r.startswith(b"-BUSY"))
        other.send(cmd("FUNCTION", "KILL"))
        assert other.read_reply() == b"+OK\r\n"
        t.join(REPLY_GUARD_S)
        assert "killed" in str(out[0])
        other.close()
        c.close()


# ---- 8. no collector state left for the next script (row 8) ----

def test_collector_cannot_be_left_stopped(r2):
    base = r2.info("memory")["used_memory_lua"]
    garbage = "local t = {} for i = 1, 20000 do t[i] = {i} end return 1"
    for opt in ("collectgarbage('stop')", "collectgarbage('setpause', 100000)",
                "collectgarbage('setstepmul', 1) collectgarbage('setpause', 1000)"):
        for _ in range(60):           # each leaves ~1.3 MB of garbage behind it
            r2.eval(opt + " " + garbage, 0)
        assert r2.info("memory")["used_memory_lua"] < base + 8 * 1024 * 1024, opt
    # the next script finds Lua's defaults
    assert r2.eval("return collectgarbage('setpause', 200)", 0) == 200
    assert r2.eval("return collectgarbage('setstepmul', 200)", 0) == 200


def test_lua_heap_is_bounded(make_server, monkeypatch):
    """A script that allocates without end (here a load() reader that never ends, which
    made the process grow until the OOM killer) meets the heap bound as Lua's error."""
    engine_mod = sys.modules["ferrumkv_py.scripting.engine"]   # (the package exports a
    monkeypatch.setattr(engine_mod, "LUA_HEAP_LIMIT_BYTES", 32 * 1024 * 1024)  # function)
    s = make_server()
    c = redis.Redis(port=s.port, protocol=2)
    for script in ("return {select(2, load(function() return 'abc' end))}",
                   "local t = {} for i = 1, 1e9 do t[i] = {i} end"):
        try:
            reply = c.eval(script, 0)     # load() returns the error, or the script fails
        except redis.ResponseError as e:
            reply = [e]
        assert "not enough memory" in str(reply[0])
    assert c.eval("return #string.rep('x', 1000)", 0) == 1000
    assert c.info("memory")["used_memory_lua"] < 8 * 1024 * 1024
    c.close()


def test_globals_and_registry_do_not_leak(r2):
    for script in ("x = 1", "_G.x = 1", "rawset(_G, 'x', 1)", "setmetatable(_G, {})",
                   "local f = loadstring('y = 2') f()", "coroutine.wrap(function() z = 3 end)()"):
        with pytest.raises(redis.ResponseError):
            r2.eval(script, 0)
    for name in ("x", "y", "z"):
        with pytest.raises(redis.ResponseError, match="nonexistent global variable"):
            r2.eval("return %s" % name, 0)
    for name in ("debug", "getfenv", "setfenv", "newproxy", "print", "os", "io", "require",
                 "package", "dofile", "loadfile", "module"):
        with pytest.raises(redis.ResponseError, match="nonexistent global variable"):
            r2.eval("return %s" % name, 0)


# ---- 11. no Python object or text reachable (row 11) ----

def test_redis_log_writes_the_log(r2, caplog):
    with caplog.at_level(logging.DEBUG, logger="ferrumkv"):
        assert r2.eval("return redis.log(redis.LOG_WARNING, 'hello from', 'a script', 7)",
                       0) is None
    assert any(rec.getMessage() == "hello from a script 7" for rec in caplog.records)


@pytest.mark.parametrize("script, text", [
    ("return {pcall(struct.pack, 'i', {})}", "bad argument #2 to '?' (number expected, got table)"),
    ("return {pcall(struct.pack, 'i', 'x')}", "bad argument #2 to '?' (number expected, got string)"),
    ("return {pcall(struct.pack, '!2000000000i')}", "alignment 2000000000 is not a power of 2"),
    ("return {pcall(struct.pack, 'i99999999999')}", "integral size overflow"),
    ("return {pcall(struct.unpack, 'i', 'abcd', {})}",
     "bad argument #3 to '?' (number expected, got table)"),
    ("return {pcall(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), -1)}",
     "Invalid request to unpack with offset of -1 and limit of 3."),
    ("return {pcall(cmsgpack.unpack_limit, cmsgpack.pack(1), 1, {})}",
     "bad argument #3 to '?' (number expected, got table)"),
    ("return {pcall(cmsgpack.unpack, '\\129\\192\\1')}", "table index is nil"),
])
def test_library_errors_are_lua_texts(r2, script, text):
    assert r2.eval(script, 0) == [None, text.encode()]


def test_no_python_text_from_hostile_library_calls(r2):
    calls = ["math.randomseed(1e300)", "math.randomseed(0/0)", "math.random(1e300)",
             "bit.tohex(1, 1e300)", "bit.band(0/0, 1/0)", "redis.sha1hex({})",
             "redis.log(1e300, 'x')", "redis.log(0/0, 'x')", "redis.setresp(1e300)",
             "redis.set_repl(0/0)", "redis.acl_check_cmd({})", "redis.acl_check_cmd('get', {})",
             "cmsgpack.pack(0/0, 1/0, 2^63, -2^63, 2^64)", "cmsgpack.unpack_one('', 1e300)",
             "cmsgpack.unpack_limit('\\1', 0/0, 0/0)", "struct.pack('d', 0/0)",
             "struct.pack('i', 1e300)", "struct.pack('c0', 1e300)", "struct.unpack('i', 'a', 1e300)",
             "struct.unpack('c0', 'abc')", "struct.size('s')", "struct.pack('\\0i', 1)",
             "cjson.encode(setmetatable({}, {__index = function() error('x') end}))",
             "cjson.decode(string.rep('[', 2000))", "redis.call('ping', {})",
             "redis.pcall(setmetatable({}, {__tostring = function() return 'x' end}))",
             "redis.error_reply(setmetatable({}, {}))", "redis.breakpoint(print)",
             "tostring(redis.call)", "redis.call.__class__", "redis.call.x",
             "tostring(select(2, pcall(redis.call, 'nosuch')))"]
    for call in calls:
        reply = r2.execute_command("EVAL", "return {pcall(function() return %s end)}" % call,
                                   0)
        flat = repr(reply).encode()
        assert not any(m in flat for m in PY_MARKERS), (call, reply)
    assert r2.ping()
    assert r2.eval("return tostring(redis.call)", 0).startswith(b"function: ")
    assert r2.eval("return {pcall(function() return redis.call.x end)}", 0) == \
        [None, b"ERR attempt to index a function value"]


# ---- INFO memory: the 7.0 script fields ----

INFO_SCRIPT_FIELDS = [
    "used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human",
    "used_memory_scripts_eval", "number_of_cached_scripts", "number_of_functions",
    "number_of_libraries", "used_memory_vm_functions", "used_memory_vm_total",
    "used_memory_vm_total_human", "used_memory_functions", "used_memory_scripts",
    "used_memory_scripts_human"]


def test_info_memory_script_fields(r2):
    names = list(r2.info("memory"))      # redis-py keeps the reply's order
    at = names.index("used_memory_lua")
    assert names[at:at + len(INFO_SCRIPT_FIELDS)] == INFO_SCRIPT_FIELDS
    r2.script_load("return 'a'")
    r2.script_load("return 'bb'")
    r2.execute_command("FUNCTION", "LOAD", "#!lua name=inf\n"
                       "redis.register_function('i1', function() return 1 end)\n"
                       "redis.register_function('i2', function() return 2 end)")
    m = r2.info("memory")
    assert m["number_of_cached_scripts"] == 2
    assert m["number_of_functions"] == 2 and m["number_of_libraries"] == 1
    assert m["used_memory_lua"] == m["used_memory_vm_eval"] == m["used_memory_vm_total"] > 0
    assert m["used_memory_scripts"] == m["used_memory_scripts_eval"] + \
        m["used_memory_functions"] > 0
    r2.script_flush()
    assert r2.info("memory")["number_of_cached_scripts"] == 0


# ---- the fuzz run: hostile scripts, seeded ----

def _fuzz_piece(rng: random.Random) -> str:
    """One hostile statement (it may raise: every piece runs inside a pcall)."""
    n = rng.choice([0, 1, -1, 2 ** 31, 2 ** 53, -(2 ** 63), 1e300, "0/0", "1/0", 3.5])
    s = rng.choice(["''", "'abc'", "'\\0\\1\\255'", "string.rep('\\221', 9)",
                    "string.dump(function() return 1 end)", "'[1,2'", "'{\"a\":['",
                    "'\\27Lua'", "tostring(%s)" % n])
    t = rng.choice(["{}", "{1, 2, {3}}", "setmetatable({}, {__index = function() return 1 end})",
                    "setmetatable({}, {__tostring = function() return 'x' end, "
                    "__len = function() return 1e9 end})", "_G", "string", "redis",
                    "getmetatable('')", "{[0/0 ~= 0/0] = 1}"])
    v = rng.choice([n, s, t, "nil", "true", "print", "coroutine.create(function() end)"])
    fmt = rng.choice(["'i'", "'!4i8'", "'s'", "'c0'", "'bhlT'", "'!3i'", "'<>!d'", "'i33'",
                      "'c%d'" % rng.randrange(0, 10), "%s" % s])
    return rng.choice([
        "setmetatable(%s, {})" % t, "getmetatable(%s).__index = {}" % s,
        "rawset(%s, 'k', 1)" % t, "%s.k = %s" % (rng.choice(["_G", "string", "math",
                                                          "redis", "cjson"]), v),
        "collectgarbage(%s, %s)" % (rng.choice(["'stop'", "'restart'", "'step'", "'count'",
                                                "'setpause'", "'setstepmul'", "'collect'",
                                                "'bogus'", "nil"]), n),
        "loadstring(%s)" % s, "loadstring(%s)()" % s,
        "local k = 0 load(function() k = k + 1 if k < 4 then return %s end end)" % s,
        "struct.pack(%s, %s, %s)" % (fmt, v, v), "struct.unpack(%s, %s, %s)" % (fmt, s, n),
        "struct.size(%s)" % fmt,
        "cmsgpack.pack(%s, %s)" % (t, v), "cmsgpack.unpack(%s)" % s,
        "cmsgpack.unpack_one(%s, %s)" % (s, n), "cmsgpack.unpack_limit(%s, %s, %s)" % (s, n, n),
        "cjson.encode(%s)" % t, "cjson.decode(%s)" % s,
        "bit.band(%s, %s)" % (n, v), "bit.tohex(%s, %s)" % (n, n),
        "redis.sha1hex(%s)" % v, "redis.log(%s, %s)" % (n, v), "redis.setresp(%s)" % n,
        "redis.call('set', 'fz:' .. tostring(%s), %s)" % (n, s),
        "redis.pcall('incr', 'fz:ctr')", "math.random(%s)" % n, "math.randomseed(%s)" % n,
        "local co = coroutine.create(function(...) coroutine.yield(...) error(%s) end) "
        "coroutine.resume(co, %s) coroutine.resume(co) coroutine.resume(co)" % (v, v),
        "local w = coroutine.wrap(function() for i = 1, 50 do coroutine.yield(i) end end) "
        "for i = 1, 60 do w() end",
        "for i = 1, 200 do coroutine.wrap(function() end)() end",
        "local t = {} for i = 1, %d do t[i] = {i} end" % rng.choice([10, 1000, 30000]),
        "string.rep(%s, %d)" % (s, rng.choice([1, 1000, 100000])),
        "pcall(error, setmetatable({}, {__tostring = function() return 'e' end}))",
        "error({err = %s})" % s, "xpcall(function() error(%s) end, print)" % s,
    ])


def _fuzz_script(rng: random.Random) -> str:
    return " ".join("pcall(function() %s end)" % _fuzz_piece(rng)
                    for _ in range(rng.randrange(1, 6))) + " return 1"


PROBE = ("return {type(string.upper), ('x'):upper(), tostring(rawget(_G, 'k')), "
         "tostring(getmetatable('').__index == string), collectgarbage('setpause', 200), "
         "tostring(pcall(function() return undefined_global end))}")
PROBE_REPLY = [b"function", b"X", b"nil", b"true", 200, b"false"]


def test_fuzz_hostile_scripts():
    """Seeded hostile scripts against a server process for FUZZ_BUDGET_S: the server never
    crashes, a second client is answered after every script, the probe sees a clean
    sandbox after every script, and no reply carries Python's text."""
    rng = random.Random(FUZZ_SEED)
    with server_process("--busy-reply-threshold", str(BUSY_MS)) as (port, proc):
        c, other = client(port), client(port)
        deadline = time.monotonic() + FUZZ_BUDGET_S
        runs = 0
        while time.monotonic() < deadline:
            script = _fuzz_script(rng)
            try:
                reply = c.eval(script, 0)
            except redis.ResponseError as e:
                reply = str(e).encode()
            assert not any(m in repr(reply).encode() for m in PY_MARKERS), (script, reply)
            assert other.ping(), script
            assert c.eval(PROBE, 0) == PROBE_REPLY, script
            runs += 1
            if runs % 25 == 0:    # now and then a script that must be killed
                err = busy_then_kill(port, "#!lua flags=no-writes\n"   # (killable)
                                     "pcall(function() %s end) "
                                     "local co = coroutine.wrap(function() "
                                     "while true do pcall(error, 'x') end end) co()"
                                     % _fuzz_piece(rng))
                assert "Script killed" in str(err)
        assert runs >= 50 and proc.poll() is None
        assert c.info("memory")["used_memory_lua"] < 64 * 1024 * 1024
        c.close()
        other.close()


def test_function_load_that_never_ends_times_out():
    """A library's code runs under Redis's 500 ms load timeout: an endless loop at FUNCTION
    LOAD froze the server for good (no -BUSY, nothing to kill it with)."""
    with server_process() as (port, proc):
        c = client(port)
        for body in ("local a = 1\nwhile 1 do a = a + 1 end",
                     "local function f() while 1 do end end\nf()"):
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command("FUNCTION", "LOAD", "#!lua name=endless\n" + body)
            assert str(e.value) == "Error registering functions: ERR FUNCTION LOAD timeout"
        assert c.execute_command("FUNCTION", "LIST") == []
        c.execute_command("FUNCTION", "LOAD", PLAIN_LIB)
        assert c.fcall("plainfn", 0) == 7
        assert c.eval("return 1", 0) == 1      # the next run is not left killed
        assert proc.poll() is None
        c.close()
