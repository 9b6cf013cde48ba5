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

Decisions where the paper is silent (spec §3, A4): ``P/2`` random pairs per generation
drawn without replacement, crossover every generation; the first generation is the
greedy priority-order fill, then one-hot selections in window order, then sparse random
selections repaired by dropping jobs from the back of the window, de-duplicated;
infeasible children are discarded (death penalty); duplicates of a living chromosome
are dropped (the living one keeps its age); age ties go to the later-created
chromosome.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from deap import base

from market_hpc.algorithms.bbsched import ObjectiveTable, ParetoSet, Window, representatives


@dataclass(frozen=True)
class GaSettings:
    """GA parameters; defaults are the paper's (§4.3).

    Attributes:
        generations: G, number of generations (500).
        population: P, constant population size (20).
        mutation: p_m, per-gene bit-flip probability of children (0.05 % = 0.0005).
    """

    generations: int = 500
    population: int = 20
    mutation: float = 0.0005

    def __post_init__(self) -> None:
        if self.generations < 0 or self.population < 2 or not 0.0 <= self.mutation <= 1.0:
            raise ValueError(f"GA needs generations >= 0, population >= 2 and mutation in [0, 1]; got {self}")


def initial_population(window: Window, size: int, rng: np.random.Generator) -> np.ndarray:
    """Greedy fill, one-hot selections, then repaired sparse random selections."""
    k = window.size
    seeds: list[int] = []
    free_n, free_b, greedy = window.free_nodes, window.free_bb, 0
    for i in range(k):
        if window.nodes[i] <= free_n and window.bb[i] <= free_b:
            greedy |= 1 << i
            free_n -= int(window.nodes[i])
            free_b -= int(window.bb[i])
    seeds.append(greedy)
    seeds.extend(1 << i for i in range(k) if window.nodes[i] <= window.free_nodes and window.bb[i] <= window.free_bb)
    share = min(0.5, max(1, greedy.bit_count()) / max(k, 1))  # about as many jobs as fit greedily
    for _ in range(4 * size):
        if len(set(seeds)) >= size:
            break
        bits = rng.random(k) < share
        used_n = int(window.nodes[bits].sum())
        used_b = int(window.bb[bits].sum())
        for i in range(k - 1, -1, -1):  # repair: drop jobs from the back of the window
            if used_n <= window.free_nodes and used_b <= window.free_bb:
                break
            if bits[i]:
                bits[i] = False
                used_n -= int(window.nodes[i])
                used_b -= int(window.bb[i])
        seeds.append(int((bits.astype(np.int64) << np.arange(k, dtype=np.int64)).sum()))
    unique = list(dict.fromkeys(seeds))[:size]
    return np.array(unique, dtype=np.int64)


class _Draws:
    """All random numbers of a run, drawn up front in three calls (a per-generation draw
    would cost more than the generation's arithmetic)."""

    def __init__(self, generations: int, size: int, k: int, probability: float,
                 rng: np.random.Generator) -> None:
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
    return children ^ draws.flips[generation, : len(children)]


def dominated(objectives: np.ndarray) -> np.ndarray:
    """Rows some other row dominates (maximising every column); pairwise, for small sets.

    >>> dominated(np.array([[100, 20], [80, 90], [90, 20], [80, 90]])).tolist()
    [False, False, True, False]
    """
    f1, f2 = objectives[:, 0], objectives[:, 1]
    ge1, ge2 = f1[:, None] >= f1, f2[:, None] >= f2
    gt1, gt2 = f1[:, None] > f1, f2[:, None] > f2
    return (ge1 & ge2 & (gt1 | gt2)).any(axis=0)


def _select(masks: np.ndarray, objectives: np.ndarray, ages: np.ndarray, size: int) -> np.ndarray:
    """Indices of the survivors: Set 1, then the youngest of Set 2 (or the youngest of Set 1)."""
    front = ~dominated(objectives)
    # youngest first; among equal ages the later-created (larger index) first
    by_age = np.lexsort((-np.arange(len(ages)), ages))
    set1 = by_age[front[by_age]]
    if len(set1) >= size:
        return set1[:size]
    set2 = by_age[~front[by_age]]
    return np.concatenate((set1, set2[: size - len(set1)]))


def make_toolbox(window: Window, settings: GaSettings, rng: np.random.Generator) -> base.Toolbox:
    """The DEAP operator registry of one run, bound to the window and its random draws."""
    table = ObjectiveTable(window.nodes, window.bb)
    draws = _Draws(settings.generations, settings.population, window.size, settings.mutation, rng)
    toolbox = base.Toolbox()
    toolbox.register("evaluate", table.evaluate)
    toolbox.register("mate", _mate, draws=draws, k=window.size)
    toolbox.register("mutate", _mutate, draws=draws)
    toolbox.register("select", _select, size=settings.population)
    return toolbox


def ga_pareto(window: Window, settings: GaSettings, seed: int | np.random.SeedSequence) -> ParetoSet:
    """Approximate the Pareto set of ``window`` with the paper's GA.

    Deterministic for a given seed. The result holds one selection per objective vector
    (the one nearest the window front), ordered by nodes used, descending.

    >>> table1 = Window.of([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], 100, 100)
    >>> front = ga_pareto(table1, GaSettings(), seed=1)
    >>> [bin(m) for m in front.masks], front.objectives.tolist()
    (['0b10001', '0b11110'], [[100, 20], [80, 90]])
    """
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
