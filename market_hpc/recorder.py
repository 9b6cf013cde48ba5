"""Collects per-job rows, per-instant samples and run totals during a simulation.

Plain Python lists of tuples on the hot path; pandas only when the run is over.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import RESOURCES

if TYPE_CHECKING:
    from market_hpc.model import HPCModel

JOB_COLUMNS = (
    "job_id", "submit_time", "start_time", "end_time", "wait_time", "run_time", "status",
    "cores", "gpus", "mics", "mem", "bb", "units", "estimate", "user", "queue", "nodes",
    "value", "hold_count",
)
TIMESERIES_COLUMNS = (
    "time", "queue_length", "running_jobs", *(f"used_{r}" for r in RESOURCES),
    "holds", "drops", "profit", "used_bb",
)


def format_allocation(allocation: tuple[tuple[int, int], ...] | None) -> str:
    """``((0, 2), (5, 1))`` -> ``"0:2;5:1"`` (empty when never allocated).

    >>> format_allocation(((0, 2), (5, 1)))
    '0:2;5:1'
    """
    if not allocation:
        return ""
    return ";".join(f"{node}:{units}" for node, units in allocation)


class Recorder:
    """Accumulates what a run produces."""

    def __init__(self, platform: Platform, record_timeseries: bool = True) -> None:
        self.platform = platform
        self.rows: list[tuple] = []  # type: ignore[type-arg]
        self.samples: list[tuple] = []  # type: ignore[type-arg]
        self.segments: list[tuple[int, float, float, int, float, float]] = []
        self.record_timeseries = record_timeseries
        self._busy = [0.0] * len(RESOURCES)
        self._total = tuple(platform.total.tolist())
        self.holds = 0
        self.drops = 0
        self.rejected = 0
        self.starved = 0
        self.finished = 0
        self.value_earned = 0.0
        self.penalties = 0.0
        self.first_submit: float | None = None
        self.last_end = 0.0

    def job_left(
        self,
        job: Job,
        status: JobStatus,
        first_start: float | None,
        end: float,
        busy_time: float,
        hold_count: int,
        value: float,
        allocation: tuple[tuple[int, int], ...] | None,
    ) -> None:
        """Record a job leaving the system (finished, dropped or rejected).

        The allocation is stored formatted: a compact string instead of a tuple of pairs
        (wide jobs on CEA-Curie span thousands of nodes).
        """
        if status is JobStatus.FINISHED:
            self.finished += 1
            self.value_earned += value
            self.last_end = max(self.last_end, end)
        elif status is JobStatus.DROPPED:
            self.drops += 1
        elif status is JobStatus.REJECTED:
            self.rejected += 1
        if self.first_submit is None or job.submit < self.first_submit:
            self.first_submit = job.submit
        started = first_start is not None
        units = job.units if not allocation or not job.moldable else allocation[0][1]
        unit = job.unit
        self.rows.append((
            job.job_id, job.submit,
            first_start if started else np.nan,
            end if status in (JobStatus.FINISHED, JobStatus.DROPPED) else np.nan,
            (first_start - job.submit) if started else np.nan,  # type: ignore[operator]
            busy_time if started else np.nan,
            status.value, units * unit[0], units * unit[1], units * unit[2], units * unit[3],
            job.bb, units, job.estimate, job.user, job.queue, format_allocation(allocation),
            value, hold_count,
        ))

    def busy(self, taken_total: tuple[int, ...], seconds: float) -> None:
        """Add resource-seconds used by a finished or held segment."""
        busy = self._busy
        for index, amount in enumerate(taken_total):
            busy[index] += amount * seconds

    @property
    def busy_resource_seconds(self) -> np.ndarray:
        """Resource-seconds used so far, per resource."""
        return np.asarray(self._busy, dtype=np.float64)

    def segment(self, job_id: int, start: float, end: float, units: int, progress_before: float,
                progress_after: float) -> None:
        """Record one execution segment (a job runs once, or once per hold/resume cycle)."""
        self.segments.append((job_id, start, end, units, progress_before, progress_after))

    def segments_frame(self) -> pd.DataFrame:
        """One row per execution segment."""
        return pd.DataFrame.from_records(
            self.segments,
            columns=["job_id", "start", "end", "units", "progress_before", "progress_after"],
        )

    def penalty(self, amount: float) -> None:
        """Charge a holding penalty."""
        self.penalties += amount

    @property
    def profit(self) -> float:
        """Value earned by completed jobs minus holding penalties."""
        return self.value_earned - self.penalties

    def sample(self, model: HPCModel) -> None:
        """Record one row of the time series at the current instant."""
        if not self.record_timeseries:
            return
        used = map(operator.sub, self._total, model.free_total)
        self.samples.append((
            model.now, len(model.queue_agent.jobs), len(model.running_by_end), *used,
            self.holds, self.drops, self.profit, self.platform.burst_buffer - model.free_bb,
        ))

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job that left the system, sorted by job id."""
        frame = pd.DataFrame.from_records(self.rows, columns=list(JOB_COLUMNS))
        return frame.sort_values("job_id", kind="stable").reset_index(drop=True)

    def timeseries_frame(self) -> pd.DataFrame:
        """One row per instant."""
        return pd.DataFrame.from_records(self.samples, columns=list(TIMESERIES_COLUMNS))
