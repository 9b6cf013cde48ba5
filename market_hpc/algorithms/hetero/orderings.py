"""Heterogeneity-aware node orderings and their state.

Netti, Galleguillos, Kiziltan, Sirbu, Babaoglu, "Heterogeneity-aware Resource Allocation
in HPC Systems", ISC 2018 (``../shared/spec/000-heterogeneity-aware-allocation.md``).
Every function is pure and vectorised over the ``(n_nodes, N_RESOURCES)`` free-resource
array; the policies in ``market_hpc.policies.hetero.allocators`` hold the state (pass order,
priority counters) and call these.

Decisions where the paper is silent (labelled as in that spec file, its suggestion taken):

* Ranking terms use memory in GB (``RANK_SCALE``), fit checks stay in MiB (A1): with
  MiB, memory would dominate every weighted rank.
* BALANCED (B6): a node is binned by the critical kind it has most of *free now*, ties
  to the first kind of ``critical`` (AccaSim order ``(mics, gpus)``); a node with no
  free critical unit goes to the *nul* bin. Nodes with no free core (or no free memory
  on nodes that have memory) are left out before binning, as AccaSim trims them. The nul
  bin comes first in node order; each critical bin is sorted by free critical amount
  ascending, then node index; bins are merged by always taking from the currently
  largest bin, ties to the first kind.
* WEIGHTED (B1, B2): the request mean of kind k is ``(1 + sum U q_k (d + 1)) /
  (1 + sum (d + 1))`` over the window jobs (the up to 100 jobs after the current one in
  the scheduler's order), ``d`` the predicted duration; ``w_k = req_k (used_k + 1) /
  cap_k**2`` (the paper's ``req_k * load_k / cap_k`` with AccaSim's +1 smoothing) and
  ``w_k = 0`` for a kind the platform lacks. The rank of a node is ``sum_k w_k imp_k``,
  ``imp`` the amount left on it after placing as many units as fit (at most all).
* PRIORITY-WEIGHTED (B4, B5): ``w_k`` of critical kinds is multiplied by ``p_k`` in
  ``[1, 10]``, raised by 1 when an allocation of a job requesting k fails and lowered by
  1 when it succeeds.
* PRB (C3, C4): jobs by ``max_ewt * (now - submit + 1) / ewt`` descending, then demand
  ``d * sum_k U q_k`` (memory in GB) ascending, then queue position.
"""

from __future__ import annotations

import numpy as np

from market_hpc.domain.platform import MIB_PER_GB
from market_hpc.domain.resources import CORES, GPUS, MEM, MICS, N_RESOURCES

CRITICAL = (MICS, GPUS)
"""Default critical kinds, in AccaSim's order (ties in BALANCED go to the first)."""
RANK_SCALE = np.array([1.0, 1.0, 1.0, 1.0 / MIB_PER_GB])
"""Multiplies amounts into ranking units: memory in GB, the rest as is."""
PRIORITY_BOUNDS = (1.0, 10.0)


def balanced_order(
    free: np.ndarray, capacity: np.ndarray, fits: np.ndarray, critical: tuple[int, ...] = CRITICAL
) -> np.ndarray:
    """Order candidate nodes as BALANCED does: nodes without free critical units first,
    then critical nodes interleaved across kinds, most free critical units last.

    Args:
        free: Free resources per node.
        capacity: Node capacities (to know which nodes have memory at all).
        fits: Units of the job each node takes now; only nodes with ``fits > 0`` are
            returned.
        critical: Critical resource columns, ties going to the first.

    Returns:
        Node indices in allocation order.

    An 8-node worked example: n1-n4 GPU nodes with 0, 1, 2, 2 free GPUs, n5-n8
    MIC nodes with 2, 2, 2, 1 free MICs (0-based here):

    >>> free = np.array([[16, g, 0, 0] for g in (0, 1, 2, 2)]
    ...                 + [[16, 0, m, 0] for m in (2, 2, 2, 1)])
    >>> (balanced_order(free, free, np.ones(8, dtype=int)) + 1).tolist()
    [1, 8, 5, 2, 6, 3, 7, 4]
    """
    kept = free[:, CORES] > 0
    kept &= ~((capacity[:, MEM] > 0) & (free[:, MEM] <= 0))
    nodes = np.flatnonzero(kept)
    amounts = free[nodes][:, list(critical)]
    most = amounts.max(axis=1)
    kind = amounts.argmax(axis=1)  # first maximum: ties go to the first critical kind
    nul = nodes[most <= 0]
    hot = most > 0
    hot_nodes, hot_kind, hot_amount = nodes[hot], kind[hot], most[hot]
    within = np.lexsort((hot_nodes, hot_amount, hot_kind))  # per kind: amount, then index
    hot_nodes, hot_kind = hot_nodes[within], hot_kind[within]
    sizes = np.bincount(hot_kind, minlength=len(critical))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    position = np.arange(hot_kind.size) - starts[hot_kind]
    remaining = sizes[hot_kind] - position
    # Taking from the largest bin (ties: first kind) pops elements in this order.
    merged = hot_nodes[np.lexsort((hot_kind, -remaining))]
    order = np.concatenate((nul, merged))
    fitting: np.ndarray = order[fits[order] > 0]
    return fitting


def request_mean(window_demand: np.ndarray, window_length: float) -> np.ndarray:
    """Duration-weighted mean request per kind over a window, with AccaSim's smoothing.

    Args:
        window_demand: ``sum_j U_j q_jk (d_j + 1)`` per kind over the window jobs.
        window_length: ``sum_j (d_j + 1)`` over the window jobs.

    >>> request_mean(np.array([20.0, 10.0, 0.0, 0.0]), 9.0).tolist()
    [2.1, 1.1, 0.1, 0.1]
    """
    return (1.0 + window_demand) / (1.0 + window_length)


def criticality_weights(
    req_mean: np.ndarray, used: np.ndarray, capacity: np.ndarray, priority: np.ndarray | None = None
) -> np.ndarray:
    """``w_k = p_k req_k (used_k + 1) / cap_k**2``, 0 for kinds with no capacity.

    All amounts in ranking units (``RANK_SCALE``).

    >>> criticality_weights(np.array([2.0, 1.0]), np.array([3.0, 0.0]),
    ...                     np.array([4.0, 2.0])).tolist()
    [0.5, 0.25]
    >>> criticality_weights(np.array([2.0, 1.0]), np.array([3.0, 0.0]), np.array([4.0, 0.0]),
    ...                     np.array([1.0, 5.0])).tolist()
    [0.5, 0.0]
    """
    present = capacity > 0
    safe = np.where(present, capacity, 1.0)
    weights = np.where(present, req_mean * (used + 1.0) / (safe * safe), 0.0)
    return weights if priority is None else weights * priority


def weighted_order(
    free: np.ndarray,
    fits: np.ndarray,
    unit: np.ndarray,
    units: int,
    weights: np.ndarray,
    scale: np.ndarray = RANK_SCALE,
) -> np.ndarray:
    """Candidate nodes by ascending rank ``sum_k w_k imp_k``, ties by node index.

    ``imp`` is what a node keeps after taking as many units as fit, at most ``units``.

    Args:
        free: Free resources per node.
        fits: Units each node takes now (only ``fits > 0`` nodes are ranked).
        unit: Resource vector of one unit.
        units: Units the job needs.
        weights: Criticality weight per kind (ranking units).
        scale: Converts amounts to ranking units.

    >>> free = np.array([[8, 2, 0, 0], [8, 0, 2, 0], [4, 0, 0, 0]])
    >>> fits = np.array([4, 4, 2])
    >>> weighted_order(free, fits, np.array([2, 0, 0, 0]), 2,
    ...                np.array([0.1, 1.0, 0.5, 0.0])).tolist()
    [2, 1, 0]
    """
    candidates = np.flatnonzero(fits)
    placed = np.minimum(fits[candidates], units)
    leftover = free[candidates] - placed[:, None] * unit
    rank = leftover @ (weights * scale)
    return candidates[np.argsort(rank, kind="stable")]


def update_priorities(
    priority: np.ndarray,
    unit: np.ndarray,
    succeeded: bool,
    critical: tuple[int, ...] = CRITICAL,
    step: float = 1.0,
    bounds: tuple[float, float] = PRIORITY_BOUNDS,
) -> np.ndarray:
    """PRIORITY-WEIGHTED's counters after one allocation attempt.

    Every critical kind the unit requests moves by ``step``: up on failure, down on
    success, clipped to ``bounds``; other kinds keep their value.

    >>> p = np.ones(4)
    >>> p = update_priorities(p, np.array([4, 1, 0, 0]), succeeded=False)
    >>> p = update_priorities(p, np.array([4, 1, 0, 0]), succeeded=False)
    >>> p.tolist()
    [1.0, 3.0, 1.0, 1.0]
    >>> update_priorities(p, np.array([4, 1, 0, 0]), succeeded=True).tolist()
    [1.0, 2.0, 1.0, 1.0]
    >>> update_priorities(p, np.array([4, 0, 0, 0]), succeeded=False).tolist()
    [1.0, 3.0, 1.0, 1.0]
    """
    moved = priority.copy()
    kinds = [k for k in critical if unit[k] > 0]
    if kinds:
        delta = -step if succeeded else step
        moved[kinds] = np.clip(moved[kinds] + delta, bounds[0], bounds[1])
    return moved


def prb_order(
    now: float,
    submit: np.ndarray,
    expected_wait: np.ndarray,
    demand: np.ndarray,
    max_wait: float | None = None,
) -> np.ndarray:
    """Positions of queued jobs in PRB order (Borghesi et al.).

    Most urgent first: ``max_ewt * (now - submit + 1) / ewt`` descending; ties by demand
    ascending, then by queue position. ``max_ewt`` is ``expected_wait.max()`` unless
    ``max_wait`` gives it (ordering part of a queue as the whole queue orders it).

    >>> prb_order(10.0, np.array([0.0, 5.0, 0.0]), np.full(3, 1800.0),
    ...           np.array([9.0, 1.0, 3.0])).tolist()
    [2, 0, 1]
    """
    if submit.size == 0:
        return np.zeros(0, dtype=np.int64)
    longest = expected_wait.max() if max_wait is None else max_wait
    urgency = longest * (now - submit + 1.0) / expected_wait
    return np.lexsort((np.arange(submit.size), demand, -urgency))


def job_demand(
    units: np.ndarray, unit_rows: np.ndarray, duration: np.ndarray, scale: np.ndarray = RANK_SCALE
) -> np.ndarray:
    """PRB's tie-breaker: predicted duration times all resources requested.

    >>> job_demand(np.array([2]), np.array([[4, 1, 0, 2048]]), np.array([10.0])).tolist()
    [140.0]
    """
    demand: np.ndarray = duration * units * (unit_rows * scale).sum(axis=1)
    return demand


def window_sums(
    durations: np.ndarray, units: np.ndarray, unit_rows: np.ndarray, scale: np.ndarray = RANK_SCALE
) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums over a pass of ``U q (d + 1)`` (ranking units) and of ``d + 1``.

    Row ``i`` covers the first ``i`` jobs, so a window ``[a, b)`` sums to
    ``cum[b] - cum[a]``.

    >>> demand, length = window_sums(np.array([1.0, 3.0]), np.array([2, 1]),
    ...                              np.array([[1, 0, 0, 0], [2, 1, 0, 0]]))
    >>> demand.tolist(), length.tolist()
    ([[0.0, 0.0, 0.0, 0.0], [4.0, 0.0, 0.0, 0.0], [12.0, 4.0, 0.0, 0.0]], [0.0, 2.0, 6.0])
    """
    weight = durations + 1.0
    rows = unit_rows * scale * (units * weight)[:, None]
    demand = np.zeros((len(durations) + 1, N_RESOURCES))
    np.cumsum(rows, axis=0, out=demand[1:])
    length = np.concatenate(([0.0], np.cumsum(weight)))
    return demand, length


__all__ = [
    "CRITICAL",
    "GPUS",
    "MICS",
    "PRIORITY_BOUNDS",
    "RANK_SCALE",
    "balanced_order",
    "criticality_weights",
    "job_demand",
    "prb_order",
    "request_mean",
    "update_priorities",
    "weighted_order",
    "window_sums",
]
