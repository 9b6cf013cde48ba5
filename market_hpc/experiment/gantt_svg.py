"""A Gantt chart a person can read: an SVG with a hover text per job, job ids where they
fit, a legend, and a minimum drawn size; and the default time window that keeps most jobs
wider than a few pixels.

Decisions:
    * Colour means the user: the ``MAX_USERS`` users with the most core-seconds in the
      window get their own colour (legend, most first), every other user is grey.
    * Every job is one ``<g>`` with an SVG ``<title>`` (browsers show it on hover): job
      id, user, submit, start, end, wait, run time and nodes.
    * A piece is drawn at least ``MIN_WIDTH_PX`` wide and ``MIN_HEIGHT_PX`` tall, so a
      10 s job in a two-day window or a 1-core job on a 32-core node stays visible; such
      pieces may overlap a neighbour by that much (the caption says so).
    * The default window (:func:`default_window`) starts at the first start; its length
      is the run's span or one of a ladder of round lengths (a week down to a minute):
      among those in which most (``READABLE_SHARE``) of the jobs shown are at least
      ``READABLE_PX`` wide, the one showing the most such jobs (ties: the longer). A
      window too long squeezes short jobs into slivers, one too short shows few jobs.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from market_hpc.experiment.gantt import Rectangles

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#843c39")
OTHER = "#b0b0b0"
MAX_USERS = len(PALETTE)
LEFT, PLOT_WIDTH, LEGEND_WIDTH, TOP, BOTTOM = 64.0, 820.0, 200.0, 40.0, 46.0
MIN_WIDTH_PX, MIN_HEIGHT_PX = 3.0, 2.0
READABLE_PX, READABLE_SHARE = 5.0, 0.5
_LADDER = (7 * 86400.0, 3 * 86400.0, 86400.0, 12 * 3600.0, 6 * 3600.0, 3 * 3600.0, 3600.0,
           1800.0, 600.0, 300.0, 60.0)


def default_window(starts: np.ndarray, ends: np.ndarray,
                   width_px: float = PLOT_WIDTH) -> tuple[float, float, float]:
    """``(start, end, share)``: the Gantt window (module docstring) and the share of the
    jobs it shows that are at least ``READABLE_PX`` wide.

    >>> starts = np.array([0.0, 10, 20, 30, 40])
    >>> ends = np.array([180000.0, 400, 500, 900, 5000])
    >>> default_window(starts, ends)  # one long job would squeeze the rest into a sliver
    (0.0, 43200.0, 1.0)
    >>> default_window(np.array([0.0, 100]), np.array([7200.0, 7000]))  # all fit: the whole run
    (0.0, 7200.0, 1.0)
    """
    finite = np.isfinite(starts) & np.isfinite(ends)
    starts, ends = starts[finite], ends[finite]
    lo, last = float(starts.min()), float(ends.max())
    candidates = [last - lo] + [length for length in _LADDER if length < last - lo]
    best: tuple[bool, int, float, float] | None = None  # (most readable, readable, share, length)
    for length in candidates:
        hi = lo + length
        shown = (ends > lo) & (starts < hi)
        widths = (np.minimum(ends[shown], hi) - np.maximum(starts[shown], lo)) / length * width_px
        readable = int((widths >= READABLE_PX).sum())
        share = readable / widths.size if widths.size else 0.0
        key = (share >= READABLE_SHARE, readable if share >= READABLE_SHARE else 0, share, length)
        if best is None or key[:3] > best[:3]:  # ties keep the longer window (seen first)
            best = key
    assert best is not None
    return lo, lo + best[3], best[2]


def user_colours(rects: Rectangles, users: dict[int, int], cores_of: Sequence[float],
                 window: tuple[float, float]) -> dict[int, str]:
    """Colour of each user with the most core-seconds in ``window`` (the rest: ``OTHER``).

    ``cores_of`` is the rectangle heights in cores.
    """
    lo, hi = window
    seconds = np.clip(np.minimum(rects.end, hi) - np.maximum(rects.start, lo), 0, None)
    work: dict[int, float] = {}
    for job, amount in zip(rects.job.tolist(), (seconds * np.asarray(cores_of)).tolist(), strict=True):
        user = users.get(job, -1)
        work[user] = work.get(user, 0.0) + amount
    ranked = sorted((u for u in work if work[u] > 0), key=lambda u: (-work[u], u))[:MAX_USERS]
    return {user: PALETTE[index] for index, user in enumerate(ranked)}


def _text_colour(colour: str) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#000" if 0.299 * red + 0.587 * green + 0.114 * blue > 150 else "#fff"


def hover_text(job: dict[str, object]) -> str:
    """The hover text of a job row of ``jobs.csv``.

    >>> print(hover_text({"job_id": 7, "user": 2, "submit_time": 0.0, "start_time": 30.0,
    ...                   "end_time": 4000.0, "wait_time": 30.0, "nodes": "0:4;1:2"}))
    job 7, user 2
    submit 0 s, start 30 s, end 4,000 s (1.11 h)
    wait 30 s, run 3,970 s
    nodes 0:4;1:2
    """
    def when(value: object) -> str:
        seconds = float(value)  # type: ignore[arg-type]
        return f"{seconds:,.0f} s" + (f" ({seconds / 3600:,.2f} h)" if seconds >= 3600 else "")

    run = float(job["end_time"]) - float(job["start_time"])  # type: ignore[arg-type]
    return (f"job {job['job_id']}, user {job.get('user', '?')}\n"
            f"submit {when(job['submit_time'])}, start {when(job['start_time'])}, "
            f"end {when(job['end_time'])}\nwait {float(job['wait_time']):,.0f} s, "  # type: ignore[arg-type]
            f"run {run:,.0f} s\nnodes {job.get('nodes', '')}")


def _ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    step = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(step)) if step > 0 else 1.0
    nice = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= step)
    first = math.ceil(lo / nice) * nice
    return [first + i * nice for i in range(int((hi - first) / nice) + 1)]


def gantt_svg(rects: Rectangles, jobs: pd.DataFrame, node_cores: Sequence[int],
              window: tuple[float, float], node_range: tuple[int, int], unit: tuple[float, str],
              title: str) -> str:
    """The SVG text of the Gantt chart (module docstring); ``rects`` are the pieces to
    draw, ``jobs`` the started jobs' rows of ``jobs.csv``, ``unit`` (seconds, name) of
    the time axis."""
    lo, hi = window
    first_node, last_node = node_range
    n_nodes = last_node - first_node
    row = min(40.0, max(6.0, 560.0 / n_nodes))
    height = TOP + n_nodes * row + BOTTOM
    width = LEFT + PLOT_WIDTH + LEGEND_WIDTH
    rows = {int(r["job_id"]): r for r in jobs.to_dict("records")}
    users = {job: int(r.get("user", -1)) for job, r in rows.items()}
    node_of = np.floor(rects.y).astype(int)
    cores = rects.height * np.asarray(node_cores, dtype=float)[np.clip(node_of, 0, len(node_cores) - 1)]
    colours = user_colours(rects, users, cores, window)
    scale = PLOT_WIDTH / (hi - lo)
    out = [(f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
           f"viewBox='0 0 {width:.0f} {height:.0f}' font-family='sans-serif' font-size='11'>"),
           f"<title>{html.escape(title)}</title>",
           f"<text x='{LEFT:.0f}' y='20' font-size='14'>{html.escape(title)}</text>",
           (f"<rect x='{LEFT:.0f}' y='{TOP:.0f}' width='{PLOT_WIDTH:.0f}' height='{n_nodes * row:.1f}' "
           "fill='#fafafa' stroke='#888'/>")]
    pieces: dict[int, list[int]] = {}
    for index, job in enumerate(rects.job.tolist()):
        pieces.setdefault(job, []).append(index)
    for job, indexes in pieces.items():
        colour = colours.get(users.get(job, -1), OTHER)
        parts, best = [], (-1.0, 0.0, 0.0, 0.0, 0.0)
        for i in indexes:
            x0 = LEFT + (max(rects.start[i], lo) - lo) * scale
            x1 = LEFT + (min(rects.end[i], hi) - lo) * scale
            w = max(x1 - x0, MIN_WIDTH_PX)
            x0 = min(x0, LEFT + PLOT_WIDTH - w)
            y0 = TOP + (rects.y[i] - first_node) * row
            h = max(rects.height[i] * row, MIN_HEIGHT_PX)
            parts.append(f"<rect x='{x0:.1f}' y='{y0:.1f}' width='{w:.1f}' height='{h:.1f}'/>")
            if w * h > best[0]:
                best = (w * h, x0, y0, w, h)
        label = str(job)
        _, x0, y0, w, h = best
        if w >= 6.5 * len(label) + 4 and h >= 11:
            parts.append(f"<text x='{x0 + w / 2:.1f}' y='{y0 + h / 2 + 4:.1f}' text-anchor='middle' "
                         f"fill='{_text_colour(colour)}' stroke='none'>{label}</text>")
        hover = html.escape(hover_text(rows[job])) if job in rows else f"job {job}"
        out.append(f"<g fill='{colour}' stroke='#fff' stroke-width='0.4'><title>{hover}</title>"
                   + "".join(parts) + "</g>")
    bottom = TOP + n_nodes * row
    seconds, name = unit
    for tick in _ticks(lo / seconds, hi / seconds):
        x = LEFT + (tick * seconds - lo) * scale
        out.append(f"<line x1='{x:.1f}' y1='{bottom:.1f}' x2='{x:.1f}' y2='{bottom + 4:.1f}' stroke='#444'/>"
                   f"<text x='{x:.1f}' y='{bottom + 16:.1f}' text-anchor='middle'>{tick:,.6g}</text>")
    out.append(f"<text x='{LEFT + PLOT_WIDTH / 2:.0f}' y='{bottom + 36:.1f}' text-anchor='middle'>"
               f"time after trace start ({html.escape(name)})</text>")
    every = max(1, math.ceil(12.0 / row))
    for node in range(first_node, last_node, every):
        y = TOP + (node - first_node + 0.5) * row + 4
        out.append(f"<text x='{LEFT - 6:.0f}' y='{y:.1f}' text-anchor='end'>{node}</text>")
    out.append(f"<text transform='translate(14 {TOP + n_nodes * row / 2:.0f}) rotate(-90)' "
               "text-anchor='middle'>node</text>")
    out += _legend(colours, LEFT + PLOT_WIDTH + 14)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _legend(colours: dict[int, str], x: float) -> list[str]:
    lines = [f"<text x='{x:.0f}' y='{TOP + 4:.0f}' font-weight='bold'>colour: user</text>"]
    entries = [(f"user {user}", colour) for user, colour in colours.items()] + [("other users", OTHER)]
    for index, (text, colour) in enumerate(entries):
        y = TOP + 14 + 16 * index
        lines.append(f"<rect x='{x:.0f}' y='{y:.0f}' width='12' height='12' fill='{colour}'/>"
                     f"<text x='{x + 18:.0f}' y='{y + 10:.0f}'>{html.escape(text)}</text>")
    y = TOP + 30 + 16 * len(entries)
    lines.append(f"<text x='{x:.0f}' y='{y:.0f}' font-size='10'>hover a job for its details;</text>"
                 f"<text x='{x:.0f}' y='{y + 13:.0f}' font-size='10'>pieces are drawn at least "
                 f"{MIN_WIDTH_PX:g} px wide</text>")
    return lines
