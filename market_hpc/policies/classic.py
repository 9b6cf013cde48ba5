"""Classic queue schedulers: FIFO, SJF, LJF and EASY backfilling.

Each composes with any allocator. FIFO, SJF and LJF start jobs in their order and stop
at the first that does not fit (no skipping), as AccaSim's and Batsim's reference
schedulers do. SJF/LJF order by the estimate schedulers see, ties by submit time then
job id.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator

import numpy as np

from market_hpc.algorithms.easy import may_backfill, shadow_and_extra
from market_hpc.domain.job import Job
from market_hpc.policies.base import NOTHING, Action, Allocation, Allocator, Decision, Start, View
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import PassScratch, pass_scratch, take_dense


def _take(free: np.ndarray, job: Job, allocation: Allocation, view: View) -> None:
    """Subtract an allocation from a scratch copy of the free array."""
    take_dense(free, job, allocation, view.exclusive)


_CORE_UNIT = (1, 0, 0, 0)


def _totals(unit: tuple[int, ...], units: int) -> tuple[int, ...]:
    if unit == _CORE_UNIT:
        return (units, 0, 0, 0)
    return tuple(units * amount for amount in unit)


class _OrderedScheduler:
    """Start jobs in an order while they fit; stop at the first that does not."""

    label = ""

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        return queue

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        actions: list[Action] = []
        free_cores = view.free_total[0]
        ordered = self.order(view.queue)
        begin_pass = getattr(self.allocator, "begin_pass", None)
        if begin_pass is not None:  # seed 000 WEIGHTED looks ahead along this order
            ordered = list(ordered)
            begin_pass(ordered, view)
        with pass_scratch(view) as scratch:
            for job in ordered:
                if job.cores > free_cores and not view.exclusive:
                    break
                allocation = scratch.allocate(self.allocator, job)
                if allocation is None:
                    break
                actions.append(Start(job.job_id, allocation))
                scratch.take(job, allocation)
                free_cores -= job.cores
        return Decision(tuple(actions)) if actions else NOTHING


@register_scheduler("fifo", "first come, first served; the head blocks the queue")
class Fifo(_OrderedScheduler):
    label = "fifo"


@register_scheduler("sjf", "shortest estimate first; blocks at the first job that does not fit")
class Sjf(_OrderedScheduler):
    label = "sjf"

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        return sorted(queue, key=lambda j: (j.estimate, j.submit, j.job_id))


@register_scheduler("ljf", "longest estimate first; blocks at the first job that does not fit")
class Ljf(_OrderedScheduler):
    label = "ljf"

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        return sorted(queue, key=lambda j: (-j.estimate, j.submit, j.job_id))


@register_scheduler("easy", "FIFO with EASY backfilling (Mu'alem & Feitelson 2001)")
class Easy:
    """EASY backfilling.

    Jobs start in queue order while they fit. The first that does not fit gets a
    reservation at the shadow time computed from running jobs' estimates (a job past
    its estimate is expected to end now). Later jobs are backfilled, in queue order, if
    the allocator places them now and they either end by the shadow time or use only the
    extra resources. Shadow and extra are computed on platform-wide totals per resource,
    which is exact for core-level allocation and an approximation under node-exclusive
    allocation (documented in ``docs``).
    """

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"easy+{allocator.name}"

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        free_cores = view.free_total[0]
        queue = iter(view.queue)
        first = next(queue)
        if first.cores > free_cores and free_cores == 0:
            return NOTHING  # nothing can start or backfill now
        with pass_scratch(view) as scratch:
            return self._pass(view, first, queue, free_cores, scratch)

    def _pass(self, view: View, first: Job, queue: Iterator[Job], free_cores: int,
              scratch: PassScratch) -> Decision:
        actions: list[Action] = []
        started: list[tuple[float, tuple[int, ...]]] = []
        head = None
        for job in itertools.chain((first,), queue):
            allocation = None if job.cores > free_cores else scratch.allocate(self.allocator, job)
            if allocation is None:
                head = job
                break
            actions.append(Start(job.job_id, allocation))
            started.append((view.time + job.estimate, _totals(job.unit, job.units)))
            scratch.take(job, allocation)
            free_cores -= job.cores
        if head is None or free_cores == 0:
            return Decision(tuple(actions)) if actions else NOTHING
        free_total = tuple(f - sum(t[i] for _, t in started) for i, f in enumerate(view.free_total))
        shadow, extra = self._reservation(view, free_total, head, sorted(started))
        now = view.time
        for job in queue:
            if free_cores == 0:
                break
            cores = job.units * job.unit[0]
            if cores > free_cores:
                continue
            if now + job.estimate <= shadow:
                uses_extra = False
                need = None
            else:
                need = _totals(job.unit, job.units)
                allowed, uses_extra = may_backfill(now, job.estimate, need, shadow, extra)
                if not allowed:
                    continue
            allocation = scratch.allocate(self.allocator, job)
            if allocation is None:
                continue
            actions.append(Start(job.job_id, allocation))
            scratch.take(job, allocation)
            free_cores -= cores
            if uses_extra:
                assert need is not None
                extra = tuple(e - n for e, n in zip(extra, need))
        return Decision(tuple(actions)) if actions else NOTHING

    def _reservation(
        self, view: View, free_total: tuple[int, ...], head: Job,
        started: list[tuple[float, tuple[int, ...]]],
    ) -> tuple[float, tuple[int, ...]]:
        """Shadow time and extra of ``head``; ``started`` are jobs started in this decision,
        ``free_total`` what is free after them."""
        now = view.time
        running = (
            (r.est_end if r.est_end > now else now, _totals(r.job.unit, r.units)) for r in view.running
        )
        releases = heapq.merge(running, started, key=lambda release: release[0]) if started else running
        return shadow_and_extra(free_total, releases, _totals(head.unit, head.units))
