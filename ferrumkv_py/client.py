"""One client connection: bytes in, commands dispatched in order, replies out in one write
per event-loop round.

:class:`Client` is the asyncio.Protocol (a bare Protocol + hiredis server measured here
ran 22-31% faster than the same server on asyncio streams at -P 1, 18-24% at -P 16) and the per-client state commands see (``c.db``,
``c.proto``, ``c.name`` ...).  It glues the transport to :class:`resp.RequestReader` and to
:func:`Client.call`, the dispatcher, which alone enforces the command table's rules:

    unknown command -> arity -> subcommand -> auth -> no_multi -> ACL -> busy script ->
    memory under maxmemory (denyoom; inside MULTI every command but EXEC, DISCARD, QUIT and
    RESET, before it is queued) -> pub/sub context -> CLIENT PAUSE -> MULTI queueing ->
    handler -> reply encoding, stats, WATCH and shadow bookkeeping

A protocol error is answered with Redis's text and closes only this connection; a command
error is an error reply and the connection stays.  Every complete command of one read runs
before the replies go out together: ``data_received`` queues them, and every client's
queued output is written once per event-loop round (``Server.flush_soon``).

Hot path: ``data_received`` takes a read's commands in one batch (``get_batch``) and runs
the common case inline, call() and run() folded into its loop: a known command with its
arity, authenticated, outside MULTI, memory within maxmemory.  Anything else goes through
:meth:`Client.call`, which words every error, so both paths answer alike.  Per-command stats
are counted per read (``stats.Stats``).  The measurements: ``bench/server_bench.py``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from . import acl_calls as acl, errors, limits
from .client_state import ClientState
from .errors import CommandError, WrongTypeError
from .first_use import Postponed
from .registry import COMMANDS, lookup
from .notify import NOTIFY_STRING
from .resp import (NULL_ARRAY, OK, QUEUED, ProtocolError, Pushed, QueryBufferLimit,
                   Raw, RequestReader, encode, encode_error)
from .shadow import FLAG_WRITE     # the shadow's hot-path contract (shadow.HOT_PATH_ATTRS)

POSTPONED = Raw(b"")    # call(): CLIENT PAUSE holds the command (compared by identity)
STREAMING = Raw(b"")    # call(): done, its reply still streaming: the rest waits (_randpick)

_perf_ns = time.perf_counter_ns
log = logging.getLogger("ferrumkv")

# Commands that run immediately inside MULTI instead of being queued.
_MULTI_IMMEDIATE = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})
UNKNOWN_ARGS_MAX = 128  # bytes of arguments quoted in "unknown command" (Redis %.128s)
# Commands never refused for memory inside MULTI (Redis processCommand).
_MULTI_NO_OOM = frozenset({"exec", "discard", "quit", "reset"})
# What a subscribed RESP2 client may run (Redis processCommand, CLIENT_PUBSUB).
_PUBSUB_ALLOWED = frozenset({"ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe",
                             "psubscribe", "punsubscribe", "quit", "reset"})
# Bulk reply headers (``$<len>\r\n``) of the inline path, by payload length.
BULK_PREFIXES = 1024
_BULK_PREFIX = tuple(b"$%d\r\n" % n for n in range(BULK_PREFIXES))
# Integer replies (``:<n>\r\n``) of the inline path, 0 <= n < INT_REPLIES: 100 -> 30 ns a
# reply (timeit), for the 0 / 1 of SADD, HSET, ZADD, DEL, EXISTS and INCR's small counters.
INT_REPLIES = 1024
_INT_REPLY = tuple(b":%d\r\n" % n for n in range(INT_REPLIES))
_NO_INLINE: dict = {}           # Client.inline while every command must take call()
_inline_tables: dict = {}       # id(dispatch table) -> (table, its size, inline table)


def inline_table(commands: dict) -> dict:
    """The commands of the dispatch table ``commands`` the dispatcher may run inline: those
    without subcommands (a container command such as CONFIG takes :meth:`Client.call`,
    which finds the subcommand).  Cached per table; rebuilt when commands were registered
    since.  Complexity: O(commands) once per table, then O(1)."""
    table, size, inline = _inline_tables.get(id(commands), (None, -1, None))
    if table is not commands or size != len(commands):
        inline = {k: v for k, v in commands.items() if not v.subcommands}
        _inline_tables[id(commands)] = (commands, len(commands), inline)
    return inline


BIG_REPLY_BYTES = 1024          # replies this long count toward the output limits early
DEFAULT_HIGH_WATER_BYTES = 64 * 1024   # asyncio's write-buffer high-water mark


class Client(asyncio.Protocol, ClientState):
    """A connected client: protocol object and command context in one (fewer hops).
    The command context (``c.db``, ``c.proto``, MULTI, pub/sub ...) is :class:`ClientState`,
    shared with the client scripts run on."""

    def __init__(self, server):
        ClientState.__init__(self, server)
        self.id = server.next_client_id()
        self.reader = RequestReader(server.config["proto-max-bulk-len"])
        self.reader.query_limit = server.config["client-query-buffer-limit"]
        # client-output-buffer-limit (limits.py): the reply bytes of one read after which
        # replies are written and checked early, the soft-limit clock
        self.obuf_early = limits.early_write_bytes(server.obuf_limits["normal"])
        self.obuf_soft_since = None
        self.obuf_big = 0            # large-reply bytes since the last early write
        self._count = server.stats.pending.append   # Stats.flush counts them per read
        self.user = server.acl.default    # ACL user (acl.py)
        self.commands = acl.dispatch_table(self.user, COMMANDS)   # the inline path's table
        self.inline = _NO_INLINE          # refresh_inline(), whenever what it reads changes
        self.authenticated = not server.acl.auth_required()
        self.transport = None
        self.addr = "?:0"
        self.laddr = "?:0"
        self.slow_path = server.ops.slow_all or not self.user.fast   # MONITOR / CLIENT
        #   PAUSE on, or an ACL-limited user: every command takes call()

    @property
    def authenticated(self) -> bool:
        return not self.reader.unauth

    @authenticated.setter
    def authenticated(self, value: bool) -> None:
        # Before AUTH, Redis 7 limits frames to 10 arguments of 16 KiB (the reader knows).
        self.reader.unauth = not value
        self.refresh_inline()

    def refresh_inline(self) -> None:
        """Set ``inline``, the table the dispatcher looks a command name up in first: the
        client's commands without subcommands (``inline_table``), or none at all while the
        client is in MULTI, on the slow path or not authenticated, so that one failed lookup
        sends every command to :meth:`call`.  Called by the setters of ``multi``,
        ``slow_path`` and ``authenticated`` and after ``commands`` changes: the table is
        always current, even for the next command of the same read.  Complexity: O(1)
        (``inline_table`` caches)."""
        if self._multi is not None or self._slow_path or self.reader.unauth:
            self.inline = _NO_INLINE
        else:
            self.inline = inline_table(self.commands)

    # ---- asyncio.Protocol ----

    def connection_made(self, transport) -> None:
        if self.transport is not None:  # accepted while a script was busy: the loop's now
            from .busy_accept import adopt
            adopt(self, transport)
            if self.obuf_early < DEFAULT_HIGH_WATER_BYTES:
                transport.set_write_buffer_limits(high=self.obuf_early)
            return
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
        if self.obuf_early < DEFAULT_HIGH_WATER_BYTES:
            transport.set_write_buffer_limits(high=self.obuf_early)
        if not self.server.add_client(self):
            transport.write(encode_error("ERR " + errors.MAX_CLIENTS))
            transport.close()
            self.closing = True
        elif self.server.protected_mode_denies(peer):
            transport.write(encode_error(errors.PROTECTED_MODE_DENIED))
            transport.close()
            self.closing = True
        elif self.server.ops.slow_all and not self.slow_path:
            # a CLIENT PAUSE or MONITOR that began between this client's accept and now
            # reached only the clients already registered: this one takes call() too
            self.slow_path = True

    def is_local(self) -> bool:
        """Connected over loopback or a Unix socket (protected.is_local_peer)."""
        from .protected import is_local_peer
        return self.transport is None or is_local_peer(
            self.transport.get_extra_info("peername"))

    def connection_lost(self, exc) -> None:
        self.closing = True
        self.unwatch_all()
        if self.bstate is not None:
            self.server.blocking.drop(self)
        if self.slow_path:
            self.leave_events()
        self.server.remove_client(self)
        ops = self.server.ops
        ops.drop_monitor(self)
        if self.held is not None and self in ops.held:
            ops.held.remove(self)

    def pause_writing(self) -> None:
        # The client does not read its replies: stop reading its requests until it does,
        # so one slow reader cannot grow our memory without bound.
        self.paused = True
        self.transport.pause_reading()
        self.check_output_limits()

    def resume_writing(self) -> None:
        self.paused = False
        if self.obuf_soft_since is not None:
            self.check_output_limits()
        if not self.closing:
            self.transport.resume_reading()

    # ---- limits (limits.py) ----

    def set_obuf_class(self, name: str) -> None:
        """Put the client in an output-buffer class (``normal``, ``pubsub``): the pub/sub
        code calls this on SUBSCRIBE and when the last subscription goes."""
        self.obuf_class = name
        self.obuf_early = limits.early_write_bytes(self.server.obuf_limits[name])
        if self.transport is not None:
            self.transport.set_write_buffer_limits(
                high=min(self.obuf_early, DEFAULT_HIGH_WATER_BYTES))

    def timeout_exempt(self) -> bool:
        """Clients ``timeout`` never closes (Redis: blocked and pub/sub clients); the
        blocking and pub/sub code extend this.  Clients inside MULTI are not exempt."""
        return self.obuf_class == "pubsub" or self.bstate is not None

    def check_output_limits(self, extra_bytes: int = 0) -> bool:
        """Close the client when its unsent replies (plus ``extra_bytes`` about to be
        queued) pass its class's limits; True if it was closed.  Complexity: O(1)."""
        if self.transport is None or self.aborted:
            return self.aborted
        pending = self.transport.get_write_buffer_size() + extra_bytes
        soft_before = self.obuf_soft_since
        over = limits.check_output(self, pending, self.server.now_mono)
        if self.obuf_soft_since is not soft_before:
            if self.obuf_soft_since is None:
                self.server.obuf_soft_clients.discard(self)
            else:
                self.server.obuf_soft_clients.add(self)
        if over:
            self.closing = self.aborted = True
            self.server.obuf_soft_clients.discard(self)
            limits.close_for_output_limit(self)
        return over

    def _write_early(self, out: list, extra_bytes: int) -> None:
        """Replies of this read passed the smallest output limit: write them now and check
        the limits, ``extra_bytes`` of a reply still to come included."""
        if self.aborted:
            out.clear()
            self.obuf_big = 0
            return
        self.obuf_big = 0
        self.write_now(out)
        out.clear()
        self.check_output_limits(extra_bytes)

    def write_now(self, frames) -> None:
        """Write this client's unsent output, then ``frames``: at the round's flush
        (``Server.flush_writes``), or now, ahead of it: an early write of big replies, a
        close, a reply sent while a busy script holds the loop.  Dropped after an
        output-limit abort.  O(bytes)."""
        unsent, self.unsent = self.unsent, None
        if unsent:
            frames = unsent + list(frames) if frames else unsent
        if frames and not self.aborted:
            data = b"".join(frames)
            self.server.stats.net_output_bytes += len(data)
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self.closing or self.held is not None:
            if not self.closing:
                self._feed_held(data)
            return
        reader = self.reader
        server = self.server
        if self.bstate is not None:     # blocked: what it sends waits (blocking.py)
            server.blocking.hold(self, data)
            return
        held, self.bheld = self.bheld, None
        stats = server.stats
        ks = self.ks
        ks.now_ms = ks.clock.now_ms()   # Keyspace.refresh_time(), one call fewer per read
        self.last_interaction = server.now_mono
        n = len(data)
        stats.net_input_bytes += n
        self.read_len = n       # CLIENT LIST's qbuf while this read's commands run
        out = []
        self.executing = out    # push() to this client goes before the current reply
        append = out.append
        get_batch = reader.get_batch
        commands = self.commands     # COMMANDS, or without the channel commands (acl_calls)
        get_spec = commands.get(b"get")     # GET runs inline (strings.get's body), below
        set_spec = commands.get(b"set")     # ... and SET key value (strings.set_'s first case)
        count = self._count
        ops = server.ops                # ops.py: slowlog / latency monitor threshold
        slow_ns = ops.slow_ns
        t0 = _perf_ns()  # one clock pair per read, not per command: see Stats
        while True:
            # All the complete commands of the read at once (RequestReader.get_batch; the
            # first call feeds the read in)
            try:
                # (held: the rest of a read that blocked, now served: blocking.py)
                batch = get_batch(data) if held is None else held
                data = held = None
            except ProtocolError as e:
                stats.protocol_errors += 1
                append(e.reply())
                self.closing = True
                break
            except QueryBufferLimit as e:
                limits.close_for_query_limit(self, e.head)
                break
            if not batch:
                break
            t_prev = _perf_ns()     # a command's time starts after the read's parsing
            it = iter(batch)
            for argv in it:
                # The common case runs inline, :meth:`call` and :meth:`run` in one: a known
                # command with its arity, no subcommand, authenticated, outside MULTI, and
                # memory within maxmemory (after eviction) if it is denyoom: the test of
                # Evictor.room_for_write() spelt out on server.ROOM_CHECK_ATTRS, as a call
                # costs more than the test (make_room() runs only above the room limit,
                # Evictor.refresh_room_limit's bound).  Anything else
                # takes call(), which words the errors (SET -P 16 -9% CPU per command,
                # GET -P 16 -11%: bench/server_bench.py --parts dispatch).
                spec = self.inline.get(argv[0])     # None in MULTI, unauthenticated ...
                if (spec is None or len(argv) not in spec.argc
                        or (spec.denyoom and ks.used_memory > server.room_limit
                            and not server.evictor.make_room())):
                    r = self.call(argv)
                    t_prev = _perf_ns()         # run() timed the command itself
                    if r is POSTPONED:          # CLIENT PAUSE: this and the rest wait
                        self.hold([argv, *it])
                        break
                    if r is STREAMING:          # its reply streams: the rest waits
                        self.hold(list(it))
                        break
                    if self.reply_gate is not None:
                        r = self.gate_reply(r)
                    append(r)
                    if len(r) > BIG_REPLY_BYTES:
                        self.obuf_big += len(r)
                        if self.obuf_big > self.obuf_early:
                            self._write_early(out, 0)
                else:
                    self.last_cmd = spec.name
                    try:
                        if spec is get_spec:    # GET: its handler inline, one call fewer
                            reply = self.db.lookup_value(argv[1])   # (= strings.get)
                            if reply.__class__ is not bytes and reply is not None:
                                raise WrongTypeError()
                        elif spec is set_spec and len(argv) == 3:   # (= strings.set_)
                            self.db.set(argv[1], argv[2])
                            if ks.notify_flags:
                                ks.notify(self.db, NOTIFY_STRING, b"set", argv[1])
                            reply = OK
                        else:
                            reply = spec.handler(self, argv)
                    except Postponed as e:      # kernels loading (first_use.py), or a
                        if e.done:              # reply streaming: it ran (counted)
                            count(spec)
                        self.hold(list(it) if e.done else [argv, *it])
                        break
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
                                self.obuf_big += len(reply)
                                if self.obuf_big > self.obuf_early:    # before the payload
                                    self._write_early(out, len(reply))
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
                            r = encode(reply, self.proto)
                            append(r)
                            if len(r) > BIG_REPLY_BYTES:
                                self.obuf_big += len(r)
                                if self.obuf_big > self.obuf_early:
                                    self._write_early(out, 0)
                        shadow = server.shadow
                        if shadow is not None:   # litehit: shadow.HOT_PATH_ATTRS only
                            if spec in shadow.single and not self.db.id:
                                if shadow.keep_all or hash(argv[1]) < shadow.keep:
                                    shadow.keys.append(argv[1])
                                    shadow.flags.append(FLAG_WRITE if spec.write else
                                                        reply is not None)
                            elif spec.first_key > 0:
                                shadow.record(self, spec, argv, reply)
                    t1 = _perf_ns()      # ops.py: one clock read per command
                    if t1 - t_prev >= slow_ns:
                        w = self.bstate
                        if w is not None and w.call is None:   # blocked: logged when it
                            w.call = (spec, argv, t1 - t_prev)  # ends (blocking.py)
                        else:
                            ops.after_command(self, spec, argv, t1 - t_prev)
                    t_prev = t1
                if self.closing or reader.unauth or server.blocking_due:
                    # blocking.py: serve the keys this command made ready; a client that
                    # blocked runs the rest of its read once it is served
                    if server.blocking_due and server.blocking.after_command(self):
                        self.bheld = list(it)
                        break
                    if not (self.closing or reader.unauth):
                        continue
                    # closing: the rest is dropped; RESET made the client owe an AUTH: the
                    # rest is read again under the unauthenticated limits
                    if not self.closing:
                        reader.unread(list(it))
                    break
            if (self.closing or not reader.more or self.bstate is not None
                    or self.held is not None):
                break
        if stats.pending:
            elapsed_ns = _perf_ns() - t0
            if ops.tracking:    # latency histograms, per read as commandstats (ops.py)
                ops.track_read(stats.pending, elapsed_ns)
            stats.flush(elapsed_ns)
        self.executing = None
        if self.closing:    # what it is owed, then the close
            self.write_now(out)
            self.transport.close()
        elif out:           # queued for the round's flush (Server.flush_soon says why)
            unsent = self.unsent
            if unsent is None:
                self.unsent = out
                server.write_clients.append(self)
            else:
                unsent += out
        if server.write_clients and not server.flush_due:
            server.flush_soon()

    # ---- dispatch ----

    def call(self, argv: list) -> bytes:
        """Run one command and return its encoded reply.  Complexity: the command's own.

        The checks run in Redis 7.0's ``processCommand`` order: unknown command or
        subcommand, arity, authentication, ``no_multi`` inside MULTI, the ACL user's
        permissions (only for a user that is not all-permissive), then the memory check
        (inside MULTI every queued command is refused when memory cannot be freed, and EXEC
        is refused when it holds a ``denyoom`` command), then queueing or execution.
        """
        spec = COMMANDS.get(argv[0])
        if spec is None:
            spec = lookup(argv[0])
            if spec is None:
                return self._reject(self._unknown(argv))
        n = len(argv)
        if n not in spec.argc:
            return self._reject("ERR " + errors.WRONG_ARGS % spec.name, spec)
        if spec.subcommands and n > 1:
            sub = spec.subcommands.get(argv[1].lower().decode("utf-8", "surrogateescape"))
            if sub is None:
                return self._reject("ERR " + errors.UNKNOWN_SUBCOMMAND % (
                    _printable(_c_str(argv[1])[:UNKNOWN_ARGS_MAX]), spec.name.upper()))
            spec = sub
            if n not in spec.argc:
                return self._reject("ERR " + errors.WRONG_ARGS % spec.name, spec)
        if self.reader.unauth and not spec.noauth:  # not the property: one call less
            return self._reject(errors.NOAUTH, spec)
        multi = self.multi
        if multi is not None and "no_multi" in spec.flags:
            return self._reject("ERR " + errors.NOT_IN_MULTI, spec)
        if not self.user.open:      # ACL: a user that may not run everything (acl.py)
            res = acl.deny(self, spec, argv)
            if res:
                return self._reject(acl.noperm_text(res, spec), spec)
        if multi is not None:   # refused before queueing, as Redis (DEBUG's gate: debug.py)
            check = getattr(spec.handler, "queue_check", None)
            refused = check(self) if check is not None else None
            if refused is not None:
                return self._reject(refused, spec)
        server = self.server
        busy = server.busy_script   # a script past busy-reply-threshold (scripting.py)
        if busy is not None and "allow_busy" not in spec.flags:
            return self._reject(busy.busy_error, spec)
        # (during a CLIENT PAUSE nothing is evicted and nothing refused for memory: Redis's
        # isSafeToPerformEvictions; the writes are postponed below)
        if server.maxmemory and busy is None and server.ops.pause_type is None:
            if multi is not None:
                deny = spec.name not in _MULTI_NO_OOM
            elif spec.name == "exec":
                deny = self.multi_denyoom
            else:
                deny = spec.denyoom
            if deny and not server.evictor.room_for_write():
                return self._reject(errors.OOMError().text, spec)
        if server.persistence_gate:     # loading, or a failed bgsave (persistence/)
            persist = server.persistence
            if (spec.write or spec.name == "ping") and persist.writes_refused():
                return self._reject(errors.MISCONF, spec)
            if persist.loading and "loading" not in spec.flags:
                return self._reject(errors.LOADING, spec)
        if (self.proto == 2 and spec.name not in _PUBSUB_ALLOWED
                and (self.sub_channels or self.sub_patterns or self.sub_shard)):
            return self._reject("ERR " + errors.PUBSUB_CONTEXT % spec.name, spec)
        ops = server.ops
        if ops.pause_type is not None and ops.holds(self, spec, argv):
            return POSTPONED            # CLIENT PAUSE (ops.py): run when it ends
        if multi is not None and spec.name not in _MULTI_IMMEDIATE:
            multi.append((spec, argv))
            if spec.denyoom:
                self.multi_denyoom = True
            return QUEUED
        if self.tracking is not None:   # tracking.py: remembered keys, deferred self-pushes
            return self.server.tracking.call(self, spec, argv)
        return self.run(spec, argv)

    def run(self, spec, argv: list) -> bytes:
        """Execute a checked command: handler, encoding, stats, WATCH and shadow hooks."""
        self.last_cmd = spec.name  # CLIENT LIST shows the running command, as Redis
        ops = self.server.ops
        if ops.monitors and "skip_monitor" in spec.flags:   # EVAL: shown before it runs
            ops.feed_monitors(self, spec, argv)
        t = _perf_ns()
        try:
            reply = spec.handler(self, argv)
        except Postponed as e:  # kernels loading (first_use.py): held, run again later
            if not e.done:
                return POSTPONED
            self._ran(ops, spec, argv, _perf_ns() - t)     # ran, its reply streaming
            self._count(spec)
            return STREAMING
        except Exception as e:
            if self.tracking is not None and spec.keyspace_read:   # Redis: even on errors
                self.server.tracking.remember(self, spec, argv)
            out = self._failed(spec, e)
            self._ran(ops, spec, argv, _perf_ns() - t)
            return out
        ns = _perf_ns() - t
        w = self.bstate
        if w is not None and w.call is None:   # it blocked: the slowlog waits for its end
            w.call = (spec, argv, ns)
            if ops.monitors and "skip_monitor" not in spec.flags:
                ops.feed_monitors(self, spec, argv)
        else:
            self._ran(ops, spec, argv, ns)
        self._count(spec)
        t = reply.__class__
        if t is bytes:
            out = b"$%d\r\n%b\r\n" % (len(reply), reply)
        elif t is Raw or t is Pushed:   # Pushed stays Pushed: gate_reply lets it through
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
        if self.tracking is not None and spec.keyspace_read:
            self.server.tracking.remember(self, spec, argv)
        self.last_cmd = spec.name
        return out

    def _ran(self, ops, spec, argv: list, ns: int) -> None:
        """The slowlog, latency monitor and MONITOR hook of :meth:`run` (ops.py)."""
        if ns >= ops.slow_ns:
            ops.after_command(self, spec, argv, ns)
        if ops.monitors and "skip_monitor" not in spec.flags:
            ops.feed_monitors(self, spec, argv)

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
            if spec.name == "exec":
                # a refused EXEC ends the transaction (Redis rejectCommand ->
                # execCommandAbort): the BUSY, OOM, NOPERM ... text comes after its
                # prefix; Redis's formatted refusals (arity, pub/sub context) carry no ERR
                if text.startswith("ERR "):
                    text = text[4:]
                self.multi = None
                self.multi_error = self.multi_denyoom = False
                self.unwatch_all()
                text = errors.EXEC_ABORT_BECAUSE % text
        return encode_error(text)

    # ---- CLIENT PAUSE and CLIENT REPLY (ops.py, commands/operators.py) ----

    def hold(self, commands: list) -> None:
        """CLIENT PAUSE postponed ``commands[0]``: keep it and the rest of the read; later
        reads are only buffered (:meth:`_feed_held`) until :meth:`resume_held`.  Reading
        goes on, as Redis reads a postponed client, so a client that leaves is noticed."""
        self.held = commands
        self.server.ops.held.append(self)

    def _feed_held(self, data: bytes) -> None:
        self.server.stats.net_input_bytes += len(data)
        try:
            self.reader.feed(data)
        except QueryBufferLimit as e:
            limits.close_for_query_limit(self, e.head)
            self.transport.close()
        except ProtocolError:
            self.kill()     # (its commands run at the pause's end would meet it first)

    def resume_held(self) -> None:
        """The pause ended: run the postponed commands, send their replies, read again.
        Complexity: the commands' own."""
        if self.stream is not None:     # a reply still streams: it resumes the rest
            return
        held, self.held = self.held, None
        if held is None or self.closing or self.transport is None:
            return
        out = []
        self.executing = out
        self.ks.now_ms = self.ks.clock.now_ms()
        for i, argv in enumerate(held):
            r = self.call(argv)
            if r is POSTPONED:          # paused again by an earlier command of the batch
                self.hold(held[i:])
                break
            if r is STREAMING:          # its reply streams: the rest waits again
                self.hold(held[i + 1:])
                break
            if self.reply_gate is not None:
                r = self.gate_reply(r)
            out.append(r)
            if self.closing:
                break
        self.executing = None
        stats = self.server.stats
        if stats.pending:
            stats.flush(0)
        if out:
            self.write_now(out)
        if self.server.write_clients:
            self.server.flush_soon()
        if self.closing:
            self.transport.close()
        elif self.held is None and self.reader.buffered():
            self.data_received(b"")     # what arrived during the pause

    def gate_reply(self, r: bytes) -> bytes:
        """CLIENT REPLY OFF / SKIP: drop a command's reply (Redis resetClient's flags), but
        not pub/sub confirmations (``resp.Pushed``), which Redis writes while pushing."""
        gate = self.reply_gate
        if gate == "skip_next":         # CLIENT REPLY SKIP itself: the next one is skipped
            self.reply_gate = "skip"
            return b""
        if gate == "skip":
            self.reply_gate = None
            self.update_slow_path()
        return r if r.__class__ is Pushed else b""   # pub/sub confirmations: resp.Pushed

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
            outer = self.executing
            if outer is not None:   # frames pushed to itself go between the replies (Redis)
                self.executing = parts
            self.deny_blocking = True   # BLPOP & co. answer at once (blocking.py)
            self.in_exec = True         # MONITOR refuses to start inside EXEC (Redis)
            try:
                for spec, argv in queued:
                    if not self.user.open:   # ACL rules may have changed since queued
                        res = acl.deny(self, spec, argv, acl.CTX_MULTI)
                        if res:
                            self.server.stats.count_error("NOPERM")
                            parts.append(encode_error(acl.exec_noperm_text(res)))
                            continue
                    parts.append(self.run(spec, argv))
            finally:
                self.executing = outer
                self.deny_blocking = False
                self.in_exec = False
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

    # ---- pushed frames: pub/sub messages, invalidations (pubsub.py, tracking.py) ----

    def push(self, frame: bytes) -> None:
        """Queue an out-of-band frame for this client.  O(1).

        While this client's own commands run, the frame joins its replies (before the
        running command's reply, as Redis writes it); otherwise it waits in ``unsent``
        until the event-loop round or cron tick ends (``Server.flush_writes``), so a pipelined
        burst of PUBLISHes costs each subscriber one write.
        """
        out = self.executing
        if out is not None:
            out.append(frame)
        elif not self.closing:
            unsent = self.unsent
            if unsent is None:
                self.unsent = [frame]
                self.server.write_clients.append(self)
            else:
                unsent.append(frame)

    def update_slow_path(self) -> None:
        """Recompute the dispatcher's ``slow_path`` test after a (un)subscribe or TRACKING."""
        subscribed = bool(self.sub_channels or self.sub_patterns or self.sub_shard)
        cls = "pubsub" if subscribed else "normal"
        if cls != self.obuf_class:      # client-output-buffer-limit's class (limits.py)
            self.set_obuf_class(cls)
        self.commands = acl.dispatch_table(self.user, COMMANDS)
        self.slow_path = (subscribed or self.tracking is not None
                          or self.reply_gate is not None or self.server.ops.slow_all
                          or not self.user.fast)         # (refreshes ``inline`` too)

    def leave_events(self) -> None:
        """RESET / disconnect: drop every subscription and the tracking state."""
        self.server.pubsub.drop_client(self)
        if self.tracking is not None:
            self.server.tracking.disable(self)
        self.update_slow_path()

    def kill(self) -> None:
        """CLIENT KILL / timeout / shutdown: drop the connection now (an output-limit
        close drops the unsent replies too)."""
        self.closing = True
        if self.transport is not None:
            if self.aborted:
                self.transport.abort()
            else:
                self.transport.close()


def _printable(b: bytes) -> str:
    """Bytes as str for an error text; ``resp.encode_error`` restores the exact bytes."""
    return b.decode("utf-8", "surrogateescape")


def _c_str(b: bytes) -> bytes:
    """What C's ``%s`` prints of a word: everything before the first NUL."""
    nul = b.find(b"\x00")
    return b if nul < 0 else b[:nul]
