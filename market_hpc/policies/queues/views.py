"""Views the hybrid-queue dispatcher hands out: a partition's node range as a platform and
an allocator view, a partition's waiting jobs read from its queue agent, and the lazy
per-partition release lists (``market_hpc.policies.queues.dispatchers``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from market_hpc.algorithms.easy import totals
from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.policies.base import RunningJob, View

Amounts = tuple[float, ...]  # per resource; integers except the extra of a reservation


class RunningReleases:
    """Running jobs' ``(expected end, amounts released)`` per partition and machine-wide,
    in expected-end order, read lazily: the running jobs (sorted by ``(est_end, seq)``)
    are walked only as far as the furthest reader has asked, so an EASY shadow time that
    the first few releases reach costs those few, not every running job.

    >>> from market_hpc.domain.job import Job
    >>> def running(est, seq, node):
    ...     return RunningJob(est, seq, Job(seq, 0.0, 1.0, 1.0), 0.0, ((node, 1),), 1)
    >>> jobs = [running(3.0, 1, 0), running(5.0, 2, 1), running(7.0, 3, 0)]
    >>> lazy = RunningReleases(jobs, 4.0, lambda r: [(r.allocation[0][0], (1, 0, 0, 0))], 2)
    >>> next(lazy.releases(1)), lazy.walked        # the past estimate counts as now
    ((5.0, (1, 0, 0, 0)), 2)
    >>> [end for end, _ in lazy.releases(0)], [end for end, _ in lazy.releases(-1)]
    ([4.0, 7.0], [4.0, 5.0, 7.0])
    """

    def __init__(
        self,
        running: Iterable[RunningJob],
        now: float,
        parts_of: Callable[[RunningJob], list[tuple[int, Amounts]]],
        n_groups: int,
    ) -> None:
        self._running = running
        self._source: Iterator[RunningJob] | None = None
        self.now = now
        self.parts_of = parts_of
        self.per_group: list[list[tuple[float, Amounts]]] = [[] for _ in range(n_groups)]
        self.machine: list[tuple[float, Amounts]] = []
        self.walked = 0  # running jobs read so far

    def _advance(self) -> bool:
        if self._source is None:
            self._source = iter(self._running)
        running = next(self._source, None)
        if running is None:
            return False
        self.walked += 1
        end = max(self.now, running.est_end)
        self.machine.append((end, totals(running.job.unit, running.units)))
        for group, amounts in self.parts_of(running):
            self.per_group[group].append((end, amounts))
        return True

    def releases(self, group: int) -> Iterator[tuple[float, Amounts]]:
        """Partition ``group``'s releases (machine-wide for -1), by expected end."""
        target = self.machine if group < 0 else self.per_group[group]
        index = 0
        while True:
            while index >= len(target):
                if not self._advance():
                    return
            yield target[index]
            index += 1


def sub_platform(platform: Platform, lo: int, hi: int) -> Platform:
    """The nodes ``[lo, hi)`` of ``platform`` as a platform of their own."""
    types, start = [], 0
    for node_type in platform.node_types:
        first, last = max(lo, start), min(hi, start + node_type.count)
        if first < last:
            types.append(
                NodeType(
                    node_type.name,
                    last - first,
                    node_type.cores,
                    node_type.gpus,
                    node_type.mics,
                    node_type.mem,
                )
            )
        start += node_type.count
    return Platform(f"{platform.name}[{lo}:{hi}]", tuple(types), platform.burst_buffer)


class GroupJobs:
    """One partition's waiting jobs, read from its queue agent in arrival order on each
    iteration (jobs routed machine-wide skipped)."""

    def __init__(self, jobs: dict[int, Job], home: dict[int, tuple[int, int]], group: int) -> None:
        self.jobs, self.home, self.group = jobs, home, group

    def __iter__(self) -> Iterator[Job]:
        home, group = self.home, self.group
        return (job for job in self.jobs.values() if home[job.job_id][0] == group)


class SubView:
    """What an allocator sees of one node range (indices relative to ``lo``); the
    queue is listed only if the allocator reads it."""

    def __init__(
        self, view: View, platform: Platform, free: np.ndarray, queue: Iterable[Job], free_bb: float
    ) -> None:
        self.time = view.time
        self.platform = platform
        self.free = free
        self.free_bb = free_bb
        self.exclusive = view.exclusive
        self._queue = queue

    @property
    def queue(self) -> list[Job]:
        if not isinstance(self._queue, list):
            self._queue = list(self._queue)
        return self._queue

    @property
    def free_total(self) -> Amounts:
        return tuple(self.free.sum(axis=0).tolist())

    def expected_end(self, running: RunningJob) -> float:
        return max(self.time, running.est_end)
