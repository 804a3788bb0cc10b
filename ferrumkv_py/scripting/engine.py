"""The engine: one Lua VM per server, its script cache, ``redis.call`` and the running script.

**redis.call** goes through :meth:`Engine.call`, Redis 7.0's ``scriptCall`` order: argument
types, unknown command / arity, ``noscript``, write in a read-only run, OOM for the first
``denyoom`` command when memory was over ``maxmemory`` at the script's start (unless
``allow-oom``), then the handler on a fake client that shares the caller's database (SELECT
in a script moves only the script).  Replies come back as Lua values (``replies.py``).

**Busy scripts**: the count hook (:meth:`Engine.hook`) starts serving other clients once the
script is past ``busy-reply-threshold`` (``busy.py``); SCRIPT KILL / FUNCTION KILL
(:meth:`Engine.kill`) mark the run killed and the next hook raises the kill error; SHUTDOWN
NOSAVE stops the server and the script with it.

Complexity: a script's own; the bridge is O(arguments + reply size) per redis.call.
"""

from __future__ import annotations

import logging
import math
import time

import lupa.lua51 as lua51

from .. import errors
from ..config import format_memory_human
from ..errors import CommandError, OOMError, ScriptError
from ..registry import lookup
from ..resp import Raw
from ..subsystem import Subsystem
from .busy import serve_others
from .lib_bit import bit_op, bit_tohex
from .lib_cmsgpack import MsgpackError, msgpack_pack, msgpack_unpack
from .lib_struct import Arg, StructError, struct_pack, struct_size, struct_unpack
from .replies import CallError, Denied, LuaReplies, unwrap
from .sandbox import BOOT_CHUNK, bootstrap_source
from .scripts import Run, Script, ScriptClient, parse_shebang, sha1hex, text

log = logging.getLogger("ferrumkv")

REDIS_VERSION = "7.0.15"
REDIS_VERSION_NUM = 0x07000F
VARARGS_MAX = 200                # KEYS + ARGV passed as Lua arguments; beyond, as tables
# The Lua heap's bound, checked by the count hook (sandbox.py): past it (after a full
# collection) the script gets Lua's "not enough memory" instead of growing the process
# until the OOM killer stops it (a load() reader that never ends took 20 GB).  Redis
# has no bound; 1 GiB is far above what scripts use (the VM starts at ~0.25 MB).
LUA_HEAP_LIMIT_BYTES = 1 << 30
LOAD_TIMEOUT_MS = 500            # a FUNCTION LOAD's code (Redis's LOAD_TIMEOUT_MS)
SCRIPT_ENTRY_BYTES = 160         # INFO: a cached script's or function's bookkeeping
KV_CHUNK = 128                   # keys + values per kv_fill call when a map is unpacked
# rand48 (Redis rand.c): 48-bit LCG, the state Redis starts from
RAND48_A = 0x5DEECE66D
RAND48_C = 0xB
RAND48_MASK = (1 << 48) - 1
RAND48_INIT = 0x1234ABCD330E
RAND48_MAX = 2147483647          # REDIS_LRAND48_MAX (INT32_MAX)


class Engine:
    """The Lua VM of one server, its script cache and the running script's context."""

    def __init__(self, server):
        self.server = server
        self.fake = ScriptClient(server)
        self.run: Run | None = None
        self.rand_state = RAND48_INIT
        self.scripts: dict[bytes, Script] = {}
        self.functions = None       # functions.Libraries, set by commands/functions.py
        self.load_deadline = None   # monotonic time a FUNCTION LOAD's code must end by
        self.reset()

    # ---- the VM ----

    def reset(self) -> None:
        """A fresh VM (SCRIPT FLUSH): every compiled script and function is dropped."""
        def deny(obj, attr, is_setting):
            raise Denied()
        self.rt = lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                   register_eval=False, register_builtins=False,
                                   attribute_filter=deny)
        py = self.rt.table_from({
            b"call": self.call, b"pcall": self.pcall, b"unwrap": unwrap,
            b"hook": self.hook, b"register": self._register, b"sha1hex": sha1hex,
            b"log": self._log, b"setresp": self._setresp, b"acl_check": self._acl_check,
            b"rand_next": self._rand_next, b"rand_seed": self._rand_seed,
            b"bit_op": bit_op, b"bit_tohex": bit_tohex,
            b"mp_pack": self._mp_pack,
            b"mp_unpack": self._mp_unpack,
            b"st_pack": self._struct("pack", lambda f, a: [struct_pack(f, a)]),
            b"st_unpack": self._struct("unpack", struct_unpack),
            b"st_size": self._struct("size", lambda f, a: [struct_size(f)]),
            b"version": REDIS_VERSION.encode(), b"version_num": REDIS_VERSION_NUM,
        })
        boot = self.rt.execute(bootstrap_source(LUA_HEAP_LIMIT_BYTES).encode(), py,
                               name=BOOT_CHUNK)
        self.lua = boot
        self._run = boot[b"run"]
        self._run_tables = boot[b"run_tables"]
        self._run_function = boot[b"run_function"]
        self._compile = boot[b"compile"]
        self._err_table = boot[b"err_table"]
        self._kv_table = boot[b"kv_table"]
        self._kv_fill = boot[b"kv_fill"]
        self._lua_memory = boot[b"lua_memory"]
        self._table_from = self.rt.table_from
        self.to_lua = LuaReplies(self.rt, boot).to_lua
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
            raise CommandError("Error compiling script (new function): %s" % text(err))
        script = Script(sha, body, func, flags)
        self.scripts[sha] = script
        return script

    def eval(self, c, script: Script, argv: list, numkeys: int, ro: bool) -> Raw:
        """Run an EVAL script with KEYS = argv[3:3+numkeys], ARGV = the rest."""
        flags = script.flags
        run = self.prepare(c, flags, ro, True, script.name)
        run.keys = argv[3:3 + numkeys]
        run.argv = argv
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
        raise ScriptError(text(out))

    def prepare(self, c, flags, ro: bool, is_eval: bool, name: str) -> Run:
        """Redis's scriptPrepareForRun: the flag checks, then the run context."""
        if self.run is not None:   # cannot happen: EVAL / FCALL are noscript
            raise CommandError("ERR a script is already running")
        server = self.server
        oom = bool(server.maxmemory) and not server.evictor.room_for_write()
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
        fake.user = c.user      # the caller's ACL user (acl.py), as Redis's Lua client
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
        argv = call_argv(args)
        n = len(args)
        # no Lua object may stay reachable from this frame: an error's traceback keeps it,
        # and lupa binds a Lua object to the thread it came from (a script's coroutine),
        # which Lua may free first (a use-after-free when the traceback goes)
        del args
        run = self.run
        if run is None:
            raise CallError(
                b"ERR redis.call/pcall can only be called inside a script invocation")
        if not n:
            raise CallError(
                b"ERR Please specify at least one argument for this redis lib call")
        if argv is None:
            raise CallError(
                b"ERR Lua redis lib command arguments must be strings or integers")
        spec = lookup(argv[0])
        n = len(argv)
        if spec is not None and spec.subcommands and n > 1:
            spec = spec.subcommands.get(text(argv[1]).lower())
        if spec is None:
            raise CallError(b"ERR Unknown Redis command called from script")
        if n not in spec.argc:
            raise CallError(b"ERR Wrong number of args calling Redis command from script")
        if "noscript" in spec.flags:
            raise self._reject(spec, "ERR This Redis command is not allowed from script")
        if not run.caller.user.open:    # ACL: the caller's user (Redis scriptVerifyACL)
            from ..acl_calls import CTX_LUA, deny, script_noperm_text
            res = deny(run.caller, spec, argv, CTX_LUA)
            if res:
                raise self._reject(spec, script_noperm_text(res))
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
        t_ns = time.perf_counter_ns()
        try:
            reply = spec.handler(fake, argv)
        except CommandError as e:
            stats = server.stats
            stats.count_call(spec, 0, failed=True)
            stats.count_error(e.code)
            server.ops.script_call(fake, spec, argv, time.perf_counter_ns() - t_ns)
            raise CallError(e.text.encode("utf-8", "surrogateescape"))
        server.ops.script_call(fake, spec, argv, time.perf_counter_ns() - t_ns)
        server.stats.pending.append(spec)
        shadow = server.shadow
        if shadow is not None and spec.first_key > 0:
            shadow.record(fake, spec, argv, reply)
        if spec.keyspace_read and not run.tracked and run.caller.tracking is not None:
            # Redis call(): a script's first read command makes the caller's tracking
            # remember the script's declared keys (not the keys the command read)
            run.tracked = True
            server.tracking.remember_keys(run.caller, run.keys)
        t = reply.__class__
        if t is bytes or t is int:
            return reply
        return self.to_lua(reply, fake.proto)

    def _reject(self, spec, text: str):
        stats = self.server.stats
        stats.count_error(text.split(" ", 1)[0])
        stats.count_rejected(spec)
        return CallError(text.encode())

    # ---- the small redis.* helpers ----

    def _mp_pack(self, *values):
        """cmsgpack.pack: (the encoding, None), or (None, error text) when the busy tick saw
        a kill.  It never raises: the values are Lua tables bound to the API coroutine
        (see :meth:`call`), which an error's traceback would keep."""
        try:
            return msgpack_pack(self.hook, *values), None
        except MsgpackError as e:
            err = str(e).encode()
        del values
        return None, err

    def _mp_unpack(self, data: bytes, limit, offset):
        """cmsgpack.unpack*: a table {values=, n=, next=} or {err=}."""
        tf = self._table_from
        fill = self._kv_fill

        def mk_table(is_map, items):
            if not is_map:
                return tf(items)
            t = tf()
            for i in range(0, len(items), KV_CHUNK):
                bad = fill(t, *items[i:i + KV_CHUNK])
                if bad is not None:
                    raise MsgpackError("table index is %s" % text(bad))
            return t
        try:
            values, nxt = msgpack_unpack(data, mk_table, int(limit), int(offset), self.hook)
        except MsgpackError as e:
            return tf({b"err": str(e).encode()})
        return tf({b"values": tf(values), b"n": len(values), b"next": nxt})

    def _struct(self, name: str, fn):
        """A struct.* bridge: {values=, n=} or {err=} (raised by the Lua side).  Each
        argument after the format comes as three plain values, its type, text and number
        (lib_struct.Arg): no Lua object reaches Python from the API coroutine."""
        def call(fmt, *flat):
            tf = self._table_from
            args = [Arg(text(flat[i]), flat[i + 1], flat[i + 2])
                    for i in range(0, len(flat), 3)]
            try:
                values = fn(fmt, args)
            except StructError as e:
                return tf({b"err": str(e).replace("{fn}", name).encode()})
            return tf({b"values": tf(values), b"n": len(values)})
        return call

    def _register(self, *args):
        if self.functions is None:
            return b"ERR redis.register_function can only be called on FUNCTION LOAD command"
        return self.functions.register(*args)

    def _log(self, level: int, message: bytes) -> None:
        py_level = (logging.DEBUG, logging.INFO, logging.WARNING - 5,
                    logging.WARNING)[int(level)]
        log.log(py_level, "%s", text(message))

    def _setresp(self, resp: int) -> None:
        self.fake.proto = resp

    def _acl_check(self, *args):
        if not args:
            return None, self._err_table(
                b"ERR Please specify at least one argument for this redis lib call")
        argv = [a if a.__class__ is bytes else b"%d" % a if a.__class__ is int
                else b"%.17g" % a if a.__class__ is float else None for a in args]
        spec = lookup(argv[0]) if argv[0] is not None else None
        if spec is not None and spec.subcommands and len(argv) > 1 and argv[1] is not None:
            spec = spec.subcommands.get(text(argv[1]).lower())
        if spec is None or None in argv:
            return None, self._err_table(b"ERR Invalid command passed to redis.acl_check_cmd()")
        from ..acl_calls import OK, check_call   # may the caller's user run it like this
        return check_call(self.run.caller.user, spec, argv)[0] == OK

    def _rand_next(self) -> float:
        """redisLrand48() % REDIS_LRAND48_MAX / REDIS_LRAND48_MAX, as Redis's math.random."""
        self.rand_state = (self.rand_state * RAND48_A + RAND48_C) & RAND48_MASK
        return ((self.rand_state >> 17) % RAND48_MAX) / RAND48_MAX

    def _rand_seed(self, seed) -> None:
        """redisSrand48((int32_t)seed); a seed past an int (or not finite) as 0."""
        seed = int(seed) if math.isfinite(seed) and abs(seed) < 2 ** 63 else 0
        self.rand_state = (((seed & 0xFFFFFFFF) << 16) | 0x330E) & RAND48_MASK

    # ---- INFO memory ----

    def info_fields(self) -> list:
        """Redis 7.0's script fields of INFO memory.  One Lua VM runs both EVAL scripts and
        FUNCTION libraries here (Redis has one each), so its heap is reported as the eval
        VM's and ``used_memory_vm_functions`` is 0.  The caches are the script bodies and
        library codes with a fixed overhead per entry (SCRIPT_ENTRY_BYTES)."""
        vm = self.lua_memory()
        scripts = sum(len(sc.body) + SCRIPT_ENTRY_BYTES for sc in self.scripts.values())
        libs = self.functions
        nfuncs = len(libs.funcs) if libs is not None else 0
        functions = (sum(len(lib.code) + SCRIPT_ENTRY_BYTES * (1 + len(lib.functions))
                         for lib in libs.libs.values()) if libs is not None else 0)
        return info_rows(vm, scripts, len(self.scripts), nfuncs,
                         len(libs.libs) if libs is not None else 0, functions)

    def lua_memory(self) -> int:
        """Bytes of the Lua heap (collectgarbage('count'), as Redis's evalMemory)."""
        return int(self._lua_memory() * 1024)

    # ---- busy scripts ----

    def hook(self):
        """The count hook: serve others once busy; True when the script must stop, 2 when
        a FUNCTION LOAD has run past LOAD_TIMEOUT_MS (its code must only register)."""
        run = self.run
        if run is None:
            deadline = self.load_deadline
            if deadline is not None and time.monotonic() > deadline:
                return 2
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
        serve_others(server, run.caller)
        return run.killed or server.shutdown_requested

    @property
    def busy_error(self) -> str:
        run = self.run
        return errors.BUSY_EVAL if run is None or run.is_eval else errors.BUSY_FUNCTION

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


def call_argv(args: tuple) -> list | None:
    """redis.call's arguments as bytes (Lua strings, numbers as integers or %.17g), or None
    when one is of another type."""
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
            return None
    return argv


def info_rows(vm: int, scripts: int, nscripts: int, nfuncs: int, nlibs: int,
              functions: int) -> list:
    """The INFO memory rows, in 7.0.15's order (server.c genRedisInfoString)."""
    return [
        ("used_memory_lua", vm),                       # deprecated alias of _vm_eval
        ("used_memory_vm_eval", vm),
        ("used_memory_lua_human", format_memory_human(vm)),
        ("used_memory_scripts_eval", scripts),
        ("number_of_cached_scripts", nscripts),
        ("number_of_functions", nfuncs),
        ("number_of_libraries", nlibs),
        ("used_memory_vm_functions", 0),
        ("used_memory_vm_total", vm),
        ("used_memory_vm_total_human", format_memory_human(vm)),
        ("used_memory_functions", functions),
        ("used_memory_scripts", scripts + functions),
        ("used_memory_scripts_human", format_memory_human(scripts + functions)),
    ]


def info_fields(server) -> list:
    """INFO memory's script rows; all zero while no script has made the VM yet."""
    eng = server.__dict__.get("scripting")
    if eng is None:
        return info_rows(0, 0, 0, 0, 0, 0)
    return eng.info_fields()


def engine(server) -> Engine:
    """The server's engine, made on first use."""
    eng = server.__dict__.get("scripting")
    if eng is None:
        eng = server.scripting = Engine(server)
    return eng


class ScriptTimeLimit(Subsystem):
    """``lua-time-limit`` and ``busy-reply-threshold``, one setting under two names (Redis
    7's alias): setting either sets both.  (``server.busy_script``, the flag the dispatcher
    reads while a script runs past it, is the Server's.)  Complexity: O(1) per change."""

    def __init__(self, server):
        super().__init__(server)
        cfg = server.config
        if "busy-reply-threshold" in cfg.values and "lua-time-limit" in cfg.values:
            cfg.on_change("busy-reply-threshold", self._mirror("lua-time-limit"),
                          call_now=False)
            cfg.on_change("lua-time-limit", self._mirror("busy-reply-threshold"),
                          call_now=False)

    def _mirror(self, name: str):
        values = self.server.config.values

        def mirror(value) -> None:
            values[name] = value
        return mirror
