"""Seeded corruptions of a run folder, for ``tests/test_fuzz_exports.py``.

A case is a short text naming what was done (for the failure message) and a function that
does it to a copy of a real run folder. Every corruption is one a user can make by hand or
a tool by accident: a cell edited to text, a column deleted, a row pasted twice, a file
truncated by a full disk, a JSON file replaced by ``null``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd

Corruption = tuple[str, Callable[[Path], None]]

CELLS = (
    "",
    "abc",
    "nan",
    "inf",
    "-inf",
    "-1",
    "-7",
    "1e400",
    "3.5",
    "99999999999999999999",
    "0:x",
    "x:1",
    "0:4;",
    ";",
    "999:1",
    "0:-1",
    "-1:2",
    "0:1:2",
    "0:99",
    "1:0",
    '"',
    "None",
    " 1",
    "1,2",
    "finishedx",
    "held",
    "0",
    "1e18",
    "\x00",
    "é",
)
JSON_VALUES: tuple[object, ...] = (
    None,
    [],
    1,
    "x",
    {},
    {"config": None},
    {"config": []},
    {"config": {}},
    {"config": {"platform": 3}},
    {"config": {"platform": "nope"}},
    {"config": {"platform": "nodes=2,cores=4", "policy": 5, "workload": []}},
    {"config": {"platform": "nodes=2,cores=4", "name": 5, "workload": {"trace": 7}}},
    {"config": {"platform": "nodes=0,cores=4"}},
    {"config": {"platform": {"nodes": 1}}},
)
CSV_FILES = ("jobs.csv", "segments.csv", "timeseries.csv")
ALL_FILES = (
    "jobs.csv",
    "jobs.parquet",
    "segments.csv",
    "segments.parquet",
    "timeseries.csv",
    "config.json",
    "summary.json",
)


def _csv_only(folder: Path, name: str) -> Path:
    """The CSV file a reader will read: its parquet twin removed (parquet is read first)."""
    (folder / name.replace(".csv", ".parquet")).unlink(missing_ok=True)
    return folder / name


def _set_cell(name: str, column: str, row: int, value: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = _csv_only(folder, name)
        lines = path.read_text().splitlines(keepends=True)
        header = lines[0].rstrip("\n").split(",")
        if column not in header or len(lines) < 2:
            return
        line = 1 + row % (len(lines) - 1)
        cells = lines[line].rstrip("\n").split(",")
        if len(cells) != len(header):
            return
        cells[header.index(column)] = value
        lines[line] = ",".join(cells) + "\n"
        path.write_text("".join(lines))

    return apply


def _drop_column(name: str, column: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = _csv_only(folder, name)
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame.drop(columns=[column], errors="ignore").to_csv(path, index=False)

    return apply


def _duplicate_row(name: str, row: int) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = _csv_only(folder, name)
        lines = path.read_text().splitlines(keepends=True)
        if len(lines) > 1:
            lines.insert(1 + row % (len(lines) - 1), lines[1 + row % (len(lines) - 1)])
        path.write_text("".join(lines))

    return apply


def _truncate(name: str, share: float) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / name
        if path.is_file():
            data = path.read_bytes()
            path.write_bytes(data[: int(len(data) * share)])

    return apply


def _garbage(name: str, seed: int) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        (folder / name).write_bytes(random.Random(seed).randbytes(300))

    return apply


def _delete(name: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)

    return apply


def _json(name: str, value: object) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        (folder / name).write_text(json.dumps(value))

    return apply


def _parquet_retyped(name: str, column: str, value: object) -> Callable[[Path], None]:
    """The parquet twin rewritten with one column of another type (text, a list)."""

    def apply(folder: Path) -> None:
        path = folder / name
        if not path.is_file():
            return
        frame = pd.read_parquet(path)
        if column in frame:
            frame[column] = [value] * len(frame)
            frame.to_parquet(path, index=False)

    return apply


def corruptions(seed: int, count: int, columns: dict[str, list[str]]) -> list[Corruption]:
    """``count`` seeded corruptions of a run folder whose CSV files have ``columns``."""
    rng = random.Random(seed)
    cases: list[Corruption] = []
    for _ in range(count):
        kind = rng.choice(
            (
                "cell",
                "cell",
                "cell",
                "cell",
                "drop",
                "duplicate",
                "truncate",
                "garbage",
                "delete",
                "json",
                "parquet",
            )
        )
        name = rng.choice(CSV_FILES)
        column = rng.choice(columns[name])
        if kind == "cell":
            value, row = rng.choice(CELLS), rng.randrange(1000)
            what = f"{name} row {row} {column}={value!r}"
            cases.append((what, _set_cell(name, column, row, value)))
        elif kind == "drop":
            cases.append((f"{name} without {column}", _drop_column(name, column)))
        elif kind == "duplicate":
            row = rng.randrange(1000)
            cases.append((f"{name} row {row} twice", _duplicate_row(name, row)))
        elif kind == "truncate":
            target, share = rng.choice(ALL_FILES), rng.random()
            cases.append((f"{target} cut at {share:.2f}", _truncate(target, share)))
        elif kind == "garbage":
            target = rng.choice(ALL_FILES)
            cases.append((f"{target} garbage", _garbage(target, rng.randrange(1 << 30))))
        elif kind == "delete":
            target = rng.choice(ALL_FILES)
            cases.append((f"{target} deleted", _delete(target)))
        elif kind == "json":
            target, value = rng.choice(("config.json", "summary.json")), rng.choice(JSON_VALUES)
            cases.append((f"{target} = {json.dumps(value)}", _json(target, value)))
        else:
            target = rng.choice(("jobs.parquet", "segments.parquet"))
            value = rng.choice(("x", 1.5, -3, None))
            column = rng.choice(columns[target.replace(".parquet", ".csv")])
            what = f"{target} {column} all {value!r}"
            cases.append((what, _parquet_retyped(target, column, value)))
    return cases
