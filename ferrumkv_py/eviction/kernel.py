"""Victim selection compiled: sampling, scoring and the 16-entry pool in one numba call.

The Python sampler (``sampler.py``) runs ~700 interpreted bytecodes per evicted key, about
6-17 µs; a full cache evicts on nearly every write, so that cost is most of a write.  This
kernel does the same work on the database's slot arrays (``slots.py``) without a Python
object per candidate, and returns *as many victims as the write needs* in one call, so the
call's own cost (~1-3 µs for a dozen buffer arguments) is shared by all of them.  Python
then only unlinks the victims (``Evictor._evict_batch``).

Per victim, Redis's ``performEvictions`` loop, with the pool kept across calls::

    repeat (at most EVICT_MAX_EMPTY_ROUNDS):
        draw min(samples, live) candidates uniformly (a free or taken slot is drawn again,
        at most samples * SAMPLE_MAX_TRIES draws); a candidate past its deadline is handed
        back as *expired* (deleted as an expiry, not an eviction) and counts as drawn;
        score each one and offer it to the pool (pool.py's rules: a full pool drops its
        worst entry, a sample no better than the worst is dropped; equal scores go left)
        pop the best pool entries until one is still valid -> the victim
    a pool entry is valid when its slot still holds a key with the access time it was
    scored with (``lru[slot] == stamp``): a key deleted, replaced or read since is dropped,
    where Redis would re-look the key up and evict it on its stale score.

Scores (higher = evicted first), as the Python sampler computes them:

    MODE_LRU    -lru                                  (time-invariant; stays comparable)
    MODE_TTL    -deadline
    MODE_LFU    255 - decayed counter                 (lfu.py's decay, not written back)
    MODE_EPS    the spec AHE score (ahe.py)           fparams: alpha, wr, wf, base
    MODE_ADAPT  the adaptive AHE score (ahe_adaptive) fparams: per_ms, w, horizon, urgent,
                probation's idle threshold (ms; < 0: probation off) and 1 / turnover;
                and, per victim, recency's and frequency's picks among the candidates
                scored since the previous victim (``picks``), for the controller's duel

A slot chosen (victim or expired) is marked taken in ``lru`` as ``-2 - lru`` until Python
unlinks it, so one call never returns a slot twice; ``stamps`` gives Python the original
access time back.  Random draws come from a xorshift64* generator whose state lives in
``rng[0]`` (seeded from the keyspace's ``random.Random``, so a seeded run is repeatable).

Complexity: O(victims * samples) expected per call, O(EVPOOL_SIZE) per pool insertion.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..slots import SAMPLE_MAX_TRIES
from .ahe import RECENCY_HORIZON_MS, TTL_PENALTY
from .lfu import LFU_COUNTER_MAX, MS_PER_MINUTE
from .pool import EVPOOL_SIZE
from .probation import PROBATION_COUNTER, PROBATION_FIRST
from ..values import LFU_INIT_VAL

MODE_LRU, MODE_TTL, MODE_LFU, MODE_EPS, MODE_ADAPT = 1, 2, 3, 4, 5
EVICT_MAX_EMPTY_ROUNDS = 64     # populate rounds that found only stale entries, per victim

# iparams slots (int64): inputs, then outputs the kernel writes back
I_NOW, I_SAMPLES, I_VOL, I_LIVE, I_WANT, I_DECAY, I_TTL_EDGE, I_POOL_N = range(8)
I_VICTIMS, I_EXPIRED = 8, 9
N_IPARAMS = 10
# fparams slots (float64)
F_A, F_B, F_C, F_D, F_E, F_F = range(6)
N_FPARAMS = 6
# picks columns (int64), one row of N_PICK_COLS per victim (MODE_ADAPT): slot -1 = no pick
P_RSLOT, P_RIDLE, P_RCNT, P_FSLOT, P_FIDLE, P_FCNT = range(6)
N_PICK_COLS = 6
NO_PICK_COUNT = LFU_COUNTER_MAX + 1     # a pick's counter before any (ahe_adaptive._NO_PICK)

_XS_MUL = np.uint64(0x2545F4914F6CDD1D)
_SH12, _SH25, _SH27, _SH32 = np.uint64(12), np.uint64(25), np.uint64(27), np.uint64(32)


@njit(cache=True, inline="always")
def _draw(rng, n):
    """A uniform integer in [0, n) from the xorshift64* state rng[0] (n < 2**32)."""
    x = rng[0]
    x ^= x >> _SH12
    x ^= x << _SH25
    x ^= x >> _SH27
    rng[0] = x
    r = (x * _XS_MUL) >> _SH32
    return np.int64((r * np.uint64(n)) >> _SH32)


@njit(cache=True)
def pick_victims(mode, ip, fp, lru, lfu, exp, vslots, pool_score, pool_slot, pool_stamp, rng,
                 victims, stamps, expired, xstamps, picks):
    """Choose up to ``ip[I_WANT]`` victims of one database (see the module docstring).

    Writes the victims' slots and original access times to ``victims`` / ``stamps``, the
    expired candidates met on the way to ``expired`` / ``xstamps``, their counts to
    ``ip[I_VICTIMS]`` / ``ip[I_EXPIRED]``, the pool size to ``ip[I_POOL_N]``, and for
    MODE_ADAPT one row of ``picks`` per victim.  Complexity: O(victims * samples).
    """
    now = ip[I_NOW]
    vol = ip[I_VOL] != 0
    live = ip[I_LIVE]
    want = ip[I_WANT]
    decay = ip[I_DECAY]
    ttl_edge = ip[I_TTL_EDGE]
    pn = ip[I_POOL_N]
    cap = len(pool_score)
    size = len(vslots) if vol else len(lru)
    now_min = now // MS_PER_MINUTE
    fa, fb, fc, fd, fe, ff = fp[F_A], fp[F_B], fp[F_C], fp[F_D], fp[F_E], fp[F_F]
    nv = 0
    ne = 0
    rs, ri, rc, fs, fi, fcn = -1, -1, NO_PICK_COUNT, -1, -1, NO_PICK_COUNT
    while nv < want and live > 0:
        found = -1
        stamp = 0
        for _round in range(EVICT_MAX_EMPTY_ROUNDS):
            # ---- populate: draw, score and offer min(samples, live) candidates ----
            n = ip[I_SAMPLES]
            if n > live:
                n = live
            tries = n * SAMPLE_MAX_TRIES
            while n > 0 and tries > 0 and live > 0:
                tries -= 1
                j = _draw(rng, size)
                s = vslots[j] if vol else j
                last = lru[s]
                if last < 0:
                    continue                    # free, or taken in this call: draw again
                n -= 1
                x = exp[s]
                if x > 0 and x < now:           # past its deadline: an expiry, not a pick
                    expired[ne] = s
                    xstamps[ne] = last
                    ne += 1
                    lru[s] = -2 - last
                    live -= 1
                    if ne == len(expired):
                        want = nv               # out of room for expiries: stop here
                        n = 0
                    continue
                if mode == MODE_LRU:
                    score = -np.float64(last)
                elif mode == MODE_TTL:
                    score = -np.float64(x)
                elif mode == MODE_LFU or mode == MODE_EPS:
                    c = np.int64(lfu[s])
                    if decay > 0:
                        periods = (now_min - last // MS_PER_MINUTE) // decay
                        if periods > 0:
                            c = c - periods if periods < c else 0
                    if mode == MODE_LFU:
                        score = np.float64(LFU_COUNTER_MAX - c)
                    else:                       # fa alpha, fb wr, fc wf, fd base
                        idle = now - last
                        score = (fb * idle if idle < RECENCY_HORIZON_MS else fa) + fd - fc * c
                        if x > 0 and x <= ttl_edge:
                            score += TTL_PENALTY
                else:                           # MODE_ADAPT: fa per_ms, fb w, fc horizon,
                    idle = now - last           # fd urgent, fe probation idle, ff 1 / T
                    c = np.int64(lfu[s])
                    on_probation = c == PROBATION_COUNTER and fe >= 0
                    if on_probation:
                        c = LFU_INIT_VAL
                    score = idle * fa + fb * (LFU_COUNTER_MAX - c)
                    if x > 0:
                        left = x - now
                        if left < fc:
                            score += fd * (1.0 - (left if left > 0 else 0) / fc)
                    if on_probation and idle > fe:
                        score += PROBATION_FIRST + idle * ff
                    if idle > ri or (idle == ri and c < rc):
                        rs, ri, rc = s, idle, c
                    if c < fcn or (c == fcn and idle > fi):
                        fs, fi, fcn = s, idle, c
                # offer (pool.py's insert rules on the ascending, left-packed arrays)
                if pn == cap:
                    if score <= pool_score[0]:
                        continue
                    k = 0
                    while k < pn and pool_score[k] < score:
                        k += 1
                    k -= 1
                    for t in range(k):          # drop the worst, shift left
                        pool_score[t] = pool_score[t + 1]
                        pool_slot[t] = pool_slot[t + 1]
                        pool_stamp[t] = pool_stamp[t + 1]
                else:
                    k = 0
                    while k < pn and pool_score[k] < score:
                        k += 1
                    for t in range(pn, k, -1):  # shift right
                        pool_score[t] = pool_score[t - 1]
                        pool_slot[t] = pool_slot[t - 1]
                        pool_stamp[t] = pool_stamp[t - 1]
                    pn += 1
                pool_score[k] = score
                pool_slot[k] = s
                pool_stamp[k] = last
            if nv >= want:
                break
            # ---- pop the best entry that is still valid ----
            while pn > 0:
                pn -= 1
                s = pool_slot[pn]
                if lru[s] != pool_stamp[pn]:
                    continue                    # deleted, replaced, read or taken since
                x = exp[s]
                if vol and x == 0:
                    continue                    # lost its TTL since
                if x > 0 and x < now:
                    expired[ne] = s
                    xstamps[ne] = lru[s]
                    ne += 1
                    lru[s] = -2 - lru[s]
                    live -= 1
                    if ne == len(expired):
                        want = nv
                        break
                    continue
                found = s
                stamp = lru[s]
                break
            if found >= 0 or nv >= want or live <= 0:
                break
        if found < 0:
            break
        victims[nv] = found
        stamps[nv] = stamp
        lru[found] = -2 - stamp
        live -= 1
        if mode == MODE_ADAPT:
            row = nv * N_PICK_COLS
            picks[row + P_RSLOT] = rs
            picks[row + P_RIDLE] = ri
            picks[row + P_RCNT] = rc
            picks[row + P_FSLOT] = fs
            picks[row + P_FIDLE] = fi
            picks[row + P_FCNT] = fcn
            rs, ri, rc, fs, fi, fcn = -1, -1, NO_PICK_COUNT, -1, -1, NO_PICK_COUNT
        nv += 1
    ip[I_POOL_N] = pn
    ip[I_VICTIMS] = nv
    ip[I_EXPIRED] = ne
    return nv


@njit(cache=True)
def probation_run(lfu, victims, start, n, hashes, room, words_arr, words, tab, mask, vh, ah):
    """The common case of ``AdaptiveController.evicted_batch``, compiled: from victim
    ``start`` on, every victim on probation (``lfu`` PROBATION_COUNTER) while the block has
    ``room`` left and whose hash is in no duel goes into the ghost (tag 1, in order: the
    buckets are FIFOs; ``ProbationGhost.add``'s lane rule, compiled: change both or
    neither).  Returns the index of the first victim that needs Python (not on
    probation, the block full, or a duel's key: its 32-bit hash is in the duel index
    ``tab`` / ``vh`` / ``ah``, probed as ``AdaptiveController._find`` does), or ``n``.
    Complexity: O(victims) plus the index's probes (load <= 1/2)."""
    sixteen = np.uint64(16)
    t = np.uint64(1 << 15)
    i = start
    while i < n:
        if lfu[victims[i]] != PROBATION_COUNTER or room <= 0:
            return i
        h = hashes[i]
        h32 = h & 0xFFFFFFFF
        c = h32 & mask
        cell = tab[c]
        while cell:
            code = cell - 1
            if (ah[code >> 1] if code & 1 else vh[code >> 1]) == h32:
                return i
            c = (c + 1) & mask
            cell = tab[c]
        w = (h32 * words) >> 32
        fp = (h >> 32) & 0x7FFF
        if fp == 0:
            fp = 1
        words_arr[w] = (words_arr[w] << sixteen) | np.uint64(fp) | t
        room -= 1
        i += 1
    return n


def warm() -> None:
    """Compile (or load from numba's cache) the kernel for the argument types the Evictor
    passes, so that the first eviction does not pay for it.  Complexity: O(1) after the
    first call in a process (numba's cache makes later processes fast too)."""
    from array import array
    ip = array("q", [0] * N_IPARAMS)
    ip[I_SAMPLES] = 1
    one = array("q", [0])
    pick_victims(MODE_LRU, ip, array("d", [0.0] * N_FPARAMS), array("q", [-1]),
                 array("B", [0]), array("q", [0]), array("q"), array("d", [0.0]), array("q", [0]),
                 array("q", [0]), array("Q", [1]), one, array("q", [0]), array("q", [0]),
                 array("q", [0]), array("q", [0] * N_PICK_COLS))
    probation_run(array("B", [0]), array("q", [0]), 0, 1, array("q", [0]), 1,
                  array("Q", [0]), 1, array("H", [0]), 0, array("I", [0]), array("I", [0]))
