"""The head of ``report.html``: what was compared, the significant differences, and one
forest plot per metric of the paired differences with their 95% intervals.

Decisions:
    * A forest plot has one row per comparison (policy - baseline, within each setting of
      the other varied parameters), the mean paired difference as a point and its 95% t
      interval as a bar, and a line at 0. Rows whose replicates do not vary have no
      interval (``stats`` refuses zero-width ones): they are drawn as hollow diamonds and
      labelled ``no spread``, never as a bar of zero width.
    * An interval is cut to what is possible (``possible_difference``): for a metric that
      cannot be negative, a policy's mean is at least 0, so its difference to the
      baseline is at least minus the baseline's mean (-100 %). A t interval of few seeds
      can reach past that; the bar then stops there, ends in a black bar ``|`` and the
      legend says so. The cut interval still holds the true difference at least as often
      as the t interval (it only drops impossible values); the CSV keeps the t bounds.
    * A difference is *significant* when its interval lies on one side of 0 (verdict
      ``higher``/``lower``); the summary lists them, largest relative change first, and
      says better or worse where the metric has a better direction.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from market_hpc.experiment.metrics_table import metric
from market_hpc.experiment.report_html import (
    CLIP_METHOD,
    CLIPPED,
    plain,
    possible_relative,
    relative_text,
)
from market_hpc.experiment.stats import COLUMNS, NO_SPREAD, RELATIVE_METHOD

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from market_hpc.experiment.report_data import SweepData

MAX_LISTED = 12  # significant differences listed in the summary (all are in the tables)
MAX_PANELS = 4  # comparisons drawn side by side in a forest plot
_STYLE = {  # verdict -> colour, marker, filled
    "higher": ("#1f77b4", "o", True),
    "lower": ("#d62728", "s", True),
    "undecided": ("#7f7f7f", "o", False),
    "equal": ("#2ca02c", "D", False),
    NO_SPREAD: ("#2ca02c", "D", False),
}


def comparison_labels(table: pd.DataFrame) -> list[str]:
    """``setting: policy − baseline`` for each row of a paired-differences table.

    >>> frame = pd.DataFrame({"policy": ["b"], "baseline": ["a"], "curves": ["steep"]})
    >>> comparison_labels(frame)
    ['curves=steep: b − a']
    """
    settings = [c for c in table.columns if c not in COLUMNS]
    labels = []
    for row in table.to_dict("records"):
        setting = ", ".join(f"{c}={row[c]}" for c in settings)
        pair = f"{row['policy']} − {row['baseline']}"
        labels.append(f"{setting}: {pair}" if setting else pair)
    return labels


def forest_figure(name: str, table: pd.DataFrame, unit_label: str) -> Figure:
    """Mean paired difference and its 95% interval per comparison, 0 marked.

    With settings of other varied parameters and 2 to ``MAX_PANELS`` comparisons, one
    panel per comparison (policy − baseline) with the settings as rows and a shared
    difference axis; otherwise one panel with a row per comparison and setting.
    """
    settings = [c for c in table.columns if c not in COLUMNS]
    pairs = list(dict.fromkeys(zip(table["policy"].astype(str), table["baseline"].astype(str))))
    panels = settings and 2 <= len(pairs) <= MAX_PANELS
    if panels:
        row_labels = list(dict.fromkeys(_setting_labels(table, settings)))
        groups = [
            (
                f"{policy} − {base}",
                table[
                    (table["policy"].astype(str) == policy)
                    & (table["baseline"].astype(str) == base)
                ],
            )
            for policy, base in pairs
        ]
    else:
        row_labels = comparison_labels(table)
        groups = [("", table)]
    rows = len(row_labels)
    width = 3.2 * len(groups) + 0.07 * max(len(label) for label in row_labels) + 2.6
    figure = Figure(
        figsize=(min(16.0, max(9.0, width)), 1.6 + 0.28 * max(rows, 2)), layout="constrained"
    )
    shared = None
    for index, (title, part) in enumerate(groups):
        axes = figure.add_subplot(1, len(groups), index + 1, sharex=shared)
        shared = shared or axes
        y = (
            np.asarray([row_labels.index(label) for label in _setting_labels(part, settings)])
            if panels
            else np.arange(rows)
        )
        _draw_intervals(axes, name, part, y)
        axes.set_yticks(
            np.arange(rows), row_labels if index == 0 else [""] * rows, fontsize="small"
        )
        axes.set_ylim(rows - 0.5, -0.5)
        axes.set_xlabel(
            f"difference to the baseline{f' ({unit_label})' if unit_label else ''}",
            fontsize="small" if panels else "medium",
        )
        if title:
            axes.set_title(title, fontsize="small")
    present = [v for v in _STYLE if (table["verdict"] == v).any()]
    handles = [
        Line2D(
            [],
            [],
            linestyle="none",
            marker=_STYLE[v][1],
            color=_STYLE[v][0],
            markerfacecolor=_STYLE[v][0] if _STYLE[v][2] else "white",
            label=_VERDICT_TEXT[v],
        )
        for v in present
    ]
    if any(possible_difference(name, row)[2] for row in table.to_dict("records")):
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="|",
                markersize=12,
                markeredgewidth=2.2,
                color="black",
                label="interval clipped: the policy's mean\ncannot be below 0 (-100 %)",
            )
        )
    axes.legend(
        handles=handles,
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
    )
    entry = metric(name)
    better = f" ({entry.better} is better)" if entry.better else ""
    figure.suptitle(
        f"{entry.label}{better}: paired difference per seed, mean and 95% t interval",
        fontsize="medium",
    )
    return figure


def _setting_labels(table: pd.DataFrame, settings: Sequence[str]) -> list[str]:
    return [", ".join(f"{c}={row[c]}" for c in settings) for row in table.to_dict("records")]


def _draw_intervals(axes: Axes, name: str, table: pd.DataFrame, y: np.ndarray) -> None:
    for verdict, (colour, marker, filled) in _STYLE.items():
        part = (table["verdict"] == verdict).to_numpy()
        if not part.any():
            continue
        mean = table["mean_diff"].to_numpy(float)[part]
        bounds = [possible_difference(name, row) for row in table[part].to_dict("records")]
        low = np.asarray([b[0] for b in bounds], dtype=float)
        high = np.asarray([b[1] for b in bounds], dtype=float)
        cut = np.asarray([b[2] for b in bounds], dtype=bool)
        has = np.isfinite(low) & np.isfinite(high)
        if cut.any():
            axes.plot(
                low[cut],
                y[part][cut],
                linestyle="none",
                marker="|",
                markersize=14,
                markeredgewidth=2.2,
                color="black",
                gid="clipped",
            )
        if has.any():
            axes.errorbar(
                mean[has],
                y[part][has],
                xerr=np.vstack([mean[has] - low[has], high[has] - mean[has]]),
                fmt="none",
                ecolor=colour,
                elinewidth=1.4,
                capsize=3,
            )
        axes.plot(
            mean,
            y[part],
            linestyle="none",
            marker=marker,
            markersize=6,
            color=colour,
            markerfacecolor=colour if filled else "white",
            markeredgewidth=1.4,
        )
    axes.axvline(0.0, color="black", linewidth=0.8)
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: plain(value)))
    axes.grid(axis="x", alpha=0.3)


_VERDICT_TEXT = {
    "higher": "higher (interval above 0)",
    "lower": "lower (interval below 0)",
    "undecided": "undecided (interval contains 0)",
    "equal": "equal in every seed (no interval)",
    NO_SPREAD: "no spread: same in every seed (no interval)",
}


def replicates_vary(frame: pd.DataFrame, keys: Sequence[str], metrics: Sequence[str]) -> bool:
    """Whether any point's metric differs between its seeds.

    >>> runs = pd.DataFrame(
    ...     {"p": ["a", "a", "b", "b"], "seed": [1, 2, 1, 2], "m": [3.0, 3.0, 5, 5]}
    ... )
    >>> varied = runs.assign(m=[3.0, 4, 5, 5])
    >>> replicates_vary(runs, ["p"], ["m"]), replicates_vary(varied, ["p"], ["m"])
    (False, True)
    """
    if "seed" not in frame or frame["seed"].nunique() < 2:
        return False
    grouped = frame.groupby(list(keys), observed=True) if keys else [((), frame)]
    return any(group[name].nunique(dropna=False) > 1 for _, group in grouped for name in metrics)


def summary_html(data: SweepData, metrics: Sequence[str], paired: dict[str, Path]) -> str:
    """The report's opening: what was compared and which differences are significant
    (for a sweep with a leaderboard, paired by its replicates there, not by seed here)."""
    frame = data.frame
    axes = [a for a in data.axes]
    compared = (
        "; ".join(
            f"{a.name}: {', '.join(map(str, pd.unique(frame[a.key].astype(str))))}" for a in axes
        )
        or "one setting"
    )
    n_seeds = int(frame["seed"].nunique()) if "seed" in frame else 1
    parts = [
        (
            f"<h2>Summary</h2><p>{len(frame)} runs: {html.escape(compared)}; "
            f"{n_seeds} seed{'s' if n_seeds != 1 else ''}; "
            f"metrics: {html.escape(', '.join(metric(m).label for m in metrics))}.</p>"
        )
    ]
    if n_seeds >= 2 and not replicates_vary(frame, [a.key for a in axes], metrics):
        parts.append(
            "<p class='note'>The replicates do not vary: every seed gives the same "
            "result at every point (e.g. seeds over a fixed trace with deterministic "
            "policies). The differences below are exact for this workload; no "
            "confidence interval is printed, since zero-width intervals would claim a "
            "certainty the seeds never tested. Vary the workload per seed (a generator, "
            "or a trace sample) to estimate uncertainty.</p>"
        )
    if not paired and data.leaderboard:
        parts.append(
            "<p>Paired differences by seed: none (one seed); the leaderboard pairs the "
            "policies by its replicates instead (the decision above, the "
            "<code>leaderboard_&lt;metric&gt;.csv</code> tables below).</p>"
        )
        return "".join(parts)
    if not paired:
        parts.append(
            "<p>No paired differences: they need a varied policy and at least two seeds.</p>"
        )
        return "".join(parts)
    baselines = sorted({str(b) for csv in paired.values() for b in pd.read_csv(csv)["baseline"]})
    parts.append(
        f"<p>Each policy is compared with {html.escape(' and '.join(baselines))} (the "
        "sweep's first policy), paired by seed, within each setting of the other varied "
        "parameters.</p>"
    )
    found: list[tuple[float, str]] = []
    exact: list[tuple[float, str]] = []
    for name, csv in paired.items():
        table = pd.read_csv(csv)
        table["comparison"] = comparison_labels(table)
        entry = metric(name)
        for row in table.to_dict("records"):
            size = abs(row["rel_mean"]) if np.isfinite(row["rel_mean"]) else 0.0
            judged = (
                ""
                if not entry.better or row["verdict"] not in ("higher", "lower", NO_SPREAD)
                else " (better)"
                if (row["mean_diff"] > 0) == (entry.better == "higher")
                else " (worse)"
            )
            if row["verdict"] in ("higher", "lower"):
                low, high, cut = possible_difference(name, row)
                low_text = f"{_signed(low)} ({CLIPPED})" if cut else _signed(low)
                found.append(
                    (
                        size,
                        (
                            f"{entry.label}, {row['comparison']}: {row['verdict']}{judged}, "
                            f"{_signed(row['mean_diff'])} [{low_text}, "
                            f"{_signed(high)}]{_relative(name, row)}"
                        ),
                    )
                )
            elif row["verdict"] == NO_SPREAD:
                exact.append(
                    (
                        size,
                        (
                            f"{entry.label}, {row['comparison']}: "
                            f"{_signed(row['mean_diff'])}{judged}{_relative(name, row)}, the same "
                            f"in all {row['seeds']} seeds"
                        ),
                    )
                )
    for listing, title in (
        (
            found,
            (
                "Significant at 95% ({n}, largest relative change first; "
                "difference [95% interval] to the baseline):"
            ),
        ),
        (
            exact,
            (
                "Differences that do not vary between seeds ({n}, largest "
                "relative change first; no interval):"
            ),
        ),
    ):
        if not listing:
            continue
        listing.sort(key=lambda item: -item[0])
        more = (
            f"<p>{len(listing) - MAX_LISTED} more in the tables below.</p>"
            if len(listing) > MAX_LISTED
            else ""
        )
        parts.append(
            f"<p>{html.escape(title.format(n=len(listing)))}</p><ul>"
            + "".join(f"<li>{html.escape(text)}</li>" for _, text in listing[:MAX_LISTED])
            + "</ul>"
            + more
        )
    if not found and not exact:
        parts.append(
            "<p>No paired difference is significant at 95% (no interval lies on one side of 0).</p>"
        )
    parts.append(
        f"<p>Paired: per seed, the policy's value minus the baseline's, then a Student t "
        f"interval over seeds; {html.escape(RELATIVE_METHOD)}; "
        f"{html.escape(CLIP_METHOD)}.</p>"
    )
    return "".join(parts)


def _signed(value: float) -> str:
    return plain(value, signed=True)


def _relative(name: str, row: dict[str, float]) -> str:
    text = relative_text(name, row["rel_mean"], row["rel_low"], row["rel_high"])
    return "" if text == "n/a" else f", {text}"


def possible_difference(name: str, row: dict[str, float]) -> tuple[float, float, bool]:
    """A paired-differences row's interval cut to what is possible (module docstring):
    ``(low, high, cut)``. The baseline's mean is the row's scale of the relative
    difference (``diff / rel``).

    >>> row = {"mean_diff": -1330.8, "ci_low": -2150.0, "ci_high": -511.6, "rel_mean": -0.972,
    ...        "rel_low": -1.571, "rel_high": -0.374}
    >>> low, high, cut = possible_difference("mean_bounded_slowdown", row)
    >>> round(low, 1), high, cut
    (-1369.1, -511.6, True)
    >>> possible_difference("total_profit", row)
    (-2150.0, -511.6, False)
    """
    low, high = float(row["ci_low"]), float(row["ci_high"])
    rel_low, _, cut = possible_relative(name, float(row["rel_low"]), float(row["rel_high"]))
    if not cut:
        return low, high, False
    pairs = (
        (row["mean_diff"], row["rel_mean"]),
        (row["ci_low"], row["rel_low"]),
        (row["ci_high"], row["rel_high"]),
    )
    scale = next(
        (
            float(d) / float(r)
            for d, r in pairs
            if np.isfinite(d) and np.isfinite(r) and r != 0 and d != 0
        ),
        float("nan"),
    )
    if not np.isfinite(scale) or scale <= 0:
        return low, high, False
    return rel_low * scale, max(high, rel_low * scale), True
