"""Facts query: byte-exact output on hand-made facts, C's %g, malformed rows, and the
published kimi facts against the figures in data/traces/README.md."""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import random
import struct

import pytest

from tests.litehit.data import KIMI_FACTS
from litehit.factsfile import FactsError
from litehit.projector import parse_capacity
from litehit.query import format_g, run_query

KIMI = KIMI_FACTS
HEADER = "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes," \
         "hit_curve\n"
QUARTER_GB = 268435456                  # 1 GB = 4 blocks


def query(tmp_path, facts_text, capacities):
    facts = tmp_path / "facts.csv"
    facts.write_text(facts_text)
    out = tmp_path / "out.jsonl"
    totals = run_query(str(facts), str(out), capacities)
    return out.read_bytes(), totals


# ---- format_g ----

def _libc_g():
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    buf = ctypes.create_string_buffer(64)

    def c_format(value: float) -> str:
        libc.snprintf(buf, len(buf), b"%g", ctypes.c_double(value))
        return buf.value.decode()
    return c_format


@pytest.mark.parametrize("value,text", [
    (25.0, "25"), (-1.0, "-1"), (0.0, "0"), (0.0987668, "0.0987668"),
    (1.52587890625e-05, "1.52588e-05"), (16 / 1024 ** 2, "1.52588e-05"), (0.5, "0.5"),
    (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.23457e+06"), (1e-4, "0.0001"),
    (2 / 3, "0.666667"), (1.0, "1")])
def test_format_g_examples(value, text):
    assert format_g(value) == text


def test_format_g_matches_libc_printf():
    c_format = _libc_g()
    rng = random.Random(99)
    values = [rng.random() for _ in range(3000)]
    values += [rng.randrange(10 ** 9) / rng.randrange(1, 10 ** 9) for _ in range(3000)]
    values += [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
               for _ in range(3000)]
    values = [v for v in values if v == v]          # C prints NaN with a sign; never used
    assert [format_g(v) for v in values] == [c_format(v) for v in values]


# ---- byte-exact output ----

HAND_FACTS = HEADER + (
    "r1,b,1000,13,4,268435456,\"[]\"\n"
    "r2,b,2000,12,4,268435456,\"[[1,2]]\"\n"
    "\"r,3\",a,3000,13,4,268435456,\"[[1,2],[4,1]]\"\n"
    "r4,a,4000,0,4,268435456,\"[]\"\n")

HAND_EXPECTED = (
    '{"trace_id":"r1","instance_id":"b","timestamp_ns":1000,"input_token_len":13,'
    '"hit_blocks":[0,0,0,0,0],"hit_rates":[0,0,0,0,0]}\n'
    '{"trace_id":"r2","instance_id":"b","timestamp_ns":2000,"input_token_len":12,'
    '"hit_blocks":[2,2,0,2,2],"hit_rates":[0.666667,0.666667,0,0.666667,0.666667]}\n'
    '{"trace_id":"r,3","instance_id":"a","timestamp_ns":3000,"input_token_len":13,'
    '"hit_blocks":[2,3,0,3,3],"hit_rates":[0.615385,0.923077,0,0.923077,0.923077]}\n'
    '{"trace_id":"r4","instance_id":"a","timestamp_ns":4000,"input_token_len":0,'
    '"hit_blocks":[0,0,0,0,0],"hit_rates":[0,0,0,0,0]}\n'
    '{"summary":true,"instance_id":"a","requests":2,"total_input_tokens":13,'
    '"capacity_gb":[0.5,1,0,-1,1],"total_hit_blocks":[2,3,0,3,3],'
    '"total_hit_tokens":[8,12,0,12,12],"hit_rates":[0.615385,0.923077,0,0.923077,0.923077]}\n'
    '{"summary":true,"instance_id":"b","requests":2,"total_input_tokens":25,'
    '"capacity_gb":[0.5,1,0,-1,1],"total_hit_blocks":[2,2,0,2,2],'
    '"total_hit_tokens":[8,8,0,8,8],"hit_rates":[0.32,0.32,0,0.32,0.32]}\n'
    '{"summary":true,"requests":4,"total_input_tokens":38,'
    '"capacity_gb":[0.5,1,0,-1,1],"total_hit_blocks":[4,5,0,5,5],'
    '"total_hit_tokens":[16,20,0,20,20],"hit_rates":[0.421053,0.526316,0,0.526316,0.526316]}\n')


def test_query_output_is_byte_exact(tmp_path):
    out, totals = query(tmp_path, HAND_FACTS, [0.5, 1.0, 0.0, -1.0, 1.0])
    assert out.decode() == HAND_EXPECTED
    assert totals[""].hit_tokens == [16, 20, 0, 20, 20]
    assert not os.path.exists(str(tmp_path / "out.jsonl.tmp"))


def test_query_spec_worked_example_in_bytes(tmp_path):
    """Spec §8: capacities 2048 B and 3072 B (block_bytes 1024) and infinite."""
    rows = ["[]", "[[1,2]]", "[[1,2],[4,1]]", "[[1,1]]", "[[1,2]]"]
    lens = [13, 12, 13, 8, 8]
    facts = HEADER + "".join(f'r{i + 1},x,{i + 1},{n},4,1024,"{c}"\n'
                             for i, (c, n) in enumerate(zip(rows, lens)))
    out, _ = query(tmp_path, facts, [2048 / 1024 ** 3, 3072 / 1024 ** 3, -1])
    overall = out.decode().splitlines()[-1]
    assert overall == (
        '{"summary":true,"requests":5,"total_input_tokens":54,'
        '"capacity_gb":[1.90735e-06,2.86102e-06,-1],"total_hit_blocks":[7,7,8],'
        '"total_hit_tokens":[28,28,32],"hit_rates":[0.518519,0.518519,0.592593]}')


def test_summaries_sorted_by_bytes_and_json_escaping(tmp_path):
    facts = HEADER + ('"q""x",é,1,4,4,1024,"[[1,1]]"\n'
                      'r,a,2,4,4,1024,"[]"\nr,B,3,4,4,1024,"[]"\n')
    out, _ = query(tmp_path, facts, [1])
    lines = out.decode("utf-8").splitlines()
    assert lines[0].startswith('{"trace_id":"q\\"x","instance_id":"é",')
    assert [json.loads(x).get("instance_id") for x in lines[3:]] == ["B", "a", "é", None]


def test_empty_facts_give_only_zero_summary(tmp_path):
    out, _ = query(tmp_path, HEADER, [1, -1])
    assert out.decode() == (
        '{"summary":true,"requests":0,"total_input_tokens":0,"capacity_gb":[1,-1],'
        '"total_hit_blocks":[0,0],"total_hit_tokens":[0,0],"hit_rates":[0,0]}\n')


MALFORMED = {
    "header": "trace_id,instance_id\n",
    "missing field": HEADER + 'r,a,1,4,4,"[]"\n',
    "extra field": HEADER + 'r,a,1,4,4,1024,"[]",x\n',
    "timestamp": HEADER + 'r,a,1.5,4,4,1024,"[]"\n',
    "negative input": HEADER + 'r,a,1,-4,4,1024,"[]"\n',
    "zero block bytes": HEADER + 'r,a,1,4,4,0,"[]"\n',
    "zero block size": HEADER + 'r,a,1,4,0,1024,"[]"\n',
    "curve json": HEADER + 'r,a,1,4,4,1024,"[[1,2]"\n',
    "curve overlap": HEADER + 'r,a,1,4,4,1024,"[[1,2],[2,1]]"\n',
    "curve zero start": HEADER + 'r,a,1,4,4,1024,"[[0,2]]"\n',
    "empty instance": HEADER + 'r,,1,4,4,1024,"[]"\n',
    "bad quoting": HEADER + 'r,a,1,4,4,1024,"[]"x\n',
    "late bad row": HEADER + 'r,a,1,4,4,1024,"[]"\n' * 5000 + 'r,a,1,4,4,1024,"[x]"\n',
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_facts_fail_and_publish_nothing(tmp_path, case):
    with pytest.raises(FactsError, match="line"):
        query(tmp_path, MALFORMED[case], [1])
    assert sorted(os.listdir(tmp_path)) == ["facts.csv"]


def test_capacity_arguments():
    """One parser for query and plot: plain numbers keep their meaning (GB for the query),
    units as Redis reads memory sizes, blocks, negative = infinite."""
    gb = parse_capacity
    assert gb("-1") == ("bytes", -1, -1.0, "-1") and gb("0.25").value == QUARTER_GB
    assert gb("0.25").gb == 0.25 and gb("1e-9").gb == 1e-9 and gb("1e-9").value == 1
    assert gb("64GB") == ("bytes", 64 * 2 ** 30, 64.0, "64GB") == gb("64gib")[:3] + ("64GB",)
    assert gb("512MiB").value == gb("512mb").value == 2 ** 29 and gb("512MiB").gb == 0.5
    assert gb("2k").value == 2000 and gb("2kb").value == 2048 and gb("3g").value == 3 * 10 ** 9
    assert gb("4096blocks") == ("blocks", 4096, None, "4096blocks") == gb("4096", "blocks")[:3] \
        + ("4096blocks",)
    assert gb("100keys").value == 100 and gb("-1blocks").value == -1
    assert gb("inf") == ("bytes", -1, -1.0, "inf") and gb("Unlimited", "blocks").infinite
    for bad, reason in (("x", "not a number"), ("nan", "not a number"), ("infx", "not a number"),
                        ("1e999", "finite"), ("3xb", "unknown unit 'xb'"),
                        ("1.5blocks", "whole"), ("", "not a number")):
        with pytest.raises(ValueError, match=reason):
            parse_capacity(bad)


def test_query_in_blocks_and_units(tmp_path):
    """Capacities with units project like their GB values; blocks ignore block_bytes and
    the summaries say which capacities were blocks."""
    by_gb, _ = query(tmp_path, HAND_FACTS, [0.5, 1.0, 0.0, -1.0, 1.0])
    with_units, _ = query(tmp_path, HAND_FACTS, [parse_capacity(t) for t in
                                                 ("512MiB", "1GB", "0b", "-1", "1024mb")])
    assert with_units == by_gb
    out, totals = query(tmp_path, HAND_FACTS, [parse_capacity(t) for t in
                                               ("2blocks", "3blocks", "1GB", "-1blocks")])
    assert totals[""].hit_blocks == [4, 4, 5, 5]                 # 1GB = 4 blocks here
    assert out.decode().splitlines()[-1] == (
        '{"summary":true,"requests":4,"total_input_tokens":38,'
        '"capacity_gb":[null,null,1,null],"capacity_blocks":[2,3,null,-1],'
        '"total_hit_blocks":[4,4,5,5],"total_hit_tokens":[16,16,20,20],'
        '"hit_rates":[0.421053,0.421053,0.526316,0.526316]}')


def test_empty_file_has_no_rows(tmp_path):
    out, totals = query(tmp_path, "", [1])
    assert totals[""].requests == 0 and out.decode().startswith('{"summary":true,"requests":0')


def test_kimi_facts_match_readme_figures(tmp_path):
    capacities = [0.0] + [float(c) for c in range(25, 1001, 25)] + [1024.0, -1.0]
    out = tmp_path / "kimi.jsonl"
    run_query(KIMI, str(out), capacities)
    lines = out.read_text().splitlines()
    assert len(lines) == 131 + 2
    overall = json.loads(lines[-1])
    assert overall["requests"] == 131 and overall["total_input_tokens"] == 6604327
    assert overall["total_hit_blocks"] == [0, 637, 1651, 2605, 3220, 3839, 4353, 4851, 5213,
                                           5319, 5417] + [5419] * 32
    assert lines[-1].split('"hit_rates":[')[1].startswith("0,0.0987668,0.255987,0.403905,")
    assert '"capacity_gb":[0,25,50,75,100,' in lines[-1] and ",1000,1024,-1]" in lines[-1]
    assert lines[-2] == lines[-1].replace('"summary":true,', '"summary":true,"instance_id":'
                                          '"kimi-k3.tp8.checkpoint1024",')
