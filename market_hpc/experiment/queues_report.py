"""Hybrid queues (Kondameedi & Vadhiyar) in the report: period rows and the paper's comparisons.

A multi-queue run's summary carries one scalar per period and metric, ``period<k>_<metric>``
(``queues.queue_summary``), so a sweep stores them in its ordinary per-run rows (and
resumes, runs on Dask and reports like any sweep). ``period_rows`` turns those columns
back into one row per run and period; ``compare`` computes the paper's comparisons
(§IV-B) between the strategies of each study (the other varying parameters: trace,
platform...). ``market-hpc report`` writes both tables when the columns are present.
``period_metrics`` and ``plan_row`` compute a run's per-period values (``queues.queue_summary``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.domain.job import Job
from market_hpc.domain.queues import QueueConfig

PERIOD_COLUMN = re.compile(r"^period(\d+)_(.+)$")
STRATEGY = "queues.strategy"

# The paper's comparisons (§IV-B): (strategy, baseline, metric).
CLAIMS = (
    ("dpnlpm", "static", "mean_wait_h"),
    ("dpnlpm", "proportional", "mean_wait_h"),
    ("dqr", "dpnlpm", "mean_wait_h"),
    ("dqr", "static", "mean_wait_h"),
    ("hybrid", "static", "mean_wait_h"),
    ("hybrid", "static", "max_wait_h"),
    ("hybrid", "nonpartitioned", "mean_wait_h"),
    ("hybrid", "static", "bsld"),
    ("hybrid", "nonpartitioned", "bsld"),
    ("hybrid", "static", "utilisation"),
    ("hybrid", "dqr", "utilisation"),
)


def _short(value: object) -> str:
    text = str(value)
    return Path(text).name.split(".")[0] if "/" in text else text


def period_rows(frame: pd.DataFrame, params: Sequence[str]) -> pd.DataFrame:
    """One row per run and period: ``study`` (the varying parameters other than the
    strategy, trace paths shortened), ``strategy``, ``seed``, ``period`` and the
    period's metrics; empty when no column is a period column.

    >>> frame = pd.DataFrame({"queues.strategy": ["hybrid"], "platform": ["hpc2n"], "seed": [1],
    ...                       "period0_mean_wait_h": [2.0], "period1_mean_wait_h": [1.0]})
    >>> rows = period_rows(frame, ["queues.strategy", "platform"]).to_dict("records")
    >>> rows  # doctest: +NORMALIZE_WHITESPACE
    [{'study': 'all', 'strategy': 'hybrid', 'seed': 1, 'period': 0, 'mean_wait_h': 2.0},
     {'study': 'all', 'strategy': 'hybrid', 'seed': 1, 'period': 1, 'mean_wait_h': 1.0}]
    """
    matches = {c: PERIOD_COLUMN.match(c) for c in frame.columns}
    columns = {c: (int(m.group(1)), m.group(2)) for c, m in matches.items() if m}
    strategy = next(
        (c for c in (STRATEGY, "strategy") if c in frame), None
    )  # sweeps name it "strategy"
    if not columns or strategy is None:
        return pd.DataFrame()
    others = [
        p for p in params if p != strategy and p in frame and frame[p].nunique(dropna=False) > 1
    ]
    rows = []
    for _, run in frame.iterrows():
        study = ", ".join(_short(run[p]) for p in others) or "all"
        periods: dict[int, dict[str, object]] = {}
        for column, (period, name) in columns.items():
            periods.setdefault(period, {})[name] = run[column]
        for period in sorted(periods):
            values = periods[period]
            if all(pd.isna(v) for v in values.values()):
                continue  # a shorter trace of the same sweep has no such period
            rows.append(
                {
                    "study": study,
                    "strategy": run[strategy],
                    "seed": run.get("seed", 0),
                    "period": period,
                    **values,
                }
            )
    return pd.DataFrame(rows)


def compare(table: pd.DataFrame) -> pd.DataFrame:
    """Relative change of a strategy against a baseline over the evaluated periods
    (period >= 1, seeds averaged): mean and best (most negative for waits, largest for
    utilisation) of the per-period changes, and the periods where the strategy did better."""
    rows = []
    evaluated = table[table["period"] >= 1]
    for study, group in evaluated.groupby("study"):
        metrics = [m for _, _, m in CLAIMS if m in group]
        wide = (
            group.groupby(["period", "strategy"])[sorted(set(metrics))].mean().unstack("strategy")
        )
        for strategy, baseline, metric in CLAIMS:
            if (metric, strategy) not in wide or (metric, baseline) not in wide:
                continue
            ours, base = wide[(metric, strategy)], wide[(metric, baseline)]
            change = (ours - base) / base.where(base != 0)
            better = (ours > base) if metric == "utilisation" else (ours < base)
            best = change.max() if metric == "utilisation" else change.min()
            rows.append(
                {
                    "study": study,
                    "comparison": f"{strategy} vs {baseline}",
                    "metric": metric,
                    "mean_change_pct": round(100 * float(change.mean()), 1),
                    "best_change_pct": round(100 * float(best), 1),
                    "periods_better": f"{int(better.sum())}/{len(better)}",
                }
            )
    return pd.DataFrame(rows)


def queue_tables(frame: pd.DataFrame, params: Sequence[str], out: Path) -> list[tuple[str, Path]]:
    """Write ``queue_periods.csv`` and ``queue_claims.csv`` into ``out`` when the sweep
    has multi-queue runs; return (title, file) of each table written."""
    periods = period_rows(frame, params)
    if periods.empty:
        return []
    written = [("Hybrid queues: metrics and plan per period", out / "queue_periods.csv")]
    periods.to_csv(written[0][1], index=False)
    claims = compare(periods)
    if not claims.empty:
        written.append(
            ("Hybrid queues: the paper's comparisons (periods >= 1)", out / "queue_claims.csv")
        )
        claims.to_csv(written[1][1], index=False)
    return written


BSLD_FLOOR = 10.0


def plan_row(config: QueueConfig, details: dict[str, Any], strategy: str) -> dict[str, Any]:
    """How the configuration in force in a period was made: partitioned queues, pool
    nodes, and for DP-NLPM-derived strategies where the partition sizes came from
    (``nlp``, ``sample``, ``fallback``), the surrogates' smallest R^2, predicted and
    simulated weighted waits (h) of the NLP optimum and the best sample, SLSQP failures."""
    queues = sum(1 for q in config.queues if not q.reservation) if config.mode != "shared" else 1
    row: dict[str, Any] = {
        "queues": queues,
        "pool_nodes": config.pool,
        "plan_source": "",
        "r2_min": math.nan,
        "cv_r2_min": math.nan,
        "nlp_pred_h": math.nan,
        "nlp_sim_h": math.nan,
        "sample_pred_h": math.nan,
        "sample_sim_h": math.nan,
        "slsqp_failures": 0,
    }
    nlp = details.get("dpnlpm")
    if nlp is not None and strategy in ("dpnlpm", "dqr", "hybrid"):
        row.update(
            {
                "plan_source": nlp.get("source", ""),
                "r2_min": min(nlp["r2"], default=math.nan),
                "cv_r2_min": min(nlp.get("cv_r2", []), default=math.nan),
                "slsqp_failures": nlp.get("failures", 0),
            }
        )
        row.update(
            {
                k: nlp[k]
                for k in ("nlp_pred_h", "nlp_sim_h", "sample_pred_h", "sample_sim_h")
                if k in nlp
            }
        )
    elif strategy in ("static", "proportional"):
        row["plan_source"] = "eq7"
    return row


def period_metrics(
    frame: pd.DataFrame,
    jobs: Sequence[Job],
    starts: Sequence[float],
    period: float,
    total_cores: int,
) -> list[dict[str, Any]]:
    """Mean and max wait, mean bounded slowdown (10 s) of the jobs submitted in each
    period, and utilisation (busy core-seconds inside the period / capacity)."""
    started = frame[frame["start_time"].notna()]
    submit = started["submit_time"].to_numpy(float)
    wait = started["wait_time"].to_numpy(float)
    run = (started["end_time"] - started["start_time"]).to_numpy(float)
    cores = started["cores"].to_numpy(float)
    begin, end = started["start_time"].to_numpy(float), started["end_time"].to_numpy(float)
    rows = []
    for k, start in enumerate(starts):
        stop = start + period
        mine = (submit >= start) & (submit < stop)
        overlap = np.clip(np.minimum(end, stop) - np.maximum(begin, start), 0, None)
        bsld = np.maximum(1.0, (wait[mine] + run[mine]) / np.maximum(run[mine], BSLD_FLOOR))
        rows.append(
            {
                "period": k,
                "start": start,
                "jobs": int(mine.sum()),
                "mean_wait_h": float(wait[mine].mean() / 3600) if mine.any() else 0.0,
                "max_wait_h": float(wait[mine].max() / 3600) if mine.any() else 0.0,
                "bsld": float(bsld.mean()) if mine.any() else 0.0,
                "utilisation": float((cores * overlap).sum() / (total_cores * period)),
            }
        )
    return rows
