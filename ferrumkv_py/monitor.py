"""MONITOR: every command the server runs, as one line per command to each monitor.

Redis's line (replicationFeedMonitors): ``+<unix s>.<us> [<db> <peer>] "arg" "arg"...``
where peer is ``ip:port``, ``unix:<socket path>`` or ``lua`` for a script's commands, and
each word is quoted as ``sdscatrepr`` quotes it (:func:`repr_bytes`).  Commands flagged
``admin`` are never shown (CONFIG, CLIENT LIST, SLOWLOG, MONITOR itself ...), nor commands
refused before they run; secrets are redacted as in the slowlog.  Commands flagged
``skip_monitor`` (EVAL, FCALL) are shown before they run, the others after (so SELECT shows
its new db, and EXEC follows the commands it ran).

Complexity: O(total argument bytes) per command while monitors exist; nothing otherwise.
"""

from __future__ import annotations

_ESCAPES = {0x5C: b"\\\\", 0x22: b"\\\"", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t",
            0x07: b"\\a", 0x08: b"\\b"}
# byte -> its sdscatrepr text: escapes, printable ASCII as is, \xHH for the rest
_REPR = tuple(_ESCAPES.get(b, bytes([b]) if 0x20 <= b < 0x7F else b"\\x%02x" % b)
              for b in range(256))
_PLAIN = bytes(b for b in range(0x20, 0x7F) if b not in (0x5C, 0x22))


def repr_bytes(word: bytes) -> bytes:
    """``word`` in double quotes as Redis's sdscatrepr writes it.  Complexity: O(len)."""
    if not word.translate(None, _PLAIN):
        return b'"' + word + b'"'
    r = _REPR
    return b'"' + b"".join(r[b] for b in word) + b'"'


def monitor_line(unix_us: int, db: int, peer: str, argv: list) -> bytes:
    """One MONITOR status frame (RESP2 ``+...``; RESP3 alike: Redis sends a status)."""
    head = b"+%d.%06d [%d %s]" % (unix_us // 1_000_000, unix_us % 1_000_000, db,
                                   peer.encode("utf-8", "surrogateescape"))
    return head + b"".join(b" " + repr_bytes(a) for a in argv) + b"\r\n"
