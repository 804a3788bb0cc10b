"""gcstats.py: the collector's pauses by generation, in INFO memory, reset by RESETSTAT."""

from __future__ import annotations

import gc

import redis

from ferrumkv_py import gcstats


def test_collections_are_counted_and_timed():
    st = gcstats.shared()
    assert gcstats.shared() is st                       # one hook per process
    assert gc.callbacks.count(st._hook) == 1
    before = list(st.count)
    gc.collect(2)
    assert st.count[2] == before[2] + 1
    assert st.max_ns[2] > 0 and st.total_ns[2] >= st.max_ns[2]
    fields = dict(st.info_fields())
    assert fields["gc_gen2_collections"] == st.count[2]
    assert float(fields["gc_gen2_max_ms"]) == round(st.max_ns[2] / 1e6, 3)


def test_info_memory_and_resetstat(server):
    r = redis.Redis(port=server.port)
    for _ in range(3):
        server.call(lambda: gc.collect(2))
    info = r.info("memory")
    assert info["gc_gen2_collections"] >= 3 and float(info["gc_gen2_max_ms"]) > 0
    r.config_resetstat()
    info = r.info("memory")
    assert info["gc_gen2_collections"] <= 1        # (one may run in between)
    assert {"gc_gen0_collections", "gc_gen1_total_ms", "gc_gen2_total_ms"} <= set(info)
    r.close()
