"""The ``redis`` table a script sees, and ``math.random`` on Redis's rand48: Lua source.

This is a piece of the bootstrap chunk (``sandbox.py``, pasted at ``__REDIS_API__``): the
script-facing API, apart from the sandbox's protection, error handler and run functions.  It
builds ``redis.call`` / ``pcall`` (the Python bridge, ``engine.py``), ``error_reply`` /
``status_reply`` (Redis's ``luaPushErrorBuff`` rules), ``sha1hex``, ``log`` and its levels,
``setresp``, ``set_repl`` and the ``REPL_*`` constants, ``replicate_commands``,
``breakpoint``, ``debug``, ``acl_check_cmd``, ``REDIS_VERSION[_NUM]``, and ``math.random`` /
``randomseed`` (one rand48 sequence for the server's life, in Python).

It uses the bootstrap's locals defined before it (``py``, ``cfunc``, ``SG``, ``math``,
``lua_resp`` and the captured standard functions) and defines ``err_table`` and
``call_error``, which the error handler and ``pcall`` after it use.

Complexity: O(arguments) per call of each function.
"""

REDIS_API = r"""
local function err_table(msg) return {err = msg} end
-- luaPushErrorBuff: "-CODE msg" -> "CODE msg", "msg" -> "ERR msg", CR/LF trimmed at both ends
local function error_buff(s)
  local code, msg = 'ERR', s
  if sub(s, 1, 1) == '-' then
    local sp = string.find(s, ' ', 1, true)
    if sp then code, msg = sub(s, 2, sp - 1), sub(s, sp + 1) else msg = sub(s, 2) end
  end
  msg = gsub(gsub(msg, '^[\r\n]+', ''), '[\r\n]+$', '')
  return code .. ' ' .. msg
end
local redis = {}
-- redis.call is the Python bridge itself (a C-level callable, as Redis's C redis.call):
-- Lua 5.1 keeps the script's frame when a script tail-calls it (`return redis.call(...)`),
-- so an error still names the script's line.  Its error is a Python exception (lupa
-- raises it as a userdata); the error handler and pcall turn it into Redis's error table.
redis.call = py.call
redis.pcall = function(...)
  local v, e = pycall(...)
  if e then return e end
  return v
end
local unwrap = py.unwrap
-- a redis.call error as Redis's table {err='CODE message'}, else nil
local function call_error(e)
  if type(e) == 'userdata' then
    local m = unwrap(e)
    if m then return {err = m} end
  end
end
-- error_reply / status_reply take exactly one string; anything else is answered (not
-- raised) with Redis's error table
local function reply_arg(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then return nil end
  return s
end
local REPLY_ARG_ERR = "ERR wrong number or type of arguments"
redis.error_reply = function(...)
  local s = reply_arg(...)
  if not s then return err_table(REPLY_ARG_ERR) end
  if sub(s, 1, 1) ~= '-' then s = '-' .. s end
  return err_table(error_buff(s))
end
redis.status_reply = function(...)
  local s = reply_arg(...)
  if not s then return err_table(REPLY_ARG_ERR) end
  return {ok = s}
end
redis.sha1hex = cfunc(function(...)
  if select('#', ...) ~= 1 then error(err_table("ERR wrong number of arguments")) end
  local s = ...
  if type(s) == 'number' then s = tostring(s) end
  if type(s) ~= 'string' then s = '' end
  return py.sha1hex(s)
end)
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.log = cfunc(function(...)
  local n = select('#', ...)
  if n < 2 then error(err_table("ERR redis.log() requires two arguments or more.")) end
  local level = ...
  if type(level) ~= 'number' and tonumber(level) == nil then
    error(err_table("ERR First argument must be a number (log level)."))
  end
  level = tonumber(level)
  level = level - level % 1
  if level ~= level or level < 0 or level > 3 then   -- NaN: (int)NaN is out of range too
    error(err_table("ERR Invalid debug level."))
  end
  local parts = {}
  for i = 2, n do
    local s = select(i, ...)
    if type(s) == 'string' or type(s) == 'number' then parts[#parts + 1] = tostring(s) end
  end
  py.log(level, concat(parts, ' '))
end)
redis.setresp = cfunc(function(...)
  if select('#', ...) ~= 1 then error(err_table("ERR redis.setresp() requires one argument.")) end
  local r = tonumber((...)) or 0
  r = r - r % 1
  if r ~= 2 and r ~= 3 then error(err_table("ERR RESP version must be 2 or 3.")) end
  lua_resp = r
  py.setresp(r)
end)
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.set_repl = cfunc(function(...)
  if select('#', ...) ~= 1 then error(err_table("ERR redis.set_repl() requires two arguments.")) end
  local f = tonumber((...)) or 0
  if f < 0 or f > 3 or f % 1 ~= 0 then
    error(err_table("ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."))
  end
end)
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.acl_check_cmd = function(...)
  local v, e = py.acl_check(...)
  if e then error(e) end
  return v
end
redis.REDIS_VERSION = py.version
redis.REDIS_VERSION_NUM = py.version_num
SG.redis = redis

-- ---- math.random: Redis's rand48, one sequence for the server's life ----
local rand_next, rand_seed = py.rand_next, py.rand_seed
local function checkint(v, i, fname)
  local n = tonumber(v)
  if n == nil then
    error(fmt("bad argument #%d to '%s' (number expected, got %s)", i, fname,
              v == nil and "no value" or type(v)), 0)
  end
  if n >= 0 then return floor(n) end
  return -floor(-n)
end
math.random = cfunc(function(...)
  local n = select('#', ...)
  local r = rand_next()
  if n == 0 then return r end
  local a, b = ...
  if n == 1 then
    local u = checkint(a, 1, 'random')
    if u < 1 then error("bad argument #1 to 'random' (interval is empty)", 0) end
    return floor(r * u) + 1
  elseif n == 2 then
    local l, u = checkint(a, 1, 'random'), checkint(b, 2, 'random')
    if l > u then error("bad argument #2 to 'random' (interval is empty)", 0) end
    return floor(r * (u - l + 1)) + l
  end
  error("wrong number of arguments", 0)
end)
math.randomseed = cfunc(function(...)
  rand_seed(checkint((...), 1, 'randomseed'))
end)
"""
