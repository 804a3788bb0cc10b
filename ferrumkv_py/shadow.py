"""The litehit shadow: the live access stream replayed through an exact LRU, off the hot path.

While the server serves, every key a command reads or writes is appended to a buffer (the
only work done inside a command: two list appends).  The cron hands the buffer to the
litehit core in one batch: keys become stable block ids (FNV-1a 64, ``litehit.keyhash``),
reads are requests whose hit curves are accumulated, writes are committed to the LRU order
without a hit evaluation (as ``write`` events of a litehit trace with commit_writes).

    GET a      -> read request [a]          (keys mode: every key read is its own request)
    MGET a b c -> reads [a] [b] [c]         (prefix mode: one request [a, b, c])
    SET a v    -> write [a]                 (commits a, no fact)

Exact hit rate at any capacity, at any time
-------------------------------------------
A fact's segment ``[start, run]`` says block i of it hits at capacity >= start + i.  The
shadow adds the read facts to an ``AggregateCurve`` (``litehit.projector``: a difference
array over required capacity), which gives the read blocks that hit at any capacity C.
INFO therefore answers ``litehit_exact_hit_rate`` for the
capacity the server has *now* (maxmemory // block bytes), whatever it was when the
accesses happened.  Complexity: O(segments) per batch, O(max depth) per query (cached).

Sampling (``litehit-shadow-sample`` R < 1, SHARDS): only keys with ``hash(key) < keep``
(a share R of the hash space) are buffered, so the replayed stream is the full stream's
kept keys, and a capacity of C blocks reads that stream's curve at floor(C * R).  Rates need
no scaling; counts are the kept stream's.  ``docs/litehit.md`` ("In the server") has the
costs and the measured error.

Honest comparisons: reuses and a window
---------------------------------------
Switched on (or reset) in a warm cache, the shadow starts empty while the cache is full, so
its cumulative exact-LRU rate reads low for a while and the policy looks better than LRU.
The sound fix is to compare only *reuses*: reads of a block the shadow has already seen in
this window (a hit at infinite capacity).  A reuse's LRU stack distance counts the distinct
blocks touched since its previous access, and all of those accesses lie inside the window,
so whether an LRU of C blocks hits it is known exactly, warm-up or not.  The ``reuse`` rates
put the server's hits and the exact LRU's hits over that same denominator (in prefix mode a
request's comparable blocks are its leading blocks seen before; the server's hits there are
``min(server's prefix hits, seen prefix)``).  First accesses in the window are left out of
both: the shadow cannot know whether an LRU would have held them.

Cumulative rates dilute a change of workload, so the same counters are also kept per second
for the last ``litehit-window-seconds`` seconds (``litehit_window_*``).  A window's exact
hits are counted at the capacity in force when its accesses were replayed; the cumulative
``litehit_exact_hit_rate`` is recomputed at today's capacity.  Complexity: O(segments) per
replayed batch, O(window seconds) per INFO.

What is not modelled: DEL, expiry and eviction do not remove blocks from the exact LRU
(an LRU of that size decides by itself what to drop; a deleted key read again is a miss in
the server but may be a hit in the shadow), and FLUSHALL is not a reset.  The shadow is the
best an exact LRU of the same size could do on the same *access stream*.

The recorded window (since the shadow was switched on or ``LITEHIT RESET``) can be written
as a litehit trace (``litehit-trace-file``) and its facts published with ``LITEHIT SAVE``
as ``litehit_facts.csv`` in ``dir`` (``Shadow.save_path``); ``litehit replay`` + ``litehit
query`` of that trace give the same numbers as INFO (``tests/ferrumkv/test_shadow.py``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os

from .info import section
from .safefile import nofollow_opener, open_regular
from .subsystem import Subsystem

# numpy, numba (litehit's kernels) and llvmlite cost ~90 MB of RSS at import: loaded by the
# first Shadow, so a server with litehit-shadow off never pays for them (load_kernels)
np = LiteHit = hash_keys = published = factsfile = AggregateCurve = None


def load_kernels() -> None:
    """Import litehit's modules and warm their kernels (once per process): what the first
    Shadow does, and what a test session does before its servers start."""
    global np, LiteHit, hash_keys, published, factsfile, AggregateCurve
    if LiteHit is None:
        import numpy
        from litehit import factsfile as ff
        from litehit.core import LiteHit as core
        from litehit.keyhash import hash_keys as hk
        from litehit.projector import AggregateCurve as curve
        from litehit.publish import published as pub
        np, LiteHit, hash_keys, published = numpy, core, hk, pub
        factsfile, AggregateCurve = ff, curve
        _warm_kernels()


def _warm_kernels() -> None:
    """Compile (or load from numba's cache) the kernels a replay calls, with the argument
    types ``Shadow._replay`` and INFO pass, on a scratch LiteHit: at start-up or in the
    CONFIG SET that switches the shadow on, never in a cron's replay between two clients'
    reads.  Cold (no numba cache yet: a fresh install) the first batch compiles for ~8 s;
    a client's command waiting behind that timed out and redis-py sent it again (a test
    counted 301 reads of 300).  Complexity: O(1) after the first call in a process."""
    ids = hash_keys(b"aba", np.arange(4, dtype=np.int64))
    core = LiteHit()
    facts = core.process_batch(ids, np.arange(4, dtype=np.int64), 1)
    core.current_unique_blocks()                    # INFO's litehit_unique_blocks
    n = int(facts.seg_offsets[-1])
    curve = AggregateCurve()
    curve.add(facts.seg_start[:n], facts.seg_run[:n])
    curve.hits(1)

INSTANCE_ID = "ferrumkv"
# The buffer's flag byte, one per key: bit flags of the shadow's own, not the event kinds of
# a litehit trace (``litehit.trace.READ`` / ``WRITE``, spelt "get" / "write" in the file).
FLAG_HIT = 1                # bit 0: the server found the key (reads)
FLAG_CONT = 2               # bit 1: continues the previous key's prefix request (prefix MGET)
FLAG_WRITE = 4              # bit 2: a write, committed without a fact (client.py imports it
                            # for its inline fast path: HOT_PATH_ATTRS)
FLAG_KIND = FLAG_CONT | FLAG_WRITE   # a byte & FLAG_KIND == 0: a read that starts a request
SAMPLE_RATE_MIN = 0.0001       # litehit-shadow-sample's lower bound: the bound halves no lower
ADVISE_HEADROOM = 0.10         # LITEHIT ADVISE's maxmemory over the exact LRU's need
KB, MB = 1024, 1024 * 1024


def memory_setting(n: float) -> str:
    """A maxmemory value in Redis's units, rounded up: whole mb from 1 MB on, else kb
    (``memory_setting(59_340_000) == '57mb'``).  Complexity: O(1)."""
    if n >= MB:
        return "%dmb" % -(-int(n) // MB)
    return "%dkb" % max(1, -(-int(n) // KB))
CURVE_DEFAULT_POINTS = 16
CONSUME_SLICE_KEYS = 4096             # keys replayed per event-loop callback (see cron)
log = logging.getLogger("ferrumkv")
HASH_MIN = -(1 << 63)                 # Python's hash of bytes: uniform over [-2^63, 2^63)
# Per-second window counters: [second, read blocks, server hits, exact hits, reuse blocks,
# server hits on reuses] (exact hits are all on reuses: a first access cannot hit an LRU)
W_SEC, W_BLOCKS, W_REAL, W_EXACT, W_REUSE, W_REUSE_REAL = range(6)


# Read commands that Redis 7.0 runs without an access: they look the key up with
# LOOKUP_NOTOUCH (EXISTS, TYPE, the TTL family, OBJECT; db.c, expire.c, object.c) or with
# dbFind (MEMORY USAGE), so the key's LRU / LFU stays as it was and an exact LRU must not
# count them either (after `redis-cli --memkeys`, which runs TYPE and MEMORY USAGE on every
# key, the shadow had counted a read of each).  The keys.py docstring tables the lookups.
NOT_AN_ACCESS = frozenset({
    "exists", "type", "ttl", "pttl", "expiretime", "pexpiretime", "object|encoding",
    "object|freq", "object|idletime", "object|refcount", "memory|usage"})


class Shadow:
    """Buffers accesses from commands; replays them in batches from the cron."""

    # Slots: the dispatcher reads HOT_PATH_ATTRS per command.
    __slots__ = ("server", "mode", "sample_rate", "keep_all", "keep", "core", "keys",
                 "flags", "single", "_trace", "_seq", "_get", "_mget", "_curve",
                 "requests", "read_blocks", "writes",
                 "real_hits", "reuse_real_hits", "_window", "_facts", "_facts_bytes",
                 "facts_dropped", "_last_ns", "window_restarts", "opened_ms",
                 "_slicing", "_closed")

    def __init__(self, server):
        load_kernels()
        self.server = server
        self.mode = server.config["litehit-shadow-mode"]
        self._set_sample_rate(float(server.config["litehit-shadow-sample"]))
        self.window_restarts = 0        # restarts by the memory bound (_bound_memory)
        self.core = LiteHit()
        self.keys: list = []              # appended by the dispatcher (see "hot path")
        self.flags = bytearray()          # one kind | hit byte per key
        self._trace = None
        self._seq = 0
        self._slicing = False           # a chain of replay slices is scheduled (cron)
        self._closed = False
        self.reset()
        path = server.config["litehit-trace-file"]
        if path:   # a plain name in dir (config check); a regular file, never a FIFO
            try:
                self._trace = open_regular(self._path(path), "a", nofollow=True,
                                           encoding="ascii")
            except OSError as e:   # CONFIG SET reports it; the old shadow is restored
                raise ValueError("Can't open the trace file: %s" % e.strerror) from None
        from .registry import COMMANDS, lookup
        self._get = lookup(b"get")
        self._mget = lookup(b"mget")
        # Commands whose only key is argv[1] and that need nothing evaluated at once: GET
        # (its hit is its reply) and such writes.  The dispatcher appends them inline.
        self.single = frozenset({self._get} | {
            spec for spec in COMMANDS.values()
            if spec.write and spec.first_key == 1 and spec.last_key == 1})

    def _path(self, name: str) -> str:
        return os.path.join(self.server.config["dir"], name)

    # ---- hot path ----
    #
    # The dispatcher (client.py) does the common case inline, without a call (HOT_PATH_ATTRS,
    # below the class, names what it may read: a call per command would cost more than the
    # two appends it records):
    #
    #     if spec in shadow.single and not c.db.id:  # GET, writes whose one key is argv[1]
    #         if shadow.keep_all or hash(argv[1]) < shadow.keep:
    #             shadow.keys.append(argv[1])
    #             shadow.flags.append(FLAG_WRITE if spec.write else reply is not None)
    #     elif spec.first_key > 0:
    #         shadow.record(c, spec, argv, reply)
    #
    # Every other command with keys (and every one in a db other than 0) goes through
    # record(), which works its keys out now (the server's hit of a generic read is
    # whether the key exists *now*).  Measured alternative: one tuple per command
    # classified in bulk by the cron costs more (the tuples are GC-tracked allocations:
    # the collector's passes add ~0.05 us per command, and the cron's classification
    # ~0.04 us more than the two appends it saves; docs/litehit.md).

    def record(self, c, spec, argv, reply) -> None:
        """Append the keys of one executed command: what the dispatcher's fast path does not
        do inline, and every command on its slow path (``Client.run``).
        Complexity: O(keys of the command)."""
        if spec.first_key <= 0:
            return
        if spec in self.single:           # slow path, or a db other than 0
            keys = [argv[1]]
            flags = bytes([FLAG_WRITE if spec.write else reply is not None])
        else:
            keys = spec.keys(argv)
            if not keys:
                return
            if spec.write:
                flags = bytes([FLAG_WRITE]) * len(keys)
            elif spec.keyspace_read and spec.name not in NOT_AN_ACCESS:
                if spec is self._mget and reply.__class__ is list:
                    hits = [x is not None for x in reply]
                else:
                    find = c.db.find
                    hits = [find(k) is not None for k in keys]
                if spec is self._mget and self.mode == "prefix":
                    # a prefix request is sampled as a whole, by its first key
                    if not self.keep_all and hash(keys[0]) >= self.keep:
                        return
                    self._append(c, keys, bytes([(FLAG_CONT if i else 0) | h
                                                 for i, h in enumerate(hits)]))
                    return
                flags = bytes(hits)
            else:
                return
        if not self.keep_all:
            keep = self.keep
            sel = [i for i, k in enumerate(keys) if hash(k) < keep]
            if len(sel) < len(keys):
                if not sel:
                    return
                keys = [keys[i] for i in sel]
                flags = bytes([flags[i] for i in sel])
        self._append(c, keys, flags)

    def _append(self, c, keys: list, flags: bytes) -> None:
        if c.db.id:
            keys = [b"%d\x00%b" % (c.db.id, k) for k in keys]
        self.keys.extend(keys)
        self.flags.extend(flags)

    # ---- batch replay (cron) ----

    def cron(self) -> None:
        """The cron's share: replay the buffer in slices of about CONSUME_SLICE_KEYS keys,
        each a callback of its own on the event loop, so clients' reads are served between
        slices.  Replaying a whole tick's buffer at once (~30k keys at 300k commands/s, about
        15 ms) showed as GET/SET -P 16 p99 of 13 ms against 5 ms with the shadow off
        (bench/server_bench.py --parts shadow).  Without a running loop (in-process benches,
        tests) it replays everything now.  Complexity: O(N log U) over the slices."""
        if not self._slicing:
            self._slice()

    def _slice(self) -> None:
        self._slicing = False
        keys, flags = self.keys, self.flags
        n = len(keys)
        if self._closed or not n:
            return
        loop = None
        if n > CONSUME_SLICE_KEYS:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                pass
        if loop is None:
            self.consume()
            return
        cut = CONSUME_SLICE_KEYS
        while cut < n and flags[cut] & FLAG_CONT:   # never split a prefix request
            cut += 1
        # The rest stays first in line: the dispatcher appends after it.
        self.keys, self.flags = keys[cut:], flags[cut:]
        self._replay(keys[:cut], flags[:cut])
        self._slicing = True
        loop.call_soon(self._slice)

    def consume(self) -> None:
        """Replay everything buffered now (INFO, LITEHIT, close).
        Complexity: O(N log U) for N accesses, U blocks."""
        keys, flags = self.keys, self.flags
        if not keys:
            return
        self.keys, self.flags = [], bytearray()
        self._replay(keys, flags)

    def _replay(self, keys: list, flags) -> None:
        """Hash, replay and accumulate one batch of buffered keys, in order."""
        n = len(keys)
        try:
            lengths = np.frombuffer(bytes(map(len, keys)), dtype=np.uint8)
        except ValueError:                              # a key of 256 bytes or more
            lengths = np.fromiter(map(len, keys), dtype=np.int64, count=n)
        koff = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=koff[1:])
        ids = hash_keys(b"".join(keys), koff)
        fl = np.frombuffer(flags, dtype=np.uint8)
        kind = fl & FLAG_KIND
        if self.mode == "keys":                         # no prefix continuations
            offsets = np.arange(n + 1, dtype=np.int64)
            starts = offsets[:-1]
        else:
            # A request starts at every key that is not the continuation of a prefix
            # request; every write key is its own (commit-only) request.
            starts = np.flatnonzero(kind != FLAG_CONT)
            offsets = np.empty(len(starts) + 1, dtype=np.int64)
            offsets[:-1] = starts
            offsets[-1] = n
        now_ns = max(self.server.ks.now_ms * 1_000_000, self._last_ns)
        self._last_ns = now_ns
        facts = self.core.process_batch(ids, offsets, now_ns)
        is_read = kind[starts] == 0                   # not FLAG_WRITE (a start is never CONT)
        seq0 = self._seq
        self._accumulate(facts, is_read, fl, offsets)
        if self._trace is not None:
            self._write_trace(ids, offsets, is_read, now_ns, seq0)

    def _accumulate(self, facts, is_read, fl, offsets) -> None:
        sizes = np.diff(offsets)
        seg_off = facts.seg_offsets
        nseg = int(seg_off[-1])
        seg_is_read = np.repeat(is_read, np.diff(seg_off))
        s = facts.seg_start[:nseg][seg_is_read]
        r = facts.seg_run[:nseg][seg_is_read]
        self._curve.add(s, r)
        n_read = int(is_read.sum())
        read_sizes = sizes[is_read]
        self.requests += n_read
        self.read_blocks += int(read_sizes.sum())
        self.writes += len(is_read) - n_read
        # The server's own prefix hits: leading keys of each read request that it found.
        hit = (fl & FLAG_HIT).astype(bool)
        read_starts = offsets[:-1][is_read]
        if n_read:
            if self.mode == "prefix":
                miss_pos = np.minimum.reduceat(
                    np.where(hit, np.iinfo(np.int64).max, np.arange(len(hit))), read_starts)
                real = np.minimum(miss_pos - read_starts, read_sizes)
            else:
                real = hit[read_starts].astype(np.int64)
            # Reuses: each read request's blocks seen before (its hits at infinite capacity)
            counts = np.diff(seg_off)[is_read]
            seen = np.bincount(np.repeat(np.arange(n_read), counts), weights=r,
                               minlength=n_read).astype(np.int64)
            real_hits = int(real.sum())
            reuse_real = int(np.minimum(real, seen).sum())
            self.real_hits += real_hits
            self.reuse_real_hits += reuse_real
            self._count_window(int(read_sizes.sum()), real_hits, self._exact_now(s, r),
                               int(r.sum()), reuse_real)
            # Keep the read facts (flat arrays) for LITEHIT SAVE.
            new_off = np.zeros(n_read + 1, dtype=np.int64)
            np.cumsum(counts, out=new_off[1:])
            batch = (self._last_ns, read_sizes.astype(np.int64), new_off, s, r, self._seq)
            self._seq += n_read
            self._facts.append(batch)
            self._facts_bytes += sum(a.nbytes for a in batch[1:5])
        self._bound_memory()

    # ---- the memory bound (litehit-shadow-maxmemory) ----
    #
    # The shadow's memory is the core's index (one entry per distinct key of the window, a
    # few tens of bytes each), the aggregate curve (per depth) and the facts kept for
    # LITEHIT SAVE.  None of it counts against maxmemory, so it has a bound of its own,
    # enforced after every replayed batch in two steps:
    #   1. the facts give way first: the oldest batches are dropped (litehit_facts_dropped)
    #      until the three parts fit; LITEHIT SAVE then writes the most recent window;
    #   2. if the index and curve alone do not fit, the window restarts at half the sample
    #      rate (SHARDS: a key is kept when its hash falls under the rate), logged and
    #      counted (litehit_window_restarts): the same bound then holds about twice the
    #      distinct keys of the full stream, and the rates become estimates, as with a
    #      sample rate set by hand.  The core cannot forget single keys, so a restart is
    #      the one way to shrink it.
    # Complexity: O(1) per batch, plus O(dropped batches).

    def _bound_memory(self) -> None:
        limit = self.server.config["litehit-shadow-maxmemory"]
        fixed = self.core.memory_usage_bytes() + self._curve.nbytes
        while self._facts and fixed + self._facts_bytes > limit:
            old = self._facts.pop(0)
            self._facts_bytes -= sum(a.nbytes for a in old[1:5])
            self.facts_dropped += len(old[1])
        if fixed > limit and self.sample_rate > SAMPLE_RATE_MIN:
            unique = self.core.current_unique_blocks()
            self._set_sample_rate(max(self.sample_rate / 2, SAMPLE_RATE_MIN))
            self.window_restarts += 1
            self.reset()
            log.log(logging.WARNING - 5, "litehit shadow: %d distinct keys took %d bytes, "
                    "over litehit-shadow-maxmemory (%d): the window restarts sampling %.4g "
                    "of the keys (raise the bound to keep more)", unique, fixed, limit,
                    self.sample_rate)

    def _set_sample_rate(self, rate: float) -> None:
        self.sample_rate = rate
        self.keep_all = rate >= 1.0
        # SHARDS: a key is kept when hash(key) - HASH_MIN < rate * 2^64, i.e. when
        # hash(key) < keep (one comparison: masking a negative int costs 2x more here)
        self.keep = HASH_MIN + int(rate * (1 << 64))

    def _exact_now(self, start, run) -> int:
        """Exact LRU hits of these read segments at today's capacity: block i of a segment
        hits at capacity c >= start + i (as :meth:`hits_at` sums them).  Complexity: O(len)."""
        cap = self.capacity_blocks()
        if cap < 0:
            return int(run.sum())
        if not self.keep_all:
            cap = int(cap * self.sample_rate)
        return int(np.clip(cap - start + 1, 0, run).sum())

    def _count_window(self, blocks: int, real: int, exact: int, reuse: int,
                      reuse_real: int) -> None:
        """Add one replayed batch to the current second's window counters."""
        sec = self.server.ks.now_ms // 1000
        w = self._window
        if not w or w[-1][W_SEC] != sec:
            w.append([sec, 0, 0, 0, 0, 0])
            horizon = sec - self.server.config["litehit-window-seconds"]
            while w[0][W_SEC] <= horizon:
                w.popleft()
        b = w[-1]
        b[W_BLOCKS] += blocks
        b[W_REAL] += real
        b[W_EXACT] += exact
        b[W_REUSE] += reuse
        b[W_REUSE_REAL] += reuse_real

    def window_totals(self) -> list:
        """[blocks, server hits, exact hits, reuse blocks, server hits on reuses] of the last
        ``litehit-window-seconds`` seconds.  Complexity: O(seconds in the window)."""
        horizon = self.server.ks.now_ms // 1000 - self.server.config["litehit-window-seconds"]
        tot = [0, 0, 0, 0, 0]
        for b in self._window:
            if b[W_SEC] > horizon:
                for i in range(5):
                    tot[i] += b[i + 1]
        return tot

    def _write_trace(self, ids, offsets, is_read, now_ns: int, seq: int) -> None:
        out = []
        ids_list = ids.tolist()
        off = offsets.tolist()
        # A sampled trace says so in every event (the parser ignores unknown fields).
        tail = "}\n" if self.keep_all else ',"sample_rate":%.6g}\n' % self.sample_rate
        for r in range(len(off) - 1):
            a, b = off[r], off[r + 1]
            keys = ",".join(map(str, ids_list[a:b]))
            if is_read[r]:
                out.append('{"type":"get","instance_id":"%s","trace_id":"%s-%d",'
                           '"timestamp_ns":%d,"keys":[%s],"input_len":%d%s'
                           % (INSTANCE_ID, INSTANCE_ID, seq, now_ns, keys, b - a, tail))
                seq += 1
            else:
                out.append('{"type":"write","instance_id":"%s","timestamp_ns":%d,"keys":[%s]%s'
                           % (INSTANCE_ID, now_ns, keys, tail))
        self._trace.write("".join(out))
        self._trace.flush()

    # ---- queries ----

    def block_bytes(self) -> int:
        """The charge of one key: the configured value, or the average modelled key size."""
        bb = self.server.config["litehit-block-bytes"]
        if bb:
            return bb
        ks = self.server.ks
        keys = ks.total_keys()
        return max(1, ks.used_memory // keys) if keys else 1

    def capacity_blocks(self) -> int:
        mm = self.server.maxmemory
        return mm // self.block_bytes() if mm else -1

    def hits_at(self, capacity: int) -> int:
        """Exact LRU read-block hits at ``capacity`` blocks (negative = infinite).

        Sampled (rate R < 1): the replayed stream holds the kept keys only, and a capacity
        of C blocks of the full stream is one of floor(C * R) blocks of the sampled one
        (SHARDS); the hits returned are those of the sampled stream, so rate() of them is
        the estimate of the full stream's hit rate."""
        if capacity >= 0 and not self.keep_all:
            capacity = int(capacity * self.sample_rate)
        return self._curve.hits(capacity)

    def rate(self, hits: int, blocks: int | None = None) -> float:
        """hits / blocks (default: every read block of the window); 0 when there are none."""
        if blocks is None:
            blocks = self.read_blocks
        return hits / blocks if blocks else 0.0

    def slots(self) -> list:
        text = self.server.config["litehit-capacities"]
        return [int(x) for x in text.replace(",", " ").split()]

    def top_capacity(self) -> int:
        """A capacity (full-stream blocks) at which the curve is flat: every reuse hits."""
        top = self._curve.max_depth + 1
        if not self.keep_all:
            top = int(top / self.sample_rate) + 1
        return top

    def advice(self, target: float | None) -> dict:
        """LITEHIT ADVISE: litehit.advise on the live curve, plus where the server's own
        policy sits against exact LRU on the same reuses (module docstring)."""
        from litehit.advise import advise
        out = advise(self.hits_at, self.read_blocks, self.top_capacity(),
                     self.capacity_blocks(), self.block_bytes(), target,
                     self.server.maxmemory or None)
        cap = self.capacity_blocks()
        reuse_real = self.rate(self.reuse_real_hits, self._curve.infinite_hits)
        reuse_exact = self.rate(self.hits_at(cap), self._curve.infinite_hits)
        out["real_hit_rate"] = self.rate(self.real_hits)
        out["reuse_blocks"] = self._curve.infinite_hits
        out["reuse_real_hit_rate"] = reuse_real
        out["reuse_exact_hit_rate"] = reuse_exact
        out["policy_vs_exact_lru_points"] = 100.0 * (reuse_real - reuse_exact)
        if not self.keep_all:
            out["sample_rate"] = self.sample_rate
        out.update(self._plan(out, target))
        return out

    # ---- advice you can act on ----
    #
    # The curve sizes memory for an exact LRU; the server runs its own policy, and the window
    # may be young.  So the advice also says: whether the running policy already reaches the
    # target (its own hit rate over the same reads), the maxmemory to set with headroom for
    # sampled eviction (ADVISE_HEADROOM, rounded up to a whole MB or KB, in Redis's units),
    # how old the window is, and the ceiling its first uses impose (a read of a key never
    # seen in the window misses at any size: max_hit_rate).  ``action`` is the one line to
    # act on.  Complexity: O(1) past the curve's bisection.

    def _plan(self, a: dict, target: float | None) -> dict:
        from .config import format_memory_human as human
        age_s = max(self.server.ks.now_ms - self.opened_ms, 0) // 1000
        policy = self.server.config["maxmemory-policy"]
        out = {"window_age_seconds": age_s, "first_use_share": 1.0 - a["max_hit_rate"],
               "policy": policy}
        if "capacity_bytes" in a:
            out["capacity_human"] = human(a["capacity_bytes"])
        if target is None:
            return out
        meets = self.read_blocks > 0 and a["real_hit_rate"] >= target
        out["policy_meets_target"] = "yes" if meets else "no"
        a["target_reachable"] = "yes" if a["target_reachable"] else "no"
        want = "%.1f %%" % (100 * target)
        if meets:
            out["action"] = ("none: %s already reaches %.1f %% (target %s) at maxmemory %s"
                             % (policy, 100 * a["real_hit_rate"], want,
                                human(self.server.maxmemory) if self.server.maxmemory
                                else "unlimited"))
        elif a["target_reachable"] == "yes":
            setting = memory_setting(a["target_capacity_bytes"] * (1 + ADVISE_HEADROOM))
            out["target_capacity_human"] = human(a["target_capacity_bytes"])
            out["target_maxmemory"] = setting
            out["action"] = ("CONFIG SET maxmemory %s (an exact LRU needs %s for %s; %d %% "
                             "headroom for sampled eviction)"
                             % (setting, human(a["target_capacity_bytes"]), want,
                                round(100 * ADVISE_HEADROOM)))
        else:
            out["action"] = ("not reachable in this window: %.1f %% of its reads were first "
                             "uses, which miss at any size, so the ceiling is %.1f %% (the "
                             "window is %d s old: a longer one may lift it)"
                             % (100 * out["first_use_share"], 100 * a["max_hit_rate"], age_s))
        return out

    def curve(self, points: int) -> list:
        """(capacity, hit rate) at ``points`` capacities spaced on a log scale up to the
        largest depth seen (in full-stream blocks when sampled), plus the current capacity."""
        top = max(self._curve.max_depth, 1)
        if not self.keep_all:
            top = max(int(self._curve.max_depth / self.sample_rate), 1)
        caps = sorted({int(round(x)) for x in np.geomspace(1, top, max(points, 2))}
                      | ({self.capacity_blocks()} if self.capacity_blocks() > 0 else set()))
        return [(c, self.rate(self.hits_at(c))) for c in caps]

    def info_fields(self) -> list:
        cap = self.capacity_blocks()
        fields = [
            ("litehit_shadow", 1),
            ("litehit_mode", self.mode),
            ("litehit_sample_rate", "%.6g" % self.sample_rate),
            ("litehit_requests", self.requests),
            ("litehit_blocks", self.read_blocks),
            ("litehit_writes", self.writes),
            ("litehit_block_bytes", self.block_bytes()),
            ("litehit_capacity_blocks", cap),
            ("litehit_exact_hit_rate", "%.6f" % self.rate(self.hits_at(cap))),
            ("litehit_exact_hit_rate_inf", "%.6f" % self.rate(self._curve.infinite_hits)),
            ("litehit_real_hit_rate", "%.6f" % self.rate(self.real_hits)),
        ]
        exact = self.hits_at(cap)
        wb, wreal, wexact, wreuse, wreuse_real = self.window_totals()
        fields += [
            # counters, for scrapers that take their own deltas
            ("litehit_real_hits", self.real_hits),
            ("litehit_exact_hits", exact),
            ("litehit_reuse_blocks", self._curve.infinite_hits),
            ("litehit_reuse_real_hits", self.reuse_real_hits),
            # reuses only: sound from the first second after a reset (module docstring)
            ("litehit_reuse_real_hit_rate", "%.6f" % self.rate(self.reuse_real_hits,
                                                                self._curve.infinite_hits)),
            ("litehit_reuse_exact_hit_rate", "%.6f" % self.rate(exact, self._curve.infinite_hits)),
            ("litehit_window_seconds", self.server.config["litehit-window-seconds"]),
            ("litehit_window_blocks", wb),
            ("litehit_window_real_hit_rate", "%.6f" % self.rate(wreal, wb)),
            ("litehit_window_exact_hit_rate", "%.6f" % self.rate(wexact, wb)),
            ("litehit_window_reuse_blocks", wreuse),
            ("litehit_window_reuse_real_hit_rate", "%.6f" % self.rate(wreuse_real, wreuse)),
            ("litehit_window_reuse_exact_hit_rate", "%.6f" % self.rate(wexact, wreuse)),
        ]
        for c in self.slots():
            fields.append(("litehit_slot_%d_hit_rate" % c, "%.6f" % self.rate(self.hits_at(c))))
        fields += [
            ("litehit_unique_blocks", self.core.current_unique_blocks()),
            ("litehit_memory_bytes", self.memory_bytes()),
            ("litehit_memory_limit", self.server.config["litehit-shadow-maxmemory"]),
            ("litehit_window_restarts", self.window_restarts),
            ("litehit_pending", len(self.keys)),
            ("litehit_facts_dropped", self.facts_dropped),
        ]
        return fields

    def memory_bytes(self) -> int:
        return self.core.memory_usage_bytes() + self._curve.nbytes + self._facts_bytes

    # ---- commands ----

    def reset(self) -> None:
        """LITEHIT RESET: forget the recorded window (LRU state, counters, facts)."""
        self.core.reset()
        self.keys, self.flags = [], bytearray()
        self._curve = AggregateCurve()
        self.requests = self.read_blocks = self.writes = 0
        self.real_hits = self.reuse_real_hits = 0
        self._window: collections.deque = collections.deque()
        self._facts: list = []
        self._facts_bytes = 0
        self.facts_dropped = 0
        self._last_ns = 0
        self._seq = 0
        self.opened_ms = self.server.ks.now_ms     # the window's start (ADVISE's age)

    def save_path(self) -> str:
        """Where LITEHIT SAVE writes: ``litehit_facts.csv`` (FACTS_FILE_NAME) in ``dir``."""
        return self._path(factsfile.FACTS_FILE_NAME)

    def save(self) -> str:
        """LITEHIT SAVE: publish the window's facts as ``save_path()`` atomically, in the
        facts file format (``litehit.factsfile``; one key per block, so
        ``block_size_tokens`` is 1 and ``input_token_len`` counts the keys read).

        Sampled (rate R < 1), the rows are the kept keys' requests and their
        ``block_bytes`` is ``round(block bytes / R)``: one sampled block stands for 1/R keys,
        so ``litehit query`` at a byte capacity finds the scaled capacity by itself."""
        self.consume()
        path = self.save_path()
        bb = self.block_bytes()
        if not self.keep_all:
            bb = max(1, round(bb / self.sample_rate))
        lane = factsfile.lane_columns(INSTANCE_ID, 1, bb)
        with published(path, "w", encoding="ascii", newline="",
                       opener=nofollow_opener) as f:
            f.write(factsfile.FACTS_HEADER_LINE)
            for ts, sizes, off, start, run, seq in self._facts:
                curves = factsfile.curve_cells(off, start, run)
                f.write("".join(
                    factsfile.row(factsfile.row_prefix(f"{INSTANCE_ID}-{seq + i}", lane, ts, n),
                                  curve)
                    for i, (n, curve) in enumerate(zip(sizes.tolist(), curves))))
        return path

    def close(self) -> None:
        self._closed = True
        if self._trace is not None:
            self.consume()
            self._trace.close()
            self._trace = None


# The dispatcher's hot-path contract: the only Shadow attributes client.py reads, each read
# afresh per command (the cron replaces ``keys`` and ``flags`` when it takes the buffer), and
# what the dispatcher may do with them.  Anything else with keys goes through ``record``.
# test_shadow.py checks that a Shadow provides these and that client.py reads no others.
HOT_PATH_ATTRS = (
    "single",    # frozenset of CommandSpecs recorded inline in db 0: GET, and writes whose
                 # only key is argv[1] (nothing to evaluate at once)
    "keep_all",  # bool: no sampling (litehit-shadow-sample 1): every key is kept
    "keep",      # int: sampling on, a key is kept when hash(key) < keep (SHARDS)
    "keys",      # list: the key buffer; the dispatcher only appends a kept key ...
    "flags",     # bytearray: ... and its flag byte: FLAG_WRITE for a write, else the hit
                 # (``reply is not None``: FLAG_HIT or 0)
    "record",    # record(client, spec, argv, reply): every other command with keys
)


@section("litehit")
def _info_litehit(server) -> list:
    shadow = server.shadow
    if shadow is None:
        return [("litehit_shadow", 0)]
    shadow.consume()
    return shadow.info_fields()


class ShadowSwitch(Subsystem):
    """``server.shadow``: the shadow while ``litehit-shadow`` is on, built afresh when it or
    its settings change, closed when the server stops.  Switched on by CONFIG SET while the
    server serves, the kernels load on a thread first (first_use.py) and the shadow starts
    when they are ready, so nobody waits; at start-up they load here.
    Complexity: O(1) per change."""

    def __init__(self, server):
        super().__init__(server)
        self.loading = False        # a thread is loading the kernels
        cfg = server.config
        cfg.on_change("litehit-shadow", self.apply)
        cfg.on_change("litehit-shadow-mode", self.apply, call_now=False)
        cfg.on_change("litehit-trace-file", self.apply, call_now=False)
        cfg.on_change("litehit-shadow-sample", self.apply, call_now=False)

    def apply(self, _value=None) -> None:
        """Drop the shadow, then build a new one if ``litehit-shadow`` is on."""
        server = self.server
        if server.shadow is not None:
            server.shadow.close()
            server.shadow = None
        if not server.config["litehit-shadow"]:
            return
        loop = getattr(server, "loop", None)
        if LiteHit is None and loop is not None and loop.is_running():
            if not self.loading:
                from .first_use import start_thread
                self.loading = True

                def load_then_apply() -> None:
                    try:
                        load_kernels()
                    finally:
                        loop.call_soon_threadsafe(self._loaded)
                start_thread("litehit-shadow", load_then_apply)
            return
        server.shadow = Shadow(server)

    def _loaded(self) -> None:
        self.loading = False
        server = self.server
        if LiteHit is not None and server.shadow is None and server.config["litehit-shadow"]:
            self.apply()

    async def stop(self) -> None:
        if self.server.shadow is not None:
            self.server.shadow.close()
