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


def gantt_rectangles(job_ids: Sequence[int], starts: Sequence[float], ends: Sequence[float],
                     allocations: Sequence[list[tuple[int, int]]],
                     node_cores: Sequence[int]) -> Rectangles:
    """Place every job on the lowest free core slots of its nodes (module docstring).

    Allocations count core slots (the caller turns units of several cores into cores).
    A node asked for more slots than are free (not possible in a valid schedule) gives
    what is free.

    >>> r = gantt_rectangles([1, 2, 3, 4], [0, 0, 5, 5], [10, 5, 9, 5],
    ...                      [[(0, 2)], [(0, 1)], [(0, 1)], [(0, 4)]], [4])
    >>> list(zip(r.job.tolist(), r.y.tolist(), r.height.tolist()))
    [(1, 0.0, 0.5), (2, 0.5, 0.25), (3, 0.5, 0.25)]
    """
    events: list[tuple[float, int, int, int]] = []  # (time, 0 end / 1 start, job id, index)
    for index, (job, start, end) in enumerate(zip(job_ids, starts, ends, strict=True)):
        if math.isfinite(start) and math.isfinite(end) and end > start:  # (0 s: nothing to draw)
            events.append((end, 0, job, index))
            events.append((start, 1, job, index))
    events.sort()
    free: dict[int, list[int]] = {}
    held: dict[int, list[tuple[int, list[int]]]] = {}
    out: list[tuple[int, float, float, float, float]] = []
    for _, kind, job, index in events:
        if kind == 0:
            for node, slots in held.pop(index, []):
                for slot in slots:
                    heapq.heappush(free[node], slot)
            continue
        taken = []
        for node, units in allocations[index]:
            cores = int(node_cores[node])
            heap = free.setdefault(node, list(range(cores)))
            slots = [heapq.heappop(heap) for _ in range(min(units, len(heap)))]
            taken.append((node, slots))
            for first, count in _runs(sorted(slots)):
                out.append((job, float(starts[index]), float(ends[index]),
                            node + first / cores, count / cores))
        held[index] = taken
    columns = list(zip(*_merge_stacked(out), strict=True)) if out else [(), (), (), (), ()]
    job_col, start_col, end_col, y_col, height_col = (np.asarray(c) for c in columns)
    return Rectangles(job_col.astype(np.int64), start_col.astype(float), end_col.astype(float),
                      y_col.astype(float), height_col.astype(float))


def _merge_stacked(pieces: list[tuple[int, float, float, float, float]]
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


def occupancy(starts: np.ndarray, ends: np.ndarray, allocations: Sequence[list[tuple[int, int]]],
              node_cores: np.ndarray, window: tuple[float, float], rows: int,
              bins: int) -> tuple[np.ndarray, int]:
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
    group_cores = np.add.reduceat(np.asarray(node_cores, dtype=float),
                                  np.arange(0, n_nodes, per_group))
    width = (hi - lo) / bins
    return busy / (group_cores[:, None] * width), per_group
