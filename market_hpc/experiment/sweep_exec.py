"""What a sweep run executes, and the executors bound to it.

Every executor runs the same function, ``execute_run``, on the same ``RunTask`` and
yields its rows as runs finish, so a sweep gives identical rows everywhere (up to the
timing columns, ``TIMING_COLUMNS``). Rows come back to the calling process, which alone
writes the results directory; only ``--keep-runs`` directories are written by the
workers (on a cluster they need a filesystem shared with the workers).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from market_hpc.experiment import executors
from market_hpc.experiment.executors import DASK_HINT, Executor, failed_row, parse_dask_address

TIMING_COLUMNS = (
    "duration_s",
    "simulation_seconds",
    "dispatch_seconds",
    "mean_dispatch_ms",
    "p99_dispatch_ms",
    "max_dispatch_ms",
    "dispatch_cpu_seconds",
    "cpu_per_decision_ms",
    "run_cpu_seconds",
)


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (plain data: pickles to any process or host).

    Attributes:
        run_id: The run's id.
        config: The run's full config dict (``RunConfig.to_dict()``).
        keep_dir: Folder to write the run's result directory into (``keep_dir/run_id``).
        audit: Audit the run's written folder (``market-hpc audit``); a violation fails the run.
    """

    run_id: str
    config: dict[str, Any]
    keep_dir: str | None = None
    audit: bool = False


def scalar_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """The scalar entries of a run summary as plain Python values.

    >>> scalar_metrics({"mean_wait": np.float64(2.5), "jobs": np.int64(3), "list": [1]})
    {'mean_wait': 2.5, 'jobs': 3}
    """
    metrics: dict[str, Any] = {}
    for key, value in summary.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool | int | float | str):
            metrics[key] = value
    return metrics


def execute_run(task: RunTask) -> dict[str, Any]:
    """Run one sweep point; never raises for a failing run.

    Returns:
        ``run_id``, ``status`` (``ok``/``failed``), ``error`` (empty when ok; else the
        exception type and message), ``duration_s`` and the scalar summary metrics.
    """
    from market_hpc.experiment.config import config_from_dict
    from market_hpc.experiment.run import simulate

    began = time.perf_counter()
    try:
        result = simulate(config_from_dict(task.config))
        if task.keep_dir is not None:
            _write_run_dir(result, Path(task.keep_dir), task.run_id)
        if task.audit:
            _audit(result, task)
        metrics, status, error = scalar_metrics(result.summary), "ok", ""
    except Exception as exc:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        metrics, status, error = {}, "failed", f"{type(exc).__name__}: {exc}"
    duration = time.perf_counter() - began
    return {
        "run_id": task.run_id,
        "status": status,
        "error": error,
        "duration_s": duration,
        **metrics,
    }


AUDIT_FAILURES = {"AuditError": "violation", "AuditReadError": "unreadable"}
"""A failed row's error type when its audit failed, and the kind of failure: the folder
breaks an invariant (``violation``) or cannot be read (``unreadable``)."""


def audit_failure(error: str) -> str | None:
    """The kind of audit failure a row's ``error`` records (``None``: not an audit's).

    >>> audit_failure("AuditReadError: jobs.csv: line 3: got 'x'"), audit_failure("")
    ('unreadable', None)
    """
    return AUDIT_FAILURES.get(error.partition(":")[0])


def _audit(result: Any, task: RunTask) -> None:
    """Audit the run's folder (the kept one, else a temporary one).

    Raises:
        AuditError: naming the first violation.
        AuditReadError: the written folder cannot be read (naming file, line and column).
    """
    import tempfile

    from market_hpc.experiment.audit import AuditError, audit_run

    if task.keep_dir is not None:
        report = audit_run(Path(task.keep_dir) / task.run_id)
    else:
        with tempfile.TemporaryDirectory(prefix="market-hpc-audit-") as folder:
            report = audit_run(result.write(Path(folder) / task.run_id))
    if not report.ok:
        raise AuditError(f"audit failed: {report.violation}")


def _write_run_dir(result: Any, folder: Path, run_id: str) -> None:
    """Write a run's results to ``folder/run_id``, whole or not at all (replacing a
    previous attempt's)."""
    result.write(folder / run_id, overwrite=True)


class InProcessExecutor(executors.InProcessExecutor):
    """Runs sweep tasks one after the other in this process (``--workers 1``)."""

    def __init__(self) -> None:
        super().__init__(execute_run)


class ProcessExecutor(executors.ProcessExecutor):
    """Runs sweep tasks on ``workers`` spawned processes."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers, execute_run)


class DaskExecutor(executors.DaskExecutor):
    """Runs sweep tasks on Dask (``local:N`` or a scheduler address)."""

    def __init__(self, address: str) -> None:
        super().__init__(address, execute_run)


def make_executor(workers: int = 1, dask: str | None = None) -> Executor:
    """The executor for ``--workers N`` / ``--dask ADDRESS``, running ``execute_run``.

    Raises:
        SweepError: ``workers`` < 1, or both options given, or a bad Dask address.
    """
    return executors.make_executor(workers, dask, execute_run)


__all__ = [
    "DASK_HINT",
    "TIMING_COLUMNS",
    "DaskExecutor",
    "Executor",
    "InProcessExecutor",
    "ProcessExecutor",
    "RunTask",
    "audit_failure",
    "execute_run",
    "failed_row",
    "make_executor",
    "parse_dask_address",
    "scalar_metrics",
]
