"""Classic queue schedulers: FIFO, SJF, LJF and EASY backfilling.

Each composes with any allocator. FIFO, SJF and LJF start jobs in their order and stop
at the first that does not fit (no skipping), as AccaSim's and Batsim's reference
schedulers do. SJF/LJF order by the estimate schedulers see, ties by submit time then
job id. :class:`Backfilling` is EASY over any queue order: a new backfilling scheduler
sets its order (``key``) and inherits the reservation and the backfilling walk.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from market_hpc.algorithms.easy import (
    may_backfill,
    merge_releases,
    shadow_and_extra,
    shadow_and_extra_cores,
)
from market_hpc.algorithms.queue_columns import BackfillLimits, QueueColumns
from market_hpc.domain.job import CORE_UNIT, Job
from market_hpc.domain.platform import Platform
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocator,
    Decision,
    Start,
    View,
    fast_view,
    pass_aware,
)
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import PassScratch


def _totals(unit: tuple[int, ...], units: int) -> tuple[int, ...]:
    if unit == CORE_UNIT:
        return (units, 0, 0, 0)
    return tuple(units * amount for amount in unit)


def shortest_first(job: Job) -> tuple[float, float, int]:
    """SJF's order: estimate, then submit time, then job id."""
    return (job.estimate, job.submit, job.job_id)


def longest_first(job: Job) -> tuple[float, float, int]:
    """LJF's order: longest estimate, then submit time, then job id."""
    return (-job.estimate, job.submit, job.job_id)


class _OrderedScheduler:
    """Start jobs in an order while they fit; stop at the first that does not."""

    label = ""
    # The order as a sort key (``None``: queue order). The model's views keep the queue
    # sorted by it between decisions (``view.queue_sorted``), so a pass over a long queue
    # costs the jobs it looks at, not a sort of the whole queue.
    key: Callable[[Job], Any] | None = None

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        """``queue`` in the order this scheduler serves it."""
        return queue if self.key is None else sorted(queue, key=self.key)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        free_cores = view.free_total[0]
        ordered = _served(view, self.key, self.order)
        looking_ahead = pass_aware(self.allocator)
        if looking_ahead is not None:  # WEIGHTED (Netti et al.) looks ahead along this order
            ordered = list(ordered)
            looking_ahead.begin_pass(ordered, view)
        free_bb = view.free_bb  # allocators see only the view's pool, not this pass's starts
        jobs = iter(ordered)
        first = next(jobs, None)
        if first is None or (first.units * first.unit[0] > free_cores and not view.exclusive) or first.bb > free_bb:
            return NOTHING  # the head blocks: no pass
        actions: list[Action] = []
        with PassScratch(view) as scratch:
            for job in itertools.chain((first,), jobs):
                cores = job.units * job.unit[0]
                if (cores > free_cores and not view.exclusive) or job.bb > free_bb:
                    break
                allocation = scratch.allocate(self.allocator, job)
                if allocation is None:
                    break
                actions.append(Start(job.job_id, allocation))
                scratch.take(job, allocation)
                free_cores -= cores
                free_bb -= job.bb
        return Decision(tuple(actions)) if actions else NOTHING


def _served(view: View, key: Callable[[Job], Any] | None,
            order: Callable[[Iterable[Job]], Iterable[Job]]) -> Iterable[Job]:
    """The waiting jobs in the order ``key`` gives (queue order for ``None``): the view's
    sorted queue when it keeps one (``FastView.queue_sorted``), else ``order(queue)``."""
    if key is None:
        return view.queue
    kept = fast_view(view, "queue_sorted")
    return order(view.queue) if kept is None else kept.queue_sorted(key)


@register_scheduler("fifo", "first come, first served; the head blocks the queue")
class Fifo(_OrderedScheduler):
    label = "fifo"


@register_scheduler("sjf", "shortest estimate first; blocks at the first job that does not fit")
class Sjf(_OrderedScheduler):
    label = "sjf"
    key = staticmethod(shortest_first)


@register_scheduler("ljf", "longest estimate first; blocks at the first job that does not fit")
class Ljf(_OrderedScheduler):
    label = "ljf"
    key = staticmethod(longest_first)


class Backfilling:
    """EASY backfilling (Mu'alem & Feitelson 2001) over any queue order: the base class
    of backfilling schedulers.

    Jobs start in the scheduler's order while they fit. The first that does not fit (the
    head) gets a reservation at the shadow time computed from running jobs' estimates (a
    job past its estimate is expected to end now) and this pass's starts. Later jobs are
    backfilled, in the same order, if the allocator places them now and they either end by
    the shadow time or use only the extra resources. Every resource type counts, the
    shared burst-buffer pool included (as BBSched needs). Shadow and extra are computed on
    platform-wide totals per resource (``algorithms.easy``), which is exact for core-level
    allocation and an approximation under node-exclusive allocation (documented in
    ``docs``).

    A subclass chooses the order by setting ``key`` (a sort key giving a total order;
    ``None``, the default, serves the queue in arrival order) and ``label`` (the name's
    prefix); an order that is not a sort key overrides :meth:`decide` to call
    ``self.schedule(view, ordered)`` (as ``policies.bb_window`` does with ``Easy``). For
    example, largest job first::

        class LargestFirst(Backfilling):
            label = "ljf-easy"
            key = staticmethod(lambda job: (-job.cores, job.submit, job.job_id))

    Args:
        allocator: Where jobs go.

    Attributes:
        label: Prefix of ``name`` (``"{label}+{allocator}"``).
        key: The order as a sort key, or ``None`` for queue order.
        columns_from: Queues longer than this are filtered with the queue's columns
            before the backfilling walk (queue order only; same decisions).
    """

    label = "backfilling"
    key: Callable[[Job], Any] | None = None
    # A vectorised filter costs more than a short walk.
    columns_from = 64

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"
        self._platform: object = None
        self._platform_cores_only = False

    def _cores_only(self, platform: Platform) -> bool:
        """Whether ``platform`` has cores and nothing else (checked once per platform)."""
        if platform is not self._platform:
            self._platform = platform
            self._platform_cores_only = not np.asarray(platform.total)[1:].any()
        return self._platform_cores_only

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        """``queue`` sorted by ``key`` (used when the view does not keep the queue sorted:
        ``FastView.queue_sorted``)."""
        return queue if self.key is None else sorted(queue, key=self.key)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """EASY over the waiting jobs in this scheduler's order (:meth:`schedule`)."""
        return self.schedule(view, _served(view, self.key, self.order))

    def schedule(self, view: View, ordered: Iterable[Job]) -> Decision:
        """EASY over ``ordered`` (the queue in the order to serve it).

        With a burst-buffer pool the burst buffer is one more resource (BBSched): a job
        starts only if the pool still holds its request, the shadow time is the first
        time both nodes and burst buffer suffice for the head, and backfilled jobs must
        fit the extra of both.
        """
        free_cores = view.free_total[0]
        with_bb = view.platform.burst_buffer > 0
        free_bb = view.free_bb
        queue = iter(ordered)
        first = next(queue, None)
        if first is None or (first.cores > free_cores and free_cores == 0):
            return NOTHING  # nothing can start or backfill now
        if first.cores > free_cores:
            smallest = fast_view(view, "queue_min_cores")
            if smallest is not None and smallest.queue_min_cores > free_cores:
                return NOTHING  # no waiting job fits the free cores: the pass would start nothing
        columns = None
        if ordered is view.queue and len(ordered) > self.columns_from:  # type: ignore[arg-type]
            kept = fast_view(view, "queue_columns")
            columns = None if kept is None else kept.queue_columns
        with PassScratch(view) as scratch:
            return self._pass(view, first, queue, free_cores, free_bb, with_bb, scratch, columns)

    def _pass(self, view: View, first: Job, queue: Iterator[Job], free_cores: int, free_bb: float,
              with_bb: bool, scratch: PassScratch, columns: QueueColumns | None = None) -> Decision:
        actions: list[Action] = []
        started: list[tuple[float, tuple[float, ...]]] = []
        head = None
        for job in itertools.chain((first,), queue):
            fits = job.cores <= free_cores and job.bb <= free_bb
            allocation = scratch.allocate(self.allocator, job) if fits else None
            if allocation is None:
                head = job
                break
            actions.append(Start(job.job_id, allocation))
            started.append((view.time + job.estimate, _needs(job, job.units, with_bb)))
            scratch.take(job, allocation)
            free_cores -= job.cores
            free_bb -= job.bb
        if head is None or free_cores == 0:
            return Decision(tuple(actions)) if actions else NOTHING
        base_total = view.free_total + (view.free_bb,) if with_bb else view.free_total
        free_total = tuple(f - sum(t[i] for _, t in started) for i, f in enumerate(base_total))
        shadow, extra = self._reservation(view, free_total, head, sorted(started), with_bb)
        now = view.time
        limits = None
        if columns is not None:
            # A long queue: visit only the jobs that may be backfilled (the same ones the
            # walk below would keep, in the same order; ``algorithms.queue_columns``).
            limits = BackfillLimits(free_cores, extra[0], free_bb if with_bb else math.inf,
                                    extra[-1] if with_bb else math.inf)
            queue = columns.backfill_scan(head.job_id, now, shadow, limits)
        # A plain core job without burst buffer fits the extra when its cores do and no
        # other resource's extra is negative (``may_backfill`` on plain numbers).
        others_fit = with_bb or all(e >= 0 for e in extra[1:])
        need: tuple[float, ...] | None
        for job in queue:
            if free_cores == 0:
                break
            cores = job.units * job.unit[0]
            if cores > free_cores or job.bb > free_bb:
                continue
            if now + job.estimate <= shadow:
                uses_extra = False
                need = None
            elif not with_bb and job.unit == CORE_UNIT:
                if cores > extra[0] or not others_fit:
                    continue
                uses_extra = True
                need = (cores, 0, 0, 0)
            else:
                need = _needs(job, job.units, with_bb)
                allowed, uses_extra = may_backfill(now, job.estimate, need, shadow, extra)
                if not allowed:
                    continue
            allocation = scratch.allocate(self.allocator, job)
            if allocation is None:
                continue
            actions.append(Start(job.job_id, allocation))
            scratch.take(job, allocation)
            free_cores -= cores
            free_bb -= job.bb
            if uses_extra:
                assert need is not None
                extra = tuple(e - n for e, n in zip(extra, need))
                others_fit = with_bb or all(e >= 0 for e in extra[1:])
            if limits is not None:
                limits.free_cores, limits.extra_cores = free_cores, extra[0]
                if with_bb:
                    limits.free_bb, limits.extra_bb = free_bb, extra[-1]
        return Decision(tuple(actions)) if actions else NOTHING

    @staticmethod
    def _cores_held(view: View, started: list[tuple[float, tuple[float, ...]]]) -> bool:
        """Whether the running jobs and this pass's starts hold cores only."""
        kept = fast_view(view, "running_beyond_cores")
        return (kept is not None and kept.running_beyond_cores == 0
                and all(not any(need[1:]) for _, need in started))

    def reservation_after(self, view: View, starts: Sequence[Job], head: Job) -> tuple[float, tuple[float, ...]]:
        """Shadow time and extra of ``head`` once ``starts`` have started now, as ``schedule``
        computes them for a queue ``starts + [head, ...]`` (burst buffer last when the
        platform has a pool)."""
        with_bb = view.platform.burst_buffer > 0
        started = sorted((view.time + job.estimate, _needs(job, job.units, with_bb)) for job in starts)
        base_total = view.free_total + (view.free_bb,) if with_bb else view.free_total
        free_total = tuple(f - sum(t[i] for _, t in started) for i, f in enumerate(base_total))
        return self._reservation(view, free_total, head, started, with_bb)

    def _reservation(
        self, view: View, free_total: tuple[float, ...], head: Job,
        started: list[tuple[float, tuple[float, ...]]], with_bb: bool = False,
    ) -> tuple[float, tuple[float, ...]]:
        """Shadow time and extra of ``head``; ``started`` are jobs started in this decision,
        ``free_total`` what is free after them (burst buffer last when ``with_bb``)."""
        now = view.time
        if not with_bb and head.unit == CORE_UNIT and (
                self._cores_only(view.platform) or self._cores_held(view, started)):
            # Only cores are asked for (by the head, the running jobs and this pass's
            # starts): the same walk on plain numbers; other resources keep what is free.
            cores = ((max(r.est_end, now), r.units * r.job.unit[0]) for r in view.running)
            started_cores = [(end, need[0]) for end, need in started]
            shadow, extra_cores = shadow_and_extra_cores(free_total[0], merge_releases(cores, started_cores), head.units)
            return shadow, (extra_cores, *free_total[1:])
        # Every resource type, the burst buffer last when the platform has a pool.
        running = ((max(r.est_end, now), _needs(r.job, r.units, with_bb)) for r in view.running)
        return shadow_and_extra(free_total, merge_releases(running, started), _needs(head, head.units, with_bb))


@register_scheduler("easy", "FIFO with EASY backfilling (Mu'alem & Feitelson 2001)")
class Easy(Backfilling):
    """EASY backfilling in queue (arrival) order: :class:`Backfilling` as it stands."""

    label = "easy"


def _needs(job: Job, units: int, with_bb: bool) -> tuple[float, ...]:
    """Per-resource totals of ``units`` units of ``job``, plus its burst buffer when ``with_bb``."""
    totals = _totals(job.unit, units)
    return totals + (job.bb,) if with_bb else totals
