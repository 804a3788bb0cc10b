"""The operator's console: a web page, a JSON API and Prometheus metrics on ``console-port``.

It runs on the server's own event loop (aiohttp), so everything it shows is read between
two client reads, from the same objects INFO reads: the numbers on the page are INFO's
numbers (``snapshot.py`` parses the INFO text itself, one home for every field).

    GET  /                 the page (static files, no CDN: it works offline)
    GET  /api/snapshot     INFO, every section, as JSON {section: {field: value}}
    GET  /api/curve        the shadow's exact LRU curve (LITEHIT CURVE) and today's capacity
    GET  /api/advise       LITEHIT ADVISE [target]
    GET  /api/keys         a key browser page: SCAN + type, TTL, size, LFU freq / idle time
    POST /api/command      one command through the dispatcher, as a client would send it
    GET  /metrics          Prometheus text format (``metrics.py``)

Who may connect (the same stance as the server's protected mode):
- It listens on the server's ``bind`` addresses only.
- Whenever a new connection would owe an AUTH (``Acl.auth_required``: ``requirepass``,
  ``ACL SETUSER default >pw``, an aclfile or config-file users, ``default off``), every route
  asks for an ACL user's credentials (HTTP Basic: user name and password, as ``AUTH user
  pw``; an empty user name means ``default``), checked by ``Acl.authenticate`` (enabled,
  nopass or a matching hash in constant time); browsers show their own password prompt,
  Prometheus has ``basic_auth``.  The request then runs as that user, with that user's
  rights: the command box through the dispatcher as a client authenticated as the user;
  the snapshot and /metrics only if the user may run INFO, the key browser only if it may
  run SCAN, showing only the keys it may read (TYPE's key rule).
- Otherwise (the default user on and nopass), only loopback peers are served (403 for the
  rest), as the default user, and only requests whose Host header is an IP literal or
  ``localhost``: a web page elsewhere cannot reach it through DNS rebinding.
- ``POST /api/command`` also needs the header ``X-Ferrumkv-Console: 1`` and a JSON body: a
  cross-site form or image cannot send either without a CORS preflight, which the console
  never grants.

Cost: nothing when ``console-port`` is 0 (the default; aiohttp is imported only when it is
set).  With a page open it polls ``/api/snapshot`` once a second and the curve every five:
``bench/console_cost.py`` measures what that takes from a -P 16 workload.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import logging
import os
import socket

from ..subsystem import Subsystem

log = logging.getLogger("ferrumkv")

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
MAX_BODY_BYTES = 1024 * 1024           # a command box request
LISTEN_BACKLOG = 128
MAX_SCAN_COUNT = 1000                  # keys per key-browser page
MAX_CURVE_POINTS = 256
CSRF_HEADER = "X-Ferrumkv-Console"
# Commands the command box cannot run: they need a connection of their own (subscriptions,
# MONITOR, blocking pops), change the connection's protocol or session state that a
# one-request client cannot keep (MULTI/WATCH, SELECT is a field of the request instead).
NOT_IN_CONSOLE = frozenset({
    "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
    "monitor", "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax",
    "bzmpop", "hello", "auth", "quit", "reset", "multi", "exec", "discard", "watch",
    "unwatch", "select", "client"})
# of CLIENT, what reads without acting on a connection: the page's client table uses LIST
CLIENT_IN_CONSOLE = frozenset({b"list", b"info", b"getname", b"id"})


def _loopback(host: str | None) -> bool:
    try:
        return ipaddress.ip_address((host or "").split("%")[0]).is_loopback
    except ValueError:
        return False


def _host_allowed(host_header: str) -> bool:
    """Without a password, only IP literals and ``localhost`` (DNS rebinding defence)."""
    host = host_header.strip()
    if host.startswith("["):                       # [::1]:port
        host = host[1:host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":")[0]
    if host.lower() == "localhost":
        return True
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


class Console:
    """The aiohttp application of one server, started and stopped with ``console-port``."""

    def __init__(self, server):
        self.server = server
        self.runner = None
        self.port = 0

    # ---- lifecycle ----

    @staticmethod
    def bind(hosts: list, port: int) -> list:
        """Listening sockets on every ``(host, optional)`` of ``bind`` (``server.
        bind_addresses``: an optional one is skipped when it cannot be bound; port 0: the
        port the first one got).  Raises ValueError with Redis's text when a port cannot be
        bound, before anything changes."""
        socks = []
        try:
            for host, optional in hosts:
                try:
                    socks.append(socket.create_server((host, port), backlog=LISTEN_BACKLOG))
                except OSError:
                    if not optional:
                        raise
                    continue
                port = port or socks[0].getsockname()[1]
            if not socks:
                raise OSError("nothing bound")
        except OSError:
            for sock in socks:
                sock.close()
            raise ValueError("Unable to listen on this port") from None
        return socks

    async def start(self, socks: list) -> None:
        from aiohttp import web
        app = web.Application(client_max_size=MAX_BODY_BYTES,
                              middlewares=[self._guard])
        app.router.add_get("/", self._index)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_get("/api/curve", self._curve)
        app.router.add_get("/api/advise", self._advise)
        app.router.add_get("/api/keys", self._keys)
        app.router.add_post("/api/command", self._command)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_static("/static/", STATIC_DIR, show_index=False)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        for sock in socks:
            await web.SockSite(runner, sock).start()
        self.runner, self.port = runner, socks[0].getsockname()[1]
        log.log(logging.WARNING - 5, "Console listening on http://%s:%d/",
                socks[0].getsockname()[0], self.port)

    async def stop(self) -> None:
        if self.runner is not None:
            runner, self.runner = self.runner, None
            await runner.cleanup()

    # ---- who may ask ----

    def _admit(self, request):
        """``(user, None)`` if the request may proceed as ``user`` (acl.User), else
        ``(None, response)`` refusing it.  Complexity: O(password length + passwords)."""
        from aiohttp import web
        acl = self.server.acl
        if not acl.auth_required():
            if not _loopback(request.remote):
                return None, web.Response(status=403, text="console: only loopback clients "
                                          "are served while no password is required\n")
            if not _host_allowed(request.headers.get("Host", "")):
                return None, web.Response(status=403, text="console: unexpected Host header\n")
            return acl.default, None
        name, given = b"", None
        auth = request.headers.get("Authorization", "")
        if auth[:6].lower() == "basic ":
            try:
                name, _, given = base64.b64decode(auth[6:].strip(),
                                                  validate=True).partition(b":")
            except (binascii.Error, ValueError):
                given = None
        user = acl.authenticate(name or b"default", given) if given is not None else None
        if user is not None:
            return user, None
        return None, web.Response(status=401, text="console: user name and password "
                                  "required\n", headers={"WWW-Authenticate":
                                                        'Basic realm="ferrumkv console"'})

    @property
    def _guard(self):
        from aiohttp import web

        @web.middleware
        async def guard(request, handler):
            user, refused = self._admit(request)
            if refused is not None:
                return refused
            request["user"] = user
            response = await handler(request)
            response.headers["Cache-Control"] = "no-store"
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["X-Frame-Options"] = "DENY"
            return response
        return guard

    # ---- routes ----

    async def _index(self, request):
        from aiohttp import web
        return web.FileResponse(os.path.join(STATIC_DIR, "index.html"))

    async def _snapshot(self, request):
        from aiohttp import web
        from .snapshot import info_snapshot
        refused = _refuse(request, [b"INFO", b"everything"])
        if refused is not None:
            return refused
        return web.json_response(info_snapshot(self.server))

    async def _curve(self, request):
        from aiohttp import web
        points = _int_arg(request, "points", 32, 2, MAX_CURVE_POINTS)
        return web.json_response(self._run([b"LITEHIT", b"CURVE", b"%d" % points],
                                           user=request["user"]))

    async def _advise(self, request):
        from aiohttp import web
        argv = [b"LITEHIT", b"ADVISE"]
        target = request.query.get("target")
        if target:
            argv.append(target.encode())
        return web.json_response(self._run(argv, user=request["user"]))

    async def _keys(self, request):
        from aiohttp import web
        from .snapshot import browse_keys
        count = _int_arg(request, "count", 50, 1, MAX_SCAN_COUNT)
        db = _int_arg(request, "db", 0, 0, len(self.server.ks.dbs) - 1)
        cursor = request.query.get("cursor", "0")
        match = request.query.get("match", "*")
        refused = _refuse(request, [b"SCAN", b"0"])
        if refused is not None:
            return refused
        page = browse_keys(self.server, db, cursor.encode(),
                           match.encode("utf-8", "surrogateescape"), count)
        user = request["user"]
        if not user.open:       # only the keys the user may read (TYPE's key rule)
            page["keys"] = [row for row in page["keys"] if _allowed(
                user, [b"TYPE", row["key"].encode("utf-8", "surrogateescape")])]
        return web.json_response(page)

    async def _command(self, request):
        from aiohttp import web
        if request.headers.get(CSRF_HEADER) != "1":
            return web.Response(status=403, text="console: missing %s header\n" % CSRF_HEADER)
        try:
            body = await request.json()
            argv = [str(a).encode("utf-8", "surrogateescape") for a in body["argv"]]
            db = int(body.get("db", 0))
        except (ValueError, KeyError, TypeError, AttributeError):
            return web.json_response({"error": "body must be {\"argv\": [...], \"db\": n}"},
                                     status=400)
        if not argv:
            return web.json_response({"error": "empty command"}, status=400)
        if argv[0].lower().decode("utf-8", "replace") in NOT_IN_CONSOLE and not (
                argv[0].lower() == b"client" and len(argv) > 1
                and argv[1].lower() in CLIENT_IN_CONSOLE):
            return web.json_response({"reply": {"error": "ERR '%s' is not available in the "
                                                "console; use redis-cli" %
                                                argv[0].decode("utf-8", "replace")}})
        if not 0 <= db < len(self.server.ks.dbs):
            return web.json_response({"error": "no such database"}, status=400)
        return web.json_response({"reply": self._run(argv, db, request["user"])})

    async def _metrics(self, request):
        from aiohttp import web
        from .metrics import render_metrics
        refused = _refuse(request, [b"INFO", b"everything"])
        if refused is not None:
            return refused
        body, content_type = render_metrics(self.server)
        return web.Response(body=body, headers={"Content-Type": content_type})

    # ---- running commands ----

    def _run(self, argv: list, db: int = 0, user=None):
        """One command through the dispatcher (every rule of the command table applies) on a
        client of its own authenticated as ``user`` (the request's: ``_admit``), RESP3;
        the reply as JSON values (``snapshot.to_json``)."""
        from ..client import Client
        from ..commands.acl import set_user
        from .snapshot import decode_reply
        c = Client(self.server)
        c.proto = 3
        set_user(c, user or self.server.acl.default)   # _admit checked the credentials
        c.addr = c.laddr = "console:0"
        c.db = self.server.ks.dbs[db]
        try:
            return decode_reply(c.call(argv))
        finally:
            c.unwatch_all()
            if self.server.blocking_due:    # keys it made ready: serve their waiters now
                self.server.blocking.after_command(c)
                self.server.flush_writes()


def _allowed(user, argv: list) -> bool:
    """May ``user`` run ``argv`` (ACL command, key and channel rules, as the dispatcher
    checks them)?  Complexity: as acl.User.check."""
    from ..acl import OK
    from ..acl_calls import check_call
    from ..registry import lookup
    spec = lookup(argv[0])
    if spec is not None and spec.subcommands and len(argv) > 1:
        spec = spec.subcommands.get(argv[1].lower().decode("utf-8", "surrogateescape"))
    return spec is not None and check_call(user, spec, argv)[0] == OK


def _refuse(request, argv: list):
    """None if the request's user may run ``argv``, else a 403 naming the command."""
    from aiohttp import web
    if _allowed(request["user"], argv):
        return None
    return web.Response(status=403, text="console: NOPERM this user has no permissions to "
                        "run the '%s' command\n" % argv[0].decode().lower())


def _int_arg(request, name: str, default: int, lo: int, hi: int) -> int:
    from aiohttp import web
    text = request.query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise web.HTTPBadRequest(text="%s must be an integer\n" % name) from None
    if not lo <= value <= hi:
        raise web.HTTPBadRequest(text="%s must be between %d and %d\n" % (name, lo, hi))
    return value


class ConsoleSwitch(Subsystem):
    """``server.console``: the console while ``console-port`` is set (0 = off), started with
    the server, moved or stopped when the port changes, stopped with the server.

    The new port is bound at once, so CONFIG SET answers Redis's "Unable to listen on this
    port" when it is taken and the old console keeps running; the switch itself (stopping
    the old application, starting the new one) runs as a task on the loop.
    Complexity: O(1) per change, plus the application's start or stop."""

    def __init__(self, server):
        super().__init__(server)
        server.config.on_change("console-port", self.on_change, call_now=False)

    async def switch(self, socks: list) -> None:
        """Stop the running console, then serve a new one on ``socks`` (none: off)."""
        server = self.server
        if server.console is not None:
            await server.console.stop()
            server.console = None
        if socks:
            console = Console(server)
            await console.start(socks)
            server.console = console
            server.config.values["console-port"] = console.port

    def on_change(self, port: int) -> None:
        server = self.server
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return                       # not serving yet: start() starts it
        if server.console is not None and port == server.console.port:
            return
        socks = Console.bind(server.bind_hosts(), port) if port else []
        loop.create_task(self.switch(socks))

    async def start(self) -> None:
        port = self.server.config["console-port"]
        if port:
            await self.switch(Console.bind(self.server.bind_hosts(), port))

    async def stop(self) -> None:
        await self.switch([])
