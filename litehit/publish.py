"""Atomic publication of output files.

Every file the tools write (facts, query output, converted traces, plots) is written to
``<path>.tmp`` and renamed onto ``<path>`` only when the whole write succeeded, so a reader
never sees half a file and a failed run leaves the previous file and no ``.tmp`` behind.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

TMP_SUFFIX = ".tmp"


def remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


@contextmanager
def published(path: str, mode: str = "w", **open_kwargs):
    """``with published(path) as f:`` writes ``path`` atomically (parent dirs created)."""
    tmp = path + TMP_SUFFIX
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        with open(tmp, mode, **open_kwargs) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise
