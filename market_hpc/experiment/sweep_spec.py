"""Sweep files: a base scenario, a grid of parameter lists, zipped groups and seeds.

A sweep file is a scenario file plus five reserved keys::

    base = "kth_easy.toml"        # optional: the base scenario, relative to this file;
                                  # scenario tables written here are merged over it
    seeds = 5                     # 1..5; or a list: seeds = [1, 7, 42]

    [grid]                        # cartesian product, one axis per parameter
    "policy.scheduler" = ["fifo", "easy"]
    "workload.load_factor" = [1.0, 1.5, 2.0]

    [[zip]]                       # varied together: one axis whose steps are rows
    "workload.jobs" = [500, 1000]
    "workload.first_n" = [400, 900]

    [report]
    metrics = ["mean_bounded_slowdown"]   # what ``market-hpc report`` plots by default
    leaderboard = { baseline = "easy" }   # optional: rank policies (``leaderboard``)

    [quick]                       # optional: ``market-hpc sweep --quick`` replaces the
    grid = { "workload.load_factor" = [1.0, 2.0] }    # grid lists and the zip groups
    zip = [{ "workload.start" = [0.0], "workload.end" = [86400.0] }]   # it names

Parameters are addressed by the dotted config paths of ``config.py``. Everything is
validated before a single run starts: each point becomes a ``RunConfig`` through
``config_from_dict`` (so an unknown key fails naming the valid ones), every distinct
policy, platform and input file is checked, zip groups must have equal lengths and no
path may be varied twice.

Decisions:
    * ``run_id`` hashes the run's full validated config (seed included, ``name``
      excluded because it does not change results); input file paths enter the hash
      resolved to absolute paths.
    * Runs are ordered grid axes first, then zip groups, seeds innermost.
    * A parameter's results column is the last path component (``hold_penalty``); when
      that collides with another parameter or a fixed column, the full dotted path.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.experiment.config import config_from_dict, set_path
from market_hpc.experiment.sweep_checks import (
    INPUT_FILE_KEYS,
    MAX_RUNS,
    SweepError,
    check_run_count,
    flatten,
    leaderboard,
    point_name,
    preflight,
    quick_lists,
    report_metrics,
    scheduler_hint,
    swept_value,
)
from market_hpc.tomlfile import read_toml
from market_hpc.workload.trace_catalogue import resolve_trace

RESERVED_KEYS = ("base", "seeds", "grid", "zip", "report", "quick")
FIXED_COLUMNS = ("run_id", "seed", "status", "error", "duration_s")
__all__ = [
    "FIXED_COLUMNS",
    "INPUT_FILE_KEYS",
    "MAX_RUNS",
    "RESERVED_KEYS",
    "Parameter",
    "RunSpec",
    "Sweep",
    "SweepError",
    "get_path",
    "load_sweep",
    "parameter_columns",
    "point_name",
    "run_id",
]


@dataclass(frozen=True)
class Parameter:
    """One swept config path and the results column that holds its value."""

    path: str
    column: str


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: a point of the grid and a seed, fully configured."""

    run_id: str
    seed: int
    params: dict[str, Any]
    config: dict[str, Any]


@dataclass(frozen=True)
class Sweep:
    """A validated, expanded sweep.

    Attributes:
        source: The sweep file.
        parameters: Swept parameters, grid first, then zip groups, in file order.
        seeds: Seeds every point runs with.
        runs: Every run, in plan order.
        metrics: Metrics the report plots by default (empty: the report chooses).
        axes: Results columns of each axis of the plan: one per grid parameter, all
            the columns of a zip group together (the report draws a zip group as one
            series, not as unrelated parameters).
        leaderboard: The ``[report] leaderboard`` table (empty: no leaderboard).
    """

    source: Path
    parameters: tuple[Parameter, ...]
    seeds: tuple[int, ...]
    runs: tuple[RunSpec, ...]
    metrics: tuple[str, ...] = ()
    axes: tuple[tuple[str, ...], ...] = ()
    leaderboard: dict[str, Any] = dataclasses.field(default_factory=dict)


def run_id(config: dict[str, Any]) -> str:
    """Stable id of a run: the first 16 hex digits of the SHA-256 of its canonical JSON.

    ``name`` is left out: renaming a scenario does not change its results.

    >>> run_id({"seed": 1, "policy": {"scheduler": "easy"}, "name": "a"})
    '1ffec1f49ac79fe7'
    >>> run_id({"policy": {"scheduler": "easy"}, "seed": 1, "name": "b"})
    '1ffec1f49ac79fe7'
    """
    hashed = {key: value for key, value in config.items() if key != "name"}
    text = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def get_path(data: dict[str, Any], path: str) -> Any:
    """``data[a][b]`` for ``path = "a.b"``; ``None`` for a key ``RunConfig.to_dict`` leaves
    out when unset (``policy.slurm_conf``, ``policy.bidder``).

    >>> get_path({"policy": {"scheduler": "easy"}}, "policy.scheduler")
    'easy'
    >>> get_path({"policy": {"scheduler": "easy"}}, "policy.slurm_conf") is None
    True
    """
    node: Any = data
    for key in path.split("."):
        if isinstance(node, dict) and key not in node and key in ("slurm_conf", "bidder"):
            return None
        node = node[key]
    return node


def load_sweep(
    path: str | Path,
    quick: bool = False,
    max_runs: int = MAX_RUNS,
    announce: Callable[[str], object] | None = None,
) -> Sweep:
    """Read, validate and expand a sweep file.

    Args:
        path: The sweep file.
        quick: Replace the grid lists and zip groups by those of its ``[quick]`` table.
        max_runs: Refuse a sweep of more runs (counted before any point is built).
        announce: Called with one line giving the run count, before the points are built.

    Raises:
        SweepError: unreadable file, invalid TOML, bad grid/zip/seeds, more runs than
            ``max_runs``, or any point whose configuration is invalid (the message names
            the file and the point).
    """
    file = Path(path)
    data = _read_toml(file, "sweep file")
    base_ref = data.pop("base", None)
    seeds_value = data.pop("seeds", None)
    grid = data.pop("grid", {})
    zips = data.pop("zip", [])
    grid, zips = quick_lists(file, data.pop("quick", None), quick, grid, zips)
    report = data.pop("report", {})
    metrics = report_metrics(file, report)
    base = _base_scenario(file, base_ref, data)
    axes, parameters = _axes(file, grid, zips)
    seed_range = _seeds(file, seeds_value)
    lengths = [len(rows) for _, rows in axes]
    counted = check_run_count(file, lengths, len(seed_range or (0,)), max_runs)
    if announce is not None:
        announce(f"sweep {file.name}: {counted}; checking every point before the first run")
    first = _check_first_point(file, base, axes)
    seeds = tuple(seed_range) if seed_range is not None else (first.seed,)
    points: list[tuple[Any, RunSpec]] = []
    runs = tuple(_expand(file, base, axes, parameters, seeds, points))
    preflight(file, points)
    column = {p.path: p.column for p in parameters}
    axis_columns = tuple(tuple(column[path] for path in paths) for paths, _ in axes)
    return Sweep(file, parameters, seeds, runs, metrics, axis_columns, leaderboard(file, report))


def _read_toml(file: Path, what: str) -> dict[str, Any]:
    return read_toml(file, what, SweepError)


def _resolve_inputs(data: dict[str, Any], folder: Path, file: Path) -> None:
    workload = data.get("workload")
    if not isinstance(workload, dict):
        return
    for key in INPUT_FILE_KEYS:
        value = workload.get(key)
        if isinstance(value, str) and key == "trace":
            try:  # a catalogue name or file name, as in a scenario file
                workload[key] = resolve_trace(value, folder)
            except ConfigError as exc:
                raise SweepError(f"{file}: workload.trace: {exc}") from None
        elif isinstance(value, str) and not Path(value).is_absolute():
            workload[key] = str((folder / value).resolve())


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _base_scenario(file: Path, base_ref: Any, inline: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {}
    if base_ref is not None:
        if not isinstance(base_ref, str):
            raise SweepError(f"{file}: base: expected a scenario file path, got {base_ref!r}")
        base_file = file.parent / base_ref
        base = _read_toml(base_file, "base scenario")
        inline_workload = inline.get("workload")
        overridden = isinstance(inline_workload, dict) and "trace" in inline_workload
        if overridden and isinstance(base.get("workload"), dict):
            # the sweep file names its own trace: the base's need not exist here
            base["workload"] = {k: v for k, v in base["workload"].items() if k != "trace"}
        _resolve_inputs(base, base_file.parent, base_file)
    inline = copy.deepcopy(inline)
    _resolve_inputs(inline, file.parent, file)
    _merge(base, inline)
    return base


def _base_error(file: Path, exc: ConfigError) -> SweepError:
    hint = ""
    if isinstance(exc, UnknownNameError) and "." not in exc.name:
        hint = f" (or a sweep key: {', '.join(RESERVED_KEYS)})"
    return SweepError(f"{file}: base scenario: {exc}{hint}")


def _values(file: Path, where: str, path: str, values: Any, unique: bool = True) -> list[Any]:
    if path == "seed":
        raise SweepError(f"{file}: {where}: seed cannot be swept here; use seeds = N or [..]")
    if not isinstance(values, list) or not values:
        raise SweepError(
            f"{file}: {where}: {path} must be a non-empty list of values, got {values!r}"
        )
    if unique:
        repeated = _first_repeat(values)
        if repeated is not None:
            raise SweepError(f"{file}: {where}: {path} lists {values[repeated[1]]!r} twice")
    return values


def _first_repeat(items: Sequence[Any]) -> tuple[int, int] | None:
    """``(first, later)`` indices of the first item equal to an earlier one, in one pass
    (a grid list can be long): values compare as Python does (``1 == 1.0``), tables and
    lists by their canonical JSON.

    >>> _first_repeat([1, 2.0, {"a": [1]}, 2, {"a": [1]}])
    (1, 3)
    >>> _first_repeat([[1], [2]]) is None
    True
    """
    seen: dict[Any, int] = {}
    for index, item in enumerate(items):
        key = _hashable(item)
        if key in seen:
            return seen[key], index
        seen[key] = index
    return None


def _hashable(item: Any) -> Any:
    if isinstance(item, tuple):
        return tuple(_hashable(part) for part in item)
    if isinstance(item, dict | list):
        return (type(item).__name__, json.dumps(item, sort_keys=True, default=repr))
    return item


def _axes(
    file: Path, grid: Any, zips: Any
) -> tuple[list[tuple[list[str], list[tuple[Any, ...]]]], tuple[Parameter, ...]]:
    """One axis per grid parameter and one per zip group: (paths, rows of values)."""
    if not isinstance(grid, dict):
        raise SweepError(f"{file}: grid must be a table of path = [values], got {grid!r}")
    if isinstance(zips, dict):
        zips = [zips]
    if not isinstance(zips, list) or not all(isinstance(group, dict) for group in zips):
        raise SweepError(f"{file}: zip must be [[zip]] tables of path = [values], got {zips!r}")
    axes: list[tuple[list[str], list[tuple[Any, ...]]]] = []
    for path, values in flatten(grid):
        axes.append(([path], [(v,) for v in _values(file, "grid", path, values)]))
    for number, group in enumerate(zips, start=1):
        where = f"zip group {number}"
        # a column may repeat a value (ebf with three allocators); a whole row may not
        columns = [
            (p, _values(file, where, p, v, unique=len(group) == 1)) for p, v in flatten(group)
        ]
        if not columns:
            raise SweepError(f"{file}: {where} is empty")
        lengths = {len(values) for _, values in columns}
        if len(lengths) > 1:
            listed = ", ".join(f"{p}: {len(v)}" for p, v in columns)
            raise SweepError(f"{file}: {where}: lists must have equal lengths; got {listed}")
        rows = list(zip(*(v for _, v in columns)))
        repeated = _first_repeat(rows)
        if repeated is not None:
            first, later = repeated
            raise SweepError(
                f"{file}: {where}: row {later + 1} repeats row {first + 1}: {rows[later]!r}"
            )
        axes.append(([p for p, _ in columns], rows))
    paths = [path for axis_paths, _ in axes for path in axis_paths]
    for path in paths:
        if paths.count(path) > 1:
            raise SweepError(
                f"{file}: {path} is varied twice (grid and zip groups must not overlap)"
            )
    return axes, parameter_columns(paths)


def parameter_columns(paths: list[str]) -> tuple[Parameter, ...]:
    """Results columns of swept paths: the last component unless it is ambiguous.

    >>> [p.column for p in parameter_columns(["a.x", "b.x", "policy.scheduler", "c.status"])]
    ['a.x', 'b.x', 'scheduler', 'c.status']
    """
    leaves = [path.rsplit(".", 1)[-1] for path in paths]
    return tuple(
        Parameter(path, leaf if leaves.count(leaf) == 1 and leaf not in FIXED_COLUMNS else path)
        for path, leaf in zip(paths, leaves)
    )


def _check_first_point(file: Path, base: dict[str, Any], axes: list[Any]) -> Any:
    """Validate the base scenario and the first point before expanding; return the first
    point's ``RunConfig``.

    The base need not be valid alone when the first point is (its scheduler may not take a
    ``policy.params`` key that every point's scheduler takes); when both fail, the base's
    error is the one raised. A point's error names the swept path it mentions.
    """
    try:
        config_from_dict(base)
        base_error = None
    except ConfigError as exc:
        base_error = exc
    data = copy.deepcopy(base)
    paths: list[tuple[str, Any]] = []
    try:
        for axis_paths, rows in axes:
            for path, value in zip(axis_paths, rows[0]):
                paths.append((path, value))
                set_path(data, path, value)
        return config_from_dict(data, base_dir=file.parent)
    except ConfigError as exc:
        if base_error is not None:
            raise _base_error(file, base_error) from None
        message = str(exc)
        named = [path for path, _ in paths if path in message] or [
            path for path, value in paths if isinstance(value, str) and repr(value) in message
        ]
        where = named[-1] if named else "first point"
        raise SweepError(f"{file}: {where}: {exc}{scheduler_hint(base, data)}") from None


def _seeds(file: Path, value: Any) -> Sequence[int] | None:
    """The seeds (``None``: the scenario's own seed), not yet materialised: ``seeds = N``
    is a range, counted before it becomes a tuple."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return range(1, value + 1)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)
    ):
        if len(set(value)) != len(value):
            raise SweepError(f"{file}: seeds lists a seed twice: {value}")
        return tuple(value)
    raise SweepError(
        f"{file}: seeds: expected a positive integer N (meaning 1..N) or a non-empty "
        f"list of distinct non-negative integers, got {value!r}"
    )


def _expand(
    file: Path,
    base: dict[str, Any],
    axes: list[Any],
    parameters: tuple[Parameter, ...],
    seeds: tuple[int, ...],
    points: list[tuple[Any, RunSpec]],
) -> Iterator[RunSpec]:
    """Yield every run in plan order; append each point's ``RunConfig`` and first run to
    ``points`` (the preflight checks a point once, not once per seed)."""
    seen: dict[str, dict[str, Any]] = {}
    for combination in itertools.product(*(rows for _, rows in axes)):
        values = [value for row in combination for value in row]
        data = copy.deepcopy(base)
        for parameter, value in zip(parameters, values):
            set_path(data, parameter.path, value)
        where = point_name({p.column: v for p, v in zip(parameters, values)})
        try:
            config = config_from_dict(data, base_dir=file.parent)
        except ConfigError as exc:
            raise SweepError(f"{file}: point {where}: {exc}{scheduler_hint(base, data)}") from None
        point = config.to_dict()  # once per point: the seeds' configs differ only in seed
        for seed in seeds:
            full = {**point, "seed": seed}
            params = {p.column: swept_value(full, p.path, v) for p, v in zip(parameters, values)}
            identity = run_id(full)
            if identity in seen:
                raise SweepError(
                    f"{file}: points {point_name(seen[identity], seed)} and "
                    f"{point_name(params, seed)} are the same run"
                )
            seen[identity] = params
            run = RunSpec(identity, seed, params, full)
            if seed == seeds[0]:
                points.append((config, run))
            yield run
