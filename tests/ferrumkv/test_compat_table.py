"""docs/compatibility.md's list of unsupported commands is generated from the command table
(scripts/compat_table.py) and must equal what the generator prints now; the Redis 7.0
command list it compares against equals a live redis-server's COMMAND DOCS."""

import importlib.util
import os

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _generator():
    spec = importlib.util.spec_from_file_location(
        "compat_table", os.path.join(ROOT, "scripts", "compat_table.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_list_the_commands_we_lack_exactly():
    gen = _generator()
    with open(gen.DOC) as f:
        text = f.read()
    assert gen.BEGIN in text, "run scripts/compat_table.py --write"
    committed = gen.BEGIN + text.split(gen.BEGIN, 1)[1].split(gen.END, 1)[0] + gen.END + "\n"
    assert committed == gen.section(), "docs/compatibility.md is stale: run " \
                                       "scripts/compat_table.py --write"


def test_the_generator_sees_a_missing_command(monkeypatch):
    gen = _generator()
    ours = gen.our_commands()
    assert "get" in ours and "config|get" in ours
    assert "| string | GET" not in gen.section()
    monkeypatch.setattr(gen, "our_commands", lambda: ours - {"get"})
    assert "| string | GET |" in gen.section()


@pytest.mark.needs_redis
def test_redis_list_matches_a_live_redis_server(redis_server):
    gen = _generator()
    conn = redis.Redis(port=redis_server, protocol=2).connection_pool.get_connection()
    conn.send_command("COMMAND", "DOCS")          # raw reply: no redis-py parsing of COMMAND
    docs = conn.read_response()
    live = set()
    for name, fields in zip(docs[::2], docs[1::2]):
        f = dict(zip(fields[::2], fields[1::2]))
        live.add(name.decode())
        subs = f.get(b"subcommands") or []
        live |= {s.decode() for s in subs[::2]}
    assert {n for n, _ in gen.redis_commands()} == live
