"""Replies both ways between the command table and Lua.

Redis -> Lua (:class:`LuaReplies`, ``redisProtocolToLuaType``): a handler's reply becomes
the Lua value Redis's RESP parser makes of it: bulk -> string, nil bulk -> false (RESP2) or
nil (RESP3), integer -> number, status -> ``{ok=}``, error -> ``{err=}``, arrays nested;
with ``redis.setresp(3)`` maps, sets, doubles, big numbers, booleans and nulls as their
tables.  Pre-encoded replies (:class:`~ferrumkv_py.resp.Raw`) are parsed back first
(:func:`parse_resp`).

Lua -> Redis (:data:`LUA_TO_RESP`, ``luaReplyToRedisReply``, Lua source pasted into the
bootstrap): strings bulk, numbers truncated to integers (``%d`` is C's cast), booleans by the
Lua client's RESP version, tables as error / status / double / big number / verbatim / map /
set / array (stopping at the first nil), anything else null.

A ``redis.call`` error travels through Lua as a :class:`CallError` (``CODE message``).

Complexity: O(size of the reply) either way.
"""

from __future__ import annotations

import logging

from ..resp import NULL_ARRAY, ErrorReply, Raw, RespSet, Status, Verbatim, encode
from .scripts import text


class LuaReplies:
    """RESP -> Lua on one VM: the bootstrap's table constructors, bound once per VM."""

    def __init__(self, rt, boot):
        self._table_from = rt.table_from
        self._err_table = boot[b"err_table"]
        self._ok_table = boot[b"ok_table"]
        self._double_table = boot[b"double_table"]
        self._big_table = boot[b"big_table"]
        self._verbatim_table = boot[b"verbatim_table"]
        self._map_table = boot[b"map_table"]
        self._set_table = boot[b"set_table"]
        self._kv_table = boot[b"kv_table"]
        self._set_from = boot[b"set_from"]

    def to_lua(self, r, resp: int):
        """A handler's reply as the Lua value Redis's parser makes of its RESP."""
        t = r.__class__
        if t is bytes or t is int:
            return r
        if r is None or r is NULL_ARRAY:
            return False if resp == 2 else None
        if t is list or t is tuple:
            return self._table_from([self.to_lua(x, resp) for x in r])
        if t is Status:
            return self._ok_table(bytes(r))
        if t is Raw:
            return self.to_lua(parse_resp(bytes(r))[0], resp)
        if t is bool:
            return r if resp == 3 else int(r)
        if t is float:
            return self._double_table(r) if resp == 3 else _double_text(r)
        if t is dict:
            if resp == 3:
                flat = []
                for k, v in r.items():
                    flat += (self.to_lua(k, resp), self.to_lua(v, resp))
                return self._map_table(self._kv_table(*flat))
            flat = []
            for k, v in r.items():
                flat += (self.to_lua(k, resp), self.to_lua(v, resp))
            return self._table_from(flat)
        if t is RespSet:
            items = [self.to_lua(x, resp) for x in r]
            if resp == 3:
                return self._set_table(self._set_from(*items))
            return self._table_from(items)
        if t is Verbatim:
            return self._verbatim_table(b"txt", bytes(r)) if resp == 3 else bytes(r)
        if t is ErrorReply:
            return self._err_table(r.text.encode("utf-8", "surrogateescape"))
        if t is BigNumber:
            return self._big_table(bytes(r)) if resp == 3 else bytes(r)
        if t is bytearray or t is memoryview:
            return bytes(r)
        if t is str:
            return r.encode()
        return self.to_lua(parse_resp(encode(r, resp))[0], resp)


class CallError(Exception):
    """redis.call's error, raised through Lua; ``text`` is ``CODE message``."""

    def __init__(self, text: bytes):
        Exception.__init__(self)
        self.text = text


LIBRARY_FAULT = b"ERR internal error in a scripting library"
INDEX_FUNCTION = b"ERR attempt to index a function value"


class Denied(AttributeError):
    """A script indexed redis.call (a Python object under lupa): lupa's attribute filter
    raises this; the script sees Lua's text for indexing a function."""


def unwrap(e):
    """The error text of a CallError that came back from Lua; for any other Python
    exception (a fault in one of the bridges: none is known) a fixed text, logged with
    its traceback, so no Python text or object reaches a script; else None."""
    if e.__class__ is CallError:
        return e.text
    if e.__class__ is Denied:
        return INDEX_FUNCTION
    if isinstance(e, BaseException):
        logging.getLogger("ferrumkv").error("scripting library fault", exc_info=e)
        return LIBRARY_FAULT
    return None


class BigNumber(bytes):
    """A RESP3 big number parsed from a Raw reply."""


def _double_text(x: float) -> bytes:
    from ..resp import format_double
    return format_double(x)


def parse_resp(data: bytes, pos: int = 0):
    """Parse one RESP2/RESP3 value from ``data`` at ``pos``: (value, next pos), with the
    value in :func:`~ferrumkv_py.resp.encode`'s vocabulary.  Used for pre-encoded (Raw)
    replies only.  Complexity: O(len(data))."""
    end = data.index(b"\r\n", pos)
    kind = data[pos:pos + 1]
    line = data[pos + 1:end]
    nxt = end + 2
    if kind == b"+":
        return Status(line), nxt
    if kind == b"-":
        return ErrorReply(text(line)), nxt
    if kind == b":":
        return int(line), nxt
    if kind in (b"$", b"="):
        n = int(line)
        if n < 0:
            return None, nxt
        s = data[nxt:nxt + n]
        if kind == b"=":
            return Verbatim(s[4:]), nxt + n + 2
        return s, nxt + n + 2
    if kind in (b"*", b"~", b">"):
        n = int(line)
        if n < 0:
            return NULL_ARRAY, nxt
        items = []
        for _ in range(n):
            v, nxt = parse_resp(data, nxt)
            items.append(v)
        return (RespSet(items) if kind == b"~" else items), nxt
    if kind == b"%":
        out = {}
        for _ in range(int(line)):
            k, nxt = parse_resp(data, nxt)
            v, nxt = parse_resp(data, nxt)
            out[k if k.__class__ is not list else tuple(k)] = v
        return out, nxt
    if kind == b"_":
        return None, nxt
    if kind == b"#":
        return line == b"t", nxt
    if kind == b",":
        return float(line), nxt
    if kind == b"(":
        return BigNumber(line), nxt
    raise ValueError("bad RESP type %r" % kind)


LUA_TO_RESP = r"""
-- ---- Lua -> RESP (luaReplyToRedisReply) ----
local function maptext(s) return (gsub(s, "[\r\n]", " ")) end
local function enc(v, out, proto)
  local t = type(v)
  if t == 'string' then
    out[#out + 1] = '$' .. #v .. '\r\n' .. v .. '\r\n'
  elseif t == 'number' then
    out[#out + 1] = fmt(':%d\r\n', v)
  elseif t == 'boolean' then
    if lua_resp == 2 then
      out[#out + 1] = v and ':1\r\n' or (proto == 3 and '_\r\n' or '$-1\r\n')
    elseif proto == 3 then
      out[#out + 1] = v and '#t\r\n' or '#f\r\n'
    else
      out[#out + 1] = v and ':1\r\n' or ':0\r\n'
    end
  elseif t == 'table' then
    local e = rawget(v, 'err')
    if type(e) == 'string' then out[#out + 1] = '-' .. maptext(e) .. '\r\n'; return end
    local ok = rawget(v, 'ok')
    if type(ok) == 'string' then out[#out + 1] = '+' .. maptext(ok) .. '\r\n'; return end
    local d = rawget(v, 'double')
    if type(d) == 'number' then
      local s
      if d == 1/0 then s = 'inf' elseif d == -1/0 then s = '-inf' else s = fmt('%.17g', d) end
      if proto == 3 then out[#out + 1] = ',' .. s .. '\r\n'
      else out[#out + 1] = '$' .. #s .. '\r\n' .. s .. '\r\n' end
      return
    end
    local b = rawget(v, 'big_number')
    if type(b) == 'string' then
      b = maptext(b)
      if proto == 3 then out[#out + 1] = '(' .. b .. '\r\n'
      else out[#out + 1] = '$' .. #b .. '\r\n' .. b .. '\r\n' end
      return
    end
    local vs = rawget(v, 'verbatim_string')
    if type(vs) == 'table' then
      local f, s = rawget(vs, 'format'), rawget(vs, 'string')
      if type(f) == 'string' and type(s) == 'string' then
        if proto == 3 then
          f = sub(f .. '\0\0\0', 1, 3)
          out[#out + 1] = '=' .. (#s + 4) .. '\r\n' .. f .. ':' .. s .. '\r\n'
        else
          out[#out + 1] = '$' .. #s .. '\r\n' .. s .. '\r\n'
        end
        return
      end
    end
    local m = rawget(v, 'map')
    if type(m) == 'table' then
      local slot = #out + 1
      out[slot] = ''
      local n = 0
      for k, x in next, m do
        enc(k, out, proto)
        enc(x, out, proto)
        n = n + 1
      end
      out[slot] = proto == 3 and ('%' .. n .. '\r\n') or ('*' .. (2 * n) .. '\r\n')
      return
    end
    local st = rawget(v, 'set')
    if type(st) == 'table' then
      local slot = #out + 1
      out[slot] = ''
      local n = 0
      for k in next, st do
        enc(k, out, proto)
        n = n + 1
      end
      out[slot] = (proto == 3 and '~' or '*') .. n .. '\r\n'
      return
    end
    local slot = #out + 1
    out[slot] = ''
    local j = 1
    while true do
      local x = rawget(v, j)
      if x == nil then break end
      enc(x, out, proto)
      j = j + 1
    end
    out[slot] = '*' .. (j - 1) .. '\r\n'
  else
    out[#out + 1] = proto == 3 and '_\r\n' or '$-1\r\n'
  end
end
"""
