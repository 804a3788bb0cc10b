"""The facts file: one definition of header, row layout, quoting and curve cells, written
and read back; the offline replay and the server's LITEHIT SAVE write through it."""
from __future__ import annotations

import ast
import os

import numpy as np
import pytest

from litehit.facts import hit_curve_to_json
from litehit.factsfile import (
    FACTS_FILE_NAME,
    FACTS_HEADER,
    FACTS_HEADER_LINE,
    FactsError,
    csv_field,
    curve_cells,
    iter_facts_rows,
    lane_columns,
    row,
    row_prefix,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_header_and_name():
    assert FACTS_FILE_NAME == "litehit_facts.csv"
    assert FACTS_HEADER_LINE == ("trace_id,instance_id,timestamp_ns,input_token_len,"
                                 "block_size_tokens,block_bytes,hit_curve\n")
    assert FACTS_HEADER_LINE.rstrip("\n").split(",") == list(FACTS_HEADER)


def test_row_layout_and_quoting_byte_exact():
    lane = lane_columns("in,st", 512, 67108864)
    assert csv_field('a"b') == '"a""b"' and csv_field("plain") == "plain"
    assert row(row_prefix('r"1', lane, 1000, 40160), "[[1,2],[4,1]]") == \
        '"r""1","in,st",1000,40160,512,67108864,"[[1,2],[4,1]]"\n'
    # the server's rows (LITEHIT SAVE): one key per block
    assert row(row_prefix("ferrumkv-7", lane_columns("ferrumkv", 1, 96), 5_000_000, 3),
               "[]") == 'ferrumkv-7,ferrumkv,5000000,3,1,96,"[]"\n'


def test_curve_cells_equal_the_curve_json():
    offsets = np.array([0, 0, 1, 3], dtype=np.int64)
    starts = np.array([1, 1, 4, 99], dtype=np.int64)        # a spare slot past the end
    runs = np.array([2, 2, 1, 99], dtype=np.int64)
    cells = curve_cells(offsets, starts, runs)
    assert cells == ["[]", "[[1,2]]", "[[1,2],[4,1]]"]
    assert cells == [hit_curve_to_json([]), hit_curve_to_json([(1, 2)]),
                     hit_curve_to_json([(1, 2), (4, 1)])]
    assert curve_cells(offsets, starts, runs, [2, 0]) == ["[[1,2],[4,1]]", "[]"]


def test_written_rows_read_back(tmp_path):
    lane = lane_columns("a,b", 4, 1024)
    path = tmp_path / FACTS_FILE_NAME
    curves = ["[]", "[[1,2]]", "[[1,2],[4,1]]"]
    path.write_text(FACTS_HEADER_LINE + "".join(
        row(row_prefix(f"r{i}", lane, i, 8), c) for i, c in enumerate(curves)))
    (batch,) = list(iter_facts_rows(str(path)))
    assert batch.instance_id == ["a,b"] * 3 and batch.trace_id == ["r0", "r1", "r2"]
    assert batch.seg_offsets.tolist() == [0, 0, 1, 3] and len(batch) == 3
    assert curve_cells(batch.seg_offsets, batch.seg_start, batch.seg_run) == curves
    small = list(iter_facts_rows(str(path), batch_rows=2))
    assert [len(b) for b in small] == [2, 1]


def test_empty_file_has_no_rows_and_a_bad_header_fails(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("")
    assert list(iter_facts_rows(str(path))) == []
    path.write_text("trace_id\n")
    with pytest.raises(FactsError, match="line 1: the header"):
        list(iter_facts_rows(str(path)))


def _string_constants(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


@pytest.mark.parametrize("module", ["litehit/offline.py", "litehit/lanes.py",
                                    "litehit/query.py", "litehit/plot.py",
                                    "ferrumkv_py/shadow.py"])
def test_no_other_module_spells_the_format(module):
    """Writers and readers take the header, file name and quoting from factsfile."""
    for text in _string_constants(os.path.join(ROOT, module)):
        assert "block_size_tokens,block_bytes" not in text, module
        assert text != FACTS_FILE_NAME, module


def test_server_save_is_a_facts_file_plotted_against_keys(make_server, tmp_path):
    """LITEHIT SAVE writes <dir>/litehit_facts.csv in this format (one key per block), and
    litehit reads it back: the query counts the reads, the plot's axis is keys."""
    import redis

    from litehit.plot import collect_curves
    from litehit.query import run_query

    s = make_server(litehit_shadow="yes", dir=str(tmp_path), litehit_block_bytes="100")
    r = redis.Redis(port=s.port)
    for i in range(300):
        r.set(f"k{i % 40}", "v")
        r.get(f"k{(i * 7) % 50}")
    saved = r.execute_command("LITEHIT", "SAVE").decode()
    assert saved == os.path.join(str(tmp_path), FACTS_FILE_NAME) == s.server.shadow.save_path()
    with open(saved, encoding="ascii") as f:
        text = f.read()
    assert text.startswith(FACTS_HEADER_LINE)
    assert all(line.split(",")[4:6] == ["1", "100"] for line in text.splitlines()[1:])
    totals = run_query(saved, str(tmp_path / "q.jsonl"), [-1])
    assert totals[""].requests == 300 and totals[""].total_input_tokens == 300
    curves, unit = collect_curves(saved)
    assert unit == "keys" and curves[0].capacities[0] == 1
    info = r.info("litehit")
    assert curves[0].infinite_rate == pytest.approx(info["litehit_exact_hit_rate_inf"],
                                                    abs=1e-6)
