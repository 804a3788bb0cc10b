"""The shadow's live numbers: reuse-only comparison after a reset in a warm cache, the
per-second window, labelled LITEHIT CURVE and LITEHIT ADVISE against hand-computed curves."""

import random

import pytest
import redis

from ferrumkv_py.memory import entry_cost

from ferrumkv_py.clock import SystemClock


class OffsetClock(SystemClock):
    """The system clock moved forward by ``offset_ms`` (the window test jumps minutes)."""

    def __init__(self):
        self.offset_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms


def _info(r):
    return r.info("litehit")


def _read_through(r, n, keys, seed):
    """Uniform reads over ``keys`` keys, a SET after each miss."""
    rng = random.Random(seed)
    for _ in range(n):
        k = "k%d" % rng.randrange(keys)
        if r.get(k) is None:
            r.set(k, "v" * 50)


def test_reuse_rates_are_sound_after_a_reset_in_a_warm_cache(make_server):
    """After LITEHIT RESET in a warm cache the cumulative comparison flatters the policy (the
    shadow starts cold: the cache's hits on keys it held before the reset count, the
    shadow's cannot); the reuse comparison does not: sampled LRU is not above exact LRU
    beyond the noise of ~60 reuses (measured gaps: -0.015..+0.019 over 3 seeds, while the
    cumulative gap was +0.12..+0.17)."""
    s = make_server(litehit_shadow="yes", maxmemory="40000", maxmemory_policy="allkeys-lru",
                    litehit_block_bytes=str(entry_cost(b"k100", b"v" * 50)))   # one key
    r = redis.Redis(port=s.port, protocol=2)
    _read_through(r, 3000, 400, seed=1)                  # warm: ~146 of 400 keys cached
    r.execute_command("LITEHIT", "RESET")
    _read_through(r, 250, 400, seed=11)
    info = _info(r)
    cumulative_gap = info["litehit_real_hit_rate"] - info["litehit_exact_hit_rate"]
    reuse_gap = info["litehit_reuse_real_hit_rate"] - info["litehit_reuse_exact_hit_rate"]
    assert cumulative_gap > 0.08                         # the misleading reading
    assert reuse_gap <= 0.04
    assert 0 < info["litehit_reuse_blocks"] < info["litehit_blocks"]
    # counters agree with the rates
    assert info["litehit_real_hits"] == round(info["litehit_real_hit_rate"]
                                              * info["litehit_blocks"])
    assert info["litehit_reuse_exact_hit_rate"] == pytest.approx(
        info["litehit_exact_hits"] / info["litehit_reuse_blocks"], abs=1e-6)


def test_window_counts_only_its_seconds(make_server):
    s = make_server(litehit_shadow="yes", litehit_window_seconds="30")
    clock = OffsetClock()
    s.call(setattr, s.server.ks, "clock", clock)
    r = redis.Redis(port=s.port, protocol=2)
    r.set("a", "1")
    for _ in range(10):
        r.get("a")                                       # 10 hits
    info = _info(r)
    assert info["litehit_window_blocks"] == 10
    assert info["litehit_window_real_hit_rate"] == 1.0
    assert info["litehit_window_exact_hit_rate"] == 1.0
    clock.offset_ms = 60_000                             # a minute later: those fall out
    for _ in range(4):
        r.get("nope")                                    # 1 first access, 3 reuses, all misses
    info = _info(r)
    assert info["litehit_window_blocks"] == 4
    assert info["litehit_window_real_hit_rate"] == 0.0
    assert info["litehit_window_exact_hit_rate"] == 0.75  # an LRU holds "nope" (no maxmemory)
    assert info["litehit_window_reuse_blocks"] == 3
    assert info["litehit_window_reuse_exact_hit_rate"] == 1.0
    assert info["litehit_blocks"] == 14                  # cumulative keeps everything
    clock.offset_ms = 120_000
    assert _info(r)["litehit_window_blocks"] == 0


def _abc_then_d(make_server, protocol):
    """a b c a b c d: 7 reads; the 3 reuses of a, b, c have stack distance 3."""
    s = make_server(litehit_shadow="yes", maxmemory="3000", litehit_block_bytes="1000",
                    maxmemory_policy="allkeys-lru")
    r = redis.Redis(port=s.port, protocol=protocol)
    for k in "abcabcd":
        r.get(k)
    return r


def test_advise_against_a_hand_computed_curve(make_server):
    r = _abc_then_d(make_server, 3)
    a = r.execute_command("LITEHIT", "ADVISE", "0.4")
    assert a[b"capacity_blocks"] == 3 and a[b"capacity_bytes"] == 3000
    assert a[b"hit_rate"] == b"0.428571"                 # 3 of 7 at capacity >= 3
    assert a[b"hit_rate_at_0.5x"] == b"0.000000"        # capacity 1
    assert a[b"hit_rate_at_2x"] == b"0.428571"
    assert a[b"max_hit_rate"] == b"0.428571"
    assert a[b"target_reachable"] == b"yes"
    assert a[b"target_capacity_blocks"] == 3             # 2 blocks give nothing
    assert a[b"target_capacity_bytes"] == 3000
    assert a[b"reuse_blocks"] == 3
    assert a[b"reuse_exact_hit_rate"] == b"1.000000"
    assert a[b"reuse_real_hit_rate"] == b"0.000000"     # the keys were never set
    assert a[b"policy_vs_exact_lru_points"] == b"-100.000000"
    b = r.execute_command("LITEHIT", "ADVISE", "0.5")
    assert b[b"target_reachable"] == b"no" and b"target_capacity_blocks" not in b
    # 4 of the 7 reads are first uses: the ceiling is 3/7 whatever the memory
    assert b[b"first_use_share"] == b"0.571429" and b[b"policy_meets_target"] == b"no"
    assert b[b"action"].startswith(b"not reachable in this window: 57.1 % of its reads")
    assert a[b"policy_meets_target"] == b"no"             # the keys were never set
    assert a[b"action"] == (b"CONFIG SET maxmemory 4kb (an exact LRU needs 2.93K for 40.0 %; "
                            b"10 % headroom for sampled eviction)")
    assert a[b"target_maxmemory"] == b"4kb" and a[b"policy"] == b"allkeys-lru"
    assert b"target_hit_rate" not in r.execute_command("LITEHIT", "ADVISE")
    for bad in ("1.5", "-0.1", "x"):
        with pytest.raises(redis.ResponseError):
            r.execute_command("LITEHIT", "ADVISE", bad)
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("LITEHIT", "ADVISE", "0.5", "extra")


def test_curve_is_labelled_in_both_protocols(make_server):
    r3 = _abc_then_d(make_server, 3)
    c3 = r3.execute_command("LITEHIT", "CURVE", "3")
    assert c3[b"capacity_keys"] == 3 and c3[b"block_bytes"] == 1000
    rates = {p[b"capacity_keys"]: p[b"exact_hit_rate"] for p in c3[b"points"]}
    assert rates[1] == b"0.000000" and rates[3] == b"0.428571"
    r2 = redis.Redis(port=r3.connection_pool.connection_kwargs["port"], protocol=2)
    c2 = r2.execute_command("LITEHIT", "CURVE", "3")
    assert c2[0::2][:4] == [b"block_bytes", b"sample_rate", b"capacity_keys", b"points"]
    first = c2[7][0]
    assert first == [b"capacity_keys", 1, b"capacity_bytes", 1000,
                     b"exact_hit_rate", b"0.000000"]


def test_shadow_memory_is_reported_beside_used_memory(make_server):
    s = make_server()
    r = redis.Redis(port=s.port, protocol=2)
    assert r.info("memory")["mem_not_counted_for_evict"] == 0
    r.config_set("litehit-shadow", "yes")
    for i in range(200):
        r.get("k%d" % i)
    lit = _info(r)                                       # replays what is pending
    mem = r.info("memory")
    assert mem["litehit_shadow_memory"] == mem["mem_not_counted_for_evict"] > 0
    assert mem["litehit_shadow_memory"] == lit["litehit_memory_bytes"]


@pytest.mark.parametrize("alpha,leaning", [(0.9, "recency"), (0.1, "frequency"),
                                           (0.5, "balanced")])
def test_ahe_alpha_says_which_end_is_recency(make_server, alpha, leaning):
    s = make_server(maxmemory_policy="allkeys-ahe", ahe_alpha_init=str(alpha))
    mem = redis.Redis(port=s.port, protocol=2).info("memory")
    assert mem["ahe_alpha"] == alpha and mem["ahe_alpha_leaning"] == leaning


ADVICE_UNIVERSE = 20_000            # keys of the Zipf workload below
ADVICE_READS = 30_000


def _zipf_keys(seed: int) -> list:
    """A Zipf(0.9) read stream over ADVICE_UNIVERSE keys, the same for a seed whatever the
    cache does (the read-through's writes depend on no random draw)."""
    import itertools
    import random
    rng = random.Random(seed)
    cum = list(itertools.accumulate(1 / i ** 0.9 for i in range(1, ADVICE_UNIVERSE + 1)))
    return [b"k%d" % k for k in rng.choices(range(ADVICE_UNIVERSE), cum_weights=cum,
                                            k=ADVICE_READS)]


def _hit_rate_read_through(port: int, keys: list) -> float:
    """GET each key, SET it (8-39 bytes, fixed per key) on a miss; the server's hit rate."""
    import zlib
    r = redis.Redis(port=port, socket_timeout=10)
    hits = 0
    for k in keys:
        if r.get(k) is None:
            r.set(k, b"v" * (8 + zlib.crc32(k) % 32))
        else:
            hits += 1
    r.close()
    return hits / len(keys)


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-ahe"])
def test_following_the_advice_reaches_the_target(make_server, policy):
    """The advice checked the honest way: a cache too small for 60 % asks LITEHIT ADVISE
    0.6, a second server gets the maxmemory it names, the same workload replays there, and
    the hit rate it reaches is at least the target."""
    keys = _zipf_keys(7)
    small = make_server(maxmemory="256kb", maxmemory_policy=policy, litehit_shadow="yes")
    reached = _hit_rate_read_through(small.port, keys)
    r = redis.Redis(port=small.port)
    easy = r.execute_command("LITEHIT", "ADVISE", "%.2f" % (reached - 0.05))
    assert easy[b"policy_meets_target"] == b"yes" and easy[b"action"].startswith(b"none: ")
    a = r.execute_command("LITEHIT", "ADVISE", "0.6")
    assert reached < 0.6 and a[b"policy_meets_target"] == b"no"
    setting = a[b"target_maxmemory"].decode()
    assert a[b"action"].startswith(b"CONFIG SET maxmemory " + setting.encode())
    big = make_server(maxmemory=setting, maxmemory_policy=policy)
    assert _hit_rate_read_through(big.port, keys) >= 0.6
