"""The result files that let a reviewer audit a run: ``segments.csv`` (every execution
segment, :mod:`market_hpc.experiment.segments_out`) and, for market runs,
``market_jobs.csv``: each job's value curve, speed-up profile, earned value and the hold
penalties charged to it, so the run's total profit can be recomputed from its files::

    total_profit = market_jobs.value.sum() - market_jobs.hold_penalty_charged.sum()
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from market_hpc.domain.job import Job
from market_hpc.experiment.segments_out import segments_frame, write_frame
from market_hpc.json_text import json_text

MARKET_JOB_COLUMNS = (
    "job_id",
    "curve",
    "value_curve",
    "max_value",
    "profile",
    "status",
    "hold_count",
    "value",
    "hold_penalty_charged",
)
"""The columns of ``market_jobs.csv``: ``curve`` is the value curve's kind and
``value_curve`` its parameters (JSON, ``kind`` included); ``profile`` the run time on 1, 2,
... cores (``;``-separated, empty for rigid jobs); ``value`` what the job earned (0 unless
it finished); ``hold_penalty_charged`` = ``hold_penalty * max_value * hold_count``."""

__all__ = ["MARKET_JOB_COLUMNS", "market_jobs_frame", "segments_frame", "write_audit_files"]


def market_jobs_frame(
    jobs: Iterable[Job], jobs_frame: pd.DataFrame, hold_penalty: float
) -> pd.DataFrame | None:
    """``market_jobs.csv``'s frame, or ``None`` when no job has a value curve.

    Args:
        jobs: The workload the run was given.
        jobs_frame: The run's ``jobs.csv`` frame (status, value, hold_count by job id).
        hold_penalty: The run's penalty per hold, as a share of the job's maximum value.
    """
    rows = []
    for job in jobs:
        curve = job.payload.get("value_curve")
        if curve is None:
            continue
        profile = "" if job.profile is None else _joined(job.profile)
        rows.append(
            (
                job.job_id,
                curve.kind,
                json_text(curve.to_dict(), indent=None, sort_keys=True).rstrip("\n"),
                float(curve.max_value),
                profile,
            )
        )
    if not rows:
        return None
    frame = pd.DataFrame.from_records(
        rows, columns=["job_id", "curve", "value_curve", "max_value", "profile"]
    )
    outcome = jobs_frame.loc[
        jobs_frame["job_id"].isin(frame["job_id"]), ["job_id", "status", "hold_count", "value"]
    ]
    frame = frame.merge(outcome, on="job_id", how="left", validate="one_to_one")
    frame["hold_count"] = frame["hold_count"].fillna(0).astype("int64")
    finished = frame["status"] == "finished"
    frame["value"] = frame["value"].where(finished, 0.0).astype("float64")
    frame["hold_penalty_charged"] = hold_penalty * frame["max_value"] * frame["hold_count"]
    return frame.sort_values("job_id", kind="stable").reset_index(drop=True)[
        list(MARKET_JOB_COLUMNS)
    ]


def _joined(profile: tuple[float, ...]) -> str:
    """``profile`` as ``;``-separated ``%g`` numbers, each distinct value formatted once (a
    rigid profile of a 17,000-unit job holds two).

    >>> _joined((7200.0, 3600.0, 3600.0))
    '7200;3600;3600'
    """
    text = {t: f"{t:g}" for t in set(profile)}
    return ";".join(map(text.__getitem__, profile))


def write_audit_files(
    directory: Path, segments: pd.DataFrame | None, market_jobs: pd.DataFrame | None
) -> None:
    """Write ``segments.csv``/``.parquet`` and ``market_jobs.csv`` when given."""
    if segments is not None:
        write_frame(directory, segments)
    if market_jobs is not None:
        market_jobs.to_csv(directory / "market_jobs.csv", index=False)
