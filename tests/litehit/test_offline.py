"""Offline replay: facts equal the online core, worker-count independence, routing, TTL,
writes, every fail-fast case, and the Mooncake synthetic trace against the README figures
and the naive LRU oracle."""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

from litehit.batchprep import normalize_flat, offsets_of
from litehit.config import ReplayConfigError, parse_config
from litehit.convert import convert_mooncake
from litehit.core import LiteHit
from litehit.factsfile import FACTS_FILE_NAME, iter_facts_rows
from litehit.offline import ReplayError, run_replay
from litehit.preprocess import normalize_request
from litehit.projector import HitCurveProjector
from litehit.query import run_query
from tests.litehit.data import MOONCAKE_SYNTHETIC

try:
    from .oracle import NaiveLRUOracle
except ImportError:
    from oracle import NaiveLRUOracle

MOONCAKE = MOONCAKE_SYNTHETIC
TRACE_BLOCK = 4


# ---- helpers ----

def instance(instance_id, block_size=TRACE_BLOCK, group="g", block_bytes=1024, **extra):
    return {"instance_group_name": group, "instance_id": instance_id, "block_size": block_size,
            "linear_step": 0, "location_spec_infos": [{"name": "kv", "size": block_bytes},
                                                      {"name": "unused", "size": 7}],
            "location_spec_groups": [{"name": "full", "spec_names": ["kv"]}],
            "optimizer_state_info": {"full_location_spec_group_name": "full"}, **extra}


def group(name="g", ttl_seconds=0, prefix_hash=False):
    return {"name": name, "capacity_gb": [1], "eviction_policy": "lru",
            "ttl_seconds": ttl_seconds, "enable_prefix_hash": prefix_hash}


def make_config(tmp_path, trace_lines, instances=None, groups=None, **top):
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                             for line in trace_lines))
    obj = {"trace_file_path": str(trace), "output_result_path": str(tmp_path / "out"),
           "block_size": TRACE_BLOCK, "instance_groups": groups or [group()],
           "instances": instances or [instance("i1")], **top}
    return obj


def replay(obj, **overrides):
    stats = run_replay(parse_config({**obj, **overrides}))
    with open(os.path.join(obj["output_result_path"], FACTS_FILE_NAME), "rb") as f:
        return stats, f.read()


def read(keys, ts, instance_id="i1", input_len=None, trace_id=None, kind="request"):
    ev = {"type": kind, "instance_id": instance_id, "timestamp_ns": ts, "keys": keys,
          "input_len": len(keys) * TRACE_BLOCK if input_len is None else input_len}
    if trace_id is not None:
        ev["trace_id"] = trace_id
    return ev


def random_events(rng, n, instances=("i1", "i2"), alphabet=4, max_len=10, writes=0.1):
    """Prefix-tree-ish raw keys (chains over a small alphabet), some writes, ties in time."""
    events, ts = [], 1
    for r in range(n):
        ts += rng.randrange(3)
        chain, keys = 0, []
        for _ in range(rng.randint(0, max_len)):
            chain = chain * alphabet + rng.randrange(alphabet) + 1
            keys.append(chain)
        ev = read(keys, ts, rng.choice(instances), len(keys) * TRACE_BLOCK + rng.randrange(1, 4),
                  trace_id=f"t{r}")
        if rng.random() < writes:
            ev["type"] = "write"
        events.append(ev)
    return events


def online_rows(obj, events):
    """The facts rows the online path gives: normalize_request + process_request per lane."""
    config = parse_config(obj)
    cores = {inst.instance_id: (inst, LiteHit(inst.ttl_ns)) for inst in config.instances}
    rows = []
    for ev in events:
        if config.fanout_all_instances:
            lanes = [inst.instance_id for inst in config.instances]
        else:
            lanes = [config.override_instance_id or ev["instance_id"]]
        is_write = ev["type"] == "write"
        if is_write and not config.commit_writes:
            continue
        for lane in lanes:
            inst, core = cores[lane]
            norm = normalize_request(ev["keys"], ev["input_len"], inst.block_size_tokens,
                                     inst.enable_prefix_hash, config.block_size)
            fact = core.process_request(list(norm.block_keys), ev["timestamp_ns"])
            if not is_write:
                tid = ev.get("trace_id", f"trace_{ev['instance_id']}_{ev['timestamp_ns']}")
                rows.append(f'{tid},{lane},{ev["timestamp_ns"]},{ev["input_len"]},'
                            f'{inst.block_size_tokens},{inst.block_bytes},"{fact.to_json()}"')
    return rows


def curve_of(row: str) -> str:
    """The quoted hit_curve column of a facts row."""
    return row[row.rindex(',"[') + 1:]


def facts_rows(data: bytes):
    lines = data.decode().split("\n")
    assert lines[0] == ("trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,"
                        "block_bytes,hit_curve")
    assert lines[-1] == ""
    return lines[1:-1]


# ---- agreement with the online core ----

@pytest.mark.parametrize("prefix_hash,ttl_seconds,commit_writes", [
    (False, 0, False), (True, 0, True), (True, 2e-9, False), (False, 3e-9, True)])
def test_offline_facts_equal_online_projection(tmp_path, prefix_hash, ttl_seconds,
                                               commit_writes):
    rng = random.Random(7)
    events = random_events(rng, 700)
    obj = make_config(tmp_path, events, groups=[group(ttl_seconds=ttl_seconds,
                                                      prefix_hash=prefix_hash)],
                      instances=[instance("i1"), instance("i2", block_size=2 * TRACE_BLOCK)],
                      commit_writes=commit_writes)
    stats, data = replay(obj)
    expected = online_rows(obj, events)
    assert facts_rows(data) == expected
    assert stats.rows == stats.requests == len(expected)
    assert stats.committed_writes == (stats.write_events if commit_writes else 0)


def test_workers_one_and_four_are_byte_identical(tmp_path):
    events = random_events(random.Random(3), 2600, instances=("i1", "i2", "i3"))
    obj = make_config(tmp_path, events, groups=[group(prefix_hash=True)],
                      instances=[instance("i1"), instance("i2", block_size=8),
                                 instance("i3", block_size=12)], commit_writes=True)
    _, one = replay(obj, pipeline_worker_count=1)
    _, four = replay(obj, pipeline_worker_count=4)
    assert one == four
    assert facts_rows(one) == online_rows(obj, events)


def test_fanout_over_block_sizes_with_per_instance_summaries(tmp_path):
    events = random_events(random.Random(11), 400, instances=("whatever",), writes=0)
    sizes = (4, 8, 16)
    obj = make_config(tmp_path, events, instances=[instance(f"bs{b}", block_size=b,
                                                            block_bytes=b * 256)
                                                   for b in sizes],
                      groups=[group(prefix_hash=True)], fanout_all_instances=True)
    stats, data = replay(obj)
    rows = facts_rows(data)
    assert len(rows) == 3 * 400 and stats.requests == 400 and stats.rows == 1200
    assert [r.split(",")[1] for r in rows[:6]] == ["bs4", "bs8", "bs16"] * 2
    assert rows == online_rows(obj, events)
    totals = run_query(os.path.join(obj["output_result_path"], FACTS_FILE_NAME),
                       str(tmp_path / "q.jsonl"), [0.0, -1.0])
    assert sorted(totals) == ["", "bs16", "bs4", "bs8"]
    # each fanout lane equals a replay of that instance alone
    for b in sizes:
        alone = {**obj, "fanout_all_instances": False, "override_instance_id": f"bs{b}",
                 "output_result_path": str(tmp_path / f"alone{b}")}
        _, data_b = replay(alone)
        assert facts_rows(data_b) == [r for r in rows if r.split(",")[1] == f"bs{b}"]
        inf_blocks = sum(HitCurveProjector.project_infinite(json.loads(curve_of(r)[1:-1]))
                         for r in facts_rows(data_b))
        assert totals[f"bs{b}"].hit_blocks[1] == inf_blocks
        assert totals[f"bs{b}"].requests == 400
    lines = (tmp_path / "q.jsonl").read_text().splitlines()
    assert [json.loads(x).get("instance_id") for x in lines[-4:]] == ["bs16", "bs4", "bs8",
                                                                     None]


def test_override_routes_every_read_to_one_instance(tmp_path):
    events = [read([1, 2], 5, "a"), read([1, 2], 6, "b"), read([1, 3], 7, "zzz")]
    obj = make_config(tmp_path, events, instances=[instance("x"), instance("y")],
                      override_instance_id="y")
    _, data = replay(obj)
    assert facts_rows(data) == [
        'trace_a_5,y,5,8,4,1024,"[]"', 'trace_b_6,y,6,8,4,1024,"[[1,2]]"',
        'trace_zzz_7,y,7,8,4,1024,"[[1,1]]"']


def test_spec_worked_example_and_csv_quoting(tmp_path):
    A, B, C, D, E = 11, 12, 13, 14, 15
    events = [read([A, B, C], 1, input_len=13, trace_id="q,1"),
              read([A, B, D], 2, input_len=12, trace_id='say "hi"'),
              "\n", "   \n",
              read([A, B, C], 3, input_len=13),
              read([A, E], 4, input_len=8, kind="get", trace_id="r4"),
              {**read([A, E, 99], 4, input_len=99), "type": "write"},
              read([A, E], 5, input_len=8, trace_id="r5")]
    _, data = replay(make_config(tmp_path, events))
    assert data.decode().splitlines()[1:] == [
        '"q,1",i1,1,13,4,1024,"[]"',
        '"say ""hi""",i1,2,12,4,1024,"[[1,2]]"',
        'trace_i1_3,i1,3,13,4,1024,"[[1,2],[4,1]]"',
        'r4,i1,4,8,4,1024,"[[1,1]]"',
        'r5,i1,5,8,4,1024,"[[1,2]]"']


def test_commit_writes_changes_lru_order(tmp_path):
    events = [read([1, 2], 1), {**read([7, 8], 2), "type": "write"}, read([1, 2], 3)]
    obj = make_config(tmp_path, events)
    _, ignored = replay(obj)
    _, committed = replay(obj, commit_writes=True)
    assert facts_rows(ignored)[1].endswith('"[[1,2]]"')
    assert facts_rows(committed)[1].endswith('"[[3,2]]"')     # 7 and 8 now more recent


def test_write_without_input_len_and_big_keys_wrap(tmp_path):
    events = [{"type": "write", "instance_id": "i1", "timestamp_ns": 1, "keys": [3]},
              read([2 ** 64 - 1, 2 ** 63], 2), read([-1, -2 ** 63], 3)]
    _, data = replay(make_config(tmp_path, events), commit_writes=True)
    assert facts_rows(data)[1].endswith('"[[1,2]]"')


def test_ttl_expires_blocks(tmp_path):
    events = [read([1, 2], 1_000_000_000), read([1, 2], 2_999_999_999),
              read([1, 2], 4_999_999_999)]
    obj = make_config(tmp_path, events, groups=[group(ttl_seconds=2)])
    _, data = replay(obj)
    assert [curve_of(r) for r in facts_rows(data)] == ['"[]"', '"[[1,2]]"', '"[]"']


def test_batch_normalize_matches_normalize_request():
    rng = random.Random(5)
    reqs = [[rng.randrange(-2 ** 63, 2 ** 63) for _ in range(rng.randrange(12))]
            for _ in range(50)]
    keys = np.array([k for r in reqs for k in r], dtype=np.int64)
    offsets = offsets_of(np.array([len(r) for r in reqs]))
    for prefix_hash in (False, True):
        for factor in (1, 2, 3):
            out, out_offsets = normalize_flat(keys, offsets, prefix_hash, factor)
            for i, r in enumerate(reqs):
                ref = normalize_request(r, len(r) * 4, 4 * factor, prefix_hash, 4).block_keys
                assert tuple(out[out_offsets[i]:out_offsets[i + 1]].tolist()) == ref


# ---- fail fast ----

GOOD = read([1, 2], 10)
FAIL_TRACES = {
    "out of order": ([GOOD, read([1], 9)], "line 2: timestamps out of order"),
    "out of order across chunks": ([read([1], 10 + i) for i in range(256)] + [read([1], 5)],
                                   "line 257: timestamps out of order"),
    "unknown instance": ([GOOD, read([1], 11, "nope")], "line 2: unknown instance 'nope'"),
    "length contract": ([GOOD, read([1, 2], 11, input_len=13), read([1], 12)],
                        "line 2: rule 6"),
    "zero readable": ([{**GOOD, "type": "write"}], "zero readable requests"),
    "empty file": (["\n"], "zero readable requests"),
    "bad json": ([GOOD, '{"type": "request",\n'], "line 2: bad JSON"),
    "two objects": ([GOOD, json.dumps(GOOD) + " {}\n"], "line 2: bad JSON"),
    "not an object": (["[1, 2]\n"], "line 1: bad JSON"),
    "bad type": ([{**GOOD, "type": "delete"}], "line 1: bad field: 'type'"),
    "no instance": ([{k: v for k, v in GOOD.items() if k != "instance_id"}],
                    "'instance_id'"),
    "zero timestamp": ([{**GOOD, "timestamp_ns": 0}], "'timestamp_ns'"),
    "float timestamp": ([{**GOOD, "timestamp_ns": 1.5}], "'timestamp_ns'"),
    "float key": ([{**GOOD, "keys": [1, 2.0]}], "line 1: bad field: 'keys'"),
    "bool key": ([GOOD, {**GOOD, "keys": [1, True]}], "line 2: bad field: 'keys'"),
    "huge key": ([{**GOOD, "keys": [1, 2 ** 64]}], "line 1: bad field: 'keys'"),
    "keys not a list": ([{**GOOD, "keys": 5}], "'keys' must be an array"),
    "zero input_len": ([{**GOOD, "keys": [], "input_len": 0}], "'input_len'"),
    "trace_id not a string": ([{**GOOD, "trace_id": 5}], "'trace_id'"),
    "not utf-8": ([GOOD, b'{"x": "\xff"}\n'.decode("latin-1")], "line 2"),
    "earliest error wins": ([read([1], 10 + i) for i in range(5)] + [read([1], 1)]
                            + [GOOD] * 50 + ["{oops\n"], "line 6: timestamps out of order"),
}


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("case", sorted(FAIL_TRACES))
def test_fail_fast_publishes_nothing(tmp_path, case, workers):
    lines, message = FAIL_TRACES[case]
    if case == "not utf-8":
        trace_bytes = (json.dumps(GOOD) + "\n").encode() + b'{"x": "\xff"}\n'
    obj = make_config(tmp_path, lines, pipeline_worker_count=workers)
    if case == "not utf-8":
        (tmp_path / "trace.jsonl").write_bytes(trace_bytes)
    out = tmp_path / "out"
    out.mkdir()
    (out / FACTS_FILE_NAME).write_text("previous run\n")
    with pytest.raises(ReplayError) as info:
        run_replay(parse_config(obj))
    assert message in str(info.value)
    assert sorted(os.listdir(out)) == [FACTS_FILE_NAME]
    assert (out / FACTS_FILE_NAME).read_text() == "previous run\n"


FAIL_CONFIGS = {
    "reblock not integer": ({"instances": [instance("i1", block_size=6)]},
                            "re-block factor not an integer"),
    "negative ttl": ({"instance_groups": [group(ttl_seconds=-1)]}, "ttl_seconds"),
    "linear step": ({"instances": [instance("i1", linear_step=2)]}, "linear_step"),
    "fanout and override": ({"fanout_all_instances": True, "override_instance_id": "i1"},
                            "exclusive"),
    "unknown override": ({"override_instance_id": "zz"}, "override_instance_id"),
    "unknown group": ({"instances": [instance("i1", group="h")]}, "unknown instance group"),
    "policy": ({"instance_groups": [{**group(), "eviction_policy": "lfu"}]}, "lfu"),
    "duplicate instance": ({"instances": [instance("i1"), instance("i1")]}, "duplicate"),
    "zero workers": ({"pipeline_worker_count": 0}, "pipeline_worker_count"),
    "string block size": ({"block_size": "4"}, "'block_size'"),
    "missing spec": ({"instances": [{**instance("i1"), "location_spec_groups": [
        {"name": "full", "spec_names": ["ghost"]}]}]}, "ghost"),
    "no instances": ({"instances": []}, "'instances'"),
}


@pytest.mark.parametrize("case", sorted(FAIL_CONFIGS))
def test_bad_configs_are_rejected(tmp_path, case):
    change, message = FAIL_CONFIGS[case]
    obj = {**make_config(tmp_path, [GOOD]), **change}
    with pytest.raises(ReplayConfigError) as info:
        parse_config(obj)
    assert message in str(info.value)


def test_block_bytes_sums_the_full_group_and_ttl_converts():
    inst = instance("i1", block_size=512, block_bytes=100)
    inst["location_spec_groups"] = [{"name": "full", "spec_names": ["kv", "unused"]}]
    config = parse_config({"trace_file_path": "t", "output_result_path": "o",
                           "instance_groups": [group(ttl_seconds=1.5)], "instances": [inst]})
    assert config.block_size == 256 and config.pipeline_worker_count == 1
    assert config.instances[0].block_bytes == 107
    assert config.instances[0].ttl_ns == 1_500_000_000


# ---- the Mooncake synthetic trace ----

README_CAPACITIES = (0, 1, 100, 1000, 4000, 16000, 64000, -1)
README_HIT_BLOCKS = (0, 13, 896, 10370, 30217, 65390, 77740, 77740)


@pytest.fixture(scope="module")
def mooncake_facts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mooncake")
    trace = str(tmp / "trace.jsonl")
    convert_mooncake(MOONCAKE, trace, "mc")
    results = {}
    for prefix_hash in (False, True):
        obj = {"trace_file_path": trace, "output_result_path": str(tmp / f"out{prefix_hash}"),
               "block_size": 512, "instance_groups": [group(prefix_hash=prefix_hash)],
               "instances": [instance("mc", block_size=512)]}
        stats = run_replay(parse_config(obj))
        results[prefix_hash] = (stats, os.path.join(obj["output_result_path"],
                                                     FACTS_FILE_NAME))
    return trace, results


@pytest.mark.parametrize("prefix_hash", [False, True])
def test_mooncake_reference_figures(mooncake_facts, prefix_hash):
    _, results = mooncake_facts
    stats, facts = results[prefix_hash]
    assert (stats.requests, stats.block_accesses) == (3993, 117888)
    total = np.zeros(len(README_CAPACITIES), dtype=np.int64)
    tokens = 0
    for batch in iter_facts_rows(facts):
        total += HitCurveProjector.project_blocks_flat(
            batch.seg_offsets, batch.seg_start, batch.seg_run, README_CAPACITIES).sum(axis=0)
        tokens += sum(batch.input_token_len)
    assert tokens == 61_194_628
    assert tuple(total.tolist()) == README_HIT_BLOCKS


def test_mooncake_matches_naive_oracle(mooncake_facts):
    trace, results = mooncake_facts
    capacities = (1, 50, 700, 3000)
    oracle = NaiveLRUOracle(capacities)
    expected = np.zeros(len(capacities), dtype=np.int64)
    with open(trace) as f:
        for line in f:
            expected += oracle.process(json.loads(line)["keys"])
    got = np.zeros(len(capacities), dtype=np.int64)
    for batch in iter_facts_rows(results[False][1]):
        got += HitCurveProjector.project_blocks_flat(
            batch.seg_offsets, batch.seg_start, batch.seg_run, capacities).sum(axis=0)
    assert got.tolist() == expected.tolist()
