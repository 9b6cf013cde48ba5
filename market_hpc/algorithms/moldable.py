"""Moldable EASY: when a moldable queue head should start narrow instead of waiting.

The fair EASY baseline for the market may mold jobs as the market does. A
moldable job's response time on ``c`` cores is ``profile[c - 1]``; EASY reserves the
head job's requested width at the shadow time. Starting it *now* on the cores free now is
better when it then completes no later than it would from its reservation (the
"earliest completion" rule of moldable job scheduling, e.g. Cirne & Berman, 2002).
Pure functions of plain data.
"""

from __future__ import annotations

from collections.abc import Sequence


def scaled_profile(profile: Sequence[float], estimate: float, run_time: float) -> tuple[float, ...]:
    """What a scheduler told ``estimate`` for a job that really runs ``run_time`` expects.

    The profile's shape (speedup) is kept and scaled by ``estimate / run_time``: a user
    who asked for twice the real run time is believed twice as slow on every width.

    >>> scaled_profile((100.0, 60.0, 40.0), estimate=80.0, run_time=40.0)
    (200.0, 120.0, 80.0)
    """
    factor = estimate / run_time if run_time > 0 else 1.0
    return tuple(t * factor for t in profile)


def mold_width(
    expected: Sequence[float], requested: int, free_now: int, now: float, shadow: float
) -> int:
    """Cores to start a head job on now, or 0 to keep waiting for its reservation.

    Args:
        expected: Expected response time on ``1..len(expected)`` cores.
        requested: Width the job asked for (its reservation's width).
        free_now: Cores free on the node it would start on now.
        now: Current time.
        shadow: Its reservation (EASY's shadow time at the requested width).

    >>> mold_width((100.0, 60.0, 40.0), requested=3, free_now=2, now=0.0, shadow=30.0)
    2
    >>> mold_width((100.0, 60.0, 40.0), requested=3, free_now=2, now=0.0, shadow=10.0)
    0
    >>> mold_width((100.0, 60.0, 40.0), requested=3, free_now=5, now=0.0, shadow=99.0)
    3
    """
    width = min(free_now, requested)
    if width < 1:
        return 0
    if width == requested:
        return width
    return width if now + expected[width - 1] <= shadow + expected[requested - 1] else 0
