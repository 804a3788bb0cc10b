"""The used_memory model (memory.py): exact bookkeeping, and loosely against real RSS.

The RSS checks run in a fresh interpreter (the test process's heap is full of other tests'
garbage) and only assert broad bounds that cannot flake; the measured numbers are printed
(``pytest -s``) and the careful measurement lives in docs/memory.md.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_string_key_cost_is_the_sum_of_its_parts():
    key, val = b"key:000000000001", b"x" * 10
    assert memory.entry_cost(key, val) == memory.KEY_OVERHEAD + len(key) + \
        memory.STRING_OVERHEAD + len(val)
    assert memory.KEY_OVERHEAD == (memory.SLOT_INT + memory.SLOT_LISTS + memory.SLOT_ARRAYS
                                   + memory.KEYSPACE_DICT_SLOT + memory.BYTES_OBJ
                                   + memory.SMALL_ALLOC_SLACK)
    # the calibration points of the module docstring
    assert memory.entry_cost(key, val) == 235
    assert memory.entry_cost(key, b"x" * 100) == 325
    assert memory.entry_cost(key, b"x" * 1000) == 1225
    assert memory.entry_cost(key, val) + memory.EXPIRE_COST == 243


def test_used_memory_follows_every_change_in_o1():
    clock = ManualClock()
    ks = Keyspace(clock=clock, rng=random.Random(4))
    rng = random.Random(4)
    for step in range(20_000):
        db = ks.dbs[rng.randrange(3)]
        key = b"k%d" % rng.randrange(2000)
        op = rng.random()
        if op < 0.5:
            e = db.set(key, b"v" * rng.randrange(0, 700), keep_ttl=rng.random() < 0.3)
            if rng.random() < 0.4:
                db.set_expire(e, ks.now_ms + rng.randrange(1, 5000))
        elif op < 0.7:
            db.delete(key)
        elif op < 0.8:
            e = db.lookup_write(key)
            if e is not None:
                db.persist(e)
        elif op < 0.9:
            db.lookup_read(key)
        else:
            clock.advance(rng.randrange(0, 300))
            ks.refresh_time()
        if step % 2000 == 0:
            ks._check()
    ks._check()
    before = ks.used_memory
    assert before > 0
    ks.flushall()
    assert ks.used_memory == 0


RSS_PROBE = r"""
import gc, json, os, sys
sys.path.insert(0, sys.argv[1])
from ferrumkv_py.keyspace import Keyspace
n, size, ttl = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
ks = Keyspace()
db = ks.dbs[0]
gc.collect()
r0, u0 = rss(), ks.used_memory
for i in range(n):
    e = db.set(b"key:%012d" % i, b"x" * size)
    if ttl:
        db.set_expire(e, ks.now_ms + 10 ** 9 + i)
gc.collect()
print(json.dumps({"rss": (rss() - r0) / n, "model": (ks.used_memory - u0) / n}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
@pytest.mark.parametrize("size,ttl", [(10, False), (1000, False), (10, True)])
def test_model_tracks_rss_growth_loosely(size, ttl):
    n = 200_000
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, ROOT, str(n), str(size),
                          "1" if ttl else "0"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    ratio = got["model"] / got["rss"]
    print("\n%d keys, %d-byte values%s: RSS %.1f B/key, model %.1f B/key, model/RSS %.3f"
          % (n, size, " + TTL" if ttl else "", got["rss"], got["model"], ratio))
    assert 0.6 < ratio < 1.6
