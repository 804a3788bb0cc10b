"""What the compiled eviction path's two sides agree on: ``compiled.py`` (Python, which fills
the buffers) and ``kernel.py`` (numba, which reads and writes them).  Kept apart from both so
that reading a mode or an index loads no numba, and so that each number is written once.

``ip`` is an ``array('q')`` of N_IPARAMS: the inputs of one ``pick_victims`` call, then the
counts it writes back.  ``fp`` is an ``array('d')`` of N_FPARAMS holding the score's
parameters, laid out by ``scores.py`` (``EpsParams`` / ``AdaptParams``, the fields in order).
``picks`` holds N_PICK_COLS int64 per victim under MODE_ADAPT (the duel's two picks).

Complexity: constants only.
"""

from __future__ import annotations

from .lfu import LFU_COUNTER_MAX

# kernel modes: how a sample is scored (MODE_EPS and MODE_ADAPT: the two AHE controllers)
MODE_LRU, MODE_TTL, MODE_LFU, MODE_EPS, MODE_ADAPT = 1, 2, 3, 4, 5

BATCH_MAX = 512                 # victims one kernel call may return
EXPIRED_ROOM = 4 * BATCH_MAX    # expired keys one call may hand back
EVICT_MAX_EMPTY_ROUNDS = 64     # sampling rounds that found only stale entries, per victim

# ip slots (int64): inputs, then outputs the kernel writes back
I_NOW, I_SAMPLES, I_VOL, I_LIVE, I_WANT, I_DECAY, I_POOL_N = range(7)
I_VICTIMS, I_EXPIRED = 7, 8
N_IPARAMS = 9
N_FPARAMS = 6                   # the largest score parameter structure (scores.AdaptParams)

# picks columns (int64), one row of N_PICK_COLS per victim (MODE_ADAPT): slot -1 = no pick;
# recency's pick (slot, idle ms, counter), then frequency's
P_RSLOT, P_RIDLE, P_RCNT, P_FSLOT, P_FIDLE, P_FCNT = range(6)
N_PICK_COLS = 6
NO_PICK_COUNT = LFU_COUNTER_MAX + 1     # a pick's counter before any candidate was scored
