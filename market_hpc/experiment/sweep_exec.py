"""Where sweep runs execute: in this process, in local processes, or on Dask.

Every executor runs the same function, ``execute_run``, on the same ``RunTask`` and
yields its rows as runs finish, so a sweep gives identical rows everywhere (up to the
timing columns, ``TIMING_COLUMNS``). Rows come back to the calling process, which alone
writes the results directory; only ``--keep-runs`` directories are written by the
workers (on a cluster they need a filesystem shared with the workers).
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self

import numpy as np

from market_hpc.experiment.sweep_spec import SweepError

TIMING_COLUMNS = ("duration_s", "simulation_seconds", "dispatch_seconds", "mean_dispatch_ms", "p99_dispatch_ms",
                  "max_dispatch_ms")
DASK_HINT = "--dask expects local:N (a LocalCluster of N workers) or a scheduler address like tcp://HOST:PORT"


@dataclass(frozen=True)
class RunTask:
    """What a worker needs for one run (plain data: pickles to any process or host).

    Attributes:
        run_id: The run's id.
        config: The run's full config dict (``RunConfig.to_dict()``).
        keep_dir: Folder to write the run's result directory into (``keep_dir/run_id``).
    """

    run_id: str
    config: dict[str, Any]
    keep_dir: str | None = None


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
        metrics, status, error = scalar_metrics(result.summary), "ok", ""
    except Exception as exc:  # noqa: BLE001 - a failing run is recorded, the sweep goes on
        metrics, status, error = {}, "failed", f"{type(exc).__name__}: {exc}"
    duration = time.perf_counter() - began
    return {"run_id": task.run_id, "status": status, "error": error, "duration_s": duration, **metrics}


def _write_run_dir(result: Any, folder: Path, run_id: str) -> None:
    """Write a run's results to ``folder/run_id`` through a temporary directory."""
    temporary = folder / f".{run_id}.{os.getpid()}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    result.write(temporary)
    target = folder / run_id
    shutil.rmtree(target, ignore_errors=True)
    os.replace(temporary, target)


def failed_row(run_id: str, exc: BaseException) -> dict[str, Any]:
    """The row of a run whose execution itself failed (worker lost, result unpicklable)."""
    return {"run_id": run_id, "status": "failed", "error": f"{type(exc).__name__}: {exc}",
            "duration_s": float("nan")}


class Executor(Protocol):
    """Runs tasks and yields their rows as they finish (a context manager)."""

    description: str

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def run(self, tasks: Sequence[RunTask]) -> Iterator[dict[str, Any]]:
        """Yield one row per task, in completion order."""
        ...


class InProcessExecutor:
    """Runs tasks one after the other in this process (``--workers 1``)."""

    description = "in-process"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def run(self, tasks: Sequence[RunTask]) -> Iterator[dict[str, Any]]:
        """Yield each task's row in order."""
        for task in tasks:
            yield execute_run(task)


class ProcessExecutor:
    """A pool of ``workers`` spawned processes (``spawn``: no inherited threads or state)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.description = f"{workers} local processes"
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Self:
        self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def run(self, tasks: Sequence[RunTask]) -> Iterator[dict[str, Any]]:
        """Submit every task, yield rows as they complete.

        Raises:
            SweepError: a worker process died (killed or out of memory); stored rows
                are safe and a re-run resumes.
        """
        assert self._pool is not None, "use the executor as a context manager"
        futures: dict[Future[dict[str, Any]], str] = {
            self._pool.submit(execute_run, task): task.run_id for task in tasks
        }
        for future in as_completed(futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                raise SweepError(f"a worker process died ({exc}); finished runs are stored, "
                                 "re-run the sweep to resume") from None
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                yield failed_row(futures[future], exc)


class DaskExecutor:
    """Runs tasks on Dask: a loopback ``LocalCluster`` or an existing scheduler.

    Args:
        address: ``local:N`` (N single-threaded worker processes on 127.0.0.1, no
            dashboard) or a scheduler address such as ``tcp://HOST:PORT``.

    Raises:
        SweepError: a malformed address, dask.distributed missing, or a scheduler that
            cannot be reached.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self.local_workers = parse_dask_address(address)
        self.description = (f"Dask LocalCluster of {self.local_workers} workers"
                            if self.local_workers else f"Dask scheduler {address}")
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Self:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SweepError("--dask needs dask.distributed: pip install 'market_hpc[dask]'") from None
        try:
            if self.local_workers:
                self._cluster = LocalCluster(
                    n_workers=self.local_workers, threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None,
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.address, timeout=30)
        except (OSError, TimeoutError) as exc:
            self.__exit__()
            what = "start a Dask LocalCluster" if self.local_workers else f"reach Dask scheduler {self.address}"
            raise SweepError(f"cannot {what}: {exc}") from None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def run(self, tasks: Sequence[RunTask]) -> Iterator[dict[str, Any]]:
        """Map ``execute_run`` over the tasks, yield rows as they complete; a task Dask
        itself gives up on (e.g. its worker was killed) becomes a failed row."""
        from dask.distributed import as_completed as dask_as_completed

        assert self._client is not None, "use the executor as a context manager"
        if not tasks:
            return
        futures = self._client.map(execute_run, list(tasks),
                                   key=[f"market-hpc-run-{task.run_id}" for task in tasks])
        run_ids = {future.key: task.run_id for future, task in zip(futures, tasks)}
        try:
            for future in dask_as_completed(futures):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, lost scheduler...
                    yield failed_row(run_ids[future.key], exc)
                future.release()
        finally:
            self._client.cancel(futures)


def parse_dask_address(address: str) -> int:
    """Workers of a ``local:N`` address (0 for a scheduler address).

    >>> parse_dask_address("local:4"), parse_dask_address("tcp://10.0.0.1:8786")
    (4, 0)

    Raises:
        SweepError: neither form.
    """
    if address.startswith("local:"):
        count = address.removeprefix("local:")
        if count.isdigit() and int(count) >= 1:
            return int(count)
        raise SweepError(f"{DASK_HINT}; got {address!r} (N must be a positive integer)")
    if "://" in address:
        return 0
    raise SweepError(f"{DASK_HINT}; got {address!r}")


def make_executor(workers: int = 1, dask: str | None = None) -> Executor:
    """The executor for ``--workers N`` / ``--dask ADDRESS``.

    Raises:
        SweepError: ``workers`` < 1, or both options given, or a bad Dask address.
    """
    if workers < 1:
        raise SweepError(f"--workers must be >= 1, got {workers}")
    if dask is not None:
        if workers != 1:
            raise SweepError("give either --workers or --dask, not both")
        return DaskExecutor(dask)
    return InProcessExecutor() if workers == 1 else ProcessExecutor(workers)
