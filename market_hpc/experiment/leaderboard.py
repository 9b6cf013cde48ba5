"""A leaderboard a centre can act on: policies ranked per setting (trace x load) with paired
95 % intervals against a baseline, and what each policy costs.

A sweep opts in with ``[report] leaderboard = { baseline = "easy" }`` (``LeaderboardSpec``);
``market-hpc report`` then writes ``leaderboard_<metric>.csv``, ``leaderboard.md``,
``leaderboard_summary.csv`` (``significant_counts``), ``cost.csv`` and the figures of
``leaderboard_plots``.

Decisions:
    * **Pairing.** Runs of two policies on the same replicate (``replicate`` columns: the
      time slice) and setting (``setting`` columns: trace and load) replayed the same
      jobs, so a policy is compared with the baseline by the per-replicate difference and
      Student's t interval over replicates (``stats.paired_differences``).
    * **Ranks.** Within a setting, policies are ranked by their mean over replicates, 1 the
      best in the metric's better direction (``metrics_table``; ties share the smallest
      rank). A rank says nothing about significance: the mark does.
    * **Marks.** Every paired difference gets the two-sided p-value of the paired t-test
      (``stats.paired_p_value``: 0 for the same nonzero difference on every replicate, 1
      for none, NaN for fewer than two replicates). The family of a metric is every
      comparison of its leaderboard (all settings x all non-baseline policies); its
      p-values are adjusted by Holm-Bonferroni (``stats.holm``, NaN left out of the
      count). The mark is ``better``/``worse`` than the baseline when the adjusted p is
      below ``ALPHA`` (0.05; the sign of the mean difference in the metric's better
      direction), ``equal`` when every paired difference is 0, else ``n.s.``. The 95 %
      intervals stay unadjusted: an interval off 0 with a mark ``n.s.`` is a difference
      the correction for the number of comparisons does not keep.
    * **Across traces.** ``significant_counts`` counts, per policy, the settings marked
      better, worse, n.s. or equal, the traces (the setting without its load) where some
      setting is marked better or worse, and whether it is ``consistent``: ``yes`` when
      at least one setting is significant and all significant settings, in every trace,
      go the same way; ``no`` when some go better and some worse; empty when none is
      significant.
    * **Context.** Beside the ranked metrics, ``leaderboard.md`` shows ``CONTEXT_METRICS``
      (value earned, drops, completed core-hours and share of jobs) where the results
      have them, so a rank bought by dropping jobs reads as such.
    * **Policy names.** The ``policy`` columns joined by ``+`` (``ebf+weighted``), the
      allocator left out for a scheduler run with one allocator only.
    * **Cost.** CPU seconds of each run (``run_cpu_seconds``: queue planning, simulation,
      summary) and per decision (``cpu_per_decision_ms``), and their ratio to the
      baseline on the same replicate and setting; a policy whose largest ratio exceeds
      ``COSTLY`` (20) is named in ``leaderboard.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.errors import ConfigError
from market_hpc.experiment.metrics_table import metric, metric_names
from market_hpc.experiment.stats import holm, paired_differences

COSTLY = 20.0  # policies costing more than this many times the baseline's CPU are named
ALPHA = 0.05  # family-wise error rate of the marks (Holm-Bonferroni over a metric's leaderboard)
MARKS = {"better": "▲ better", "worse": "▼ worse", "n.s.": "n.s.", "equal": "equal"}
COST_METRICS = ("run_cpu_seconds", "cpu_per_decision_ms")
CONTEXT_METRICS = ("value_earned", "jobs_dropped", "completed_core_hours", "completed_share")
COUNT_COLUMNS = ("better", "worse", "n.s.", "equal")


@dataclass(frozen=True)
class LeaderboardSpec:
    """``[report] leaderboard`` of a sweep file.

    Attributes:
        baseline: The policy every other is compared with (its policy label).
        policy: Results columns naming a policy (joined by ``+``).
        replicate: Columns pairing runs (the time slice).
        setting: Columns of a setting ranked apart (trace, load).
        metrics: Metrics ranked, each in its better direction.
        rank_by: The metric of the rank heat map.
        pareto: ``(x, y)`` metrics of the Pareto chart.
    """

    baseline: str = "easy"
    policy: tuple[str, ...] = ("scheduler", "allocator")
    replicate: tuple[str, ...] = ("start",)
    setting: tuple[str, ...] = ("trace", "load_factor")
    metrics: tuple[str, ...] = (
        "value_earned",
        "mean_bounded_slowdown",
        "mean_wait",
        "max_wait",
        "user_fairness",
        "jobs_dropped",
    )
    rank_by: str = "mean_bounded_slowdown"
    pareto: tuple[str, str] = ("mean_bounded_slowdown", "value_earned")


def leaderboard_spec(table: dict[str, Any]) -> LeaderboardSpec:
    """Validate a ``[report] leaderboard`` table.

    >>> leaderboard_spec({"baseline": "fifo"}).baseline
    'fifo'
    >>> leaderboard_spec({"metrics": ["mean_wait", "queue_wait"]})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    market_hpc.errors.ConfigError: metrics: unknown metric 'queue_wait'; valid metrics are those
    of market_hpc/experiment/metrics_table.py
    """
    fields = LeaderboardSpec.__dataclass_fields__
    if not isinstance(table, dict) or set(table) - set(fields):
        raise ConfigError(f"expected a table with keys among {', '.join(fields)}, got {table!r}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "baseline" or key == "rank_by":
            if not isinstance(value, str):
                raise ConfigError(f"{key}: expected a string, got {value!r}")
            values[key] = value
        else:
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) for v in value)
            ):
                raise ConfigError(
                    f"{key}: expected a non-empty list of column names, got {value!r}"
                )
            values[key] = tuple(value)
    spec = LeaderboardSpec(**values)
    known = set(metric_names())
    for name in (*spec.metrics, spec.rank_by, *spec.pareto):
        if name not in known:
            raise ConfigError(
                f"metrics: unknown metric {name!r}; valid metrics are those of "
                "market_hpc/experiment/metrics_table.py"
            )
    if len(spec.pareto) != 2:
        raise ConfigError(f"pareto: expected two metrics [x, y], got {list(spec.pareto)}")
    return spec


def policy_labels(frame: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    """One label per run: the policy columns joined by ``+``, the second and later left out
    where the first column's value never varies in them.

    >>> frame = pd.DataFrame(
    ...     {"scheduler": ["easy", "ebf", "ebf"],
    ...      "allocator": ["first-fit", "weighted", "balanced"]}
    ... )
    >>> policy_labels(frame, ["scheduler", "allocator"]).tolist()
    ['easy', 'ebf+weighted', 'ebf+balanced']
    """
    present = [c for c in columns if c in frame]
    if not present:
        raise ConfigError(
            f"leaderboard: none of the policy columns {list(columns)} is in the results"
        )
    first = frame[present[0]].astype(str)
    labels = first.copy()
    for column in present[1:]:
        values = frame[column].astype(str)
        varies = values.groupby(first).transform("nunique") > 1
        labels = labels.where(~varies, labels + "+" + values)
    return labels


def mark(diff: float, p_adjusted: float, better: str, alpha: float = ALPHA) -> str:
    """The leaderboard's mark of a mean paired difference ``diff`` with its Holm-adjusted
    p-value, in the metric's better direction (``higher``/``lower`` for a metric with
    none); NaN p (fewer than two replicates) is ``n.s.``.

    >>> mark(-2.0, 0.01, "lower"), mark(-2.0, 0.01, "higher"), mark(-2.0, 0.2, "lower"), mark(
    ...     1.0, float("nan"), ""
    ... )
    ('better', 'worse', 'n.s.', 'n.s.')
    >>> mark(1.0, 0.0, "")
    'higher'
    """
    if not p_adjusted < alpha or diff == 0:
        return "n.s."
    direction = "higher" if diff > 0 else "lower"
    if not better:
        return direction
    return "better" if direction == better else "worse"


def shown_metrics(spec: LeaderboardSpec, columns: Sequence[str]) -> list[str]:
    """The metrics of the leaderboard's tables: ``rank_by``, the spec's metrics and
    ``CONTEXT_METRICS``, those of ``columns`` only, each once.

    >>> columns = ["mean_wait", "mean_bounded_slowdown", "jobs_dropped"]
    >>> shown_metrics(LeaderboardSpec(metrics=("mean_wait",)), columns)
    ['mean_bounded_slowdown', 'mean_wait', 'jobs_dropped']
    """
    return [
        name
        for name in dict.fromkeys((spec.rank_by, *spec.metrics, *CONTEXT_METRICS))
        if name in columns
    ]


def setting_label(row: dict[str, Any], columns: Sequence[str]) -> str:
    """``KTH-SP2-1996 x2`` from a trace path and a load factor (other columns as
    ``name=value``; a Parallel Workloads Archive name loses its version suffix).

    >>> row = {"trace": "/x/KTH-SP2-1996-2.1-cln.swf.gz", "load_factor": 2.0}
    >>> setting_label(row, ["trace", "load_factor"])
    'KTH-SP2-1996 x2'
    """
    parts = []
    for column in columns:
        value = row[column]
        if column == "trace":  # the archive's version suffix (-2.1-cln) says nothing here
            name = Path(str(value)).name.removesuffix(".gz").removesuffix(".swf")
            parts.append(re.sub(r"-\d+(\.\d+)*-cln$", "", name))
        elif column == "load_factor":
            parts.append(f"x{value:g}")
        else:
            parts.append(f"{column}={value}")
    return " ".join(parts)


def prepare(frame: pd.DataFrame, spec: LeaderboardSpec) -> pd.DataFrame:
    """The runs with ``policy_label``, ``replicate_key`` and ``setting`` columns.

    Raises:
        ConfigError: a replicate or setting column missing from the results.
    """
    for column in (*spec.replicate, *spec.setting):
        if column not in frame:
            raise ConfigError(
                f"leaderboard: no results column {column!r} (replicate {list(spec.replicate)}, "
                f"setting {list(spec.setting)}); columns are {list(frame.columns)}"
            )
    runs = frame.copy()
    runs["policy_label"] = policy_labels(runs, spec.policy)
    runs["replicate_key"] = runs[list(spec.replicate)].astype(str).agg("|".join, axis=1)
    runs["setting"] = [
        setting_label(row, spec.setting) for row in runs[list(spec.setting)].to_dict("records")
    ]
    # the trace of a setting: its "trace" column when the setting has one (beside a load and,
    # say, an information track), else the setting without its load
    traces = (
        ["trace"] if "trace" in spec.setting else [c for c in spec.setting if c != "load_factor"]
    )
    runs["trace_label"] = (
        [setting_label(row, traces) for row in runs[traces].to_dict("records")] if traces else "all"
    )
    return runs


def setting_traces(runs: pd.DataFrame) -> dict[str, str]:
    """Each setting's trace label (the setting without its load) in ``prepare``'s frame."""
    labels: dict[str, str] = runs.groupby("setting", sort=False)["trace_label"].first().to_dict()
    return labels


def ranking(runs: pd.DataFrame, name: str, baseline: str) -> pd.DataFrame:
    """Per setting and policy: mean over replicates, rank, paired difference to
    ``baseline`` with its 95 % interval and p-value, the p-value adjusted over the whole
    table (Holm), and the mark (module docstring).

    Args:
        runs: ``prepare``'s frame.
        name: The metric.
        baseline: The baseline's policy label.

    Returns:
        Columns ``setting, rank, policy, mean, replicates, diff, ci_low, ci_high, p_value,
        p_adjusted, mark``, sorted by setting (in order of appearance) and rank.
    """
    better = metric(name).better
    rows = []
    for setting, group in runs.groupby("setting", sort=False):
        means = group.groupby("policy_label", sort=False)[name].mean()
        counts = group.groupby("policy_label", sort=False)[name].count()
        order = -means if better == "higher" else means
        ranks = order.rank(method="min")
        compared = {}
        if baseline in means.index:
            table = paired_differences(group, "policy_label", name, "replicate_key", baseline)
            compared = {row["policy"]: row for row in table.to_dict("records")}
        for policy in means.index:
            row = compared.get(policy)
            rows.append(
                {
                    "setting": setting,
                    "rank": int(ranks[policy]),
                    "policy": policy,
                    "mean": float(means[policy]),
                    "replicates": int(counts[policy]),
                    "diff": row["mean_diff"] if row else (0.0 if policy == baseline else np.nan),
                    "ci_low": row["ci_low"] if row else np.nan,
                    "ci_high": row["ci_high"] if row else np.nan,
                    "p_value": row["p_value"] if row else np.nan,
                    "mark": (
                        ("equal" if row["verdict"] == "equal" else "")
                        if row
                        else ("baseline" if policy == baseline else "no baseline")
                    ),
                }
            )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table.insert(len(table.columns) - 1, "p_adjusted", holm(table["p_value"].to_numpy()))
    tested = table["mark"] == ""
    table.loc[tested, "mark"] = [
        mark(diff, p, better)
        for diff, p in zip(table.loc[tested, "diff"], table.loc[tested, "p_adjusted"])
    ]
    order = {s: i for i, s in enumerate(pd.unique(table["setting"]))}
    return table.sort_values(
        ["setting", "rank", "policy"],
        key=lambda c: c.map(order) if c.name == "setting" else c,
        kind="stable",
    ).reset_index(drop=True)


def counts_markdown(counts: pd.DataFrame, baseline: str, label: str) -> list[str]:
    """The ``significant_counts`` table (with traces) as a Markdown section, ``label``
    naming the ranked metric.

    >>> counts = pd.DataFrame({"policy": ["sjf"], "better": [2], "worse": [0], "n.s.": [1],
    ...                        "equal": [0], "traces": [2], "traces_better": [2],
    ...                        "traces_worse": [0], "consistent": ["yes"]})
    >>> counts_markdown(counts, "easy", "wait")[-2]
    '| sjf | 2 | 0 | 1 | 0 | 2 of 2 | 0 of 2 | yes |'
    """
    if counts.empty:
        return []
    return [
        (
            f"## Against {baseline}, by {label}: settings where each policy is significantly "
            "better, worse "
            f"(Holm-adjusted p < {ALPHA:g} over every setting and policy), not significantly "
            "different, or "
            "equal on every slice; traces where it is better or worse in some setting; consistent: "
            "every "
            "significant setting goes the same way"
        ),
        "",
        "| policy | better | worse | n.s. | equal | traces better | traces worse | consistent |",
        "|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['policy']} | {r['better']} | {r['worse']} | {r['n.s.']} | {r['equal']} | "
            f"{r['traces_better']} of {r['traces']} | {r['traces_worse']} of {r['traces']} | "
            f"{r['consistent'] or '-'} |"
            for _, r in counts.iterrows()
        ),
        "",
    ]


def cost_table(runs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per policy: mean CPU per run and per decision, and the ratio of its run CPU to the
    baseline's on the same replicate and setting (mean and largest).

    >>> runs = pd.DataFrame({"policy_label": ["easy", "cp", "easy", "cp"], "setting": ["a"] * 4,
    ...                      "replicate_key": ["1", "1", "2", "2"],
    ...                      "run_cpu_seconds": [1.0, 30.0, 2.0, 20.0],
    ...                      "cpu_per_decision_ms": [0.1, 3.0, 0.1, 2.0],
    ...                      "decisions": [10, 10, 20, 10]})
    >>> row = cost_table(runs, "easy").set_index("policy").loc["cp"]
    >>> float(row.ratio_mean), float(row.ratio_max), bool(row.costly)
    (20.0, 30.0, True)
    """
    missing = [c for c in COST_METRICS if c not in runs]
    if missing:
        return pd.DataFrame()
    keys = ["setting", "replicate_key"]
    base = (
        runs[runs["policy_label"] == baseline]
        .groupby(keys)["run_cpu_seconds"]
        .mean()
        .rename("base_cpu")
    )
    joined = runs.join(base, on=keys)
    joined["ratio"] = joined["run_cpu_seconds"] / joined["base_cpu"].where(joined["base_cpu"] > 0)
    grouped = joined.groupby("policy_label", sort=False)
    table = pd.DataFrame(
        {
            "runs": grouped.size(),
            "run_cpu_s_mean": grouped["run_cpu_seconds"].mean(),
            "run_cpu_s_max": grouped["run_cpu_seconds"].max(),
            "cpu_per_decision_ms": grouped["cpu_per_decision_ms"].mean(),
            "decisions_mean": grouped["decisions"].mean() if "decisions" in joined else np.nan,
            "ratio_mean": grouped["ratio"].mean(),
            "ratio_max": grouped["ratio"].max(),
        }
    ).reset_index(names="policy")
    table["costly"] = table["ratio_max"] > COSTLY
    return table.sort_values("run_cpu_s_mean", kind="stable").reset_index(drop=True)


def significant_counts(table: pd.DataFrame, traces: dict[str, str] | None = None) -> pd.DataFrame:
    """Per policy: settings where it is better, worse, not significantly different, or
    equal (marks after the Holm adjustment); with ``traces`` (setting -> trace) also the
    traces compared, those with a setting better (``traces_better``) or worse
    (``traces_worse``), and ``consistent`` (module docstring: ``yes``, ``no`` or empty).

    >>> table = pd.DataFrame({"policy": ["a", "a", "a", "b"],
    ...                       "setting": ["k x1", "k x2", "h x1", "k x1"],
    ...                       "mark": ["better", "n.s.", "better", "equal"]})
    >>> significant_counts(table).to_dict("records")[1]
    {'policy': 'b', 'better': 0, 'worse': 0, 'n.s.': 0, 'equal': 1}
    >>> traces = {"k x1": "k", "k x2": "k", "h x1": "h"}
    >>> significant_counts(table, traces).to_dict("records")[0]  # doctest: +NORMALIZE_WHITESPACE
    {'policy': 'a', 'better': 2, 'worse': 0, 'n.s.': 1, 'equal': 0, 'traces': 2,
     'traces_better': 2, 'traces_worse': 0, 'consistent': 'yes'}
    """
    counts = pd.crosstab(table["policy"], table["mark"])
    for column in COUNT_COLUMNS:
        if column not in counts:
            counts[column] = 0
    counts = counts[list(COUNT_COLUMNS)].reset_index()
    counts.columns.name = None
    counts = counts.astype(dict.fromkeys(COUNT_COLUMNS, int))
    if traces is None:
        return counts
    marked = table.assign(trace=table["setting"].map(traces))
    per_policy = marked.groupby("policy")
    counts["traces"] = counts["policy"].map(per_policy["trace"].nunique()).astype(int)
    for direction in ("better", "worse"):
        hits = marked[marked["mark"] == direction].groupby("policy")["trace"].nunique()
        counts[f"traces_{direction}"] = counts["policy"].map(hits).fillna(0).astype(int)
    significant = (counts["better"] + counts["worse"]) > 0
    mixed = (counts["better"] > 0) & (counts["worse"] > 0)
    counts["consistent"] = np.where(~significant, "", np.where(mixed, "no", "yes"))
    return counts
