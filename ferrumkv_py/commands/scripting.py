"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: Lua scripts (engine: ``scripting/``).

Redis 7.0's argument rules: ``numkeys`` must be an integer (``value is not an integer or out
of range``), at most the number of arguments after it, not negative; an EVALSHA digest that
is not cached (or not 40 characters) is ``NOSCRIPT``.  EVAL caches the script it compiles,
so EVALSHA of its digest works afterwards (as SCRIPT LOAD).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..resp import OK, Status
from ..scripting import engine
from ._util import parse_int

SHA_HEX_LEN = 40

_EVAL_FLAGS = "noscript stale skip_monitor may_replicate no_mandatory_keys movablekeys"
_EVAL_RO_FLAGS = "noscript stale skip_monitor no_mandatory_keys readonly movablekeys"


def _numkeys(argv: list) -> int:
    n = argv[2]
    numkeys = int(n) if len(n) == 1 and n.isdigit() else parse_int(n)
    if numkeys > len(argv) - 3:
        raise CommandError(errors.NUMKEYS_GREATER)
    if numkeys < 0:
        raise CommandError(errors.NUMKEYS_NEGATIVE)
    return numkeys


def _eval(c, argv: list, ro: bool):
    numkeys = _numkeys(argv)
    eng = engine(c.server)
    return eng.eval(c, eng.load(argv[1]), argv, numkeys, ro)


def _evalsha(c, argv: list, ro: bool):
    sha = argv[1]
    if len(sha) != SHA_HEX_LEN:
        raise CommandError(errors.NOSCRIPT)
    numkeys = _numkeys(argv)
    eng = engine(c.server)
    script = eng.scripts.get(sha) or eng.scripts.get(sha.lower())
    if script is None:
        raise CommandError(errors.NOSCRIPT)
    return eng.eval(c, script, argv, numkeys, ro)


# ---- the flags a script gives its command (Redis evalGetCommandFlags) ----
# A script that declares ``no-writes`` makes EVAL / EVALSHA act as a read: CLIENT PAUSE
# WRITE lets it run (ops.Ops.holds reads ``handler.may_write``).  A body that is not cached
# yet, a script without a shebang and a bad shebang keep the command's own flags.


def _flags_may_write(flags) -> bool:
    return flags is None or "no-writes" not in flags


def _eval_may_write(c, argv: list) -> bool:
    from ..scripting.scripts import parse_shebang
    try:
        flags, _ = parse_shebang(argv[1])
    except CommandError:
        return True                     # the command will fail as it runs
    return _flags_may_write(flags)


def _evalsha_may_write(c, argv: list) -> bool:
    eng = c.server.__dict__.get("scripting")     # no engine yet: nothing is cached
    script = None if eng is None else (eng.scripts.get(argv[1])
                                       or eng.scripts.get(argv[1].lower()))
    return script is None or _flags_may_write(script.flags)


@command("eval", -3, _EVAL_FLAGS, group="scripting")
def eval_(c, argv):
    """EVAL script numkeys [key [key ...]] [arg [arg ...]]
    Runs a Lua script on the server."""
    return _eval(c, argv, False)


@command("eval_ro", -3, _EVAL_RO_FLAGS, group="scripting")
def eval_ro(c, argv):
    """EVAL_RO script numkeys [key [key ...]] [arg [arg ...]]
    Runs a read-only Lua script on the server."""
    return _eval(c, argv, True)


@command("evalsha", -3, _EVAL_FLAGS, group="scripting")
def evalsha(c, argv):
    """EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
    Runs a cached Lua script by its SHA1 digest."""
    return _evalsha(c, argv, False)


@command("evalsha_ro", -3, _EVAL_RO_FLAGS, group="scripting")
def evalsha_ro(c, argv):
    """EVALSHA_RO sha1 numkeys [key [key ...]] [arg [arg ...]]
    Runs a cached read-only Lua script by its SHA1 digest."""
    return _evalsha(c, argv, True)


# ---- SCRIPT ----

@command("script", -2, "", group="scripting")
def script_(c, argv):
    """SCRIPT <subcommand> [<arg> [value] [opt] ...]
    A container for Lua script management commands."""


@command("load", 3, "noscript stale", parent="script")
def script_load(c, argv):
    """SCRIPT LOAD script
    Compiles a script into the script cache and returns its SHA1 digest."""
    return engine(c.server).load(argv[2]).sha


@command("exists", -3, "noscript", parent="script")
def script_exists(c, argv):
    """SCRIPT EXISTS sha1 [sha1 ...]
    Tells, for each digest, whether the script is cached."""
    scripts = engine(c.server).scripts
    return [1 if sha.lower() in scripts else 0 for sha in argv[2:]]


@command("flush", -2, "noscript", parent="script")
def script_flush(c, argv):
    """SCRIPT FLUSH [ASYNC|SYNC]
    Empties the script cache (and makes a fresh Lua VM)."""
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        raise CommandError(errors.SCRIPT_FLUSH_OPTION)
    eng = engine(c.server)
    functions = eng.functions
    eng.reset()
    if functions is not None:   # FUNCTION libraries live in the same VM: load them again
        functions.reload(eng)
    return OK


@command("kill", 2, "noscript allow_busy", parent="script")
def script_kill(c, argv):
    """SCRIPT KILL
    Stops the running script if it has not written anything."""
    engine(c.server).kill(is_eval=True)
    return OK


@command("help", 2, "loading stale", parent="script")
def script_help(c, argv):
    """SCRIPT HELP
    Shows what SCRIPT can do."""
    return [Status(s.encode()) for s in (
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.")]



eval_.may_write = _eval_may_write
evalsha.may_write = _evalsha_may_write
