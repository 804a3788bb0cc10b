"""Fixtures shared by the ferrumkv command tests (the server fixtures are in tests/conftest.py).

``clock`` swaps the running server's clock for a :class:`ManualClock` at ``START_MS``, so TTL
tests advance time instead of sleeping; ``put`` inserts a container value directly, so a test
of one command family does not depend on another family's commands.  ``err`` and ``stats``
are plain helpers for redis-py clients.
"""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock

START_MS = 1_700_000_000_000


@pytest.fixture
def clock(server):
    """Swap the running server's clock for a ManualClock (TTL tests without sleeping)."""
    mc = ManualClock(START_MS)

    def install():
        server.server.ks.clock = mc
        server.server.ks.refresh_time()
    server.call(install)
    return mc


@pytest.fixture
def put(server):
    """Insert a container value directly (no dependency on the container commands)."""
    def put(key: bytes, value, db: int = 0):
        def add():
            value.mem = memory.recount(value)
            server.server.ks.dbs[db].add(key, value)
        server.call(add)
    return put


def err(client, *args) -> str:
    with pytest.raises(redis.ResponseError) as info:
        client.execute_command(*args)
    return str(info.value)


def stats(client) -> tuple:
    s = client.info("stats")
    return s["keyspace_hits"], s["keyspace_misses"], s["expired_keys"]
