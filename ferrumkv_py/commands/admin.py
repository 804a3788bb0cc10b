"""Server commands: INFO TIME CONFIG COMMAND SHUTDOWN DBSIZE FLUSHDB FLUSHALL SWAPDB."""

from __future__ import annotations

from .. import command_specs, errors, info
from ..acl import CATEGORIES
from ..config import SPECS, ConfigError, protected_allowed
from ..errors import CommandError
from ..memory_trim import trim_after_free
from ..registry import command, lookup, unique_commands
from ..resp import OK, Raw, RespSet, Status, Verbatim
from ._util import glob_matcher, parse_int


@command("info", -1, "loading stale", group="server")
def info_(c, argv):
    """INFO [section [section ...]]
    Returns information and statistics about the server."""
    text = info.render(c.server, [a.decode("utf-8", "surrogateescape") for a in argv[1:]])
    return Verbatim(text.encode())


@command("time", 1, "loading stale fast", group="server")
def time_(c, argv):
    """TIME
    Returns the server time as seconds and microseconds."""
    us = c.server.clock.now_us()
    return [str(us // 1_000_000).encode(), str(us % 1_000_000).encode()]


@command("dbsize", 1, "readonly fast", group="server")
def dbsize(c, argv):
    """DBSIZE
    Returns the number of keys in the selected database."""
    return len(c.db)


TRIM_MIN_KEYS = 10_000      # a synchronous flush of more keys gives memory back (memory_trim)


def _flush_mode(c, argv, name) -> bool:
    """True for a lazy flush: ASYNC, or no argument under lazyfree-lazy-user-flush."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].lower() not in (b"async", b"sync")):
        raise CommandError(errors.SYNTAX)
    if len(argv) == 2:
        return argv[1].lower() == b"async"
    return c.server.config["lazyfree-lazy-user-flush"]


@command("flushdb", -1, "write", group="server")
def flushdb(c, argv):
    """FLUSHDB [ASYNC|SYNC]
    Deletes every key of the selected database."""
    lazy = _flush_mode(c, argv, "flushdb")
    c.server.tracking.flush(c)   # a null invalidation to tracking clients (tracking.py)
    freed = c.db.clear(lazy)
    c.server.tracking.flush_done()
    if freed > TRIM_MIN_KEYS and not lazy:
        trim_after_free()
    return OK


@command("flushall", -1, "write", group="server")
def flushall(c, argv):
    """FLUSHALL [ASYNC|SYNC]
    Deletes every key of every database."""
    lazy = _flush_mode(c, argv, "flushall")
    c.server.tracking.flush(c)
    freed = c.ks.flushall(lazy)
    c.server.tracking.flush_done()
    if freed > TRIM_MIN_KEYS and not lazy:
        trim_after_free()       # (a lazy flush trims when its last slice is released)
    return OK


@command("swapdb", 3, "write fast", group="server")
def swapdb(c, argv):
    """SWAPDB index1 index2
    Swaps two databases."""
    try:
        a = parse_int(argv[1])
    except CommandError:
        raise CommandError("invalid first DB index") from None
    try:
        b = parse_int(argv[2])
    except CommandError:
        raise CommandError("invalid second DB index") from None
    dbs = c.ks.dbs
    if not (0 <= a < len(dbs) and 0 <= b < len(dbs)):
        raise CommandError(errors.DB_INDEX_OUT_OF_RANGE)
    if a != b:
        dbs[a].swap_contents(dbs[b])
        c.ks.signal_all()
    return OK


@command("shutdown", -1, "admin noscript loading stale no_multi allow_busy", group="server")
def shutdown(c, argv):
    """SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
    Saves the dataset (with save rules, or SAVE; not with NOSAVE) and stops the server."""
    opts = {a.lower() for a in argv[1:]}
    if not opts <= {b"nosave", b"save", b"now", b"force", b"abort"} or \
            (b"save" in opts and b"nosave" in opts):
        raise CommandError(errors.SYNTAX)
    if b"abort" in opts:
        if len(opts) > 1:
            raise CommandError(errors.SYNTAX)
        raise CommandError("No shutdown in progress.")
    busy = c.server.busy_script
    if busy is not None and b"nosave" not in opts:   # a busy script: only SHUTDOWN NOSAVE
        raise CommandError(busy.busy_error)
    if not c.server.shutdown(b"save" in opts, b"nosave" in opts, b"force" in opts):
        raise CommandError("Errors trying to SHUTDOWN. Check logs.")
    c.close_after_reply()
    return Raw(b"")  # as Redis: the connection closes without a reply


# ---- CONFIG ----

@command("config", -2, "", group="server")
def config_(c, argv):
    """CONFIG subcommand [arguments ...]
    Reads and changes the configuration at runtime."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (argv[1].decode("utf-8", "surrogateescape"), "CONFIG"))


@command("get", -3, "admin noscript loading stale", parent="config")
def config_get(c, argv):
    """CONFIG GET parameter [parameter ...]
    Returns the values of the parameters matching the glob patterns."""
    matchers: dict = {}

    def match(pattern: str, name: str) -> bool:
        m = matchers.get(pattern)
        if m is None:   # compiled once per pattern, not once per config name
            m = matchers[pattern] = glob_matcher(
                pattern.encode("utf-8", "surrogateescape"), nocase=True,
                subjects=len(SPECS)) or len
        return bool(m(name.encode()))
    pats = [a.decode("utf-8", "surrogateescape") for a in argv[2:]]
    found = c.server.config.get(pats, match)
    if c.proto == 3:
        return {k.encode("utf-8", "surrogateescape"): v.encode("utf-8", "surrogateescape")
                for k, v in found.items()}
    out = []
    for k, v in found.items():
        out += [k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape")]
    return out


@command("set", -4, "admin noscript loading stale", parent="config")
def config_set(c, argv):
    """CONFIG SET parameter value [parameter value ...]
    Changes parameters at runtime; all or nothing."""
    if len(argv) % 2:
        raise CommandError(errors.CONFIG_SET_UNKNOWN % _text(argv[-1]))
    config = c.server.config
    pairs = []
    first_error = None      # as Redis: every name is checked before any value
    for i in range(2, len(argv), 2):
        given = _text(argv[i])
        spec = SPECS.get(given.lower())
        if spec is None:
            first_error = first_error or CommandError(errors.CONFIG_SET_UNKNOWN % given)
        elif first_error is not None:
            continue
        elif not spec.mutable:
            first_error = CommandError(errors.CONFIG_SET_FAILED % (given, errors.IMMUTABLE_CONFIG))
        elif spec.protected and not protected_allowed(config["enable-protected-configs"],
                                                      c.is_local()):
            first_error = CommandError(errors.CONFIG_SET_FAILED % (given, errors.PROTECTED_CONFIG))
        elif any(spec.name == name for name, _ in pairs):
            first_error = CommandError(errors.CONFIG_SET_FAILED % (given, "duplicate parameter"))
        else:
            pairs.append((spec.name, _text(argv[i + 1])))
    if first_error is not None:
        raise first_error
    try:
        config.set_many(pairs)
    except ConfigError as e:
        raise CommandError(errors.CONFIG_SET_FAILED % (e.name, e.msg)) from None
    return OK


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


@command("resetstat", 2, "admin noscript loading stale", parent="config")
def config_resetstat(c, argv):
    """CONFIG RESETSTAT
    Resets the statistics INFO reports."""
    server = c.server
    server.stats.reset()
    server.gc_stats.reset()
    server.ops.hists.clear()     # latency histograms too, as Redis (ops.py)
    ks = server.ks
    ks.hits = ks.misses = ks.expired_keys = ks.evicted_keys = 0
    ks.expired_time_cap_reached_count = 0
    ks.expired_stale_perc = 0.0
    ks.lazyfree.freed_objects = 0              # Redis lazyfreeResetStats (pending stays)
    server.stats.note_memory(ks.used_memory)   # the peak restarts from what is used now
    return OK


@command("rewrite", 2, "admin noscript loading stale", parent="config")
def config_rewrite(c, argv):
    """CONFIG REWRITE
    Writes the running configuration back to the config file."""
    try:
        c.server.config.rewrite()
    except ConfigError as e:
        raise CommandError(e.msg) from None
    except OSError as e:
        raise CommandError("Rewriting config file: %s" % e.strerror) from None
    return OK


@command("help", 2, "loading stale", parent="config")
def config_help(c, argv):
    """CONFIG HELP
    Lists the CONFIG subcommands."""
    return [Status(s.encode()) for s in (
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
        "RESETSTAT", "    Reset statistics reported by the INFO command.",
        "REWRITE", "    Rewrite the configuration file.",
        "HELP", "    Prints this help.")]


# ---- COMMAND ----

# Redis 7.0 reports command flags in this order (server.c addReplyCommandFlags).
FLAG_ORDER = ("write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript",
              "blocking", "loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast",
              "noauth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys",
              "allow_busy")
# Flags Redis 7.0 keeps and does not report ("hidden on purpose" in its table): the table
# still carries may_replicate, which CLIENT PAUSE WRITE reads (ops.Ops.holds)
HIDDEN_FLAGS = frozenset({"may_replicate"})
# The ACL category each command group implies (acl.CATEGORIES: Redis's table order).
GROUP_ACL = {"generic": "keyspace", "string": "string", "list": "list", "hash": "hash",
             "set": "set", "sorted-set": "sortedset", "sortedset": "sortedset",
             "zset": "sortedset", "connection": "connection", "transactions": "transaction",
             "geo": "geo"}


def _flags(spec) -> list:
    return _flag_replies(spec.flags)


def _flag_replies(names) -> list:
    """COMMAND INFO's flags: Redis's order, then ours sorted, the hidden ones left out."""
    known = [f for f in FLAG_ORDER if f in names]
    known += sorted(f for f in names if f not in FLAG_ORDER and f not in HIDDEN_FLAGS)
    return [Status(b"no_auth" if f == "noauth" else f.encode()) for f in known]


def acl_categories(spec) -> list:
    """Redis 7.0's categories of the command (command_specs.py); for ferrumkv's own
    commands, Redis's implicit ones (write/read/admin/fast/slow...) plus the group's."""
    redis = command_specs.info_entry(spec.name)
    if redis is not None:
        return list(redis[6])
    f = spec.flags
    if spec.subcommands:  # a container command (CONFIG, CLIENT) is only @slow
        return [Status(b"@slow")]
    own = getattr(spec.handler, "acl_categories", None)   # replaces the group's (SORT)
    cats = set(own) if own is not None else {GROUP_ACL.get(spec.group, "")}
    cats.add("write" if "write" in f else "read" if "readonly" in f else "")
    cats.add("fast" if "fast" in f else "slow")
    if "admin" in f:
        cats.update(("admin", "dangerous"))
    if "blocking" in f:
        cats.add("blocking")
    if "pubsub" in f:
        cats.add("pubsub")
    return [Status(("@" + c).encode()) for c in CATEGORIES if c in cats]


def command_info(spec) -> list:
    """One COMMAND / COMMAND INFO entry (Redis 7 layout, 10 elements): the registry's
    name, arity, flags, key range and categories; tips and key specs as Redis 7.0 has
    them (command_specs.py), ``movablekeys`` where Redis reports it."""
    subs = [command_info(s) for s in spec.subcommands.values()]
    flags = _flags(spec)
    redis = command_specs.info_entry(spec.name)
    if (spec.getkeys is not None or (redis is not None and b"movablekeys" in redis[2])) \
            and b"movablekeys" not in flags:
        flags = _flags_with(spec, "movablekeys")
    tips = redis[7] if redis is not None else RespSet()
    # RESP3 sends flags, categories and tips as sets, as Redis 7.0
    return [spec.name.encode(), spec.arity, RespSet(flags), spec.first_key,
            spec.last_key, spec.step, RespSet(acl_categories(spec)), tips,
            command_specs.key_specs(spec), subs]


def _flags_with(spec, extra: str) -> list:
    return _flag_replies(set(spec.flags) | {extra})


def syntax_arguments(spec) -> list:
    """The syntax line after the command name, as COMMAND DOCS ``arguments``.

    Each top-level word (a bracketed or ``<...>`` group counts as one word) becomes one
    argument whose name is its text, so redis-cli's ``help`` prints the syntax line as
    written and its hints show what is left to type.  Complexity: O(len(syntax)).
    """
    words = spec.syntax.split()[len(spec.name.split("|")):]
    args, cur, depth = [], [], 0
    for w in words:
        cur.append(w)
        depth += w.count("[") + w.count("<") - w.count("]") - w.count(">")
        if depth <= 0:
            args.append({b"name": " ".join(cur).encode(), b"type": b"string"})
            cur, depth = [], 0
    if cur:
        args.append({b"name": " ".join(cur).encode(), b"type": b"string"})
    return args


def command_docs(spec) -> dict:
    """One COMMAND DOCS entry: Redis 7.0's own (summary, since, group, complexity,
    history, arguments ...) for its commands, with only the subcommands we have; for
    ferrumkv's own, one built from the docstring, shaped as redis-cli's help expects."""
    redis = command_specs.docs_entry(spec.name)
    if redis is not None:
        doc = {k: v for k, v in redis.items() if k != b"subcommands"}
        if spec.subcommands:
            doc[b"subcommands"] = {s.name.encode(): command_docs(s)
                                   for s in spec.subcommands.values()}
        return doc
    doc = {b"summary": spec.summary.encode(), b"since": b"1.0.0", b"group": spec.group.encode()}
    args = syntax_arguments(spec)
    if args:
        doc[b"arguments"] = args
    if spec.subcommands:
        doc[b"subcommands"] = {s.name.encode(): command_docs(s)
                               for s in spec.subcommands.values()}
    return doc


@command("command", -1, "loading stale", group="server")
def command_(c, argv):
    """COMMAND
    Returns details about every command."""
    return [command_info(s) for s in unique_commands()]


@command("count", 2, "loading stale", parent="command")
def command_count(c, argv):
    """COMMAND COUNT
    Returns the number of commands."""
    return len(unique_commands())


@command("info", -2, "loading stale", parent="command")
def command_info_(c, argv):
    """COMMAND INFO [command-name [command-name ...]]
    Returns details about the named commands (all without names)."""
    if len(argv) == 2:
        return [command_info(s) for s in unique_commands()]
    out = []
    for name in argv[2:]:
        spec = _find(name)
        out.append(command_info(spec) if spec else None)
    return out


def _find(name: bytes):
    top, _, sub = name.lower().partition(b"|")
    spec = lookup(top)
    if spec is not None and sub:
        spec = spec.subcommands.get(sub.decode("utf-8", "surrogateescape"))
    return spec


@command("docs", -2, "loading stale", parent="command")
def command_docs_(c, argv):
    """COMMAND DOCS [command-name [command-name ...]]
    Returns documentary information about commands."""
    specs = unique_commands() if len(argv) == 2 else [s for s in map(_find, argv[2:]) if s]
    return {s.name.encode(): command_docs(s) for s in specs}


@command("list", -2, "loading stale", parent="command")
def command_list(c, argv):
    """COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
    Returns the command names."""
    specs = []
    for s in unique_commands():       # subcommands follow their command, as Redis lists
        specs.append(s)
        specs += s.subcommands.values()
    if len(argv) > 2:
        if len(argv) != 5 or argv[2].lower() != b"filterby":
            raise CommandError(errors.SYNTAX)
        kind, arg = argv[3].lower(), argv[4]
        if kind == b"pattern":
            match = glob_matcher(arg, nocase=True, subjects=len(specs)) or len
            specs = [s for s in specs if match(s.name.encode())]
        elif kind == b"aclcat":       # a category name without "@", any case
            cat = b"@" + arg.lower()
            specs = [s for s in specs if cat in acl_categories(s)]
        elif kind == b"module":
            specs = []
        else:
            raise CommandError(errors.SYNTAX)
    return [s.name.encode() for s in specs]


def _keys_of_call(argv: list) -> tuple:
    """Redis getKeysSubcommandImpl's checks, then the (position, flags) of the call's keys."""
    call = argv[2:]
    spec = lookup(call[0])
    if spec is not None and spec.subcommands and len(call) > 1:
        spec = spec.subcommands.get(call[1].lower().decode("utf-8", "surrogateescape"))
    if spec is None:
        raise CommandError("Invalid command specified")
    if not command_specs.has_keys(spec):
        raise CommandError("The command has no key arguments")
    if not spec.arity_ok(len(call)):
        raise CommandError("Invalid number of arguments specified for command")
    try:
        found = command_specs.keys_with_flags(spec, call)
    except command_specs.InvalidKeys:
        found = []
    if not found and "no_mandatory_keys" not in spec.flags:
        raise CommandError(errors.GETKEYS_INVALID)
    return call, found


@command("getkeys", -4, "loading stale", parent="command")
def command_getkeys(c, argv):
    """COMMAND GETKEYS command [arg [arg ...]]
    Extracts the key names from a full command."""
    call, found = _keys_of_call(argv)
    return [call[i] for i, _ in found]


@command("getkeysandflags", -4, "loading stale", parent="command")
def command_getkeysandflags(c, argv):
    """COMMAND GETKEYSANDFLAGS command [arg [arg ...]]
    Extracts the key names and their access flags from a full command."""
    call, found = _keys_of_call(argv)
    return [[call[i], flags] for i, flags in found]


@command("help", 2, "loading stale", parent="command")
def command_help(c, argv):
    """COMMAND HELP
    Lists the COMMAND subcommands."""
    return [Status(s.encode()) for s in (
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",            # Redis 7.0.15's text: every subcommand exists here
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.")]

