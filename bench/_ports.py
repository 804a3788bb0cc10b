"""Ports for the servers the benchmarks start, and the wait for them to listen.

One copy for every bench script (they run as ``python bench/x.py``, so this folder is on
``sys.path``).  Only 127.0.0.1.
"""

from __future__ import annotations

import socket
import subprocess
import time

START_TIMEOUT_S = 30.0      # a loaded machine can take long to start a server
POLL_INTERVAL_S = 0.05


def free_port() -> int:
    """A port free on 127.0.0.1 now (the OS's pick for a port-0 bind)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen | None = None,
              timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once 127.0.0.1:``port`` accepts a connection; RuntimeError when ``proc`` (if
    given) exits first or ``timeout_s`` passes."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(POLL_INTERVAL_S)
    raise RuntimeError("server on port %d did not start" % port)


def redis_cli(port: int, *args: str, timeout_s: float = 600) -> str:
    """``redis-cli -p port args...``: its standard output."""
    return subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                          text=True, timeout=timeout_s).stdout


def info_of(port: int) -> dict:
    """INFO everything of the server on ``port`` as a name -> value (str) dict."""
    out = {}
    for line in redis_cli(port, "info", "everything").splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v.strip()
    return out
