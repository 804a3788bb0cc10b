"""Progress lines for long replays: requests done, rate, bytes read and ETA.

``ProgressReporter`` is the ``progress`` callback of ``litehit.offline.run_replay``. It is
throttled (at most one line per ``PROGRESS_INTERVAL_S``), rewrites one terminal line with a
carriage return, and writes through the ``write`` function it is given (the CLI passes
``sys.stderr.write``; this module never prints). The ETA assumes the bytes still to read
go at the average speed so far::

    [litehit] 120,000 requests  3.52M block accesses  1.21M/s  47% of 812.0 MB  ETA 3s
"""
from __future__ import annotations

import time
from collections.abc import Callable

PROGRESS_INTERVAL_S = 0.5
BYTES_PER_MB = 1_000_000
PERCENT = 100
SECONDS_PER_MINUTE = 60
MILLION = 1_000_000


def _eta(seconds_left: float) -> str:
    if seconds_left < SECONDS_PER_MINUTE:
        return f"{seconds_left:.0f}s"
    minutes, seconds = divmod(int(seconds_left), SECONDS_PER_MINUTE)
    return f"{minutes}m{seconds:02d}s"


def format_progress(requests: int, accesses: int, seconds: float, bytes_read: int,
                    total_bytes: int) -> str:
    """One progress line (no line ending).

    Complexity: O(1).
    """
    rate = accesses / seconds if seconds > 0 else 0.0
    line = (f"[litehit] {requests:,} requests  {accesses / MILLION:.2f}M block accesses  "
            f"{rate / MILLION:.2f}M/s")
    if total_bytes > 0:
        done = min(bytes_read / total_bytes, 1.0)
        line += f"  {done * PERCENT:.0f}% of {total_bytes / BYTES_PER_MB:.1f} MB"
        if 0 < done < 1 and seconds > 0:
            line += f"  ETA {_eta(seconds * (1 - done) / done)}"
    return line


class ProgressReporter:
    """Throttled single-line progress through ``write`` (call ``finish`` at the end)."""

    __slots__ = ("_write", "_clock", "_next_s", "_shown")

    def __init__(self, write: Callable[[str], object],
                 clock: Callable[[], float] = time.monotonic):
        self._write = write
        self._clock = clock
        self._next_s = clock()              # the first report shows at once
        self._shown = False

    def __call__(self, stats, total_bytes: int) -> None:
        """Report ``stats`` (a ReplayStats) if the interval has passed.  Complexity: O(1)."""
        now = self._clock()
        if now < self._next_s:
            return
        self._next_s = now + PROGRESS_INTERVAL_S
        self._shown = True
        self._write("\r" + format_progress(stats.requests, stats.block_accesses,
                                           stats.seconds, stats.bytes_read, total_bytes)
                    + "\x1b[K")

    def finish(self) -> None:
        """End the progress line (if one was shown)."""
        if self._shown:
            self._write("\n")
