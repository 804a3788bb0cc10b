"""Connection commands: PING ECHO QUIT RESET SELECT HELLO AUTH CLIENT, and MULTI/EXEC/WATCH."""

from __future__ import annotations

import time

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..resp import OK, PONG, Raw, Status, Verbatim
from ._util import parse_int

REDIS_VERSION = b"7.0.15"


@command("ping", -1, "fast", group="connection")
def ping(c, argv):
    """PING [message]
    Returns PONG, or the message."""
    if len(argv) > 2:
        raise CommandError(errors.WRONG_ARGS % "ping")
    if c.proto == 2 and c.obuf_class == "pubsub":   # subscribed RESP2: a pong frame
        return [b"pong", b"" if len(argv) == 1 else argv[1]]
    return PONG if len(argv) == 1 else argv[1]


@command("echo", 2, "fast loading stale", group="connection")
def echo(c, argv):
    """ECHO message
    Returns the given string."""
    return argv[1]


@command("quit", -1, "noauth allow_busy fast loading noscript stale", group="connection")
def quit_(c, argv):
    """QUIT
    Closes the connection after the reply."""
    c.close_after_reply()
    return OK


@command("reset", 1, "noauth allow_busy fast loading noscript stale", group="connection")
def reset(c, argv):
    """RESET
    Resets the connection: leaves MULTI, unwatches, selects db 0, RESP2, no name."""
    c.multi = None
    c.multi_error = c.multi_denyoom = False
    c.unwatch_all()
    if c.slow_path:   # subscriptions and CLIENT TRACKING (pubsub.py, tracking.py)
        c.leave_events()
    c.db = c.ks.dbs[0]
    c.proto = 2
    c.name = b""
    c.server.ops.drop_monitor(c)     # RESET leaves MONITOR and CLIENT REPLY OFF (Redis)
    c.reply_gate = None
    c.user = c.server.acl.default       # Redis clientSetDefaultAuth
    c.authenticated = not c.server.acl.auth_required()
    c.update_slow_path()
    return Raw(b"+RESET\r\n")


@command("select", 2, "fast loading stale", group="connection")
def select(c, argv):
    """SELECT index
    Changes the selected database."""
    idx = parse_int(argv[1])
    if not 0 <= idx < len(c.ks.dbs):
        raise CommandError(errors.DB_INDEX_OUT_OF_RANGE)
    c.db = c.ks.dbs[idx]
    return OK


def _check_password(c, user: bytes, password: bytes, argv0: bytes) -> None:
    """Authenticate as an ACL user (acl.Acl.authenticate: enabled, and nopass or one of its
    SHA-256 hashes, compared in constant time); a failure goes to ACL LOG."""
    from .. import acl_calls
    from .acl import set_user
    u = c.server.acl.authenticate(user, password)
    if u is None:
        acl_calls.log_denial(c, acl_calls.DENIED_AUTH, acl_calls.CTX_MULTI if c.multi is not None
                             else acl_calls.CTX_TOPLEVEL, argv0, user)
        raise CommandError(errors.WRONGPASS)
    set_user(c, u)


@command("auth", -2, "noauth allow_busy fast loading noscript stale", group="connection")
def auth(c, argv):
    """AUTH [username] password
    Authenticates the connection."""
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    if len(argv) == 2 and c.server.acl.default.nopass:
        raise CommandError(errors.AUTH_NOT_SET)
    user, pw = (b"default", argv[1]) if len(argv) == 2 else (argv[1], argv[2])
    _check_password(c, user, pw, argv[0])
    return OK


@command("hello", -1, "noauth allow_busy fast loading noscript stale", group="connection")
def hello(c, argv):
    """HELLO [protover [AUTH username password] [SETNAME clientname]]
    Handshakes: switches RESP version, authenticates, names the connection."""
    ver = None
    i = 1
    if len(argv) >= 2:
        try:
            ver = parse_int(argv[1])
        except CommandError:
            raise CommandError("Protocol version is not an integer or out of range") from None
        if ver < 2 or ver > 3:
            raise CommandError(errors.NOPROTO)
        i = 2
    user = pw = name = None
    while i < len(argv):
        more = len(argv) - 1 - i
        opt = argv[i].lower()
        if opt == b"auth" and more >= 2:
            user, pw = argv[i + 1], argv[i + 2]
            i += 3
        elif opt == b"setname" and more >= 1:
            name = argv[i + 1]
            i += 2
        else:
            raise CommandError("Syntax error in HELLO option '%s'"
                               % argv[i].decode("utf-8", "surrogateescape"))
    if user is not None:
        _check_password(c, user, pw, argv[0])
    if not c.authenticated:
        raise CommandError(errors.HELLO_NOAUTH)
    if name is not None:
        _validate_name(name)
        c.name = name
    if ver is not None:
        c.proto = ver
    return {b"server": b"redis", b"version": REDIS_VERSION, b"proto": c.proto, b"id": c.id,
            b"mode": b"standalone", b"role": b"master", b"modules": []}


# ---- CLIENT ----

@command("client", -2, "", group="connection")
def client(c, argv):
    """CLIENT subcommand [arguments ...]
    Connection introspection and control."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (argv[1].decode("utf-8", "surrogateescape"), "CLIENT"))


def _validate_name(name: bytes) -> None:
    if any(b < 0x21 or b > 0x7E for b in name):
        raise CommandError("Client names cannot contain spaces, newlines or special characters.")


@command("id", 2, "noscript loading stale", parent="client")
def client_id(c, argv):
    """CLIENT ID
    Returns the connection's id."""
    return c.id


@command("setname", 3, "noscript loading stale", parent="client")
def client_setname(c, argv):
    """CLIENT SETNAME connection-name
    Names the connection."""
    _validate_name(argv[2])
    c.name = argv[2]
    return OK


@command("getname", 2, "noscript loading stale", parent="client")
def client_getname(c, argv):
    """CLIENT GETNAME
    Returns the connection's name, or null."""
    return c.name or None


@command("setinfo", 4, "noscript loading stale", parent="client")
def client_setinfo(c, argv):
    """CLIENT SETINFO <LIB-NAME libname | LIB-VER libver>
    Records the client library's name or version (shown by CLIENT LIST)."""
    attr = argv[2].lower()
    if attr not in (b"lib-name", b"lib-ver"):
        raise CommandError("Unrecognized option '%s'" % argv[2].decode("utf-8", "surrogateescape"))
    if any(b < 0x21 or b > 0x7E for b in argv[3]):
        raise CommandError("%s cannot contain spaces, newlines or special characters."
                           % argv[2].decode("utf-8", "surrogateescape").upper())
    if attr == b"lib-name":
        c.lib_name = argv[3]
    else:
        c.lib_ver = argv[3]
    return OK


def client_line(c, now: float) -> str:
    """One CLIENT LIST / CLIENT INFO line, with Redis 7's field names."""
    flags = "x" if c.multi is not None else ("N" if not c.watched else "N")
    tr = c.tracking
    if c.obuf_class == "pubsub" or tr is not None:   # Redis's order: P x t R B
        flags = (("P" if c.obuf_class == "pubsub" else "") + flags.replace("N", "")
                 + (tr.flag_chars() if tr is not None else "")) or "N"
    if c in c.server.ops.monitors:      # MONITOR (ops.py): Redis's 'O' comes first
        flags = "O" + ("" if flags == "N" else flags)
    if c.bstate is not None or c.held is not None:   # blocked (blocking.py), or postponed
        # by CLIENT PAUSE (Redis blocks it: BLOCKED_POSTPONE): 'b', after P and x
        flags = flags.replace("N", "")
        at = 1 if flags[:1] == "P" else 0
        flags = flags[:at] + "b" + flags[at:]
    # the query buffer, in bytes: while a client's read runs (CLIENT LIST / INFO on
    # itself), the read's bytes, as Redis trims its querybuf only after the read's last
    # command; else what is buffered unparsed.  Unsent output too (Redis also counts slack)
    reader = getattr(c, "reader", None)
    qbuf = reader.buffered() if reader is not None else 0
    if getattr(c, "executing", None) is not None:
        qbuf = max(qbuf, c.read_len)
    t = c.transport if hasattr(c, "transport") else None
    omem = t.get_write_buffer_size() if t is not None and not t.is_closing() else 0
    if c.no_evict:                      # CLIENT NO-EVICT (commands/operators.py)
        flags = ("" if flags == "N" else flags) + "e"
    return ("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d "
            "ssub=%d multi=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 "
            "oll=0 omem=%d tot-mem=%d events=r cmd=%s user=%s redir=%d resp=%d lib-name=%s "
            "lib-ver=%s" % (
                c.id, c.addr, c.laddr, c.fd, c.name.decode("utf-8", "surrogateescape"),
                int(now - c.created), int(now - c.last_interaction), flags, c.db.id,
                len(c.sub_channels), len(c.sub_patterns), len(c.sub_shard),
                len(c.multi) if c.multi is not None else -1, qbuf, omem, qbuf + omem,
                c.last_cmd, c.user.name.decode("utf-8", "surrogateescape"),
                tr.redirect if tr is not None else -1, c.proto,
                c.lib_name.decode("utf-8", "surrogateescape"), c.lib_ver.decode("utf-8", "surrogateescape")))


@command("list", -2, "admin noscript loading stale", parent="client")
def client_list(c, argv):
    """CLIENT LIST [TYPE normal|master|replica|pubsub] [ID client-id ...]
    Lists the connections."""
    clients = sorted(c.server.clients.values(), key=lambda x: x.id)
    if len(argv) > 2:
        opt = argv[2].lower()
        if opt == b"type" and len(argv) == 4:
            kind = argv[3].lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise CommandError("Unknown client type '%s'" % argv[3].decode("utf-8", "surrogateescape"))
            if kind != b"normal":
                clients = [x for x in clients if kind == b"pubsub"
                           and x.obuf_class == "pubsub"]
            else:
                clients = [x for x in clients if x.obuf_class != "pubsub"]
        elif opt == b"id" and len(argv) >= 4:
            ids = set()
            for a in argv[3:]:
                try:
                    ids.add(parse_int(a))
                except CommandError:
                    raise CommandError("Invalid client ID") from None
            clients = [x for x in clients if x.id in ids]
        else:
            raise CommandError(errors.SYNTAX)
    now = time.monotonic()
    return Verbatim("".join(client_line(x, now) + "\n" for x in clients).encode())


@command("info", 2, "noscript loading stale", parent="client")
def client_info(c, argv):
    """CLIENT INFO
    Describes this connection."""
    return Verbatim((client_line(c, time.monotonic()) + "\n").encode())


@command("kill", -3, "admin noscript loading stale", parent="client")
def client_kill(c, argv):
    """CLIENT KILL ip:port | <ID client-id | ADDR ip:port | LADDR ip:port | SKIPME yes/no> ...
    Closes connections."""
    clients = list(c.server.clients.values())
    if len(argv) == 3:  # old form: CLIENT KILL addr
        addr = argv[2].decode("utf-8", "surrogateescape")
        for x in clients:
            if x.addr == addr:
                _kill(c, x)
                return OK
        raise CommandError("No such client")
    if len(argv) % 2 != 0:
        raise CommandError(errors.SYNTAX)
    skipme = True
    tests = []
    for i in range(2, len(argv), 2):
        opt, val = argv[i].lower(), argv[i + 1]
        if opt == b"id":
            try:
                cid = parse_int(val)
            except CommandError:
                raise CommandError("client-id should be greater than 0") from None
            if cid <= 0:
                raise CommandError("client-id should be greater than 0")
            tests.append(lambda x, cid=cid: x.id == cid)
        elif opt == b"addr":
            tests.append(lambda x, a=val.decode("utf-8", "surrogateescape"): x.addr == a)
        elif opt == b"laddr":
            tests.append(lambda x, a=val.decode("utf-8", "surrogateescape"): x.laddr == a)
        elif opt == b"skipme":
            if val.lower() not in (b"yes", b"no"):
                raise CommandError(errors.SYNTAX)
            skipme = val.lower() == b"yes"
        elif opt == b"type":
            kind = val.lower()
            if kind not in (b"normal", b"master", b"replica", b"slave", b"pubsub"):
                raise CommandError("Unknown client type '%s'" % val.decode("utf-8", "surrogateescape"))
            tests.append(lambda x, k=kind: k == (b"pubsub" if x.obuf_class == "pubsub"
                                                 else b"normal"))
        elif opt == b"user":
            if val not in c.server.acl.users:
                raise CommandError(errors.NO_SUCH_USER % val.decode("utf-8", "surrogateescape"))
            tests.append(lambda x, u=val: u == x.user.name)
        else:
            raise CommandError(errors.SYNTAX)
    killed = 0
    for x in clients:
        if skipme and x is c:
            continue
        if all(t(x) for t in tests):
            _kill(c, x)
            killed += 1
    return killed


def _kill(c, victim) -> None:
    """Close ``victim``; the caller itself is closed only after its reply is sent."""
    if victim is c:
        c.close_after_reply()
    else:
        victim.kill()


@command("help", 2, "loading stale", parent="client")
def client_help(c, argv):
    """CLIENT HELP
    Lists the CLIENT subcommands."""
    return [Status(line.encode()) for line in (
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID", "    Return the ID of the current connection.",
        "INFO", "    Return information about the current client connection.",
        "KILL <ip:port> | <option> <value> [<option> <value> ...]",
        "    Kill connections (ID, ADDR, LADDR, SKIPME, TYPE, USER).",
        "LIST [TYPE normal|master|replica|pubsub] [ID <id> [<id> ...]]",
        "    Return information about client connections.",
        "GETNAME", "    Return the name of the current connection.",
        "SETNAME <name>", "    Assign the name <name> to the current connection.",
        "SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR", "    Return the client ID we are redirecting to when tracking is enabled.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]", "    Control server assisted client side caching.",
        "TRACKINGINFO", "    Report tracking status for the current connection.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "UNPAUSE", "    Stop the current client pause, resuming traffic.",
        "REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
        "NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
        "HELP", "    Print this help.")]


# ---- transactions ----

@command("multi", 1, "noscript loading stale fast allow_busy", group="transactions")
def multi(c, argv):
    """MULTI
    Starts a transaction."""
    if c.multi is not None:
        raise CommandError(errors.MULTI_NESTED)
    c.multi = []
    c.multi_error = c.multi_denyoom = False
    return OK


@command("exec", 1, "noscript loading stale skip_slowlog", group="transactions")
def exec_(c, argv):
    """EXEC
    Runs the queued commands of a transaction."""
    if c.multi is None:
        raise CommandError(errors.EXEC_WITHOUT_MULTI)
    return Raw(c.exec_multi())


@command("discard", 1, "noscript loading stale fast allow_busy", group="transactions")
def discard(c, argv):
    """DISCARD
    Drops the queued commands of a transaction."""
    if c.multi is None:
        raise CommandError(errors.DISCARD_WITHOUT_MULTI)
    c.multi = None
    c.multi_error = c.multi_denyoom = False
    c.unwatch_all()
    return OK


@command("watch", -2, "noscript loading stale fast allow_busy", first_key=1, last_key=-1,
         group="transactions")
def watch(c, argv):
    """WATCH key [key ...]
    Makes the next EXEC conditional on these keys staying untouched."""
    if c.multi is not None:
        raise CommandError(errors.WATCH_IN_MULTI)
    c.watch(argv[1:])
    return OK


@command("unwatch", 1, "noscript loading stale fast allow_busy", group="transactions")
def unwatch(c, argv):
    """UNWATCH
    Forgets every WATCHed key."""
    c.unwatch_all()
    return OK
