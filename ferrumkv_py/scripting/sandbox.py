"""The Lua side of the scripting engine: the sandbox Redis 7.0 builds, as Lua source.

:data:`BOOTSTRAP` runs once in a fresh ``lupa.lua51`` runtime with a table of Python
callables (``py``) and returns the functions the engine calls.  It builds what a Redis 7.0
script sees:

* the globals Redis keeps (``pairs(_G)`` on redis-server 7.0.15 lists the same names), with
  ``dofile``, ``loadfile``, ``print``, ``os``, ``io``, ``debug``, ``package``, ``require``,
  ``module``, ``getfenv``, ``setfenv`` and ``newproxy`` removed;
* the protection Redis puts on the globals.  Redis marks every table reachable from ``_G``
  read-only inside its patched Lua; stock Lua 5.1 has no such flag, so each protected table
  is replaced by an empty *proxy* whose ``__index`` is the real table and whose
  ``__newindex`` raises ``Attempt to modify a readonly table``.  The real globals table
  raises ``Script attempted to access nonexistent global variable 'x'`` for a missing name.
  ``next`` / ``pairs`` / ``rawget`` / ``rawset`` / ``setmetatable`` see through (or refuse)
  the proxies, and the running thread's global table is the proxy, so chunks made by
  ``loadstring`` inside a script are sandboxed too;
* ``redis.*`` (call, pcall, error_reply, status_reply, sha1hex, log and its levels,
  setresp, set_repl and the REPL_* constants, replicate_commands, breakpoint, debug,
  acl_check_cmd, REDIS_VERSION[_NUM]), ``math.random`` on Redis's rand48 generator: the
  script-facing API, ``redis_api.py``, pasted at ``__REDIS_API__``;
* the error handler Redis installs (``__redis__err__handler``): a string error becomes
  ``{err='ERR ' .. msg}``, and the table gets the ``source`` / ``line`` of the script frame
  that failed (C frames and this bootstrap's own frames are skipped, as Redis skips the C
  frame of ``redis.call``);
* the protection, the count hook, the wrapped globals (loadstring, load, collectgarbage,
  coroutine.*, getmetatable, ...) and the string metatable: ``guard.py``, pasted at
  ``__GUARD__``;
* the Lua -> RESP conversion of a script's result (``replies.LUA_TO_RESP``, pasted at
  ``__LUA_TO_RESP__``), the libraries (``lib_*.py``, at ``__LIBS__``) and the FUNCTION
  library loader (``loader.py``, at ``__LOADER__``): pieces of this one chunk, so they
  share its locals.

The instruction-count hook (``hookfn``) calls ``py.hook`` every ``HOOK_INSTRUCTIONS`` VM
instructions; the engine answers other clients from there while a script is busy and
returns true once the script must die (SCRIPT KILL, shutdown); the hook then raises the
kill error on every line and instruction, so a ``pcall`` in the script cannot swallow it.

**The sandbox's guarantees** (issue 26), each with the test that holds it
(``tests/ferrumkv/test_sandbox.py`` unless named; ``SANDBOX`` in test_scripting_diff.py
compares the texts with redis-server 7.0.15 byte for byte):

1. No binary chunk is loaded anywhere: EVAL bodies, ``loadstring``, ``load`` readers and
   FUNCTION LOAD parse text only (``text_only``), with Lua's parser error for ESC, as
   Redis's Lua, which has no undump.  Lua 5.1 has no bytecode verifier: a crafted chunk
   reads and writes the heap.  (test_binary_chunks_refused_everywhere)
2. While a FUNCTION library's code runs, its only global is the small ``redis`` table
   (Redis 7.0.15's load-time globals): no coroutine exists to call register_function
   from.  (test_function_load_sees_only_redis)
3. Every library table, ``_G`` and the string metatable are read-only: proxies for the
   tables, and ``getmetatable('')`` is a read-only view whose ``__index`` is the sandbox's
   ``string`` (the real metatable points at the hidden copy), so no user can change
   ``('x'):upper()`` for another user's scripts or the server's helpers.
   (test_string_metatable_read_only_across_acl_users)
4. The count hook runs in every thread a script reaches: the main thread, each coroutine
   (set on create and again on every resume), each API function's coroutine (``cfunc``,
   set on every call); a kill is raised again in the thread a coroutine returns to.
   Python never calls a script's metamethod: struct takes its arguments as plain values,
   cmsgpack reads tables raw (lua_next, present keys only), and Python's long loops
   (cmsgpack) call the busy hook every 4096 values.  (test_metamethods_never_run_from_python,
   test_busy_and_kill_inside_library_calls, test_coroutine_kept_by_a_library_stays_hooked)
5. No state is left for the next script: globals cannot be written, the collector's
   ``stop`` / ``setpause`` / ``setstepmul`` are undone after the run (with a full
   collection), a run leaving the heap past its limit is collected, debug.sethook's
   per-thread table is purged, ``redis.setresp`` and the kill flag are reset; the registry
   is out of reach (no ``debug``).  (test_collector_cannot_be_left_stopped,
   test_globals_and_registry_do_not_leak)
6. The heap is bounded: past ``engine.LUA_HEAP_LIMIT_BYTES`` (after a full collection) the
   count hook raises ``not enough memory``.  (test_lua_heap_is_bounded)  INFO memory
   reports it (``used_memory_lua`` and the other 7.0 fields).
   (test_info_memory_script_fields)
7. No Python object or text reaches a script: a redis.call error is Redis's error table
   for pcall, xpcall handlers and coroutine.resume alike; a fault in a bridge is a fixed
   text (``replies.LIBRARY_FAULT``, logged); library errors are the C libraries' texts.
   (test_library_errors_are_lua_texts, test_no_python_text_from_hostile_library_calls,
   test_redis_log_writes_the_log)
8. All of it under hostile input: test_fuzz_hostile_scripts (seeded, 20 s): the server
   process never dies, another client is answered after every script and while one is
   busy, a probe finds a clean sandbox after every script.

**What lupa over stock Lua 5.1 cannot give, and what was chosen instead.**  Redis patches
Lua with a read-only flag on tables; stock 5.1 has none, so protected tables are proxies
(rawget / rawset / next / setmetatable know them).  lupa binds each Lua object it hands to
Python to the thread it came from, and Lua frees a collected coroutine with its stack: a
Lua object created in a coroutine and kept by Python (a registered callback, a traceback
holding an argument) is a use-after-free (reproduced: a segfault).  So no Lua object
crosses to Python from a coroutine except for the length of one call: callbacks are
registered from the main thread only (guarantee 2, and register_function refuses a
coroutine), and the bridges keep no argument in an error's frame.  lupa's ``max_memory``
bounds the heap in the allocator, but an allocation failing in one of lupa's unprotected
API calls is a Lua panic that ends the process, so the bound is checked by the count hook
instead (a single C call such as ``string.rep`` can pass it before the next hook).  One VM
serves EVAL and FUNCTION (Redis has one each): a library cannot see EVAL's globals nor
write its own, so the sharing is not observable by scripts.
"""

from __future__ import annotations

from . import lib_bit, lib_cjson, lib_cmsgpack, lib_struct
from .guard import GUARD
from .loader import LOADER
from .redis_api import REDIS_API
from .replies import LUA_TO_RESP

HOOK_INSTRUCTIONS = 100_000   # VM instructions between two hook calls (Redis: 100000)
BOOT_CHUNK = "=ferrumkv"      # chunk name of the bootstrap: its frames are not the script's

BOOTSTRAP = r"""
local py = ...
local G = _G
local type, error, next, select, tostring, tonumber, rawget, rawset, rawequal =
      type, error, next, select, tostring, tonumber, rawget, rawset, rawequal
local setmetatable, getmetatable, pcall, xpcall, unpack = setmetatable, getmetatable, pcall, xpcall, unpack
local fmt, concat, gsub, sub, floor = string.format, table.concat, string.gsub, string.sub, math.floor
local dbg, loadstring, setfenv, newproxy = debug, loadstring, setfenv, newproxy
local co_create, co_wrap, co_running = coroutine.create, coroutine.wrap, coroutine.running
local BOOT = dbg.getinfo(1, 'S').source   -- this chunk: its frames are not the script's
local HOOK_N = __HOOK_N__
local pycall, pyhook = py.pcall, py.hook
local co_yield = coroutine.yield
local byte = string.byte
local hookfn             -- the count hook, defined with the protection below
local running = false    -- inside a script's (or a library load's) xpcall
local in_helper = false  -- inside a reply helper Python called (see `helper`)
local threads_made = 0   -- coroutines given a hook since the hook table was last purged
local killed = false     -- SCRIPT KILL seen: the hook raises the kill error on every line

-- cfunc(f): f behind a C frame.  Redis's API functions are C functions: Lua 5.1 keeps the
-- script's frame when a script tail-calls one (`return bit.band()`), and luaL_error puts
-- the script's position in front of a string error.  A Lua function would replace the
-- script's frame on a tail call, losing the line.  So each API function written in Lua is
-- a userdata whose __call is a coroutine.wrap closure (C): its string errors get the
-- caller's position from coroutine.wrap, as luaL_error gives them; a table error passes
-- as it is.  An error ends that coroutine, so a fresh one replaces it first.
-- Each call sets the count hook on the coroutine it runs in (a Lua 5.1 thread inherits
-- its creator's C hook but not debug.sethook's Lua function, so without this an API
-- function's metamethods and loops ran hook-less: no -BUSY, no SCRIPT KILL).
local cfuncs = setmetatable({}, {__mode = 'k'})     -- the objects cfunc made
local function cfunc(f)
  local obj = newproxy(true)
  cfuncs[obj] = true
  local mt = getmetatable(obj)
  local function loop(_, ...)
    dbg.sethook(hookfn, killed and 'l' or '', killed and 1 or HOOK_N)
    local r = {pcall(f, ...)}
    if killed then r = {false, {err = "ERR Script killed by user with SCRIPT KILL..."}} end
    if not r[1] then
      threads_made = threads_made + 1
      mt.__call = co_wrap(loop)
      error(r[2], 0)
    end
    return loop(co_yield(unpack(r, 2, table.maxn(r))))
  end
  mt.__call = co_wrap(loop)
  mt.__metatable = false
  return obj
end

-- The sandbox's globals: a new table holding what Redis 7.0 keeps (the runtime's own _G
-- stays as it is for lupa); library tables are copies, so changes stay in the sandbox.
local SG = {}
local function copy(t) local c = {} for k, v in next, t do c[k] = v end return c end
for _, name in ipairs({"_VERSION", "assert", "collectgarbage", "error", "gcinfo",
                       "getmetatable", "ipairs", "load", "loadstring", "next", "pairs",
                       "pcall", "rawequal", "rawget", "rawset", "select", "setmetatable",
                       "tonumber", "tostring", "type", "unpack", "xpcall"}) do
  SG[name] = G[name]
end
for _, name in ipairs({"string", "math", "table", "coroutine"}) do SG[name] = copy(G[name]) end
local math, coroutine = SG.math, SG.coroutine

-- ---- the redis table ----
local lua_resp = 2                 -- redis.setresp(); reset before each run
__REDIS_API__

-- ---- libraries (bit, cjson, cmsgpack, struct): lib_*.py ----
do
__LIBS__
end

-- ---- the error handler ----
local function handler(err)
  running = false          -- the run is over: the hook raises nothing from here on
  local level = 2
  local i = dbg.getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.source == BOOT) do
    level = level + 1
    i = dbg.getinfo(level, 'nSl')
  end
  err = call_error(err) or err
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
SG.__redis__err__handler = handler

__GUARD__
__LUA_TO_RESP__

-- ---- running a script ----
local function error_text(e, name)
  if type(e) ~= 'table' then
    return fmt("ERR Error running script %s, %.100s", name, tostring(e))
  end
  local msg = rawget(e, 'err')
  if type(msg) ~= 'string' and type(msg) ~= 'number' then msg = 'ERR unknown error' end
  local src, line = rawget(e, 'source'), rawget(e, 'line')
  if (type(src) == 'string' or type(src) == 'number')
     and (type(line) == 'string' or type(line) == 'number') then
    return fmt("%s script: %s, on %s:%s.", tostring(msg), name, tostring(src), tostring(line))
  end
  return tostring(msg)
end

local function finish(ok, res, proto, name)
  after_run()
  if not ok then return false, error_text(res, name) end
  if type(res) == 'string' then return true, '$' .. #res .. '\r\n' .. res .. '\r\n' end
  if type(res) == 'table' then
    local e = rawget(res, 'err')
    if type(e) == 'string' then return false, e end
  end
  local out = {}
  local ok2 = pcall(enc, res, out, proto)
  if not ok2 then return false, "ERR reached lua stack limit" end   -- nesting too deep
  return true, concat(out)
end

-- debug.sethook keeps each thread's hook function in a registry table keyed by the
-- thread's address, and never drops the entry of a dead thread: a script making ten
-- million coroutines would leave ten million entries behind.  So once a run has set
-- hooks on HOOK_TABLE_PURGE threads, the table is emptied before the next run (the
-- main thread's hook is set again; each API coroutine sets its own on every call).
local HOOK_TABLE_PURGE = 64
local hooktable
local function purge_hooks()
  threads_made = 0
  if hooktable then
    for k in next, hooktable do hooktable[k] = nil end
  end
  dbg.sethook(hookfn, '', HOOK_N)
end

local function prepare()
  lua_resp = 2
  in_helper = false
  if killed then
    killed = false
    dbg.sethook(hookfn, '', HOOK_N)   -- back from the line hook of a killed run
  end
  if threads_made >= HOOK_TABLE_PURGE then purge_hooks() end
end

-- an EVAL script with KEYS and ARGV as tables (the engine builds them for long calls)
local function run_tables(f, name, proto, keys, argv)
  rawset(real_globals, 'KEYS', keys)
  rawset(real_globals, 'ARGV', argv)
  prepare()
  running = true
  local ok, res = xpcall(f, handler)
  running = false
  return finish(ok, res, proto, name)
end

-- an EVAL script with its nkeys keys and then its arguments as varargs
local function run(f, name, proto, nkeys, ...)
  local keys, argv = {...}, {}
  local n = select('#', ...)
  for i = nkeys + 1, n do
    argv[i - nkeys] = keys[i]
    keys[i] = nil
  end
  return run_tables(f, name, proto, keys, argv)
end

-- a function library's callback: fn(keys, args)
local function run_function(f, name, proto, keys, argv)
  prepare()
  running = true
  local ok, res = xpcall(function() return f(keys, argv) end, handler)
  running = false
  return finish(ok, res, proto, name)
end

local function compile(body, chunkname)
  local f, e = loadstring(text_only(body), chunkname)
  if not f then return nil, e end
  setfenv(f, env)
  return f, nil
end

local function compile_in(body, chunkname, fenv)
  local f, e = loadstring(text_only(body), chunkname)
  if not f then return nil, e end
  setfenv(f, fenv)
  return f, nil
end

__LOADER__

dbg.sethook(hookfn, '', HOOK_N)
for _, v in next, dbg.getregistry() do     -- find debug.sethook's table (see purge_hooks)
  if type(v) == 'table' and rawget(v, (next(v))) == hookfn then hooktable = v end
end

-- helper(f): f for Python to call while a script runs (reply tables); the hook raises
-- nothing inside it
local function helper(f)
  return function(...)
    in_helper = true
    local r = f(...)
    in_helper = false
    return r
  end
end

local exports = {
  lua_memory = function() return gc('count') end,
  run = run, run_tables = run_tables, run_function = run_function, compile = compile,
  compile_in = compile_in, load_library = load_library, err_table = err_table,
  protect = protect,
  ok_table = function(s) return {ok = s} end,
  double_table = function(d) return {double = d} end,
  big_table = function(s) return {big_number = s} end,
  verbatim_table = function(f, s) return {verbatim_string = {format = f, string = s}} end,
  map_table = function(t) return {map = t} end,
  set_table = function(t) return {set = t} end,
  kv_table = function(...)
    local t, n = {}, select('#', ...)
    for i = 1, n, 2 do local k, v = select(i, ...); t[k] = v end
    return t
  end,
  -- kv_fill(t, k1, v1, ...): a chunk of a big map (Lua's C stack takes ~8000 arguments);
  -- the key that cannot index a table (nil, NaN), else nil
  kv_fill = function(t, ...)
    for i = 1, select('#', ...), 2 do
      local k, v = select(i, ...)
      if k == nil then return 'nil' elseif k ~= k then return 'NaN' end
      t[k] = v
    end
  end,
  set_from = function(...)
    local t = {}
    for i = 1, select('#', ...) do t[(select(i, ...))] = true end
    return t
  end,
}
local ENTRY = {lua_memory = true, run = true, run_tables = true, run_function = true,
               compile = true, compile_in = true, load_library = true, protect = true}
for k, f in next, exports do
  if not ENTRY[k] then exports[k] = helper(f) end
end
return exports
"""


def bootstrap_source(heap_limit_bytes: int) -> str:
    """The bootstrap with its pieces and constants filled in."""
    libs = "\n" + lib_bit.LUA + lib_cjson.LUA + lib_cmsgpack.LUA + lib_struct.LUA
    return (BOOTSTRAP.replace("__GUARD__\n", GUARD[1:])
            .replace("__LUA_TO_RESP__\n", LUA_TO_RESP[1:])
            .replace("__REDIS_API__\n", REDIS_API[1:])
            .replace("__LOADER__", LOADER[1:-1])
            .replace("__LIBS__", libs).replace("__BOOT__", BOOT_CHUNK)
            .replace("__HOOK_N__", str(HOOK_INSTRUCTIONS))
            .replace("__HEAP_LIMIT_KB__", str(heap_limit_bytes // 1024)))
