"""scripting/sandbox.py assembles one Lua chunk from its pieces (redis_api, loader, replies,
lib_*): every placeholder is filled, each piece once, in the order the locals need."""

from __future__ import annotations

import re

from ferrumkv_py.scripting import lib_bit, lib_cjson, lib_cmsgpack, lib_struct
from ferrumkv_py.scripting.loader import LOADER
from ferrumkv_py.scripting.redis_api import REDIS_API
from ferrumkv_py.scripting.replies import LUA_TO_RESP
from ferrumkv_py.scripting.engine import LUA_HEAP_LIMIT_BYTES
from ferrumkv_py.scripting.sandbox import BOOTSTRAP, bootstrap_source


def test_every_placeholder_is_filled():
    placeholders = set(re.findall(r"__[A-Z][A-Z_]*__", BOOTSTRAP))
    assert {"__REDIS_API__", "__LIBS__", "__LUA_TO_RESP__", "__LOADER__",
            "__HOOK_N__"} <= placeholders
    assert re.findall(r"__[A-Z][A-Z_]*__", bootstrap_source(LUA_HEAP_LIMIT_BYTES)) == []


def test_each_piece_once_in_dependency_order():
    src = bootstrap_source(LUA_HEAP_LIMIT_BYTES)
    pieces = [("cfunc", "local function cfunc(f)"),
              ("redis_api", REDIS_API[1:]),
              ("libs", lib_bit.LUA + lib_cjson.LUA + lib_cmsgpack.LUA + lib_struct.LUA),
              ("handler", "local function handler(err)"),
              ("replies", LUA_TO_RESP[1:]),
              ("loader", LOADER[1:-1])]
    at = []
    for name, text in pieces:
        assert src.count(text) == 1, name
        at.append(src.index(text))
    # the API uses cfunc and defines err_table / call_error for the handler after it; the
    # libraries use cfunc; the loader uses the run machinery
    assert at == sorted(at)


def test_the_api_piece_is_only_the_api():
    # the sandbox's own state (kill flag, hook, protection) stays in sandbox.py
    for word in ("killed", "sethook", "protect(", "real_globals"):
        assert word not in REDIS_API, word
    assert "redis.call = py.call" in REDIS_API and "math.random = cfunc" in REDIS_API
