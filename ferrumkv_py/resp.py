"""RESP on the wire: request parsing and reply encoding (sans-IO, no package imports).

Requests
--------
Clients send either a multibulk frame (``*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\na\\r\\n``) or an inline
line (``PING\\r\\n``, what telnet users and redis-benchmark's PING_INLINE send).  Two readers
share one interface: ``feed(data)`` then ``get()`` until it returns ``NEED_MORE``; ``get()``
returns the argument list (a list of ``bytes``) of the next complete command, and raises
:class:`ProtocolError` carrying Redis's exact text when the bytes cannot be a command.

* :class:`PyRequestReader` is the reference: a byte-exact port of Redis 7.0's
  ``processInlineBuffer`` / ``processMultibulkBuffer`` rules, written with ``bytes.find`` and
  offsets (no per-byte slicing).
* :class:`RequestReader` is what connections use: hiredis parses multibulk frames in C
  (about 4x less CPU per command than the Python reader, ``bench/server_bench.py`` GET -P 16),
  and the Python reader takes over where hiredis is not Redis.  It tracks the chunks fed since
  hiredis last held no partial frame; when hiredis waits on a partial frame those chunks are
  checked by the Python reader, so an oversized ``*`` or ``$`` length is refused at once as
  Redis does instead of waiting for 512 MB that will never come.  Any hiredis error, or a
  frame that does not start with ``*`` (inline), hands the connection over to the Python reader
  for good, resuming exactly after the frames hiredis already returned.

Replies
-------
Command handlers return plain Python values; :func:`encode` turns them into RESP2 or RESP3::

    bytes / bytearray -> bulk string          int       -> integer
    None              -> null ($-1 / _)       float     -> double (RESP3) / bulk (RESP2)
    list / tuple      -> array                dict      -> map (RESP3) / flat array (RESP2)
    bool              -> boolean (RESP3) / integer 1|0 (RESP2)
    Status / Verbatim / RespSet / ErrorReply / NULL_ARRAY / Raw: see their docstrings.

Complexity: parsing and encoding are O(bytes) per command.
"""

from __future__ import annotations

try:  # hiredis is a declared dependency; the pure reader keeps the server usable without it
    import hiredis
except ImportError:  # pragma: no cover - exercised only where hiredis is missing
    hiredis = None

NEED_MORE = object()  # sentinel: the buffer holds no complete command yet

PROTO_INLINE_MAX_SIZE = 64 * 1024          # bytes, Redis PROTO_INLINE_MAX_SIZE
PROTO_MAX_BULK_LEN = 512 * 1024 * 1024     # bytes, default proto-max-bulk-len
PROTO_MAX_MULTIBULK_LEN = 2147483647       # elements, INT_MAX as in Redis 7.0
PY_VALIDATE_PENDING_MAX = 64 * 1024        # bytes of partial frame the hiredis path re-checks


class ProtocolError(Exception):
    """Malformed request bytes; the reply is ``-ERR Protocol error: <msg>`` and a close."""

    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg

    def reply(self) -> bytes:
        return b"-ERR Protocol error: " + self.msg.encode() + b"\r\n"


# ---- inline argument splitting (Redis sdssplitargs) ----

_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("a"): b"\a"}
_HEX = b"0123456789abcdefABCDEF"
_SPACE = b" \n\r\t\v\f\x00"


def split_inline(line: bytes) -> list[bytes] | None:
    """Split an inline command line like redis-cli/Redis ``sdssplitargs``.

    Double quotes understand ``\\xHH`` and ``\\n \\r \\t \\b \\a`` escapes, single quotes
    only ``\\'``.  A closing quote must be followed by a space or the end of the line.
    Returns None on unbalanced quotes.  Complexity: O(len(line)).
    """
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        inq = insq = False
        while True:
            if i >= n:
                if inq or insq:
                    return None
                break
            c = line[i]
            if inq:
                if (c == 0x5C and i + 3 < n and line[i + 1] == ord("x")
                        and line[i + 2] in _HEX and line[i + 3] in _HEX):
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 0x5C and i + 1 < n:
                    i += 1
                    cur += _ESCAPES.get(line[i], bytes((line[i],)))
                elif c == 0x22:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    inq = False
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if c == 0x5C and i + 1 < n and line[i + 1] == 0x27:
                    i += 1
                    cur.append(0x27)
                elif c == 0x27:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    insq = False
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if c in _SPACE:
                    break
                if c == 0x22:
                    inq = True
                elif c == 0x27:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        args.append(bytes(cur))


def _parse_ll(b: bytes) -> int | None:
    """Redis string2ll: optional '-', digits, no leading '+', spaces or zeros ("0" alone ok)."""
    if not b or len(b) > 20:
        return None
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or (s[:1] == b"0" and len(s) > 1) or (s == b"0" and b[:1] == b"-"):
        return None
    return int(b)


class PyRequestReader:
    """Pure-Python request reader with Redis 7.0's exact rules and error texts.

    Complexity: O(bytes) per command; a partial frame is re-examined from its start when more
    bytes arrive, so headers are parsed at most once per feed.
    """

    __slots__ = ("buf", "pos", "max_bulk_len")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN):
        self.buf = b""
        self.pos = 0
        self.max_bulk_len = max_bulk_len

    def feed(self, data: bytes) -> None:
        if self.pos:
            self.buf = self.buf[self.pos:] + data
            self.pos = 0
        else:
            self.buf = self.buf + data if self.buf else bytes(data)

    def pending(self) -> int:
        return len(self.buf) - self.pos

    def get(self):
        while True:
            buf, pos = self.buf, self.pos
            if pos >= len(buf):
                return NEED_MORE
            if buf[pos] == 0x2A:  # '*'
                res = self._multibulk(buf, pos)
            else:
                res = self._inline(buf, pos)
            if res is NEED_MORE:
                return NEED_MORE
            argv, self.pos = res
            if argv:
                return argv
            # empty inline line or *0 / *-1: nothing to run, keep going

    def _inline(self, buf: bytes, pos: int):
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big inline request")
            return NEED_MORE
        end = nl - 1 if nl > pos and buf[nl - 1] == 0x0D else nl
        argv = split_inline(buf[pos:end])
        if argv is None:
            raise ProtocolError("unbalanced quotes in request")
        return argv, nl + 1

    def _multibulk(self, buf: bytes, pos: int):
        cr = buf.find(b"\r", pos)
        if cr < 0 or cr + 1 >= len(buf):
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big mbulk count string")
            return NEED_MORE
        count = _parse_ll(buf[pos + 1:cr])
        if count is None or count > PROTO_MAX_MULTIBULK_LEN:
            raise ProtocolError("invalid multibulk length")
        p = cr + 2
        if count <= 0:
            return [], p
        argv = []
        n = len(buf)
        for _ in range(count):
            cr = buf.find(b"\r", p)
            if cr < 0 or cr + 1 >= n:
                if n - p > PROTO_INLINE_MAX_SIZE:
                    raise ProtocolError("too big bulk count string")
                return NEED_MORE
            if buf[p] != 0x24:  # '$'
                raise ProtocolError("expected '$', got '%s'" % chr(buf[p]))
            blen = _parse_ll(buf[p + 1:cr])
            if blen is None or blen < 0 or blen > self.max_bulk_len:
                raise ProtocolError("invalid bulk length")
            start = cr + 2
            if start + blen + 2 > n:
                return NEED_MORE
            argv.append(buf[start:start + blen])
            p = start + blen + 2
        return argv, p


class RequestReader:
    """The connection's reader: hiredis for multibulk frames, the Python reader otherwise.

    Boundary tracking: hiredis does not say where its last frame ended, so the reader adds up
    the canonical wire size of every frame it returns (``*N``, ``$len`` headers, payloads).
    When hiredis wants more bytes and that sum equals the bytes fed, the stream sits on a frame
    boundary and the saved chunks are dropped; otherwise a partial (or non-canonical) frame is
    pending and, when small, the Python reader checks it so a bad length fails at once.
    Complexity: O(bytes) in C plus O(arguments) in Python per command.
    """

    __slots__ = ("_hr", "_py", "_pending", "_done", "_fed", "_used", "max_bulk_len")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, use_hiredis: bool = True):
        self.max_bulk_len = max_bulk_len
        self._py = None
        self._hr = hiredis.Reader() if (use_hiredis and hiredis is not None) else None
        if self._hr is None:
            self._py = PyRequestReader(max_bulk_len)
        self._pending: list[bytes] = []  # chunks fed since the last known frame boundary
        self._fed = 0                    # bytes in those chunks
        self._used = 0                   # canonical bytes of the frames returned from them
        self._done = 0                   # number of those frames

    def feed(self, data: bytes) -> None:
        if self._py is not None:
            self._py.feed(data)
            return
        if not self._pending and data[:1] != b"*":
            self._switch_to_python(data)
            return
        self._pending.append(data)
        self._fed += len(data)
        self._hr.feed(data)

    def get(self):
        py = self._py
        if py is not None:
            return py.get()
        hr = self._hr
        while True:
            try:
                frame = hr.gets()
            except hiredis.ProtocolError:
                self._switch_to_python(b"")
                return self._py.get()
            if frame is False:
                if self._used == self._fed:
                    self._pending.clear()
                    self._fed = self._used = self._done = 0
                elif self._fed - self._used <= PY_VALIDATE_PENDING_MAX:
                    self._validate_partial()
                return NEED_MORE
            if frame.__class__ is list and frame:
                size = 3 + len(str(len(frame)))
                for a in frame:
                    if a.__class__ is not bytes:  # ':1' or nested '*': Redis refuses it
                        self._switch_to_python(b"")
                        return self._py.get()
                    n = len(a)
                    size += n + (6 if n < 10 else 7 if n < 100 else 5 + len(str(n)))
                self._used += size
                self._done += 1
                return frame
            if frame is None:  # *-1
                self._used += 5
            elif frame == []:  # *0
                self._used += 4
            else:  # a bare '+', ':' or '$' frame: not a command, let Redis's rules judge it
                self._switch_to_python(b"")
                return self._py.get()
            self._done += 1

    def _skip_done(self, py: PyRequestReader) -> None:
        for _ in range(self._done):
            py.pos = py._multibulk(py.buf, py.pos)[1]

    def _switch_to_python(self, extra: bytes) -> None:
        """Hand the rest of the stream to the Python reader, skipping frames already served."""
        py = PyRequestReader(self.max_bulk_len)
        py.feed(b"".join(self._pending) + extra)
        self._skip_done(py)
        self._py, self._hr = py, None
        self._pending = []

    def _validate_partial(self) -> None:
        """Run the Python rules over the partial frame so bad lengths fail fast."""
        py = PyRequestReader(self.max_bulk_len)
        py.feed(b"".join(self._pending))
        self._skip_done(py)
        while py.get() is not NEED_MORE:
            pass


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


def encode(reply, proto: int = 2) -> bytes:
    """Encode one reply value; see the module docstring for the mapping."""
    out: list[bytes] = []
    _encode_into(out, reply, proto)
    return b"".join(out)


def _encode_into(out: list, r, proto: int) -> None:
    t = r.__class__
    if t is bytes:
        out.append(b"$%d\r\n%b\r\n" % (len(r), r))
    elif t is Raw:
        out.append(r)
    elif t is int:
        out.append(b":%d\r\n" % r)
    elif r is None:
        out.append(b"_\r\n" if proto == 3 else NULL_BULK2)
    elif t is Status:
        out.append(b"+%b\r\n" % r)
    elif t is list or t is tuple:
        out.append(b"*%d\r\n" % len(r))
        for x in r:
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
        out.append(b"-%b\r\n" % r.text.encode())
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
    return b"-" + text.replace("\r", " ").replace("\n", " ").encode() + b"\r\n"
