"""The litehit shadow: the live access stream replayed through an exact LRU, off the hot path.

While the server serves, every key a command reads or writes is appended to a buffer (the
only work done inside a command: two list appends).  The cron hands the buffer to the
litehit core in one batch: keys become stable block ids (FNV-1a 64, ``litehit.keyhash``),
reads are requests whose hit curves are accumulated, writes are committed to the LRU order
without a hit evaluation (spec §2.1's read/write split).

    GET a      -> read request [a]          (keys mode: every key read is its own request)
    MGET a b c -> reads [a] [b] [c]         (prefix mode: one request [a, b, c])
    SET a v    -> write [a]                 (commits a, no fact)

Exact hit rate at any capacity, at any time
-------------------------------------------
A fact's segment ``[start, run]`` says block i of it hits at capacity >= start + i.  The
shadow keeps a difference array over "required capacity" (+1 at start, -1 at start + run),
so the number of read blocks that hit at capacity C is the prefix sum up to C of the
running sum of that array.  INFO therefore answers ``litehit_exact_hit_rate`` for the
capacity the server has *now* (maxmemory // block bytes), whatever it was when the
accesses happened.  Complexity: O(segments) per batch, O(max depth) per query (cached).

What is not modelled: DEL, expiry and eviction do not remove blocks from the exact LRU
(an LRU of that size decides by itself what to drop; a deleted key read again is a miss in
the server but may be a hit in the shadow), and FLUSHALL is not a reset.  The shadow is the
best an exact LRU of the same size could do on the same *access stream*.

The recorded window (since the shadow was switched on or ``LITEHIT RESET``) can be written
as a standard trace (``litehit-trace-file``) and its facts published with ``LITEHIT SAVE``
as ``litehit_facts.csv`` in ``dir``; ``litehit replay`` + ``litehit query`` of that trace
give the same numbers as INFO (``tests/ferrumkv/test_shadow.py``).
"""

from __future__ import annotations

import json
import os

import numpy as np

from litehit.core import LiteHit
from litehit.keyhash import hash_keys
from litehit.publish import published

from .info import section

INSTANCE_ID = "ferrumkv"
READ, READ_CONT, WRITE = 0, 2, 4      # kind codes in the flag byte; bit 0 = the server hit
MAX_FACT_BATCHES_BYTES = 256 * 1024 * 1024   # facts kept for LITEHIT SAVE, beyond: oldest dropped
CURVE_DEFAULT_POINTS = 16


class Shadow:
    """Buffers accesses from commands; replays them in batches from the cron."""

    def __init__(self, server):
        self.server = server
        self.mode = server.config["litehit-shadow-mode"]
        self.core = LiteHit()
        self._keys: list = []
        self._flags = bytearray()
        self._trace = None
        self._seq = 0
        self.reset()
        path = server.config["litehit-trace-file"]
        if path:
            self._trace = open(self._path(path), "a", encoding="ascii")
        from .registry import lookup
        self._get = lookup(b"get")
        self._mget = lookup(b"mget")
        self._set = lookup(b"set")

    def _path(self, name: str) -> str:
        return os.path.join(self.server.config["dir"], name)

    # ---- hot path ----

    def record(self, c, spec, argv, reply) -> None:
        """Append the keys of one executed command.  Complexity: O(keys of the command)."""
        if spec is self._get:
            key = argv[1] if not c.db.id else b"%d\x00%b" % (c.db.id, argv[1])
            self._keys.append(key)
            self._flags.append(READ | (reply is not None))
            return
        if spec is self._set:
            key = argv[1] if not c.db.id else b"%d\x00%b" % (c.db.id, argv[1])
            self._keys.append(key)
            self._flags.append(WRITE)
            return
        if spec.first_key <= 0:
            return
        keys = spec.keys(argv)
        if not keys:
            return
        if c.db.id:
            keys = [b"%d\x00%b" % (c.db.id, k) for k in keys]
        if spec.write:
            self._keys.extend(keys)
            self._flags.extend(bytes([WRITE]) * len(keys))
            return
        if spec.keyspace_read:
            if spec is self._mget and reply.__class__ is list:
                hits = [x is not None for x in reply]
            else:
                data = c.db.data
                hits = [k in data for k in spec.keys(argv)]
            self._keys.extend(keys)
            if spec is self._mget and self.mode == "prefix":
                self._flags.extend([(READ if i == 0 else READ_CONT) | h
                                    for i, h in enumerate(hits)])
            else:
                self._flags.extend([READ | h for h in hits])

    # ---- batch replay (cron) ----

    def cron(self) -> None:
        self.consume()

    def consume(self) -> None:
        """Replay everything buffered.  Complexity: O(N log U) for N accesses, U blocks."""
        keys, flags = self._keys, self._flags
        if not keys:
            return
        self._keys, self._flags = [], bytearray()
        lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
        koff = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(lengths, out=koff[1:])
        ids = hash_keys(b"".join(keys), koff)
        fl = np.frombuffer(bytes(flags), dtype=np.uint8)
        kind = fl & 6
        # A request starts at every key that is not the continuation of a prefix request;
        # every write key is its own (commit-only) request.
        starts = np.flatnonzero(kind != READ_CONT)
        offsets = np.append(starts, len(keys)).astype(np.int64)
        now_ns = max(self.server.ks.now_ms * 1_000_000, self._last_ns)
        self._last_ns = now_ns
        facts = self.core.process_batch(ids, offsets, now_ns)
        is_read = kind[starts] == READ
        sizes = np.diff(offsets)
        seq0 = self._seq
        self._accumulate(facts, is_read, sizes, fl, offsets)
        if self._trace is not None:
            self._write_trace(ids, offsets, is_read, now_ns, seq0)

    def _accumulate(self, facts, is_read, sizes, fl, offsets) -> None:
        seg_off = facts.seg_offsets
        nseg = int(seg_off[-1])
        seg_is_read = np.repeat(is_read, np.diff(seg_off))
        s = facts.seg_start[:nseg][seg_is_read]
        r = facts.seg_run[:nseg][seg_is_read]
        if len(s):
            top = int((s + r).max()) + 1
            if top >= len(self._diff):
                grown = np.zeros(max(top + 1, 2 * len(self._diff)), dtype=np.int64)
                grown[:len(self._diff)] = self._diff
                self._diff = grown
            np.add.at(self._diff, s, 1)
            np.add.at(self._diff, s + r, -1)
            self._cum = None
            self._max_depth = max(self._max_depth, top - 1)
        n_read = int(is_read.sum())
        read_sizes = sizes[is_read]
        self.requests += n_read
        self.read_blocks += int(read_sizes.sum())
        self.writes += len(is_read) - n_read
        self.inf_hits += int(r.sum())
        # The server's own prefix hits: leading keys of each read request that it found.
        hit = (fl & 1).astype(bool)
        read_starts = offsets[:-1][is_read]
        if n_read:
            if self.mode == "prefix":
                miss_pos = np.minimum.reduceat(
                    np.where(hit, np.iinfo(np.int64).max, np.arange(len(hit))), read_starts)
                self.real_hits += int(np.minimum(miss_pos - read_starts, read_sizes).sum())
            else:
                self.real_hits += int(hit[read_starts].sum())
            # Keep the read facts (flat arrays) for LITEHIT SAVE.
            counts = np.diff(seg_off)[is_read]
            new_off = np.zeros(n_read + 1, dtype=np.int64)
            np.cumsum(counts, out=new_off[1:])
            batch = (self._last_ns, read_sizes.astype(np.int64), new_off, s, r, self._seq)
            self._seq += n_read
            self._facts.append(batch)
            self._facts_bytes += sum(a.nbytes for a in batch[1:5])
            while self._facts_bytes > MAX_FACT_BATCHES_BYTES and len(self._facts) > 1:
                old = self._facts.pop(0)
                self._facts_bytes -= sum(a.nbytes for a in old[1:5])
                self.facts_dropped += len(old[1])

    def _write_trace(self, ids, offsets, is_read, now_ns: int, seq: int) -> None:
        out = []
        ids_list = ids.tolist()
        off = offsets.tolist()
        for r in range(len(off) - 1):
            a, b = off[r], off[r + 1]
            keys = ",".join(map(str, ids_list[a:b]))
            if is_read[r]:
                out.append('{"type":"get","instance_id":"%s","trace_id":"%s-%d",'
                           '"timestamp_ns":%d,"keys":[%s],"input_len":%d}\n'
                           % (INSTANCE_ID, INSTANCE_ID, seq, now_ns, keys, b - a))
                seq += 1
            else:
                out.append('{"type":"write","instance_id":"%s","timestamp_ns":%d,"keys":[%s]}\n'
                           % (INSTANCE_ID, now_ns, keys))
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
        """Exact LRU read-block hits at ``capacity`` blocks (negative = infinite)."""
        if capacity < 0:
            return self.inf_hits
        if self._cum is None:
            self._cum = np.cumsum(np.cumsum(self._diff))
        if capacity >= len(self._cum):
            return int(self._cum[-1])
        return int(self._cum[capacity])

    def rate(self, hits: int) -> float:
        return hits / self.read_blocks if self.read_blocks else 0.0

    def slots(self) -> list:
        text = self.server.config["litehit-capacities"]
        return [int(x) for x in text.replace(",", " ").split()]

    def curve(self, points: int) -> list:
        """(capacity, hit rate) at ``points`` capacities spaced on a log scale up to the
        largest depth seen, plus the current capacity."""
        top = max(self._max_depth, 1)
        caps = sorted({int(round(x)) for x in np.geomspace(1, top, max(points, 2))}
                      | ({self.capacity_blocks()} if self.capacity_blocks() > 0 else set()))
        return [(c, self.rate(self.hits_at(c))) for c in caps]

    def info_fields(self) -> list:
        cap = self.capacity_blocks()
        fields = [
            ("litehit_shadow", 1),
            ("litehit_mode", self.mode),
            ("litehit_requests", self.requests),
            ("litehit_blocks", self.read_blocks),
            ("litehit_writes", self.writes),
            ("litehit_block_bytes", self.block_bytes()),
            ("litehit_capacity_blocks", cap),
            ("litehit_exact_hit_rate", "%.6f" % self.rate(self.hits_at(cap))),
            ("litehit_exact_hit_rate_inf", "%.6f" % self.rate(self.inf_hits)),
            ("litehit_real_hit_rate", "%.6f" % self.rate(self.real_hits)),
        ]
        for c in self.slots():
            fields.append(("litehit_slot_%d_hit_rate" % c, "%.6f" % self.rate(self.hits_at(c))))
        fields += [
            ("litehit_unique_blocks", self.core.current_unique_blocks()),
            ("litehit_memory_bytes", self.memory_bytes()),
            ("litehit_pending", len(self._keys)),
            ("litehit_facts_dropped", self.facts_dropped),
        ]
        return fields

    def memory_bytes(self) -> int:
        return self.core.memory_usage_bytes() + self._diff.nbytes + self._facts_bytes

    # ---- commands ----

    def reset(self) -> None:
        """LITEHIT RESET: forget the recorded window (LRU state, counters, facts)."""
        self.core.reset()
        self._keys, self._flags = [], bytearray()
        self._diff = np.zeros(1024, dtype=np.int64)
        self._cum = None
        self._max_depth = 0
        self.requests = self.read_blocks = self.writes = 0
        self.inf_hits = self.real_hits = 0
        self._facts: list = []
        self._facts_bytes = 0
        self.facts_dropped = 0
        self._last_ns = 0
        self._seq = 0

    def save(self) -> str:
        """LITEHIT SAVE: publish the window's facts as ``dir/litehit_facts.csv`` atomically."""
        self.consume()
        path = self._path("litehit_facts.csv")
        bb = self.block_bytes()
        with published(path, "w", encoding="ascii", newline="") as f:
            f.write("trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,"
                    "block_bytes,hit_curve\n")
            for ts, sizes, off, start, run, seq in self._facts:
                st, rn, of = start.tolist(), run.tolist(), off.tolist()
                rows = []
                for i, n in enumerate(sizes.tolist()):
                    curve = ",".join("[%d,%d]" % (st[j], rn[j]) for j in range(of[i], of[i + 1]))
                    rows.append('%s-%d,%s,%d,%d,1,%d,"[%s]"\n'
                                % (INSTANCE_ID, seq + i, INSTANCE_ID, ts, n, bb, curve))
                f.write("".join(rows))
        return path

    def close(self) -> None:
        if self._trace is not None:
            self.consume()
            self._trace.close()
            self._trace = None


@section("litehit")
def _info_litehit(server) -> list:
    shadow = server.shadow
    if shadow is None:
        return [("litehit_shadow", 0)]
    shadow.consume()
    return shadow.info_fields()


def install(server) -> None:
    """Create or drop the shadow when ``litehit-shadow`` / its settings change."""

    def apply(_value) -> None:
        if server.shadow is not None:
            server.shadow.close()
            server.shadow = None
        if server.config["litehit-shadow"]:
            server.shadow = Shadow(server)

    server.config.on_change("litehit-shadow", apply)
    server.config.on_change("litehit-shadow-mode", apply, call_now=False)
    server.config.on_change("litehit-trace-file", apply, call_now=False)


def trace_config_json(trace_path: str, out_dir: str, block_bytes: int,
                      capacity_blocks: list) -> str:
    """An offline replay config for a recorded trace (block = 1 token, 1 key = 1 block)."""
    gb = [c * block_bytes / 2 ** 30 for c in capacity_blocks]
    return json.dumps({
        "trace_file_path": trace_path, "output_result_path": out_dir, "block_size": 1,
        "instance_groups": [{"name": "shadow", "capacity_gb": gb, "eviction_policy": "lru",
                             "ttl_seconds": 0, "enable_prefix_hash": False}],
        "instances": [{"instance_group_name": "shadow", "instance_id": INSTANCE_ID,
                       "block_size": 1, "linear_step": 0,
                       "location_spec_infos": [{"name": "key", "size": block_bytes}],
                       "location_spec_groups": [{"name": "all", "spec_names": ["key"]}],
                       "optimizer_state_info": {"full_location_spec_group_name": "all"}}],
    }, indent=2)
