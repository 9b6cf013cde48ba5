"""Sweep reports: tidy tables, PNG plots and one self-contained HTML file in ``DIR/report/``.

For each metric (``--metric``, else the sweep file's ``[report] metrics``, else
``total_profit`` when any run earned value, else ``mean_bounded_slowdown``):

* ``<metric>_vs_<param>.png/.csv`` for each numeric axis: one line per combination of
  the other axes (the policies), the mean over seeds with a min/max band;
* ``<metric>_by_policy.png/.csv``: bars per policy (the categorical axes, else the
  runs' ``policy`` names), grouped by the numeric axes, with min/max whiskers;
* ``<metric>_heatmap_<a>_<b>.png/.csv`` for each pair of axes, one panel per
  combination of the other axes.

An axis is a grid parameter or a whole ``[[zip]]`` group (``report_data``). No plot
averages silently: what a plot does not show is either a line, a bar group or a panel,
or, past ``MAX_LINES``/``MAX_GROUPS``/``MAX_PANELS`` combinations, averaged over and
named in the plot's title and in the CSV's ``averaged_over`` column. Labels and units
come from ``metrics_table``. ``points.csv`` holds every metric per point (mean, min, max,
std, n over seeds); ``<metric>_paired_differences.png`` is a forest plot of the paired
differences between policies (``report_forest``); every figure is also saved as SVG.
``report.html`` opens with a leaderboard's decision (``report_decision``), a summary, the
forest plots, the plots, and the tables collapsed, in one file. Figures are
drawn on matplotlib's Agg canvas without pyplot, so no global backend state is touched.
"""

from __future__ import annotations

import itertools
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from market_hpc.errors import UnknownNameError
from market_hpc.experiment.metrics_table import metric
from market_hpc.experiment.queues_report import queue_tables
from market_hpc.experiment.report_data import (
    TASK_GRAPH_TIME,
    Axis,
    SweepData,
    is_numeric,
    load_results,
)
from market_hpc.experiment.report_forest import forest_figure, summary_html
from market_hpc.experiment.report_html import Figureset, plain, write_html
from market_hpc.experiment.report_style import save_figure as _save
from market_hpc.experiment.report_style import series_look
from market_hpc.experiment.stats import paired_tables
from market_hpc.experiment.sweep_spec import FIXED_COLUMNS

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_LINES = 12
MAX_GROUPS = 8
MAX_PANELS = 6
MAX_HEATMAPS = 6
STATS = ["mean", "min", "max", "std", "count"]
WRAP = 18  # characters per tick-label line
MAX_WIDTH = 12.0  # inches (1,440 px at 120 dpi): wider figures shrink their labels in a page


def metric_columns(frame: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """Numeric columns that are run metrics (not parameters, seed or bookkeeping)."""
    skip = {*params, *FIXED_COLUMNS}
    return [c for c in frame.columns if c not in skip and is_numeric(frame[c])]


def default_metrics(frame: pd.DataFrame, preferred: Sequence[str]) -> list[str]:
    """The sweep file's metrics, else profit when any run earned value, else slowdown."""
    if preferred:
        return list(preferred)
    if "total_profit" in frame and frame["total_profit"].abs().sum() > 0:
        return ["total_profit"]
    return ["mean_bounded_slowdown"]


def write_report(
    directory: str | Path, metrics: Sequence[str] | None = None, progress: bool = True
) -> list[Path]:
    """Write tables, plots and ``report.html`` of a sweep directory into ``directory/report/``.

    Args:
        directory: A sweep results directory.
        metrics: Metrics to plot (default: see the module docstring).
        progress: Print what the loader did and show a progress bar on stderr (a
            terminal only).

    Returns:
        The files written.

    Raises:
        SweepError: not a sweep directory, or no run finished ok.
        UnknownNameError: a metric that is not a numeric results column.
    """
    data = load_results(directory)
    frame = data.frame
    numeric = metric_columns(frame, [*data.params, *(a.key for a in data.axes)])
    chosen = list(metrics) if metrics else default_metrics(frame, data.metrics)
    for name in chosen:
        if name not in numeric:
            raise UnknownNameError("metric", name, numeric)
    if progress:
        for note in data.notes:
            print(f"report: {note}", file=sys.stderr)
    out = Path(directory) / "report"
    out.mkdir(exist_ok=True)
    if "policy" in frame and not is_numeric(frame["policy"]):
        frame["policy"] = pd.Categorical(
            frame["policy"], categories=frame["policy"].dropna().unique()
        )
    written = [_write_csv(_points_table(frame, data.params, numeric), out / "points.csv")]
    jobs = [(name, kind, args) for name in chosen for kind, args in _plan(data)]
    figures: list[Figureset] = []
    for name, kind, args in _bar(jobs, progress):
        files = _DRAW[kind](data, name, *args, out)
        if files:
            written += [*files, files[1].with_suffix(".svg")]
            figures.append(Figureset(name, files[1], files[0]))
    varying = [p for p in data.params if frame[p].nunique(dropna=False) > 1]
    paired: dict[str, Path] = {}
    forests: list[Figureset] = []
    for name in chosen:  # paired 95% intervals between policies across seeds
        tables = paired_tables(frame, varying, name, out)
        written += tables
        if tables:
            paired[name] = tables[0]
            figure = forest_figure(name, pd.read_csv(tables[0]), _unit_text(name, data.time_unit))
            png = _save(figure, out / f"{_slug(name)}_paired_differences.png")
            written += [png, png.with_suffix(".svg")]
            forests.append(Figureset(name, png, tables[0]))
    sections = queue_tables(frame, data.params, out)  # hybrid queues: period rows, claims
    written += [path for _, path in sections]
    decision = ""
    if (
        data.leaderboard
    ):  # the decision, ranks per setting with paired intervals, Pareto charts, cost
        from market_hpc.experiment.report_decision import leaderboard_report

        decision, files, board_tables = leaderboard_report(frame, data.leaderboard, out)
        written += files
        sections += board_tables
    written.append(
        write_html(
            out / "report.html",
            Path(directory),
            data,
            chosen,
            figures,
            paired,
            sections,
            summary_html(data, chosen, paired),
            forests,
            decision,
        )
    )
    return written


def _unit_text(name: str, time_unit: str) -> str:
    label = axis_label(name, time_unit)
    return label[label.rindex("(") + 1 : -1] if label.endswith(")") else ""


def _plan(data: SweepData) -> list[tuple[str, tuple[object, ...]]]:
    plots: list[tuple[str, tuple[object, ...]]] = [
        ("line", (axis,)) for axis in data.axes if axis.x
    ]
    plots.append(("bar", ()))
    plots += [
        ("heatmap", pair) for pair in list(itertools.combinations(data.axes, 2))[:MAX_HEATMAPS]
    ]
    return plots


def _bar(
    jobs: list[tuple[str, str, tuple[object, ...]]], enabled: bool
) -> Iterable[tuple[str, str, tuple[object, ...]]]:
    if not enabled:
        return jobs
    from tqdm import tqdm

    bar: Iterable[tuple[str, str, tuple[object, ...]]] = tqdm(
        jobs, desc="report", unit="plot", file=sys.stderr, disable=None, leave=False
    )
    return bar


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def _write_csv(table: pd.DataFrame, path: Path) -> Path:
    table.to_csv(path, index=False)
    return path


PLAIN = FuncFormatter(lambda value, _: plain(value))


def _suptitle(figure: Figure, text: str) -> None:
    """A figure title wrapped to the figure's width (about 11 characters per inch)."""
    width = max(30, int(figure.get_figwidth() * 11))
    lines = [part for line in text.split("\n") for part in textwrap.wrap(line, width)]
    figure.suptitle("\n".join(lines), fontsize="medium")


def _wrap(text: str) -> str:
    return "\n".join(textwrap.wrap(text, WRAP, break_on_hyphens=False)) or text


def _values(values: object) -> str:
    """Tick text of a point: its values only (the axis label names the parameters)."""
    items = values if isinstance(values, tuple) else (values,)
    return ", ".join(str(item) for item in items)


def _label(values: object, names: Sequence[str]) -> str:
    items = values if isinstance(values, tuple) else (values,)
    if len(names) == 1:
        return str(items[0])
    return ", ".join(f"{name}={value}" for name, value in zip(names, items))


def axis_label(name: str, time_unit: str) -> str:
    """A metric's axis label with its unit; seconds become time-units for task graphs."""
    entry = metric(name)
    if time_unit == TASK_GRAPH_TIME and entry.unit == "s" and name not in _WALL_CLOCK:
        return f"{entry.label} ({TASK_GRAPH_TIME})"
    return entry.axis_label


_WALL_CLOCK = {"dispatch_seconds", "simulation_seconds", "duration_s"}


def _legend(axes: Axes, title: str) -> None:
    """A legend right of the data, never over it."""
    axes.legend(
        title=_wrap(title),
        fontsize="small",
        title_fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
    )


def _panel_title(key: object, names: Sequence[str]) -> str:
    items = key if isinstance(key, tuple) else (key,)
    return _wrap("; ".join(f"{name} = {value}" for name, value in zip(names, items)))


def _averaged_note(names: Sequence[str]) -> str:
    return f"; averaged over {', '.join(names)}" if names else ""


def _points_table(
    frame: pd.DataFrame, params: Sequence[str], numeric: Sequence[str]
) -> pd.DataFrame:
    """Long table: one row per point and metric with statistics over seeds."""
    keys = list(params)
    long = frame.melt(id_vars=keys or None, value_vars=list(numeric), var_name="metric")
    grouped = long.groupby([*keys, "metric"], sort=False, dropna=False, observed=True)["value"]
    return grouped.agg(STATS).rename(columns={"count": "n"}).reset_index()


def _stats(frame: pd.DataFrame, keys: Sequence[str], name: str) -> pd.DataFrame:
    grouped = frame.groupby(list(keys), sort=True, dropna=False, observed=True)[name]
    return grouped.agg(STATS).rename(columns={"count": "n"}).reset_index()


def _combinations(frame: pd.DataFrame, axes: Sequence[Axis]) -> int:
    keys = [a.key for a in axes]
    return frame.groupby(keys, observed=True).ngroups if keys else 1


def _with_averaged(table: pd.DataFrame, averaged: Sequence[Axis]) -> pd.DataFrame:
    if averaged:
        table["averaged_over"] = "; ".join(a.name for a in averaged)
    return table


def _line_plot(data: SweepData, name: str, axis: Axis, out: Path) -> list[Path]:
    """Metric along a numeric axis: one line per combination of the other axes; past
    ``MAX_LINES`` lines, one panel per value of the first other axis."""
    frame, x = data.frame, axis.x
    assert x is not None
    others = [a for a in data.axes if a is not axis]
    panel_axes: list[Axis] = []
    shown = others
    if (
        _combinations(frame, shown) > MAX_LINES
        and len(others) > 1
        and frame[others[0].key].nunique() <= MAX_PANELS
    ):
        panel_axes, shown = others[:1], others[1:]
    if _combinations(frame, shown) > MAX_LINES:
        shown = [a for a in shown if a.x is None]
        if _combinations(frame, shown) > MAX_LINES:
            shown = []
    averaged = [a for a in others if a not in shown and a not in panel_axes]
    groups = [a.key for a in shown]
    panel_keys = [a.key for a in panel_axes]
    table = _with_averaged(_stats(frame, [*panel_keys, *groups, x], name), averaged)
    panels = (
        list(table.groupby(panel_keys, sort=False, observed=True)) if panel_keys else [((), table)]
    )
    figure = Figure(
        figsize=(max(6.0, 3.8 * len(panels)) + (2.8 if groups else 0.0), 4.6), layout="constrained"
    )
    along = axis.name if x == axis.name else f"{x} (zip group: {axis.name})"
    shared = None
    for index, (key, part) in enumerate(panels):
        axes = figure.add_subplot(1, len(panels), index + 1, sharey=shared)
        shared = shared or axes
        lines = (
            part.groupby(groups, sort=True, dropna=False, observed=True)
            if groups
            else [("all", part)]
        )
        for order, (line_key, points) in enumerate(lines):
            (line,) = axes.plot(
                points[x], points["mean"], label=_label(line_key, groups), **series_look(order)
            )
            axes.fill_between(
                points[x], points["min"], points["max"], color=line.get_color(), alpha=0.15
            )
        axes.set_xlabel(_wrap(along) if len(panels) > 1 else along)
        if index == 0:
            axes.set_ylabel(axis_label(name, data.time_unit))
            axes.yaxis.set_major_formatter(PLAIN)
        if panel_keys:
            axes.set_title(_panel_title(key, panel_keys), fontsize="small")
        axes.grid(alpha=0.3)
    if groups:
        _legend(axes, ", ".join(groups))
    _suptitle(
        figure,
        f"{metric(name).label} vs {along}\nmean over seeds, band: min to max"
        f"{_averaged_note([a.name for a in averaged])}",
    )
    stem = out / f"{_slug(name)}_vs_{_slug(x)}"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]


def _bar_plot(data: SweepData, name: str, out: Path) -> list[Path]:
    """Bars per policy (the categorical axes), grouped by the numeric axes."""
    frame = data.frame
    policy_axes = [a for a in data.axes if a.x is None]
    policy_keys = [a.key for a in policy_axes]
    if not policy_keys and "policy" in frame and frame["policy"].nunique() > 1:
        policy_keys = ["policy"]
    if not policy_keys:
        return []
    hue_axes = [a for a in data.axes if a not in policy_axes]
    if _combinations(frame, hue_axes) > MAX_GROUPS:
        hue_axes = []
    averaged = [a for a in data.axes if a not in policy_axes and a not in hue_axes]
    hue = [a.key for a in hue_axes]
    table = _with_averaged(_stats(frame, [*policy_keys, *hue], name), averaged)
    policies = list(dict.fromkeys(map(tuple, table[policy_keys].itertuples(index=False))))
    hues = list(dict.fromkeys(map(tuple, table[hue].itertuples(index=False)))) if hue else [()]
    width = 0.8 / len(hues)
    wanted = 0.55 * len(policies) * max(1.0, len(hues) / 1.5) + 3.0
    figure = Figure(figsize=(min(MAX_WIDTH, max(6.5, wanted)), 5.0), layout="constrained")
    axes = figure.add_subplot()
    for index, hue_value in enumerate(hues):
        rows = table
        for column, value in zip(hue, hue_value):
            rows = rows[rows[column] == value]
        positions = [policies.index(tuple(r)) for r in rows[policy_keys].itertuples(index=False)]
        offsets = np.asarray(positions) - 0.4 + width * (index + 0.5)
        errors = np.vstack([rows["mean"] - rows["min"], rows["max"] - rows["mean"]])
        axes.bar(
            offsets,
            rows["mean"],
            width,
            yerr=errors,
            capsize=3,
            label=_label(hue_value, hue) if hue else None,
        )
    rotate = len(policies) > 4
    axes.set_xticks(
        range(len(policies)),
        [_wrap(_values(p)) for p in policies],
        rotation=40 if rotate else 0,
        ha="right" if rotate else "center",
        rotation_mode="anchor",
        fontsize="small",
    )
    axes.set_xlabel(", ".join(policy_keys))
    axes.set_ylabel(axis_label(name, data.time_unit))
    axes.yaxis.set_major_formatter(PLAIN)
    _suptitle(
        figure,
        f"{metric(name).label} by {', '.join(policy_keys)}\nmean over seeds, "
        f"whiskers: min to max{_averaged_note([a.name for a in averaged])}",
    )
    if hue:
        _legend(axes, ", ".join(hue))
    axes.grid(axis="y", alpha=0.3)
    stem = out / f"{_slug(name)}_by_policy"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]


def _heatmap(data: SweepData, name: str, a: Axis, b: Axis, out: Path) -> list[Path]:
    """Mean metric over the grid of two axes, one panel per combination of the others."""
    frame = data.frame
    others = [o for o in data.axes if o is not a and o is not b]
    panel_axes = others if _combinations(frame, others) <= MAX_PANELS else []
    averaged = [o for o in others if o not in panel_axes]
    panel_keys = [o.key for o in panel_axes]
    table = _with_averaged(_stats(frame, [*panel_keys, a.key, b.key], name), averaged)
    panels = (
        list(table.groupby(panel_keys, sort=False, observed=True)) if panel_keys else [((), table)]
    )
    rows_a, cols_b = frame[a.key].nunique(), frame[b.key].nunique()
    width = 2.0 + 0.75 * max(3, cols_b)
    columns = min(len(panels), 3)
    n_rows = -(-len(panels) // columns)
    figure = Figure(
        figsize=(width * columns + 1.2, (1.7 + 0.45 * max(3, rows_a)) * n_rows),
        layout="constrained",
    )
    label = axis_label(name, data.time_unit)
    grids = [part.pivot(index=a.key, columns=b.key, values="mean") for _, part in panels]
    for row in range(n_rows):  # one colour scale per row of panels, so they compare
        members = range(row * columns, min(len(panels), (row + 1) * columns))
        values_row = np.concatenate([grids[i].to_numpy(dtype=float).ravel() for i in members])
        finite = values_row[np.isfinite(values_row)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        constant = low == high
        row_axes = []
        for index in members:
            key, grid = panels[index][0], grids[index]
            axes = figure.add_subplot(n_rows, columns, index + 1)
            row_axes.append(axes)
            values = grid.to_numpy(dtype=float)
            image = axes.imshow(
                values,
                aspect="auto",
                cmap="viridis",
                origin="lower",
                vmin=low,
                vmax=high if not constant else low + 1.0,
            )
            axes.set_xticks(
                range(grid.shape[1]),
                [_wrap(str(v)) for v in grid.columns],
                rotation=30 if grid.shape[1] > 3 else 0,
                ha="right" if grid.shape[1] > 3 else "center",
                rotation_mode="anchor",
                fontsize="small",
            )
            axes.set_yticks(
                range(grid.shape[0]), [_wrap(str(v)) for v in grid.index], fontsize="small"
            )
            axes.set_xlabel(b.name)
            if index % columns == 0:
                axes.set_ylabel(a.name)
            if values.size <= 100 and np.isfinite(values).any():
                middle = (low + high) / 2
                for (cell_row, col), value in np.ndenumerate(values):
                    axes.text(
                        col,
                        cell_row,
                        plain(value),
                        ha="center",
                        va="center",
                        fontsize="x-small",
                        color="black" if value > middle else "white",
                    )
            title = _panel_title(key, panel_keys) if panel_keys else ""
            if constant:
                title = f"{title}\nevery cell {plain(low)}".strip()
            if title:
                axes.set_title(title, fontsize="small")
        if not constant:
            bar = figure.colorbar(
                image, ax=row_axes, label=_wrap(label) if n_rows > 1 or len(panels) > 1 else label
            )
            bar.ax.yaxis.set_major_formatter(PLAIN)
    _suptitle(
        figure,
        f"{metric(name).label}: {a.name} x {b.name}, mean over seeds"
        f"{_averaged_note([o.name for o in averaged])}",
    )
    stem = out / f"{_slug(name)}_heatmap_{_slug(a.name)}_{_slug(b.name)}"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]


_DRAW: dict[str, Callable[..., list[Path]]] = {
    "line": _line_plot,
    "bar": _bar_plot,
    "heatmap": _heatmap,
}
