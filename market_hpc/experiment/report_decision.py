"""The head of ``report.html`` for a sweep with a ``[report] leaderboard``: the decision.

Per setting (trace x load), the policies no other beats significantly on ``rank_by``
(``decision``), each with what choosing it costs: CPU against the baseline's on the same
slices (``leaderboard.cost_table`` of the setting's runs), jobs dropped, and the work
completed where the summaries have it. Then the rank heat map, the Pareto charts (or why
there are none) and the cost table, all from the files ``leaderboard_plots`` wrote.

Writes ``decision.csv`` (``decision.DECISION_COLUMNS``) and ``decision_pairs.csv``
(every pair's test, ``decision.PAIR_COLUMNS``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.experiment.decision import decision_table, pairwise_tests
from market_hpc.experiment.leaderboard import (
    ALPHA,
    LeaderboardSpec,
    cost_table,
    leaderboard_spec,
    prepare,
)
from market_hpc.experiment.leaderboard_pareto import pareto_objectives
from market_hpc.experiment.leaderboard_plots import write_leaderboard
from market_hpc.experiment.metrics_table import metric, metric_names
from market_hpc.experiment.report_html import image_html, plain

CONTEXT = ("jobs_dropped", "completed_core_hours", "completed_share")
COST_HEADERS = {
    "policy": "policy",
    "runs": "runs",
    "run_cpu_s_mean": "CPU per run (s), mean",
    "run_cpu_s_max": "CPU per run (s), max",
    "cpu_per_decision_ms": "CPU per decision (ms)",
    "decisions_mean": "decisions per run",
    "ratio_mean": "CPU / {b}'s, same slice: mean",
    "ratio_max": "CPU / {b}'s, same slice: max",
}


def leaderboard_report(
    frame: pd.DataFrame, table: dict[str, Any], out: Path
) -> tuple[str, list[Path], list[tuple[str, Path]]]:
    """Write the leaderboard's files (``leaderboard_plots``) and the decision's into ``out``.

    Returns:
        The decision's HTML (``decision_section``), every file written, and the (title,
        CSV) tables for the page's collapsed Tables section.
    """
    board = write_leaderboard(frame, table, out)
    decision, files = decision_section(frame, table, out)
    tables = [
        (_board_title(path), path)
        for path in board
        if path.name.startswith("leaderboard_") and path.suffix == ".csv"
    ]
    tables += [
        (f"Decision: every pair's test ({path.name})", path)
        for path in files
        if path.name == "decision_pairs.csv"
    ]
    return decision, board + files, tables


def _board_title(csv: Path) -> str:
    name = csv.stem.removeprefix("leaderboard_")
    if name in metric_names():
        return f"Leaderboard: {metric(name).label} per setting ({csv.name})"
    return f"Leaderboard: {csv.name}"


def decision_section(
    frame: pd.DataFrame, table: dict[str, Any], out: Path
) -> tuple[str, list[Path]]:
    """The decision, rank heat map, Pareto charts and cost table as HTML, and the files
    written (module docstring).

    Args:
        frame: The sweep's ``ok`` runs.
        table: The sweep's ``[report] leaderboard``.
        out: The report folder, where ``write_leaderboard`` wrote its files.
    """
    spec = leaderboard_spec({k: list(v) if isinstance(v, tuple) else v for k, v in table.items()})
    runs = prepare(frame, spec)
    name = spec.rank_by
    parts = ["<h2>Decision: the policies no other beats</h2>"]
    written: list[Path] = []
    better = metric(name).better
    if name not in runs or better not in ("lower", "higher"):
        parts.append(
            f"<p class='note'>No decision: the results have no {html.escape(name)} column, or it "
            "has "
            "no better direction.</p>"
        )
    else:
        pairs = pairwise_tests(runs, name, better)
        decided = decision_table(runs, name, better, pairs=pairs)
        for path, rows in ((out / "decision.csv", decided), (out / "decision_pairs.csv", pairs)):
            rows.to_csv(path, index=False)
            written.append(path)
        parts.append(_method(spec, runs))
        parts += [
            _setting_html(runs, rows, spec) for _, rows in decided.groupby("setting", sort=False)
        ]
    parts.append(_heatmap_html(out, spec))
    parts.append(_pareto_html(runs, spec, out))
    parts.append(_cost_html(out, spec.baseline))
    return "".join(parts), written


def _method(spec: LeaderboardSpec, runs: pd.DataFrame) -> str:
    entry = metric(spec.rank_by)
    replicates = runs.groupby("setting", sort=False)["replicate_key"].nunique()
    counted = (
        f"{int(replicates.min())}"
        if replicates.min() == replicates.max()
        else f"{int(replicates.min())}-{int(replicates.max())}"
    )
    return (
        f"<p>Per trace and load, the policies that no other policy beats significantly on "
        f"<strong>{html.escape(entry.label)}</strong> ({entry.better} is better). A policy beats "
        "another "
        f"when, paired by slice ({counted} slices per setting), its mean is better and the "
        "two-sided paired "
        "t-test, Holm-adjusted over every pair of policies of the setting, gives p &lt; "
        f"{ALPHA:g}. "
        "Each row says what choosing the policy costs: its run CPU against "
        f"{html.escape(spec.baseline)}'s on the same slices, the jobs it dropped and the work it "
        "completed (means over slices). Every pair's test: <code>decision_pairs.csv</code>.</p>"
    )


def _setting_html(runs: pd.DataFrame, rows: pd.DataFrame, spec: LeaderboardSpec) -> str:
    setting = str(rows["setting"].iloc[0])
    group = runs[runs["setting"] == setting]
    chosen = rows[rows["in_set"]]
    cost = cost_table(group, spec.baseline)
    ratios = cost.set_index("policy")["ratio_mean"] if not cost.empty else pd.Series(dtype=float)
    context = [c for c in CONTEXT if c in group and group[c].notna().any()]
    means = (
        group.groupby("policy_label", sort=False, observed=True)[context].mean()
        if context
        else None
    )
    entry = metric(spec.rank_by)
    table = pd.DataFrame(
        {
            "policy": chosen["policy"],
            "rank": chosen["rank"],
            f"{entry.axis_label}, mean": [plain(v) for v in chosen["mean"]],
        }
    )
    table[f"CPU / {spec.baseline}'s"] = [
        f"{plain(ratios[p])}x" if p in ratios and np.isfinite(ratios[p]) else "n/a"
        for p in chosen["policy"]
    ]
    for column in context:
        assert means is not None
        table[metric(column).axis_label] = [plain(means.loc[p, column]) for p in chosen["policy"]]
    beaten = rows[~rows["in_set"]]
    if beaten.empty:
        verdict = (
            f"<p>No policy is beaten significantly: the {int(rows['replicates'].max())} slices do "
            "not "
            f"separate these {len(rows)} policies.</p>"
        )
    else:
        verdict = (
            "<p>Beaten significantly: "
            + "; ".join(
                f"{html.escape(str(r['policy']))} (by {html.escape(r['beaten_by'])})"
                for _, r in beaten.iterrows()
            )
            + ".</p>"
        )
    missing = [c for c in CONTEXT if c not in context]
    note = (
        "<p class='note'>Not in these results: "
        f"{html.escape(', '.join(metric(c).label for c in missing))}.</p>"
        if missing
        else ""
    )
    table_html: str = table.to_html(index=False, border=0, escape=True)
    return (
        f"<h3>{html.escape(setting)}: {len(chosen)} of {len(rows)} policies</h3>"
        + table_html
        + verdict
        + note
    )


def _heatmap_html(out: Path, spec: LeaderboardSpec) -> str:
    png = out / "rank_heatmap.png"
    if not png.is_file():
        return ""
    return f"<h2>Rank by {html.escape(metric(spec.rank_by).label)} per setting</h2>" + image_html(
        png, f"rank heat map; ▲/▼: significantly better/worse than {spec.baseline}"
    )


def _pareto_html(runs: pd.DataFrame, spec: LeaderboardSpec, out: Path) -> str:
    _, y_name, why = pareto_objectives(runs, spec)
    charts = sorted(
        out.glob("pareto_load_*.png"), key=lambda p: float(p.stem.removeprefix("pareto_load_"))
    )
    parts = ["<h2>Pareto charts</h2>"]
    if why:
        parts.append(f"<p class='note'>{html.escape(why)}</p>")
    if y_name is not None and not charts:
        parts.append(
            "<p class='note'>No Pareto chart: the leaderboard's settings have no load_factor.</p>"
        )
    if y_name is not None:
        parts += [image_html(png, png.stem) for png in charts]
    return "".join(parts)


def _cost_html(out: Path, baseline: str) -> str:
    csv = out / "cost.csv"
    if not csv.is_file():
        return ""
    cost = pd.read_csv(csv)
    shown = pd.DataFrame(
        {
            header.format(b=baseline): (
                cost[column].map(plain) if column not in ("policy", "runs") else cost[column]
            )
            for column, header in COST_HEADERS.items()
            if column in cost
        }
    )
    table_html: str = shown.to_html(index=False, border=0)
    return (
        f"<h2>Cost</h2><p>CPU seconds of each run (queue planning, simulation, summary) and per "
        f"decision, and the ratio to {html.escape(baseline)}'s run on the same slice and setting "
        "(<code>cost.csv</code>).</p>" + table_html
    )


__all__ = ["decision_section", "leaderboard_report"]
