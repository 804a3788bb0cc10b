"""Configuration: the table, memory sizes, the file + ``--name value`` loader, CONFIG GET/SET/
RESETSTAT/REWRITE with Redis's error texts, and the generated conf/ferrumkv.conf."""

from __future__ import annotations

import os
import pathlib
import tempfile

import pytest
import redis

from ferrumkv_py import cli
from ferrumkv_py.conf_render import render_conf
from ferrumkv_py.config import SPECS, Config, ConfigError, format_value, parse_memory

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ---- the committed conf file ----

def test_conf_file_is_generated_from_the_table():
    committed = (ROOT / "conf" / "ferrumkv.conf").read_text()
    assert committed == render_conf(), (
        "conf/ferrumkv.conf is stale: run "
        "`python -m ferrumkv_py.config --conf > conf/ferrumkv.conf`")


def test_conf_file_documents_every_knob_and_loads_to_defaults():
    text = render_conf()
    for name in SPECS:
        assert "\n%s " % name in text
    assert "lfu-log-factor" in text and "142" in text and "10M hits" in text
    config = cli.build_config([str(ROOT / "conf" / "ferrumkv.conf")])
    defaults = Config()
    for name in SPECS:
        assert config[name] == defaults[name], name


def test_config_module_main_prints_the_conf():
    """The README's command, as a user runs it."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "ferrumkv_py.config", "--conf"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == render_conf()
    bad = subprocess.run([sys.executable, "-m", "ferrumkv_py.config"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "usage" in bad.stderr


# ---- defaults and memory sizes ----

def test_defaults():
    c = Config()
    assert (c["bind"], c["port"], c["databases"], c["maxclients"], c["timeout"],
            c["requirepass"]) == ("127.0.0.1 -::1", 6380, 16, 10000, 0, "")
    assert (c["protected-mode"], c["enable-protected-configs"]) == (True, "no")


@pytest.mark.parametrize("text,value", [
    ("0", 0), ("1", 1), ("1b", 1), ("1k", 1000), ("1kb", 1024), ("1K", 1000), ("1KB", 1024),
    ("2m", 2_000_000), ("2mb", 2 * 1024 ** 2), ("3g", 3 * 1000 ** 3), ("3gb", 3 * 1024 ** 3),
    ("1Gb", 1024 ** 3), ("kb", 0),
    ("-1", None), ("1.5mb", None), (" 1", None), ("1 ", None), ("1x", None), ("1kbb", None),
    ("abc", None), ("+1", None),
])
def test_parse_memory(text, value):
    assert parse_memory(text) == value


@pytest.mark.parametrize("name,raw,msg", [
    ("maxmemory", "abc", "argument must be a memory value"),
    ("maxmemory", "-1", "argument must be a memory value"),
    ("port", "abc", "argument couldn't be parsed into an integer"),
    ("port", "01", "argument couldn't be parsed into an integer"),
    ("port", "+1", "argument couldn't be parsed into an integer"),
    ("port", "70000", "argument must be between 0 and 65535 inclusive"),
    ("maxmemory-samples", "0", "argument must be between 1 and 2147483647 inclusive"),
    ("appendonly", "maybe", "argument must be 'yes' or 'no'"),
    ("loglevel", "loud", "argument(s) must be one of the following: debug, verbose, notice, "
                         "warning"),
])
def test_parse_errors(name, raw, msg):
    with pytest.raises(ConfigError) as e:
        Config().set(name, raw)
    assert e.value.msg == msg


def test_dir_is_absolute_and_must_exist(tmp_path):
    c = Config()
    assert os.path.isabs(c["dir"])
    c.set("dir", str(tmp_path))
    assert c["dir"] == str(tmp_path)
    with pytest.raises(ConfigError, match="No such file or directory"):
        c.set("dir", str(tmp_path / "missing"))


def test_hz_is_clamped_like_redis():
    c = Config()
    c.set("hz", "0")
    assert c["hz"] == 1
    c.set("hz", "100000")
    assert c["hz"] == 500


# ---- file loader and command line ----

def test_file_then_command_line_override(tmp_path):
    conf = tmp_path / "a.conf"
    conf.write_text("# comment\n\nport 7000\nmaxmemory 2mb\nsave \"\"\n"
                    "maxmemory-policy allkeys-lru\nrequirepass 'p w'\n")
    config = cli.build_config([str(conf), "--port", "7001", "--maxmemory-policy", "allkeys-lfu"])
    assert config["port"] == 7001
    assert config["maxmemory"] == 2 * 1024 * 1024
    assert config["maxmemory-policy"] == "allkeys-lfu"
    assert config["requirepass"] == "p w"
    assert config.file == str(conf)


def test_command_line_only():
    config = cli.build_config(["--port", "0", "--save", "", "--bind", "127.0.0.1", "::1"])
    assert config["port"] == 0 and config["save"] == ""
    assert config["bind"] == "127.0.0.1 ::1"


def test_fatal_errors_are_reported_like_redis(tmp_path, capsys):
    conf = tmp_path / "bad.conf"
    conf.write_text("port 7000\nnosuchthing 1\n")
    assert cli.main([str(conf)]) == 1
    err = capsys.readouterr().err
    assert "*** FATAL CONFIG FILE ERROR" in err and "at line 2" in err
    assert ">>> 'nosuchthing 1'" in err and "Bad directive or wrong number of arguments" in err
    assert cli.main(["--port", "x"]) == 1
    assert "argument couldn't be parsed into an integer" in capsys.readouterr().err
    assert cli.main([str(tmp_path / "missing.conf")]) == 1
    assert "can't open config file" in capsys.readouterr().err


def test_help_and_version(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--maxmemory-policy" in out
    assert cli.main(["--version"]) == 0
    assert "ferrumkv_py v=" in capsys.readouterr().out


# ---- CONFIG GET / SET through the server ----

def _new_value(spec):
    """A valid value different from the default, as the raw string CONFIG SET takes."""
    overrides = {"dir": "/tmp", "requirepass": "pw", "save": "", "appendonly": "no",
                 "litehit-capacities": "10 20", "litehit-trace-file": "trace.jsonl",
                 "client-output-buffer-limit": "normal 1mb 512kb 10",
                 "notify-keyspace-events": "AKE",   # its canonical rendering
                 "maxclients": "1000",   # raising it needs RLIMIT_NOFILE room (limits.py)
                 "latency-tracking-info-percentiles": "50 99.9"}
    if spec.name in overrides:
        return overrides[spec.name]
    if spec.type == "bool":
        return "no" if spec.default else "yes"
    if spec.type == "enum":
        return next((c for c in spec.choices if c != spec.default), spec.default)
    if spec.type == "float":
        return format_value(spec, round((spec.lo + spec.hi) / 2, 2))
    if spec.type in ("int", "memory"):
        for v in (spec.default + 1, spec.lo, spec.hi):
            if spec.lo <= v <= spec.hi and v != spec.default:
                return str(int(v))
    return "x"


# port: below; console-port binds a listener (tests/ferrumkv/test_console.py)
MUTABLE = [s for s in SPECS.values() if s.mutable and s.name not in ("port", "console-port")]


@pytest.mark.parametrize("spec", MUTABLE, ids=[s.name for s in MUTABLE])
def test_every_mutable_row_round_trips(make_server, spec):
    server = make_server(enable_protected_configs="yes", dir=tempfile.gettempdir())
    r = redis.Redis(port=server.port, protocol=2, single_connection_client=True)
    raw = _new_value(spec)
    probe = Config()
    probe.set(spec.name, raw)
    expected = format_value(spec, probe[spec.name])
    try:
        assert r.config_set(spec.name, raw) is True
        assert r.config_get(spec.name) == {spec.name: expected}
    finally:
        r.config_set(spec.name, format_value(spec, spec.default)
                     if spec.name != "dir" else tempfile.gettempdir())
        r.close()
    if spec.name != "dir":
        assert server.call(lambda: server.server.config[spec.name]) == Config()[spec.name]


def test_config_set_port_moves_the_listener(server):
    import socket
    c = redis.Redis(port=server.port, protocol=2, single_connection_client=True)
    old = server.port
    assert c.config_set("port", "0") is True  # 0: any free port, as at startup
    new = int(c.config_get("port")["port"])
    assert new not in (0, old)
    assert c.ping()  # existing connections stay
    assert redis.Redis(port=new, protocol=2).ping()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", old), timeout=2).close()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(redis.ResponseError) as e:
            c.config_set("port", str(busy.getsockname()[1]))
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'port') - "
                            "Unable to listen on this port")
    assert int(c.config_get("port")["port"]) == new
    c.close()


def test_config_get_patterns(r):
    got = r.config_get("maxmemory*")
    assert {"maxmemory", "maxmemory-policy", "maxmemory-samples"} <= set(got)
    assert all(k.startswith("maxmemory") for k in got)
    both = r.execute_command("CONFIG", "GET", "port", "databases", "port")
    assert set(both) == {b"port", b"databases"} and both[b"databases"] == b"16"
    assert r.config_get("nosuch") == {}
    assert r.execute_command("CONFIG", "GET", "MAXMEMORY") == {b"MAXMEMORY": b"0"}
    assert set(r.config_get("?z")) == {"hz"}
    assert r.config_get("[ht]*out") == {"timeout": "0"}


def test_config_set_several_and_atomic(r):
    assert r.execute_command("CONFIG", "SET", "maxmemory-samples", "7", "hz", "20") == b"OK"
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "7"}
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CONFIG", "SET", "maxmemory-samples", "9", "timeout", "-1")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument 'timeout') - "
                            "argument must be between 0 and 2147483647 inclusive")
    assert r.config_get("maxmemory-samples") == {"maxmemory-samples": "7"}


@pytest.mark.parametrize("args,error", [
    (["nosuch", "1"], "Unknown option or number of arguments for CONFIG SET - 'nosuch'"),
    (["maxmemory", "1", "hz"], "Unknown option or number of arguments for CONFIG SET - 'hz'"),
    (["databases", "3"], "CONFIG SET failed (possibly related to argument 'databases') - "
                         "can't set immutable config"),
    (["maxmemory", "1.5mb"], "CONFIG SET failed (possibly related to argument 'maxmemory') - "
                             "argument must be a memory value"),
    (["hz", "x"], "CONFIG SET failed (possibly related to argument 'hz') - "
                  "argument couldn't be parsed into an integer"),
    (["maxmemory-samples", "3", "maxmemory-samples", "4"],
     "CONFIG SET failed (possibly related to argument 'maxmemory-samples') - "
     "duplicate parameter"),
])
def test_config_set_errors(r, args, error):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CONFIG", "SET", *args)
    assert str(e.value) == error


def test_config_arity_and_unknown_subcommand(r):
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'config' "):
        r.execute_command("CONFIG")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'config|get'"):
        r.execute_command("CONFIG", "GET")
    with pytest.raises(redis.ResponseError,
                       match=r"unknown subcommand 'FOO'\. Try CONFIG HELP\."):
        r.execute_command("CONFIG", "FOO")
    assert r.execute_command("CONFIG", "HELP")[0].startswith(b"CONFIG <subcommand>")


def test_memory_units_through_config_set(r):
    for raw, value in (("1k", "1000"), ("1kb", "1024"), ("1mb", "1048576"), ("1gb", "1073741824")):
        r.config_set("maxmemory", raw)
        assert r.config_get("maxmemory") == {"maxmemory": value}
    r.config_set("maxmemory", "0")


def test_resetstat(r):
    r.set("a", "1")
    r.get("a")
    r.get("missing")
    before = r.info("stats")
    assert before["keyspace_hits"] >= 1 and before["total_commands_processed"] > 0
    assert r.config_resetstat() is True
    after = r.info("stats")
    assert after["keyspace_hits"] == 0 and after["keyspace_misses"] == 0
    assert after["total_commands_processed"] <= 2
    assert "cmdstat_get" not in r.info("commandstats")


def test_rewrite_keeps_comments_and_order(server, r, tmp_path):
    conf = tmp_path / "rw.conf"
    conf.write_text("# my comment\nport 0\n\n# memory\nmaxmemory 1mb\nhz 10\nhz 12\n")
    server.call(lambda: setattr(server.server.config, "file", str(conf)))
    r.config_set("maxmemory", "2mb")
    r.config_set("maxmemory-samples", "9")
    assert r.execute_command("CONFIG", "REWRITE") == b"OK"
    lines = conf.read_text().splitlines()
    assert lines[0] == "# my comment" and "# memory" in lines
    assert "maxmemory 2mb" in lines              # as Redis writes sizes
    assert lines.index("maxmemory 2mb") < lines.index("hz 10")
    assert sum(1 for line in lines if line.startswith("hz ")) == 1
    assert "maxmemory-samples 9" in lines
    loaded = Config()
    loaded.load_file(str(conf))
    assert loaded["maxmemory"] == 2097152 and loaded["maxmemory-samples"] == 9
    assert not os.path.exists(str(conf) + ".tmp")


def test_rewrite_without_file(r):
    with pytest.raises(redis.ResponseError,
                       match="^The server is running without a config file$"):
        r.execute_command("CONFIG", "REWRITE")
