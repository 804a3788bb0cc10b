"""Opening files the server writes without ever blocking on them, and keeping them in ``dir``.

A path a client or a config names could be a named pipe (``open`` for writing waits for a
reader: the event loop would freeze), a device, a directory or a symlink out of ``dir``.
:func:`regular_opener` opens with ``O_NONBLOCK`` (a FIFO without a reader fails at once with
``ENXIO`` instead of waiting), then checks ``fstat`` and refuses anything but a regular file,
then clears ``O_NONBLOCK`` so writes behave normally.  It is an ``opener=`` for
:func:`open`.  :func:`check_basename` is the rule for file names set at runtime: a plain
name inside ``dir`` (no ``/``, not ``.`` or ``..``), as Redis requires of ``dbfilename``.

Complexity: O(1) system calls per open.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat

FILE_MODE = 0o644   # new files: owner read/write, others read (Redis creates 0644 too)


class NotRegularFile(OSError):
    def __init__(self, path: str):
        super().__init__(errno.EINVAL, "Not a regular file", path)


def regular_opener(path: str, flags: int, nofollow: bool = False) -> int:
    """``open(path, mode, opener=regular_opener)``: a regular file or an OSError."""
    extra = os.O_NONBLOCK | (os.O_NOFOLLOW if nofollow else 0)
    fd = os.open(path, flags | extra, FILE_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        fl = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fl & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def nofollow_opener(path: str, flags: int) -> int:
    """As :func:`regular_opener`, and a symlink is refused too (files named by clients)."""
    return regular_opener(path, flags, nofollow=True)


def open_regular(path: str, mode: str = "a", nofollow: bool = False, **kwargs):
    """``open()`` that only ever opens a regular file, never blocking (see module doc)."""
    return open(path, mode, opener=nofollow_opener if nofollow else regular_opener,
                **kwargs)


def check_basename(name: str) -> bool:
    """True for a plain file name that stays inside ``dir``."""
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")
