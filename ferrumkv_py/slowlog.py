"""SLOWLOG: the most recent commands that ran longer than ``slowlog-log-slower-than``.

Redis keeps the entries in a list, newest first, trimmed to ``slowlog-max-len`` after each
push (slowlog.c); so does :class:`SlowLog`, with a deque whose ``maxlen`` drops the oldest.
An entry keeps what Redis keeps, already cut to size so a huge command costs the log
little: at most ``SLOWLOG_ENTRY_MAX_ARGC`` words (the last one replaced by
``... (N more arguments)``), each at most ``SLOWLOG_ENTRY_MAX_STRING`` bytes (then
``... (N more bytes)``), secrets redacted (:func:`redact`), the client's address and name.

Complexity: O(min(argc, 32) * 128) per push, O(count) per GET.
"""

from __future__ import annotations

from collections import deque

SLOWLOG_ENTRY_MAX_ARGC = 32      # words kept per entry (Redis SLOWLOG_ENTRY_MAX_ARGC)
SLOWLOG_ENTRY_MAX_STRING = 128   # bytes kept per word (Redis SLOWLOG_ENTRY_MAX_STRING)
SLOWLOG_GET_DEFAULT = 10         # entries SLOWLOG GET returns without a count
REDACTED = b"(redacted)"


def redact(spec, argv: list) -> list:
    """The words Redis shows of a call in SLOWLOG and MONITOR: AUTH's arguments, HELLO's
    AUTH username and password, and CONFIG SET's value of a sensitive config (requirepass)
    become ``(redacted)``, as Redis's commands do with redactClientCommandArgument (Redis
    keeps a HELLO's password when the protocol version is bad; we redact it anyway).
    Complexity: O(argc)."""
    name = spec.name
    if name == "auth":
        return argv[:1] + [REDACTED] * (len(argv) - 1)
    if name == "hello":     # (from word 1: a HELLO refused for its protover keeps no secret)
        out = list(argv)
        i = 1
        while i < len(out):
            if out[i].lower() == b"auth" and i + 2 < len(out):
                out[i + 1] = out[i + 2] = REDACTED
                i += 3
            else:
                i += 2 if out[i].lower() == b"setname" else 1
        return out
    if name == "config|set":
        from .config import SPECS
        out = list(argv)
        for i in range(2, len(out) - 1, 2):
            row = SPECS.get(out[i].lower().decode("utf-8", "surrogateescape"))
            if row is not None and row.sensitive:
                out[i + 1] = REDACTED
        return out
    return argv


def entry_args(argv: list) -> list:
    """``argv`` cut as Redis cuts a slowlog entry's arguments.  Complexity: O(32 * 128)."""
    argc = len(argv)
    kept = min(argc, SLOWLOG_ENTRY_MAX_ARGC)
    out = []
    for j in range(kept):
        if kept != argc and j == kept - 1:
            out.append(b"... (%d more arguments)" % (argc - kept + 1))
            break
        a = argv[j]
        if len(a) > SLOWLOG_ENTRY_MAX_STRING:
            a = a[:SLOWLOG_ENTRY_MAX_STRING] + b"... (%d more bytes)" % (
                len(a) - SLOWLOG_ENTRY_MAX_STRING)
        out.append(a)
    return out


class SlowLog:
    """The entries, newest first: ``[id, unix_s, duration_us, args, peer, name]``."""

    def __init__(self, max_len: int = 128):
        self.next_id = 0
        self.entries: deque = deque(maxlen=max_len)

    def set_max_len(self, n: int) -> None:
        """CONFIG SET slowlog-max-len: keep the newest ``n`` (Redis trims on the next
        push; trimming now shows the same entries to SLOWLOG GET and LEN)."""
        self.entries = deque(self.entries, maxlen=n)

    def push(self, argv: list, unix_s: int, duration_us: int, peer: str, name: bytes) -> None:
        """Log one call (``argv`` already redacted).  Complexity: O(32 * 128)."""
        if self.entries.maxlen == 0:
            self.next_id += 1           # Redis creates the entry, then trims it away
            return
        self.entries.appendleft([self.next_id, unix_s, duration_us, entry_args(argv),
                                 peer.encode("utf-8", "surrogateescape"), name])
        self.next_id += 1

    def get(self, count: int) -> list:
        """The newest ``count`` entries (-1: all).  Complexity: O(count)."""
        if count < 0 or count > len(self.entries):
            count = len(self.entries)
        return [list(e) for e, _ in zip(self.entries, range(count))]

    def reset(self) -> None:
        self.entries.clear()
