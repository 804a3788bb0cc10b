"""Replies whose size the client chooses: SRANDMEMBER / HRANDFIELD / ZRANDMEMBER with a
negative count (draws with repetition).

``SRANDMEMBER s -10000000`` on a 3-member set asks for ten million replies.  Built as one
Python list and then one encoded string, that is ~300 bytes of objects per draw (2.9 GB
measured), and every other client waits while it is built.  Redis builds the reply in its
output buffer (~7 bytes a draw) and closes a client whose buffer passes the hard limit of
its class.  Here:

1. **Bounded before anything is built.**  The reply is at least ``|count|`` times the
   smallest frame it can hold (the header aside).  When that passes the hard limit of the
   client's ``client-output-buffer-limit`` class (the transport's unsent bytes counted too,
   :meth:`Client.check_output_limits`), the client is closed at once, as Redis closes it as
   soon as the reply passes the limit, and nothing is drawn.

2. **Streamed in chunks, between other clients' reads.**  Otherwise, for a connected
   client whose reply goes straight to the wire (not inside MULTI, a script or CLIENT
   REPLY OFF), the replies queued before it are written with the header and a first
   chunk of ``STREAM_CHUNK_DRAWS`` draws; the rest of the client's read is held
   (``first_use.Postponed(done=True)`` -> ``Client.hold``, CLIENT PAUSE's machinery), and
   one chunk per event-loop callback is drawn, encoded from frames encoded once per
   distinct item, and written: other clients are served between chunks.  A chunk waits
   (``STREAM_WAIT_S``) while the client's unsent bytes exceed ``STREAM_BUFFER_BYTES``, so a
   slow reader costs that much memory, not the reply; the output limits are checked after
   each chunk (a client over its hard limit is closed and the drawing stops).  When the
   last chunk is out, the held commands run (``Client.resume_held``).  The picks are of
   the items as they were when the command ran (a list copy and frames made then).

3. Elsewhere (MULTI, scripts) the reply is built from the same per-item frames in one
   string: about the wire size, without a Python object per draw.

Invariant: the bytes are exactly the generic encoder's for the same picks (a header
``*N``, then each pick's frame: a bulk string, or in RESP2 a flat field, value pair, in
RESP3 a two-element array).

Complexity: O(n + |count|) time for a container of n items; O(n + STREAM_CHUNK_DRAWS)
Python memory and STREAM_BUFFER_BYTES of unsent output on the streaming path.
"""

from __future__ import annotations

from ..first_use import Postponed
from ..resp import Raw, encode

STREAM_CHUNK_DRAWS = 65536       # draws encoded and written per chunk on the streaming path
STREAM_MIN_DRAWS = 4096          # fewer draws: the plain path (one reply, no early writes)
MIN_BULK_FRAME_BYTES = 6         # "$0\r\n\r\n": the smallest frame a pick can be
STREAM_BUFFER_BYTES = 4 << 20    # unsent bytes past which the next chunk waits for the reader
STREAM_WAIT_S = 0.002            # ... that long before it looks again


def _frame(item, value_of, proto: int) -> bytes:
    """The encoded frame of one pick (see the invariant in the module docstring)."""
    if value_of is None:
        return b"$%d\r\n%b\r\n" % (len(item), item)
    if proto == 3:
        return encode([item, value_of(item)], 3)
    return encode(item, 2) + encode(value_of(item), 2)


def _streams(c) -> bool:
    """Does this client's reply go straight to its socket (so it may be streamed)?"""
    return (getattr(c, "transport", None) is not None and c.executing is not None
            and c.multi is None and not c.in_exec and c.reply_gate is None
            and not c.closing)


def draws_reply(c, items: list, draws: int, value_of=None):
    """``draws`` picks of ``items`` with repetition (a negative count's reply), bounded and
    streamed as the module docstring says.  ``items`` is non-empty.  Returns the reply
    (``Raw``; ``Raw(b"")`` when it was streamed or the client was closed)."""
    n = len(items)
    proto = c.proto
    pairs = value_of is not None
    count_frames = draws * 2 if pairs and proto == 2 else draws
    head = b"*%d\r\n" % count_frames
    streams = draws >= STREAM_MIN_DRAWS and _streams(c)
    frames = [_frame(x, value_of, proto) for x in items] if n <= draws or streams else None
    smallest = min(map(len, frames)) if frames else (
        MIN_BULK_FRAME_BYTES * (2 if pairs else 1))
    if getattr(c, "transport", None) is not None and draws >= STREAM_MIN_DRAWS:
        if c.check_output_limits(len(head) + draws * smallest):
            return Raw(b"")                 # closed: over the hard limit (1.)
    rand = c.ks.rng.random
    if frames is None:
        def chunk(k: int) -> bytes:
            return b"".join([_frame(items[int(rand() * n)], value_of, proto)
                             for _ in range(k)])
    else:
        def chunk(k: int) -> bytes:
            return b"".join([frames[int(rand() * n)] for _ in range(k)])
    if not streams:
        parts = [head]
        left = draws
        while left:
            k = min(left, STREAM_CHUNK_DRAWS)
            parts.append(chunk(k))
            left -= k
        return Raw(b"".join(parts))
    out = c.executing                       # replies of this read before this one (2.)
    k = min(draws, STREAM_CHUNK_DRAWS)
    c.write_now(out + [head, chunk(k)])
    out.clear()
    if k == draws or c.check_output_limits():
        return Raw(b"")
    c.stream = _Stream(c, chunk, draws - k)
    c.server.loop.call_soon(c.stream.step)
    raise Postponed(done=True)


class _Stream:
    """The rest of one streamed reply: one chunk per event-loop callback (2.)."""

    __slots__ = ("c", "chunk", "left")

    def __init__(self, c, chunk, left: int):
        self.c, self.chunk, self.left = c, chunk, left

    def step(self) -> None:
        c = self.c
        if c.closing or c.transport is None:
            c.stream = None                 # gone: nothing more is drawn
            return
        loop = c.server.loop
        if c.transport.get_write_buffer_size() > STREAM_BUFFER_BYTES:
            loop.call_later(STREAM_WAIT_S, self.step)   # a slow reader: wait for it
            return
        k = min(self.left, STREAM_CHUNK_DRAWS)
        c.write_now([self.chunk(k)])
        self.left -= k
        if c.check_output_limits() or c.closing:
            c.stream = None
        elif self.left:
            loop.call_soon(self.step)
        else:
            c.stream = None
            c.resume_held()                 # the commands after it, and what came since
