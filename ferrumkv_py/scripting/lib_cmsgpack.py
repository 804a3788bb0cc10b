"""``cmsgpack``: follows lua-cmsgpack 0.4.0: integers in their smallest encoding, other numbers
as float32 when exact (else float64), a table is an array when its keys are exactly 1..n,
tables nested deeper than 16 encode as nil; the codec runs in Python (:func:`msgpack_pack`,
:func:`msgpack_unpack`), the argument checks in Lua.

:data:`LUA` (pasted into the bootstrap, ``sandbox.py``, at ``__LIBS__``) checks arguments and
calls ``py.mp_pack`` / ``py.mp_unpack`` (the engine's bridges to the codec below).

Complexity: O(size of the value) to encode or decode.
"""

from __future__ import annotations

import math
import struct as _struct

from lupa import lua51 as _lua51

# ---- cmsgpack (lua-cmsgpack 0.4.0 as Redis ships it) ----

MSGPACK_MAX_NESTING = 16          # deeper tables encode as nil (LUACMSGPACK_MAX_NESTING)
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
TICK_ITEMS = 4096                 # values coded between two calls of the busy tick


class Ticker:
    """Counts coded values and calls ``tick()`` (the engine's busy-script hook) every
    TICK_ITEMS of them: a big pack or unpack runs in Python, outside Lua's count hook, and
    must still answer other clients with -BUSY and obey SCRIPT KILL.  ``tick()`` returning
    true (the script was killed) raises :class:`MsgpackError`."""

    __slots__ = ("left", "tick")

    def __init__(self, tick):
        self.tick = tick
        self.left = TICK_ITEMS

    def step(self) -> None:
        self.left = TICK_ITEMS
        if self.tick is not None and self.tick():
            raise MsgpackError("ERR Script killed by user with SCRIPT KILL...")


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


def _mp_encode(out: bytearray, v, level: int, ticker: Ticker) -> None:
    ticker.left -= 1
    if ticker.left <= 0:
        ticker.step()
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
        # keys come from lua_next (raw): no metamethod of the script's runs from here
        count, top, total = 0, 0, 0
        is_array = True
        for k in v.keys():
            total += 1
            if is_array and (k.__class__ is not int or k <= 0):
                is_array = False
            elif is_array:
                top = max(top, k)
                count += 1
            ticker.left -= 1
            if ticker.left <= 0:
                ticker.step()
        if is_array and top == count:
            n = count
            if n < 16:
                out.append(0x90 | n)
            elif n <= 0xffff:
                out += b"\xdc" + _struct.pack(">H", n)
            else:
                out += b"\xdd" + _struct.pack(">I", n)
            for i in range(1, n + 1):
                _mp_encode(out, v[i], level + 1, ticker)   # present keys: no __index
        else:
            n = total
            if n < 16:
                out.append(0x80 | n)
            elif n <= 0xffff:
                out += b"\xde" + _struct.pack(">H", n)
            else:
                out += b"\xdf" + _struct.pack(">I", n)
            for k, x in v.items():
                _mp_encode(out, k, level + 1, ticker)
                _mp_encode(out, x, level + 1, ticker)
    else:
        out.append(0xc0)


def msgpack_pack(tick, *values) -> bytes:
    """cmsgpack.pack(v1, v2, ...): the encodings one after another, ``tick`` called every
    TICK_ITEMS values (:class:`Ticker`).  Complexity: O(size)."""
    out = bytearray()
    ticker = Ticker(tick)
    for v in values:
        _mp_encode(out, v, 0, ticker)
    return bytes(out)


_FIXED = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h",
          0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}


def _mp_decode(data: bytes, pos: int, mk_table, ticker: Ticker):
    ticker.left -= 1
    if ticker.left <= 0:
        ticker.step()
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
            v, pos = _mp_decode(data, pos, mk_table, ticker)
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


def msgpack_unpack(data: bytes, mk_table, limit: int = 0, offset: int = 0, tick=None):
    """Decode up to ``limit`` objects from ``offset`` (limit and offset both 0: all of them,
    as mp_unpack_full): (values, next offset or -1); ``tick`` as in :func:`msgpack_pack`.

    Complexity: O(size)."""
    values = []
    pos = offset
    if limit == 0 and offset == 0:
        limit = len(data)
    ticker = Ticker(tick)
    while pos < len(data) and len(values) < limit:
        v, pos = _mp_decode(data, pos, mk_table, ticker)
        values.append(v)
    return values, (pos if pos < len(data) else -1)


LUA = r"""-- ---- cmsgpack (lua-cmsgpack 0.4.0): the codec in Python (lib_cmsgpack.py) ----
local cmsgpack = {_NAME = "cmsgpack", _VERSION = "lua-cmsgpack 0.4.0",
                  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
                  _DESCRIPTION = "MessagePack C implementation for Lua"}
cmsgpack.pack = cfunc(function(...)
  if select('#', ...) == 0 then
    error("bad argument #0 to 'pack' (MessagePack pack needs input.)", 0)
  end
  local s, e = py.mp_pack(...)   -- lupa's keys()/items() walk tables raw (lua_next)
  if e then error(e, 0) end
  return s
end)
-- luaL_optinteger: nil is the default, a number is truncated, anything else is an error
local function int_arg(v, i, fname)
  if v == nil then return 0 end
  local n = tonumber(v)
  if n == nil then
    error(fmt("bad argument #%d to '%s' (number expected, got %s)", i, fname, type(v)), 0)
  end
  if n ~= n then return 0 end
  if n > 2^53 then return 2^53 elseif n < -2^53 then return -2^53 end
  if n >= 0 then return floor(n) end
  return -floor(-n)
end
-- mp_unpack_full's checks, with its texts (the "limit" it prints is the input's length)
local function unpack_n(fname, s, limit, offset)
  if type(s) == 'number' then s = tostring(s) end
  if type(s) ~= 'string' then
    error(fmt("bad argument #1 to '%s' (string expected, got %s)", fname,
              s == nil and "no value" or type(s)), 0)
  end
  if offset < 0 or limit < 0 then
    error(fmt("Invalid request to unpack with offset of %d and limit of %d.", offset, #s), 0)
  elseif offset > #s then
    error(fmt("Start offset %d greater than input length %d.", offset, #s), 0)
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
  local r = unpack_n('unpack_one', s, 1, int_arg(offset, 2, 'unpack_one'))
  return r.next, unpack(r.values, 1, r.n)
end)
cmsgpack.unpack_limit = cfunc(function(s, limit, offset)
  local r = unpack_n('unpack_limit', s, int_arg(limit, 2, 'unpack_limit'),
                     int_arg(offset, 3, 'unpack_limit'))
  return r.next, unpack(r.values, 1, r.n)
end)
SG.cmsgpack = cmsgpack

"""
