"""The greedy plan every CP model gets as a complete solution hint and as its fallback.

Shelf packing in priority order (a greedy first dive is the usual hint; this is a
cheaper variant that is always feasible in the position model): shelf 0 starts now on
what the running jobs leave free; each later shelf starts when everything planned before
it has ended, on the empty platform. A job goes to the earliest shelf where best-fit
places all its units and where it ends before the next shelf starts. Units on a node
take the lowest free positions of each resource list after the running jobs, which are
re-packed from the start of every node's block at each decision, so every unit is one
contiguous block inside one node, as the PCP'20 model requires.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from market_hpc.algorithms.allocation import Allocation, best_fit, units_fit
from market_hpc.algorithms.cp.instance import CpInstance, CpJob, CpOutcome, Stopwatch


@dataclass
class Plan:
    """A complete schedule of the modelled jobs.

    Attributes:
        starts: Start offset per job key.
        nodes: Node of each unit per job key (unit order).
        positions: Start position of each unit in each resource list (``-1`` for a
            resource the unit does not request), per job key, unit order.
    """

    starts: dict[int, int] = field(default_factory=dict)
    nodes: dict[int, list[int]] = field(default_factory=dict)
    positions: dict[int, list[tuple[int, ...]]] = field(default_factory=dict)

    def objective(self, instance: CpInstance) -> int:
        """``sum weight * start``."""
        return sum(job.weight * self.starts[job.key] for job in instance.jobs)

    def allocation(self, key: int) -> tuple[tuple[int, int], ...]:
        """``((node, units), ...)`` of a planned job, nodes increasing."""
        return tuple(sorted(Counter(self.nodes[key]).items()))


class _Shelf:
    __slots__ = ("end", "failed", "fill", "free", "start")

    def __init__(self, start: int, free: np.ndarray, fill: np.ndarray, end: int) -> None:
        self.start, self.free, self.fill, self.end = start, free, fill, end
        # per unit shape, the fewest units best-fit could not place here: a shelf's free
        # resources only shrink and placing fails exactly when the nodes take fewer units
        # in total than asked, so a job with as many or more such units fails too
        self.failed: dict[tuple[int, ...], int] = {}


def node_offsets(capacity: np.ndarray) -> np.ndarray:
    """Position of each node's first unit of each resource in that resource's list.

    >>> node_offsets(np.array([[2, 0], [3, 1]])).tolist()
    [[0, 0], [2, 0]]
    """
    offsets = np.zeros_like(capacity)
    offsets[1:] = np.cumsum(capacity, axis=0)[:-1]
    return offsets


def greedy_plan(instance: CpInstance) -> Plan:
    """Shelf-pack the instance's jobs in priority order (see the module docstring).

    Every job must fit the empty platform (``check_instance``).

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]), (CpJob(1, 3, (1,), 5, 1), CpJob(2, 2, (1,), 4, 1)),
    ...                   (CpRunning(3, ((0, (1,)),)),))
    >>> plan = greedy_plan(inst)
    >>> plan.starts, plan.allocation(1), plan.positions[1]
    ({1: 0, 2: 5}, ((0, 1), (1, 2)), [(1,), (2,), (3,)])
    """
    if len(instance.capacity) == 1 and all(
        job.units >= 1 and any(a > 0 for a in job.unit) for job in instance.jobs
    ):
        return _one_node_plan(instance)  # the pooled instances of HCP'19 and CPH
    return shelf_plan(instance)


def shelf_plan(instance: CpInstance) -> Plan:
    """``greedy_plan`` on any platform (numpy placement by ``best_fit``)."""
    capacity = instance.capacity
    used = instance.used
    offsets = node_offsets(capacity)
    running_end = max((job.remaining for job in instance.running), default=0)
    shelves = [_Shelf(0, capacity - used, used.copy(), running_end)]
    plan = Plan()
    for job in instance.jobs:
        unit = np.asarray(job.unit, dtype=np.int64)
        chosen = None
        for index, shelf in enumerate(shelves):
            later = shelves[index + 1].start if index + 1 < len(shelves) else None
            if later is not None and shelf.start + job.duration > later:
                continue
            if job.units >= shelf.failed.get(job.unit, job.units + 1):
                continue
            allocation = _place(shelf.free, job)
            if allocation is not None:
                chosen = (shelf, allocation)
                break
            shelf.failed[job.unit] = job.units
        if chosen is None:
            start = max(shelf.end for shelf in shelves)
            shelf = _Shelf(start, capacity.copy(), np.zeros_like(capacity), start)
            shelves.append(shelf)
            allocation = _place(shelf.free, job)
            if allocation is None:
                raise ValueError(f"job {job.key} does not fit the empty platform")
            chosen = (shelf, allocation)
        shelf, allocation = chosen
        nodes, positions = _unit_positions(allocation, unit, offsets, shelf)
        plan.starts[job.key] = shelf.start
        plan.nodes[job.key] = nodes
        plan.positions[job.key] = positions
        shelf.end = max(shelf.end, shelf.start + job.duration)
    return plan


def _unit_positions(
    allocation: Allocation, unit: np.ndarray, offsets: np.ndarray, shelf: _Shelf
) -> tuple[list[int], list[tuple[int, ...]]]:
    """The node and start positions of each unit of ``allocation`` on ``shelf``, whose
    fill and free resources it then takes: unit ``k`` of a node starts at the node's
    offset + the shelf's fill + ``k * unit`` in each requested type, ``-1`` elsewhere
    (the allocation's nodes are distinct, as ``best_fit`` gives them).

    >>> shelf = _Shelf(0, np.array([[4, 2], [4, 2]]), np.array([[1, 0], [0, 0]]), 0)
    >>> _unit_positions(((0, 2), (1, 1)), np.array([1, 0]), np.array([[0, 0], [5, 2]]), shelf)
    ([0, 0, 1], [(1, -1), (2, -1), (5, -1)])
    >>> shelf.fill.tolist(), shelf.free.tolist()
    ([[3, 0], [1, 0]], [[2, 2], [3, 2]])
    """
    where = np.array([node for node, _ in allocation], dtype=np.int64)
    counts = np.array([count for _, count in allocation], dtype=np.int64)
    total = int(counts.sum())
    k = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    rows = np.repeat(offsets[where] + shelf.fill[where], counts, axis=0) + k[:, None] * unit
    rows[:, unit <= 0] = -1
    taken = counts[:, None] * unit
    shelf.fill[where] += taken
    shelf.free[where] -= taken
    return np.repeat(where, counts).tolist(), list(map(tuple, rows.tolist()))


def _place(free: np.ndarray, job: CpJob) -> Allocation | None:
    """Best-fit placement of all of ``job``'s units on ``free``, or None."""
    return best_fit(units_fit(free, job.unit), free[:, 0], job.units)


def _one_node_plan(instance: CpInstance) -> Plan:
    """``shelf_plan`` on a one-node platform in plain integers (the same plan).

    On one node best-fit places ``((0, units),)`` when ``min_r free_r // unit_r >= units``
    and nothing otherwise; unit ``k`` of a job starts at the shelf's fill plus
    ``k * unit`` in each requested type (the node's offset is 0). Every job asks for
    at least one unit and one resource.

    >>> from market_hpc.algorithms.cp.instance import CpJob, CpRunning
    >>> inst = CpInstance(np.array([[6, 2]]),
    ...                   (CpJob(1, 2, (2, 1), 5, 1), CpJob(2, 3, (2, 0), 4, 1),
    ...                    CpJob(3, 1, (1, 0), 9, 1)),
    ...                   (CpRunning(3, ((0, (1, 0)),)),))
    >>> fast, general = _one_node_plan(inst), shelf_plan(inst)
    >>> fast == general, fast.starts, fast.positions[2]
    (True, {1: 0, 2: 5, 3: 9}, [(0, -1), (2, -1), (4, -1)])
    """
    capacity = instance.capacity[0].tolist()
    used = instance.used[0].tolist()
    running_end = max((job.remaining for job in instance.running), default=0)
    # shelves: [start, free, fill, end, failed]; ``failed`` as in ``_Shelf``
    shelves: list[list[Any]] = [[0, [c - u for c, u in zip(capacity, used)], used, running_end, {}]]
    plan = Plan()
    for job in instance.jobs:
        unit, units = job.unit, job.units
        asked = [r for r, amount in enumerate(unit) if amount > 0]
        chosen = None
        for index, shelf in enumerate(shelves):
            if index + 1 < len(shelves) and shelf[0] + job.duration > shelves[index + 1][0]:
                continue
            failed = shelf[4]
            if units >= failed.get(unit, units + 1):
                continue
            free = shelf[1]
            if min(free[r] // unit[r] for r in asked) >= units:
                chosen = shelf
                break
            failed[unit] = units
        if chosen is None:
            start = max(shelf[3] for shelf in shelves)
            chosen = [start, list(capacity), [0] * len(capacity), start, {}]
            shelves.append(chosen)
            if min(capacity[r] // unit[r] for r in asked) < units:
                raise ValueError(f"job {job.key} does not fit the empty platform")
        free, fill = chosen[1], chosen[2]
        positions = []
        for k in range(units):
            row = [-1] * len(unit)
            for r in asked:
                row[r] = fill[r] + k * unit[r]
            positions.append(tuple(row))
        for r in range(len(unit)):
            fill[r] += units * unit[r]
            free[r] -= units * unit[r]
        plan.starts[job.key] = chosen[0]
        plan.nodes[job.key] = [0] * units
        plan.positions[job.key] = positions
        chosen[3] = max(chosen[3], chosen[0] + job.duration)
    return plan


def pooled_instance(instance: CpInstance) -> CpInstance:
    """The same jobs on one node holding the whole platform, each job one unit of its
    total request (HCP'19's and CPH's relaxed capacity)."""
    from market_hpc.algorithms.cp.instance import CpJob, CpRunning

    total = instance.capacity.sum(axis=0, keepdims=True)
    jobs = tuple(
        CpJob(j.key, 1, tuple(j.units * a for a in j.unit), j.duration, j.weight)
        for j in instance.jobs
    )
    running = tuple(
        CpRunning(r.remaining, ((0, tuple(np.sum([a for _, a in r.usage], axis=0).tolist())),))
        for r in instance.running
        if r.usage
    )
    return CpInstance(total, jobs, running)


def plan_outcome(
    instance: CpInstance, plan: Plan, watch: Stopwatch, placed: bool = True
) -> CpOutcome:
    """The outcome of a plan that starts every job now: objective 0, the lower bound of
    ``sum weight * start``, so it is optimal and no model is built (size 0)."""
    placements = {key: plan.allocation(key) for key in plan.starts} if placed else {}
    return CpOutcome(dict(plan.starts), placements, "OPTIMAL", 0, 0, 0, 0, watch.seconds())
