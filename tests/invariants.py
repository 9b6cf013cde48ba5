"""Schedule invariants every simulation must satisfy, checked from its jobs frame alone.

Import from any test (pytest puts this directory on ``sys.path``)::

    from invariants import assert_schedule_invariants

The checker and the seeded workloads live in the package (``market_hpc.testing.invariants``,
what the importable conformance suite runs) and are re-exported here. ``classic_pairs``
lists the (non-market) dispatchers every suite runs over.
"""

from __future__ import annotations

from market_hpc.testing.invariants import (
    TERMINAL,
    assert_schedule_invariants,
    can_ever_run,
    parse_nodes,
    random_workload,
    segments_of,
    unit_fits,
)

__all__ = [
    "TERMINAL",
    "assert_schedule_invariants",
    "can_ever_run",
    "canonical_runs",
    "classic_pairs",
    "parse_nodes",
    "random_workload",
    "segments_of",
    "unit_fits",
]


def classic_pairs() -> list[tuple[str, str]]:
    """Every registered non-market scheduler with every allocator it composes with."""
    from market_hpc.policies import allocators_for, scheduler_entry, scheduler_names

    return [
        (scheduler, allocator)
        for scheduler in scheduler_names()
        if not scheduler_entry(scheduler).market
        for allocator in allocators_for(scheduler)
    ]


def canonical_runs(free: list[int]) -> list[tuple[int, int, int]]:
    """Maximal runs ``(first node, count, free)`` of equal free counts (free-core index form)."""
    runs: list[list[int]] = []
    for node, value in enumerate(free):
        if runs and runs[-1][2] == value:
            runs[-1][1] += 1
        else:
            runs.append([node, 1, value])
    return [(first, count, value) for first, count, value in runs]
