"""One BBSched selection at w = 10, 20, 50: exact solvers against the paper's GA.

For the same seeded windows in one process, per window size w it prints the mean and
best time of one call of

* ``dp``: the exact front by dynamic programming over the two capacities
  (``algorithms.bbsched_exact.dp_pareto``; what BBSched's ``auto`` solver runs while
  its cost, ``dp_cost`` machine words, is within ``exact_budget``);
* ``enum``: exact enumeration of all 2**w subsets (``exact_pareto``; w <= 20 only);
* ``ga``: the paper's GA (G = 500, P = 20, p_m = 0.05 %, ``ints`` kernel), with its
  generational distance (GD, capacity-normalised, spec A21) to the exact front and how
  often the decision rule picks the same objective vector from its front as from the
  exact one;

then the cut-off: the GA's mean time over the DP's time per machine word, i.e. the
``dp_cost`` up to which exact is cheaper than the GA (``EXACT_BUDGET`` should be below
it), and the enumeration's cut-off in w. A second block does the same on windows of a
240-processor HPC2N-like system with a larger pool (35,773 GB).

Windows: w jobs that each fit the free resources, node requests 1..40 (of 100 free) or
1..60 (of 240), 75 % with burst-buffer requests drawn as S4 (455..6,490 GB), 40 % of
the pool free. Timings depend on the machine's load (2 shared cores during
development): the load average is printed at the end; CPU times are beside wall times.

    python benchmarks/bbsched.py [--windows 20] [--sizes 10 20 50]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from market_hpc.algorithms.bbsched.exact import dp_cost, dp_pareto
from market_hpc.algorithms.bbsched.ga import GaSettings, ga_pareto
from market_hpc.algorithms.bbsched.selection import (
    ParetoSet,
    Window,
    choose,
    exact_pareto,
    generational_distance,
)
from market_hpc.policies.bbsched.schedulers import EXACT_BUDGET

SYSTEMS = {"KTH-like": (100, 28700, 40), "HPC2N-like": (240, 35773, 60)}


def windows(
    count: int,
    size: int,
    nodes_total: int = 100,
    pool: int = 28700,
    largest: int = 40,
    seed: int = 11,
) -> list[Window]:
    """``count`` windows of ``size`` jobs (module docstring)."""
    rng = np.random.default_rng(seed + size)
    out = []
    for _ in range(count):
        nodes = np.minimum(
            np.exp(rng.uniform(0, np.log(largest), size)).astype(np.int64), nodes_total
        )
        bb = np.where(
            rng.random(size) < 0.75, np.exp(rng.uniform(np.log(455), np.log(6490), size)), 0
        )
        out.append(Window.of(nodes, np.rint(bb), nodes_total, 0.4 * pool))
    return out


def timed(function: Callable[..., Any], *args: Any) -> tuple[float, float, Any]:
    """Wall time, CPU time and value of one call."""
    began, began_cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    return time.perf_counter() - began, time.process_time() - began_cpu, value


def decision(front: ParetoSet, window: Window, nodes_total: int, pool: int) -> tuple[int, ...]:
    """The objective vector the paper's decision rule picks from ``front``."""
    mask = choose(front, window.size, nodes_total, pool)
    return tuple(front.objectives[front.masks.tolist().index(mask)].tolist())


def block(name: str, sizes: list[int], count: int) -> None:
    nodes_total, pool, largest = SYSTEMS[name]
    settings = GaSettings()
    print(
        f"{name}: {nodes_total} nodes, pool {pool} GB; {count} windows per w; GA G=500 P=20 "
        "p_m=0.0005"
    )
    print(
        f"{'w':>3} | {'dp ms (cpu)':>14} | {'enum ms (cpu)':>14} | {'ga ms (cpu)':>14} | "
        f"{'GA GD':>7} | "
        f"{'GA same decision':>16} | {'dp_cost':>9} | GA/dp per word -> cut-off"
    )
    for size in sizes:
        cases = windows(count, size, nodes_total, pool, largest)
        ga_pareto(cases[0], settings, 0)  # warm-up
        wall: dict[str, list[float]] = {"dp": [], "enum": [], "ga": []}
        cpu: dict[str, list[float]] = {"dp": [], "enum": [], "ga": []}
        gds, same, costs = [], 0, []
        for index, window in enumerate(cases):
            elapsed, used, exact = timed(dp_pareto, window)
            wall["dp"].append(elapsed)
            cpu["dp"].append(used)
            costs.append(dp_cost(window))
            if size <= 20:
                elapsed, used, enumerated = timed(exact_pareto, window)
                wall["enum"].append(elapsed)
                cpu["enum"].append(used)
                assert enumerated.objectives.tolist() == exact.objectives.tolist()
            elapsed, used, found = timed(ga_pareto, window, settings, index)
            wall["ga"].append(elapsed)
            cpu["ga"].append(used)
            gds.append(generational_distance(found, exact, nodes_total, pool))
            same += decision(found, window, nodes_total, pool) == decision(
                exact, window, nodes_total, pool
            )
        cell = {
            k: (f"{np.mean(v) * 1e3:6.2f} ({np.mean(cpu[k]) * 1e3:5.2f})" if v else "-")
            for k, v in wall.items()
        }
        per_word = np.mean(cpu["dp"]) / np.mean(costs)
        cutoff = np.mean(cpu["ga"]) / per_word
        print(
            f"{size:>3} | {cell['dp']:>14} | {cell['enum']:>14} | {cell['ga']:>14} | "
            f"{np.mean(gds):7.4f} | "
            f"{same:>7} of {count:<6} | {np.mean(costs):9.0f} | {cutoff:,.0f} words"
        )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--windows", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 50])
    args = parser.parse_args()
    for name in SYSTEMS:
        block(name, args.sizes, args.windows)
    enum_cut = [k for k in range(8, 21) if _enum_cheaper(k)]
    print(
        f"enumeration cheaper than the GA up to w = {max(enum_cut) if enum_cut else '-'} "
        f"(KTH-like windows, CPU time); auto's exact_budget = {EXACT_BUDGET:,} words"
    )
    print(
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )


def _enum_cheaper(size: int, count: int = 5) -> bool:
    cases = windows(count, size)
    enum = sum(timed(exact_pareto, w)[1] for w in cases)
    ga = sum(timed(ga_pareto, w, GaSettings(), 1)[1] for w in cases)
    return bool(enum < ga)


if __name__ == "__main__":
    main()
