"""Read a run folder's files with checks, for ``export`` and ``plot``.

A run folder (``run``/``replay --out``) is plain files a user can edit, cut short or copy
half-way. Every file these commands use is read here and every cell they use is checked
before any of it is computed on, so a bad file is one :class:`~market_hpc.errors.ConfigError`
naming the file, the line (CSV; ``row`` in Parquet, counting from 1) and the column or key,
what it holds and what is valid; never a traceback deep in pandas, and never an export
of a schedule the folder does not hold.

Decisions:
    * CSV line numbers count the header as line 1; blank lines are kept as rows (they
      fail the ``job_id`` check on their own line) so every number is the file's line.
    * A job id appears once in ``jobs.csv``; a segment ``(job_id, segment)`` once in
      ``segments.csv``, and only for a job ``jobs.csv`` lists.
    * Rows of status ``skipped`` (trace lines listed for information) need only a job
      id: their other numbers may be empty or any number from -1 (unknown in the trace)
      to 2^50; an empty one is read as -1 where the column is never empty.
    * A ``finished`` job has a start, end, run and wait time; no job starts before its
      submit time or ends before its start, nor does a segment.
    * ``user`` and ``queue`` default to ``-1`` and ``hold_count`` to 0 when the column
      is absent (hand-made folders); every other column read is required.
    * When ``summary.json`` counts the jobs (``jobs_total`` + ``jobs_skipped``), ``jobs.csv``
      must have that many rows: a file cut at a line end reads cleanly otherwise.
    * Allocations (``nodes``) are ``node:units`` pairs joined by ``;`` (a bare node is one
      unit), with every node of the platform in ``config.json``.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.errors import ConfigError
from market_hpc.validation import MAX_INT, MAX_SECONDS, NON_NEGATIVE, Range

STATUSES = ("queued", "running", "held", "finished", "dropped", "rejected", "skipped")
ENDINGS = ("finished", "held", "dropped")
_ID = Range(0, MAX_INT, integer=True)
_TIME = Range(0.0, MAX_SECONDS)
_ESTIMATE = Range(-1.0, MAX_SECONDS)
_AMOUNT = Range(0, MAX_INT, integer=True)
_UNITS = Range(1, MAX_INT, integer=True)
_SEGMENT = Range(1, MAX_INT, integer=True)
_INTEGER = Range(-1, MAX_INT, integer=True)
_ALLOCATION = re.compile(r"\d+(:[1-9]\d*)?(;\d+(:[1-9]\d*)?)*")
ALLOCATION_TEXT = "node:units pairs joined by ';' (e.g. 0:4;1:2), or empty"


@dataclass(frozen=True)
class Spec:
    """One column's check: valid numbers (``None``: text, checked by the caller), whether
    a cell may be empty, and the value of a column that may be absent (``None``: required)."""

    name: str
    valid: Range | None
    empty: bool = False
    default: float | None = None


JOB_SPECS = (
    Spec("job_id", _ID),
    Spec("submit_time", _TIME),
    Spec("start_time", _TIME, empty=True),
    Spec("end_time", _TIME, empty=True),
    Spec("wait_time", _TIME, empty=True),
    Spec("run_time", _TIME, empty=True),
    Spec("status", None),
    Spec("cores", _AMOUNT),
    Spec("units", _UNITS),
    Spec("estimate", _ESTIMATE),
    Spec("nodes", None, empty=True),
    Spec("user", _INTEGER, default=-1),
    Spec("queue", _INTEGER, default=-1),
    Spec("hold_count", _AMOUNT, default=0),
    Spec("gpus", _AMOUNT, default=0),
    Spec("mics", _AMOUNT, default=0),
    Spec("mem", _AMOUNT, default=0),
    Spec("bb", NON_NEGATIVE, default=0),
)
SEGMENT_SPECS = (
    Spec("job_id", _ID),
    Spec("segment", _SEGMENT),
    Spec("start", _TIME),
    Spec("end", _TIME),
    Spec("nodes", None),
    Spec("cores", _AMOUNT),
    Spec("units", _UNITS),
    Spec("ended", None),
)
SERIES_SPECS = (
    Spec("time", _TIME),
    Spec("queue_length", _AMOUNT),
    Spec("used_cores", NON_NEGATIVE),
)


class Table:
    """A CSV or Parquet file of a run folder, read whole, with the place of each row."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.parquet = path.suffix == ".parquet"
        self.frame = self._read()

    def _read(self) -> pd.DataFrame:
        import pyarrow as pa

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.parquet:
                    return pd.read_parquet(self.path)
                return pd.read_csv(
                    self.path,
                    dtype={"nodes": str, "status": str, "ended": str, "reason": str},
                    skip_blank_lines=False,
                    low_memory=False,
                )
        except pd.errors.EmptyDataError:
            raise ConfigError(
                f"{self.path}: the file is empty; valid: a header line and one "
                "line per row, as market-hpc run/replay --out writes"
            ) from None
        except pd.errors.ParserError as exc:
            raise ConfigError(
                f"{self.path}: not readable as CSV: {_first_line(exc)}; valid: "
                "comma-separated cells, the same number on every line"
            ) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{self.path}: not UTF-8 text ({exc.reason} at byte "
                f"{exc.start}); valid: the CSV text run/replay writes"
            ) from None
        except (OSError, ValueError, TypeError, pa.ArrowException) as exc:
            kind = "Parquet" if self.parquet else "CSV"
            instead = f" (or remove it: {self.path.stem}.csv is read then)" if self.parquet else ""
            raise ConfigError(
                f"{self.path}: cannot be read as {kind} ({_first_line(exc)}); "
                f"valid: the file market-hpc run/replay --out writes{instead}"
            ) from None

    def where(self, position: int) -> str:
        """``line N`` (CSV, the header is line 1) or ``row N`` (Parquet) of a row."""
        return f"row {position + 1}" if self.parquet else f"line {position + 2}"

    def fail(self, position: int, column: str, got: object, valid: str) -> ConfigError:
        shown = got if not isinstance(got, str) or len(got) <= 40 else got[:40] + "..."
        return ConfigError(
            f"{self.path}: {self.where(position)}, column {column}: got {shown!r}; valid: {valid}"
        )

    def require(self, specs: tuple[Spec, ...]) -> None:
        """Refuse a file without one of the required columns; add absent optional ones."""
        missing = [
            spec.name for spec in specs if spec.name not in self.frame and spec.default is None
        ]
        if missing:
            needed = ", ".join(spec.name for spec in specs if spec.default is None)
            raise ConfigError(
                f"{self.path}: no column {', '.join(missing)}; valid: a header "
                f"with {needed} (as market-hpc run/replay --out writes)"
            )
        for spec in specs:
            if spec.name not in self.frame:
                self.frame[spec.name] = spec.default

    def numbers(self, spec: Spec, loose: np.ndarray | None = None) -> None:
        """Check a numeric column and store it as float64 (int64 for integers never empty).

        Args:
            spec: The column and what is valid.
            loose: Rows that may also hold -1 or nothing (an unknown in the trace), stored
                as -1 unless the column may be empty.
        """
        assert spec.valid is not None
        column = self.frame[spec.name]
        values, bad = _as_floats(column)
        empty = np.isnan(values) & ~bad
        with np.errstate(invalid="ignore"):
            ok = (values >= spec.valid.low) & (values <= spec.valid.high) & np.isfinite(values)
            if spec.valid.integer:
                ok &= values == np.floor(values)
        if spec.empty:
            ok |= empty
        if loose is not None:
            with np.errstate(invalid="ignore"):
                ok |= loose & (empty | ((values >= -1) & (values <= MAX_SECONDS)))
            values = np.where(loose & empty & (not spec.empty), -1.0, values)
        ok &= ~bad
        if not ok.all():
            position = int(np.flatnonzero(~ok)[0])
            valid = spec.valid.describe() + (" or empty" if spec.empty else "")
            raise self.fail(position, spec.name, _cell(column, position), valid)
        integers = spec.valid.integer and not spec.empty and (values == np.floor(values)).all()
        self.frame[spec.name] = values.astype(np.int64) if integers else values

    def ordered(self, earlier: str, later: str) -> None:
        """Refuse a row whose ``later`` time is before its ``earlier`` one (both present)."""
        first, second = (self.frame[name].to_numpy(float) for name in (earlier, later))
        with np.errstate(invalid="ignore"):
            wrong = second < first
        if wrong.any():
            position = int(np.flatnonzero(wrong)[0])
            raise self.fail(
                position,
                later,
                _cell(self.frame[later], position),
                f"a time >= {earlier} ({first[position]:g})",
            )

    def present(self, names: tuple[str, ...], rows: np.ndarray, what: str) -> None:
        """Refuse an empty cell of ``names`` in ``rows`` (``what`` says which rows)."""
        for name in names:
            missing = rows & np.isnan(self.frame[name].to_numpy(float))
            if missing.any():
                position = int(np.flatnonzero(missing)[0])
                raise self.fail(position, name, "", f"a time (every {what} has one)")

    def choices(self, name: str, valid: tuple[str, ...]) -> None:
        """Check a text column holds one of ``valid`` in every row."""
        column = self.frame[name]
        ok = column.isin(valid).to_numpy()
        if not ok.all():
            position = int(np.flatnonzero(~ok)[0])
            raise self.fail(position, name, _cell(column, position), ", ".join(valid))
        self.frame[name] = column.astype(str)

    def allocations(self, name: str, n_nodes: int | None, empty: bool) -> None:
        """Check the ``nodes`` text of every row (module docstring)."""
        column = self.frame[name]
        text = column.where(column.map(lambda value: isinstance(value, str)), "")
        form = text.map(lambda value: value == "" or _ALLOCATION.fullmatch(value) is not None)
        ok = form.to_numpy(dtype=bool) & (column.map(_is_text_or_missing).to_numpy(dtype=bool))
        if not empty:
            ok &= (text != "").to_numpy()
        highest = np.array(
            [
                _highest_node(value) if good else -1
                for value, good in zip(text.tolist(), ok.tolist(), strict=True)
            ]
        )
        if n_nodes is not None:
            ok &= highest < n_nodes
        if not ok.all():
            position = int(np.flatnonzero(~ok)[0])
            valid = ALLOCATION_TEXT if empty else ALLOCATION_TEXT.removesuffix(", or empty")
            nodes = f", nodes 0 to {n_nodes - 1}" if n_nodes is not None else ""
            raise self.fail(position, name, _cell(column, position), valid + nodes)
        self.frame[name] = text

    def unique(self, keys: list[str], valid: str) -> None:
        """Refuse a second row with the same ``keys``."""
        again = self.frame.duplicated(keys, keep="first").to_numpy()
        if again.any():
            position = int(np.flatnonzero(again)[0])
            row = self.frame.iloc[position]
            first = int(np.flatnonzero((self.frame[keys] == row[keys]).all(axis=1).to_numpy())[0])
            shown = " ".join(f"{name} {_cell(self.frame[name], position)}" for name in keys)
            raise ConfigError(
                f"{self.path}: {self.where(position)}: {shown} again (first on "
                f"{self.where(first)}); valid: {valid}"
            )


def _highest_node(allocation: str) -> int:
    """The largest node number of an allocation text, -1 for none.

    >>> _highest_node("3:2;12;0:1"), _highest_node("")
    (12, -1)
    """
    return max((int(node) for node in re.findall(r"(?:^|;)(\d+)", allocation)), default=-1)


def _is_text_or_missing(value: object) -> bool:
    return isinstance(value, str) or value is None or (isinstance(value, float) and np.isnan(value))


def _cell(column: pd.Series, position: int) -> object:
    value = column.iloc[position]
    if isinstance(value, float) and np.isnan(value) or value is None:
        return ""
    return value.item() if isinstance(value, np.generic) else value


def _as_floats(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A column as float64 (NaN for empty cells) and where a cell is not a number."""
    if column.dtype.kind in "iuf":
        return column.to_numpy(dtype=np.float64), np.zeros(len(column), dtype=bool)
    values = np.empty(len(column))
    bad = np.zeros(len(column), dtype=bool)
    for index, cell in enumerate(column.tolist()):
        number = _float(cell)
        bad[index] = number is None
        values[index] = np.nan if number is None else number
    return values, bad


def _float(cell: object) -> float | None:
    """A cell's number, NaN when empty, ``None`` when it is not a number."""
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return float("nan")
    if isinstance(cell, bool):
        return None
    if isinstance(cell, int | float | np.integer | np.floating):
        return float(cell)
    if isinstance(cell, str):
        text = cell.strip()
        if not text:
            return float("nan")
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def read_config(folder: Path) -> dict[str, Any]:
    """``config.json`` with its ``config`` object checked: an object whose ``platform`` is
    text, ``policy`` and ``workload`` objects (``{}`` when absent), ``workload.trace``
    text or null.

    Raises:
        ConfigError: Naming ``config.json``, the key and what is valid.
    """
    path = folder / "config.json"
    try:
        document = json.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError
        raise ConfigError(
            f"{path}: not JSON: {_first_line(exc)}; valid: the config.json "
            "market-hpc run/replay --out writes"
        ) from None
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        got = document if not isinstance(document, dict) else document.get("config")
        key = "config" if isinstance(document, dict) else "(top level)"
        raise ConfigError(
            f"{path}: key {key}: got {_json(got)}; valid: an object (config.json "
            'is {"config": {"platform": ..., ...}, ...})'
        )
    platform = config.get("platform")
    if not isinstance(platform, str):
        raise ConfigError(
            f"{path}: key config.platform: got {_json(platform)}; valid: a platform "
            "preset name or spec text such as nodes=2,cores=4"
        )
    checked = dict(config)
    for key in ("policy", "workload"):
        value = config.get(key)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"{path}: key config.{key}: got {_json(value)}; valid: an object")
        checked[key] = value or {}
    trace = checked["workload"].get("trace")
    if trace is not None and not isinstance(trace, str):
        raise ConfigError(
            f"{path}: key config.workload.trace: got {_json(trace)}; valid: a file name or null"
        )
    checked["name"] = str(config.get("name", folder.name))
    return {**document, "config": checked}


def _json(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:40] + "..."


def read_summary(folder: Path) -> dict[str, Any] | None:
    """``summary.json`` as an object; ``None`` when the folder has none.

    Raises:
        ConfigError: It is not JSON or not an object.
    """
    path = folder / "summary.json"
    if not path.is_file():
        return None
    try:
        summary = json.loads(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(
            f"{path}: not JSON: {_first_line(exc)}; valid: the summary.json "
            "market-hpc run/replay --out writes"
        ) from None
    if not isinstance(summary, dict):
        raise ConfigError(f"{path}: got {_json(summary)}; valid: an object of metrics")
    return summary


def read_jobs(path: Path, n_nodes: int, summary: dict[str, Any] | None) -> pd.DataFrame:
    """``jobs.parquet`` or ``jobs.csv`` checked column by column (module docstring).

    Args:
        path: The file.
        n_nodes: Nodes of the run's platform (allocations name nodes below it).
        summary: The run's ``summary.json``, whose job counts the rows must match.
    """
    table = Table(path)
    table.require(JOB_SPECS)
    table.numbers(JOB_SPECS[0])
    table.choices("status", STATUSES)
    skipped = (table.frame["status"] == "skipped").to_numpy()
    for spec in JOB_SPECS[1:]:
        if spec.valid is not None:
            table.numbers(spec, loose=skipped)
    table.allocations("nodes", n_nodes, empty=True)
    finished = (table.frame["status"] == "finished").to_numpy()
    table.present(("start_time", "end_time", "run_time", "wait_time"), finished, "finished job")
    for earlier, later in (("submit_time", "start_time"), ("start_time", "end_time")):
        table.ordered(earlier, later)
    table.unique(["job_id"], "one row per job")
    counted = [summary.get(key) for key in ("jobs_total", "jobs_skipped")] if summary else []
    if counted and all(type(n) is int for n in counted):
        expected = sum(int(n) for n in counted if n is not None)
        if expected != len(table.frame):
            raise ConfigError(
                f"{path}: {len(table.frame):,} job rows, but summary.json counts "
                f"{expected:,} (jobs_total + jobs_skipped); valid: one row per job "
                "(is the file cut short?)"
            )
    if not len(table.frame):
        raise ConfigError(f"{path}: no job rows; valid: one row per job of the run")
    return table.frame


def read_segments_file(
    path: Path, n_nodes: int | None = None, job_ids: np.ndarray | None = None
) -> pd.DataFrame:
    """``segments.parquet`` or ``segments.csv`` checked (module docstring); ``n_nodes`` and
    ``job_ids``, when given, bound the allocations and the jobs named."""
    table = Table(path)
    table.require(SEGMENT_SPECS)
    for spec in SEGMENT_SPECS:
        if spec.valid is not None:
            table.numbers(spec)
    table.choices("ended", ENDINGS)
    table.allocations("nodes", n_nodes, empty=False)
    table.ordered("start", "end")
    table.unique(["job_id", "segment"], "one row per segment of a job")
    known = np.isin(table.frame["job_id"].to_numpy(), job_ids) if job_ids is not None else None
    if known is not None and not known.all():
        position = int(np.flatnonzero(~known)[0])
        raise table.fail(
            position,
            "job_id",
            _cell(table.frame["job_id"], position),
            "the id of a job in jobs.csv",
        )
    return table.frame


def read_series(path: Path) -> pd.DataFrame:
    """``timeseries.csv``'s ``time``, ``queue_length`` and ``used_cores``, checked."""
    table = Table(path)
    table.require(SERIES_SPECS)
    for spec in SERIES_SPECS:
        table.numbers(spec)
    return table.frame
