"""A compiled check that a read is whole canonical request frames, for the reader's fast case.

hiredis parses RESP in C but accepts more than Redis does (``+`` or ``=`` elements, nested
arrays, ``$-1``): the reader checks each frame it returns against the wire, in Python, which
cost about as much as hiredis's own parse (``resp_hiredis.RequestReader.get_batch``).  When a
read holds several commands, one call here checks them all first: the leading frames that are whole and
what Redis accepts are taken from hiredis as they are, with no Python per frame.

Canonical frame (what ``redis-cli``, ``redis-py`` and ``redis-benchmark`` send)::

    '*' count CRLF  then count times:  '$' len CRLF  <len bytes>  CRLF

    count: 1..99999 written without sign or leading zero (a 6th digit is the reader's
           _BIG_COUNT case; 0 and negatives are Redis's no-op frames: left to the reader)
    len:   0, or 1..max_len without sign or leading zero (Redis's string2ll rules)

Examples (``max_len`` 512)::

    *2\r\n$3\r\nGET\r\n$1\r\nk\r\n                      -> (1, 20)   one whole frame
    the same twice, less the last byte                  -> (1, 20)   the second is partial
    *2\r\n+GET\r\n$1\r\nk\r\n  ('+GET' for '$3 GET')    -> (0, 0)    left to the reader

The reader takes the frames before ``end`` from hiredis unchecked and judges the rest itself.

Loaded on demand: importing numba and llvmlite costs ~100 MB of RSS and ~2 s, which a
server whose clients never pipeline should not pay (RSS at start 150 -> ~50 MB).  The
reader calls :func:`request` on its first read of SCAN_MIN_BYTES or more; a daemon thread
then imports numba and compiles (or loads the cached) scanner while reads keep taking the
Python check, and :data:`whole_frames` is set, and every ``on_ready`` callback told, once
it is ready.  :func:`load_now` does the same synchronously (tests, benchmarks).

Complexity: O(frames + arguments) -- the header bytes are read, the payloads are skipped.
"""

from __future__ import annotations

import logging
import gc
import threading

from .gcstats import shared as gc_stats

log = logging.getLogger("ferrumkv")

MAX_FRAME_ARGS = 99_999     # counts of 6+ digits are resp_hiredis._BIG_COUNT's case

_STAR, _DOLLAR, _CR, _LF, _ZERO, _ONE, _NINE = 42, 36, 13, 10, 48, 49, 57


def _whole_frames(buf, max_len):
    """``(frames, end)``: how many whole canonical frames ``buf`` starts with, and the offset
    where they end (``len(buf)`` when that is all it holds).  ``max_len`` is
    ``proto-max-bulk-len``: a longer argument is left to the reader to refuse.
    """
    n = len(buf)
    p = 0
    frames = 0
    end = 0
    while p < n:
        if buf[p] != _STAR or p + 1 >= n:
            return frames, end
        c = buf[p + 1]
        if c < _ONE or c > _NINE:
            return frames, end
        count = 0
        p += 1
        while p < n:
            c = buf[p]
            if c < _ZERO or c > _NINE:
                break
            count = count * 10 + (c - _ZERO)
            if count > MAX_FRAME_ARGS:
                return frames, end
            p += 1
        if p + 1 >= n or buf[p] != _CR or buf[p + 1] != _LF:
            return frames, end
        p += 2
        for _ in range(count):
            if p + 1 >= n or buf[p] != _DOLLAR:
                return frames, end
            p += 1
            c = buf[p]
            if c < _ZERO or c > _NINE:
                return frames, end
            size = 0
            if c == _ZERO:
                p += 1
            else:
                while p < n:
                    c = buf[p]
                    if c < _ZERO or c > _NINE:
                        break
                    size = size * 10 + (c - _ZERO)
                    if size > n:            # longer than the read: not whole (no overflow)
                        return frames, end
                    p += 1
            if size > max_len or p + 1 >= n or buf[p] != _CR or buf[p + 1] != _LF:
                return frames, end
            p += 2 + size
            if p + 1 >= n or buf[p] != _CR or buf[p + 1] != _LF:
                return frames, end
            p += 2
        frames += 1
        end = p
    return frames, end


def _compile():
    """The compiled scanner, or None (the reader then checks every frame in Python)."""
    try:
        from numba import njit
    except ImportError:  # pragma: no cover - numba is a declared dependency
        return None
    try:
        scan = njit(cache=True, nogil=True)(_whole_frames)
        scan(b"*1\r\n$4\r\nPING\r\n", 512)   # compile (or load the cache) now, not mid-read
    except Exception:  # pragma: no cover - a platform numba cannot compile for
        log.warning("resp_scan: no compiled frame scanner, frames are checked in Python",
                    exc_info=True)
        return None
    return scan


whole_frames = None             # the compiled scanner once loaded
_ready_callbacks: list = []
_lock = threading.Lock()
_state = {"requested": False}


def on_ready(fn) -> None:
    """Call ``fn(scanner)`` when the compiled scanner is loaded (now, if it is)."""
    with _lock:
        if whole_frames is None:
            _ready_callbacks.append(fn)
            return
    fn(whole_frames)


def _load() -> None:
    """Import numba and compile (or load) the scanner with the cyclic collector off, then
    freeze what the import made if the process freezes at all (the server does at start:
    gcstats.py "Freezing").  The import allocates ~140k tracked objects; with the collector
    on, the full collections they set off held the GIL for 5-12 ms each while the event
    loop served clients, and the collect-then-freeze that followed took 25-55 ms.  An
    import leaves little garbage (791 unreachable objects measured after numba and this
    scanner), so freezing without a collection costs that at most, once.  O(import)."""
    global whole_frames
    collecting = gc.isenabled()
    gc.disable()
    try:
        scan = _compile()
        if gc_stats().freezing:     # (not gc.get_freeze_count(): a walk, gcstats.py)
            gc.freeze()
    finally:
        if collecting:
            gc.enable()
    with _lock:
        whole_frames = scan
        callbacks = list(_ready_callbacks) if scan is not None else []
        _ready_callbacks.clear()
    for fn in callbacks:
        fn(scan)


def request() -> None:
    """The first pipeline arrived: load the scanner on a daemon thread (once)."""
    if _state["requested"]:
        return
    with _lock:
        if _state["requested"]:
            return
        _state["requested"] = True
    threading.Thread(target=_load, name="resp_scan-load", daemon=True).start()


def load_now():
    """Load the scanner synchronously; returns it (None without numba)."""
    with _lock:
        _state["requested"] = True
    if whole_frames is None:
        _load()
    return whole_frames
