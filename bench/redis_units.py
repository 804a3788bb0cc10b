"""Redis 7.0.15's own Tcl test units against ferrumkv_py and redis-server, side by side.

For each unit named, a fresh server is started on a free 127.0.0.1 port (ours, then
redis-server for the comparison), the unit runs in the harness's external-server mode

    ./runtest --host 127.0.0.1 --port P --single <unit> --tags -needs:repl --tags -needs:debug

with a per-unit time limit, the server is stopped by its PID, and the harness output is
parsed: ``[ok]`` lines count as passed, ``[err]`` as failed, ``[exception]`` (the harness
gave up on the unit) and the time limit as a stop; what a unit never reached is not counted.
One table comes out: unit, ours passed / failed / stopped, redis-server's the same.  With
``--diff`` the tests that pass on redis-server and not here are listed per unit.

This script fetches nothing.  It needs a Redis 7.0.15 source tree (the Tcl harness and its
units; the tree is not ours to commit, so this is not CI) with ``src/redis-server``,
``src/redis-cli`` and ``src/redis-benchmark`` built or linked to a 7.0 install, and
``tclsh`` (Debian: ``apt-get install tcl redis-server``).  For example:

    git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis.git redis-7.0.15
    # or: git -C a-redis-clone archive --prefix=redis-7.0.15/ 7.0.15 | tar -x
    cd redis-7.0.15 && for b in redis-server redis-cli redis-benchmark redis-check-aof \\
        redis-check-rdb; do ln -sf /usr/bin/$b src/$b; done     # or: make

Then, from the repository's root:

    .venv/bin/python bench/redis_units.py --redis-tree ../redis-7.0.15 unit/type/hash unit/type/zset
    .venv/bin/python bench/redis_units.py --redis-tree ../redis-7.0.15 --all --diff

``--ours-only`` / ``--redis-only`` run one side; ``--unit-timeout`` (default 300 s) bounds
each unit's run on each side.  The runs are sequential: one unit and one server at a time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from _ports import free_port, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT_TIMEOUT_S = 300.0
STOP_GRACE_S = 10.0
TAGS = ("--tags", "-needs:repl", "--tags", "-needs:debug")
# The 32 units of issue 34's first run, then the 9 it adds (unit/type/* under their names).
DEFAULT_UNITS = (
    "unit/acl", "unit/auth", "unit/bitfield", "unit/bitops", "unit/dump", "unit/expire",
    "unit/functions", "unit/geo", "unit/hyperloglog", "unit/info", "unit/introspection",
    "unit/keyspace", "unit/latency-monitor", "unit/lazyfree", "unit/limits", "unit/multi",
    "unit/networking", "unit/obuf-limits", "unit/other", "unit/pause", "unit/pubsub",
    "unit/pubsubshard", "unit/querybuf", "unit/scan", "unit/scripting", "unit/slowlog",
    "unit/sort", "unit/tracking", "unit/type/hash", "unit/type/list", "unit/type/set",
    "unit/type/zset",
    "unit/maxmemory", "unit/type/string", "unit/type/incr", "unit/info-command",
    "unit/protocol", "unit/quit", "unit/introspection-2",
)
_OK = re.compile(r"^\[ok\]: (.*?)(?: \(\d+ ms\))?$")
_ERR = re.compile(r"^\[err\]: (.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Result:
    """One unit's run on one server: the names passed and failed, and why it stopped."""

    def __init__(self):
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.stopped = ""        # "", "exception", "timeout", "server died", "start failed"
        self.seconds = 0.0

    def cell(self) -> str:
        stop = {"": "", "exception": " exc", "timeout": " TIMEOUT",
                "server died": " DIED", "start failed": " NOSTART"}[self.stopped]
        return "%4d %4d%s" % (len(self.passed), len(self.failed), stop)


def parse_output(text: str, res: Result) -> None:
    """Fill ``res`` from the harness's output (ANSI colours stripped)."""
    for raw in text.splitlines():
        line = _ANSI.sub("", raw).strip()
        m = _OK.match(line)
        if m:
            res.passed.append(m.group(1))
            continue
        m = _ERR.match(line)
        if m:
            res.failed.append(m.group(1))
        elif line.startswith("[exception]"):
            res.stopped = res.stopped or "exception"
        elif line.startswith("[TIMEOUT]"):
            res.stopped = res.stopped or "timeout"


def start_server(kind: str, port: int, python: str) -> subprocess.Popen:
    if kind == "ours":
        cmd = [python, "-m", "ferrumkv_py", "--port", str(port), "--bind", "127.0.0.1"]
        cwd = ROOT
    else:
        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("redis-server not found (use --ours-only)")
        cmd = [exe, "--port", str(port), "--save", "", "--appendonly", "no",
               "--bind", "127.0.0.1"]
        cwd = None
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen, group: bool = False) -> None:
    """Stop a process we started (its own process group for the harness), by PID."""
    if proc.poll() is not None:
        return
    try:
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
        proc.wait(STOP_GRACE_S)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except ProcessLookupError:
            pass
        proc.wait(STOP_GRACE_S)


def run_unit(tree: str, unit: str, kind: str, timeout_s: float, python: str,
             log_dir: str | None) -> Result:
    """A fresh server, the unit against it, the server stopped.  Complexity: one unit."""
    res = Result()
    port = free_port()
    server = start_server(kind, port, python)
    try:
        try:
            wait_port(port, server)
        except RuntimeError:
            res.stopped = "start failed"
            return res
        t = time.monotonic()
        harness = subprocess.Popen(
            ["./runtest", "--host", "127.0.0.1", "--port", str(port), "--single", unit,
             *TAGS], cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, _ = harness.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop(harness, group=True)
            out, _ = harness.communicate()
            res.stopped = "timeout"
        res.seconds = time.monotonic() - t
        text = out.decode("utf-8", "replace")
        parse_output(text, res)
        if server.poll() is not None and not res.stopped:
            res.stopped = "server died"
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)
            name = "%s-%s.log" % (unit.replace("/", "_"), kind)
            with open(os.path.join(log_dir, name), "w") as f:
                f.write(text)
        return res
    finally:
        stop(server)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("units", nargs="*", help="units such as unit/type/hash")
    ap.add_argument("--redis-tree", required=True, help="a Redis 7.0.15 source tree")
    ap.add_argument("--all", action="store_true", help="the 41 units of issue 34")
    ap.add_argument("--unit-timeout", type=float, default=UNIT_TIMEOUT_S)
    ap.add_argument("--ours-only", action="store_true")
    ap.add_argument("--redis-only", action="store_true")
    ap.add_argument("--diff", action="store_true",
                    help="list the tests that pass on redis-server and not here")
    ap.add_argument("--python", default=sys.executable, help="interpreter for ours")
    ap.add_argument("--logs", help="folder for each run's harness output")
    args = ap.parse_args(argv)
    tree = os.path.abspath(args.redis_tree)
    if not os.path.exists(os.path.join(tree, "runtest")):
        raise SystemExit("%s has no runtest: see this script's docstring" % tree)
    units = list(DEFAULT_UNITS) if args.all else args.units
    if not units:
        raise SystemExit("name units, or --all")
    kinds = [k for k, off in (("ours", args.redis_only), ("redis", args.ours_only)) if not off]
    rows = []
    print("%-24s %-20s %-20s" % ("unit", "ours pass fail", "redis pass fail"), flush=True)
    for unit in units:
        got = {k: run_unit(tree, unit, k, args.unit_timeout, args.python, args.logs)
               for k in kinds}
        rows.append((unit, got))
        print("%-24s %-20s %-20s" % (unit, *(got[k].cell() if k in got else "-"
                                             for k in ("ours", "redis"))), flush=True)
    totals = {k: (sum(len(g[k].passed) for _, g in rows), sum(len(g[k].failed) for _, g in rows),
                  sum(1 for _, g in rows if g[k].stopped)) for k in kinds}
    print("%-24s %-20s %-20s" % ("total (units stopped)", *(
        "%4d %4d (%d)" % totals[k] if k in totals else "-" for k in ("ours", "redis"))))
    if args.diff and len(kinds) == 2:
        for unit, got in rows:
            missing = [t for t in got["redis"].passed if t not in set(got["ours"].passed)]
            if missing:
                print("\n%s: passes on redis-server, not here (%d)" % (unit, len(missing)))
                for name in missing:
                    print("  " + name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
