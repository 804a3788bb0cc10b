"""Hostile clients, side by side with redis-server in one run: what one client costs the others.

Scenarios (each against ferrumkv_py and redis-server, the same bytes to both):

* ``set64`` / ``set256``: a 64 MB and a 256 MB SET sent in 16 KB pieces: wall time from the
  first byte to ``+OK``, peak RSS growth of the server process, and the worst PING latency
  seen meanwhile by another client pinging in a loop;
* ``keys``: KEYS with a pathological pattern (``*a*a*a*a*b``) against 20 keys of 120
  ``a``s (the matcher is another helper's work: measured here, not fixed; a KEYS that
  takes over 60 s counts as hung and that server is killed, so it runs last);
* ``flushall``: FLUSHALL ASYNC on 1M keys: command time and worst PING during it and the
  second after.

Issue 26's rows, each side by side with redis-server (other clients' worst wait and the
server's RSS peak where they apply):

* ``srandmember`` / ``hrandfield`` / ``zrandmember``: a count of -10M on a 3-member key
  (row 9), the reply read whole; ``hrandfield_max``: the extreme count, an error;
* ``first_pfadd`` ``first_dump`` ``first_restore`` ``first_bitcount`` ``first_ahe``
  ``first_shadow``: the first use of a family's compiled kernels, each on a fresh pair of
  servers (row 10);
* ``lua_binary_chunk`` (row 1: accepted or not), ``lua_gc_stop`` (row 8: RSS after 300
  scripts behind ``collectgarbage('stop')``), ``busy_new_conn`` (row 7: SCRIPT KILL from a
  connection made while a script loops), ``lua_hook_less_loop`` (row 4: does anything
  answer while a metamethod loops under struct.pack; a frozen server is killed).

Targets (issue 14): the 64 MB SET within 3x redis-server's time; no other client waits more
than 100 ms in any scenario (KEYS excepted until the matcher lands).

    .venv/bin/python bench/hostile_clients.py                   # starts both servers
    .venv/bin/python bench/hostile_clients.py --port 6380 --redis-port 6379 --only set64

Seen here (2 vCPU VM shared with other jobs, load 3-6, 2026-12-01), ferrumkv against
redis-server 7.0.15 in the same run; before = the tree before issue 14's network work:

    scenario             ferrumkv      redis    ratio   before (ferrumkv)
    64 MB SET  time      0.228 s       0.194 s  1.17    13.75 s
               RSS       63.8 MB       61.5 MB  1.04
               PING      56 ms         22 ms            6324 ms
    256 MB SET time      0.935 s       0.538 s  1.74
               RSS       253 MB        256 MB   0.99
               PING      85 ms         21 ms
    FLUSHALL ASYNC 1M    0.003 s       0.000 s          0.353 s
               PING      21 ms         8 ms             350 ms
    (session 8: the slot layout's int per key had made it 0.055 s and a 55 ms PING; the
    index dicts now go to the lazy-free queue too: 0.008 s, PING 6.8 ms vs 2.6 ms)
    KEYS *a*a*a*a*b      3.18 s        0.000 s          (the matcher: another helper's)

Issue 26 (2026-12-02, same VM, loaded; worst PING of another client, ferrumkv vs
redis-server; before = main before the fix):

    SRANDMEMBER k -10M           84 ms      668 ms   RSS +5.6 vs +81 MB   before 8446 ms
    HRANDFIELD  k -10M WITHV.    64 ms     2989 ms   RSS +6.3 vs +155 MB
    ZRANDMEMBER k -10M WITHS.    58 ms     4531 ms   RSS +6.3 vs +119 MB
    first PFADD / DUMP / RESTORE 36 / 34 / 77 ms  (before 1305 / 788 / 1047 ms)
    first BITCOUNT / allkeys-ahe / litehit-shadow yes   28 / 44 / 72 ms
                                      (before 162 / 644 / 644 ms; RSS +10-120 MB still)
    SCRIPT KILL, new connection  0.008 s    0.006 s   (before: no answer in 10 s)

Writes a text report to ``--out`` (default ``out/hostile_clients.txt``), never under docs/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

from _ports import free_port, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIECE_BYTES = 16 * 1024
PING_GAP_S = 0.002            # the watching client's pause between PINGs
RSS_POLL_S = 0.005
FLUSH_KEYS = 1_000_000
FLUSH_BATCH = 1000            # keys per MSET while filling
KEYS_COUNT = 20               # long keys for the KEYS scenario
KEY_LEN = 120
KEYS_STARS = 4                # '*a' repeated: a backtracking matcher is exponential in it
KEYS_TIMEOUT_S = 60.0         # past this KEYS counts as hung (the server is then killed)
START_TIMEOUT_S = 30.0


def pid_of(port: int, started: dict) -> int | None:
    return started.get(port)


def rss_kb(pid: int | None) -> int:
    if pid is None:
        return 0
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def read_reply(sock: socket.socket, buf: bytearray) -> bytes:
    """One simple reply line (``+OK``, ``-ERR``, ``:n``) or a whole array/bulk, crudely."""
    while b"\r\n" not in buf:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    i = buf.index(b"\r\n")
    line = bytes(buf[:i])
    del buf[:i + 2]
    if line[:1] == b"*":
        for _ in range(max(0, int(line[1:]))):
            read_reply(sock, buf)
    elif line[:1] == b"$" and int(line[1:]) >= 0:
        need = int(line[1:]) + 2
        while len(buf) < need:
            buf += sock.recv(1 << 20)
        del buf[:need]
    return line


class Watcher:
    """Another client PINGing in a loop; ``worst_ms`` is its slowest round trip."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.worst_ms = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        buf = bytearray()
        while not self.stop.is_set():
            t = time.perf_counter()
            self.sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            read_reply(self.sock, buf)
            self.worst_ms = max(self.worst_ms, (time.perf_counter() - t) * 1000)
            time.sleep(PING_GAP_S)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        self.sock.close()


class RssPeak:
    def __init__(self, pid):
        self.pid = pid
        self.base = rss_kb(pid)
        self.peak = self.base
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_kb(self.pid))
            time.sleep(RSS_POLL_S)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)


def command(port: int, *args: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                   for a in args))
        return read_reply(s, bytearray())


def big_set(port: int, pid, size_mb: int) -> dict:
    payload = b"v" * (size_mb << 20)
    frame = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n" % len(payload) + payload + b"\r\n"
    del payload
    with Watcher(port) as w, RssPeak(pid) as rss:
        s = socket.create_connection(("127.0.0.1", port))
        t = time.perf_counter()
        view = memoryview(frame)
        for i in range(0, len(frame), PIECE_BYTES):
            s.sendall(view[i:i + PIECE_BYTES])
        line = read_reply(s, bytearray())
        elapsed = time.perf_counter() - t
        s.close()
    command(port, b"DEL", b"big")
    return {"time_s": elapsed, "rss_growth_mb": (rss.peak - rss.base) / 1024,
            "worst_ping_ms": w.worst_ms, "reply": line.decode()}


def keys_scenario(port: int, pid, stars: int = KEYS_STARS) -> dict:
    """KEYS '*a*a...*b' over long keys of 'a's: no key matches, and a backtracking matcher
    tries every way to place the stars (Redis 7.0's stringmatchlen gives up early)."""
    for i in range(KEYS_COUNT):
        command(port, b"SET", b"a" * KEY_LEN + b"%d" % i, b"1")
    with Watcher(port) as w:
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(KEYS_TIMEOUT_S)
            pattern = b"*a" * stars + b"b"
            s.sendall(b"*2\r\n$4\r\nKEYS\r\n$%d\r\n%b\r\n" % (len(pattern), pattern))
            try:
                read_reply(s, bytearray())
            except socket.timeout:
                if pid is not None:
                    os.kill(pid, 9)     # hung in KEYS: this run's server is gone
                w.stop.set()
                return {"time_s": float("inf"), "worst_ping_ms": float("inf")}
        elapsed = time.perf_counter() - t
    command(port, b"FLUSHALL")
    return {"time_s": elapsed, "worst_ping_ms": w.worst_ms}


def fill(port: int, n: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as s:
        buf = bytearray()
        sent = 0
        for start in range(0, n, FLUSH_BATCH):
            args = [b"MSET"]
            for i in range(start, min(n, start + FLUSH_BATCH)):
                args += [b"key:%012d" % i, b"xxxxxxxxxx"]
            s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                       for a in args))
            sent += 1
            if sent % 50 == 0:
                for _ in range(50):
                    read_reply(s, buf)
                sent = 0
        for _ in range(sent):
            read_reply(s, buf)


def flushall_scenario(port: int, pid) -> dict:
    fill(port, FLUSH_KEYS)
    with Watcher(port) as w:
        t = time.perf_counter()
        command(port, b"FLUSHALL", b"ASYNC")
        elapsed = time.perf_counter() - t
        time.sleep(1.0)
    return {"time_s": elapsed, "worst_ping_ms": w.worst_ms}


RAND_DRAWS = 10_000_000       # |count| of the random-member scenarios (issue 26 row 9)
RAND_TIMEOUT_S = 120.0


def drain(sock: socket.socket, nbytes: int) -> int:
    """Read ``nbytes`` (or until the server closes); returns the bytes read."""
    got = 0
    while got < nbytes:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    return got


def random_members(port: int, pid, args: list, frame_bytes: int) -> dict:
    """SRANDMEMBER / HRANDFIELD / ZRANDMEMBER with a huge negative count on a 3-member key
    of one-byte members (every pick's frame is ``frame_bytes``): the client reads the whole
    reply; another client's worst PING and the server's RSS peak meanwhile."""
    command(port, b"DEL", b"rk")
    kind = args[0].upper()
    if kind == b"SRANDMEMBER":
        command(port, b"SADD", b"rk", b"a", b"b", b"c")
    elif kind == b"HRANDFIELD":
        command(port, b"HSET", b"rk", b"a", b"1", b"b", b"2", b"c", b"3")
    else:
        command(port, b"ZADD", b"rk", b"1", b"a", b"2", b"b", b"3", b"c")
    full = args[:1] + [b"rk"] + args[1:]
    draws = abs(int(args[1]))
    frames = draws * (2 if len(args) > 2 else 1)
    expect = len(b"*%d\r\n" % frames) + draws * frame_bytes
    with Watcher(port) as w, RssPeak(pid) as rss:
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.settimeout(RAND_TIMEOUT_S)
            s.sendall(b"*%d\r\n" % len(full) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                        for a in full))
            first = s.recv(64)
            if first.startswith(b"-"):
                got = len(first)
            else:
                got = len(first) + drain(s, expect - len(first))
        elapsed = time.perf_counter() - t
    command(port, b"DEL", b"rk")
    return {"time_s": elapsed, "rss_growth_mb": (rss.peak - rss.base) / 1024,
            "worst_ping_ms": w.worst_ms, "reply_mb": got / 1e6}


FIRST_USE_SETTLE_S = 1.5     # watched after the reply: a background load shares the GIL
RESTORE_PAYLOAD = b"\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce"  # DUMP of "v", 7.0
FIRST_USE = {     # issue 26 row 10: the first use of a family's compiled kernels
    "first_pfadd": [[b"PFADD", b"hll", b"a", b"b"]],
    "first_dump": [[b"SET", b"dk", b"v"], [b"DUMP", b"dk"]],
    "first_restore": [[b"RESTORE", b"rk", b"0", RESTORE_PAYLOAD]],
    "first_bitcount": [[b"SET", b"bk", b"v"], [b"BITCOUNT", b"bk"]],
    "first_ahe": [[b"CONFIG", b"SET", b"maxmemory", b"100mb"],
                  [b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-ahe"]],
    "first_shadow": [[b"CONFIG", b"SET", b"litehit-shadow", b"yes"]],
}


def first_use(port: int, pid, commands: list) -> dict:
    """On a fresh server: the commands that first use a family of kernels, one client,
    while another PINGs; its worst wait and the RSS growth, the load's aftermath included
    (``FIRST_USE_SETTLE_S``).  redis-server has no such load (or no such command: the
    litehit ones answer an error there, measured the same way)."""
    with Watcher(port) as w, RssPeak(pid) as rss:
        t = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as s:
            for args in commands:
                s.sendall(b"*%d\r\n" % len(args) + b"".join(
                    b"$%d\r\n%b\r\n" % (len(a), a) for a in args))
                read_reply(s, bytearray())
        elapsed = time.perf_counter() - t
        time.sleep(FIRST_USE_SETTLE_S)
    return {"time_s": elapsed, "rss_growth_mb": (rss.peak - rss.base) / 1024,
            "worst_ping_ms": w.worst_ms}


BUSY_THRESHOLD_MS = b"100"
HANG_LIMIT_S = 10.0            # past this a server that answers nothing counts as frozen
GC_STOP_SCRIPTS = 300          # scripts run after collectgarbage('stop') (issue 26 row 8)
GC_SCRIPT = (b"local t = {} for i = 1, 20000 do t[i] = tostring(i) .. 'x' end "
             b"return #t")


def _send(sock, *args: bytes) -> None:
    sock.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a)
                                                   for a in args))


def busy_new_connection(port: int, pid) -> dict:
    """Issue 26 row 7: a script loops; a connection made while it is busy sends SCRIPT
    KILL.  kill_s: from that connection's connect to its reply (HANG_LIMIT_S if none);
    killed: 1 when the reply was +OK."""
    command(port, b"CONFIG", b"SET", b"busy-reply-threshold", BUSY_THRESHOLD_MS)
    looper = socket.create_connection(("127.0.0.1", port))
    _send(looper, b"EVAL", b"while true do end", b"0")
    time.sleep(0.5)
    t = time.perf_counter()
    killed = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_LIMIT_S) as s:
            _send(s, b"SCRIPT", b"KILL")
            killed = int(read_reply(s, bytearray()) == b"+OK")
    except (socket.timeout, ConnectionError):
        pass
    elapsed = time.perf_counter() - t
    if not killed and pid is not None:
        os.kill(pid, 9)         # still looping: this run's server is gone
    looper.close()
    return {"kill_s": elapsed, "killed": killed}


def lua_gc_stop(port: int, pid) -> dict:
    """Issue 26 row 8: collectgarbage('stop') in one script, then ordinary scripts that
    each leave garbage: the server's RSS growth and another client's worst PING."""
    with Watcher(port) as w, RssPeak(pid) as rss:
        command(port, b"EVAL", b"collectgarbage('stop') return 1", b"0")
        with socket.create_connection(("127.0.0.1", port)) as s:
            buf = bytearray()
            for _ in range(GC_STOP_SCRIPTS):
                _send(s, b"EVAL", GC_SCRIPT, b"0")
                read_reply(s, buf)
    command(port, b"EVAL", b"collectgarbage('restart') collectgarbage() return 1", b"0")
    return {"rss_growth_mb": (rss.peak - rss.base) / 1024, "worst_ping_ms": w.worst_ms}


def lua_binary_chunk(port: int, pid) -> dict:
    """Issue 26 row 1: is a compiled chunk run?  accepted: 1 when loadstring of a dumped
    function returned its value (Redis refuses binary chunks)."""
    line = command(port, b"EVAL",
                   b"return loadstring(string.dump(function() return 1 end))()", b"0")
    return {"accepted": int(line == b":1")}


def lua_hook_less_loop(port: int, pid) -> dict:
    """Issue 26 row 4: a __tostring metamethod that loops, run by struct.pack: does a new
    connection still get an answer (PING: -BUSY counts) within HANG_LIMIT_S?  The
    server is killed when it does not (run it last)."""
    command(port, b"CONFIG", b"SET", b"busy-reply-threshold", BUSY_THRESHOLD_MS)
    looper = socket.create_connection(("127.0.0.1", port))
    _send(looper, b"EVAL", b"return struct.pack('s', setmetatable({}, {__tostring = "
          b"function() while true do end end}))", b"0")
    time.sleep(0.5)
    t = time.perf_counter()
    answered = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=HANG_LIMIT_S) as s:
            _send(s, b"PING")
            read_reply(s, bytearray())
            answered = 1
            _send(s, b"SCRIPT", b"KILL")
            read_reply(s, bytearray())
    except (socket.timeout, ConnectionError):
        pass
    elapsed = time.perf_counter() - t
    if not answered and pid is not None:
        os.kill(pid, 9)
    looper.close()
    return {"answer_s": elapsed, "answered": answered}


SCENARIOS = {     # KEYS last: a matcher that hangs takes its server down
    "lua_binary_chunk": lua_binary_chunk,
    "lua_gc_stop": lua_gc_stop,
    "srandmember": lambda port, pid: random_members(
        port, pid, [b"SRANDMEMBER", b"-%d" % RAND_DRAWS], 7),
    "hrandfield": lambda port, pid: random_members(
        port, pid, [b"HRANDFIELD", b"-%d" % RAND_DRAWS, b"WITHVALUES"], 14),
    "zrandmember": lambda port, pid: random_members(
        port, pid, [b"ZRANDMEMBER", b"-%d" % RAND_DRAWS, b"WITHSCORES"], 14),
    "hrandfield_max": lambda port, pid: random_members(
        port, pid, [b"HRANDFIELD", b"-9223372036854775807", b"WITHVALUES"], 14),
    "set64": lambda port, pid: big_set(port, pid, 64),
    "set256": lambda port, pid: big_set(port, pid, 256),
    "flushall": flushall_scenario,
    "keys": keys_scenario,
    "busy_new_conn": busy_new_connection,     # these may kill a frozen server: last
    "lua_hook_less_loop": lua_hook_less_loop,
}


def start_servers(args) -> tuple[int, int, dict, list]:
    started: dict = {}
    procs = []
    ours, theirs = args.port, args.redis_port
    if ours is None:
        ours = free_port()
        p = subprocess.Popen([sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(ours)],
                             cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        started[ours] = p.pid
    if theirs is None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server not found (or pass --redis-port)")
        theirs = free_port()
        p = subprocess.Popen([exe, "--port", str(theirs), "--save", "", "--appendonly", "no",
                              "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(p)
        started[theirs] = p.pid
    wait_port(ours, timeout_s=START_TIMEOUT_S)
    wait_port(theirs, timeout_s=START_TIMEOUT_S)
    return ours, theirs, started, procs


def stop_all(procs: list) -> None:
    """Stop the servers this script started, by their PIDs."""
    for p in procs:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(30)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, help="a running ferrumkv_py (default: start one)")
    ap.add_argument("--redis-port", type=int, help="a running redis-server (default: start)")
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS) + sorted(FIRST_USE),
                    help="scenarios to run")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "hostile_clients.txt"))
    args = ap.parse_args(argv)
    names = args.only or list(FIRST_USE) + list(SCENARIOS)
    lines = []
    ours, theirs, started, procs = start_servers(args)
    try:
        for name in names:
            row = {}
            if name in FIRST_USE:     # a fresh pair of servers: nothing loaded yet
                fresh = argparse.Namespace(port=None, redis_port=None)
                f_ours, f_theirs, f_started, f_procs = start_servers(fresh)
                try:
                    for label, port in (("ferrumkv", f_ours), ("redis", f_theirs)):
                        row[label] = first_use(port, f_started.get(port), FIRST_USE[name])
                finally:
                    stop_all(f_procs)
            else:
                for label, port in (("ferrumkv", ours), ("redis", theirs)):
                    row[label] = SCENARIOS[name](port, started.get(port))
            a, b = row["ferrumkv"], row["redis"]
            for metric in a:
                if metric == "reply":
                    continue
                ratio = a[metric] / b[metric] if b[metric] else float("inf")
                lines.append("%-9s %-14s ferrumkv %10.3f  redis %10.3f  ratio %7.2f"
                             % (name, metric, a[metric], b[metric], ratio))
                print(lines[-1], flush=True)
    finally:
        stop_all(procs)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
