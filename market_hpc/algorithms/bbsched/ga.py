"""BBSched's multi-objective genetic algorithm (Fan et al., HPDC '19, §3.2.2-3.2.3).

Not NSGA-II: the paper keeps the non-dominated chromosomes (Set 1) and fills the rest of
the next generation with the *youngest* dominated ones (Set 2); when Set 1 alone
exceeds the population size, its youngest members survive. Ages grow by one per
generation survived. After ``G`` generations Set 1 is the Pareto set.

One chromosome is a ``k``-bit selection of the window's jobs held as an int64 mask (bit
``i`` = window position ``i``), so a whole generation is one numpy array: crossover,
mutation, evaluation (table look-up, ``ObjectiveTable``), feasibility, de-duplication
and the dominance test are each a handful of array operations on ~40 integers. DEAP's
``base.Toolbox`` is the operator registry (``mate``, ``mutate``, ``evaluate``,
``select``) so the loop reads like a DEAP algorithm; the operators are vectorised
equivalents of ``tools.cxOnePoint`` (one cut drawn uniformly in ``[1, k-1]`` per pair)
and ``tools.mutFlipBit`` (each child gene flipped with probability ``p_m``), because
DEAP's per-individual Python operators cost ~20x more at these sizes (see
``benchmarks/bbsched.py``).

Decisions where the paper is silent: ``P/2`` random pairs per generation
drawn without replacement, crossover every generation; the first generation is the
greedy priority-order fill, then one-hot selections in window order, then sparse random
selections repaired by dropping jobs from the back of the window, de-duplicated;
infeasible children are discarded (death penalty); duplicates of a living chromosome
are dropped (the living one keeps its age); age ties go to the later-created
chromosome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from market_hpc.algorithms.bbsched.ga_common import GaSettings, initial_population
from market_hpc.algorithms.bbsched.selection import (
    CHUNK_BITS,
    ObjectiveTable,
    ParetoSet,
    Window,
    representatives,
)

if TYPE_CHECKING:
    from deap import base


class _Draws:
    """All random numbers of a run, drawn up front in three calls (a per-generation draw
    would cost more than the generation's arithmetic)."""

    def __init__(
        self, generations: int, size: int, k: int, probability: float, rng: np.random.Generator
    ) -> None:
        self.keys = rng.random((generations, size))
        self.cuts = rng.integers(1, max(k, 2), size=(generations, size // 2), dtype=np.int64)
        flips = rng.random((generations, 2 * (size // 2), k)) < probability
        self.flips = (flips.astype(np.int64) << np.arange(k, dtype=np.int64)).sum(axis=2)


def _mate(population: np.ndarray, generation: int, draws: _Draws, k: int) -> np.ndarray:
    """One-point crossover of P/2 random pairs (without replacement): two children each."""
    count = len(population) // 2
    if count == 0 or k < 2:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(draws.keys[generation, : len(population)])[: 2 * count]
    a, b = population[order[:count]], population[order[count:]]
    low = (np.int64(1) << draws.cuts[generation, :count]) - 1
    return np.concatenate(((a & low) | (b & ~low), (b & low) | (a & ~low)))


def _mutate(children: np.ndarray, generation: int, draws: _Draws) -> np.ndarray:
    """Flip each gene of each child with the mutation probability (drawn up front)."""
    flipped: np.ndarray = children ^ draws.flips[generation, : len(children)]
    return flipped


def dominated(objectives: np.ndarray) -> np.ndarray:
    """Rows some other row dominates (maximising every column); pairwise, for small sets.

    >>> dominated(np.array([[100, 20], [80, 90], [90, 20], [80, 90]])).tolist()
    [False, False, True, False]
    """
    f1, f2 = objectives[:, 0], objectives[:, 1]
    ge1, ge2 = f1[:, None] >= f1, f2[:, None] >= f2
    gt1, gt2 = f1[:, None] > f1, f2[:, None] > f2
    return np.asarray((ge1 & ge2 & (gt1 | gt2)).any(axis=0))


def _select(masks: np.ndarray, objectives: np.ndarray, ages: np.ndarray, size: int) -> np.ndarray:
    """Indices of the survivors: Set 1, then the youngest of Set 2 (or the youngest of Set 1)."""
    front = ~dominated(objectives)
    # youngest first; among equal ages the later-created (larger index) first
    by_age = np.lexsort((-np.arange(len(ages)), ages))
    set1: np.ndarray = by_age[front[by_age]]
    if len(set1) >= size:
        return set1[:size]
    set2 = by_age[~front[by_age]]
    return np.concatenate((set1, set2[: size - len(set1)]))


def make_toolbox(window: Window, settings: GaSettings, rng: np.random.Generator) -> base.Toolbox:
    """The DEAP operator registry of one run, bound to the window and its random draws."""
    from deap import base  # loaded on first use: registering the policies must stay light

    table = ObjectiveTable(window.nodes, window.bb)
    draws = _Draws(settings.generations, settings.population, window.size, settings.mutation, rng)
    toolbox = base.Toolbox()
    toolbox.register("evaluate", table.evaluate)
    toolbox.register("mate", _mate, draws=draws, k=window.size)
    toolbox.register("mutate", _mutate, draws=draws)
    toolbox.register("select", _select, size=settings.population)
    return toolbox


def _ga_numpy(
    window: Window, settings: GaSettings, seed: int | np.random.SeedSequence
) -> ParetoSet:
    """The GA with each generation as numpy arrays and DEAP's toolbox as the registry."""
    rng = np.random.default_rng(seed)
    masks = initial_population(window, settings.population, rng)
    toolbox = make_toolbox(window, settings, rng)
    objectives = toolbox.evaluate(masks)
    ages = np.zeros(len(masks), dtype=np.int64)
    free = np.array([window.free_nodes, window.free_bb], dtype=np.int64)
    for generation in range(settings.generations):
        children = toolbox.mutate(toolbox.mate(masks, generation), generation)
        child_obj = toolbox.evaluate(children)
        feasible = (child_obj <= free).all(axis=1)
        pool = np.concatenate((masks, children[feasible]))
        pool_obj = np.concatenate((objectives, child_obj[feasible]))
        pool_age = np.concatenate((ages, np.zeros(int(feasible.sum()), dtype=np.int64)))
        _, first = np.unique(pool, return_index=True)
        if len(first) < len(pool):
            first.sort()
            pool, pool_obj, pool_age = pool[first], pool_obj[first], pool_age[first]
        keep = toolbox.select(pool, pool_obj, pool_age)
        masks, objectives, ages = pool[keep], pool_obj[keep], pool_age[keep] + 1
    front = ~dominated(objectives)
    return representatives(masks[front], objectives[front], window.size)


SHIFT = 48  # packed objective: nodes << SHIFT | burst buffer (GB < 2**48)
LOW = (1 << SHIFT) - 1


def packed_rows(table: np.ndarray) -> list[int]:
    """``nodes << SHIFT | bb`` of each ``(nodes, bb)`` row, as Python integers.

    int64 arithmetic while the node sums stay below ``2**15``; above that (machines such
    as CEA-Curie, whose jobs ask for thousands of processors) the packed value needs more
    than 63 bits and is built from Python integers, which do not wrap.

    >>> packed_rows(np.array([[1, 2], [40_000, 3]])) == [(1 << SHIFT) | 2, (40_000 << SHIFT) | 3]
    True
    """
    if len(table) == 0 or int(table[:, 0].max()) < 1 << (63 - SHIFT):
        return ((table[:, 0] << SHIFT) | table[:, 1]).tolist()  # type: ignore[no-any-return]
    return [(nodes << SHIFT) | bb for nodes, bb in table.tolist()]


def _front_values(values: list[int]) -> set[int]:
    """Non-dominated packed objectives among distinct ``values`` sorted descending."""
    front = set()
    best_higher = -1  # best burst buffer among points using strictly more nodes
    group_nodes, group_best = -1, -1
    for value in values:
        nodes, bb = value >> SHIFT, value & LOW
        if nodes != group_nodes:
            best_higher = max(best_higher, group_best)
            group_nodes, group_best = nodes, bb  # sorted: the first of a group has its max
            if bb > best_higher:
                front.add(value)
    return front


def _evaluator(window: Window) -> Callable[[int], int]:
    """Packed objective ``nodes << SHIFT | bb`` of a mask by 10-bit chunk look-ups."""
    table = ObjectiveTable(window.nodes, window.bb)
    packed = [packed_rows(t) for t in table.tables]
    if len(packed) == 1:
        (only,) = packed
        return only.__getitem__
    if len(packed) == 2:
        first, second = packed
        return lambda mask: first[mask & 1023] + second[mask >> 10]
    shifts = [(index * CHUNK_BITS, chunk) for index, chunk in enumerate(packed)]
    return lambda mask: sum(chunk[(mask >> shift) & 1023] for shift, chunk in shifts)


def survivors(order: list[int], born: list[int], value: dict[int, int], size: int) -> list[int]:
    """The next generation, youngest first (paper §3.2.2): Set 1 (the non-dominated
    chromosomes), then the youngest of Set 2; or the youngest ``size`` of Set 1.

    ``order`` holds the living chromosomes youngest first, ``born`` the children in the
    order they were made (the last made is the youngest); ``value`` packs each mask's
    objectives as ``nodes << SHIFT | bb``.

    >>> triples = [(1, 10, 0), (2, 5, 5), (4, 4, 4), (8, 3, 3), (16, 2, 2)]
    >>> value = {m: (n << SHIFT) | b for m, n, b in triples}
    >>> survivors([4, 8], [16, 1, 2], value, 3)   # Set 1 = {1, 2}; Set 2 youngest first: 16, 4, 8
    [2, 1, 16]
    """
    pool = born[::-1] + order
    front = _front_values(sorted({value[mask] for mask in pool}, reverse=True))
    kept = [mask for mask in pool if value[mask] in front]
    if len(kept) < size:
        kept += [mask for mask in pool if value[mask] not in front][: size - len(kept)]
    else:
        del kept[size:]
    return kept


def _ga_ints(window: Window, settings: GaSettings, seed: int | np.random.SeedSequence) -> ParetoSet:
    """The GA with each generation in plain Python integers (the default kernel).

    The living chromosomes are kept youngest first (ages grow together, so survivors
    never change order and children go in front, latest first): survivor selection
    then needs no sort by age, only the objective sort of the dominance test.
    """
    rng = np.random.default_rng(seed)
    k, size, generations = window.size, settings.population, settings.generations
    order = initial_population(window, size, rng).tolist()[::-1]
    evaluate = _evaluator(window)
    value = {mask: evaluate(mask) for mask in order}
    perms = np.argsort(rng.random((generations, size)), axis=1).tolist()
    cuts = (
        (np.int64(1) << rng.integers(1, max(k, 2), size=(generations, size // 2), dtype=np.int64))
        - 1
    ).tolist()
    flips = rng.random((generations, 2 * (size // 2), k)) < settings.mutation
    flip_masks = (flips.astype(np.int64) << np.arange(k, dtype=np.int64)).sum(axis=2).tolist()
    limit_nodes, limit_bb = window.free_nodes, window.free_bb
    for generation in range(generations):
        living = set(order)
        count = len(order) // 2 if k >= 2 else 0
        perm = (
            perms[generation]
            if len(order) == size
            else [i for i in perms[generation] if i < len(order)]
        )
        lows, flip = cuts[generation], flip_masks[generation]
        born: list[int] = []
        for j in range(count):
            a, b, low = order[perm[j]], order[perm[count + j]], lows[j]
            for child in (
                ((a & low) | (b & ~low)) ^ flip[2 * j],
                ((b & low) | (a & ~low)) ^ flip[2 * j + 1],
            ):
                if child in living:
                    continue
                packed = value.get(child)
                if packed is None:
                    packed = value[child] = evaluate(child)
                if packed >> SHIFT <= limit_nodes and packed & LOW <= limit_bb:
                    living.add(child)
                    born.append(child)
        order = survivors(order, born, value, size)
    masks = np.array(order, dtype=np.int64)
    objectives = np.array(
        [(value[mask] >> SHIFT, value[mask] & LOW) for mask in order], dtype=np.int64
    ).reshape(-1, 2)
    kept = ~dominated(objectives)
    return representatives(masks[kept], objectives[kept], window.size)


KERNELS: dict[str, Callable[[Window, GaSettings, int | np.random.SeedSequence], ParetoSet]] = {
    "ints": _ga_ints,
    "numpy": _ga_numpy,
}


def ga_pareto(
    window: Window, settings: GaSettings, seed: int | np.random.SeedSequence, kernel: str = "ints"
) -> ParetoSet:
    """Approximate the Pareto set of ``window`` with the paper's GA.

    Deterministic for a given seed and kernel. The result holds one selection per
    objective vector (the one nearest the window front), ordered by nodes used,
    descending.

    Args:
        window: The jobs that each fit the free resources, and the free resources.
        settings: G, P and p_m.
        seed: Seed of this run's random stream.
        kernel: ``ints`` (default: plain integers, fastest at P = 20), ``numpy`` (one
            array per generation, DEAP toolbox) or ``deap`` (DEAP's per-individual
            operators, ``market_hpc.algorithms.bbsched.deap_ga``; the reference). All run
            the same algorithm; their random streams differ.

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> for kernel in ("ints", "numpy", "deap"):
    ...     front = ga_pareto(table1, GaSettings(), seed=1, kernel=kernel)
    ...     print(kernel, [bin(m) for m in front.masks], front.objectives.tolist())
    ints ['0b10001', '0b11110'] [[100, 20], [80, 90]]
    numpy ['0b10001', '0b11110'] [[100, 20], [80, 90]]
    deap ['0b10001', '0b11110'] [[100, 20], [80, 90]]
    """
    if kernel == "deap":
        from market_hpc.algorithms.bbsched.deap_ga import ga_pareto_deap

        return ga_pareto_deap(window, settings, seed)
    if kernel not in KERNELS:
        raise ValueError(f"unknown GA kernel {kernel!r}; valid: deap, {', '.join(KERNELS)}")
    return KERNELS[kernel](window, settings, seed)
