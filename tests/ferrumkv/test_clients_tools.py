"""The real tools against a real server process: redis-cli (command, piped and interactive
mode) and redis-benchmark (every default test, pipelined, many clients).

Marked ``needs_benchmark``: skipped where the Debian binaries are missing, except under CI
(``CI=true``), where they must be present and these tests fail instead.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import socket
import subprocess
import sys
import time

import pytest
import redis

pytestmark = pytest.mark.needs_benchmark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_TESTS = ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP",
               "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LRANGE_100", "LRANGE_300",
               "LRANGE_500", "LRANGE_600", "MSET"]


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("%s is required in CI (apt-get install redis-tools)" % name)
        pytest.skip("%s not installed" % name)
    return path


@pytest.fixture(scope="module")
def port():
    """A ferrumkv_py server process on a free port (killed by PID afterwards)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "ferrumkv_py", "--port", str(free),
                             "--save", ""],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", free), timeout=0.5).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
    yield free
    proc.terminate()
    try:
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def run(args: list, stdin: bytes = b"", timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(args, input=stdin, capture_output=True, timeout=timeout)


# ---- redis-cli ----

def test_cli_command_mode(port):
    cli = tool("redis-cli")
    out = run([cli, "-p", str(port), "ping"])
    assert out.returncode == 0 and out.stdout == b"PONG\n"
    out = run([cli, "-p", str(port), "set", "cli:k", "hello world"])
    assert out.stdout == b"OK\n"
    out = run([cli, "-p", str(port), "get", "cli:k"])
    assert out.stdout == b"hello world\n"
    out = run([cli, "-p", str(port), "-3", "hello", "3"])
    assert out.returncode == 0 and b"proto" in out.stdout
    out = run([cli, "-p", str(port), "nosuchcommand"])  # no tty: no "(error)" prefix
    assert out.stdout.startswith(b"ERR unknown command 'nosuchcommand', with args beginning")


def test_cli_piped_mode(port):
    """Piped stdin runs the REPL, which asks COMMAND DOCS first for its hints."""
    cli = tool("redis-cli")
    out = run([cli, "-p", str(port)], stdin=b"SET pipe:a 1\nINCR pipe:a\nGET pipe:a\n"
                                              b"LPUSH pipe:l x y\nLRANGE pipe:l 0 -1\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout == b"OK\n2\n2\n2\ny\nx\n"


CURSOR_QUERY = b"\x1b[6n"          # linenoise asks the terminal where the cursor is
CURSOR_ANSWER = b"\x1b[1;1R"       # ... and a terminal answers row 1, column 1
ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")  # colours and cursor moves, ignored when matching


def _read_until(fd: int, pattern: bytes, then: bytes = b"", timeout: float = 10.0) -> bytes:
    """Read the pty until ``pattern`` shows (followed by ``then``: the next prompt, so that
    typing starts only once the line editor is ready), answering terminal queries."""
    buf = b""
    deadline = time.monotonic() + timeout

    def done():
        plain = ANSI.sub(b"", buf)
        i = plain.find(pattern)
        return i >= 0 and then in plain[i + len(pattern):]

    while not done():
        left = deadline - time.monotonic()
        assert left > 0, "timed out waiting for %r; screen so far: %r" % (pattern, buf)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            if CURSOR_QUERY in chunk:
                os.write(fd, CURSOR_ANSWER * chunk.count(CURSOR_QUERY))
            buf += chunk
    return ANSI.sub(b"", buf)


def test_cli_interactive_session(port):
    """A person at a terminal: commands, replies, ``help set`` and a clean quit."""
    cli = tool("redis-cli")
    master, slave = pty.openpty()
    proc = subprocess.Popen([cli, "-p", str(port)], stdin=slave, stdout=slave, stderr=slave,
                            close_fds=True)
    os.close(slave)
    prompt = b"127.0.0.1:%d> " % port
    try:
        _read_until(master, prompt)
        # linenoise redraws the line (and its hint) at every key, so wait for the reply
        os.write(master, b"set tty:k v1\r")
        _read_until(master, b"OK", prompt)
        os.write(master, b"get tty:k\r")
        _read_until(master, b'"v1"', prompt)
        os.write(master, b"help set\r")
        screen = _read_until(master, b"group: string", prompt)
        assert b"SET key value [NX|XX]" in screen and b"summary:" in screen
        os.write(master, b"nosuchcmd\r")
        _read_until(master, b"(error) ERR unknown command 'nosuchcmd'", prompt)
        os.write(master, b"select 2\r")
        _read_until(master, b"OK", b"127.0.0.1:%d[2]> " % port)
        os.write(master, b"quit\r")
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)


# ---- redis-benchmark ----

def _check_benchmark(out: subprocess.CompletedProcess, tests: list) -> None:
    text = out.stdout.decode(errors="replace").replace("\r", "\n")
    assert out.returncode == 0, (out.stderr.decode(errors="replace"), text[-2000:])
    assert b"Error from server" not in out.stderr + out.stdout
    for name in tests:
        assert re.search(r"^ ?%s.*: [\d.]+ requests per second" % re.escape(name), text, re.M), \
            name


def test_benchmark_every_default_test(port):
    bench = tool("redis-benchmark")
    out = run([bench, "-p", str(port), "-q", "-n", "20000"])
    _check_benchmark(out, BENCH_TESTS)


def test_benchmark_pipelined_random_keys(port):
    bench = tool("redis-benchmark")
    tests = [t for t in BENCH_TESTS if not t.startswith("LRANGE")]  # keep the suite quick
    out = run([bench, "-p", str(port), "-q", "-n", "20000", "-P", "16", "-r", "100000",
               "-d", "100", "-t", ",".join(tests)])
    _check_benchmark(out, tests)


def test_benchmark_many_clients(port):
    bench = tool("redis-benchmark")
    out = run([bench, "-p", str(port), "-q", "-n", "10000", "-c", "200",
               "-t", "ping,set,get,incr,lpush,lpop,sadd,hset,zadd,mset"])
    _check_benchmark(out, ["PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "LPOP",
                           "SADD", "HSET", "ZADD", "MSET"])
    c = redis.Redis(port=port, protocol=2)
    deadline = time.monotonic() + 10
    while c.info("clients")["connected_clients"] > 1:  # every benchmark client went away
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert c.info("stats")["total_connections_received"] >= 200
