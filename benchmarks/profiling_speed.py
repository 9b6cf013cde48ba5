"""Time design-time profiling (Algorithm 1) of 10-task jobs: the GA against CP-SAT.

Profiles ``--jobs`` random 10-task graphs (``taskgraph.random_task_graph``, the job
generator of the workload module) for every c = 1..10 with the GA of
``algorithms.profiling`` (target: <= 0.5 s per job on one core), then computes the same
profiles exactly with the CP-SAT model of ``algorithms.exact_mapping`` (the second
implementation), and prints per-job times, their ratio and how often the GA matched.

Run: ``python benchmarks/profiling_speed.py [--jobs 20] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from market_hpc.algorithms.exact_mapping import optimal_makespan
from market_hpc.algorithms.profiling import profile_graph
from market_hpc.algorithms.taskgraph import random_task_graph

TARGET_SECONDS = 0.5


def main() -> None:
    """Run the benchmark and print a short report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20, help="number of 10-task graphs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the graph stream")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    graphs = [random_task_graph(rng, n_tasks=(10, 10)) for _ in range(args.jobs)]
    ga_times, ga_cpu, cp_times, equal, pairs, worst_gap = [], [], [], 0, 0, 0.0
    for index, g in enumerate(graphs):
        started, cpu_started = time.perf_counter(), time.process_time()
        profile = profile_graph(g, seed=index)
        ga_times.append(time.perf_counter() - started)
        ga_cpu.append(time.process_time() - cpu_started)

        started = time.perf_counter()
        exact = [optimal_makespan(g, c, seed=0) for c in range(1, g.number_of_nodes() + 1)]
        cp_times.append(time.perf_counter() - started)
        for result, found in zip(exact, profile.response_times):
            if result.status != "OPTIMAL":
                raise RuntimeError(f"graph {index}: CP-SAT stopped at {result.status}")
            pairs += 1
            equal += found == result.makespan
            worst_gap = max(worst_gap, found / result.makespan - 1.0)

    ga_mean, cp_mean = statistics.fmean(ga_times), statistics.fmean(cp_times)
    print(f"{args.jobs} jobs of 10 tasks, profiles for c = 1..10")
    verdict = "met" if max(ga_times) <= TARGET_SECONDS else "MISSED"
    print(
        f"GA      : mean {ga_mean:.3f} s/job, max {max(ga_times):.3f} s/job "
        f"(target <= {TARGET_SECONDS} s: {verdict}); CPU mean {statistics.fmean(ga_cpu):.3f}, "
        f"max {max(ga_cpu):.3f} s/job"
    )
    print(f"CP-SAT  : mean {cp_mean:.3f} s/job, max {max(cp_times):.3f} s/job")
    print(f"ratio   : CP-SAT / GA = {cp_mean / ga_mean:.2f} (mean wall times)")
    print(
        f"quality : GA equal to the optimum on {equal}/{pairs} (graph, c) pairs, "
        f"worst gap {worst_gap:.2%}"
    )


if __name__ == "__main__":
    main()
