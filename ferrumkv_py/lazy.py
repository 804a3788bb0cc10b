"""Modules imported at their first use.

numpy, numba and llvmlite cost ~90 MB of RSS at import (docs/memory.md); a server that never
sees a bitmap, a HyperLogLog or a DUMP should not pay for them.  The command modules of
those families name their kernels through :class:`LazyModule`, so importing every command
family at start-up (``commands/__init__``) loads none of them.
"""

from __future__ import annotations

import importlib


class LazyModule:
    """``bits = LazyModule("ferrumkv_py.bits")``: the module is imported on the first
    attribute access (then it is one dict lookup and a getattr per access, ~0.1 us)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)
