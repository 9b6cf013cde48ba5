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
    dropped_ids = recorder.jobs.field("job_id")[
        recorder.jobs.status == STATUSES.index(JobStatus.DROPPED)
    ]
    ending[last & np.isin(ids, dropped_ids) & (ending == 1)] = 2
    return order, number, ending


def segment_chunks(recorder: Recorder, chunk_rows: int) -> Any:
    """``SEGMENT_COLUMNS`` frames of consecutive rows of the file, ``chunk_rows`` at a time."""
    order, number, ending = segment_order(recorder)
    names = np.array(ENDINGS, dtype=object)
    for begin in range(0, len(order), chunk_rows):
        rows = order[begin : begin + chunk_rows]
        part = recorder.segment_table(rows)
        part["segment"] = number[begin : begin + chunk_rows]
        part["ended"] = names[ending[begin : begin + chunk_rows]]
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
    """Write ``segments.csv`` and ``segments.parquet`` chunk by chunk; returns the rows.

    Each chunk goes from the recorder's columns to Arrow arrays and from them to both
    files, without a pandas frame: the CSV bytes are ``segments_frame(recorder).to_csv``'s
    (:mod:`market_hpc.csv_text`'s rules), the Parquet columns its types.
    """
    import pyarrow.parquet as pq

    from market_hpc.csv_text import line_parts

    order, number, ending = segment_order(recorder)
    if not len(order):
        empty = _empty()
        with open(directory / "segments.csv", "wb") as handle:
            write_csv(empty, handle, header=True)
        empty.to_parquet(directory / "segments.parquet", index=False)
        return 0
    numbers = {name: recorder.segment_field(name) for name in _NUMBERS}
    with (
        open(directory / "segments.csv", "wb") as handle,
        pq.ParquetWriter(
            directory / "segments.parquet",
            _schema(),
            compression="snappy",
            use_dictionary=["nodes", "ended"],
        ) as writer,
    ):  # (numbers: plain is faster, as small)
        handle.write((",".join(SEGMENT_COLUMNS) + "\n").encode())
        for begin in range(0, len(order), chunk_rows):
            rows = order[begin : begin + chunk_rows]
            arrays = _arrow_columns(
                recorder,
                numbers,
                rows,
                number[begin : begin + chunk_rows],
                ending[begin : begin + chunk_rows],
            )
            handle.writelines(
                line_parts(
                    [
                        _text(name, array)
                        for name, array in zip(SEGMENT_COLUMNS, arrays, strict=True)
                    ]
                )
            )
            writer.write_table(_table(arrays))
    return len(order)


_NUMBERS = (
    "job_id",
    "start",
    "end",
    "units",
    "cores",
    "gpus",
    "mics",
    "mem",
    "bb",
    "progress_before",
    "progress_after",
)
_FLOATS = frozenset({"start", "end", "bb", "progress_before", "progress_after"})


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            (
                name,
                pa.string()
                if name in ("nodes", "ended")
                else pa.float64()
                if name in _FLOATS
                else pa.int64(),
            )
            for name in SEGMENT_COLUMNS
        ]
    )


def _arrow_columns(
    recorder: Recorder,
    numbers: dict[str, np.ndarray],
    rows: np.ndarray,
    number: np.ndarray,
    ending: np.ndarray,
) -> list[Any]:
    """The ``SEGMENT_COLUMNS`` of segments ``rows`` as Arrow arrays."""
    import pyarrow as pa

    offsets, data = recorder.segment_nodes_text(rows)
    nodes = pa.LargeStringArray.from_buffers(
        len(rows), pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64)), pa.py_buffer(data)
    ).cast(pa.string())
    ended = pa.DictionaryArray.from_arrays(
        pa.array(ending, type=pa.int8()), pa.array(ENDINGS, type=pa.string())
    ).cast(pa.string())
    columns = {"segment": pa.array(number, type=pa.int64()), "nodes": nodes, "ended": ended}
    for name, values in numbers.items():
        picked = values[rows]
        columns[name] = pa.array(picked if name in _FLOATS else picked.astype(np.int64))
    return [columns[name] for name in SEGMENT_COLUMNS]


def _text(name: str, array: Any) -> Any:
    """One column's CSV text, as ``to_csv`` writes it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from market_hpc.csv_text import float_text

    if name in _FLOATS:
        return float_text(array.to_numpy(zero_copy_only=False))
    return array if array.type == pa.string() else pc.cast(array, pa.string())


def _table(arrays: list[Any]) -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays(arrays, schema=_schema())


def write_frame(directory: Path, frame: pd.DataFrame) -> None:
    """Write an already built ``segments.csv`` frame (and its parquet twin)."""
    frame.to_csv(directory / "segments.csv", index=False)
    frame.to_parquet(directory / "segments.parquet", index=False)
