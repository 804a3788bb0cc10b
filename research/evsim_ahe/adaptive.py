"""AHE-adaptive: a numba kernel that mirrors the server's evictor + controller split.

Per eviction the evictor samples `samples` keys, asks the controller for their scores,
inserts them into the 16-entry Redis pool (stale scores, as Redis), takes the best live
entry, and tells the controller which key it evicted. The controller sees only what the
server's controller sees: the sampled entries (last access ms, Morris counter, TTL), the
victim, and read misses (`on_miss`).

Score (higher = evict first), on scales that do not depend on the request rate:
    R   = idle_ms / H            hmode 1 (AHE-adaptive): H = cached keys x EWMA(ms per
                                 eviction), the turnover; hmode 0: H = EWMA of the sampled
                                 keys' idle time (tried first: it feeds back on the policy)
    F   = W * (255 - counter)    counter points; no wall-clock decay (decay 0)
    pen = urgency of the TTL     remaining TTL measured in H, see _parts / _blend
    score = alpha * R + (1 - alpha) * F + pen

Controller (ctrl):
  0 fixed alpha
  1 neighbour duel: at each eviction the controller asks which key the blend at a
    neighbouring alpha' = sigmoid(logit(alpha) +- delta) would have evicted among the
    same candidates. If it differs from the real victim v, a duel (v evicted, a kept)
    starts. The first of the two to be referenced again decides: v first -> alpha'
    would have been better (move logit toward it by eta); a first -> the real choice
    was better (move away). Neither before the ring slot is reused (G duels later)
    -> no information.
  2 extremes duel: the same duel between recency's pick and frequency's pick.
Ghost memory: at most G duels, each with the victim's key in a ghost table.
ctrl 2 with hmode 1, W 4, eta 0.06, G = C/20 is what ferrumkv_py/eviction/ahe_adaptive.py
implements (run.py's "AHE-adaptive").
Probation and its ghost (issue 20): research/probation/README.md.  TinyLFU's frequency
sketch (issue 20, round 3; ``params(sk=1, ...)``, off by default, measured and not kept:
research/probation/sketch_study.py, docs/ahe-adaptive.md section 12): a count-min sketch of
4-bit counters; Complexity: O(SK_DEPTH) per request and per scored key, O(skw x C) per
halving, one every skwin x C requests (amortised O(skw / skwin) per request).
"""
import math

import numpy as np
from numba import njit

from sim import BUCKET, EVPOOL, _decayed, _pool_insert  # (sim puts the repo on sys.path)
from ferrumkv_py.eviction import scores as _server  # noqa: E402  the server's score home
from ferrumkv_py.eviction.scores import PROBATION_FIRST  # noqa: E402

# the duel's two picks, as the server decides them (compiled here from its source)
_recency_pick = njit(inline="always")(_server.recency_pick)
_frequency_pick = njit(inline="always")(_server.frequency_pick)

# parameter vector layout
(P_SAMPLES, P_POOLMODE, P_THETA0, P_TMIN, P_TMAX, P_W, P_RECMODE, P_HBETA, P_DECAY,
 P_TTLP, P_TTLT, P_CTRL, P_DELTA, P_ETA, P_G, P_DIRMODE, P_HMODE, P_TRACE, P_PROB, P_PGHOST,
 P_GBOOST, P_GALL, P_RESTORE, P_GBUCKET, P_PADAPT, P_NODUEL, P_PRHO, P_PRLO, P_PRKEEP,
 P_SK, P_SKW, P_SKWIN, P_SKT, P_SKB, P_SKBP, P_SKCU, P_SKMISS, P_SKS, P_SKDUEL, P_SKGH,
 P_SKSRC, P_SKGATE, P_SKGB, P_SKGMAX, P_NOALT, P_PDROP, P_NP) = range(47)

CT_FIXED, CT_NEIGH, CT_EXTREME = 0, 1, 2
RHO_MIN_BACK = 16.0         # (prho) returns of each kind a decision needs
RHO_WARMUP = 8              # (prho) decisions (turnovers) before the first move
SK_DEPTH = 4                # (sk) count-min rows (one counter per row per key)
SK_MAX = 15                 # (sk) 4-bit counters saturate here


def logit(a):
    return math.log(a / (1.0 - a))


def params(samples=5, poolmode=1, alpha0=0.5, amin=0.05, amax=0.95, W=1.0, recmode=0,
           hbeta=1.0 / 64, decay=0, ttlP=1.0, ttlT=1.0, ctrl=CT_NEIGH, delta=1.0,
           eta=0.02, G=2048, dirmode=0, hmode=0, trace=0, prob=-1.0, pghost=0.0, gboost=0,
           gall=0, restore=0, gbucket=0, padapt=0.0, noduel=0, prho=0.0, prlo=-1.0, prkeep=0.5,
           sk=0, skw=16.0, skwin=10.0, skt=2, skb=0, skbp=0.0, skcu=0, skmiss=0, sks=0.0,
           skduel=0, skgh=1, sksrc=0, skgate=0, skgb=0.0, skgmax=3, noalt=0, pdrop=0):
    """``prob`` >= 0: probation (research/probation/README.md) -- a key not hit since its
    insertion and idle for more than ``prob`` turnovers is evicted first; ``pghost``: the
    ghost of keys evicted on probation holds ``pghost * C`` ids (re-inserted while there, a
    key skips probation); ``pghost`` < 0: the ghost is two rotating generations of
    ``-pghost * C`` ids each (what a pair of Bloom filters keeps, without false positives).  prob < 0: off (the server's AHE-adaptive)."""
    p = np.zeros(P_NP, np.float64)
    p[P_SAMPLES] = samples
    p[P_POOLMODE] = poolmode
    p[P_THETA0] = logit(alpha0)
    p[P_TMIN] = logit(amin)
    p[P_TMAX] = logit(amax)
    p[P_W] = W
    p[P_RECMODE] = recmode
    p[P_HBETA] = hbeta
    p[P_DECAY] = decay
    p[P_TTLP] = ttlP
    p[P_TTLT] = ttlT
    p[P_CTRL] = ctrl
    p[P_DELTA] = delta
    p[P_ETA] = eta
    p[P_G] = G
    p[P_DIRMODE] = dirmode
    p[P_HMODE] = hmode
    p[P_TRACE] = trace     # > 0: stats[10:] = alpha every `trace` requests
    p[P_PROB] = prob
    p[P_PGHOST] = pghost
    p[P_GBOOST] = gboost     # a key found in the ghost starts at 5 + gboost
    p[P_GALL] = gall         # 1: every victim enters the ghost (not only probationary ones)
    p[P_RESTORE] = restore   # 1: a key found in the ghost gets back its counter at eviction
    p[P_GBUCKET] = gbucket   # 1: (pghost < 0) the ghost is -pghost*C lanes in buckets of 4,
    #                          each bucket a FIFO (the server's fingerprint ghost, exact ids)
    p[P_PADAPT] = padapt     # > 0: the idle threshold moves in log space by this step: up
    #                          when a probation victim returns, down when a blend victim does
    p[P_NODUEL] = noduel     # 1: a probation victim starts no duel (the server's rule)
    p[P_PDROP] = pdrop       # 1: a pool entry whose key was touched since it was scored is
    #                          dropped when popped (the server's kernel); 0: evicted (Redis)
    p[P_NOALT] = noalt       # 1: nor does a duel whose kept pick is on probation, while
    #                          probation-first is on (the server's rule since round 4)
    #                          (2: only while probation-first is on, see prho)
 
    p[P_PRKEEP] = prkeep     # share of the counts kept at each decision
    p[P_PRLO] = prho if prlo < 0 else prlo   # ... and on again below prlo (hysteresis)
    # TinyLFU's frequency sketch (issue 20, research/probation/sketch_study.py), off by
    # default: a count-min sketch of SK_DEPTH rows of 4-bit counters, skw x C counters in
    # all (skw / 2 bytes per key), every counter halved after skwin x C increments.
    p[P_SK] = sk             # 1: the sketch is kept and used as below; 0: off
    p[P_SKW] = skw           # counters per cache key (all rows together)
    p[P_SKWIN] = skwin       # reset window, in C increments
    p[P_SKT] = skt           # a new key whose estimate (this access included) is >= skt
    #                          starts off probation at 5 + skb + skbp x (estimate - skt)
    p[P_SKB] = skb           # (skt < 0: seeding off)
    p[P_SKBP] = skbp
    p[P_SKCU] = skcu         # 1: conservative update (only the minimal counters grow)
    p[P_SKMISS] = skmiss     # 1: only misses (inserts) increment, not hits
    p[P_SKS] = sks           # > 0: the blend reads counter + sks x estimate (score term)
    p[P_SKDUEL] = skduel     # 1: TinyLFU's duel: a probation-first victim whose estimate
    #                          exceeds the pool's best blend candidate's stays, that one goes
    p[P_SKSRC] = sksrc       # (sks) 0: counter + sks x estimate; 1: 5 + sks x estimate
    #                          (the sketch replaces the Morris counter: aged frequency);
    #                          2: min(counter, 5 + sks x estimate) (the counter, aged);
    #                          3/4/5: as 0/1/2 in the duel's frequency pick too
    p[P_SKGATE] = skgate     # > 0: a key found in the ghost skips probation (and gets the
    #                          return boost) only if its estimate is >= skgate
    p[P_SKGB] = skgb         # > 0: a key back from the ghost starts at 5 + gboost +
    p[P_SKGMAX] = skgmax     # min(skgmax, skgb x (estimate - 2)): the boost by frequency
    p[P_SKGH] = skgh         # 0: the ghost's lookup is ignored at insertion (sketch only)
    p[P_PRHO] = prho         # > 0: probation-first is switched off while the return rate of
    #                          probation victims exceeds prho x that of blend victims (rates
    #                          per eviction of each kind, counts halved every C evictions)
    return p


@njit(cache=True, inline="always")
def _sig(x):
    return 1.0 / (1.0 + math.exp(-x))


@njit(cache=True)
def _parts(k, now, now_min, last, cnt, ldt, expat, H, recmode, decay, ttlT):
    """(R, counter, urgency) of cached key k at time now (ms)."""
    idle = now - last[k]
    if idle < 0.0:
        idle = 0.0
    r = idle / H
    if recmode == 1:
        r = math.log2(1.0 + r)
    if decay == 0:
        c = cnt[k]
    else:
        c = _decayed(cnt[k], ldt[k], now_min)
    u = 0.0
    left = expat[k] - now
    if left <= 0.0:
        u = 1.0e6
    elif left < ttlT * H:
        u = 1.0 - left / (ttlT * H)
    return r, c, u


@njit(cache=True)
def _sk_index(nkeys, width):
    """Each key's counter in each of the SK_DEPTH rows of ``width`` counters (a 32-bit
    integer mix per row: the simulator's ids are dense, the server would hash the key)."""
    idx = np.empty((max(nkeys, 1), SK_DEPTH), np.int64)
    for k in range(nkeys):
        for r in range(SK_DEPTH):
            h = ((k + 1) * 2654435761 + (r + 1) * 1640531527) & 0xFFFFFFFF
            h ^= h >> 16
            h = (h * 0x45D9F3B) & 0xFFFFFFFF
            h ^= h >> 16
            h = (h * 0x45D9F3B) & 0xFFFFFFFF
            h ^= h >> 16
            idx[k, r] = r * width + h % width
    return idx


@njit(cache=True, inline="always")
def _sk_est(tab, idx, k):
    """Count-min estimate of key k: the least of its SK_DEPTH counters."""
    m = SK_MAX
    for r in range(SK_DEPTH):
        v = tab[idx[k, r]]
        if v < m:
            m = v
    return m


@njit(cache=True, inline="always")
def _sk_add(tab, idx, k, cu):
    """One increment of key k (cu: conservative update, only the least counters grow)."""
    m = _sk_est(tab, idx, k) if cu == 1 else 0
    for r in range(SK_DEPTH):
        j = idx[k, r]
        if tab[j] < SK_MAX and (cu == 0 or tab[j] == m):
            tab[j] += 1


@njit(cache=True, inline="always")
def _sk_freq(c, e, sks, src):
    """The counter the blend reads with the sketch's estimate e (P_SKSRC)."""
    if src == 0:
        return c + sks * e
    f = 5.0 + sks * e
    if src == 1 or f < c:
        return f
    return c


@njit(cache=True, inline="always")
def _blend(a, r, c, u, W, ttlP):
    return a * r + (1.0 - a) * W * (255.0 - c) + ttlP * u * (a + (1.0 - a) * W)


@njit(cache=True)
def sim_adaptive(keys, ttl_of, nkeys, C, R, p, seed):
    """Returns (hits, evictions, hit_per_bucket, alpha_per_bucket, stats).

    stats = [duels, right, wrong, noinfo, mean H (in requests), updates, blend victims,
    probation victims, blend victims back from the ghost, probation victims back] + (with
    p[P_TRACE] > 0)
    alpha after every P_TRACE requests"""
    np.random.seed(seed)
    samples = int(p[P_SAMPLES])
    poolmode = int(p[P_POOLMODE])
    theta = p[P_THETA0]
    tmin = p[P_TMIN]
    tmax = p[P_TMAX]
    W = p[P_W]
    recmode = int(p[P_RECMODE])
    hbeta = p[P_HBETA]
    decay = int(p[P_DECAY])
    ttlP = p[P_TTLP]
    ttlT = p[P_TTLT]
    ctrl = int(p[P_CTRL])
    delta = p[P_DELTA]
    eta = p[P_ETA]
    G = int(p[P_G])
    dirmode = int(p[P_DIRMODE])
    hmode = int(p[P_HMODE])
    p_prob = p[P_PROB]
    ng = int(abs(p[P_PGHOST]) * C)
    grot = p[P_PGHOST] < 0.0      # two rotating generations of ng each (a Bloom-pair ghost)
    gboost = int(p[P_GBOOST])
    gall = int(p[P_GALL])
    restore = int(p[P_RESTORE])
    evcnt = np.zeros(nkeys, np.int32)
    gbucket = int(p[P_GBUCKET])
    padapt = p[P_PADAPT]
    noduel = int(p[P_NODUEL])
    noalt = int(p[P_NOALT])
    pdrop = int(p[P_PDROP])
    sk = int(p[P_SK])
    skwidth = max(int(p[P_SKW] * C) // SK_DEPTH, 1) if sk else 1
    sktab = np.zeros(SK_DEPTH * skwidth, np.int32)
    skidx = _sk_index(nkeys if sk else 0, skwidth)
    skwin = max(int(p[P_SKWIN] * C), 1)
    skadds = 0
    skt = int(p[P_SKT])
    skb = int(p[P_SKB])
    skbp = p[P_SKBP]
    skcu = int(p[P_SKCU])
    skmiss = int(p[P_SKMISS])
    sks = p[P_SKS] if sk else 0.0
    skduel = int(p[P_SKDUEL]) if sk else 0
    skgh = int(p[P_SKGH])
    skgate = int(p[P_SKGATE])
    skgb = p[P_SKGB] if sk else 0.0
    skgmax = int(p[P_SKGMAX])
    sksrc = int(p[P_SKSRC]) % 3
    skdpick = int(p[P_SKSRC]) >= 3 and sks > 0.0
    nbk = max(ng // 4, 1)
    gbk = np.full((nbk, 4), -1, np.int64)
    evtag = np.zeros(nkeys, np.int8)
    lp = math.log(p_prob) if p_prob > 0.0 else 0.0
    lpmin = math.log(0.02)
    lpmax = math.log(2.0)
    prho = p[P_PRHO]
    prlo = p[P_PRLO]
    prkeep = p[P_PRKEEP]
    p_on = p_prob
    rc = np.zeros(4, np.float64)     # blend victims, probation victims, their returns
    rc_n = 0
    p_off_n = 0
    ndec = 0
    gen_of = np.full(nkeys, -2, np.int64)
    gen = 0
    gen_n = 0
    prob = np.zeros(nkeys, np.uint8)
    gring = np.full(max(ng, 1), -1, np.int64)
    in_g = np.zeros(nkeys, np.int32)
    gpos = 0
    blk_t = 0.0
    blk_n = 0
    ms_per_ev = -1.0
    n = keys.shape[0]
    slot_of = np.full(nkeys, -1, np.int32)
    pooled_at = np.zeros(nkeys, np.float64)     # (pdrop) when the key was last scored
    slots = np.empty(C, np.int32)
    last = np.zeros(nkeys, np.float64)
    cnt = np.zeros(nkeys, np.int32)
    ldt = np.zeros(nkeys, np.int32)
    expat = np.full(nkeys, np.inf)
    ncached = 0
    pk = np.full(EVPOOL, -1, np.int32)
    ps = np.zeros(EVPOOL, np.float64)
    tk = np.empty(EVPOOL, np.int32)
    tsc = np.empty(EVPOOL, np.float64)
    batch = np.empty(samples + 1, np.int32)
    nb = (n + BUCKET - 1) // BUCKET
    hb = np.zeros(nb, np.int64)
    ab = np.zeros(nb, np.float64)
    # duels
    watch_slot = np.full(nkeys, -1, np.int32)
    watch_side = np.zeros(nkeys, np.int8)
    d_v = np.full(max(G, 1), -1, np.int32)
    d_a = np.full(max(G, 1), -1, np.int32)
    d_alru = np.zeros(max(G, 1), np.float64)
    d_dir = np.zeros(max(G, 1), np.float64)
    d_aghost = np.zeros(max(G, 1), np.int8)
    cursor = 0
    trace = int(p[P_TRACE])
    st = np.zeros(10 + (n // trace if trace > 0 else 0), np.float64)
    H = -1.0
    Hsum = 0.0
    Hn = 0
    evictions = 0
    hits = 0
    flip = 1.0
    alpha = _sig(theta)
    for i in range(n):
        now = float((i * 1000) // int(R))  # integer ms clock, like the server
        now_min = int(now // 60000.0)
        k = keys[i]
        s = slot_of[k]
        if s >= 0 and expat[k] <= now:
            lastk = slots[ncached - 1]
            slots[s] = lastk
            slot_of[lastk] = s
            slot_of[k] = -1
            ncached -= 1
            s = -1
        if sk == 1 and (skmiss == 0 or s < 0):
            _sk_add(sktab, skidx, k, skcu)
            skadds += 1
            if skadds >= skwin:
                for q in range(sktab.shape[0]):
                    sktab[q] >>= 1
                skadds //= 2
        if s >= 0:
            hb[i // BUCKET] += 1
            hits += 1
            c = _decayed(cnt[k], ldt[k], now_min) if decay == 1 else cnt[k]
            if c < 255:
                base = c - 5
                if base < 0:
                    base = 0
                if np.random.random() < 1.0 / (base * 10.0 + 1.0):
                    c += 1
            cnt[k] = c
            ldt[k] = now_min
            last[k] = now
            prob[k] = 0
        else:
            # ---- on_miss: ghost check
            ws = watch_slot[k]
            if ws >= 0:
                if watch_side[k] == 0:
                    a = d_a[ws]
                    a_first = d_aghost[ws] == 0 and last[a] > d_alru[ws]
                else:
                    a = k
                    a_first = True
                dd = d_dir[ws]
                if a_first:
                    theta -= eta * dd
                    st[1] += 1
                else:
                    theta += eta * dd
                    st[2] += 1
                if theta < tmin:
                    theta = tmin
                if theta > tmax:
                    theta = tmax
                alpha = _sig(theta)
                st[5] += 1
                watch_slot[d_v[ws]] = -1
                watch_slot[d_a[ws]] = -1
                d_v[ws] = -1
            if ncached >= C:
                victim = -1
                nbt = 0
                while victim < 0:
                    # ---- scores(samples)
                    if poolmode == 2:
                        m = 0
                        for j in range(EVPOOL):
                            kk = pk[j]
                            if kk != -1 and slot_of[kk] >= 0:
                                r, c, u = _parts(kk, now, now_min, last, cnt, ldt, expat, H if H > 0 else 1.0, recmode, decay, ttlT)
                                if sks > 0.0:
                                    c = _sk_freq(c, _sk_est(sktab, skidx, kk), sks, sksrc)
                                sc = _blend(alpha, r, c, u, W, ttlP)
                                if p_prob >= 0.0 and prob[kk] == 1 and r > p_prob:
                                    sc += PROBATION_FIRST + r
                                q = m
                                while q > 0 and tsc[q - 1] > sc:
                                    tsc[q] = tsc[q - 1]
                                    tk[q] = tk[q - 1]
                                    q -= 1
                                tsc[q] = sc
                                tk[q] = kk
                                m += 1
                        for j in range(EVPOOL):
                            if j < m:
                                pk[j] = tk[j]
                                ps[j] = tsc[j]
                            else:
                                pk[j] = -1
                                ps[j] = 0.0
                    isum = 0.0
                    nbt = 0
                    for j in range(samples):
                        kk = slots[np.random.randint(ncached)]
                        isum += now - last[kk]
                        batch[nbt] = kk
                        nbt += 1
                    mi = isum / samples
                    if hmode == 1:
                        # turnover time: cached keys x EWMA(ms per eviction)
                        if ms_per_ev > 0.0:
                            H = ncached * ms_per_ev
                            if H < 1e-3:
                                H = 1e-3
                        elif H < 0.0:
                            H = mi if mi > 0.0 else 1.0
                    elif H < 0.0:
                        H = mi if mi > 0.0 else 1.0
                    else:
                        H += hbeta * (mi - H)
                        if H < 1e-3:
                            H = 1e-3
                    for j in range(nbt):
                        kk = batch[j]
                        r, c, u = _parts(kk, now, now_min, last, cnt, ldt, expat, H, recmode, decay, ttlT)
                        if sks > 0.0:
                            c = _sk_freq(c, _sk_est(sktab, skidx, kk), sks, sksrc)
                        sc = _blend(alpha, r, c, u, W, ttlP)
                        if p_prob >= 0.0 and prob[kk] == 1 and r > p_prob:
                            sc += PROBATION_FIRST + r
                        _pool_insert(pk, ps, kk, sc)
                        pooled_at[kk] = now
                    for j in range(EVPOOL - 1, -1, -1):
                        if pk[j] == -1:
                            continue
                        kk = pk[j]
                        vs = ps[j]
                        pk[j] = -1
                        ps[j] = 0.0
                        if slot_of[kk] >= 0 and not (pdrop == 1 and last[kk] > pooled_at[kk]):
                            victim = kk
                            if skduel == 1 and vs >= PROBATION_FIRST:
                                # TinyLFU's admission duel: the pool's best blend candidate
                                # against probation's pick, by sketch estimate
                                for j2 in range(j - 1, -1, -1):
                                    b = pk[j2]
                                    if b == -1 or slot_of[b] < 0 or ps[j2] >= PROBATION_FIRST:
                                        continue
                                    if _sk_est(sktab, skidx, kk) > _sk_est(sktab, skidx, b):
                                        for q in range(j2, EVPOOL - 1):
                                            pk[q] = pk[q + 1]
                                            ps[q] = ps[q + 1]
                                        pk[EVPOOL - 1] = -1
                                        ps[EVPOOL - 1] = 0.0
                                        prob[kk] = 0        # admitted: off probation
                                        victim = b
                                    break
                            break
                Hsum += H
                Hn += 1
                if evictions == 0:
                    blk_t = now
                blk_n += 1
                if blk_n == 1024:
                    m1 = (now - blk_t) / 1024.0
                    if ms_per_ev < 0.0:
                        ms_per_ev = m1
                    else:
                        ms_per_ev += 0.25 * (m1 - ms_per_ev)
                    blk_n = 0
                    blk_t = now
                # ---- on_evict(victim): the victim may be a kept key of a duel
                ws = watch_slot[victim]
                if ws >= 0 and watch_side[victim] == 1:
                    if last[victim] > d_alru[ws]:
                        theta -= eta * d_dir[ws]
                        if theta < tmin:
                            theta = tmin
                        if theta > tmax:
                            theta = tmax
                        alpha = _sig(theta)
                        st[1] += 1
                        st[5] += 1
                        watch_slot[d_v[ws]] = -1
                        watch_slot[victim] = -1
                        d_v[ws] = -1
                    else:
                        d_aghost[ws] = 1
                # ---- duel creation
                if ctrl != 0 and G > 0 and watch_slot[victim] < 0 and not (
                        noduel >= 1 and p_prob >= 0.0 and prob[victim] == 1
                        and (noduel == 1 or p_prob < 1e9)):
                    alt = -1
                    dd = 0.0
                    if ctrl == 1:
                        if dirmode == 0:
                            flip = -flip
                            dd = flip
                        else:
                            dd = 1.0 if np.random.random() < 0.5 else -1.0
                        a2 = _sig(theta + dd * delta)
                        r, c, u = _parts(victim, now, now_min, last, cnt, ldt, expat, H, recmode, decay, ttlT)
                        best = _blend(a2, r, c, u, W, ttlP)
                        for j in range(nbt):
                            kk = batch[j]
                            if kk == victim:
                                continue
                            r, c, u = _parts(kk, now, now_min, last, cnt, ldt, expat, H, recmode, decay, ttlT)
                            sc = _blend(a2, r, c, u, W, ttlP)
                            if sc > best:
                                best = sc
                                alt = kk
                    else:
                        # extremes: recency's and frequency's picks among batch + victim
                        # (recency in turnovers stands for idle ms: the same order)
                        rbest = -1.0
                        rcnt = 256.0
                        rk = -1
                        fbest = 256.0
                        fr = -1.0
                        fk = -1
                        for j in range(nbt + 1):
                            kk = victim if j == nbt else batch[j]
                            r, c, u = _parts(kk, now, now_min, last, cnt, ldt, expat, H, recmode, decay, ttlT)
                            if skdpick:
                                c = _sk_freq(c, _sk_est(sktab, skidx, kk), sks, sksrc)
                            if _recency_pick(r, c, rbest, rcnt):
                                rbest = r
                                rcnt = c
                                rk = kk
                            if _frequency_pick(r, c, fr, fbest):
                                fbest = c
                                fr = r
                                fk = kk
                        if rk != fk:
                            if victim == rk:
                                alt = fk
                                dd = -1.0
                            elif victim == fk:
                                alt = rk
                                dd = 1.0
                    if alt >= 0 and noalt == 1 and p_prob >= 0.0 and p_prob < 1e9 and \
                            prob[alt] == 1:
                        alt = -1                # the kept pick is probation's to evict
                    if alt >= 0 and watch_slot[alt] < 0:
                        # expire the duel in this ring slot
                        if d_v[cursor] >= 0:
                            a = d_a[cursor]
                            if d_aghost[cursor] == 0 and last[a] > d_alru[cursor]:
                                theta -= eta * d_dir[cursor]
                                if theta < tmin:
                                    theta = tmin
                                if theta > tmax:
                                    theta = tmax
                                alpha = _sig(theta)
                                st[1] += 1
                                st[5] += 1
                            else:
                                st[3] += 1
                            watch_slot[d_v[cursor]] = -1
                            watch_slot[a] = -1
                        d_v[cursor] = victim
                        d_a[cursor] = alt
                        d_alru[cursor] = last[alt]
                        d_dir[cursor] = dd
                        d_aghost[cursor] = 0
                        watch_slot[victim] = cursor
                        watch_side[victim] = 0
                        watch_slot[alt] = cursor
                        watch_side[alt] = 1
                        cursor += 1
                        if cursor >= G:
                            cursor = 0
                        st[0] += 1
                evtag[victim] = prob[victim]
                st[6 + prob[victim]] += 1       # 6: blend victims, 7: probation victims
                if prho > 0.0:
                    rc[prob[victim]] += 1.0
                    rc_n += 1
                    if rc_n >= C:
                        rc_n = 0
                        ndec += 1
                        if rc[0] > 0 and rc[1] > 0 and rc[2] >= RHO_MIN_BACK and \
                                rc[3] >= RHO_MIN_BACK and ndec > RHO_WARMUP:
                            rho = (rc[3] / rc[1]) / (rc[2] / rc[0])
                            if rho > prho:
                                p_prob = 1e18
                            elif rho < prlo:
                                p_prob = p_on
                        for q in range(4):
                            rc[q] *= prkeep
                if p_prob > 1e9:
                    p_off_n += 1
                if grot and ng > 0 and gbucket == 1 and (prob[victim] == 1 or gall == 1):
                    b = (victim * 2654435761) % nbk
                    gbk[b, 3] = gbk[b, 2]
                    gbk[b, 2] = gbk[b, 1]
                    gbk[b, 1] = gbk[b, 0]
                    gbk[b, 0] = victim
                elif grot and ng > 0 and (prob[victim] == 1 or gall == 1):
                    evcnt[victim] = cnt[victim]
                    gen_of[victim] = gen
                    gen_n += 1
                    if gen_n >= ng:
                        gen += 1
                        gen_n = 0
                elif ng > 0 and prob[victim] == 1:
                    old = gring[gpos]
                    if old >= 0:
                        in_g[old] -= 1
                    gring[gpos] = victim
                    in_g[victim] += 1
                    gpos += 1
                    if gpos >= ng:
                        gpos = 0
                sv = slot_of[victim]
                lastk = slots[ncached - 1]
                slots[sv] = lastk
                slot_of[lastk] = sv
                slot_of[victim] = -1
                ncached -= 1
                evictions += 1
            slots[ncached] = k
            slot_of[k] = ncached
            ncached += 1
            cnt[k] = 5
            ldt[k] = now_min
            last[k] = now
            if grot:
                if gbucket == 1:
                    b = (k * 2654435761) % nbk
                    ing = ng > 0 and (gbk[b, 0] == k or gbk[b, 1] == k or gbk[b, 2] == k
                                      or gbk[b, 3] == k)
                else:
                    ing = ng > 0 and gen_of[k] >= gen - 1
                if ing:
                    st[8 + evtag[k]] += 1       # 8: blend victims back, 9: probation's
                    rc[2 + evtag[k]] += 1.0
                ing = ing and skgh == 1
                if ing and sk == 1 and skgate > 0 and _sk_est(sktab, skidx, k) < skgate:
                    ing = False
                if ing and padapt > 0.0 and p_prob > 0.0:
                    if evtag[k] == 1:
                        lp += padapt
                    else:
                        lp -= padapt
                    if lp < lpmin:
                        lp = lpmin
                    if lp > lpmax:
                        lp = lpmax
                    p_prob = math.exp(lp)
                prob[k] = 1 if p_prob >= 0.0 and not ing else 0
                if ing:
                    cnt[k] = 5 + gboost
                    if skgb > 0.0:
                        extra = int(skgb * (_sk_est(sktab, skidx, k) - 2))
                        cnt[k] += min(max(extra, 0), skgmax)
                    if restore == 1 and evcnt[k] > cnt[k]:
                        cnt[k] = evcnt[k]
            else:
                prob[k] = 1 if p_prob >= 0.0 and not (ng > 0 and in_g[k] > 0) else 0
            if sk == 1 and skt >= 0:
                e = _sk_est(sktab, skidx, k)
                if e >= skt:
                    prob[k] = 0
                    c0 = 5 + skb + int(skbp * (e - skt))
                    if c0 > 255:
                        c0 = 255
                    if c0 > cnt[k]:
                        cnt[k] = c0
            if ttl_of[k] > 0.0:
                expat[k] = now + ttl_of[k] * 1000.0
            else:
                expat[k] = np.inf
        ab[i // BUCKET] += alpha
        if trace > 0 and (i + 1) % trace == 0:
            st[10 + i // trace] = alpha
    for b in range(nb):
        m = min(BUCKET, n - b * BUCKET)
        ab[b] /= m
    st[4] = (Hsum / max(Hn, 1)) * R / 1000.0
    st[3] = p_off_n / max(evictions, 1)     # (prho) share of evictions with probation off
    return hits, evictions, hb, ab, st
