"""Per-job results as rows of machine numbers, read back as columns, frames and text.

A job leaving costs ``Recorder.job_left`` two ``array.extend`` calls (its float fields,
its integer fields), the runs of its allocation and one offset: no Python object is kept
per job. Columns are strided views of those rows; the ``nodes`` text of many jobs is
built at once by :func:`~market_hpc.algorithms.runs_text.runs_text`, straight into the
Arrow buffers pandas 3 keeps its strings in.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.algorithms.node_runs import NodeRuns, as_runs
from market_hpc.algorithms.runs_text import RunTables, runs_text
from market_hpc.domain.job import JobStatus

JOB_COLUMNS = (
    "job_id",
    "submit_time",
    "start_time",
    "end_time",
    "wait_time",
    "run_time",
    "status",
    "cores",
    "gpus",
    "mics",
    "mem",
    "bb",
    "units",
    "estimate",
    "user",
    "queue",
    "nodes",
    "value",
    "hold_count",
)
STATUSES = tuple(JobStatus)
FLOAT_FIELDS = ("submit_time", "start_time", "end_time", "run_time", "bb", "estimate", "value")
"""The float fields of a job's row, in ``JobColumns.float_rows`` order."""
INT_FIELDS = (
    "job_id",
    "cores",
    "gpus",
    "mics",
    "mem",
    "units",
    "user",
    "queue",
    "hold_count",
    "status",
)
"""The integer fields of a job's row, in ``JobColumns.int_rows`` order: ``cores`` .. ``mem``
are per unit (the ``cores`` .. ``mem`` columns are them times ``units``), ``status`` is the
index of the status in ``JobStatus``."""
_PER_UNIT = ("cores", "gpus", "mics", "mem")
_FLOAT_WIDTH, _INT_WIDTH = len(FLOAT_FIELDS), len(INT_FIELDS)


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


def arrow_text(offsets: np.ndarray, data: np.ndarray) -> Any:
    """Strings ``data[offsets[k]:offsets[k + 1]]`` (ASCII) as an Arrow large string array,
    built straight from the buffers."""
    import pyarrow as pa

    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    return pa.LargeStringArray.from_buffers(
        len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data)
    )


def text_array(offsets: np.ndarray, data: np.ndarray) -> Any:
    """Strings ``data[offsets[k]:offsets[k + 1]]`` (ASCII) as the array pandas makes of a
    list of them: Arrow-backed ``str`` built straight from the buffers when that is what
    pandas infers (pandas 3 with pyarrow), else the list of Python strings.

    >>> list(text_array(np.array([0, 2, 2, 5]), np.frombuffer(b"0:1:2", dtype=np.uint8)))
    ['0:', '', '1:2']
    """
    dtype = _inferred_text_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        return pd.array(arrow_text(offsets, data), dtype=dtype)
    text = data.tobytes().decode()
    return [text[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


_TEXT_DTYPE: list[Any] = []


def _inferred_text_dtype() -> Any:
    """The column type pandas gives a list of strings (``str`` or ``object``)."""
    if not _TEXT_DTYPE:
        _TEXT_DTYPE.append(pd.Series(["0:1"]).dtype)
    return _TEXT_DTYPE[0]


class JobColumns:
    """Per-job results: one row of floats and one of integers per job, allocations as runs.

    ``float_rows`` holds ``FLOAT_FIELDS`` and ``int_rows`` ``INT_FIELDS`` job after job
    (8 bytes a value); a job's last allocation is stored as ``first, count, units``
    triples in ``runs`` (from ``run_offsets[i]`` to ``run_offsets[i + 1]``), formatted
    as ``node:units`` text only when a frame or file is written. ``rows`` reads the
    columns back as ``JOB_COLUMNS`` tuples (in leaving order) for displays.

    Jobs are added to plain lists first (``pending_*``: a ``list.extend`` of a tuple costs
    a sixth of an ``array.extend``) and moved into the arrays ``FLUSH_JOBS`` jobs at a
    time, or when anything reads them.
    """

    FLUSH_JOBS = 4096

    def __init__(self) -> None:
        self._float_rows = array("d")
        self._int_rows = array("q")
        self._runs = array("i")  # node, count, units: 4 bytes each (memory)
        self._run_offsets = array("q", [0])
        self.pending_floats: list[float] = []
        self.pending_ints: list[int] = []
        self.pending_runs: list[
            tuple[tuple[int, int, int], ...]
        ] = []  # each job's runs (``()``: none)
        self.tables = RunTables()  # the ``nodes`` text tables, kept from one chunk to the next

    def flush(self) -> None:
        """Move the pending jobs into the arrays."""
        jobs_runs = self.pending_runs
        if not jobs_runs:
            return
        base = len(self._runs)
        self._float_rows.fromlist(self.pending_floats)
        self._int_rows.fromlist(self.pending_ints)
        self._runs.fromlist(list(chain.from_iterable(chain.from_iterable(jobs_runs))))
        ends = accumulate((3 * len(runs) for runs in jobs_runs), initial=base)
        next(ends)
        self._run_offsets.fromlist(list(ends))
        for pending in (self.pending_floats, self.pending_ints, jobs_runs):
            pending.clear()

    @property
    def float_rows(self) -> array[float]:
        """``FLOAT_FIELDS`` of every job, job after job."""
        self.flush()
        return self._float_rows

    @property
    def int_rows(self) -> array[int]:
        """``INT_FIELDS`` of every job, job after job."""
        self.flush()
        return self._int_rows

    @property
    def runs(self) -> array[int]:
        """The ``first, count, units`` runs of every job's allocation, job after job."""
        self.flush()
        return self._runs

    @property
    def run_offsets(self) -> array[int]:
        """Job ``i``'s runs are ``runs[run_offsets[i]:run_offsets[i + 1]]``."""
        self.flush()
        return self._run_offsets

    def add(
        self,
        floats: tuple[float, ...],
        ints: tuple[int, ...],
        allocation: Sequence[tuple[int, int]] | None,
    ) -> None:
        """Append one job: its ``FLOAT_FIELDS`` and ``INT_FIELDS`` values and its allocation
        (``None`` or empty: never started). ``Recorder.job_left`` does the same inline."""
        self.pending_floats.extend(floats)
        self.pending_ints.extend(ints)
        if type(allocation) is NodeRuns:
            self.pending_runs.append(allocation.runs)
        else:
            self.pending_runs.append(as_runs(allocation).runs if allocation else ())
        if len(self.pending_runs) >= self.FLUSH_JOBS:
            self.flush()

    def __len__(self) -> int:
        return len(self._run_offsets) - 1 + len(self.pending_runs)

    def _pick(self, order: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The selected rows of ``float_rows`` and ``int_rows`` as 2-D copies."""
        self.flush()
        if not len(self):
            return np.zeros((0, _FLOAT_WIDTH)), np.zeros((0, _INT_WIDTH), dtype=np.int64)
        floats = np.frombuffer(self.float_rows, dtype=np.float64).reshape(-1, _FLOAT_WIDTH)
        ints = np.frombuffer(self.int_rows, dtype=np.int64).reshape(-1, _INT_WIDTH)
        # Copies only (an exported buffer would stop the arrays from growing).
        return (floats.copy(), ints.copy()) if order is None else (floats[order], ints[order])

    def field(self, name: str, order: np.ndarray | None = None) -> np.ndarray:
        """One column of ``FLOAT_FIELDS`` or ``INT_FIELDS`` (``cores`` .. ``mem`` for all
        units), a copy, in leaving order or for the rows ``order`` selects."""
        self.flush()
        if name in _PER_UNIT:
            per_unit = self._column(
                self._int_rows, _INT_WIDTH, INT_FIELDS.index(name), np.int64, order
            )
            total: np.ndarray = per_unit * self._column(
                self._int_rows, _INT_WIDTH, INT_FIELDS.index("units"), np.int64, order
            )
            return total
        if name in FLOAT_FIELDS:
            return self._column(
                self._float_rows, _FLOAT_WIDTH, FLOAT_FIELDS.index(name), np.float64, order
            )
        return self._column(self._int_rows, _INT_WIDTH, INT_FIELDS.index(name), np.int64, order)

    @staticmethod
    def _column(
        rows: array[int] | array[float],
        width: int,
        index: int,
        dtype: type,
        order: np.ndarray | None,
    ) -> np.ndarray:
        if not len(rows):
            return np.zeros(0, dtype=dtype)
        view: np.ndarray = np.frombuffer(rows, dtype=dtype).reshape(-1, width)[:, index]
        # Copies only (an exported buffer would stop the arrays from growing).
        return view.copy() if order is None else view[order]

    @property
    def floats(self) -> dict[str, np.ndarray]:
        """Every float column, in leaving order (copies)."""
        return {name: self.field(name) for name in FLOAT_FIELDS}

    @property
    def ints(self) -> dict[str, np.ndarray]:
        """Every integer column (``cores`` .. ``mem`` for all units), in leaving order (copies)."""
        return {name: self.field(name) for name in INT_FIELDS if name != "status"}

    @property
    def status(self) -> np.ndarray:
        """Each job's status as its index in ``JobStatus``, in leaving order."""
        return self.field("status").astype(np.int8)

    def nodes(self, index: int) -> str:
        """The ``nodes`` text of the ``index``-th job."""
        return format_runs(self.runs[self.run_offsets[index] : self.run_offsets[index + 1]])

    def nodes_column(
        self, rows: np.ndarray, text: tuple[np.ndarray, np.ndarray] | None = None
    ) -> Any:
        """The ``nodes`` text of the jobs ``rows`` (in that order), built at once by
        :func:`~market_hpc.algorithms.runs_text.runs_text` (or ``text``, their
        :meth:`nodes_text` when the caller has it): the array pandas would make of the list
        of their strings (Arrow-backed ``str`` under pandas 3), that list otherwise."""
        if not len(rows):
            return []
        return text_array(*(self.nodes_text(rows) if text is None else text))

    def nodes_text(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``nodes`` text of the jobs ``rows`` as ``(offsets, data)``: row ``k``'s text is
        ``data[offsets[k]:offsets[k + 1]]`` (ASCII,
        :func:`~market_hpc.algorithms.runs_text.runs_text`)."""
        self.flush()
        runs = (
            np.frombuffer(self.runs, dtype=np.int32)
            if len(self.runs)
            else np.zeros(0, dtype=np.int32)
        )
        offsets, data = runs_text(
            runs, np.frombuffer(self.run_offsets, dtype=np.int64), rows, self.tables
        )
        del runs  # the exported buffer would stop the array from growing
        return offsets, data

    def columns(
        self,
        order: np.ndarray | None = None,
        nodes_text: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> dict[str, Any]:
        """Every ``JOB_COLUMNS`` column as a numpy array or list, in leaving order (or
        for the rows ``order`` selects, in that order); ``nodes_text``: their ``nodes_text``,
        when the caller has it."""
        float_rows, int_rows = self._pick(order)
        values: dict[str, Any] = {name: float_rows[:, k] for k, name in enumerate(FLOAT_FIELDS)}
        values.update(_int_columns(int_rows))
        values["wait_time"] = values["start_time"] - values["submit_time"]
        names = np.array([status.value for status in STATUSES], dtype=object)
        values["status"] = names[values["status"]]
        rows = np.arange(len(self)) if order is None else order
        values["nodes"] = self.nodes_column(rows, nodes_text)
        return {name: values[name] for name in JOB_COLUMNS}

    def row(self, index: int) -> tuple[Any, ...]:
        """One job's row, as ``JOB_COLUMNS``."""
        floats = self.float_rows[index * _FLOAT_WIDTH : (index + 1) * _FLOAT_WIDTH]
        ints = self.int_rows[index * _INT_WIDTH : (index + 1) * _INT_WIDTH]
        values: dict[str, Any] = dict(zip(FLOAT_FIELDS, floats))
        values.update(zip(INT_FIELDS, ints))
        for name in _PER_UNIT:
            values[name] *= values["units"]
        values["wait_time"] = values["start_time"] - values["submit_time"]
        values["status"] = STATUSES[values["status"]].value
        values["nodes"] = self.nodes(index)
        return tuple(values[name] for name in JOB_COLUMNS)


BUFFER_LIMIT = 1 << 15
"""Values a :class:`BufferedFloats` keeps in its Python list before moving them into its array."""


class BufferedFloats:
    """An ``array("d")`` filled through a Python list, moved over ``limit`` values at a time
    (``list.extend`` of a tuple costs a sixth of ``array.extend``; ``array.fromlist``
    converts a whole list at C speed). Read ``values()`` (it flushes first).

    >>> buffer = BufferedFloats(limit=4)
    >>> buffer.extend((1, 2.5, 3))
    >>> len(buffer), buffer.values().tolist()
    (3, [1.0, 2.5, 3.0])
    """

    __slots__ = ("_data", "limit", "pending")

    def __init__(self, limit: int = BUFFER_LIMIT) -> None:
        self._data = array("d")
        self.pending: list[float] = []
        self.limit = limit

    def extend(self, values: tuple[float, ...]) -> None:
        """Append ``values`` (callers on a hot path extend ``pending`` themselves and call
        :meth:`flush` when it reaches ``limit``)."""
        self.pending.extend(values)
        if len(self.pending) >= self.limit:
            self.flush()

    def flush(self) -> None:
        """Move the pending values into the array."""
        if self.pending:
            self._data.fromlist(self.pending)
            self.pending.clear()

    def values(self) -> array[float]:
        """Every value so far."""
        self.flush()
        return self._data

    def __len__(self) -> int:
        return len(self._data) + len(self.pending)


def _int_columns(int_rows: np.ndarray) -> dict[str, np.ndarray]:
    """Integer columns of the 2-D ``int_rows`` (per-unit amounts times ``units``)."""
    columns = {name: int_rows[:, k] for k, name in enumerate(INT_FIELDS)}
    for name in _PER_UNIT:
        columns[name] = columns[name] * columns["units"]
    return columns


class JobRows(Sequence):  # type: ignore[type-arg]
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
