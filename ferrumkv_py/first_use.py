"""Compiled kernels loaded off the event loop at their first use (issue 26 row 10).

numpy, numba and llvmlite cost ~90 MB of RSS and ~0.3-0.5 s (2-6 s with a cold numba
cache) to import and compile, so the families that need them load at first use
(``lazy.py``).  That first use ran on the event loop: the first PFADD, DUMP or RESTORE,
bit count, ``CONFIG SET maxmemory-policy allkeys-ahe`` or ``litehit-shadow yes`` made every
client wait for the import (numpy alone, for LCS, LOLWUT and the GEO searches, ~100-160
ms).  Now:

1. **Commands of a family** (:class:`Kernels`, :func:`gate`): until the family's modules
   are loaded, its commands' handlers are wrapped.  A command from a connected client at
   top level starts a daemon thread that imports the modules, and the command with the
   rest of its read is held (``Client.hold``, CLIENT PAUSE's machinery: later reads are
   buffered); the loop serves everybody else meanwhile (the thread and the loop share
   the GIL, switched every 5 ms).  When the import is done, the loop resumes each held
   client (``Client.resume_held``), which runs the command through the dispatcher again.
   Where a call cannot be held -- inside EXEC, a script, the console, the busy-script pass
   -- the modules are imported there and then (:meth:`Kernels.load_now`, the synchronous
   path; it waits for a thread already importing).  Once loaded, the original handlers are
   put back: no cost per command afterwards.
2. **The eviction kernel** (``Evictor._maybe_compile``) compiles on a thread; the Python
   sampler, the kernel's reference, evicts until it is ready.
3. **The litehit shadow** (``shadow.install``) loads its kernels on a thread and starts
   when they are ready.

At start-up (a config file that sets a policy or the shadow) the loading happens before
the server listens: nobody waits then.

Invariant: a command is never run twice nor lost: it is either held before its handler
touched anything (the wrapper raises :class:`Postponed` first) or run.
Complexity: O(1) per command; O(waiting clients) when a load ends.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
import threading

log = logging.getLogger("ferrumkv")


class Postponed(Exception):
    """Raised by a handler to have the dispatcher hold the client's read (client.py,
    ``Client.hold``) until something resumes it; never reaches a reply.  ``done`` False
    (a gated handler: kernels loading): this command is held and runs again later; True
    (a reply still streaming: commands/_randpick.py): this command is done, only the
    rest of the read is held."""

    def __init__(self, done: bool = False):
        super().__init__()
        self.done = done


def may_hold(c) -> bool:
    """Can this call be held and run later?  Only a connected client's top-level command:
    not inside EXEC, a script, the console or the busy-script pass (no read to hold)."""
    return (getattr(c, "transport", None) is not None and c.executing is not None
            and c.multi is None and not c.in_exec and not c.closing and c.held is None)


def start_thread(name: str, work) -> None:
    """Run ``work()`` on a daemon thread; an exception is logged (the synchronous path
    meets the same error later, worded as the command's error)."""
    def run() -> None:
        try:
            work()
        except Exception:
            log.exception("first use: loading %s failed", name)
    threading.Thread(target=run, name="first-use-" + name, daemon=True).start()


class Kernels:
    """The modules one family of commands needs, loaded once (see the module docstring).
    ``load`` replaces the import (tests inject a slow one)."""

    def __init__(self, name: str, modules: tuple = (), load=None):
        self.name = name
        self.modules = modules
        self._load = load
        self.ready = False
        self.loading = False
        self.waiters: list = []
        self.gated: list = []           # (spec, original handler) while not ready
        self._lock = threading.Lock()          # one import at a time
        self._wait_lock = threading.Lock()     # waiters and loading

    def _import(self) -> None:
        if self._load is not None:
            self._load()
        for m in self.modules:
            importlib.import_module(m)

    def load_now(self) -> None:
        """The synchronous path: import now (waiting for a thread already at it)."""
        with self._lock:
            if not self.ready:
                try:
                    self._import()
                finally:
                    self._loaded()

    def _loaded(self) -> None:
        self.ready = True
        for spec, handler in self.gated:
            spec.handler = handler      # the plain handler again: no cost from now on
        self.gated = []

    def need(self, c) -> None:
        """Called by a gated handler first: return when the modules are loaded (or were
        loaded now on the synchronous path); else start loading and raise Postponed."""
        if self.ready:
            return
        if not self.loading and self._load is None and all(map(_imported, self.modules)):
            self.load_now()             # imported by someone else meanwhile (tests do)
            return
        if not may_hold(c):
            self.load_now()
            return
        with self._wait_lock:           # the loading thread takes the list under it
            if self.ready:
                return
            self.waiters.append(c)
            start, self.loading = not self.loading, True
        if start:
            start_thread(self.name, self._load_then_wake)
        raise Postponed

    def _load_then_wake(self) -> None:
        """The loading thread: import, then have each held client's own loop resume it, in
        the order they came (servers in one process each have their loop: tests)."""
        try:
            self.load_now()
        finally:
            with self._wait_lock:
                self.loading = False
                waiters, self.waiters = self.waiters, []
            for c in waiters:
                c.server.loop.call_soon_threadsafe(_resume, c)


def _imported(name: str) -> bool:
    """Is module ``name`` imported and done (not half-way through another thread's
    import, where importing it here would wait for that thread)?"""
    mod = sys.modules.get(name)
    return mod is not None and not getattr(getattr(mod, "__spec__", None), "_initializing",
                                           False)


def _resume(c) -> None:
    if not c.closing:
        c.resume_held()


def gate(kernels: Kernels, specs) -> None:
    """Wrap the handlers of ``specs`` (registry entries) so that each asks
    ``kernels.need(c)`` first, until the kernels are loaded.  Complexity: O(specs)."""
    if kernels.ready:
        return
    for spec in specs:
        handler = spec.handler

        @functools.wraps(handler)
        def gated(c, argv, _handler=handler):
            kernels.need(c)
            return _handler(c, argv)
        kernels.gated.append((spec, handler))
        spec.handler = gated


# numpy alone (~100-160 ms and ~10 MB at import): LCS, LOLWUT, the GEO searches
NUMPY = Kernels("numpy", ("numpy",))


def gate_commands(kernels: Kernels, names) -> None:
    """:func:`gate` for registered commands by name (a command module's last lines)."""
    from .registry import COMMANDS
    gate(kernels, [COMMANDS[n.encode()] for n in names])
