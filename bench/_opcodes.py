"""Interpreted bytecodes, counted: the deterministic measure of the in-process benches.

``sys.settrace`` with ``f_trace_opcodes`` sees every bytecode the interpreter runs in Python
frames (C code is not counted), so the count does not move with the machine's load.
"""

from __future__ import annotations

import collections
import os
import sys


def opcodes_by_line(feed, chunks) -> collections.Counter:
    """Call ``feed(chunk)`` for each chunk under the tracer; bytecodes run, keyed by
    (file name, function, line).  Complexity: O(bytecodes run), ~100x slower than untraced."""
    by_line: collections.Counter = collections.Counter()

    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        return step

    def step(frame, event, arg):
        if event == "opcode":
            code = frame.f_code
            by_line[(os.path.basename(code.co_filename), code.co_name, frame.f_lineno)] += 1
        return step

    sys.settrace(trace)
    try:
        for chunk in chunks:
            feed(chunk)
    finally:
        sys.settrace(None)
    return by_line
