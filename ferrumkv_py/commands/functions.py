"""FUNCTION LOAD / DELETE / FLUSH / LIST / STATS / KILL / DUMP / RESTORE, FCALL, FCALL_RO.

A library is Lua code starting ``#!lua name=<lib>``; running it once (in the engine's VM,
``load_library`` of ``scripting/loader.py``) registers its functions with
``redis.register_function``
(``(name, callback)`` or ``{function_name=, callback=, flags={...}, description=}``).
Functions always run with flags semantics (no EVAL compatibility mode): without
``no-writes`` a function may write, so FCALL_RO refuses it.

FUNCTION DUMP's payload is our own format (a version line, then each library's code as a
length-prefixed block), not Redis's RDB encoding: a dump taken here restores here only.
Complexity: LOAD O(code), FCALL O(1) plus the function, LIST O(functions).
"""

from __future__ import annotations

import re
import time

from .. import errors
from ..errors import CommandError, ScriptError
from ..registry import command
from ..resp import OK, Raw, RespSet, Status
from ..scripting import SHEBANG_FLAGS, engine
from ..scripting.engine import LOAD_TIMEOUT_MS
from ._util import glob_match, parse_int

NAME_RE = re.compile(rb"^[A-Za-z0-9_]+$")
DUMP_MAGIC = b"ferrumkv-functions-1\n"
BAD_NAME = ("Library names can only contain letters, numbers, or underscores(_) and must be "
            "at least one character long")


class Library:
    __slots__ = ("name", "code", "functions")

    def __init__(self, name: bytes, code: bytes):
        self.name = name
        self.code = code
        self.functions: dict = {}     # name -> (lua function, flags tuple, description)


class Libraries:
    """The loaded libraries, and every function by name."""

    # Names are case-insensitive, as Redis 7.0's function and library dicts (dictSdsCase*):
    # both dicts are keyed by the lower-cased name; a library and its functions keep the
    # names as given, which FUNCTION LIST and DUMP show.

    def __init__(self):
        self.libs: dict[bytes, Library] = {}   # lower-cased name -> library
        self.funcs: dict[bytes, tuple] = {}    # lower-cased name -> (library, lua function,
                                               # flags, desc)
        self._loading: Library | None = None

    def register(self, name, cb, desc, *flags):
        """redis.register_function from the loading library: None, or an error text."""
        lib = self._loading
        if lib is None:
            return b"ERR redis.register_function can only be called on FUNCTION LOAD command"
        if name.__class__ is not bytes or not NAME_RE.match(name):
            return b"ERR " + BAD_NAME.encode()
        if any(name.lower() == known.lower() for known in lib.functions):
            return b"ERR Function already exists in the library"
        for f in flags:
            if f.decode("utf-8", "surrogateescape") not in SHEBANG_FLAGS:
                return b"ERR unknown flag given"
        lib.functions[name] = (cb, tuple(f.decode() for f in flags), desc)
        return None

    def load(self, eng, code: bytes, replace: bool) -> bytes:
        """FUNCTION LOAD: compile and run the library, then publish its functions."""
        name = _library_name(code)
        old = self.libs.get(name.lower())
        if old is not None and not replace:
            raise CommandError("Library '%s' already exists" % _s(name))
        lib = Library(name, code)
        self._loading = lib
        eng.load_deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
        try:
            ok, err = eng.lua[b"load_library"](code[code.index(b"\n"):] if b"\n" in code
                                               else b"")
        finally:
            self._loading = None
            eng.load_deadline = None
        if ok is None:
            raise CommandError("Error compiling function: %s" % _s(err))
        if not ok:
            raise CommandError("Error registering functions: %s" % _s(err))
        if not lib.functions:
            raise CommandError("No functions registered")
        for fname in lib.functions:
            owner = self.funcs.get(fname.lower())
            if owner is not None and owner[0] is not old:
                raise CommandError("Function %s already exists" % _s(fname))
        if old is not None:
            self.delete(name)
        self.libs[name.lower()] = lib
        for fname, (cb, flags, desc) in lib.functions.items():
            self.funcs[fname.lower()] = (lib, cb, flags, desc)
        return name

    def delete(self, name: bytes) -> None:
        lib = self.libs.pop(name.lower())
        for fname in lib.functions:
            self.funcs.pop(fname.lower(), None)

    def reload(self, eng) -> None:
        """After SCRIPT FLUSH made a new VM: compile every library again in it."""
        libs = list(self.libs.values())
        self.libs, self.funcs = {}, {}
        eng.functions = self
        for lib in libs:
            self.load(eng, lib.code, False)


def _s(b) -> str:
    return b.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else str(b)


def _library_name(code: bytes) -> bytes:
    """The ``name=`` of a ``#!lua name=<lib>`` first line, with Redis's errors."""
    if not code.startswith(b"#!"):
        raise CommandError("Missing library metadata")
    end = code.find(b"\n")
    first = code[:end] if end >= 0 else code
    parts = first.split()
    if parts[0].lower() != b"#!lua":       # engine names are case-insensitive (#!LUA)
        raise CommandError("Engine '%s' not found" % _s(parts[0][2:]))
    name = None
    for part in parts[1:]:
        if part.startswith(b"name="):
            name = part[5:]
        else:
            raise CommandError("Invalid metadata value given: %s" % _s(part))
    if name is None:
        raise CommandError("Library name was not given")
    if not NAME_RE.match(name):
        raise CommandError(BAD_NAME)
    return name


def libraries(c) -> Libraries:
    eng = engine(c.server)
    if eng.functions is None:
        eng.functions = Libraries()
    return eng.functions


# ---- FCALL ----

def _fcall(c, argv: list, ro: bool):
    libs = libraries(c)
    entry = libs.funcs.get(argv[1].lower())
    numkeys = parse_int(argv[2], "Bad number of keys provided")
    if numkeys > len(argv) - 3:
        raise CommandError(errors.NUMKEYS_GREATER)
    if numkeys < 0:
        raise CommandError("Number of keys can't be negative")
    if entry is None:
        raise CommandError("Function not found")
    lib, cb, flags, desc = entry
    eng = engine(c.server)
    name = _s(argv[1])
    run = eng.prepare(c, frozenset(flags), ro, False, name)
    run.keys = argv[3:3 + numkeys]
    run.argv = argv
    t = eng.rt.table_from
    try:
        ok, out = eng._run_function(cb, argv[1], c.proto, t(argv[3:3 + numkeys]),
                                    t(argv[3 + numkeys:]))
    finally:
        eng.finish(run)
    if ok:
        return Raw(out)
    raise ScriptError(_s(out))


@command("fcall", -3, "noscript stale skip_monitor may_replicate no_mandatory_keys movablekeys",
         group="scripting")
def fcall(c, argv):
    """FCALL function numkeys [key [key ...]] [arg [arg ...]]
    Calls a function of a loaded library."""
    return _fcall(c, argv, False)


def _fcall_may_write(c, argv: list) -> bool:
    """FCALL's flags are its function's (Redis fcallGetCommandFlags): a ``no-writes``
    function runs during CLIENT PAUSE WRITE (ops.Ops.holds)."""
    eng = c.server.__dict__.get("scripting")
    entry = (None if eng is None or eng.functions is None
             else eng.functions.funcs.get(argv[1].lower()))
    return entry is None or "no-writes" not in entry[2]


fcall.may_write = _fcall_may_write


@command("fcall_ro", -3, "noscript stale skip_monitor no_mandatory_keys readonly movablekeys",
         group="scripting")
def fcall_ro(c, argv):
    """FCALL_RO function numkeys [key [key ...]] [arg [arg ...]]
    Calls a read-only function of a loaded library."""
    return _fcall(c, argv, True)


# ---- FUNCTION ----

@command("function", -2, "", group="scripting")
def function_(c, argv):
    """FUNCTION <subcommand> [<arg> [value] [opt] ...]
    A container for function commands."""


@command("load", -3, "write denyoom noscript", parent="function")
def function_load(c, argv):
    """FUNCTION LOAD [REPLACE] function-code
    Loads a library of functions."""
    replace = False
    args = argv[2:]
    if len(args) == 2 and args[0].lower() == b"replace":
        replace = True
        args = args[1:]
    if len(args) != 1:
        if args and args[0].lower() not in (b"replace",):
            raise CommandError("Unknown option given: %s" % _s(args[0]))
        raise CommandError("Function code is missing")
    return libraries(c).load(engine(c.server), args[0], replace)


@command("delete", 3, "write noscript", parent="function")
def function_delete(c, argv):
    """FUNCTION DELETE library-name
    Deletes a library and its functions."""
    libs = libraries(c)
    if argv[2].lower() not in libs.libs:
        raise CommandError("Library not found")
    libs.delete(argv[2])
    return OK


@command("flush", -2, "write noscript", parent="function")
def function_flush(c, argv):
    """FUNCTION FLUSH [ASYNC|SYNC]
    Deletes every library."""
    if len(argv) > 3:                   # Redis: addReplySubcommandSyntaxError
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (_s(argv[1])[:128], "FUNCTION"))
    if len(argv) == 3 and argv[2].lower() not in (b"sync", b"async"):
        raise CommandError("FUNCTION FLUSH only supports SYNC|ASYNC option")
    libs = libraries(c)
    libs.libs, libs.funcs = {}, {}
    return OK


@command("list", -2, "noscript", parent="function")
def function_list(c, argv):
    """FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
    Lists the libraries and their functions."""
    pattern, withcode = None, False
    i = 2
    while i < len(argv):
        a = argv[i].lower()
        if a == b"withcode" and not withcode:
            withcode = True
        elif a == b"libraryname" and pattern is None:
            if i + 1 >= len(argv):
                raise CommandError("library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            raise CommandError("Unknown argument %s" % _s(argv[i]))
        i += 1
    out = []
    for lib in libraries(c).libs.values():
        if pattern is not None and not glob_match(pattern, lib.name):
            continue
        funcs = [{b"name": n, b"description": d,
                  b"flags": RespSet([Status(f.encode()) for f in fl])}
                 for n, (cb, fl, d) in lib.functions.items()]
        entry = {b"library_name": lib.name, b"engine": b"LUA", b"functions": funcs}
        if withcode:
            entry[b"library_code"] = lib.code
        out.append(entry)
    return out


@command("stats", 2, "noscript allow_busy", parent="function")
def function_stats(c, argv):
    """FUNCTION STATS
    Tells the running function, and how many libraries and functions are loaded."""
    libs = libraries(c)
    run = engine(c.server).run
    running = None
    if run is not None and not run.is_eval:
        import time
        running = {b"name": run.name.encode(), b"command": list(run.argv),
                   b"duration_ms": int((time.monotonic() - run.start) * 1000)}
    return {b"running_script": running,
            b"engines": {b"LUA": {b"libraries_count": len(libs.libs),
                                  b"functions_count": len(libs.funcs)}}}


@command("kill", 2, "noscript allow_busy", parent="function")
def function_kill(c, argv):
    """FUNCTION KILL
    Stops the running function if it has not written anything."""
    engine(c.server).kill(is_eval=False)
    return OK


@command("dump", 2, "noscript", parent="function")
def function_dump(c, argv):
    """FUNCTION DUMP
    Serialises every library (our own format, see the module docstring)."""
    parts = [DUMP_MAGIC]
    for lib in libraries(c).libs.values():
        parts.append(b"%d\n%b" % (len(lib.code), lib.code))
    return b"".join(parts)


@command("restore", -3, "write denyoom noscript", parent="function")
def function_restore(c, argv):
    """FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
    Loads the libraries of a FUNCTION DUMP payload."""
    if len(argv) > 4:                   # Redis: addReplySubcommandSyntaxError
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (_s(argv[1])[:128], "FUNCTION"))
    policy = argv[3].lower() if len(argv) > 3 else b"append"
    if policy not in (b"flush", b"append", b"replace"):
        raise CommandError("Wrong restore policy given, value should be either FLUSH, "
                           "APPEND or REPLACE.")
    data = argv[2]
    if not data.startswith(DUMP_MAGIC):
        raise CommandError("payload version or checksum are wrong")
    codes, pos = [], len(DUMP_MAGIC)
    try:
        while pos < len(data):
            nl = data.index(b"\n", pos)
            n = int(data[pos:nl])
            codes.append(data[nl + 1:nl + 1 + n])
            if len(codes[-1]) != n or n < 0:
                raise ValueError
            pos = nl + 1 + n
    except ValueError:
        raise CommandError("payload version or checksum are wrong") from None
    libs = libraries(c)
    eng = engine(c.server)
    saved = (dict(libs.libs), dict(libs.funcs))
    try:
        if policy == b"flush":
            libs.libs, libs.funcs = {}, {}
        for code in codes:
            name = _library_name(code)
            if policy == b"append" and name.lower() in libs.libs:
                # RESTORE's own text (functions.c libraryJoin), unquoted unlike LOAD's
                raise CommandError("Library %s already exists" % _s(name))
            libs.load(eng, code, policy == b"replace")
    except CommandError:
        libs.libs, libs.funcs = saved
        raise
    return OK


@command("help", 2, "loading stale", parent="function")
def function_help(c, argv):
    """FUNCTION HELP
    Shows what FUNCTION can do."""
    return [Status(s.encode()) for s in (
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>", "DELETE <LIBRARY NAME>",
        "LIST [LIBRARYNAME <pattern>] [WITHCODE]",
        "FCALL <FUNCTION NAME> <NUMKEYS> <KEY1> ... <KEYN> <ARG1> ... <ARGN>",
        "FLUSH [ASYNC|SYNC]", "STATS", "KILL", "DUMP",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]", "HELP", "    Prints this help.")]
