"""Write a run's execution segments beside ``jobs.csv``: ``segments.csv`` and
``segments.parquet``, one row per segment (a job held and resumed runs as several).

Rows are ordered by job id, then segment number; they are written ``chunk_rows`` at a
time so a replay of a big trace never holds all the ``nodes`` text at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Self

import numpy as np
import pandas as pd

from market_hpc.core.job_columns import STATUSES, arrow_text
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


JobsText = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(rows, offsets, data)``: the ``nodes`` text of the job rows ``rows`` (recorder rows,
in that order), as ``JobColumns.nodes_text`` gives it."""


class SegmentFiles:
    """``segments.csv`` and ``segments.parquet`` written in file order, through a job id at
    a time (:meth:`write_through`), so that they can follow ``jobs.csv`` chunk by chunk and
    take a finished segment's ``nodes`` text from its job's (a finished segment runs on its
    job's allocation): each allocation's text is then built once for both files. Use it
    as a context manager; the files are complete when the block ends without an error.

    Each block goes from the recorder's columns to Arrow arrays and from them to both
    files, without a pandas frame: the CSV bytes are ``segments_frame(recorder).to_csv``'s
    (:mod:`market_hpc.csv_text`'s rules), the Parquet columns its types.
    """

    def __init__(self, directory: Path, recorder: Recorder, chunk_rows: int = 100_000) -> None:
        self.directory, self.recorder, self.chunk_rows = directory, recorder, chunk_rows
        self.order, self.number, self.ending = segment_order(recorder)
        self.rows = len(self.order)
        self.numbers = {name: recorder.segment_field(name) for name in _NUMBERS}
        self.job_ids = self.numbers["job_id"][self.order].astype(np.int64)  # ascending
        self.sources = recorder.segment_sources()
        self.written = 0  # rows of the file written so far
        self.shared = 0  # of them, with their nodes text taken from their job's
        self._position = np.zeros(len(recorder.jobs), dtype=np.int64)  # job row -> place in a chunk
        self._handle: Any = None
        self._writer: Any = None

    def __enter__(self) -> Self:
        import pyarrow.parquet as pq

        directory = self.directory
        if not self.rows:
            empty = _empty()
            with open(directory / "segments.csv", "wb") as handle:
                write_csv(empty, handle, header=True)
            empty.to_parquet(directory / "segments.parquet", index=False)
            return self
        self._handle = open(directory / "segments.csv", "wb")  # (closed by __exit__)
        self._writer = pq.ParquetWriter(
            directory / "segments.parquet",
            _schema(),
            compression="snappy",
            use_dictionary=["nodes", "ended"],
        )  # (numbers: plain is faster, as small)
        self._handle.write((",".join(SEGMENT_COLUMNS) + "\n").encode())
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if self._handle is None:
            return
        try:
            if exc_type is None:
                self.write_through(None)
        finally:
            self._writer.close()
            self._handle.close()

    def write_through(self, job_id: int | None, jobs_text: JobsText | None = None) -> None:
        """Write every segment not yet written whose job id is at most ``job_id`` (every
        one for ``None``), ``chunk_rows`` rows at a time. A finished segment whose job row
        is in ``jobs_text`` takes its text from there; the others have theirs built."""
        if self._handle is None:
            return
        stop = (
            self.rows
            if job_id is None
            else int(np.searchsorted(self.job_ids, job_id, side="right"))
        )
        from market_hpc.csv_text import line_parts

        for begin in range(self.written, stop, self.chunk_rows):
            end = min(begin + self.chunk_rows, stop)
            rows = self.order[begin:end]
            arrays = _arrow_columns(
                self.numbers,
                rows,
                self.number[begin:end],
                self.ending[begin:end],
                self._nodes(rows, jobs_text),
            )
            self._handle.writelines(
                line_parts(
                    [
                        _text(name, array)
                        for name, array in zip(SEGMENT_COLUMNS, arrays, strict=True)
                    ]
                )
            )
            self._writer.write_table(_table(arrays))
        self.written = max(self.written, stop)

    def _nodes(self, rows: np.ndarray, jobs_text: JobsText | None) -> Any:
        """The ``nodes`` text of segments ``rows`` as an Arrow string array."""
        import pyarrow as pa

        if jobs_text is None:
            return arrow_text(*self.recorder.segment_nodes_text(rows))
        job_rows, offsets, data = jobs_text
        sources = self.sources[rows]
        position = self._position
        position[job_rows] = np.arange(len(job_rows))
        place = position[np.maximum(sources, 0)]
        shared = (sources >= 0) & (job_rows[np.minimum(place, len(job_rows) - 1)] == sources)
        jobs = arrow_text(offsets, data)
        count = int(shared.sum())
        self.shared += count
        if count == len(rows):
            return jobs.take(pa.array(place))
        own = arrow_text(*self.recorder.segment_nodes_text(rows[~shared]))
        index = np.where(shared, place, len(jobs) + np.cumsum(~shared) - 1)
        return pa.concat_arrays([jobs, own]).take(pa.array(index))


def write_segments(directory: Path, recorder: Recorder, chunk_rows: int = 100_000) -> int:
    """Write ``segments.csv`` and ``segments.parquet`` (every allocation's text built
    here; ``SegmentFiles`` beside ``jobs.csv`` shares the jobs'); returns the rows."""
    with SegmentFiles(directory, recorder, chunk_rows) as files:
        files.write_through(None)
    return files.rows


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
    numbers: dict[str, np.ndarray],
    rows: np.ndarray,
    number: np.ndarray,
    ending: np.ndarray,
    nodes: Any,
) -> list[Any]:
    """The ``SEGMENT_COLUMNS`` of segments ``rows`` as Arrow arrays (``nodes``: their text)."""
    import pyarrow as pa

    ended = pa.DictionaryArray.from_arrays(
        pa.array(ending, type=pa.int8()), pa.array(ENDINGS, type=pa.string())
    ).cast(pa.string())
    columns = {
        "segment": pa.array(number, type=pa.int64()),
        "nodes": nodes.cast(pa.string()),
        "ended": ended,
    }
    for name, values in numbers.items():
        picked = values[rows]
        columns[name] = pa.array(picked if name in _FLOATS else picked.astype(np.int64))
    return [columns[name] for name in SEGMENT_COLUMNS]


def _text(name: str, array: Any) -> Any:
    """One column's CSV text, as ``to_csv`` writes it (a float column: ``float_cells``' pair)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from market_hpc.csv_text import float_cells

    if name in _FLOATS:
        return float_cells(array.to_numpy(zero_copy_only=False))
    return array if array.type == pa.string() else pc.cast(array, pa.string())


def _table(arrays: list[Any]) -> Any:
    import pyarrow as pa

    return pa.Table.from_arrays(arrays, schema=_schema())


def write_frame(directory: Path, frame: pd.DataFrame) -> None:
    """Write an already built ``segments.csv`` frame (and its parquet twin)."""
    frame.to_csv(directory / "segments.csv", index=False)
    frame.to_parquet(directory / "segments.parquet", index=False)
