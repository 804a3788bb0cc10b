"""A new maxmemory is applied in one stated order (Server._set_maxmemory), by the one
listener of ``maxmemory``.

The eviction pass that CONFIG SET runs below the current usage must find the evictor
prepared (compiled path built, marked lagging so it gets the catch-up budget),
``server.maxmemory`` stored and ``room_limit`` recomputed from it.  This once held only
because the Evictor happened to register its own listener before the Server's; now the
Server's listener runs the Evictor's step itself (Evictor.prepare_limit), and a test checks
that no other listener is registered.
"""

from __future__ import annotations

import random

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.config import Config
from ferrumkv_py.eviction import ROOM_UNLIMITED
from ferrumkv_py.server import Server

KEYS = 3000
VALUE_BYTES = 100


def _server(policy: str = "allkeys-lru", **cfg) -> Server:
    config = Config()
    config.set("maxmemory-policy", policy)
    for name, value in cfg.items():
        config.set(name.replace("_", "-"), str(value))
    srv = Server(config, clock=ManualClock(), rng=random.Random(1))
    db = srv.ks.dbs[0]
    for i in range(KEYS):
        db.set(b"k%d" % i, b"x" * VALUE_BYTES)
    return srv


def _spy_make_room(srv: Server) -> list:
    """Record the evictor's and server's state at each make_room() call."""
    ev = srv.evictor
    seen = []
    real = ev.make_room

    def spy() -> bool:
        seen.append({"maxmemory": srv.maxmemory, "room_limit": srv.room_limit,
                     "lagging": ev.lagging, "compiled": ev.compiled is not None})
        return real()
    ev.make_room = spy
    return seen


def test_the_server_is_the_only_maxmemory_listener():
    srv = _server()
    assert srv.config._listeners["maxmemory"] == [srv._set_maxmemory]


def test_lowering_maxmemory_runs_the_steps_in_order():
    srv = _server()
    seen = _spy_make_room(srv)
    limit = srv.ks.used_memory // 2
    srv.config.set("maxmemory", str(limit))
    assert seen, "CONFIG SET maxmemory below the usage runs an eviction pass"
    first = seen[0]
    assert first["maxmemory"] == limit                  # step 2 before step 4
    assert first["room_limit"] == limit                 # step 3 (no controller memory)
    assert first["lagging"] is True                     # step 1: catch-up budget
    assert first["compiled"] is True                    # step 1: the kernel is ready
    assert srv.ks.evicted_keys > 0 and srv.ks.used_memory <= limit


def test_raising_and_clearing_maxmemory():
    srv = _server()
    seen = _spy_make_room(srv)
    srv.config.set("maxmemory", str(srv.ks.used_memory * 4))
    assert seen == []                                   # under the limit: no pass
    assert srv.room_limit == srv.maxmemory == srv.ks.used_memory * 4
    assert srv.evictor.lagging is False
    srv.config.set("maxmemory", "0")
    assert srv.maxmemory == 0 and srv.room_limit == ROOM_UNLIMITED


def test_start_up_value_is_applied_in_the_same_order():
    """A maxmemory from the config file or command line is applied at construction: the
    Server's listener runs it through the same steps (call_now)."""
    srv = _server(maxmemory="1mb")
    assert srv.maxmemory == 1024 * 1024
    assert srv.room_limit == 1024 * 1024
    assert srv.evictor.compiled is not None


def test_client_pause_holds_the_pass():
    """Step 4 is skipped while CLIENT PAUSE holds eviction; the limit is still stored."""
    srv = _server()
    seen = _spy_make_room(srv)
    srv.ops.paused = lambda: True
    limit = srv.ks.used_memory // 2
    srv.config.set("maxmemory", str(limit))
    assert seen == [] and srv.maxmemory == limit and srv.room_limit == limit
    assert srv.ks.evicted_keys == 0
