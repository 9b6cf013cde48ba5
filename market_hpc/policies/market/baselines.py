"""Fair EASY baselines for the market dispatchers.

The market policies mold jobs (any width up to ``c*`` on one node) and read the jobs'
profiles. Plain EASY runs every job rigidly at its requested width. ``easy-mold`` is EASY
given the same moldability: jobs start in queue order at their requested width; a head
job that does not fit starts narrower now when that completes no later than its
reservation would (``algorithms.moldable.mold_width``), else it keeps its reservation at
the shadow time; later jobs backfill, molded down to the free cores, when they end by the
shadow time or fit in the extra cores. What it *knows* is the scheduler's estimate
(``job.estimate``, the user's request unless ``policy.predictor`` replaces it, e.g.
``real``): every width's response time is the profile's scaled by ``estimate / run_time``
(``algorithms.moldable.scaled_profile``), so with exact estimates it knows what the
market knows.

Decisions where nothing is prescribed:

- a job's requested width is ``len(profile)`` (a market-rule trace job's request;
  a task-graph job's task count);
- jobs run on one node, the one with the most free cores (as the auction's winner; with
  whole nodes per job, ``exclusive``, a node it starts a job on has nothing left); a job
  that spans nodes (``spans_nodes``, the market rule's trace jobs) takes the free cores of
  the nodes with the most free cores first, as many nodes as it needs (not with
  ``exclusive``);
  shadow and extra are computed on platform totals, exact on one-pool platforms
  (``nodes=1,cores=N``, the market's view of a trace machine);
- the burst buffer is checked, not reserved: a job starts only when its request fits the
  free pool (a head job that does not fit waits; backfilled jobs must fit what is left),
  while the head's shadow time counts cores only;
- it never drops or holds jobs: it runs worthless jobs too (the differences are listed in
  ``docs/market.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np

from market_hpc.algorithms.easy import shadow_and_extra
from market_hpc.algorithms.moldable import mold_width, scaled_profile
from market_hpc.domain.job import Job
from market_hpc.errors import ConfigError
from market_hpc.parameters import FRACTION, Param
from market_hpc.policies.base import NOTHING, Action, Allocator, Decision, PolicyBase, Start, View
from market_hpc.policies.capabilities import MARKET_BASELINE
from market_hpc.policies.registry import register_scheduler


class MoldableEasy(PolicyBase):
    """EASY backfilling over moldable jobs (see the module docstring).

    Args:
        allocator: Must be ``max-bid`` (one node, the one with the most free cores).
    """

    label = "easy-mold"
    summary = "EASY backfilling with the market's moldability (fair market baseline)"
    handles = MARKET_BASELINE
    allocators = ("max-bid",)
    default_allocator = "max-bid"
    market = True
    parameters: ClassVar[Mapping[str, Param]] = {"penalty": Param("float", FRACTION)}

    def __init__(self, allocator: Allocator, penalty: float = 0.0) -> None:
        self.allocator = allocator
        self.name = "easy-mold"

    def decide(self, view: View, rng: np.random.Generator) -> Decision:
        """Start jobs in order (molding the head when that is faster), then backfill."""
        now = view.time
        free = view.free[:, 0].copy()
        exclusive = view.exclusive
        actions: list[Action] = []
        started: list[tuple[float, tuple[int]]] = []
        queue = iter(view.queue)
        reservation: tuple[float, float] | None = None
        pool = view.free_bb
        for job in queue:
            expected, requested = _expected(job)
            cpu = job.unit[0]  # cores per unit: widths count units, free counts cores
            spans = bool(job.payload.get("spans_nodes")) and not exclusive
            room = _room(free, cpu, spans)
            fits_bb = job.bb <= pool
            width = requested if requested <= room and fits_bb else 0
            if not width:
                shadow, extras = self._reservation(view, free, started, requested * cpu)
                width = (
                    mold_width(expected, requested, room, now, shadow)
                    if job.may_mold and fits_bb
                    else 0
                )
                if not width:
                    reservation = (shadow, extras[0])
                    break
            actions.append(Start(job.job_id, _take(free, width, spans, exclusive, cpu)))
            started.append((now + expected[width - 1], (width * cpu,)))
            pool -= job.bb
        if reservation is not None:
            shadow, extra = reservation
            for job in queue:
                if not free.any():
                    break
                expected, requested = _expected(job)
                cpu = job.unit[0]
                spans = bool(job.payload.get("spans_nodes")) and not exclusive
                width = min(requested, _room(free, cpu, spans))
                if width < 1 or width < requested and not job.may_mold or job.bb > pool:
                    continue
                ends_in_time = now + expected[width - 1] <= shadow
                if not ends_in_time and width * cpu > extra:
                    continue
                if not ends_in_time:
                    extra -= width * cpu
                actions.append(Start(job.job_id, _take(free, width, spans, exclusive, cpu)))
                pool -= job.bb
        return Decision(tuple(actions)) if actions else NOTHING

    @staticmethod
    def _reservation(
        view: View, free: np.ndarray, started: list[tuple[float, tuple[int]]], need: int
    ) -> tuple[float, tuple[float, ...]]:
        releases = [(view.expected_end(r), (r.units * r.job.unit[0],)) for r in view.running]
        releases += started
        releases.sort()
        return shadow_and_extra((int(free.sum()),), releases, (need,))


def _room(free: np.ndarray, cpu: int, spans: bool) -> int:
    """Units of ``cpu`` cores that fit now: across nodes for a job that spans them, else on
    the roomiest node.

    >>> _room(np.array([3, 5, 1]), 2, True), _room(np.array([3, 5, 1]), 2, False)
    (3, 2)
    """
    per_node = free // cpu
    return int(per_node.sum()) if spans else int(per_node.max())


def _take(
    free: np.ndarray, width: int, spans: bool, exclusive: bool, cpu: int = 1
) -> tuple[tuple[int, int], ...]:
    """Place ``width`` units of ``cpu`` cores each and take their cores from ``free`` (per
    node): on the node with the most free cores, or, for a job that spans nodes, on the
    nodes with room for the most units first (ties: the lower index), listed in node order.

    >>> free = np.array([1, 3, 0, 2])
    >>> _take(free, 4, True, False), free.tolist()
    (((1, 3), (3, 1)), [1, 0, 0, 1])
    >>> _take(free, 1, False, False), free.tolist()
    (((0, 1),), [0, 0, 0, 1])
    >>> free = np.array([4, 5, 2])
    >>> _take(free, 3, True, False, cpu=2), free.tolist()  # 2 units on node 0 or 1, then 1
    (((0, 2), (1, 1)), [0, 3, 2])
    """
    if not spans:
        node = int((free // cpu).argmax())
        free[node] = 0 if exclusive else free[node] - width * cpu  # whole nodes: nothing left
        return ((node, width),)
    placed = []
    for node in np.argsort(-(free // cpu), kind="stable").tolist():
        if width <= 0:
            break
        units = min(int(free[node]) // cpu, width)
        if units > 0:
            placed.append((node, units))
            free[node] -= units * cpu
            width -= units
    return tuple(sorted(placed))


def _expected(job: Job) -> tuple[tuple[float, ...], int]:
    if job.profile is None:
        raise ConfigError(
            f"easy-mold needs moldable jobs; job {job.job_id} has no profile "
            "(use a task-graph job set or workload.market = true for traces)"
        )
    requested = len(job.profile)
    if (
        job.run_profile is not None
    ):  # told an estimate's profile already (market_knowledge = "estimate")
        return job.profile, requested
    return scaled_profile(job.profile, job.estimate, job.run_time), requested


register_scheduler(MoldableEasy)
