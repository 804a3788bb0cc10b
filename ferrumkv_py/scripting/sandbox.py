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

-- ---- protection ----
local proxies = setmetatable({}, {__mode = 'k'})    -- proxy -> real table
local function readonly() error("Attempt to modify a readonly table", 2) end
local function protect(real)
  local proxy = {}
  proxies[proxy] = real
  setmetatable(proxy, {__index = real, __newindex = readonly, __metatable = false})
  return proxy
end
local real_globals_, G_MT_VIEW   -- the globals and a read-only view of their metatable
-- The wrappers below check their arguments as the C functions they stand for, and raise
-- with level 2: the error then carries the caller's position (the script's line, none
-- under a direct pcall), as luaL_argerror does, and never this bootstrap's.
local function argname(n, i, v) if i > n then return "no value" end return type(v) end
local function argerror(i, fname, msg, level)
  level = level or 3
  local caller = dbg.getinfo(level, 'S')        -- called from C (pcall): no name, as Lua
  if caller and caller.what == 'C' then fname = '?' end
  error(fmt("bad argument #%d to '%s' (%s)", i, fname, msg), level)
end
local function next_(t, k)
  local real = proxies[t]
  if real then return next(real, k) end
  if type(t) ~= 'table' then argerror(1, 'next', "table expected, got " .. type(t)) end
  return next(t, k)
end
SG.next = next_
SG.pairs = function(t)
  if type(t) ~= 'table' then
    error(fmt("bad argument #1 to 'pairs' (table expected, got %s)",
              t == nil and "no value" or type(t)), 0)
  end
  return next_, t, nil
end
-- Redis 7.0's pcall: an error table with a string `err` is returned as that string
SG.pcall = function(...)
  if select('#', ...) == 0 then return nil end
  local r = {n = 0}
  local function keep(...) r = {n = select('#', ...), ...} end
  keep(pcall(...))
  if not r[1] then r[2] = call_error(r[2]) or r[2] end
  -- a C function that pcall calls directly has no name in its argument errors
  if not r[1] and cfuncs[(...)] and type(r[2]) == 'string' then
    r[2] = gsub(r[2], "^(bad argument #%d+ to )'[%w_]*'", "%1'?'", 1)
  end
  if not r[1] and type(r[2]) == 'table' then
    local m = r[2].err
    if type(m) == 'string' or type(m) == 'number' then r[2] = m end
  end
  return unpack(r, 1, r.n)
end
-- xpcall's handler gets a redis.call error as Redis's table, never the Python exception
-- lupa raised it as (no Python object is reachable from a script)
SG.xpcall = function(...)
  local n = select('#', ...)
  local f, h = ...
  if n < 2 then argerror(2, 'xpcall', "value expected") end
  return xpcall(f, function(e) return h(call_error(e) or e) end)
end
-- redis.call is lupa's wrapper of a Python method: tostring shows it as a function, never
-- Python's repr
do
  local tostring, CALL_TEXT = tostring, tostring(function() end)
  SG.tostring = function(...)
    if select('#', ...) == 0 then argerror(1, 'tostring', "value expected") end
    local v = ...
    if v == py.call then return CALL_TEXT end
    local s = tostring(v)
    return s
  end
end
SG.rawget = function(t, k)
  local real = proxies[t]
  if real then return rawget(real, k) end
  if type(t) ~= 'table' then argerror(1, 'rawget', "table expected, got " .. type(t)) end
  return rawget(t, k)
end
SG.rawset = function(t, k, v)
  if proxies[t] then error("Attempt to modify a readonly table", 0) end
  if type(t) ~= 'table' then argerror(1, 'rawset', "table expected, got " .. type(t)) end
  return rawset(t, k, v)
end
-- userdata here are lupa's Python objects (redis.call, the bridges) and cjson.null: their
-- metatables are shared by every Python object, so scripts never see them
SG.getmetatable = function(...)
  if select('#', ...) == 0 then argerror(1, 'getmetatable', "value expected") end
  local t = ...
  if type(t) == 'userdata' then return nil end
  local real = proxies[t]
  if real then      -- a read-only table: _G has Redis's protecting metatable, others none
    if real == real_globals_ then return G_MT_VIEW end
    return nil
  end
  return getmetatable(t)
end
SG.setmetatable = function(...)
  local n = select('#', ...)
  local t, m = ...
  if proxies[t] then error("Attempt to modify a readonly table", 0) end
  if type(t) ~= 'table' then argerror(1, 'setmetatable', "table expected, got " .. argname(n, 1, t)) end
  if m ~= nil and type(m) ~= 'table' then argerror(2, 'setmetatable', "nil or table expected") end
  local old = dbg.getmetatable(t)
  if old and rawget(old, '__metatable') ~= nil then error("cannot change a protected metatable", 2) end
  return setmetatable(t, m)
end
local env  -- the protected globals, set below
-- No binary chunks.  Lua 5.1 loads precompiled bytecode (a chunk starting with ESC, as
-- string.dump makes) without verifying it; Redis's Lua only parses text, so ESC is an
-- unexpected symbol.  Parsing ' ' .. chunk gives the parser's own error with the same
-- chunk name and line: "[string "\27LuaQ"]:1: unexpected symbol near 'char(27)'".
local function text_only(s)
  if type(s) == 'string' and byte(s, 1) == 27 then return ' ' .. s end
  return s
end
SG.loadstring = function(...)
  local n = select('#', ...)
  local s, name = ...
  if type(s) ~= 'string' and type(s) ~= 'number' then
    argerror(1, 'loadstring', "string expected, got " .. argname(n, 1, s))
  end
  s = tostring(s)
  if name == nil then name = s
  elseif type(name) == 'number' then name = tostring(name)
  elseif type(name) ~= 'string' then argerror(2, 'loadstring', "string expected, got " .. type(name)) end
  local f, e = loadstring(text_only(s), name)
  if f then setfenv(f, env) end
  return f, e
end
do
  local load = load
  SG.load = function(...)
    local n = select('#', ...)
    local fn, name = ...
    if type(fn) ~= 'function' then
      argerror(1, 'load', "function expected, got " .. argname(n, 1, fn))
    end
    if name ~= nil and type(name) ~= 'string' and type(name) ~= 'number' then
      argerror(2, 'load', "string expected, got " .. type(name))
    end
    local reader
    do
      local first = true
      reader = function()
        local piece = fn()
        if first then
          first = false
          if type(piece) == 'number' then piece = tostring(piece) end
          return text_only(piece)
        end
        return piece
      end
    end
    local f, e = load(reader, name)
    if f then setfenv(f, env) end
    return f, call_error(e) or e
  end
end
-- The collector cannot be left stopped or slowed for the next script: a script's
-- 'stop', 'setpause' and 'setstepmul' last until it ends (after_run restores Lua's
-- defaults and collects what it left).  Redis keeps them, and steps the collector from C
-- every 50 scripts.  And a run that leaves the heap past gc_limit_kb is followed by a
-- full collection, so garbage a script made cannot stay for want of later allocations;
-- the limit is then twice what survived, and at least GC_FULL_KB.
local gc = collectgarbage
local GC_PAUSE, GC_STEPMUL = 200, 200     -- Lua 5.1's LUAI_GCPAUSE and LUAI_GCMUL
local GC_FULL_KB = 64 * 1024
local gc_limit_kb = GC_FULL_KB
local HEAP_LIMIT_KB = __HEAP_LIMIT_KB__
if gc_limit_kb > HEAP_LIMIT_KB / 2 then gc_limit_kb = HEAP_LIMIT_KB / 2 end
local gc_touched = false
do
  local collectgarbage = gc
  local GC_OPTIONS = {stop = true, restart = true, collect = true, count = true, step = true,
                      setpause = true, setstepmul = true}
  SG.collectgarbage = function(...)
    local n = select('#', ...)
    local opt, arg = ...
    if opt ~= nil then
      if type(opt) == 'number' then opt = tostring(opt) end
      if type(opt) ~= 'string' then argerror(1, 'collectgarbage', "string expected, got " .. type(opt)) end
      if not GC_OPTIONS[opt] then argerror(1, 'collectgarbage', "invalid option '" .. opt .. "'") end
    end
    if arg ~= nil and tonumber(arg) == nil then
      argerror(2, 'collectgarbage', "number expected, got " .. type(arg))
    end
    if opt == 'stop' or opt == 'setpause' or opt == 'setstepmul' then gc_touched = true end
    local r = collectgarbage(opt, arg)
    return r
  end
end
local function after_run()
  if gc_touched then
    gc_touched = false
    gc('setpause', GC_PAUSE)
    gc('setstepmul', GC_STEPMUL)
    gc('restart')
    gc('collect')
  elseif gc('count') > gc_limit_kb then
    gc('collect')
  else
    return
  end
  local live = gc('count')
  gc_limit_kb = live * 2 > GC_FULL_KB and live * 2 or GC_FULL_KB
  if gc_limit_kb > HEAP_LIMIT_KB / 2 then gc_limit_kb = HEAP_LIMIT_KB / 2 end
end
local function kill_error() return {err = "ERR Script killed by user with SCRIPT KILL..."} end
hookfn = function()
  -- errors are raised only while a script runs (inside its xpcall: its frames and the
  -- libraries it called), never in the reply helpers Python calls in the middle of
  -- redis.call (a Lua error there would become a Python one) nor after the run
  local in_boot = not running or in_helper
  -- the heap bound (engine.LUA_HEAP_LIMIT_BYTES): checked here, not by the allocator, as
  -- an allocation failing outside a protected call (lupa's table_from, luaL_ref) is a
  -- Lua panic that ends the process.  A single C call (string.rep) can pass it before
  -- the next hook.
  if gc('count') > HEAP_LIMIT_KB then
    gc('collect')
    if gc('count') > HEAP_LIMIT_KB and not in_boot then error("not enough memory", 0) end
  end
  if not killed and pyhook() then
    -- from now on the hook fires on every line and instruction of this thread, so a
    -- pcall that catches the kill error is left at once (Redis switches to LUA_MASKLINE);
    -- coroutine.resume and the API functions raise it again in the thread they return to
    killed = true
    dbg.sethook(hookfn, 'l', 1)
  end
  if killed and not in_boot then error(kill_error()) end
end
local function sethook_on(co)
  threads_made = threads_made + 1
  dbg.sethook(co, hookfn, killed and 'l' or '', killed and 1 or HOOK_N)
  return co
end
local function lua_function(f, fname)
  if type(f) ~= 'function' or dbg.getinfo(f, 'S').what == 'C' then
    argerror(1, fname, "Lua function expected", 4)   -- level 4: the wrapper's caller
  end
end
coroutine.create = function(f)
  lua_function(f, 'create')
  return sethook_on(co_create(f))
end
-- resume sets the hook again: a coroutine a FUNCTION library keeps in an upvalue outlives
-- the purge of the hook table (purge_hooks) and must not run hook-less after it
do
  local resume = coroutine.resume
  -- pass the results on, unless the run was killed meanwhile: then the kill error, here
  local function pass(ok, ...)
    if killed then
      dbg.sethook(hookfn, 'l', 1)
      error(kill_error())
    end
    if not ok then return ok, call_error((...)) or ... end   -- as xpcall's handler
    return ok, ...
  end
  coroutine.resume = function(co, ...)
    if type(co) ~= 'thread' then argerror(1, 'resume', "coroutine expected") end
    dbg.sethook(co, hookfn, killed and 'l' or '', killed and 1 or HOOK_N)
    return pass(resume(co, ...))
  end
end
coroutine.wrap = function(f)
  lua_function(f, 'wrap')
  local co = sethook_on(co_create(f))
  return function(...)
    local r = {coroutine.resume(co, ...)}
    if not r[1] then error(r[2], 0) end
    return select(2, unpack(r))
  end
end


local real_globals = SG
for k, v in next, SG do
  if type(v) == 'table' then rawset(SG, k, protect(v)) end
end
env = protect(real_globals)
rawset(real_globals, '_G', env)
real_globals_ = real_globals
-- The string metatable is shared by every string in the VM, the server's own helpers
-- included: its __index is the sandbox's string table, and getmetatable('') returns a
-- read-only view of it (Redis marks both read-only), so no script can replace
-- ('x'):upper() for the scripts of other users.
do
  local smt = getmetatable('')
  smt.__index = proxies[SG.string]
  smt.__metatable = protect({__index = SG.string})
end
setmetatable(real_globals, {__index = function(t, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})
G_MT_VIEW = protect({__index = getmetatable(real_globals).__index, __newindex = readonly})

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
    return (BOOTSTRAP.replace("__LUA_TO_RESP__\n", LUA_TO_RESP[1:])
            .replace("__REDIS_API__\n", REDIS_API[1:])
            .replace("__LOADER__", LOADER[1:-1])
            .replace("__LIBS__", libs).replace("__BOOT__", BOOT_CHUNK)
            .replace("__HOOK_N__", str(HOOK_INSTRUCTIONS))
            .replace("__HEAP_LIMIT_KB__", str(heap_limit_bytes // 1024)))
