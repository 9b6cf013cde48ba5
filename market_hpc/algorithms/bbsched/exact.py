"""The exact Pareto front of a BBSched window by dynamic programming over capacities.

Every objective of the paper's problem (Fan et al., HPDC'19, §3.2.1) is also a constraint: f1 =
nodes used <= free nodes, f2 = burst buffer used <= free burst buffer. So the set of
reachable ``(f1, f2)`` pairs is a subset-sum table over the two capacities, and the front
is read off it: for each node count, the largest reachable burst buffer, kept when it
exceeds every larger node count's. The table is one Python integer per node count, a
bit set over burst-buffer GB (bit ``b`` set: some selection uses exactly these nodes and
``b`` GB), so adding a job is a shift and an OR per node count: the cost is
``k x free nodes x free GB / 64`` machine words (``dp_cost``), not ``2**k``. At w = 50 on
a 100-node system it is a few milliseconds (``benchmarks/bbsched.py``); when the
free capacities are huge (Cori's 1.8 PB in GB) the GA is cheaper and BBSched's ``auto``
solver runs it instead.

Under an EASY reservation (``Window.long_from``: the jobs from that position on would
still run at the reserved job's shadow time) those jobs together may use only the
reservation's extra nodes and burst buffer. They sit at the back of the window and are
added first with the table capped at the extra, then the others up to the free
capacities: the table is then exactly the reachable set under both restrictions (a
short selection plus a long one within the extra), and the suffix tables still serve
the front-first reconstruction below.

The selection kept for a front point is the one nearest the window front, as in
``algorithms.bbsched`` (no paper rule): jobs are decided front first, each taken when the
rest of the point is still reachable with the jobs behind it (suffix tables), which
maximises ``sum x_i 2**(k-1-i)`` among the selections with that objective vector.
"""

from __future__ import annotations

import numpy as np

from market_hpc.algorithms.bbsched.selection import ParetoSet, Window

EXACT_BUDGET = 4_000_000
"""The default ``exact_budget`` of BBSched's ``auto`` solver: windows whose ``dp_cost`` is at
most this many machine words are solved exactly, where the exact solver costs about what the
GA (G = 500, P = 20) costs (``benchmarks/bbsched.py``)."""


def dp_cost(window: Window) -> int:
    """Machine words ``dp_pareto`` touches: jobs x node rows x burst-buffer words.

    >>> dp_cost(Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100))
    1010
    """
    rows = min(window.free_nodes, int(window.nodes.sum())) + 1
    return window.size * rows * (window.free_bb // 64 + 1)


def dp_pareto(window: Window) -> ParetoSet:
    """The true Pareto set of ``window``, ordered by nodes used, descending.

    The same set as ``algorithms.bbsched.exact_pareto`` (enumeration), masks included,
    for any window size.

    >>> front = dp_pareto(Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100))
    >>> [bin(m) for m in front.masks], front.objectives.tolist()
    (['0b10001', '0b11110'], [[100, 20], [80, 90]])
    """
    k, free_nodes, free_bb = window.size, window.free_nodes, window.free_bb
    if free_nodes < 0 or free_bb < 0:
        return ParetoSet(np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64))
    nodes, bb = window.nodes.tolist(), window.bb.tolist()
    suffix: list[list[int]] = [[]] * (k + 1)  # suffix[i][n]: reachable GB with jobs i.. and n nodes
    current = [0] * (free_nodes + 1)
    current[0] = 1
    suffix[k] = current
    top = 0  # largest node count reachable so far
    for i in range(k - 1, -1, -1):
        # Under a reservation the long jobs (positions >= long_start, added first) reach
        # only points within the extra; the short ones then add up to the free capacity.
        cap_nodes, cap_bb = (
            (window.extra_nodes, window.extra_bb)
            if i >= window.long_start
            else (free_nodes, free_bb)
        )
        need_nodes, need_bb = nodes[i], bb[i]
        after = current[:]
        if need_bb <= cap_bb:
            keep = (1 << (cap_bb + 1)) - 1
            for n in range(min(top, cap_nodes - need_nodes), -1, -1):
                reach = current[n]
                if reach:
                    after[n + need_nodes] |= (reach << need_bb) & keep
            top = max(top, min(cap_nodes, top + need_nodes))
        current = suffix[i] = after
    points: list[tuple[int, int]] = []
    best = -1
    for n in range(free_nodes, -1, -1):
        if current[n]:
            most = current[n].bit_length() - 1
            if most > best:
                points.append((n, most))
                best = most
    masks = [_front_most(point, nodes, bb, suffix) for point in points]
    return ParetoSet(
        np.array(masks, dtype=np.int64), np.array(points, dtype=np.int64).reshape(-1, 2)
    )


def _front_most(
    point: tuple[int, int], nodes: list[int], bb: list[int], suffix: list[list[int]]
) -> int:
    """The selection reaching ``point`` that takes the earliest window jobs."""
    left_nodes, left_bb = point
    mask = 0
    for i, (need_nodes, need_bb) in enumerate(zip(nodes, bb)):
        if (
            need_nodes <= left_nodes
            and need_bb <= left_bb
            and suffix[i + 1][left_nodes - need_nodes] >> (left_bb - need_bb) & 1
        ):
            mask |= 1 << i
            left_nodes -= need_nodes
            left_bb -= need_bb
    return mask
