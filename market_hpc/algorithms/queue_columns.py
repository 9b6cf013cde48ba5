"""Waiting jobs as columns in queue order, for backfilling passes over long queues.

A backfilling pass visits every waiting job behind the head and keeps those that fit
now and either end by the shadow time or fit the extra resources. On archive traces
thousands of jobs wait for months, and a pass runs at every arrival and completion:
visiting them one by one in Python costs O(queue) interpreted steps per decision even
when nothing can start. :class:`QueueColumns` keeps each waiting job's cores, burst
buffer and estimate in numpy columns, in queue order, so the jobs that *may* be
backfilled are found with a few vectorised comparisons; the pass then checks only
those, in queue order, exactly as before (other resources included).

The filter is a necessary condition: free cores, burst buffer and extra only shrink
during a pass, so a job that fails it at the start of the backfilling walk would fail at
its turn too. Jobs leave by marking their row; the columns are compacted once the dead
rows outnumber the live ones, so memory and work stay O(waiting jobs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from heapq import heappop, heappush

import numpy as np

from market_hpc.domain.job import Job

_DEAD = np.iinfo(np.int64).max // 4  # a request no pass can satisfy: left jobs never match


class BackfillLimits:
    """What a backfilling pass has left: free cores and burst buffer, and the extra
    cores and burst buffer at the shadow time (``inf``: no limit)."""

    __slots__ = ("extra_bb", "extra_cores", "free_bb", "free_cores")

    def __init__(
        self,
        free_cores: float,
        extra_cores: float,
        free_bb: float = math.inf,
        extra_bb: float = math.inf,
    ) -> None:
        self.free_cores, self.extra_cores, self.free_bb, self.extra_bb = (
            free_cores,
            extra_cores,
            free_bb,
            extra_bb,
        )

    def values(self) -> tuple[float, float, float, float]:
        """``(free_cores, extra_cores, free_bb, extra_bb)``."""
        return self.free_cores, self.extra_cores, self.free_bb, self.extra_bb


class QueueColumns:
    """Cores, burst buffers and estimates of waiting jobs, in queue order.

    >>> columns = QueueColumns([Job(1, 0.0, 50.0, 50.0, units=8), Job(2, 0.0, 5.0, 5.0, units=2),
    ...                         Job(3, 0.0, 90.0, 90.0, units=1), Job(4, 0.0, 90.0, 90.0, units=4)])
    >>> [j.job_id for j in columns.backfill_scan(1, 0.0, 10.0, BackfillLimits(4, 1))]
    [2, 3]
    >>> columns.take(2)
    >>> [j.job_id for j in columns.backfill_scan(1, 0.0, 10.0, BackfillLimits(4, 1))]
    [3]
    >>> len(columns)
    3
    """

    __slots__ = ("_bb", "_cores", "_dead", "_estimate", "_jobs", "_position", "_size")

    def __init__(self, jobs: Iterable[Job] = ()) -> None:
        self._jobs: list[Job | None] = []
        self._position: dict[int, int] = {}
        self._cores = np.empty(64, dtype=np.int64)
        self._bb = np.empty(64, dtype=np.float64)
        self._estimate = np.empty(64, dtype=np.float64)
        self._size = 0
        self._dead = 0
        for job in jobs:
            self.push(job)

    def __len__(self) -> int:
        return self._size - self._dead

    def push(self, job: Job) -> None:
        """Append ``job`` at the tail of the queue."""
        row = self._size
        if row == len(self._bb):
            self._grow()
        self._cores[row] = job.cores
        self._bb[row] = job.bb
        self._estimate[row] = job.estimate
        self._jobs.append(job)
        self._position[job.job_id] = row
        self._size = row + 1

    def take(self, job_id: int) -> None:
        """Remove a waiting job (started, dropped, moved to another queue)."""
        row = self._position.pop(job_id)
        self._jobs[row] = None
        self._cores[row] = _DEAD
        self._dead += 1
        if self._dead > 512 and self._dead * 2 > self._size:
            self._compact()

    def backfill_scan(
        self, after: int, now: float, shadow: float, limits: BackfillLimits
    ) -> Iterator[Job]:
        """Jobs behind job ``after``, in queue order, that may still be backfilled.

        A candidate asks for no more than ``limits.free_cores`` cores and
        ``limits.free_bb`` of burst buffer, and either ends by the shadow time (``now +
        estimate <= shadow``, in the same float arithmetic as the scalar test) or asks for
        no more than ``limits.extra_cores`` (and ``limits.extra_bb``). Every other job
        behind ``after`` would be skipped by the pass; candidates still need every check
        of the pass. The pass lowers ``limits`` as it starts jobs: rows are filtered in
        growing windows, and again from the next row whenever the limits changed, so a
        pass costs the rows it filters plus the candidates it is shown.
        """
        row = self._position[after] + 1
        window = 1024  # most passes filter the whole queue at once; huge ones in steps
        jobs = self._jobs
        while row < self._size:
            end = min(row + window, self._size)
            seen = limits.values()
            hits = self._matches(row, end, now, shadow, *seen)
            row = end
            for hit in hits:
                yield jobs[hit]  # type: ignore[misc]
                if limits.values() != seen:
                    row = hit + 1
                    break
            window *= 4

    def fitting(
        self, free_cores: float, free_bb: float = math.inf, after: int | None = None
    ) -> list[Job]:
        """Waiting jobs (all, or those behind job ``after``), in queue order, asking for no
        more than ``free_cores`` cores and ``free_bb`` of burst buffer.

        >>> columns = QueueColumns([Job(1, 0.0, 5.0, 5.0, units=8), Job(2, 0.0, 5.0, 5.0, units=2),
        ...                         Job(3, 0.0, 5.0, 5.0, units=3, bb=10.0)])
        >>> ([j.job_id for j in columns.fitting(4)],
        ...  [j.job_id for j in columns.fitting(4, 5.0, after=1)])
        ([2, 3], [2])
        """
        first = 0 if after is None else self._position[after] + 1
        fits = self._cores[first : self._size] <= free_cores
        if free_bb < math.inf:
            fits &= self._bb[first : self._size] <= free_bb
        jobs = self._jobs
        return [jobs[row] for row in (fits.nonzero()[0] + first).tolist()]  # type: ignore[misc]

    def _matches(
        self,
        first: int,
        end: int,
        now: float,
        shadow: float,
        free_cores: float,
        extra_cores: float,
        free_bb: float,
        extra_bb: float,
    ) -> list[int]:
        cores = self._cores[first:end]
        fits = cores <= free_cores
        in_extra = cores <= extra_cores
        if free_bb < math.inf or extra_bb < math.inf:
            bb = self._bb[first:end]
            fits &= bb <= free_bb
            in_extra &= bb <= extra_bb
        ends_in_time = (now + self._estimate[first:end]) <= shadow
        return ((fits & (ends_in_time | in_extra)).nonzero()[0] + first).tolist()

    def _grow(self) -> None:
        capacity = 2 * len(self._bb)
        cores = np.empty(capacity, dtype=np.int64)
        cores[: self._size] = self._cores[: self._size]
        bb = np.empty(capacity, dtype=np.float64)
        bb[: self._size] = self._bb[: self._size]
        estimate = np.empty(capacity, dtype=np.float64)
        estimate[: self._size] = self._estimate[: self._size]
        self._cores, self._bb, self._estimate = cores, bb, estimate

    def _compact(self) -> None:
        keep = np.flatnonzero(self._cores[: self._size] != _DEAD)
        live = len(keep)
        self._cores[:live] = self._cores[keep]
        self._bb[:live] = self._bb[keep]
        self._estimate[:live] = self._estimate[keep]
        jobs = [self._jobs[row] for row in keep.tolist()]
        self._jobs = jobs
        self._position = {job.job_id: row for row, job in enumerate(jobs)}  # type: ignore[union-attr]
        self._size = live
        self._dead = 0


class SmallestRequest:
    """The smallest of a multiset of requests (waiting jobs' cores) under adds and
    removals: a count per value and a heap of values, stale entries dropped when they
    reach the top (and the heap rebuilt when they pile up).

    >>> smallest = SmallestRequest([4, 2, 2, 8])
    >>> smallest.remove(2); smallest.min(), len(smallest)
    (2, 3)
    >>> smallest.remove(2); smallest.min()
    4
    >>> smallest.add(1); smallest.min()
    1
    >>> for value in (1, 4, 8): smallest.remove(value)
    >>> smallest.min(), len(smallest)
    (0, 0)
    """

    __slots__ = ("_count", "_heap", "_size")

    def __init__(self, values: Iterable[int] = ()) -> None:
        self._count: dict[int, int] = {}
        self._heap: list[int] = []
        self._size = 0
        for value in values:
            self.add(value)

    def __len__(self) -> int:
        return self._size

    def add(self, value: int) -> None:
        """Add one request of ``value``."""
        count = self._count
        held = count.get(value, 0)
        count[value] = held + 1
        self._size += 1
        if not held:
            heap = self._heap
            heappush(heap, value)
            if len(heap) > 2 * len(count) + 64:  # stale entries piled up
                self._heap = sorted(count)

    def remove(self, value: int) -> None:
        """Remove one request of ``value`` (``KeyError`` if there is none)."""
        count = self._count
        held = count[value] - 1
        if held:
            count[value] = held
        else:
            del count[value]  # its heap entry goes when it reaches the top
        self._size -= 1

    def min(self) -> int:
        """The smallest request (0 when there is none)."""
        heap, count = self._heap, self._count
        while heap and heap[0] not in count:
            heappop(heap)
        return heap[0] if heap else 0


__all__ = ["BackfillLimits", "QueueColumns", "SmallestRequest"]
