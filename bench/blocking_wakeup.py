"""Blocking-pop wake-ups: N clients blocked in BLPOP, one client pushing; ferrumkv_py against
redis-server in the same run.

Two layouts: ``distinct`` (client i waits on key ``k<i>``) and ``one`` (every client waits on
the same key, served first-blocked first).  For each, on each server (started fresh, stopped
by PID; ferrumkv then redis-server, ``--rounds`` times so drift hits both alike):

1. *latency*: all N block (a barrier on INFO blocked_clients), then ``--samples`` times the
   pusher sends one ``RPUSH`` and waits for the woken client's reply: the time from the
   push to the reply is one wake-up latency (median and p99 reported);
2. *throughput*: all N block again, then the pusher writes N ``RPUSH`` commands in pipelined
   batches of ``--batch``; wake-ups per second = N / time until every client has its reply.

The client side (uvloop, one process) is the same for both servers, so read the ratios.
Writes the table to ``out/blocking_wakeup.txt`` (``--out``).  Usage::

    .venv/bin/python bench/blocking_wakeup.py                  # 1000 clients, 2 rounds
    .venv/bin/python bench/blocking_wakeup.py --clients 200 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pubsub_fanout import free_port, start_server, stop_server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONNECT_CONCURRENCY = 200
BARRIER_POLL_S = 0.01
BARRIER_TIMEOUT_S = 60.0
US_PER_S = 1e6


def frame(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%b\r\n" % (len(p), p) for p in parts)


class Waiter(asyncio.Protocol):
    """One blocked client: counts replies (each BLPOP reply is one read or a few)."""

    def __init__(self, state):
        self.state = state
        self.transport = None
        self.buf = b""
        self.event = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        # a BLPOP reply is "*2\r\n$<n>\r\n<key>\r\n$<n>\r\n<value>\r\n": 4 lines after *2
        if self.buf.count(b"\r\n") >= 5:
            self.buf = b""
            st = self.state
            st["served"] += 1
            if self.event is not None:
                self.event.set()
            if st["served"] >= st["target"] and not st["done"].done():
                st["done"].set_result(None)


async def blocked_clients(reader, writer) -> int:
    writer.write(frame(b"INFO", b"clients"))
    head = await reader.readline()
    body = await reader.readexactly(int(head[1:]) + 2)
    return int(body.split(b"blocked_clients:")[1].split(b"\r\n")[0])


async def barrier(reader, writer, n: int) -> None:
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while await blocked_clients(reader, writer) != n:
        if time.monotonic() > deadline:
            raise RuntimeError("clients did not block")
        await asyncio.sleep(BARRIER_POLL_S)


async def one_round(port: int, layout: str, n: int, samples: int, batch: int) -> dict:
    loop = asyncio.get_running_loop()
    state = {"served": 0, "target": n, "done": loop.create_future()}
    waiters = []
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def connect():
        async with sem:
            _, w = await loop.create_connection(lambda: Waiter(state), "127.0.0.1", port)
            waiters.append(w)
    await asyncio.gather(*(connect() for _ in range(n)))
    keys = [b"k%d" % i if layout == "distinct" else b"q" for i in range(n)]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def block_all():
        for w, key in zip(waiters, keys):
            w.transport.write(frame(b"BLPOP", key, b"0"))
        await barrier(reader, writer, n)

    # 1. latency of single wake-ups
    await block_all()
    lat = []
    for i in range(min(samples, n)):
        # "distinct": waiter i is woken; "one": whichever blocked first (any waiter)
        ev = asyncio.Event()
        for w in (waiters[i:i + 1] if layout == "distinct" else waiters):
            w.event = ev
        t0 = time.perf_counter()
        writer.write(frame(b"RPUSH", keys[i], b"v"))
        await ev.wait()
        lat.append(time.perf_counter() - t0)
        await reader.readline()   # the RPUSH reply
    for w in waiters:
        w.event = None
    # unblock the rest so that every client can block again
    rest = n - min(samples, n)
    if rest:
        state["served"], state["target"] = 0, rest
        state["done"] = loop.create_future()
        for i in range(min(samples, n), n):
            writer.write(frame(b"RPUSH", keys[i], b"v"))
        await state["done"]
        for _ in range(rest):
            await reader.readline()
    # 2. throughput of pipelined pushes
    await block_all()
    state["served"], state["target"] = 0, n
    state["done"] = loop.create_future()
    t0 = time.perf_counter()
    for lo in range(0, n, batch):
        writer.write(b"".join(frame(b"RPUSH", k, b"v") for k in keys[lo:lo + batch]))
        for _ in range(min(batch, n - lo)):
            await reader.readline()
    await state["done"]
    elapsed = time.perf_counter() - t0
    writer.close()
    for w in waiters:
        w.transport.close()
    await asyncio.sleep(0.1)
    lat.sort()
    return {"p50_us": statistics.median(lat) * US_PER_S,
            "p99_us": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * US_PER_S,
            "rate": n / elapsed}


def run(kind: str, layout: str, args) -> dict:
    port = free_port()
    proc = start_server(kind, port, args.clients + 100)
    try:
        import uvloop
        return uvloop.run(asyncio.wait_for(
            one_round(port, layout, args.clients, args.samples, args.batch), args.timeout))
    finally:
        stop_server(proc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=300, help="single wake-ups timed")
    ap.add_argument("--batch", type=int, default=50, help="RPUSHes per pipelined write")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per round")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "blocking_wakeup.txt"))
    args = ap.parse_args(argv)
    lines = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)
    say("%d clients in BLPOP, %d timed single wake-ups, pushes pipelined by %d"
        % (args.clients, args.samples, args.batch))
    for layout in ("distinct", "one"):
        best: dict = {}
        for rnd in range(args.rounds):
            for kind in ("ferrumkv", "redis"):
                res = run(kind, layout, args)
                say("  %-8s keys, round %d, %-8s  wake-up p50 %7.1f us  p99 %7.1f us  "
                    "%9.0f wake-ups/s" % (layout, rnd + 1, kind, res["p50_us"],
                                           res["p99_us"], res["rate"]))
                b = best.setdefault(kind, dict(res))
                b["p50_us"] = min(b["p50_us"], res["p50_us"])
                b["p99_us"] = min(b["p99_us"], res["p99_us"])
                b["rate"] = max(b["rate"], res["rate"])
        ours, ref = best["ferrumkv"], best["redis"]
        say("%-8s keys, best of %d: p50 latency ratio (ours/redis) %.2f, p99 %.2f, "
            "wake-ups/s ratio (ours/redis) %.2f" % (
                layout, args.rounds, ours["p50_us"] / ref["p50_us"],
                ours["p99_us"] / ref["p99_us"], ours["rate"] / ref["rate"]))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
