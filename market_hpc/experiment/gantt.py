"""The geometry of a run's Gantt chart and occupancy map, from ``jobs.csv``'s columns.

Pure functions of plain arrays (no plotting): :mod:`market_hpc.experiment.run_page`
draws them.

* **Gantt rectangles.** Node ``n`` spans ``[n, n + 1)`` on the y axis and its ``C``
  cores are ``C`` slots of height ``1 / C``. Jobs take, on each node of their allocation
  (``jobs.csv``'s ``nodes``, ``node:units;...``), the lowest free slots when they start
  (ends before starts at the same instant, then in start order, then job id), so
  core-sharing jobs on a node are drawn side by side, never on top of each other.
  Consecutive slots of one job on one node are one rectangle.
* **Occupancy.** Nodes in groups of equal size (rows) x time bins (columns): the share
  of the group's cores busy during each bin, for platforms too large for one row per
  node.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def parse_allocation(text: object) -> list[tuple[int, int]]:
    """``"0:3;1:4"`` -> ``[(0, 3), (1, 4)]``; empty or NaN -> ``[]``.

    >>> parse_allocation("0:3;12:1"), parse_allocation(float("nan"))
    ([(0, 3), (12, 1)], [])
    """
    if not isinstance(text, str) or not text:
        return []
    pairs = []
    for item in text.split(";"):
        node, _, units = item.partition(":")
        pairs.append((int(node), int(units or 1)))
    return pairs


@dataclass(frozen=True)
class Rectangles:
    """Gantt rectangles, one row per (job, node, run of consecutive slots).

    Attributes:
        job: Job id of each rectangle.
        start, end: Its time span.
        y: Bottom edge (node index + first slot / cores of the node).
        height: Slots / cores of the node.
    """

    job: np.ndarray
    start: np.ndarray
    end: np.ndarray
    y: np.ndarray
    height: np.ndarray


def core_slots(
    job_ids: Sequence[int],
    starts: Sequence[float],
    ends: Sequence[float],
    allocations: Sequence[list[tuple[int, int]]],
    node_cores: Sequence[int],
) -> list[list[tuple[int, list[int]]]]:
    """The core slots each job holds on each node of its allocation (module docstring):
    ``[(node, [slot, ...]), ...]`` per job, ``[]`` for jobs with nothing to draw.

    Allocations count core slots (the caller turns units of several cores into cores).
    A node asked for more slots than are free (not possible in a valid schedule) gives
    what is free.

    >>> core_slots([1, 2, 3], [0, 0, 5], [10, 5, 9], [[(0, 2)], [(0, 1)], [(0, 1)]], [4])
    [[(0, [0, 1])], [(0, [2])], [(0, [2])]]
    """
    events: list[tuple[float, int, int, int]] = []  # (time, 0 end / 1 start, job id, index)
    for index, (job, start, end) in enumerate(zip(job_ids, starts, ends, strict=True)):
        if math.isfinite(start) and math.isfinite(end) and end > start:  # (0 s: nothing to draw)
            events.append((end, 0, job, index))
            events.append((start, 1, job, index))
    events.sort()
    free: dict[int, list[int]] = {}
    held: list[list[tuple[int, list[int]]]] = [[] for _ in job_ids]
    for _, kind, _job, index in events:
        if kind == 0:
            for node, slots in held[index]:
                for slot in slots:
                    heapq.heappush(free[node], slot)
            continue
        for node, units in allocations[index]:
            heap = free.setdefault(node, list(range(int(node_cores[node]))))
            held[index].append(
                (node, sorted(heapq.heappop(heap) for _ in range(min(units, len(heap)))))
            )
    return held


def gantt_rectangles(
    job_ids: Sequence[int],
    starts: Sequence[float],
    ends: Sequence[float],
    allocations: Sequence[list[tuple[int, int]]],
    node_cores: Sequence[int],
) -> Rectangles:
    """Place every job on the lowest free core slots of its nodes (module docstring).

    Allocations count core slots (the caller turns units of several cores into cores).

    >>> r = gantt_rectangles([1, 2, 3, 4], [0, 0, 5, 5], [10, 5, 9, 5],
    ...                      [[(0, 2)], [(0, 1)], [(0, 1)], [(0, 4)]], [4])
    >>> list(zip(r.job.tolist(), r.y.tolist(), r.height.tolist()))
    [(1, 0.0, 0.5), (2, 0.5, 0.25), (3, 0.5, 0.25)]
    """
    held = core_slots(job_ids, starts, ends, allocations, node_cores)
    order = sorted((i for i in range(len(held)) if held[i]), key=lambda i: (starts[i], job_ids[i]))
    out: list[tuple[int, float, float, float, float]] = []
    for index in order:
        for node, slots in held[index]:
            cores = int(node_cores[node])
            for first, count in _runs(slots):
                out.append(
                    (
                        job_ids[index],
                        float(starts[index]),
                        float(ends[index]),
                        node + first / cores,
                        count / cores,
                    )
                )
    columns = list(zip(*_merge_stacked(out), strict=True)) if out else [(), (), (), (), ()]
    job_col, start_col, end_col, y_col, height_col = (np.asarray(c) for c in columns)
    return Rectangles(
        job_col.astype(np.int64),
        start_col.astype(float),
        end_col.astype(float),
        y_col.astype(float),
        height_col.astype(float),
    )


def resource_ids(slots: list[tuple[int, list[int]]], node_cores: Sequence[int]) -> str:
    """Batsim interval-set text of a job's cores, numbered like the Gantt chart: node ``n``'s
    slot ``s`` is resource ``(cores of nodes 0..n-1) + s``.

    >>> resource_ids([(0, [0, 1, 2, 3]), (2, [0])], [4, 4, 4])
    '0-3 8'
    >>> resource_ids([], [4])
    ''
    """
    offsets = np.concatenate([[0], np.cumsum(np.asarray(node_cores, dtype=np.int64))])
    ids = sorted(int(offsets[node]) + slot for node, taken in slots for slot in taken)
    return " ".join(f"{a}-{a + n - 1}" if n > 1 else f"{a}" for a, n in _runs(ids))


def core_allocations(
    nodes: Sequence[object], cores: Sequence[int], units: Sequence[int]
) -> list[list[tuple[int, int]]]:
    """``jobs.csv``'s ``nodes`` (``node:units;...``) as core slots per node (a unit may hold
    several cores: ``cores / units`` each).

    >>> core_allocations(["0:2;1:1"], [12], [3])
    [[(0, 8), (1, 4)]]
    """
    per_unit = [max(1, round(c / max(u, 1))) for c, u in zip(cores, units, strict=True)]
    return [
        [(node, count * k) for node, count in parse_allocation(text)]
        for text, k in zip(nodes, per_unit, strict=True)
    ]


def _merge_stacked(
    pieces: list[tuple[int, float, float, float, float]],
) -> list[tuple[int, float, float, float, float]]:
    """Join a job's pieces that touch vertically (a job on whole consecutive nodes is one
    rectangle, not one per node), keeping the order of first pieces.

    >>> _merge_stacked([(1, 0, 5, 0.0, 1.0), (1, 0, 5, 1.0, 1.0), (2, 0, 5, 2.0, 0.5)])
    [(1, 0, 5, 0.0, 2.0), (2, 0, 5, 2.0, 0.5)]
    """
    merged: list[tuple[int, float, float, float, float]] = []
    last_of: dict[int, int] = {}
    for piece in pieces:
        job, start, end, y, height = piece
        index = last_of.get(job)
        if index is not None:
            _, _, _, prev_y, prev_height = merged[index]
            if math.isclose(prev_y + prev_height, y, abs_tol=1e-9):
                merged[index] = (job, start, end, prev_y, prev_height + height)
                continue
        last_of[job] = len(merged)
        merged.append(piece)
    return merged


def _runs(slots: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted slots as (first, count).

    >>> _runs([0, 1, 2, 5, 7, 8])
    [(0, 3), (5, 1), (7, 2)]
    """
    runs: list[tuple[int, int]] = []
    for slot in slots:
        if runs and runs[-1][0] + runs[-1][1] == slot:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((slot, 1))
    return runs


def occupancy(
    starts: np.ndarray,
    ends: np.ndarray,
    allocations: Sequence[list[tuple[int, int]]],
    node_cores: np.ndarray,
    window: tuple[float, float],
    rows: int,
    bins: int,
) -> tuple[np.ndarray, int]:
    """Busy share of each node group (rows) in each time bin of ``window``.

    Returns the ``(groups, bins)`` array and the nodes per group. Core-seconds are exact:
    a job busy for half a bin on all the cores of a group's node counts half of that
    node's share.

    >>> grid, per = occupancy(np.array([0.0]), np.array([5.0]), [[(1, 2)]], np.array([2, 2]),
    ...                       (0.0, 10.0), rows=2, bins=2)
    >>> grid.tolist(), per
    ([[0.0, 0.0], [1.0, 0.0]], 1)
    """
    n_nodes = len(node_cores)
    per_group = max(1, math.ceil(n_nodes / rows))
    groups = math.ceil(n_nodes / per_group)
    lo, hi = window
    edges = np.linspace(lo, hi, bins + 1)
    busy = np.zeros((groups, bins))
    for start, end, allocation in zip(starts.tolist(), ends.tolist(), allocations, strict=True):
        if not (math.isfinite(start) and math.isfinite(end)) or end <= lo or start >= hi:
            continue
        overlap = np.clip(np.minimum(edges[1:], end) - np.maximum(edges[:-1], start), 0, None)
        for node, units in allocation:
            busy[node // per_group] += units * overlap
    group_cores = np.add.reduceat(
        np.asarray(node_cores, dtype=float), np.arange(0, n_nodes, per_group)
    )
    width = (hi - lo) / bins
    return busy / (group_cores[:, None] * width), per_group
