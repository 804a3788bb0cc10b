"""Capacity advice: the bisection against a hand-computed curve, and ``litehit advise`` on
facts files against ``litehit query`` of the same capacities."""

import json

import pytest

from litehit.advise import advise, capacity_for
from litehit.cli import main
from litehit.query import run_query
from tests.litehit.data import KIMI_FACTS

# hits(c) of a hand-made curve: 0 below 3, 3 at 3..9, 5 from 10 on (of 10 blocks)
STEPS = {0: 0, 3: 3, 10: 5}


def hits(c: int) -> int:
    return max(v for k, v in STEPS.items() if k <= c) if c >= 0 else 5


def test_capacity_for_is_the_smallest_reaching_capacity():
    assert capacity_for(hits, 10, 0.3, 20) == 3
    assert capacity_for(hits, 10, 0.31, 20) == 10
    assert capacity_for(hits, 10, 0.5, 20) == 10
    assert capacity_for(hits, 10, 0.51, 20) is None          # beyond the flat top
    assert capacity_for(hits, 10, 0.0, 20) == 0
    assert capacity_for(hits, 0, 0.5, 20) is None            # no reads: nothing to advise


def test_advise_rates_and_multiples():
    a = advise(hits, 10, 20, capacity=6, block_bytes=100, target=0.4)
    assert a["hit_rate"] == 0.3 and a["capacity_bytes"] == 600
    assert a["hit_rate_at_0.5x"] == 0.3                      # capacity 3
    assert a["hit_rate_at_2x"] == 0.5 and a["hit_rate_at_4x"] == 0.5
    assert a["target_capacity_blocks"] == 10 and a["target_capacity_bytes"] == 1000
    assert a["max_hit_rate"] == 0.5
    assert "hit_rate" not in advise(hits, 10, 20, capacity=-1, block_bytes=100)


def _facts(tmp_path, rows):
    path = tmp_path / "facts.csv"
    path.write_text("trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,"
                    "block_bytes,hit_curve\n" + "".join(rows))
    return str(path)


def test_cli_on_a_small_facts_file(tmp_path, capsys):
    # two requests of 4 blocks (2 tokens each); the second hits 2 blocks at capacity >= 5
    path = _facts(tmp_path, ['a,i,1,8,2,1024,"[]"\n', 'b,i,2,8,2,1024,"[[5,2]]"\n'])
    with pytest.raises(SystemExit) as e:
        main(["advise", path, "--target", "0.25", "--capacity", "4blocks", "--json"])
    assert e.value.code == 0
    a = json.loads(capsys.readouterr().out)
    assert a["instance_id"] == "i" and a["total_input_tokens"] == 16
    assert a["hit_rate"] == 0 and a["hit_rate_at_2x"] == 0.25     # 2 blocks x 2 tokens / 16
    assert a["target_capacity_blocks"] == 6 and a["target_capacity_bytes"] == 6 * 1024
    with pytest.raises(SystemExit) as e:
        main(["advise", path, "--target", "2"])
    assert e.value.code == 1 and "between 0 and 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["advise", path, "--instance", "nope"])
    assert e.value.code == 1 and "no rows of instance" in capsys.readouterr().err


def test_cli_agrees_with_query_on_the_kimi_facts(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["advise", KIMI_FACTS, "--capacity", "100GB", "--target", "0.5", "--json"])
    a = json.loads(capsys.readouterr().out)
    out = tmp_path / "q.jsonl"
    totals = run_query(KIMI_FACTS, str(out), [50, 100, 200, 400])
    summary = json.loads(out.read_text().splitlines()[-1])
    assert summary["hit_rates"] == pytest.approx(
        [a["hit_rate_at_0.5x"], a["hit_rate"], a["hit_rate_at_2x"], a["hit_rate_at_4x"]],
        abs=1e-6)
    assert a["total_input_tokens"] == summary["total_input_tokens"]
    # the advised capacity reaches the target and one block less does not
    gb = a["target_capacity_bytes"] / 2 ** 30
    below = (a["target_capacity_blocks"] - 1) * a["block_bytes"] / 2 ** 30
    run_query(KIMI_FACTS, str(out), [gb, below])
    rates = json.loads(out.read_text().splitlines()[-1])["hit_rates"]
    assert rates[0] >= 0.5 > rates[1]
    assert totals is not None


def test_cli_text_is_for_people(capsys):
    """Without --json: sizes in binary units, rates in percent, the ceiling, and a target
    beyond it said to be out of reach (the same numbers as the JSON line)."""
    with pytest.raises(SystemExit):
        main(["advise", KIMI_FACTS, "--capacity", "64GB", "--target", "0.8", "--json"])
    a = json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit):
        main(["advise", KIMI_FACTS, "--capacity", "64GB", "--target", "0.8"])
    text = capsys.readouterr().out
    assert "{" not in text and "at 64 GiB" in text
    assert f"{100 * a['hit_rate']:.1f} %" in text
    assert f"{100 * a['max_hit_rate']:.1f} %" in text
    assert f"{a['target_capacity_blocks']:,} blocks" in text and "GiB (" in text
    with pytest.raises(SystemExit):
        main(["advise", KIMI_FACTS, "--target", "0.95"])
    assert "not reachable with any memory" in capsys.readouterr().out
