"""Audit a run's results folder: check every schedule invariant from its files alone.

:func:`audit_run` reads ``config.json`` (the platform's capacities, via ``load_platform``),
``jobs.csv`` and ``segments.csv``, every value checked for type, range and finiteness
first (:mod:`~market_hpc.experiment.audit_read`: an unreadable folder raises
``AuditReadError``), and checks, in O(n log n) over the execution segments:

* each job is listed once, with a terminal status, and ends once: a finished job's last
  segment (only it) ended ``finished``, at the job's ``end_time``; no segment follows one
  that ended ``finished`` or ``dropped``, and a job's first segment starts at its
  ``start_time``;
* no segment starts before its job's submit time or ends before it starts;
* a job's segments are numbered 1, 2, ... and do not overlap;
* work is conserved across holds: a job's first segment starts at progress 0, each next
  one at the progress the previous one ended with (``progress_after`` is recorded once
  the run's ``hold_progress_loss`` share of the held segment's work is taken off), no
  segment loses progress, and a finished job ends at progress 1;
* a job's ``jobs.csv`` row agrees with its segments: its wait is its start less its
  submit, and a finished job's run time is the sum of its segments' lengths and its
  ``nodes`` its last segment's (each where the column is given);
* a segment's ``nodes`` give it ``units`` units in all, on nodes of the platform, and its
  amounts are a whole number per unit (unless exclusive);
* no node holds more of any resource (cores, GPUs, MICs, memory) than it has at any
  time, nor the jobs together more of the shared burst buffer than the pool (1e-6 GB
  tolerance): :func:`~market_hpc.algorithms.schedule_audit.first_over_allocation`;
* ``jobs.parquet`` and ``segments.parquet``, when present, hold what the CSV files hold;
* ``summary.json``'s job counts, when given, count ``jobs.csv``'s statuses.

The first violation found is named (checks in that order; over-allocations the earliest
in time) in ``AuditReport.violation``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.schedule_audit import first_over_allocation
from market_hpc.domain.platform import Platform, load_platform
from market_hpc.domain.resources import RESOURCES
from market_hpc.errors import MarketHpcError
from market_hpc.experiment.audit_csv import AuditReadError, frame_columns, frame_fail
from market_hpc.experiment.audit_read import (
    JOB_KINDS,
    JOB_REQUIRED,
    SEGMENT_KINDS,
    SUMMARY_COUNTS,
    Placements,
    check_job_values,
    check_segment_values,
    parse_nodes,
    read_run,
)

__all__ = [
    "AuditError",
    "AuditReadError",
    "AuditReport",
    "audit_frames",
    "audit_run",
    "node_placements",
]

TERMINAL = frozenset({"finished", "dropped", "rejected"})
PROGRESS_TOLERANCE = 1e-9
BB_TOLERANCE = 1e-6
TIME_TOLERANCE = 1e-9


class AuditError(MarketHpcError):
    """A run folder violates a schedule invariant (``sweep --audit`` fails the run with it)."""


@dataclass(frozen=True)
class AuditReport:
    """What :func:`audit_run` found.

    Attributes:
        run_dir: The folder audited.
        jobs: Rows of ``jobs.csv``.
        segments: Rows of ``segments.csv``.
        violation: The first violation, named (``None``: every invariant holds).
        seconds: Time the audit took.
    """

    run_dir: Path
    jobs: int
    segments: int
    violation: str | None
    seconds: float

    @property
    def ok(self) -> bool:
        """Whether every invariant holds."""
        return self.violation is None

    def __str__(self) -> str:
        outcome = "ok" if self.ok else f"FAILED: {self.violation}"
        return (
            f"audit {self.run_dir}: {self.jobs} jobs, {self.segments} segments: {outcome} "
            f"({self.seconds:.2f} s)"
        )


def audit_run(run_dir: str | Path) -> AuditReport:
    """Check the invariants of the run written in ``run_dir``.

    Raises:
        AuditReadError: The folder cannot be read: a file missing or malformed, a value not
            of its column's type or outside its range (naming file, line and column or key).
    """
    began = time.perf_counter()
    directory = Path(run_dir)
    files = read_run(directory)
    jobs = _kept(files.jobs)
    violation = (
        _invariants(
            jobs,
            files.segments,
            files.platform,
            files.exclusive,
            files.bb_capacity,
            files.placements,
        )
        or files.twins
        or _check_summary(jobs, files.counts)
    )
    return AuditReport(
        directory, len(files.jobs), len(files.segments), violation, time.perf_counter() - began
    )


def audit_frames(
    jobs: pd.DataFrame,
    segments: pd.DataFrame,
    platform: Platform | str,
    *,
    exclusive: bool = False,
    bb_capacity: float | None = None,
) -> str | None:
    """The first violated invariant of a run given as frames, or ``None``.

    Args:
        jobs: ``jobs.csv``'s frame (at least job_id, submit_time, start_time, end_time, status).
        segments: ``segments.csv``'s frame (``recorder.SEGMENT_COLUMNS``).
        platform: The platform (or its spec) the run used.
        exclusive: Whether the run allocated whole nodes.
        bb_capacity: The burst-buffer pool (default: the platform's).

    Raises:
        AuditReadError: A value not of its column's type or outside its range.
    """
    platform = load_platform(platform)
    job_columns = frame_columns(jobs, JOB_KINDS, JOB_REQUIRED, "jobs")
    check_job_values(job_columns, frame_fail("jobs"))
    segment_columns = frame_columns(segments, SEGMENT_KINDS, tuple(SEGMENT_KINDS), "segments")
    placements = check_segment_values(segment_columns, frame_fail("segments"))
    pool = platform.burst_buffer if bb_capacity is None else bb_capacity
    return _invariants(
        _kept(pd.DataFrame(job_columns)),
        pd.DataFrame(segment_columns),
        platform,
        exclusive,
        pool,
        placements,
    )


def _kept(jobs: pd.DataFrame) -> pd.DataFrame:
    # Skipped trace lines are listed too (they may share a kept job's id); they never ran.
    return jobs[jobs["status"] != "skipped"].reset_index(drop=True)


def _invariants(
    jobs: pd.DataFrame,
    segments: pd.DataFrame,
    platform: Platform,
    exclusive: bool,
    pool: float,
    placements: Placements,
) -> str | None:
    return (
        _check_jobs(jobs)
        or _check_segments(jobs, segments)
        or _check_capacity(segments, platform, exclusive, pool, placements)
    )


def _check_summary(jobs: pd.DataFrame, counts: dict[str, int]) -> str | None:
    """``summary.json``'s job counts agree with ``jobs.csv``'s statuses."""
    for key, count in counts.items():
        status = SUMMARY_COUNTS[key]
        listed = int((jobs["status"] == status).sum())
        if listed != count:
            return f"summary.json has {key} = {count} but jobs.csv lists {listed} {status} jobs"
    return None


def node_placements(nodes: Any) -> Placements:
    """Parse ``node:units;...`` texts (:func:`~market_hpc.experiment.audit_read.parse_nodes`).

    Raises:
        ValueError: A text that is not ``node:units`` pairs separated by ``;``.

    >>> node_placements(["0:2;5:1", "", "3:4"])
    (array([0, 0, 2]), array([0, 5, 3]), array([2, 1, 4]))
    """
    return parse_nodes(nodes)


def _g(value: float) -> str:
    return f"{value:g}"


def _check_jobs(jobs: pd.DataFrame) -> str | None:
    ids = jobs["job_id"].to_numpy(np.int64)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        job = int(unique[np.argmax(counts > 1)])
        return f"job {job} is listed {int(counts.max())} times in jobs.csv: it must end once"
    status = jobs["status"].astype(str)
    open_jobs = ~status.isin(TERMINAL)
    if open_jobs.any():
        row = int(np.flatnonzero(open_jobs.to_numpy())[0])
        return f"job {int(ids[row])} has status {status.iloc[row]!r}: it never ended"
    return None


def _check_segments(jobs: pd.DataFrame, seg: pd.DataFrame) -> str | None:
    job_ids = jobs["job_id"].to_numpy(np.int64)
    by_id = np.argsort(job_ids, kind="stable")
    sorted_ids = job_ids[by_id]
    finished_jobs = set(job_ids[(jobs["status"] == "finished").to_numpy()].tolist())
    if not len(seg):
        if finished_jobs:
            return f"job {min(finished_jobs)} is finished in jobs.csv but has no segment"
        return None
    seg = seg.sort_values(["job_id", "segment"], kind="stable").reset_index(drop=True)
    sid = seg["job_id"].to_numpy(np.int64)
    number = seg["segment"].to_numpy(np.int64)
    start, end = seg["start"].to_numpy(np.float64), seg["end"].to_numpy(np.float64)
    before = seg["progress_before"].to_numpy(np.float64)
    after = seg["progress_after"].to_numpy(np.float64)
    ended = seg["ended"].astype(str).to_numpy()

    if not len(sorted_ids):
        return f"segment of job {int(sid[0])}, which jobs.csv does not list"
    where = np.searchsorted(sorted_ids, sid)
    known = (where < len(sorted_ids)) & (sorted_ids[np.minimum(where, len(sorted_ids) - 1)] == sid)
    if not known.all():
        return f"segment of job {int(sid[~known][0])}, which jobs.csv does not list"
    rows = by_id[where]
    submit = jobs["submit_time"].to_numpy(np.float64)[rows]
    early = start < submit
    if early.any():
        k = int(np.flatnonzero(early)[0])
        return (
            f"job {sid[k]} segment {number[k]} starts at t={_g(start[k])} "
            f"before its submit at t={_g(submit[k])}"
        )
    backwards = end < start
    if backwards.any():
        k = int(np.flatnonzero(backwards)[0])
        return (
            f"job {sid[k]} segment {number[k]} ends at t={_g(end[k])} before it starts at "
            f"t={_g(start[k])}"
        )

    first = np.ones(len(sid), dtype=bool)
    first[1:] = sid[1:] != sid[:-1]
    last = np.ones(len(sid), dtype=bool)
    last[:-1] = first[1:]
    starts = np.flatnonzero(first)
    expected = np.arange(len(sid)) - np.repeat(starts, np.diff(np.append(starts, len(sid)))) + 1
    misnumbered = number != expected
    if misnumbered.any():
        k = int(np.flatnonzero(misnumbered)[0])
        return f"job {sid[k]} has segment {number[k]} where segment {expected[k]} was expected"
    overlap = ~first[1:] & (start[1:] < end[:-1])
    if overlap.any():
        k = int(np.flatnonzero(overlap)[0]) + 1
        return (
            f"job {sid[k]} segment {number[k]} starts at t={_g(start[k])} before segment "
            f"{number[k - 1]} ends at t={_g(end[k - 1])}: its segments overlap"
        )

    terminal_early = ~last & (ended != "held")
    if terminal_early.any():
        k = int(np.flatnonzero(terminal_early)[0])
        return (
            f"job {sid[k]} ends twice: segment {number[k]} ended {ended[k]!r} "
            f"and segment {number[k + 1]} follows"
        )
    status = jobs["status"].astype(str).to_numpy()[rows]
    finished_seg = last & (ended == "finished")
    wrong_end = last & ((ended == "finished") != (status == "finished"))
    if wrong_end.any():
        k = int(np.flatnonzero(wrong_end)[0])
        return f"job {sid[k]} is {status[k]} in jobs.csv but its last segment ended {ended[k]!r}"
    missing = finished_jobs - set(sid[finished_seg].tolist())
    if missing:
        return f"job {min(missing)} is finished in jobs.csv but has no segment"
    job_start = jobs["start_time"].to_numpy(np.float64)[rows]
    job_end = jobs["end_time"].to_numpy(np.float64)[rows]
    start_differs = first & (job_start != start)
    if start_differs.any():
        k = int(np.flatnonzero(start_differs)[0])
        return (
            f"job {sid[k]} starts at t={_g(job_start[k])} in jobs.csv but its first segment at "
            f"t={_g(start[k])}"
        )
    end_differs = finished_seg & (job_end != end)
    if end_differs.any():
        k = int(np.flatnonzero(end_differs)[0])
        return (
            f"job {sid[k]} ends at t={_g(job_end[k])} in jobs.csv but its last segment at "
            f"t={_g(end[k])}"
        )
    return _check_job_rows(jobs, seg, rows, finished_seg) or _check_progress(
        sid, number, first, before, after, finished_seg
    )


def _close(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    close: np.ndarray = np.abs(a - b) <= TIME_TOLERANCE * np.maximum(1.0, np.abs(b))
    return close


def _check_job_rows(
    jobs: pd.DataFrame, seg: pd.DataFrame, rows: np.ndarray, finished_seg: np.ndarray
) -> str | None:
    """A job's wait, run time and allocation in ``jobs.csv`` agree with its segments."""
    ids = jobs["job_id"].to_numpy(np.int64)
    submit = jobs["submit_time"].to_numpy(np.float64)
    start = jobs["start_time"].to_numpy(np.float64)
    if "wait_time" in jobs:
        wait = jobs["wait_time"].to_numpy(np.float64)
        known = np.isfinite(start) & np.isfinite(wait)
        wrong = known & ~_close(wait, start - submit)
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            return (
                f"job {ids[k]} waits {_g(wait[k])} s in jobs.csv but was submitted at "
                f"t={_g(submit[k])} and started at t={_g(start[k])}"
            )
    finished = (jobs["status"] == "finished").to_numpy()
    if "run_time" in jobs:
        length = seg["end"].to_numpy(np.float64) - seg["start"].to_numpy(np.float64)
        busy = np.bincount(rows, weights=length, minlength=len(jobs))
        run = jobs["run_time"].to_numpy(np.float64)
        wrong = finished & ~_close(run, busy)
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            return (
                f"job {ids[k]} runs {_g(run[k])} s in jobs.csv but its segments last "
                f"{_g(busy[k])} s"
            )
    if "nodes" in jobs:
        listed = jobs["nodes"].to_numpy(dtype=object)[rows[finished_seg]]
        last = seg["nodes"].to_numpy(dtype=object)[finished_seg]
        wrong = listed != last
        if wrong.any():
            k = int(np.flatnonzero(wrong)[0])
            return (
                f"job {ids[rows[finished_seg][k]]} ran on {listed[k]!r} in jobs.csv but its "
                f"last segment on {last[k]!r}"
            )
    return None


def _check_progress(
    sid: np.ndarray,
    number: np.ndarray,
    first: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
    finished_seg: np.ndarray,
) -> str | None:
    """Work conserved across holds (``sid`` sorted by job, then segment)."""
    tol = PROGRESS_TOLERANCE
    fresh = first & (np.abs(before) > tol)
    if fresh.any():
        k = int(np.flatnonzero(fresh)[0])
        return f"job {sid[k]} segment 1 starts at progress {_g(before[k])}, not 0"
    lost = np.zeros(len(sid), dtype=bool)
    lost[1:] = ~first[1:] & (np.abs(before[1:] - after[:-1]) > tol)
    if lost.any():
        k = int(np.flatnonzero(lost)[0])
        return (
            f"job {sid[k]} segment {number[k]} starts at progress {_g(before[k])} but segment "
            f"{number[k - 1]} ended at progress {_g(after[k - 1])}: work not conserved across the "
            "hold"
        )
    shrinking = (after < before - tol) | (after > 1 + tol)
    if shrinking.any():
        k = int(np.flatnonzero(shrinking)[0])
        return (
            f"job {sid[k]} segment {number[k]} goes from progress {_g(before[k])} to {_g(after[k])}"
        )
    short = finished_seg & (np.abs(after - 1.0) > tol)
    if short.any():
        k = int(np.flatnonzero(short)[0])
        return f"job {sid[k]} finished at progress {_g(after[k])}, not 1"
    return None


def _check_capacity(
    seg: pd.DataFrame,
    platform: Platform,
    exclusive: bool,
    bb_capacity: float,
    placements: Placements,
) -> str | None:
    if not len(seg):
        return None
    units = seg["units"].to_numpy(np.int64)
    no_allocation = seg["nodes"].to_numpy(dtype=object) == ""
    if no_allocation.any():
        k = int(np.flatnonzero(no_allocation)[0])
        return (
            f"job {int(seg['job_id'].iloc[k])} segment {int(seg['segment'].iloc[k])} has no "
            "allocation"
        )
    row, node, count = placements
    placed = np.bincount(row, weights=count, minlength=len(seg))
    miscounted = placed != units
    if miscounted.any():
        k = int(np.flatnonzero(miscounted)[0])
        return (
            f"job {int(seg['job_id'].iloc[k])} segment {int(seg['segment'].iloc[k])} holds "
            f"{units[k]} units but its nodes {seg['nodes'].iloc[k]!r} give {_g(placed[k])}"
        )
    capacity = platform.capacity
    out_of_range = (node < 0) | (node >= len(capacity))
    if out_of_range.any():
        k = int(np.flatnonzero(out_of_range)[0])
        return (
            f"job {int(seg['job_id'].iloc[row[k]])} runs on node {int(node[k])}, not one of "
            f"0..{len(capacity) - 1}"
        )
    if not exclusive:
        totals = seg[list(RESOURCES)].to_numpy(np.int64)
        uneven = (totals % units[:, None] != 0).any(axis=1)
        if uneven.any():
            k = int(np.flatnonzero(uneven)[0])
            held = ", ".join(f"{name} {int(totals[k, i])}" for i, name in enumerate(RESOURCES))
            return (
                f"job {int(seg['job_id'].iloc[k])} segment {int(seg['segment'].iloc[k])} holds "
                f"{held} on {units[k]} units: not a whole amount per unit"
            )
    job = seg["job_id"].to_numpy(np.int64)
    start, end = seg["start"].to_numpy(np.float64), seg["end"].to_numpy(np.float64)
    if exclusive:
        kinds = np.arange(len(RESOURCES))
        amounts = capacity[node]
    else:
        kinds = np.flatnonzero((totals > 0).any(axis=0))  # resources some segment holds
        per_unit = totals[:, kinds] // units[:, None]
        amounts = per_unit[row] * count[:, None]
    found = first_over_allocation(job[row], start[row], end[row], node, amounts, capacity[:, kinds])
    if found is not None:
        name = RESOURCES[int(kinds[found.resource])]
        return (
            f"node {found.node} over-allocated at t={_g(found.time)}: {name} {_g(found.used)} in "
            "use "
            f"of capacity {_g(found.capacity)} (jobs {', '.join(map(str, found.jobs))})"
        )
    bb = seg["bb"].to_numpy(np.float64)
    if (bb > 0).any():
        found = first_over_allocation(
            job,
            start,
            end,
            np.zeros(len(job), dtype=np.int64),
            bb[:, None],
            np.array([[bb_capacity]]),
            tolerance=BB_TOLERANCE,
        )
        if found is not None:
            return (
                f"burst buffer over-allocated at t={_g(found.time)}: {_g(found.used)} GB in use "
                f"of {_g(found.capacity)} GB (jobs {', '.join(map(str, found.jobs))})"
            )
    return None
