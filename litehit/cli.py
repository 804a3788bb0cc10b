"""``litehit``: the offline tools' command line (the only module that prints or exits).

    litehit replay CONFIG.json [--workers N] [--trace PATH] [--output-dir DIR]
                               [--commit-writes] [--progress | --no-progress]
    litehit query FACTS.csv OUT.jsonl|- CAPACITY [CAPACITY ...]
    litehit convert mooncake IN.jsonl OUT.jsonl --instance-id NAME [--block-size 512]
    litehit plot FACTS.csv --out curve.png|.svg|.pdf [--capacities CAPACITY ...]
                                                      [--title TEXT]
    litehit --version

``run`` is an alias of ``replay``. A CAPACITY is a number of binary GB, or a number with a
unit (``64GB``, ``512MiB``, ``4096blocks``; ``litehit.projector.parse_capacity``); -1 or
inf is infinite (any negative number is, with a warning). Exit status: 0 on success (warnings such as an empty input on stderr, ``litehit:
warning: ...``), 1 on any failure (the reason on stderr, ``litehit: error: ...``; nothing
published), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from litehit import __version__
from litehit.config import load_config
from litehit.advise import MULTIPLES
from litehit.convert import MOONCAKE_BLOCK_SIZE_TOKENS, convert_mooncake
from litehit.progress import ProgressReporter
from litehit.projector import INFINITE_CAPACITY, format_bytes, parse_capacity

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130
STDOUT_PATH = "-"

TRACE_HELP = """\
trace (JSONL): one request per line, e.g.
  {"type":"request","instance_id":"i1","trace_id":"r1","timestamp_ns":1000,
   "keys":[11,12,13],"input_len":1536}
  type: "request" or "get" (a read: gets a facts row), or "write" (ignored unless
  --commit-writes); keys: one integer per block of block_size tokens, in prefix order;
  input_len: the request's tokens (keys = input_len // block_size); timestamp_ns: positive,
  never decreasing. `litehit convert mooncake` writes this from a Mooncake trace."""
CONFIG_HELP = """\
config (JSON): trace_file_path, output_result_path (relative paths are read from the
config file's folder), block_size (tokens per trace key), instance_groups (name,
ttl_seconds, enable_prefix_hash) and instances (instance_id, instance_group_name,
block_size, and location specs whose sizes add up to the bytes of one block). Example:
conf/litehit-mooncake.json; every key: docs/litehit.md."""
FACTS_HELP = """\
facts (CSV): litehit_facts.csv, one row per request and instance:
  trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve
  mooncake-1954,mooncake,519262000000,33639,512,67108864,"[[5438,63],[24814,1]]"
  hit_curve [[5438,63],...]: 63 leading blocks hit once the cache holds 5,438 blocks (the
  i-th of them from 5,438 + i); [] = the first block was never seen. A server's LITEHIT
  SAVE writes the same file with one key per block (block_size_tokens 1)."""
QUERY_HELP = """\
capacities: a number is binary GB (1 GB = 2^30 bytes); or give a unit: 64GB, 512MiB, 2k,
4096blocks, 100keys (units as Redis reads them: kb/mb/gb binary, k/m/g decimal); -1 or inf =
infinite (any negative number is, with a warning).
output (JSONL): one line per request (hit_blocks and hit_rates per capacity), then one
summary per instance, then the overall summary (also printed on stdout):
  {"summary":true,"requests":3993,"total_input_tokens":61194628,"capacity_gb":[64,-1],
   "total_hit_blocks":[10511,77740],"total_hit_tokens":[...],"hit_rates":[0.0879,0.650]}
  hit rate = hit tokens / input tokens, summed over requests."""


def _warn(message: str) -> None:
    print(f"litehit: warning: {message}", file=sys.stderr)


def _warn_if_empty(path: str, what: str) -> bool:
    """Warn when ``path`` is an empty file; True if it was."""
    try:
        empty = os.path.getsize(path) == 0
    except OSError:
        return False                    # the command reports a missing file itself
    if empty:
        _warn(f"{path} is empty (no {what})")
    return empty


def _capacities(texts: list[str], plain: str = "gb") -> list:
    """Parse capacity arguments; warn about a negative number other than -1, which reads as
    infinite (the spec's rule) but is more likely a slip than a wish."""
    capacities = [parse_capacity(text, plain) for text in texts]
    for text, capacity in zip(texts, capacities):
        number = text.strip().rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        if capacity.infinite and number.strip() and float(number) != INFINITE_CAPACITY:
            _warn(f"capacity {text!r} is negative: read as infinite (write -1 or inf to "
                  "say so)")
    return capacities


def _replay(args: argparse.Namespace) -> int:
    from litehit.factsfile import FACTS_FILE_NAME
    from litehit.offline import run_replay

    overrides = {"trace_file_path": args.trace, "output_result_path": args.output_dir,
                 "pipeline_worker_count": args.workers,
                 "commit_writes": True if args.commit_writes else None}
    config = load_config(args.config, overrides)
    _warn_if_empty(config.trace_file_path, "requests")
    show = sys.stderr.isatty() if args.progress is None else args.progress
    reporter = ProgressReporter(sys.stderr.write) if show else None
    try:
        stats = run_replay(config, progress=reporter)
    finally:
        if reporter is not None:
            reporter.finish()
    out = os.path.join(config.output_result_path, FACTS_FILE_NAME)
    print(f"litehit replay: {stats.requests} requests, {stats.block_accesses} block accesses, "
          f"{stats.instances} instances, {stats.seconds:.3f} s, "
          f"{stats.accesses_per_second:,.0f} accesses/s -> {out}")
    return EXIT_OK


def _query(args: argparse.Namespace) -> int:
    from litehit.query import run_query, summary_line

    capacities = _capacities(args.capacities)
    empty = _warn_if_empty(args.facts, "facts rows")
    to_stdout = args.out == STDOUT_PATH
    totals = run_query(args.facts, sys.stdout if to_stdout else args.out, capacities)
    overall = totals[""]
    if overall.requests == 0 and not empty:
        _warn(f"{args.facts} holds no facts rows")
    status = (f"litehit query: {overall.requests} requests, {len(totals) - 1} instances, "
              f"{len(capacities)} capacities -> {'stdout' if to_stdout else args.out}")
    if to_stdout:                       # stdout carries the JSONL (summary line last)
        print(status, file=sys.stderr)
    else:
        print(status)
        print(summary_line(overall, capacities, None), end="")
    return EXIT_OK


def _convert(args: argparse.Namespace) -> int:
    _warn_if_empty(args.input, "records")
    stats = convert_mooncake(args.input, args.output, args.instance_id, args.block_size)
    print(f"litehit convert: {stats.requests} requests, {stats.block_accesses} block "
          f"accesses, {stats.total_input_tokens} input tokens -> {args.output}")
    return EXIT_OK


def _plot(args: argparse.Namespace) -> int:
    from litehit.plot import image_format, plot_facts

    image_format(args.out)
    given = [(texts, plain) for texts, plain in ((args.capacities, "gb"),
                                                 (args.capacities_gb, "gb"),
                                                 (args.capacities_blocks, "blocks"))
             if texts is not None]
    if len(given) > 1:
        raise ValueError("give one of --capacities, --capacities-gb, --capacities-blocks")
    capacities = None
    if given:
        texts, plain = given[0]
        capacities = _capacities(texts, plain)
    _warn_if_empty(args.facts, "facts rows")
    curves = plot_facts(args.facts, args.out, capacities, args.title)
    print(f"litehit plot: {len(curves)} instances, {len(curves[0].capacities)} capacities "
          f"-> {args.out}")
    return EXIT_OK


def _advise(args) -> int:
    from .advise import advise_facts
    if args.target is not None and not 0.0 <= args.target <= 1.0:
        raise ValueError("--target is a hit rate between 0 and 1 (0.8 = 80 %)")
    capacity = _capacities([args.capacity])[0] if args.capacity else None
    if capacity is not None and capacity.infinite:
        capacity = None
    _warn_if_empty(args.facts, "facts rows")
    for advice in advise_facts(args.facts, args.target, capacity, args.instance):
        print(json.dumps(advice) if args.json else advice_text(advice))
    return EXIT_OK


def _pct(rate: float) -> str:
    return f"{100 * rate:.1f} %"


def advice_text(a: dict) -> str:
    """One instance's advice for people: sizes in binary units, rates in percent, the
    ceiling that unlimited memory gives and why a target is out of reach.
    Complexity: O(1)."""
    lines = [f"{a['instance_id']}: {a['total_input_tokens']:,} input tokens, blocks of "
             f"{a['block_size_tokens']:,} tokens ({format_bytes(a['block_bytes'])} each)",
             f"  unlimited memory: {_pct(a['max_hit_rate'])} (the ceiling: the rest are "
             "first uses, which no cache can hit)"]
    if "capacity_bytes" in a:
        size = a["capacity_bytes"]
        multiples = ", ".join(f"{m:g}x {format_bytes(size * m)}: "
                              f"{_pct(a['hit_rate_at_%gx' % m])}" for m in MULTIPLES)
        lines.append(f"  at {format_bytes(size)} ({a['capacity_blocks']:,} blocks): "
                     f"{_pct(a['hit_rate'])}; {multiples}")
    if "target_hit_rate" in a:
        want = _pct(a["target_hit_rate"])
        if a["target_reachable"]:
            lines.append(f"  for {want}: {format_bytes(a['target_capacity_bytes'])} "
                         f"({a['target_capacity_blocks']:,} blocks)")
        else:
            lines.append(f"  for {want}: not reachable with any memory (the ceiling is "
                         f"{_pct(a['max_hit_rate'])})")
    return "\n".join(lines)


def _sub(sub, name: str, summary: str, details: str = "", **kwargs) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=summary, description=summary, epilog=details,
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litehit", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Exact LRU prefix hit curves from KV-cache block traces: replay a trace\n"
                    "once, then ask for the hit rate at any cache capacity.",
        epilog="Typical use: convert (Mooncake) -> replay -> query / plot.\n"
               "`litehit COMMAND --help` explains the files each command reads and writes.")
    parser.add_argument("--version", action="version", version=f"litehit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    replay = _sub(sub, "replay", "replay a trace into a facts file (litehit_facts.csv)",
                  f"{CONFIG_HELP}\n\n{TRACE_HELP}\n\n{FACTS_HELP}", aliases=["run"])
    replay.add_argument("config", help="replay config (JSON), e.g. conf/litehit-mooncake.json")
    replay.add_argument("--workers", type=int, help="override pipeline_worker_count")
    replay.add_argument("--trace", help="override trace_file_path (relative to the current "
                                        "directory)")
    replay.add_argument("--output-dir", help="override output_result_path (relative to the "
                                             "current directory)")
    replay.add_argument("--commit-writes", action="store_true",
                        help="commit write events' keys to the LRU order (no rows)")
    replay.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress on stderr (default: when stderr is a terminal)")
    replay.set_defaults(func=_replay)

    query = _sub(sub, "query", "hit rates of a facts file at the capacities you give",
                 f"{QUERY_HELP}\n\n{FACTS_HELP}")
    query.add_argument("facts", help="facts file (litehit_facts.csv)")
    query.add_argument("out", help="output JSONL file, or - for stdout")
    query.add_argument("capacities", nargs="+", metavar="CAPACITY",
                       help="64GB, 512MiB, 4096blocks; a bare number is GB; -1 or inf = "
                            "infinite")
    query.set_defaults(func=_query)

    convert = _sub(sub, "convert", "convert a Mooncake trace to a litehit trace",
                   "Mooncake (JSONL): {\"timestamp\": ms, \"input_length\": tokens, "
                   "\"hash_ids\": [one id per block]}.\nKeeps the ids of complete blocks, "
                   f"timestamps + 1 ms in ns.\n\n{TRACE_HELP}")
    convert.add_argument("format", choices=["mooncake"])
    convert.add_argument("input", help="Mooncake trace (JSONL)")
    convert.add_argument("output", help="litehit trace to write (JSONL)")
    convert.add_argument("--instance-id", required=True,
                         help="the instance_id of every event (the replay config's)")
    convert.add_argument("--block-size", type=int, default=MOONCAKE_BLOCK_SIZE_TOKENS,
                         help="tokens per hash id (default %(default)s)")
    convert.set_defaults(func=_convert)

    adv = _sub(sub, "advise", "capacity advice from a facts file: the memory for a target "
               "hit rate, and the hit rate at 0.5x / 2x / 4x of a capacity",
               "Text by default (sizes in KiB ... TiB, rates in percent). With --json, one JSON "
               "line\nper instance: total_input_tokens, block_bytes, "
               "max_hit_rate (unlimited\nmemory), with --capacity: capacity_blocks/_bytes, "
               "hit_rate and hit_rate_at_0.5x/2x/4x,\nwith --target: target_capacity_blocks "
               "and target_capacity_bytes (or target_reachable\nfalse). Rates are hit tokens "
               f"/ input tokens, as query's.\n\n{FACTS_HELP}")
    adv.add_argument("facts", help="facts file (litehit_facts.csv)")
    adv.add_argument("--target", type=float, help="hit rate to reach, 0..1 (0.8 = 80 %%)")
    adv.add_argument("--capacity", help="today's capacity: 64GB, 512MiB, 4096blocks (a bare "
                                        "number is GB)")
    adv.add_argument("--instance", help="only this instance_id")
    adv.add_argument("--json", action="store_true",
                     help="one JSON line per instance (exact values) instead of text")
    adv.set_defaults(func=_advise)

    plot = _sub(sub, "plot", "draw hit rate against capacity from a facts file",
                "Without capacities: 48 points up to the deepest capacity any request "
                "needed,\nin keys for a server's facts, else in bytes (KiB ... TiB). "
                f"Capacities: as for query.\n\n{FACTS_HELP}")
    plot.add_argument("facts", help="facts file (litehit_facts.csv)")
    plot.add_argument("--out", required=True, help="image to write: .png, .svg or .pdf")
    plot.add_argument("--capacities", nargs="+", metavar="CAPACITY",
                      help="64GB, 512MiB, 4096blocks (a bare number is GB); all bytes or "
                           "all blocks")
    plot.add_argument("--capacities-gb", nargs="+", metavar="GB",
                      help="capacities, a bare number is GB")
    plot.add_argument("--capacities-blocks", nargs="+", metavar="BLOCKS",
                      help="capacities, a bare number is blocks")
    plot.add_argument("--title", default="")
    plot.set_defaults(func=_plot)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (also raised as SystemExit)."""
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
    except (ValueError, OSError) as exc:
        reason = exc if not isinstance(exc, OSError) or not exc.filename else \
            f"{exc.filename}: {exc.strerror}"
        print(f"litehit: error: {reason}", file=sys.stderr)
        status = EXIT_FAILURE
    except KeyboardInterrupt:
        print("litehit: interrupted", file=sys.stderr)
        status = EXIT_INTERRUPTED
    sys.exit(status)
