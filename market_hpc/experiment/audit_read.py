"""What the audit reads of a run folder, and the domain of every value it reads.

:func:`read_run` reads ``config.json`` (the platform, exclusive mode and burst-buffer pool),
then ``jobs.csv`` and ``segments.csv`` (:mod:`~market_hpc.experiment.audit_csv`), checks
every known column for type, range and finiteness and the ``nodes`` texts for their
syntax, and compares each CSV file with its Parquet twin.

Decisions:
    * A value outside its column's domain makes the folder unreadable (``AuditReadError``,
      exit 2): not a number, NaN or inf where a time is needed, a negative amount, units
      below 1, a status or ending not in the list, a ``nodes`` text that is not
      ``node:units;...`` with units >= 1. Relations between values (times, capacities,
      progress chains, a node outside the platform, a CSV/Parquet disagreement) are
      violations (exit 1), checked by :mod:`~market_hpc.experiment.audit` afterwards.
    * A time may be empty (NaN) only for a job that did not finish (rejected, or dropped
      before it started); progress must be finite and >= 0 (above 1 is a violation).
    * Rows of skipped trace lines (status ``skipped``) are checked for id and status only:
      they keep the trace's own values (``-1`` sizes) and never ran.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from market_hpc.domain.platform import PRESETS, Platform, load_platform
from market_hpc.errors import ConfigError
from market_hpc.experiment.audit_csv import AuditReadError, CsvTable, read_csv, twin_disagreement

JOB_STATUSES = ("finished", "dropped", "rejected", "queued", "running", "held", "skipped")
ENDINGS = ("finished", "held", "dropped")
JOB_KINDS = {
    "job_id": "int",
    "submit_time": "float",
    "start_time": "float",
    "end_time": "float",
    "wait_time": "float",
    "run_time": "float",
    "status": "text",
    "cores": "int",
    "gpus": "int",
    "mics": "int",
    "mem": "int",
    "bb": "float",
    "units": "int",
    "estimate": "float",
    "user": "int",
    "queue": "int",
    "nodes": "text",
    "value": "float",
    "hold_count": "int",
    "reason": "text",
}
JOB_REQUIRED = ("job_id", "submit_time", "start_time", "end_time", "status")
SEGMENT_KINDS = {
    "job_id": "int",
    "segment": "int",
    "start": "float",
    "end": "float",
    "nodes": "text",
    "units": "int",
    "cores": "int",
    "gpus": "int",
    "mics": "int",
    "mem": "int",
    "bb": "float",
    "progress_before": "float",
    "progress_after": "float",
    "ended": "text",
}
NODES_VALID = "node:units pairs joined by ';' (e.g. 0:2;5:1), units >= 1, numbers below 2^31"
_PAIRS = re.compile(r"-?[0-9]+:-?[0-9]+(?:;-?[0-9]+:-?[0-9]+)*")
_LIMIT = 1 << 31
_EXACT = 1 << 53  # integers a float64 holds exactly (amounts are summed as floats)
_PLATFORM_VALID = f"a preset ({', '.join(PRESETS)}), nodes=N,cores=C[,...] or FILE.toml"

Fail = Callable[[int, str, str], Exception]
"""Builds the error for (row, column, message)."""
Placements = tuple[np.ndarray, np.ndarray, np.ndarray]
"""For every (segment, node) pair: the segment's row, the node and its units."""


@dataclass(frozen=True)
class RunFiles:
    """A run folder as the audit reads it, every value in its domain.

    Attributes:
        platform: The platform of ``config.json``.
        exclusive: Whether the run allocated whole nodes.
        bb_capacity: The burst-buffer pool in GB.
        jobs: ``jobs.csv``'s typed frame.
        segments: ``segments.csv``'s typed frame.
        placements: The segments' node placements (:func:`parse_nodes`).
        twins: How a Parquet twin disagrees with its CSV file (``None``: none does).
        counts: ``summary.json``'s job counts (:func:`summary_counts`).
    """

    platform: Platform
    exclusive: bool
    bb_capacity: float
    jobs: pd.DataFrame
    segments: pd.DataFrame
    placements: Placements
    twins: str | None
    counts: dict[str, int]


def read_run(directory: Path) -> RunFiles:
    """Read a run folder for the audit.

    Raises:
        AuditReadError: a file missing or unreadable, a value not of its column's type or
            outside its range (naming file, line and column or key).
    """
    platform, exclusive, bb_capacity = run_setting(directory)
    jobs = read_csv(directory / "jobs.csv", JOB_KINDS, JOB_REQUIRED)
    check_job_values(jobs.columns, jobs.fail)
    segments = read_csv(directory / "segments.csv", SEGMENT_KINDS, tuple(SEGMENT_KINDS))
    placements = check_segment_values(segments.columns, segments.fail)
    _check_job_nodes(jobs, segments)
    twins = twin_disagreement(jobs, directory / "jobs.parquet", "job_id") or twin_disagreement(
        segments, directory / "segments.parquet", "job_id"
    )
    return RunFiles(
        platform,
        exclusive,
        bb_capacity,
        _frame(jobs),
        _frame(segments),
        placements,
        twins,
        summary_counts(directory),
    )


def _check_job_nodes(jobs: CsvTable, segments: CsvTable) -> None:
    """The syntax of ``jobs.csv``'s ``nodes``: a text equal to a segment's (checked
    already) is not parsed again."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = jobs.texts.get("nodes")
    if texts is None:
        return
    unchecked = pc.invert(pc.is_in(texts, value_set=segments.texts["nodes"]))
    rows = np.flatnonzero(unchecked.to_numpy(zero_copy_only=False))
    if len(rows):
        parse_nodes(
            texts.take(pa.array(rows)),
            lambda row, column, message: jobs.fail(int(rows[row]), column, message),
        )


def _frame(table: CsvTable) -> pd.DataFrame:
    """The typed columns as a frame (texts kept as object columns, not converted again)."""
    return pd.DataFrame(
        {
            name: pd.Series(values, dtype=object if values.dtype == object else None, copy=False)
            for name, values in table.columns.items()
        }
    )


def run_setting(directory: Path) -> tuple[Platform, bool, float]:
    """The platform, exclusive mode and burst-buffer pool the run used (``config.json``).

    Raises:
        AuditReadError: no such folder or file, not JSON, not an object, or a key missing
            or of the wrong type (naming the key and what is valid).
    """
    if not directory.is_dir():
        raise AuditReadError(
            directory, "not a folder; valid: a run folder (market-hpc run/replay --out DIR)"
        )
    path = directory / "config.json"
    written = _json_object(path, '{"config": {...}}')
    config = _object(path, written, "config", required=True)
    spec = config.get("platform")
    if not isinstance(spec, str) or not spec:
        got = "missing" if spec is None else f"got {_shown(spec)}"
        raise AuditReadError(path, f"key 'config.platform': {got}; valid: {_PLATFORM_VALID}")
    if spec.endswith(".toml") and "=" not in spec and not Path(spec).is_file():
        raise AuditReadError(
            path, f"key 'config.platform': {spec!r} is not a file; valid: {_PLATFORM_VALID}"
        )
    try:
        platform = load_platform(spec)
    except (ConfigError, OSError, ValueError) as exc:
        raise AuditReadError(path, f"key 'config.platform': {exc}") from None
    exclusive = config.get("exclusive", False)
    if not isinstance(exclusive, bool):
        raise AuditReadError(
            path, f"key 'config.exclusive': got {_shown(exclusive)}; valid: true, false"
        )
    sized = _capacity(path, written, "workload")
    rule = _capacity(path, config, "config.workload")
    pool = sized if sized is not None else rule
    return platform, exclusive, platform.burst_buffer if pool is None else pool


SUMMARY_COUNTS = {
    "jobs_completed": "finished",
    "jobs_dropped": "dropped",
    "jobs_rejected": "rejected",
}
"""``summary.json``'s job counts and the ``jobs.csv`` status each counts."""


def summary_counts(directory: Path) -> dict[str, int]:
    """``summary.json``'s job counts (``{}`` when there is no ``summary.json``).

    Raises:
        AuditReadError: ``summary.json`` is not a JSON object, or a count not a whole
            number >= 0.
    """
    path = directory / "summary.json"
    if not path.exists():
        return {}
    written = _json_object(path, '{"jobs_completed": N, ...}')
    counts: dict[str, int] = {}
    for key in SUMMARY_COUNTS:
        if key not in written:
            continue
        value = written[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise AuditReadError(
                path, f"key {key!r}: got {_shown(value)}; valid: a whole number >= 0"
            )
        counts[key] = value
    return counts


def _json_object(path: Path, shape: str) -> dict[str, Any]:
    """A JSON file holding an object, read.

    Raises:
        AuditReadError: not a regular file, not UTF-8, not JSON or not an object.
    """
    if not path.is_file():
        what = "not a regular file" if path.exists() else "no such file"
        raise AuditReadError(path, f"{what} (not a run folder written by market-hpc run or replay)")
    try:
        written = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise AuditReadError(path, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise AuditReadError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        message = f"not JSON: {exc.msg} (column {exc.colno})"
        raise AuditReadError(path, message, exc.lineno) from None
    except RecursionError:
        raise AuditReadError(path, "not JSON this audit can read: nested too deeply") from None
    if not isinstance(written, dict):
        raise AuditReadError(
            path,
            f"not a JSON object (got {type(written).__name__}); valid: "
            f"{shape} as market-hpc run writes it",
        )
    return written


def _object(
    path: Path,
    parent: dict[str, Any],
    key: str,
    required: bool = False,
    shown_as: str | None = None,
    nullable: bool = False,
) -> dict[str, Any]:
    """``parent[key]``, an object (``{}`` when absent, or null where ``nullable``)."""
    name = shown_as or key
    if key not in parent or (nullable and parent[key] is None):
        if required:
            raise AuditReadError(path, f"key {name!r}: missing; valid: an object")
        return {}
    value = parent[key]
    if not isinstance(value, dict):
        raise AuditReadError(path, f"key {name!r}: got {_shown(value)}; valid: an object")
    return value


def _capacity(path: Path, parent: dict[str, Any], name: str) -> float | None:
    """``<name>.burst_buffer.capacity_gb`` (``None`` when absent)."""
    workload = _object(path, parent, name.rsplit(".", 1)[-1], shown_as=name)
    rule = _object(path, workload, "burst_buffer", shown_as=f"{name}.burst_buffer", nullable=True)
    value = rule.get("capacity_gb")
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value < 0:
        raise AuditReadError(
            path,
            f"key '{name}.burst_buffer.capacity_gb': got {_shown(value)}; "
            "valid: a finite number >= 0 (GB) or null",
        )
    return float(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _require(ok: np.ndarray, values: np.ndarray, name: str, valid: str, fail: Fail) -> None:
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise fail(row, name, f"got {_shown(_plain(values[row]))}; valid: {valid}")


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def check_job_values(columns: dict[str, np.ndarray], fail: Fail) -> None:
    """Check ``jobs.csv``'s typed columns against their domains.

    Raises:
        Exception: ``fail(row, column, message)`` for the first value outside its domain.
    """
    status = columns["status"]
    _require(
        np.isin(status, JOB_STATUSES), status, "status", f"one of {', '.join(JOB_STATUSES)}", fail
    )
    other = status == "skipped"
    finished = status == "finished"
    with np.errstate(invalid="ignore"):
        _require(
            other | np.isfinite(columns["submit_time"]),
            columns["submit_time"],
            "submit_time",
            "a finite time",
            fail,
        )
        for name in ("start_time", "end_time", "wait_time", "run_time"):
            if name not in columns:
                continue
            values = columns[name]
            duration = name in ("wait_time", "run_time")
            ok = np.isfinite(values) & ((values >= 0) | (not duration))
            valid = (
                f"a finite time{' >= 0' if duration else ''}, "
                "empty only for a job that did not finish"
            )
            _require(other | ok | (np.isnan(values) & ~finished), values, name, valid, fail)
        for name in ("cores", "gpus", "mics", "mem", "units", "hold_count"):
            if name in columns:
                _require(
                    other | (columns[name] >= 0), columns[name], name, "a whole number >= 0", fail
                )
        for name in ("bb", "estimate"):
            if name in columns:
                values = columns[name]
                _require(
                    other | (np.isfinite(values) & (values >= 0)),
                    values,
                    name,
                    "a finite number >= 0",
                    fail,
                )
        if "value" in columns:
            _require(
                other | np.isfinite(columns["value"]),
                columns["value"],
                "value",
                "a finite number",
                fail,
            )


def check_segment_values(columns: dict[str, np.ndarray], fail: Fail) -> Placements:
    """Check ``segments.csv``'s typed columns against their domains (``nodes``: its syntax).

    Returns:
        The segments' node placements (:func:`parse_nodes`).

    Raises:
        Exception: ``fail(row, column, message)`` for the first value outside its domain.
    """
    ended = columns["ended"]
    _require(np.isin(ended, ENDINGS), ended, "ended", f"one of {', '.join(ENDINGS)}", fail)
    for name in ("segment", "units", "cores", "gpus", "mics", "mem"):
        least = 1 if name in ("segment", "units") else 0
        values = columns[name]
        _require(
            (values >= least) & (values < _EXACT),
            values,
            name,
            f"a whole number from {least} to 2^53",
            fail,
        )
    with np.errstate(invalid="ignore"):
        for name in ("start", "end"):
            _require(np.isfinite(columns[name]), columns[name], name, "a finite time", fail)
        for name in ("bb", "progress_before", "progress_after"):
            values = columns[name]
            _require(
                np.isfinite(values) & (values >= 0), values, name, "a finite number >= 0", fail
            )
    return parse_nodes(columns["nodes"], fail)


def parse_nodes(nodes: Any, fail: Fail | None = None) -> Placements:
    """Parse ``node:units;...`` texts at once (in Arrow: a run on thousands of nodes has
    millions of pairs).

    Args:
        nodes: The texts (empty or missing: no allocation).
        fail: Builds the error for (row, ``"nodes"``, message); ``None``: ``ValueError``.

    Returns:
        For every (text, node) pair: the index of its text, the node and its units.

    Raises:
        Exception: a text that is not ``node:units`` pairs joined by ``;``, or units below 1
            (``fail``'s, else ``ValueError``).

    >>> parse_nodes(["0:2;5:1", "", "3:4"])
    (array([0, 0, 2]), array([0, 5, 3]), array([2, 1, 4]))
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(nodes, pa.Array | pa.ChunkedArray):
        texts = pc.fill_null(pc.cast(nodes, pa.large_string()), "")
    else:
        series = nodes if isinstance(nodes, pd.Series) else pd.Series(nodes, dtype=object)
        texts = pc.fill_null(pa.array(series, type=pa.large_string(), from_pandas=True), "")
    filled = np.flatnonzero(pc.binary_length(texts).to_numpy(zero_copy_only=False) > 0)
    empty = np.zeros(0, dtype=np.int64)
    if not len(filled):
        return empty, empty, empty
    pieces = pc.split_pattern(texts.take(pa.array(filled)), ";")
    counts = pc.list_value_length(pieces).to_numpy(zero_copy_only=False).astype(np.int64)
    halves = pc.split_pattern(pc.list_flatten(pieces), ":")
    lengths = pc.list_value_length(halves)
    numbers = None
    if pc.min_max(lengths)["min"].as_py() == 2 == pc.min_max(lengths)["max"].as_py():
        try:
            numbers = pc.cast(pc.list_flatten(halves), pa.int64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            numbers = None
    if numbers is not None:
        pairs = numbers.reshape(-1, 2)
        if ((pairs[:, 1] >= 1) & (np.abs(pairs) < _LIMIT).all(axis=1)).all():
            return np.repeat(filled, counts), pairs[:, 0], pairs[:, 1]
    row, text = _first_bad_text(texts, filled)
    message = f"got {_shown(text)}; valid: {NODES_VALID}"
    if fail is None:
        raise ValueError(f"an allocation is not node:units;... text: {message}")
    raise fail(row, "nodes", message)


def _first_bad_text(texts: Any, filled: np.ndarray) -> tuple[int, str]:
    """The first allocation text out of its syntax or range (on error paths only)."""
    for row in filled.tolist():
        text = texts[row].as_py()
        if _PAIRS.fullmatch(text) is None:
            return row, text
        for pair in text.split(";"):
            node, units = (int(part) for part in pair.split(":"))
            if units < 1 or abs(node) >= _LIMIT or units >= _LIMIT:
                return row, text
    return int(filled[0]), texts[int(filled[0])].as_py()  # (unreachable: the fast path failed)
