"""Key streams that stress eviction, shared by the eviction benchmarks.

Each generator takes (n requests, capacity C in keys, seed) and returns a ``Stream``: one
key id per request, an optional TTL (seconds) per key id, named phases and the burst / scan
windows inside them.  Every length is a multiple of C, so a stream has the same shape,
*relative to the cache*, at any cache size; n only decides how many periods it holds.  The
shapes follow the evsim simulator's workloads (``research/evsim_ahe/workloads.py``, C = 10k there),
so live results can be set beside the simulator's:

  zipf     Zipf(0.9) over a key space 100 C (a cache holds the head; frequency helps)
  shift    the Zipf hot set moves to fresh keys 8 times (phases of n/8: recency must follow)
  shift40  the same with 40 phases of n/40 (at n = 300 C a phase is 7.5 C requests)
  burst    background Zipf; at the end of every 50 C requests a 10 C-request burst sends
           half the requests to 0.2 C brand-new keys (uniform), never seen again
  scan     hot Zipf; at the end of every 50 C requests a 20 C-request scan window sends
           half the requests to cold keys read in order from a 40 C cyclic range
  mixed    burst -> stable -> scan -> stable, n/4 each; bursts of 2.5 C every 10 C
           requests, scans of 5 C every 10 C requests (same shares and key counts)
  ttl      stable Zipf; 30% of the keys (by id) carry a 10, 60 or 300 s TTL, 10% each

    burst, n = 150 C:   |bg ...... 40C ......|B 10C|bg .... 40C ....|B 10C|bg ... 40C ...|B|
    mixed, n = 4 q:     |bursts every 10C    |stable1            |scans every 10C |stable2|

TTLs are in seconds, so ``ttl`` is the one stream whose content depends on the request rate
(a 10 s TTL is 10k requests at 1k req/s and 500k at 50k req/s).  Streams shorter than
``MIN_PERIODS`` burst/scan periods are allowed but flagged by :func:`check_size`.

The second half of the module is the client both eviction benchmarks replay streams with:
``Server`` (a ferrumkv_py subprocess on a free port, checked by PID), ``Conn`` (a raw
pipelining RESP socket) and ``replay`` (read-through GET / SET on a miss, see its docstring).

Complexity: O(n) numpy work per stream (plus O(key space) once for the Zipf CDF).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import hiredis
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from ferrumkv_py import memory  # noqa: E402

ZIPF_S = 0.9
KEYSPACE_PER_CAPACITY = 100          # Zipf key space, in cache sizes
SHIFT_PHASES = 8
SHIFT40_PHASES = 40
BURST_PERIOD_C = 50                  # requests between burst starts, in cache sizes
BURST_LEN_C = 10                     # requests per burst, in cache sizes
BURST_KEYS_C = 0.2                   # new keys per burst, in cache sizes
BURST_SHARE = 0.5                    # share of a burst's requests that go to its new keys
SCAN_PERIOD_C = 50
SCAN_LEN_C = 20
SCAN_SHARE = 0.5                     # share of a scan window's requests that scan
SCAN_RANGE_C = 40                    # cyclic range of scanned keys, in cache sizes
MIXED_PERIOD_C = 10                  # burst / scan period inside mixed's phases
MIXED_BURST_LEN_C = 2.5
MIXED_SCAN_LEN_C = 5
TTL_BUCKETS = ((0, 100, 10), (100, 200, 60), (200, 300, 300))   # per-mille of ids, seconds
TTL_HASH_MULT = 2_654_435_761        # Knuth's multiplicative hash, picks TTL keys by id
PER_MILLE = 1000
PERM_STRIDE = 1_000_003              # prime stride: Zipf rank -> key id bijection
PERM_STRIDE_ALT = 999_983
SHIFT_SALT = 7919                    # moves the hot set to other ids in every phase
MIN_PERIODS = 3
VALUE = b"v" * 32                    # the client's value: every key costs the same bytes
KEY_FMT = b"key:%012d"
KEY_LEN = len(KEY_FMT % 0)
GET_FRAME = b"*2\r\n$3\r\nGET\r\n$%d\r\n%%b\r\n" % KEY_LEN
SET_FRAME = b"*3\r\n$3\r\nSET\r\n$%d\r\n%%b\r\n$%d\r\n%b\r\n" % (KEY_LEN, len(VALUE),
                                                                     VALUE)
SETEX_FRAME = (b"*5\r\n$3\r\nSET\r\n$%d\r\n%%b\r\n$%d\r\n%b\r\n$2\r\nEX\r\n$%%d\r\n%%d\r\n"
               % (KEY_LEN, len(VALUE), VALUE))
BATCH = 64                  # most GETs per round trip
PACE_S = 0.01               # a paced client sends a batch every PACE_S (rate * PACE_S GETs)
SERVER_START_S = 20


@dataclass
class Stream:
    keys: np.ndarray                            # int64 key id per request
    ttl: dict = field(default_factory=dict)     # key id -> TTL seconds (absent = none)
    phases: list = field(default_factory=list)  # (name, start, end), covering the stream
    events: list = field(default_factory=list)  # ("burst"|"scan", start, end) windows


_CDF: dict = {}


def _zipf(rng, universe: int, n: int, salt: int) -> np.ndarray:
    """n Zipf(ZIPF_S) draws over ``universe`` ids; rank r -> (r*stride + salt) mod universe,
    so the hot keys are spread over the ids and a new salt gives a new hot set."""
    cdf = _CDF.get(universe)
    if cdf is None:
        w = 1.0 / np.arange(1, universe + 1, dtype=np.float64) ** ZIPF_S
        cdf = _CDF[universe] = np.cumsum(w) / w.sum()
    rank = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), universe - 1)
    stride = PERM_STRIDE if universe % PERM_STRIDE else PERM_STRIDE_ALT
    return (rank.astype(np.int64) * stride + salt) % universe


def _len(c_units: float, cap: int) -> int:
    return max(1, int(round(c_units * cap)))


def zipf(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    return Stream(_zipf(rng, cap * KEYSPACE_PER_CAPACITY, n, 1), phases=[("stable", 0, n)])


def shift(n: int, cap: int, seed: int, phases: int = SHIFT_PHASES) -> Stream:
    rng = np.random.default_rng(seed)
    per = n // phases
    universe = cap * KEYSPACE_PER_CAPACITY
    parts = [_zipf(rng, universe, per if p < phases - 1 else n - per * p, SHIFT_SALT * (p + 1))
             for p in range(phases)]
    return Stream(np.concatenate(parts),
                  phases=[("p%d" % p, p * per, (p + 1) * per if p < phases - 1 else n)
                          for p in range(phases)])


def shift40(n: int, cap: int, seed: int) -> Stream:
    return shift(n, cap, seed, SHIFT40_PHASES)


def _windows(n: int, period: int, length: int):
    """(start, end) of the windows that close each period: [k*period - length, k*period)."""
    start = period - length
    while start < n:
        yield start, min(start + length, n)
        start += period


def _bursts(rng, keys: np.ndarray, cap: int, first_new: int, period: int, blen: int):
    """Overwrite BURST_SHARE of each window's requests with uniform draws over that burst's
    own BURST_KEYS_C * cap new ids.  Returns the windows and the next unused id."""
    nhot = _len(BURST_KEYS_C, cap)
    wins, nxt = [], first_new
    for a, b in _windows(len(keys), period, blen):
        idx = a + np.flatnonzero(rng.random(b - a) < BURST_SHARE)
        keys[idx] = nxt + rng.integers(0, nhot, idx.size)
        nxt += nhot
        wins.append(("burst", a, b))
    return wins, nxt


def _scans(rng, keys: np.ndarray, cap: int, base: int, period: int, slen: int, cursor=0):
    """Overwrite SCAN_SHARE of each window's requests with the next ids of a cyclic
    SCAN_RANGE_C * cap range starting at ``base`` (a key comes back only a range later)."""
    scan_range = _len(SCAN_RANGE_C, cap)
    wins = []
    for a, b in _windows(len(keys), period, slen):
        idx = a + np.flatnonzero(rng.random(b - a) < SCAN_SHARE)
        keys[idx] = base + (cursor + np.arange(idx.size)) % scan_range
        cursor = (cursor + idx.size) % scan_range
        wins.append(("scan", a, b))
    return wins, cursor


def _fill(n: int, wins: list, gap: str) -> list:
    """Phases covering [0, n): the windows with ``gap`` phases between them."""
    out, pos = [], 0
    for name, a, b in wins:
        if a > pos:
            out.append((gap, pos, a))
        out.append((name, a, b))
        pos = b
    if pos < n:
        out.append((gap, pos, n))
    return out


def burst(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    wins, _ = _bursts(rng, keys, cap, universe, _len(BURST_PERIOD_C, cap),
                      _len(BURST_LEN_C, cap))
    return Stream(keys, phases=_fill(n, wins, "bg"), events=wins)


def scan(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    wins, _ = _scans(rng, keys, cap, universe, _len(SCAN_PERIOD_C, cap), _len(SCAN_LEN_C, cap))
    return Stream(keys, phases=_fill(n, wins, "hot"), events=wins)


def mixed(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    q = n // 4
    period = _len(MIXED_PERIOD_C, cap)
    b = _zipf(rng, universe, q, 1)
    bwins, _ = _bursts(rng, b, cap, universe + _len(SCAN_RANGE_C, cap), period,
                       _len(MIXED_BURST_LEN_C, cap))
    s1 = _zipf(rng, universe, q, 1)
    sc = _zipf(rng, universe, q, 1)
    swins, _ = _scans(rng, sc, cap, universe, period, _len(MIXED_SCAN_LEN_C, cap))
    s2 = _zipf(rng, universe, n - 3 * q, 1)
    events = bwins + [(name, a + 2 * q, e + 2 * q) for name, a, e in swins]
    return Stream(np.concatenate([b, s1, sc, s2]), events=events,
                  phases=[("burst", 0, q), ("stable1", q, 2 * q), ("scan", 2 * q, 3 * q),
                          ("stable2", 3 * q, n)])


def ttl(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    ids = np.unique(keys)
    bucket = (ids * TTL_HASH_MULT) % PER_MILLE
    ttls = {}
    for lo, hi, seconds in TTL_BUCKETS:
        for k in ids[(bucket >= lo) & (bucket < hi)].tolist():
            ttls[k] = seconds
    return Stream(keys, ttl=ttls, phases=[("stable", 0, n)])


WORKLOADS = {"zipf": zipf, "shift": shift, "shift40": shift40, "burst": burst, "scan": scan,
             "mixed": mixed, "ttl": ttl}


def check_size(workload: str, n: int, cap: int) -> str:
    """A warning when n is too short for the workload's shape to show (else '')."""
    if workload in ("burst", "scan") and n < MIN_PERIODS * BURST_PERIOD_C * cap:
        return "%s: n = %.0f C holds fewer than %d periods of %d C" % (
            workload, n / cap, MIN_PERIODS, BURST_PERIOD_C)
    if workload == "mixed" and n // 4 < MIN_PERIODS * MIXED_PERIOD_C * cap:
        return "mixed: a quarter (%.0f C) holds fewer than %d bursts" % (n / 4 / cap, MIN_PERIODS)
    return ""


# ---- the read-through client and the server it drives (used by eviction_quality.py and
# ahe_convergence.py) ----

def key_cost() -> int:
    """Modelled bytes of one key of this benchmark (they are all the same size)."""
    return memory.entry_cost(KEY_FMT % 0, VALUE)


_PORTS_LOCK = threading.Lock()
_PORTS_GIVEN: set = set()        # ports handed to servers of this process (parallel runs)
_LIVE: set = set()               # running server subprocesses, stopped on SIGTERM / SIGINT
SERVER_START_ATTEMPTS = 5


def free_port() -> int:
    """A free port not handed out before by this process (two parallel runs cannot
    get the same one between the probe and the server's bind)."""
    with _PORTS_LOCK:
        while True:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _PORTS_GIVEN:
                _PORTS_GIVEN.add(port)
                return port


class Server:
    """A ferrumkv_py subprocess on a free port (stopped by PID).

    The first connection checks INFO's ``process_id`` against the subprocess: if the port was
    taken by something else, the server is restarted on another port.
    """

    def __init__(self, args: list[str]):
        for _ in range(SERVER_START_ATTEMPTS):
            if self._start(args):
                return
        raise RuntimeError("could not start ferrumkv_py with %s" % args)

    def _start(self, args: list[str]) -> bool:
        self.port = free_port()
        cmd = [sys.executable, "-m", "ferrumkv_py", "--bind", "127.0.0.1", "--save", "",
               "--port", str(self.port)] + args
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        _LIVE.add(self.proc)
        deadline = time.time() + SERVER_START_S
        while True:
            if self.proc.poll() is not None:
                break
            try:
                self.conn = Conn(self.port)
            except OSError:
                if time.time() > deadline:
                    break
                time.sleep(0.05)
                continue
            if self.conn.info("server").get("process_id") == str(self.proc.pid):
                return True
            self.conn.sock.close()             # someone else's server on that port
            break
        self._kill()
        return False

    def _kill(self) -> None:
        stop_process(self.proc)
        _LIVE.discard(self.proc)

    def stop(self) -> None:
        self.conn.sock.close()
        self._kill()


def stop_process(proc: subprocess.Popen, wait_s: float = 10) -> None:
    """Stop a server subprocess by its PID: SIGTERM, then SIGKILL after ``wait_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(wait_s)


def _stop_all(signum, _frame) -> None:
    for proc in list(_LIVE):
        if proc.poll() is None:
            proc.terminate()
    sys.exit(128 + signum)


class ExistingServer:
    """A server someone already runs (``--host``/``--port`` of the benches), to watch a run
    live on its console.  Each run CONFIG SETs the run's settings (given as ``--name
    value`` pairs, as for :class:`Server`), then FLUSHALL, CONFIG RESETSTAT and LITEHIT
    RESET (when the shadow is on): it starts from the same empty state a fresh server has.
    ``stop()`` only closes the connection."""

    def __init__(self, host: str, port: int, args: list[str], password: str = ""):
        self.host, self.port = host, port
        self.conn = Conn(port, host)
        if password:
            self._ok([b"AUTH", password.encode()])
        for name, value in zip(args[0::2], args[1::2]):
            self._ok([b"CONFIG", b"SET", name.lstrip("-").encode(), value.encode()])
        self._ok([b"FLUSHALL"])
        self._ok([b"CONFIG", b"RESETSTAT"])
        if self.conn.info("litehit").get("litehit_shadow") == "1":
            self._ok([b"LITEHIT", b"RESET"])

    def _ok(self, argv: list) -> None:
        reply = self.conn.pipeline([argv])[0]
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError("%s: %s" % (b" ".join(argv[:3]).decode(), reply))

    def stop(self) -> None:
        self.conn.sock.close()


def target_server(args, settings: list[str]):
    """The server a run uses: a fresh subprocess, or the one at ``args.port`` (flushed)."""
    if getattr(args, "port", None):
        return ExistingServer(args.host, args.port, settings, args.password or "")
    return Server(settings)


def add_target_args(ap) -> None:
    """``--host``/``--port``/``--password``: run against a server already running."""
    ap.add_argument("--host", default="127.0.0.1", help="with --port: the server's address")
    ap.add_argument("--port", type=int, help="run against this running server instead of "
                    "starting one (each run sets its config and FLUSHALLs it: not for data "
                    "you keep)")
    ap.add_argument("--password", help="AUTH password of the --port server")


class Conn:
    """A pipelining RESP client on a raw socket, hiredis for the replies."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=60)
        self.reader = hiredis.Reader()

    def send(self, commands: list[list[bytes]]) -> None:
        out = []
        for argv in commands:
            out.append(b"*%d\r\n" % len(argv))
            for a in argv:
                out.append(b"$%d\r\n%b\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def recv(self, count: int) -> list:
        replies = []
        while len(replies) < count:
            reply = self.reader.gets()
            if reply is False:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("server closed the connection")
                self.reader.feed(data)
                continue
            replies.append(reply)
        return replies

    def send_raw(self, frames: bytes) -> None:
        """Send requests already in RESP form (see replay: pre-formatted GET / SET)."""
        self.sock.sendall(frames)

    def pipeline(self, commands: list[list[bytes]]) -> list:
        self.send(commands)
        return self.recv(len(commands))

    def info(self, section: str) -> dict:
        text = self.pipeline([[b"INFO", section.encode()]])[0].decode()
        return dict(line.split(":", 1) for line in text.splitlines()
                    if ":" in line and not line.startswith("#"))


def replay(conn: Conn, stream, rate: float, progress=None) -> tuple[bytearray, float]:
    """Read-through replay of ``stream``: returns (hit flag per request, seconds).

    Two batches are in flight: batch b+1 is sent before b's replies are read.  A batch is
    cut before a key that is already in it or in the batch in flight, and the SETs of b's
    misses travel in front of batch b+2's GETs, so every GET sees its key as a client
    issuing requests one at a time would (a missed key is SET before it is read again).
    ``progress(done)`` is called after every batch.
    Complexity: O(n) client work, O(n / batch) writes.
    """
    keys = stream.keys.tolist()
    ttls = stream.ttl
    n = len(keys)
    batch_max = BATCH if not rate else max(1, min(BATCH, int(rate * PACE_S)))
    hit = bytearray(n)
    pending: list = []          # SETs of read misses, sent with the next batch
    inflight = None             # (start, names, number of SETs sent in front, key set)
    t0 = time.perf_counter()
    i = 0
    while i < n or inflight is not None:
        busy = inflight[3] if inflight is not None else ()
        seen = set()
        j = i
        while j < n and j - i < batch_max and keys[j] not in seen and keys[j] not in busy:
            seen.add(keys[j])
            j += 1
        new = None
        if j > i:
            names = [KEY_FMT % k for k in keys[i:j]]
            # frames formatted whole, not argument by argument: the client's CPU is what
            # limits the unthrottled rate (one Python client against one Python server)
            conn.send_raw(b"".join(pending) + b"".join([GET_FRAME % k for k in names]))
            new = (i, names, len(pending), seen)
            pending = []
            i = j
        if inflight is not None:
            start, names, nsets, _ = inflight
            replies = conn.recv(nsets + len(names))
            for rep in replies[:nsets]:
                if isinstance(rep, hiredis.ReplyError):
                    raise RuntimeError("server error: %s" % rep)
            for off, rep in enumerate(replies[nsets:]):
                if rep is None:
                    t = ttls.get(keys[start + off])
                    pending.append(SET_FRAME % names[off] if not t else
                                   SETEX_FRAME % (names[off], len(b"%d" % t), t))
                else:
                    hit[start + off] = 1
            if progress is not None:
                progress(start + len(names))
        inflight = new
        if rate and new is not None:
            ahead = t0 + i / rate - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
    elapsed = time.perf_counter() - t0
    if pending:
        conn.send_raw(b"".join(pending))
        for rep in conn.recv(len(pending)):
            if isinstance(rep, hiredis.ReplyError):
                raise RuntimeError("server error: %s" % rep)
    return hit, elapsed
