#!/usr/bin/env python3
"""Regenerate ``ferrumkv_py/data/redis_7_0_commands.json`` from a running redis-server 7.0.

    python scripts/gen_command_data.py [--port 6379]      (no --port: starts its own)

For every command in ``COMMAND LIST`` it stores the raw RESP3 reply of ``COMMAND INFO name``
and ``COMMAND DOCS name`` (text, as sent): ``ferrumkv_py/command_specs.py`` parses them
into reply values, so COMMAND DOCS, key specs and tips are Redis's own and the RESP2 / RESP3
shapes follow from one source; ``ferrumkv_py/acl_table.py`` derives ACL's command table
(categories, no_auth, key permissions) from the same COMMAND INFO replies on load.  The
server's version is recorded too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "ferrumkv_py", "data", "redis_7_0_commands.json")
CONNECT_TIMEOUT_S = 10.0


class Raw:
    """A raw RESP client that keeps replies as the bytes sent.  tests/ferrumkv/
    test_differential.py's ``Conn`` reads replies the same way: kept apart on purpose, as
    this script runs without the test tree (and raises EOFError where the test asserts)."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=CONNECT_TIMEOUT_S)
        self.buf = b""

    def call(self, *args: str) -> bytes:
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(parts))
        return self.reply()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError
            self.buf += chunk
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self) -> bytes:
        line = self._line()
        t = line[:1]
        if t in b"$=!":
            n = int(line[1:-2])
            return line if n < 0 else line + self._exact(n + 2)
        if t in b"*~>%|":
            n = int(line[1:-2])
            items = n * 2 if t in b"%|" else n
            return line + b"".join(self.reply() for _ in range(max(items, 0)))
        return line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int)
    args = ap.parse_args(argv)
    proc = None
    port = args.port
    if port is None:
        exe = shutil.which("redis-server")
        if exe is None:
            print("redis-server not found; pass --port", file=sys.stderr)
            return 2
        port = _free_port()
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no"], stdout=subprocess.DEVNULL)
        deadline = time.time() + CONNECT_TIMEOUT_S   # (tests/conftest.py's run_redis_server
        while time.time() < deadline:                # waits the same way; no shared module)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
    try:
        conn = Raw(port)
        conn.call("HELLO", "3")
        version = conn.call("INFO", "server").split(b"redis_version:")[1].split(b"\r\n")[0]
        listing = conn.call("COMMAND", "LIST")
        names = sorted(p.split(b"\r\n")[1].decode() for p in listing.split(b"$")[1:]
                       if "|" not in p.split(b"\r\n")[1].decode())
        data = {"redis_version": version.decode(), "info": {}, "docs": {}}
        for name in names:
            data["info"][name] = conn.call("COMMAND", "INFO", name).decode("utf-8")
            data["docs"][name] = conn.call("COMMAND", "DOCS", name).decode("utf-8")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(CONNECT_TIMEOUT_S)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(data, f, indent=0, sort_keys=True)
        f.write("\n")
    print("%d commands from redis-server %s -> %s" % (len(names), data["redis_version"], OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
