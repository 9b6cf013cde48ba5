"""A Gantt chart a person can read: an SVG with a hover text per job, job ids where they
fit, a legend, and a minimum drawn size; the colour key; the default time window.

Decisions:
    * The default window (:func:`default_window`) starts at the run's first start and is
      as long as makes the run's median job ``DEFAULT_JOB_PX`` (5 px) wide at the plot's
      width, so that most jobs are readable boxes rather than hairlines; the whole run
      when that is longer than the run. The page prints the window, why it was chosen and
      ``N of M jobs`` drawn; ``--window all`` draws the whole run, ``--window`` any span.
      A piece narrower than a pixel is drawn ``MIN_WIDTH_PX`` wide.
    * Colour (:func:`job_colours`) means the user when the jobs drawn have two users or
      more; else the queue when they have two queues or more; else the job size (cores,
      in bins of powers of 4, a sequential palette). Users and queues: the ``MAX_KEYS``
      with the most core-seconds in the window get their own colour (legend, most
      first), the rest are grey. The legend's title says which key.
    * Every job is one ``<g>`` with an SVG ``<title>`` (browsers show it on hover): job
      id, user, submit, start, end, wait, run time and nodes.
    * A piece is drawn at least ``MIN_WIDTH_PX`` wide and ``MIN_HEIGHT_PX`` tall, so a
      10 s job in a year or a 1-core job on a 32-core node stays visible; such pieces may
      overlap a neighbour by that much (the caption says so). Every piece lies inside the
      plot area: pieces are cut at the window and the node range first, and a piece
      widened to the minimum at the right or bottom edge grows inwards.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from market_hpc.experiment.gantt import Rectangles
from market_hpc.experiment.report_style import tick_text

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#843c39",
)
SIZES = (
    "#fde725",
    "#a0da39",
    "#4ac16d",
    "#1fa187",
    "#277f8e",
    "#365c8d",
    "#46327e",
    "#440154",
)  # viridis, light (small jobs) to dark (large)
OTHER = "#b0b0b0"
MAX_KEYS = len(PALETTE)
LEFT, PLOT_WIDTH, LEGEND_WIDTH, TOP, BOTTOM = 64.0, 820.0, 200.0, 40.0, 46.0
MIN_WIDTH_PX, MIN_HEIGHT_PX = 1.0, 2.0


DEFAULT_JOB_PX = 5.0
"""How wide the run's median job is drawn in the default window."""


def default_window(starts: np.ndarray, ends: np.ndarray) -> tuple[float, float]:
    """The Gantt chart's default window: from the first start, ``PLOT_WIDTH /
    DEFAULT_JOB_PX`` median job durations (164 of them), or the whole run (first start to
    last end) when that is shorter (module docstring).

    >>> default_window(np.array([0.0, 10, 20]), np.array([180000.0, 400, np.nan]))
    (0.0, 180000.0)
    >>> default_window(np.array([0.0, 10, 20, 5000]), np.array([100.0, 110, 120, 1e6]))
    (0.0, 16400.0)
    """
    finite = np.isfinite(starts) & np.isfinite(ends)
    first, last = float(starts[finite].min()), float(ends[finite].max())
    median = float(np.median(ends[finite] - starts[finite]))
    if median <= 0:
        return first, last
    return first, min(last, first + median * PLOT_WIDTH / DEFAULT_JOB_PX)


@dataclass(frozen=True)
class JobColours:
    """The colour key of a Gantt chart.

    Attributes:
        key: What colour means (``user``, ``queue``, ``job size (cores)``), the legend's title.
        of_job: Colour of each job id.
        legend: ``(text, colour)`` entries, in legend order.
    """

    key: str
    of_job: dict[int, str]
    legend: list[tuple[str, str]]


def size_bin(cores: int) -> int:
    """Bin of a job size: 0 for 1 core, then ``(4^(k-1), 4^k]`` is bin ``k``.

    >>> [size_bin(c) for c in (1, 2, 4, 5, 16, 17, 64, 65, 100_000)]
    [0, 1, 1, 2, 2, 3, 3, 4, 7]
    """
    if cores <= 1:
        return 0
    return min(len(SIZES) - 1, math.ceil(math.log(cores, 4) - 1e-9))


def _size_text(index: int) -> str:
    if index == 0:
        return "1 core"
    low, high = 4 ** (index - 1) + 1, 4**index
    if index == len(SIZES) - 1:
        return f"{low:,}+ cores"
    return f"{low:,} cores" if low == high else f"{low:,} to {high:,} cores"


def job_colours(
    rects: Rectangles, jobs: pd.DataFrame, cores_of: Sequence[float], window: tuple[float, float]
) -> JobColours:
    """The colour of each job drawn (module docstring): by user, queue or size.

    ``jobs`` are ``jobs.csv`` rows (``job_id`` and, when known, ``user``, ``queue``,
    ``cores``), ``cores_of`` the rectangle heights in cores.

    >>> from market_hpc.experiment.gantt import gantt_rectangles
    >>> rects = gantt_rectangles([1, 2], [0.0, 0.0], [5.0, 9.0], [[(0, 1)], [(0, 3)]], [4])
    >>> frame = pd.DataFrame({"job_id": [1, 2], "user": [-1, -1], "cores": [1, 3]})
    >>> colours = job_colours(rects, frame, [1.0, 3.0], (0.0, 10.0))
    >>> colours.key, [text for text, _ in colours.legend]
    ('job size (cores)', ['1 core', '2 to 4 cores'])
    """
    drawn = set(rects.job.tolist())
    rows = jobs[jobs["job_id"].isin(drawn)].drop_duplicates("job_id")
    for column, word in (("user", "user"), ("queue", "queue")):
        if column not in rows:
            continue
        known = rows[column][pd.to_numeric(rows[column], errors="coerce").fillna(-1) >= 0]
        if known.nunique() >= 2:
            of = dict(zip(rows["job_id"].astype(int), rows[column].astype(int), strict=True))
            ranked = _ranked(rects, of, cores_of, window)
            colour_of = {value: PALETTE[index] for index, value in enumerate(ranked)}
            legend = [(f"{word} {value}", colour) for value, colour in colour_of.items()]
            if len(set(of.values()) - set(ranked)):
                legend.append((f"other {word}s", OTHER))
            return JobColours(
                word, {job: colour_of.get(value, OTHER) for job, value in of.items()}, legend
            )
    sizes = (
        dict(zip(rows["job_id"].astype(int), rows["cores"].astype(int), strict=True))
        if "cores" in rows
        else {}
    )
    bins = {job: size_bin(cores) for job, cores in sizes.items()}
    present = sorted(set(bins.values()))
    return JobColours(
        "job size (cores)",
        {job: SIZES[b] for job, b in bins.items()},
        [(_size_text(b), SIZES[b]) for b in present],
    )


def _ranked(
    rects: Rectangles, of: dict[int, int], cores_of: Sequence[float], window: tuple[float, float]
) -> list[int]:
    """The ``MAX_KEYS`` values (users, queues) with the most core-seconds in ``window``."""
    lo, hi = window
    seconds = np.clip(np.minimum(rects.end, hi) - np.maximum(rects.start, lo), 0, None)
    work: dict[int, float] = {}
    amounts = (seconds * np.asarray(cores_of)).tolist()
    for job, amount in zip(rects.job.tolist(), amounts, strict=True):
        value = of.get(job, -1)
        work[value] = work.get(value, 0.0) + amount
    known = [v for v in work if v >= 0 and work[v] > 0]
    return sorted(known, key=lambda v: (-work[v], v))[:MAX_KEYS]


def plot_boxes(
    rects: Rectangles,
    window: tuple[float, float],
    node_range: tuple[int, int],
    scale: tuple[float, float],
    origin: tuple[float, float],
    minimum: tuple[float, float],
) -> np.ndarray:
    """Pixel boxes ``(x0, y0, width, height)`` of the pieces, inside the plot area.

    ``scale`` is pixels per second and per node, ``origin`` the plot's top-left pixel,
    ``minimum`` the smallest drawn width and height (module docstring).

    >>> r = Rectangles(np.array([1]), np.array([997.0]), np.array([998.0]), np.array([1.5]),
    ...                np.array([1.0]))
    >>> plot_boxes(r, (0.0, 1000.0), (0, 2), (1.0, 10.0), (0.0, 0.0), (8.0, 2.0)).tolist()
    [[992.0, 15.0, 8.0, 5.0]]
    """
    lo, hi = window
    first, last = node_range
    right = origin[0] + (hi - lo) * scale[0]
    bottom = origin[1] + (last - first) * scale[1]
    x0 = origin[0] + (np.maximum(rects.start, lo) - lo) * scale[0]
    x1 = origin[0] + (np.minimum(rects.end, hi) - lo) * scale[0]
    y0 = origin[1] + (np.maximum(rects.y, first) - first) * scale[1]
    y1 = origin[1] + (np.minimum(rects.y + rects.height, last) - first) * scale[1]
    width = np.minimum(np.maximum(x1 - x0, minimum[0]), right - origin[0])
    height = np.minimum(np.maximum(y1 - y0, minimum[1]), bottom - origin[1])
    x0 = np.clip(x0, origin[0], right - width)
    y0 = np.clip(y0, origin[1], bottom - height)
    return np.column_stack([x0, y0, width, height])


def _text_colour(colour: str) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
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
    wait = float(job["wait_time"])  # type: ignore[arg-type]
    return (
        f"job {job['job_id']}, user {job.get('user', '?')}\n"
        f"submit {when(job['submit_time'])}, start {when(job['start_time'])}, "
        f"end {when(job['end_time'])}\nwait {wait:,.0f} s, "
        f"run {run:,.0f} s\nnodes {job.get('nodes', '')}"
    )


def ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values from ``lo`` to ``hi``, about ``count`` of them.

    >>> ticks(0.0, 332.9), ticks(6.94, 6.98)
    ([0.0, 100.0, 200.0, 300.0], [6.94, 6.95, 6.96, 6.97, 6.98])
    """
    step = (hi - lo) / count
    magnitude = 10.0 ** math.floor(math.log10(step)) if step > 0 else 1.0
    nice = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= step)
    first = math.ceil(lo / nice - 1e-9) * nice
    out = [round(first + i * nice, 10) for i in range(int((hi - first) / nice + 1e-9) + 1)]
    return [tick for tick in out if lo - 1e-9 * nice <= tick <= hi + 1e-9 * nice]


def gantt_svg(
    rects: Rectangles,
    jobs: pd.DataFrame,
    node_cores: Sequence[int],
    window: tuple[float, float],
    node_range: tuple[int, int],
    unit: tuple[float, str],
    title: str,
) -> str:
    """The SVG text of the Gantt chart (module docstring); ``rects`` are the pieces to
    draw, ``jobs`` the started jobs' rows of ``jobs.csv``, ``unit`` (seconds, name) of
    the time axis."""
    lo, hi = window
    first_node, last_node = node_range
    n_nodes = last_node - first_node
    row = min(40.0, max(6.0, 560.0 / n_nodes))
    height = TOP + n_nodes * row + BOTTOM
    width = LEFT + PLOT_WIDTH + LEGEND_WIDTH
    rows = {int(r["job_id"]): r for r in jobs.drop_duplicates("job_id").to_dict("records")}
    node_of = np.floor(rects.y).astype(int)
    cores = (
        rects.height * np.asarray(node_cores, dtype=float)[np.clip(node_of, 0, len(node_cores) - 1)]
    )
    colours = job_colours(rects, jobs, cores, window)
    boxes = plot_boxes(
        rects,
        window,
        node_range,
        (PLOT_WIDTH / (hi - lo), row),
        (LEFT, TOP),
        (MIN_WIDTH_PX, MIN_HEIGHT_PX),
    )
    out = [
        (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
            f"viewBox='0 0 {width:.0f} {height:.0f}' font-family='sans-serif' font-size='11'>"
        ),
        f"<title>{html.escape(title)}</title>",
        f"<text x='{LEFT:.0f}' y='20' font-size='14'>{html.escape(title)}</text>",
        (
            f"<rect x='{LEFT:.0f}' y='{TOP:.0f}' width='{PLOT_WIDTH:.0f}' "
            f"height='{n_nodes * row:.1f}' "
            "fill='#fafafa' stroke='#888'/>"
        ),
    ]
    pieces: dict[int, list[int]] = {}
    for index, job in enumerate(rects.job.tolist()):
        pieces.setdefault(job, []).append(index)
    for job, indexes in pieces.items():
        colour = colours.of_job.get(job, OTHER)
        parts, best = [], (-1.0, 0.0, 0.0, 0.0, 0.0)
        for i in indexes:
            x0, y0, w, h = boxes[i].tolist()
            parts.append(f"<rect x='{x0:.1f}' y='{y0:.1f}' width='{w:.1f}' height='{h:.1f}'/>")
            if w * h > best[0]:
                best = (w * h, x0, y0, w, h)
        label = str(job)
        _, x0, y0, w, h = best
        if w >= 6.5 * len(label) + 4 and h >= 11:
            parts.append(
                f"<text x='{x0 + w / 2:.1f}' y='{y0 + h / 2 + 4:.1f}' text-anchor='middle' "
                f"fill='{_text_colour(colour)}' stroke='none'>{label}</text>"
            )
        hover = html.escape(hover_text(rows[job])) if job in rows else f"job {job}"
        stroke = " stroke='#fff' stroke-width='0.4'" if len(pieces) <= 2000 else ""
        out.append(f"<g fill='{colour}'{stroke}><title>{hover}</title>" + "".join(parts) + "</g>")
    bottom = TOP + n_nodes * row
    seconds, name = unit
    for tick in ticks(lo / seconds, hi / seconds):
        x = min(max(LEFT + (tick * seconds - lo) * PLOT_WIDTH / (hi - lo), LEFT), LEFT + PLOT_WIDTH)
        out.append(
            f"<line x1='{x:.1f}' y1='{bottom:.1f}' x2='{x:.1f}' y2='{bottom + 4:.1f}' "
            "stroke='#444'/>"
            f"<text x='{x:.1f}' y='{bottom + 16:.1f}' text-anchor='middle'>{tick_text(tick)}</text>"
        )
    out.append(
        f"<text x='{LEFT + PLOT_WIDTH / 2:.0f}' y='{bottom + 36:.1f}' text-anchor='middle'>"
        f"time after trace start ({html.escape(name)})</text>"
    )
    every = max(1, math.ceil(12.0 / row))
    for node in range(first_node, last_node, every):
        y = TOP + (node - first_node + 0.5) * row + 4
        out.append(f"<text x='{LEFT - 6:.0f}' y='{y:.1f}' text-anchor='end'>{node:,}</text>")
    out.append(
        f"<text transform='translate(14 {TOP + n_nodes * row / 2:.0f}) rotate(-90)' "
        "text-anchor='middle'>node</text>"
    )
    out += _legend(colours, LEFT + PLOT_WIDTH + 14)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _legend(colours: JobColours, x: float) -> list[str]:
    lines = [
        (
            f"<text x='{x:.0f}' y='{TOP + 4:.0f}' font-weight='bold'>"
            f"colour: {html.escape(colours.key)}</text>"
        )
    ]
    for index, (text, colour) in enumerate(colours.legend):
        y = TOP + 14 + 16 * index
        lines.append(
            f"<rect x='{x:.0f}' y='{y:.0f}' width='12' height='12' fill='{colour}'/>"
            f"<text x='{x + 18:.0f}' y='{y + 10:.0f}'>{html.escape(text)}</text>"
        )
    y = TOP + 30 + 16 * len(colours.legend)
    lines.append(
        f"<text x='{x:.0f}' y='{y:.0f}' font-size='10'>hover a job for its details;</text>"
        f"<text x='{x:.0f}' y='{y + 13:.0f}' font-size='10'>pieces are drawn at least "
        f"{MIN_WIDTH_PX:g} px wide</text>"
    )
    return lines
