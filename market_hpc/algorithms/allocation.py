"""Node orderings and unit placement over free-resource arrays.

Every function is pure: it reads ``free`` (``(n_nodes, N_RESOURCES)``) and returns an
allocation ``((node, units), ...)`` sorted by node index, or ``None`` when the job does
not fit now. Units are placed all or nothing.
"""

from __future__ import annotations

import numpy as np

Allocation = tuple[tuple[int, int], ...]


def units_fit(free: np.ndarray, unit: tuple[int, ...] | np.ndarray) -> np.ndarray:
    """How many units of ``unit`` each node can take right now.

    A node lacking a resource the unit needs takes zero units: units are never split
    across a resource a node lacks.

    >>> free = np.array([[4, 1, 0, 0], [8, 0, 0, 0]])
    >>> units_fit(free, (2, 1, 0, 0)).tolist()
    [1, 0]
    >>> units_fit(free, (1, 0, 0, 0)).tolist()
    [4, 8]
    """
    key = tuple(unit)
    cached = _UNIT_CACHE.get(key)
    if cached is None:
        need = np.asarray(key, dtype=np.int64)
        mask = need > 0
        if not mask.any():
            raise ValueError("a unit must request at least one resource")
        columns = np.flatnonzero(mask)
        cached = _UNIT_CACHE[key] = (
            int(columns[0]) if columns.size == 1 and need[mask][0] == 1 else -1,
            columns,
            need[mask],
        )
    single, columns, amounts = cached
    counts: np.ndarray = (
        free[:, single] if single >= 0 else (free[:, columns] // amounts).min(axis=1)
    )
    return counts


_UNIT_CACHE: dict[tuple[int, ...], tuple[int, np.ndarray, np.ndarray]] = {}


def exclusive_fit(
    free: np.ndarray, capacity: np.ndarray, unit: tuple[int, ...] | np.ndarray
) -> np.ndarray:
    """Units each node can take under node-exclusive allocation (only idle nodes count).

    >>> cap = np.array([[2, 0, 0, 0], [2, 0, 0, 0]])
    >>> exclusive_fit(np.array([[1, 0, 0, 0], [2, 0, 0, 0]]), cap, (1, 0, 0, 0)).tolist()
    [0, 2]
    """
    fits = units_fit(free, unit)
    idle = (free == capacity).all(axis=1)
    return np.where(idle, fits, 0)


def place_in_order(fits: np.ndarray, order: np.ndarray, units: int) -> Allocation | None:
    """Fill nodes in ``order`` with up to ``fits[node]`` units until ``units`` are placed.

    >>> place_in_order(np.array([1, 0, 3]), np.array([2, 0, 1]), 4)
    ((0, 1), (2, 3))
    >>> place_in_order(np.array([1, 0, 1]), np.array([0, 1, 2]), 3) is None
    True
    """
    ordered = fits[order]
    cumulative = np.cumsum(ordered)
    if cumulative.size == 0 or cumulative[-1] < units:
        return None
    last = int(np.searchsorted(cumulative, units))
    taken = ordered[: last + 1].copy()
    taken[last] -= cumulative[last] - units
    nodes = order[: last + 1]
    keep = taken > 0
    pairs = sorted(zip(nodes[keep].tolist(), taken[keep].tolist()))
    return tuple((int(n), int(u)) for n, u in pairs)


def first_fit(fits: np.ndarray, units: int) -> Allocation | None:
    """Lowest-index nodes first (AccaSim's FirstFit, Slurm's default linear order).

    >>> first_fit(np.array([0, 2, 1, 4]), 3)
    ((1, 2), (2, 1))
    """
    if units == 1:
        first = int(fits.argmax())
        return ((first, 1),) if fits[first] > 0 else None
    cumulative = np.cumsum(fits)
    if cumulative[-1] < units:
        return None
    last = int(np.searchsorted(cumulative, units))
    taken = fits[: last + 1].copy()
    taken[last] -= cumulative[last] - units
    nodes = np.flatnonzero(taken)
    return tuple(zip(nodes.tolist(), taken[nodes].tolist()))


def best_fit(fits: np.ndarray, free_cores: np.ndarray, units: int) -> Allocation | None:
    """Nodes with the fewest free cores first (ties by index), so big holes stay whole.

    >>> best_fit(np.array([4, 1, 2]), np.array([4, 1, 2]), 2)
    ((1, 1), (2, 1))
    """
    candidates = np.flatnonzero(fits)
    order = candidates[np.argsort(free_cores[candidates], kind="stable")]
    return place_in_order(fits, order, units)
