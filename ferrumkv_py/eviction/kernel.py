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

Scores (higher = evicted first): the functions of ``scores.py``, compiled here (inlined)
from the same source the Python sampler runs; the mode says which, ``fp`` holds the score's
parameters (``scores.EpsParams`` / ``AdaptParams``)::

    MODE_LRU    lru_score           MODE_TTL    ttl_score
    MODE_LFU    lfu_score           (the counter decayed by ``ip[I_DECAY]`` minutes)
    MODE_EPS    eps_score           (its counter decayed likewise)
    MODE_ADAPT  adaptive_score, and per victim recency's and frequency's picks among the
                candidates scored since the previous victim (``picks``, kernel_abi's P_*
                columns), for the adaptive controller's duel

numba's cache watches this file only, so a cached kernel would not see an edit to a score
or to a constant it froze from another module.  ``SOURCE_STAMP`` hashes what the kernels
take from elsewhere: scores.py whole, the source of ``lfu.decayed``, and every upper-case
number of the modules they read (``FROZEN_MODULES``), so an edit elsewhere in those modules
costs no recompilation; ``_built_stamp`` returns the stamp the cached code was compiled
with, and a mismatch at import flushes the kernels' caches (they then compile afresh, once).

A slot chosen (victim or expired) is marked taken in ``lru`` as ``-2 - lru`` until Python
unlinks it, so one call never returns a slot twice; ``stamps`` gives Python the original
access time back.  Random draws come from a xorshift64* generator whose state lives in
``rng[0]`` (seeded from the keyspace's ``random.Random``, so a seeded run is repeatable).

Complexity: O(victims * samples) expected per call, O(EVPOOL_SIZE) per pool insertion.
"""

from __future__ import annotations

import hashlib
import inspect
from array import array

import numpy as np
from numba import njit

from . import kernel_abi, lfu, probation, scores
from .. import slots, values
from ..slots import SAMPLE_MAX_TRIES
from .kernel_abi import (EVICT_MAX_EMPTY_ROUNDS, I_DECAY, I_EXPIRED, I_LIVE, I_NOW, I_POOL_N,
                         I_SAMPLES, I_VICTIMS, I_VOL, I_WANT, MODE_ADAPT, MODE_EPS, MODE_LFU,
                         MODE_LRU, MODE_TTL, N_FPARAMS, N_IPARAMS, N_PICK_COLS, NO_PICK_COUNT,
                         P_FCNT, P_FIDLE, P_FSLOT, P_RCNT, P_RIDLE, P_RSLOT)
from .lfu import MS_PER_MINUTE
from .probation import PROBATION_COUNTER

# the modules whose functions or constants the kernels freeze at compile time
FROZEN_MODULES = (kernel_abi, lfu, probation, scores, slots, values)


def _source_stamp() -> int:
    """A 62-bit hash of what the kernels freeze from other modules (see the module
    docstring).  Complexity: O(scores.py's size + the modules' names)."""
    h = hashlib.sha256()
    with open(scores.__file__, "rb") as f:
        h.update(f.read())
    h.update(inspect.getsource(lfu.decayed).encode())
    for mod in FROZEN_MODULES:
        for name, value in sorted(vars(mod).items()):
            if name.isupper() and isinstance(value, (int, float)):
                h.update(("%s.%s=%r;" % (mod.__name__, name, value)).encode())
    return int.from_bytes(h.digest()[:8], "little") >> 2


SOURCE_STAMP = _source_stamp()

# the scores, compiled from scores.py's source (inlined into pick_victims)
_inline = njit(inline="always")
_lru_score = _inline(scores.lru_score)
_ttl_score = _inline(scores.ttl_score)
_lfu_score = _inline(scores.lfu_score)
_decayed = _inline(lfu.decayed)
_eps_params_of = _inline(scores.eps_params_of)
_eps_score = _inline(scores.eps_score)
_adapt_params_of = _inline(scores.adapt_params_of)
_adaptive_score = _inline(scores.adaptive_score)
_recency_pick = _inline(scores.recency_pick)
_frequency_pick = _inline(scores.frequency_pick)

_XS_MUL = np.uint64(0x2545F4914F6CDD1D)
_SH12, _SH25, _SH27, _SH32 = np.uint64(12), np.uint64(25), np.uint64(27), np.uint64(32)


@njit(cache=True)
def _built_stamp():
    """SOURCE_STAMP as it was when the cached kernels were compiled."""
    return SOURCE_STAMP


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
    pn = ip[I_POOL_N]
    cap = len(pool_score)
    size = len(vslots) if vol else len(lru)
    now_min = now // MS_PER_MINUTE
    eps = _eps_params_of(fp)
    adapt = _adapt_params_of(fp)
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
                    score = np.float64(_lru_score(last))
                elif mode == MODE_TTL:
                    score = np.float64(_ttl_score(x))
                elif mode == MODE_LFU:
                    score = np.float64(_lfu_score(_decayed(np.int64(lfu[s]), last, now_min,
                                                           decay)))
                elif mode == MODE_EPS:
                    c = _decayed(np.int64(lfu[s]), last, now_min, decay)
                    score = _eps_score(eps, now - last, c, x, now)
                else:                           # MODE_ADAPT, and the duel's picks
                    idle = now - last
                    score, c = _adaptive_score(adapt, idle, np.int64(lfu[s]), x, now)
                    if _recency_pick(idle, c, ri, rc):
                        rs, ri, rc = s, idle, c
                    if _frequency_pick(idle, c, fi, fcn):
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
    ip = array("q", [0] * N_IPARAMS)
    ip[I_SAMPLES] = 1
    one = array("q", [0])
    pick_victims(MODE_LRU, ip, array("d", [0.0] * N_FPARAMS), array("q", [-1]),
                 array("B", [0]), array("q", [0]), array("q"), array("d", [0.0]), array("q", [0]),
                 array("q", [0]), array("Q", [1]), one, array("q", [0]), array("q", [0]),
                 array("q", [0]), array("q", [0] * N_PICK_COLS))
    probation_run(array("B", [0]), array("q", [0]), 0, 1, array("q", [0]), 1,
                  array("Q", [0]), 1, array("H", [0]), 0, array("I", [0]), array("I", [0]))


def _flush_if_stale() -> None:
    """Flush the kernels' numba caches when they were compiled from other sources than
    these (see the module docstring); under NUMBA_DISABLE_JIT there is nothing to flush.
    Complexity: O(1), plus one compilation of each kernel after a flush."""
    if _built_stamp() == SOURCE_STAMP:
        return
    for kernel in (_built_stamp, pick_victims, probation_run):
        cache = getattr(kernel, "_cache", None)        # numba's Dispatcher cache
        if cache is not None:
            cache.flush()
            kernel.recompile()                         # drops the overloads loaded stale


_flush_if_stale()
