"""Classic queue schedulers: FIFO, SJF, LJF and EASY backfilling.

Each composes with any allocator. FIFO, SJF and LJF start jobs in their order and stop
at the first that does not fit (no skipping), as AccaSim's and Batsim's reference
schedulers do. SJF/LJF order by the estimate schedulers see, ties by submit time then
job id. :class:`Backfilling` is EASY over any queue order: a new backfilling scheduler
sets its order (``key``) and inherits the reservation and the backfilling walk.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from market_hpc.algorithms.easy import easy_pass, needs, reservation
from market_hpc.algorithms.queue_columns import BackfillLimits
from market_hpc.domain.job import Job
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocation,
    Allocator,
    Decision,
    PassAwareAllocator,
    PolicyBase,
    Start,
    View,
    fast_view,
    pass_aware,
)
from market_hpc.policies.capabilities import CLASSIC
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import PassScratch


def shortest_first(job: Job) -> tuple[float, float, int]:
    """SJF's order: estimate, then submit time, then job id."""
    return (job.estimate, job.submit, job.job_id)


def longest_first(job: Job) -> tuple[float, float, int]:
    """LJF's order: longest estimate, then submit time, then job id."""
    return (-job.estimate, job.submit, job.job_id)


class _OrderedScheduler(PolicyBase):
    """Start jobs in an order while they fit; stop at the first that does not."""

    label = ""
    handles = CLASSIC
    # The order as a sort key (``None``: queue order). The model's views keep the queue
    # sorted by it between decisions (``view.queue_sorted``), so a pass over a long queue
    # costs the jobs it looks at, not a sort of the whole queue.
    key: Callable[[Job], Any] | None = None
    # Whether the allocator looks ahead (``pass_aware``), asked once per allocator object
    # rather than at every decision (the allocator it was asked of, and the answer).
    _asked_allocator: Allocator | None = None
    _looking_ahead: PassAwareAllocator | None = None

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        """``queue`` in the order this scheduler serves it."""
        return queue if self.key is None else sorted(queue, key=self.key)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        free_cores = view.free_total[0]
        ordered = _served(view, self.key, self.order)
        allocator = self.allocator
        if allocator is not self._asked_allocator:
            self._asked_allocator, self._looking_ahead = allocator, pass_aware(allocator)
        looking_ahead = self._looking_ahead
        if looking_ahead is not None:  # WEIGHTED (Netti et al.) looks ahead along this order
            ordered = list(ordered)
            looking_ahead.begin_pass(ordered, view)
        free_bb = view.free_bb  # allocators see only the view's pool, not this pass's starts
        jobs = iter(ordered)
        first = next(jobs, None)
        if (
            first is None
            or (first.units * first.unit[0] > free_cores and not view.exclusive)
            or first.bb > free_bb
        ):
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
                actions.append(_start((job.job_id, allocation)))
                scratch.take(job, allocation)
                free_cores -= cores
                free_bb -= job.bb
        return _decision((tuple(actions), None)) if actions else NOTHING


def _served(
    view: View, key: Callable[[Job], Any] | None, order: Callable[[Iterable[Job]], Iterable[Job]]
) -> Iterable[Job]:
    """The waiting jobs in the order ``key`` gives (queue order for ``None``): the view's
    sorted queue when it keeps one (``FastView.queue_sorted``), else ``order(queue)``."""
    if key is None:
        return view.queue
    kept = fast_view(view, "queue_sorted")
    return order(view.queue) if kept is None else kept.queue_sorted(key)


@register_scheduler
class Fifo(_OrderedScheduler):
    label = "fifo"
    summary = "first come, first served; the head blocks the queue"


@register_scheduler
class Sjf(_OrderedScheduler):
    label = "sjf"
    summary = "shortest estimate first; blocks at the first job that does not fit"
    key = staticmethod(shortest_first)


@register_scheduler
class Ljf(_OrderedScheduler):
    label = "ljf"
    summary = "longest estimate first; blocks at the first job that does not fit"
    key = staticmethod(longest_first)


class Backfilling(PolicyBase):
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
    ``self.schedule(view, ordered)`` (as ``policies.bbsched_window`` does with ``Easy``). For
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
    handles = CLASSIC
    key: Callable[[Job], Any] | None = None
    # A vectorised filter costs more than a short walk.
    columns_from = 64

    def __init__(self, allocator: Allocator) -> None:
        self.allocator = allocator
        self.name = f"{self.label}+{allocator.name}"
        self._platform: object = None
        self._platform_cores_only = False

    def order(self, queue: Iterable[Job]) -> Iterable[Job]:
        """``queue`` sorted by ``key`` (used when the view does not keep the queue sorted:
        ``FastView.queue_sorted``)."""
        return queue if self.key is None else sorted(queue, key=self.key)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """EASY over the waiting jobs in this scheduler's order (:meth:`schedule`)."""
        return self.schedule(view, _served(view, self.key, self.order))

    def schedule(self, view: View, ordered: Iterable[Job]) -> Decision:
        """EASY over ``ordered`` (the queue in the order to serve it): one
        :func:`~market_hpc.algorithms.easy.easy_pass` over the whole machine.

        With a burst-buffer pool the burst buffer is one more resource (BBSched): a job
        starts only if the pool still holds its request, the shadow time is the first
        time both nodes and burst buffer suffice for the head, and backfilled jobs must
        fit the extra of both.
        """
        free_cores = view.free_total[0]
        queue = iter(ordered)
        first = next(queue, None)
        if first is None:
            return NOTHING
        if first.units * first.unit[0] > free_cores:  # (first.cores, without its call)
            if free_cores == 0:
                return NOTHING  # nothing can start or backfill now
            smallest = fast_view(view, "queue_min_cores")
            if smallest is not None and smallest.queue_min_cores > free_cores:
                return NOTHING  # no waiting job fits the free cores: the pass would start nothing
        scan: Callable[[Job, float, BackfillLimits], Iterator[Job]] | None = None
        if ordered is view.queue and len(ordered) > self.columns_from:
            kept = fast_view(view, "queue_columns")
            if kept is not None:
                # A long queue: visit only the jobs that may be backfilled (the same ones the
                # walk would keep, in the same order; ``algorithms.queue_columns``).
                columns, now = kept.queue_columns, view.time

                def scan(head: Job, shadow: float, limits: BackfillLimits) -> Iterator[Job]:
                    return columns.backfill_scan(head.job_id, now, shadow, limits)

        with_bb = view.platform.burst_buffer > 0
        actions: list[Action] = []
        with PassScratch(view) as scratch:
            take = scratch.take

            def start(job: Job, allocation: Allocation) -> None:
                actions.append(_start((job.job_id, allocation)))
                take(job, allocation)

            easy_pass(
                itertools.chain((first,), queue),
                view.time,
                _free(view, with_bb),
                partial(scratch.allocate, self.allocator),
                start,
                partial(_releases, view, with_bb),
                with_bb=with_bb,
                cores_releases=None if with_bb else partial(self._cores_releases, view),
                scan=scan,
            )
        return _decision((tuple(actions), None)) if actions else NOTHING

    def _cores_releases(self, view: View) -> Iterator[tuple[float, int]] | None:
        """Running jobs' releases as cores alone, when they hold cores only (every job on a
        platform of cores and nothing else, else ``FastView.running_beyond_cores``)."""
        platform = view.platform
        if platform is not self._platform:
            self._platform = platform
            self._platform_cores_only = not np.asarray(platform.total)[1:].any()
        if not self._platform_cores_only:
            kept = fast_view(view, "running_beyond_cores")
            if kept is None or kept.running_beyond_cores != 0:
                return None
        now = view.time
        # ``a if a > b else b`` instead of ``max``: half the cost per running job (FURB136 off)
        return (
            (r.est_end if r.est_end > now else now, r.units * r.job.unit[0])  # noqa: FURB136
            for r in view.running
        )

    def reservation_after(
        self, view: View, starts: Sequence[Job], head: Job
    ) -> tuple[float, tuple[float, ...]]:
        """Shadow time and extra of ``head`` once ``starts`` have started now, as ``schedule``
        computes them for a queue ``starts + [head, ...]`` (burst buffer last when the
        platform has a pool)."""
        with_bb = view.platform.burst_buffer > 0
        started = sorted((view.time + job.estimate, needs(job, with_bb)) for job in starts)
        free = tuple(f - sum(t[i] for _, t in started) for i, f in enumerate(_free(view, with_bb)))
        return reservation(
            free,
            partial(_releases, view, with_bb),
            needs(head, with_bb),
            started,
            None if with_bb else partial(self._cores_releases, view),
        )


@register_scheduler
class Easy(Backfilling):
    """EASY backfilling in queue (arrival) order: :class:`Backfilling` as it stands."""

    label = "easy"
    summary = "FIFO with EASY backfilling (Mu'alem & Feitelson 2001)"


# ``Start(job_id, allocation)`` and ``Decision(actions)`` without the named tuples' Python
# ``__new__`` (a frame per start; the same tuples).
_start = partial(tuple.__new__, Start)
_decision = partial(tuple.__new__, Decision)


def _free(view: View, with_bb: bool) -> tuple[float, ...]:
    """What is free per resource, the burst-buffer pool last when ``with_bb``."""
    return (*view.free_total, view.free_bb) if with_bb else view.free_total


def _releases(view: View, with_bb: bool) -> Iterator[tuple[float, tuple[float, ...]]]:
    """Running jobs' ``(expected end, amounts)`` by expected end (a job past its estimate
    is expected to end now)."""
    now = view.time
    return (
        (r.est_end if r.est_end > now else now, needs(r.job, with_bb, r.units))  # noqa: FURB136
        for r in view.running
    )
