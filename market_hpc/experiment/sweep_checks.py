"""The checks of a sweep that are not about its file's syntax: how many runs it makes
(counted before any is built), which scheduler a swept parameter belongs to, and what
``config_from_dict`` leaves to run time (policy names, platforms, input files).

Decisions:
    * The run count is the product of the axes' lengths times the seeds, computed from
      the lists alone, so a 1.5-million-point grid or ``seeds = 3000000`` is refused
      before one point is built. The cap, ``MAX_RUNS`` (100,000), is ``--max-runs``:
      expanding and checking a point takes about a millisecond, so 100,000 runs are
      checked in about two minutes, and a sweep of more runs than that is a campaign to
      split into several sweep files (each resumable on its own).
    * The base scenario's values are defaults of every point, the scheduler too: a
      sweep over ``policy.scheduler`` may sweep ``policy.params`` keys that the base's
      own scheduler does not take. Each point is checked with its own scheduler; when a
      point's scheduler does not take one of its ``policy.params`` keys the error names
      the point's scheduler, the base's scheduler and the key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from market_hpc.errors import ConfigError, MarketHpcError


class SweepError(ConfigError):
    """A sweep file, a sweep option or a sweep results directory is invalid."""


MAX_RUNS = 100_000
INPUT_FILE_KEYS = ("trace", "jobset")
_MISSING = object()


def flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of every leaf of a nested table.

    >>> list(flatten({"policy": {"scheduler": ["easy"]}, "seed": [1]}))
    [('policy.scheduler', ['easy']), ('seed', [1])]
    """
    for key, value in table.items():
        if isinstance(value, dict):
            yield from flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def point_name(params: dict[str, Any], seed: int | None = None) -> str:
    """How every sweep error names a point: ``scheduler=easy, load_factor=2.0 (seed 3)``.

    >>> point_name({"scheduler": "easy", "load_factor": 2.0}, 3), point_name({})
    ('scheduler=easy, load_factor=2.0 (seed 3)', 'base')
    """
    text = ", ".join(f"{key}={value}" for key, value in params.items()) or "base"
    return text if seed is None else f"{text} (seed {seed})"


def run_count(axis_lengths: list[int], seed_count: int) -> tuple[int, str]:
    """The number of runs of a plan and how it is made up, from the lengths alone.

    >>> run_count([2, 3], 5)
    (30, '2 x 3 points x 5 seeds')
    >>> run_count([], 1)
    (1, '1 point x 1 seed')
    """
    points = math.prod(axis_lengths)
    shape = " x ".join(f"{n:,}" for n in axis_lengths) or "1"
    noun = "point" if points == 1 else "points"
    return points * seed_count, f"{shape} {noun} x {seed_count:,} seed{'s' * (seed_count != 1)}"


def check_run_count(file: Path, axis_lengths: list[int], seed_count: int, max_runs: int) -> str:
    """Refuse a plan of more than ``max_runs`` runs; return its one-line description.

    Raises:
        SweepError: more runs than ``max_runs``, naming the count and ``--max-runs``.
    """
    total, shape = run_count(axis_lengths, seed_count)
    if total > max_runs:
        raise SweepError(
            f"{file}: {total:,} runs ({shape}) is more than --max-runs "
            f"{max_runs:,}; shorten the grid lists or the seeds, split the sweep, "
            "or raise --max-runs"
        )
    return f"{total:,} run{'s' * (total != 1)} ({shape})"


def swept_value(config: dict[str, Any], path: str, given: Any) -> Any:
    """The value at ``path`` of a run's full config, or ``given`` when the config leaves
    the path out (``RunConfig.to_dict`` drops a default ``policy.params``, ``bidder`` and
    ``all_families``, so an axis may take those defaults).

    >>> swept_value({"policy": {"scheduler": "easy"}}, "policy.params", {})
    {}
    >>> swept_value({"policy": {"hold_penalty": 0.0}}, "policy.hold_penalty", 0)
    0.0
    """
    node: Any = config
    for key in path.split("."):
        node = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
        if node is _MISSING:
            return given
    return node


def scheduler_hint(base: dict[str, Any], point: dict[str, Any]) -> str:
    """Why a point's ``policy.params`` do not fit its scheduler, when the point's scheduler
    is not the base's: both schedulers and the key (empty otherwise)."""
    from market_hpc.policies.registry import parameters_of

    scheduler = _scheduler(point)
    base_scheduler = _scheduler(base)
    params = (point.get("policy") or {}).get("params")
    declared = parameters_of("scheduler", scheduler) if isinstance(scheduler, str) else None
    if scheduler == base_scheduler or declared is None or not isinstance(params, dict):
        return ""
    stray = [key for key in params if key not in declared]
    if not stray:
        return ""
    return (
        f" (this point's policy.scheduler is {scheduler!r}, the base scenario's is "
        f"{base_scheduler!r}; policy.params.{stray[0]} must be a parameter of each point's "
        "scheduler: put it in one [[zip]] group with policy.scheduler)"
    )


def _scheduler(data: dict[str, Any]) -> Any:
    policy = data.get("policy")
    return policy.get("scheduler", "fifo") if isinstance(policy, dict) else "fifo"


def preflight(file: Path, points: list[tuple[Any, Any]]) -> None:
    """Check what ``config_from_dict`` leaves to run time: policy names and their
    combination, platforms, input files (each distinct value once).

    Args:
        file: The sweep file (for the message).
        points: ``(RunConfig, RunSpec)`` of each point's first run (the seed changes none
            of these checks).

    Raises:
        SweepError: naming the file and the first point that fails.
    """
    from market_hpc.core.model import make_market_aware_policy
    from market_hpc.domain.platform import load_platform
    from market_hpc.policies.registry import make_bidder

    checked: set[tuple[Any, ...]] = set()
    for config, run in points:
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
                where = point_name(run.params, run.seed)
                raise SweepError(f"{file}: point {where}: {exc}") from None


def _check_file(key: str, path: str) -> None:
    if not Path(path).is_file():
        raise ConfigError(f"{key}: no such file {path}")


def report_metrics(file: Path, report: Any) -> tuple[str, ...]:
    """``[report] metrics``, each checked against the metric table (before any run)."""
    from market_hpc.experiment.metrics_table import metric_names

    if not isinstance(report, dict) or set(report) - {"metrics", "leaderboard"}:
        raise SweepError(
            f"{file}: [report] accepts only metrics = [names] and "
            f"leaderboard = {{...}}, got {report!r}"
        )
    metrics = report.get("metrics", [])
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise SweepError(f"{file}: report.metrics must be a list of metric names, got {metrics!r}")
    valid = metric_names()
    for name in metrics:
        if name not in valid:
            raise SweepError(
                f"{file}: report.metrics: unknown metric {name!r}; valid metrics: "
                f"{', '.join(valid)}"
            )
    return tuple(metrics)


def leaderboard(file: Path, report: Any) -> dict[str, Any]:
    """``[report] leaderboard``, checked (``experiment.leaderboard.LeaderboardSpec``)."""
    table = report.get("leaderboard") if isinstance(report, dict) else None
    if table is None:
        return {}
    from market_hpc.experiment.leaderboard import leaderboard_spec

    try:
        return dataclasses.asdict(leaderboard_spec(table))
    except ConfigError as exc:
        raise SweepError(f"{file}: report.leaderboard: {exc}") from None


def quick_lists(file: Path, table: Any, quick: bool, grid: Any, zips: Any) -> tuple[Any, Any]:
    """The grid and zip groups of the run: ``[quick]``'s with ``quick`` (its ``grid`` entries
    replace those lists, its ``zip`` replaces the zip groups), else the file's.

    Raises:
        SweepError: ``quick`` without a ``[quick]`` table, or a table with other keys.
    """
    if table is not None and (not isinstance(table, dict) or set(table) - {"grid", "zip"}):
        raise SweepError(
            f"{file}: [quick] accepts only grid = {{path = [values]}} and "
            f"zip = [{{...}}], got {table!r}"
        )
    if not quick:
        return grid, zips
    if table is None:
        raise SweepError(
            f"{file}: --quick needs a [quick] table in the sweep file (grid "
            "and/or zip lists that replace the file's)"
        )
    quick_grid = table.get("grid", {})
    if not isinstance(quick_grid, dict) or not isinstance(grid, dict):
        raise SweepError(
            f"{file}: quick.grid must be a table of path = [values], got {quick_grid!r}"
        )
    merged = dict(flatten(grid))
    for path, values in flatten(quick_grid):
        if path not in merged:
            raise SweepError(
                f"{file}: quick.grid: {path} is not a [grid] parameter (grid: {', '.join(merged)})"
            )
        merged[path] = values
    return merged, table.get("zip", zips)
