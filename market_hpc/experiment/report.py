"""Sweep reports: tidy tables and PNG plots in ``DIR/report/``.

For each metric (``--metric``, else the sweep file's ``[report] metrics``, else
``total_profit`` when any run earned value, else ``mean_bounded_slowdown``):

* ``<metric>_vs_<param>.png/.csv`` for each numeric swept parameter: one line per
  combination of the other swept parameters (the policies), the mean over seeds with a
  min/max band;
* ``<metric>_by_policy.png/.csv``: bars per policy (the string-valued swept parameters,
  else the runs' ``policy`` names), grouped by the numeric parameters when there are at
  most ``MAX_GROUPS`` combinations, with min/max whiskers;
* ``<metric>_heatmap_<a>_<b>.png/.csv`` for each pair of swept parameters (averaged
  over seeds and any other parameter).

``points.csv`` holds every metric per point (mean, min, max, std, n over seeds). Only
runs of the sweep that last wrote the folder (``sweep.json``) with status ``ok`` are used. Figures are drawn on matplotlib's Agg canvas without
pyplot, so no global backend state is touched.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from market_hpc.errors import UnknownNameError
from market_hpc.experiment.stats import paired_tables
from market_hpc.experiment.sweep_spec import FIXED_COLUMNS, SweepError

MAX_LINES = 12
MAX_GROUPS = 8
MAX_HEATMAPS = 6
STATS = ["mean", "min", "max", "std", "count"]


def load_results(directory: str | Path) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The ``ok`` rows of a sweep directory, its parameter columns and default metrics.

    Raises:
        SweepError: no results or no ``sweep.json`` in ``directory``, or no ``ok`` run.
    """
    folder = Path(directory)
    results, manifest_file = folder / "results.parquet", folder / "sweep.json"
    if not results.is_file() or not manifest_file.is_file():
        raise SweepError(f"{folder} is not a sweep results directory (needs results.parquet "
                         "and sweep.json; run `market-hpc sweep FILE --out DIR` first)")
    manifest = json.loads(manifest_file.read_text())
    frame = pd.read_parquet(results)
    planned = manifest.get("run_ids")
    if planned is not None:  # rows of an earlier, different sweep into this folder stay out
        frame = frame[frame["run_id"].isin(planned)]
    frame = frame[frame["status"] == "ok"].reset_index(drop=True)
    if frame.empty:
        raise SweepError(f"{results}: no run of the sweep finished ok; nothing to report")
    params = [p["column"] for p in manifest["parameters"] if p["column"] in frame.columns]
    return frame, params, list(manifest.get("metrics", []))


def metric_columns(frame: pd.DataFrame, params: Sequence[str]) -> list[str]:
    """Numeric columns that are run metrics (not parameters, seed or bookkeeping)."""
    skip = {*params, *FIXED_COLUMNS}
    return [c for c in frame.columns if c not in skip and pd.api.types.is_numeric_dtype(frame[c])
            and not pd.api.types.is_bool_dtype(frame[c])]


def default_metrics(frame: pd.DataFrame, preferred: Sequence[str]) -> list[str]:
    """The sweep file's metrics, else profit when any run earned value, else slowdown."""
    if preferred:
        return list(preferred)
    if "total_profit" in frame and frame["total_profit"].abs().sum() > 0:
        return ["total_profit"]
    return ["mean_bounded_slowdown"]


def write_report(directory: str | Path, metrics: Sequence[str] | None = None) -> list[Path]:
    """Write tables and plots of a sweep directory into ``directory/report/``.

    Args:
        directory: A sweep results directory.
        metrics: Metrics to plot (default: see the module docstring).

    Returns:
        The files written.

    Raises:
        SweepError: not a sweep directory, or no run finished ok.
        UnknownNameError: a metric that is not a numeric results column.
    """
    frame, params, preferred = load_results(directory)
    numeric = metric_columns(frame, params)
    chosen = list(metrics) if metrics else default_metrics(frame, preferred)
    for metric in chosen:
        if metric not in numeric:
            raise UnknownNameError("metric", metric, numeric)
    out = Path(directory) / "report"
    out.mkdir(exist_ok=True)
    varying = [p for p in params if frame[p].nunique(dropna=False) > 1]
    for column in [*params, "policy"]:
        if column in frame and not _is_numeric(frame[column]):
            # plan order (first appearance), not alphabetical, in legends and axes
            frame[column] = pd.Categorical(frame[column], categories=frame[column].dropna().unique())
    written = [_write_csv(_points_table(frame, params, numeric), out / "points.csv")]
    for metric in chosen:
        for x in (p for p in varying if _is_numeric(frame[p])):
            written += _line_plot(frame, metric, x, [p for p in varying if p != x], out)
        written += _bar_plot(frame, metric, varying, out)
        for a, b in list(itertools.combinations(varying, 2))[:MAX_HEATMAPS]:
            written += _heatmap(frame, metric, a, b, out)
        written += paired_tables(frame, varying, metric, out)  # issue 14: paired 95% CIs across seeds
    return written


def _is_numeric(column: pd.Series) -> bool:
    return bool(pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def _write_csv(table: pd.DataFrame, path: Path) -> Path:
    table.to_csv(path, index=False)
    return path


def _save(figure: Figure, path: Path) -> Path:
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=120)
    return path


def _label(values: object, names: Sequence[str]) -> str:
    items = values if isinstance(values, tuple) else (values,)
    if len(names) == 1:
        return str(items[0])
    return ", ".join(f"{name}={value}" for name, value in zip(names, items))


def _points_table(frame: pd.DataFrame, params: Sequence[str], numeric: Sequence[str]) -> pd.DataFrame:
    """Long table: one row per point and metric with statistics over seeds."""
    keys = list(params)
    long = frame.melt(id_vars=keys or None, value_vars=list(numeric), var_name="metric")
    grouped = long.groupby([*keys, "metric"], sort=False, dropna=False, observed=True)["value"]
    return grouped.agg(STATS).rename(columns={"count": "n"}).reset_index()


def _stats(frame: pd.DataFrame, keys: Sequence[str], metric: str) -> pd.DataFrame:
    grouped = frame.groupby(list(keys), sort=True, dropna=False, observed=True)[metric]
    return grouped.agg(STATS).rename(columns={"count": "n"}).reset_index()


def _line_plot(frame: pd.DataFrame, metric: str, x: str, others: Sequence[str], out: Path) -> list[Path]:
    """Metric against a numeric parameter, one line per combination of the others."""
    groups = list(others)
    if groups and frame.groupby(groups, dropna=False, observed=True).ngroups > MAX_LINES:
        groups = [p for p in groups if not _is_numeric(frame[p])]
    table = _stats(frame, [*groups, x], metric)
    figure = Figure(figsize=(7, 4.5), layout="constrained")
    axes = figure.add_subplot()
    parts = table.groupby(groups, sort=True, dropna=False, observed=True) if groups else [("all", table)]
    for key, part in parts:
        line, = axes.plot(part[x], part["mean"], marker="o", label=_label(key, groups))
        axes.fill_between(part[x], part["min"], part["max"], color=line.get_color(), alpha=0.2)
    axes.set_xlabel(x)
    axes.set_ylabel(metric)
    axes.set_title(f"{metric} vs {x}\nmean over seeds, band: min to max", fontsize="medium")
    if groups:
        axes.legend(title=", ".join(groups), fontsize="small")
    axes.grid(alpha=0.3)
    stem = out / f"{_slug(metric)}_vs_{_slug(x)}"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]


def _bar_plot(frame: pd.DataFrame, metric: str, varying: Sequence[str], out: Path) -> list[Path]:
    """Bars per policy, grouped by the numeric parameters when they are few."""
    policy_keys = [p for p in varying if not _is_numeric(frame[p])]
    if not policy_keys and "policy" in frame and frame["policy"].nunique() > 1:
        policy_keys = ["policy"]
    if not policy_keys:
        return []
    hue = [p for p in varying if p not in policy_keys]
    if hue and frame.groupby(hue, dropna=False, observed=True).ngroups > MAX_GROUPS:
        hue = []
    table = _stats(frame, [*policy_keys, *hue], metric)
    policies = list(dict.fromkeys(map(tuple, table[policy_keys].itertuples(index=False))))
    hues = list(dict.fromkeys(map(tuple, table[hue].itertuples(index=False)))) if hue else [()]
    width = 0.8 / len(hues)
    figure = Figure(figsize=(max(6.0, 0.9 * len(policies) * max(1, len(hues) / 2)), 4.5),
                    layout="constrained")
    axes = figure.add_subplot()
    for index, hue_value in enumerate(hues):
        rows = table
        for name, value in zip(hue, hue_value):
            rows = rows[rows[name] == value]
        positions = [policies.index(tuple(r)) for r in rows[policy_keys].itertuples(index=False)]
        offsets = np.asarray(positions) - 0.4 + width * (index + 0.5)
        errors = np.vstack([rows["mean"] - rows["min"], rows["max"] - rows["mean"]])
        axes.bar(offsets, rows["mean"], width, yerr=errors, capsize=3,
                 label=_label(hue_value, hue) if hue else None)
    axes.set_xticks(range(len(policies)), [_label(p, policy_keys) for p in policies],
                    rotation=30 if len(policies) > 4 else 0, ha="right" if len(policies) > 4 else "center")
    axes.set_ylabel(metric)
    axes.set_title(f"{metric} by {', '.join(policy_keys)}\nmean, whiskers: min to max", fontsize="medium")
    if hue:
        axes.legend(title=", ".join(hue), fontsize="small")
    axes.grid(axis="y", alpha=0.3)
    stem = out / f"{_slug(metric)}_by_policy"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]


def _heatmap(frame: pd.DataFrame, metric: str, a: str, b: str, out: Path) -> list[Path]:
    """Mean metric over the grid of two parameters."""
    table = _stats(frame, [a, b], metric)
    grid = table.pivot(index=a, columns=b, values="mean")
    figure = Figure(figsize=(1.2 + 0.8 * max(4, grid.shape[1]), 1.2 + 0.6 * max(4, grid.shape[0])),
                    layout="constrained")
    axes = figure.add_subplot()
    image = axes.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap="viridis", origin="lower")
    axes.set_xticks(range(grid.shape[1]), [str(v) for v in grid.columns])
    axes.set_yticks(range(grid.shape[0]), [str(v) for v in grid.index])
    axes.set_xlabel(b)
    axes.set_ylabel(a)
    if grid.size <= 100:
        finite = grid.to_numpy(dtype=float)
        middle = np.nanmean(finite) if np.isfinite(finite).any() else 0.0
        for (row, col), value in np.ndenumerate(finite):
            axes.text(col, row, f"{value:.3g}", ha="center", va="center", fontsize="x-small",
                      color="black" if value > middle else "white")
    figure.colorbar(image, ax=axes, label=f"mean {metric}")
    axes.set_title(f"{metric}\n{a} x {b}", fontsize="medium")
    stem = out / f"{_slug(metric)}_heatmap_{_slug(a)}_{_slug(b)}"
    return [_write_csv(table, stem.with_suffix(".csv")), _save(figure, stem.with_suffix(".png"))]
