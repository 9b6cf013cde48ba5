"""Check a finished schedule's capacity invariants in O(n log n): a sweep line over the
start and end events of every execution segment, vectorised with numpy.

A schedule is given as *placements*: one row per (execution segment, node), with the
segment's start and end and the amount of each resource it holds on that node. Per node
and resource, the events are sorted by (node, time, ends before starts) and their running
sum is the amount in use after each event; wherever it exceeds the node's capacity the
schedule over-allocates. Every node's events sum to zero (each start has its end), so one
cumulative sum over all nodes in that order restarts at zero on each node by itself.

Segments of zero length hold their resources for an instant that is not ordered against
other starts at the same time; they are checked alone against the capacity (a conservative
reading shared with ``tests/invariants.py``). The shared burst-buffer pool is the same
sweep with one "node".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OverAllocation:
    """The first instant at which a node (or the burst-buffer pool) holds more than it has.

    Attributes:
        time: When the amount in use first exceeded the capacity.
        node: The node (``-1`` for the burst-buffer pool).
        resource: Column index of the resource in the amounts given.
        used: Amount in use at ``time``, once every start and end at that instant counted.
        capacity: The node's capacity of that resource.
        jobs: Jobs holding the resource on that node at ``time``, by job id.
    """

    time: float
    node: int
    resource: int
    used: float
    capacity: float
    jobs: tuple[int, ...]


def first_over_allocation(
    job: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    node: np.ndarray,
    amounts: np.ndarray,
    capacity: np.ndarray,
    tolerance: float = 0.0,
) -> OverAllocation | None:
    """The earliest over-allocation of any node and resource, or ``None``.

    Args:
        job: Job id of each placement (int array, length n).
        start: Start of each placement's segment.
        end: End of each placement's segment (``>= start``).
        node: Node index of each placement (``0 <= node < len(capacity)``).
        amounts: Amount of each resource held, shape (n, R).
        capacity: Capacity of each node, shape (nodes, R).
        tolerance: Amount by which use may exceed the capacity (for float pools).

    Returns:
        The first violation in time (ties: the lowest node, then resource), or ``None``.

    >>> job = np.array([1, 2, 3]); node = np.array([0, 0, 0])
    >>> start, end = np.array([0.0, 5.0, 10.0]), np.array([10.0, 12.0, 20.0])
    >>> cap = np.array([[4]])
    >>> first_over_allocation(job, start, end, node, np.array([[2], [2], [2]]), cap) is None
    True
    >>> first_over_allocation(job, start, end, node, np.array([[2], [3], [2]]), cap)
    OverAllocation(time=5.0, node=0, resource=0, used=5.0, capacity=4.0, jobs=(1, 2))
    """
    job, node = np.asarray(job, dtype=np.int64), np.asarray(node, dtype=np.int64)
    start, end = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    amounts = np.asarray(amounts).reshape(len(job), -1)
    capacity = np.asarray(capacity).reshape(len(capacity), -1)
    found: list[OverAllocation] = []
    for resource in range(amounts.shape[1]):
        column = amounts[:, resource]
        held = column > 0
        if not held.any():
            continue
        if held.all():  # (no copies of millions of placements)
            violation = _first_on(
                job, start, end, node, column, capacity[:, resource], resource, tolerance
            )
        else:
            violation = _first_on(
                job[held],
                start[held],
                end[held],
                node[held],
                column[held],
                capacity[:, resource],
                resource,
                tolerance,
            )
        if violation is not None:
            found.append(violation)
    return min(found, key=lambda v: (v.time, v.node, v.resource)) if found else None


def _first_on(
    job: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    node: np.ndarray,
    amount: np.ndarray,
    capacity: np.ndarray,
    resource: int,
    tolerance: float,
) -> OverAllocation | None:
    """The first over-allocation of one resource (its rows only)."""
    candidates: list[OverAllocation] = []
    instant = start == end
    if instant.any():  # each alone against its node's capacity
        over = np.flatnonzero(instant & (amount > capacity[node] + tolerance))
        if len(over):
            row = over[np.lexsort((node[over], start[over]))[0]]
            candidates.append(
                OverAllocation(
                    float(start[row]),
                    int(node[row]),
                    resource,
                    float(amount[row]),
                    float(capacity[node[row]]),
                    (int(job[row]),),
                )
            )
    lasting = ~instant
    if lasting.all():
        n_start, n_end, n_node, n_amount = start, end, node, amount.astype(np.float64, copy=False)
    elif lasting.any():
        n_start, n_end = start[lasting], end[lasting]
        n_node, n_amount = node[lasting], amount[lasting].astype(np.float64)
    if lasting.any():
        times = np.concatenate([n_end, n_start])
        nodes = np.concatenate([n_node, n_node])
        deltas = np.concatenate([-n_amount, n_amount])
        order = _event_order(times, nodes)
        used = np.cumsum(deltas[order])
        over = np.flatnonzero(used > capacity[nodes[order]] + tolerance)
        if len(over):
            events = order[over]
            first = over[np.lexsort((nodes[events], times[events]))[0]]
            event = order[first]
            time, at = float(times[event]), int(nodes[event])
            # the amount in use once every event of that instant on that node is counted
            last = np.flatnonzero((nodes[order] == at) & (times[order] == time))[-1]
            on = (node == at) & (start <= time) & (end > time)
            candidates.append(
                OverAllocation(
                    time,
                    at,
                    resource,
                    float(used[last]),
                    float(capacity[at]),
                    tuple(sorted(set(job[on].tolist()))),
                )
            )
    return min(candidates, key=lambda v: (v.time, v.node)) if candidates else None


def _event_order(times: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Events (every end, then every start) ordered by node, time, ends before starts.

    Two stable sorts, the time first (ends precede starts in the input, so a stable sort
    keeps them first at equal times), then the node; node numbers below 2^15 are sorted
    as int16, which numpy sorts by radix. Same order as ``np.lexsort((is_start, times,
    nodes))``, in about half its time on millions of events.

    >>> _event_order(np.array([5.0, 9.0, 5.0, 1.0]), np.array([0, 0, 0, 1])).tolist()
    [0, 2, 1, 3]
    """
    by_time = np.argsort(times, kind="stable")
    keys = nodes[by_time]
    if len(keys) and 0 <= keys.min() and keys.max() < 1 << 15:
        keys = keys.astype(np.int16)
    return by_time[np.argsort(keys, kind="stable")]
