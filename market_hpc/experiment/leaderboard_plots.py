"""The leaderboard's files: ranking tables (CSV and Markdown), the Pareto chart per load and
the rank heat map (policy x setting).

Decisions:
    * **Pareto chart.** One figure per load factor, one panel per trace (``leaderboard_pareto``):
      a policy is on the front when no other policy is at least as good on both objectives
      and better on one; front points are filled and joined, the others hollow.
    * **Rank heat map.** Rows are policies (best mean rank first), columns are settings,
      cells the rank by ``rank_by``; a cell whose paired difference to the baseline is
      significant carries ``▲``/``▼``.
    * ``leaderboard.md`` is what ``docs/overload.md`` is generated from
      (``scripts/overload_docs.py``): every number there comes from these files.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from market_hpc.experiment.leaderboard import (
    ALPHA,
    COSTLY,
    LeaderboardSpec,
    cost_table,
    counts_markdown,
    leaderboard_spec,
    prepare,
    ranking,
    setting_traces,
    shown_metrics,
    significant_counts,
)
from market_hpc.experiment.leaderboard_pareto import pareto_figures, pareto_front
from market_hpc.experiment.metrics_table import metric
from market_hpc.experiment.report_html import plain
from market_hpc.experiment.report_style import save_figure

SYMBOL = {"better": " ▲", "worse": " ▼"}
CHECK_METRICS = (
    "jobs_total",
    "offered_load_cores",
    "offered_load_bb",
    "utilisation_cores",
    "utilisation_bb",
    "mean_queue_size",
    "max_queue_size",
)


def _cell(mean: float, row: pd.Series) -> str:
    if row["mark"] == "baseline":
        return f"{plain(mean)} (baseline)"
    if np.isnan(row["ci_low"]):
        return (
            f"{plain(mean)} ({plain(row['diff'], signed=True)}, "
            f"{row['mark']}{SYMBOL.get(row['mark'], '')})"
        )
    return (
        f"{plain(mean)} ({plain(row['diff'], signed=True)} [{plain(row['ci_low'], signed=True)}, "
        f"{plain(row['ci_high'], signed=True)}]{SYMBOL.get(row['mark'], ' n.s.')})"
    )


def ranking_markdown(tables: dict[str, pd.DataFrame], spec: LeaderboardSpec) -> list[str]:
    """One Markdown table per setting: rank by ``rank_by``, then every metric's mean with
    its paired difference to the baseline, 95 % interval and mark."""
    lines: list[str] = []
    ranked = tables[spec.rank_by]
    for setting, group in ranked.groupby("setting", sort=False):
        names = list(tables)
        lines += [
            f"### {setting}",
            "",
            (
                f"Ranked by {metric(spec.rank_by).label} ({metric(spec.rank_by).better} is "
                "better); "
                f"each cell: mean over {int(group['replicates'].max())} slices (difference to "
                f"{spec.baseline} [95 % interval], ▲ better / ▼ worse: Holm-adjusted paired t-test "
                f"p < {ALPHA:g} over the metric's settings and policies, n.s. not significant)."
            ),
            "",
            "| rank | policy | " + " | ".join(metric(n).label for n in names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for _, row in group.iterrows():
            cells = []
            for name in names:
                other = tables[name]
                match = other[(other["setting"] == setting) & (other["policy"] == row["policy"])]
                cells.append(
                    _cell(float(match["mean"].iloc[0]), match.iloc[0]) if len(match) else ""
                )
            lines.append(f"| {row['rank']} | {row['policy']} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def check_markdown(runs: pd.DataFrame, baseline: str) -> list[str]:
    """Is the overload real? Per setting, the baseline's runs: jobs per slice, offered load
    of cores and burst buffer, utilisation and queue sizes (mean [min, max] over slices)."""
    present = [c for c in CHECK_METRICS if c in runs]
    base = runs[runs["policy_label"] == baseline]
    if base.empty or not present:
        return []
    lines = [
        f"| setting | {' | '.join(metric(c).label for c in present)} |",
        "|---|" + "---|" * len(present),
    ]
    for setting, group in base.groupby("setting", sort=False):
        cells = [
            f"{plain(group[c].mean())} [{plain(group[c].min())}, {plain(group[c].max())}]"
            for c in present
        ]
        lines.append(f"| {setting} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def cost_markdown(cost: pd.DataFrame, baseline: str) -> list[str]:
    """The cost table and the policies costing more than ``COSTLY`` times the baseline."""
    if cost.empty:
        return []
    lines = [
        (
            "| policy | runs | CPU per run (s), mean | max | CPU per decision (ms) | decisions per "
            "run | "
            f"CPU / {baseline}'s, same slice: mean | max |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, row in cost.iterrows():
        lines.append(
            f"| {row['policy']} | {row['runs']} | {plain(row['run_cpu_s_mean'])} | "
            f"{plain(row['run_cpu_s_max'])} | {plain(row['cpu_per_decision_ms'])} | "
            f"{plain(row['decisions_mean'])} | {plain(row['ratio_mean'])} | "
            f"{plain(row['ratio_max'])} |"
        )
    costly = cost[cost["costly"]]
    names = ", ".join(
        f"{p} (up to {plain(r)}x)" for p, r in zip(costly["policy"], costly["ratio_max"])
    )
    lines += [
        "",
        f"More than {COSTLY:g}x {baseline}'s CPU on the same slice: {names or 'none'}.",
        "",
    ]
    return lines


def rank_heatmap(table: pd.DataFrame, spec: LeaderboardSpec, out: Path) -> list[Path]:
    """Policy x setting heat map of ranks by ``rank_by`` (▲/▼: significant against the
    baseline); PNG and SVG."""
    if table.empty:
        return []
    wide = table.pivot(index="policy", columns="setting", values="rank")
    marks = table.pivot(index="policy", columns="setting", values="mark")
    settings = list(pd.unique(table["setting"]))
    wide, marks = wide[settings], marks[settings]
    order = wide.mean(axis=1).sort_values(kind="stable").index
    wide, marks = wide.loc[order], marks.loc[order]
    figure = Figure(
        figsize=(min(12.0, max(6.0, 2.5 + 1.2 * len(settings))), 1.5 + 0.32 * len(order)),
        layout="constrained",
    )
    axes = figure.add_subplot()
    image = axes.imshow(wide.to_numpy(dtype=float), cmap="viridis_r", aspect="auto")
    for i in range(len(order)):
        for j in range(len(settings)):
            value = wide.iat[i, j]
            if not np.isnan(value):
                axes.text(
                    j,
                    i,
                    f"{int(value)}{SYMBOL.get(str(marks.iat[i, j]), '')}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white"
                    if value
                    > wide.to_numpy(dtype=float)[~np.isnan(wide.to_numpy(dtype=float))].mean()
                    else "black",
                )
    names = [textwrap.fill(s, 16, break_long_words=False, break_on_hyphens=False) for s in settings]
    axes.set_xticks(range(len(settings)), names, fontsize=7)
    axes.set_yticks(range(len(order)), list(order), fontsize=7)
    bar = figure.colorbar(image, ax=axes, label="rank (1 = best)")
    bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # ranks are whole numbers
    axes.set_title(
        textwrap.fill(
            f"Rank by {metric(spec.rank_by).label} (▲/▼: significantly better/worse "
            f"than {spec.baseline}, Holm-adjusted p < {ALPHA:g})",
            60,
        ),
        fontsize=9,
    )
    return [save_figure(figure, out / "rank_heatmap.png")]


def write_leaderboard(frame: pd.DataFrame, table: dict[str, object], out: Path) -> list[Path]:
    """Write the leaderboard files of a sweep's runs into ``out`` (the report folder).

    Args:
        frame: The sweep's ``ok`` runs.
        table: The sweep's ``[report] leaderboard`` (as stored in ``sweep.json``).
        out: The report folder.

    Returns:
        The files written (PNGs stand for their SVGs too).
    """
    spec = leaderboard_spec({k: list(v) if isinstance(v, tuple) else v for k, v in table.items()})
    runs = prepare(frame, spec)
    tables = {
        name: ranking(runs, name, spec.baseline) for name in shown_metrics(spec, list(runs.columns))
    }
    written = []
    for name, ranked in tables.items():
        path = out / f"leaderboard_{name}.csv"
        ranked.to_csv(path, index=False)
        written.append(path)
    cost = cost_table(runs, spec.baseline)
    if not cost.empty:
        cost.to_csv(out / "cost.csv", index=False)
        written.append(out / "cost.csv")
    ranked = tables.get(spec.rank_by)
    counts = (
        significant_counts(ranked[ranked["policy"] != spec.baseline], setting_traces(runs))
        if ranked is not None
        else pd.DataFrame()
    )
    if not counts.empty:
        counts.to_csv(out / "leaderboard_summary.csv", index=False)
        written.append(out / "leaderboard_summary.csv")
    lines = ["## Ranking", "", *ranking_markdown(tables, spec)] if spec.rank_by in tables else []
    lines += counts_markdown(counts, spec.baseline, metric(spec.rank_by).label)
    check = check_markdown(runs, spec.baseline)
    if check:
        lines += [
            f"## Is the overload real? ({spec.baseline}'s runs: mean [min, max] over slices)",
            "",
            *check,
        ]
    lines += ["## Cost", "", *cost_markdown(cost, spec.baseline)]
    (out / "leaderboard.md").write_text("\n".join(lines) + "\n")
    written.append(out / "leaderboard.md")
    written += pareto_figures(runs, spec, out)
    if spec.rank_by in tables:
        written += rank_heatmap(tables[spec.rank_by], spec, out)
    return written


__all__ = [
    "check_markdown",
    "cost_markdown",
    "pareto_figures",
    "pareto_front",
    "rank_heatmap",
    "ranking_markdown",
    "write_leaderboard",
]
