"""Shared fixtures: an in-process ferrumkv server on a free port, clients, a real redis-server.

``server`` runs ferrumkv_py's Server on its own event loop in a background thread (port 0,
so tests never collide), ``r`` / ``r2`` are redis-py clients speaking RESP3 / RESP2, and
``raw`` sends bytes and reads the reply bytes.  ``redis_server`` starts Debian's redis-server
7.0 for differential tests (skipped when the binary is missing).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from ferrumkv_py.config import Config
from ferrumkv_py.server import Server


class ServerThread:
    """A ferrumkv Server on port 0 in a daemon thread; ``call(fn)`` runs fn on its loop."""

    def __init__(self, **overrides):
        config = Config()
        config.set("port", "0")
        # no dump.rdb in the checkout: no save rules, and files go to a temporary dir
        # (a test may set either; the dir is removed when the server stops)
        self.tmpdir = tempfile.mkdtemp(prefix="ferrumkv-test-")
        config.set("save", "")
        config.set("dir", self.tmpdir)
        for name, value in overrides.items():
            config.set(name.replace("_", "-"), str(value))
        self.server = Server(config)
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("server did not start")
        self.port = self.server.port

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.start())
        self._ready.set()
        self.loop.run_until_complete(self.server.serve_forever())
        self.loop.run_until_complete(asyncio.sleep(0.01))

    def call(self, fn, *args):
        """Run ``fn(*args)`` on the server's loop and return its result (thread-safe)."""
        async def wrapper():
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(wrapper(), self.loop).result(10)

    def stop(self):
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.server.request_shutdown)
            self.thread.join(10)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _compiled_kernels():
    """Compile (or load from numba's cache) the server's numba kernels once, in this thread,
    before any test's server runs.  The server compiles each at its first use (the eviction
    kernel when a policy first meets a maxmemory, HyperLogLog's at the first PFADD, the
    litehit shadow's when it is switched on), so on a fresh clone, with no numba cache yet,
    a test's first PFADD waited ~5.7 s in the server thread (eviction 1.8 s, the shadow 8 s,
    measured here): past redis-py 8's 5 s socket timeout, after which it sends the command
    again (CI once counted 301 reads of 300).  The tests check what a command does, not
    how long a cold compile takes."""
    from ferrumkv_py import hll, lzf  # noqa: F401  (both compile at import)
    from ferrumkv_py import shadow
    from ferrumkv_py.eviction import kernel
    kernel.warm()
    shadow.load_kernels()
    from ferrumkv_py.persistence import rdb_scan
    rdb_scan.warm()                   # RDB loading's string scanner


@pytest.fixture
def server():
    s = ServerThread()
    yield s
    s.stop()


@pytest.fixture
def make_server():
    """Factory: ``make_server(maxmemory="1mb", maxmemory_policy="allkeys-lru")``."""
    started = []

    def make(**overrides):
        s = ServerThread(**overrides)
        started.append(s)
        return s
    yield make
    for s in started:
        s.stop()


@pytest.fixture
def r(server):
    import redis
    client = redis.Redis(port=server.port, protocol=3, socket_timeout=10)
    yield client
    client.close()


@pytest.fixture
def r2(server):
    import redis
    client = redis.Redis(port=server.port, protocol=2, socket_timeout=10)
    yield client
    client.close()


class RawConn:
    """A plain socket: ``send(b"...")`` then ``recv_until(b"\\r\\n")`` / ``read_reply()``."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def send(self, data: bytes):
        self.sock.sendall(data)

    def recv_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv_line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        i = self.buf.find(b"\r\n")
        if i < 0:
            out, self.buf = self.buf, b""
            return out
        out, self.buf = self.buf[:i + 2], self.buf[i + 2:]
        return out

    def read_reply(self) -> bytes:
        """One complete RESP reply, as raw bytes."""
        line = self.recv_line()
        if not line:
            return b""
        t = line[:1]
        if t in (b"$", b"=", b"!"):
            n = int(line[1:-2])
            return line if n < 0 else line + self.recv_exact(n + 2)
        if t in (b"*", b"~", b">", b"%"):
            n = int(line[1:-2])
            if n < 0:
                return line
            items = n * 2 if t == b"%" else n
            return line + b"".join(self.read_reply() for _ in range(items))
        return line

    def closed(self, timeout=2.0) -> bool:
        """True if the server closed the connection (EOF) within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1)
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
        if data:
            self.buf += data
            return False
        return True

    def close(self):
        self.sock.close()


@pytest.fixture
def raw(server):
    conns = []

    def connect():
        c = RawConn(server.port)
        conns.append(c)
        return c
    yield connect
    for c in conns:
        c.close()


def command_frame(*args) -> bytes:
    """One command as a client sends it: a RESP array of bulk strings (bytes as they are,
    str as UTF-8, anything else through str())."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(a), a))
    return b"".join(parts)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_redis_server(*extra: str):
    """Generator behind the redis-server fixtures: start Debian's redis-server 7 on a free
    port (no persistence, ``extra`` arguments appended), yield the port, stop it by PID.
    Skips when the binary is missing (fails in CI, which installs it)."""
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is required in CI (apt-get install redis-server)")
        pytest.skip("redis-server not installed")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--save", "", "--appendonly", "no",
                             "--bind", "127.0.0.1", *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10     # (scripts/gen_command_data.py waits the same way:
        while time.time() < deadline:   # scripts do not import the tests)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server 7 on a free port (no persistence), for differential tests."""
    yield from run_redis_server()
