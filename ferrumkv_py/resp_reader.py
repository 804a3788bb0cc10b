"""RESP requests: bytes in, argument lists out (sans-IO, no package imports).

Clients send either a multibulk frame (``*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\na\\r\\n``) or an inline
line (``PING\\r\\n``, what telnet users and redis-benchmark's PING_INLINE send).  Two readers
share one interface: ``feed(data)`` then ``get()`` until it returns ``NEED_MORE``; ``get()``
returns the argument list (a list of ``bytes``) of the next complete command, and raises
:class:`ProtocolError` carrying Redis's exact text when the bytes cannot be a command.
Setting ``reader.unauth = True`` applies the limits Redis 7 puts on clients that still owe an
AUTH (at most 10 arguments of at most 16 KiB each).

* :class:`PyRequestReader` is the reference: a port of Redis 7.0's ``processInlineBuffer`` /
  ``processMultibulkBuffer`` rules, resumable like Redis's (a partial frame keeps its parsed
  arguments, and a long bulk payload is collected as a list of chunks joined once), so a frame
  costs O(its bytes) however it is split.
* :class:`~ferrumkv_py.resp_hiredis.RequestReader` (``resp_hiredis.py``) is what connections
  use: hiredis parses multibulk frames in C (about 4x less CPU per command than the Python
  reader, ``bench/server_bench.py`` GET -P 16), and this module's reader takes over where
  hiredis is not Redis.

The reply side (values -> RESP2/RESP3 bytes) is :mod:`ferrumkv_py.resp`, which re-exports
the reader names, so ``from ferrumkv_py.resp import RequestReader`` keeps working.

Complexity: parsing is O(bytes) per command.
"""

from __future__ import annotations



NEED_MORE = object()  # sentinel: the buffer holds no complete command yet

PROTO_INLINE_MAX_SIZE = 64 * 1024          # bytes, Redis PROTO_INLINE_MAX_SIZE
PROTO_MAX_BULK_LEN = 512 * 1024 * 1024     # bytes, default proto-max-bulk-len
PROTO_MAX_MULTIBULK_LEN = 2147483647       # elements, INT_MAX as in Redis 7.0
UNAUTH_MAX_MULTIBULK_LEN = 10              # elements a client may send before AUTH (Redis 7)
UNAUTH_MAX_BULK_LEN = 16384                # bytes per argument before AUTH (Redis 7)
HIREDIS_MAX_COUNT_DIGITS = 6               # '*' + this many digits: too big for hiredis
LONG_STR_SIZE = 21                         # Redis string2ll refuses strings this long
BIG_ARG_BYTES = 32 * 1024                  # bulks this long are collected apart (Redis
                                           # PROTO_MBULK_BIG_ARG)


class ProtocolError(Exception):
    """Malformed request bytes; the reply is ``-ERR Protocol error: <msg>`` and a close."""

    def __init__(self, msg: str):
        super().__init__(msg)
        self.msg = msg

    def reply(self) -> bytes:
        return b"-ERR Protocol error: " + self.msg.encode() + b"\r\n"


# ---- big bulks filled in place ----
# A big bulk's payload is written straight into the ``bytes`` object that becomes the
# argument: allocated uninitialised at its ``$len`` header (PyBytes_FromStringAndSize with
# NULL, so its pages are touched only as the payload arrives), filled by memmove at each
# read, handed out once the last byte is in -- never seen by anyone before.  No final join:
# no stall of one big memcpy when the payload completes, and the payload is held once,
# not twice at the end.  Where CPython's layout is not what this expects (another
# interpreter), the payload is kept as a list of chunks and joined once instead.
try:
    import ctypes
    _new_bytes = ctypes.pythonapi.PyBytes_FromStringAndSize
    _new_bytes.restype = ctypes.py_object
    _new_bytes.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    _memmove = ctypes.memmove
    _BYTES_DATA = bytes.__basicsize__ - 1           # offset of a bytes object's payload
    _probe = b"ferrumkv-bytes-layout-probe"
    if ctypes.string_at(id(_probe) + _BYTES_DATA, len(_probe)) != _probe:
        _new_bytes = None                           # pragma: no cover
except (ImportError, AttributeError, OSError):      # pragma: no cover
    _new_bytes = None


class QueryBufferLimit(Exception):
    """More unparsed input than client-query-buffer-limit: Redis logs and closes, no reply.
    ``head`` holds the first bytes of the buffer (for the log line)."""

    def __init__(self, size: int, head: bytes):
        super().__init__(size)
        self.size = size
        self.head = head


# ---- inline argument splitting (Redis sdssplitargs) ----

_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("a"): b"\a"}
_HEX = b"0123456789abcdefABCDEF"
_ISSPACE = b" \n\r\t\v\f"      # C isspace(): skipped between arguments, needed after a quote
_TOKEN_END = b" \n\r\t"        # ends an unquoted argument (\v and \f do not)


def split_inline(line: bytes) -> list[bytes] | None:
    """Split an inline command line exactly as Redis ``sdssplitargs``.

    Double quotes understand ``\\xHH`` and ``\\n \\r \\t \\b \\a`` escapes, single quotes
    only ``\\'``.  A closing quote must be followed by whitespace or the end of the line.  The
    line is a C string to Redis, so a NUL byte ends it.  Returns None on unbalanced quotes.
    Complexity: O(len(line)).
    """
    nul = line.find(b"\x00")
    if nul >= 0:
        line = line[:nul]
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _ISSPACE:
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
                if (c == 0x5C and i + 3 < n and line[i + 1] == 0x78
                        and line[i + 2] in _HEX and line[i + 3] in _HEX):
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 0x5C and i + 1 < n:
                    i += 1
                    cur += _ESCAPES.get(line[i], bytes((line[i],)))
                elif c == 0x22:
                    # the closing quote's rule; the single-quote branch below repeats it, as
                    # sdssplitargs does (one branch per quote kind, read like Redis's)
                    if i + 1 < n and line[i + 1] not in _ISSPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if c == 0x5C and i + 1 < n and line[i + 1] == 0x27:
                    i += 1
                    cur.append(0x27)
                elif c == 0x27:     # (the double-quote branch's closing rule again)
                    if i + 1 < n and line[i + 1] not in _ISSPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            elif c in _TOKEN_END:
                break
            elif c == 0x22:
                inq = True
            elif c == 0x27:
                insq = True
            else:
                cur.append(c)
            i += 1
        args.append(bytes(cur))


def _parse_ll(b: bytes) -> int | None:
    """Redis string2ll: optional '-', digits, no '+', spaces or leading zeros, 64-bit range."""
    if not b or len(b) >= LONG_STR_SIZE:
        return None
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or s[:1] == b"0" and (len(s) > 1 or len(b) > 1):
        return None
    v = int(b)
    return v if -(1 << 63) <= v < (1 << 63) else None


class PyRequestReader:
    """Pure-Python request reader with Redis 7.0's exact rules and error texts.

    State between calls, as Redis keeps in its client struct: ``_left`` arguments still owed
    by the current multibulk frame and ``_argv`` those already read.  While the reader waits,
    it also knows for what: ``_need`` bytes (counted from ``pos``, a bulk payload) or the
    ``_wait`` byte that ends a header or an inline line.  Until that has arrived,
    :meth:`feed` only appends to ``_chunks`` instead of copying the buffer, so a payload or
    a header trickling in byte by byte costs O(bytes), not O(bytes^2).

    A big bulk (``big_arg_bytes`` or longer, Redis's PROTO_MBULK_BIG_ARG) whose payload has
    not all arrived is collected apart, as Redis reads a big argument straight into its own
    buffer: once its ``$len`` header is known, the payload bytes already read are moved to
    ``_big``, the argument itself allocated at its full length, and every later read is
    copied there (``memmove``, O(that read) however small; see "big bulks filled in place"
    above; where that is unavailable, a list of chunks joined once at the end).  So the
    unfinished bulk is held once, each of its bytes is copied once, no join stalls the loop
    when it completes, and no buffer keeps a stale copy of it once the command has run::

        $67108864\r\n <16 KB> | <16 KB> | ... | <last bytes>\r\n*1\r\n$4\r\nPING\r\n
                    `----- _big: the argument, filled in place ---´  `-- buf again --´

    Complexity: O(bytes) per command, however the bytes are split into reads.
    """

    __slots__ = ("buf", "pos", "max_bulk_len", "unauth", "_left", "_argv", "_chunks",
                 "_chunks_len", "_need", "_wait", "big_arg_bytes", "_big", "_big_got",
                 "_big_size", "_big_skip", "fill_in_place")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN,
                 big_arg_bytes: int = BIG_ARG_BYTES):
        self.buf = b""
        self.pos = 0
        self.max_bulk_len = max_bulk_len
        self.unauth = False
        self._left = 0
        self._argv: list = []
        self._chunks: list = []
        self._chunks_len = 0
        self._need = 0
        self._wait = None
        self.big_arg_bytes = big_arg_bytes
        self._big = None        # payload chunks of the big bulk being collected, or None
        self._big_got = 0       # payload bytes in _big
        self._big_size = 0      # the big bulk's length
        self._big_skip = 0      # bytes of its trailing CRLF still to skip
        self.fill_in_place = _new_bytes is not None  # _big is the argument itself (above)

    def feed(self, data: bytes) -> None:
        if self._big is not None and (self._big_got < self._big_size or self._big_skip):
            data = self._feed_big(data)
            if not data:
                return
        have = len(self.buf) - self.pos + self._chunks_len + len(data)
        if have < self._need or (self._wait is not None and self._wait not in data
                                 and have <= PROTO_INLINE_MAX_SIZE):
            self._chunks.append(data)
            self._chunks_len += len(data)
            return
        parts = [self.buf[self.pos:]] if self.pos < len(self.buf) else []
        if self._chunks:
            parts += self._chunks
            self._chunks, self._chunks_len = [], 0
        parts.append(data)
        self.buf = b"".join(parts) if len(parts) > 1 else bytes(parts[0])
        self.pos = 0
        self._need = 0
        self._wait = None

    def _feed_big(self, data: bytes) -> bytes:
        """Append a read to the big bulk being collected; return the bytes past its end
        (and its CRLF), which go to the buffer as usual.  Complexity: O(1) unless the read
        ends the bulk (then O(the read), for the slice)."""
        if data.__class__ is not bytes:
            data = bytes(data)
        need = self._big_size - self._big_got
        if need and self._big.__class__ is bytes:       # filled in place
            take = len(data) if len(data) < need else need
            _memmove(id(self._big) + _BYTES_DATA + self._big_got, id(data) + _BYTES_DATA,
                     take)
            self._big_got += take
            if take == len(data):
                return b""
            data = data[take:]
        elif need:
            if len(data) <= need:
                self._big.append(data)
                self._big_got += len(data)
                return b""
            self._big.append(data[:need])
            self._big_got = self._big_size
            data = data[need:]
        skip = min(self._big_skip, len(data))
        self._big_skip -= skip
        return data[skip:] if skip else data

    def pending(self) -> int:
        """Bytes received and not yet returned as commands (the query buffer's length)."""
        return len(self.buf) - self.pos + self._chunks_len + self._big_got

    def at_boundary(self) -> bool:
        """True when no partial command is buffered."""
        return self._left == 0 and self.pos >= len(self.buf) and not self._chunks

    def _check(self) -> None:
        """Assert the resumable state is consistent (tests call it after every step)."""
        assert 0 <= self.pos <= len(self.buf)
        assert self._chunks_len == sum(len(c) for c in self._chunks)
        assert self._left >= 0 and (self._left > 0 or not self._argv)
        assert not self._chunks or self._need > 0 or self._wait is not None
        if self._big is not None:
            assert self._left > 0 and not self._chunks
            if self._big.__class__ is bytes:
                assert len(self._big) == self._big_size and self._big_got <= self._big_size
            else:
                assert self._big_got == sum(len(c) for c in self._big) <= self._big_size
            assert 0 <= self._big_skip <= 2
            assert self._big_got == self._big_size or (self._big_skip == 2 and not self.buf)

    def get(self):
        if self._chunks:  # still waiting for what the last call needed
            return NEED_MORE
        while True:
            if self._left == 0:
                buf, pos = self.buf, self.pos
                if pos >= len(buf):
                    return NEED_MORE
                if buf[pos] != 0x2A:  # not '*': an inline command
                    argv = self._inline(buf, pos)
                    if argv is NEED_MORE or argv:
                        return argv
                    continue  # empty line: nothing to run
                if not self._multibulk_header(buf, pos):
                    return NEED_MORE
                if self._left == 0:
                    continue  # *0 or a negative count: nothing to run
            if not self._bulks():
                return NEED_MORE
            argv, self._argv = self._argv, []
            return argv

    def _inline(self, buf: bytes, pos: int):
        nl = buf.find(b"\n", pos)
        if nl < 0:
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big inline request")
            self._wait = b"\n"
            return NEED_MORE
        end = nl - 1 if nl > pos and buf[nl - 1] == 0x0D else nl
        argv = split_inline(buf[pos:end])
        if argv is None:
            raise ProtocolError("unbalanced quotes in request")
        self.pos = nl + 1
        return argv

    def _multibulk_header(self, buf: bytes, pos: int) -> bool:
        cr = buf.find(b"\r", pos)
        if cr < 0 or cr + 1 >= len(buf):
            if len(buf) - pos > PROTO_INLINE_MAX_SIZE:
                raise ProtocolError("too big mbulk count string")
            self._await_line_end(cr, pos)
            return False
        count = _parse_ll(buf[pos + 1:cr])
        if count is None or count > PROTO_MAX_MULTIBULK_LEN:
            raise ProtocolError("invalid multibulk length")
        if count > UNAUTH_MAX_MULTIBULK_LEN and self.unauth:
            raise ProtocolError("unauthenticated multibulk length")
        self.pos = cr + 2
        self._left = max(count, 0)
        return True

    def _await_line_end(self, cr: int, start: int) -> None:
        """A header starting at ``start`` is incomplete: wait for its '\\r', or for the one
        byte after a '\\r' that ends the buffer (Redis skips two bytes after the '\\r')."""
        if cr < 0:
            self._wait = b"\r"
        else:
            self._need = cr + 2 - start

    def _bulks(self) -> bool:
        """Read the owed ``$len`` arguments; False (state saved) when bytes are missing."""
        buf, p, n = self.buf, self.pos, len(self.buf)
        argv, left = self._argv, self._left
        max_len = UNAUTH_MAX_BULK_LEN if self.unauth else self.max_bulk_len
        if self._big is not None:           # a big bulk: complete once every byte is here
            if self._big_got < self._big_size or self._big_skip:
                return False
            big, self._big = self._big, None
            if big.__class__ is bytes:
                argv.append(big)
            else:
                argv.append(b"".join(big) if len(big) != 1 else big[0])
            self._big_got = self._big_size = 0
            left -= 1
        try:
            while left:
                cr = buf.find(b"\r", p)
                if cr < 0 or cr + 1 >= n:
                    if n - p > PROTO_INLINE_MAX_SIZE:
                        raise ProtocolError("too big bulk count string")
                    self._await_line_end(cr, p)
                    return False
                if buf[p] != 0x24:  # '$'
                    raise ProtocolError("expected '$', got '%s'" % chr(buf[p]))
                blen = _parse_ll(buf[p + 1:cr])
                if blen is None or blen < 0 or blen > max_len:
                    if self.unauth and blen is not None and 0 <= blen <= self.max_bulk_len:
                        raise ProtocolError("unauthenticated bulk length")
                    raise ProtocolError("invalid bulk length")
                start = cr + 2
                end = start + blen
                if end + 2 > n:
                    if blen >= self.big_arg_bytes:
                        self._collect_big(buf, start, blen)
                        buf, p, n = b"", 0, 0
                    else:
                        self._need = end + 2 - p
                    return False
                argv.append(buf[start:end])
                p = end + 2
                left -= 1
            return True
        finally:
            self.pos, self._left = p, left

    def _collect_big(self, buf: bytes, start: int, blen: int) -> None:
        """Start collecting a big bulk whose payload begins at ``buf[start]`` and has not
        all arrived: what is here moves to ``_big``, the buffer empties."""
        if self.fill_in_place and buf.__class__ is bytes:
            big = _new_bytes(None, blen)
            here = min(blen, len(buf) - start)
            _memmove(id(big) + _BYTES_DATA, id(buf) + _BYTES_DATA + start, here)
            self._big = big
            self._big_got = here
        else:
            here = buf[start:start + blen]
            self._big = [here] if here else []
            self._big_got = len(here)
        self._big_size = blen
        self._big_skip = 2 - max(0, len(buf) - start - blen)
        self.buf = b""
