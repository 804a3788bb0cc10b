"""The ``litehit`` command line: convert -> replay -> query -> plot on the public Mooncake
trace with the committed config, exit codes and messages, flags, and the entry points."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.litehit.data import MOONCAKE_SYNTHETIC
from litehit.cli import main
from litehit.config import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOONCAKE = MOONCAKE_SYNTHETIC
CONF = os.path.join(ROOT, "conf", "litehit-mooncake.json")


def run(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


@pytest.fixture(scope="module")
def mooncake_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "mooncake_trace.jsonl"
    with pytest.raises(SystemExit) as info:
        main(["convert", "mooncake", MOONCAKE, str(path), "--instance-id", "mooncake"])
    assert info.value.code == 0
    return str(path)


def test_committed_config_loads():
    config = load_config(CONF)
    assert config.block_size == 512 and config.instances[0].block_bytes == 64 * 1024 ** 2
    # relative paths in a config file are read from the file's folder (conf/../out/...)
    assert config.trace_file_path == os.path.join(ROOT, "out", "mooncake_trace.jsonl")
    assert config.output_result_path == os.path.join(ROOT, "out", "mooncake")


def test_pipeline_on_the_mooncake_trace(tmp_path, mooncake_trace, capsys):
    out_dir = tmp_path / "facts"
    code, out, err = run(["replay", CONF, "--trace", mooncake_trace, "--output-dir",
                          str(out_dir), "--workers", "2", "--no-progress"], capsys)
    assert code == 0 and err == ""
    assert out.startswith("litehit replay: 3993 requests, 117888 block accesses, "
                          "1 instances, ")
    assert "accesses/s" in out and sorted(os.listdir(out_dir)) == ["litehit_facts.csv"]
    facts = str(out_dir / "litehit_facts.csv")
    # 64 MiB blocks: 1/16 GB = 1 block, 6.25 GB = 100, 62.5 = 1000, 250 = 4000, 1000 = 16000
    code, out, _ = run(["query", facts, str(tmp_path / "q.jsonl"), "0", "0.0625", "6.25",
                        "62.5", "250", "1000", "4000", "-1"], capsys)
    assert code == 0 and out.startswith("litehit query: 3993 requests, 1 instances, 8 ")
    last = (tmp_path / "q.jsonl").read_text().splitlines()[-1]
    assert out.splitlines()[1] == last             # the overall summary, on stdout too
    overall = json.loads(last)
    assert overall["total_hit_blocks"] == [0, 13, 896, 10370, 30217, 65390, 77740, 77740]
    assert overall["total_input_tokens"] == 61194628
    code, out, _ = run(["plot", facts, "--out", str(tmp_path / "c.png")], capsys)
    assert code == 0 and (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_progress_is_forced_with_the_flag(tmp_path, mooncake_trace, capsys):
    code, _, err = run(["run", CONF, "--trace", mooncake_trace, "--output-dir",
                        str(tmp_path), "--progress"], capsys)
    assert code == 0 and "[litehit] " in err and "requests" in err and err.endswith("\n")


def test_commit_writes_flag(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    events = [{"type": "get", "instance_id": "mooncake", "timestamp_ns": 1, "keys": [1],
               "input_len": 512},
              {"type": "write", "instance_id": "mooncake", "timestamp_ns": 2, "keys": [2],
               "input_len": 512},
              {"type": "get", "instance_id": "mooncake", "timestamp_ns": 3, "keys": [1],
               "input_len": 512}]
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    curves = []
    for extra in ([], ["--commit-writes"]):
        code, _, _ = run(["replay", CONF, "--trace", str(trace), "--output-dir",
                          str(tmp_path / "o")] + extra, capsys)
        assert code == 0
        curves.append((tmp_path / "o" / "litehit_facts.csv").read_text().splitlines()[-1])
    assert curves[0].endswith('"[[1,1]]"') and curves[1].endswith('"[[2,1]]"')


def test_failures_exit_one_with_reason_and_publish_nothing(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type":"get","instance_id":"mooncake","timestamp_ns":5,"keys":[],'
                     '"input_len":7}\n{"type":"get"\n')
    out_dir = tmp_path / "o"
    code, out, err = run(["replay", CONF, "--trace", str(trace), "--output-dir",
                          str(out_dir)], capsys)
    assert code == 1 and out == ""
    assert err.startswith("litehit: error: ") and "line 2: bad JSON" in err
    assert os.listdir(out_dir) == []
    code, _, err = run(["replay", str(tmp_path / "missing.json")], capsys)
    assert code == 1 and "missing.json" in err
    code, _, err = run(["query", str(trace), str(tmp_path / "q.jsonl"), "1"], capsys)
    assert code == 1 and "t.jsonl is a litehit trace, not a facts file" in err
    assert not (tmp_path / "q.jsonl").exists()
    code, _, err = run(["query", str(trace), str(tmp_path / "q.jsonl"), "abc"], capsys)
    assert code == 1 and "not a number" in err
    code, _, err = run(["convert", "mooncake", str(trace), str(tmp_path / "c.jsonl"),
                        "--instance-id", "x"], capsys)
    assert code == 1 and "line 1" in err and not (tmp_path / "c.jsonl").exists()


def test_errors_name_the_file_and_what_it_is(tmp_path, capsys):
    """convert's JSON errors name the input file; a trace given where facts belong is called
    a trace (query, plot, advise), not bad CSV."""
    raw = tmp_path / "raw.jsonl"
    raw.write_text('{"timestamp": 0, "input_length": 1024, "hash_ids": [1, 2]}\n{bad\n')
    code, _, err = run(["convert", "mooncake", str(raw), str(tmp_path / "c.jsonl"),
                        "--instance-id", "x"], capsys)
    assert code == 1 and f"{raw}: line 2: bad JSON" in err
    raw.write_text('{"timestamp": 0, "input_length": 1024, "hash_ids": [1, 2]}\n')
    code, _, _ = run(["convert", "mooncake", str(raw), str(tmp_path / "c.jsonl"),
                      "--instance-id", "x"], capsys)
    assert code == 0
    trace = str(tmp_path / "c.jsonl")
    for argv in (["plot", trace, "--out", str(tmp_path / "p.png")], ["advise", trace],
                 ["query", trace, "-", "1"]):
        code, _, err = run(argv, capsys)
        assert code == 1 and "is a litehit trace, not a facts file" in err, argv
        assert "bad CSV" not in err


def test_negative_capacities_other_than_minus_one_warn(small_facts, capsys):
    code, out, err = run(["query", small_facts, "-", "-1", "inf", "-5"], capsys)
    assert code == 0
    assert "'-5' is negative: read as infinite" in err
    assert "'-1'" not in err and "'inf'" not in err
    rates = json.loads(out.splitlines()[-1])["hit_rates"]
    assert rates[0] == rates[1] == rates[2]             # all three infinite


def test_usage_error_exits_two(capsys):
    code, _, err = run(["replay"], capsys)
    assert code == 2 and "usage: litehit replay" in err


def test_module_and_console_script_entry_points(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "litehit", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0
    for command in ("replay", "query", "convert", "plot"):
        assert command in proc.stdout
    script = os.path.join(os.path.dirname(sys.executable), "litehit")
    if os.path.exists(script):
        proc = subprocess.run([script, "query", "/nonexistent.csv", str(tmp_path / "q"), "1"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and proc.stderr.startswith("litehit: error: ")


# ---- what a new user tripped on ----

SUMMARY_PREFIX = '{"summary":true,"requests":'
FACTS_TEXT = ("trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,"
              "block_bytes,hit_curve\n" 'r1,a,1,8,4,1024,"[[1,2]]"\n' 'r2,a,2,8,4,1024,"[]"\n')


@pytest.fixture
def small_facts(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text(FACTS_TEXT)
    return str(path)


def test_query_to_stdout_with_dash(small_facts, capsys):
    code, out, err = run(["query", small_facts, "-", "1kb", "-1"], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4 and lines[-1].startswith(SUMMARY_PREFIX)
    assert json.loads(lines[0])["hit_blocks"] == [1, 2]
    assert err == "litehit query: 2 requests, 1 instances, 2 capacities -> stdout\n"


def test_capacities_with_units_and_blocks(small_facts, tmp_path, capsys):
    code, out, _ = run(["query", small_facts, str(tmp_path / "q.jsonl"), "1024b", "1blocks",
                        "2048", "0.5MiB"], capsys)
    assert code == 0
    summary = json.loads(out.splitlines()[1])
    assert summary["total_hit_blocks"] == [1, 1, 2, 2]
    assert summary["capacity_gb"][1] is None and summary["capacity_blocks"][1] == 1
    assert summary["capacity_gb"][2] == 2048                 # a bare number is still GB
    code, _, err = run(["query", small_facts, str(tmp_path / "q.jsonl"), "64GBs"], capsys)
    assert code == 1 and "unknown unit 'GBs'" in err
    code, out, _ = run(["plot", small_facts, "--out", str(tmp_path / "c.png"), "--capacities",
                        "1blocks", "2blocks", "4blocks"], capsys)
    assert code == 0 and out.startswith("litehit plot: 1 instances, 3 capacities")
    code, _, err = run(["plot", small_facts, "--out", str(tmp_path / "c.png"),
                        "--capacities-blocks", "1", "--capacities", "1GB"], capsys)
    assert code == 1 and "give one of" in err


def test_plot_honours_the_extension(small_facts, tmp_path, capsys):
    code, _, _ = run(["plot", small_facts, "--out", str(tmp_path / "c.svg")], capsys)
    assert code == 0 and b"<svg" in (tmp_path / "c.svg").read_bytes()[:1000]
    code, out, err = run(["plot", small_facts, "--out", str(tmp_path / "c.jpg")], capsys)
    assert code == 1 and out == "" and "unknown image type '.jpg'" in err
    assert not (tmp_path / "c.jpg").exists()


def test_config_paths_are_read_from_its_folder(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "t.jsonl").write_text('{"type":"get","instance_id":"mooncake","timestamp_ns":1,'
                                    '"keys":[7],"input_len":512}\n')
    config = json.loads(open(CONF).read())
    config.update(trace_file_path="t.jsonl", output_result_path="facts")
    (folder / "replay.json").write_text(json.dumps(config))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run(["replay", "../exp/replay.json"], capsys)
    assert code == 0, err
    assert out.endswith("-> ../exp/facts/litehit_facts.csv\n")
    assert (folder / "facts" / "litehit_facts.csv").exists() and os.listdir(elsewhere) == []


def test_version_and_help_explain_the_formats(capsys):
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("litehit ") and out.strip() != "litehit"
    texts = {}
    for command in ("replay", "query", "convert", "plot"):
        code, texts[command], _ = run([command, "--help"], capsys)
        assert code == 0 and "spec" not in texts[command].lower().replace("location spec", "")
    assert '"keys":[11,12,13]' in texts["replay"] and "relative paths" in texts["replay"]
    assert "hit_curve" in texts["query"] and "4096blocks" in texts["query"]
    assert "- for stdout" in texts["query"] and "hash_ids" in texts["convert"]
    assert ".svg" in texts["plot"] and "keys" in texts["plot"]


def test_empty_inputs_warn(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, err = run(["convert", "mooncake", str(empty), str(tmp_path / "c.jsonl"),
                          "--instance-id", "x"], capsys)
    assert code == 0 and f"litehit: warning: {empty} is empty" in err
    assert out.startswith("litehit convert: 0 requests")
    code, _, err = run(["replay", CONF, "--trace", str(empty), "--output-dir",
                        str(tmp_path / "o")], capsys)
    assert code == 1 and f"warning: {empty} is empty (no requests)" in err
    assert "zero readable requests" in err
    code, out, err = run(["query", str(empty), str(tmp_path / "q.jsonl"), "1"], capsys)
    assert code == 0 and f"warning: {empty} is empty (no facts rows)" in err
    assert out.splitlines()[1].startswith('{"summary":true,"requests":0,')
    header_only = tmp_path / "h.csv"
    header_only.write_text(FACTS_TEXT.splitlines(keepends=True)[0])
    code, _, err = run(["query", str(header_only), str(tmp_path / "q.jsonl"), "1"], capsys)
    assert code == 0 and f"warning: {header_only} holds no facts rows" in err
    code, _, err = run(["plot", str(empty), "--out", str(tmp_path / "c.png")], capsys)
    assert code == 1 and "is empty" in err and "no facts rows to plot" in err


def test_raw_mooncake_trace_given_to_replay_says_convert_first(tmp_path, capsys):
    code, out, err = run(["replay", CONF, "--trace", MOONCAKE, "--output-dir",
                          str(tmp_path)], capsys)
    assert code == 1 and out == ""
    assert "line 1: this looks like a Mooncake trace" in err
    assert "run `litehit convert mooncake" in err and os.listdir(tmp_path) == []
