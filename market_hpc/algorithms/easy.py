"""EASY backfilling's reservation (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).

The queue head gets a reservation at the *shadow time*: the earliest expected end of
running jobs at which enough resources are free for it. *Extra* resources are those
still free at the shadow time once the head has what it needs. A waiting job may be
backfilled when it fits now and either ends (by its estimate) by the shadow time or
uses only extra resources, so it can never delay the head's reservation.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import TypeVar

Amounts = Sequence[float]  # integers per node resource; the burst buffer (GB) may be fractional
Release = TypeVar("Release", bound=tuple)  # type: ignore[type-arg]  # (expected_end, amount...)

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
