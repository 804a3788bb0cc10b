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

2. **Streamed in chunks.**  Otherwise, for a connected client whose reply goes straight to
   the wire (not inside MULTI, a script or CLIENT REPLY OFF), the replies queued before it
   are written, then the reply goes out ``STREAM_CHUNK_DRAWS`` draws at a time: each chunk
   is encoded from frames encoded once per distinct item and handed to the transport, and
   the output limits are checked after each chunk (a client that stops reading is closed
   once its unsent bytes pass the hard limit, and the drawing stops).  Memory is then the
   wire bytes the client has not read yet, as in Redis, not Python objects per draw.

3. Elsewhere (MULTI, scripts) the reply is built from the same per-item frames in one
   string: about the wire size, without a Python object per draw.

Invariant: the bytes are exactly the generic encoder's for the same picks (a header
``*N``, then each pick's frame: a bulk string, or in RESP2 a flat field, value pair, in
RESP3 a two-element array).

Complexity: O(n + |count|) time for a container of n items; O(n + STREAM_CHUNK_DRAWS)
Python memory on the streaming path.
"""

from __future__ import annotations

from ..resp import Raw, encode

STREAM_CHUNK_DRAWS = 65536       # draws encoded and written per chunk on the streaming path
STREAM_MIN_DRAWS = 4096          # fewer draws: the plain path (one reply, no early writes)
MIN_BULK_FRAME_BYTES = 6         # "$0\r\n\r\n": the smallest frame a pick can be


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
    frames = [_frame(x, value_of, proto) for x in items] if n <= draws else None
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
    if draws < STREAM_MIN_DRAWS or not _streams(c):
        parts = [head]
        left = draws
        while left:
            k = min(left, STREAM_CHUNK_DRAWS)
            parts.append(chunk(k))
            left -= k
        return Raw(b"".join(parts))
    out = c.executing                       # replies of this read before this one (2.)
    c.write_now(out + [head])
    out.clear()
    left = draws
    while left and not c.closing:
        k = min(left, STREAM_CHUNK_DRAWS)
        data = chunk(k)
        left -= k
        c.write_now([data])
        if c.check_output_limits():
            break
    return Raw(b"")
