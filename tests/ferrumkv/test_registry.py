"""The command table: every entry is complete and self-consistent.

Loops over ``registry.COMMANDS`` (after importing every command family) so a command added
tomorrow is checked without touching this file.
"""

from __future__ import annotations

import pytest

from ferrumkv_py import commands  # noqa: F401  (registers every command)
from ferrumkv_py.registry import COMMANDS, CommandSpec, command, lookup, unique_commands

# Redis 7.0 command flags (COMMAND INFO names; ``noauth`` is reported as ``no_auth``).
REDIS_FLAGS = {"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
               "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
               "noauth", "may_replicate", "no_mandatory_keys", "no_multi", "movablekeys",
               "allow_busy", "no_async_loading"}


def all_specs() -> list[CommandSpec]:
    out = []
    for spec in unique_commands():
        out.append(spec)
        out.extend(spec.subcommands.values())
    return out


SPECS = all_specs()


def test_table_is_not_empty_and_has_the_core_commands():
    names = {s.name for s in unique_commands()}
    for required in ("get", "set", "ping", "echo", "info", "config", "command", "client",
                     "hello", "auth", "multi", "exec", "select", "swapdb", "shutdown"):
        assert required in names


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_spec_is_complete(spec):
    assert isinstance(spec.arity, int) and spec.arity != 0
    assert spec.flags <= REDIS_FLAGS, spec.flags - REDIS_FLAGS
    assert not ("write" in spec.flags and "readonly" in spec.flags)
    if "denyoom" in spec.flags:
        assert "write" in spec.flags
    # The docstring: first line is the Redis syntax line, then a one-sentence summary.
    doc = (spec.handler.__doc__ or "").strip().splitlines()
    assert len(doc) >= 2, "docstring needs a syntax line and a summary"
    words = spec.name.upper().split("|")
    assert doc[0].strip().split()[:len(words)] == words, doc[0]
    assert spec.syntax == doc[0].strip()
    assert spec.summary
    assert spec.group


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_key_positions_are_sane(spec):
    fk, lk, step = spec.first_key, spec.last_key, spec.step
    if fk == 0:
        assert lk == 0 and step == 0
        assert spec.keys([b"x"] * 8) == []
        return
    assert fk >= 1 and step >= 1
    assert lk < 0 or lk >= fk     # -1 = the last word, -2 = all but the last (BLPOP)
    if spec.arity > 0:  # a fixed-arity command's keys sit inside its words
        assert fk < spec.arity and (lk < 0 or lk < spec.arity)
    argv = [spec.name.encode()] + [b"a%d" % i for i in range(1, 12)]
    keys = spec.keys(argv)
    assert keys and keys[0] == argv[fk]
    assert all(k in argv[1:] for k in keys)


def test_lookup_is_case_insensitive():
    assert lookup(b"get") is lookup(b"GET") is lookup(b"GeT")
    assert lookup(b"nosuchcommand") is None


def test_subcommands_know_their_parent():
    for spec in unique_commands():
        for name, sub in spec.subcommands.items():
            assert sub.name == spec.name + "|" + name
            assert sub.group == spec.group


def test_arity_rule():
    spec = COMMANDS[b"get"]
    assert spec.arity_ok(2) and not spec.arity_ok(1) and not spec.arity_ok(3)
    spec = COMMANDS[b"set"]
    assert spec.arity_ok(3) and spec.arity_ok(9) and not spec.arity_ok(2)


def test_keys_with_step_and_last_key():
    spec = COMMANDS[b"mset"]
    assert spec.keys([b"MSET", b"a", b"1", b"b", b"2"]) == [b"a", b"b"]


def test_decorator_fills_defaults():
    saved = dict(COMMANDS)
    try:
        @command("zzztest", -2, "readonly fast", first_key=1)
        def handler(c, argv):
            """ZZZTEST key [key ...]
            A test command."""
        spec = COMMANDS[b"zzztest"]
        assert (spec.first_key, spec.last_key, spec.step) == (1, 1, 1)
        assert spec.keyspace_read and not spec.write
        assert spec.syntax == "ZZZTEST key [key ...]" and spec.summary == "A test command."
        assert COMMANDS[b"ZZZTEST"] is spec
    finally:
        COMMANDS.clear()
        COMMANDS.update(saved)
