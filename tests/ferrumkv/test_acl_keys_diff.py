"""ACL key rules for every command of the table, against redis-server 7.0.15 (issue 26 row 6).

Key positions have one home, the key specs (command_specs.keys_with_flags); ACL reads them
(acl_calls.key_positions).  This walks every command and subcommand we register that Redis
7.0 also has, builds calls from Redis's own COMMAND DOCS argument tree (the required
arguments only, and every optional one once), and asks both servers ``ACL DRYRUN`` for a
user with four kinds of key patterns, with each key of the call in turn put outside the
full-access pattern: the verdicts must be the same bytes.  The same user then runs a few
calls for real (top level, inside MULTI, inside a script).
"""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py.command_specs import docs_entry
from ferrumkv_py import commands  # noqa: F401  (registers every command)
from ferrumkv_py.registry import COMMANDS

from .diff_util import Pair

USER_RULES = ["on", "nopass", "+@all", "~in:*", "%R~r:*", "%W~w:*", "&*"]
KEY_IN, KEY_KINDS = b"in:k", (b"r:k", b"w:k", b"out:k")
KEY = object()          # a key placeholder in a generated call
# arguments whose value must be a number of keys that follow (1 key is generated)
NUMKEYS_NAMES = {b"numkeys"}
# sample values by argument type
SAMPLE = {b"integer": b"1", b"double": b"1.5", b"string": b"x", b"pattern": b"*",
          b"unix-time": b"1000", b"key": KEY}


def _args(arguments, full: bool) -> list:
    """One call's arguments from a COMMAND DOCS argument list: required ones, and with
    ``full`` each optional one once (oneof: the first choice)."""
    out = []
    for a in arguments or ():
        flags = set(a.get(b"flags", ()))
        if b"optional" in flags and not full:
            continue
        token = a.get(b"token")
        kind = a[b"type"]
        if token is not None:
            out.append(token)
        if kind == b"pure-token":
            continue
        if kind == b"oneof":
            out += _args(a[b"arguments"][:1], True)
        elif kind == b"block":
            out += _args(a[b"arguments"], full)
        elif a[b"name"] in NUMKEYS_NAMES:
            out.append(b"1")
        else:
            out.append(SAMPLE.get(kind, b"x"))
    return out


def _calls():
    """(name, argv with KEY placeholders) for every registered command Redis documents."""
    seen = set()
    for spec in COMMANDS.values():
        if spec in seen:
            continue
        seen.add(spec)
        subs = list(spec.subcommands.values()) if spec.subcommands else [spec]
        for sub in subs:
            full_name = sub.name                # "object|encoding" for a subcommand
            doc = docs_entry(full_name)
            if doc is None:
                continue                  # ours alone (LITEHIT ...): Redis has no verdict
            head = full_name.encode().split(b"|")
            variants = {tuple(_args(doc.get(b"arguments"), full)) for full in (False, True)}
            for args in sorted(variants, key=len):
                yield full_name, head + list(args)


def _fill(argv: list, outside: int | None, name: bytes) -> list:
    out, n = [], 0
    for a in argv:
        if a is KEY:
            out.append(name if n == outside else KEY_IN)
            n += 1
        else:
            out.append(a)
    return out


@pytest.mark.needs_redis
def test_every_command_acl_dryrun_as_redis(redis_server, server):
    pair = Pair(redis_server, server.port)
    checked = set()
    try:
        pair.same(["ACL", "SETUSER", "keyt", "reset", *USER_RULES])
        mismatches = []
        for name, argv in _calls():
            nkeys = sum(1 for a in argv if a is KEY)
            trials = [_fill(argv, None, KEY_IN)] + [
                _fill(argv, i, kind) for i in range(nkeys) for kind in KEY_KINDS]
            for call in trials:
                real, ours = pair.run(["ACL", "DRYRUN", "keyt", *call])
                if real != ours:
                    mismatches.append((call, real, ours))
            if nkeys:
                checked.add(name)
        assert not mismatches, "\n".join("%r: redis %r ours %r" % m for m in mismatches[:30])
        assert {"sintercard", "eval", "sort", "georadius", "zunionstore", "lmpop",
                "object|encoding", "memory|usage", "bitfield", "set"} <= checked
        assert len(checked) > 160      # commands with keys (168 when written)
    finally:
        pair.same(["ACL", "DELUSER", "keyt"])
        pair.close()


@pytest.mark.needs_redis
@pytest.mark.parametrize("argv", [
    ["SINTERCARD", "1", "out:s"], ["SINTERCARD", "2", "in:s", "out:s", "LIMIT", "1"],
    ["SINTERCARD", "1", "in:s"], ["SMISMEMBER", "out:s", "a"], ["LMPOP", "1", "out:l", "LEFT"],
    ["ZINTERCARD", "1", "out:z"], ["SINTERSTORE", "in:d", "out:s"], ["SINTERCARD", "x", "a"],
    ["SINTERCARD", "5", "in:s"]])
def test_real_calls_as_redis(redis_server, server, argv):
    """The same user runs the call at top level, inside MULTI and inside a script on both
    servers: the same replies."""
    admin = redis.Redis(port=redis_server), redis.Redis(port=server.port)
    for r in admin:
        r.execute_command("ACL", "SETUSER", "keyt", "reset", *USER_RULES)
    pair = Pair(redis_server, server.port)
    try:
        pair.same(["AUTH", "keyt", "x"])
        pair.same(argv)
        pair.same(["MULTI"])
        pair.same(argv)
        pair.same(["EXEC"])
        keys = [a for a in argv if a.startswith(("in:", "out:"))]
        body = "return redis.pcall(%s)" % ", ".join(
            "KEYS[%d]" % (keys.index(a) + 1) if a in keys else "'%s'" % a for a in argv)
        real, ours = pair.run(["EVAL", body, str(len(keys)), *keys])
        assert ours == real, (argv, real, ours)
    finally:
        pair.close()
        for r in admin:
            r.execute_command("ACL", "DELUSER", "keyt")
            r.close()
