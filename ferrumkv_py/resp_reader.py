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
* :class:`RequestReader` is what connections use: hiredis parses multibulk frames in C
  (about 4x less CPU per command than the Python reader, ``bench/server_bench.py`` GET -P 16),
  and the Python reader takes over where hiredis is not Redis.  See its docstring.

The reply side (values -> RESP2/RESP3 bytes) is :mod:`ferrumkv_py.resp`, which re-exports
the names here, so ``from ferrumkv_py.resp import RequestReader`` keeps working.

Complexity: parsing is O(bytes) per command.
"""

from __future__ import annotations

import re

try:  # hiredis is a declared dependency; the pure reader keeps the server usable without it
    import hiredis
except ImportError:  # pragma: no cover - exercised only where hiredis is missing
    hiredis = None

NEED_MORE = object()  # sentinel: the buffer holds no complete command yet

PROTO_INLINE_MAX_SIZE = 64 * 1024          # bytes, Redis PROTO_INLINE_MAX_SIZE
PROTO_MAX_BULK_LEN = 512 * 1024 * 1024     # bytes, default proto-max-bulk-len
PROTO_MAX_MULTIBULK_LEN = 2147483647       # elements, INT_MAX as in Redis 7.0
UNAUTH_MAX_MULTIBULK_LEN = 10              # elements a client may send before AUTH (Redis 7)
UNAUTH_MAX_BULK_LEN = 16384                # bytes per argument before AUTH (Redis 7)
HIREDIS_MAX_COUNT_DIGITS = 6               # '*' + this many digits: too big for hiredis
LONG_STR_SIZE = 21                         # Redis string2ll refuses strings this long


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
                elif c == 0x27:
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

    Complexity: O(bytes) per command, however the bytes are split into reads.
    """

    __slots__ = ("buf", "pos", "max_bulk_len", "unauth", "_left", "_argv", "_chunks",
                 "_chunks_len", "_need", "_wait")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN):
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

    def feed(self, data: bytes) -> None:
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

    def pending(self) -> int:
        """Bytes received and not yet returned as commands."""
        return len(self.buf) - self.pos + self._chunks_len

    def at_boundary(self) -> bool:
        """True when no partial command is buffered."""
        return self._left == 0 and self.pos >= len(self.buf) and not self._chunks

    def _check(self) -> None:
        """Assert the resumable state is consistent (tests call it after every step)."""
        assert 0 <= self.pos <= len(self.buf)
        assert self._chunks_len == sum(len(c) for c in self._chunks)
        assert self._left >= 0 and (self._left > 0 or not self._argv)
        assert not self._chunks or self._need > 0 or self._wait is not None

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
                    self._need = end + 2 - p
                    return False
                argv.append(buf[start:end])
                p = end + 2
                left -= 1
            return True
        finally:
            self.pos, self._left = p, left


_BIG_COUNT = re.compile(rb"\*\d{%d}" % HIREDIS_MAX_COUNT_DIGITS)
# Wire bytes of a frame's headers, by count / length: ``*N\r\n`` and ``$len\r\n`` + ``\r\n``.
# A table lookup instead of the digit arithmetic: GET -P 16 -4% CPU per command
# (bench/server_bench.py --parts dispatch); longer arguments take the exact slow path.
HEADER_TABLE_ARGS = 1024                   # frames with fewer arguments use the table
HEADER_TABLE_LEN = 1 << 16                 # arguments shorter than this use the table
_ARRAY_HEADER = bytes(3 + len(str(n)) for n in range(HEADER_TABLE_ARGS))
_BULK_HEADER = bytes(5 + len(str(n)) for n in range(HEADER_TABLE_LEN))


_SWITCH = object()  # get_batch owes the next call a switch to the Python reader


def _encode_request(frame: list) -> bytes:
    """The canonical wire form of a request frame (``*N`` of ``$len`` bulks)."""
    return b"*%d\r\n" % len(frame) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in frame)


def _wire_size(frame: list) -> int:
    """Canonical wire size of a request frame of bytes arguments (exact for any size)."""
    return 3 + len(str(len(frame))) + sum(len(a) + 5 + len(str(len(a))) for a in frame)


class RequestReader:
    """The connection's reader: hiredis for multibulk frames, the Python reader otherwise.

    hiredis is not Redis in three ways, and each is handled by the Python reader:

    * it reads any RESP, Redis only ``*`` frames of ``$`` bulks: an inline command, a nested
      array, a ``+``/``(``/``=`` element, ``$-1`` or a bad length is a hiredis error or an
      odd frame (each returned frame's type bytes are checked in the buffer, see
      :meth:`_frame_end`); the Python reader then re-reads the stream from the last frame
      boundary and answers as Redis would.  Where hiredis waits on a RESP3 or ``$`` header
      that Redis reads as an inline command, the shadow (below) finds the command;
    * it allocates a ``*N`` frame's list up front, so ``*2000000000`` would cost 16 GB: a
      read holding ``*`` and 6+ digits goes to the Python reader (a payload that merely
      contains such text costs only the slower path until the next frame boundary);
    * it waits for a 600 MB bulk that Redis refuses at once: while a frame is partial, a
      *shadow* Python reader is fed the same bytes and raises what Redis would raise.

    Boundary tracking: hiredis does not say where a frame ended, so the reader adds up the
    wire size of every frame it returns (``*N``, ``$len`` headers, payloads: canonical,
    since hiredis parses lengths with Redis's string2ll).  The bytes kept in ``_pending`` start at an
    *anchor*, a known frame boundary.  When hiredis wants more bytes, the stream is either on
    a boundary (sum == bytes fed: drop everything) or inside a frame: the anchor moves to
    that frame's start and the shadow reader is built from it, then fed each new read until
    hiredis completes the frame.  Each byte is copied O(1) times.  The Python reader hands
    back to hiredis at the first boundary, so one inline command does not slow a
    connection down for good.
    Complexity: O(bytes) in C plus O(arguments) in Python per command.
    """

    __slots__ = ("_hr", "_py", "_pending", "_done", "_fed", "_used", "_shadow", "_tail",
                 "max_bulk_len", "unauth", "_use_hiredis", "_defer", "more")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, use_hiredis: bool = True):
        self.max_bulk_len = max_bulk_len
        self.unauth = False
        self._use_hiredis = use_hiredis and hiredis is not None
        self._defer = None      # get_batch: SWITCH or a ProtocolError owed to the next call
        self.more = True        # get_batch: False when the next call would find nothing
        self._py = None
        self._hr = None
        if self._use_hiredis:
            self._to_hiredis()
        else:
            self._py = PyRequestReader(max_bulk_len)

    def _to_hiredis(self) -> None:
        self._py = None
        self._hr = hiredis.Reader()
        self._pending: list[bytes] = []  # chunks fed since the anchor (a frame boundary)
        self._fed = 0                    # bytes in those chunks
        self._used = 0                   # canonical bytes of the frames returned since
        self._done = 0                   # number of those frames
        self._shadow = None              # Python reader over the partial frame, if any
        self._tail = b""                 # last bytes fed, to spot a '*' count split by reads

    def feed(self, data: bytes) -> None:
        if self._py is not None:
            self._py.feed(data)
            return
        if (not self._pending and data[:1] != b"*") or _BIG_COUNT.search(data) or (
                self._pending and _BIG_COUNT.search(
                    self._tail + data[:HIREDIS_MAX_COUNT_DIGITS + 1])):
            self._switch_to_python(data)
            return
        # keep the last bytes only (no copy of a whole read: a large read costs O(1) here)
        self._tail = (data if len(data) > HIREDIS_MAX_COUNT_DIGITS else self._tail + data)[
            -(HIREDIS_MAX_COUNT_DIGITS + 1):]
        self._pending.append(data)
        self._fed += len(data)
        self._hr.feed(data)
        if self._shadow is not None:
            self._shadow.feed(data)

    def get(self):
        py = self._py
        if py is not None:
            py.unauth = self.unauth
            py.max_bulk_len = self.max_bulk_len
            argv = py.get()
            if argv is NEED_MORE and self._use_hiredis and not self.unauth and py.at_boundary():
                self._to_hiredis()
            return argv
        if self.unauth:
            self._switch_to_python(b"")
            return self.get()
        try:
            frame = self._hr.gets()
        except Exception:  # ProtocolError, or e.g. TypeError building a RESP3 map ('%1 ~2')
            self._switch_to_python(b"")
            return self.get()
        if frame is False:
            if self._fed == self._used:
                self._pending.clear()
                self._fed = self._used = self._done = 0
                self._shadow = None
                self._tail = b""
            elif self._check_partial():
                self._switch_to_python(b"")  # Redis reads a command where hiredis waits
                return self.get()
            return NEED_MORE
        if frame.__class__ is not list or not frame:
            # *0, *-1 or a bare '+', ':' or '$' frame: let Redis's rules judge it
            self._switch_to_python(b"")
            return self.get()
        end = self._frame_end(frame)
        if end < 0:  # not '*' + '$' bulks on the wire ('+OK', '(12', '$-1', ':1', '~2' ...)
            self._switch_to_python(b"")
            return self.get()
        self._used = end
        self._done += 1
        return frame

    def get_batch(self) -> list:
        """Every complete command buffered now, in order: what :meth:`get` would return
        call after call until NEED_MORE, with the same errors and boundary bookkeeping.

        Batching saves a method call and the state tests per command (GET -P 16: -23% CPU
        per command in the reader, -26% with the dispatcher's inline path; bench/
        server_bench.py --parts dispatch).  Only hiredis
        frames are batched; in any other state (Python reader, unauthenticated client) one
        call returns what one get() returns.  When the batch ends on something that is not a
        clean boundary (an odd frame, hiredis refusing, a partial frame that breaks Redis's
        rules), the commands before it are returned and the switch or the ProtocolError is
        owed to the next call, so errors keep their place in the stream.  ``more`` is
        False after a call that used up what was fed (the caller may stop there).  A caller that
        makes the reader stricter while running a batch (``unauth``) gives the commands not
        run back with :meth:`unread`.  Do not mix with get() while something is owed.
        Complexity: O(bytes) in C plus O(arguments) in Python per command.
        """
        self.more = True
        d = self._defer
        if d is not None:
            self._defer = None
            if d is not _SWITCH:
                raise d
            self._switch_to_python(b"")
        if self._py is not None or self.unauth:
            argv = self.get()
            return [] if argv is NEED_MORE else [argv]
        gets = self._hr.gets
        pending = self._pending
        buf = pending[0] if len(pending) == 1 else self._collapse() if pending else b""
        array_header, bulk_header = _ARRAY_HEADER, _BULK_HEADER
        frames: list = []
        add = frames.append
        p = self._used
        while True:
            try:
                frame = gets()
            except Exception:  # as in get(): the Python reader re-reads from the anchor
                frame = None
            if frame is False:
                break
            if frame.__class__ is list and frame:
                # _frame_end() inline, lean: '*' + '$' bulks on the wire, where it ends.  A
                # '$-1' element (None) raises TypeError, a length past the tables IndexError.
                try:
                    if buf[p] == 0x2A:  # '*'
                        q = p + array_header[len(frame)]
                        for a in frame:
                            if buf[q] != 0x24:  # '$'
                                break
                            k = len(a)
                            q += k + bulk_header[k]
                        else:
                            p = q
                            add(frame)
                            continue
                    q = -1
                except (IndexError, TypeError):
                    self._used = p
                    q = self._frame_end(frame)
                if q >= 0:
                    p = q
                    add(frame)
                    continue
            # an odd frame or a hiredis error: the Python reader judges it from here
            self._used = p
            self._done += len(frames)
            if frames:
                self._defer = _SWITCH
                return frames
            self._switch_to_python(b"")
            argv = self.get()
            return [] if argv is NEED_MORE else [argv]
        self._used = p
        self._done += len(frames)
        if self._fed == p:
            self._pending.clear()
            self._fed = self._used = self._done = 0
            self._shadow = None
            self._tail = b""
            self.more = False
            return frames
        try:
            switch = self._check_partial()
        except ProtocolError as e:
            if not frames:
                raise
            self._defer = e
            return frames
        if switch:  # Redis reads a command where hiredis waits
            if frames:
                self._defer = _SWITCH
                return frames
            self._switch_to_python(b"")
            argv = self.get()
            return [] if argv is NEED_MORE else [argv]
        self.more = False
        return frames

    def unread(self, rest: list) -> None:
        """Give back the last commands of a :meth:`get_batch` that were not run; they are
        read again, by the Python reader, under the reader's current rules.

        The batch's frames are canonical (checked on the wire), so when the anchor has
        already moved past them their bytes are rebuilt exactly.  Complexity: O(their bytes).
        """
        if not rest:
            return
        self._defer = None  # what was owed is found again by the Python reader
        self.more = True
        if self._py is not None:
            raise AssertionError("unread() after a batch the Python reader served")
        if self._done >= len(rest):
            self._done -= len(rest)
            self._used -= sum(map(_wire_size, rest))
        else:  # the anchor moved (boundary reached, or a partial frame was judged)
            data = b"".join(_encode_request(f) for f in rest)
            self._pending = [data] + self._pending
            self._fed += len(data)
            self._used = self._done = 0
        self._switch_to_python(b"")

    def _frame_end(self, frame: list) -> int:
        """Where ``frame`` ends in the anchored bytes, or -1 when its wire form is not what
        Redis accepts.  hiredis accepted the lengths (string2ll rules, so canonical); what
        is left to check is the type byte of the frame and of each element.
        Complexity: O(len(frame)).
        """
        buf = self._pending[0] if len(self._pending) == 1 else self._collapse()
        p = self._used
        n = len(frame)
        try:
            if buf[p] != 0x2A:  # '*'
                return -1
            p += _ARRAY_HEADER[n] if n < HEADER_TABLE_ARGS else 3 + len(str(n))
            for a in frame:
                if a.__class__ is not bytes or buf[p] != 0x24:  # '$'
                    return -1
                k = len(a)
                p += k + (_BULK_HEADER[k] if k < HEADER_TABLE_LEN else 5 + len(str(k)))
        except IndexError:
            return -1
        return p

    def _collapse(self) -> bytes:
        """Join the chunks since the anchor into one (amortized O(1) per byte)."""
        joined = b"".join(self._pending)
        self._pending = [joined]
        return joined

    def _check_partial(self) -> bool:
        """Judge the partial frame by Redis's rules (raises ProtocolError like Redis).

        Returns True when Redis's rules find a whole command where hiredis still waits
        (``$3\\r\\n`` or ``%1\\r\\n`` at a frame start are RESP replies to hiredis, inline
        commands to Redis): the caller then hands the stream to the Python reader.
        """
        if self._shadow is None or self._done:
            # anchor at the partial frame's start; build the shadow from its bytes
            joined = b"".join(self._pending)
            partial = joined[self._used:]
            self._pending = [partial]
            self._fed, self._used, self._done = len(partial), 0, 0
            self._shadow = PyRequestReader(self.max_bulk_len)
            self._shadow.feed(partial)
        self._shadow.max_bulk_len = self.max_bulk_len
        # hiredis returned no frame since the anchor, so any command found here is news
        return self._shadow.get() is not NEED_MORE

    def _check(self) -> None:
        """Assert the boundary bookkeeping (tests call it after every step)."""
        if self._py is not None:
            assert self._hr is None
            self._py._check()
            return
        assert self._fed == sum(len(c) for c in self._pending)
        assert 0 <= self._used <= self._fed and self._done >= 0
        if self._shadow is not None:
            self._shadow._check()

    def _replay(self, extra: bytes) -> PyRequestReader:
        """A Python reader over the bytes since the anchor, past the frames served."""
        py = PyRequestReader(self.max_bulk_len)
        py.feed(b"".join(self._pending) + extra)
        for _ in range(self._done):
            py.get()
        return py

    def _switch_to_python(self, extra: bytes) -> None:
        """Hand the rest of the stream to the Python reader (until the next boundary)."""
        self._py, self._hr = self._replay(extra), None
        self._pending = []
        self._shadow = None
