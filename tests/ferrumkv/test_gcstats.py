"""gcstats.py: the collector's pauses by generation, in INFO memory, reset by RESETSTAT."""

from __future__ import annotations

import gc

import pytest
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


FREEZE_PROBE = r"""
import gc, json, sys
sys.path.insert(0, sys.argv[1])
from ferrumkv_py.config import Config
from ferrumkv_py.server import Server
srv = Server(Config())
db = srv.ks.dbs[0]
for i in range(1000):
    db.set(b"k%d" % i, b"v")
keys_list = db.keys
def walked(obj):
    return any(o is obj for o in gc.get_objects())
out = {"before": walked(keys_list)}
srv.gc_freeze = True
srv.freeze_gc()
out["after"] = walked(keys_list)
out["freezes"] = srv.gc_stats.freezes
db.clear()
out["same_list_after_flush"] = db.keys is keys_list and not walked(db.keys)
srv.cron()                                  # no module loaded since: no freeze
out["no_new_freeze"] = srv.gc_stats.freezes == 1
import colorsys                             # a module loaded (as a lazy kernel would be)
srv.cron()                                  # loading may go on (a background import)
out["not_while_loading"] = srv.gc_stats.freezes == 1
srv.cron()                                  # a tick without change: the loading is over
out["freeze_after_import"] = srv.gc_stats.freezes == 2
print(json.dumps(out))
"""


def test_freeze_keeps_the_keyspace_lists_out_of_every_collection():
    """In a child process (freezing is process-wide): the keyspace's lists are walked by
    collections before freeze_gc and not after; FLUSHDB keeps the frozen list; the cron
    freezes again only after modules were loaded, once a tick has passed without more."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", FREEZE_PROBE, root], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"before": True, "after": False, "freezes": 1,
                   "same_list_after_flush": True, "no_new_freeze": True,
                   "not_while_loading": True, "freeze_after_import": True}


LOADER_PROBE = r"""
import gc, json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from ferrumkv_py import resp_scan
from ferrumkv_py.gcstats import shared
shared().freeze()                            # as the server does at start
frozen = gc.get_freeze_count()
done = threading.Event()
resp_scan.on_ready(lambda scan: done.set())
resp_scan.request()                          # the background import of numba
ok = done.wait(120)
print(json.dumps({"loaded": ok, "collector_on": gc.isenabled(),
                  "import_frozen": gc.get_freeze_count() > frozen + 10_000}))
"""


def test_the_scanner_loader_imports_without_collections_and_freezes_it():
    """resp_scan's background import runs with the collector off (its full collections
    held the GIL for 5-12 ms each while clients were served), turns it back on, and
    freezes what it imported when the process freezes at all."""
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", LOADER_PROBE, root], capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"loaded": True, "collector_on": True, "import_frozen": True}


def test_only_the_collecting_freeze_counts_what_is_frozen():
    """gc.get_freeze_count() walks the permanent generation (12 ms at 145k objects): only
    GcStats.freeze calls it, and only when it collected; INFO reads the stored count."""
    import ast
    import inspect
    import pkgutil

    import ferrumkv_py
    callers = []
    for mod in pkgutil.walk_packages(ferrumkv_py.__path__, "ferrumkv_py."):
        if mod.name.endswith("__main__"):
            continue
        src = inspect.getsource(__import__(mod.name, fromlist=["_"]))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(n, ast.Attribute) and n.attr == "get_freeze_count"
                    for n in ast.walk(node)):
                callers.append("%s.%s" % (mod.name, node.name))
    assert callers == ["ferrumkv_py.gcstats.freeze"]
    st = gcstats.GcStats()          # not the shared one: its flag would make imports freeze
    try:
        with pytest.MonkeyPatch.context() as mp:    # freezing is process-wide: not here
            mp.setattr(gcstats.gc, "freeze", lambda: None)
            mp.setattr(gcstats.gc, "get_freeze_count", lambda: 1234)
            st.freeze(collect=False)
            assert st.frozen_counted == 0 and st.freezing
            st.freeze(collect=True)
            assert st.frozen_counted == 1234
            assert dict(st.info_fields())["gc_frozen_objects"] == 1234
    finally:
        gc.callbacks.remove(st._hook)
