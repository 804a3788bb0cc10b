"""Mooncake -> litehit trace conversion: exact output, failures, the public Mooncake trace."""
from __future__ import annotations

import json
import os

import pytest

from litehit.convert import ConvertError, convert_mooncake
from tests.litehit.data import MOONCAKE_SYNTHETIC

MOONCAKE = MOONCAKE_SYNTHETIC


def convert(tmp_path, text, **kwargs):
    src = tmp_path / "in.jsonl"
    src.write_text(text)
    dst = tmp_path / "out.jsonl"
    stats = convert_mooncake(str(src), str(dst), kwargs.pop("instance_id", "mc"), **kwargs)
    return dst.read_text(), stats


def test_convert_keeps_full_blocks_shifts_time_and_numbers_lines(tmp_path):
    text = ('{"timestamp": 0, "input_length": 1100, "output_length": 6, "hash_ids": [7, 8, 9]}\n'
            "\n"
            '{"timestamp": 0, "input_length": 511, "output_length": 1, "hash_ids": [3]}\n'
            '{"timestamp": 25, "input_length": 1024, "hash_ids": [7, 8]}\n')
    out, stats = convert(tmp_path, text)
    assert out == (
        '{"type":"request","instance_id":"mc","trace_id":"mc-1","timestamp_ns":1000000,'
        '"keys":[7,8],"input_len":1100}\n'
        '{"type":"request","instance_id":"mc","trace_id":"mc-3","timestamp_ns":1000000,'
        '"keys":[],"input_len":511}\n'
        '{"type":"request","instance_id":"mc","trace_id":"mc-4","timestamp_ns":26000000,'
        '"keys":[7,8],"input_len":1024}\n')
    assert (stats.requests, stats.block_accesses, stats.total_input_tokens) == (3, 4, 2635)


def test_convert_block_size_and_instance_quoting(tmp_path):
    out, _ = convert(tmp_path, '{"timestamp": 3, "input_length": 600, "hash_ids": [1,2,3]}\n',
                     instance_id='a"b', block_size=256)
    event = json.loads(out)
    assert event["keys"] == [1, 2] and event["instance_id"] == 'a"b'
    assert event["trace_id"] == 'a"b-1' and event["timestamp_ns"] == 4_000_000


BAD = {
    "bad json": '{"timestamp": 0,\n',
    "not an object": "[1]\n",
    "too few ids": '{"timestamp": 0, "input_length": 1024, "hash_ids": [1]}\n',
    "float timestamp": '{"timestamp": 0.5, "input_length": 10, "hash_ids": [1]}\n',
    "negative length": '{"timestamp": 0, "input_length": -1, "hash_ids": []}\n',
    "zero length": '{"timestamp": 0, "input_length": 0, "hash_ids": []}\n',
    "string id": '{"timestamp": 0, "input_length": 512, "hash_ids": ["a"]}\n',
    "backwards": ('{"timestamp": 5, "input_length": 10, "hash_ids": [1]}\n'
                  '{"timestamp": 4, "input_length": 10, "hash_ids": [1]}\n'),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_records_fail_and_publish_nothing(tmp_path, case):
    with pytest.raises(ConvertError, match="line"):
        convert(tmp_path, BAD[case])
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl"]


def test_convert_shared_synthetic_trace(tmp_path):
    out = tmp_path / "mc.jsonl"
    stats = convert_mooncake(MOONCAKE, str(out), "mc")
    assert (stats.requests, stats.block_accesses, stats.total_input_tokens) == (
        3993, 117888, 61194628)
    events = [json.loads(line) for line in out.read_text().splitlines()]
    stamps = [e["timestamp_ns"] for e in events]
    assert stamps[0] == 1_000_000 and stamps == sorted(stamps)
    assert len({e["trace_id"] for e in events}) == 3993
