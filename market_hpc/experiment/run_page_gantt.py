"""The Gantt chart of ``market-hpc plot``: a PNG figure and an SVG with hover texts, both
coloured by user, with job ids where they fit and a minimum drawn size
(:mod:`~market_hpc.experiment.gantt_svg` holds the decisions)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from market_hpc.experiment.gantt import Rectangles, gantt_rectangles
from market_hpc.experiment.gantt_svg import MIN_WIDTH_PX, OTHER, gantt_svg, user_colours

MAX_RECTANGLES = 20_000


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


def gantt_figures(started: pd.DataFrame, allocations: list[list[tuple[int, int]]], node_cores: np.ndarray,
           window: tuple[float, float], unit: TimeUnit, notes: list[str],
           node_range: tuple[int, int]) -> tuple[Figure, str, str]:
    """The Gantt chart as a PNG figure and as SVG text with hover texts (``gantt_svg``)."""
    rects = gantt_rectangles(started["job_id"].tolist(), started["start_time"].tolist(),
                             started["end_time"].tolist(), allocations, node_cores.tolist())
    lo, hi = window
    first_node, last_node = node_range
    shown = ((rects.end > lo) & (rects.start < hi) & (rects.y + rects.height > first_node)
             & (rects.y < last_node))
    total = int(shown.sum())
    if total > MAX_RECTANGLES:
        keep = np.flatnonzero(shown)[:MAX_RECTANGLES]
        shown = np.zeros_like(shown)
        shown[keep] = True
        notes.append(f"Gantt chart: {total:,} job pieces in the window; the first "
                     f"{MAX_RECTANGLES:,} by start are drawn (use --window or --nodes for a "
                     "smaller part; the occupancy map below counts every job)")
    held = int((started["hold_count"] > 0).sum()) if "hold_count" in started else 0
    if held and "segment" not in started:
        notes.append(f"Gantt chart: {held:,} jobs were held and resumed; each is drawn from its "
                     "first start to its end on its last allocation (the hold gaps are not shown)")
    elif held:
        notes.append(f"Gantt chart: {held:,} jobs were held and resumed; each execution segment "
                     "is drawn on its own allocation, a hold is a gap")
    part = Rectangles(rects.job[shown], rects.start[shown], rects.end[shown], rects.y[shown],
                      rects.height[shown])
    n_nodes = last_node - first_node
    nodes_text = (f"{n_nodes:,} node{'s' if n_nodes != 1 else ''}" if n_nodes == len(node_cores)
                  else f"nodes {first_node:,} to {last_node - 1:,} of {len(node_cores):,}")
    title = f"Jobs on nodes: {int(np.unique(part.job).size):,} jobs, {nodes_text}"
    figure = _gantt_png(part, started, node_cores, window, unit, (first_node, last_node), title)
    svg = gantt_svg(part, started, node_cores.tolist(), window, node_range,
                    (unit.seconds, unit.name), title)
    caption = ("Each rectangle is a job on the cores it used, coloured by user (a node's cores "
               "are stacked within its row, whole consecutive nodes merge); hover a job for its "
               f"id, user, submit, start, end, wait and nodes. Pieces are drawn at least "
               f"{MIN_WIDTH_PX:g} px wide and 2 px tall, so the smallest jobs stay visible and "
               "may overlap a neighbour by that much. On thousands of nodes the occupancy map "
               "below bins jobs; --nodes A:B / --window START:END zoom in.")
    return figure, caption, svg


def _gantt_png(rects: Rectangles, started: pd.DataFrame, node_cores: np.ndarray,
               window: tuple[float, float], unit: TimeUnit, node_range: tuple[int, int],
               title: str) -> Figure:
    lo, hi = window
    first_node, last_node = node_range
    n_nodes = last_node - first_node
    figure = Figure(figsize=(11, min(9.0, 3.2 + 0.06 * n_nodes)), layout="constrained")
    axes = figure.add_subplot()
    users = dict(zip(started["job_id"].astype(int), started.get("user", pd.Series(-1, index=started.index)).astype(int), strict=True))
    cores = rects.height * node_cores[np.clip(np.floor(rects.y).astype(int), 0, len(node_cores) - 1)]
    colours = user_colours(rects, users, cores, window)
    minimum = MIN_WIDTH_PX / 900.0 * (hi - lo)  # about 900 px of plot at 110 dpi
    left = np.maximum(rects.start, lo)
    right = np.minimum(np.maximum(np.minimum(rects.end, hi), left + minimum), hi)
    left = np.minimum(left, right - minimum) / unit.seconds
    right = right / unit.seconds
    bottom = rects.y
    top = rects.y + np.maximum(rects.height, 2.0 / (figure.get_figheight() * 110 * 0.8) * n_nodes)
    polygons = np.stack([np.column_stack([left, bottom]), np.column_stack([right, bottom]),
                         np.column_stack([right, top]), np.column_stack([left, top])], axis=1)
    faces = [colours.get(users.get(job, -1), OTHER) for job in rects.job.tolist()]
    thin = n_nodes > 64 or len(rects.job) > 2000
    axes.add_collection(PolyCollection(list(polygons), facecolors=faces,
                                       edgecolors="none" if thin else "white", linewidths=0.3))
    width_px = (right - left) * unit.seconds / (hi - lo) * 900.0
    height_px = (top - bottom) / n_nodes * figure.get_figheight() * 110 * 0.8
    labelled: set[int] = set()  # each job once, on its largest piece
    for index in np.argsort(-(width_px * height_px), kind="stable"):
        job = int(rects.job[index])
        text = str(job)
        if (len(labelled) >= 300 or job in labelled or width_px[index] < 7 * len(text) + 4
                or height_px[index] < 11):
            continue
        labelled.add(job)
        axes.text((left[index] + right[index]) / 2, (bottom[index] + top[index]) / 2, text,
                  ha="center", va="center", fontsize=7, clip_on=True)
    axes.set_xlim(lo / unit.seconds, hi / unit.seconds)
    axes.set_ylim(last_node, first_node)
    axes.set_xlabel(f"time after trace start ({unit.name})")
    axes.set_ylabel("node")
    handles = [Patch(color=colour, label=f"user {user}") for user, colour in colours.items()]
    handles.append(Patch(color=OTHER, label="other users"))
    axes.legend(handles=handles, title="colour: user", fontsize="small", loc="upper left",
                bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes.set_title(title)
    return figure
