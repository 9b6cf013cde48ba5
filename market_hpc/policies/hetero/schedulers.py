"""Netti et al. (ISC'18) schedulers: PRB (Borghesi et al.) and EBF (AccaSim's EASY backfilling).

Both compose with every allocator and announce their pass order to pass-aware ones
(``market_hpc.policies.hetero.allocators``). Neither calls ``allocate`` twice for a shape that
already failed in a pass: within a pass free resources only shrink, and every
registered allocator succeeds exactly when the nodes together take enough units, so a
unit shape that failed with ``U`` units fails again with ``U`` or more (the skipped
attempt is still reported to PRIORITY-WEIGHTED through ``note_failed_attempt``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np

from market_hpc.algorithms.hetero.orderings import job_demand, prb_order
from market_hpc.domain.job import Job
from market_hpc.domain.resources import RESOURCES
from market_hpc.errors import ConfigError
from market_hpc.parameters import Param
from market_hpc.policies.allocators import job_fits
from market_hpc.policies.base import (
    NOTHING,
    Action,
    Allocation,
    Allocator,
    Decision,
    PolicyBase,
    Start,
    View,
    failure_counting,
    fast_view,
    pass_aware,
)
from market_hpc.policies.capabilities import HETEROGENEITY
from market_hpc.policies.hetero.allocators import announce, unit_array
from market_hpc.policies.pass_view import PassView
from market_hpc.policies.registry import register_scheduler
from market_hpc.policies.scratch import take_dense
from market_hpc.validation import Range

DEFAULT_EXPECTED_WAIT = 1800.0
"""PRB's expected queue wait when none is known (AccaSim's default)."""


class _Arena:
    """A scratch free array for one pass and the unit shapes known to fail on it."""

    __slots__ = ("failed", "free")

    def __init__(self, free: np.ndarray) -> None:
        self.free = free
        self.failed: dict[tuple[int, ...], int] = {}

    def attempt(self, allocator: Allocator, job: Job, view: View) -> Allocation | None:
        limit = self.failed.get(job.unit)
        if limit is not None and job.units >= limit:
            note_failure(allocator, job)
            return None
        allocation = allocator.allocate(job, self.free, view)
        if allocation is None and job.bb <= view.free_bb:
            self.failed[job.unit] = job.units if limit is None else min(limit, job.units)
        return allocation


def take_nodes(free: np.ndarray, job: Job, allocation: Allocation, view: View) -> np.ndarray:
    """Subtract an allocation from a scratch free array; return its node indices."""
    take_dense(free, job, allocation, view.exclusive)
    return np.fromiter((node for node, _ in allocation), dtype=np.int64, count=len(allocation))


def _skips_unplaceable(allocator: Allocator) -> bool:
    """Whether a pass may leave out the jobs that ask for more cores or burst buffer than
    are free: no allocator places them, and this one neither looks ahead along the pass
    (``begin_pass``) nor counts failed attempts (``note_failed_attempt``)."""
    return pass_aware(allocator) is None and failure_counting(allocator) is None


def placeable(
    view: View, jobs: Sequence[Job], free_cores: float, free_bb: float, after: Job | None = None
) -> list[Job]:
    """``jobs`` (the waiting jobs in queue order, or those behind ``after``) asking for
    no more than ``free_cores`` cores and ``free_bb`` of burst buffer; from the queue's
    columns (``view.queue_columns``) when the view keeps them and the list is long."""
    kept = fast_view(view, "queue_columns") if len(jobs) > 64 else None
    if kept is not None:
        return kept.queue_columns.fitting(
            free_cores, free_bb, None if after is None else after.job_id
        )
    return [job for job in jobs if job.cores <= free_cores and job.bb <= free_bb]


class _Behind:
    """The rest of a queue being read (an iterator) with its length: ``placeable`` reads
    the queue's columns instead of it when it is long."""

    __slots__ = ("_jobs", "_length")

    def __init__(self, jobs: Iterator[Job], length: int) -> None:
        self._jobs, self._length = jobs, length

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Job]:
        return self._jobs


@register_scheduler
class Prb(PolicyBase):
    """Priority Rule-Based scheduling (Borghesi et al., as in Netti et al. 2018).

    Jobs are ordered by urgency (waiting time over their queue's expected waiting time),
    ties by demand; every job is tried in that order and a job that does not fit is
    skipped (non-blocking).

    Args:
        allocator: Where jobs go.
        expected_wait: Expected waiting time (s) per queue id; queues not listed use
            ``default_wait``. With no data every queue gets the default and PRB becomes
            "longest waiting first" (as in AccaSim).
        default_wait: The expected wait of queues without data.
    """

    label = "prb"
    handles = HETEROGENEITY
    summary = "Netti et al. PRB: longest wait relative to the queue's expected wait first; skips"

    parameters: ClassVar[Mapping[str, Param]] = {  # CPH's too
        "expected_wait": Param("wait-table", optional=True),
        "default_wait": Param("float", Range(0.0, 2.0**50, low_open=True)),
    }

    def __init__(
        self,
        allocator: Allocator,
        expected_wait: Mapping[int, float] | None = None,
        default_wait: float = DEFAULT_EXPECTED_WAIT,
    ) -> None:
        waits = dict(expected_wait or {})
        if default_wait <= 0 or any(w <= 0 for w in waits.values()):
            raise ConfigError(
                f"scheduler 'prb': expected waits must be > 0, got {waits} / {default_wait}"
            )
        self.allocator = allocator
        self.expected_wait = waits
        self.default_wait = float(default_wait)
        self.name = f"prb+{allocator.name}"

    def order(self, jobs: Sequence[Job], now: float, max_wait: float | None = None) -> list[Job]:
        """The queued jobs in PRB order (``max_wait``: the longest expected wait of the
        whole queue when ``jobs`` is part of it)."""
        count = len(jobs)
        submit = np.fromiter((job.submit for job in jobs), dtype=np.float64, count=count)
        waits = self.expected_wait
        ewt = np.fromiter(
            (waits.get(job.queue, self.default_wait) for job in jobs), dtype=np.float64, count=count
        )
        units = np.fromiter((job.units for job in jobs), dtype=np.float64, count=count)
        estimate = np.fromiter((job.estimate for job in jobs), dtype=np.float64, count=count)
        rows = np.array([job.unit for job in jobs], dtype=np.float64).reshape(count, len(RESOURCES))
        positions = prb_order(now, submit, ewt, job_demand(units, rows, estimate), max_wait)
        return [jobs[i] for i in positions.tolist()]

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Start every queued job the allocator places, most urgent first."""
        if view.free_total[0] == 0:
            if failure_counting(self.allocator) is not None:
                for job in view.queue:  # every attempt fails; the counters still see it
                    note_failure(self.allocator, job)
            return NOTHING
        queue = list(view.queue)
        if _skips_unplaceable(self.allocator) and queue:
            # Every job is tried, but those asking for more than is free fail: order the others
            # (as the whole queue orders them: same longest expected wait).
            waits = self.expected_wait
            longest = (
                max(waits.get(job.queue, self.default_wait) for job in queue)
                if waits
                else self.default_wait
            )
            tried = placeable(view, queue, view.free_total[0], view.free_bb)
            ordered = self.order(tried, view.time, longest)
        else:
            ordered = self.order(queue, view.time)
        announce(self.allocator, ordered, view)
        arena = _Arena(view.free.copy())
        passing = PassView(view)  # the burst buffer this pass leaves
        actions: list[Action] = []
        for job in ordered:
            allocation = arena.attempt(self.allocator, job, cast(View, passing))
            if allocation is not None:
                actions.append(Start(job.job_id, allocation))
                take_nodes(arena.free, job, allocation, view)
                passing.take(job)
        return Decision(tuple(actions)) if actions else NOTHING


def note_failure(allocator: Allocator, job: Job) -> None:
    """Report an attempt that failed without ``allocate`` to an allocator that counts them
    (:class:`~market_hpc.policies.base.FailureCountingAllocator`)."""
    counting = failure_counting(allocator)
    if counting is not None:
        counting.note_failed_attempt(job)


Release = tuple[float, Allocation, tuple[int, ...], float]  # end, allocation, unit, burst buffer


@register_scheduler
class Ebf(PolicyBase):
    """EASY backfilling as AccaSim implements it for Netti et al. (2018), static reservation.

    Jobs start in arrival order until one does not fit. That job is *blocked* and gets a
    reservation: the earliest predicted end of running jobs (a job past its prediction is
    expected to end now; jobs started in this step count with ``now + estimate``) at
    which the allocator, run on the virtual future free resources, places it; the
    reservation is those nodes at that time. Later jobs are backfilled in arrival order,
    skipping those that do not fit: a job predicted to end by the reservation time may
    use any free resource, any other job no reserved node at all.

    With ``static_reservation`` (AccaSim, the default) the reservation is never
    recomputed and the blocked job is tried again only from the reservation time on
    (every decision after it until it starts); the scheduler asks to be woken at the
    reservation time (AccaSim waits for the next submission or completion instead).
    Without it, the head is tried and its reservation recomputed at every decision
    (classic EASY with node-level reservations).

    Args:
        allocator: Where jobs go, and where the reservation is placed.
        static_reservation: Keep a reservation until its job starts.
    """

    label = "ebf"
    handles = HETEROGENEITY
    summary = "Netti et al. EBF: EASY backfilling, reservation placed by the allocator (AccaSim)"

    parameters: ClassVar[Mapping[str, Param]] = {"static_reservation": Param("bool")}

    def __init__(self, allocator: Allocator, static_reservation: bool = True) -> None:
        self.allocator = allocator
        self.static_reservation = static_reservation
        self.name = f"ebf+{allocator.name}"
        self._clear()

    def _clear(self) -> None:
        self.blocked: int | None = None
        self.reserved_at = math.inf
        self.reserved_nodes = np.zeros(0, dtype=np.int64)

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Start, reserve and backfill as described in the class docstring.

        The queue is read lazily: from its head while jobs start, then (with an allocator
        that skips what cannot fit) only the jobs the queue's columns say may fit, so a
        blocked decision does not copy the whole queue.
        """
        now = view.time
        waiting = view.queue
        if not waiting:
            return NOTHING
        ahead = iter(waiting)
        head = next(ahead)
        skips = _skips_unplaceable(self.allocator)
        if not self.static_reservation or (
            self.blocked is not None and head.job_id != self.blocked
        ):
            self._clear()
        arena = _Arena(view.free.copy())
        passing = PassView(view)  # the burst buffer this pass leaves
        actions: list[Action] = []
        started: list[Release] = []

        def start(job: Job, allocation: Allocation) -> np.ndarray:
            actions.append(Start(job.job_id, allocation))
            started.append((now + job.estimate, allocation, job.unit, job.bb))
            passing.take(job)
            return take_nodes(arena.free, job, allocation, view)

        position = 0  # queue position of ``head``
        if self.blocked is not None and now >= self.reserved_at:
            announce(self.allocator, [head], view)
            allocation = arena.attempt(self.allocator, head, cast(View, passing))
            if allocation is not None:
                start(head, allocation)
                self._clear()
                following = next(ahead, None)
                if following is None:
                    return Decision(tuple(actions))
                position, head = 1, following
        if self.blocked is None:
            if not skips:  # a pass-aware allocator is told the whole pass
                rest = [head, *ahead]
                announce(self.allocator, rest, view)
                ahead = iter(rest)
                head = next(ahead)
            while True:
                allocation = arena.attempt(self.allocator, head, cast(View, passing))
                if allocation is None:
                    break
                start(head, allocation)
                position += 1
                following = next(ahead, None)
                if following is None:
                    return Decision(tuple(actions)) if actions else NOTHING
                head = following
            self.blocked = head.job_id
            self._reserve(passing, arena.free, head, started)
        behind: Sequence[Job]
        free_cores = int(arena.free[:, 0].sum())
        if skips:  # jobs asking for more than is free are never placed
            tail = cast(Sequence[Job], _Behind(ahead, len(waiting) - position - 1))
            behind = placeable(view, tail, free_cores, passing.free_bb, after=head)
        else:
            behind = list(ahead)
        self._backfill(cast(View, passing), arena, behind, start, free_cores if skips else None)
        wake = self.reserved_at if now < self.reserved_at < math.inf else None
        return Decision(tuple(actions), wake) if actions or wake is not None else NOTHING

    def _reserve(
        self, passing: PassView, free: np.ndarray, head: Job, started: list[Release]
    ) -> None:
        """Place ``head`` on the predicted future free resources (nodes and burst
        buffer), earliest time first."""
        view = cast(View, passing)
        releases: list[Release] = [
            (view.expected_end(r), r.allocation, r.job.unit, r.job.bb) for r in view.running
        ]
        releases.extend(started)
        releases.sort(key=lambda release: release[0])
        virtual = free.copy()
        future = PassView(passing.view)  # the burst buffer free at each release time
        future.free_bb = passing.free_bb
        capacity = view.platform.capacity
        for index, (end, held, unit, bb) in enumerate(releases):
            pairs = np.array(held, dtype=np.int64)
            if view.exclusive:
                virtual[pairs[:, 0]] = capacity[pairs[:, 0]]
            else:
                virtual[pairs[:, 0]] += pairs[:, 1, None] * unit_array(unit)
            future.free_bb += bb
            if index + 1 < len(releases) and releases[index + 1][0] == end:
                continue  # release everything ending at the same time first
            if job_fits(head, virtual, view).sum() < head.units or head.bb > future.free_bb:
                continue
            announce(self.allocator, [head], view)
            reservation = self.allocator.allocate(head, virtual, cast(View, future))
            if reservation is not None:
                self.reserved_at = end
                self.reserved_nodes = np.array([node for node, _ in reservation], dtype=np.int64)
                return
        # no predicted time (estimates disagree with the pool): retry the head next time
        self._clear()

    def _backfill(
        self, view: View, inside: _Arena, jobs: Sequence[Job], start: Any, free_cores: int | None
    ) -> None:
        """Backfill ``jobs`` in order; with ``free_cores`` (an allocator that never places
        a job asking for more cores than are free) jobs asking for more than the pass has
        left are passed over without an attempt."""
        if not jobs:
            return
        announce(self.allocator, jobs, view)
        reserved = self.reserved_nodes
        outside = _Arena(inside.free.copy())
        outside.free[reserved] = 0
        now, reserved_at = view.time, self.reserved_at
        for job in jobs:
            if free_cores is not None and job.cores > free_cores:
                continue
            arena = inside if now + job.estimate <= reserved_at else outside
            allocation = arena.attempt(self.allocator, job, view)
            if allocation is not None:
                nodes = start(job, allocation)
                outside.free[nodes] = inside.free[nodes]
                outside.free[reserved] = 0
                if free_cores is not None:
                    free_cores = int(inside.free[:, 0].sum())


__all__ = ["DEFAULT_EXPECTED_WAIT", "Ebf", "Prb", "note_failure", "placeable", "take_nodes"]
