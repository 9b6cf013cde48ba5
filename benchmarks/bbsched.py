"""One BBSched invocation at w = 20, G = 500, P = 20 (issue 11 target: < 0.05 s mean).

Prints, for the same seeded windows in one process:

* the GA as BBSched runs it (``ga_pareto``, kernel ``ints``: plain Python integers per
  generation): mean and best time per invocation, and the generational distance (GD) of
  its front to the exact front;
* the same GA with one numpy array per generation (kernel ``numpy``, DEAP toolbox);
* the same GA written with DEAP's per-individual operators (kernel ``deap``: ``creator``
  individuals, ``tools.cxOnePoint``, ``tools.mutFlipBit``, ``tools.sortNondominated``),
  the usual way to write a DEAP GA;
* exact enumeration of all 2**20 subsets (``exact_pareto``), the test oracle.

Windows: 20 jobs that each fit the free resources, node requests 1..40 of 100 free, 75 %
with burst-buffer requests drawn as S4 on a 100-node Theta-like system (455..6,490 GB of
a 28,700 GB pool), 40 % of the pool free. Timings depend on the machine's load (2 shared
cores during development): read them with the load average printed at the end.

    python benchmarks/bbsched.py [--windows 10] [--repeat 3] [--deap-windows 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from market_hpc.algorithms.bbsched import Window, exact_pareto, generational_distance
from market_hpc.algorithms.bbsched_ga import GaSettings, ga_pareto


def windows(count: int, seed: int = 11) -> list[Window]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        nodes = np.minimum(np.exp(rng.uniform(0, np.log(40), 20)).astype(np.int64), 100)
        bb = np.where(rng.random(20) < 0.75, np.exp(rng.uniform(np.log(455), np.log(6490), 20)), 0)
        out.append(Window.of(nodes, np.rint(bb), 100, 0.4 * 28700))
    return out


CPU: dict[str, list[float]] = {}


def timed(function, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    """Wall time of one call (its CPU time goes to ``CPU`` under the kernel's name)."""
    began, began_cpu = time.perf_counter(), time.process_time()
    value = function(*args)
    name = args[3] if len(args) > 3 else "exact"
    CPU.setdefault(name, []).append(time.process_time() - began_cpu)
    return time.perf_counter() - began, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--deap-windows", type=int, default=2)
    args = parser.parse_args()
    settings = GaSettings(generations=500, population=20, mutation=0.0005)
    cases = windows(args.windows)
    ga_pareto(cases[0], settings, 0)  # warm-up (imports, caches)
    times: dict[str, list[float]] = {"ints": [], "numpy": [], "deap": [], "exact": []}
    gds: dict[str, list[float]] = {"ints": [], "numpy": [], "deap": []}
    for index, window in enumerate(cases):
        elapsed, exact = timed(exact_pareto, window)
        times["exact"].append(elapsed)
        for kernel in ("ints", "numpy", "deap"):
            repeats = args.repeat if kernel != "deap" else (1 if index < args.deap_windows else 0)
            for repeat in range(repeats):
                elapsed, found = timed(ga_pareto, window, settings, repeat, kernel)
                times[kernel].append(elapsed)
                gds[kernel].append(generational_distance(found, exact, 100, 28700))
    mean = {name: float(np.mean(values)) for name, values in times.items() if values}
    print(f"windows: {len(cases)} x w=20 (every job fits alone); GA: G={settings.generations}, "
          f"P={settings.population}, p_m={settings.mutation}; {args.repeat} seeds per window")
    print(f"BBSched GA, ints kernel : mean {mean['ints'] * 1e3:8.2f} ms  best {min(times['ints']) * 1e3:8.2f} ms  "
          f"target < 50 ms: {'met' if mean['ints'] < 0.05 else 'NOT met'}; mean GD {np.mean(gds['ints']):.4f}")
    print(f"GA, numpy kernel        : mean {mean['numpy'] * 1e3:8.2f} ms  (ints is {mean['numpy'] / mean['ints']:.1f}x "
          f"faster); mean GD {np.mean(gds['numpy']):.4f}")
    if times["deap"]:
        print(f"GA, DEAP per individual : mean {mean['deap'] * 1e3:8.2f} ms over {len(times['deap'])} windows "
              f"(ints is {mean['deap'] / mean['ints']:.1f}x faster); mean GD {np.mean(gds['deap']):.4f}")
    print(f"exact enumeration 2^20  : mean {mean['exact'] * 1e3:8.2f} ms  best {min(times['exact']) * 1e3:8.2f} ms  "
          f"(GA ints / exact {mean['ints'] / mean['exact']:.2f})")
    cpu = ", ".join(f"{name} {np.mean(values) * 1e3:.2f} ms" for name, values in CPU.items())
    print(f"mean CPU time per call (less sensitive to other processes than wall time): {cpu}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
