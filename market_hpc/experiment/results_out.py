"""Write a run's results folder from the recorder's columns, a chunk of rows at a time.

The files have the same names, columns and text as ``run.Result.write`` gives for the
whole frames (``jobs.csv`` and ``timeseries.csv`` byte for byte; ``jobs.parquet`` reads
back to the same frame, written as one row group per chunk), but no frame of every job
is ever built: a chunk of ``chunk_rows`` rows is formatted (its allocation text too),
written to ``jobs.csv`` and ``jobs.parquet`` and dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.domain.job import JobStatus
from market_hpc.domain.resources import RESOURCES
from market_hpc.experiment.config import RunConfig
from market_hpc.experiment.run import REJECTED_REASON, _json_default, provenance, skipped_jobs_frame
from market_hpc.recorder import JOB_COLUMNS, TIMESERIES_COLUMNS, Recorder

_STATUS_NAMES = np.array([status.value for status in JobStatus], dtype=object)
_REJECTED = list(JobStatus).index(JobStatus.REJECTED)
_COLUMNS = [*JOB_COLUMNS, "reason"]


def _job_order(recorder: Recorder) -> np.ndarray:
    """Row order of ``Recorder.jobs_frame`` (by job id, leaving order among equal ids)."""
    return np.argsort(np.array(recorder.jobs.ints["job_id"], dtype=np.int64), kind="stable")


def summary_frame(recorder: Recorder) -> pd.DataFrame:
    """The columns of ``recorder.jobs_frame()`` that ``metrics.summarize`` reads, in its
    row order and with its values and types (without the allocation text).

    Args:
        recorder: A finished run's recorder.
    """
    columns = recorder.jobs
    order = _job_order(recorder)

    def pick(name: str) -> np.ndarray:
        return np.array(columns.floats[name], dtype=np.float64)[order]

    submit, start = pick("submit_time"), pick("start_time")
    status = _STATUS_NAMES[np.array(columns.status, dtype=np.int8)[order]]
    return pd.DataFrame({"submit_time": submit, "start_time": start, "end_time": pick("end_time"),
                         "wait_time": start - submit, "run_time": pick("run_time"), "status": status,
                         "bb": pick("bb")})


def summary_series(recorder: Recorder, capacity_total: np.ndarray, burst_buffer: float,
                   chunk_rows: int = 100_000) -> pd.DataFrame:
    """The columns of ``recorder.timeseries_frame()`` that ``metrics.summarize`` reads
    (time, queue length, used amount of each resource the platform has), with their
    values and types, copied ``chunk_rows`` samples at a time (no copy of every column).
    """
    names = ["time", "queue_length"]
    names += [f"used_{resource}" for index, resource in enumerate(RESOURCES) if capacity_total[index] > 0]
    if burst_buffer > 0:
        names.append("used_bb")
    if not recorder.sample_count:
        return recorder.timeseries_frame()[names]
    where = [TIMESERIES_COLUMNS.index(name) for name in names]
    parts = [recorder.sample_rows(begin, begin + chunk_rows)[:, where]
             for begin in range(0, recorder.sample_count, chunk_rows)]
    values = np.concatenate(parts) if len(parts) > 1 else parts[0]
    del parts
    return pd.DataFrame({name: values[:, i] if name == "time" else values[:, i].astype(np.int64)
                         for i, name in enumerate(names)})


def _with_reason(frame: pd.DataFrame, reason_object: bool) -> pd.DataFrame:
    """``run.with_reasons``' ``reason`` column for rows of the recorder."""
    frame["reason"] = np.nan
    if reason_object:
        frame["reason"] = frame["reason"].astype(object)
        rejected = (frame["status"] == JobStatus.REJECTED.value).to_numpy()
        if rejected.any():
            frame.loc[rejected, "reason"] = REJECTED_REASON
    return frame


def job_chunks(recorder: Recorder, skipped: list[dict[str, Any]], chunk_rows: int) -> Iterator[pd.DataFrame]:
    """``run.with_reasons(recorder.jobs_frame(), skipped)`` in consecutive row chunks,
    each with the whole frame's column types.

    Args:
        recorder: A finished run's recorder.
        skipped: The skipped trace lines to list (``SkippedJobs.records()`` rows).
        chunk_rows: Rows per chunk (> 0).
    """
    columns = recorder.jobs
    n_jobs = len(columns)
    order = _job_order(recorder)
    reason_object = bool(n_jobs) and bool((np.array(columns.status, dtype=np.int8) == _REJECTED).any())
    extra = skipped_jobs_frame(skipped, _COLUMNS) if skipped else None
    if extra is None:
        merged = None
        total = n_jobs
    else:
        keys = np.concatenate((np.array(columns.ints["job_id"], dtype=np.int64)[order],
                               extra["job_id"].to_numpy(dtype=np.int64)))
        merged = np.argsort(keys, kind="stable")  # pd.concat + sort_values("job_id", kind="stable")
        total = len(keys)
    dtypes = _frame_dtypes(recorder, order, extra, reason_object)
    for begin in range(0, max(total, 1), chunk_rows):
        end = min(begin + chunk_rows, total)
        positions = np.arange(begin, end) if merged is None else merged[begin:end]
        is_job = positions < n_jobs
        part = _with_reason(pd.DataFrame(columns.columns(order[positions[is_job]]), columns=list(JOB_COLUMNS)),
                            reason_object or extra is not None)
        if extra is not None and not is_job.all():
            part = pd.concat([part, extra.iloc[positions[~is_job] - n_jobs]], ignore_index=True)
            place = np.empty(len(positions), dtype=np.int64)
            place[is_job] = np.arange(int(is_job.sum()))
            place[~is_job] = int(is_job.sum()) + np.arange(int((~is_job).sum()))
            part = part.iloc[place].reset_index(drop=True)
        yield part.astype(dtypes)


def _frame_dtypes(recorder: Recorder, order: np.ndarray, extra: pd.DataFrame | None,
                  reason_object: bool) -> dict[str, Any]:
    """Column types of the whole ``jobs.csv`` frame, from one row of each source."""
    head = _with_reason(pd.DataFrame(recorder.jobs.columns(order[:1]), columns=list(JOB_COLUMNS)),
                        reason_object)
    if extra is None:
        return dict(head.dtypes)
    if not len(head):
        return dict(extra.dtypes)
    return dict(pd.concat([head, extra.iloc[:1]], ignore_index=True).dtypes)


def write_jobs(directory: Path, recorder: Recorder, skipped: list[dict[str, Any]], chunk_rows: int) -> int:
    """Write ``jobs.csv`` and ``jobs.parquet`` chunk by chunk; returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 0
    writer = None
    schema = None
    try:
        with open(directory / "jobs.csv", "w", newline="") as handle:
            for part in job_chunks(recorder, skipped, chunk_rows):
                part.to_csv(handle, index=False, header=rows == 0)
                if schema is None:
                    schema = _parquet_schema(part)
                    writer = pq.ParquetWriter(directory / "jobs.parquet", schema, compression="snappy")
                writer.write_table(pa.Table.from_pandas(part, schema=schema, preserve_index=False))
                rows += len(part)
    finally:
        if writer is not None:
            writer.close()
    return rows


def _parquet_schema(part: pd.DataFrame) -> Any:
    """The schema ``DataFrame.to_parquet`` gives the whole frame: an object ``reason``
    column is text (the first chunk may hold none)."""
    import pyarrow as pa

    probe = part.iloc[:1].copy()
    if probe["reason"].dtype == object:
        probe["reason"] = pd.Series([REJECTED_REASON] * len(probe), index=probe.index, dtype=object)
    return pa.Schema.from_pandas(probe, preserve_index=False)


def write_timeseries(path: Path, recorder: Recorder, chunk_rows: int) -> None:
    """Write ``timeseries.csv`` (as ``timeseries_frame().to_csv``) chunk by chunk."""
    count = recorder.sample_count
    if not count:
        recorder.timeseries_frame().to_csv(path, index=False)
        return
    counts = {name: np.int64 for name in TIMESERIES_COLUMNS if name not in ("time", "profit")}
    with open(path, "w", newline="") as handle:
        for begin in range(0, count, chunk_rows):
            part = pd.DataFrame(recorder.sample_rows(begin, begin + chunk_rows), columns=list(TIMESERIES_COLUMNS))
            part.astype(counts).to_csv(handle, index=False, header=begin == 0)


def write_results(directory: Path, config: RunConfig, recorder: Recorder, summary: dict[str, Any],
                  workload_report: dict[str, Any], skipped: list[dict[str, Any]], chunk_rows: int) -> Path:
    """The files of ``Result.write``: ``jobs.csv``, ``jobs.parquet``, ``timeseries.csv``,
    ``summary.json`` and ``config.json`` in ``directory`` (created if needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    write_jobs(directory, recorder, skipped, chunk_rows)
    write_timeseries(directory / "timeseries.csv", recorder, 4 * chunk_rows)
    (directory / "summary.json").write_text(json.dumps(summary, indent=2, default=_json_default) + "\n")
    (directory / "config.json").write_text(json.dumps(provenance(config, workload_report),
                                                      indent=2, default=_json_default) + "\n")
    return directory
