"""Views the seed 004 dispatcher hands out: a partition's node range as a platform and
an allocator view, a partition's waiting jobs read from its queue agent, and the lazy
per-partition release lists (``market_hpc.policies.queues``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from market_hpc.domain.job import Job
from market_hpc.domain.platform import NodeType, Platform
from market_hpc.policies.base import RunningJob, View

Amounts = tuple[float, ...]  # per resource; integers except the extra of a reservation


def group_releases(releases: Callable[[], tuple[list[list[tuple[float, Amounts]]], list[tuple[float, Amounts]]]],
                   group: int) -> list[tuple[float, Amounts]]:
    """Partition ``group``'s (expected end, amounts) of running jobs, from the lazily
    built lists of ``releases``."""
    return releases()[0][group]


def sub_platform(platform: Platform, lo: int, hi: int) -> Platform:
    """The nodes ``[lo, hi)`` of ``platform`` as a platform of their own."""
    types, start = [], 0
    for node_type in platform.node_types:
        first, last = max(lo, start), min(hi, start + node_type.count)
        if first < last:
            types.append(NodeType(node_type.name, last - first, node_type.cores, node_type.gpus,
                                  node_type.mics, node_type.mem))
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

    def __init__(self, view: View, platform: Platform, free: np.ndarray, queue: Iterable[Job],
                 free_bb: float) -> None:
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
