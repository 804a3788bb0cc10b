"""ACL checks of calls: which arguments are keys and what each needs, the dispatcher's
check (:func:`deny`, with its ACL LOG entry) and SORT's full-read test.

A call is checked against its user's selectors (acl.User.check); the keys and their flags
come from the command's key specs, found as Redis's getKeysFromCommandWithSpecs finds them,
by ``command_specs.keys_with_flags``: the one home of key positions, which COMMAND GETKEYS
and GETKEYSANDFLAGS answer from too.  A key's flags become the permission it needs as in
ACLSelectorCheckKey.  The fast answer for a command with a single fixed key is computed once
per command and cached.
"""

from __future__ import annotations

import time

from . import errors as _errors
from .command_specs import (NOT_KEY, VARIABLE_FLAG_KEYS, InvalidKeys, key_specs,
                            keys_with_flags)
from .acl import (ALL_PERM, CHANNEL_COMMANDS, DENIED_AUTH, DENIED_CHANNEL,  # noqa: F401
                  DENIED_CMD, DENIED_KEY, OK, READ, TABLE, WRITE, User)

# ---- calls: the key positions a command names, and the dispatcher's check ----

_KEYNUM_AT_2 = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})


def _plan(spec) -> tuple:
    """(table id, permission of the only key when the command has exactly one key, at a
    fixed index, from its one key spec, else -1), cached per spec: the fast case of
    :func:`key_positions` (the same answer keys_with_flags would give)."""
    plan = _PLANS.get(spec)
    if plan is None:
        cid = TABLE.id.get(spec.name, -1)
        specs = TABLE.keyspecs[cid] if cid >= 0 else ()
        single = -1
        if (spec.getkeys is None and spec.name not in _KEYNUM_AT_2
                and spec.name not in VARIABLE_FLAG_KEYS     # SET, BITFIELD: flags by args
                and not _not_key(spec)                      # SPUBLISH's channel
                and spec.first_key > 0 and spec.last_key == spec.first_key and len(specs) == 1
                and specs[0][:2] == (spec.first_key, 0)):
            single = specs[0][3]
        plan = _PLANS[spec] = (cid, single)
    return plan


_PLANS: dict = {}


def _not_key(spec) -> bool:
    """Has the command a key spec flagged ``not_key`` (a shard channel, not a key)?"""
    return any(NOT_KEY in {bytes(f).lower() for f in k[b"flags"]} for k in key_specs(spec))


def key_positions(spec, argv: list) -> list:
    """(argument index, permission) for each key of one call: the positions and flags
    Redis's getKeysFromCommandWithSpecs finds (``command_specs.keys_with_flags``, the one
    home of key positions, which COMMAND GETKEYS also answers from), each key's flags made
    a permission as ACLSelectorCheckKey does (ACCESS -> read; INSERT, DELETE, UPDATE ->
    write).  A call whose keys cannot be found (a bad numkeys) names none, as in Redis,
    whose command then refuses it.  Before, positions came from the registry's legacy
    first/last key, and SINTERCARD (keys after numkeys, no first key) named none: a key
    rule never applied to it (issue 26 row 6).

    Complexity: O(len(argv) * key specs); O(1) for a command with one fixed key."""
    single = _plan(spec)[1]
    if single >= 0:     # GET, HSET ...: one key at a fixed place
        return [(spec.first_key, single)] if len(argv) > spec.first_key else []
    try:
        found = keys_with_flags(spec, argv)
    except InvalidKeys:
        return []
    return [(pos, _perm(flags)) for pos, flags in found]


def _perm(flags) -> int:
    """ACLSelectorCheckKey's permission for a key's flags (a set of Status)."""
    perm = 0
    for f in flags:
        f = bytes(f).lower()
        if f == b"access":
            perm |= READ
        elif f in (b"insert", b"delete", b"update"):
            perm |= WRITE
    return perm


_channel_checked: dict = {}


def dispatch_table(user: User, commands: dict) -> dict:
    """The command table the dispatcher's inline path uses for a client of ``user``.

    An open user gets the full table.  A ``fast`` user (``+@all ~*`` with limited
    channels: Redis 7.0's new users start with ``resetchannels``) can be refused only
    channel commands, so it gets a copy without them: those alone take
    ``Client.call`` and its check, every other command stays inline.
    Complexity: O(commands) once (the copy is cached), then O(1).
    """
    if user.open or not user.fast:
        return commands
    size, table = _channel_checked.get(id(commands), (-1, None))
    if size != len(commands):      # first use, or commands registered since
        table = {k: v for k, v in commands.items()
                 if k.lower().decode("latin-1") not in CHANNEL_COMMANDS}
        _channel_checked[id(commands)] = (len(commands), table)
    return table


def check_call(user: User, spec, argv: list) -> tuple[int, int]:
    """Redis ACLCheckAllUserCommandPerm for a command of this server: (result, index)."""
    if user.open:
        return OK, 0
    cid = _plan(spec)[0]
    if cid < 0:   # not a Redis command (LITEHIT...): only users with allcommands run it
        ok = any(s.allcommands for s in user.selectors)
        return (OK, 0) if ok else (DENIED_CMD, 0)
    return user.check(cid, argv, lambda: key_positions(spec, argv))


def unrestricted_read(user: User, spec, argv: list) -> bool:
    """Redis ACLUserCheckCmdWithUnrestrictedKeyAccess(..., CMD_KEY_ACCESS): a selector that
    allows this call reads every key (``allkeys``, or a ``*`` pattern with read).  SORT's
    BY / GET patterns need it.  Complexity: as :meth:`User.check`."""
    if user is None or user.open:
        return True
    cid = TABLE.id.get(spec.name, -1)
    keys = None
    for s in user.selectors:
        if not (s.allkeys or any(p == b"*" and f & READ for p, f in s.patterns.items())):
            continue
        if cid < 0:
            if s.allcommands:
                return True
            continue
        if keys is None:
            keys = key_positions(spec, argv)
        if s.check(cid, argv, keys)[0] == OK:
            return True
    return False


# ---- the dispatcher's check and ACL LOG entries ----

CTX_TOPLEVEL, CTX_MULTI, CTX_LUA = b"toplevel", b"multi", b"lua"


def client_info(c) -> bytes:
    from .commands.connection import client_line
    return client_line(c, time.monotonic()).encode("utf-8", "surrogateescape")


def log_denial(c, reason: int, context: bytes, obj: bytes, username: bytes | None = None):
    c.server.acl.add_log(reason, context, obj, c.user.name if username is None else username,
                         client_info(c))


def deny(c, spec, argv: list, context: bytes | None = None) -> int:
    """Check one call for ``c.user``; on refusal log it (ACL LOG) and return the reason
    (acl.DENIED_*), else OK.  Complexity: see acl.User.check."""
    res, pos = check_call(c.user, spec, argv)
    if res != OK:
        if context is None:
            context = CTX_MULTI if c.multi is not None else CTX_TOPLEVEL
        obj = spec.name.encode() if res == DENIED_CMD else argv[pos]
        log_denial(c, res, context, obj)
    return res


def noperm_text(res: int, spec) -> str:
    """processCommand's NOPERM reply for a refused call."""
    if res == DENIED_CMD:
        return _errors.NOPERM_CMD % spec.name
    return _errors.NOPERM_KEY if res == DENIED_KEY else _errors.NOPERM_CHANNEL


def exec_noperm_text(res: int) -> str:
    reason = {DENIED_CMD: _errors.EXEC_REASON_CMD, DENIED_KEY: _errors.EXEC_REASON_KEY,
              DENIED_CHANNEL: _errors.EXEC_REASON_CHANNEL}[res]
    return _errors.NOPERM_EXEC % reason


def script_noperm_text(res: int) -> str:
    return {DENIED_CMD: _errors.SCRIPT_NOPERM_CMD, DENIED_KEY: _errors.SCRIPT_NOPERM_KEY,
            DENIED_CHANNEL: _errors.SCRIPT_NOPERM_CHANNEL}[res]
