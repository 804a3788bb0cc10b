"""The Lua scripting engine behind EVAL / EVALSHA / SCRIPT and FUNCTION / FCALL.

One ``lupa.lua51`` runtime per server (Lua 5.1, as Redis), sandboxed as Redis 7.0 does
(``scripting_lua.py`` says how), with ``redis.call`` bridged to the command table.

**Where a script runs, and how other clients are served meanwhile.**  A script runs inline,
on the event loop's thread, inside the dispatcher's call for EVAL: a 1-call EVALSHA costs a
few microseconds, where handing each script to a worker thread and back cost ~45 us
(measured with ``timeit``-style loops: 0.56 us for a Lua call, 44.9 us for a queue round trip
to a thread).  Atomicity is then free: nothing else runs on the loop until the script returns.
Long scripts are handled as Redis handles them (``processEventsWhileBlocked``): Lua calls a
count hook every ``HOOK_INSTRUCTIONS`` VM instructions; once the script has run longer than
``busy-reply-threshold`` (alias ``lua-time-limit``, ms), the hook polls the sockets of the
other connected clients (``poll`` with a zero timeout), reads what they sent and runs it
through the normal dispatcher (:meth:`Client.call`), which answers ``-BUSY ...`` to every
command without the ``allow_busy`` flag (``server.busy_script`` is set).  SCRIPT KILL /
FUNCTION KILL (allowed while busy) mark the run killed and the next hook raises the kill
error; SHUTDOWN NOSAVE stops the server and the script with it.  While the script runs, the
cron, active expiry and eviction do not run (they live on the same loop), and nothing the
busy clients may run touches the keyspace.  Not done while busy: accepting new connections
(they wait in the listen backlog and are served when the script ends) and reading from the
script's own connection (as Redis, which protects the caller).

**redis.call** goes through :meth:`Engine.call`, Redis 7.0's ``scriptCall`` order: argument
types, unknown command / arity, ``noscript``, write in a read-only run, OOM for the first
``denyoom`` command when memory was over ``maxmemory`` at the script's start (unless
``allow-oom``), then the handler on a fake client that shares the caller's database (SELECT
in a script moves only the script).  Replies come back as Lua values by Redis's table
(bulk -> string, nil bulk -> false, integer -> number, status -> {ok=}, error -> {err=},
arrays nested; with ``redis.setresp(3)`` maps, sets, doubles, big numbers, booleans, nulls).

Complexity: a script's own; the bridge is O(arguments + reply size) per redis.call.
"""

from __future__ import annotations

import hashlib
import logging
import os
import select
import time

import lupa.lua51 as lua51

from . import errors
from .errors import CommandError, OOMError, ScriptError
from .registry import lookup
from .resp import (NULL_ARRAY, ErrorReply, ProtocolError, Raw, RespSet, Status, Verbatim,
                   encode)
from .scripting_libs import (MsgpackError, StructError, bit_op, bit_tohex, msgpack_pack,
                             msgpack_unpack, struct_pack, struct_size, struct_unpack)
from .scripting_lua import bootstrap_source

log = logging.getLogger("ferrumkv")

REDIS_VERSION = "7.0.15"
REDIS_VERSION_NUM = 0x07000F
BUSY_READ_BYTES = 65536          # bytes read from a busy-time client per poll
VARARGS_MAX = 200                # KEYS + ARGV passed as Lua arguments; beyond, as tables
# rand48 (Redis rand.c): 48-bit LCG, the state Redis starts from
RAND48_A = 0x5DEECE66D
RAND48_C = 0xB
RAND48_MASK = (1 << 48) - 1
RAND48_INIT = 0x1234ABCD330E
RAND48_MAX = 2147483647          # REDIS_LRAND48_MAX (INT32_MAX)

SHEBANG_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster",
                 "allow-cross-slot-keys")


class ScriptClient:
    """The client a script's commands run on (Redis's Lua client): the caller's database,
    its own protocol version (``redis.setresp``), never in MULTI, never watching."""

    def __init__(self, server):
        self.server = server
        self.ks = server.ks
        self.db = server.ks.dbs[0]
        self.proto = 2
        self.id = 0
        self.name = b""
        self.lib_name = self.lib_ver = b""
        self.multi = None
        self.multi_error = self.multi_denyoom = False
        self.watched: list = []
        self.dirty_cas = False
        self.authenticated = True
        self.closing = False
        self.paused = False
        self.last_cmd = "NULL"
        self.addr = self.laddr = ""
        self.fd = -1
        self.created = self.last_interaction = time.monotonic()
        # what the pub/sub, tracking and output-limit code reads of a client (client.py):
        # a script's client subscribes to nothing and tracks nothing
        self.obuf_class = "normal"
        self.sub_channels: dict = {}
        self.sub_patterns: dict = {}
        self.sub_shard: dict = {}
        self.tracking = None
        self.slow_path = False
        self.executing = None
        self.pending = None
        self.aborted = False

    def watch(self, keys) -> None:
        pass

    def unwatch_all(self) -> None:
        pass

    def close_after_reply(self) -> None:
        pass


class Script:
    """One compiled EVAL script: its body, sha, Lua function and shebang flags (None for a
    script without a shebang, Redis's EVAL compatibility mode)."""

    __slots__ = ("sha", "body", "func", "flags", "name")

    def __init__(self, sha: bytes, body: bytes, func, flags):
        self.sha = sha
        self.name = _s(sha)
        self.body = body
        self.func = func
        self.flags = flags


class Run:
    """The state of the running script (Redis's scriptRunCtx)."""

    __slots__ = ("caller", "name", "ro", "allow_oom", "oom_at_start", "dirty", "start",
                 "busy", "killed", "is_eval")

    def __init__(self, caller, name: str, ro: bool, allow_oom: bool, oom_at_start: bool,
                 is_eval: bool):
        self.caller = caller
        self.name = name
        self.ro = ro
        self.allow_oom = allow_oom
        self.oom_at_start = oom_at_start
        self.dirty = False
        self.start = time.monotonic()
        self.busy = False
        self.killed = False
        self.is_eval = is_eval


def sha1hex(body: bytes) -> bytes:
    return hashlib.sha1(body).hexdigest().encode()


def parse_shebang(body: bytes):
    """(flags, offset of the line feed) of a ``#!lua ...`` first line, (None, 0) without one.

    Raises ScriptError with Redis's texts for a bad shebang.  Complexity: O(first line).
    """
    if not body.startswith(b"#!"):
        return None, 0
    end = body.find(b"\n")
    if end < 0:
        raise CommandError("Invalid script shebang")
    from .resp import split_inline
    parts = split_inline(body[:end])
    if not parts:
        raise CommandError("Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise CommandError("Unexpected engine in script shebang: %s" % _s(parts[0]))
    flags = set()
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise CommandError("Unknown lua shebang option: %s" % _s(part))
        for f in part[6:].split(b","):
            name = _s(f)
            if name not in SHEBANG_FLAGS:
                raise CommandError("Unexpected flag in script shebang: %s" % name)
            flags.add(name)
    return frozenset(flags), end


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


class Engine:
    """The Lua VM of one server, its script cache and the running script's context."""

    def __init__(self, server):
        self.server = server
        self.fake = ScriptClient(server)
        self.run: Run | None = None
        self.rand_state = RAND48_INIT
        self.scripts: dict[bytes, Script] = {}
        self.functions = None       # functions.Libraries, set by commands/functions.py
        self.reset()

    # ---- the VM ----

    def reset(self) -> None:
        """A fresh VM (SCRIPT FLUSH): every compiled script and function is dropped."""
        def deny(obj, attr, is_setting):
            raise AttributeError("access denied")
        self.rt = lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                   register_eval=False, register_builtins=False,
                                   attribute_filter=deny)
        py = self.rt.table_from({
            b"call": self.call, b"pcall": self.pcall, b"unwrap": _unwrap,
            b"hook": self.hook, b"register": self._register, b"sha1hex": sha1hex,
            b"log": self._log, b"setresp": self._setresp, b"acl_check": self._acl_check,
            b"rand_next": self._rand_next, b"rand_seed": self._rand_seed,
            b"bit_op": bit_op, b"bit_tohex": bit_tohex,
            b"mp_pack": msgpack_pack, b"mp_unpack": self._mp_unpack,
            b"st_pack": self._struct("pack", lambda f, *a: [struct_pack(f, *a)]),
            b"st_unpack": self._struct("unpack", lambda f, d=b"", i=1, *a: struct_unpack(
                f, d if d.__class__ is bytes else str(d).encode(), int(i))),
            b"st_size": self._struct("size", lambda f, *a: [struct_size(f)]),
            b"version": REDIS_VERSION.encode(), b"version_num": REDIS_VERSION_NUM,
        })
        boot = self.rt.execute(bootstrap_source().encode(), py)
        self.lua = boot
        self._run = boot[b"run"]
        self._run_tables = boot[b"run_tables"]
        self._run_function = boot[b"run_function"]
        self._compile = boot[b"compile"]
        self._err_table = boot[b"err_table"]
        self._ok_table = boot[b"ok_table"]
        self._double_table = boot[b"double_table"]
        self._big_table = boot[b"big_table"]
        self._verbatim_table = boot[b"verbatim_table"]
        self._map_table = boot[b"map_table"]
        self._set_table = boot[b"set_table"]
        self._kv_table = boot[b"kv_table"]
        self._set_from = boot[b"set_from"]
        self._table_from = self.rt.table_from
        self.scripts = {}

    # ---- EVAL scripts ----

    def load(self, body: bytes) -> Script:
        """Compile a script body (cached by sha).  Raises Redis's compile errors."""
        sha = sha1hex(body)
        script = self.scripts.get(sha)
        if script is not None:
            return script
        flags, skip = parse_shebang(body)
        func, err = self._compile(body[skip:], b"@user_script")
        if func is None:
            raise CommandError("Error compiling script (new function): %s" % _s(err))
        script = Script(sha, body, func, flags)
        self.scripts[sha] = script
        return script

    def eval(self, c, script: Script, argv: list, numkeys: int, ro: bool) -> Raw:
        """Run an EVAL script with KEYS = argv[3:3+numkeys], ARGV = the rest."""
        flags = script.flags
        run = self.prepare(c, flags, ro, True, script.name)
        args = argv[3:]
        try:
            if len(args) <= VARARGS_MAX:
                ok, out = self._run(script.func, script.sha, c.proto, numkeys, *args)
            else:
                t = self._table_from
                ok, out = self._run_tables(script.func, script.sha, c.proto,
                                           t(args[:numkeys]), t(args[numkeys:]))
        finally:
            self.finish(run)
        if ok:
            return Raw(out)
        raise ScriptError(_s(out))

    def prepare(self, c, flags, ro: bool, is_eval: bool, name: str) -> Run:
        """Redis's scriptPrepareForRun: the flag checks, then the run context."""
        if self.run is not None:   # cannot happen: EVAL / FCALL are noscript
            raise CommandError("ERR a script is already running")
        server = self.server
        oom = bool(server.maxmemory) and not server.evictor.make_room()
        allow_oom = False
        if flags is not None:
            no_writes = "no-writes" in flags
            allow_oom = "allow-oom" in flags
            if not allow_oom and not no_writes and oom:
                # a shebang script that may write is a denyoom command (scriptFlagsToCmdFlags)
                raise OOMError()
            if not no_writes and ro:
                raise CommandError(errors.SCRIPT_WRITE_FLAG_RO)
            ro = ro or no_writes
        run = Run(c, name, ro, allow_oom, oom, is_eval)
        fake = self.fake
        fake.db = c.db
        fake.proto = 2
        self.run = run
        return run

    def finish(self, run: Run) -> None:
        self.run = None
        if run.busy:
            self.server.busy_script = None
            log.warning("Slow script finished after %d ms",
                        (time.monotonic() - run.start) * 1000)

    # ---- redis.call ----

    def pcall(self, *args):
        """redis.pcall: the reply, or (None, error table)."""
        try:
            return self.call(*args)
        except CallError as e:
            return None, self._err_table(e.text)

    def call(self, *args):
        """redis.call: the reply as a Lua value, or a raised :class:`CallError` (lupa makes
        it a Lua error; the error handler turns it into Redis's error table)."""
        run = self.run
        if run is None:
            raise CallError(
                b"ERR redis.call/pcall can only be called inside a script invocation")
        if not args:
            raise CallError(
                b"ERR Please specify at least one argument for this redis lib call")
        argv = []
        for a in args:
            t = a.__class__
            if t is bytes:
                argv.append(a)
            elif t is int:
                argv.append(b"%d" % a)
            elif t is float:
                argv.append(b"%.17g" % a)
            else:
                raise CallError(
                    b"ERR Lua redis lib command arguments must be strings or integers")
        spec = lookup(argv[0])
        n = len(argv)
        if spec is not None and spec.subcommands and n > 1:
            spec = spec.subcommands.get(_s(argv[1]).lower())
        if spec is None:
            raise CallError(b"ERR Unknown Redis command called from script")
        a = spec.arity
        if (n != a) if a > 0 else (n < -a):
            raise CallError(b"ERR Wrong number of args calling Redis command from script")
        if "noscript" in spec.flags:
            raise self._reject(spec, "ERR This Redis command is not allowed from script")
        write = spec.write
        if run.ro and (write or "may_replicate" in spec.flags):
            raise self._reject(
                spec, "ERR Write commands are not allowed from read-only scripts.")
        if (spec.denyoom and run.oom_at_start and not run.allow_oom and not run.dirty
                and self.server.maxmemory):
            raise self._reject(spec, OOMError().text)
        if write:
            run.dirty = True
        fake = self.fake
        server = self.server
        try:
            reply = spec.handler(fake, argv)
        except CommandError as e:
            stats = server.stats
            stats.count_call(spec, 0, failed=True)
            stats.count_error(e.code)
            raise CallError(e.text.encode("utf-8", "surrogateescape"))
        server.stats.pending.append(spec)
        shadow = server.shadow
        if shadow is not None and spec.first_key > 0:
            shadow.record(fake, spec, argv, reply)
        t = reply.__class__
        if t is bytes or t is int:
            return reply
        return self.to_lua(reply, fake.proto)

    def _reject(self, spec, text: str):
        stats = self.server.stats
        stats.count_error(text.split(" ", 1)[0])
        stats.count_rejected(spec)
        return CallError(text.encode())

    def to_lua(self, r, resp: int):
        """A handler's reply as the Lua value Redis's parser makes of its RESP."""
        t = r.__class__
        if t is bytes or t is int:
            return r
        if r is None or r is NULL_ARRAY:
            return False if resp == 2 else None
        if t is list or t is tuple:
            return self._table_from([self.to_lua(x, resp) for x in r])
        if t is Status:
            return self._ok_table(bytes(r))
        if t is Raw:
            return self.to_lua(parse_resp(bytes(r))[0], resp)
        if t is bool:
            return r if resp == 3 else int(r)
        if t is float:
            return self._double_table(r) if resp == 3 else _double_text(r)
        if t is dict:
            if resp == 3:
                flat = []
                for k, v in r.items():
                    flat += (self.to_lua(k, resp), self.to_lua(v, resp))
                return self._map_table(self._kv_table(*flat))
            flat = []
            for k, v in r.items():
                flat += (self.to_lua(k, resp), self.to_lua(v, resp))
            return self._table_from(flat)
        if t is RespSet:
            items = [self.to_lua(x, resp) for x in r]
            if resp == 3:
                return self._set_table(self._set_from(*items))
            return self._table_from(items)
        if t is Verbatim:
            return self._verbatim_table(b"txt", bytes(r)) if resp == 3 else bytes(r)
        if t is ErrorReply:
            return self._err_table(r.text.encode("utf-8", "surrogateescape"))
        if t is _BigNumber:
            return self._big_table(bytes(r)) if resp == 3 else bytes(r)
        if t is bytearray or t is memoryview:
            return bytes(r)
        if t is str:
            return r.encode()
        return self.to_lua(parse_resp(encode(r, resp))[0], resp)

    # ---- the small redis.* helpers ----

    def _mp_unpack(self, data: bytes, limit, offset):
        """cmsgpack.unpack*: a table {values=, n=, next=} or {err=}."""
        tf = self._table_from

        def mk_table(is_map, items):
            if is_map:
                return self._kv_table(*items)
            return tf(items)
        try:
            values, nxt = msgpack_unpack(data, mk_table, int(limit), int(offset))
        except MsgpackError as e:
            return tf({b"err": str(e).encode()})
        return tf({b"values": tf(values), b"n": len(values), b"next": nxt})

    def _struct(self, name: str, fn):
        """A struct.* bridge: {values=, n=} or {err=} (raised by the Lua side)."""
        def call(*args):
            tf = self._table_from
            try:
                values = fn(*args)
            except StructError as e:
                return tf({b"err": str(e).replace("{fn}", name).encode()})
            except (TypeError, ValueError, OverflowError) as e:
                return tf({b"err": ("bad argument to struct function (%s)" % e).encode()})
            return tf({b"values": tf(values), b"n": len(values)})
        return call

    def _register(self, *args):
        if self.functions is None:
            return b"ERR redis.register_function can only be called on FUNCTION LOAD command"
        return self.functions.register(*args)

    def _log(self, level: int, text: bytes) -> None:
        py_level = (logging.DEBUG, logging.INFO, logging.WARNING - 5, logging.WARNING)[level]
        log.log(py_level, "%s", _s(text))

    def _setresp(self, resp: int) -> None:
        self.fake.proto = resp

    def _acl_check(self, *args):
        if not args:
            return None, self._err_table(
                b"ERR Please specify at least one argument for this redis lib call")
        spec = lookup(args[0]) if args[0].__class__ is bytes else None
        if spec is None:
            return None, self._err_table(b"ERR Invalid command passed to redis.acl_check_cmd()")
        return True   # one user with every permission (no ACL users here)

    def _rand_next(self) -> float:
        """redisLrand48() % REDIS_LRAND48_MAX / REDIS_LRAND48_MAX, as Redis's math.random."""
        self.rand_state = (self.rand_state * RAND48_A + RAND48_C) & RAND48_MASK
        return ((self.rand_state >> 17) % RAND48_MAX) / RAND48_MAX

    def _rand_seed(self, seed: int) -> None:
        self.rand_state = (((seed & 0xFFFFFFFF) << 16) | 0x330E) & RAND48_MASK

    # ---- busy scripts ----

    def hook(self) -> bool:
        """The count hook: serve others once busy; True when the script must stop."""
        run = self.run
        if run is None:
            return False
        server = self.server
        if not run.busy:
            limit_ms = server.config.values.get("busy-reply-threshold", 5000)
            if (time.monotonic() - run.start) * 1000 < limit_ms:
                return False
            run.busy = True
            server.busy_script = self
            log.warning("Slow script detected: still in execution after %d milliseconds. "
                        "You can try killing the script using the %s command. Script name "
                        "is: %s.", (time.monotonic() - run.start) * 1000,
                        "SCRIPT KILL" if run.is_eval else "FUNCTION KILL", run.name)
        self.serve_others(run.caller)
        return run.killed or server.shutdown_requested

    @property
    def busy_error(self) -> str:
        run = self.run
        return errors.BUSY_EVAL if run is None or run.is_eval else errors.BUSY_FUNCTION

    def serve_others(self, caller) -> None:
        """One pass of processEventsWhileBlocked: read and answer every other client that
        has sent something.  Complexity: O(clients) plus the commands read."""
        fds = {}
        for c in self.server.clients.values():
            if (c is not caller and c.fd >= 0 and not c.closing and not c.paused
                    and c.bstate is None):   # a blocked client (blocking.py) waits
                fds[c.fd] = c
        if not fds:
            return
        poller = select.poll()      # poll, not select: descriptors above 1023 work too
        for fd in fds:
            poller.register(fd, select.POLLIN)
        try:
            ready = [fd for fd, _ in poller.poll(0)]
        except OSError:
            return
        for fd in ready:
            c = fds[fd]
            try:
                data = os.read(fd, BUSY_READ_BYTES)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                c.paused = True   # EOF or error: the loop sees it after the script
                continue
            self._serve_one(c, data)

    @staticmethod
    def _serve_one(c, data: bytes) -> None:
        out = []
        reader = c.reader
        while True:
            try:
                batch = reader.get_batch(data)
                data = None
            except ProtocolError as e:
                out.append(e.reply())
                c.closing = True
                break
            if not batch:
                break
            for argv in batch:
                out.append(c.call(argv))
            if c.closing or not reader.more:
                break
        if out:
            c.transport.write(b"".join(out))
        if c.closing:
            c.transport.close()

    def kill(self, is_eval: bool) -> None:
        """SCRIPT KILL / FUNCTION KILL (scriptKill): Redis's checks, then mark the run."""
        run = self.run
        if run is None:
            raise CommandError(errors.NOTBUSY)
        if run.dirty:
            raise CommandError(errors.UNKILLABLE)
        if is_eval and not run.is_eval:
            raise CommandError(errors.BUSY_FUNCTION)
        if not is_eval and run.is_eval:
            raise CommandError(errors.BUSY_EVAL)
        run.killed = True


class CallError(Exception):
    """redis.call's error, raised through Lua; ``text`` is ``CODE message``."""

    def __init__(self, text: bytes):
        Exception.__init__(self)
        self.text = text


def _unwrap(e):
    """The error text of a CallError that came back from Lua, else None."""
    return e.text if e.__class__ is CallError else None


class _BigNumber(bytes):
    """A RESP3 big number parsed from a Raw reply."""


def _double_text(x: float) -> bytes:
    from .resp import format_double
    return format_double(x)


def parse_resp(data: bytes, pos: int = 0):
    """Parse one RESP2/RESP3 value from ``data`` at ``pos``: (value, next pos), with the
    value in :func:`~ferrumkv_py.resp.encode`'s vocabulary.  Used for pre-encoded (Raw)
    replies only.  Complexity: O(len(data))."""
    end = data.index(b"\r\n", pos)
    kind = data[pos:pos + 1]
    line = data[pos + 1:end]
    nxt = end + 2
    if kind == b"+":
        return Status(line), nxt
    if kind == b"-":
        return ErrorReply(_s(line)), nxt
    if kind == b":":
        return int(line), nxt
    if kind in (b"$", b"="):
        n = int(line)
        if n < 0:
            return None, nxt
        s = data[nxt:nxt + n]
        if kind == b"=":
            return Verbatim(s[4:]), nxt + n + 2
        return s, nxt + n + 2
    if kind in (b"*", b"~", b">"):
        n = int(line)
        if n < 0:
            return NULL_ARRAY, nxt
        items = []
        for _ in range(n):
            v, nxt = parse_resp(data, nxt)
            items.append(v)
        return (RespSet(items) if kind == b"~" else items), nxt
    if kind == b"%":
        out = {}
        for _ in range(int(line)):
            k, nxt = parse_resp(data, nxt)
            v, nxt = parse_resp(data, nxt)
            out[k if k.__class__ is not list else tuple(k)] = v
        return out, nxt
    if kind == b"_":
        return None, nxt
    if kind == b"#":
        return line == b"t", nxt
    if kind == b",":
        return float(line), nxt
    if kind == b"(":
        return _BigNumber(line), nxt
    raise ValueError("bad RESP type %r" % kind)


def engine(server) -> Engine:
    """The server's engine, made on first use."""
    eng = server.__dict__.get("scripting")
    if eng is None:
        eng = server.scripting = Engine(server)
    return eng


def install(server) -> None:
    """Server set-up: the busy flag the dispatcher reads, and the config alias."""
    server.busy_script = None
    cfg = server.config
    values = cfg.values

    def mirror(name):
        def fn(v):
            values[name] = v
        return fn
    if "busy-reply-threshold" in values and "lua-time-limit" in values:
        cfg.on_change("busy-reply-threshold", mirror("lua-time-limit"), call_now=False)
        cfg.on_change("lua-time-limit", mirror("busy-reply-threshold"), call_now=False)
