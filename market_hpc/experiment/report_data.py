"""The rows a sweep report draws: read from ``parts/``, grouped into the sweep's axes.

Decisions:
    * ``parts/<run_id>.parquet`` is the source of truth. ``results.parquet`` is a cache
      that a killed sweep leaves stale; the report always reads the parts, and when the
      cache lacks rows (or has other ones) it is rebuilt from them, unless a running
      sweep holds the directory (then the report says so and reads the parts only).
    * An axis is one grid parameter or one whole ``[[zip]]`` group. A zip group is one
      series: it is grouped by, compared and labelled as one thing (``month, jobs``),
      never paired with itself in a heatmap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from market_hpc.experiment.sweep_spec import FIXED_COLUMNS, SweepError
from market_hpc.experiment.sweep_store import ResultStore, tidy_frame

TASK_GRAPH_TIME = "time-units"


@dataclass(frozen=True)
class Axis:
    """One dimension of the sweep as the report sees it.

    Attributes:
        name: How plots name it: the column, or the zip group's columns joined.
        key: Column to group by (a zip group gets a combined label column).
        x: Numeric column to draw it along, or None for categorical axes.
        columns: The results columns it covers.
    """

    name: str
    key: str
    x: str | None
    columns: tuple[str, ...]


@dataclass
class SweepData:
    """What ``load_results`` found.

    Attributes:
        frame: The sweep's ``ok`` rows, one per run, with zip label columns added.
        axes: The axes whose values vary, in plan order.
        metrics: The sweep file's ``[report] metrics``.
        time_unit: ``s``, or ``time-units`` for task-graph job sets (market).
        notes: What the loader did that the user should know (printed, and in the HTML).
        params: Every parameter column.
        leaderboard: The sweep's ``[report] leaderboard`` (empty: none).
    """

    frame: pd.DataFrame
    axes: list[Axis]
    metrics: list[str]
    time_unit: str
    params: list[str]
    notes: list[str] = field(default_factory=list)
    leaderboard: dict[str, Any] = field(default_factory=dict)


def _part_rows(parts: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for part in sorted(parts.glob("*.parquet")):
        for row in pq.read_table(part).to_pylist():
            rows[row["run_id"]] = row
    return rows


def _cached_ids(results: Path) -> set[str] | None:
    if not results.is_file():
        return None
    try:
        return set(pq.read_table(results, columns=["run_id"]).column("run_id").to_pylist())
    except Exception:  # noqa: BLE001 - an unreadable cache is rebuilt like a stale one
        return None


def _refresh_cache(
    folder: Path,
    rows: dict[str, dict[str, Any]],
    order: list[str],
    leading: list[str],
    notes: list[str],
) -> None:
    cached = _cached_ids(folder / "results.parquet")
    if cached == set(rows):
        return
    newer = sorted(set(rows) - (cached or set()))
    what = (
        f"{len(newer)} rows in parts/ were missing from it (e.g. {', '.join(newer[:3])})"
        if cached is not None
        else "it was missing or unreadable"
    )
    try:
        with ResultStore(folder) as store:
            store.consolidate(order, leading)
    except SweepError:
        notes.append(
            f"results.parquet is stale ({what}) and a running sweep holds {folder}; "
            f"this report uses the {len(rows)} rows in parts/"
        )
        return
    notes.append(f"rebuilt results.parquet and results.csv from parts/: {what}")


def load_results(directory: str | Path) -> SweepData:
    """The ``ok`` rows of the sweep that last wrote ``directory``, and its axes.

    Raises:
        SweepError: not a sweep directory, or no run of the sweep finished ok.
    """
    folder = Path(directory)
    manifest_file, parts = folder / "sweep.json", folder / "parts"
    if not manifest_file.is_file() or not (
        parts.is_dir() or (folder / "results.parquet").is_file()
    ):
        raise SweepError(
            f"{folder} is not a sweep results directory (needs sweep.json and "
            "parts/; run `market-hpc sweep FILE --out DIR` first)"
        )
    manifest = json.loads(manifest_file.read_text())
    params = [p["column"] for p in manifest["parameters"]]
    order = list(manifest.get("run_ids") or [])
    leading = ["run_id", *params, *FIXED_COLUMNS[1:]]
    notes: list[str] = []
    rows = _part_rows(parts) if parts.is_dir() else {}
    if rows:
        _refresh_cache(folder, rows, order, leading, notes)
        frame = tidy_frame(
            [rows[i] for i in order if i in rows]
            + [rows[i] for i in sorted(rows) if i not in set(order)],
            leading,
        )
    else:
        frame = pd.read_parquet(folder / "results.parquet")
    if order:  # rows of an earlier, different sweep into this folder stay out
        frame = frame[frame["run_id"].isin(order)]
    frame = frame[frame["status"] == "ok"].reset_index(drop=True)
    if frame.empty:
        raise SweepError(f"{folder}: no run of the sweep finished ok; nothing to report")
    missing = len(order) - len(frame)
    if order and missing:
        notes.append(
            f"{missing} of the sweep's {len(order)} runs are not stored ok "
            "(not run yet, or failed); the report uses the rest"
        )
    params = [p for p in params if p in frame.columns]
    groups = manifest.get("axes") or [[p] for p in params]
    axes = [axis for group in groups if (axis := _axis(frame, [c for c in group if c in frame]))]
    return SweepData(
        frame,
        axes,
        list(manifest.get("metrics", [])),
        manifest.get("time_unit", "s"),
        params,
        notes,
        manifest.get("leaderboard", {}),
    )


def is_numeric(column: pd.Series) -> bool:
    """Numbers, not booleans."""
    return bool(pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column))


def _axis(frame: pd.DataFrame, columns: list[str]) -> Axis | None:
    """The axis over ``columns`` (one grid parameter or a zip group) if its values vary."""
    if not columns or frame[columns].drop_duplicates().shape[0] < 2:
        return None
    for column in columns:
        if not is_numeric(frame[column]):
            # plan order (first appearance), not alphabetical, in legends and axes
            frame[column] = pd.Categorical(
                frame[column], categories=frame[column].dropna().unique()
            )
    numeric = [c for c in columns if is_numeric(frame[c]) and frame[c].nunique() > 1]
    if len(columns) == 1:
        return Axis(columns[0], columns[0], numeric[0] if numeric else None, tuple(columns))
    name = ", ".join(columns)
    labels = (
        frame[columns].astype(object).fillna("none").astype(str).agg(", ".join, axis=1)
    )  # unset: "none"
    frame[name] = pd.Categorical(labels, categories=labels.unique())
    x = (
        numeric[0]
        if numeric
        and frame[[numeric[0]]].drop_duplicates().shape[0]
        == frame[columns].drop_duplicates().shape[0]
        else None
    )
    return Axis(name, name, x, tuple(columns))
