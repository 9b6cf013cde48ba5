"""EASY backfilling's reservation (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).

The queue head gets a reservation at the *shadow time*: the earliest expected end of
running jobs at which enough resources are free for it. *Extra* resources are those
still free at the shadow time once the head has what it needs. A waiting job may be
backfilled when it fits now and either ends (by its estimate) by the shadow time or
uses only extra resources, so it can never delay the head's reservation.

:func:`easy_pass` is the one EASY pass of the package: ``easy`` and every
:class:`~market_hpc.policies.classic.Backfilling` order run it over the whole machine, and
the hybrid-queue dispatcher runs it once per partition under its machine-wide reservation.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple, TypeVar

from market_hpc.algorithms.queue_columns import BackfillLimits
from market_hpc.domain.job import CORE_UNIT, Job

Amounts = Sequence[float]  # integers per node resource; the burst buffer (GB) may be fractional
Release = TypeVar("Release", bound=tuple)  # type: ignore[type-arg]  # (expected_end, amount...)
Placement = TypeVar("Placement")

_END = itemgetter(0)


def merge_releases(running: Iterable[Release], started: Sequence[Release]) -> Iterable[Release]:
    """Running jobs' releases and those of the jobs started in this pass, as one stream
    sorted by end (each input sorted by end; at equal ends running jobs come first).

    >>> list(merge_releases([(5.0, 1), (9.0, 2)], [(5.0, 3), (7.0, 4)]))
    [(5.0, 1), (5.0, 3), (7.0, 4), (9.0, 2)]
    """
    return heapq.merge(running, started, key=_END) if started else running


def shadow_and_extra(
    free_total: Amounts, releases: Iterable[tuple[float, Amounts]], need: Amounts
) -> tuple[float, tuple[float, ...]]:
    """Compute the head job's shadow time and the extra resources at that time.

    Amounts are short per-resource vectors (plain tuples: cheaper than numpy at this size).

    Args:
        free_total: Free amount per resource now.
        releases: ``(expected_end, amount_released)`` of running jobs, sorted by end.
        need: What the head job needs per resource.

    Returns:
        ``(shadow_time, extra)``; ``shadow_time`` is ``inf`` when even all releases are
        not enough (the head can never run on what is running now).

    >>> releases = [(10.0, (2,)), (20.0, (3,))]
    >>> shadow_and_extra((1,), releases, (4,))
    (20.0, (2,))
    >>> shadow_and_extra((1,), releases, (9,))[0]
    inf
    >>> shadow_and_extra((0,), [(5.0, (2,)), (5.0, (2,)), (9.0, (1,))], (2,))   # ties at the shadow
    (5.0, (2,))
    """
    available = list(free_total)
    indices = range(len(available))
    shadow = float("inf")
    for end, amount in releases:
        if end > shadow:
            break  # every job ending exactly at the shadow time counts towards extra
        for i in indices:
            available[i] += amount[i]
        if shadow == float("inf") and all(available[i] >= need[i] for i in indices):
            shadow = end
    return shadow, tuple(available[i] - need[i] for i in indices)


def shadow_and_extra_cores(
    free: float, releases: Iterable[tuple[float, float]], need: float
) -> tuple[float, float]:
    """:func:`shadow_and_extra` for one resource (cores only), on plain numbers.

    >>> shadow_and_extra_cores(1, [(10.0, 2), (20.0, 3)], 4)
    (20.0, 2)
    >>> shadow_and_extra_cores(0, [(5.0, 2), (5.0, 2), (9.0, 1)], 2)   # ties at the shadow
    (5.0, 2)
    >>> shadow_and_extra_cores(1, [(10.0, 2)], 9)[0]
    inf
    """
    available = free
    shadow = float("inf")
    for end, amount in releases:
        if end > shadow:
            break  # every job ending exactly at the shadow time counts towards extra
        available += amount
        if available >= need and shadow == float("inf"):
            shadow = end
    return shadow, available - need


def may_backfill(
    now: float, estimate: float, need: Amounts, shadow: float, extra: Amounts
) -> tuple[bool, bool]:
    """Decide whether a job that fits now may be backfilled.

    Returns:
        ``(allowed, uses_extra)``: ``uses_extra`` is true when the job would still be
        running at the shadow time, so its resources must come out of ``extra``.

    >>> may_backfill(0.0, 5.0, (3,), 10.0, (0,))
    (True, False)
    >>> may_backfill(0.0, 15.0, (3,), 10.0, (2,))
    (False, True)
    >>> may_backfill(0.0, 15.0, (2,), 10.0, (2,))
    (True, True)
    """
    if now + estimate <= shadow:
        return True, False
    return all(n <= e for n, e in zip(need, extra)), True


class Reservation(NamedTuple):
    """A head job's shadow time and the extra amounts at it, per resource."""

    shadow: float
    extra: tuple[float, ...]


NO_RESERVATION = Reservation(math.inf, ())
"""No reservation to honour: every job may start."""


def totals(unit: tuple[int, ...], units: int) -> tuple[int, ...]:
    """What ``units`` units of ``unit`` take, per node resource.

    >>> totals((1, 0, 0, 0), 3), totals((2, 1, 0, 8), 3)
    ((3, 0, 0, 0), (6, 3, 0, 24))
    """
    return (units, 0, 0, 0) if unit == CORE_UNIT else tuple(units * amount for amount in unit)


def needs(job: Job, with_bb: bool = False, units: int | None = None) -> tuple[float, ...]:
    """What ``job`` takes per node resource on ``units`` units (default: its request), its
    burst buffer last when ``with_bb``.

    >>> needs(Job(1, 0.0, 5.0, 5.0, units=2, bb=3.0), with_bb=True)
    (2, 0, 0, 0, 3.0)
    """
    amounts = totals(job.unit, job.units if units is None else units)
    return (*amounts, job.bb) if with_bb else amounts


def reservation(
    free: Amounts,
    releases: Callable[[], Iterable[tuple[float, Amounts]]],
    need: Amounts,
    started: Sequence[tuple[float, Amounts]] = (),
    cores_releases: Callable[[], Iterable[tuple[float, float]] | None] | None = None,
) -> Reservation:
    """The reservation of a head job that needs ``need``.

    Args:
        free: What is free per resource once ``started`` have started.
        releases: Running jobs' ``(expected_end, amounts)``, sorted by end (called once).
        need: What the head needs per resource.
        started: ``(expected_end, amounts)`` of the jobs started now, sorted.
        cores_releases: The same releases as cores alone, or ``None`` when some running
            job holds more than cores (burst buffer included). When the head and
            ``started`` ask for cores only, the walk runs on plain numbers (same result;
            other resources keep ``free``).

    >>> free, running = (1, 0, 0, 0), lambda: [(10.0, (2, 0, 0, 0)), (20.0, (3, 0, 0, 0))]
    >>> reservation(free, running, (4, 0, 0, 0))
    Reservation(shadow=20.0, extra=(2, 0, 0, 0))
    >>> reservation(free, running, (4, 0, 0, 0), cores_releases=lambda: [(10.0, 2), (20.0, 3)])
    Reservation(shadow=20.0, extra=(2, 0, 0, 0))
    """
    if (
        cores_releases is not None
        and not any(need[1:])
        and all(not any(amounts[1:]) for _, amounts in started)
    ):
        cores = cores_releases()
        if cores is not None:
            started_cores = [(end, amounts[0]) for end, amounts in started]
            shadow, extra_cores = shadow_and_extra_cores(
                free[0], merge_releases(cores, started_cores), need[0]
            )
            return Reservation(shadow, (extra_cores, *free[1:]))
    return Reservation(*shadow_and_extra(free, merge_releases(releases(), started), need))


def _less(amounts: tuple[float, ...], need: Amounts) -> tuple[float, ...]:
    return tuple(a - n for a, n in zip(amounts, need))


def easy_pass(
    jobs: Iterable[Job],
    now: float,
    free: Amounts,
    place: Callable[[Job], Placement | None],
    start: Callable[[Job, Placement], object],
    releases: Callable[[], Iterable[tuple[float, Amounts]]],
    *,
    with_bb: bool = False,
    cores_releases: Callable[[], Iterable[tuple[float, float]] | None] | None = None,
    recount: Callable[[], Amounts] | None = None,
    scan: Callable[[Job, float, BackfillLimits], Iterable[Job]] | None = None,
    outer: Reservation = NO_RESERVATION,
) -> Reservation:
    """Run one EASY backfilling pass over ``jobs`` (in the order to serve them).

    Jobs start in order while they fit (``place`` finds room, then ``start`` takes it).
    The first that does not is the head: it gets a :func:`reservation` from the running
    jobs and this pass's starts, and every later job is backfilled, in order, when it
    fits now and either ends by the shadow time or fits the extra (which it then uses).
    Every resource type counts: amounts are :func:`needs` vectors, the burst buffer last
    when ``with_bb``.

    Args:
        jobs: The waiting jobs in the order to serve them.
        now: The current time.
        free: What is free per resource (the layout of :func:`needs`).
        place: Where a job goes on what this pass has left, or ``None``.
        start: Take a placement and record the start.
        releases: Running jobs' releases, sorted by end (read only when there is a head).
        with_bb: Whether the shared burst buffer is the last resource.
        cores_releases: See :func:`reservation`.
        recount: What is free once the in-order starts are taken, when that is not
            ``free`` minus their needs (node-exclusive starts take whole nodes).
        scan: ``scan(head, shadow, limits)``: the jobs behind the head that may be
            backfilled under ``limits`` (``QueueColumns.backfill_scan``), lowered as the
            walk starts jobs; replaces the walk over the rest of ``jobs``.
        outer: Another reservation every start must respect (ends by its shadow time
            or fits its extra), e.g. a machine-wide one over a partition's pass.

    Returns:
        ``outer`` less what the pass's starts took of its extra.

    >>> jobs = [Job(1, 0.0, 9.0, 9.0, units=2), Job(2, 0.0, 9.0, 9.0, units=4),
    ...         Job(3, 0.0, 10.0, 10.0, units=1), Job(4, 0.0, 2.0, 2.0, units=1)]
    >>> free, started = [3], []
    >>> def place(job): return job.units if job.units <= free[0] else None
    >>> def start(job, units): free[0] -= units; started.append(job.job_id)
    >>> easy_pass(jobs, 0.0, (3, 0, 0, 0), place, start, lambda: [(5.0, (1, 0, 0, 0))])
    Reservation(shadow=inf, extra=())
    >>> started   # 2 waits for 1's cores (shadow 9.0, no extra); 3 would delay it, 4 ends by then
    [1, 4]
    """
    shadow_out, extra_out = outer
    bounded = shadow_out < math.inf
    free_cores = free[0]
    free_bb = free[-1] if with_bb else math.inf
    started: list[tuple[float, tuple[float, ...]]] = []
    remaining = iter(jobs)
    head = None
    for job in remaining:
        uses_outer = False
        if bounded:
            need = needs(job, with_bb)
            allowed, uses_outer = may_backfill(now, job.estimate, need, shadow_out, extra_out)
            if not allowed:
                head = job
                break
        cores = job.units * job.unit[0]
        placement = place(job) if cores <= free_cores and job.bb <= free_bb else None
        if placement is None:
            head = job
            break
        start(job, placement)
        if not bounded:  # (a job's needs, read once it has started: never the head's here)
            # needs(job, with_bb), without its two calls for a plain core job
            plain = not with_bb and job.unit == CORE_UNIT
            need = (cores, 0, 0, 0) if plain else needs(job, with_bb)
        free_cores -= cores
        free_bb -= job.bb
        started.append((now + job.estimate, need))
        if uses_outer:
            extra_out = _less(extra_out, need)
    if head is None:
        return Reservation(shadow_out, extra_out)
    if recount is not None:
        left = tuple(recount())
    elif free_cores <= 0:  # nothing can backfill (what else is free does not matter)
        return Reservation(shadow_out, extra_out)
    elif started:
        left = tuple(f - sum(amounts[i] for _, amounts in started) for i, f in enumerate(free))
    else:
        left = tuple(free)
    free_cores = left[0]
    if free_cores <= 0:  # nothing can backfill
        return Reservation(shadow_out, extra_out)
    free_bb = left[-1] if with_bb else math.inf
    shadow, extra = reservation(
        left, releases, needs(head, with_bb), sorted(started), cores_releases
    )
    limits = None
    candidates: Iterable[Job] = remaining
    if scan is not None:
        limits = BackfillLimits(free_cores, extra[0], free_bb, extra[-1] if with_bb else math.inf)
        candidates = scan(head, shadow, limits)
    # A core job without burst buffer fits the extra when its cores do and no other
    # resource's extra is negative (``may_backfill`` on plain numbers).
    others_fit = with_bb or all(e >= 0 for e in extra[1:])
    backfill: Iterator[Job] = iter(candidates)
    wanted: tuple[float, ...] | None
    for job in backfill:  # (``continue`` early: most candidates of a long queue are refused)
        cores = job.units * job.unit[0]
        if cores > free_cores or job.bb > free_bb:
            continue
        if now + job.estimate <= shadow:
            uses_extra, wanted = False, None
        elif not with_bb and job.unit == CORE_UNIT:
            if cores > extra[0] or not others_fit:
                continue
            uses_extra, wanted = True, (cores, 0, 0, 0)
        else:
            wanted = needs(job, with_bb)
            allowed, uses_extra = may_backfill(now, job.estimate, wanted, shadow, extra)
            if not allowed:
                continue
        uses_outer = False
        if bounded:
            wanted = wanted or needs(job, with_bb)
            allowed, uses_outer = may_backfill(now, job.estimate, wanted, shadow_out, extra_out)
            if not allowed:
                continue
        placement = place(job)
        if placement is None:
            continue
        start(job, placement)
        free_cores -= cores
        free_bb -= job.bb
        if uses_extra:
            assert wanted is not None
            extra = _less(extra, wanted)
            others_fit = with_bb or all(e >= 0 for e in extra[1:])
        if uses_outer:
            assert wanted is not None
            extra_out = _less(extra_out, wanted)
        if limits is not None:
            limits.free_cores, limits.extra_cores = free_cores, extra[0]
            if with_bb:
                limits.free_bb, limits.extra_bb = free_bb, extra[-1]
        if free_cores <= 0:
            break
    return Reservation(shadow_out, extra_out)
