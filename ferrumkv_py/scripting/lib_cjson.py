"""``cjson``: follows lua-cjson 2.1.0 with Redis's defaults: numbers as ``%.14g``, ``/`` escaped
as ``\\/``, control characters as ``\\u00XX``, a table is an array when every key is a
positive integer and it is not excessively sparse (more than 10 slots and over half of them
empty is an error), an empty table is ``{}``, depth limited to 1000 both ways, ``cjson.null``
a userdata that encodes as ``null``.  Errors use lua-cjson's texts (``Cannot serialise
function: type not supported``, ``Expected value but found invalid token at character 1``).

Runs entirely in the script's VM: :data:`LUA` is pasted into the bootstrap (``sandbox.py``,
at ``__LIBS__``, with the other libraries in one ``do ... end``).

Complexity: encode and decode are O(size of the value); the sparse-array check is one pass
over the table's keys.
"""

LUA = r"""-- ---- cjson (lua-cjson 2.1.0) ----
local cjson = {_NAME = "cjson", _VERSION = "2.1.0"}
local null = newproxy(false)
cjson.null = null
local byte, char, find, strrep = string.byte, string.char, string.find, string.rep
local MAX_DEPTH = 1000
local escapes = {['"'] = '\\"', ['\\'] = '\\\\', ['/'] = '\\/', ['\b'] = '\\b',
                 ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t'}
for i = 0, 31 do
  local c = char(i)
  if not escapes[c] then escapes[c] = fmt('\\u%04x', i) end
end
escapes[char(127)] = '\\u007f'
local function enc_string(s) return '"' .. gsub(s, '[%c"\\/]', escapes) .. '"' end
local function enc_number(n, what)
  if n ~= n or n == 1/0 or n == -1/0 then
    error("Cannot serialise " .. what .. ": must not be NaN or Inf", 0)
  end
  return fmt('%.14g', n)
end
local enc_value
local function enc_table(t, depth, out)
  depth = depth + 1
  if depth > MAX_DEPTH then
    error(fmt("Cannot serialise, excessive nesting (%d)", depth), 0)
  end
  local max, items, is_array = 0, 0, true
  for k in next, t do
    if type(k) == 'number' and k ~= 0 and floor(k) == k and k >= 1 then
      if k > max then max = k end
      items = items + 1
    else
      is_array = false
      break
    end
  end
  if is_array and max > 0 then
    if max > items * 2 and max > 10 then
      error("Cannot serialise table: excessively sparse array", 0)
    end
    out[#out + 1] = '['
    for i = 1, max do
      if i > 1 then out[#out + 1] = ',' end
      enc_value(rawget(t, i), depth, out)
    end
    out[#out + 1] = ']'
    return
  end
  out[#out + 1] = '{'
  local first = true
  for k, v in next, t do
    if not first then out[#out + 1] = ',' end
    first = false
    local tk = type(k)
    if tk == 'string' then
      out[#out + 1] = enc_string(k)
    elseif tk == 'number' then
      out[#out + 1] = '"' .. enc_number(k, 'number') .. '"'
    else
      error("Cannot serialise " .. tk .. ": table key must be a number or string", 0)
    end
    out[#out + 1] = ':'
    enc_value(v, depth, out)
  end
  out[#out + 1] = '}'
end
enc_value = function(v, depth, out)
  local t = type(v)
  if t == 'string' then out[#out + 1] = enc_string(v)
  elseif t == 'number' then out[#out + 1] = enc_number(v, 'number')
  elseif t == 'boolean' then out[#out + 1] = v and 'true' or 'false'
  elseif t == 'nil' or v == null then out[#out + 1] = 'null'
  elseif t == 'table' then enc_table(v, depth, out)
  else error("Cannot serialise " .. t .. ": type not supported", 0) end
end
cjson.encode = cfunc(function(...)
  if select('#', ...) ~= 1 then error("bad argument #1 to 'encode' (expected 1 argument)", 0) end
  local out = {}
  enc_value((...), 0, out)
  return concat(out)
end)

local function utf8_char(cp)
  if cp < 0x80 then return char(cp) end
  if cp < 0x800 then return char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end
-- the decoder: a tokenizer as lua-cjson's, errors "Expected X but found Y at character N"
local function dec_error(what, found, pos)
  error(fmt("Expected %s but found %s at character %d", what, found, pos), 0)
end
local tokname = {['{'] = 'T_OBJ_BEGIN', ['}'] = 'T_OBJ_END', ['['] = 'T_ARR_BEGIN',
                 [']'] = 'T_ARR_END', [':'] = 'T_COLON', [','] = 'T_COMMA'}
-- next token at pos: kind, value, start, next_pos
local function token(s, pos)
  pos = find(s, '[^ \t\n\r]', pos) or (#s + 1)
  local c = sub(s, pos, pos)
  if c == '' then return 'T_END', nil, pos, pos end
  if tokname[c] then return tokname[c], nil, pos, pos + 1 end
  if c == '"' then
    local parts, i = {}, pos + 1
    while true do
      local j = find(s, '["\\]', i)
      if not j then return 'T_ERROR', 'unexpected end of string', #s + 1, #s + 1 end
      parts[#parts + 1] = sub(s, i, j - 1)
      if sub(s, j, j) == '"' then return 'T_STRING', concat(parts), pos, j + 1 end
      local e = sub(s, j + 1, j + 1)
      local simple = ({['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f',
                       n = '\n', r = '\r', t = '\t'})[e]
      if simple then
        parts[#parts + 1] = simple
        i = j + 2
      elseif e == 'u' then
        local hex = sub(s, j + 2, j + 5)
        local cp = (#hex == 4 and not find(hex, '[^%x]')) and tonumber(hex, 16)
        if not cp then return 'T_ERROR', 'invalid unicode escape code', j, j end
        i = j + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = sub(s, i, i + 1) == '\\u' and sub(s, i + 2, i + 5)
          local lcp = lo and #lo == 4 and not find(lo, '[^%x]') and tonumber(lo, 16)
          if not lcp or lcp < 0xDC00 or lcp > 0xDFFF then
            return 'T_ERROR', 'invalid unicode escape code', j, j
          end
          cp = 0x10000 + (cp - 0xD800) * 1024 + (lcp - 0xDC00)
          i = i + 6
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          return 'T_ERROR', 'invalid unicode escape code', j, j
        end
        parts[#parts + 1] = utf8_char(cp)
      else
        return 'T_ERROR', 'invalid escape code', j, j
      end
    end
  end
  if sub(s, pos, pos + 3) == 'null' then return 'T_NULL', null, pos, pos + 4 end
  local lw = string.lower(sub(s, pos, pos + 2))
  if c == '-' or find(c, '%d') or lw == 'inf' or lw == 'nan' then
    local e = find(s, '[^%w%.%+%-]', pos) or (#s + 1)
    local text = sub(s, pos, e - 1)
    local v = tonumber(text)
    if v == nil then
      local lt = text:lower()
      if lt == 'inf' or lt == 'infinity' then v = 1/0
      elseif lt == '-inf' or lt == '-infinity' then v = -1/0
      elseif lt == 'nan' or lt == '-nan' then v = 0/0 end
    end
    if v == nil then return 'T_ERROR', 'invalid number', pos, pos end
    return 'T_NUMBER', v, pos, e
  end
  if sub(s, pos, pos + 3) == 'true' then return 'T_BOOLEAN', true, pos, pos + 4 end
  if sub(s, pos, pos + 4) == 'false' then return 'T_BOOLEAN', false, pos, pos + 5 end
  return 'T_ERROR', 'invalid token', pos, pos
end
local function found(kind, v) return kind == 'T_ERROR' and v or kind end
local dec_value
local function dec_object(s, pos, depth)
  depth = depth + 1
  if depth > MAX_DEPTH then
    error(fmt("Found too many nested data structures (%d) at character %d", depth, pos - 1), 0)
  end
  local t = {}
  local kind, v, start, nxt = token(s, pos)
  if kind == 'T_OBJ_END' then return t, nxt end
  while true do
    if kind ~= 'T_STRING' then dec_error('object key string', found(kind, v), start) end
    local key = v
    kind, v, start, nxt = token(s, nxt)
    if kind ~= 'T_COLON' then dec_error('colon', found(kind, v), start) end
    local val
    val, nxt = dec_value(s, nxt, depth)
    t[key] = val
    kind, v, start, nxt = token(s, nxt)
    if kind == 'T_OBJ_END' then return t, nxt end
    if kind ~= 'T_COMMA' then dec_error('comma or object end', found(kind, v), start) end
    kind, v, start, nxt = token(s, nxt)
  end
end
local function dec_array(s, pos, depth)
  depth = depth + 1
  if depth > MAX_DEPTH then
    error(fmt("Found too many nested data structures (%d) at character %d", depth, pos - 1), 0)
  end
  local t, n = {}, 0
  local kind, v, start, nxt = token(s, pos)
  if kind == 'T_ARR_END' then return t, nxt end
  nxt = start
  while true do
    local val
    val, nxt = dec_value(s, nxt, depth)
    n = n + 1
    t[n] = val
    kind, v, start, nxt = token(s, nxt)
    if kind == 'T_ARR_END' then return t, nxt end
    if kind ~= 'T_COMMA' then dec_error('comma or array end', found(kind, v), start) end
  end
end
dec_value = function(s, pos, depth)
  local kind, v, start, nxt = token(s, pos)
  if kind == 'T_STRING' or kind == 'T_NUMBER' or kind == 'T_BOOLEAN' or kind == 'T_NULL' then
    return v, nxt
  elseif kind == 'T_OBJ_BEGIN' then return dec_object(s, nxt, depth)
  elseif kind == 'T_ARR_BEGIN' then return dec_array(s, nxt, depth) end
  dec_error('value', found(kind, v), start)
end
cjson.decode = cfunc(function(...)
  if select('#', ...) ~= 1 then error("bad argument #1 to 'decode' (expected 1 argument)", 0) end
  local s = ...
  if type(s) == 'number' then s = tostring(s) end
  if type(s) ~= 'string' then
    error(fmt("bad argument #1 to 'decode' (string expected, got %s)", type(s)), 0)
  end
  if #s >= 2 and (byte(s, 1) == 0 or byte(s, 2) == 0) then
    error("JSON parser does not support UTF-16 or UTF-32", 0)
  end
  local v, nxt = dec_value(s, 1, 0)
  local kind, tv, start = token(s, nxt)
  if kind ~= 'T_END' then dec_error('the end', found(kind, tv), start) end
  return v
end)
local function cfg(value) return function() return value end end
cjson.encode_sparse_array = function() return false, 2, 10 end
cjson.encode_max_depth = cfg(MAX_DEPTH)
cjson.decode_max_depth = cfg(MAX_DEPTH)
cjson.encode_number_precision = cfg(14)
cjson.encode_keep_buffer = cfg(true)
cjson.encode_invalid_numbers = cfg(false)
cjson.decode_invalid_numbers = cfg(true)
cjson.new = function() return cjson end
SG.cjson = cjson

"""
