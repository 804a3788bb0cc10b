"""The libraries Redis 7.0 links into its Lua, rewritten: ``bit``, ``cjson``, ``cmsgpack``,
``struct``.

All four are Lua source pasted into the bootstrap (``scripting_lua.BOOTSTRAP``); ``cjson``
runs entirely in the script's VM, ``bit``, ``cmsgpack`` and ``struct`` check their
arguments in Lua and compute in Python (the functions below).

``bit`` follows Lua BitOp 1.0.2 as Redis ships it: every argument is first normalised to a
signed 32-bit integer (``tobit``: round to nearest, ties to even, then modulo 2^32, as the
``x + 2^52 + 2^51`` trick of BitOp does) and every result is a signed 32-bit number.  The
operations run in Python (:func:`bit_op`), the argument checks in Lua so the errors read as
BitOp's (``bad argument #1 to 'band' (number expected, got string)``).

``cjson`` follows lua-cjson 2.1.0 with Redis's defaults: numbers as ``%.14g``, ``/`` escaped
as ``\\/``, control characters as ``\\u00XX``, a table is an array when every key is a
positive integer and it is not excessively sparse (more than 10 slots and over half of them
empty is an error), an empty table is ``{}``, depth limited to 1000 both ways, ``cjson.null``
a userdata that encodes as ``null``.  Errors use lua-cjson's texts (``Cannot serialise
function: type not supported``, ``Expected value but found invalid token at character 1``).

``cmsgpack`` follows lua-cmsgpack 0.4.0: integers in their smallest encoding, other numbers
as float32 when exact (else float64), a table is an array when its keys are exactly 1..n,
tables nested deeper than 16 encode as nil; the codec runs in Python (:func:`msgpack_pack`,
:func:`msgpack_unpack`), the argument checks in Lua.

``struct`` follows struct 0.2 (``pack`` / ``unpack`` / ``size``) with x86-64 sizes (long
and size_t 8 bytes, int 4), native little-endian order, no alignment until ``!``.

Complexity: encode and decode are O(size of the value); the sparse-array check is one pass
over the table's keys.
"""

from __future__ import annotations

import math
import struct as _struct

from lupa import lua51 as _lua51

INT32_MOD = 1 << 32
INT32_SIGN = 1 << 31


def tobit(x) -> int:
    """BitOp's normalisation of a Lua number to a signed 32-bit integer."""
    if x.__class__ is not int:
        if not math.isfinite(x):
            return 0
        x = round(x)            # Python rounds ties to even, as the 2^52+2^51 addition
    x &= INT32_MOD - 1
    return x - INT32_MOD if x & INT32_SIGN else x


def bit_op(name: bytes, *args):
    """One BitOp function on already-checked numbers.  Complexity: O(number of args)."""
    a = [tobit(x) & (INT32_MOD - 1) for x in args]
    if name == b"tobit":
        r = a[0]
    elif name == b"bnot":
        r = ~a[0]
    elif name == b"band":
        r = a[0]
        for x in a[1:]:
            r &= x
    elif name == b"bor":
        r = a[0]
        for x in a[1:]:
            r |= x
    elif name == b"bxor":
        r = a[0]
        for x in a[1:]:
            r ^= x
    elif name == b"bswap":
        r = int.from_bytes(a[0].to_bytes(4, "little"), "big")
    else:
        n = a[1] & 31
        x = a[0]
        if name == b"lshift":
            r = x << n
        elif name == b"rshift":
            r = x >> n
        elif name == b"arshift":
            r = (x - INT32_MOD if x & INT32_SIGN else x) >> n
        elif name == b"rol":
            r = (x << n) | (x >> (32 - n))
        else:  # ror
            r = (x >> n) | (x << (32 - n))
    r &= INT32_MOD - 1
    return r - INT32_MOD if r & INT32_SIGN else r


def bit_tohex(x, n=8) -> bytes:
    """bit.tohex(x [, n]): n hex digits (upper case when n < 0), at most 8."""
    x = tobit(x) & (INT32_MOD - 1)
    n = tobit(n)
    digits = "0123456789abcdef"
    if n < 0:
        n = -n
        digits = "0123456789ABCDEF"
    n = min(n, 8)
    out = []
    for _ in range(n):
        out.append(digits[x & 15])
        x >>= 4
    return "".join(reversed(out)).encode()


# ---- cmsgpack (lua-cmsgpack 0.4.0 as Redis ships it) ----

MSGPACK_MAX_NESTING = 16          # deeper tables encode as nil (LUACMSGPACK_MAX_NESTING)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class MsgpackError(Exception):
    """A decode error: ``Missing bytes in input.`` / ``Bad data format in input.``"""


def _mp_int(out: bytearray, n: int) -> None:
    if n >= 0:
        if n <= 127:
            out.append(n)
        elif n <= 0xff:
            out += b"\xcc" + _struct.pack(">B", n)
        elif n <= 0xffff:
            out += b"\xcd" + _struct.pack(">H", n)
        elif n <= 0xffffffff:
            out += b"\xce" + _struct.pack(">I", n)
        else:
            out += b"\xcf" + _struct.pack(">Q", n)
    elif n >= -32:
        out.append(n & 0xff)
    elif n >= -128:
        out += b"\xd0" + _struct.pack(">b", n)
    elif n >= -32768:
        out += b"\xd1" + _struct.pack(">h", n)
    elif n >= -(1 << 31):
        out += b"\xd2" + _struct.pack(">i", n)
    else:
        out += b"\xd3" + _struct.pack(">q", n)


def _mp_encode(out: bytearray, v, level: int) -> None:
    t = v.__class__
    if t is bytes:
        n = len(v)
        if n < 32:
            out.append(0xa0 | n)
        elif n <= 0xff:
            out += b"\xd9" + _struct.pack(">B", n)
        elif n <= 0xffff:
            out += b"\xda" + _struct.pack(">H", n)
        else:
            out += b"\xdb" + _struct.pack(">I", n)
        out += v
    elif t is bool:
        out.append(0xc3 if v else 0xc2)
    elif t is int and INT64_MIN <= v <= INT64_MAX:
        _mp_int(out, v)
    elif t is int or t is float:
        d = float(v)
        f32 = _struct.unpack(">f", _struct.pack(">f", d))[0] if math.isfinite(d) and \
            abs(d) < 3.4e38 else None
        if f32 == d or math.isinf(d):     # NaN != NaN: a double, as (float)d == d in C
            out += b"\xca" + _struct.pack(">f", d)
        else:
            out += b"\xcb" + _struct.pack(">d", d)
    elif _lua51.lua_type(v) == "table" and level < MSGPACK_MAX_NESTING:
        items = list(v.items())
        count, top = 0, 0
        is_array = True
        for k, _ in items:
            if k.__class__ is not int or k <= 0:
                is_array = False
                break
            top = max(top, k)
            count += 1
        if is_array and top == count:
            n = count
            if n < 16:
                out.append(0x90 | n)
            elif n <= 0xffff:
                out += b"\xdc" + _struct.pack(">H", n)
            else:
                out += b"\xdd" + _struct.pack(">I", n)
            for i in range(1, n + 1):
                _mp_encode(out, v[i], level + 1)
        else:
            n = len(items)
            if n < 16:
                out.append(0x80 | n)
            elif n <= 0xffff:
                out += b"\xde" + _struct.pack(">H", n)
            else:
                out += b"\xdf" + _struct.pack(">I", n)
            for k, x in items:
                _mp_encode(out, k, level + 1)
                _mp_encode(out, x, level + 1)
    else:
        out.append(0xc0)


def msgpack_pack(*values) -> bytes:
    """cmsgpack.pack(v1, v2, ...): the encodings one after another.  Complexity: O(size)."""
    out = bytearray()
    for v in values:
        _mp_encode(out, v, 0)
    return bytes(out)


_FIXED = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h",
          0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}


def _mp_decode(data: bytes, pos: int, mk_table):
    if pos >= len(data):
        raise MsgpackError("Missing bytes in input.")
    c = data[pos]
    pos += 1

    def take(n):
        if pos + n > len(data):
            raise MsgpackError("Missing bytes in input.")
        return data[pos:pos + n]
    if c <= 0x7f:
        return c, pos
    if c >= 0xe0:
        return c - 0x100, pos
    if 0xa0 <= c <= 0xbf:
        n = c & 31
        return take(n), pos + n
    if 0x90 <= c <= 0x9f or 0x80 <= c <= 0x8f or c in (0xdc, 0xdd, 0xde, 0xdf):
        if c <= 0x9f:
            n = c & 15
        else:
            fmt = ">H" if c in (0xdc, 0xde) else ">I"
            w = _struct.calcsize(fmt)
            n = _struct.unpack(fmt, take(w))[0]
            pos += w
        is_map = 0x80 <= c <= 0x8f or c in (0xde, 0xdf)
        items = []
        for _ in range(n * 2 if is_map else n):
            v, pos = _mp_decode(data, pos, mk_table)
            items.append(v)
        return mk_table(is_map, items), pos
    if c in _FIXED:
        fmt = _FIXED[c]
        w = _struct.calcsize(fmt)
        return _struct.unpack(fmt, take(w))[0], pos + w
    if c in (0xd9, 0xda, 0xdb, 0xc4, 0xc5, 0xc6):
        fmt = {0xd9: ">B", 0xc4: ">B", 0xda: ">H", 0xc5: ">H"}.get(c, ">I")
        w = _struct.calcsize(fmt)
        n = _struct.unpack(fmt, take(w))[0]
        pos += w
        return (data[pos:pos + n] if pos + n <= len(data) else _missing()), pos + n
    if c == 0xc0:
        return None, pos
    if c in (0xc2, 0xc3):
        return c == 0xc3, pos
    raise MsgpackError("Bad data format in input.")


def _missing():
    raise MsgpackError("Missing bytes in input.")


def msgpack_unpack(data: bytes, mk_table, limit: int = 0, offset: int = 0):
    """Decode up to ``limit`` objects (0 = all) from ``offset``: (values, next offset or -1).

    Complexity: O(size)."""
    values = []
    pos = offset
    while pos < len(data) and (limit == 0 or len(values) < limit):
        v, pos = _mp_decode(data, pos, mk_table)
        values.append(v)
    return values, (pos if pos < len(data) else -1)


LIBS = r"""
-- ---- bit (Lua BitOp) ----
local bitlib = {}
local bit_op, bit_tohex = py.bit_op, py.bit_tohex
local function bitfn(name, nargs, variadic)
  return function(...)
    local n = select('#', ...)
    local args = {...}
    local upto = n
    if upto < nargs then upto = nargs end
    if not variadic and upto > nargs then upto = nargs end
    for i = 1, upto do
      local v = tonumber(args[i])
      if v == nil then
        error(fmt("bad argument #%d to '%s' (number expected, got %s)", i, name,
                  i > n and "no value" or type(args[i])), 0)
      end
      args[i] = v
    end
    return bit_op(name, unpack(args, 1, upto))
  end
end
for _, spec in ipairs({{"tobit", 1}, {"bnot", 1}, {"bswap", 1}, {"band", 1, true},
                       {"bor", 1, true}, {"bxor", 1, true}, {"lshift", 2}, {"rshift", 2},
                       {"arshift", 2}, {"rol", 2}, {"ror", 2}}) do
  bitlib[spec[1]] = cfunc(bitfn(spec[1], spec[2], spec[3]))
end
bitlib.tohex = cfunc(function(...)
  local n = select('#', ...)
  local x, w = ...
  local nx = tonumber(x)
  if nx == nil then
    error(fmt("bad argument #1 to 'tohex' (number expected, got %s)",
              n < 1 and "no value" or type(x)), 0)
  end
  if w == nil then return bit_tohex(nx) end
  local nw = tonumber(w)
  if nw == nil then
    error(fmt("bad argument #2 to 'tohex' (number expected, got %s)", type(w)), 0)
  end
  return bit_tohex(nx, nw)
end)
SG.bit = bitlib

-- ---- cjson (lua-cjson 2.1.0) ----
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

-- ---- cmsgpack (lua-cmsgpack 0.4.0): the codec in Python (scripting_libs.py) ----
local cmsgpack = {_NAME = "cmsgpack", _VERSION = "lua-cmsgpack 0.4.0",
                  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
                  _DESCRIPTION = "MessagePack C implementation for Lua"}
cmsgpack.pack = cfunc(function(...)
  if select('#', ...) == 0 then
    error("bad argument #0 to 'pack' (MessagePack pack needs input.)", 0)
  end
  return py.mp_pack(...)
end)
local function unpack_n(fname, s, limit, offset)
  if type(s) ~= 'string' then
    error(fmt("bad argument #1 to '%s' (string expected, got %s)", fname,
              s == nil and "no value" or type(s)), 0)
  end
  local r = py.mp_unpack(s, limit, offset)
  if r.err then error(r.err, 0) end
  return r
end
cmsgpack.unpack = cfunc(function(s)
  local r = unpack_n('unpack', s, 0, 0)
  return unpack(r.values, 1, r.n)
end)
cmsgpack.unpack_one = cfunc(function(s, offset)
  local r = unpack_n('unpack_one', s, 1, tonumber(offset) or 0)
  return r.next, unpack(r.values, 1, r.n)
end)
cmsgpack.unpack_limit = cfunc(function(s, limit, offset)
  local r = unpack_n('unpack_limit', s, tonumber(limit) or 0, tonumber(offset) or 0)
  return r.next, unpack(r.values, 1, r.n)
end)
SG.cmsgpack = cmsgpack

-- ---- struct (struct 0.2): the codec in Python (scripting_libs.py) ----
local structlib = {}
local fmt_ = fmt
local function struct_call(fname, pyf, ...)
  local fmt = ...
  if type(fmt) == 'number' then fmt = tostring(fmt) end
  if type(fmt) ~= 'string' then
    error(fmt_("bad argument #1 to '%s' (string expected, got %s)", fname,
               fmt == nil and "no value" or type(fmt)), 0)
  end
  local r = pyf(...)
  if r.err then error(r.err, 0) end
  return unpack(r.values, 1, r.n)
end
structlib.pack = cfunc(function(...) return struct_call('pack', py.st_pack, ...) end)
structlib.unpack = cfunc(function(...) return struct_call('unpack', py.st_unpack, ...) end)
structlib.size = cfunc(function(...) return struct_call('size', py.st_size, ...) end)
SG.struct = structlib
"""


# ---- struct (Roberto Ierusalimschy's struct 0.2, as Redis ships it) ----

STRUCT_MAXINTSIZE = 32     # bytes an 'i' option may ask for (MAXINTSIZE)
STRUCT_NATIVE_ALIGN = 8    # '!' without a number
_STRUCT_SIZES = {ord("b"): 1, ord("B"): 1, ord("h"): 2, ord("H"): 2, ord("l"): 8, ord("L"): 8,
                 ord("T"): 8, ord("f"): 4, ord("d"): 8, ord("x"): 1, ord("i"): 4, ord("I"): 4}


class StructError(Exception):
    """A struct error; ``text`` is what Lua's error says (argument errors included)."""


def _struct_options(fmt: bytes):
    """Yield (option, size, little_endian, align) for each option of a format string."""
    little, align = True, 1
    i = 0
    while i < len(fmt):
        opt = fmt[i]
        i += 1
        j = i
        while j < len(fmt) and 0x30 <= fmt[j] <= 0x39:
            j += 1
        num = int(fmt[i:j]) if j > i else None
        if opt in (ord(" "),):
            continue
        if opt == ord("<"):
            little = True
            continue
        if opt in (ord(">"),):
            little = False
            continue
        if opt == ord("="):
            little = True
            continue
        if opt == ord("!"):
            align = num if num is not None else STRUCT_NATIVE_ALIGN
            i = j
            continue
        if opt in (ord("i"), ord("I")):
            size = num if num is not None else 4
            i = j
            if size > STRUCT_MAXINTSIZE:
                raise StructError("integral size %d is larger than limit of %d"
                                  % (size, STRUCT_MAXINTSIZE))
        elif opt == ord("c"):
            size = num if num is not None else 1
            i = j
        elif opt == ord("s"):
            size = 0
        elif opt in _STRUCT_SIZES:
            size = _STRUCT_SIZES[opt]
        else:
            raise StructError("bad argument #1 to '{fn}' (invalid format option '%c')" % opt)
        yield opt, size, little, align


def _struct_pad(total: int, opt: int, size: int, align: int) -> int:
    """Padding before an option (gettoalign)."""
    if opt in (ord("c"), ord("s")) or size <= 1 or align <= 1:
        return 0
    a = min(size, align)
    if a & (a - 1):
        raise StructError("bad argument #1 to '{fn}' (alignment must be power of 2)")
    return (a - (total & (a - 1))) & (a - 1)


def struct_pack(fmt: bytes, *args) -> bytes:
    """struct.pack(fmt, ...).  Complexity: O(output)."""
    out = bytearray()
    argi = 0
    for opt, size, little, align in _struct_options(fmt):
        out += b"\0" * _struct_pad(len(out), opt, size, align)
        if opt == ord("x"):
            out.append(0)
            continue
        if argi >= len(args):
            raise StructError("bad argument #%d to 'pack' (%s expected, got nil)"
                              % (argi + 2, "string" if opt in (ord("c"), ord("s"))
                                 else "number"))
        v = args[argi]
        argi += 1
        if opt in (ord("f"), ord("d")):
            out += _struct.pack(("<" if little else ">") + chr(opt), float(v))
        elif opt == ord("c") or opt == ord("s"):
            if v.__class__ is not bytes:
                v = str(v).encode()
            if opt == ord("s"):
                out += v + b"\0"
            else:
                n = size or len(v)
                if len(v) < n:
                    raise StructError("bad argument #%d to 'pack' (string too short)"
                                      % (argi + 2))
                out += v[:n]
        else:
            n = int(v) if not isinstance(v, float) or math.isfinite(v) else 0
            n &= (1 << (8 * size)) - 1
            out += n.to_bytes(size, "little" if little else "big")
    return bytes(out)


def struct_unpack(fmt: bytes, data: bytes, init: int = 1) -> list:
    """struct.unpack(fmt, data [, init]): the values, then the next position (1-based)."""
    pos = init - 1
    out: list = []
    for opt, size, little, align in _struct_options(fmt):
        pos += _struct_pad(pos, opt, size, align)
        if opt == ord("s"):
            end = data.find(b"\0", pos)
            if end < 0:
                raise StructError("unfinished string in data")
            out.append(data[pos:end])
            pos = end + 1
            continue
        if opt == ord("c") and size == 0:
            if not out or not isinstance(out[-1], (int, float)):
                raise StructError("format 'c0' needs a previous size")
            size = int(out.pop())
        if pos + size > len(data) or pos < 0:
            raise StructError("bad argument #2 to 'unpack' (data string too short)")
        chunk = data[pos:pos + size]
        pos += size
        if opt == ord("x"):
            continue
        if opt in (ord("f"), ord("d")):
            out.append(_struct.unpack(("<" if little else ">") + chr(opt), chunk)[0])
        elif opt == ord("c"):
            out.append(chunk)
        else:
            out.append(int.from_bytes(chunk, "little" if little else "big",
                                      signed=opt in (ord("b"), ord("h"), ord("l"), ord("i"))))
    out.append(pos + 1)
    return out


def struct_size(fmt: bytes) -> int:
    total = 0
    for opt, size, little, align in _struct_options(fmt):
        if opt == ord("s") or (opt == ord("c") and size == 0):
            raise StructError("bad argument #1 to 'size' (option '%s' has no fixed size)"
                              % ("s" if opt == ord("s") else "c0"))
        total += _struct_pad(total, opt, size, align) + size
    return total
