"""Dispatch time per decision of PCP'20 against PCP'19, by queue length and node count.

    PYTHONPATH=. python benchmarks/cp_dispatch.py [--repeats 3]
    PYTHONPATH=. python benchmarks/cp_dispatch.py --study out/cp_dispatch out/cp_dispatch_pcp19

Instances: KIT's two node types (20-core thin nodes, 21 fat 48-core nodes with 4 GPUs)
at 64, 1,173 and 5,544 nodes; every node busy until a random time except 8 thin nodes
(whole-node jobs of 1-8 nodes, so the number of running jobs, and of fixed boxes, grows
with the system); 10, 50 or 100 queued jobs that each fit the free nodes now (the
modelled set of PCP'19/20 holds only such jobs) but not all together. Both models get the schedulers'
default limits (deterministic time 0.002 per solve, 1 worker, seed 0), so decisions
are reproducible; the wall time (model building + search) is what is measured, in one
process, so machine load shifts both columns alike. PCP'19 at 5,544 nodes is run for
10 queued jobs only (its model has ~|Q| x |N| variables).
"""

from __future__ import annotations

import argparse
import json
import time
import tomllib
from pathlib import Path

import numpy as np

from market_hpc.algorithms.cp_instance import (
    CpInstance,
    CpJob,
    CpLimits,
    CpOutcome,
    CpRunning,
    slowdown_weight,
)
from market_hpc.algorithms.cp_pcp19 import solve_pcp19
from market_hpc.algorithms.cp_pcp20 import solve_pcp20
from market_hpc.policies.cp import DETERMINISTIC_TIME

SIZES = (64, 1173, 5544)
QUEUES = (10, 50, 100)
THIN, FAT = (20, 0, 64), (48, 4, 1024)
FREE_THIN = 8


def instance(nodes: int, queued: int, seed: int) -> CpInstance:
    """A loaded KIT-like system with ``queued`` jobs that fit now."""
    rng = np.random.default_rng(seed)
    thin = nodes - 21
    capacity = np.array([THIN] * thin + [FAT] * 21, dtype=np.int64)
    running, node = [], 0
    busy = thin - FREE_THIN
    while node < busy:
        width = min(int(rng.integers(1, 9)), busy - node)
        running.append(CpRunning(int(rng.integers(60, 40_000)),
                                 tuple((n, (20, 0, 32)) for n in range(node, node + width))))
        node += width
    for fat in range(thin, nodes):
        running.append(CpRunning(int(rng.integers(60, 40_000)), ((fat, (48, 4, 512)),)))
    free_thin = FREE_THIN
    rng = np.random.default_rng([seed, 1])  # the same queue at every size
    jobs = []
    for key in range(queued):
        if rng.random() < 0.35:
            units, unit = 1, (int(rng.choice([1, 2, 4, 8, 16])), 0, int(rng.integers(1, 16)))
        else:
            units, unit = int(rng.integers(1, min(4, free_thin) + 1)), (20, 0, int(rng.integers(1, 64)))
        duration = int(rng.integers(60, 40_000))
        jobs.append(CpJob(key, units, unit, duration, slowdown_weight(duration)))
    return CpInstance(capacity, tuple(jobs), tuple(running))


def measure(solver, inst: CpInstance, limits: CpLimits) -> tuple[float, float, CpOutcome]:  # type: ignore[no-untyped-def]
    """Wall and process CPU seconds of one solve (the paper reports CPU time), and its outcome."""
    began, cpu = time.perf_counter(), time.process_time()
    outcome = solver(inst, limits)
    return time.perf_counter() - began, time.process_time() - cpu, outcome


def dispatch_times(repeats: int) -> None:
    limits = CpLimits(deterministic_time=DETERMINISTIC_TIME)
    solve_pcp20(instance(SIZES[0], QUEUES[0], 0), limits)  # load OR-Tools outside the timings
    print(f"{'nodes':>6} {'queue':>5} | {'PCP20 mean ms':>13} {'p99':>7} {'max':>7} {'cpu mean':>8} {'vars':>5} "
          f"{'cons':>5} | {'PCP19 mean ms':>13} {'vars':>7} | {'PCP19/PCP20':>11}  statuses")
    means: dict[tuple[int, int], float] = {}
    cpus: dict[tuple[int, int], float] = {}
    for nodes in SIZES:
        for queued in QUEUES:
            pcp20, cpu20, pcp19, statuses = [], [], [], []
            vars20 = cons20 = vars19 = 0
            for seed in range(repeats):
                inst = instance(nodes, queued, seed)
                seconds, cpu, outcome = measure(solve_pcp20, inst, limits)
                vars20, cons20 = outcome.variables, outcome.constraints
                pcp20.append(seconds)
                cpu20.append(cpu)
                statuses.append(outcome.status[:3])
                if nodes <= 1173 or queued == 10:
                    seconds, _, outcome = measure(solve_pcp19, inst, limits)
                    vars19 = outcome.variables
                    pcp19.append(seconds)
                    statuses.append("19:" + outcome.status[:3])
            times = np.asarray(pcp20) * 1e3
            means[nodes, queued] = float(times.mean())
            cpus[nodes, queued] = float(np.mean(cpu20) * 1e3)
            slow = f"{np.mean(pcp19) * 1e3:13.1f} {vars19:7d} | {np.mean(pcp19) / np.mean(pcp20):10.1f}x" \
                if pcp19 else f"{'not run':>13} {'':>7} | {'':>11}"
            print(f"{nodes:6d} {queued:5d} | {times.mean():13.1f} {np.percentile(times, 99):7.1f} "
                  f"{times.max():7.1f} {cpus[nodes, queued]:8.1f} {vars20:5d} {cons20:5d} | {slow}  "
                  f"{' '.join(statuses)}")
    for name, table in (("wall", means), ("cpu", cpus)):
        print(f"PCP'20 mean {name} time at 5,544 nodes / at 64 nodes:",
              ", ".join(f"{q} jobs {table[SIZES[-1], q] / table[SIZES[0], q]:.2f}x" for q in QUEUES))


def study_table(folders: list[Path]) -> None:
    import pandas as pd

    frames = []
    for folder in folders:
        files = sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.csv"))
        if not files:
            raise SystemExit(f"no sweep results in {folder}")
        part = pd.read_parquet(files[0]) if files[0].suffix == ".parquet" else pd.read_csv(files[0])
        if "platform" not in part:  # not swept: the sweep file's platform
            sweep_file = json.loads((folder / "sweep.json").read_text())["sweep_file"]
            part["platform"] = tomllib.loads(Path(sweep_file).read_text())["platform"]
        frames.append(part)
    frame = pd.concat(frames, ignore_index=True)
    columns = ["platform", "scheduler", "mean_slowdown", "std_slowdown", "mean_wait", "std_wait",
               "mean_dispatch_ms", "p99_dispatch_ms", "max_dispatch_ms", "cp_optimal_share",
               "cp_fallback_share", "cp_decisions", "cp_mean_variables", "decisions", "duration_s",
               "jobs_completed"]
    present = [c for c in columns if c in frame]
    print(frame[present].sort_values(present[:2]).to_string(index=False, float_format=lambda v: f"{v:.3g}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="instances per cell")
    parser.add_argument("--study", type=Path, nargs="+",
                        help="print the cp_dispatch sweep table from these result folders")
    args = parser.parse_args()
    if args.study is not None:
        study_table(args.study)
    else:
        dispatch_times(args.repeats)


if __name__ == "__main__":
    main()
