"""Collects per-job rows, per-instant samples and run totals during a simulation.

Per-job results are kept as typed columns (``array`` of machine numbers, the allocation
objects as they were started) and formatted once, when the frame is built: a job leaving
costs a few appends, never string formatting. Samples are plain tuples. pandas only when
the run is over.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.node_runs import NodeRuns, as_runs
from market_hpc.algorithms.runs_text import RunTables, runs_text
from market_hpc.domain.job import Job, JobStatus
from market_hpc.domain.platform import Platform
from market_hpc.domain.resources import RESOURCES
from market_hpc.state import SimulationState

JOB_COLUMNS = (
    "job_id", "submit_time", "start_time", "end_time", "wait_time", "run_time", "status",
    "cores", "gpus", "mics", "mem", "bb", "units", "estimate", "user", "queue", "nodes",
    "value", "hold_count",
)
TIMESERIES_COLUMNS = (
    "time", "queue_length", "running_jobs", *(f"used_{r}" for r in RESOURCES),
    "holds", "drops", "profit", "used_bb",
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
_STATUSES = tuple(JobStatus)
_STATUS_CODE = {status: code for code, status in enumerate(_STATUSES)}
# Enum members read once: ``JobStatus.X`` and hashing a member cost ~0.4 us each.
_FINISHED, _DROPPED, _REJECTED = JobStatus.FINISHED, JobStatus.DROPPED, JobStatus.REJECTED
_NAN = float("nan")
_FLOAT_COLUMNS = ("submit_time", "start_time", "end_time", "run_time", "bb", "estimate", "value")
_INT_COLUMNS = ("job_id", "cores", "gpus", "mics", "mem", "units", "user", "queue", "hold_count")


def format_runs(flat: Sequence[int]) -> str:
    """Flat runs ``first, count, units, ...`` as ``node:units`` pairs joined by ``;``.

    >>> format_runs([4, 2, 1, 9, 1, 3])
    '4:1;5:1;9:3'
    """
    if len(flat) == 3:  # one run (most jobs)
        first, count, units = flat
        if count == 1:
            return f"{first}:{units}"
        return f"{f':{units};'.join(map(str, range(first, first + count)))}:{units}"
    parts = []
    for i in range(0, len(flat), 3):
        first, count, units = flat[i], flat[i + 1], flat[i + 2]
        if count == 1:
            parts.append(f"{first}:{units}")
        else:  # "4:1;5:1;6:1" as "4" ":1;" "5" ":1;" "6" then ":1"
            parts.append(f"{f':{units};'.join(map(str, range(first, first + count)))}:{units}")
    return ";".join(parts)


def text_array(offsets: np.ndarray, data: np.ndarray) -> Any:
    """Strings ``data[offsets[k]:offsets[k + 1]]`` (ASCII) as the array pandas makes of a
    list of them: Arrow-backed ``str`` built straight from the buffers when that is what
    pandas infers (pandas 3 with pyarrow), else the list of Python strings.

    >>> list(text_array(np.array([0, 2, 2, 5]), np.frombuffer(b"0:1:2", dtype=np.uint8)))
    ['0:', '', '1:2']
    """
    dtype = _inferred_text_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        import pyarrow as pa

        strings = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64)),
                                                   pa.py_buffer(data))
        return pd.array(strings, dtype=dtype)
    text = data.tobytes().decode()
    return [text[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


_TEXT_DTYPE: list[Any] = []


def _inferred_text_dtype() -> Any:
    """The column type pandas gives a list of strings (``str`` or ``object``)."""
    if not _TEXT_DTYPE:
        _TEXT_DTYPE.append(pd.Series(["0:1"]).dtype)
    return _TEXT_DTYPE[0]


class JobColumns:
    """Per-job results as columns: machine numbers in ``array``s, allocations as flat runs.

    A job's last allocation is stored as ``first, count, units`` triples in ``runs`` (from
    ``run_offsets[i]`` to ``run_offsets[i + 1]``): a few machine words per job, formatted
    as ``node:units`` text only when a frame or file is written. ``rows`` reads the
    columns back as ``JOB_COLUMNS`` tuples (in leaving order) for displays.
    """

    def __init__(self) -> None:
        self.floats = {name: array("d") for name in _FLOAT_COLUMNS}
        self.ints = {name: array("q") for name in _INT_COLUMNS}
        self.status = array("b")
        self.runs = array("i")  # node, count, units: 4 bytes each (issue 13 memory)
        self.run_offsets = array("q", [0])
        self.tables = RunTables()  # the ``nodes`` text tables, kept from one chunk to the next
        # Bound ``append`` of every column, in column order (``Recorder.job_left``'s hot path).
        self.appends: tuple[Callable[[Any], None], ...] = (*(column.append for column in self.floats.values()),
                        *(column.append for column in self.ints.values()), self.status.append)

    def add_allocation(self, allocation: Sequence[tuple[int, int]] | None) -> None:
        """Append one job's allocation (``None`` or empty: never started)."""
        runs = self.runs
        if type(allocation) is NodeRuns:
            for run in allocation.runs:
                runs.extend(run)
        elif allocation:
            for run in as_runs(allocation).runs:
                runs.extend(run)
        self.run_offsets.append(len(runs))

    def nodes(self, index: int) -> str:
        """The ``nodes`` text of the ``index``-th job."""
        return format_runs(self.runs[self.run_offsets[index]:self.run_offsets[index + 1]])

    def nodes_column(self, rows: np.ndarray) -> Any:
        """The ``nodes`` text of the jobs ``rows`` (in that order), built at once by
        :func:`~market_hpc.algorithms.runs_text.runs_text`: the array pandas would make of
        the list of their strings (Arrow-backed ``str`` under pandas 3), that list otherwise."""
        if not len(rows):
            return []
        runs = np.frombuffer(self.runs, dtype=np.int32) if len(self.runs) else np.zeros(0, dtype=np.int32)
        offsets, data = runs_text(runs, np.frombuffer(self.run_offsets, dtype=np.int64), rows, self.tables)
        del runs  # the exported buffer would stop the array from growing
        return text_array(offsets, data)

    def __len__(self) -> int:
        return len(self.status)

    def columns(self, order: np.ndarray | None = None) -> dict[str, Any]:
        """Every ``JOB_COLUMNS`` column as a numpy array or list, in leaving order (or
        for the rows ``order`` selects, in that order)."""
        def pick(column: array, dtype: type) -> np.ndarray:  # type: ignore[type-arg]
            if order is None:  # a copy: an exported buffer would stop the array from growing
                return np.array(column, dtype=dtype)
            # Only the selected rows are copied (the temporary view is dropped at once).
            return np.frombuffer(column, dtype=dtype)[order] if len(column) else np.empty(0, dtype=dtype)

        floats = {name: pick(column, np.float64) for name, column in self.floats.items()}
        ints = {name: pick(column, np.int64) for name, column in self.ints.items()}
        names = np.array([status.value for status in _STATUSES], dtype=object)
        values: dict[str, Any] = {**floats, **ints}
        values["wait_time"] = floats["start_time"] - floats["submit_time"]
        values["status"] = names[pick(self.status, np.int8)]
        values["nodes"] = self.nodes_column(np.arange(len(self)) if order is None else order)
        return {name: values[name] for name in JOB_COLUMNS}

    def row(self, index: int) -> tuple[Any, ...]:
        """One job's row, as ``JOB_COLUMNS``."""
        floats, ints = self.floats, self.ints
        start, submit = floats["start_time"][index], floats["submit_time"][index]
        values: dict[str, Any] = {name: column[index] for name, column in floats.items()}
        values.update({name: column[index] for name, column in ints.items()})
        values["wait_time"] = start - submit
        values["status"] = _STATUSES[self.status[index]].value
        values["nodes"] = self.nodes(index)
        return tuple(values[name] for name in JOB_COLUMNS)


class _Rows(Sequence):  # type: ignore[type-arg]
    """``JobColumns`` read as a sequence of row tuples."""

    def __init__(self, columns: JobColumns) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns)

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self._columns.row(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._columns.row(index)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return (self._columns.row(i) for i in range(len(self)))


class Recorder:
    """Accumulates what a run produces."""

    def __init__(self, platform: Platform, record_timeseries: bool = True) -> None:
        self.platform = platform
        self.jobs = JobColumns()
        self._samples = array("d")  # TIMESERIES_COLUMNS values, instant after instant
        self._segments = array("d")  # _SEGMENT_COLUMNS values, segment after segment
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
        if status is _FINISHED:
            self.finished += 1
            self.value_earned += value
            self.last_end = max(self.last_end, end)
        elif status is _DROPPED:
            self.drops += 1
        elif status is _REJECTED:
            self.rejected += 1
        submit = job.submit
        if self.first_submit is None or submit < self.first_submit:
            self.first_submit = submit
        nan = _NAN
        started = first_start is not None
        units = job.units if job.profile is None or not allocation else allocation[0][1]
        cores, gpus, mics, mem = job.unit
        columns = self.jobs
        (submit_time, start_time, end_time, run_time, bb, estimate, value_, job_id, cores_, gpus_, mics_, mem_,
         units_, user, queue, hold_count_, status_) = columns.appends  # _FLOAT_COLUMNS, _INT_COLUMNS, status
        submit_time(submit)
        start_time(first_start if started else nan)
        end_time(end if status is _FINISHED or status is _DROPPED else nan)
        run_time(busy_time if started else nan)
        bb(job.bb)
        estimate(job.estimate)
        value_(value)
        job_id(job.job_id)
        cores_(units * cores)
        gpus_(units * gpus)
        mics_(units * mics)
        mem_(units * mem)
        units_(units)
        user(job.user)
        queue(job.queue)
        hold_count_(hold_count)
        status_(_STATUSES.index(status))  # the code of _STATUS_CODE, without hashing the member
        columns.add_allocation(allocation)

    @property
    def rows(self) -> Sequence[tuple[Any, ...]]:
        """Jobs that left, in leaving order, as ``JOB_COLUMNS`` tuples (built on access)."""
        return _Rows(self.jobs)

    def busy(self, taken_total: tuple[int, ...], seconds: float) -> None:
        """Add resource-seconds used by a finished or held segment."""
        busy = self._busy
        for index, amount in enumerate(taken_total):
            if amount:
                busy[index] += amount * seconds

    @property
    def busy_resource_seconds(self) -> np.ndarray:
        """Resource-seconds used so far, per resource."""
        return np.asarray(self._busy, dtype=np.float64)

    def segment(self, job_id: int, start: float, end: float, units: int, progress_before: float,
                progress_after: float) -> None:
        """Record one execution segment (a job runs once, or once per hold/resume cycle)."""
        self._segments.extend((job_id, start, end, units, progress_before, progress_after))

    @property
    def segments(self) -> list[tuple[int, float, float, int, float, float]]:
        """Execution segments so far as ``(job_id, start, end, units, progress_before,
        progress_after)`` tuples."""
        return list(self.segments_frame().itertuples(index=False, name=None))

    def segments_frame(self) -> pd.DataFrame:
        """One row per execution segment."""
        values = np.array(self._segments, dtype=np.float64).reshape(-1, len(_SEGMENT_COLUMNS))
        frame = pd.DataFrame(values, columns=list(_SEGMENT_COLUMNS))
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
        self._samples.extend((
            model.now, len(model.queue_agent.jobs), len(model.running_by_end), *used,
            self.holds, self.drops, self.profit, self.platform.burst_buffer - model.free_bb,
        ))

    @property
    def sample_count(self) -> int:
        """Instants sampled so far."""
        return len(self._samples) // len(TIMESERIES_COLUMNS)

    def sample_rows(self, begin: int, end: int) -> np.ndarray:
        """Rows ``begin:end`` of ``samples`` (a copy of those rows only)."""
        width = len(TIMESERIES_COLUMNS)
        return np.array(self._samples[begin * width:end * width], dtype=np.float64).reshape(-1, width)

    @property
    def samples(self) -> np.ndarray:
        """The time series so far, one row per instant (``TIMESERIES_COLUMNS``)."""
        return np.array(self._samples, dtype=np.float64).reshape(-1, len(TIMESERIES_COLUMNS))

    def jobs_frame(self) -> pd.DataFrame:
        """One row per job that left the system, sorted by job id."""
        if not len(self.jobs):
            return pd.DataFrame(self.jobs.columns(), columns=list(JOB_COLUMNS))
        # The rows picked in ``job_order`` are ``sort_values("job_id", kind="stable")``'s.
        return pd.DataFrame(self.jobs.columns(self.job_order()), columns=list(JOB_COLUMNS))

    def job_order(self) -> np.ndarray:
        """Row order of ``jobs_frame`` over the job columns (by job id, stable)."""
        return np.argsort(np.array(self.jobs.ints["job_id"], dtype=np.int64), kind="stable")

    def write_jobs_csv(self, path: str | Path, chunk_rows: int = 100_000) -> int:
        """Write ``jobs_frame()`` as CSV (same columns, order and text as
        ``jobs_frame().to_csv(path, index=False)``) ``chunk_rows`` rows at a time, so the
        text of a 10^6-job run never sits in memory at once. Returns the rows written."""
        from market_hpc.csv_text import write_csv

        order = self.job_order()
        with open(path, "wb") as handle:
            for begin in range(0, max(len(order), 1), chunk_rows):
                chunk = pd.DataFrame(self.jobs.columns(order[begin:begin + chunk_rows]), columns=list(JOB_COLUMNS))
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
