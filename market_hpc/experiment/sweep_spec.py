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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError, MarketHpcError, UnknownNameError
from market_hpc.experiment.config import config_from_dict, set_path
from market_hpc.tomlfile import read_toml

RESERVED_KEYS = ("base", "seeds", "grid", "zip", "report", "quick")
FIXED_COLUMNS = ("run_id", "seed", "status", "error", "duration_s")
INPUT_FILE_KEYS = ("trace", "jobset")


class SweepError(ConfigError):
    """A sweep file, a sweep option or a sweep results directory is invalid."""


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


def load_sweep(path: str | Path, quick: bool = False) -> Sweep:
    """Read, validate and expand a sweep file.

    Args:
        path: The sweep file.
        quick: Replace the grid lists and zip groups by those of its ``[quick]`` table.

    Raises:
        SweepError: unreadable file, invalid TOML, bad grid/zip/seeds, or any point
            whose configuration is invalid (the message names the file and the point).
    """
    file = Path(path)
    data = _read_toml(file, "sweep file")
    base_ref = data.pop("base", None)
    seeds_value = data.pop("seeds", None)
    grid = data.pop("grid", {})
    zips = data.pop("zip", [])
    grid, zips = _quick(file, data.pop("quick", None), quick, grid, zips)
    report = data.pop("report", {})
    metrics = _report_metrics(file, report)
    base = _base_scenario(file, base_ref, data)
    axes, parameters = _axes(file, grid, zips)
    _check_each_parameter(file, base, axes)
    seeds = _seeds(file, seeds_value, base)
    runs = tuple(_expand(file, base, axes, parameters, seeds))
    _preflight(file, runs)
    column = {p.path: p.column for p in parameters}
    axis_columns = tuple(tuple(column[path] for path in paths) for paths, _ in axes)
    return Sweep(file, parameters, seeds, runs, metrics, axis_columns, _leaderboard(file, report))


def _quick(file: Path, table: Any, quick: bool, grid: Any, zips: Any) -> tuple[Any, Any]:
    """The grid and zip groups of the run: ``[quick]``'s with ``quick`` (its ``grid`` entries
    replace those lists, its ``zip`` replaces the zip groups), else the file's.

    Raises:
        SweepError: ``quick`` without a ``[quick]`` table, or a table with other keys.
    """
    if table is not None and (not isinstance(table, dict) or set(table) - {"grid", "zip"}):
        raise SweepError(f"{file}: [quick] accepts only grid = {{path = [values]}} and zip = [{{...}}], "
                         f"got {table!r}")
    if not quick:
        return grid, zips
    if table is None:
        raise SweepError(f"{file}: --quick needs a [quick] table in the sweep file (grid and/or zip lists "
                         "that replace the file's)")
    quick_grid = table.get("grid", {})
    if not isinstance(quick_grid, dict) or not isinstance(grid, dict):
        raise SweepError(f"{file}: quick.grid must be a table of path = [values], got {quick_grid!r}")
    merged = dict(_flatten(grid))
    for path, values in _flatten(quick_grid):
        if path not in merged:
            raise SweepError(f"{file}: quick.grid: {path} is not a [grid] parameter (grid: {', '.join(merged)})")
        merged[path] = values
    return merged, table.get("zip", zips)


def _leaderboard(file: Path, report: Any) -> dict[str, Any]:
    """``[report] leaderboard``, checked (``experiment.leaderboard.LeaderboardSpec``)."""
    table = report.get("leaderboard") if isinstance(report, dict) else None
    if table is None:
        return {}
    from market_hpc.experiment.leaderboard import leaderboard_spec

    try:
        return dataclasses.asdict(leaderboard_spec(table))
    except ConfigError as exc:
        raise SweepError(f"{file}: report.leaderboard: {exc}") from None


def _read_toml(file: Path, what: str) -> dict[str, Any]:
    return read_toml(file, what, SweepError)


def _resolve_inputs(data: dict[str, Any], folder: Path) -> None:
    workload = data.get("workload")
    if not isinstance(workload, dict):
        return
    for key in INPUT_FILE_KEYS:
        value = workload.get(key)
        if isinstance(value, str) and not Path(value).is_absolute():
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
        _resolve_inputs(base, base_file.parent)
    inline = copy.deepcopy(inline)
    _resolve_inputs(inline, file.parent)
    _merge(base, inline)
    try:
        config_from_dict(base)
    except ConfigError as exc:
        hint = ""
        if isinstance(exc, UnknownNameError) and "." not in exc.name:
            hint = f" (or a sweep key: {', '.join(RESERVED_KEYS)})"
        raise SweepError(f"{file}: base scenario: {exc}{hint}") from None
    return base


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in table.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _values(file: Path, where: str, path: str, values: Any, unique: bool = True) -> list[Any]:
    if path == "seed":
        raise SweepError(f"{file}: {where}: seed cannot be swept here; use seeds = N or [..]")
    if not isinstance(values, list) or not values:
        raise SweepError(f"{file}: {where}: {path} must be a non-empty list of values, got {values!r}")
    for i, value in enumerate(values):
        if unique and value in values[:i]:
            raise SweepError(f"{file}: {where}: {path} lists {value!r} twice")
    return values


def _axes(file: Path, grid: Any, zips: Any) -> tuple[list[tuple[list[str], list[tuple[Any, ...]]]],
                                                    tuple[Parameter, ...]]:
    """One axis per grid parameter and one per zip group: (paths, rows of values)."""
    if not isinstance(grid, dict):
        raise SweepError(f"{file}: grid must be a table of path = [values], got {grid!r}")
    if isinstance(zips, dict):
        zips = [zips]
    if not isinstance(zips, list) or not all(isinstance(group, dict) for group in zips):
        raise SweepError(f"{file}: zip must be [[zip]] tables of path = [values], got {zips!r}")
    axes: list[tuple[list[str], list[tuple[Any, ...]]]] = []
    for path, values in _flatten(grid):
        axes.append(([path], [(v,) for v in _values(file, "grid", path, values)]))
    for number, group in enumerate(zips, start=1):
        where = f"zip group {number}"
        # a column may repeat a value (ebf with three allocators); a whole row may not
        columns = [(p, _values(file, where, p, v, unique=len(group) == 1)) for p, v in _flatten(group)]
        if not columns:
            raise SweepError(f"{file}: {where} is empty")
        lengths = {len(values) for _, values in columns}
        if len(lengths) > 1:
            listed = ", ".join(f"{p}: {len(v)}" for p, v in columns)
            raise SweepError(f"{file}: {where}: lists must have equal lengths; got {listed}")
        rows = list(zip(*(v for _, v in columns)))
        for i, row in enumerate(rows):
            if row in rows[:i]:
                raise SweepError(f"{file}: {where}: row {i + 1} repeats row {rows.index(row) + 1}: {row!r}")
        axes.append(([p for p, _ in columns], rows))
    paths = [path for axis_paths, _ in axes for path in axis_paths]
    for path in paths:
        if paths.count(path) > 1:
            raise SweepError(f"{file}: {path} is varied twice (grid and zip groups must not overlap)")
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


def _check_each_parameter(file: Path, base: dict[str, Any], axes: list[Any]) -> None:
    """Fail on an unknown path before expanding, naming where the path was given."""
    for paths, rows in axes:
        for index, path in enumerate(paths):
            data = copy.deepcopy(base)
            try:
                set_path(data, path, rows[0][index])
                config_from_dict(data, base_dir=file.parent)
            except ConfigError as exc:
                raise SweepError(f"{file}: {path}: {exc}") from None


def _seeds(file: Path, value: Any, base: dict[str, Any]) -> tuple[int, ...]:
    if value is None:
        return (config_from_dict(base).seed,)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return tuple(range(1, value + 1))
    if (isinstance(value, list) and value
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)):
        if len(set(value)) != len(value):
            raise SweepError(f"{file}: seeds lists a seed twice: {value}")
        return tuple(value)
    raise SweepError(f"{file}: seeds: expected a positive integer N (meaning 1..N) or a non-empty "
                     f"list of distinct non-negative integers, got {value!r}")


def _expand(file: Path, base: dict[str, Any], axes: list[Any], parameters: tuple[Parameter, ...],
            seeds: tuple[int, ...]) -> Iterator[RunSpec]:
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
            raise SweepError(f"{file}: point {where}: {exc}") from None
        for seed in seeds:
            full = dataclasses.replace(config, seed=seed).to_dict()
            params = {p.column: get_path(full, p.path) for p in parameters}
            identity = run_id(full)
            if identity in seen:
                raise SweepError(f"{file}: points {point_name(seen[identity], seed)} and "
                                 f"{point_name(params, seed)} are the same run")
            seen[identity] = params
            yield RunSpec(identity, seed, params, full)


def _preflight(file: Path, runs: tuple[RunSpec, ...]) -> None:
    """Check what ``config_from_dict`` leaves to run time: policy names and their
    combination, platforms, input files (each distinct value once)."""
    from market_hpc.core.model import make_market_aware_policy
    from market_hpc.domain.platform import load_platform
    from market_hpc.policies.registry import make_bidder

    checked: set[tuple[Any, ...]] = set()
    for run in runs:
        config = config_from_dict(run.config)
        policy = config.policy
        checks: list[tuple[Any, ...]] = [
            (make_market_aware_policy, policy.scheduler, policy.allocator, policy.hold_penalty),
            (load_platform, config.platform),
        ]
        if policy.bidder is not None:
            checks.append((make_bidder, policy.bidder))
        for key in INPUT_FILE_KEYS:
            if getattr(config.workload, key) is not None:
                checks.append((_check_file, f"workload.{key}", getattr(config.workload, key)))
        for check, *args in checks:
            if (check, *args) in checked:
                continue
            checked.add((check, *args))
            try:
                check(*args)
            except MarketHpcError as exc:
                raise SweepError(f"{file}: point {point_name(run.params, run.seed)}: {exc}") from None


def point_name(params: dict[str, Any], seed: int | None = None) -> str:
    """How every sweep error names a point: ``scheduler=easy, load_factor=2.0 (seed 3)``.

    >>> point_name({"scheduler": "easy", "load_factor": 2.0}, 3), point_name({})
    ('scheduler=easy, load_factor=2.0 (seed 3)', 'base')
    """
    text = ", ".join(f"{key}={value}" for key, value in params.items()) or "base"
    return text if seed is None else f"{text} (seed {seed})"


def _check_file(key: str, path: str) -> None:
    if not Path(path).is_file():
        raise ConfigError(f"{key}: no such file {path}")


def _report_metrics(file: Path, report: Any) -> tuple[str, ...]:
    """``[report] metrics``, each checked against the metric table (before any run)."""
    from market_hpc.experiment.metrics_table import metric_names

    if not isinstance(report, dict) or set(report) - {"metrics", "leaderboard"}:
        raise SweepError(f"{file}: [report] accepts only metrics = [names] and leaderboard = {{...}}, "
                         f"got {report!r}")
    metrics = report.get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise SweepError(f"{file}: report.metrics must be a list of metric names, got {metrics!r}")
    valid = metric_names()
    for name in metrics:
        if name not in valid:
            raise SweepError(f"{file}: report.metrics: unknown metric {name!r}; valid metrics: "
                             f"{', '.join(valid)}")
    return tuple(metrics)
