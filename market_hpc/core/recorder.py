"""Collects per-job rows, per-instant samples and run totals during a simulation.

Per-job results are kept as rows of machine numbers and allocation runs
(:mod:`market_hpc.core.job_columns`), filled through plain lists and moved into typed arrays
in bulk: a job leaving costs two ``list.extend`` calls and one append, never string
formatting. Samples and segments are buffered the same way. The allocation text and the
frames are built once, vectorised, when the run is over (pandas only then).
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.node_runs import NodeRuns, as_runs
from market_hpc.algorithms.runs_text import runs_text
from market_hpc.core.job_columns import (
    BUFFER_LIMIT,
    JOB_COLUMNS,
    STATUSES,
    BufferedFloats,
    JobColumns,
    JobRows,
    format_runs,
    text_array,
)
from market_hpc.core.state import SimulationState
from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import RESOURCES

TIMESERIES_COLUMNS = (
    "time",
    "queue_length",
    "running_jobs",
    *(f"used_{r}" for r in RESOURCES),
    "holds",
    "drops",
    "profit",
    "used_bb",
)


def format_allocation(allocation: Sequence[tuple[int, int]] | None) -> str:
    """``((0, 2), (5, 1))`` -> ``"0:2;5:1"`` (empty when never allocated).

    >>> format_allocation(((0, 2), (5, 1)))
    '0:2;5:1'
    """
    if not allocation:
        return ""
    compact = getattr(allocation, "format", None)
    if compact is not None:
        return str(compact())
    return ";".join(f"{node}:{units}" for node, units in allocation)


_SEGMENT_COLUMNS = ("job_id", "start", "end", "units", "progress_before", "progress_after")
_SEGMENT_HELD = (
    "cores",
    "gpus",
    "mics",
    "mem",
    "bb",
    "held",
)  # what a segment held, and how it ended
SEGMENT_COLUMNS = (
    "job_id",
    "segment",
    "start",
    "end",
    "nodes",
    "units",
    "cores",
    "gpus",
    "mics",
    "mem",
    "bb",
    "progress_before",
    "progress_after",
    "ended",
)
"""The columns of ``segments.csv``: one row per execution segment, by job id then segment
number (1, 2, ...). ``nodes`` is ``jobs.csv``'s ``node:units;...`` text of the segment's
allocation; ``cores`` .. ``mem`` are the amounts it held in all (whole nodes in exclusive
mode), ``bb`` its burst buffer; ``ended`` is ``finished``, ``held`` (resumed later) or
``dropped`` (held, then dropped while waiting)."""
_SEGMENT_WIDTH = len(_SEGMENT_COLUMNS) + len(_SEGMENT_HELD)  # one recorded segment
_NOT_FINISHING = object()
_STATUSES = STATUSES
# Enum members read once: ``JobStatus.X`` and hashing a member cost ~0.4 us each.
_FINISHED, _DROPPED, _REJECTED = JobStatus.FINISHED, JobStatus.DROPPED, JobStatus.REJECTED
_FINISHED_CODE, _DROPPED_CODE = _STATUSES.index(_FINISHED), _STATUSES.index(_DROPPED)
_NAN = float("nan")
__all__ = [
    "JOB_COLUMNS",
    "SEGMENT_COLUMNS",
    "TIMESERIES_COLUMNS",
    "JobColumns",
    "Recorder",
    "format_allocation",
    "format_runs",
    "text_array",
]


class Recorder:
    """Accumulates what a run produces."""

    def __init__(self, platform: Platform, record_timeseries: bool = True) -> None:
        self.platform = platform
        self.jobs = JobColumns()
        # The job columns' pending lists and their bound methods (``job_left``'s hot path).
        self._float_rows, self._int_rows = (
            self.jobs.pending_floats.extend,
            self.jobs.pending_ints.extend,
        )
        self._pending_runs, self._flush_jobs = self.jobs.pending_runs, self.jobs.FLUSH_JOBS
        self._samples = BufferedFloats()  # TIMESERIES_COLUMNS values, instant after instant
        # _SEGMENT_COLUMNS then _SEGMENT_HELD values, segment after segment (one row each)
        self._segments = BufferedFloats()
        self._sample_list, self._segment_list = self._samples.pending, self._segments.pending
        # A segment's allocation: a finished segment's is its job's (``jobs``' row, kept
        # when the job leaves, just after); a held segment's is kept here (only its runs).
        self._segment_runs = JobColumns()
        self._segment_source = array("q")  # per segment: the job's row, or ~k: held run k
        self._held_runs = 0
        self._job_rows = 0  # jobs recorded (the row the next one gets)
        self._finishing: Any = _NOT_FINISHING  # a finished segment's allocation till its job left
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
        allocation: Sequence[tuple[int, int]] | None,
    ) -> None:
        """Record a job leaving the system (finished, dropped or rejected).

        The allocation is kept as it was started (compact ``NodeRuns`` from the indexed
        allocators) and formatted only when the frame is built.
        """
        nan = _NAN
        if self._finishing is not _NOT_FINISHING:  # the segment that just finished is this job's
            if allocation is not self._finishing:
                raise RuntimeError(
                    f"job {job.job_id} left on another allocation than the finished segment"
                    " recorded just before it (a finished segment's job leaves next)"
                )
            self._finishing = _NOT_FINISHING
            self._segment_source.append(self._job_rows)
        self._job_rows += 1
        if status is _FINISHED:
            self.finished += 1
            self.value_earned += value
            if end > self.last_end:  # max(last_end, end), without the call  # noqa: PLR1730
                self.last_end = end
            code, ended = _FINISHED_CODE, end
        elif status is _DROPPED:
            self.drops += 1
            code, ended = _DROPPED_CODE, end
        else:
            if status is _REJECTED:
                self.rejected += 1
            code, ended = _STATUSES.index(status), nan  # an index, without hashing the member
        submit = job.submit
        first_submit = self.first_submit
        if first_submit is None or submit < first_submit:
            self.first_submit = submit
        cores, gpus, mics, mem = job.unit
        if first_start is None:
            self._float_rows((submit, nan, ended, nan, job.bb, job.estimate, value))
        else:
            self._float_rows((submit, first_start, ended, busy_time, job.bb, job.estimate, value))
        self._int_rows(
            (
                job.job_id,
                cores,
                gpus,
                mics,
                mem,
                job.units if job.profile is None or not allocation else _molded_units(allocation),
                job.user,
                job.queue,
                hold_count,
                code,
            )
        )  # job_columns.INT_FIELDS
        pending = self._pending_runs
        if type(allocation) is NodeRuns:
            pending.append(allocation.runs)
        else:
            pending.append(as_runs(allocation).runs if allocation else ())
        if len(pending) >= self._flush_jobs:
            self.jobs.flush()

    @property
    def rows(self) -> Sequence[tuple[Any, ...]]:
        """Jobs that left, in leaving order, as ``JOB_COLUMNS`` tuples (built on access)."""
        return JobRows(self.jobs)

    @property
    def busy_resource_seconds(self) -> np.ndarray:
        """Resource-seconds used so far, per resource."""
        return np.asarray(self._busy, dtype=np.float64)

    def segment(
        self,
        job_id: int,
        start: float,
        end: float,
        units: int,
        progress_before: float,
        progress_after: float,
        allocation: Sequence[tuple[int, int]] | None = None,
        taken_total: tuple[int, ...] = (0, 0, 0, 0),
        bb: float = 0.0,
        held: bool = False,
    ) -> None:
        """Record one execution segment (a job runs once, or once per hold/resume cycle):
        its allocation, the amounts it took in all (cores, gpus, mics, mem; their
        resource-seconds are added to ``busy_resource_seconds``), its burst buffer, and
        whether it ended by a hold (else the job finished)."""
        seconds = end - start
        busy = self._busy
        if len(taken_total) == 4:  # cores, gpus, mics, mem (unrolled: the hot path)
            cores, gpus, mics, mem = taken_total
            if cores:
                busy[0] += cores * seconds
            if gpus:
                busy[1] += gpus * seconds
            if mics:
                busy[2] += mics * seconds
            if mem:
                busy[3] += mem * seconds
        else:
            for index, amount in enumerate(taken_total):
                if amount:
                    busy[index] += amount * seconds
            cores, gpus, mics, mem = (*taken_total[:4], *(0,) * (4 - len(taken_total)))
        pending = self._segment_list
        pending.extend(
            (
                job_id,
                start,
                end,
                units,
                progress_before,
                progress_after,
                cores,
                gpus,
                mics,
                mem,
                bb,
                1.0 if held else 0.0,
            )
        )  # _SEGMENT_COLUMNS + _SEGMENT_HELD
        if held:
            self._hold_runs(allocation)
        elif self._finishing is _NOT_FINISHING:
            self._finishing = allocation  # its job leaves next, with it (``job_left``)
        else:
            raise RuntimeError(
                f"segment of job {job_id} finished before the job of the previous finished"
                " segment left"
            )
        if len(pending) >= BUFFER_LIMIT:  # (a module constant: no attribute read per call)
            self._segments.flush()
            self._segment_runs.flush()

    def _hold_runs(self, allocation: Sequence[tuple[int, int]] | None) -> None:
        """Keep a segment's own allocation (a held segment's, or a finished one whose job
        has not left yet when the segments are read)."""
        runs = self._segment_runs.pending_runs
        if type(allocation) is NodeRuns:
            runs.append(allocation.runs)
        else:
            runs.append(as_runs(allocation).runs if allocation else ())
        self._segment_source.append(~self._held_runs)
        self._held_runs += 1

    def segment_sources(self) -> np.ndarray:
        """Where each segment's allocation is kept, in recording order: its job's row of
        ``jobs`` (a finished segment ran on its job's allocation), or ``~k`` for the
        ``k``-th held segment's own runs."""
        if self._finishing is not _NOT_FINISHING:  # read before its job left: keep its own
            finishing, self._finishing = self._finishing, _NOT_FINISHING
            self._hold_runs(finishing)
        return np.array(self._segment_source, dtype=np.int64)

    def segment_table(self, rows: np.ndarray | None = None) -> pd.DataFrame:
        """Segments ``rows`` (all, in recording order, if ``None``) with their allocation:
        ``SEGMENT_COLUMNS`` but ``segment`` and ``ended`` (see ``experiment.segments_out``),
        plus ``held`` (1.0 if the segment ended by a hold)."""
        values = np.frombuffer(self._segments.values(), dtype=np.float64)
        table = values.reshape(-1, _SEGMENT_WIDTH)
        if rows is None:
            rows = np.arange(len(table))
        frame = pd.DataFrame(table[rows], columns=[*_SEGMENT_COLUMNS, *_SEGMENT_HELD])
        del values, table  # the exported buffer would stop the array from growing
        frame = frame.astype(
            {
                "job_id": np.int64,
                "units": np.int64,
                "cores": np.int64,
                "gpus": np.int64,
                "mics": np.int64,
                "mem": np.int64,
            }
        )
        frame["nodes"] = text_array(*self.segment_nodes_text(rows)) if len(rows) else []
        return frame

    def segment_nodes_text(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``nodes`` text of segments ``rows`` (in that order) as ``(offsets, data)``:
        row ``k``'s text is ``data[offsets[k]:offsets[k + 1]]`` (ASCII): a finished
        segment's from its job's runs, a held segment's from its own."""
        sources = self.segment_sources()[np.asarray(rows, dtype=np.int64)]
        jobs = self.jobs
        if (sources >= 0).all():
            return jobs.nodes_text(sources)
        held = self._segment_runs
        job_offsets = np.array(jobs.run_offsets, dtype=np.int64)
        runs = np.concatenate(
            (np.array(jobs.runs, dtype=np.int32), np.array(held.runs, dtype=np.int32))
        )
        offsets = np.concatenate(
            (job_offsets[:-1], np.array(held.run_offsets, dtype=np.int64) + job_offsets[-1])
        )
        rows_in_both = np.where(sources >= 0, sources, len(job_offsets) - 1 + ~sources)
        return runs_text(runs, offsets, rows_in_both, jobs.tables)

    def segment_field(self, name: str) -> np.ndarray:
        """One numeric column of the segments (``_SEGMENT_COLUMNS`` or ``cores`` .. ``held``),
        a copy."""
        index = (*_SEGMENT_COLUMNS, *_SEGMENT_HELD).index(name)
        values = self._segments.values()
        if not len(values):
            return np.zeros(0)
        view = np.frombuffer(values, dtype=np.float64).reshape(-1, _SEGMENT_WIDTH)[:, index]
        column = view.copy()
        del view  # the exported buffer would stop the array from growing
        return column

    @property
    def segment_count(self) -> int:
        """Segments recorded so far."""
        return len(self._segments) // _SEGMENT_WIDTH

    @property
    def segments(self) -> list[tuple[int, float, float, int, float, float]]:
        """Execution segments so far as ``(job_id, start, end, units, progress_before,
        progress_after)`` tuples."""
        return list(self.segments_frame().itertuples(index=False, name=None))

    def segments_frame(self) -> pd.DataFrame:
        """One row per execution segment."""
        values = np.array(self._segments.values(), dtype=np.float64).reshape(-1, _SEGMENT_WIDTH)
        frame = pd.DataFrame(values[:, : len(_SEGMENT_COLUMNS)], columns=list(_SEGMENT_COLUMNS))
        return frame.astype({"job_id": np.int64, "units": np.int64})

    def penalty(self, amount: float) -> None:
        """Charge a holding penalty."""
        self.penalties += amount

    @property
    def profit(self) -> float:
        """Value earned by completed jobs minus holding penalties."""
        return self.value_earned - self.penalties

    def sample(self, model: SimulationState) -> None:
        """Record one row of the time series at the current instant."""
        if not self.record_timeseries:
            return
        used = map(operator.sub, self._total, model.free_total)
        pending = self._sample_list
        pending.extend(
            (
                model.now,
                len(model.queue_agent.jobs),
                len(model.running_by_end),
                *used,
                self.holds,
                self.drops,
                self.profit,
                self.platform.burst_buffer - model.free_bb,
            )
        )
        if len(pending) >= BUFFER_LIMIT:  # (a module constant: no attribute read per call)
            self._samples.flush()

    @property
    def sample_count(self) -> int:
        """Instants sampled so far."""
        return len(self._samples) // len(TIMESERIES_COLUMNS)

    def sample_rows(self, begin: int, end: int) -> np.ndarray:
        """Rows ``begin:end`` of ``samples`` (a copy of those rows only)."""
        width = len(TIMESERIES_COLUMNS)
        return np.array(
            self._samples.values()[begin * width : end * width], dtype=np.float64
        ).reshape(-1, width)

    @property
    def samples(self) -> np.ndarray:
        """The time series so far, one row per instant (``TIMESERIES_COLUMNS``)."""
        return np.array(self._samples.values(), dtype=np.float64).reshape(
            -1, len(TIMESERIES_COLUMNS)
        )

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job that left the system, sorted by job id."""
        if not len(self.jobs):
            return pd.DataFrame(self.jobs.columns(), columns=list(JOB_COLUMNS))
        # The rows picked in ``job_order`` are ``sort_values("job_id", kind="stable")``'s.
        return pd.DataFrame(self.jobs.columns(self.job_order()), columns=list(JOB_COLUMNS))

    def job_order(self) -> np.ndarray:
        """Row order of ``jobs_frame`` over the job columns (by job id, stable)."""
        return np.argsort(self.jobs.field("job_id"), kind="stable")

    def write_jobs_csv(self, path: str | Path, chunk_rows: int = 100_000) -> int:
        """Write ``jobs_frame()`` as CSV (same columns, order and text as
        ``jobs_frame().to_csv(path, index=False)``) ``chunk_rows`` rows at a time, so the
        text of a 10^6-job run never sits in memory at once. Returns the rows written."""
        from market_hpc.csv_text import write_csv

        order = self.job_order()
        with open(path, "wb") as handle:
            for begin in range(0, max(len(order), 1), chunk_rows):
                chunk = pd.DataFrame(
                    self.jobs.columns(order[begin : begin + chunk_rows]), columns=list(JOB_COLUMNS)
                )
                write_csv(chunk, handle, header=begin == 0)
        return len(order)

    def timeseries_frame(self) -> pd.DataFrame:
        """One row per instant."""
        if not self._samples:
            return pd.DataFrame.from_records([], columns=list(TIMESERIES_COLUMNS))
        frame = pd.DataFrame(self.samples, columns=list(TIMESERIES_COLUMNS))
        # Stored as machine floats (8 bytes a value); counts are exact and go back to ints.
        counts = [name for name in TIMESERIES_COLUMNS if name not in ("time", "profit")]
        return frame.astype(dict.fromkeys(counts, np.int64))


def _molded_units(allocation: Any) -> int:
    """Units a moldable job's (last) allocation gave it, over every node it spans."""
    if len(allocation) == 1:
        return int(allocation[0][1])
    return sum(int(units) for _, units in allocation)
