"""Give freed memory back to the OS where the allocator allows it (glibc ``malloc_trim``).

CPython keeps freed small objects in its pymalloc arenas (256 KB each, returned to the OS
only when wholly empty) and large ones in glibc's heap, whose top is trimmed on its own but
whose holes are not.  After a flush of a million keys most arenas are empty and go back by
themselves; ``malloc_trim(0)`` then releases the free pages inside glibc's heaps too
(``madvise``), so RSS after FLUSHALL comes back near its starting point instead of staying
at the peak (measured in ``docs/memory.md``).

Called when a lazy free queue empties and after a synchronous flush.  Elsewhere (musl,
macOS) there is no such call and this does nothing.
Complexity: O(heap pages) in C, a few ms for a GB heap; never on a per-command path.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_libc = None
try:
    _name = ctypes.util.find_library("c")
    if _name:
        _lib = ctypes.CDLL(_name)
        if hasattr(_lib, "malloc_trim"):
            _lib.malloc_trim.argtypes = [ctypes.c_size_t]
            _lib.malloc_trim.restype = ctypes.c_int
            _libc = _lib
except OSError:  # pragma: no cover - no libc to load
    _libc = None


def trim_after_free() -> bool:
    """Return free heap pages to the OS; True when the allocator has the call."""
    if _libc is None:
        return False
    _libc.malloc_trim(0)
    return True
