"""Netti et al. (ISC'18) allocators BALANCED, WEIGHTED, PRIORITY-WEIGHTED (PRB, EBF:
``hetero_schedulers``).

The orderings are the pure functions of ``market_hpc.algorithms.hetero.orderings`` (its docstring
lists the decisions taken where the paper is silent); the schedulers PRB and EBF live in
``market_hpc.policies.hetero.schedulers``. This module holds the allocators' state:

* **Pass order.** WEIGHTED's lookahead window is the up to ``window`` jobs *after* the
  job being placed in the scheduler's order (AccaSim semantics). A scheduler
  announces that order with ``begin_pass(jobs, view)`` (SJF, FIFO, PRB and EBF do);
  without an announcement for the current view, the queue order is used.
* **Priority counters.** PRIORITY-WEIGHTED moves its counters on the outcome of every
  ``allocate`` call: every scheduler here uses an allocation it was given, so a returned
  allocation is a success and ``None`` a failure (the EBF reservation search on
  the virtual future state counts too, as in AccaSim). Schedulers that know an attempt
  must fail without calling ``allocate`` report it through ``note_failed_attempt``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from market_hpc.algorithms.allocation import place_in_order
from market_hpc.algorithms.hetero.orderings import (
    CRITICAL,
    RANK_SCALE,
    balanced_order,
    criticality_weights,
    request_mean,
    update_priorities,
    weighted_order,
    window_sums,
)
from market_hpc.domain.job import Job
from market_hpc.domain.resources import GPUS, MICS, RESOURCES
from market_hpc.errors import ConfigError, UnknownNameError
from market_hpc.parameters import POSITIVE, Param
from market_hpc.policies.allocators import SPANS_NODES, job_fits
from market_hpc.policies.base import Allocation, Allocator, View, pass_aware
from market_hpc.policies.registry import register_allocator
from market_hpc.validation import MAX_INT, Range

_CRITICAL = Param("str-list", choices=("cores", "gpus", "mics", "mem"))


def announce(allocator: Allocator, jobs: Sequence[Job], view: View) -> None:
    """Tell a pass-aware allocator the order in which jobs will be offered."""
    looking_ahead = pass_aware(allocator)
    if looking_ahead is not None:
        looking_ahead.begin_pass(jobs, view)


def _critical_columns(names: Sequence[str]) -> tuple[int, ...]:
    columns = []
    for name in names:
        if name not in RESOURCES:
            raise UnknownNameError("critical resource", name, RESOURCES)
        columns.append(RESOURCES.index(name))
    return tuple(columns)


_UNITS: dict[tuple[int, ...], np.ndarray] = {}


def unit_array(unit: tuple[int, ...]) -> np.ndarray:
    """``unit`` as an int64 array, one copy per unit shape, shared (never modify it)."""
    array = _UNITS.get(unit)
    if array is None:
        array = _UNITS[unit] = np.asarray(unit, dtype=np.int64)
    return array


# ----------------------------------------------------------------- allocators
@register_allocator
class Balanced:
    """BALANCED (Netti et al. 2018): limit and balance the use of critical nodes.

    Args:
        critical: Critical resource names, ties going to the first (AccaSim order).
    """

    name = "balanced"
    summary = "Netti et al. BALANCED: critical (GPU/MIC) nodes last, interleaved by kind"
    places = SPANS_NODES
    parameters: ClassVar[Mapping[str, Param]] = {"critical": _CRITICAL}

    def __init__(self, critical: Sequence[str] = ("mics", "gpus")) -> None:
        self.critical = _critical_columns(critical)

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Place ``job`` along the BALANCED node order of the current free resources."""
        if job.bb > view.free_bb:
            return None
        fits = job_fits(job, free, view)
        order = balanced_order(free, view.platform.capacity, fits, self.critical)
        return place_in_order(fits, order, job.units)


class _PassDemand:
    """Prefix sums of the jobs of one pass (built on the first allocation of the pass)."""

    __slots__ = ("capacity", "demand", "index", "length", "used")

    def __init__(self, jobs: Sequence[Job], view: View) -> None:
        count = len(jobs)
        durations = np.fromiter((job.estimate for job in jobs), dtype=np.float64, count=count)
        units = np.fromiter((job.units for job in jobs), dtype=np.float64, count=count)
        rows = np.array([job.unit for job in jobs], dtype=np.float64).reshape(count, len(RESOURCES))
        self.demand, self.length = window_sums(durations, units, rows)
        self.index = {job.job_id: position for position, job in enumerate(jobs)}
        total = view.platform.total
        self.capacity = total * RANK_SCALE
        # load is the state at the start of the dispatching step (AccaSim)
        self.used = (total - np.asarray(view.free_total)) * RANK_SCALE


@register_allocator
class Weighted:
    """WEIGHTED (Netti et al. 2018, eq. 1): nodes by ascending ``sum_k w_k imp_k``.

    Args:
        window: Jobs after the current one whose demand sets ``req_k`` (AccaSim: 100);
            ``None`` uses the whole queue including the current job (the paper's words).
        unit_free: Rank by ``sum_k w_k imp_k / cap_k`` instead (a non-paper ablation,
            reported as such): the paper's terms carry each kind's unit, so kinds counted in
            large numbers (cores, GB of memory) outweigh GPUs and MICs.
    """

    name = "weighted"
    summary = "Netti et al. WEIGHTED: rank nodes by leftover resources weighted by demand x load"
    places = SPANS_NODES
    parameters: ClassVar[Mapping[str, Param]] = {
        "window": Param("int", Range(1, MAX_INT, integer=True), optional=True),
        "unit_free": Param("bool"),
    }

    def __init__(self, window: int | None = 100, unit_free: bool = False) -> None:
        if window is not None and window < 0:
            raise ConfigError(f"allocator {self.name!r}: window must be >= 0 or None, got {window}")
        self.window = window
        self.unit_free = unit_free
        self._view: View | None = None
        self._jobs: Sequence[Job] = ()
        self._pass: _PassDemand | None = None

    def begin_pass(self, jobs: Sequence[Job], view: View) -> None:
        """Remember the order in which the scheduler offers jobs in this decision."""
        self._view, self._jobs, self._pass = view, jobs, None

    def weights(self, job: Job, view: View) -> np.ndarray:
        """Criticality weight per resource kind for placing ``job`` now."""
        if view is not self._view:
            self.begin_pass(list(view.queue), view)
        state = self._pass
        if state is None:
            state = self._pass = _PassDemand(self._jobs, view)
        count = len(state.length) - 1
        if self.window is None:
            start, stop = 0, count
        else:
            start = state.index.get(job.job_id, -1) + 1
            stop = min(start + self.window, count)
        demand = state.demand[stop] - state.demand[start]
        length = state.length[stop] - state.length[start]
        return criticality_weights(
            request_mean(demand, length), state.used, state.capacity, self.priority_vector()
        )

    def priority_vector(self) -> np.ndarray | None:
        """Multipliers of the weights (none for plain WEIGHTED)."""
        return None

    def allocate(self, job: Job, free: np.ndarray, view: View) -> Allocation | None:
        """Place ``job`` on the nodes with the lowest weighted leftover first."""
        allocation = None
        if job.bb <= view.free_bb:
            fits = job_fits(job, free, view)
            if fits.sum() >= job.units:
                unit = unit_array(job.unit)
                scale = _unit_free_scale(view) if self.unit_free else RANK_SCALE
                order = weighted_order(free, fits, unit, job.units, self.weights(job, view), scale)
                allocation = place_in_order(fits, order, job.units)
        self.attempted(job, allocation is not None)
        return allocation

    def attempted(self, job: Job, succeeded: bool) -> None:
        """Outcome of one allocation attempt (PRIORITY-WEIGHTED counts them)."""

    def note_failed_attempt(self, job: Job) -> None:
        """A scheduler knew an attempt for ``job`` would fail and did not make it."""
        self.attempted(job, False)


@register_allocator
class PriorityWeighted(Weighted):
    """PRIORITY-WEIGHTED (Netti et al. 2018): WEIGHTED with ``w_k`` of critical kinds
    multiplied by a counter ``p_k`` in ``[1, bound]``, +``step`` when an allocation of a
    job requesting k fails, -``step`` when it succeeds. Counters persist across steps.

    Args:
        window: As for WEIGHTED.
        critical: Critical resource names.
        bound: Upper bound of the counters (the lower bound and start value are 1).
        step: Change per attempt.
    """

    name = "priority-weighted"
    summary = "Netti et al. PRIORITY-WEIGHTED: WEIGHTED with bounded priority counters on GPU/MIC"
    parameters: ClassVar[Mapping[str, Param]] = {
        **Weighted.parameters,
        "critical": _CRITICAL,
        "bound": Param("float", POSITIVE),
        "step": Param("float", POSITIVE),
    }

    def __init__(
        self,
        window: int | None = 100,
        critical: Sequence[str] = ("gpus", "mics"),
        bound: float = 10.0,
        step: float = 1.0,
        unit_free: bool = False,
    ) -> None:
        super().__init__(window, unit_free)
        if bound < 1 or step <= 0:
            raise ConfigError(
                f"allocator {self.name!r}: needs bound >= 1 and step > 0, got {bound}, {step}"
            )
        self.critical = _critical_columns(critical)
        self.bounds = (1.0, float(bound))
        self.step = float(step)
        self.priority = np.ones(len(RESOURCES))

    def priority_vector(self) -> np.ndarray:
        """The current counters (1 for non-critical kinds)."""
        return self.priority

    def attempted(self, job: Job, succeeded: bool) -> None:
        """Move the counters of the critical kinds ``job`` requests."""
        unit = job.unit
        if any(unit[k] > 0 for k in self.critical):
            self.priority = update_priorities(
                self.priority, unit_array(unit), succeeded, self.critical, self.step, self.bounds
            )


def _unit_free_scale(view: View) -> np.ndarray:
    """Turns leftover amounts into fractions of each kind's capacity (0 for absent kinds)."""
    total = view.platform.total.astype(np.float64)
    return np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)


__all__ = [
    "CRITICAL",
    "GPUS",
    "MICS",
    "Balanced",
    "PriorityWeighted",
    "Weighted",
    "announce",
    "unit_array",
]
