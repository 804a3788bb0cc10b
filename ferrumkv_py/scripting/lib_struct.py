"""``struct``: follows struct 0.2 (``pack`` / ``unpack`` / ``size``) with x86-64 sizes (long
and size_t 8 bytes, int 4), native little-endian order, no alignment until ``!``.

:data:`LUA` (pasted into the bootstrap, ``sandbox.py``, at ``__LIBS__``) checks arguments and
calls ``py.st_pack`` / ``py.st_unpack`` / ``py.st_size`` (the engine's bridges to the codec
below) with each argument as its Lua type, text and number (:class:`Arg`): Python never
holds one of the script's values, so none of its metamethods runs from Python.

Complexity: O(length of the format + data).
"""

from __future__ import annotations

import math
import struct as _struct

# ---- struct (Roberto Ierusalimschy's struct 0.2, as Redis ships it) ----

STRUCT_MAXINTSIZE = 32     # bytes an 'i' option may ask for (MAXINTSIZE)
STRUCT_NATIVE_ALIGN = 8    # '!' without a number
_STRUCT_SIZES = {ord("b"): 1, ord("B"): 1, ord("h"): 2, ord("H"): 2, ord("l"): 8, ord("L"): 8,
                 ord("T"): 8, ord("f"): 4, ord("d"): 8, ord("x"): 1, ord("i"): 4, ord("I"): 4}


class StructError(Exception):
    """A struct error; ``text`` is what Lua's error says (argument errors included)."""


INT_MAX = (1 << 31) - 1     # a number in a format is a C int (getnum)


def _struct_options(fmt: bytes):
    """Yield (option, size, little_endian, align) for each option of a format string.

    The format is a C string (it ends at a NUL byte); a number in it is an int, past
    INT_MAX it is ``integral size overflow``; ``!n`` needs a power of 2."""
    nul = fmt.find(b"\0")
    if nul >= 0:
        fmt = fmt[:nul]
    little, align = True, 1
    i = 0
    while i < len(fmt):
        opt = fmt[i]
        i += 1
        j = i
        while j < len(fmt) and 0x30 <= fmt[j] <= 0x39:
            j += 1
        num = None
        if j > i:
            if j - i > 10 or int(fmt[i:j]) > INT_MAX:
                raise StructError("integral size overflow")
            num = int(fmt[i:j])
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
            if align <= 0 or align & (align - 1):
                raise StructError("alignment %d is not a power of 2" % align)
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
    """Padding before an option (gettoalign: the alignment is a power of 2, '!' checked)."""
    if size == 0 or opt == ord("c"):
        return 0
    a = min(size, align)
    return (a - (total & (a - 1))) & (a - 1)


class Arg:
    """One Lua argument as the Lua side hands it over: its type name, its text (strings and
    numbers, as tostring) and its number (tonumber, or None).  Python never holds a Lua
    object here, so no metamethod (``__tostring``, ``__index``) runs from Python."""

    __slots__ = ("ltype", "text", "num")

    def __init__(self, ltype: str, text, num):
        self.ltype, self.text, self.num = ltype, text, num


NO_VALUE = Arg("no value", None, None)
PACK_MARK = Arg("nil", None, None)     # b_pack pushes a nil after its arguments


def _arg(args: list, argi: int, fname: str, want: str):
    """Argument ``argi`` (0-based among those after the format) as a number or a string,
    else luaL_check*'s error (a missing argument of pack is b_pack's nil mark)."""
    a = args[argi] if argi < len(args) else PACK_MARK if fname == "pack" else NO_VALUE
    v = a.num if want == "number" else a.text
    if v is None:
        raise StructError("bad argument #%d to '%s' (%s expected, got %s)"
                          % (argi + 2, fname, want, a.ltype))
    return v


def struct_pack(fmt: bytes, args: list) -> bytes:
    """struct.pack(fmt, ...) over :class:`Arg` values.  Complexity: O(output)."""
    out = bytearray()
    argi = 0
    for opt, size, little, align in _struct_options(fmt):
        out += b"\0" * _struct_pad(len(out), opt, size, align)
        if opt == ord("x"):
            out.append(0)
            continue
        if opt in (ord("c"), ord("s")):
            v = _arg(args, argi, "pack", "string")
            argi += 1
            if opt == ord("s"):
                out += v + b"\0"
            else:
                n = size or len(v)
                if len(v) < n:
                    raise StructError("bad argument #%d to 'pack' (string too short)"
                                      % (argi + 2))
                out += v[:n]
            continue
        v = _arg(args, argi, "pack", "number")
        argi += 1
        if opt in (ord("f"), ord("d")):
            code = ("<" if little else ">") + chr(opt)
            try:
                out += _struct.pack(code, v)
            except OverflowError:       # (float) of a double past FLT_MAX: an infinity
                out += _struct.pack(code, math.copysign(math.inf, v))
        else:
            n = int(v) if math.isfinite(v) else 0
            n &= (1 << (8 * size)) - 1
            out += n.to_bytes(size, "little" if little else "big")
    return bytes(out)


def struct_unpack(fmt: bytes, args: list) -> list:
    """struct.unpack(fmt, data [, init]): the values, then the next position (1-based)."""
    data = _arg(args, 0, "unpack", "string")
    init = _arg(args, 1, "unpack", "number") if len(args) > 1 and args[1].ltype != "nil" \
        else 1
    init = int(init) if math.isfinite(init) else 0
    if init == 0:
        raise StructError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
    pos = init - 1
    out: list = []
    for opt, size, little, align in _struct_options(fmt):
        pos += _struct_pad(pos, opt, size, align)
        if pos < 0 or pos + size > len(data):
            raise StructError("bad argument #2 to 'unpack' (data string too short)")
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
            if pos + size > len(data):
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


LUA = r"""-- ---- struct (struct 0.2): the codec in Python (lib_struct.py) ----
local structlib = {}
local fmt_ = fmt
local function struct_call(fname, pyf, ...)
  local n = select('#', ...)
  local fmt = ...
  if type(fmt) == 'number' then fmt = tostring(fmt) end
  if type(fmt) ~= 'string' then
    error(fmt_("bad argument #1 to '%s' (string expected, got %s)", fname,
               fmt == nil and "no value" or type(fmt)), 0)
  end
  -- the arguments go to Python as their type, text and number: never a Lua object, so
  -- no metamethod of the script's (__tostring, __index) runs outside the count hook
  local args, flat, j = {...}, {}, 0
  for i = 2, n do
    local v = args[i]
    local t = type(v)
    flat[j + 1] = t
    if t == 'string' or t == 'number' then
      flat[j + 2] = tostring(v)
      flat[j + 3] = tonumber(v)
    end
    j = j + 3
  end
  local r = pyf(fmt, unpack(flat, 1, j))
  if r.err then error(r.err, 0) end
  return unpack(r.values, 1, r.n)
end
structlib.pack = cfunc(function(...) return struct_call('pack', py.st_pack, ...) end)
structlib.unpack = cfunc(function(...) return struct_call('unpack', py.st_unpack, ...) end)
structlib.size = cfunc(function(...) return struct_call('size', py.st_size, ...) end)
SG.struct = structlib
"""
