"""What the BBSched GA kernels share: their settings and the initial population
(``bbsched_ga``'s kernels and ``bbsched_deap``'s reference kernel both use them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from market_hpc.algorithms.bbsched.selection import Window


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
            raise ValueError(
                f"GA needs generations >= 0, population >= 2 and mutation in [0, 1]; got {self}"
            )


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
    seeds.extend(
        1 << i
        for i in range(k)
        if window.nodes[i] <= window.free_nodes and window.bb[i] <= window.free_bb
    )
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
