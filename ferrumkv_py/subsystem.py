"""The parts a :class:`~ferrumkv_py.server.Server` is built from.

A subsystem is constructed in ``Server.__init__`` with the server (its config listeners are
wired there), is started by ``Server.start`` once the listeners are up, in the order the
server built them, and stopped by ``Server.stop`` in the reverse order.  ``Server.__init__``
lists every one of them, so the class says what a server is made of; adding one is one
line there::

    self.blocking = self.part(Blocking(self))

A subsystem with nothing to start or stop keeps this base's methods.

Complexity: O(1) here; each subsystem states its own.
"""

from __future__ import annotations


class Subsystem:
    """A part of the server with a lifecycle (see the module docstring)."""

    def __init__(self, server):
        self.server = server

    async def start(self) -> None:
        """Begin serving (the listeners are up).  Nothing by default."""

    async def stop(self) -> None:
        """Release what :meth:`start` or the running server took.  Nothing by default;
        may run more than once."""
