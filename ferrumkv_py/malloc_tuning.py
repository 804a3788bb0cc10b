"""Large allocations through mmap, so that growing a big column does not copy it.

The keyspace's columns (``slots.py``: two lists and four arrays, 8 bytes a slot each) grow
by CPython's ``realloc``.  glibc serves an allocation from its heap unless it is larger
than ``M_MMAP_THRESHOLD``, and that threshold is *dynamic*: every time a large mmapped block
is freed, the threshold rises to its size (up to 32 MiB).  A server that has freed one big
buffer therefore keeps its 24 MB columns on the heap, where a ``realloc`` that cannot grow
in place allocates anew and copies everything: at 2.8M keys one growth of all the columns
copied ~130 MB and stalled every client for ~17 ms (``slots.py``, "Layout").  A block that
*is* mmapped grows by ``mremap``, which moves page-table entries and copies nothing.

Setting the threshold explicitly (``mallopt``) fixes it at that value and turns the dynamic
adjustment off, so every block of at least MMAP_THRESHOLD_BYTES is mmapped for good.
Measured in-process, 3M keys added: the worst single add 17.5 -> 11.9 ms before the growth
chunk was capped (``GROW_MAX_SLOTS``), the whole fill 5.8 -> 4.4 s.  The price: one
``mmap``/``munmap`` per allocation of 1 MiB or more (a large value, a big reply), which the
kernel serves in microseconds.

Only where the C library is glibc (``mallopt`` exists); elsewhere nothing changes.
Complexity: O(1), once per process.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3               # glibc's mallopt parameter number
MMAP_THRESHOLD_BYTES = 1 << 20      # blocks of 1 MiB or more: mmapped, grown by mremap


def mmap_large_blocks() -> bool:
    """Fix glibc's mmap threshold (see the module docstring).  True when it was set."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
