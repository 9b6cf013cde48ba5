"""Where work runs: in this process, in local processes, or on Dask.

The executors know nothing about what they run: a sweep gives them ``execute_run``
(``sweep_exec``), a hybrid-queues study maps its partition simulations over them with
``map``. Keeping them here, below ``experiment.run``, keeps the import graph acyclic
(``run`` starts a hybrid-queues study, whose sampling uses these pools, and a sweep worker
starts ``run``).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol, Self, TypeVar

from market_hpc.experiment.sweep_spec import SweepError

DASK_HINT = "--dask expects local:N (a LocalCluster of N workers) or a scheduler address like tcp://HOST:PORT"
T = TypeVar("T")
R = TypeVar("R")
Work = Callable[[Any], dict[str, Any]]


def _no_work(task: Any) -> dict[str, Any]:
    raise TypeError(
        "this executor was made without a work function: use map(), or pass work= to make_executor"
    )


def failed_row(run_id: str, exc: BaseException) -> dict[str, Any]:
    """The row of a run whose result could not come back (e.g. it cannot be pickled): the
    same run would fail again."""
    return {
        "run_id": run_id,
        "status": "failed",
        "error": f"{type(exc).__name__}: {exc}",
        "duration_s": float("nan"),
    }


def interrupted_row(run_id: str, exc: BaseException) -> dict[str, Any]:
    """The row of a run that did not finish for a reason outside it (its worker or the
    scheduler was lost, the sweep was cancelled): status ``interrupted``, retried on resume."""
    return {
        "run_id": run_id,
        "status": "interrupted",
        "error": f"{type(exc).__name__}: {exc}",
        "duration_s": float("nan"),
    }


class Executor(Protocol):
    """Runs tasks and yields their rows as they finish (a context manager)."""

    description: str
    work: Work

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def run(self, tasks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """Yield ``work(task)`` for each task (each has a ``run_id``), in completion order."""
        ...

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(item) for item in items]``, computed by the executor's workers, in order."""
        ...


class InProcessExecutor:
    """Runs tasks one after the other in this process (``--workers 1``)."""

    description = "in-process"

    def __init__(self, work: Work = _no_work) -> None:
        self.work = work

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def run(self, tasks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """Yield each task's row in order."""
        for task in tasks:
            yield self.work(task)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Map in this process."""
        return [fn(item) for item in items]


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_SECONDS = 0.5


def exit_with_parent(parent: int) -> None:
    """Worker initializer: end this worker when ``parent`` (the process that started the
    pool) dies, even by ``kill -9``, which runs no clean-up in the parent.

    Without it a worker blocks forever on the pool's queue (it holds a write end of that
    pipe itself, so it never reads end-of-file), and the multiprocessing resource tracker,
    which waits for every holder of its pipe, stays too. On Linux the kernel sends the
    worker SIGKILL when the thread that spawned it exits (``prctl(PR_SET_PDEATHSIG)``;
    the pool spawns workers from the thread that submits, the sweep's main thread);
    elsewhere a daemon thread polls the parent id every ``PARENT_POLL_SECONDS``.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
        if armed:
            if os.getppid() != parent:  # the parent died before the signal was armed
                os._exit(1)
            return
    threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_SECONDS)
    os._exit(1)


class ProcessExecutor:
    """A pool of ``workers`` spawned processes (``spawn``: no inherited threads or state)
    that end when this process ends, however it ends (:func:`exit_with_parent`)."""

    def __init__(self, workers: int, work: Work = _no_work) -> None:
        self.work = work
        self.workers = workers
        self.description = f"{workers} local processes"
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Self:
        self._pool = ProcessPoolExecutor(
            self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=exit_with_parent,
            initargs=(os.getpid(),),
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def run(self, tasks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """Submit every task, yield rows as they complete.

        Raises:
            SweepError: a worker process died (killed or out of memory); stored rows
                are safe and a re-run resumes.
        """
        assert self._pool is not None, "use the executor as a context manager"
        futures: dict[Future[dict[str, Any]], str] = {
            self._pool.submit(self.work, task): task.run_id for task in tasks
        }
        for future in as_completed(futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                raise SweepError(
                    f"a worker process died ({exc}); finished runs are stored, "
                    "re-run the sweep to resume"
                ) from None
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                yield failed_row(futures[future], exc)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Map over the pool's processes, results in item order."""
        assert self._pool is not None, "use the executor as a context manager"
        return list(self._pool.map(fn, items))


class DaskExecutor:
    """Runs tasks on Dask: a loopback ``LocalCluster`` or an existing scheduler.

    Args:
        address: ``local:N`` (N single-threaded worker processes on 127.0.0.1, no
            dashboard) or a scheduler address such as ``tcp://HOST:PORT``.

    Raises:
        SweepError: a malformed address, dask.distributed missing, or a scheduler that
            cannot be reached.
    """

    def __init__(self, address: str, work: Work = _no_work) -> None:
        self.work = work
        self.address = address
        self.local_workers = parse_dask_address(address)
        self.description = (
            f"Dask LocalCluster of {self.local_workers} workers"
            if self.local_workers
            else f"Dask scheduler {address}"
        )
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Self:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise SweepError(
                "--dask needs dask.distributed: pip install 'market_hpc[dask]'"
            ) from None
        try:
            if self.local_workers:
                self._cluster = LocalCluster(
                    n_workers=self.local_workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.address, timeout=30)
        except (OSError, TimeoutError) as exc:
            self.__exit__()
            what = (
                "start a Dask LocalCluster"
                if self.local_workers
                else f"reach Dask scheduler {self.address}"
            )
            raise SweepError(f"cannot {what}: {exc}") from None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def run(self, tasks: Sequence[Any]) -> Iterator[dict[str, Any]]:
        """Map ``self.work`` over the tasks, yield rows as they complete. The work function
        records a failing run itself, so a task whose result does not come back (its worker
        was killed, the scheduler was lost, the futures were cancelled) was interrupted:
        its row says ``interrupted`` and a resumed sweep runs it again."""
        from dask.distributed import as_completed as dask_as_completed

        assert self._client is not None, "use the executor as a context manager"
        if not tasks:
            return
        futures = self._client.map(
            self.work, list(tasks), key=[f"market-hpc-run-{task.run_id}" for task in tasks]
        )
        run_ids = {future.key: task.run_id for future, task in zip(futures, tasks)}
        try:
            for future in dask_as_completed(futures):
                try:
                    yield future.result()
                except Exception as exc:  # noqa: BLE001 - KilledWorker, lost scheduler...
                    yield interrupted_row(run_ids[future.key], exc)
                future.release()
        finally:
            self._client.cancel(futures)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """Map over the Dask workers, results in item order."""
        assert self._client is not None, "use the executor as a context manager"
        return list(self._client.gather(self._client.map(fn, list(items), pure=False)))


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


def make_executor(workers: int = 1, dask: str | None = None, work: Work = _no_work) -> Executor:
    """The executor for ``--workers N`` / ``--dask ADDRESS``.

    Raises:
        SweepError: ``workers`` < 1, or both options given, or a bad Dask address.
    """
    if workers < 1:
        raise SweepError(f"--workers must be >= 1, got {workers}")
    if dask is not None:
        if workers != 1:
            raise SweepError("give either --workers or --dask, not both")
        return DaskExecutor(dask, work)
    return InProcessExecutor(work) if workers == 1 else ProcessExecutor(workers, work)
