"""The ACL command (Redis 7.0): SETUSER GETUSER DELUSER LIST USERS WHOAMI CAT GENPASS DRYRUN
LOG SAVE LOAD HELP, plus the helpers the dispatcher, AUTH and scripts use to refuse a call
and to log it (``deny``), and to drop the clients of a deleted or narrowed user.

The users and the rules are ``ferrumkv_py/acl.py``; this module is the wire side.
"""

from __future__ import annotations

import os
import secrets
import time
from itertools import islice

from .. import acl, errors
from ..acl import TABLE, RuleError
from ..acl_calls import check_call
from ..errors import CommandError
from ..registry import COMMANDS, command, lookup
from ..resp import OK, RespSet, Status
from ._util import parse_int

GENPASS_MAX_BITS = 4096
GENPASS_DEFAULT_BITS = 256
LOG_DEFAULT_COUNT = 10


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _c_str(b: bytes) -> str:
    """What C's %s prints of a word: up to the first NUL."""
    return _s(b.split(b"\0", 1)[0])


# ---- used by EXEC, AUTH / HELLO and scripts (the dispatcher's check is acl.deny) ----

def set_user(c, user) -> None:
    """Authenticate ``c`` as ``user`` (AUTH, HELLO AUTH): the dispatcher's checks follow
    the user's openness."""
    c.user = user
    c.authenticated = True
    c.update_slow_path()


def refresh_clients(server, user) -> None:
    """After ``user`` changed: its clients take the checked path only if it is not open."""
    for x in list(server.clients.values()):
        if x.user is user:
            x.update_slow_path()


def kill_user_clients(c, user) -> None:
    """Redis ACLFreeUserAndKillClients: every client of ``user`` goes back to the default
    user unauthenticated and is closed (the caller after its reply)."""
    server = c.server
    for x in list(server.clients.values()):
        if x.user is user:
            x.user = server.acl.default
            x.authenticated = False
            if x is c:
                c.close_after_reply()
            else:
                x.kill()


def kill_pubsub_if_needed(c, new, original) -> None:
    """Redis ACLKillPubsubClientsIfNeeded: when ``new`` narrows the channels of
    ``original``, close its subscribed clients whose subscriptions it no longer allows.
    Complexity: O(clients x subscriptions x channel patterns)."""
    if any(s.allchannels for s in new.selectors):
        return
    upcoming = {p: None for s in new.selectors for p in s.channels}
    if all(p in upcoming for s in original.selectors for p in s.channels):
        return
    for x in list(c.server.clients.values()):
        if x.user is not original or x.obuf_class != "pubsub":
            continue
        bad = (any(not acl.channel_allowed(upcoming, p, True) for p in x.sub_patterns)
               or any(not acl.channel_allowed(upcoming, ch, False) for ch in x.sub_channels)
               or any(not acl.channel_allowed(upcoming, ch, False) for ch in x.sub_shard))
        if bad:
            if x is c:
                c.close_after_reply()
            else:
                x.kill()


# ---- ACL ----

@command("acl", -2, "", group="server")
def acl_(c, argv):
    """ACL subcommand [arguments ...]
    Access control lists: users, their rules, the denial log."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (_s(argv[1]), "ACL"))


_ADMIN = "admin noscript loading stale"


@command("setuser", -3, _ADMIN, parent="acl")
def acl_setuser(c, argv):
    """ACL SETUSER username [rule [rule ...]]
    Creates or changes a user; every rule applies or none does."""
    name = argv[2]
    if acl._has_spaces(name):
        raise CommandError(errors.ACL_USERNAME_SPACES)
    a = c.server.acl
    try:
        rules = acl.merge_selector_args(argv[3:])
    except IndexError as e:
        raise CommandError(errors.ACL_UNMATCHED_PAREN % _c_str(argv[3 + e.args[0]])) from None
    old = a.users.get(name)
    try:
        new = a.user_from_rules(name, rules, old)
    except RuleError as e:
        raise CommandError(errors.ACL_SETUSER_MODIFIER % (_c_str(e.args[1]), e.args[0])) from None
    if old is not None:
        kill_pubsub_if_needed(c, new, old)
        old.copy_from(new)
        refresh_clients(c.server, old)
        if old is a.default:
            _default_changed(c.server)
    else:
        a.users[name] = new
    return OK


def _default_changed(server) -> None:
    """The default user became nopass and on: nobody owes an AUTH any more (Redis's
    authRequired reads the default user's flags on every command)."""
    if not server.acl.auth_required():
        for x in server.clients.values():
            x.authenticated = True


@command("getuser", 3, _ADMIN, parent="acl")
def acl_getuser(c, argv):
    """ACL GETUSER username
    Describes a user: flags, password hashes, commands, keys, channels, selectors."""
    u = c.server.acl.users.get(argv[2])
    if u is None:       # Redis 7.0.15 answers null (acl.c 7.0 had an error text)
        return None

    def selector(s) -> dict:
        return {b"commands": acl.describe_commands(s), b"keys": s.keys_text(),
                b"channels": s.channels_text()}
    out = {b"flags": RespSet(u.flags()), b"passwords": list(u.passwords)}
    out.update(selector(u.selectors[0]))
    out[b"selectors"] = [selector(s) for s in u.selectors[1:]]
    return out


@command("deluser", -3, _ADMIN, parent="acl")
def acl_deluser(c, argv):
    """ACL DELUSER username [username ...]
    Deletes users and closes their connections; returns how many existed."""
    a = c.server.acl
    if any(n == b"default" for n in argv[2:]):
        raise CommandError(errors.ACL_DEL_DEFAULT)
    deleted = 0
    for name in argv[2:]:
        u = a.users.pop(name, None)
        if u is not None:
            kill_user_clients(c, u)
            deleted += 1
    return deleted


@command("list", 2, _ADMIN, parent="acl")
def acl_list(c, argv):
    """ACL LIST
    Lists the users in the config-file format."""
    a = c.server.acl
    return [b"user " + n + b" " + a.users[n].describe() for n in sorted(a.users)]


@command("users", 2, _ADMIN, parent="acl")
def acl_users(c, argv):
    """ACL USERS
    Lists the user names."""
    return sorted(c.server.acl.users)


@command("whoami", 2, "noscript loading stale", parent="acl")
def acl_whoami(c, argv):
    """ACL WHOAMI
    Returns the connection's user name."""
    return c.user.name


@command("cat", -2, "noscript loading stale", parent="acl")
def acl_cat(c, argv):
    """ACL CAT [category]
    Lists the categories, or the commands of this server in one category."""
    if len(argv) > 3:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (_c_str(argv[1])[:128], "ACL"))
    if len(argv) == 2:
        return [name.encode() for name in acl.CATEGORIES]
    cat = _s(argv[2]).lower()
    if cat not in TABLE.count_mask:
        raise CommandError(errors.ACL_UNKNOWN_CATEGORY % _c_str(argv[2])[:128])
    out = []
    for spec in {id(s): s for s in COMMANDS.values()}.values():
        for s in (spec, *spec.subcommands.values()):
            i = TABLE.id.get(s.name, -1)
            if i >= 0 and cat in TABLE.cats[i]:
                out.append(s.name.encode())
    return sorted(out)


@command("genpass", -2, "noscript loading stale", parent="acl")
def acl_genpass(c, argv):
    """ACL GENPASS [bits]
    Returns a random password of the given bits (256 by default) as hex."""
    if len(argv) > 3:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (_c_str(argv[1])[:128], "ACL"))
    bits = parse_int(argv[2]) if len(argv) == 3 else GENPASS_DEFAULT_BITS
    if bits <= 0 or bits > GENPASS_MAX_BITS:
        raise CommandError(errors.ACL_GENPASS_BITS % GENPASS_MAX_BITS)
    chars = (bits + 3) // 4
    return secrets.token_hex((chars + 1) // 2)[:chars].encode()


@command("log", -2, _ADMIN, parent="acl")
def acl_log(c, argv):
    """ACL LOG [count | RESET]
    Returns the newest denied commands, keys, channels and logins, or clears them."""
    if len(argv) > 3:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (_c_str(argv[1])[:128], "ACL"))
    a = c.server.acl
    count = LOG_DEFAULT_COUNT
    if len(argv) == 3:
        if argv[2].lower() == b"reset":
            a.log.clear()
            return OK
        count = max(0, parse_int(argv[2]))
    now_ms = int(time.time() * 1000)
    return [{b"count": e.count, b"reason": acl.REASONS[e.reason], b"context": e.context,
             b"object": e.object, b"username": e.username,
             b"age-seconds": (now_ms - e.ctime_ms) / 1000, b"client-info": e.cinfo}
            for e in islice(a.log, count)]


@command("dryrun", -4, _ADMIN, parent="acl")
def acl_dryrun(c, argv):
    """ACL DRYRUN username command [arg [arg ...]]
    Tells whether the user could run the command, without running it."""
    u = c.server.acl.users.get(argv[2])
    if u is None:
        raise CommandError(errors.ACL_DRYRUN_NO_USER % _c_str(argv[2]))
    call = argv[3:]
    spec = lookup(call[0])
    if spec is not None and spec.subcommands:
        if len(call) == 1:
            raise CommandError(errors.WRONG_ARGS % spec.name)
        spec = spec.subcommands.get(_s(call[1]).lower())
    if spec is None:
        raise CommandError(errors.ACL_DRYRUN_NO_COMMAND % _c_str(call[0]))
    if not spec.arity_ok(len(call)):
        raise CommandError(errors.WRONG_ARGS % spec.name)
    res, pos = check_call(u, spec, call)
    if res == acl.DENIED_CMD:
        return (errors.ACL_DRYRUN_CMD % spec.name).encode()
    if res == acl.DENIED_KEY:
        return (errors.ACL_DRYRUN_KEY % _c_str(call[pos])).encode("utf-8", "surrogateescape")
    if res == acl.DENIED_CHANNEL:
        return (errors.ACL_DRYRUN_CHANNEL % _c_str(call[pos])).encode("utf-8",
                                                                      "surrogateescape")
    return OK


def acl_path(server) -> str:
    name = server.config["aclfile"]
    if not name:
        raise CommandError(errors.ACL_NO_FILE)
    return os.path.join(server.config["dir"], name)


@command("save", 2, _ADMIN, parent="acl")
def acl_save(c, argv):
    """ACL SAVE
    Writes the users to the aclfile (a temporary file renamed over it)."""
    from ..acl_file import save
    try:
        save(c.server.acl, acl_path(c.server))
    except OSError:
        raise CommandError(errors.ACL_SAVE_FAILED) from None
    return OK


@command("load", 2, _ADMIN, parent="acl")
def acl_load(c, argv):
    """ACL LOAD
    Replaces the users with the aclfile's; nothing changes if any line is wrong."""
    from ..acl_file import load
    path = acl_path(c.server)
    a = c.server.acl
    users, problems = load(a, path, c.server.config["aclfile"])
    if problems:
        raise CommandError(problems)
    old = a.users
    a.default.copy_from(users.pop(b"default", None) or a.new_default())
    users[b"default"] = a.default
    a.users = users
    for name, u in old.items():
        if u is not a.default:
            kill_user_clients(c, u)
    refresh_clients(c.server, a.default)
    _default_changed(c.server)
    return OK


@command("help", 2, "loading stale", parent="acl")
def acl_help(c, argv):
    """ACL HELP
    Lists the ACL subcommands."""
    return [Status(line.encode()) for line in (
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.")]
