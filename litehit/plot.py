"""Hit-rate curves from a facts CSV: cumulative token hit rate vs capacity, per instance.

Capacities are either given (GB or blocks) or chosen from the facts: a log grid of
``PLOT_GRID_POINTS`` capacities from one block of the smallest ``block_bytes`` up to the
largest capacity any request needed (the deepest ``start + run - 1`` of any curve, times its
``block_bytes``), shown in GB. The infinite-capacity rate of each instance is a dashed
horizontal line in the same colour: the curve reaches it at the deepest required capacity.

Projection and totals are the query's (``litehit.query``), so a plotted point equals the
summary ``hit_rates`` of ``litehit query`` at that capacity. Rendering uses matplotlib's Agg
canvas directly (no pyplot, no display), and the PNG is published atomically.

Complexity: two streaming passes over the facts when the grid is automatic (one otherwise),
O((segments + rows) x capacities) time, O(instances x capacities) memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from litehit.projector import BYTES_PER_GB, INFINITE_CAPACITY, HitCurveProjector
from litehit.publish import published
from litehit.query import Totals, accumulate, iter_fact_batches, project_batch

PLOT_GRID_POINTS = 48
FIGURE_SIZE_IN = (8.0, 5.0)
FIGURE_DPI = 110


@dataclass(frozen=True, slots=True)
class Curve:
    """One instance's points: capacities (x, in the plot's unit) and rates (y)."""
    instance_id: str
    capacities: list[float]
    hit_rates: list[float]
    infinite_rate: float


def required_extent(facts_path: str) -> tuple[int, int]:
    """(smallest block_bytes, largest bytes any request needed); (0, 0) without rows.

    Complexity: O(file size).
    """
    smallest_block = 0
    deepest_bytes = 0
    for batch in iter_fact_batches(facts_path):
        if not len(batch.trace_id):
            continue
        smallest = int(batch.block_bytes.min())
        smallest_block = smallest if not smallest_block else min(smallest_block, smallest)
        if len(batch.seg_start):
            seg_row = np.repeat(np.arange(len(batch.trace_id)), np.diff(batch.seg_offsets))
            depth = batch.seg_start + batch.seg_run - 1
            deepest_bytes = max(deepest_bytes, int((depth * batch.block_bytes[seg_row]).max()))
    return smallest_block, deepest_bytes


def auto_capacities_gb(smallest_block: int, deepest_bytes: int,
                       points: int = PLOT_GRID_POINTS) -> list[float]:
    """A log-spaced grid in GB from one smallest block to the deepest requirement.

    Complexity: O(points).
    """
    if smallest_block <= 0:
        return [0.0]
    top = max(deepest_bytes, smallest_block)
    grid = np.geomspace(smallest_block, top, points) if top > smallest_block else [top]
    return sorted({float(b) / BYTES_PER_GB for b in grid})


def collect_curves(facts_path: str, capacities_gb: list[float] | None = None,
                   capacities_blocks: list[int] | None = None) -> tuple[list[Curve], str]:
    """Rates per instance at the capacities (GB, or blocks); returns (curves, x unit).

    Complexity: O((segments + rows) x capacities).
    """
    if capacities_blocks is not None:
        caps = [int(c) for c in capacities_blocks if c >= 0]
        unit = "blocks"
    else:
        if capacities_gb is None:
            capacities_gb = auto_capacities_gb(*required_extent(facts_path))
        caps = [c for c in capacities_gb if c >= 0]
        unit = "GB"
    slots = caps + [INFINITE_CAPACITY]
    totals: dict[str, Totals] = {}
    for batch in iter_fact_batches(facts_path):
        if unit == "blocks":
            hits = HitCurveProjector.project_blocks_flat(batch.seg_offsets, batch.seg_start,
                                                         batch.seg_run, slots)
        else:
            hits = project_batch(batch, [HitCurveProjector.capacity_bytes_from_gb(c)
                                         for c in slots])
        accumulate(totals, batch, hits)
    curves = []
    for instance_id in sorted(totals, key=lambda s: s.encode("utf-8")):
        rates = totals[instance_id].rates()
        curves.append(Curve(instance_id, [float(c) for c in caps], rates[:-1], rates[-1]))
    return curves, unit


def render_png(curves: list[Curve], unit: str, out_path: str, title: str = "") -> None:
    """Draw the curves (log x axis) and publish the PNG atomically.

    Complexity: O(points) plus matplotlib's rendering.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGURE_SIZE_IN, dpi=FIGURE_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for curve in curves:
        points = sorted((c, r) for c, r in zip(curve.capacities, curve.hit_rates) if c > 0)
        (line,) = ax.plot([c for c, _ in points], [r for _, r in points], marker=".",
                          label=curve.instance_id)    # a log axis cannot show capacity 0
        ax.axhline(curve.infinite_rate, color=line.get_color(), linestyle="--",
                   linewidth=1, label=f"{curve.instance_id} (infinite)")
    ax.set_xscale("log")
    ax.set_xlabel(f"LRU capacity ({unit})")
    ax.set_ylabel("cumulative token hit rate")
    ax.set_ylim(0, 1)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title or "LiteHit prefix hit rate vs capacity")
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    with published(out_path, "wb") as f:
        fig.savefig(f, format="png")


def plot_facts(facts_path: str, out_path: str, capacities_gb: list[float] | None = None,
               capacities_blocks: list[int] | None = None, title: str = "") -> list[Curve]:
    """Collect the curves of a facts CSV and write them as a PNG; returns the curves.

    Complexity: see ``collect_curves``.
    """
    curves, unit = collect_curves(facts_path, capacities_gb, capacities_blocks)
    if not curves:
        raise ValueError(f"{facts_path}: no facts rows to plot")
    render_png(curves, unit, out_path, title)
    return curves
