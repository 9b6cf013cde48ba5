"""Evaluation on job sequences, as RL scheduling papers report it: sampled slices of a
trace, each run by every scheduler from an empty machine, the mean bounded slowdown of
each slice, and paired comparisons across slices (the same slices for every scheduler).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.core.model import HPCModel
from market_hpc.domain.job import Job
from market_hpc.domain.platform import Platform
from market_hpc.errors import ConfigError
from market_hpc.experiment.stats import t_interval
from market_hpc.policies import make_policy
from market_hpc.policies.base import Policy


def slice_starts(
    n_jobs: int, length: int, count: int, seed: int, span: tuple[float, float] = (0.0, 1.0)
) -> list[int]:
    """``count`` seeded first indices of ``length``-job slices inside ``span`` (fractions of
    the ``n_jobs`` jobs), drawn as RLScheduler draws its test sequences (uniformly, a
    ``length`` margin kept from the trace's ends when ``span`` is the whole trace).

    >>> slice_starts(10_000, 1024, 3, seed=0) == slice_starts(10_000, 1024, 3, seed=0)
    True
    """
    low = max(int(span[0] * n_jobs), length if span[0] == 0.0 else 0)
    high = min(int(span[1] * n_jobs), n_jobs - length - 1 if span[1] == 1.0 else n_jobs) - length
    if high <= low:
        raise ConfigError(f"no {length}-job slice fits in {span} of {n_jobs} jobs")
    rng = np.random.default_rng(seed)
    return sorted(int(x) for x in rng.integers(low, high + 1, size=count))


def disjoint_starts(
    n_jobs: int, length: int, count: int, seed: int, span: tuple[float, float] = (0.0, 1.0)
) -> list[int]:
    """``count`` seeded first indices of ``length``-job slices that share no job, inside
    ``span`` (fractions of the ``n_jobs`` jobs, from ``ceil(low * n)`` to ``ceil(high * n)``,
    the bounds ``HPCDispatchEnv``'s ``start_range`` uses, so slices after a training range
    share no job with any training episode). The span is cut into ``count`` equal
    segments and one slice is drawn uniformly inside each: disjoint by construction.

    >>> disjoint_starts(10_000, 1000, 3, seed=0, span=(0.7, 1.0))
    [7000, 8000, 9000]
    """
    low, high = math.ceil(span[0] * n_jobs), min(math.ceil(span[1] * n_jobs), n_jobs)
    segment = (high - low) // count if count > 0 else 0
    if count < 1 or segment < length:
        raise ConfigError(
            f"{count} disjoint {length}-job slices do not fit in {span} of "
            f"{n_jobs} jobs ({high - low} jobs); valid: fewer or shorter slices"
        )
    rng = np.random.default_rng(seed)
    return [low + i * segment + int(rng.integers(0, segment - length + 1)) for i in range(count)]


def run_slice(
    jobs: Sequence[Job], platform: Platform | str, policy: str | Policy
) -> dict[str, float]:
    """Run one slice from an empty machine; the mean bounded slowdown
    ``max(1, (wait + run) / max(run, 10))`` and mean wait of its jobs that started."""
    made = make_policy(policy) if isinstance(policy, str) else policy
    model = HPCModel(jobs, platform, policy=made, record_timeseries=False)
    model.run()
    metrics = episode_metrics(model)
    return {"bsld": metrics["bsld"], "wait": metrics["wait"], "jobs": float(metrics["jobs"])}


def episode_metrics(model: HPCModel) -> dict[str, float]:
    """The mean bounded slowdown and wait, and the value earned, over the jobs of
    ``model``'s results that started: :func:`episode_metrics_frame`'s figures, bit for bit
    (the same columns in the same order, the same sums), from the result columns without
    building the frame.
    """
    recorder = model.recorder
    order = recorder.job_order()
    columns = recorder.jobs
    start = columns.field("start_time", order)
    kept = ~np.isnan(start)
    start = start[kept]
    run = columns.field("end_time", order)[kept] - start
    wait = start - columns.field("submit_time", order)[kept]
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, 10.0))
    return {
        "bsld": _skipna_mean(bsld),
        "wait": _skipna_mean(wait),
        "value": _skipna_sum(columns.field("value", order)[kept]),
        "jobs": len(start),
    }


def episode_metrics_frame(model: HPCModel) -> dict[str, float]:
    """:func:`episode_metrics` from ``model.jobs_frame()`` with pandas (the reference)."""
    frame = model.jobs_frame()
    frame = frame[frame["start_time"].notna()]
    run = frame["end_time"] - frame["start_time"]
    bsld = np.maximum(1.0, (frame["wait_time"] + run) / np.maximum(run, 10.0))
    return {
        "bsld": float(bsld.mean()),
        "wait": float(frame["wait_time"].mean()),
        "value": float(frame["value"].sum()),
        "jobs": len(frame),
    }


def _skipna_sum(values: np.ndarray) -> float:
    """``pandas.Series.sum``: the sum of the values, NaN counted as 0."""
    return float(np.where(np.isnan(values), 0.0, values).sum())


def _skipna_mean(values: np.ndarray) -> float:
    """``pandas.Series.mean``: the sum of the values that are not NaN over their count."""
    count = len(values) - int(np.isnan(values).sum())
    return _skipna_sum(values) / count if count else math.nan


def evaluate(
    jobs: Sequence[Job],
    platform: Platform | str,
    policies: Mapping[str, Any],
    starts: Sequence[int],
    length: int,
    label: str = "",
) -> pd.DataFrame:
    """Every policy (a scheduler name, or a callable returning a fresh ``Policy``) on every
    slice ``jobs[start:start + length]``: one row per (policy, slice)."""
    rows = []
    for start in starts:
        part = list(jobs[start : start + length])
        for name, policy in policies.items():
            made = policy() if callable(policy) else policy
            rows.append(
                {"set": label, "policy": name, "start": start, **run_slice(part, platform, made)}
            )
    return pd.DataFrame(rows)


def paired_table(frame: pd.DataFrame, baseline: str, metric: str = "bsld") -> pd.DataFrame:
    """Per policy: mean over slices with a 95 % t interval, and the paired difference
    to ``baseline`` (policy − baseline on the same slices) with its 95 % t interval."""
    wide = frame.pivot_table(index="start", columns="policy", values=metric)
    rows = []
    for name in wide.columns:
        mean, low, high = t_interval(wide[name].to_numpy())
        diff, dlow, dhigh = t_interval((wide[name] - wide[baseline]).to_numpy())
        rows.append(
            {
                "policy": name,
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                f"minus_{baseline}": diff,
                "diff_low": dlow,
                "diff_high": dhigh,
                "slices": len(wide),
            }
        )
    return pd.DataFrame(rows).set_index("policy")
