"""Helpers shared by the scripting and functions tests (busy scripts over a raw socket)."""

from __future__ import annotations

import threading
import time

import redis

BUSY_WAIT_S = 20        # hang guard for a script to become busy (not a timing assertion)
POLL_INTERVAL_S = 0.02


def send_until(conn, frame: bytes, done) -> bytes:
    """Send ``frame`` on ``conn`` (a ``RawConn``) until ``done(reply)`` holds; that reply.
    Fails after BUSY_WAIT_S seconds."""
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        conn.send(frame)
        reply = conn.read_reply()
        if done(reply):
            return reply
        assert time.monotonic() < deadline, reply
        time.sleep(POLL_INTERVAL_S)


def call_in_thread(port: int, fn, out: list, **client_kwargs) -> threading.Thread:
    """Run ``fn(client)`` on a redis-py client of its own in a started thread (a script that
    keeps the server busy, say); its reply, or the Redis error it raised, goes to ``out``."""
    def run():
        c = redis.Redis(port=port, **client_kwargs)
        try:
            out.append(fn(c))
        except redis.RedisError as e:
            out.append(e)
        finally:
            c.close()
    t = threading.Thread(target=run)
    t.start()
    return t
