"""BBSched's GA written the usual DEAP way: one ``creator`` individual per chromosome.

The reference for ``market_hpc.algorithms.bbsched.ga``'s fast kernels: the same
algorithm (the paper's §3.2) with DEAP's own operators, ``tools.cxOnePoint`` on P/2 random pairs,
``tools.mutFlipBit`` on the children and ``tools.sortNondominated`` for Set 1; the
age-based survivor selection is the paper's (DEAP has none). DEAP's operators draw from
Python's global ``random``, so this function seeds it and restores its state afterwards.
About an order of magnitude slower than the kernels (``benchmarks/bbsched.py``).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from deap import base, creator, tools

from market_hpc.algorithms.bbsched.ga_common import GaSettings, initial_population
from market_hpc.algorithms.bbsched.selection import ParetoSet, Window, representatives


def _individual_class() -> Any:
    """DEAP's ``creator`` classes, made on first use (creator is global state)."""
    if not hasattr(creator, "BBSchedIndividual"):
        creator.create("BBSchedFitness", base.Fitness, weights=(1.0, 1.0))
        creator.create("BBSchedIndividual", list, fitness=creator.BBSchedFitness, age=0)
    return creator.BBSchedIndividual


def ga_pareto_deap(
    window: Window, settings: GaSettings, seed: int | np.random.SeedSequence
) -> ParetoSet:
    """Approximate the Pareto set of ``window`` with DEAP individuals and operators."""
    rng = np.random.default_rng(seed)
    start = initial_population(window, settings.population, rng)
    saved = random.getstate()
    random.seed(int(rng.integers(2**63)))
    try:
        population = _evolve(window, settings, [int(m) for m in start])
    finally:
        random.setstate(saved)
    masks = np.array([sum(x << i for i, x in enumerate(ind)) for ind in population], dtype=np.int64)
    objectives = np.array([ind.fitness.values for ind in population], dtype=np.int64).reshape(-1, 2)
    front = {
        id(ind)
        for ind in tools.sortNondominated(population, len(population), first_front_only=True)[0]
    }
    kept = np.array([id(ind) in front for ind in population])
    return representatives(masks[kept], objectives[kept], window.size)


def _evolve(window: Window, settings: GaSettings, start: list[int]) -> list[Any]:
    nodes, bb, k = window.nodes.tolist(), window.bb.tolist(), window.size
    individual = _individual_class()

    def evaluate(ind: list[int]) -> tuple[int, int]:
        return (sum(n for n, x in zip(nodes, ind) if x), sum(b for b, x in zip(bb, ind) if x))

    population = []
    for mask in start:
        ind = individual((mask >> i) & 1 for i in range(k))
        ind.fitness.values = evaluate(ind)
        population.append(ind)
    for _ in range(settings.generations):
        parents = random.sample(population, len(population))
        half = len(parents) // 2
        children = []
        for a, b in zip(parents[:half], parents[half : 2 * half]):
            c1, c2 = individual(a), individual(b)
            if k >= 2:
                tools.cxOnePoint(c1, c2)
            for child in (c1, c2):
                tools.mutFlipBit(child, indpb=settings.mutation)
                child.age = 0
                values = evaluate(child)
                if values[0] <= window.free_nodes and values[1] <= window.free_bb:
                    child.fitness.values = values
                    children.append(child)
        living: dict[tuple[int, ...], Any] = {}
        for ind in population + children[::-1]:  # a living chromosome keeps its place and age
            living.setdefault(tuple(ind), ind)
        pool = sorted(living.values(), key=lambda ind: ind.age)
        set1 = tools.sortNondominated(pool, len(pool), first_front_only=True)[0]
        in_front = {id(ind) for ind in set1}
        young = [ind for ind in pool if id(ind) in in_front]
        if len(young) < settings.population:
            young += [ind for ind in pool if id(ind) not in in_front][
                : settings.population - len(young)
            ]
        population = young[: settings.population]
        for ind in population:
            ind.age += 1
    return population
