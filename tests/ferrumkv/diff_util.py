"""Differential helper shared by the bitmap and HyperLogLog tests: the same commands (bytes
arguments) to redis-server and to ferrumkv on one connection each, replies compared byte for
byte."""

from __future__ import annotations

from ..conftest import RawConn, command_frame


def frame(args) -> bytes:
    return command_frame(*args)


class Pair:
    """One raw connection to each server; ``run(args)`` returns both replies."""

    def __init__(self, redis_port: int, our_port: int, proto: int = 2):
        self.real, self.ours = RawConn(redis_port), RawConn(our_port)
        if proto == 3:
            for conn in (self.real, self.ours):
                conn.send(frame(["HELLO", "3"]))
                conn.read_reply()

    def run(self, args) -> tuple[bytes, bytes]:
        out = []
        for conn in (self.real, self.ours):
            conn.send(frame(args))
            out.append(conn.read_reply())
        return out[0], out[1]

    def same(self, args) -> bytes:
        real, ours = self.run(args)
        assert ours == real, (args, real[:200], ours[:200])
        return real

    def close(self) -> None:
        self.real.close()
        self.ours.close()


def same_replies(redis_port: int, our_port: int, commands, proto: int = 2) -> None:
    pair = Pair(redis_port, our_port, proto)
    try:
        for args in [["FLUSHALL"]] + list(commands) + [["FLUSHALL"]]:
            pair.same(args)
    finally:
        pair.close()
