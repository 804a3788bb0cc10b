"""In-process cost per command of INCR, LPUSH, LPOP, SADD, HSET and ZADD at -P 16.

The frames are the exact ones redis-benchmark sends (``server_bench._request``), fed to one
``Client`` over a null transport in reads of 16 commands by ``server_bench.dispatch_cost_us``
(imported, not copied: the same set-up as ``server_bench.py --parts dispatch``; LPOP's list
is pre-filled by 100k LPUSHes there).  Two numbers per command:

  us/command   process CPU time per command, best of ``--reps`` repetitions (noisy on a
               shared machine: compare runs of the same minute);
  ops/command  interpreted bytecodes per command (``--opcodes``: ``sys.settrace`` with
               ``f_trace_opcodes``, counted only inside ``Client.data_received`` over the
               last ``OPCODE_READS`` reads of the same run, so cron ticks and set-up are
               left out).  Deterministic: the steady measure.  It is split into the part
               spent in the command layer (``commands/*``, keyspace, values, zset, memory,
               sortedcontainers: the handler and what it calls) and the rest (reader,
               dispatcher, reply encoding).

``bench/eviction_cost.py --opcodes`` counts the same way, but its tracer is inline in its
``inproc_cost`` and counts every frame, so it is not reusable here; ``--profile TEST`` runs
cProfile over the timed loop of one test instead.

Usage::

    .venv/bin/python bench/command_cost.py                  # us/command, best of 5 (~1 min)
    .venv/bin/python bench/command_cost.py --opcodes        # opcodes/command (~1 min)
    .venv/bin/python bench/command_cost.py --opcodes --detail --tests zadd   # per function
    .venv/bin/python bench/command_cost.py --profile zadd   # cProfile of one test
    .venv/bin/python bench/command_cost.py --root /tmp/old  # another source tree

What it showed (issue 7; this machine, 2 cores shared with other jobs).  "Before" is the same
tree with the command-layer files as they were (strings, lists, hashes, sets, zsets, util,
values.py), run with ``--root`` in the same minute; us are the best of 2 x 3 runs of 64k
requests, interleaved before/after::

    test    us/command        opcodes/command    of which the command layer
    INCR    1.96 -> 1.72      344 -> 306         145 -> 106  (half the keys new: Database.add)
    LPUSH   2.00 -> 1.48      350 -> 319         132 -> 101
    LPOP    1.80 -> 1.35      354 -> 304         162 -> 100
    SADD    2.09 -> 1.48      344 -> 291         126 -> 74
    HSET    2.45 -> 1.88      419 -> 335         183 -> 99
    ZADD    5.44 -> 3.83      675 -> 483         439 -> 247  (SortedList add/remove ~110)

(INCR, LPUSH and LPOP were timed with their fast path inline in the handler; it now sits
in one helper shared with DECR, RPUSH and RPOP, 16 opcodes more, within the timing noise.)
Session 4: the reader's compiled frame check took "the rest" from ~200 to 116 opcodes for
every test; ZADD's order became a ScoreOrder (score_order.py): 41 opcodes more in the
command layer (288.6, its Python against SortedList's) but 3.70-4.18 -> 3.35-3.45 us here
and 6.3-7.6 -> 5.2-6.5 us of server CPU side by side (the scores' bisection reads doubles
in a row instead of a tuple and a float object per probe).

The fast paths: the handler does the keyspace lookup, touch, type check and memory
accounting itself for the common arity (one element, one field, an integer score, INCR of a
canonical counter), without Database.lookup_write / grow, write_typed, parse_int or the
ZADD flag parsing, and falls back to the general path, unchanged, for everything else.
The reader and dispatcher ("rest") were not touched by that change.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = ["incr", "lpush", "lpop", "sadd", "hset", "zadd"]
PIPELINE = 16
REQUESTS = 64_000          # per timed repetition (LPOP's list holds 100k elements)
OPCODE_REQUESTS = REQUESTS # per --opcodes run (the state the timed runs end in) ...
OPCODE_READS = 250         # ... of which the last this many reads (x16 commands) are traced
# Files whose opcodes count as the command layer (handler, keyspace, containers).
_COMMAND_LAYER = ("/commands/", "/keyspace.py", "/values.py", "/zset.py", "/memory.py",
                  "/slots.py", "/score_order.py", "/sortedcontainers/")


class _Clock:
    """Stands in for ``server_bench.time``: its first ``process_time()`` call (the start of
    ``dispatch_cost_us``'s timed loop) runs ``on_start``, the second ``on_stop``."""

    def __init__(self, on_start, on_stop):
        self.calls = 0
        self.on_start, self.on_stop = on_start, on_stop

    def process_time(self) -> float:
        self.calls += 1
        if self.calls == 1:
            self.on_start()
        elif self.calls == 2:
            self.on_stop()
        return time.process_time()

    def __getattr__(self, name):
        return getattr(time, name)


def _bench_module():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import server_bench
    return server_bench


def time_us(test: str, reps: int, n: int) -> float:
    """Best CPU us per command of ``reps`` runs."""
    sb = _bench_module()
    return min(sb.dispatch_cost_us(test, PIPELINE, n, {}) for _ in range(reps))


def opcodes(test: str, n: int = OPCODE_REQUESTS, reads: int = OPCODE_READS,
            detail: dict = None, pipeline: int = PIPELINE, config: dict = None) -> tuple:
    """(total, command layer) bytecodes per command over the last ``reads`` reads; with
    ``detail`` (a dict) also the count per ``file:function``; ``pipeline`` commands a read,
    ``config`` the server's settings (bench/dispatch_contracts.py uses both)."""
    sb = _bench_module()
    total_reads = n // pipeline
    first = total_reads - reads
    state = {"seen": 0, "active": False, "total": 0, "layer": 0}
    is_layer: dict = {}

    def local(frame, event, arg):
        if event == "opcode":
            state["total"] += 1
            code = frame.f_code
            layer = is_layer.get(code)
            if layer is None:
                layer = is_layer[code] = any(p in code.co_filename for p in _COMMAND_LAYER)
            if layer:
                state["layer"] += 1
            if detail is not None:
                name = "%s:%s" % (os.path.basename(code.co_filename), code.co_name)
                detail[name] = detail.get(name, 0) + 1
        elif event == "return" and frame.f_code.co_name == "data_received" \
                and state["depth_frame"] is frame:
            state["active"] = False
        return local

    def glob(frame, event, arg):
        if state["active"]:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return local
        if frame.f_code.co_name == "data_received":
            state["seen"] += 1
            if state["seen"] > first:
                state["active"] = True
                state["depth_frame"] = frame
                frame.f_trace_opcodes = True
                frame.f_trace_lines = False
                return local
        return None

    sb.time = _Clock(lambda: sys.settrace(glob), lambda: sys.settrace(None))
    try:
        sb.dispatch_cost_us(test, pipeline, n, config or {})
    finally:
        sys.settrace(None)
        sb.time = time
    cmds = reads * pipeline
    if detail is not None:
        for name in detail:
            detail[name] /= cmds
    return state["total"] / cmds, state["layer"] / cmds


def profile(test: str, n: int) -> None:
    import cProfile
    import pstats
    sb = _bench_module()
    prof = cProfile.Profile()
    sb.time = _Clock(prof.enable, prof.disable)
    try:
        sb.dispatch_cost_us(test, PIPELINE, n, {})
    finally:
        sb.time = time
    pstats.Stats(prof).sort_stats("tottime").print_stats(20)


def main() -> int:
    global ROOT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions (best counts)")
    ap.add_argument("--requests", type=int, default=REQUESTS)
    ap.add_argument("--opcodes", action="store_true", help="count bytecodes per command")
    ap.add_argument("--detail", action="store_true", help="with --opcodes: per function")
    ap.add_argument("--profile", metavar="TEST", help="cProfile one test's timed loop")
    ap.add_argument("--root", default=ROOT, help="the ferrumkv_py source tree to measure")
    args = ap.parse_args()
    ROOT = os.path.abspath(args.root)
    sys.path.insert(0, ROOT)
    if args.profile:
        profile(args.profile, args.requests)
        return 0
    for test in args.tests.split(","):
        if args.opcodes:
            detail = {} if args.detail else None
            total, layer = opcodes(test, detail=detail)
            print("  %-6s -P %d  %7.1f opcodes/command  (command layer %6.1f, rest %6.1f)"
                  % (test, PIPELINE, total, layer, total - layer), flush=True)
            for name, k in sorted((detail or {}).items(), key=lambda kv: -kv[1]):
                if k >= 0.5:
                    print("        %7.1f  %s" % (k, name))
        else:
            us = time_us(test, args.reps, args.requests)
            print("  %-6s -P %d  %7.2f us/command" % (test, PIPELINE, us), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
