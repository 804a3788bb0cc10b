"""Pub/sub fan-out: one publisher, N subscribers on one channel, ferrumkv_py against
redis-server in the same run.

Each round starts one server (ferrumkv_py, then redis-server, alternating ``--rounds`` times
so drift on a shared machine hits both alike), connects ``--subscribers`` sockets from this
process (uvloop; a subscriber only counts the bytes it receives, every message frame has the
same length), SUBSCRIBEs them all, then publishes ``--messages`` messages in pipelined
batches of ``--batch`` and waits until every subscriber has every message.  It reports
messages delivered per second (subscribers x messages / elapsed), the server's CPU time per
delivered message (``/proc/PID/stat``), and ferrumkv's ratio to redis-server.  Servers are
stopped by PID when a round ends, also on errors or timeouts (``--timeout`` per round).

The client side is the same code for both servers, so it costs both the same; with 2 cores
on a shared machine, read the ratio, not the absolute numbers.  Usage::

    .venv/bin/python bench/pubsub_fanout.py                       # 10k subscribers
    .venv/bin/python bench/pubsub_fanout.py --subscribers 1000 --messages 100 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from _ports import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHANNEL = b"bench"
PAYLOAD_BYTES = 16
CONNECT_CONCURRENCY = 500        # connections opened at a time
START_TIMEOUT_S = 20.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


def start_server(kind: str, port: int, maxclients: int) -> subprocess.Popen:
    if kind == "ferrumkv":
        cmd = [sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(port),
               "--maxclients", str(maxclients), "--loglevel", "warning"]
    else:
        cmd = [shutil.which("redis-server"), "--port", str(port), "--save", "",
               "--appendonly", "no", "--bind", "127.0.0.1", "--maxclients", str(maxclients)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("%s did not start" % kind)


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK   # utime + stime


class Counter(asyncio.Protocol):
    """A subscriber: counts received bytes, wakes the waiter at a target."""

    def __init__(self, state):
        self.state = state
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        st = self.state
        st["bytes"] += len(data)
        if st["bytes"] >= st["target"] and not st["done"].done():
            st["done"].set_result(None)


def frame(*parts: bytes) -> bytes:
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%b\r\n" % (len(p), p) for p in parts)


async def one_round(port: int, nsubs: int, nmsgs: int, batch: int, pid: int) -> dict:
    loop = asyncio.get_running_loop()
    state = {"bytes": 0, "target": 0, "done": loop.create_future()}
    subs = []
    sem = asyncio.Semaphore(CONNECT_CONCURRENCY)

    async def connect():
        async with sem:
            tr, _ = await loop.create_connection(lambda: Counter(state), "127.0.0.1", port)
            subs.append(tr)
    await asyncio.gather(*(connect() for _ in range(nsubs)))
    confirm = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%b\r\n:1\r\n" % (len(CHANNEL), CHANNEL)
    state["target"] = len(confirm) * nsubs
    sub_cmd = frame(b"SUBSCRIBE", CHANNEL)
    for tr in subs:
        tr.write(sub_cmd)
    await asyncio.wait_for(state["done"], 60)
    payload = b"x" * PAYLOAD_BYTES
    msg = b"*3\r\n$7\r\nmessage\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n" % (
        len(CHANNEL), CHANNEL, len(payload), payload)
    state["bytes"] = 0
    state["target"] = len(msg) * nsubs * nmsgs
    state["done"] = loop.create_future()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    pub = frame(b"PUBLISH", CHANNEL, payload)
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    sent = 0
    while sent < nmsgs:
        n = min(batch, nmsgs - sent)
        writer.write(pub * n)
        expect = b":%d\r\n" % nsubs
        got = await reader.readexactly(len(expect) * n)
        if got != expect * n:
            raise RuntimeError("unexpected PUBLISH replies: %r" % got[:80])
        sent += n
    await state["done"]
    elapsed = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0
    writer.close()
    for tr in subs:
        tr.close()
    await asyncio.sleep(0.2)
    delivered = nsubs * nmsgs
    return {"rate": delivered / elapsed, "elapsed": elapsed,
            "cpu_us": cpu * 1e6 / delivered}


def run(kind: str, args) -> dict:
    port = free_port()
    proc = start_server(kind, port, args.subscribers + 100)
    try:
        import uvloop
        return uvloop.run(asyncio.wait_for(
            one_round(port, args.subscribers, args.messages, args.batch, proc.pid),
            args.timeout))
    finally:
        stop_server(proc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subscribers", type=int, default=10_000)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--batch", type=int, default=10, help="PUBLISHes per pipelined write")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per round")
    args = ap.parse_args(argv)
    if shutil.which("redis-server") is None:
        print("redis-server not found", file=sys.stderr)
        return 1
    results: dict = {"ferrumkv": [], "redis": []}
    for rnd in range(args.rounds):
        for kind in ("ferrumkv", "redis"):
            res = run(kind, args)
            results[kind].append(res)
            print("round %d %-8s  %10.0f msg/s delivered  %6.2f s  %6.3f us CPU/msg"
                  % (rnd + 1, kind, res["rate"], res["elapsed"], res["cpu_us"]), flush=True)
    ours = sorted(r["rate"] for r in results["ferrumkv"])
    ref = sorted(r["rate"] for r in results["redis"])
    best_ratio = max(ours) / max(ref)
    cpu_ratio = (min(r["cpu_us"] for r in results["redis"])
                 / min(r["cpu_us"] for r in results["ferrumkv"]))
    print("\n%d subscribers x %d messages (%d-byte payload, batches of %d):"
          % (args.subscribers, args.messages, PAYLOAD_BYTES, args.batch))
    print("  ferrumkv_py best %.0f msg/s, redis-server best %.0f msg/s, ratio %.2f; "
          "CPU per message ratio (redis/ours) %.2f" % (max(ours), max(ref), best_ratio,
                                                       cpu_ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
