"""A reduced system for PCP'20 whose size does not grow with the node count or the
number of running jobs.

The running jobs are "re-packed at each decision" (as the authors' code): the model never sees
where a running job really is, only what each node has in use and until when. Nodes of
the same capacity with the same use are interchangeable, so the model needs only as
many of them as the modelled jobs have units that fit such a node: a unit occupies one
node, so a schedule never uses more. Three steps make the number of kinds of node
bounded:

1. **End levels.** The remaining times of the running jobs are rounded *up* to at most
   ``levels`` values (equal-count buckets of the sorted distinct remaining times, each
   rounded up to its largest member). Rounding up is conservative: the model believes
   resources busy for longer than they are, so it never over-allocates; what it costs
   is optimality of the *planned* starts after now (a start planned later than
   needed). Every running job is active at ``t`` whatever its end, so what can start
   now is exact.
2. **Saturation.** While a node has a type that every modelled unit asks for (cores)
   fully in use, no modelled unit fits it, so the node is marked fully used in every
   type until then. Exact (no optimality lost); it turns the partial memory of a
   whole-node job into a full-height box that merges with its neighbours'.
3. **Classes.** Nodes with the same capacity and the same (rounded, saturated) profile
   form a class; the reduced system keeps the first ``min(count, units)`` nodes of
   each class (``units``: the modelled units that fit that capacity), classes of one
   capacity side by side, so fully used neighbours merge into one fixed box per level.
   Exact. Capacities no modelled unit fits are dropped.

``reduce_instance`` returns the reduced instance and, per reduced node, the real node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from market_hpc.algorithms.cp.instance import CpInstance, CpRunning

LEVELS = 8
"""Default number of end levels (distinct remaining times) of the running jobs."""


@dataclass(frozen=True)
class Reduced:
    """A reduced instance and its map back to the real nodes.

    Attributes:
        instance: The reduced instance (same jobs; fewer nodes; one running entry per
            node and end level).
        nodes: Real node index of each reduced node.
    """

    instance: CpInstance
    nodes: np.ndarray


def end_levels(remaining: list[int], levels: int) -> dict[int, int]:
    """Map each remaining time to its level: itself when there are at most ``levels``
    distinct values, else the largest value of its equal-count bucket.

    >>> end_levels([5, 1, 9, 3, 7, 5], 2)
    {1: 5, 3: 5, 5: 5, 7: 9, 9: 9}
    >>> end_levels([4, 2], 8)
    {2: 2, 4: 4}
    """
    distinct = sorted(set(remaining))
    count = len(distinct)
    if count <= levels:
        return {value: value for value in distinct}
    tops = [distinct[-(-count * k // levels) - 1] for k in range(1, levels + 1)]
    out, bucket = {}, 0
    for value in distinct:
        while value > tops[bucket]:
            bucket += 1
        out[value] = tops[bucket]
    return out


def node_profiles(
    node: np.ndarray,
    end: np.ndarray,
    amounts: np.ndarray,
    capacity: np.ndarray,
    blocking: np.ndarray,
    levels: int,
) -> np.ndarray:
    """Every node's use as one row ``(end, amounts..., end, amounts..., 0...)``: one
    entry per end, longest first, stacked and clipped to the node's capacity, saturated
    while a ``blocking`` type is full (then the last entry fills the node); at most
    ``levels`` entries, zero-padded. Rows are equal exactly for interchangeable nodes.

    >>> cap = np.array([[20, 64], [20, 64], [20, 64]])
    >>> rows = node_profiles(np.array([0, 1, 1, 2, 2]), np.array([5, 5, 9, 5, 9]),
    ...                      np.array([[20, 32], [10, 32], [4, 1], [10, 0], [10, 8]]),
    ...                      cap, np.array([True, False]), 2)
    >>> rows.tolist()
    [[5, 20, 64, 0, 0, 0], [9, 4, 1, 5, 10, 32], [9, 10, 8, 5, 10, 56]]
    """
    n_nodes, n_res = capacity.shape
    rows = np.zeros((n_nodes, levels * (1 + n_res)), dtype=np.int64)
    if len(node) == 0:
        return rows
    order = np.lexsort((-end, node))
    node, end, amounts = node[order], end[order], amounts[order]
    first = np.ones(len(node), dtype=bool)
    first[1:] = (node[1:] != node[:-1]) | (end[1:] != end[:-1])
    starts = np.flatnonzero(first)
    node, end, amounts = node[starts], end[starts], np.add.reduceat(amounts, starts, axis=0)
    new_node = np.ones(len(node), dtype=bool)
    new_node[1:] = node[1:] != node[:-1]
    node_start = np.flatnonzero(new_node)
    head = np.repeat(node_start, np.diff(np.append(node_start, len(node))))
    cap = capacity[node]
    cum = np.cumsum(amounts, axis=0)
    cum -= np.where(head[:, None] > 0, cum[np.maximum(head - 1, 0)], 0)
    clipped = np.minimum(cum, cap)
    before = np.where((np.arange(len(node)) > head)[:, None], np.roll(clipped, 1, axis=0), 0)
    take = clipped - before
    full = ((clipped >= cap) & blocking).any(axis=1)
    full_seen = np.maximum.accumulate(
        np.where(full, np.arange(len(node)), -1)
    )  # last full index so far
    first_full = full & (
        (full_seen[np.maximum(np.arange(len(node)) - 1, 0)] < head) | (np.arange(len(node)) == head)
    )
    after_full = (full_seen >= head) & ~first_full
    take = np.where(first_full[:, None], cap - before, take)
    keep = ~after_full & take.any(axis=1)
    node, end, take = node[keep], end[keep], take[keep]
    rank = np.arange(len(node))
    new_node = np.ones(len(node), dtype=bool)
    new_node[1:] = node[1:] != node[:-1]
    rank -= np.repeat(
        np.flatnonzero(new_node), np.diff(np.append(np.flatnonzero(new_node), len(node)))
    )
    column = rank * (1 + n_res)
    rows[node, column] = end
    for r in range(n_res):
        rows[node, column + 1 + r] = take[:, r]
    return rows


def reduce_instance(instance: CpInstance, levels: int = LEVELS) -> Reduced:
    """The reduced system of ``instance`` (see the module docstring).

    >>> from market_hpc.algorithms.cp.instance import CpJob
    >>> cap = np.array([[4]] * 6)
    >>> run = tuple(CpRunning(r, ((n, (4,)),)) for n, r in enumerate([3, 9, 3, 3]))
    >>> red = reduce_instance(CpInstance(cap, (CpJob(1, 2, (2,), 5, 1),), run))
    >>> red.nodes.tolist(), [(r.remaining, r.usage) for r in red.instance.running]
    ([4, 5, 0, 2, 1], [(3, ((2, (4,)),)), (3, ((3, (4,)),)), (9, ((4, (4,)),))])
    """
    capacity = instance.capacity
    n_nodes, n_res = capacity.shape
    units_of = np.array([job.units for job in instance.jobs], dtype=np.int64)
    unit_rows = np.array([job.unit for job in instance.jobs], dtype=np.int64).reshape(-1, n_res)
    blocking = (
        np.asarray((unit_rows > 0).all(axis=0)) if len(unit_rows) else np.zeros(n_res, dtype=bool)
    )
    level = end_levels([job.remaining for job in instance.running], levels)
    job_of, nodes, amounts = instance.usage_rows
    job_level = np.array([level[job.remaining] for job in instance.running], dtype=np.int64)
    rows = node_profiles(
        nodes,
        job_level[job_of],
        amounts,
        capacity,
        blocking,
        max(1, len(set(level.values()))),
    )
    kind = _row_classes(capacity)
    first_seen = np.full(n_nodes, n_nodes)
    np.minimum.at(first_seen, kind, np.arange(n_nodes))
    kinds = capacity[first_seen[first_seen < n_nodes]]  # one row per capacity, by kind id
    fits = (unit_rows[None, :, :] <= kinds[:, None, :]).all(axis=2)  # kind x job
    wanted = (fits * units_of[None, :]).sum(axis=1)[kind]  # modelled units a node of its kind takes
    keyed = np.column_stack((first_seen[kind], rows))  # capacities in order of first appearance
    # sort by class (capacity first, idle first), then index; stable, so ties keep index order
    order = np.lexsort(keyed.T[::-1])
    same = (keyed[order][1:] == keyed[order][:-1]).all(axis=1)
    boundary = np.concatenate(([True], ~same))
    class_start = np.flatnonzero(boundary)
    rank = np.arange(n_nodes) - np.repeat(class_start, np.diff(np.append(class_start, n_nodes)))
    kept = order[rank < wanted[order]]
    # one running job per entry of a kept node's row, node by node, longest first (a row's
    # entries are packed from its start, so its nonzero ends are a prefix)
    entries = rows[kept].reshape(len(kept), -1, 1 + n_res)
    new, level_of = np.nonzero(entries[:, :, 0])
    ends = entries[new, level_of, 0]
    taken = entries[new, level_of, 1:]
    running = tuple(
        CpRunning(end, ((node, tuple(amounts)),))
        for end, node, amounts in zip(ends.tolist(), new.tolist(), taken.tolist())
    )
    usage = (np.arange(len(running), dtype=np.int64), new.astype(np.int64), taken)
    reduced = CpInstance.with_usage_rows(capacity[kept], instance.jobs, running, usage)
    return Reduced(reduced, kept.astype(np.int64))


def _row_classes(rows: np.ndarray) -> np.ndarray:
    """Class id of each row (equal rows, equal ids; ids in sorted row order).

    >>> _row_classes(np.array([[2, 1], [1, 5], [2, 1]])).tolist()
    [1, 0, 1]
    """
    order = np.lexsort(rows.T[::-1])
    boundary = np.concatenate(([True], (rows[order][1:] != rows[order][:-1]).any(axis=1)))
    ids = np.empty(len(rows), dtype=np.int64)
    ids[order] = np.cumsum(boundary) - 1
    return ids
