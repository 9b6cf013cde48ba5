"""PCP'20's fixed geometry (``cp_pcp20``): groups of identical consecutive nodes, and the
running jobs as fixed boxes along each resource type's position list, re-packed per node
at every decision (as the authors' code)."""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.cp.instance import CpInstance

Box = tuple[int, int, int]  # (position, height, remaining)


def node_groups(capacity: np.ndarray) -> list[tuple[int, int]]:
    """``(first node, count)`` of each run of consecutive nodes with equal capacity.

    >>> node_groups(np.array([[2, 0], [2, 0], [4, 1], [2, 0]]))
    [(0, 2), (2, 1), (3, 1)]
    """
    changes = np.flatnonzero((capacity[1:] != capacity[:-1]).any(axis=1)) + 1
    firsts = np.concatenate(([0], changes)).tolist()
    ends = firsts[1:] + [len(capacity)]
    return [(first, end - first) for first, end in zip(firsts, ends)]


def running_boxes(instance: CpInstance, offsets: np.ndarray) -> list[list[Box]]:
    """Fixed boxes of the running jobs per resource type, re-packed per node.

    On each node the running jobs are stacked from the node's first position, longest
    remaining first; boxes adjacent in a list with the same remaining time are merged.

    >>> from market_hpc.algorithms.cp.instance import CpRunning
    >>> from market_hpc.algorithms.cp.greedy import node_offsets
    >>> inst = CpInstance(np.array([[2], [2]]), (),
    ...                   (CpRunning(5, ((0, (1,)), (1, (2,)))), CpRunning(9, ((0, (1,)),))))
    >>> running_boxes(inst, node_offsets(inst.capacity))
    [[(0, 1, 9), (1, 3, 5)]]
    """
    capacity = instance.capacity
    n_res = capacity.shape[1]
    node = np.array([n for job in instance.running for n, _ in job.usage], dtype=np.int64)
    remaining = np.array(
        [job.remaining for job in instance.running for _ in job.usage], dtype=np.int64
    )
    amounts = np.array(
        [a for job in instance.running for _, a in job.usage], dtype=np.int64
    ).reshape(-1, n_res)
    order = np.lexsort((np.arange(len(node)), -remaining, node))  # per node, longest first, stable
    node, remaining, amounts = node[order], remaining[order], amounts[order]
    head = np.ones(len(node), dtype=bool)
    head[1:] = node[1:] != node[:-1]
    total = np.cumsum(amounts, axis=0)
    first = np.flatnonzero(head)
    first_of = np.repeat(
        first, np.diff(np.append(first, len(node)))
    )  # each entry's node's first entry
    cum = total - np.where((first_of > 0)[:, None], total[np.maximum(first_of - 1, 0)], 0)
    cap = capacity[node] if len(node) else np.zeros((0, n_res), dtype=np.int64)
    top = np.minimum(cum, cap)
    bottom = np.where(head[:, None], 0, np.roll(top, 1, axis=0))
    boxes: list[list[Box]] = []
    for r in range(n_res):
        height = top[:, r] - bottom[:, r]
        keep = height > 0
        pos = offsets[node[keep], r] + bottom[keep, r]
        height, rem = height[keep], remaining[keep]
        by_pos = np.argsort(pos, kind="stable")
        pos, height, rem = pos[by_pos], height[by_pos], rem[by_pos]
        new = np.ones(len(pos), dtype=bool)
        new[1:] = (pos[1:] != pos[:-1] + height[:-1]) | (rem[1:] != rem[:-1])
        starts = np.flatnonzero(new)
        merged = np.add.reduceat(height, starts) if len(starts) else height
        boxes.append(list(zip(pos[starts].tolist(), merged.tolist(), rem[starts].tolist())))
    return boxes
