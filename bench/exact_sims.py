"""Exact LRU and Belady OPT on a read-through GET stream (numba): the references the trace
report (``trace_quality.py``) checks libCacheSim's LRU and OPT against, and the research
simulator's baselines (``research/evsim_ahe/sim.py`` imports them from here).

Cache model (the simulator's): capacity C keys of equal size; request i happens at
t = i / R s; a miss inserts the key (evicting one first when full); a key whose TTL has
passed is a miss.  Both return (hits, hits per BUCKET requests).

Complexity: sim_lru_exact O(1) per request (a doubly linked list over key ids);
next_use O(n); sim_opt O(log C) per request (a max-heap on next use).
"""
import numpy as np
from numba import njit

BUCKET = 5000  # requests per bucket in the returned hit series


@njit(cache=True)
def sim_lru_exact(keys, ttl_of, nkeys, C, R):
    n = keys.shape[0]
    prv = np.full(nkeys, -1, np.int32)
    nxt = np.full(nkeys, -1, np.int32)
    inc = np.zeros(nkeys, np.uint8)
    expat = np.full(nkeys, np.inf)
    head = -1  # MRU
    tail = -1  # LRU
    size = 0
    nb = (n + BUCKET - 1) // BUCKET
    hb = np.zeros(nb, np.int64)
    hits = 0
    for i in range(n):
        t = i / R
        k = keys[i]
        hit = False
        if inc[k]:
            # unlink
            p = prv[k]
            q = nxt[k]
            if p != -1:
                nxt[p] = q
            else:
                head = q
            if q != -1:
                prv[q] = p
            else:
                tail = p
            if expat[k] <= t:
                inc[k] = 0
                size -= 1
            else:
                hit = True
        if hit:
            hits += 1
            hb[i // BUCKET] += 1
        else:
            if size >= C:
                v = tail
                p = prv[v]
                if p != -1:
                    nxt[p] = -1
                else:
                    head = -1
                tail = p
                inc[v] = 0
                size -= 1
            inc[k] = 1
            size += 1
            expat[k] = t + ttl_of[k] if ttl_of[k] > 0.0 else np.inf
        # link at head
        prv[k] = -1
        nxt[k] = head
        if head != -1:
            prv[head] = k
        head = k
        if tail == -1:
            tail = k
    return hits, hb


@njit(cache=True)
def next_use(keys, nkeys):
    n = keys.shape[0]
    nx = np.empty(n, np.int64)
    seen = np.full(nkeys, n, np.int64)
    for i in range(n - 1, -1, -1):
        k = keys[i]
        nx[i] = seen[k]
        seen[k] = i
    return nx


@njit(cache=True)
def _sift_up(hk, hp, pos, j):
    while j > 0:
        p = (j - 1) >> 1
        if hp[p] >= hp[j]:
            break
        hk[p], hk[j] = hk[j], hk[p]
        hp[p], hp[j] = hp[j], hp[p]
        pos[hk[p]] = p
        pos[hk[j]] = j
        j = p


@njit(cache=True)
def _sift_down(hk, hp, pos, j, size):
    while True:
        l = 2 * j + 1
        if l >= size:
            break
        m = l
        r = l + 1
        if r < size and hp[r] > hp[l]:
            m = r
        if hp[m] <= hp[j]:
            break
        hk[m], hk[j] = hk[j], hk[m]
        hp[m], hp[j] = hp[j], hp[m]
        pos[hk[m]] = m
        pos[hk[j]] = j
        j = m


@njit(cache=True)
def sim_opt(keys, nx, ttl_of, nkeys, C, R):
    """Belady MIN without bypass (every miss is inserted; the victim is the
    cached key whose next use is furthest). With TTLs, a next use that falls
    after the key's expiry counts as 'never' (it would miss anyway)."""
    n = keys.shape[0]
    INF = np.int64(n) + 1
    hk = np.empty(C, np.int32)
    hp = np.empty(C, np.int64)
    pos = np.full(nkeys, -1, np.int32)
    expat = np.full(nkeys, np.inf)
    size = 0
    nb = (n + BUCKET - 1) // BUCKET
    hb = np.zeros(nb, np.int64)
    hits = 0
    for i in range(n):
        t = i / R
        k = keys[i]
        j = pos[k]
        if j >= 0 and expat[k] <= t:
            # expired: remove from heap
            size -= 1
            if j != size:
                mk = hk[size]
                hk[j] = mk
                hp[j] = hp[size]
                pos[mk] = j
                _sift_up(hk, hp, pos, j)
                _sift_down(hk, hp, pos, pos[mk], size)
            pos[k] = -1
            j = -1
        if j < 0:
            if size >= C:
                v = hk[0]
                pos[v] = -1
                size -= 1
                if size > 0:
                    hk[0] = hk[size]
                    hp[0] = hp[size]
                    pos[hk[0]] = 0
                    _sift_down(hk, hp, pos, 0, size)
            expat[k] = t + ttl_of[k] if ttl_of[k] > 0.0 else np.inf
            pri = nx[i]
            if pri >= n or pri / R >= expat[k]:
                pri = INF
            hk[size] = k
            hp[size] = pri
            pos[k] = size
            size += 1
            _sift_up(hk, hp, pos, size - 1)
        else:
            hits += 1
            hb[i // BUCKET] += 1
            pri = nx[i]
            if pri >= n or pri / R >= expat[k]:
                pri = INF
            hp[j] = pri
            _sift_up(hk, hp, pos, j)
            _sift_down(hk, hp, pos, pos[k], size)
    return hits, hb
