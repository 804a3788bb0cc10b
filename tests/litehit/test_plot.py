"""Hit-rate curves: automatic grid, agreement with the query, PNG output."""
from __future__ import annotations

import os

import pytest

from litehit.plot import auto_capacities_gb, collect_curves, plot_facts, required_extent
from litehit.query import run_query

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GB = 1024 ** 3
HEADER = "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes," \
         "hit_curve\n"
FACTS = HEADER + (
    'r1,small,1,40,4,268435456,"[]"\n'
    'r2,small,2,40,4,268435456,"[[1,3],[7,2]]"\n'
    'r3,big,3,80,8,536870912,"[[2,4]]"\n'
    'r4,big,4,80,8,536870912,"[[1,1]]"\n')


@pytest.fixture
def facts(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text(FACTS)
    return str(path)


def test_extent_and_auto_grid(facts):
    smallest, deepest = required_extent(facts)
    assert smallest == GB // 4
    assert deepest == max(8 * GB // 4, 5 * GB // 2)          # 8 small blocks vs 5 big ones
    grid = auto_capacities_gb(smallest, deepest, points=5)
    assert grid[0] == 0.25 and grid[-1] == 2.5 and grid == sorted(grid) and len(grid) == 5
    assert auto_capacities_gb(0, 0) == [0.0]


def test_curves_equal_query_summaries(facts, tmp_path):
    capacities = [0.25, 0.5, 1.0, 2.0]
    curves, unit = collect_curves(facts, capacities_gb=capacities)
    assert unit == "GB" and [c.instance_id for c in curves] == ["big", "small"]
    totals = run_query(facts, str(tmp_path / "q.jsonl"), capacities + [-1])
    for curve in curves:
        assert curve.hit_rates == totals[curve.instance_id].rates()[:-1]
        assert curve.infinite_rate == totals[curve.instance_id].rates()[-1]
    small = next(c for c in curves if c.instance_id == "small")
    assert small.hit_rates == [4 / 80, 8 / 80, 12 / 80, 20 / 80]


def test_curves_in_blocks(facts):
    curves, unit = collect_curves(facts, capacities_blocks=[1, 3, 8])
    assert unit == "blocks"
    big = next(c for c in curves if c.instance_id == "big")
    assert big.hit_rates == [8 / 160, 24 / 160, 40 / 160] and big.infinite_rate == 40 / 160


def test_plot_writes_png(facts, tmp_path):
    out = tmp_path / "curve.png"
    curves = plot_facts(facts, str(out), title="test")
    assert len(curves) == 2 and len(curves[0].capacities) > 10
    assert out.read_bytes()[:8] == PNG_SIGNATURE
    assert sorted(os.listdir(tmp_path)) == ["curve.png", "facts.csv"]


def test_plot_without_rows_fails(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text(HEADER)
    with pytest.raises(ValueError, match="no facts rows"):
        plot_facts(str(path), str(tmp_path / "c.png"))
    assert not (tmp_path / "c.png").exists()
