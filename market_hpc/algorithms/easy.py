"""EASY backfilling's reservation (Mu'alem & Feitelson, IEEE TPDS 12(6), 2001).

The queue head gets a reservation at the *shadow time*: the earliest expected end of
running jobs at which enough resources are free for it. *Extra* resources are those
still free at the shadow time once the head has what it needs. A waiting job may be
backfilled when it fits now and either ends (by its estimate) by the shadow time or
uses only extra resources, so it can never delay the head's reservation.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def shadow_and_extra(
    free_total: np.ndarray, releases: Iterable[tuple[float, np.ndarray]], need: np.ndarray
) -> tuple[float, np.ndarray]:
    """Compute the head job's shadow time and the extra resources at that time.

    Args:
        free_total: Free amount per resource now.
        releases: ``(expected_end, amount_released)`` of running jobs, sorted by end.
        need: What the head job needs per resource.

    Returns:
        ``(shadow_time, extra)``; ``shadow_time`` is ``inf`` when even all releases are
        not enough (the head can never run on what is running now).

    >>> releases = [(10.0, np.array([2])), (20.0, np.array([3]))]
    >>> shadow_and_extra(np.array([1]), releases, np.array([4]))
    (20.0, array([2]))
    >>> shadow_and_extra(np.array([1]), releases, np.array([9]))[0]
    inf
    """
    available = free_total.copy()
    for end, amount in releases:
        available += amount
        if (available >= need).all():
            return end, available - need
    return float("inf"), available - need


def may_backfill(
    now: float, estimate: float, need: np.ndarray, shadow: float, extra: np.ndarray
) -> tuple[bool, bool]:
    """Decide whether a job that fits now may be backfilled.

    Returns:
        ``(allowed, uses_extra)``: ``uses_extra`` is true when the job would still be
        running at the shadow time, so its resources must come out of ``extra``.

    >>> may_backfill(0.0, 5.0, np.array([3]), 10.0, np.array([0]))
    (True, False)
    >>> may_backfill(0.0, 15.0, np.array([3]), 10.0, np.array([2]))
    (False, True)
    >>> may_backfill(0.0, 15.0, np.array([2]), 10.0, np.array([2]))
    (True, True)
    """
    if now + estimate <= shadow:
        return True, False
    return bool((need <= extra).all()), True
