"""Market-inspired allocation maths (Singh, Dziurzanski & Indrusiak, HPCS 2015).

Pure functions over plain data: profits of moldable jobs on a number of cores and the
records the auction and the holding rule share (the holding rule itself, Algorithm 3, is
``algorithms.market_holding``). Decisions where the paper is
silent follow ``shared/spec/002-market-hold-resume.md`` and are named by its item (A1..A32).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Curve(Protocol):
    """What the market needs of a value curve (see ``algorithms.valuecurve``)."""

    max_value: float

    @property
    def zero_time(self) -> float: ...
    def value_at(self, elapsed: float) -> float: ...
    def remaining_value(self, elapsed: float) -> float: ...


def c_star(profile: Sequence[float]) -> int:
    """Smallest core count reaching the minimum response time (saturation).

    >>> c_star((86, 43, 29, 23, 19, 17, 15, 15, 15))   # Table II, j1
    7
    >>> c_star((74, 37, 26, 25, 25))                    # Table II, j4
    4
    """
    best = min(profile)
    return next(c for c, rt in enumerate(profile, start=1) if rt == best)


def remaining_time(profile: Sequence[float], cores: int, progress: float) -> float:
    """Time to finish on ``cores`` cores with ``progress`` of the work done (work carries over).

    A job on c cores progresses at 1/RT(c) per time unit; a resumed job needs
    ``ceil((1 - progress) * RT(c))`` so segments stay on the integer time grid.

    >>> remaining_time((10, 6, 4), 2, 0.0)
    6
    >>> remaining_time((10, 6, 4), 3, 0.5)
    2.0
    >>> remaining_time((10, 6, 4), 2, 0.25)
    5.0
    """
    full = profile[cores - 1]
    if progress == 0.0:
        return full
    return float(math.ceil((1.0 - progress) * full - 1e-9))


def profit(
    curve: Curve,
    now: float,
    arrival: float,
    profile: Sequence[float],
    cores: int,
    progress: float = 0.0,
) -> float:
    """Value earned if the job starts now on ``cores`` cores (the value at the
    projected completion, relative to arrival).

    >>> from market_hpc.algorithms.valuecurve import StepCurve
    >>> profit(StepCurve(500.0, 15.0), now=0, arrival=0, profile=(30, 15), cores=2)
    500.0
    >>> profit(StepCurve(500.0, 15.0), now=0, arrival=0, profile=(30, 15), cores=1)
    0.0
    """
    return float(curve.value_at(now + remaining_time(profile, cores, progress) - arrival))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A queued job as the market sees it at one instant.

    Attributes:
        job_id: Job id.
        arrival: Arrival time (value curves are relative to it).
        curve: Value curve.
        profile: Response time on 1..len(profile) cores.
        progress: Work fraction done before (held jobs).
        recent: Arrived at this instant and never held (may trigger holding, A12/A13).
        best_cores: c*, the cores that give the maximum profit / parallelism (A4).
        unit: Resources of one unit (cores, GPUs, MICs, memory); a width counts units.
        bb: Burst-buffer request (GB), from the shared pool.
        spans: Whether it may span nodes (``algorithms.market_offers``).
        holds: Times it was held (its next start pays ``resume_overhead``).
    """

    job_id: int
    arrival: float
    curve: Curve
    profile: tuple[float, ...]
    progress: float
    recent: bool
    best_cores: int
    unit: tuple[int, ...] = (1, 0, 0, 0)
    bb: float = 0.0
    spans: bool = False
    holds: int = 0


@dataclass(frozen=True, slots=True)
class Executing:
    """A running job that might be held.

    Attributes:
        job_id: Job id.
        node: Node it runs on.
        cores: Cores it holds.
        start: Start of its current segment (A28).
        seq: Start order (tie-break among equal start times: later seq is later).
        expected_value: Value it was expected to earn at its planned finish (A9's Loss).
        max_value: Its curve's maximum (the penalty base, A14).
        allocation: Where it runs, ``((node, units), ...)``; empty: ``cores`` units on
            ``node`` (the cores-only auction's form).
        unit: Resources of one of its units (a hold frees ``units * unit`` on each node).
        bb: Its burst-buffer request (a hold frees it too).
    """

    job_id: int
    node: int
    cores: int
    start: float
    seq: int
    expected_value: float
    max_value: float
    allocation: tuple[tuple[int, int], ...] = ()
    unit: tuple[int, ...] = (1, 0, 0, 0)
    bb: float = 0.0


@dataclass(frozen=True, slots=True)
class HoldPlan:
    """The best holding instance found by Algorithm 3 (``algorithms.market_holding``)."""

    job_id: int
    node: int
    held: tuple[int, ...]
    cores: int
    net_profit: float
    profit: float
