"""``bit``: follows Lua BitOp 1.0.2 as Redis ships it: every argument is first normalised to a
signed 32-bit integer (``tobit``: round to nearest, ties to even, then modulo 2^32, as the
``x + 2^52 + 2^51`` trick of BitOp does) and every result is a signed 32-bit number.  The
operations run in Python (:func:`bit_op`), the argument checks in Lua so the errors read as
BitOp's (``bad argument #1 to 'band' (number expected, got string)``).

The Lua side (:data:`LUA`) is pasted into the bootstrap (``sandbox.py``, at ``__LIBS__``,
with the other libraries in one ``do ... end``); ``py.bit_op`` / ``py.bit_tohex`` are the
functions below.

Complexity: O(number of arguments).
"""

from __future__ import annotations

import math

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


LUA = r"""-- ---- bit (Lua BitOp) ----
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

"""
