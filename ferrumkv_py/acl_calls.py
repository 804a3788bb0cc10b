"""ACL checks of calls: which arguments are keys and what each needs, the dispatcher's
check (:func:`deny`, with its ACL LOG entry) and SORT's full-read test.

A call is checked against its user's selectors (acl.User.check); the keys come from the
command's key specs in Redis 7.0's table (acl_table.py), as Redis's
getKeysFromCommandWithSpecs finds them: each key position gets the permission of the
index + range spec covering it, or else the union of the keyword / keynum specs'
permissions.  The plan of a command (its table id, specs, and the fast answer for a single
fixed key) is computed once per command and cached.
"""

from __future__ import annotations

import time

from . import errors as _errors
from .acl import (ALL_PERM, CHANNEL_COMMANDS, DENIED_AUTH, DENIED_CHANNEL,  # noqa: F401
                  DENIED_CMD, DENIED_KEY, OK, READ, TABLE, WRITE, User)

# ---- calls: the key positions a command names, and the dispatcher's check ----

_KEYNUM_AT_2 = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})


def _plan(spec) -> tuple:
    """(table id, key specs, permission of keys no index+range spec covers, permission of
    the only key when the command has exactly one fixed key, else -1), cached per spec."""
    plan = _PLANS.get(spec)
    if plan is None:
        cid = TABLE.id.get(spec.name, -1)
        specs = TABLE.keyspecs[cid] if cid >= 0 else ()
        loose = 0
        for b, _, _, perm in specs:
            if b == 0:
                loose |= perm
        if not any(b == 0 for b, _, _, _ in specs):
            for _, _, _, perm in specs:
                loose |= perm
        single = -1
        if (spec.getkeys is None and spec.name not in _KEYNUM_AT_2 and spec.name != "set"
                and spec.first_key > 0 and spec.last_key == spec.first_key and len(specs) == 1
                and specs[0][:2] == (spec.first_key, 0)):
            single = specs[0][3]
        plan = _PLANS[spec] = (cid, specs, loose, single)
    return plan


_PLANS: dict = {}


def key_positions(spec, argv: list) -> list:
    """(argument index, permission) for each key of one call, as Redis's
    getKeysFromCommandWithSpecs finds them with the flags of the covering key spec.

    Complexity: O(len(argv))."""
    cid, specs, loose, single = _plan(spec)
    if single >= 0:     # GET, HSET ...: one key at a fixed place
        return [(spec.first_key, single)] if len(argv) > spec.first_key else []
    name = spec.name
    if name in _KEYNUM_AT_2:
        try:
            n = int(argv[2])
        except ValueError:
            return []
        positions = list(range(3, 3 + n)) if 0 <= n <= len(argv) - 3 else []
    elif spec.getkeys is not None:
        try:
            keys = spec.getkeys(argv)
        except Exception:       # a call COMMAND GETKEYS refuses names no keys
            return []
        ident = {id(k) for k in keys}
        positions = [i for i, a in enumerate(argv) if id(a) in ident and i > 0]
    elif spec.first_key > 0 and len(argv) > spec.first_key:
        last = spec.last_key if spec.last_key >= 0 else len(argv) + spec.last_key
        positions = list(range(spec.first_key, min(last, len(argv) - 1) + 1, spec.step or 1))
    else:
        return []
    if name == "set":   # Redis setGetKeys: the key is only written unless GET is given
        get = any(a.split(b"\0", 1)[0].lower() == b"get" for a in argv[3:])
        return [(1, ALL_PERM if get else WRITE)]
    out = []
    for pos in positions:
        need = loose
        for b, last, step, perm in specs:
            if b and pos >= b:
                end = b + last if last >= 0 else len(argv) + last
                if pos <= end and (pos - b) % (step or 1) == 0:
                    need = perm
                    break
        out.append((pos, need))
    return out


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
