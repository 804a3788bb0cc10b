"""The connection's RESP request reader: hiredis in C where it agrees with Redis, the
reference reader (``resp_reader.PyRequestReader``) wherever it does not.

Split from ``resp_reader.py`` so each module stays readable: that one holds Redis's parsing
rules, this one the adapter that runs hiredis under them (see :class:`RequestReader`).

Complexity: O(bytes) in C plus O(arguments) in Python per command.
"""

from __future__ import annotations

import re
from itertools import islice

try:  # hiredis is a declared dependency; the pure reader keeps the server usable without it
    import hiredis
except ImportError:  # pragma: no cover - exercised only where hiredis is missing
    hiredis = None

from . import resp_scan

whole_frames = None     # resp_scan's compiled scanner, set when it is loaded (on demand)


def _scanner_ready(scan) -> None:
    global whole_frames
    whole_frames = scan


resp_scan.on_ready(_scanner_ready)
from .resp_reader import (BIG_ARG_BYTES, HIREDIS_MAX_COUNT_DIGITS, NEED_MORE,
                          PROTO_MAX_BULK_LEN, ProtocolError, PyRequestReader,
                          QueryBufferLimit)

QUERY_LIMIT_HEAD_BYTES = 64     # bytes of the query buffer quoted in the limit's log line
NO_QUERY_LIMIT = 1 << 62

_BIG_COUNT = re.compile(rb"\*\d{%d}" % HIREDIS_MAX_COUNT_DIGITS)
# Wire bytes of a frame's headers, by count / length: ``*N\r\n`` and ``$len\r\n`` + ``\r\n``.
# A table lookup instead of the digit arithmetic: GET -P 16 -4% CPU per command
# (bench/server_bench.py --parts dispatch); longer arguments take the exact slow path.
HEADER_TABLE_ARGS = 1024                   # frames with fewer arguments use the table
HEADER_TABLE_LEN = 1 << 16                 # arguments shorter than this use the table
_ARRAY_HEADER = bytes(3 + len(str(n)) for n in range(HEADER_TABLE_ARGS))
_BULK_HEADER = bytes(5 + len(str(n)) for n in range(HEADER_TABLE_LEN))
# get_batch's inner loop: a bulk's whole wire size (header + payload + CRLF) by payload
# length, one lookup per argument instead of a length, a lookup and an addition (SET -P 16:
# 333 -> 320 bytecodes per command, bench/dispatch_floor.py --opcodes).
# Longer arguments (IndexError) take the exact slow path; 16k entries keep it ~0.6 MB.
BULK_WIRE_TABLE = 1 << 14
_BULK_WIRE = tuple(n + 5 + len(str(n)) for n in range(BULK_WIRE_TABLE))


# Shorter reads (one command, as at -P 1) skip the scanner, whose call costs about what
# checking one frame in Python does (SET -P 1: 12.0 -> 12.9 us server CPU per request
# with every read scanned; redis-benchmark side by side, 2 runs).
SCAN_MIN_BYTES = 256

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
      that Redis reads as an inline command, the partial-frame check (below) finds the command;
    * it allocates a ``*N`` frame's list up front, so ``*2000000000`` would cost 16 GB: a
      read holding ``*`` and 6+ digits goes to the Python reader (a payload that merely
      contains such text costs only the slower path until the next frame boundary);
    * it waits for a 600 MB bulk that Redis refuses at once: while a frame is partial, a
      Python reader (``_partial_check``) is fed the same bytes and raises what Redis would raise.

    Boundary tracking: hiredis does not say where a frame ended, so the reader adds up the
    wire size of every frame it returns (``*N``, ``$len`` headers, payloads: canonical,
    since hiredis parses lengths with Redis's string2ll).  The bytes kept in ``_pending`` start at an
    *anchor*, a known frame boundary.  When hiredis wants more bytes, the stream is either on
    a boundary (sum == bytes fed: drop everything) or inside a frame: the anchor moves to
    that frame's start and the partial-frame check is built from it, then fed each new read until
    hiredis completes the frame.  Each byte is copied O(1) times.  The Python reader hands
    back to hiredis at the first boundary, so one inline command does not slow a
    connection down for good.

    Big frames: a partial frame of ``big_arg_bytes`` or more (a large SET arriving in
    pieces) is handed to the Python reader at once, which writes a big bulk's payload
    straight into the argument as it arrives (``PyRequestReader``): hiredis would keep its
    own copy of the frame and the anchor bookkeeping would join ``_pending`` again on every
    read (quadratic, and three copies of the unfinished frame).  Below that size the partial
    frame stays here, so the rejoin costs at most ``big_arg_bytes`` per read.
    Complexity: O(bytes) in C plus O(arguments) in Python per command.
    """

    __slots__ = ("_hr", "_py", "_pending", "_done", "_fed", "_used", "_partial_check", "_tail",
                 "max_bulk_len", "unauth", "_use_hiredis", "_defer", "more", "big_arg_bytes",
                 "query_limit")

    def __init__(self, max_bulk_len: int = PROTO_MAX_BULK_LEN, use_hiredis: bool = True,
                 big_arg_bytes: int = BIG_ARG_BYTES):
        self.big_arg_bytes = big_arg_bytes
        # client-query-buffer-limit: checked in feed(), which every read that leaves bytes
        # unparsed goes through (the fast case of get_batch holds nothing afterwards)
        self.query_limit = NO_QUERY_LIMIT
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
            self._py = PyRequestReader(max_bulk_len, big_arg_bytes)

    def buffered(self) -> int:
        """Bytes received and not yet returned as commands (Redis's query buffer length;
        client-query-buffer-limit applies to it).  Complexity: O(1)."""
        if self._py is not None:
            return self._py.pending()
        return self._fed - self._used

    def _to_hiredis(self) -> None:
        self._py = None
        self._hr = hiredis.Reader()
        self._pending: list[bytes] = []  # chunks fed since the anchor (a frame boundary)
        self._fed = 0                    # bytes in those chunks
        self._used = 0                   # canonical bytes of the frames returned since
        self._done = 0                   # number of those frames
        self._partial_check = None       # Python reader over the partial frame, if any
        self._tail = b""                 # last bytes fed, to spot a '*' count split by reads

    def feed(self, data: bytes) -> None:
        if self._py is not None:
            self._py.feed(data)
            if self._py.pending() > self.query_limit:
                self._over_query_limit()
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
        if self._partial_check is not None:
            self._partial_check.feed(data)
        if self._fed - self._used > self.query_limit:
            self._over_query_limit()

    def _over_query_limit(self) -> None:
        """Raise QueryBufferLimit with the buffer's first bytes.  Complexity: O(1)."""
        if self._py is not None:
            py = self._py
            head = (py.buf[py.pos:py.pos + QUERY_LIMIT_HEAD_BYTES]
                    or (bytes(py._big[:QUERY_LIMIT_HEAD_BYTES]) if py._big.__class__ is bytes
                        else py._big[0][:QUERY_LIMIT_HEAD_BYTES] if py._big else b""))
        else:
            head = self._pending[0][self._used:self._used + QUERY_LIMIT_HEAD_BYTES] \
                if self._pending else b""
        raise QueryBufferLimit(self.buffered(), head)

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
                self._partial_check = None
                self._tail = b""
            elif self._check_partial():
                self._switch_to_python(b"")  # Redis reads a command where hiredis waits
                return self.get()
            return NEED_MORE
        if frame.__class__ is not list or not frame:
            # *0, *-1 or a bare '+', ':' or '$' frame: let Redis's rules judge it
            self._switch_to_python(b"")
            return self.get()
        pending = self._pending
        end = self._frame_end(frame, pending[0] if len(pending) == 1 else self._collapse(),
                              self._used)
        if end < 0:  # not '*' + '$' bulks on the wire ('+OK', '(12', '$-1', ':1', '~2' ...)
            self._switch_to_python(b"")
            return self.get()
        self._used = end
        self._done += 1
        return frame

    def get_batch(self, data: bytes = None) -> list:
        """Every complete command buffered now, in order: what :meth:`get` would return
        call after call until NEED_MORE, with the same errors and boundary bookkeeping.
        ``get_batch(data)`` is ``feed(data)`` then ``get_batch()`` in one call.

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

        The fused form's fast case: the reader is on a boundary with nothing held and
        ``data`` is whole canonical frames (a read of one pipeline, the usual case).  Then
        nothing is kept: no chunk list, no tail, no counters to set and reset
        (with the inline clock read in the dispatcher: SET -P 1 704 -> 596 bytecodes and
        4.7 -> 4.2 us per command in-process, bench/dispatch_floor.py); any other
        read takes feed()'s bookkeeping first, so both forms end in the same state.
        A read of SCAN_MIN_BYTES or more is checked by ``resp_scan.whole_frames`` first:
        the whole frames it vouches for come from hiredis with no Python per frame (all of
        them at once when that is the whole read), and the loop below starts after them.
        Complexity: O(bytes) in C plus O(arguments) in Python per command.
        """
        fresh = False
        if data is not None:
            if (self._pending or self._py is not None or self._defer is not None
                    or self.unauth or data[:1] != b"*"):
                self.feed(data)
            elif (len(data) < SCAN_MIN_BYTES or whole_frames is None
                  or data.__class__ is not bytes):
                if (whole_frames is None and len(data) >= SCAN_MIN_BYTES
                        and data.find(b"\r\n*") >= 0):
                    resp_scan.request()     # a pipeline (2+ frames): load the scanner
                if _BIG_COUNT.search(data):
                    self.feed(data)
                else:                   # one command, as at -P 1: checked below
                    fresh = True
                    self._hr.feed(data)
                    frames = []
                    p = 0
            else:
                # resp_scan checks the read's leading whole frames in one compiled call:
                # those need no check below (get_batch in-process, 16 commands a read:
                # GET 593 -> 292 ns per command, SET 784 -> 343, ZADD 832 -> 596)
                k, p = whole_frames(data, self.max_bulk_len)
                hr = self._hr
                if p == len(data):      # the usual read: whole canonical frames only
                    hr.feed(data)
                    self.more = False
                    return list(iter(hr.gets, False))
                if _BIG_COUNT.search(data, p):      # (the scanned frames have no such count)
                    self.feed(data)
                else:
                    fresh = True
                    hr.feed(data)
                    frames = list(islice(iter(hr.gets, False), k))
        if fresh:
            buf = data
        else:
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
            pending = self._pending
            buf = pending[0] if len(pending) == 1 else self._collapse() if pending else b""
            p = self._used
            frames = []
        gets = self._hr.gets
        array_header, bulk_wire = _ARRAY_HEADER, _BULK_WIRE
        add = frames.append
        odd = False
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
                            q += bulk_wire[len(a)]
                        else:
                            p = q
                            add(frame)
                            continue
                    q = -1
                except (IndexError, TypeError):
                    q = self._frame_end(frame, buf, p)
                if q >= 0:
                    p = q
                    add(frame)
                    continue
            # an odd frame or a hiredis error: the Python reader judges it from here
            odd = True
            break
        if fresh:
            if not odd and p == len(buf):
                self.more = False   # whole frames: nothing to keep (the fast case)
                return frames
            # the state feed() would have left, then the batch's end as usual
            if not self._pending:
                self._pending.append(buf)
            self._fed = len(buf)
            self._tail = buf[-(HIREDIS_MAX_COUNT_DIGITS + 1):]
            self.more = True
        self._used = p
        self._done += len(frames)
        if odd:
            return self._hand_over(frames)
        if self._fed == p:
            self._pending.clear()
            self._fed = self._used = self._done = 0
            self._partial_check = None
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
            return self._hand_over(frames)
        self.more = False
        return frames

    def _hand_over(self, frames: list) -> list:
        """End a batch where the Python reader must judge what follows: the frames before
        that point (the switch is owed to the next call), or, if none, what the Python
        reader makes of it now.  Complexity: O(1) plus the Python reader's work."""
        if frames:
            self._defer = _SWITCH
            return frames
        self._switch_to_python(b"")
        argv = self.get()
        return [] if argv is NEED_MORE else [argv]

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

    @staticmethod
    def _frame_end(frame: list, buf: bytes, p: int) -> int:
        """Where ``frame``, starting at ``buf[p]``, ends, or -1 when its wire form is not
        what Redis accepts.  hiredis accepted the lengths (string2ll rules, so canonical);
        what is left to check is the type byte of the frame and of each element.
        Complexity: O(len(frame)).
        """
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
        if self._partial_check is None or self._done:
            # anchor at the partial frame's start; build the partial-frame check from its bytes
            joined = b"".join(self._pending)
            partial = joined[self._used:]
            self._pending = [partial]
            self._fed, self._used, self._done = len(partial), 0, 0
            if len(partial) >= self.big_arg_bytes:
                self._partial_check = None
                return True     # a big frame: the Python reader collects it (class doc)
            self._partial_check = PyRequestReader(self.max_bulk_len, self.big_arg_bytes)
            self._partial_check.feed(partial)
        elif self._fed >= self.big_arg_bytes:
            return True
        self._partial_check.max_bulk_len = self.max_bulk_len
        # hiredis returned no frame since the anchor, so any command found here is news
        return self._partial_check.get() is not NEED_MORE

    def _check(self) -> None:
        """Assert the boundary bookkeeping (tests call it after every step)."""
        if self._py is not None:
            assert self._hr is None
            self._py._check()
            return
        assert self._fed == sum(len(c) for c in self._pending)
        assert 0 <= self._used <= self._fed and self._done >= 0
        if self._partial_check is not None:
            self._partial_check._check()

    def _replay(self, extra: bytes) -> PyRequestReader:
        """A Python reader over the bytes since the anchor, past the frames served."""
        py = PyRequestReader(self.max_bulk_len, self.big_arg_bytes)
        py.feed(b"".join(self._pending) + extra)
        for _ in range(self._done):
            py.get()
        return py

    def _switch_to_python(self, extra: bytes) -> None:
        """Hand the rest of the stream to the Python reader (until the next boundary)."""
        self._py, self._hr = self._replay(extra), None
        self._pending = []
        self._partial_check = None
