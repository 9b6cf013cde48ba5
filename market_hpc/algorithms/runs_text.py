"""The ``nodes`` text of many allocations at once, built with numpy (no Python string per job).

An allocation is stored as flat runs ``first, count, units`` (``recorder.JobColumns``);
its text is every node of every run as ``node:units``, joined by ``;``
(``recorder.format_runs``). Here the text of a whole selection of jobs is built as one
UTF-8 byte buffer plus ``len + 1`` offsets (Arrow's string layout):

* for each units value ``u`` a table holds ``;0:u;1:u;2:u...`` with the offset of every
  node's entry, so a run ``(first, count, u)`` is one contiguous slice of it;
* each job's text is its runs' slices back to back, its first run's leading ``;`` left
  out; the slices are copied by one byte gather whose indices come from a ``cumsum``, or,
  when they are long (runs of many nodes), one ``bytes.join`` of the slices.

The work is a few numpy passes over the runs and the bytes: no Python call per job.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np

_SEMICOLON, _COLON = ord(";"), ord(":")
_CHUNK_BYTES = 1 << 17  # text built per piece (bounds the index arrays: 8 bytes per byte of text)
_TABLE_BUDGET = 1 << 26  # bytes of ``;node:units`` tables kept; pieces that need more go job by job
_LONG_SLICE = 64  # mean bytes per run from which a piece copies slice by slice (``_piece``)


class RunTables:
    """``;node:u`` tables per units value ``u`` for nodes ``0 .. size - 1``, built on first
    use and kept back to back in one buffer (``data``).

    >>> tables = RunTables()
    >>> offsets = tables.offsets(12, 3)
    >>> bytes(tables.data()[offsets[0]:offsets[3]]).decode()
    ';0:12;1:12;2:12'
    """

    def __init__(self) -> None:
        self.size = 0
        self._node_text = np.zeros((0, 1), dtype=np.uint8)  # (size, width): ``;node:`` left-aligned
        self._node_len = np.zeros(0, dtype=np.int64)
        self._offsets: dict[int, np.ndarray] = {}
        self._row: dict[int, int] = {}
        self._buffer = np.zeros(0, dtype=np.uint8)  # the tables back to back, then spare room
        self._used = 0
        self._bytes: bytes | None = b""  # data() as bytes (None: the tables changed since)
        self._matrix = np.zeros(
            (0, 1), dtype=np.int64
        )  # row k: the offsets of the k-th table built

    def _grow(self, size: int) -> None:
        self.size = max(size, 2 * self.size)
        parts = [f";{node}:".encode() for node in range(self.size)]
        width = max(map(len, parts))
        flat = np.frombuffer(b"".join(part.ljust(width, b"\0") for part in parts), dtype=np.uint8)
        self._node_text = flat.reshape(self.size, width)
        self._node_len = np.fromiter(map(len, parts), np.int64, self.size)
        self._offsets, self._row, self._used, self._bytes = {}, {}, 0, None
        self._matrix = np.zeros((4, self.size + 1), dtype=np.int64)

    def offsets(self, units: int, size: int) -> np.ndarray:
        """Node ``n``'s entry ``;n:units`` is ``data()[offsets[n]:offsets[n + 1]]``
        (``n < size``)."""
        if size > self.size:
            self._grow(size)
        found = self._offsets.get(units)
        if found is None:
            node_text, node_len = self._node_text, self._node_len
            suffix = np.frombuffer(str(units).encode(), dtype=np.uint8)
            width = node_text.shape[1]
            rows = np.zeros((self.size, width + len(suffix)), dtype=np.uint8)
            rows[:, :width] = node_text
            keep = np.zeros(rows.shape, dtype=bool)
            keep[:, :width] = np.arange(width) < node_len[:, None]
            # The suffix goes right after each node's ``;node:``, then the padding is dropped.
            place = node_len[:, None] + np.arange(len(suffix))
            rows[np.arange(self.size)[:, None], place] = suffix
            keep[np.arange(self.size)[:, None], place] = True
            found = np.empty(self.size + 1, dtype=np.int64)
            found[0] = self._used
            np.cumsum(node_len + len(suffix), out=found[1:])
            found[1:] += self._used
            text = rows[keep]
            if self._used + len(text) > len(self._buffer):  # room for twice as much
                grown = np.zeros(2 * (self._used + len(text)), dtype=np.uint8)
                grown[: self._used] = self._buffer[: self._used]
                self._buffer = grown
            self._buffer[self._used : self._used + len(text)] = text
            self._used, self._bytes = int(found[-1]), None
            self._offsets[units] = found
            row = self._row[units] = len(self._row)
            if row == len(self._matrix):  # room for twice as many tables
                self._matrix = np.concatenate((self._matrix, np.zeros_like(self._matrix)))
            self._matrix[row] = found
        return found

    def cost(self, values: list[int], size: int) -> int:
        """Bytes of tables (built and to build) that :meth:`rows` for ``values`` would hold."""
        grown = max(size, 2 * self.size) if size > self.size else self.size
        missing = (
            values
            if size > self.size
            else [value for value in values if value not in self._offsets]
        )
        width = len(str(grown)) + 2
        used = 0 if size > self.size else self._used
        return used + sum(grown * (width + len(str(value))) for value in missing)

    def rows(self, values: list[int], size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(matrix, rows)``: the entry of node ``n`` with units ``values[k]`` starts at
        ``matrix[rows[k], n]`` in ``data()`` (tables built as needed)."""
        for value in values:
            self.offsets(value, size)
        return self._matrix, np.array([self._row[value] for value in values], dtype=np.int64)

    def data(self) -> np.ndarray:
        """Every table built so far, back to back."""
        return self._buffer[: self._used]

    def data_bytes(self) -> bytes:
        """:meth:`data` as ``bytes`` (copied once per state of the tables)."""
        if self._bytes is None:
            self._bytes = self.data().tobytes()
        return self._bytes


def _ragged_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])`` without a loop.

    >>> _ragged_index(np.array([5, 0, 1]), np.array([2, 0, 3])).tolist()
    [5, 6, 1, 2, 3]
    """
    used = lengths > 0
    if not used.all():
        starts, lengths = starts[used], lengths[used]
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    steps = np.ones(total, dtype=np.int64)
    begins = np.cumsum(lengths[:-1])
    steps[0] = starts[0]
    # Where a slice begins, jump from the previous slice's last index to this one's first.
    steps[begins] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(steps, out=steps)


def _piece(
    runs: np.ndarray, first_run: np.ndarray, run_count: np.ndarray, tables: RunTables
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`runs_text` of jobs whose runs are
    ``runs[first_run[k]:first_run[k] + run_count[k]]``."""
    n_jobs = len(first_run)
    selected = runs[_ragged_index(first_run, run_count)].astype(np.int64)
    if not len(selected):
        return np.zeros(n_jobs + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    first, count, units = selected[:, 0], selected[:, 1], selected[:, 2]
    size = int((first + count).max())
    values, table = np.unique(units, return_inverse=True)
    if (
        tables.cost(values.tolist(), size) > _TABLE_BUDGET
    ):  # e.g. huge node ids with many units values
        return _piece_by_job(runs, first_run, run_count)
    matrix, table_rows = tables.rows(values.tolist(), size)
    table = table_rows[table]
    starts, ends = matrix[table, first], matrix[table, first + count]
    opening = (np.cumsum(run_count) - run_count)[run_count > 0]  # each job's first run
    starts[opening] += 1  # no ``;`` before a job's first pair
    lengths = ends - starts
    job_length = np.zeros(n_jobs, dtype=np.int64)
    job_length[run_count > 0] = np.add.reduceat(lengths, opening)
    offsets = np.zeros(n_jobs + 1, dtype=np.int64)
    np.cumsum(job_length, out=offsets[1:])
    source = tables.data()
    if int(offsets[-1]) >= _LONG_SLICE * len(starts):
        # Long slices (runs of many nodes): one memory copy per slice beats a gather index
        # of 8 bytes per byte of text.
        whole = tables.data_bytes()  # (slicing bytes: faster than memoryview slices)
        text = b"".join(
            map(whole.__getitem__, map(slice, starts.tolist(), (starts + lengths).tolist()))
        )
        return offsets, np.frombuffer(text, dtype=np.uint8)
    return offsets, source.take(_ragged_index(starts, lengths))


def _piece_by_job(
    runs: np.ndarray, first_run: np.ndarray, run_count: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_piece` job by job in Python (``format_runs``' rules), for runs whose tables
    would be too large."""
    texts = []
    for begin, number in zip(first_run.tolist(), run_count.tolist(), strict=True):
        parts: list[str] = []
        for first, count, units in runs[begin : begin + number].tolist():
            parts.extend(f"{node}:{units}" for node in range(first, first + count))
        texts.append(";".join(parts).encode())
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(text) for text in texts], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(texts), dtype=np.uint8).copy()


def runs_text(
    runs: np.ndarray, run_offsets: np.ndarray, rows: np.ndarray, tables: RunTables | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``node:units;...`` text of the jobs ``rows``, in that order.

    Args:
        runs: Flat ``first, count, units`` triples of every job (non-negative integers).
        run_offsets: Job ``i``'s triples are ``runs[run_offsets[i]:run_offsets[i + 1]]``.
        rows: The jobs to format (indices into ``run_offsets[:-1]``).
        tables: Tables to reuse between calls (e.g. chunk after chunk of one file).

    Returns:
        ``(offsets, data)``: job ``rows[k]``'s text is ``data[offsets[k]:offsets[k + 1]]``
        (ASCII; empty for a job without runs).

    >>> runs = np.array([4, 2, 1, 9, 1, 13, 0, 1, 2], dtype=np.int32)
    >>> offsets, data = runs_text(runs, np.array([0, 6, 6, 9]), np.array([0, 1, 2, 0]))
    >>> [bytes(data[a:b]).decode() for a, b in zip(offsets[:-1], offsets[1:])]
    ['4:1;5:1;9:13', '', '0:2', '4:1;5:1;9:13']
    """
    tables = tables or RunTables()
    triples = np.asarray(runs).reshape(-1, 3)
    rows = np.asarray(rows, dtype=np.int64)
    run_offsets = np.asarray(run_offsets, dtype=np.int64)
    first_run = run_offsets[rows] // 3
    run_count = run_offsets[rows + 1] // 3 - first_run
    # Split the selection where its text passes _CHUNK_BYTES (about 8 bytes a pair).
    counts = triples[_ragged_index(first_run, run_count), 1].astype(np.int64)
    pairs = np.zeros(len(rows), dtype=np.int64)
    if len(counts):
        pairs[run_count > 0] = np.add.reduceat(
            counts, (np.cumsum(run_count) - run_count)[run_count > 0]
        )
    cuts = np.searchsorted(
        np.cumsum(pairs) * 8, np.arange(_CHUNK_BYTES, 8 * pairs.sum() + 1, _CHUNK_BYTES)
    )
    bounds = [0, *np.unique(cuts[(cuts > 0) & (cuts < len(rows))]).tolist(), len(rows)]
    all_offsets, all_data, done = [np.zeros(1, dtype=np.int64)], [], 0
    for begin, end in pairwise(bounds):
        offsets, data = _piece(triples, first_run[begin:end], run_count[begin:end], tables)
        all_offsets.append(offsets[1:] + done)
        all_data.append(data)
        done += len(data)
    data = np.concatenate(all_data) if all_data else np.zeros(0, dtype=np.uint8)
    return np.concatenate(all_offsets), data


def runs_strings(runs: np.ndarray, run_offsets: np.ndarray, rows: np.ndarray) -> list[str]:
    """:func:`runs_text` as Python strings (for small selections and tests).

    >>> runs_strings(np.array([3, 3, 2]), np.array([0, 3]), np.array([0]))
    ['3:2;4:2;5:2']
    """
    offsets, data = runs_text(runs, run_offsets, rows)
    text = data.tobytes().decode()
    return [text[a:b] for a, b in pairwise(offsets.tolist())]
