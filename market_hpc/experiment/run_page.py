"""``market-hpc plot RUN_DIR``: one self-contained HTML page of a single run.

The page shows the run's headline numbers with units, a Gantt chart of jobs on nodes
(geometry in :mod:`market_hpc.experiment.gantt`), a binned occupancy map that stays
legible for thousands of nodes, utilisation and queue length over time, and the
distributions (CDFs) of wait and bounded slowdown. Pictures are PNGs embedded as
``data:`` URIs and also written to ``RUN_DIR/plots/`` for papers. ``window`` restricts the
Gantt chart, the occupancy map and the time series to a time span.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from market_hpc.atomic_file import Content, write_files
from market_hpc.errors import ConfigError, OutputError
from market_hpc.experiment.export_segments import read_segments
from market_hpc.experiment.gantt import core_allocations, occupancy
from market_hpc.experiment.gantt_svg import DEFAULT_JOB_PX, default_window
from market_hpc.experiment.report_html import STYLE
from market_hpc.experiment.run_folder import read_series, read_summary
from market_hpc.experiment.run_page_gantt import TimeUnit, gantt_figures, time_unit
from market_hpc.experiment.schedule_export import read_run

OCCUPANCY_ROWS, OCCUPANCY_BINS = 120, 300
BOUND_SECONDS = 10.0  # bounded slowdown threshold, as metrics.py
_SUMMARY = (  # key, label, unit (divisor applied to seconds where the unit is time)
    ("jobs_total", "jobs", ""),
    ("jobs_completed", "completed", ""),
    ("jobs_rejected", "rejected", ""),
    ("jobs_dropped", "dropped", ""),
    ("jobs_skipped", "skipped", ""),
    ("mean_wait", "mean wait", "s"),
    ("median_wait", "median wait", "s"),
    ("max_wait", "max wait", "s"),
    ("mean_bounded_slowdown", "mean bounded slowdown (10 s)", "×"),
    ("utilisation_cores", "core utilisation", "%"),
    ("makespan", "makespan", "s"),
    ("mean_queue_length", "mean queue length", "jobs"),
    ("total_profit", "total profit", ""),
    ("holds", "holds", ""),
)


PLAIN = FuncFormatter(
    lambda value, _: f"{value:,.0f}" if value >= 1 or value == 0 else f"{value:g}"
)


class Window(NamedTuple):
    """A ``--window``: each bound counts from the run's first submission, or from the
    trace's time 0 when written with ``@`` (``absolute``)."""

    start: float
    end: float
    start_absolute: bool = False
    end_absolute: bool = False

    def resolve(self, first_submit: float) -> tuple[float, float]:
        """The window in trace time (the times of ``jobs.csv``).

        >>> Window(86400.0, 172800.0).resolve(599834.0)
        (686234.0, 772634.0)
        >>> Window(604800.0, 691200.0, True, True).resolve(599834.0)
        (604800.0, 691200.0)
        """
        return (
            self.start if self.start_absolute else first_submit + self.start,
            self.end if self.end_absolute else first_submit + self.end,
        )


def parse_window(text: str | None) -> Window | None:
    """``"START:END"`` in seconds, or with a unit suffix (``s``, ``h``, ``d``), counted from
    the run's first submission; a bound written ``@TIME`` is trace time (from the trace's
    time 0, as ``jobs.csv`` records it); ``all``: the whole run.

    >>> parse_window("2d:3.5d"), parse_window(":7200"), parse_window(None)
    (Window(start=172800.0, end=302400.0, start_absolute=False, end_absolute=False), \
Window(start=-inf, end=7200.0, start_absolute=False, end_absolute=False), None)
    >>> parse_window("@7d:@8d")[:]
    (604800.0, 691200.0, True, True)
    """
    if not text:
        return None
    if text.strip().lower() == "all":
        return Window(-math.inf, math.inf)
    start, sep, end = text.partition(":")
    if not sep:
        raise ConfigError(
            f"--window expects START:END (e.g. 0:2d, 3600:7200 or @7d:@8d for trace time) "
            f"or all, got {text!r}"
        )
    (low, low_abs), (high, high_abs) = _bound(start, -math.inf), _bound(end, math.inf)
    if (low_abs == high_abs or math.isinf(low) or math.isinf(high)) and low >= high:
        raise ConfigError(f"--window {text!r}: START must be before END")
    return Window(low, high, low_abs, high_abs)


def _bound(text: str, default: float) -> tuple[float, bool]:
    word = text.strip()
    absolute = word.startswith("@")
    return _seconds(word[1:] if absolute else word, default), absolute


def parse_nodes(text: str | None) -> tuple[int, int] | None:
    """``"A:B"``: nodes A to B - 1.

    >>> parse_nodes("0:64"), parse_nodes(None)
    ((0, 64), None)
    """
    if not text:
        return None
    first, sep, last = text.partition(":")
    if not (sep and first.strip().isdigit() and last.strip().isdigit()) or int(first) >= int(last):
        raise ConfigError(f"--nodes expects FIRST:LAST with FIRST < LAST (e.g. 0:64), got {text!r}")
    return int(first), int(last)


def _seconds(text: str, default: float) -> float:
    word = text.strip().lower()
    if not word:
        return default
    scale = {"s": 1.0, "h": 3600.0, "d": 86400.0}.get(word[-1])
    try:
        return float(word[:-1]) * scale if scale else float(word)
    except ValueError:
        raise ConfigError(f"--window: {text!r} is not a time (e.g. 3600, 1.5h, 2d)") from None


def write_run_page(
    directory: str | Path,
    *,
    window: Window | tuple[float, float] | None = None,
    nodes: tuple[int, int] | None = None,
    out: str | Path | None = None,
) -> tuple[Path, list[str]]:
    """Draw the run's pictures and write the page; return its path and notes to print.

    Args:
        directory: A run folder.
        window: Time span of the Gantt chart, occupancy map and time series: a
            :class:`Window` (counted from the run's first submission, ``@`` bounds in
            trace time) or a ``(start, end)`` pair in trace time; default the whole run.
        nodes: Node range ``[first, last)`` of the Gantt chart; default every node.
        out: The page (default ``RUN_DIR/schedule.html``).
    """
    from market_hpc.domain.platform import load_platform

    run = read_run(directory)
    config = run.config["config"]
    node_cores = np.asarray(load_platform(config["platform"]).capacity[:, 0])
    jobs = run.jobs
    started = jobs[jobs["start_time"].notna()]
    allocations = core_allocations(
        started["nodes"].tolist(), started["cores"].tolist(), started["units"].tolist()
    )
    submitted = jobs.loc[jobs["status"] != "skipped", "submit_time"].to_numpy(float)
    if not len(submitted):
        raise ConfigError(f"{run.directory}: every job of jobs.csv is skipped; nothing to draw")
    first = float(submitted.min())
    ends = started["end_time"].to_numpy(float)
    last = float(ends[np.isfinite(ends)].max()) if np.isfinite(ends).any() else first + 1.0
    lo, hi = (
        (first, last)
        if window is None
        else window.resolve(first)
        if isinstance(window, Window)
        else window
    )
    if hi <= lo:
        raise ConfigError(f"--window: its start ({lo:,.0f} s) is not before its end ({hi:,.0f} s)")
    asked = (lo, hi)
    lo, hi = max(lo, first), min(hi, last)
    if hi <= lo:
        raise ConfigError(
            _empty_window(
                asked,
                run.directory / "jobs.csv",
                (first, float(jobs["submit_time"].max()), last),
            )
        )
    notes: list[str] = []
    gantt_window, whole = (lo, hi), True
    if window is None and len(started):
        gantt_window = default_window(
            started["start_time"].to_numpy(float), started["end_time"].to_numpy(float)
        )
        whole = gantt_window[1] >= last
    unit = time_unit(hi - lo)
    plots = run.directory / "plots"
    page = Path(out) if out else run.directory / "schedule.html"
    pieces = execution_pieces(run.directory, started, len(node_cores), jobs["job_id"].to_numpy())
    if pieces is not started:  # every execution segment on its own allocation
        allocations = core_allocations(
            pieces["nodes"].tolist(), pieces["cores"].tolist(), pieces["units"].tolist()
        )
    gantt_unit = time_unit(gantt_window[1] - gantt_window[0])
    gantt, caption, svg = gantt_figures(
        pieces,
        allocations,
        node_cores,
        gantt_window,
        gantt_unit,
        notes,
        nodes or (0, len(node_cores)),
        _window_text(gantt_window, gantt_unit, window is None, whole),
    )
    figures = [
        ("Gantt chart", gantt, caption),
        ("Occupancy", *_occupancy(pieces, allocations, node_cores, (lo, hi), unit)),
        (
            "Utilisation and queue",
            *_over_time(run.directory, jobs, int(node_cores.sum()), (lo, hi), unit),
        ),
        ("Wait and slowdown", *_cdfs(started)),
    ]
    parts = [_head(config, run.directory, lo, hi, unit), _summary_table(run.directory)]
    parts += [f"<p class='note'>{html.escape(note)}</p>" for note in notes]
    pictures: dict[str | os.PathLike[str], Content] = {}
    for (title, figure, caption), slug in zip(
        figures, ("gantt", "occupancy", "timeseries", "cdf"), strict=True
    ):
        png = plots / f"{page.stem}-{slug}.png"
        pictures[png] = data = _png(figure)
        if slug == "gantt":  # inline, so hovering a job shows its details
            parts.append(
                f"<h2>{html.escape(title)}</h2>{svg[svg.index('<svg') :]}"
                f"<p>{html.escape(caption)} Also {page.with_suffix('.svg').name} and "
                f"plots/{png.name}.</p>"
            )
            continue
        encoded = base64.b64encode(data).decode()
        parts.append(
            f"<h2>{html.escape(title)}</h2><img alt='{slug}' "
            f"src='data:image/png;base64,{encoded}'><p>{html.escape(caption)}</p>"
        )
    # drawn before anything is written; the page, its SVG and PNGs written all or none
    try:
        plots.mkdir(exist_ok=True)
    except OSError as exc:
        raise OutputError(str(plots), exc.strerror or str(exc)) from None
    write_files(
        {page.with_suffix(".svg"): svg, **pictures, page: "".join(parts) + "</body></html>\n"}
    )
    return page, notes


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return buffer.getvalue()


def execution_pieces(
    directory: Path,
    started: pd.DataFrame,
    n_nodes: int | None = None,
    job_ids: np.ndarray | None = None,
) -> pd.DataFrame:
    """What the Gantt chart and occupancy map draw: one row per execution segment
    (``segments.csv``: its start, end and allocation; the job's other columns from
    ``jobs.csv``), so a held job leaves a gap while it waits; ``started`` itself when
    the run folder has no segments file (written before segments were recorded).

    ``n_nodes`` and ``job_ids`` (the platform's nodes, ``jobs.csv``'s ids), when given,
    bound what the segments file may name
    (:func:`~market_hpc.experiment.export_segments.read_segments`).
    """
    segments = read_segments(directory, n_nodes, job_ids)
    if segments is None:
        return started
    segments = segments[["job_id", "segment", "start", "end", "nodes", "cores", "units"]]
    segments = segments.rename(columns={"start": "start_time", "end": "end_time"})
    rest = started.drop(
        columns=[c for c in ("start_time", "end_time", "nodes", "cores", "units") if c in started]
    )
    return segments.merge(rest, on="job_id", how="inner", validate="many_to_one").reset_index(
        drop=True
    )


def _window_text(
    window: tuple[float, float], unit: TimeUnit, default: bool, whole: bool = True
) -> str:
    """The Gantt chart's window as the caption says it (``whole``: the default window is
    the whole run).

    >>> _window_text((0.0, 7200.0), TimeUnit(3600.0, "hours"), True)
    'window 0.00 to 2.00 hours (the whole run; --window START:END zooms in)'
    >>> _window_text((0.0, 7200.0), TimeUnit(3600.0, "hours"), True, whole=False)[:60]
    "window 0.00 to 2.00 hours (the run's median job 5 px wide; -"
    """
    lo, hi = window
    if not default:
        how = "--window"
    elif whole:
        how = "the whole run; --window START:END zooms in"
    else:
        how = (
            f"the run's median job {DEFAULT_JOB_PX:g} px wide; --window all: the whole run, "
            "--window START:END: any span"
        )
    return f"window {lo / unit.seconds:,.2f} to {hi / unit.seconds:,.2f} {unit.name} ({how})"


def _empty_window(
    window: tuple[float, float], jobs_file: Path, times: tuple[float, float, float]
) -> str:
    """The error for a window that holds no job: the run's first and last submit times
    and its last end, and what a window counts from."""

    def when(seconds: float) -> str:
        if not math.isfinite(seconds):
            return "the start" if seconds < 0 else "the end"
        return f"{seconds:,.0f} s ({seconds / 86400:,.2f} d)"

    first, last_submit, last_end = times
    return (
        f"--window {when(window[0])} to {when(window[1])} (trace time) selects no job of "
        f"{jobs_file}: "
        f"its jobs were submitted from {when(first)} to {when(last_submit)} and ran until "
        f"{when(last_end)} (trace time); a window counts from the first submission, "
        "@TIME bounds from the trace's time 0"
    )


def _head(config: dict[str, object], directory: Path, lo: float, hi: float, unit: TimeUnit) -> str:
    policy = config.get("policy", {})
    scheduler = policy.get("scheduler") if isinstance(policy, dict) else None
    title = f"Run {config.get('name', directory.name)}: {scheduler} on {config.get('platform')}"
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>"
        f"{html.escape(title)}</title><style>{STYLE}</style></head><body><h1>"
        f"{html.escape(title)}</h1><p>Results folder <code>{html.escape(str(directory))}</code>"
        f"; seed {html.escape(str(config.get('seed')))}; time window {lo / unit.seconds:,.2f} to "
        f"{hi / unit.seconds:,.2f} {unit.name} after the trace start (market-hpc plot "
        "--window START:END selects another).</p>"
    )


def _summary_table(directory: Path) -> str:
    summary = read_summary(directory)
    if summary is None:
        return "<p class='note'>no summary.json in the run folder</p>"
    rows = []
    for key, label, unit in _SUMMARY:
        value = summary.get(key)
        if not isinstance(value, int | float):
            continue
        if unit == "%":
            text = f"{100 * value:.1f} %"
        elif unit == "s":
            text = f"{value:,.0f} s" + (f" ({value / 3600:,.1f} h)" if value >= 3600 else "")
        else:
            text = f"{value:,.2f} {unit}".strip() if isinstance(value, float) else f"{value:,}"
        rows.append(f"<tr><td>{html.escape(label)}</td><td>{html.escape(text)}</td></tr>")
    return "<h2>Summary</h2><table>" + "".join(rows) + "</table>"


def _occupancy(
    started: pd.DataFrame,
    allocations: list[list[tuple[int, int]]],
    node_cores: np.ndarray,
    window: tuple[float, float],
    unit: TimeUnit,
) -> tuple[Figure, str]:
    grid, per_group = occupancy(
        started["start_time"].to_numpy(float),
        started["end_time"].to_numpy(float),
        allocations,
        node_cores,
        window,
        OCCUPANCY_ROWS,
        OCCUPANCY_BINS,
    )
    figure = Figure(figsize=(11, 4.2), layout="constrained")
    axes = figure.add_subplot()
    lo, hi = window
    image = axes.imshow(
        grid,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        vmin=0,
        vmax=1,
        extent=(lo / unit.seconds, hi / unit.seconds, len(node_cores), 0),
    )
    figure.colorbar(image, ax=axes, label="share of cores busy")
    axes.set_xlabel(f"time after trace start ({unit.name})")
    axes.set_ylabel("node")
    group = "one node" if per_group == 1 else f"{per_group} nodes"
    axes.set_title(f"Occupancy: rows of {group}, {OCCUPANCY_BINS} time bins")
    caption = (
        f"Share of the cores of each row ({group}) busy in each time bin: legible for "
        "any number of nodes."
    )
    return figure, caption


def _over_time(
    directory: Path,
    jobs: pd.DataFrame,
    total_cores: int,
    window: tuple[float, float],
    unit: TimeUnit,
) -> tuple[Figure, str]:
    path = directory / "timeseries.csv"
    if path.is_file():
        series = read_series(path)
        times, used, queue = (
            series[c].to_numpy(float) for c in ("time", "used_cores", "queue_length")
        )
        source = "timeseries.csv"
    else:
        times, used, queue = _series_from_jobs(jobs)
        source = "jobs.csv (no timeseries.csv in the run)"
    lo, hi = window
    figure = Figure(figsize=(11, 4.6), layout="constrained")
    top, bottom = figure.subplots(2, 1, sharex=True)
    top.step(times / unit.seconds, 100 * used / total_cores, where="post", color="#1f77b4")
    top.set_ylabel("cores busy (%)")
    top.set_ylim(0, 105)
    bottom.step(times / unit.seconds, queue, where="post", color="#d62728")
    bottom.set_ylabel("jobs waiting")
    bottom.set_xlabel(f"time after trace start ({unit.name})")
    bottom.set_xlim(lo / unit.seconds, hi / unit.seconds)
    top.set_title("Utilisation and queue length")
    return figure, f"Step functions from {source}; {total_cores:,} cores in all."


def _series_from_jobs(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Busy cores and waiting jobs at every submit, start and end (no holds)."""
    started = jobs[jobs["start_time"].notna()]
    waiting = jobs[jobs["status"].isin(["finished", "dropped", "queued", "running", "held"])]
    times = np.concatenate(
        [
            started["start_time"],
            started["end_time"].fillna(np.inf),
            waiting["submit_time"],
            started["start_time"],
        ]
    )
    cores = np.concatenate(
        [started["cores"], -started["cores"], np.zeros(len(waiting)), np.zeros(len(started))]
    )
    queue = np.concatenate(
        [np.zeros(2 * len(started)), np.ones(len(waiting)), -np.ones(len(started))]
    )
    order = np.argsort(times, kind="stable")
    finite = np.isfinite(times[order])
    return (times[order][finite], np.cumsum(cores[order])[finite], np.cumsum(queue[order])[finite])


def _cdfs(started: pd.DataFrame) -> tuple[Figure, str]:
    finished = started[started["status"] == "finished"]
    wait = np.sort(finished["wait_time"].to_numpy(float))
    run = finished["run_time"].to_numpy(float)
    bounded = np.sort(
        np.maximum(
            1.0, (finished["wait_time"].to_numpy(float) + run) / np.maximum(run, BOUND_SECONDS)
        )
    )
    figure = Figure(figsize=(11, 3.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    share = np.arange(1, len(wait) + 1) / max(len(wait), 1)
    left.step(wait, share, where="post", color="#1f77b4")
    left.set_xscale("symlog", linthresh=1.0)
    left.set_xlabel("wait (s, log scale above 1 s)")
    left.set_ylabel("share of finished jobs")
    left.set_title("Wait time CDF")
    right.step(bounded, share, where="post", color="#ff7f0e")
    right.set_xscale("log")
    right.set_xlabel("bounded slowdown (10 s), log scale")
    right.set_title("Bounded slowdown CDF")
    for axes in (left, right):
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
        axes.xaxis.set_major_formatter(PLAIN)
    zero = float((wait == 0).mean()) if len(wait) else 0.0
    caption = (
        f"{len(wait):,} finished jobs; {100 * zero:.1f} % started without waiting. "
        "Bounded slowdown = max(1, (wait + run) / max(run, 10 s))."
    )
    return figure, caption
