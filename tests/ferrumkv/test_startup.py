"""Start-up failures: every bad command line, config file or path ends with Redis's
``*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***`` report and exit code 1, never a
traceback.  Where redis-server has the same config, its stderr is the expected text."""

from __future__ import annotations

import os
import re
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60     # a hang guard only: a failing start exits at once


def _ours(args: list, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ferrumkv_py", *args], cwd=cwd, env=env,
                          capture_output=True, timeout=START_TIMEOUT_S)


def _theirs(args: list, cwd) -> subprocess.CompletedProcess:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server not installed")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True,
                          timeout=START_TIMEOUT_S)


FILES = {
    "unknown.conf": b"port 7000\nnosuchthing 1\n",
    "badvalue.conf": b"# comment\n\nmaxmemory 12xb\n",
    "binary.conf": b"port \xff\xfe\n",
    "quotes.conf": b'requirepass "abc\n',
    "save.conf": b"save 1\n",
    "argc.conf": b"hz 1 2\n",
    "trailing.conf": b'dir "/tmp"x\n',
    "withopts.conf": b"port 7000\n",
}

SAME_AS_REDIS = [
    ["--port", "x"],
    ["--maxmemory", "1", "--port", "abc", "--hz", "3"],
    ["--port", "1", "2"],
    ["--dir", "/nonexistent/dir"],
    ["--logfile", "/nonexistent/dir/x.log"],
    ["--protected-mode", "maybe"],
    ["--enable-protected-configs", "sometimes"],
    ["--timeout", "-1"],
    ["--nosuch", "1"],
    ["unknown.conf"], ["badvalue.conf"], ["binary.conf"], ["quotes.conf"], ["save.conf"],
    ["argc.conf"], ["trailing.conf"],
    ["withopts.conf", "--hz", "x"],
    ["withopts.conf", "--maxmemory", "1mb", "--loglevel", "loud"],
]


@pytest.fixture
def confdir(tmp_path):
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.needs_redis
@pytest.mark.parametrize("args", SAME_AS_REDIS, ids=[" ".join(a) for a in SAME_AS_REDIS])
def test_fatal_report_matches_redis_server(confdir, args):
    ours = _ours(args, confdir)
    theirs = _theirs(args, confdir)
    assert theirs.returncode == 1 and b"FATAL CONFIG FILE ERROR" in theirs.stderr
    assert ours.returncode == 1
    assert b"Traceback" not in ours.stderr
    # Redis's report to the byte, then, when the bad line is a command-line option, one line
    # of ours that says so (a newcomer reads Redis's "line 3" as the config file's)
    assert ours.stderr.startswith(theirs.stderr)
    hint = ours.stderr[len(theirs.stderr):]
    bad = re.search(rb"at line (\d+)\n>>> '([\w-]+)", theirs.stderr)
    if bad and b"--" + bad.group(2) in [a.encode() for a in args]:
        assert hint == b"(line %s is the command-line option --%s: Redis numbers options " \
            b"as lines after the config file)\n" % (bad.group(1), bad.group(2))
    else:
        assert hint == b""


@pytest.mark.parametrize("args,reason", [
    (["--appendonly", "yes"], b"appendonly yes is not supported: ferrumkv keeps data in "
                              b"memory only"),
    (["--save", "900"], b"Invalid save parameters"),
    (["--litehit-capacities", "x"], b"argument must be up to 64 capacities"),
    (["--litehit-trace-file", "../x"], b"litehit-trace-file can't be a path"),
    (["--bind", ""], b"argument must be one or more addresses"),
])
def test_fatal_report_for_our_settings(confdir, args, reason):
    out = _ours(args, confdir)
    assert out.returncode == 1 and b"Traceback" not in out.stderr
    lines = out.stderr.split(b"\n")
    assert lines[1] == b"*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***"
    assert lines[2] == b"Reading the configuration file, at line 2"
    assert lines[3].startswith(b">>> '" + args[0][2:].encode())
    assert lines[4].startswith(reason)


def test_unusable_files_at_start(confdir):
    os.mkfifo(confdir / "pipe.log")
    out = _ours(["--logfile", str(confdir / "pipe.log")], confdir)   # must not block
    assert out.returncode == 1
    assert out.stderr == (b"\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"
                          b"Can't open the log file: No such device or address\n")
    os.mkfifo(confdir / "t.jsonl")
    out = _ours(["--dir", str(confdir), "--litehit-shadow", "yes",
                 "--litehit-trace-file", "t.jsonl"], confdir)
    assert out.returncode == 1
    assert out.stderr.endswith(b"Can't open the trace file: No such device or address\n")


def test_missing_config_file(confdir):
    ours = _ours(["missing.conf"], confdir)
    assert ours.returncode == 1 and b"Traceback" not in ours.stderr
    assert ours.stderr == (b"Fatal error, can't open config file '%s': No such file or "
                           b"directory\n" % str(confdir / "missing.conf").encode())
    if shutil.which("redis-server"):   # redis logs it on stdout after its log header
        theirs = _theirs(["missing.conf"], confdir)
        assert theirs.returncode == 1
        assert theirs.stdout.split(b" # ", 1)[1] == ours.stderr


def test_a_good_config_still_loads(confdir):
    """The same loader accepts what the bad cases are near to (a control)."""
    from ferrumkv_py import cli
    (confdir / "good.conf").write_bytes(b'# c\nrequirepass "a\\x00b \\"q\\""\nsave ""\n'
                                        b"bind 127.0.0.1 -::1\nmaxmemory 64mb\n")
    config = cli.build_config([str(confdir / "good.conf"), "--hz", "20", "--save"])
    assert config["requirepass"] == 'a\x00b "q"' and config["hz"] == 20
    assert config["maxmemory"] == 64 * 1024 ** 2 and config["save"] == ""
