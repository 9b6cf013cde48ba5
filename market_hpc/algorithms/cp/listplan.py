"""PCP'20's complete hint: the greedy plan's start-now jobs, then list scheduling at every
later end.

The shelf plan (``cp_greedy``) starts its later shelves only when *everything* before
them has ended, the running jobs included: on a busy machine that is the longest
running job's end (days), so its objective is orders of magnitude above the optimum and
CP-SAT spends its budget finding a first good solution. ``list_plan`` keeps the shelf
plan's jobs that start now, with their nodes and positions (so the decision the
``greedy-plan`` dispatcher takes is unchanged), and plans the others by *parallel list
scheduling*: at each end of a running job or of a planned job, in time order, the
waiting jobs in priority order start when best-fit places all their units.

Positions stay feasible in the PCP'20 position model: on every node the running jobs
are stacked from the node's first position (longest remaining at the bottom, re-packed),
so at time ``t`` they occupy ``[0, used_n(t))`` and only shrink; a planned unit takes,
per asked type, the lowest free block above that stack and outside the planned units
still running at ``t``. A job starting at ``t`` overlaps only jobs already started
(events are visited in time order), so checking the instant ``t`` is enough.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right

import numpy as np

from market_hpc.algorithms.allocation import best_fit
from market_hpc.algorithms.cp.cuts import free_profile
from market_hpc.algorithms.cp.greedy import Plan, node_offsets, shelf_plan
from market_hpc.algorithms.cp.instance import CpInstance, CpJob

Block = tuple[int, int, int]  # (first position on the node, end position, end time)


def free_blocks(stack: int, cap: int, busy: list[Block], now: int) -> list[tuple[int, int]]:
    """Free ``[a, b)`` position ranges of one node and type at ``now``: above the running
    stack, outside the planned blocks still running.

    >>> free_blocks(2, 10, [(4, 6, 9), (6, 8, 3)], 5)   # the second block ended at 3
    [(2, 4), (6, 10)]
    """
    ranges = []
    low = stack
    for a, b, end in sorted(busy):
        if end <= now:
            continue
        if a > low:
            ranges.append((low, a))
        low = max(low, b)
    if cap > low:
        ranges.append((low, cap))
    return ranges


def list_plan(instance: CpInstance, base: Plan | None = None) -> Plan:
    """The shelf plan's start-now jobs, then the rest by list scheduling (module doc).

    Two 2-core nodes; node 0 busy until 3, one core of node 1 until 50. Job 2 (1 core)
    starts now on node 1 (position 3: node 1's list starts at 2, its first core is
    running); the shelf plan waits for the 50-second job for the others, list scheduling
    starts job 1 at 3 on node 0 and job 3 at its end, 8:

    >>> from market_hpc.algorithms.cp.instance import CpRunning
    >>> inst = CpInstance(np.array([[2], [2]]),
    ...                   (CpJob(1, 1, (2,), 5, 1), CpJob(2, 1, (1,), 4, 1),
    ...                    CpJob(3, 1, (2,), 6, 1)),
    ...                   (CpRunning(3, ((0, (2,)),)), CpRunning(50, ((1, (1,)),))))
    >>> shelf_plan(inst).starts
    {1: 50, 2: 0, 3: 50}
    >>> plan = list_plan(inst)
    >>> plan.starts, plan.nodes, plan.positions
    ({1: 3, 2: 0, 3: 8}, {1: [0], 2: [1], 3: [0]}, {1: [(0,)], 2: [(3,)], 3: [(0,)]})
    """
    base = shelf_plan(instance) if base is None else base
    capacity = instance.capacity
    offsets = node_offsets(capacity)
    times, running_free = free_profile(instance)
    busy: dict[tuple[int, int], list[Block]] = {}
    planned_use = np.zeros_like(capacity)
    releases: list[tuple[int, int, tuple[int, ...], int]] = []  # (end, node, amounts, count)
    plan = Plan()
    pending: list[CpJob] = []
    events = set(times[1:])
    for job in instance.jobs:
        if base.starts[job.key] != 0:
            pending.append(job)
            continue
        plan.starts[job.key] = 0
        plan.nodes[job.key] = list(base.nodes[job.key])
        plan.positions[job.key] = list(base.positions[job.key])
        for node, position in zip(base.nodes[job.key], base.positions[job.key]):
            for r, amount in enumerate(job.unit):
                if amount > 0:
                    a = position[r] - int(offsets[node, r])
                    busy.setdefault((node, r), []).append((a, a + amount, job.duration))
            _hold(planned_use, releases, node, job.unit, 1, job.duration)
        events.add(job.duration)
    heap = sorted(events)
    done: set[int] = set()
    while pending:
        if not heap:
            raise ValueError("list_plan: jobs left with no event to start at")
        now = heapq.heappop(heap)
        if now in done:
            continue
        done.add(now)
        while releases and releases[0][0] <= now:
            _, node, amounts, count = heapq.heappop(releases)
            planned_use[node] -= count * np.asarray(amounts, dtype=np.int64)
        stack = capacity - running_free[bisect_right(times, now) - 1]
        failed: dict[tuple[int, ...], int] = {}
        waiting = []
        for job in pending:
            if job.units >= failed.get(job.unit, job.units + 1):
                waiting.append(job)
                continue
            placed = _place_at(job, now, capacity, stack, planned_use, busy, offsets)
            if placed is None:
                failed[job.unit] = job.units
                waiting.append(job)
                continue
            nodes, positions = placed
            plan.starts[job.key] = now
            plan.nodes[job.key] = nodes
            plan.positions[job.key] = positions
            for node in nodes:
                _hold(planned_use, releases, node, job.unit, 1, now + job.duration)
            heapq.heappush(heap, now + job.duration)
        pending = waiting
    keys = [job.key for job in instance.jobs]  # priority order, as the shelf plan
    return Plan(
        {k: plan.starts[k] for k in keys},
        {k: plan.nodes[k] for k in keys},
        {k: plan.positions[k] for k in keys},
    )


def _hold(
    use: np.ndarray,
    releases: list[tuple[int, int, tuple[int, ...], int]],
    node: int,
    unit: tuple[int, ...],
    count: int,
    end: int,
) -> None:
    use[node] += count * np.asarray(unit, dtype=np.int64)
    heapq.heappush(releases, (end, node, unit, count))


def _place_at(
    job: CpJob,
    now: int,
    capacity: np.ndarray,
    stack: np.ndarray,
    planned_use: np.ndarray,
    busy: dict[tuple[int, int], list[Block]],
    offsets: np.ndarray,
) -> tuple[list[int], list[tuple[int, ...]]] | None:
    """Best-fit nodes and lowest free blocks for all of ``job``'s units at ``now``, or None."""
    asked = [r for r, amount in enumerate(job.unit) if amount > 0]
    need = np.asarray([job.unit[r] for r in asked], dtype=np.int64)
    free = capacity - stack - planned_use
    counts = (free[:, asked] // need).min(axis=1)
    if counts.sum() < job.units:
        return None
    blocks: dict[int, list[list[tuple[int, int]]]] = {}
    for node in np.flatnonzero((counts > 0) & planned_use[:, asked].any(axis=1)).tolist():
        ranges = [
            free_blocks(int(stack[node, r]), int(capacity[node, r]), busy.get((node, r), []), now)
            for r in asked
        ]
        blocks[node] = ranges
        counts[node] = min(sum((b - a) // u for a, b in rr) for rr, u in zip(ranges, need.tolist()))
    allocation = best_fit(counts, free[:, 0], job.units)
    if allocation is None:
        return None
    nodes: list[int] = []
    positions: list[tuple[int, ...]] = []
    end = now + job.duration
    for node, count in sorted(allocation):
        ranges = blocks.get(node) or [
            [(int(stack[node, r]), int(capacity[node, r]))] for r in asked
        ]
        per_type = []
        for rr, r in zip(ranges, asked):
            u = job.unit[r]
            starts = [a + k * u for a, b in rr for k in range((b - a) // u)][:count]
            per_type.append(starts)
            for a in starts:
                busy.setdefault((node, r), []).append((a, a + u, end))
        for k in range(count):
            row = [-1] * len(job.unit)
            for starts, r in zip(per_type, asked):
                row[r] = int(offsets[node, r]) + starts[k]
            nodes.append(node)
            positions.append(tuple(row))
    return nodes, positions
