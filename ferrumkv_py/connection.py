"""One client connection: bytes in, commands dispatched in order, replies out in one write.

:class:`Client` is the asyncio.Protocol (measured 20-30% faster than streams here,
``../shared/notes/performance.md``) and the per-client state commands see (``c.db``,
``c.proto``, ``c.name`` ...).  It glues the transport to :class:`resp.RequestReader` and to
:func:`Client.call`, the dispatcher, which alone enforces the command table's rules:

    unknown command -> arity -> subcommand -> auth -> MULTI queueing -> denyoom under
    maxmemory -> handler -> reply encoding, stats, WATCH and shadow bookkeeping

A protocol error is answered with Redis's text and closes only this connection; a command
error is an error reply and the connection stays.  Every complete command of one read runs
before the replies go out together (``data_received`` does one ``transport.write``).

Hot path: ``data_received`` takes a read's commands in one batch (``get_batch``) and runs
the common case inline, call() and run() folded into its loop: a known command with its
arity, authenticated, outside MULTI, memory within maxmemory.  Anything else goes through
:meth:`Client.call`, which words every error, so both paths answer alike.  Per-command stats
are counted per read (``server.Stats``).  The measurements: ``bench/server_bench.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from . import errors
from .errors import CommandError
from .registry import COMMANDS, lookup
from .resp import (NULL_ARRAY, QUEUED, ProtocolError, Raw, RequestReader, encode,
                   encode_error)

_perf_ns = time.perf_counter_ns
log = logging.getLogger("ferrumkv")

# Commands that run immediately inside MULTI instead of being queued.
_MULTI_IMMEDIATE = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})
UNKNOWN_ARGS_MAX = 128  # bytes of arguments quoted in "unknown command" (Redis %.128s)
# Commands never refused for memory inside MULTI (Redis processCommand).
_MULTI_NO_OOM = frozenset({"exec", "discard", "quit", "reset"})
# Bulk reply headers (``$<len>\r\n``) of the inline path, by payload length.
BULK_PREFIXES = 1024
_BULK_PREFIX = tuple(b"$%d\r\n" % n for n in range(BULK_PREFIXES))
# Integer replies (``:<n>\r\n``) of the inline path, 0 <= n < INT_REPLIES: 100 -> 30 ns a
# reply (timeit), for the 0 / 1 of SADD, HSET, ZADD, DEL, EXISTS and INCR's small counters.
INT_REPLIES = 1024
_INT_REPLY = tuple(b":%d\r\n" % n for n in range(INT_REPLIES))


class Client(asyncio.Protocol):
    """A connected client: protocol object and command context in one (fewer hops)."""

    def __init__(self, server):
        self.server = server
        self.ks = server.ks
        self.id = server.next_client_id()
        self.db = server.ks.dbs[0]
        self.proto = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.reader = RequestReader(server.config["proto-max-bulk-len"])
        self._count = server.stats.pending.append   # Stats.flush counts them per read
        self.authenticated = not server.requirepass
        self.transport = None
        self.addr = "?:0"
        self.laddr = "?:0"
        self.fd = -1
        self.created = time.monotonic()
        self.last_interaction = self.created
        self.multi = None            # list of (spec, argv) while in MULTI
        self.multi_error = False
        self.multi_denyoom = False   # a queued command has the denyoom flag
        self.watched: list = []      # (db id, key) pairs this client WATCHes
        self.dirty_cas = False
        self.closing = False
        self.paused = False
        self.last_cmd = "NULL"

    @property
    def authenticated(self) -> bool:
        return not self.reader.unauth

    @authenticated.setter
    def authenticated(self, value: bool) -> None:
        # Before AUTH, Redis 7 limits frames to 10 arguments of 16 KiB (the reader knows).
        self.reader.unauth = not value

    # ---- asyncio.Protocol ----

    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        if peer:
            self.addr = "%s:%s" % (peer[0], peer[1]) if isinstance(peer, tuple) else str(peer)
        if sock:
            self.laddr = "%s:%s" % (sock[0], sock[1]) if isinstance(sock, tuple) else str(sock)
        s = transport.get_extra_info("socket")
        if s is not None:
            self.fd = s.fileno()
        if not self.server.add_client(self):
            transport.write(encode_error("ERR " + errors.MAX_CLIENTS))
            transport.close()
            self.closing = True

    def connection_lost(self, exc) -> None:
        self.closing = True
        self.unwatch_all()
        self.server.remove_client(self)

    def pause_writing(self) -> None:
        # The client does not read its replies: stop reading its requests until it does,
        # so one slow reader cannot grow our memory without bound.
        self.paused = True
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.paused = False
        if not self.closing:
            self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        reader = self.reader
        server = self.server
        stats = server.stats
        ks = self.ks
        ks.now_ms = ks.clock.now_ms()   # Keyspace.refresh_time(), one call fewer per read
        self.last_interaction = server.now_mono
        stats.net_input_bytes += len(data)
        out = []
        append = out.append
        get_batch = reader.get_batch
        commands = COMMANDS
        count = self._count
        t0 = _perf_ns()  # one clock pair per read, not per command: see Stats
        while True:
            # All the complete commands of the read at once (RequestReader.get_batch; the
            # first call feeds the read in)
            try:
                batch = get_batch(data)
                data = None
            except ProtocolError as e:
                stats.protocol_errors += 1
                append(e.reply())
                self.closing = True
                break
            if not batch:
                break
            it = iter(batch)
            for argv in it:
                # The common case runs inline, :meth:`call` and :meth:`run` in one: a known
                # command with its arity, no subcommand, authenticated, outside MULTI, and
                # memory within maxmemory (after eviction) if it is denyoom (make_room() is
                # called only above Evictor.refresh_room_limit's bound).  Anything else
                # takes call(), which words the errors (SET -P 16 -9% CPU per command,
                # GET -P 16 -11%: bench/server_bench.py --parts dispatch).
                spec = commands.get(argv[0])
                if (spec is None or spec.subcommands or self.multi is not None
                        or reader.unauth
                        or ((len(argv) != spec.arity) if spec.arity > 0
                            else (len(argv) < -spec.arity))
                        or (spec.denyoom and server.maxmemory
                            and server.ks.used_memory > server.room_limit
                            and not server.evictor.make_room())):
                    append(self.call(argv))
                else:
                    self.last_cmd = spec.name
                    try:
                        reply = spec.handler(self, argv)
                    except Exception as e:
                        append(self._failed(spec, e))
                    else:
                        count(spec)
                        t = reply.__class__
                        if t is bytes:
                            # header from a table, payload not copied until the join:
                            # 0.19 -> 0.10 us per 100-byte reply (timeit, GET -P 16 reads)
                            try:
                                append(_BULK_PREFIX[len(reply)])
                            except IndexError:
                                append(b"$%d\r\n" % len(reply))
                            append(reply)
                            append(b"\r\n")
                        elif t is Raw:
                            append(reply)
                        elif reply is None:
                            append(b"_\r\n" if self.proto == 3 else b"$-1\r\n")
                        elif t is int:
                            append(_INT_REPLY[reply] if 0 <= reply < INT_REPLIES
                                   else b":%d\r\n" % reply)
                        else:
                            append(encode(reply, self.proto))
                        shadow = server.shadow
                        if shadow is not None:   # litehit: shadow.py "hot path"
                            if spec in shadow.single and not self.db.id:
                                if shadow.keep_all or hash(argv[1]) < shadow.keep:
                                    shadow.keys.append(argv[1])
                                    shadow.flags.append(4 if spec.write else
                                                        reply is not None)
                            elif spec.first_key > 0:
                                shadow.record(self, spec, argv, reply)
                if self.closing or reader.unauth:
                    # closing: the rest is dropped; RESET made the client owe an AUTH: the
                    # rest is read again under the unauthenticated limits
                    if not self.closing:
                        reader.unread(list(it))
                    break
            if self.closing or not reader.more:
                break
        if stats.pending:
            stats.flush(_perf_ns() - t0)
        if out:
            data = b"".join(out) if len(out) > 1 else out[0]
            stats.net_output_bytes += len(data)
            self.transport.write(data)
        if self.closing:
            self.transport.close()

    # ---- dispatch ----

    def call(self, argv: list) -> bytes:
        """Run one command and return its encoded reply.  Complexity: the command's own.

        The checks run in Redis 7.0's ``processCommand`` order: unknown command or
        subcommand, arity, authentication, ``no_multi`` inside MULTI, then the memory check
        (inside MULTI every queued command is refused when memory cannot be freed, and EXEC
        is refused when it holds a ``denyoom`` command), then queueing or execution.
        """
        spec = COMMANDS.get(argv[0])
        if spec is None:
            spec = lookup(argv[0])
            if spec is None:
                return self._reject(self._unknown(argv))
        n = len(argv)
        a = spec.arity
        if (n != a) if a > 0 else (n < -a):
            return self._reject("ERR " + errors.WRONG_ARGS % spec.name, spec)
        if spec.subcommands and n > 1:
            sub = spec.subcommands.get(argv[1].lower().decode("utf-8", "surrogateescape"))
            if sub is None:
                return self._reject("ERR " + errors.UNKNOWN_SUBCOMMAND % (
                    _printable(_c_str(argv[1])[:UNKNOWN_ARGS_MAX]), spec.name.upper()))
            spec = sub
            a = spec.arity
            if (n != a) if a > 0 else (n < -a):
                return self._reject("ERR " + errors.WRONG_ARGS % spec.name, spec)
        if self.reader.unauth and not spec.noauth:  # not the property: one call less
            return self._reject(errors.NOAUTH, spec)
        multi = self.multi
        if multi is not None and "no_multi" in spec.flags:
            return self._reject("ERR " + errors.NOT_IN_MULTI, spec)
        server = self.server
        busy = server.busy_script   # a script past busy-reply-threshold (scripting.py)
        if busy is not None and "allow_busy" not in spec.flags:
            return self._reject(busy.busy_error, spec)
        if server.maxmemory and busy is None:
            if multi is not None:
                deny = spec.name not in _MULTI_NO_OOM
            elif spec.name == "exec":
                deny = self.multi_denyoom
            else:
                deny = spec.denyoom
            if deny and not server.evictor.make_room():
                return self._reject(errors.OOMError().text, spec)
        if multi is not None and spec.name not in _MULTI_IMMEDIATE:
            multi.append((spec, argv))
            if spec.denyoom:
                self.multi_denyoom = True
            return QUEUED
        return self.run(spec, argv)

    def run(self, spec, argv: list) -> bytes:
        """Execute a checked command: handler, encoding, stats, WATCH and shadow hooks."""
        self.last_cmd = spec.name  # CLIENT LIST shows the running command, as Redis
        try:
            reply = spec.handler(self, argv)
        except Exception as e:
            return self._failed(spec, e)
        self._count(spec)
        t = reply.__class__
        if t is bytes:
            out = b"$%d\r\n%b\r\n" % (len(reply), reply)
        elif t is Raw:
            out = reply
        elif reply is None:
            out = b"_\r\n" if self.proto == 3 else b"$-1\r\n"
        elif t is int:
            out = b":%d\r\n" % reply
        else:
            out = encode(reply, self.proto)
        shadow = self.server.shadow
        if shadow is not None:   # litehit (the slow path: no inline case, record() does all)
            shadow.record(self, spec, argv, reply)
        self.last_cmd = spec.name
        return out

    def _failed(self, spec, e: Exception) -> bytes:
        """The reply and stats of a handler that raised (failed_calls, errorstats)."""
        stats = self.server.stats
        stats.count_call(spec, 0, failed=True)
        if isinstance(e, CommandError):
            stats.count_error(e.code)
            return encode_error(e.text)
        # a handler bug: answer, log, keep the connection and the server
        log.exception("command %s failed", spec.name, exc_info=e)
        stats.count_error("ERR")
        return encode_error("ERR internal error in '%s': %s" % (spec.name,
                                                                e.__class__.__name__))

    def _unknown(self, argv: list) -> str:
        """Redis's text: each argument quoted and cut so the list stays near 128 bytes; the
        words are C strings to Redis (``%s``), so a NUL byte ends each one."""
        args = b""
        for a in argv[1:]:
            if len(args) >= UNKNOWN_ARGS_MAX:
                break
            args += b"'" + _c_str(a)[:UNKNOWN_ARGS_MAX - len(args)] + b"' "
        return "ERR " + errors.UNKNOWN_COMMAND % (_printable(_c_str(argv[0])[:UNKNOWN_ARGS_MAX]),
                                                  _printable(args))

    def _reject(self, text: str, spec=None) -> bytes:
        """An error found before the handler ran (Redis counts these as rejected calls).

        Inside MULTI it also dooms the transaction (Redis ``flagTransaction``).
        """
        if self.multi is not None:
            self.multi_error = True
        self.server.stats.count_error(text.split(" ", 1)[0])
        if spec is not None:
            self.server.stats.count_rejected(spec)
        return encode_error(text)

    # ---- transactions ----

    def exec_multi(self) -> bytes:
        """EXEC: run the queued commands as one batch, or abort."""
        queued, self.multi = self.multi, None
        try:
            if self.multi_error:
                return encode_error(errors.EXECABORT)
            if self.dirty_cas:
                return encode(NULL_ARRAY, self.proto)
            parts = [b"*%d\r\n" % len(queued)]
            for spec, argv in queued:
                parts.append(self.run(spec, argv))
            return b"".join(parts)
        finally:
            self.multi_error = self.multi_denyoom = False
            self.unwatch_all()

    def watch(self, keys: list) -> None:
        ks = self.ks
        for key in keys:
            k = (self.db.id, key)
            if k in self.watched:
                continue
            self.watched.append(k)
            ks.watched.setdefault(k, set()).add(self)

    def unwatch_all(self) -> None:
        ks = self.ks
        for k in self.watched:
            clients = ks.watched.get(k)
            if clients is not None:
                clients.discard(self)
                if not clients:
                    del ks.watched[k]
        self.watched = []
        self.dirty_cas = False

    def close_after_reply(self) -> None:
        self.closing = True

    def kill(self) -> None:
        """CLIENT KILL / timeout / shutdown: drop the connection now."""
        self.closing = True
        if self.transport is not None:
            self.transport.close()


def _printable(b: bytes) -> str:
    """Bytes as str for an error text; ``resp.encode_error`` restores the exact bytes."""
    return b.decode("utf-8", "surrogateescape")


def _c_str(b: bytes) -> bytes:
    """What C's ``%s`` prints of a word: everything before the first NUL."""
    nul = b.find(b"\x00")
    return b if nul < 0 else b[:nul]
