"""Victims pinned: a seeded keyspace under every maxmemory policy (both AHE controllers, the
compiled path and the Python sampler, one database and two) must keep exactly the keys it
kept when these digests were taken.  Any change to a score, a parameter, the pool, the
draws or the controllers' feedback that moves a single victim changes a digest; a
refactoring of the eviction code must leave every one of them as it is.

The adaptive controller's ghosts and duels hold ``hash(key)``, which Python salts per
process, so the runs go through one child process with PYTHONHASHSEED fixed.

The digests were recorded on the code before eviction/scores.py existed (issue 27): the
scores then had four homes, and this test is what says the one home chooses the same keys.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.config import Config
from ferrumkv_py.server import Server

NOW = 1_700_000_000_000
KEYS = 1200          # keys loaded before the limit is set
OPS = 6000           # mixed reads and writes at the limit


def run(policy: str, controller: str, kernel: bool, dbs: int) -> str:
    """The digest of a seeded run: the surviving keys of every database, the eviction and
    expiry counts and the AHE controller's alpha (its feedback depends on the victims)."""
    config = Config()
    config.set("maxmemory-policy", policy)
    config.set("ahe-controller", controller)
    clock = ManualClock(NOW)
    srv = Server(config, clock=clock, rng=random.Random(7))
    srv.evictor.use_kernel = kernel
    ks = srv.ks
    rng = random.Random(21)
    hot = [b"h%d" % i for i in range(150)]

    def write(db, key: bytes) -> None:
        e = db.set(key, b"v" * rng.randrange(8, 70))
        if rng.random() < 0.6:
            db.set_expire(e, ks.now_ms + rng.choice((40, 25_000, 4_000_000)) +
                          rng.randrange(1, 500))

    for i in range(KEYS):
        clock.advance(rng.randrange(0, 40))
        ks.refresh_time()
        write(ks.dbs[i % dbs], b"k%d" % i)
    for _ in range(KEYS):
        ks.dbs[rng.randrange(dbs)].lookup_read(b"k%d" % rng.randrange(KEYS))
    srv.config.set("maxmemory", str(ks.used_memory))
    for i in range(OPS):
        clock.advance(rng.randrange(0, 25))
        ks.refresh_time()
        db = ks.dbs[rng.randrange(dbs)]
        if rng.random() < 0.45:
            db.lookup_read(rng.choice(hot) if rng.random() < 0.5 else
                           b"k%d" % rng.randrange(KEYS))
            continue
        key = rng.choice(hot) if rng.random() < 0.3 else b"n%d" % i
        if ks.used_memory > srv.room_limit:
            srv.evictor.make_room()
        write(db, key)
    ks._check()
    assert ks.evicted_keys > 1500
    ctl = srv.evictor.controller
    if controller == "adaptive":
        assert ctl.turnover_ms is not None      # the adaptive score ran, not its fallback
    h = hashlib.sha256()
    for db in ks.dbs[:dbs]:
        h.update(b"|".join(sorted(k for k, _ in db.items())))
        h.update(b"#")
    alpha = ctl.alpha if ctl is not None and "ahe" in policy else None
    h.update(repr((ks.evicted_keys, ks.expired_keys, alpha)).encode())
    return h.hexdigest()[:16]


CASES = [(p, c) for p in ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru",
                          "volatile-lfu", "volatile-random", "volatile-ttl")
         for c in ("spec",)] + [(p, c) for p in ("allkeys-ahe", "volatile-ahe")
                                for c in ("spec", "adaptive")]

PINNED = {
    ('allkeys-lru', 'spec', True, 1): '39d3621c894788d0',
    ('allkeys-lru', 'spec', True, 2): '2af4cf0a3b1e8965',
    ('allkeys-lru', 'spec', False, 1): 'f0989f83e6c057eb',
    ('allkeys-lru', 'spec', False, 2): '0e50188f43622567',
    ('allkeys-lfu', 'spec', True, 1): '47af7844e205507b',
    ('allkeys-lfu', 'spec', True, 2): '29329b26cdf1d93e',
    ('allkeys-lfu', 'spec', False, 1): 'd4beeb96ed64a99f',
    ('allkeys-lfu', 'spec', False, 2): 'c784bca7a0f754fb',
    ('allkeys-random', 'spec', True, 1): '75c909b46119c1b2',
    ('allkeys-random', 'spec', True, 2): 'dee1e8b125523b36',
    ('allkeys-random', 'spec', False, 1): '75c909b46119c1b2',
    ('allkeys-random', 'spec', False, 2): 'dee1e8b125523b36',
    ('volatile-lru', 'spec', True, 1): 'e52dca1a8aac0421',
    ('volatile-lru', 'spec', True, 2): '98b669fbb43fe646',
    ('volatile-lru', 'spec', False, 1): 'ddb9e598e53d4098',
    ('volatile-lru', 'spec', False, 2): 'a7d85ce3df6a8363',
    ('volatile-lfu', 'spec', True, 1): '75fafb799c124f06',
    ('volatile-lfu', 'spec', True, 2): 'eb8a0312795d9b9a',
    ('volatile-lfu', 'spec', False, 1): 'ac6b1ff580d96cf2',
    ('volatile-lfu', 'spec', False, 2): '9b8b4fdd5a54ea70',
    ('volatile-random', 'spec', True, 1): '409fdbdbd24f55c3',
    ('volatile-random', 'spec', True, 2): 'f8498d29735e326a',
    ('volatile-random', 'spec', False, 1): '409fdbdbd24f55c3',
    ('volatile-random', 'spec', False, 2): 'f8498d29735e326a',
    ('volatile-ttl', 'spec', True, 1): 'fbb5ae9e308aadec',
    ('volatile-ttl', 'spec', True, 2): '3b29da5dad3f475b',
    ('volatile-ttl', 'spec', False, 1): 'c5b1c80c00a97351',
    ('volatile-ttl', 'spec', False, 2): 'fe66ceac821d39fe',
    ('allkeys-ahe', 'spec', True, 1): '6bfb2b71ed5dd8ad',
    ('allkeys-ahe', 'spec', True, 2): '9f6314d4113836f9',
    ('allkeys-ahe', 'spec', False, 1): '77b190621741d621',
    ('allkeys-ahe', 'spec', False, 2): '6dc672f948722fd4',
    ('allkeys-ahe', 'adaptive', True, 1): '16f3077c44441ec8',
    ('allkeys-ahe', 'adaptive', True, 2): '409e85b4bce36660',
    ('allkeys-ahe', 'adaptive', False, 1): 'e2ba690ed13a2dc5',
    ('allkeys-ahe', 'adaptive', False, 2): '70a48a4f325dde5a',
    ('volatile-ahe', 'spec', True, 1): 'fd0c9cafc282578e',
    ('volatile-ahe', 'spec', True, 2): '965a6b961493c6c0',
    ('volatile-ahe', 'spec', False, 1): '9aa2560f8855939a',
    ('volatile-ahe', 'spec', False, 2): 'd55192f37a1e1cbc',
    ('volatile-ahe', 'adaptive', True, 1): '47586a606ad8a90f',
    ('volatile-ahe', 'adaptive', True, 2): '5189e4d2159d73fb',
    ('volatile-ahe', 'adaptive', False, 1): '9fad98061be46bd6',
    ('volatile-ahe', 'adaptive', False, 2): 'ddf4f6151bb50775',
}


@pytest.fixture(scope="module")
def digests() -> dict:
    """Every case's digest, from one child process with a fixed hash seed."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, __file__], env=env, capture_output=True,
                         text=True, check=True, timeout=600).stdout
    table = {}
    for line in out.splitlines():
        case, digest = line.rsplit(": ", 1)
        table[eval(case.strip())] = eval(digest.strip(" ,"))
    return table


@pytest.mark.parametrize("dbs", [1, 2])
@pytest.mark.parametrize("kernel", [True, False])
@pytest.mark.parametrize("policy,controller", CASES)
def test_victims_are_pinned(digests, policy, controller, kernel, dbs):
    case = (policy, controller, kernel, dbs)
    assert digests[case] == PINNED[case]


if __name__ == "__main__":          # the table (PINNED's rows), under PYTHONHASHSEED=0
    for p, c in CASES:
        for k in (True, False):
            for d in (1, 2):
                print("    (%r, %r, %r, %d): %r," % (p, c, k, d, run(p, c, k, d)))
