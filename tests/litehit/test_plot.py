"""Hit-rate curves: automatic grid and axis, agreement with the query, image types."""
from __future__ import annotations

import os

import pytest

from litehit.factsfile import FACTS_HEADER_LINE
from litehit.plot import (
    Extent,
    auto_capacities,
    axis_unit,
    collect_curves,
    facts_extent,
    image_format,
    plot_facts,
)
from litehit.projector import parse_capacity
from litehit.query import run_query

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GB = 1024 ** 3
FACTS = FACTS_HEADER_LINE + (
    'r1,small,1,40,4,268435456,"[]"\n'
    'r2,small,2,40,4,268435456,"[[1,3],[7,2]]"\n'
    'r3,big,3,80,8,536870912,"[[2,4]]"\n'
    'r4,big,4,80,8,536870912,"[[1,1]]"\n')
# What LITEHIT SAVE writes: one key per block (block_size_tokens 1), ~100-byte keys.
SERVER_FACTS = FACTS_HEADER_LINE + (
    'ferrumkv-0,ferrumkv,5000000,1,1,96,"[]"\n'
    'ferrumkv-1,ferrumkv,5000000,1,1,96,"[[1,1]]"\n'
    'ferrumkv-2,ferrumkv,6000000,1,1,96,"[[250,1]]"\n')


def caps(*texts, plain="gb"):
    return [parse_capacity(t, plain) for t in texts]


@pytest.fixture
def facts(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text(FACTS)
    return str(path)


def test_extent_and_auto_grid(facts):
    extent = facts_extent(facts)
    assert extent.smallest_block_bytes == GB // 4 and not extent.one_key_blocks
    assert extent.deepest_bytes == max(8 * GB // 4, 5 * GB // 2)   # 8 small vs 5 big blocks
    assert extent.deepest_blocks == 8
    grid = auto_capacities(extent, points=5)
    assert [c.unit for c in grid] == ["bytes"] * 5
    assert grid[0].value == GB // 4 and grid[-1].value == 5 * GB // 2 and len(grid) == 5
    assert auto_capacities(Extent())[0].value == 0


def test_curves_equal_query_summaries(facts, tmp_path):
    gbs = [0.25, 0.5, 1.0, 2.0]
    curves, unit = collect_curves(facts, caps(*map(str, gbs)))
    assert unit == "GiB" and [c.instance_id for c in curves] == ["big", "small"]
    totals = run_query(facts, str(tmp_path / "q.jsonl"), gbs + [-1])
    for curve in curves:
        assert curve.capacities == gbs
        assert curve.hit_rates == totals[curve.instance_id].rates()[:-1]
        assert curve.infinite_rate == totals[curve.instance_id].rates()[-1]
    small = next(c for c in curves if c.instance_id == "small")
    assert small.hit_rates == [4 / 80, 8 / 80, 12 / 80, 20 / 80]


def test_curves_in_blocks(facts):
    curves, unit = collect_curves(facts, caps("1", "3", "8", plain="blocks"))
    assert unit == "blocks"
    big = next(c for c in curves if c.instance_id == "big")
    assert big.hit_rates == [8 / 160, 24 / 160, 40 / 160] and big.infinite_rate == 40 / 160
    mixed, _ = collect_curves(facts, caps("1blocks", "3blocks", "8blocks"))
    assert mixed == curves
    with pytest.raises(ValueError, match="all be bytes"):
        collect_curves(facts, caps("1blocks", "1GB"))


def test_server_facts_default_to_a_keys_axis(tmp_path):
    """A server's facts (a block is a key of ~100 bytes) plot against keys, not 1e-7 GB."""
    path = tmp_path / "server.csv"
    path.write_text(SERVER_FACTS)
    curves, unit = collect_curves(str(path))
    assert unit == "keys"
    xs = curves[0].capacities
    assert xs[0] == 1 and xs[-1] == 250 and all(x == int(x) for x in xs)
    assert curves[0].hit_rates[0] == 1 / 3 and curves[0].hit_rates[-1] == 2 / 3
    # asked in bytes, the axis is a byte unit that fits (96-byte keys: bytes / KiB)
    _, unit = collect_curves(str(path), caps("96b", "960b", "24000b"))
    assert unit == "KiB"


def test_axis_unit_fits_the_middle_of_the_grid():
    assert axis_unit(caps("64MiB", "2048GB"), False) == ("GiB", GB)
    assert axis_unit(caps("1k", "1m"), False) == ("KiB", 1024)
    assert axis_unit(caps("10", plain="blocks"), True) == ("keys", 1)


@pytest.mark.parametrize("name,magic", [("curve.png", PNG_SIGNATURE), ("curve.svg", b"<?xml"),
                                        ("curve.PDF", b"%PDF")])
def test_plot_writes_the_type_its_name_says(facts, tmp_path, name, magic):
    out = tmp_path / name
    curves = plot_facts(facts, str(out), title="test")
    assert len(curves) == 2 and len(curves[0].capacities) > 10
    assert out.read_bytes().startswith(magic)
    assert sorted(os.listdir(tmp_path)) == sorted([name, "facts.csv"])


def test_unknown_image_type_is_refused_before_any_work(tmp_path):
    for name in ("curve.jpg", "curve"):
        with pytest.raises(ValueError, match=r"unknown image type .*\.png, \.svg, \.pdf"):
            plot_facts(str(tmp_path / "missing.csv"), str(tmp_path / name))
    assert image_format("a/b.Svg") == "svg"
    assert os.listdir(tmp_path) == []


def test_plot_without_rows_fails(tmp_path):
    path = tmp_path / "facts.csv"
    path.write_text(FACTS_HEADER_LINE)
    with pytest.raises(ValueError, match="no facts rows"):
        plot_facts(str(path), str(tmp_path / "c.png"))
    assert not (tmp_path / "c.png").exists()
