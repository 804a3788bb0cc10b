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


LUA = r"""-- ---- cmsgpack (lua-cmsgpack 0.4.0): the codec in Python (lib_cmsgpack.py) ----
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

"""
