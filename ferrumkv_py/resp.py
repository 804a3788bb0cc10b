"""RESP replies: values out, RESP2 / RESP3 bytes on the wire (sans-IO).

Command handlers return plain Python values; :func:`encode` turns them into RESP2 or RESP3::

    bytes / bytearray -> bulk string          int       -> integer
    None              -> null ($-1 / _)       float     -> double (RESP3) / bulk (RESP2)
    list / tuple      -> array                dict      -> map (RESP3) / flat array (RESP2)
    bool              -> boolean (RESP3) / integer 1|0 (RESP2)
    Status / Verbatim / RespSet / ErrorReply / NULL_ARRAY / Raw: see their docstrings.

Requests (bytes -> argument lists: ``RequestReader``, ``PyRequestReader``, ``NEED_MORE``,
``ProtocolError``) are parsed in :mod:`ferrumkv_py.resp_reader` and
:mod:`ferrumkv_py.resp_hiredis`; they are re-exported here,
the one place the wire format is imported from.

Complexity: encoding is O(bytes) per reply.
"""

from __future__ import annotations

from .resp_hiredis import RequestReader  # noqa: F401  (re-exported)
from .resp_reader import QueryBufferLimit  # noqa: F401  (re-exported)
from .resp_reader import (NEED_MORE, ProtocolError, PyRequestReader,  # noqa: F401
                          split_inline)  # (re-exported)


# ---- replies ----

class Status(bytes):
    """A simple string reply: ``+OK``."""


class Verbatim(bytes):
    """A text reply: RESP3 verbatim string (``=len\\r\\ntxt:...``), RESP2 bulk string (INFO)."""


class RespSet(list):
    """An array that RESP3 sends as a set (``~``): SMEMBERS, SINTER..."""


class ErrorReply:
    """An error value inside another reply (EXEC results); ``text`` excludes the ``-``."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class Raw(bytes):
    """Already-encoded bytes, identical in RESP2 and RESP3 (``+OK\\r\\n``)."""


class Pushed(Raw):
    """Encoded frames Redis writes with CLIENT_PUSHING set: the (un)subscribe confirmations,
    in either protocol.  CLIENT REPLY OFF / SKIP silence replies, not these (networking.c,
    prepareClientToWrite), so the gate lets them through (``Client.gate_reply``)."""


class _NullArray:
    __slots__ = ()


NULL_ARRAY = _NullArray()  # RESP2 ``*-1`` (EXEC aborted, BLPOP timeout); RESP3 ``_``
OK = Raw(b"+OK\r\n")
QUEUED = Raw(b"+QUEUED\r\n")
PONG = Raw(b"+PONG\r\n")
NULL_BULK2 = b"$-1\r\n"


def format_double(x: float) -> bytes:
    """Redis 7.0 addReplyDouble text: ``%.17g``, with inf / -inf / nan spelled out."""
    if x != x:
        return b"nan"
    if x in (float("inf"), float("-inf")):
        return b"inf" if x > 0 else b"-inf"
    return (b"%.17g" % x)


PUSH_PREFIX = {2: b"*", 3: b">"}   # array header of a pub/sub / tracking frame, by protocol


def bulk(b: bytes) -> bytes:
    """``$<len>\\r\\n<b>\\r\\n``."""
    return b"$%d\r\n%b\r\n" % (len(b), b)


def push_frame(proto: int, parts: list) -> bytes:
    """A pub/sub or tracking frame of bulk strings, integers and nulls: a RESP2 array or a
    RESP3 push.  Complexity: O(bytes)."""
    out = [PUSH_PREFIX[3 if proto == 3 else 2], b"%d\r\n" % len(parts)]
    for p in parts:
        if p is None:
            out.append(b"_\r\n" if proto == 3 else b"$-1\r\n")
        elif p.__class__ is int:
            out.append(b":%d\r\n" % p)
        else:
            out.append(bulk(p))
    return b"".join(out)


_BULK_HEADERS = [b"$%d\r\n" % n for n in range(256)]   # "$<len>\r\n" for short strings


def bulk_array(items) -> Raw:
    """An array of bulk strings encoded once, identical in RESP2 and RESP3 (the hot
    replies: LRANGE, ZRANGE, HKEYS, tracking's key lists).

    About 2x faster than the generic encoder for LRANGE 0 599 of 3-byte values (a cached
    ``$<len>`` header per short length instead of one ``%`` format per element).
    Complexity: O(total bytes).
    """
    heads = _BULK_HEADERS
    parts = [b"*%d\r\n" % len(items)]
    add = parts.append
    for x in items:
        n = len(x)
        add(heads[n] if n < 256 else b"$%d\r\n" % n)
        add(x)
        add(b"\r\n")
    return Raw(b"".join(parts))


def encode(reply, proto: int = 2) -> bytes:
    """Encode one reply value; see the module docstring for the mapping."""
    out: list[bytes] = []
    _encode_into(out, reply, proto)
    return b"".join(out)


def _encode_into(out: list, r, proto: int) -> None:
    t = r.__class__
    if t is bytes:
        out.append(b"$%d\r\n%b\r\n" % (len(r), r))
    elif t is Raw or t is Pushed:
        out.append(r)
    elif t is int:
        out.append(b":%d\r\n" % r)
    elif r is None:
        out.append(b"_\r\n" if proto == 3 else NULL_BULK2)
    elif t is Status:
        out.append(b"+%b\r\n" % r)
    elif t is list or t is tuple:
        out.append(b"*%d\r\n" % len(r))
        for x in r:  # bulk strings inline: a 600-bulk LRANGE reply 800 -> 370 us (timeit)
            if x.__class__ is bytes:
                out.append(b"$%d\r\n%b\r\n" % (len(x), x))
            else:
                _encode_into(out, x, proto)
    elif t is bool:
        if proto == 3:
            out.append(b"#t\r\n" if r else b"#f\r\n")
        else:
            out.append(b":1\r\n" if r else b":0\r\n")
    elif t is float:
        s = format_double(r)
        out.append(b",%b\r\n" % s if proto == 3 else b"$%d\r\n%b\r\n" % (len(s), s))
    elif t is dict:
        if proto == 3:
            out.append(b"%%%d\r\n" % len(r))
        else:
            out.append(b"*%d\r\n" % (2 * len(r)))
        for k, v in r.items():
            _encode_into(out, k, proto)
            _encode_into(out, v, proto)
    elif t is RespSet:
        out.append((b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(r))
        for x in r:
            _encode_into(out, x, proto)
    elif t is Verbatim:
        if proto == 3:
            out.append(b"=%d\r\ntxt:%b\r\n" % (len(r) + 4, r))
        else:
            out.append(b"$%d\r\n%b\r\n" % (len(r), r))
    elif t is ErrorReply:
        out.append(b"-%b\r\n" % r.text.encode("utf-8", "surrogateescape"))
    elif r is NULL_ARRAY:
        out.append(b"_\r\n" if proto == 3 else b"*-1\r\n")
    elif t is bytearray or t is memoryview:
        out.append(b"$%d\r\n%b\r\n" % (len(r), bytes(r)))
    elif t is str:
        b = r.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(b), b))
    else:
        raise TypeError("cannot encode reply of type %s" % t.__name__)


def encode_error(text: str) -> bytes:
    """``-<text>\\r\\n`` with CR/LF replaced by spaces, as Redis addReplyError does."""
    data = text.replace("\r", " ").replace("\n", " ").encode("utf-8", "surrogateescape")
    return b"-" + data + b"\r\n"
