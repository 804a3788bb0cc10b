"""bench/quality_report.py's pure parts: the variant list, the saved state and resuming, and
the report (tables, issue 8 and issue 20 verdicts) drawn from a small hand-made JSON.

No server is started: the one test that "measures" replaces run_one with a stub.
"""

from __future__ import annotations

import json
import os

import pytest

from bench import eviction_quality as evq
from bench import quality_report as qr
from bench import trace_quality as tq

LRU, LFU, AHE = "allkeys-lru", "allkeys-lfu", "allkeys-ahe+ahe-controller=adaptive"


# ---- variants ----

def test_default_variants_name_every_controller_and_the_default():
    vs = qr.build_variants(None, [])
    assert [v.policy for v in vs] == [
        "allkeys-lru", "allkeys-lfu", "allkeys-random", "allkeys-ahe+ahe-controller=spec",
        "allkeys-ahe+ahe-controller=adaptive+ahe-probation=no", "allkeys-ahe"]
    assert all(v.parts == qr.PARTS for v in vs)
    assert len({v.label for v in vs}) == len(vs)


def test_parse_variant_forms():
    v = qr.parse_variant("ahe probation:allkeys-ahe+ahe-controller=adaptive+ahe-probation=yes")
    assert v == qr.Variant("ahe probation",
                           "allkeys-ahe+ahe-controller=adaptive+ahe-probation=yes", qr.PARTS)
    assert qr.parse_variant(" lru10 : allkeys-lru/10 ").policy == "allkeys-lru/10"
    assert qr.parse_variant("rnd:allkeys-random@synthetic").parts == ("synthetic",)


@pytest.mark.parametrize("bad", ["allkeys-lru", ":allkeys-lru", "lru:", "x:allkeys-lru+foo",
                                 "x:allkeys-lru+=1", "x:allkeys-lru+a=", "x:allkeys-lru/ten",
                                 "x:allkeys-lru@live", "x:+a=b"])
def test_parse_variant_rejects(bad):
    with pytest.raises(ValueError):
        qr.parse_variant(bad)


def test_build_variants_replace_add_and_duplicates():
    vs = qr.build_variants("a:allkeys-lru@synthetic,traces,b:allkeys-lfu@traces",
                           ["c:allkeys-ahe+ahe-probation=yes"])
    assert [(v.label, v.parts) for v in vs] == [
        ("a", ("synthetic", "traces")), ("b", ("traces",)), ("c", qr.PARTS)]
    added = qr.build_variants(None, ["p:allkeys-ahe+ahe-probation=yes"])
    assert added[-1].label == "p" and len(added) == len(qr.VARIANTS) + 1
    with pytest.raises(ValueError, match="label"):
        qr.build_variants("a:allkeys-lru,a:allkeys-lfu", [])
    with pytest.raises(ValueError, match="policy"):
        qr.build_variants(None, ["again:allkeys-lru"])


# ---- a small saved run ----

def syn(workload, policy, rate, hit, exact=0.30):
    return {"workload": workload, "policy": policy, "rate": rate, "requests": 1000,
            "hit": hit, "exact": exact, "exact_inf": 0.7, "shadow_real": hit,
            "capacity": 10, "keys": 10, "evicted": 5, "expired": 0, "alpha": "",
            "ahe_extra_memory": 0, "duels": {}, "phases": [],
            "curve": [(5, 0.2), (10, exact), (20, 0.4)], "seconds": 1.0,
            "achieved_rate": rate or 40000.0}


def trace_row(trace, cap, ref, sim=None):
    row = {"trace": trace, "capacity": cap, "requests": 1000, "ref": ref}
    if sim is not None:
        row["sim"] = sim
    return row


def live(trace, cap, policy, hit, exact):
    return {"trace": trace, "capacity": cap, "policy": policy, "rate": 0, "requests": 1000,
            "hit": hit, "exact": exact, "exact_inf": 0.9, "keys": cap, "evicted": 1,
            "alpha": "", "seconds": 0.1, "achieved_rate": 10000.0}


def small_run() -> dict:
    settings = {"workloads": "zipf,shift", "rates": "1000,0", "requests": 1000,
                "capacity": 10, "seed": 1, "traces": "tr", "capacities": {"tr": [100, 200]},
                "reference": "LRU,ARC,OPT", "trace_rate": 0}
    variants = [qr.Variant("lru", LRU), qr.Variant("lfu", LFU), qr.Variant("ahe", AHE)]
    st = qr.State.new(None, settings, variants, "CMD", "abc1234")
    d = st.data
    hits = {  # (workload, rate): (lru, lfu, ahe)
        ("zipf", 1000.0): (0.30, 0.40, 0.398), ("zipf", 0.0): (0.30, 0.41, 0.40),
        ("shift", 1000.0): (0.35, 0.30, 0.34), ("shift", 0.0): (0.35, 0.31, 0.36)}
    # measured out of order, as a pool of runs finishes them: the tables still follow
    # the settings' and the variants' order
    for (w, rt), hs in reversed(list(hits.items())):
        for p, h in reversed(list(zip((LRU, LFU, AHE), hs))):
            d["synthetic"].append(syn(w, p, rt, h))
    d["trace_rows"] = [
        trace_row("tr", 100, {"LRU": 0.10, "ARC": 0.12, "OPT": 0.30},
                  {"LRU": 0.10, "OPT": 0.30}),
        trace_row("tr", 200, {"LRU": 0.20, "ARC": 0.21, "OPT": 0.50},
                  {"LRU": 0.20, "OPT": 0.501})]
    d["trace_curves"] = [trace_row("tr", 50, {"LRU": 0.05, "ARC": 0.06, "OPT": 0.2})]
    d["trace_live"] = [live("tr", 100, LRU, 0.101, 0.1001), live("tr", 100, AHE, 0.118, 0.1),
                       live("tr", 200, LRU, 0.199, 0.2), live("tr", 200, AHE, 0.20, 0.2)]
    return d


def table(lines, header_start):
    """The rows of the markdown table whose header starts with ``header_start``."""
    i = next(k for k, x in enumerate(lines) if x.startswith(header_start))
    out = []
    for x in lines[i:]:
        if not x.startswith("|"):
            break
        out.append([c.strip() for c in x.strip("|").split("|")])
    return out


def test_report_tables_follow_the_variants_order():
    d = small_run()
    lines = qr.report_lines(d, {LRU: "lru", LFU: "lfu", AHE: "ahe"})
    t = table(lines, "| workload |")
    assert t[0] == ["workload", "lru", "lfu", "ahe", "exact LRU", "inf"]
    assert t[2] == ["zipf", "30.00", "40.00", "39.80", "30.00", "70.00"]
    assert t[3][0] == "shift"
    text = "\n".join(lines)
    assert text.index("paced at 1000 requests/s") < text.index("unthrottled")


def test_issue8_verdicts_at_both_rates():
    d = small_run()
    lines = qr.report_lines(d, {LRU: "lru", LFU: "lfu", AHE: "ahe"})
    t = table(lines, "| policy | workload |")
    assert t[0] == ["policy", "workload", "vs best 1k", "vs best max", "parity", "verdict"]
    zipf, shift = t[2], t[3]
    assert zipf[:5] == ["ahe", "zipf", "-0.20", "-1.00", "-0.20"]
    assert zipf[5] == "below best at max by 1.00"
    # shift is a shifting workload: AHE must be above both at every rate
    assert shift[2:5] == ["-1.00", "+1.00", "-2.00"]
    assert shift[5] == "not above both at 1k by 1.00; parity off by 1.00"
    summary = table(lines, "| variant |")
    assert summary[2][:2] == ["ahe", "0 of 2"]


def test_trace_table_and_issue20_verdicts():
    d = small_run()
    lines = qr.report_lines(d, {LRU: "lru", LFU: "lfu", AHE: "ahe"})
    t = table(lines, "| trace | C | LRU")
    assert t[0] == ["trace", "C", "LRU", "ARC", "OPT", "shadow exact LRU", "lru", "ahe"]
    # the best published policy is bold; OPT never counts as one
    assert t[2] == ["tr", "100", "10.00", "**12.00**", "30.00", "10.01", "10.10", "11.80"]
    v = table(lines, "| trace | C | best published")
    assert v[2] == ["tr", "100", "ARC 12.00", "-0.20 met"]
    assert v[3] == ["tr", "200", "ARC 21.00", "-1.00 **missed**"]
    text = "\n".join(lines)
    assert "Met on: `ahe` 1 of 2 rows." in text
    # libCacheSim's OPT and the simulator's differ by 0.001 * 1000 requests on one row
    assert "up to 1 requests apart on all 2 rows" in text
    assert "within 0.01 point of libCacheSim's LRU in all 4 live runs" in text
    assert table(lines, "| variant |")[2][2] == "1 of 2 (worst -1.00)"


def test_best_published_leaves_out_opt():
    assert tq.best_published({"LRU": 0.1, "OPT": 0.9, "S3-FIFO": 0.2}) == ("S3-FIFO", 0.2)


def test_curve_capacities_cover_the_table():
    got = tq.curve_capacities([500, 2000, 8000])
    assert got == [125, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000]
    assert tq.curve_capacities([3]) == [1, 2, 3, 6, 12]


# ---- writing, redrawing, resuming ----

def test_from_json_writes_report_and_plots_and_keeps_findings(tmp_path):
    path = tmp_path / "run.json"
    qr.State(str(path), small_run()).save()
    out = tmp_path / "out"
    out.mkdir()
    (out / qr.REPORT_NAME).write_text("# old\n\nstale table\n\n## Findings\n\nmine, kept\n")
    assert qr.main(["--from-json", str(path), "--out-dir", str(out)]) == 0
    text = (out / qr.REPORT_NAME).read_text()
    assert "stale table" not in text and text.endswith("## Findings\n\nmine, kept\n")
    assert "## Real traces" in text and "](./%s)" % qr.TRACE_PLOT_NAME in text
    assert (out / qr.PLOT_NAME).stat().st_size > 0
    assert (out / qr.TRACE_PLOT_NAME).stat().st_size > 0


def test_state_save_is_atomic_and_loads_back(tmp_path):
    path = str(tmp_path / "s.json")
    st = qr.State(path, small_run())
    st.add("synthetic", syn("ttl", LRU, 1000.0, 0.3))
    back = qr.State.load(path)
    assert ("ttl", LRU, 1000.0) in back.done_synthetic()
    assert ("tr", 50) in back.done_rows() and ("tr", 200, AHE) in back.done_live()
    assert [v.label for v in back.variants()] == ["lru", "lfu", "ahe"]
    assert not os.path.exists(path + ".tmp")
    with open(path, "w") as f:
        json.dump({"results": []}, f)          # an eviction_quality.py --json file
    with pytest.raises(ValueError, match="format"):
        qr.State.load(path)


def test_resume_measures_only_what_is_missing(tmp_path, monkeypatch):
    d = small_run()
    d["settings"].update(workloads="zipf,shift", rates="1000,0")
    d["synthetic"] = [r for r in d["synthetic"]
                      if not (r["workload"] == "shift" and r["policy"] == AHE)]
    path = tmp_path / "run.json"
    qr.State(str(path), d).save()
    calls = []

    def fake_run_one(workload, policy, args, stream, rate):
        calls.append((workload, policy, rate))
        assert args.capacity == 10 and len(stream.keys) == 1000
        return syn(workload, policy, rate, 0.5)

    monkeypatch.setattr(evq, "run_one", fake_run_one)
    argv = ["--resume", "--json", str(path), "--parts", "synthetic", "--workloads",
            "zipf,shift", "--rates", "1000,0", "--requests", "1000", "--capacity", "10",
            "--variants", "lru:%s,lfu:%s,ahe:%s" % (LRU, LFU, AHE),
            "--out-dir", str(tmp_path)]
    assert qr.main(argv) == 0
    assert sorted(calls) == [("shift", AHE, 0.0), ("shift", AHE, 1000.0)]
    saved = qr.State.load(str(path))
    assert len(saved.data["synthetic"]) == 12
    assert saved.data["command"] == "CMD"           # the run's original command is kept
    assert saved.data["code"] == "abc1234, resumed on " + evq.code_version()
    calls.clear()
    assert qr.main(argv) == 0                       # all done: nothing is measured again
    assert calls == []
    assert qr.State.load(str(path)).data["code"] == saved.data["code"]


def test_redo_short_measures_the_slow_runs_again(tmp_path, monkeypatch):
    d = small_run()
    slow = next(r for r in d["synthetic"] if r["rate"] == 1000.0)
    slow["achieved_rate"] = 900.0             # below RATE_SHORTFALL of 1000/s
    path = tmp_path / "run.json"
    qr.State(str(path), d).save()
    calls = []
    monkeypatch.setattr(evq, "run_one", lambda w, p, a, s, rt: calls.append((w, p, rt))
                        or syn(w, p, rt, 0.5))
    assert qr.main(["--resume", "--redo-short", "--json", str(path), "--parts", "synthetic",
                    "--workloads", "zipf,shift", "--rates", "1000,0", "--requests", "1000",
                    "--capacity", "10", "--variants", "lru:%s,lfu:%s,ahe:%s" % (LRU, LFU, AHE),
                    "--out-dir", str(tmp_path)]) == 0
    assert calls == [(slow["workload"], slow["policy"], 1000.0)]
    assert len(qr.State.load(str(path)).data["synthetic"]) == 12


def test_resume_refuses_other_settings(tmp_path, capsys):
    path = tmp_path / "run.json"
    qr.State(str(path), small_run()).save()
    with pytest.raises(SystemExit):
        qr.main(["--resume", "--json", str(path), "--parts", "synthetic",
                 "--requests", "2000", "--capacity", "10", "--out-dir", str(tmp_path)])
    assert "requests: saved 1000, now 2000" in capsys.readouterr().err


def test_trace_resume_measures_only_what_is_missing(tmp_path, monkeypatch):
    d = small_run()   # tr: table rows at 100 and 200, a plot-only row at 50; live lru, ahe
    d["settings"].update(traces="tr", capacities={"tr": [50, 100, 200]})
    st = qr.State(str(tmp_path / "run.json"), d)
    measured = []

    class FakeTrace:
        def __init__(self, name):
            self.name, self.n, self.nkeys = name, 1000, 10

    def fake_row(trace, cap, names, with_sim=True):
        measured.append(("row", cap, with_sim))
        sim = {"LRU": 0.1, "OPT": 0.2} if with_sim else None
        return trace_row(trace.name, cap, {"LRU": 0.1, "OPT": 0.2}, sim)

    def fake_live(policy, trace, cap, rate=0):
        measured.append(("live", cap, policy))
        return live(trace.name, cap, policy, 0.1, 0.1)

    monkeypatch.setattr(tq, "Trace", FakeTrace)
    monkeypatch.setattr(tq, "reference_row", fake_row)
    monkeypatch.setattr(tq, "live_hits", fake_live)
    qr.run_traces(st, [LRU, LFU, AHE], None)
    grid = tq.curve_capacities([50, 100, 200])
    # 50 was measured for the plot only: as a table row now, it needs the simulator too
    assert sorted(m for m in measured if m[0] == "row") == sorted(
        [("row", 50, True)] + [("row", c, False) for c in grid if c not in (50, 100, 200)])
    assert sorted(m for m in measured if m[0] == "live") == sorted(
        [("live", 50, p) for p in (LRU, LFU, AHE)] + [("live", 100, LFU), ("live", 200, LFU)])
    measured.clear()
    qr.run_traces(qr.State.load(str(tmp_path / "run.json")), [LRU, LFU, AHE], None)
    assert measured == []


def test_trace_table_without_live_runs():
    rows = small_run()["trace_rows"]
    lines = tq.report_lines(rows, [], {}, None)
    t = table(lines, "| trace |")
    assert t[0] == ["trace", "C", "LRU", "ARC", "OPT"]
    assert all(len(r) == 5 for r in t)
    assert not any("Issue 20" in x for x in lines)
