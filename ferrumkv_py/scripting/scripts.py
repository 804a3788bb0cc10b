"""What a script is and what it runs on: the compiled script, the running script's context,
the client its commands run on, and the shebang line.

Complexity: O(first line) for a shebang; the rest is constant-size bookkeeping.
"""

from __future__ import annotations

import hashlib
import time

from ..client_state import ClientState
from ..errors import CommandError

SHEBANG_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster",
                 "allow-cross-slot-keys")


class ScriptClient(ClientState):
    """The client a script's commands run on (Redis's Lua client): the caller's database,
    its own protocol version (``redis.setresp``), never in MULTI, never watching; it
    subscribes to nothing and tracks nothing."""

    is_script = True    # Redis CLIENT_SCRIPT (XREAD refuses BLOCK there)

    def __init__(self, server):
        ClientState.__init__(self, server)
        self.id = 0
        self.authenticated = True
        self.addr = self.laddr = ""
        self.user = None             # the caller's ACL user while a script runs
        self.deny_blocking = True    # BLPOP & co. answer at once in a script, as Redis

    def watch(self, keys) -> None:
        pass

    def unwatch_all(self) -> None:
        pass

    def close_after_reply(self) -> None:
        pass


class Script:
    """One compiled EVAL script: its body, sha, Lua function and shebang flags (None for a
    script without a shebang, Redis's EVAL compatibility mode)."""

    __slots__ = ("sha", "body", "func", "flags", "name")

    def __init__(self, sha: bytes, body: bytes, func, flags):
        self.sha = sha
        self.name = text(sha)
        self.body = body
        self.func = func
        self.flags = flags


class Run:
    """The state of the running script (Redis's scriptRunCtx)."""

    __slots__ = ("caller", "name", "ro", "allow_oom", "oom_at_start", "dirty", "start",
                 "busy", "killed", "is_eval", "keys", "tracked", "argv")

    def __init__(self, caller, name: str, ro: bool, allow_oom: bool, oom_at_start: bool,
                 is_eval: bool):
        self.caller = caller
        self.name = name
        self.ro = ro
        self.allow_oom = allow_oom
        self.oom_at_start = oom_at_start
        self.dirty = False
        self.keys = ()          # the declared keys (KEYS): client tracking remembers them
        self.argv = ()          # the calling command (FUNCTION STATS shows it)
        self.tracked = False    # ... once, at the script's first read (Engine.call)
        self.start = time.monotonic()
        self.busy = False
        self.killed = False
        self.is_eval = is_eval


def sha1hex(body: bytes) -> bytes:
    return hashlib.sha1(body).hexdigest().encode()


def parse_shebang(body: bytes):
    """(flags, offset of the line feed) of a ``#!lua ...`` first line, (None, 0) without one.

    Raises CommandError with Redis's texts for a bad shebang.  Complexity: O(first line).
    """
    if not body.startswith(b"#!"):
        return None, 0
    end = body.find(b"\n")
    if end < 0:
        raise CommandError("Invalid script shebang")
    from ..resp import split_inline
    parts = split_inline(body[:end])
    if not parts:
        raise CommandError("Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise CommandError("Unexpected engine in script shebang: %s" % text(parts[0]))
    flags = set()
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise CommandError("Unknown lua shebang option: %s" % text(part))
        for f in part[6:].split(b","):
            name = text(f)
            if name not in SHEBANG_FLAGS:
                raise CommandError("Unexpected flag in script shebang: %s" % name)
            flags.add(name)
    return frozenset(flags), end


def text(b: bytes) -> str:
    """Script bytes as str for error texts and names (any byte survives the round trip)."""
    return b.decode("utf-8", "surrogateescape")
