"""Window selection over two resources, nodes and burst buffer (BBSched).

Fan et al., "Scheduling Beyond CPUs for HPC", HPDC '19. A scheduling window holds the
first ``w`` jobs of the base-ordered queue; a *selection* is a subset of them, written
as an integer bit mask (bit ``i`` = window position ``i``, position 0 the front). The
paper's multi-objective problem is

    max (f1(x), f2(x)) = (sum n_i x_i, sum b_i x_i)
    s.t. sum n_i x_i <= free nodes, sum b_i x_i <= free burst buffer.

This module holds the exact machinery: objective tables, exhaustive enumeration of all
``2**k`` subsets (vectorised numpy; the test oracle and the exact baselines), the
Pareto front, the paper's decision rule (and the reference code's), generational
distance, and the baselines' selectors (Weighted, Constrained, Bin_Packing). The GA is
in ``market_hpc.algorithms.bbsched.ga``.

Decisions where the paper is silent: ties between selections prefer jobs
nearer the window front, i.e. the larger ``sum x_i 2**(k-1-i)``; the decision
rule works on utilisation fractions of the *total* capacities N and B; generational
distance is Euclidean in objective space normalised by (N, B); burst-buffer
amounts are integer GB (decimal: 1 TB = 1,000 GB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK_BITS = 10
MAX_EXACT_JOBS = 22
RULES = ("paper", "code")


@dataclass(frozen=True)
class Window:
    """The jobs of one optimisation: node and burst-buffer requests and free capacity.

    Attributes:
        nodes: Node (processor) request per window position, int64.
        bb: Burst-buffer request per position in GB, int64.
        free_nodes: Free nodes now (N - N_used).
        free_bb: Free burst buffer now (B - B_used).
    """

    nodes: np.ndarray
    bb: np.ndarray
    free_nodes: int
    free_bb: int
    long_from: int | None = None
    extra_nodes: int = 0
    extra_bb: int = 0

    @classmethod
    def of(
        cls,
        nodes: list[int] | np.ndarray,
        bb: list[float] | np.ndarray,
        free_nodes: float,
        free_bb: float,
        long_from: int | None = None,
        extra_nodes: float = 0,
        extra_bb: float = 0,
    ) -> Window:
        """Build a window from plain sequences (burst buffer rounded to whole GB).

        ``long_from``: under an EASY reservation, the window positions from ``long_from``
        on hold the jobs that would still run at the reservation's shadow time; together
        they may use at most ``extra_nodes`` nodes and ``extra_bb`` GB (the reservation's
        extra, clipped to [0, free]), so that no selection delays the reserved job.
        ``None``: no reservation.
        """
        window = cls(
            np.asarray(nodes, dtype=np.int64),
            np.rint(np.asarray(bb, dtype=np.float64)).astype(np.int64),
            int(free_nodes),
            int(np.floor(free_bb + 1e-9)),
            long_from,
            int(np.floor(max(0.0, min(extra_nodes, free_nodes)) + 1e-9)),
            int(np.floor(max(0.0, min(extra_bb, free_bb)) + 1e-9)),
        )
        if long_from is not None and not 0 <= long_from <= window.size:
            raise ValueError(f"long_from must be in 0..{window.size}, got {long_from}")
        return window

    @property
    def size(self) -> int:
        """Number of jobs ``k``."""
        return len(self.nodes)

    @property
    def long_start(self) -> int:
        """First window position whose job runs past the shadow time (``size``: none)."""
        return self.size if self.long_from is None else self.long_from


class ObjectiveTable:
    """``f1`` and ``f2`` of any bit masks by table look-up over 10-bit chunks.

    >>> table = ObjectiveTable(np.array([80, 10, 40]), np.array([20, 85, 5]))
    >>> table.evaluate(np.array([0b011, 0b110])).tolist()
    [[90, 105], [50, 90]]
    """

    def __init__(self, nodes: np.ndarray, bb: np.ndarray) -> None:
        self.tables: list[np.ndarray] = []
        for start in range(0, max(len(nodes), 1), CHUNK_BITS):
            part = np.stack(
                (nodes[start : start + CHUNK_BITS], bb[start : start + CHUNK_BITS]), axis=1
            )
            self.tables.append(subset_sums(part))

    def evaluate(self, masks: np.ndarray) -> np.ndarray:
        """``(len(masks), 2)`` objective values of int64 masks."""
        total: np.ndarray = self.tables[0][masks & ((1 << CHUNK_BITS) - 1)]
        for index, table in enumerate(self.tables[1:], start=1):
            total = total + table[(masks >> (index * CHUNK_BITS)) & ((1 << CHUNK_BITS) - 1)]
        return total


def subset_sums(values: np.ndarray) -> np.ndarray:
    """Sums of every subset of the rows of ``values``, indexed by bit mask.

    >>> subset_sums(np.array([[1, 10], [2, 20]])).tolist()
    [[0, 0], [1, 10], [2, 20], [3, 30]]
    """
    sums = np.zeros((1, values.shape[1]), dtype=np.int64)
    for row in values:
        sums = np.concatenate((sums, sums + row))
    return sums


def front_keys(masks: np.ndarray, k: int) -> np.ndarray:
    """Front-of-window preference ``sum x_i 2**(k-1-i)``: larger keeps earlier jobs.

    >>> front_keys(np.array([0b001, 0b100]), 3).tolist()   # job 0 alone beats job 2 alone
    [4, 1]
    """
    masks = np.asarray(masks, dtype=np.int64)
    keys = np.zeros(masks.shape, dtype=np.int64)
    for i in range(k):
        keys |= ((masks >> i) & 1) << (k - 1 - i)
    return keys


def enumerate_feasible(window: Window) -> tuple[np.ndarray, np.ndarray]:
    """All feasible selections and their objectives, by exhaustive enumeration.

    Returns:
        ``(masks, objectives)`` of every subset within both free capacities.

    Raises:
        ValueError: when the window has more than ``MAX_EXACT_JOBS`` jobs.
    """
    k = window.size
    if k > MAX_EXACT_JOBS:
        raise ValueError(f"exact enumeration needs <= {MAX_EXACT_JOBS} jobs, got {k}")
    low_bits = min(k, 11)
    values = np.stack((window.nodes, window.bb), axis=1)
    low = subset_sums(values[:low_bits])
    high = subset_sums(values[low_bits:])
    objectives = (high[:, None, :] + low[None, :, :]).reshape(-1, 2)
    fits = (objectives[:, 0] <= window.free_nodes) & (objectives[:, 1] <= window.free_bb)
    start = window.long_start
    if start < k:  # under a reservation: the long jobs together within the extra
        long_sums = subset_sums(values[start:])[np.arange(1 << k, dtype=np.int64) >> start]
        fits &= (long_sums[:, 0] <= window.extra_nodes) & (long_sums[:, 1] <= window.extra_bb)
    feasible = np.flatnonzero(fits)
    return feasible.astype(np.int64), objectives[feasible]


def nondominated(objectives: np.ndarray) -> np.ndarray:
    """Boolean mask of rows no other row dominates (maximising both columns).

    >>> nondominated(np.array([[100, 20], [80, 90], [90, 20], [80, 90]])).tolist()
    [True, True, False, True]
    """
    order = np.lexsort((-objectives[:, 1], -objectives[:, 0]))
    f2 = objectives[order, 1]
    best_before = np.maximum.accumulate(np.concatenate(([-1], f2[:-1])))
    keep_sorted = f2 > best_before
    # equal objective vectors do not dominate each other: keep copies of kept points
    sorted_obj = objectives[order]
    same_as_prev = np.zeros(len(order), dtype=bool)
    same_as_prev[1:] = (sorted_obj[1:] == sorted_obj[:-1]).all(axis=1)
    for index in np.flatnonzero(same_as_prev):
        keep_sorted[index] = keep_sorted[index - 1]
    keep = np.empty(len(order), dtype=bool)
    keep[order] = keep_sorted
    return keep


@dataclass(frozen=True)
class ParetoSet:
    """Selections on a Pareto front (one mask per distinct objective vector).

    Attributes:
        masks: Bit masks, int64.
        objectives: ``(len(masks), 2)``: nodes used and burst buffer used.
    """

    masks: np.ndarray
    objectives: np.ndarray


def representatives(masks: np.ndarray, objectives: np.ndarray, k: int) -> ParetoSet:
    """Keep, per distinct objective vector, the mask nearest the window front."""
    if not len(masks):
        return ParetoSet(np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64))
    keys = front_keys(masks, k)
    order = np.lexsort((-keys, objectives[:, 1], objectives[:, 0]))
    sorted_obj = objectives[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (sorted_obj[1:] != sorted_obj[:-1]).any(axis=1)
    chosen = order[first]
    chosen = chosen[np.lexsort((objectives[chosen, 1], -objectives[chosen, 0]))]
    return ParetoSet(masks[chosen], objectives[chosen])


def exact_pareto(window: Window) -> ParetoSet:
    """The true Pareto set by enumeration, ordered by nodes used, descending.

    Table 1 of the paper (100 nodes, 100 TB; in TB here): the set is {J1, J5} and
    {J2, J3, J4, J5}.

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> front = exact_pareto(table1)
    >>> [bin(m) for m in front.masks], front.objectives.tolist()
    (['0b10001', '0b11110'], [[100, 20], [80, 90]])
    """
    masks, objectives = enumerate_feasible(window)
    # Only maximal points can be non-dominated: pre-filter by the best f2 per f1.
    best = np.full(window.free_nodes + 1, -1, dtype=np.int64)
    np.maximum.at(best, objectives[:, 0], objectives[:, 1])
    levels = np.flatnonzero(best >= 0)[::-1]
    running = np.maximum.accumulate(best[levels])
    previous = np.concatenate(([-1], running[:-1]))
    front_f1 = levels[best[levels] > previous]
    front_f2 = best[front_f1]
    codes = objectives[:, 0] * (int(objectives[:, 1].max()) + 1) + objectives[:, 1]
    wanted = front_f1 * (int(objectives[:, 1].max()) + 1) + front_f2
    hit = np.isin(codes, wanted)
    return representatives(masks[hit], objectives[hit], window.size)


def choose(
    front: ParetoSet,
    k: int,
    total_nodes: float,
    total_bb: float,
    rule: str = "paper",
    used_nodes: float = 0.0,
    used_bb: float = 0.0,
) -> int:
    """Pick one selection from a Pareto set by the decision rule (paper §3.2.4).

    ``paper``: start from the selection using the most nodes (ties: nearer the front);
    move to another whose burst-buffer gain is more than twice its node loss (fractions
    of the total capacities); among several, the largest gain (ties: nearer the front).
    ``code``: the reference implementation's rule: move only for a burst-buffer
    utilisation (including what is already used) more than 30 % above the start's and a
    node loss below 10 percentage points.

    >>> table1 = exact_pareto(Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100))
    >>> bin(choose(table1, 5, 100, 100)), bin(choose(table1, 5, 100, 100, "code"))
    ('0b11110', '0b10001')
    """
    if rule not in RULES:
        raise ValueError(f"unknown decision rule {rule!r}; valid: {', '.join(RULES)}")
    if not len(front.masks):
        return 0
    keys = front_keys(front.masks, k)
    f1 = front.objectives[:, 0].astype(np.float64)
    f2 = front.objectives[:, 1].astype(np.float64)
    start = int(np.lexsort((-keys, -f1))[0])
    node_loss = (f1[start] - f1) / total_nodes
    if rule == "paper":
        gain = (f2 - f2[start]) / total_bb if total_bb > 0 else np.zeros_like(f2)
        candidates = gain > 2.0 * node_loss
    else:
        score = (used_bb + f2) / total_bb if total_bb > 0 else np.zeros_like(f2)
        gain = score - score[start]
        candidates = (gain > 0.3 * abs(score[start])) & (node_loss < 0.1)
    if not candidates.any():
        return int(front.masks[start])
    index = np.flatnonzero(candidates)
    best = index[np.lexsort((-keys[index], -gain[index]))[0]]
    return int(front.masks[best])


def generational_distance(
    found: ParetoSet, true: ParetoSet, total_nodes: float, total_bb: float
) -> float:
    """Mean distance of each found point to its nearest true Pareto point (GD, §3.2.3).

    Euclidean in objective space normalised by the total capacities (the paper gives no metric).

    >>> true = ParetoSet(np.array([1, 2]), np.array([[100, 20], [80, 90]]))
    >>> generational_distance(true, true, 100, 100)
    0.0
    >>> found = ParetoSet(np.array([3]), np.array([[90, 20]]))
    >>> round(generational_distance(found, true, 100, 100), 12)
    0.1
    """
    if not len(found.masks):
        return float("nan")
    scale = np.array([total_nodes, total_bb if total_bb > 0 else 1.0])
    a = found.objectives / scale
    b = true.objectives / scale
    distances = np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2)).min(axis=1)
    return float(distances.mean())


def weighted_score(
    objectives: np.ndarray,
    weight_nodes: float,
    weight_bb: float,
    total_nodes: float,
    total_bb: float,
) -> np.ndarray:
    """``w_N f1 / N + w_B f2 / B`` per row of ``objectives``, rounded to 12 digits (ties)."""
    bb_scale = weight_bb / total_bb if total_bb > 0 else 0.0
    return np.round(
        objectives[:, 0] * (weight_nodes / total_nodes) + objectives[:, 1] * bb_scale, 12
    )


def weighted_pick(
    front: ParetoSet,
    k: int,
    weight_nodes: float,
    weight_bb: float,
    total_nodes: float,
    total_bb: float,
) -> int:
    """The Weighted optimum read off the exact Pareto set of a window of ``k`` jobs.

    With both weights positive every maximiser of a positive weighted sum is on the
    front (a dominated selection scores strictly less than the one dominating it), and
    each front point carries the selection nearest the window front, so this is
    ``weighted_select``'s choice, masks included, for any window size (tested against it).

    >>> front = ParetoSet(np.array([0b10001, 0b11110]), np.array([[100, 20], [80, 90]]))
    >>> (bin(weighted_pick(front, 5, 0.8, 0.2, 100, 100)),
    ...  bin(weighted_pick(front, 5, 0.5, 0.5, 100, 100)))
    ('0b10001', '0b11110')
    """
    if not len(front.masks):
        return 0
    score = weighted_score(front.objectives, weight_nodes, weight_bb, total_nodes, total_bb)
    return _best(front.masks, score, k)


def constrained_pick(front: ParetoSet, k: int, resource: str) -> int:
    """The Constrained optimum read off the exact Pareto set: the front's point with the
    most nodes (``"nodes"``; the front keeps the most burst buffer among those) or the
    most burst buffer (``"bb"``; likewise the most nodes among those), i.e.
    ``constrained_select``'s choice for any window size.

    >>> front = ParetoSet(np.array([0b10001, 0b11110]), np.array([[100, 20], [80, 90]]))
    >>> bin(constrained_pick(front, 5, "nodes")), bin(constrained_pick(front, 5, "bb"))
    ('0b10001', '0b11110')
    """
    if resource not in ("nodes", "bb"):
        raise ValueError(f"resource must be 'nodes' or 'bb', got {resource!r}")
    if not len(front.masks):
        return 0
    main, other = (0, 1) if resource == "nodes" else (1, 0)
    objectives = front.objectives
    best = objectives[:, main] == objectives[:, main].max()
    return _best(front.masks[best], objectives[best, other], k)


def weighted_select(
    window: Window, weight_nodes: float, weight_bb: float, total_nodes: float, total_bb: float
) -> int:
    """Exact maximiser of ``sum (w_N n_i / N + w_B b_i / B) x_i`` by enumeration (the
    oracle of ``weighted_pick``, which the Weighted baselines run).

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> (bin(weighted_select(table1, 0.8, 0.2, 100, 100)),
    ...  bin(weighted_select(table1, 0.5, 0.5, 100, 100)))
    ('0b10001', '0b11110')
    """
    masks, objectives = enumerate_feasible(window)
    score = weighted_score(objectives, weight_nodes, weight_bb, total_nodes, total_bb)
    return _best(masks, score, window.size)


def constrained_select(window: Window, resource: str) -> int:
    """Exact maximiser of one resource under both constraints, by enumeration (the oracle
    of ``constrained_pick``, which the Constrained baselines run).

    ``resource`` is ``"nodes"`` or ``"bb"``; ties go to the other resource, then to the
    front of the window (the paper gives no tie rule).

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> bin(constrained_select(table1, "nodes")), bin(constrained_select(table1, "bb"))
    ('0b10001', '0b11110')
    """
    if resource not in ("nodes", "bb"):
        raise ValueError(f"resource must be 'nodes' or 'bb', got {resource!r}")
    masks, objectives = enumerate_feasible(window)
    main, other = (0, 1) if resource == "nodes" else (1, 0)
    best = objectives[:, main] == objectives[:, main].max()
    masks, objectives = masks[best], objectives[best]
    return _best(masks, objectives[:, other], window.size)


def _best(masks: np.ndarray, score: np.ndarray, k: int) -> int:
    top = np.flatnonzero(score == score.max())
    return int(masks[top[np.argmax(front_keys(masks[top], k))]])


def bin_packing_select(
    window: Window, total_nodes: float, total_bb: float, normalise: bool = True
) -> int:
    """Tetris-like packing: repeatedly take the job with the largest alignment score.

    The score is the dot product of the job's demand and the free resources, each
    dimension divided by its capacity when ``normalise`` (Tetris-style; otherwise raw units
    with equal weights, as the reference code); recomputed after each pick over the jobs
    that still fit. Ties go to the front of the window.

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> bin(bin_packing_select(table1, 100, 100, normalise=False))
    '0b10001'
    """
    scale_n = 1.0 / total_nodes if normalise else 1.0
    scale_b = (1.0 / total_bb if total_bb > 0 else 0.0) if normalise else 1.0
    free_n, free_b = window.free_nodes, window.free_bb
    left = np.ones(window.size, dtype=bool)
    mask = 0
    while True:
        fits = left & (window.nodes <= free_n) & (window.bb <= free_b)
        if not fits.any():
            return mask
        score = (window.nodes * scale_n) * (free_n * scale_n) + (window.bb * scale_b) * (
            free_b * scale_b
        )
        score = np.where(fits, score, -np.inf)
        pick = int(np.argmax(score))  # first maximum: nearest the front
        mask |= 1 << pick
        left[pick] = False
        free_n -= int(window.nodes[pick])
        free_b -= int(window.bb[pick])
