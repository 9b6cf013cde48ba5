"""Crash-safe storage of sweep rows: one parquet part per run, consolidated tables.

Layout of a sweep directory::

    DIR/parts/<run_id>.parquet   one row per finished run (the source of truth)
    DIR/results.parquet          all rows, rebuilt from memory every few seconds and at
    DIR/results.csv              the end (a cache of the parts, in plan order)
    DIR/sweep.json               the sweep that last wrote here (parameters, seeds, runs)
    DIR/runs/<run_id>/           with --keep-runs: each run's own results folder
    DIR/.sweep.lock              held while a sweep writes here

Every file is written to a temporary name, flushed to disk and renamed into place, so a
kill -9 at any moment leaves each stored file either absent or complete: only runs in
flight are lost. A later part for the same run replaces the earlier one (a failed run
that is retried and succeeds).
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Self

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from market_hpc.atomic_file import TMP_SUFFIX
from market_hpc.atomic_file import atomic_write as _atomic_write
from market_hpc.errors import OutputError
from market_hpc.experiment.sweep_spec import FIXED_COLUMNS, SweepError
from market_hpc.json_text import json_text

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; concurrent sweeps are the user's care
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".sweep.lock"


RESUME_HINT = "the runs stored before it are kept; free space and re-run the sweep to resume"


def atomic_write(target: Path, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``target`` whole or not at all (``market_hpc.atomic_file.atomic_write``).

    Raises:
        OutputError: the write failed (a full disk, a lost mount, no permission), naming
            ``target`` and the cause; nothing of it is left behind.
    """
    try:
        _atomic_write(target, write)
    except (OSError, pa.ArrowException) as exc:
        cause = exc.strerror if isinstance(exc, OSError) else None
        cause = cause or str(exc) or type(exc).__name__
        raise OutputError(str(target), f"{cause}; {RESUME_HINT}") from None


def _arrow_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows)


def tidy_frame(rows: Iterable[dict[str, Any]], leading: Sequence[str]) -> pd.DataFrame:
    """Rows as a frame: ``leading`` columns first, the rest in order of appearance;
    object columns mixing types that parquet cannot store are turned into strings."""
    rows = list(rows)
    columns = list(dict.fromkeys([*leading, *(key for row in rows for key in row)]))
    frame = pd.DataFrame(rows, columns=columns)
    for column in frame.columns:
        if frame[column].dtype == float and _whole_numbers(rows, column):
            # integers with gaps (runs that failed or were interrupted have no metrics): kept
            # integers (pandas' nullable Int64), so a table rebuilt after a resume has the
            # part files' int64, not float64
            frame[column] = frame[column].astype("Int64")
        elif frame[column].dtype == object:
            try:
                pa.array(frame[column])
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                frame[column] = frame[column].map(lambda v: v if v is None else str(v))
    return frame


def _whole_numbers(rows: list[dict[str, Any]], column: str) -> bool:
    """Whether every value given for ``column`` is a Python or NumPy integer (bools aside)."""
    values = [row[column] for row in rows if row.get(column) is not None]
    return bool(values) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values
    )


class ResultStore:
    """The rows of one sweep directory, in memory and on disk.

    Opening a store takes the directory's lock (a second sweep into the same directory
    fails), removes temporary files left by a killed sweep and loads the stored rows.

    Args:
        directory: The sweep directory (created if needed).

    Raises:
        SweepError: another sweep holds the directory.
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.parts = self.directory / "parts"
        self.parts.mkdir(parents=True, exist_ok=True)
        self._lock = self._acquire_lock()
        for folder in (self.directory, self.parts, self.directory / "runs"):
            for stale in folder.glob(f".*{TMP_SUFFIX}"):
                if stale.is_dir():  # a --keep-runs folder being written when killed
                    shutil.rmtree(stale, ignore_errors=True)
                else:
                    stale.unlink(missing_ok=True)
        self.rows: dict[str, dict[str, Any]] = {}
        self._load()

    @property
    def results_parquet(self) -> Path:
        """The consolidated parquet table."""
        return self.directory / "results.parquet"

    @property
    def results_csv(self) -> Path:
        """The consolidated CSV table."""
        return self.directory / "results.csv"

    def _acquire_lock(self) -> IO[str] | None:
        if fcntl is None:
            return None
        handle = open(self.directory / LOCK_FILE, "w")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise SweepError(
                f"{self.directory} is in use by another sweep (lock {self.directory / LOCK_FILE})"
            ) from None
        return handle

    def close(self) -> None:
        """Release the directory lock."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _load(self) -> None:
        """Rows of the consolidated table, then of every part it lacks or that may
        supersede a failed row."""
        if self.results_parquet.exists():
            try:
                for row in pq.read_table(self.results_parquet).to_pylist():
                    self.rows[row["run_id"]] = _drop_nulls(row)
            except (OSError, pa.ArrowException) as exc:
                warnings.warn(
                    f"{self.results_parquet} unreadable ({exc}); rebuilding it from {self.parts}",
                    stacklevel=2,
                )
                self.rows.clear()
        for part in sorted(self.parts.glob("*.parquet")):
            stored = self.rows.get(part.stem)
            if stored is not None and stored.get("status") == "ok":
                continue
            (row,) = pq.read_table(part).to_pylist()
            self.rows[row["run_id"]] = _drop_nulls(row)

    def ok_ids(self) -> set[str]:
        """Run ids stored with status ``ok``."""
        return {run_id for run_id, row in self.rows.items() if row.get("status") == "ok"}

    def add(self, row: dict[str, Any]) -> None:
        """Store one finished run durably (its part file), then in memory."""
        atomic_write(
            self.parts / f"{row['run_id']}.parquet",
            lambda handle: pq.write_table(_arrow_table([row]), handle),
        )
        self.rows[row["run_id"]] = row

    def consolidate(self, order: Sequence[str], leading: Sequence[str]) -> None:
        """Rewrite ``results.parquet`` and ``results.csv`` from the rows in memory.

        Args:
            order: Run ids in plan order; stored rows not in it (runs of an earlier,
                different sweep into this directory) follow, sorted by run id.
            leading: Columns to put first (run id, parameters, fixed columns).
        """
        planned = [self.rows[run_id] for run_id in order if run_id in self.rows]
        known = set(order)
        extra = [self.rows[run_id] for run_id in sorted(self.rows) if run_id not in known]
        frame = tidy_frame([*planned, *extra], leading)
        atomic_write(self.results_parquet, lambda handle: frame.to_parquet(handle, index=False))
        atomic_write(
            self.results_csv, lambda handle: handle.write(frame.to_csv(index=False).encode())
        )

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write ``sweep.json`` (what the report needs to know about the sweep)."""
        text = json_text(manifest, default=str)
        atomic_write(self.directory / "sweep.json", lambda handle: handle.write(text.encode()))


def _drop_nulls(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back from a table: columns it never had come back as nulls."""
    return {key: value for key, value in row.items() if value is not None or key in FIXED_COLUMNS}
