"""Parameter sweeps: many runs of one scenario, resumable, on processes or Dask.

``run_sweep`` expands and validates a sweep file (``sweep_spec``), skips the runs
already stored with status ``ok`` in the results directory, runs the rest on the chosen
executor (``sweep_exec``) and stores each row as soon as its run finishes
(``sweep_store``). One row per run::

    run_id, <one column per swept parameter>, seed, status, error, duration_s,
    <the run's scalar summary metrics: total_profit, mean_wait, mean_slowdown, ...>

Decisions:
    * Re-running skips runs stored as ``ok`` and retries runs stored as ``failed``
      (their new row replaces the old one); rows of runs that are no longer in the
      sweep file are kept.
    * A run that raises is stored as ``failed`` with ``"ExceptionType: message"`` in
      ``error``; the sweep goes on. A run whose worker or Dask scheduler was lost is
      stored as ``interrupted`` (with the cause in ``error``), never ``failed``; both are
      run again by a resumed sweep.
    * ``results.parquet``/``results.csv`` are rebuilt from the stored rows at most every
      ``CONSOLIDATE_SECONDS`` while running and always at the end (also after an error
      or Ctrl-C); the per-run part files are what survives a kill -9.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from market_hpc.errors import OutputError
from market_hpc.experiment.sweep_exec import TIMING_COLUMNS, RunTask, audit_failure, make_executor
from market_hpc.experiment.sweep_spec import (
    FIXED_COLUMNS,
    Parameter,
    RunSpec,
    Sweep,
    SweepError,
    load_sweep,
    run_id,
)
from market_hpc.experiment.sweep_store import ResultStore
from market_hpc.json_text import json_text

__all__ = [
    "FIXED_COLUMNS",
    "TIMING_COLUMNS",
    "Parameter",
    "RunSpec",
    "Sweep",
    "SweepError",
    "SweepOutcome",
    "load_sweep",
    "run_id",
    "run_sweep",
]

CONSOLIDATE_SECONDS = 2.0


@dataclass(frozen=True)
class SweepOutcome:
    """What one invocation of a sweep did.

    Attributes:
        directory: The results directory.
        total: Runs in the sweep.
        done: Runs that finished ``ok`` in this invocation.
        skipped: Runs already stored ``ok`` (not run again).
        failed: Runs that failed in this invocation.
        errors: ``(run_id, error)`` of the failed and interrupted runs.
        executor: Where the runs executed.
        interrupted: Runs whose worker was lost (not counted in ``failed``).
        audit_violations: Failed runs whose folder breaks an invariant (``--audit``).
        audit_unreadable: Failed runs whose written folder the audit cannot read.
    """

    directory: Path
    total: int
    done: int
    skipped: int
    failed: int
    errors: tuple[tuple[str, str], ...]
    executor: str
    interrupted: int = 0
    audit_violations: int = 0
    audit_unreadable: int = 0

    def describe(self) -> str:
        """One line of counts, e.g. ``27 runs: 20 done, 5 skipped, 2 failed``; with
        ``--audit``, the failed runs' audit violations and unreadable folders apart."""
        interrupted = (
            f", {self.interrupted} interrupted (re-run the sweep to resume them)"
            if self.interrupted
            else ""
        )
        audits = ""
        if self.audit_violations or self.audit_unreadable:
            audits = (
                f" (audit: {self.audit_violations} violating an invariant, "
                f"{self.audit_unreadable} unreadable)"
            )
        return (
            f"{self.total} runs: {self.done} done, {self.skipped} skipped, "
            f"{self.failed} failed{audits}{interrupted} ({self.executor})"
        )


def leading_columns(sweep: Sweep) -> list[str]:
    """Column order of the results tables: id, parameters, then the fixed columns."""
    return ["run_id", *(p.column for p in sweep.parameters), *FIXED_COLUMNS[1:]]


def cell_value(value: Any) -> Any:
    """A swept value as a results cell: a table or a list (``policy.params = [{}, {...}]``)
    as its canonical JSON text, which parquet stores whatever its keys (an empty table has
    no parquet type) and the report reads as a category.

    >>> cell_value({"queue_limit": 5}), cell_value({}), cell_value(0.5)
    ('{"queue_limit":5}', '{}', 0.5)
    """
    if isinstance(value, dict | list):
        text = json_text(value, indent=None, default=str, sort_keys=True, separators=(",", ":"))
        return text.rstrip("\n")
    return value


def compose_row(run: RunSpec, outcome: dict[str, Any]) -> dict[str, Any]:
    """A results row: the run's id, parameters and seed, then what ``execute_run``
    returned; parameter and fixed columns win over summary entries of the same name."""
    params = {column: cell_value(value) for column, value in run.params.items()}
    row: dict[str, Any] = {"run_id": run.run_id, **params, "seed": run.seed}
    for key in FIXED_COLUMNS[2:]:
        row[key] = outcome[key]
    for key, value in outcome.items():
        row.setdefault(key, value)
    return row


def manifest(sweep: Sweep) -> dict[str, Any]:
    """The ``sweep.json`` content."""
    return {
        "sweep_file": str(sweep.source.resolve()),
        "parameters": [{"path": p.path, "column": p.column} for p in sweep.parameters],
        "seeds": list(sweep.seeds),
        "runs": len(sweep.runs),
        "metrics": list(sweep.metrics),
        "timing_columns": list(TIMING_COLUMNS),
        "run_ids": [run.run_id for run in sweep.runs],
        "axes": [list(axis) for axis in sweep.axes],
        "time_unit": time_unit(sweep),
        **({"leaderboard": sweep.leaderboard} if sweep.leaderboard else {}),
    }


def time_unit(sweep: Sweep) -> str:
    """``time-units`` when every run replays task-graph jobs (the market paper counts abstract
    time), else ``s``."""
    task_graphs = [
        run.config["workload"].get("generator") == "taskgraphs"
        or run.config["workload"].get("jobset") is not None
        for run in sweep.runs
    ]
    return "time-units" if task_graphs and all(task_graphs) else "s"


def run_sweep(
    sweep: Sweep | str | Path,
    out: str | Path,
    *,
    workers: int = 1,
    dask: str | None = None,
    keep_runs: bool = False,
    progress: bool = True,
    audit: bool = False,
) -> SweepOutcome:
    """Run every run of a sweep not already stored ``ok`` in ``out``.

    Args:
        sweep: A loaded sweep or a sweep file.
        out: Results directory (created if needed; re-use it to resume).
        workers: Local processes; 1 runs in this process.
        dask: ``local:N`` or a Dask scheduler address (instead of ``workers``).
        keep_runs: Also write each run's results directory to ``out/runs/<run_id>/``.
        progress: Show a progress bar with ETA on stderr when it is a terminal, else a
            line every few seconds (:class:`ProgressLines`).
        audit: Audit each run's results folder (``market-hpc audit``); a violation or an
            unreadable folder marks the run failed with the audit's message, and the
            outcome counts the two apart.

    Returns:
        The counts of done, skipped and failed runs.

    Raises:
        SweepError: invalid sweep file or options, a directory in use by another sweep,
            or a worker pool that died (stored rows stay valid; re-run to resume).
    """
    plan = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    executor = make_executor(workers, dask)
    directory = Path(out)
    order = [run.run_id for run in plan.runs]
    leading = leading_columns(plan)
    errors: list[tuple[str, str]] = []
    done = interrupted = 0
    audits = {"violation": 0, "unreadable": 0}
    with ResultStore(directory) as store:
        store.write_manifest(manifest(plan))
        stored_ok = store.ok_ids()
        pending = {run.run_id: run for run in plan.runs if run.run_id not in stored_ok}
        keep_dir = None
        if keep_runs:
            keep_dir = str((directory / "runs").resolve())
            Path(keep_dir).mkdir(parents=True, exist_ok=True)
        tasks = [RunTask(run.run_id, run.config, keep_dir, audit) for run in pending.values()]
        if progress:
            print(
                f"sweep {plan.source.name}: {len(plan.runs)} runs validated, {len(tasks)} to run, "
                f"{len(plan.runs) - len(tasks)} already stored; {executor.description}",
                file=sys.stderr,
                flush=True,
            )
        bar = _progress_bar(len(tasks), progress)
        last_consolidation = time.monotonic()
        try:
            if tasks:
                with executor:
                    for outcome in executor.run(tasks):
                        row = compose_row(pending[outcome["run_id"]], outcome)
                        store.add(row)
                        if row["status"] == "ok":
                            done += 1
                        else:
                            errors.append((row["run_id"], row["error"]))
                            interrupted += row["status"] == "interrupted"
                            kind = audit_failure(str(row["error"]))
                            if kind is not None:
                                audits[kind] += 1
                        if bar is not None:
                            bar.set_postfix(failed=len(errors), refresh=False)
                            bar.update(1)
                        if time.monotonic() - last_consolidation >= CONSOLIDATE_SECONDS:
                            store.consolidate(order, leading)
                            last_consolidation = time.monotonic()
        except BaseException:
            if bar is not None:
                bar.close()
            # the error in flight names the first failed write
            with contextlib.suppress(OutputError):
                store.consolidate(order, leading)
            raise
        if bar is not None:
            bar.close()
        store.consolidate(order, leading)
    return SweepOutcome(
        directory,
        len(plan.runs),
        done,
        len(plan.runs) - len(pending),
        len(errors) - interrupted,
        tuple(errors),
        executor.description,
        interrupted,
        audits["violation"],
        audits["unreadable"],
    )


PROGRESS_LINE_SECONDS = 5.0


class ProgressLines:
    """A sweep's progress as plain lines, for output that is not a terminal (a log, CI, a
    pipe): one line at most every ``interval`` seconds, and one at the end, each with the
    runs done, the failures, the time so far and the estimated time left.

    Args:
        total: Runs to do.
        interval: Seconds between lines.
        clock: The time source (``time.monotonic``).
        stream: Where the lines go (standard error when ``None``).
    """

    def __init__(
        self,
        total: int,
        interval: float = PROGRESS_LINE_SECONDS,
        clock: Any = time.monotonic,
        stream: Any = None,
    ) -> None:
        self.total, self.interval, self.clock = total, interval, clock
        self.stream = stream
        self.done = self.failed = 0
        self.started = self.shown = clock()

    def update(self, count: int) -> None:
        """Count ``count`` finished runs and print a line when one is due."""
        self.done += count
        now = self.clock()
        if now - self.shown >= self.interval or self.done == self.total:
            self.shown = now
            self._line(now)

    def set_postfix(self, failed: int, refresh: bool = False) -> None:
        """Note the number of failed runs (shown on the next line)."""
        self.failed = failed

    def close(self) -> None:
        """Nothing to clear: every line stays in the log."""

    def _line(self, now: float) -> None:
        elapsed = now - self.started
        left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        print(
            f"sweep: {self.done}/{self.total} runs done, {self.failed} failed, "
            f"{_clock_text(elapsed)} elapsed, about {_clock_text(left)} left",
            file=self.stream or sys.stderr,
            flush=True,
        )


def _clock_text(seconds: float) -> str:
    if math.isnan(seconds):
        return "?"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled or total == 0:
        return None
    if not sys.stderr.isatty():
        return ProgressLines(total)
    from tqdm import tqdm

    # mininterval 0: the first run can take minutes, show the bar (and its rate) at once
    return tqdm(
        total=total, unit="run", desc="sweep", file=sys.stderr, mininterval=0, smoothing=0.1
    )
