"""The eviction-quality report (issue 20): synthetic workloads and real traces, one command.

    .venv/bin/python bench/quality_report.py --docs        # ~20 minutes on 2 cores
    .venv/bin/python bench/quality_report.py --quick       # ~7 minutes, under out/ only

Two parts, both driven by one list of our policy variants (``VARIANTS``: a label, a policy
string ``NAME[/SAMPLES][+config=value...]`` and the parts it runs in; adding a variant is
one line there, or ``--add-variant 'label:policy'`` for one run):

- **synthetic**: ``bench/eviction_quality.py``'s matrix (the seven workloads of
  ``bench/workloads.py``, a fresh live server per run, the litehit shadow's exact LRU
  beside it) at 1k requests/s and at 50k, with issue 8's verdicts (AHE >= max(LRU, LFU) -
  0.5 point, above both on shift, shift40 and mixed, the two rates within 1 point);
- **traces**: ``bench/trace_quality.py``'s real traces at three capacities each:
  libCacheSim's LRU, LFU, ARC, S3-FIFO, SIEVE, W-TinyLFU, 2Q and OPT, this repo's simulator
  as a cross-check, our live policies and the shadow's exact LRU, with issue 20's verdict
  per row (each AHE variant >= the best published policy - 0.5 point) and a plot of hit rate
  against capacity per trace.

Paced runs (rate <= ``eviction_quality.PARALLEL_MAX_RATE``) go side by side, up to
``--jobs`` at a time (light clients: a 1k run takes 200 s whatever runs beside it); faster
and unthrottled runs go one at a time.  Every result is saved to ``--json`` as soon as it
is measured (default ``out/eviction-quality.json``; with ``--docs``, the committed
``docs/eviction-quality.json`` beside the report): ``--resume`` skips what that file
already holds (same settings; ``--redo-short`` also measures again the runs that fell short
of their target rate), ``--from-json`` only redraws the report and plots from it.
Output goes under ``out/``; ``--docs`` writes the committed ``docs/eviction-quality.md``
and its plots in ``docs/img/``.  The hand-written part of the report (from ``## Findings``
on) is kept when it is regenerated.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench import eviction_quality as evq  # noqa: E402
from bench import trace_quality as tq  # noqa: E402
from bench.workloads import WORKLOADS, _stop_all, check_size  # noqa: E402

PARTS = ("synthetic", "traces")

# Our policy variants: (column label, policy string, parts it runs in).  One line each.
VARIANTS = (
    ("lru", "allkeys-lru", PARTS),
    ("lfu", "allkeys-lfu", PARTS),
    ("random", "allkeys-random", PARTS),
    ("ahe spec", "allkeys-ahe+ahe-controller=spec", PARTS),
    ("ahe adaptive", "allkeys-ahe+ahe-controller=adaptive+ahe-probation=no", PARTS),
    ("ahe (default)", "allkeys-ahe", PARTS),    # adaptive + probation (ahe-probation yes)
)

SYNTHETIC_DEFAULTS = {"workloads": ",".join(WORKLOADS), "rates": "1000,50000",
                      "requests": 200_000, "capacity": 1000, "seed": 1}
QUICK = {"requests": 40_000, "capacity": 200}   # 200 C, as the full run: shapes intact
DEFAULT_JOBS = 14           # paced 1k runs side by side: ~0.11 core each (server + client)
FORMAT = 1                  # of the JSON file
OUT_DIR = os.path.join(ROOT, "out")
DOCS_DIR = os.path.join(ROOT, "docs")
REPORT_NAME = "eviction-quality.md"
PLOT_NAME = "eviction_quality.png"
TRACE_PLOT_NAME = "eviction_quality_traces.png"
JSON_NAME = "eviction-quality.json"
COMMAND = ".venv/bin/python bench/quality_report.py"
SECONDS_PER_MINUTE = 60


@dataclass(frozen=True)
class Variant:
    label: str
    policy: str
    parts: tuple = PARTS


def parse_variant(text: str) -> Variant:
    """``label:policy[@part,...]`` -> Variant, e.g. ``ahe prob:allkeys-ahe+ahe-probation=yes``
    or ``random:allkeys-random@synthetic``.  Raises ValueError on a malformed entry."""
    label, sep, rest = text.partition(":")
    policy, _, parts = rest.partition("@")
    label, policy = label.strip(), policy.strip()
    if not sep or not label or not policy:
        raise ValueError("a variant is LABEL:POLICY[@PART,...], not %r" % text)
    check_policy(policy)
    got = tuple(p.strip() for p in parts.split(",")) if parts else PARTS
    bad = [p for p in got if p not in PARTS]
    if bad or not got:
        raise ValueError("%r: parts are %s, not %s" % (text, ", ".join(PARTS), ", ".join(bad)))
    return Variant(label, policy, got)


def check_policy(policy: str) -> None:
    """A policy string is NAME[/SAMPLES][+config=value...] (eviction_quality.parse_policy)."""
    name, *extras = policy.split("+")
    base, slash, samples = name.partition("/")
    if not base or (slash and not samples.isdigit()):
        raise ValueError("bad policy name %r" % name)
    for extra in extras:
        k, eq, v = extra.partition("=")
        if not k or not eq or not v:
            raise ValueError("%r: each +extra is config=value, not %r" % (policy, extra))


def build_variants(spec: str | None, add: list) -> list:
    """VARIANTS, or ``spec`` (comma-separated ``label:policy[@parts]``) instead, then the
    ``add`` entries.  Labels and policies must be unique."""
    out = ([Variant(*v) for v in VARIANTS] if spec is None else
           [parse_variant(t) for t in split_specs(spec)])
    out += [parse_variant(t) for t in add]
    for attr in ("label", "policy"):
        seen = [getattr(v, attr) for v in out]
        dup = sorted({x for x in seen if seen.count(x) > 1})
        if dup:
            raise ValueError("duplicate variant %s: %s" % (attr, ", ".join(dup)))
    return out


def split_specs(spec: str) -> list:
    """Split ``a:p1@synthetic,traces,b:p2`` at the commas that start a new ``label:``."""
    out: list = []
    for piece in spec.split(","):
        if out and ":" not in piece and piece.strip() in PARTS:
            out[-1] += "," + piece          # a second part name of the previous entry
        elif piece.strip():
            out.append(piece)
    return out


# ---- the saved state: every result, written after each one ----

class State:
    """The JSON record of a run: settings, variants, and every result so far.  ``save``
    writes it atomically (a run stopped at any point resumes from the last result)."""

    def __init__(self, path: str | None, data: dict):
        self.path, self.data = path, data
        self.lock = threading.Lock()

    @classmethod
    def new(cls, path, settings: dict, variants: list, command: str, code: str) -> "State":
        return cls(path, {"format": FORMAT, "settings": settings, "command": command,
                          "code": code, "date": time.strftime("%Y-%m-%d"),
                          "cores": os.cpu_count(),
                          "variants": [[v.label, v.policy, list(v.parts)] for v in variants],
                          "synthetic": [], "trace_rows": [], "trace_curves": [],
                          "trace_live": [], "seconds": {}})

    @classmethod
    def load(cls, path: str) -> "State":
        with open(path) as f:
            data = json.load(f)
        if data.get("format") != FORMAT:
            raise ValueError("%s: not a quality_report.py JSON (format %r)" % (
                path, data.get("format")))
        return cls(path, data)

    def variants(self) -> list:
        return [Variant(lab, pol, tuple(parts)) for lab, pol, parts in self.data["variants"]]

    def add(self, kind: str, result: dict) -> None:
        with self.lock:
            self.data[kind].append(result)
            self.save()

    def save(self) -> None:
        if not self.path:
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)

    def done_synthetic(self) -> set:
        return {(r["workload"], r["policy"], r["rate"]) for r in self.data["synthetic"]}

    def done_rows(self) -> set:
        return {(r["trace"], r["capacity"])
                for r in self.data["trace_rows"] + self.data["trace_curves"]}

    def done_live(self) -> set:
        return {(r["trace"], r["capacity"], r["policy"]) for r in self.data["trace_live"]}


def resumable(old: dict, settings: dict) -> list:
    """The settings that differ between a saved run and this one (they must not, to resume:
    results measured under other settings would be mixed into one table)."""
    keys = ("requests", "capacity", "seed", "trace_rate")
    return ["%s: saved %r, now %r" % (k, old.get(k), settings.get(k)) for k in keys
            if old.get(k) != settings.get(k)]


# ---- measuring ----

class Progress:
    def __init__(self, total: int, what: str):
        self.total, self.what, self.done, self.t0 = total, what, 0, time.time()
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        with self.lock:
            self.done += 1
            el = time.time() - self.t0
            print("[%s %d/%d %d:%02d] %s" % (self.what, self.done, self.total,
                                              el // SECONDS_PER_MINUTE, el % SECONDS_PER_MINUTE,
                                              text), flush=True)


def run_synthetic(state: State, policies: list, opts) -> None:
    """The workload x policy x rate matrix; paced runs in a pool of ``opts.jobs``."""
    s = state.data["settings"]
    rates = [float(x) for x in s["rates"].split(",")]
    workloads = s["workloads"].split(",")
    done = state.done_synthetic()
    todo = [(w, p, rt) for rt in rates for w in workloads for p in policies
            if (w, p, rt) not in done]
    if not todo:
        return
    for w in workloads:
        warn = check_size(w, s["requests"], s["capacity"])
        if warn:
            print("warning:", warn)
    streams = {w: WORKLOADS[w](s["requests"], s["capacity"], s["seed"])
               for w in dict.fromkeys(t[0] for t in todo)}
    run_args = argparse.Namespace(capacity=s["capacity"], port=None, host="127.0.0.1",
                                  password=None)
    prog = Progress(len(todo), "synthetic")

    def one(task) -> None:
        w, p, rt = task
        r = evq.run_one(w, p, run_args, streams[w], rt)
        state.add("synthetic", r)
        prog.line(evq.fmt_row(r))

    paced = [t for t in todo if 0 < t[2] <= evq.PARALLEL_MAX_RATE]
    if paced:
        print("synthetic: %d paced runs, %d side by side (%.0f s each)" % (
            len(paced), opts.jobs, s["requests"] / paced[0][2]), flush=True)
        with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
            for f in [pool.submit(one, t) for t in paced]:
                f.result()
    for t in todo:
        if t not in paced:
            one(t)


def run_traces(state: State, policies: list, opts) -> None:
    """libCacheSim (+ the simulator at the table's capacities) at every capacity of the
    plot, then our live policies at the table's capacities, one at a time."""
    s = state.data["settings"]
    done_rows, done_live = state.done_rows(), state.done_live()
    done_table = {(r["trace"], r["capacity"]) for r in state.data["trace_rows"]}
    for tname in s["traces"].split(","):
        caps = s["capacities"][tname]
        grid = tq.curve_capacities(caps)
        todo_rows = [c for c in grid                # a table row also needs the simulator
                     if (tname, c) not in (done_table if c in caps else done_rows)]
        todo_live = [(c, p) for c in caps for p in policies if (tname, c, p) not in done_live]
        if not todo_rows and not todo_live:
            continue
        trace = tq.Trace(tname)
        print("== %s: %d requests, %d keys" % (tname, trace.n, trace.nkeys), flush=True)
        prog = Progress(len(todo_rows) + len(todo_live), tname)
        for cap in todo_rows:
            table = cap in caps
            row = tq.reference_row(trace, cap, s["reference"].split(","), with_sim=table)
            state.add("trace_rows" if table else "trace_curves", row)
            prog.line("C=%-6d libCacheSim %s%s" % (cap, " ".join(
                "%s %.2f" % (k, 100 * v) for k, v in row["ref"].items()),
                "  sim LRU %.2f OPT %.2f" % (100 * row["sim"]["LRU"], 100 * row["sim"]["OPT"])
                if table else ""))
        for cap, p in todo_live:
            r = tq.live_hits(p, trace, cap, s["trace_rate"])
            state.add("trace_live", r)
            prog.line("C=%-6d ours %-36s %.2f  (keys held %d, shadow exact LRU %.2f, "
                      "%.0f req/s)" % (cap, p, 100 * r["hit"], r["keys"], 100 * r["exact"],
                                       r["achieved_rate"]))


# ---- the report ----

def report(data: dict, out_dir: str, img_dir: str, img_ref: str = "img",
           json_path: str | None = None) -> str:
    """Write the report and its two plots from a run's data; returns the report's path.
    ``json_path``: where the data is kept (named in the report)."""
    variants = [Variant(lab, pol, tuple(parts)) for lab, pol, parts in data["variants"]]
    labels = {v.policy: v.label for v in variants}
    path = os.path.join(out_dir, REPORT_NAME)
    lines = report_lines(data, labels, img_ref, json_path)
    evq.write_markdown(path, lines)
    syn = ordered(data)
    if syn:
        evq.plot(syn, list(dict.fromkeys(r["workload"] for r in syn)),
                 os.path.join(img_dir, PLOT_NAME), labels)
    if data["trace_rows"]:
        tq.plot(data["trace_rows"], data["trace_curves"], data["trace_live"], labels,
                os.path.join(img_dir, TRACE_PLOT_NAME))
    return path


def report_lines(data: dict, labels: dict, img_ref: str = "img",
                 json_path: str | None = None) -> list:
    """The whole generated part of the report, as markdown lines."""
    shown_json = os.path.relpath(os.path.abspath(json_path), ROOT) if json_path else \
        "out/eviction-quality.json"
    s, secs = data["settings"], data.get("seconds", {})
    total = sum(secs.values())
    lines = ["# Eviction quality: our policies against exact LRU, OPT and published ones", "",
             "Generated by `%s` on %s (server code: %s)%s.  Regenerate it with `%s --docs`; "
             "every result also goes to `%s` as it is measured, which `--from-json` redraws "
             "without measuring and `--resume` completes.  Our policy variants, one line each "
             "in `VARIANTS` (`bench/quality_report.py`):" % (
                 data["command"], data["date"], data["code"],
                 ", measured in %.0f minutes%s" % (
                     total / SECONDS_PER_MINUTE, " on %d cores" % data["cores"]
                     if data.get("cores") else "") if total else "",
                 COMMAND, shown_json), "",
             "| column | policy | parts |", "|---|---|---|"]
    lines += ["| %s | `%s` | %s |" % (lab, pol, ", ".join(parts))
              for lab, pol, parts in data["variants"]]
    lines += summary(data, labels)
    lines += ["", "## Synthetic workloads", ""]
    if data["synthetic"]:
        meta = {"cmd": None, "requests": s["requests"], "capacity": s["capacity"],
                "seed": s["seed"]}
        body = evq.report_lines(ordered(data), meta, PLOT_NAME, labels)
        lines += [x.replace("](img/", "](%s/" % img_ref) for x in body]
    else:
        lines += ["(Not measured in this run.)", ""]
    lines += ["## Real traces", ""]
    body = tq.report_lines(data["trace_rows"], data["trace_live"], labels, TRACE_PLOT_NAME)
    lines += [x.replace("](img/", "](%s/" % img_ref) for x in body]
    return lines


def ordered(data: dict) -> list:
    """The synthetic results in the settings' rate and workload order and the variants'
    order (the tables take their row and column order from the results'); a result of a
    policy, workload or rate no longer listed goes last."""
    s = data["settings"]
    pos = {}
    for name, values in (("rate", [float(x) for x in s["rates"].split(",")]),
                         ("workload", s["workloads"].split(",")),
                         ("policy", [pol for _, pol, _ in data["variants"]])):
        pos[name] = {v: i for i, v in enumerate(values)}
    return sorted(data["synthetic"], key=lambda r: tuple(
        pos[k].get(r[k], len(pos[k])) for k in ("rate", "workload", "policy")))


def summary(data: dict, labels: dict) -> list:
    """Issue 20's targets at a glance: per AHE variant, how many synthetic workloads meet
    issue 8's targets at every rate, and how many trace rows meet issue 20's."""
    syn = ordered(data)
    workloads = list(dict.fromkeys(r["workload"] for r in syn))
    rates = list(dict.fromkeys(r["rate"] for r in syn))
    srows = evq.verdict_rows(syn, workloads, rates) if syn else []
    trows = tq.trace_verdict_rows(data["trace_rows"], data["trace_live"], list(labels))
    ahes = list(dict.fromkeys([p for p, *_ in srows] +
                              [p for *_, d in trows for p in d]))
    if not ahes:
        return []
    out = ["", "Targets (issue 20; details under each part):", "",
           "| variant | synthetic: workloads meeting issue 8's targets at every rate "
           "(parity included) | real traces: rows within %.1f point of the best published "
           "policy |" % tq.WITHIN_BEST_POINTS, "|---|---|---|"]
    for p in ahes:
        mine = [bad for q, _, _, _, bad in srows if q == p]
        deltas = [d[p] for *_, d in trows if p in d]
        worst = min(deltas) if deltas else None
        out.append("| %s | %s | %s |" % (
            labels.get(p, p),
            "%d of %d" % (sum(not b for b in mine), len(mine)) if mine else "",
            "%d of %d (worst %+.2f)" % (sum(d >= -tq.WITHIN_BEST_POINTS for d in deltas),
                                        len(deltas), worst) if deltas else ""))
    return out


# ---- main ----

def fell_short(r: dict) -> bool:
    """A paced run whose achieved rate was below RATE_SHORTFALL of its target."""
    return bool(r["rate"]) and r["achieved_rate"] < evq.RATE_SHORTFALL * r["rate"]


def settings_from(args) -> dict:
    traces = [t for t in args.traces.split(",") if t]
    for t in traces:
        if t not in tq.TRACES:
            raise SystemExit("unknown trace %r (have: %s)" % (t, ", ".join(tq.TRACES)))
    caps = {}
    for t in traces:
        c = ([int(x) for x in args.capacities.split(",")] if args.capacities
             else list(tq.DEFAULT_CAPACITIES[t]))
        caps[t] = [c[len(c) // 2]] if args.quick and not args.capacities else c
    return {"workloads": args.workloads, "rates": args.rates, "requests": args.requests,
            "capacity": args.capacity, "seed": args.seed, "traces": ",".join(traces),
            "capacities": caps, "reference": args.reference, "trace_rate": args.trace_rate}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", default=",".join(PARTS), help="synthetic,traces")
    ap.add_argument("--variants", help="instead of VARIANTS: comma-separated "
                    "'label:policy[@part,...]'")
    ap.add_argument("--add-variant", action="append", default=[], metavar="LABEL:POLICY",
                    help="one more variant (repeatable), e.g. "
                    "'ahe probation:allkeys-ahe+ahe-probation=yes'")
    ap.add_argument("--workloads", default=SYNTHETIC_DEFAULTS["workloads"])
    ap.add_argument("--rates", default=SYNTHETIC_DEFAULTS["rates"],
                    help="synthetic request rates per second (0 = unthrottled)")
    ap.add_argument("--requests", type=int, default=SYNTHETIC_DEFAULTS["requests"])
    ap.add_argument("--capacity", type=int, default=SYNTHETIC_DEFAULTS["capacity"],
                    help="synthetic cache size in keys")
    ap.add_argument("--seed", type=int, default=SYNTHETIC_DEFAULTS["seed"])
    ap.add_argument("--traces", default=",".join(tq.TRACES))
    ap.add_argument("--capacities", help="trace capacities in keys, comma-separated "
                    "(default: per trace)")
    ap.add_argument("--reference", default=",".join(tq.REFERENCE),
                    help="libCacheSim policies")
    ap.add_argument("--trace-rate", type=float, default=0,
                    help="live trace replay rate (0 = unthrottled)")
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                    help="paced synthetic runs side by side")
    ap.add_argument("--quick", action="store_true",
                    help="C = %(capacity)d keys, %(requests)d requests; one capacity a trace"
                    % QUICK)
    ap.add_argument("--json", help="results file (default out/eviction-quality.json; "
                    "with --docs docs/eviction-quality.json)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the results already in --json and measure the rest")
    ap.add_argument("--redo-short", action="store_true",
                    help="with --resume: measure again the paced runs that fell short of "
                    "their target rate (a busy machine)")
    ap.add_argument("--from-json", metavar="PATH", help="only redraw the report from PATH")
    ap.add_argument("--out-dir", default=OUT_DIR, help="report and plots (default out/)")
    ap.add_argument("--docs", action="store_true",
                    help="write docs/eviction-quality.md and docs/img/ instead of --out-dir")
    args = ap.parse_args(argv)
    out_dir, img_dir, img_ref = (DOCS_DIR, os.path.join(DOCS_DIR, "img"), "img") \
        if args.docs else (args.out_dir, args.out_dir, ".")
    if args.from_json:
        path = report(State.load(args.from_json).data, out_dir, img_dir, img_ref,
                      args.from_json)
        print("wrote", path)
        return 0
    if args.quick:
        args.requests, args.capacity = QUICK["requests"], QUICK["capacity"]
    parts = [p for p in args.parts.split(",") if p]
    if any(p not in PARTS for p in parts):
        ap.error("--parts: %s" % ", ".join(PARTS))
    try:
        variants = build_variants(args.variants, args.add_variant)
    except ValueError as e:
        ap.error(str(e))
    settings = settings_from(args)
    json_path = args.json or os.path.join(DOCS_DIR if args.docs else OUT_DIR, JSON_NAME)
    shown = [a for a in (argv if argv is not None else sys.argv[1:])]
    command = evq.shown_command(shown, "bench/quality_report.py")
    if args.resume and os.path.exists(json_path):
        state = State.load(json_path)
        diff = resumable(state.data["settings"], settings)
        if diff:
            ap.error("--resume: %s has other settings (%s)" % (json_path, "; ".join(diff)))
        known = {v.policy for v in state.variants()}
        state.data["variants"] += [[v.label, v.policy, list(v.parts)] for v in variants
                                   if v.policy not in known]
        state.data["settings"].update(settings)
        code = evq.code_version()
        if code not in state.data["code"]:
            print("warning: %s was measured on server code %s, this run is %s: the report "
                  "names both" % (json_path, state.data["code"], code), flush=True)
            state.data["code"] += ", resumed on " + code
        if args.redo_short:
            kept = [r for r in state.data["synthetic"] if not fell_short(r)]
            print("--redo-short: %d runs fell short of their rate" % (
                len(state.data["synthetic"]) - len(kept)), flush=True)
            state.data["synthetic"] = kept
        print("resuming from %s: %d synthetic runs, %d trace rows, %d live trace runs" % (
            json_path, len(state.data["synthetic"]), len(state.data["trace_rows"]),
            len(state.data["trace_live"])), flush=True)
    else:
        state = State.new(json_path, settings, variants, command, evq.code_version())
    signal.signal(signal.SIGTERM, _stop_all)
    signal.signal(signal.SIGINT, _stop_all)
    for part, fn in (("synthetic", run_synthetic), ("traces", run_traces)):
        if part not in parts:
            continue
        t0 = time.time()
        fn(state, [v.policy for v in variants if part in v.parts], args)
        state.data["seconds"][part] = state.data["seconds"].get(part, 0) + time.time() - t0
        state.save()
        print("%s: %.1f minutes" % (part, (time.time() - t0) / SECONDS_PER_MINUTE), flush=True)
    path = report(state.data, out_dir, img_dir, img_ref, json_path)
    print("wrote %s (results: %s)" % (path, json_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
