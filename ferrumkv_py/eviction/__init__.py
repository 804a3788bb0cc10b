"""Eviction: keep the data set under ``maxmemory``.

``Evictor.make_room()`` is called by the dispatcher before every ``denyoom`` command when
maxmemory is set, by the cron, and by ``CONFIG SET maxmemory``.
"""

from __future__ import annotations


class Evictor:
    """Frees memory by the configured policy; answers whether a write may proceed."""

    def __init__(self, server):
        self.server = server

    def make_room(self) -> bool:
        """True when used memory is within maxmemory (after evicting, if the policy may)."""
        mm = self.server.maxmemory
        return not mm or self.server.ks.used_memory <= mm

    def info_fields(self) -> list:
        """Extra ``INFO memory`` fields of the policy layer."""
        return []
