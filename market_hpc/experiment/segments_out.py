"""Write a run's execution segments beside ``jobs.csv``: ``segments.csv`` and
``segments.parquet``, one row per segment (a job held and resumed runs as several).

Rows are ordered by job id, then segment number; they are written ``chunk_rows`` at a
time so a replay of a big trace never holds all the ``nodes`` text at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.core.job_columns import STATUSES
from market_hpc.core.recorder import SEGMENT_COLUMNS, Recorder
from market_hpc.csv_text import write_csv
from market_hpc.domain.job import JobStatus

ENDINGS = ("finished", "held", "dropped")
"""Why a segment ended: the job finished, it was held (and resumed later), or it was held
and then dropped while waiting."""


def segment_order(recorder: Recorder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The recorded segments' file order, segment numbers and endings.

    Returns:
        ``order`` (rows of the recording, by job id then time), and for those rows the
        segment number (1, 2, ...) and the index of the ending in ``ENDINGS``.
    """
    count = recorder.segment_count
    if not count:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    job_ids = recorder.segment_field("job_id").astype(np.int64)
    order = np.argsort(job_ids, kind="stable")  # a job's segments are recorded in time order
    ids = job_ids[order]
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    starts = np.flatnonzero(first)
    number = np.arange(len(ids)) - np.repeat(starts, np.diff(np.append(starts, len(ids)))) + 1
    ending = recorder.segment_field("held")[order].astype(np.int64)  # 0 finished, 1 held
    last = np.ones(len(ids), dtype=bool)
    last[:-1] = ids[1:] != ids[:-1]
    dropped_ids = recorder.jobs.field("job_id")[recorder.jobs.status == STATUSES.index(JobStatus.DROPPED)]
    ending[last & np.isin(ids, dropped_ids) & (ending == 1)] = 2
    return order, number, ending


def segment_chunks(recorder: Recorder, chunk_rows: int) -> Any:
    """``SEGMENT_COLUMNS`` frames of consecutive rows of the file, ``chunk_rows`` at a time."""
    order, number, ending = segment_order(recorder)
    names = np.array(ENDINGS, dtype=object)
    for begin in range(0, len(order), chunk_rows):
        rows = order[begin:begin + chunk_rows]
        part = recorder.segment_table(rows)
        part["segment"] = number[begin:begin + chunk_rows]
        part["ended"] = names[ending[begin:begin + chunk_rows]]
        part["nodes"] = part["nodes"].astype(object)
        yield part[list(SEGMENT_COLUMNS)]


def segments_frame(recorder: Recorder) -> pd.DataFrame:
    """The whole ``segments.csv`` frame."""
    parts = list(segment_chunks(recorder, max(recorder.segment_count, 1)))
    if parts:
        return parts[0].reset_index(drop=True)
    return _empty()


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series([], dtype=np.int64) for name in SEGMENT_COLUMNS})
    for name in ("start", "end", "bb", "progress_before", "progress_after"):
        frame[name] = frame[name].astype(np.float64)
    for name in ("nodes", "ended"):
        frame[name] = frame[name].astype(object)
    return frame


def write_segments(directory: Path, recorder: Recorder, chunk_rows: int = 100_000) -> int:
    """Write ``segments.csv`` and ``segments.parquet`` chunk by chunk; returns the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    rows = 0
    with open(directory / "segments.csv", "wb") as handle:
        for part in segment_chunks(recorder, chunk_rows):
            write_csv(part, handle, header=rows == 0)
            table = pa.Table.from_pandas(part, preserve_index=False)
            if writer is None:
                writer = pq.ParquetWriter(directory / "segments.parquet", table.schema, compression="snappy")
            writer.write_table(table)
            rows += len(part)
        if writer is None:
            empty = _empty()
            write_csv(empty, handle, header=True)
            empty.to_parquet(directory / "segments.parquet", index=False)
    if writer is not None:
        writer.close()
    return rows


def write_frame(directory: Path, frame: pd.DataFrame) -> None:
    """Write an already built ``segments.csv`` frame (and its parquet twin)."""
    frame.to_csv(directory / "segments.csv", index=False)
    frame.to_parquet(directory / "segments.parquet", index=False)
