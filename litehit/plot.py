"""Hit-rate curves from a facts file: cumulative token hit rate vs capacity, per instance.

Capacities are either given (``litehit.projector.Capacity``: bytes, GB or blocks, all of one
kind) or chosen from the facts. Chosen, they are a log grid of ``PLOT_GRID_POINTS``
capacities up to the largest capacity any request needed (the deepest ``start + run - 1`` of
any curve): in keys, from 1, for a server's facts (``LITEHIT SAVE``: every row has
``block_size_tokens`` 1, a block is a key), otherwise in bytes from one block of the smallest
``block_bytes``. A byte axis is shown in a binary unit (KiB ... PiB) that fits the grid
(``axis_unit``). The infinite-capacity rate of each instance is a dashed horizontal line in
the same colour: the curve reaches it at the deepest required capacity.

Projection and totals are the query's (``HitCurveProjector.project_capacities_flat``,
``litehit.query.Totals``), so a plotted point equals the summary ``hit_rates`` of ``litehit
query`` at that capacity. Rendering uses matplotlib's Agg canvas directly (no pyplot, no
display); the image type follows the output's extension (``IMAGE_FORMATS``) and the file is
published atomically.

Complexity: two streaming passes over the facts when the grid is automatic (one otherwise),
O((segments + rows) x capacities) time, O(instances x capacities) memory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from litehit.factsfile import iter_facts_rows
from litehit.projector import BINARY_BYTE_UNITS as BYTE_UNITS, BLOCKS, BYTES, \
    INFINITE_CAPACITY, Capacity
from litehit.publish import published
from litehit.query import Totals, accumulate, project_rows

PLOT_GRID_POINTS = 48
FIGURE_SIZE_IN = (8.0, 5.0)
FIGURE_DPI = 110
IMAGE_FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
AXIS_SMALLEST_FRACTION = 1000          # the smallest point is >= 1/1000 of an axis unit
KEYS_AXIS = "keys"                      # blocks of a server's facts (one key per block)


@dataclass(frozen=True, slots=True)
class Curve:
    """One instance's points: capacities (x, in the axis unit) and rates (y)."""
    instance_id: str
    capacities: list[float]
    hit_rates: list[float]
    infinite_rate: float


@dataclass(frozen=True, slots=True)
class Extent:
    """What the facts need: the smallest block, the deepest requirement (in bytes and in
    blocks), and whether every row is a server's (one key per block)."""
    smallest_block_bytes: int = 0
    deepest_bytes: int = 0
    deepest_blocks: int = 0
    one_key_blocks: bool = False


def image_format(out_path: str) -> str:
    """The matplotlib format of an output path, from its extension; ValueError otherwise."""
    ext = os.path.splitext(out_path)[1].lower()
    if ext not in IMAGE_FORMATS:
        raise ValueError(f"{out_path}: unknown image type {ext or '(no extension)'!r}; "
                         f"use {', '.join(IMAGE_FORMATS)}")
    return IMAGE_FORMATS[ext]


def facts_extent(facts_path: str) -> Extent:
    """The Extent of a facts file; all zero without rows.

    Complexity: O(file size).
    """
    smallest = deepest_bytes = deepest_blocks = rows = 0
    one_key = True
    for batch in iter_facts_rows(facts_path):
        rows += len(batch)
        low = int(batch.block_bytes.min())
        smallest = low if not smallest else min(smallest, low)
        one_key = one_key and bool(np.all(batch.block_size_tokens == 1))
        if len(batch.seg_start):
            seg_row = np.repeat(np.arange(len(batch)), np.diff(batch.seg_offsets))
            depth = batch.seg_start + batch.seg_run - 1
            deepest_blocks = max(deepest_blocks, int(depth.max()))
            deepest_bytes = max(deepest_bytes, int((depth * batch.block_bytes[seg_row]).max()))
    return Extent(smallest, deepest_bytes, deepest_blocks, one_key and rows > 0)


def log_grid(low: int, high: int, points: int = PLOT_GRID_POINTS) -> list[int]:
    """Distinct whole numbers spaced on a log scale from ``low`` to ``high`` (>= 1).

    Complexity: O(points).
    """
    low = max(low, 1)
    high = max(high, low)
    return sorted({int(round(x)) for x in np.geomspace(low, high, points)})


def auto_capacities(extent: Extent, points: int = PLOT_GRID_POINTS) -> list[Capacity]:
    """The automatic grid (see the module docstring).  Complexity: O(points)."""
    if extent.smallest_block_bytes <= 0:
        return [Capacity(BYTES, 0, 0.0, "0")]
    if extent.one_key_blocks:
        return [Capacity(BLOCKS, c, None, f"{c}keys")
                for c in log_grid(1, extent.deepest_blocks, points)]
    return [Capacity(BYTES, c, c / BYTE_UNITS[3][1], f"{c}b")
            for c in log_grid(extent.smallest_block_bytes, extent.deepest_bytes, points)]


def axis_unit(capacities: list[Capacity], one_key_blocks: bool) -> tuple[str, int]:
    """(x axis label unit, value of one unit): keys / blocks, or the largest binary byte
    unit that the largest capacity reaches and in which the smallest is at least
    1 / AXIS_SMALLEST_FRACTION of a unit.  Complexity: O(K)."""
    if capacities and capacities[0].unit == BLOCKS:
        return (KEYS_AXIS if one_key_blocks else "blocks"), 1
    positive = [c.value for c in capacities if c.value > 0]
    if not positive:
        return BYTE_UNITS[3]
    low, high = min(positive), max(positive)
    for unit in reversed(BYTE_UNITS):
        if high >= unit[1] and low * AXIS_SMALLEST_FRACTION >= unit[1]:
            return unit
    return BYTE_UNITS[0]


def collect_curves(facts_path: str, capacities: list[Capacity] | None = None
                   ) -> tuple[list[Curve], str]:
    """Rates per instance at the capacities (automatic when None); returns (curves, axis
    unit). Given capacities must be all bytes or all blocks; infinite ones are dropped (the
    dashed line shows infinity).

    Complexity: O((segments + rows) x capacities).
    """
    if capacities is None:
        capacities = auto_capacities(facts_extent(facts_path))
    if len({c.unit for c in capacities}) > 1:
        raise ValueError("plot capacities must all be bytes (GB, MiB, ...) or all blocks")
    caps = [c for c in capacities if not c.infinite]
    slots = caps + [Capacity(BYTES, INFINITE_CAPACITY, -1.0, "-1")]
    totals: dict[str, Totals] = {}
    one_key = True
    for batch in iter_facts_rows(facts_path):
        one_key = one_key and bool(np.all(batch.block_size_tokens == 1))
        accumulate(totals, batch, project_rows(batch, slots))
    unit, per_unit = axis_unit(caps, one_key and bool(totals))
    curves = []
    for instance_id in sorted(totals, key=lambda s: s.encode("utf-8")):
        rates = totals[instance_id].rates()
        curves.append(Curve(instance_id, [c.value / per_unit for c in caps], rates[:-1],
                            rates[-1]))
    return curves, unit


def render(curves: list[Curve], unit: str, out_path: str, title: str = "") -> None:
    """Draw the curves (log x axis) and publish the image (type from the extension).

    Complexity: O(points) plus matplotlib's rendering.
    """
    fmt = image_format(out_path)
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
        fig.savefig(f, format=fmt)


def plot_facts(facts_path: str, out_path: str, capacities: list[Capacity] | None = None,
               title: str = "") -> list[Curve]:
    """Collect the curves of a facts file and draw them to ``out_path`` (.png, .svg or
    .pdf); returns the curves.

    Complexity: see ``collect_curves``.
    """
    image_format(out_path)                      # refuse an unknown type before any work
    curves, unit = collect_curves(facts_path, capacities)
    if not curves:
        raise ValueError(f"{facts_path}: no facts rows to plot")
    render(curves, unit, out_path, title)
    return curves
