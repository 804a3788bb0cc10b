"""Differential tests: the same scripts against ferrumkv and redis-server 7.0, byte for byte.

Each case is one command sent over a raw socket in RESP2 and (for the conversions) RESP3;
the two replies must be identical, error texts and line numbers included.
"""

from __future__ import annotations

import pytest

from tests.conftest import RawConn, ServerThread, run_redis_server
from tests.conftest import command_frame as cmd

pytestmark = pytest.mark.needs_redis


@pytest.fixture(scope="module")
def pair(redis_server):
    ours = ServerThread()
    yield ours.port, redis_server
    ours.stop()


def both(pair, *args, proto=2, setup=()):
    """The reply of one command on each server (after the setup commands)."""
    out = []
    for port in pair:
        c = RawConn(port)
        try:
            if proto == 3:
                c.send(cmd("HELLO", "3"))
                c.read_reply()
            for s in setup:
                c.send(cmd(*s))
                c.read_reply()
            c.send(cmd(*args))
            out.append(c.read_reply())
        finally:
            c.close()
    return out


# scripts whose replies (and errors) must match exactly; KEYS/ARGV use the "sd:" prefix
CONVERSIONS = [
    "return 1", "return -3.99", "return 3.99", "return 1e20", "return 0/0", "return 1/0",
    "return 'hello'", "return ''", "return true", "return false", "return nil",
    "return {}", "return {1, 2, 3}", "return {1, nil, 3}", "return {1, 'a', {2, {3}}, false}",
    "return {ok='fine'}", "return {err='ERR bad thing'}", "return {err='lower case'}",
    "return {1, {err='NESTED e'}, {ok='s'}}", "return {ok='multi\\r\\nline'}",
    "return redis.status_reply('OKAY')", "return redis.error_reply('MYCODE x')",
    "return redis.error_reply('-ERR with dash')", "return redis.error_reply('noprefix')",
    "return redis.error_reply(1)", "return redis.status_reply()",
    "return redis.status_reply(1)", "return redis.error_reply('A x', 'B y')",
    "return redis.status_reply('', 'x')", "return redis.error_reply('')",
    "return {double=3.5}", "return {double=1/0}", "return {big_number='123456789012345678901'}",
    "return {map={a=1}}", "return {set={x=true}}",
    "return {verbatim_string={format='txt', string='hi'}}",
    "return {a=1, 2}", "return {[1]='x', [3]='y'}",
    "return function() end", "return {function() end, 1}",
    "return redis.REDIS_VERSION", "return redis.REDIS_VERSION_NUM",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
    "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
    "return redis.sha1hex('abc')", "return redis.sha1hex('')",
    "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}",
    "redis.setresp(3) return redis.call('hgetall', 'sd:none')",
    "return redis.replicate_commands()", "return redis.set_repl(redis.REPL_ALL)",
    "return type(redis.call('get', 'sd:missing'))",
    "return tostring(redis.call('get', 'sd:missing'))",
    "redis.setresp(3) return tostring(redis.call('get', 'sd:missing'))",
    "redis.setresp(3) return {true, false}",
    "redis.setresp(3) return {1, false, {double=2.5}, {map={k='v'}}, {set={m=true}}}",
    "return _VERSION", "return type(cjson.null)",
    "local t = {} for k, v in pairs(_G) do t[#t + 1] = k .. ':' .. type(v) end "
    "table.sort(t) return t",
    "local t = {} for _, lib in ipairs({'string', 'math', 'table', 'coroutine', 'redis', "
    "'bit', 'cjson', 'cmsgpack', 'struct'}) do for k in pairs(_G[lib]) do "
    "t[#t + 1] = lib .. '.' .. k end end table.sort(t) return t",
]

ERRORS = [
    "return redis.call('incr', 'sd:str')", "return redis.pcall('incr', 'sd:str')",
    "local e = redis.pcall('incr', 'sd:str') return e.err",
    "local ok, e = pcall(redis.call, 'incr', 'sd:str') return {tostring(ok), type(e), e.err}",
    "return redis.call('nosuchcommand')", "return redis.call('get')",
    "return redis.call()", "return redis.call({})", "return redis.call('get', {})",
    "return redis.call('get', nil)", "return redis.call('get', true)",
    "return redis.call('eval', 'return 1', 0)", "return redis.call('multi')",
    "return redis.call('config', 'nosuch')", "return redis.call('config')",
    "x = 1", "return undefined_global", "return os.time()", "return io", "return debug",
    "return loadfile", "return dofile", "return print", "return require", "return getfenv",
    "string.rep = nil", "redis.call = nil", "math.foo = 1", "_G.x = 1", "rawset(_G, 'x', 1)",
    "local t = {} t.x = 1 return t.x", "KEYS[1] = 'changed' return KEYS[1]",
    "error('plain')", "error({err='CUSTOM table error'})",
    "error()", "error(12)", "local x = nil; return x.field", "return 1 + {}",
    "syntax error here", "return 'unfinished", "\n\nerror('line three')",
    "local function f() error('deep') end\nlocal function g() f() end\ng()",
    "local function f() return redis.call('incr', 'sd:str') end\nreturn f()",
    "return redis.sha1hex()", "return redis.log()", "return redis.log('x', 'y')",
    "return redis.log(99, 'y')", "return redis.setresp(4)", "return redis.setresp()",
    "return redis.set_repl(99)", "return redis.set_repl()",
    "return math.random(0)", "return math.random(5, 1)", "return math.random(1, 2, 3)",
    "return string.rep()", "return ('x'):rep(3)",
    "#!lua flags=no-writes\nreturn redis.call('set', 'sd:k', 'v')",
    "#!lua flags=no-writes\nreturn redis.call('get', 'sd:k')",
    "#!lua flags=bogus\nreturn 1", "#!lua name=x\nreturn 1", "#!python\nreturn 1",
    "#!lua", "#!lua flags=allow-oom,allow-stale,no-cluster\nreturn 1",
    "return pcall(error, 'x')", "return {pcall(error, {err='E t'})}",
    "return select('#', pcall(error))", "return {pcall(error)}", "return pcall()",
    "local ok, e = pcall(redis.call, 'get') return {tostring(ok), e}",
    "return {pcall(function() return 1, 2, nil, 4 end)}",
]

LIBS = [
    "return cjson.encode({1, 2, 3})", "return cjson.encode({a={b={c=1}}})",
    "return cjson.encode('a/b\"c\\\\d\\n\\t\\1\\127')", "return cjson.encode(1.5)",
    "return cjson.encode(1e300)", "return cjson.encode(0.1)", "return cjson.encode(-0.5)",
    "return cjson.encode(123456789012345)", "return cjson.encode({})",
    "return cjson.encode({[1]=1, [2]=2, [4]=4})", "return cjson.encode({[1]=1, [20]=2})",
    "return cjson.encode({1, nil, 3})", "return cjson.encode(true)", "return cjson.encode(nil)",
    "return cjson.encode(cjson.null)", "return cjson.encode(function() end)",
    "return cjson.encode(0/0)", "return cjson.encode({[true]=1})", "return cjson.encode()",
    "return cjson.encode({[1.5]=1})", "return cjson.encode({'x', y=1})",
    "return cjson.decode('[1,2,3]')", "return cjson.decode('{\"a\":[1,{\"b\":\"c\"}]}').a[2].b",
    "return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\"')", "return cjson.decode('1.5e3')",
    "return cjson.decode('[true,false,null]')[3] == cjson.null",
    "return cjson.decode('')", "return cjson.decode('[1,2')", "return cjson.decode('{1:2}')",
    "return cjson.decode('{\"a\" 1}')", "return cjson.decode('[1 2]')",
    "return cjson.decode('nul')", "return cjson.decode('[1,]')", "return cjson.decode('1 2')",
    "return cjson.decode('\"\\\\q\"')", "return cjson.decode()", "return cjson.decode({})",
    "return cjson.decode('  [ 1 , 2 ]  ')[2]", "return cjson.decode('-0')",
    "return cjson.decode('{\"k\":{}}').k ~= nil", "return cjson.decode('\"abc')",
    "return cjson.decode('\"\\\\u12\"')", "return cjson.decode('[-]')",
    "return bit.band(0xff, 0x0f0f, 0x3c)", "return bit.bor(1, 2, 4)", "return bit.bxor(5, 3)",
    "return bit.bnot(0)", "return bit.tobit(0xffffffff)", "return bit.tobit(2^40 + 5)",
    "return bit.tobit(1.5)", "return bit.tobit(2.5)", "return bit.tobit(-1.5)",
    "return bit.lshift(1, 31)", "return bit.lshift(1, 32)", "return bit.rshift(-1, 28)",
    "return bit.arshift(-256, 4)", "return bit.rol(0x12345678, 8)",
    "return bit.ror(0x12345678, 8)", "return bit.bswap(0x12345678)",
    "return bit.tohex(255)", "return bit.tohex(-1, -4)", "return bit.tohex(0x1234, 2)",
    "return bit.tohex(1, 20)", "return bit.band()", "return bit.band('x')",
    "return bit.band('12', 4)", "return bit.lshift(1)", "return bit.tohex()",
    "return {cmsgpack.pack(1, -1, 200, -200, 70000, 2^40, 1.5, 0.1, 'ab', true, false, "
    "{1,2}, {a=1})}", "return cmsgpack.pack()",
    "return {cmsgpack.unpack(cmsgpack.pack(1,'x',{1,{2}}, {a={b=1}}, -5, 3.25, 1e300))}",
    "return cmsgpack.unpack(string.char(0x92, 1))", "return cmsgpack.unpack(string.char(0xc1))",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 0)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2, 0)}",
    "return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300), string.rep('z', 70000))",
    "return cmsgpack.pack({{{{{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}}}})",
    "return cmsgpack.pack(-33, -129, -40000, -3000000000, 2^53, 0/0, 1/0, -1/0)",
    "local t = cmsgpack.unpack(cmsgpack.pack({x=1,y={1,2}})) return {t.x, t.y[2]}",
    "return cmsgpack.unpack()", "return cmsgpack.unpack({})",
    "return struct.pack('>I2', 258)", "return struct.pack('<i', -2)",
    "return struct.pack('bBhHlL', -1, 255, -2, 65535, -3, 7)",
    "return {struct.unpack('>I2', struct.pack('>I2', 258))}",
    "return {struct.unpack('<i', struct.pack('<i', -2))}", "return struct.size('>iI2hd')",
    "return struct.pack('s', 'abc')", "return {struct.unpack('s', 'ab\\0cd')}",
    "return {struct.unpack('bc0', struct.pack('bc0', 3, 'xyz'))}", "return struct.pack('q', 1)",
    "return {struct.unpack('>I4', 'ab')}", "return struct.size('s')",
    "return struct.pack('!4bi', 1, 2)", "return struct.pack('>d', 1.5)",
    "return {struct.unpack('>d', struct.pack('>d', 1.5))}", "return struct.pack()",
    "return struct.pack('i')", "return struct.pack('c3', 'ab')", "return struct.pack('i40', 1)",
    "return {struct.unpack('<h', 'abcd', 3)}", "return struct.pack('>f', 0.5)",
]


@pytest.mark.parametrize("script", CONVERSIONS)
@pytest.mark.parametrize("proto", [2, 3])
def test_conversions(pair, script, proto):
    a, b = both(pair, "EVAL", script, 2, "sd:k1", "sd:k2", "a1", "a2", proto=proto)
    assert a == b


@pytest.mark.parametrize("script", ERRORS)
def test_errors(pair, script):
    a, b = both(pair, "EVAL", script, 0, setup=[("SET", "sd:str", "abc")])
    assert a == b


@pytest.mark.parametrize("script", LIBS)
def test_libraries(pair, script):
    a, b = both(pair, "EVAL", script, 0)
    assert a == b


# the sandbox (issue 26): binary chunks, read-only library tables and metatables, the
# library functions' argument checks (no Python text), FUNCTION LOAD's load-time globals
SANDBOX = [
    ("EVAL", "return select(2, loadstring(string.dump(function() return 1 end)))", "0"),
    ("EVAL", "return loadstring(string.dump(function() return 1 end))()", "0"),
    ("EVAL", "local d = string.dump(function() return 1 end) local n = 0 "
             "return select(2, load(function() n = n + 1 if n == 1 then return d end end))", "0"),
    ("EVAL", b"\x1bLuaQ\x00\x01\x04\x08", "0"),
    ("EVAL", "return {loadstring(string.dump(function() return 1 end), '=named')}", "0"),
    ("EVAL", "getmetatable('').__index.upper = function() return 'x' end", "0"),
    ("EVAL", "getmetatable('').__index = {}", "0"),
    ("EVAL", "rawset(getmetatable('').__index, 'upper', 1)", "0"),
    ("EVAL", "string.upper = nil", "0"),
    ("EVAL", "return ('x'):upper()", "0"),
    ("EVAL", "return tostring(getmetatable(string))", "0"),
    ("EVAL", "return getmetatable('').__index == string", "0"),
    ("EVAL", "return {pcall(struct.pack, 'i', {})}", "0"),
    ("EVAL", "return struct.pack('s', setmetatable({}, {__tostring = function() "
             "while true do end end}))", "0"),
    ("EVAL", "return struct.unpack('i', setmetatable({}, {__tostring = function() "
             "while true do end end}))", "0"),
    ("EVAL", "return struct.pack('!2000000000i')", "0"),
    ("EVAL", "return struct.pack('i99999999999')", "0"),
    ("EVAL", "return struct.pack('!3i', 1)", "0"),
    ("EVAL", "return struct.pack('i', 'x')", "0"),
    ("EVAL", "return struct.pack('f', 1e300)", "0"),
    ("EVAL", "return {struct.unpack('i', 'abcd', 0)}", "0"),
    ("EVAL", "return {pcall(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), -1)}", "0"),
    ("EVAL", "return {pcall(cmsgpack.unpack_one, cmsgpack.pack(1, 2, 3), 100)}", "0"),
    ("EVAL", "return {pcall(cmsgpack.unpack_limit, cmsgpack.pack(1, 2, 3), 0, 1)}", "0"),
    ("EVAL", "return {pcall(cmsgpack.unpack_limit, cmsgpack.pack(1, 2, 3), 1, 1)}", "0"),
    ("EVAL", "return {pcall(cmsgpack.unpack, '\\129\\192\\1')}", "0"),
    ("EVAL", "math.randomseed(1e300) return math.random(10)", "0"),
    ("EVAL", "return redis.log(redis.LOG_WARNING, 'a script logs', 1)", "0"),
    ("EVAL", "return {pcall(collectgarbage, 'bogus')}", "0"),
    ("EVAL", "collectgarbage('bogus')", "0"),
    ("EVAL", "return {pcall(setmetatable, 1)}", "0"),
    ("EVAL", "return {pcall(load, 5)}", "0"),
    ("EVAL", "return {pcall(loadstring)}", "0"),
    ("EVAL", "return {pcall(coroutine.resume, 1)}", "0"),
    ("EVAL", "return {pcall(rawget, 1)}", "0"),
    ("EVAL", "return {pcall(next, 1)}", "0"),
    ("EVAL", "setmetatable(setmetatable({}, {__metatable = 1}), {})", "0"),
    ("EVAL", "local g = getmetatable(_G) g.__index = {}", "0"),
    ("EVAL", "return type(getmetatable(_G))", "0"),
    ("EVAL", "setmetatable(_G, {})", "0"),
    ("FUNCTION", "LOAD", b"#!lua name=sdbin\n\x1bLuaQ\x00"),
    ("FUNCTION", "LOAD", "#!lua name=sdco\nlocal co = coroutine.wrap(function() "
                         "redis.register_function('f', function() return 1 end) end) co()"),
    ("FUNCTION", "LOAD", "#!lua name=sdstr\nlocal d = string.dump"),
    ("FUNCTION", "LOAD", "#!lua name=sdtype\nreturn type(1)"),
    ("FUNCTION", "LOAD", "#!lua name=sdmt\ngetmetatable('').__index.upper = 1"),
    ("FUNCTION", "LOAD", "#!lua name=sdloop\nlocal a = 1\nwhile 1 do a = a + 1 end"),
]


@pytest.mark.parametrize("args", SANDBOX)
def test_sandbox(pair, args):
    a, b = both(pair, *args)
    assert a == b


@pytest.mark.parametrize("args", [
    ("EVAL", "return 1", "x"), ("EVAL", "return 1", "-1"), ("EVAL", "return 1", "2", "a"),
    ("EVAL", "return 1"), ("EVALSHA", "abc", "0"), ("EVALSHA", "f" * 40, "0"),
    ("EVALSHA", "f" * 40, "x"), ("EVALSHA", "f" * 39, "x"), ("EVAL_RO", "return 1", "0"),
    ("EVAL_RO", "return redis.call('set', 'sd:ro', 1)", "0"),
    ("EVAL_RO", "#!lua\nreturn 1", "0"), ("EVALSHA_RO", "0" * 40, "0"),
    ("SCRIPT", "LOAD", "return 'loaded'"), ("SCRIPT", "LOAD", "syntax error here"),
    ("SCRIPT", "EXISTS", "a" * 40), ("SCRIPT", "FLUSH", "BOGUS"),
    ("SCRIPT", "FLUSH", "SYNC", "x"), ("SCRIPT", "KILL"), ("SCRIPT", "NOSUCH"),
    ("SCRIPT",), ("SCRIPT", "LOAD"), ("SCRIPT", "HELP"),
])
def test_command_errors(pair, args):
    a, b = both(pair, *args)
    assert a == b


def test_evalsha_after_load(pair):
    body = "return {KEYS[1], ARGV[1]}"
    sha_a, sha_b = both(pair, "SCRIPT", "LOAD", body)
    assert sha_a == sha_b
    sha = sha_a.split(b"\r\n")[1]
    assert both(pair, "EVALSHA", sha, 1, "k", "v") == [b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n"] * 2
    assert both(pair, "EVALSHA", sha.upper(), 1, "k", "v")[0] == \
        both(pair, "EVALSHA", sha.upper(), 1, "k", "v")[1]
    a, b = both(pair, "SCRIPT", "EXISTS", sha, "0" * 40)
    assert a == b == b"*2\r\n:1\r\n:0\r\n"


def test_command_replies_as_lua(pair):
    """Every reply kind of redis.call as Lua sees it (RESP2 and RESP3 script clients)."""
    setup = [("DEL", "sd:h", "sd:l", "sd:z", "sd:s"), ("HSET", "sd:h", "f", "v"),
             ("RPUSH", "sd:l", "a", "b"), ("ZADD", "sd:z", "1.5", "m"), ("SADD", "sd:s", "x")]
    for resp in (2, 3):
        for call in ("'hgetall','sd:h'", "'lrange','sd:l',0,-1", "'zrange','sd:z',0,-1,'withscores'",
                     "'smembers','sd:s'", "'ping'", "'set','sd:x','1'", "'get','sd:none'",
                     "'zscore','sd:z','m'", "'exists','sd:h'", "'type','sd:h'",
                     "'lpop','sd:none'", "'zrangebyscore','sd:z','-inf','+inf'"):
            script = ("redis.setresp(%d) local r = redis.call(%s) "
                      "local function dump(v) if type(v) ~= 'table' then "
                      "return type(v) .. ':' .. tostring(v) end "
                      "local keys = {} for k in pairs(v) do keys[#keys+1] = tostring(k) end "
                      "table.sort(keys) local out = {} for _, k in ipairs(keys) do "
                      "local x = v[k] if x == nil then x = v[tonumber(k)] end "
                      "out[#out+1] = k .. '=' .. dump(x) end "
                      "return '{' .. table.concat(out, ',') .. '}' end "
                      "return dump(r)") % (resp, call)
            for proto in (2, 3):
                a, b = both(pair, "EVAL", script, 0, proto=proto, setup=setup)
                assert a == b, (resp, call, proto)


@pytest.fixture
def fresh_redis_server():
    """A redis-server of this test's own: math.random's sequence starts at its start."""
    yield from run_redis_server()


def test_math_random_sequence(fresh_redis_server):
    """math.random follows redis-server's sequence from a fresh start (rand48)."""
    ours = ServerThread()
    try:
        script = ("local t = {} for i = 1, 5 do t[#t+1] = tostring(math.random()) end "
                  "t[#t+1] = math.random(1000) t[#t+1] = math.random(-5, 5) "
                  "math.randomseed(42) t[#t+1] = math.random(1000000) return t")
        a = both((ours.port, fresh_redis_server), "EVAL", script, 0)
        b = both((ours.port, fresh_redis_server), "EVAL", script, 0)
        assert a[0] == a[1] and b[0] == b[1]
    finally:
        ours.stop()
