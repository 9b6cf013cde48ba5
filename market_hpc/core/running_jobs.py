"""The model's running jobs, read in ``(est_end, seq)`` order, sorted only once someone reads them.

EASY walks the running jobs in expected-end order at every blocked decision, so they are
kept in a ``SortedList``; FIFO, SJF and LJF never read them, and for them keeping the
order would cost a sorted insert and a sorted removal per job. :class:`RunningJobs`
therefore holds the jobs in a plain dict until the first read in order, then sorts
them once and keeps them sorted from then on. Reads (iteration, indexing) always see
``(est_end, seq)`` order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sortedcontainers import SortedList

from market_hpc.domain.job import CORE_UNIT
from market_hpc.policies.base import RunningJob


class RunningJobs(Sequence[RunningJob]):
    """Running jobs: ``add``/``remove`` by value, read sorted by ``(est_end, seq)``.

    >>> from market_hpc.domain.job import Job
    >>> jobs = RunningJobs()
    >>> def running(est, seq):
    ...     return RunningJob(est, seq, Job(seq, 0.0, 1.0, 1.0), 0.0, ((0, 1),), 1)
    >>> a, b = running(9.0, 1), running(5.0, 2)
    >>> jobs.add(a); jobs.add(b); len(jobs)
    2
    >>> [r.seq for r in jobs]             # sorted on this first ordered read
    [2, 1]
    >>> jobs.remove(b); jobs[0].seq, len(jobs)
    (1, 1)
    """

    __slots__ = ("_by_seq", "_sorted", "beyond_cores", "version")

    def __init__(self) -> None:
        self._by_seq: dict[int, RunningJob] | None = {}  # until the first ordered read
        self._sorted: SortedList | None = None
        # Running jobs whose unit asks for more than cores (GPUs, MICs, memory): with none,
        # a reservation on a multi-resource platform is a walk over cores alone.
        self.beyond_cores = 0
        # Bumped by every add and remove: a policy may keep what it derived from the
        # running jobs while the version is unchanged (the market's hold candidates).
        self.version = 0

    def add(self, running: RunningJob) -> None:
        """Add a job that starts (its ``seq`` is unique)."""
        self.version += 1
        if running.job.unit != CORE_UNIT:
            self.beyond_cores += 1
        by_seq = self._by_seq
        if by_seq is not None:
            by_seq[running.seq] = running
        else:
            self._sorted.add(running)  # type: ignore[union-attr]

    def remove(self, running: RunningJob) -> None:
        """Remove a job that ends or is held (``ValueError`` if it is not running)."""
        self.version += 1
        by_seq = self._by_seq
        if by_seq is None:
            self._sorted.remove(running)  # type: ignore[union-attr]
        elif (found := by_seq.get(running.seq)) is running or (
            found is not None and found == running
        ):
            del by_seq[running.seq]
        else:
            raise ValueError(f"{running!r} is not running")
        if running.job.unit != CORE_UNIT:
            self.beyond_cores -= 1

    def _ordered(self) -> SortedList:
        if self._sorted is None:
            self._sorted = SortedList((self._by_seq or {}).values())
            self._by_seq = None
        return self._sorted

    def __len__(self) -> int:
        by_seq = self._by_seq
        return len(by_seq) if by_seq is not None else len(self._sorted)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[RunningJob]:
        return iter(self._ordered())

    def __getitem__(self, index: Any) -> Any:
        return self._ordered()[index]

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return f"RunningJobs({list(self)!r})"
