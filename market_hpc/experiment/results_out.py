"""Write a run's results folder from the recorder's columns, a chunk of rows at a time.

The files have the same names, columns and text as ``run.Result.write`` gives for the
whole frames (``jobs.csv`` and ``timeseries.csv`` byte for byte; ``jobs.parquet`` reads
back to the same frame, written as one row group per chunk), but no frame of every job
is ever built: a chunk of ``chunk_rows`` rows is formatted (its allocation text too),
written to ``jobs.csv`` and ``jobs.parquet`` and dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.core.recorder import JOB_COLUMNS, TIMESERIES_COLUMNS, Recorder
from market_hpc.csv_text import write_csv
from market_hpc.domain.job import JobStatus
from market_hpc.domain.resources import RESOURCES
from market_hpc.experiment.config import RunConfig
from market_hpc.experiment.out_dir import naming
from market_hpc.experiment.run import (
    REJECTED_REASON,
    provenance,
    skipped_jobs_frame,
    write_json_files,
)
from market_hpc.experiment.segments_out import SegmentFiles

_STATUS_NAMES = np.array([status.value for status in JobStatus], dtype=object)
_REJECTED = list(JobStatus).index(JobStatus.REJECTED)
_COLUMNS = [*JOB_COLUMNS, "reason"]


def summary_frame(recorder: Recorder) -> pd.DataFrame:
    """The columns of ``recorder.jobs_frame()`` that ``metrics.summarize`` reads, in its
    row order and with its values and types (without the allocation text).

    Args:
        recorder: A finished run's recorder.
    """
    columns = recorder.jobs
    order = recorder.job_order()

    def pick(name: str) -> np.ndarray:
        return columns.field(name, order)

    submit, start = pick("submit_time"), pick("start_time")
    # Object strings, not pandas' Arrow-backed ``str`` (same comparisons, a fifth of the memory).
    status = pd.Series(_STATUS_NAMES[pick("status")], dtype=object)
    return pd.DataFrame(
        {
            "submit_time": submit,
            "start_time": start,
            "end_time": pick("end_time"),
            "wait_time": start - submit,
            "run_time": pick("run_time"),
            "status": status,
            "bb": pick("bb"),
            "user": pick("user"),
        },
        copy=False,
    )


def summary_series(
    recorder: Recorder, capacity_total: np.ndarray, burst_buffer: float, chunk_rows: int = 20_000
) -> pd.DataFrame:
    """The columns of ``recorder.timeseries_frame()`` that ``metrics.summarize`` reads
    (time, queue length, used amount of each resource the platform has), with their
    values and types, copied ``chunk_rows`` samples at a time (no copy of every column).
    """
    names = ["time", "queue_length"]
    names += [
        f"used_{resource}" for index, resource in enumerate(RESOURCES) if capacity_total[index] > 0
    ]
    if burst_buffer > 0:
        names.append("used_bb")
    if not recorder.sample_count:
        return recorder.timeseries_frame()[names]
    count = recorder.sample_count
    values = {
        name: np.empty(count, dtype=np.float64 if name == "time" else np.int64) for name in names
    }
    for begin in range(0, count, chunk_rows):
        rows = recorder.sample_rows(begin, begin + chunk_rows)
        for name, column in values.items():
            column[begin : begin + len(rows)] = rows[:, TIMESERIES_COLUMNS.index(name)]
    return pd.DataFrame(values, copy=False)


def _with_reason(frame: pd.DataFrame, reason_object: bool) -> pd.DataFrame:
    """``run.with_reasons``' ``reason`` column for rows of the recorder."""
    frame["reason"] = np.nan
    if reason_object:
        frame["reason"] = frame["reason"].astype(object)
        rejected = (frame["status"] == JobStatus.REJECTED.value).to_numpy()
        if rejected.any():
            frame.loc[rejected, "reason"] = REJECTED_REASON
    return frame


class JobChunks:
    """``run.with_reasons(recorder.jobs_frame(), skipped)`` as consecutive row chunks.

    Iterating yields frames of at most ``chunk_rows`` rows with the whole frame's column
    types (``dtypes``), except that with ``text_as_object`` the ``status`` column stays
    plain Python strings (the same text). The ``nodes`` text is built straight into
    Arrow buffers (``JobColumns.nodes_column``): no Python string per allocation.

    Args:
        recorder: A finished run's recorder.
        skipped: The skipped trace lines to list (``SkippedJobs.records()`` rows).
        chunk_rows: Rows per chunk (> 0).
        text_as_object: Keep text columns as ``object``.
    """

    def __init__(
        self,
        recorder: Recorder,
        skipped: list[dict[str, Any]],
        chunk_rows: int,
        text_as_object: bool = False,
    ) -> None:
        self.recorder, self.chunk_rows, self.text_as_object = recorder, chunk_rows, text_as_object
        columns = recorder.jobs
        self.n_jobs = len(columns)
        self.order = recorder.job_order()
        self.reason_object = bool(self.n_jobs) and bool(
            (columns.field("status") == _REJECTED).any()
        )
        self.extra = skipped_jobs_frame(skipped, _COLUMNS) if skipped else None
        self.merged: np.ndarray | None = None
        self.total = self.n_jobs
        if self.extra is not None:
            keys = np.concatenate(
                (columns.field("job_id", self.order), self.extra["job_id"].to_numpy(dtype=np.int64))
            )
            self.merged = np.argsort(
                keys, kind="stable"
            )  # pd.concat + sort_values("job_id", kind="stable")
            self.total = len(keys)
        self.dtypes = _frame_dtypes(recorder, self.order, self.extra, self.reason_object)
        # the recorder rows of the chunk just yielded and their nodes text (offsets, data)
        self.text: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __iter__(self) -> Iterator[pd.DataFrame]:
        columns, order, extra, n_jobs = self.recorder.jobs, self.order, self.extra, self.n_jobs
        dtypes = self.dtypes
        if self.text_as_object:
            dtypes = {name: object if name in _TEXT else dtype for name, dtype in dtypes.items()}
        for begin in range(0, max(self.total, 1), self.chunk_rows):
            end = min(begin + self.chunk_rows, self.total)
            positions = np.arange(begin, end) if self.merged is None else self.merged[begin:end]
            is_job = positions < n_jobs
            rows = order[positions[is_job]]
            offsets, data = columns.nodes_text(rows)
            self.text = (rows, offsets, data)
            values = columns.columns(rows, nodes_text=(offsets, data))
            if self.text_as_object:
                for name in _TEXT:
                    values[name] = pd.Series(values[name], dtype=object)
            part = _with_reason(
                pd.DataFrame(values, columns=list(JOB_COLUMNS)),
                self.reason_object or extra is not None,
            )
            del values
            if extra is not None and not is_job.all():
                part = pd.concat([part, extra.iloc[positions[~is_job] - n_jobs]], ignore_index=True)
                place = np.empty(len(positions), dtype=np.int64)
                place[is_job] = np.arange(int(is_job.sum()))
                place[~is_job] = int(is_job.sum()) + np.arange(int((~is_job).sum()))
                part = part.iloc[place].reset_index(drop=True)
            yield part.astype(dtypes)


_TEXT = ("status",)


def _frame_dtypes(
    recorder: Recorder, order: np.ndarray, extra: pd.DataFrame | None, reason_object: bool
) -> dict[str, Any]:
    """Column types of the whole ``jobs.csv`` frame, from one row of each source."""
    head = _with_reason(
        pd.DataFrame(recorder.jobs.columns(order[:1]), columns=list(JOB_COLUMNS)), reason_object
    )
    if extra is None:
        return dict(head.dtypes)
    if not len(head):
        return dict(extra.dtypes)
    return dict(pd.concat([head, extra.iloc[:1]], ignore_index=True).dtypes)


def write_jobs(
    directory: Path,
    recorder: Recorder,
    skipped: list[dict[str, Any]],
    chunk_rows: int,
    segments: SegmentFiles | None = None,
) -> int:
    """Write ``jobs.csv`` and ``jobs.parquet`` chunk by chunk; returns the rows written.
    With ``segments``, each chunk is followed by the segments of its jobs, which take a
    finished segment's ``nodes`` text from the chunk's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    chunks = JobChunks(recorder, skipped, chunk_rows, text_as_object=True)
    pool = pa.default_memory_pool()
    rows = 0
    writer: Any = None
    schema: Any = None
    csv_path, parquet_path = directory / "jobs.csv", directory / "jobs.parquet"
    try:
        with naming(csv_path), open(csv_path, "wb") as handle:
            for part in chunks:
                write_csv(part, handle, header=rows == 0)
                with naming(parquet_path):
                    if writer is None:
                        schema = _parquet_schema(part.astype(chunks.dtypes))
                        writer = pq.ParquetWriter(parquet_path, schema, compression="snappy")
                    writer.write_table(
                        pa.Table.from_pandas(part, schema=schema, preserve_index=False, nthreads=1)
                    )
                rows += len(part)
                if segments is not None and chunks.text is not None and len(chunks.text[0]):
                    job_ids = part["job_id"].to_numpy()
                    segments.write_through(int(job_ids[-1]), chunks.text)
                del part
                pool.release_unused()  # Arrow's allocator would keep every chunk's pages
    finally:
        if writer is not None:
            with naming(parquet_path):
                writer.close()
    return rows


def _parquet_schema(part: pd.DataFrame) -> Any:
    """The schema ``DataFrame.to_parquet`` gives the whole frame (``part`` has its column
    types): an object ``reason`` column is text (the first chunk may hold none)."""
    import pyarrow as pa

    probe = part.iloc[:1].copy()
    if probe["reason"].dtype == object:
        probe["reason"] = pd.Series([REJECTED_REASON] * len(probe), index=probe.index, dtype=object)
    return pa.Schema.from_pandas(probe, preserve_index=False)


def write_timeseries(path: Path, recorder: Recorder, chunk_rows: int) -> None:
    """Write ``timeseries.csv`` (as ``timeseries_frame().to_csv``) chunk by chunk."""
    count = recorder.sample_count
    if not count:
        with naming(path):
            recorder.timeseries_frame().to_csv(path, index=False)
        return
    counts = {name: np.int64 for name in TIMESERIES_COLUMNS if name not in ("time", "profit")}
    with naming(path), open(path, "wb") as handle:
        for begin in range(0, count, chunk_rows):
            part = pd.DataFrame(
                recorder.sample_rows(begin, begin + chunk_rows), columns=list(TIMESERIES_COLUMNS)
            )
            write_csv(part.astype(counts), handle, header=begin == 0)


def write_results(
    directory: Path,
    config: RunConfig,
    recorder: Recorder,
    summary: dict[str, Any],
    workload_report: dict[str, Any],
    skipped: list[dict[str, Any]],
    chunk_rows: int,
) -> Path:
    """The files of ``Result.write``: ``jobs.csv``, ``jobs.parquet``, ``timeseries.csv``,
    ``summary.json`` and ``config.json`` in ``directory`` (created if needed).

    Writes in place; ``StreamedResult.write`` calls it on a staging folder that replaces
    the results folder only once every file is written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with SegmentFiles(directory, recorder, chunk_rows) as segments:
        write_jobs(directory, recorder, skipped, chunk_rows, segments)
    write_timeseries(directory / "timeseries.csv", recorder, chunk_rows)
    write_json_files(directory, summary, provenance(config, workload_report))
    return directory
