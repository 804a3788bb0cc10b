"""The sandbox's guard, as Lua source: a piece of the bootstrap chunk (``sandbox.py``, pasted
at ``__GUARD__``), so it shares the bootstrap's locals (``SG``, ``py``, ``dbg``, ``cfuncs``,
``call_error``, ``killed``, ``running``, ``in_helper``, ``threads_made``, ``hookfn``).

It holds guarantees 1 and 3-6 of ``sandbox.py``'s list: the read-only proxies and the
wrappers that see through or refuse them (``next``, ``pairs``, ``rawget``, ``rawset``,
``getmetatable``, ``setmetatable``, ``pcall``, ``xpcall``, ``tostring``), text-only
``loadstring`` / ``load``, ``collectgarbage`` and ``after_run``, the count hook (busy
scripts, SCRIPT KILL, the heap bound), the hooked coroutines, the protected globals and
the string metatable.  The wrappers check their arguments as the C functions they stand
for, so their errors read as Lua's.

Complexity: O(1) per wrapped call; after_run is O(1) unless it collects (O(heap)).
"""

GUARD = r"""
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
local KILLED_TEXT = "ERR Script killed by user with SCRIPT KILL..."
local kill_text = KILLED_TEXT     -- or LOAD_TIMEOUT_TEXT when a library's load ran too long
local LOAD_TIMEOUT_TEXT = "ERR FUNCTION LOAD timeout"
local function kill_error() return {err = kill_text} end
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
  local stop = not killed and pyhook()
  if stop then
    -- py.hook: true to kill the run (SCRIPT KILL, shutdown), 2 when a FUNCTION LOAD has
    -- run past its 500 ms (Redis's luaEngineLoadHook)
    kill_text = stop == 2 and LOAD_TIMEOUT_TEXT or KILLED_TEXT
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

"""
