"""The leaderboard's Pareto charts: per load, each policy's mean over replicates of two
objectives, the front filled and joined, every point named by a label that overlaps none.

Decisions:
    * **Objectives.** ``pareto[0]`` (x, bounded slowdown) against ``pareto[1]`` (y, value
      earned). Where no run earned value (every ``pareto[1]`` 0 or NaN: the workload has no
      value curves) a value axis would be a flat line of zeros, so y is the first of
      ``FALLBACK_Y`` that the results have and that varies between policies; when none
      does, no chart is drawn and ``pareto_objectives`` says why (the report prints it).
    * **Width.** Figures are ``DOCS_WIDTH`` inches wide, the text column of the docs site
      (mkdocs-material at its 20 px root size: the 61 rem grid less two 12.1 rem sidebars
      and 1.2 rem margins = 34.4 rem = 688 px = 7.17 in at 96 px per inch), so an SVG shown
      there is not scaled down and its 7.5 pt labels stay readable. One panel per trace,
      stacked.
    * **Labels.** ``label_placement.place_labels``: deterministic, never overlapping,
      leader lines where a label had to move away. Front points are labelled first.
    * **Scale.** An axis whose positive values span more than ``LOG_SPAN`` times is drawn
      on a log scale, so a far-off policy (FIFO at 20x EASY's slowdown) does not crush
      the others into one corner.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from market_hpc.experiment.label_placement import freeze_layout, place_labels
from market_hpc.experiment.leaderboard import LeaderboardSpec
from market_hpc.experiment.metrics_table import metric
from market_hpc.experiment.report_style import save_figure

DOCS_WIDTH = 7.1  # inches: within the docs site's text column (module docstring)
PANEL_HEIGHT = 4.6
LOG_SPAN = 20.0
FALLBACK_Y = ("completed_core_hours", "completed_share", "utilisation_cores", "user_fairness")


def pareto_front(
    x: np.ndarray, y: np.ndarray, x_better: str = "lower", y_better: str = "higher"
) -> np.ndarray:
    """Which points no other point dominates (at least as good on both, better on one).

    >>> pareto_front(np.array([1.0, 2.0, 3.0, 2.0]), np.array([1.0, 3.0, 2.0, 1.0])).tolist()
    [True, True, False, False]
    """
    xs = x if x_better == "lower" else -x
    ys = -y if y_better == "higher" else y
    front = np.ones(len(xs), dtype=bool)
    for i in range(len(xs)):
        dominated = (xs <= xs[i]) & (ys <= ys[i]) & ((xs < xs[i]) | (ys < ys[i]))
        front[i] = not dominated.any()
    return front


def _has_values(runs: pd.DataFrame, name: str) -> bool:
    values = pd.to_numeric(runs[name], errors="coerce") if name in runs else pd.Series(dtype=float)
    return bool((values.fillna(0.0) != 0.0).any())


def _varies(runs: pd.DataFrame, name: str) -> bool:
    if name not in runs:
        return False
    means = (
        pd.to_numeric(runs[name], errors="coerce")
        .groupby(runs["policy_label"], observed=True)
        .mean()
    )
    return bool(means.dropna().nunique() > 1)


def pareto_objectives(runs: pd.DataFrame, spec: LeaderboardSpec) -> tuple[str, str | None, str]:
    """The chart's x and y metrics and a sentence for the report when y is not
    ``pareto[1]`` (``None``: no chart; the sentence says why).

    >>> spec = LeaderboardSpec()
    >>> runs = pd.DataFrame({"policy_label": ["a", "b"], "mean_bounded_slowdown": [1.0, 2.0],
    ...                      "value_earned": [0.0, 0.0], "utilisation_cores": [0.5, 0.6]})
    >>> x, y, why = pareto_objectives(runs, spec)
    >>> y, why.startswith("Every run's value earned is 0")
    ('utilisation_cores', True)
    >>> pareto_objectives(runs.drop(columns="utilisation_cores"), spec)[1] is None
    True
    """
    x_name, y_name = spec.pareto
    if _has_values(runs, y_name):
        return x_name, y_name, ""
    absent = f"Every run's {metric(y_name).label} is 0 or n/a (the workload has no value curves)"
    for name in FALLBACK_Y:
        if name != x_name and _varies(runs, name):
            return (
                x_name,
                name,
                f"{absent}, so the Pareto charts plot {metric(name).label} instead.",
            )
    return (
        x_name,
        None,
        (
            f"{absent}, and none of {', '.join(metric(n).label for n in FALLBACK_Y)} varies "
            "between policies, so no Pareto chart is drawn."
        ),
    )


def _scale(axes: Axes, values: np.ndarray, which: str) -> None:
    finite = values[np.isfinite(values)]
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > LOG_SPAN:
        (axes.set_xscale if which == "x" else axes.set_yscale)("log")
        axis = axes.xaxis if which == "x" else axes.yaxis
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))


def pareto_figures(runs: pd.DataFrame, spec: LeaderboardSpec, out: Path) -> list[Path]:
    """One Pareto chart per load factor (panels per trace, stacked); PNG and SVG; none
    when ``pareto_objectives`` finds no y."""
    x_name, y_name, _ = pareto_objectives(runs, spec)
    if y_name is None or x_name not in runs or "load_factor" not in runs:
        return []
    written = []
    traces = [c for c in spec.setting if c != "load_factor"]
    for load, group in runs.groupby("load_factor", sort=True):
        panels = list(group.groupby(traces, sort=False)) if traces else [("all", group)]
        figure = Figure(
            figsize=(DOCS_WIDTH, PANEL_HEIGHT * len(panels) + 0.5), layout="constrained"
        )
        placed = []
        for index, (_, panel) in enumerate(panels):
            axes = figure.add_subplot(len(panels), 1, index + 1)
            means = (
                panel.groupby("policy_label", sort=False, observed=True)[[x_name, y_name]]
                .mean()
                .dropna()
            )
            placed.append((axes, _draw_points(axes, means, x_name, y_name)))
            title = panel["setting"].iloc[0].rsplit(" x", 1)[0] if traces else "all"
            axes.set_title(title, fontsize=9)
            axes.set_xlabel(metric(x_name).axis_label, fontsize=8)
            axes.set_ylabel(metric(y_name).axis_label, fontsize=8)
            axes.tick_params(labelsize=7.5)
        figure.suptitle(
            textwrap.fill(
                f"Pareto chart at {load:g}x the recorded load: mean over slices "
                "(filled and joined: no other policy is as good on both)",
                80,
            ),
            fontsize=9,
        )
        freeze_layout(figure)
        for axes, means in placed:
            unplaced = place_labels(
                axes, means[x_name].tolist(), means[y_name].tolist(), [str(p) for p in means.index]
            )
            if unplaced:
                axes.text(
                    0.0,
                    -0.2,
                    textwrap.fill("not labelled (no room): " + ", ".join(unplaced), 110),
                    transform=axes.transAxes,
                    fontsize=7,
                    va="top",
                )
        written.append(save_figure(figure, out / f"pareto_load_{load:g}.png"))
    return written


def _draw_points(axes: Axes, means: pd.DataFrame, x_name: str, y_name: str) -> pd.DataFrame:
    """The points and the front; returns the means reordered front first (label order)."""
    x, y = means[x_name].to_numpy(dtype=float), means[y_name].to_numpy(dtype=float)
    front = pareto_front(x, y, metric(x_name).better or "lower", metric(y_name).better or "higher")
    axes.scatter(x[~front], y[~front], facecolors="none", edgecolors="#7f7f7f", s=28, zorder=3)
    ordered = means[front].sort_values(x_name)
    axes.plot(ordered[x_name], ordered[y_name], "o-", color="#1f77b4", markersize=5.5, zorder=4)
    _scale(axes, x, "x")
    _scale(axes, y, "y")
    axes.margins(0.12)
    axes.grid(alpha=0.3)
    return pd.concat([ordered, means[~front]])


__all__ = ["DOCS_WIDTH", "FALLBACK_Y", "pareto_figures", "pareto_front", "pareto_objectives"]
