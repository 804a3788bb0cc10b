"""``litehit``: the offline tools' command line (the only module that prints or exits).

    litehit replay CONFIG.json [--workers N] [--trace PATH] [--output-dir DIR]
                               [--commit-writes] [--progress | --no-progress]
    litehit query FACTS.csv OUT.jsonl CAPACITY_GB [CAPACITY_GB ...]
    litehit convert mooncake IN.jsonl OUT.jsonl --instance-id NAME [--block-size 512]
    litehit plot FACTS.csv --out curve.png [--capacities-gb GB ...]
                                           [--capacities-blocks N ...] [--title TEXT]

``run`` is an alias of ``replay``. Exit status: 0 on success, 1 on any failure (the reason on
stderr, ``litehit: error: ...``; nothing published), 2 on a usage error.
"""
from __future__ import annotations

import argparse
import sys

from litehit.config import load_config
from litehit.convert import MOONCAKE_BLOCK_SIZE_TOKENS, convert_mooncake
from litehit.progress import ProgressReporter

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130


def _replay(args: argparse.Namespace) -> int:
    from litehit.offline import FACTS_FILE_NAME, run_replay

    overrides = {"trace_file_path": args.trace, "output_result_path": args.output_dir,
                 "pipeline_worker_count": args.workers,
                 "commit_writes": True if args.commit_writes else None}
    config = load_config(args.config, overrides)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    reporter = ProgressReporter(sys.stderr.write) if show else None
    try:
        stats = run_replay(config, progress=reporter)
    finally:
        if reporter is not None:
            reporter.finish()
    out = f"{config.output_result_path.rstrip('/')}/{FACTS_FILE_NAME}"
    print(f"litehit replay: {stats.requests} requests, {stats.block_accesses} block accesses, "
          f"{stats.instances} instances, {stats.seconds:.3f} s, "
          f"{stats.accesses_per_second:,.0f} accesses/s -> {out}")
    return EXIT_OK


def _query(args: argparse.Namespace) -> int:
    from litehit.query import parse_capacity_gb, run_query

    capacities = [parse_capacity_gb(text) for text in args.capacities_gb]
    totals = run_query(args.facts, args.out, capacities)
    overall = totals[""]
    print(f"litehit query: {overall.requests} requests, {len(totals) - 1} instances, "
          f"{len(capacities)} capacities -> {args.out}")
    return EXIT_OK


def _convert(args: argparse.Namespace) -> int:
    stats = convert_mooncake(args.input, args.output, args.instance_id, args.block_size)
    print(f"litehit convert: {stats.requests} requests, {stats.block_accesses} block "
          f"accesses, {stats.total_input_tokens} input tokens -> {args.output}")
    return EXIT_OK


def _plot(args: argparse.Namespace) -> int:
    from litehit.plot import plot_facts

    if args.capacities_gb is not None and args.capacities_blocks is not None:
        raise ValueError("give --capacities-gb or --capacities-blocks, not both")
    curves = plot_facts(args.facts, args.out, args.capacities_gb, args.capacities_blocks,
                        args.title)
    print(f"litehit plot: {len(curves)} instances, {len(curves[0].capacities)} capacities "
          f"-> {args.out}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litehit", description="Exact LRU prefix hit curves from KV-cache block traces.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    replay = sub.add_parser("replay", aliases=["run"], help="replay a trace to a facts CSV")
    replay.add_argument("config", help="config JSON (spec section 9)")
    replay.add_argument("--workers", type=int, help="override pipeline_worker_count")
    replay.add_argument("--trace", help="override trace_file_path")
    replay.add_argument("--output-dir", help="override output_result_path")
    replay.add_argument("--commit-writes", action="store_true",
                        help="commit write events' keys to the LRU order (no rows)")
    replay.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress on stderr (default: when stderr is a terminal)")
    replay.set_defaults(func=_replay)

    query = sub.add_parser("query", help="project a facts CSV onto capacities in GB")
    query.add_argument("facts", help="litehit_facts.csv")
    query.add_argument("out", help="output JSONL")
    query.add_argument("capacities_gb", nargs="+", metavar="CAPACITY_GB",
                       help="binary GB; negative = infinite")
    query.set_defaults(func=_query)

    convert = sub.add_parser("convert", help="convert a public trace to the standard trace")
    convert.add_argument("format", choices=["mooncake"])
    convert.add_argument("input")
    convert.add_argument("output")
    convert.add_argument("--instance-id", required=True)
    convert.add_argument("--block-size", type=int, default=MOONCAKE_BLOCK_SIZE_TOKENS,
                         help="tokens per hash id (default %(default)s)")
    convert.set_defaults(func=_convert)

    plot = sub.add_parser("plot", help="plot hit rate vs capacity from a facts CSV")
    plot.add_argument("facts")
    plot.add_argument("--out", required=True, help="PNG to write")
    plot.add_argument("--capacities-gb", type=float, nargs="+")
    plot.add_argument("--capacities-blocks", type=int, nargs="+")
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
