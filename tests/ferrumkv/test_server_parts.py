"""The Server is built, not patched: every subsystem is constructed in Server.__init__ and
registered with ``part()``, started by start() in that order and stopped by stop() in
reverse; no function is assigned to the server instance."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import types

import ferrumkv_py
from ferrumkv_py.config import Config
from ferrumkv_py.server import Server
from ferrumkv_py.subsystem import Subsystem


def _subsystem_classes() -> set:
    """Every Subsystem subclass defined in the package."""
    for mod in pkgutil.walk_packages(ferrumkv_py.__path__, "ferrumkv_py."):
        if not mod.name.endswith("__main__"):      # (that one runs the server)
            importlib.import_module(mod.name)
    out, todo = set(), [Subsystem]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("ferrumkv_py."):
                out.add(sub)
            todo.append(sub)
    return out


def test_every_subsystem_is_a_part_of_the_server():
    srv = Server(Config())
    built = {type(p) for p in srv.parts}
    assert built == _subsystem_classes()
    assert len(srv.parts) == len(built)           # each once
    for part in srv.parts:
        assert part.server is srv
        # a part the class names: an attribute of the server holds it
        assert any(v is part for v in vars(srv).values()), type(part).__name__


def test_no_function_is_assigned_to_the_server():
    srv = Server(Config())
    for name, value in vars(srv).items():
        assert not isinstance(value, (types.FunctionType, types.LambdaType)), name
        if isinstance(value, types.MethodType):
            assert value.__self__ is not srv, name    # a bound method of itself: patched
    # and the seven former install() functions are gone
    for mod in ("shadow", "console", "blocking", "scripting.engine", "config_redis", "ops",
                "acl_file"):
        assert not hasattr(importlib.import_module("ferrumkv_py." + mod), "install"), mod


class _Probe(Subsystem):
    def __init__(self, server, name, log):
        super().__init__(server)
        self.name, self.log = name, log

    async def start(self) -> None:
        self.log.append(("start", self.name, bool(self.server.listeners)))

    async def stop(self) -> None:
        self.log.append(("stop", self.name, bool(self.server.listeners)))


def test_start_and_stop_run_every_part_in_order():
    config = Config()
    config.set("port", "0")
    config.set("bind", "127.0.0.1")
    srv = Server(config)
    log: list = []
    srv.part(_Probe(srv, "a", log))
    srv.part(_Probe(srv, "b", log))

    async def run() -> None:
        await srv.start()
        srv.request_shutdown("test")
        await srv.serve_forever()

    asyncio.run(run())
    assert [(what, name) for what, name, _ in log] == [
        ("start", "a"), ("start", "b"), ("stop", "b"), ("stop", "a")]
    assert log[0][2]            # started once the listeners were up


def test_a_part_has_real_lifecycle_methods():
    for cls in _subsystem_classes():
        for meth in ("start", "stop"):
            assert inspect.iscoroutinefunction(getattr(cls, meth)), (cls, meth)
