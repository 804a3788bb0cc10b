"""FUNCTION LOAD's Lua side: a library's code runs once in a load-time sandbox.

``load_library(body)`` compiles the library as ``@user_function`` (text only, no binary
chunk) in an environment where nothing is writable and, while the library's code runs, the
only global is a small ``redis`` table (register_function, log and its levels,
REDIS_VERSION[_NUM]), as Redis 7.0.15: no ``coroutine`` (a callback registered from a
coroutine stayed bound to that thread in lupa, a use-after-free once the thread was
collected), no ``string``, ``type`` or ``pcall``; ``redis.register_function`` (both the
positional and the named-arguments form) checks its arguments with Redis 7.0's texts and
hands name, callback, description and flags to Python (``commands/functions.py``).  The
callbacks keep the library's environment, where ``redis`` is the full API again once the
load is over.  This is a piece of the bootstrap chunk (``sandbox.py``, ``__LOADER__``): it
uses the sandbox's locals (``real_globals``, ``readonly``, ``handler``, ``redis``).

Complexity: O(size of the library) to load.
"""

LOADER = r"""
-- ---- FUNCTION libraries ----
-- A library's code runs once, at FUNCTION LOAD, in its own environment: the globals are
-- readable, nothing is writable, and `redis` is a small table with register_function and
-- log; its callbacks keep that environment, where `redis` is the full API again once the
-- load is over (Redis 7.0 gives the loading code the same restricted view).
local loading = nil      -- the load-time redis table while a library loads
local function lib_env()
  return setmetatable({}, {__index = function(t, k)
    if loading then
      -- while a library loads, `redis` is all there is (Redis 7.0.15's load-time globals):
      -- no coroutine can exist to call register_function from (lupa would keep the
      -- callback bound to that thread, freed with it: a use-after-free at FUNCTION DELETE)
      if k == 'redis' then return loading end
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    local v = rawget(real_globals, k)
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    return v
  end, __newindex = readonly, __metatable = false})
end
local function register_function(...)
  local n = select('#', ...)
  local a, b = ...
  local name, cb, flags, desc
  if n == 1 then
    if type(a) ~= 'table' then
      error({err = "ERR calling redis.register_function with a single argument is only "
                .. "applicable to Lua table (representing named arguments)."})
    end
    for k in next, a do
      if k ~= 'function_name' and k ~= 'callback' and k ~= 'flags' and k ~= 'description' then
        error({err = "ERR unknown argument given to redis.register_function"})
      end
    end
    name, cb, flags, desc = rawget(a, 'function_name'), rawget(a, 'callback'),
                            rawget(a, 'flags'), rawget(a, 'description')
    if name == nil then
      error({err = "ERR redis.register_function must get a function name argument"})
    end
    if cb == nil then
      error({err = "ERR redis.register_function must get a callback argument"})
    end
    if type(name) ~= 'string' and type(name) ~= 'number' then
      error({err = "ERR function_name argument given to redis.register_function must be a string"})
    end
    if type(cb) ~= 'function' then
      error({err = "ERR callback argument given to redis.register_function must be a function"})
    end
    if desc ~= nil and type(desc) ~= 'string' and type(desc) ~= 'number' then
      error({err = "ERR description argument given to redis.register_function must be a string"})
    end
    if flags ~= nil and type(flags) ~= 'table' then
      error({err = "ERR flags argument to redis.register_function must be a table representing function flags"})
    end
  elseif n == 2 then
    name, cb = a, b
    if type(name) ~= 'string' and type(name) ~= 'number' then
      error({err = "ERR first argument to redis.register_function must be a string"})
    end
    if type(cb) ~= 'function' then
      error({err = "ERR second argument to redis.register_function must be a function"})
    end
  else
    error({err = "ERR wrong number of arguments to redis.register_function"})
  end
  name = tostring(name)
  if desc ~= nil then desc = tostring(desc) end
  local fl = {}
  if flags then
    for i = 1, #flags do
      if type(flags[i]) ~= 'string' then
        error({err = "ERR unknown flag given"})
      end
      fl[i] = flags[i]
    end
  end
  if co_running() then   -- never from a coroutine (see lib_env); a second guard
    error({err = "ERR redis.register_function can only be called on FUNCTION LOAD command"})
  end
  local e = py.register(name, cb, desc, unpack(fl))
  if e then error({err = e}) end
end
local function load_library(body)
  local f, e = loadstring(text_only(body), "@user_function")
  if not f then return nil, e end
  setfenv(f, lib_env())
  loading = {register_function = register_function, log = redis.log,
             LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
             REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM}
  setmetatable(loading, {__index = function(t, k)
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end, __newindex = readonly, __metatable = false})
  killed = false
  dbg.sethook(hookfn, '', HOOK_N)   -- back from the line hook of a killed run
  running = true
  local ok, res = xpcall(f, handler)
  running = false
  loading = nil
  if ok then return true, nil end
  if type(res) == 'table' and type(rawget(res, 'err')) == 'string' then
    return false, rawget(res, 'err')
  end
  return false, tostring(res)
end
"""
