"""The command table: one :class:`CommandSpec` per command, filled by the ``@command`` decorator.

The dispatcher (``client.py``) alone enforces what the table says: unknown command, arity
(Redis's rule: ``arity > 0`` means exactly that many words including the name, ``arity < 0``
means at least ``-arity``), authentication, MULTI queueing and the ``denyoom`` check under
maxmemory.  Handlers only see well-formed calls.

Flags (Redis 7.0 names): ``write``, ``readonly``, ``denyoom``, ``admin``, ``fast``,
``noauth`` (allowed before AUTH), ``noscript``, ``loading``, ``stale``, ``allow_busy``,
``no_multi`` (refused inside MULTI), ``skip_monitor``, ``random``, ``no_async_loading``
(reported by COMMAND INFO; there is no async loading).

Key positions (``first_key``, ``last_key``, ``step``) follow COMMAND INFO: 1-based word
indexes, ``last_key = -1`` meaning the last word.  ``keys(argv)`` lists a call's keys: the
dispatcher uses it for WATCH invalidation and the litehit shadow for its access stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


ARGC_MAX = 1 << 62      # beyond any frame's word count (RESP caps a frame at 2^31 - 1)


@dataclass(slots=True, eq=False)
class CommandSpec:
    name: str                       # lower case, as COMMAND reports it
    handler: Callable
    arity: int
    flags: frozenset
    first_key: int = 0
    last_key: int = 0
    step: int = 0
    group: str = "generic"
    summary: str = ""
    syntax: str = ""
    subcommands: dict = field(default_factory=dict)  # lower-case name -> CommandSpec
    # cached flag tests used on every call
    write: bool = False
    denyoom: bool = False
    noauth: bool = False
    keyspace_read: bool = False     # reads keys (litehit shadow, keyspace stats)
    getkeys: Callable | None = None  # COMMAND GETKEYS for movable keys: fn(argv) -> keys
    # the word counts ``arity`` allows, as a range: the dispatcher's one ``in`` test
    argc: range = field(init=False, repr=False)

    def __post_init__(self) -> None:
        a = self.arity
        self.argc = range(a, a + 1) if a > 0 else range(-a, ARGC_MAX)

    def keys(self, argv: list) -> list:
        """The key arguments of one call (COMMAND GETKEYS)."""
        if self.first_key <= 0 or len(argv) <= self.first_key:
            return []
        last = self.last_key if self.last_key >= 0 else len(argv) + self.last_key
        return argv[self.first_key:last + 1:self.step or 1]

    def arity_ok(self, n: int) -> bool:
        return n in self.argc


COMMANDS: dict[bytes, CommandSpec] = {}


def _split_doc(fn: Callable) -> tuple[str, str]:
    doc = (fn.__doc__ or "").strip().splitlines()
    syntax = doc[0].strip() if doc else ""
    summary = " ".join(line.strip() for line in doc[1:] if line.strip()).split(". ")[0]
    return syntax, summary


def command(name: str, arity: int, flags: str = "", first_key: int = 0, last_key: int = 0,
            step: int = 0, group: str = "generic", parent: str | None = None):
    """Register a handler ``fn(client, argv) -> reply``.

    The handler's docstring starts with the Redis syntax line (``GET key``); the next
    sentence is the summary COMMAND DOCS shows.  ``parent`` registers a subcommand
    (``CONFIG GET`` is ``command("get", -3, parent="config")``).
    """
    flagset = frozenset(flags.split())
    if first_key and not last_key:
        last_key = first_key
    if first_key and not step:
        step = 1

    def deco(fn: Callable) -> Callable:
        syntax, summary = _split_doc(fn)
        spec = CommandSpec(name=name.lower(), handler=fn, arity=arity, flags=flagset,
                           first_key=first_key, last_key=last_key, step=step, group=group,
                           summary=summary, syntax=syntax,
                           write="write" in flagset, denyoom="denyoom" in flagset,
                           noauth="noauth" in flagset,
                           keyspace_read="readonly" in flagset and first_key > 0)
        if parent is None:
            prev = COMMANDS.get(name.lower().encode())
            if prev is not None:
                spec.subcommands = prev.subcommands
            COMMANDS[name.lower().encode()] = spec
            COMMANDS[name.upper().encode()] = spec
        else:
            top = COMMANDS[parent.lower().encode()]
            spec.name = "%s|%s" % (top.name, name.lower())
            if group == "generic":  # a subcommand belongs to its container's group
                spec.group = top.group
            top.subcommands[name.lower()] = spec
        return fn

    return deco


def lookup(name: bytes) -> CommandSpec | None:
    """Find a command by name in any letter case.  Complexity: O(1)."""
    spec = COMMANDS.get(name)
    if spec is None:
        spec = COMMANDS.get(name.lower())
    return spec


def unique_commands() -> list[CommandSpec]:
    """Every top-level command once, sorted by name."""
    seen = {id(s): s for s in COMMANDS.values()}
    return sorted(seen.values(), key=lambda s: s.name)
