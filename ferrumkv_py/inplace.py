"""Edit a big string value in place when nothing else can see it (SETBIT, BITFIELD).

String values are immutable ``bytes``, read directly by every string command, so a bit
write normally builds a new value: one copy of the whole string per SETBIT (1.5 ms at
16 MiB, where Redis edits in O(1)).  A ``bytes`` object that nothing but its keyspace entry
refers to can be changed in place without anyone noticing -- the same reasoning as Redis's
``dbUnshareStringValue``, which edits a string in place unless it is shared.

When it is done (all of these, checked on every call):

* CPython 3.11-3.13 with the GIL, and the ``PyBytesObject`` layout this module verifies at
  import (data at ``id(b) + bytes.__basicsize__ - 1``, the cached hash 8 bytes before it,
  reference counts as expected); otherwise :data:`ENABLED` is False and every write copies;
* the value is at least :data:`MIN_BYTES` long (small values copy cheaply, and the
  interpreter's own shared objects -- b"", one-byte strings -- are all small);
* ``sys.getrefcount`` shows exactly the references the caller accounts for: the entry's
  slot, the caller's local name and the call's own argument.  Any other holder -- a reply
  not yet joined, a pipeline's argv, a MULTI queue, a COPY in another key, a numpy view, a
  dict key -- adds a reference, and the write copies instead.
* the length does not change (growing a string always builds a new one).

After an edit the cached hash is reset to "not computed" (-1), so the object behaves as a
freshly made ``bytes`` of its new content.  Complexity: O(bytes written).
"""

from __future__ import annotations

import ctypes
import platform
import sys

MIN_BYTES = 4096                    # smaller values are copied (a copy costs < 1 us)
UNSHARED_REFCOUNT = 3               # the keyspace's vals list + the caller's local + getrefcount's argument
_DATA_OFFSET = bytes.__basicsize__ - 1          # ob_sval (basicsize counts the NUL byte)
_HASH_OFFSET = _DATA_OFFSET - ctypes.sizeof(ctypes.c_ssize_t)    # ob_shash
_HASH_NOT_COMPUTED = -1


# CPython versions whose sys.getrefcount counts every reference, the caller's stack included
# (3.14 borrows references for local loads, so counts can read low: not trusted there)
REFCOUNT_EXACT_VERSIONS = ((3, 11), (3, 13))


def _layout_ok() -> bool:
    """Check the interpreter and the object layout on a throwaway value before trusting it."""
    lo, hi = REFCOUNT_EXACT_VERSIONS
    if platform.python_implementation() != "CPython" or not lo <= sys.version_info[:2] <= hi:
        return False
    if not getattr(sys, "_is_gil_enabled", lambda: True)():
        return False                    # free-threaded build: other threads could hold it
    try:
        probe = bytes(range(256)) * 2
        if ctypes.string_at(id(probe) + _DATA_OFFSET, len(probe)) != probe:
            return False
        h = hash(probe)
        if ctypes.c_ssize_t.from_address(id(probe) + _HASH_OFFSET).value != h:
            return False
        test = bytearray(probe)
        test[300] = 0x55
        edited = bytes(bytearray(probe))   # a private copy (bytes(probe) is probe itself)
        if sys.getrefcount(edited) != 2:   # local + argument: exactness of the count
            return False
        _write(edited, 300, b"\x55")
        return edited == bytes(test) and hash(edited) == hash(bytes(test))
    except Exception:  # pragma: no cover - any surprise disables the fast path
        return False


def _write(value: bytes, offset: int, data: bytes) -> None:
    ctypes.memmove(id(value) + _DATA_OFFSET + offset, data, len(data))
    ctypes.c_ssize_t.from_address(id(value) + _HASH_OFFSET).value = _HASH_NOT_COMPUTED


def unshared(value, refcount: int) -> bool:
    """True if ``value`` may be edited in place: the caller passes ``sys.getrefcount(value)``
    taken where only the entry and one local name hold it, in a statement of its own
    (``unshared(v, sys.getrefcount(v))`` would also count the ``v`` already pushed for the
    outer call, and never edit in place)."""
    return ENABLED and refcount == UNSHARED_REFCOUNT and len(value) >= MIN_BYTES \
        and value.__class__ is bytes


def write(value: bytes, offset: int, data: bytes) -> None:
    """Overwrite ``len(data)`` bytes of ``value`` at ``offset`` (inside it), in place.
    Only after :func:`unshared` said yes."""
    if offset < 0 or offset + len(data) > len(value):
        raise IndexError("in-place write outside the value")
    _write(value, offset, data)


ENABLED = _layout_ok()
