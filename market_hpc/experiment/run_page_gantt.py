"""The Gantt chart of ``market-hpc plot``: a PNG figure and an SVG with hover texts, both
with the colour key of :func:`~market_hpc.experiment.gantt_svg.job_colours`, job ids where
they fit and a minimum drawn size (:mod:`~market_hpc.experiment.gantt_svg` holds the
decisions), and a caption that says the window and how many of the run's jobs are drawn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from market_hpc.experiment.gantt import Rectangles, gantt_rectangles
from market_hpc.experiment.gantt_svg import (
    MIN_HEIGHT_PX,
    MIN_WIDTH_PX,
    OTHER,
    JobColours,
    gantt_svg,
    job_colours,
    plot_boxes,
)
from market_hpc.experiment.label_placement import freeze_layout
from market_hpc.experiment.report_style import tick_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_RECTANGLES = 60_000
DPI = 110.0  # run_page saves at this resolution


@dataclass(frozen=True)
class TimeUnit:
    """Seconds per unit and its name, for axis labels."""

    seconds: float
    name: str


def time_unit(span: float) -> TimeUnit:
    """Days past 10 days, hours past 3 hours, else seconds.

    >>> time_unit(30 * 86400).name, time_unit(7200).name, time_unit(4 * 3600).name
    ('days', 's', 'hours')
    """
    if span > 10 * 86400:
        return TimeUnit(86400.0, "days")
    if span > 3 * 3600:
        return TimeUnit(3600.0, "hours")
    return TimeUnit(1.0, "s")


def drawn_text(drawn: int, total: int, zero: int, window_text: str) -> str:
    """``N of M jobs`` drawn, the window, and why any job is not drawn.

    >>> text = drawn_text(9, 10, 1, "window 0 to 2 hours (the whole run)")
    >>> print(text)  # doctest: +NORMALIZE_WHITESPACE
    Gantt chart: 9 of 10 jobs drawn, window 0 to 2 hours (the whole run); 1 ran for 0 s
    (nothing to draw)
    """
    text = f"Gantt chart: {drawn:,} of {total:,} jobs drawn, {window_text}"
    if zero:
        text += f"; {zero:,} ran for 0 s (nothing to draw)"
    return text


def gantt_figures(
    started: pd.DataFrame,
    allocations: list[list[tuple[int, int]]],
    node_cores: np.ndarray,
    window: tuple[float, float],
    unit: TimeUnit,
    notes: list[str],
    node_range: tuple[int, int],
    window_text: str = "",
) -> tuple[Figure, str, str]:
    """The Gantt chart as a PNG figure and as SVG text with hover texts (``gantt_svg``), and
    its caption; ``notes`` gains the count of jobs drawn and why others are not."""
    rects = gantt_rectangles(
        started["job_id"].tolist(),
        started["start_time"].tolist(),
        started["end_time"].tolist(),
        allocations,
        node_cores.tolist(),
    )
    lo, hi = window
    first_node, last_node = node_range
    shown = (
        (rects.end > lo)
        & (rects.start < hi)
        & (rects.y + rects.height > first_node)
        & (rects.y < last_node)
    )
    total = int(shown.sum())
    cut = ""
    if total > MAX_RECTANGLES:
        keep = np.flatnonzero(shown)[:MAX_RECTANGLES]
        shown = np.zeros_like(shown)
        shown[keep] = True
        cut = (
            f"; {total:,} job pieces in the window, the first {MAX_RECTANGLES:,} by start "
            "are drawn (--window or --nodes for a smaller part; the occupancy map below "
            "counts every job)"
        )
    held = int((started["hold_count"] > 0).sum()) if "hold_count" in started else 0
    if held and "segment" not in started:
        notes.append(
            f"Gantt chart: {held:,} jobs were held and resumed; each is drawn from its "
            "first start to its end on its last allocation (the hold gaps are not shown)"
        )
    elif held:
        notes.append(
            f"Gantt chart: {held:,} jobs were held and resumed; each execution segment "
            "is drawn on its own allocation, a hold is a gap"
        )
    part = Rectangles(
        rects.job[shown], rects.start[shown], rects.end[shown], rects.y[shown], rects.height[shown]
    )
    n_jobs = int(started["job_id"].nunique())
    n_drawn = int(np.unique(part.job).size)
    lasted = (started["end_time"] > started["start_time"]).groupby(started["job_id"]).any()
    zero = int((~lasted).sum())
    window_text = window_text or f"window {lo:,.0f} to {hi:,.0f} s"
    outside = n_jobs - zero - n_drawn
    why = (
        f"; {outside:,} lie outside the window or the node range" if outside > 0 and not cut else ""
    )
    notes.append(drawn_text(n_drawn, n_jobs, zero, window_text) + why + cut)
    n_nodes = last_node - first_node
    nodes_text = (
        f"{n_nodes:,} node{'s' if n_nodes != 1 else ''}"
        if n_nodes == len(node_cores)
        else f"nodes {first_node:,} to {last_node - 1:,} of {len(node_cores):,}"
    )
    title = f"Jobs on nodes: {n_drawn:,} of {n_jobs:,} jobs, {nodes_text}"
    figure, key = _gantt_png(
        part, started, node_cores, window, unit, (first_node, last_node), title
    )
    svg = gantt_svg(
        part, started, node_cores.tolist(), window, node_range, (unit.seconds, unit.name), title
    )
    caption = (
        f"{n_drawn:,} of the run's {n_jobs:,} jobs drawn, {window_text}. Each rectangle "
        f"is a job on the cores it used, coloured by {key} (a node's cores are stacked "
        "within its row, whole consecutive nodes merge); hover a job for its id, user, "
        f"submit, start, end, wait and nodes. Pieces are drawn at least {MIN_WIDTH_PX:g} px "
        f"wide and {MIN_HEIGHT_PX:g} px tall, so the smallest jobs stay visible and may "
        "overlap a neighbour by that much. On thousands of nodes the occupancy map below "
        "bins jobs; --nodes A:B / --window START:END zoom in."
    )
    return figure, caption, svg


def _gantt_png(
    rects: Rectangles,
    started: pd.DataFrame,
    node_cores: np.ndarray,
    window: tuple[float, float],
    unit: TimeUnit,
    node_range: tuple[int, int],
    title: str,
) -> tuple[Figure, str]:
    """The PNG figure, laid out first so that pieces are sized in the axes' real pixels."""
    lo, hi = window
    first_node, last_node = node_range
    n_nodes = last_node - first_node
    figure = Figure(figsize=(11, min(9.0, 3.2 + 0.06 * n_nodes)), dpi=DPI, layout="constrained")
    axes = figure.add_subplot()
    cores = (
        rects.height * node_cores[np.clip(np.floor(rects.y).astype(int), 0, len(node_cores) - 1)]
    )
    colours = job_colours(rects, started, cores, window)
    axes.set_xlim(lo / unit.seconds, hi / unit.seconds)
    axes.set_ylim(last_node, first_node)
    axes.set_xlabel(f"time after trace start ({unit.name})")
    axes.set_ylabel("node")
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_text(value)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: tick_text(value)))
    _legend(axes, colours)
    axes.set_title(title)
    freeze_layout(figure)
    extent = axes.get_window_extent()
    px_per_second = extent.width / (hi - lo)
    px_per_node = extent.height / n_nodes
    boxes = plot_boxes(
        rects,
        window,
        node_range,
        (px_per_second, px_per_node),
        (0.0, 0.0),
        (MIN_WIDTH_PX, MIN_HEIGHT_PX),
    )
    left = (lo + boxes[:, 0] / px_per_second) / unit.seconds
    right = left + boxes[:, 2] / px_per_second / unit.seconds
    top = first_node + boxes[:, 1] / px_per_node
    bottom = top + boxes[:, 3] / px_per_node
    polygons = np.stack(
        [
            np.column_stack([left, top]),
            np.column_stack([right, top]),
            np.column_stack([right, bottom]),
            np.column_stack([left, bottom]),
        ],
        axis=1,
    )
    faces = [colours.of_job.get(job, OTHER) for job in rects.job.tolist()]
    thin = n_nodes > 64 or len(rects.job) > 2000
    axes.add_collection(
        PolyCollection(
            list(polygons), facecolors=faces, edgecolors="none" if thin else "white", linewidths=0.3
        )
    )
    labelled: set[int] = set()  # each job once, on its largest piece
    for index in np.argsort(-(boxes[:, 2] * boxes[:, 3]), kind="stable"):
        job = int(rects.job[index])
        text = str(job)
        if (
            len(labelled) >= 300
            or job in labelled
            or boxes[index, 2] < 7 * len(text) + 4
            or boxes[index, 3] < 11
        ):
            continue
        labelled.add(job)
        axes.text(
            (left[index] + right[index]) / 2,
            (bottom[index] + top[index]) / 2,
            text,
            ha="center",
            va="center",
            fontsize=7,
            clip_on=True,
        )
    return figure, colours.key


def _legend(axes: Axes, colours: JobColours) -> None:
    handles = [Patch(color=colour, label=text) for text, colour in colours.legend]
    axes.legend(
        handles=handles,
        title=f"colour: {colours.key}",
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
